/* Order kernels (order_kernels.h describes the layouts). */
#include "order_kernels.h"

/* PyTorch's selection order: NaN above everything, two NaNs not greater than each other.  (For
 * integers x != x is false and this is x > y.) */
#define GT_OR_NAN(x, y) (((x) != (x) && (y) == (y)) || (x) > (y))

/* Sedgewick's quickselect with a median-of-three pivot, as PyTorch's quick_select_template runs
 * it on a row's copy: values and their positions swap together, and the position left at k is
 * the answer.  The inner scans need no bounds: the median-of-three puts elements no smaller
 * (at high) and no greater (at low) than the pivot at the ends of the range. */
#define KTH_KERNEL(NAME, T)                                                                       \
static ptrdiff_t NAME##_row(T* val, int64_t* idx, ptrdiff_t n, ptrdiff_t k)                       \
{                                                                                                 \
    ptrdiff_t low = 0, high = n - 1, i, j;                                                        \
    T t, pivot;                                                                                   \
    int64_t ti;                                                                                   \
    while (high > low) {                                                                          \
        if (high == low + 1) {                                                                    \
            if (GT_OR_NAN(val[low], val[high])) SWAP(low, high);                                  \
            break;                                                                                \
        }                                                                                         \
        SWAP((low + high) >> 1, low + 1);                                                         \
        if (GT_OR_NAN(val[low + 1], val[high])) SWAP(low + 1, high);                              \
        if (GT_OR_NAN(val[low], val[high])) SWAP(low, high);                                      \
        if (GT_OR_NAN(val[low + 1], val[low])) SWAP(low + 1, low);                                \
        i = low + 1;                                                                              \
        j = high;                                                                                 \
        pivot = val[low];                                                                         \
        for (;;) {                                                                                \
            do i++; while (GT_OR_NAN(pivot, val[i]));                                             \
            do j--; while (GT_OR_NAN(val[j], pivot));                                             \
            if (j < i) break;                                                                     \
            SWAP(i, j);                                                                           \
        }                                                                                         \
        SWAP(low, j);                                                                             \
        if (j <= k) low = i;                                                                      \
        if (j >= k) high = j - 1;                                                                 \
    }                                                                                             \
    return (ptrdiff_t)idx[k];                                                                     \
}                                                                                                 \
                                                                                                  \
void NAME(const T* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner, ptrdiff_t k, int64_t* out,  \
          T* value_scratch, int64_t* index_scratch)                                               \
{                                                                                                 \
    ptrdiff_t o, i, j;                                                                            \
    for (o = 0; o < outer; o++) {                                                                 \
        for (i = 0; i < inner; i++) {                                                             \
            const T* row = x + o * n * inner + i;                                                 \
            for (j = 0; j < n; j++) {                                                             \
                value_scratch[j] = row[j * inner];                                                \
                index_scratch[j] = j;                                                             \
            }                                                                                     \
            out[o * inner + i] = NAME##_row(value_scratch, index_scratch, n, k);                  \
        }                                                                                         \
    }                                                                                             \
}

#define SWAP(a, b) do { ptrdiff_t a_ = (a), b_ = (b);                                             \
                        t = val[a_]; val[a_] = val[b_]; val[b_] = t;                              \
                        ti = idx[a_]; idx[a_] = idx[b_]; idx[b_] = ti; } while (0)

KTH_KERNEL(tg_kth_positions_f32, float)
KTH_KERNEL(tg_kth_positions_f64, double)
KTH_KERNEL(tg_kth_positions_i64, int64_t)

/* PyTorch's binary search: halve [start, end) until empty, moving right while the boundary
 * probed is < the value (<= with right), written with the negated comparison as PyTorch writes
 * it, so a NaN boundary or value (every comparison false) moves right too. */
#define BISECT_KERNEL(NAME, T)                                                                    \
void NAME(const T* b, ptrdiff_t b_row_stride, ptrdiff_t n_b, const T* v, ptrdiff_t rows,         \
          ptrdiff_t m, int right, int64_t* out)                                                   \
{                                                                                                 \
    ptrdiff_t r, j;                                                                               \
    for (r = 0; r < rows; r++) {                                                                  \
        const T* row = b + r * b_row_stride;                                                      \
        const T* vals = v + r * m;                                                                \
        int64_t* dst = out + r * m;                                                               \
        for (j = 0; j < m; j++) {                                                                 \
            const T value = vals[j];                                                              \
            ptrdiff_t start = 0, end = n_b;                                                       \
            if (right) {                                                                          \
                while (start < end) {                                                             \
                    ptrdiff_t mid = start + ((end - start) >> 1);                                 \
                    if (!(row[mid] > value)) start = mid + 1; else end = mid;                     \
                }                                                                                 \
            } else {                                                                              \
                while (start < end) {                                                             \
                    ptrdiff_t mid = start + ((end - start) >> 1);                                 \
                    if (!(row[mid] >= value)) start = mid + 1; else end = mid;                    \
                }                                                                                 \
            }                                                                                     \
            dst[j] = (int64_t)start;                                                              \
        }                                                                                         \
    }                                                                                             \
}

BISECT_KERNEL(tg_bisect_f32, float)
BISECT_KERNEL(tg_bisect_f64, double)
BISECT_KERNEL(tg_bisect_i64, int64_t)

/* The running extreme r and the position p taking over (order_kernels.h): r = numpy's
 * maximum(r, v) (minimum), which keeps a NaN r and takes a NaN v; p moves to j where v == r
 * after the update, or v is NaN. */
#define EXTREME_KERNEL(NAME, T)                                                                   \
void NAME(const T* x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner, int maximum, int64_t* out)   \
{                                                                                                 \
    ptrdiff_t o, i, j;                                                                            \
    for (o = 0; o < outer; o++) {                                                                 \
        for (i = 0; i < inner; i++) {                                                             \
            const T* row = x + o * n * inner + i;                                                 \
            int64_t* dst = out + o * n * inner + i;                                               \
            T r = row[0];                                                                         \
            int64_t p = 0;                                                                        \
            dst[0] = 0;                                                                           \
            for (j = 1; j < n; j++) {                                                             \
                const T v = row[j * inner];                                                       \
                if (r == r && (v != v || (maximum ? v > r : v < r)))                              \
                    r = v;                                                                        \
                if (v == r || v != v)                                                             \
                    p = j;                                                                        \
                dst[j * inner] = p;                                                               \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
}

EXTREME_KERNEL(tg_running_extreme_f32, float)
EXTREME_KERNEL(tg_running_extreme_f64, double)
EXTREME_KERNEL(tg_running_extreme_i64, int64_t)

/* The histogram bin of each sample (order_kernels.h): per dimension a guess by linear
 * interpolation between the outer edges, as PyTorch's kernel makes it, then moved to the last
 * edge <= the value (the last bin keeping its right edge): PyTorch's local search, here run to
 * the end so that any non-decreasing edges give the binary search's bin.  -1: outside (NaN
 * included). */
#define HIST_BINS_KERNEL(NAME, T)                                                                 \
void NAME(const T* samples, ptrdiff_t n, ptrdiff_t dims, const T* edges,                          \
          const ptrdiff_t* n_bins, int64_t* out)                                                  \
{                                                                                                 \
    for (ptrdiff_t s = 0; s < n; s++) {                                                           \
        int64_t flat = 0;                                                                         \
        const T* e = edges;                                                                       \
        for (ptrdiff_t d = 0; d < dims; d++) {                                                    \
            const ptrdiff_t nb = n_bins[d];                                                       \
            const T v = samples[s * dims + d], lo = e[0], hi = e[nb];                             \
            if (!(v >= lo && v <= hi)) { flat = -1; break; }                                      \
            ptrdiff_t pos = 0;                                                                    \
            if (hi > lo) {                                                                        \
                T guess = (v - lo) / (hi - lo) * (T)nb;                                           \
                pos = guess >= (T)(nb - 1) ? nb - 1 : (guess > 0 ? (ptrdiff_t)guess : 0);         \
            }                                                                                     \
            while (pos > 0 && v < e[pos]) pos--;                                                  \
            while (pos < nb - 1 && v >= e[pos + 1]) pos++;                                        \
            flat = flat * nb + pos;                                                               \
            e += nb + 1;                                                                          \
        }                                                                                         \
        out[s] = flat;                                                                            \
    }                                                                                             \
}

HIST_BINS_KERNEL(tg_histogram_bins_f32, float)
HIST_BINS_KERNEL(tg_histogram_bins_f64, double)
