/* tapegrad's order kernels (order_kernels.c): the k-th smallest element of each row (kthvalue),
 * the insertion position of each value among sorted boundaries (searchsorted, bucketize) and
 * the position of the running extreme (cummax, cummin).
 *
 * Both reproduce PyTorch's CPU loops step for step, because their answers depend on the steps:
 * which of several equal elements kthvalue names (and so which one receives the gradient) is
 * decided by the swaps of its quickselect, and the position a binary search gives among
 * boundaries holding NaN (or out of order) by its probes.  NaN orders above every number.
 * Kernels never fail and never touch Python objects: the Cython layer (ops_reduce.pxi) checks
 * dtypes and layouts and casts narrower dtypes to these three exactly. */
#ifndef TAPEGRAD_ORDER_KERNELS_H
#define TAPEGRAD_ORDER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* x: a C-contiguous array viewed as (outer, n, inner), rows running along n.  out[o * inner + i]
 * = the position along n of row (o, i)'s rank-k element (k from 0, k < n).  value_scratch and
 * index_scratch hold n elements each (a row's copy, as PyTorch's kernel copies it). */
void tg_kth_positions_f32(const float* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                          ptrdiff_t k, int64_t* out, float* value_scratch,
                          int64_t* index_scratch);
void tg_kth_positions_f64(const double* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                          ptrdiff_t k, int64_t* out, double* value_scratch,
                          int64_t* index_scratch);
void tg_kth_positions_i64(const int64_t* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                          ptrdiff_t k, int64_t* out, int64_t* value_scratch,
                          int64_t* index_scratch);

/* Row r of b (n_b boundaries, C-contiguous rows) is searched for each of the m values of row r
 * of v (rows = 1 with b_row_stride = 0: one boundary row for every value).  out[r * m + j] = the
 * first position whose boundary is >= v (> with right), by PyTorch's halving loop. */
void tg_bisect_f32(const float* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const float* v,
                   ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out);
void tg_bisect_f64(const double* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const double* v,
                   ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out);
void tg_bisect_i64(const int64_t* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const int64_t* v,
                   ptrdiff_t rows, ptrdiff_t m, int right, int64_t* out);

/* x: (outer, n, inner) as above; out (the same shape): for each position along n, the position
 * of the running maximum (maximum != 0; else minimum) so far, as cummax / cummin answer it: the
 * running extreme is numpy's (a NaN propagates), and a position takes over where its element
 * equals the running extreme (a later tie takes over) or is a NaN (later NaNs take over too). */
void tg_running_extreme_f32(const float* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                            int maximum, int64_t* out);
void tg_running_extreme_f64(const double* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                            int maximum, int64_t* out);
void tg_running_extreme_i64(const int64_t* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                            int maximum, int64_t* out);

/* libstdc++'s std::sort, std::partial_sort and std::nth_element (GCC's, the library of PyTorch's
 * Linux wheels), step for step, on the (value, position) pairs of each row of rows (m, n,
 * C-contiguous) listed in redo (n_redo row numbers): which of several equal values lands where is
 * decided by those steps, and PyTorch's sort (stable=False), topk and mode print it.
 * out[r * width + j] = the position of the j-th pair of row redo[r] once the algorithm ran:
 *   algo 0: std::sort of all n pairs;
 *   algo 1: std::partial_sort of the first k pairs (topk when k * 64 <= n);
 *   algo 2: std::nth_element at k - 1, then, when sort_head, std::sort of the k - 1 before it.
 * cmp 0: larger first, NaN above every number; cmp 1: smaller first, NaN last; cmp 2: a plain
 * `<` (mode's, which orders no NaN).  pairs: scratch for one row (n pairs of 16 bytes). */
void tg_stl_order_f64(const double* rows, ptrdiff_t n, const int64_t* redo, ptrdiff_t n_redo,
                      int algo, ptrdiff_t k, int sort_head, int cmp, ptrdiff_t width,
                      int64_t* out, void* pairs);
void tg_stl_order_i64(const int64_t* rows, ptrdiff_t n, const int64_t* redo, ptrdiff_t n_redo,
                      int algo, ptrdiff_t k, int sort_head, int cmp, ptrdiff_t width,
                      int64_t* out, void* pairs);

/* samples: (n, dims) C-contiguous; edges: each dimension's n_bins[d] + 1 non-decreasing edges,
 * one after the other.  out[s] = the flat (C-order) bin of sample s, or -1 when a coordinate
 * lies outside its edges or is NaN; bin k of a dimension holds edges[k] <= v < edges[k + 1],
 * its last bin also v == its last edge (histogramdd's bins). */
void tg_histogram_bins_f32(const float* samples, ptrdiff_t n, ptrdiff_t dims, const float* edges,
                           const ptrdiff_t* n_bins, int64_t* out);
void tg_histogram_bins_f64(const double* samples, ptrdiff_t n, ptrdiff_t dims,
                           const double* edges, const ptrdiff_t* n_bins, int64_t* out);

#endif
