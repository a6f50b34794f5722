/* Floating-point sums in PyTorch's CPU order: see cascade_sum.h for the order and why.
 *
 * Each lane is a C scalar and each addition a C `+` in a fixed order, so the result does not
 * depend on how the compiler vectorises the lanes (no -ffast-math here: it could reassociate). */
#include <math.h>
#include <string.h>

#include "cascade_sum.h"
#include "threadpool.h"

#define CASCADE_LEVELS 4      /* partial sums carried up four levels */
#define CASCADE_ROWS 4        /* accumulators interleaved (ILP), and columns summed at once */
#define MAX_LANES 8           /* float32 lanes of a 32-byte vector */
#define MAX_BLOCKS 1024       /* chunks of a big full sum (threads PyTorch would use) */

/* The cascade's level size, as a power of two: max(4, ceil(log2 size) / levels), where ATen's
 * CeilLog2 of 0, 1 and 2 is 1. */
static ptrdiff_t level_power(ptrdiff_t size, int levels)
{
    ptrdiff_t ceil_log2 = 1, p;
    if (size > 2) {
        unsigned long long v = (unsigned long long)(size - 1);
        ceil_log2 = 0;
        while (v) {
            ceil_log2++;
            v >>= 1;
        }
    }
    p = ceil_log2 / levels;
    return p > 4 ? p : 4;
}

/* MULTI_ROW: CASCADE_ROWS x L running sums over `size` rows, each one cascade; value (i, k, l)
 * is x[i * row_stride + k * col_stride + l].  ROW_SUM: the sum of `size` vectors of L lanes
 * (vector i at x + i * stride) through MULTI_ROW with the rows interleaved CASCADE_ROWS ways,
 * the vectors past the last whole group added to the first accumulator, then the others. */
#define DEFINE_CASCADE(T, L, SUFFIX)                                                            \
static void multi_row_##SUFFIX(const T *x, ptrdiff_t size, ptrdiff_t row_stride,               \
                               ptrdiff_t col_stride, T *out)                                    \
{                                                                                               \
    T acc[CASCADE_LEVELS][CASCADE_ROWS * L];                                                    \
    const ptrdiff_t power = level_power(size, CASCADE_LEVELS);                                  \
    const ptrdiff_t step = (ptrdiff_t)1 << power, mask = step - 1;                              \
    ptrdiff_t i = 0, j;                                                                         \
    int lev, k, l, m;                                                                           \
    for (lev = 0; lev < CASCADE_LEVELS; ++lev)                                                  \
        for (m = 0; m < CASCADE_ROWS * L; ++m)                                                  \
            acc[lev][m] = 0;                                                                    \
    while (i + step <= size) {                                                                  \
        for (j = 0; j < step; ++j, ++i) {                                                       \
            const T *row = x + i * row_stride;                                                  \
            for (k = 0; k < CASCADE_ROWS; ++k)                                                  \
                for (l = 0; l < L; ++l)                                                         \
                    acc[0][k * L + l] += row[k * col_stride + l];                               \
        }                                                                                       \
        for (lev = 1; lev < CASCADE_LEVELS; ++lev) {                                            \
            for (m = 0; m < CASCADE_ROWS * L; ++m) {                                            \
                acc[lev][m] += acc[lev - 1][m];                                                 \
                acc[lev - 1][m] = 0;                                                            \
            }                                                                                   \
            if ((i & (mask << (lev * power))) != 0)                                             \
                break;                                                                          \
        }                                                                                       \
    }                                                                                           \
    for (; i < size; ++i) {                                                                     \
        const T *row = x + i * row_stride;                                                      \
        for (k = 0; k < CASCADE_ROWS; ++k)                                                      \
            for (l = 0; l < L; ++l)                                                             \
                acc[0][k * L + l] += row[k * col_stride + l];                                   \
    }                                                                                           \
    for (lev = 1; lev < CASCADE_LEVELS; ++lev)                                                  \
        for (m = 0; m < CASCADE_ROWS * L; ++m)                                                  \
            acc[0][m] += acc[lev][m];                                                           \
    memcpy(out, acc[0], sizeof(acc[0]));                                                        \
}                                                                                               \
                                                                                                \
static void row_sum_##SUFFIX(const T *x, ptrdiff_t size, ptrdiff_t stride, T *out)             \
{                                                                                               \
    T partial[CASCADE_ROWS * L];                                                                \
    const ptrdiff_t groups = size / CASCADE_ROWS;                                               \
    ptrdiff_t i;                                                                                \
    int k, l;                                                                                   \
    multi_row_##SUFFIX(x, groups, stride * CASCADE_ROWS, stride, partial);                      \
    for (i = groups * CASCADE_ROWS; i < size; ++i)                                              \
        for (l = 0; l < L; ++l)                                                                 \
            partial[l] += x[i * stride + l];                                                    \
    for (k = 1; k < CASCADE_ROWS; ++k)                                                          \
        for (l = 0; l < L; ++l)                                                                 \
            partial[l] += partial[k * L + l];                                                   \
    memcpy(out, partial, L * sizeof(T));                                                        \
}

DEFINE_CASCADE(float, 1, f32_1)
DEFINE_CASCADE(float, 8, f32_8)
DEFINE_CASCADE(double, 1, f64_1)
DEFINE_CASCADE(double, 4, f64_4)

/* tg_parallel_for's min_parallel for items of `per_item` values each: split only where every
 * part gets at least PyTorch's grain of values. */
static ptrdiff_t parallel_min(ptrdiff_t per_item)
{
    const ptrdiff_t items = per_item > 0 ? (TG_CASCADE_GRAIN + per_item - 1) / per_item : 1;
    return 2 * (items > 1 ? items : 1);
}

/* DEFINE_SUMS: the public kernels for one dtype; LANES is its lanes in a 32-byte vector (ATen's
 * AVX2 Vectorized, which its sum kernel runs on AVX-512 CPUs too: the kernel is registered with
 * REGISTER_DISPATCH, whose AVX-512 slot is empty, so the AVX2 build is dispatched; its DEFAULT
 * build's vectors are 32 bytes as well).  run() is ATen's sum of one contiguous run: whole
 * vectors through the cascade, then the remaining values into a scalar, then the lanes; runs
 * shorter than a vector go through the scalar cascade.  Callers add the run's sum to a zero
 * (PyTorch's output). */
#define DEFINE_SUMS(T, SFX, LANES)                                                              \
static T run_##SFX(const T *x, ptrdiff_t n)                                                     \
{                                                                                               \
    const int lanes = LANES;                                                                    \
    T total;                                                                                    \
    if (n >= lanes) {                                                                           \
        T vec[MAX_LANES];                                                                       \
        const ptrdiff_t whole = n / lanes;                                                      \
        ptrdiff_t k;                                                                            \
        int l;                                                                                  \
        row_sum_##SFX##_##LANES(x, whole, lanes, vec);                                         \
        total = 0;                                                                              \
        for (k = whole * lanes; k < n; ++k)                                                     \
            total += x[k];                                                                      \
        for (l = 0; l < lanes; ++l)                                                             \
            total += vec[l];                                                                    \
    } else {                                                                                    \
        row_sum_##SFX##_1(x, n, 1, &total);                                                     \
    }                                                                                           \
    return total;                                                                               \
}                                                                                               \
                                                                                                \
/* The parallel parts: each writes its own outputs, computed exactly as the serial loop would   \
 * (a part of columns starts at a multiple of CASCADE_ROWS vectors, so the column groups are    \
 * the serial ones), so no result depends on the thread count. */                               \
typedef struct {                                                                                \
    const T *a;                                                                                 \
    ptrdiff_t n, size;              /* sum: values, chunk size; rows: row length */             \
    ptrdiff_t rows, cols;           /* cols */                                                  \
    T *out;                                                                                     \
} sum_job_##SFX;                                                                                \
                                                                                                \
static void chunks_part_##SFX(void *p, ptrdiff_t begin, ptrdiff_t end)                          \
{                                                                                               \
    const sum_job_##SFX *job = (const sum_job_##SFX *)p;                                        \
    const T zero = 0;                                                                           \
    ptrdiff_t t;                                                                                \
    for (t = begin; t < end; ++t) {                                                             \
        const ptrdiff_t first = t * job->size, left = job->n - first;                           \
        job->out[t] = first < job->n ? zero + run_##SFX(job->a + first,                         \
                                                        left < job->size ? left : job->size)    \
                                     : zero;                                                    \
    }                                                                                           \
}                                                                                               \
                                                                                                \
static void rows_part_##SFX(void *p, ptrdiff_t begin, ptrdiff_t end)                            \
{                                                                                               \
    const sum_job_##SFX *job = (const sum_job_##SFX *)p;                                        \
    const T zero = 0;                                                                           \
    ptrdiff_t r;                                                                                \
    for (r = begin; r < end; ++r)                                                               \
        job->out[r] = zero + run_##SFX(job->a + r * job->n, job->n);                            \
}                                                                                               \
                                                                                                \
static void cols_part_##SFX(void *p, ptrdiff_t begin, ptrdiff_t end)                            \
{                                                                                               \
    const sum_job_##SFX *job = (const sum_job_##SFX *)p;                                        \
    const int lanes = LANES;                                                                    \
    const ptrdiff_t rows = job->rows, cols = job->cols;                                         \
    const T *a = job->a;                                                                        \
    T *out = job->out;                                                                          \
    const T zero = 0;                                                                           \
    T sums[CASCADE_ROWS * MAX_LANES];                                                           \
    ptrdiff_t j = begin;                                                                        \
    int m;                                                                                      \
    if (cols >= lanes) {                                                                        \
        /* CASCADE_ROWS vectors of columns through one cascade each, rows in order */           \
        for (; j + CASCADE_ROWS * lanes <= end; j += CASCADE_ROWS * lanes) {                    \
            multi_row_##SFX##_##LANES(a + j, rows, cols, lanes, sums);                         \
            for (m = 0; m < CASCADE_ROWS * lanes; ++m)                                          \
                out[j + m] = zero + sums[m];                                                    \
        }                                                                                       \
        /* then one vector of columns at a time, rows interleaved CASCADE_ROWS ways */          \
        for (; j + lanes <= end; j += lanes) {                                                  \
            row_sum_##SFX##_##LANES(a + j, rows, cols, sums);                                  \
            for (m = 0; m < lanes; ++m)                                                         \
                out[j + m] = zero + sums[m];                                                    \
        }                                                                                       \
    } else {                                                                                    \
        for (; j + CASCADE_ROWS <= end; j += CASCADE_ROWS) {                                    \
            multi_row_##SFX##_1(a + j, rows, cols, 1, sums);                                    \
            for (m = 0; m < CASCADE_ROWS; ++m)                                                  \
                out[j + m] = zero + sums[m];                                                    \
        }                                                                                       \
    }                                                                                           \
    for (; j < end; ++j) {              /* the last columns one by one */                       \
        row_sum_##SFX##_1(a + j, rows, cols, sums);                                             \
        out[j] = zero + sums[0];                                                                \
    }                                                                                           \
}                                                                                               \
                                                                                                \
T tg_cascade_sum_##SFX(ptrdiff_t n, const T *a, int blocks)                                     \
{                                                                                               \
    T zero = 0, slots[MAX_BLOCKS];                                                              \
    ptrdiff_t chunks;                                                                           \
    sum_job_##SFX job;                                                                          \
    if (blocks > MAX_BLOCKS)                                                                    \
        blocks = MAX_BLOCKS;                                                                    \
    if (n <= TG_CASCADE_GRAIN || blocks <= 1)                                                   \
        return zero + run_##SFX(a, n);                                                          \
    /* PyTorch's two-pass reduction: min(threads, ceil(n / grain)) chunks of ceil(n / chunks)   \
     * values, one per thread, each into its thread's zeroed slot; then the sum of all slots. */\
    chunks = (n + TG_CASCADE_GRAIN - 1) / TG_CASCADE_GRAIN;                                     \
    if (chunks > blocks)                                                                        \
        chunks = blocks;                                                                        \
    job.a = a;                                                                                  \
    job.n = n;                                                                                  \
    job.size = (n + chunks - 1) / chunks;                                                       \
    job.out = slots;                                                                            \
    tg_parallel_for(blocks, 2, 1, chunks_part_##SFX, &job);                                     \
    return zero + run_##SFX(slots, blocks);                                                     \
}                                                                                               \
                                                                                                \
T tg_cascade_strided_sum_##SFX(ptrdiff_t n, ptrdiff_t stride, const T *a, int blocks)           \
{                                                                                               \
    /* a strided run is never a vector load: the scalar cascade, chunked as a contiguous one */ \
    T zero = 0, sum, slots[MAX_BLOCKS];                                                         \
    ptrdiff_t chunks, size, t;                                                                  \
    if (blocks > MAX_BLOCKS)                                                                    \
        blocks = MAX_BLOCKS;                                                                    \
    if (n <= TG_CASCADE_GRAIN || blocks <= 1) {                                                 \
        row_sum_##SFX##_1(a, n, stride, &sum);                                                  \
        return zero + sum;                                                                      \
    }                                                                                           \
    chunks = (n + TG_CASCADE_GRAIN - 1) / TG_CASCADE_GRAIN;                                     \
    if (chunks > blocks)                                                                        \
        chunks = blocks;                                                                        \
    size = (n + chunks - 1) / chunks;                                                           \
    for (t = 0; t < blocks; ++t) {                                                              \
        const ptrdiff_t first = t * size, left = n - first;                                     \
        slots[t] = zero;                                                                        \
        if (first < n) {                                                                        \
            row_sum_##SFX##_1(a + first * stride, left < size ? left : size, stride, &sum);     \
            slots[t] = zero + sum;                                                              \
        }                                                                                       \
    }                                                                                           \
    return zero + run_##SFX(slots, blocks);                                                     \
}                                                                                               \
                                                                                                \
void tg_cascade_rows_##SFX(ptrdiff_t rows, ptrdiff_t n, const T *a, T *out)                     \
{                                                                                               \
    sum_job_##SFX job;                                                                          \
    job.a = a;                                                                                  \
    job.n = n;                                                                                  \
    job.out = out;                                                                              \
    tg_parallel_for(rows, parallel_min(n), 1, rows_part_##SFX, &job);                           \
}                                                                                               \
                                                                                                \
void tg_cascade_cols_##SFX(ptrdiff_t rows, ptrdiff_t cols, const T *a, T *out)                  \
{                                                                                               \
    const int lanes = LANES;                                                                    \
    sum_job_##SFX job;                                                                          \
    if (cols == 1) {                    /* one column is a contiguous run */                    \
        out[0] = (T)0 + run_##SFX(a, rows);                                                     \
        return;                                                                                 \
    }                                                                                           \
    job.a = a;                                                                                  \
    job.rows = rows;                                                                            \
    job.cols = cols;                                                                            \
    job.out = out;                                                                              \
    if (cols < lanes)                   /* (the scalar groups: too few columns to split) */     \
        cols_part_##SFX(&job, 0, cols);                                                         \
    else                                                                                        \
        tg_parallel_for(cols, parallel_min(rows), CASCADE_ROWS * lanes, cols_part_##SFX, &job); \
}                                                                                               \

DEFINE_SUMS(float, f32, 8)
DEFINE_SUMS(double, f64, 4)

/* Reduced dims in several blocks: PyTorch's iterator puts the reduced groups innermost, in
 * memory order, and its 2-d loop sums runs of the innermost one (R1): a contiguous run as run()
 * does, a strided one through the scalar cascade; each run's sum is added in turn to the
 * output element (a zero), runs in memory order. */
#define DEFINE_GROUP_SUMS(T, SFX)                                                               \
static T strided_run_##SFX(const T *x, ptrdiff_t n, ptrdiff_t stride)                          \
{                                                                                               \
    T total;                                                                                    \
    if (stride == 1)                                                                            \
        return run_##SFX(x, n);                                                                 \
    row_sum_##SFX##_1(x, n, stride, &total);                                                    \
    return total;                                                                               \
}                                                                                               \
                                                                                                \
typedef struct {                                                                                \
    const T *a;                                                                                 \
    T *out;                                                                                     \
    ptrdiff_t stride[TG_CASCADE_MAX_GROUPS], size[TG_CASCADE_MAX_GROUPS], n_runs;               \
    int r_groups[TG_CASCADE_MAX_GROUPS], n_groups[TG_CASCADE_MAX_GROUPS], nr, nn;               \
} groups_job_##SFX;                                                                             \
                                                                                                \
static void groups_part_##SFX(void *p, ptrdiff_t begin, ptrdiff_t end)                          \
{                                                                                               \
    const groups_job_##SFX *job = (const groups_job_##SFX *)p;                                  \
    ptrdiff_t r_index[TG_CASCADE_MAX_GROUPS], n_index[TG_CASCADE_MAX_GROUPS], o, r, off, rest;  \
    const int nr = job->nr, nn = job->nn;                                                       \
    int k;                                                                                      \
    for (k = 0, rest = begin; k < nn; ++k) {        /* output `begin`'s index, innermost first */\
        n_index[k] = rest % job->size[job->n_groups[k]];                                        \
        rest /= job->size[job->n_groups[k]];                                                    \
    }                                                                                           \
    for (o = begin; o < end; ++o) {                 /* output elements in C order */            \
        const T *base = job->a;                                                                 \
        T acc = 0;                                                                              \
        for (k = 0; k < nn; ++k)                                                                \
            base += n_index[k] * job->stride[job->n_groups[k]];                                 \
        for (k = 1; k < nr; ++k)                                                                \
            r_index[k] = 0;                                                                     \
        for (r = 0; r < job->n_runs; ++r) {                                                     \
            off = 0;                                                                            \
            for (k = 1; k < nr; ++k)                                                            \
                off += r_index[k] * job->stride[job->r_groups[k]];                              \
            acc += strided_run_##SFX(base + off, job->size[job->r_groups[0]],                   \
                                     job->stride[job->r_groups[0]]);                            \
            for (k = 1; k < nr && ++r_index[k] == job->size[job->r_groups[k]]; ++k)             \
                r_index[k] = 0;                                                                 \
        }                                                                                       \
        job->out[o] = acc;                                                                      \
        for (k = 0; k < nn && ++n_index[k] == job->size[job->n_groups[k]]; ++k)                 \
            n_index[k] = 0;                                                                     \
    }                                                                                           \
}                                                                                               \
                                                                                                \
void tg_cascade_groups_##SFX(int ngroups, const ptrdiff_t *sizes, const char *reduced,          \
                             const T *a, T *out)                                                \
{                                                                                               \
    groups_job_##SFX job;                                                                       \
    ptrdiff_t n_out = 1;                                                                        \
    int g;                                                                                      \
    job.a = a;                                                                                  \
    job.out = out;                                                                              \
    job.n_runs = 1;                                                                             \
    job.nr = job.nn = 0;                                                                        \
    for (g = ngroups - 1; g >= 0; --g) {            /* innermost first */                       \
        job.size[g] = sizes[g];                                                                 \
        job.stride[g] = g == ngroups - 1 ? 1 : job.stride[g + 1] * sizes[g + 1];                \
        if (reduced[g]) {                                                                       \
            if (job.nr > 0)                                                                     \
                job.n_runs *= sizes[g];                                                         \
            job.r_groups[job.nr++] = g;                                                         \
        } else {                                                                                \
            n_out *= sizes[g];                                                                  \
            job.n_groups[job.nn++] = g;                                                         \
        }                                                                                       \
    }                                                                                           \
    tg_parallel_for(n_out, parallel_min(job.n_runs * sizes[job.r_groups[0]]), 1,                \
                    groups_part_##SFX, &job);                                                   \
}                                                                                               \

DEFINE_GROUP_SUMS(float, f32)
DEFINE_GROUP_SUMS(double, f64)

/* nll_loss's own cascade (ATen's LossNLL.cpp): eight levels over the batch, a level carried up
 * after value b when b's bits under that level are all zero, values whose target is ignored
 * (valid[b] == 0) neither added nor carried; then the levels added in order to a zero.  The
 * levels are of the loss's dtype, so for float16 every addition is rounded to float16 (ROUND). */
#define NLL_LEVELS 8
#define DEFINE_NLL_SUM(T, SFX, ROUND)                                                           \
T tg_nll_sum_##SFX(ptrdiff_t n, const T *values, const char *valid)                             \
{                                                                                               \
    T partial[NLL_LEVELS], total = 0;                                                           \
    const ptrdiff_t power = level_power(n, NLL_LEVELS), mask = ((ptrdiff_t)1 << power) - 1;      \
    ptrdiff_t b;                                                                                \
    int j;                                                                                      \
    for (j = 0; j < NLL_LEVELS; ++j)                                                            \
        partial[j] = 0;                                                                         \
    for (b = 0; b < n; ++b) {                                                                   \
        if (valid && !valid[b])                                                                 \
            continue;                                                                           \
        partial[0] = ROUND(partial[0] + values[b]);                                             \
        for (j = 0; j + 1 < NLL_LEVELS; ++j) {                                                  \
            if ((b & (mask << (j * power))) != 0)                                               \
                break;                                                                          \
            partial[j + 1] = ROUND(partial[j + 1] + partial[j]);                                \
            partial[j] = 0;                                                                     \
        }                                                                                       \
    }                                                                                           \
    for (j = 0; j < NLL_LEVELS; ++j)                                                            \
        total = ROUND(total + partial[j]);                                                      \
    return total;                                                                               \
}

#define NLL_EXACT(x) (x)

/* x rounded to the nearest float16 value (ties to even; past 65504 an infinity; NaN stays), as
 * a float: the float16 arithmetic of c10::Half, where each float result is stored as a Half.
 * Scaling by a power of two is exact, so rounding x / ulp to an integer rounds x to the ulp. */
static float round_to_half(float x)
{
    int e;
    float ulp, r;
    if (!isfinite(x) || x == 0.0f)
        return x;
    (void)frexpf(x, &e);                     /* |x| = m * 2^e, 0.5 <= m < 1 */
    ulp = ldexpf(1.0f, (e - 1 < -14 ? -14 : e - 1) - 10);   /* subnormals: 2^-24 */
    r = nearbyintf(x / ulp) * ulp;           /* (the default mode: to nearest, ties to even) */
    return fabsf(r) > 65504.0f ? copysignf(INFINITY, x) : r;
}

DEFINE_NLL_SUM(float, f32, NLL_EXACT)
DEFINE_NLL_SUM(double, f64, NLL_EXACT)
DEFINE_NLL_SUM(float, f16, round_to_half)     /* float16 values widened to float (exact) */
