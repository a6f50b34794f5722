/* Floating-point sums in PyTorch's CPU order, so that a sum, a mean or a broadcast operand's
 * gradient prints the same float as PyTorch's, bit for bit, where numpy's pairwise order would
 * differ in the last place after ~10 elements.
 *
 * The order (ATen's cascade sum, read from its SumKernel.cpp and TensorIteratorReduce.cpp):
 *   - a reduced run of values is summed in "vector rows" of V lanes (V = 32 bytes / element
 *     size: ATen's sum kernel is registered without an AVX-512 build, so AVX-512 CPUs run its
 *     AVX2 one; measured on an AVX-512 Xeon with torch 2.13), each lane its own accumulator; four
 *     such accumulators interleave (ILP) and each is a four-level cascade that carries a level's
 *     partial sum up every 2^p values (p = max(4, ceil(log2 size) / 4)), so that only numbers of
 *     a similar magnitude are added;
 *   - the values past the last whole vector are added to a scalar first, then the V lanes;
 *   - a column sum (reduction over leading dims) runs 4V columns at once through one cascade
 *     each, then V at a time with the four-way ILP over rows, then single columns;
 *   - a full sum of more than 32,768 values is split into one chunk per worker thread, each
 *     summed on its own, and the chunk sums added in order (PyTorch's two-pass reduction).  The
 *     number of chunks is fixed per process (tg_cascade_blocks), not tapegrad.set_num_threads,
 *     so a result never depends on the thread count tapegrad runs with.
 * Every sum starts from +0 (PyTorch fills its output with zeros and adds into it), so a sum
 * of -0.0 values is +0.0, as in PyTorch.
 *
 * Kernels never fail, allocate or touch Python objects. */
#ifndef TG_CASCADE_SUM_H
#define TG_CASCADE_SUM_H

#include <stddef.h>

/* PyTorch's grain size: a full sum of more values than this splits into chunks. */
#define TG_CASCADE_GRAIN 32768

/* The sum of n contiguous values split into `blocks` chunks when n > TG_CASCADE_GRAIN. */
float tg_cascade_sum_f32(ptrdiff_t n, const float *a, int blocks);
double tg_cascade_sum_f64(ptrdiff_t n, const double *a, int blocks);

/* The sum of n values a[0], a[stride], ... (a strided 1-d view, stride in elements > 1),
 * chunked as tg_cascade_sum. */
float tg_cascade_strided_sum_f32(ptrdiff_t n, ptrdiff_t stride, const float *a, int blocks);
double tg_cascade_strided_sum_f64(ptrdiff_t n, ptrdiff_t stride, const double *a, int blocks);

/* out[r] = the sum of row r of a (rows x n, C-contiguous): a reduction over trailing dims. */
void tg_cascade_rows_f32(ptrdiff_t rows, ptrdiff_t n, const float *a, float *out);
void tg_cascade_rows_f64(ptrdiff_t rows, ptrdiff_t n, const double *a, double *out);

/* out[c] = the sum of column c of a (rows x cols, C-contiguous): a reduction over leading
 * dims, as a bias's gradient is. */
void tg_cascade_cols_f32(ptrdiff_t rows, ptrdiff_t cols, const float *a, float *out);
void tg_cascade_cols_f64(ptrdiff_t rows, ptrdiff_t cols, const double *a, double *out);

/* A C-contiguous array of `ngroups` dims (sizes, outermost first; adjacent dims of the same
 * kind merged, none of size 1) summed over the dims flagged in `reduced`, which form two or
 * more blocks; out holds the kept dims in C order. */
#define TG_CASCADE_MAX_GROUPS 64
void tg_cascade_groups_f32(int ngroups, const ptrdiff_t *sizes, const char *reduced,
                           const float *a, float *out);
void tg_cascade_groups_f64(int ngroups, const ptrdiff_t *sizes, const char *reduced,
                           const double *a, double *out);

/* nll_loss's reduction of its per-sample losses (or class weights) values[0..n): PyTorch's
 * eight-level cascade over the batch, skipping b where valid[b] == 0 (valid may be NULL). */
float tg_nll_sum_f32(ptrdiff_t n, const float *values, const char *valid);
double tg_nll_sum_f64(ptrdiff_t n, const double *values, const char *valid);
/* float16 values widened to float, each addition rounded to float16: a float16 value. */
float tg_nll_sum_f16(ptrdiff_t n, const float *values, const char *valid);

#endif
