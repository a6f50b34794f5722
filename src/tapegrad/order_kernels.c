/* Order kernels (order_kernels.h describes the layouts). */
#include "order_kernels.h"

#include <string.h>

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


/* -- libstdc++'s sorting algorithms (order_kernels.h: tg_stl_order_*) ----------------------------
 * A transcription of bits/stl_algo.h and bits/stl_heap.h (std::__introsort_loop with its
 * 16-element threshold, __move_median_to_first, __unguarded_partition, __final_insertion_sort,
 * the binary-heap __heap_select/__sort_heap of partial_sort, __introselect), on (value, position)
 * pairs compared by the value only.  tapegrad/_stl_order.py holds the same steps in Python (the
 * reference the tests compare these with). */
#define STL_KERNELS(SFX, T)                                                                       \
typedef struct { T v; int64_t i; } pair_##SFX;                                                    \
                                                                                                  \
static inline int less_##SFX(const pair_##SFX* x, const pair_##SFX* y, int cmp)                  \
{                                                                                                 \
    if (cmp == 0) return (x->v != x->v && y->v == y->v) || x->v > y->v;                           \
    if (cmp == 1) return (x->v == x->v && y->v != y->v) || x->v < y->v;                           \
    return x->v < y->v;                                                                           \
}                                                                                                 \
                                                                                                  \
static void push_heap_##SFX(pair_##SFX* a, ptrdiff_t hole, ptrdiff_t top, pair_##SFX value,      \
                            int cmp)                                                              \
{                                                                                                 \
    ptrdiff_t parent = (hole - 1) / 2;                                                            \
    while (hole > top && less_##SFX(&a[parent], &value, cmp)) {                                   \
        a[hole] = a[parent];                                                                      \
        hole = parent;                                                                            \
        parent = (hole - 1) / 2;                                                                  \
    }                                                                                             \
    a[hole] = value;                                                                              \
}                                                                                                 \
                                                                                                  \
static void adjust_heap_##SFX(pair_##SFX* a, ptrdiff_t hole, ptrdiff_t len, pair_##SFX value,    \
                              int cmp)                                                            \
{                                                                                                 \
    const ptrdiff_t top = hole;                                                                   \
    ptrdiff_t child = hole;                                                                       \
    while (child < (len - 1) / 2) {                                                               \
        child = 2 * (child + 1);                                                                  \
        if (less_##SFX(&a[child], &a[child - 1], cmp)) child--;                                   \
        a[hole] = a[child];                                                                       \
        hole = child;                                                                             \
    }                                                                                             \
    if ((len & 1) == 0 && child == (len - 2) / 2) {                                               \
        child = 2 * (child + 1);                                                                  \
        a[hole] = a[child - 1];                                                                   \
        hole = child - 1;                                                                         \
    }                                                                                             \
    push_heap_##SFX(a, hole, top, value, cmp);                                                    \
}                                                                                                 \
                                                                                                  \
static void make_heap_##SFX(pair_##SFX* a, ptrdiff_t len, int cmp)                               \
{                                                                                                 \
    if (len < 2) return;                                                                          \
    for (ptrdiff_t parent = (len - 2) / 2;; parent--) {                                           \
        adjust_heap_##SFX(a, parent, len, a[parent], cmp);                                        \
        if (parent == 0) return;                                                                  \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
/* __pop_heap(first, last, result): the top goes to result, result's pair sifts in from the top */\
static void pop_heap_##SFX(pair_##SFX* a, ptrdiff_t len, ptrdiff_t result, int cmp)              \
{                                                                                                 \
    pair_##SFX value = a[result];                                                                 \
    a[result] = a[0];                                                                             \
    adjust_heap_##SFX(a, 0, len, value, cmp);                                                     \
}                                                                                                 \
                                                                                                  \
static void heap_select_##SFX(pair_##SFX* a, ptrdiff_t middle, ptrdiff_t last, int cmp)          \
{                                                                                                 \
    make_heap_##SFX(a, middle, cmp);                                                              \
    for (ptrdiff_t i = middle; i < last; i++)                                                     \
        if (less_##SFX(&a[i], &a[0], cmp)) pop_heap_##SFX(a, middle, i, cmp);                     \
}                                                                                                 \
                                                                                                  \
static void sort_heap_##SFX(pair_##SFX* a, ptrdiff_t last, int cmp)                              \
{                                                                                                 \
    while (last > 1) {                                                                            \
        last--;                                                                                   \
        pop_heap_##SFX(a, last, last, cmp);                                                       \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void partial_sort_##SFX(pair_##SFX* a, ptrdiff_t middle, ptrdiff_t last, int cmp)         \
{                                                                                                 \
    heap_select_##SFX(a, middle, last, cmp);                                                      \
    sort_heap_##SFX(a, middle, cmp);                                                              \
}                                                                                                 \
                                                                                                  \
static void swap_##SFX(pair_##SFX* a, ptrdiff_t x, ptrdiff_t y)                                   \
{                                                                                                 \
    pair_##SFX t = a[x];                                                                          \
    a[x] = a[y];                                                                                  \
    a[y] = t;                                                                                     \
}                                                                                                 \
                                                                                                  \
static void move_median_to_first_##SFX(pair_##SFX* a, ptrdiff_t result, ptrdiff_t i,             \
                                       ptrdiff_t j, ptrdiff_t m, int cmp)                         \
{                                                                                                 \
    ptrdiff_t pick;                                                                               \
    if (less_##SFX(&a[i], &a[j], cmp)) {                                                          \
        if (less_##SFX(&a[j], &a[m], cmp)) pick = j;                                              \
        else if (less_##SFX(&a[i], &a[m], cmp)) pick = m;                                         \
        else pick = i;                                                                            \
    } else if (less_##SFX(&a[i], &a[m], cmp)) pick = i;                                           \
    else if (less_##SFX(&a[j], &a[m], cmp)) pick = m;                                             \
    else pick = j;                                                                                \
    swap_##SFX(a, result, pick);                                                                  \
}                                                                                                 \
                                                                                                  \
static ptrdiff_t unguarded_partition_##SFX(pair_##SFX* a, ptrdiff_t first, ptrdiff_t last,       \
                                           ptrdiff_t pivot, int cmp)                              \
{                                                                                                 \
    for (;;) {                                                                                    \
        while (less_##SFX(&a[first], &a[pivot], cmp)) first++;                                    \
        last--;                                                                                   \
        while (less_##SFX(&a[pivot], &a[last], cmp)) last--;                                      \
        if (!(first < last)) return first;                                                        \
        swap_##SFX(a, first, last);                                                               \
        first++;                                                                                  \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static ptrdiff_t partition_pivot_##SFX(pair_##SFX* a, ptrdiff_t first, ptrdiff_t last, int cmp)  \
{                                                                                                 \
    ptrdiff_t mid = first + (last - first) / 2;                                                   \
    move_median_to_first_##SFX(a, first, first + 1, mid, last - 1, cmp);                          \
    return unguarded_partition_##SFX(a, first + 1, last, first, cmp);                             \
}                                                                                                 \
                                                                                                  \
static void unguarded_linear_insert_##SFX(pair_##SFX* a, ptrdiff_t last, int cmp)                \
{                                                                                                 \
    pair_##SFX value = a[last];                                                                   \
    ptrdiff_t prev = last - 1;                                                                    \
    while (less_##SFX(&value, &a[prev], cmp)) {                                                   \
        a[last] = a[prev];                                                                        \
        last = prev;                                                                              \
        prev--;                                                                                   \
    }                                                                                             \
    a[last] = value;                                                                              \
}                                                                                                 \
                                                                                                  \
static void insertion_sort_##SFX(pair_##SFX* a, ptrdiff_t first, ptrdiff_t last, int cmp)        \
{                                                                                                 \
    if (first == last) return;                                                                    \
    for (ptrdiff_t i = first + 1; i < last; i++) {                                                \
        if (less_##SFX(&a[i], &a[first], cmp)) {                                                  \
            pair_##SFX value = a[i];                                                              \
            memmove(&a[first + 1], &a[first], (size_t)(i - first) * sizeof(pair_##SFX));         \
            a[first] = value;                                                                     \
        } else {                                                                                  \
            unguarded_linear_insert_##SFX(a, i, cmp);                                             \
        }                                                                                         \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
/* __introsort_loop: recursion on the right part, a loop on the left one, as libstdc++'s */       \
static void introsort_loop_##SFX(pair_##SFX* a, ptrdiff_t first, ptrdiff_t last, int depth,      \
                                 int cmp)                                                         \
{                                                                                                 \
    while (last - first > STL_THRESHOLD) {                                                        \
        if (depth == 0) {                                                                         \
            partial_sort_##SFX(a + first, last - first, last - first, cmp);                       \
            return;                                                                               \
        }                                                                                         \
        depth--;                                                                                  \
        ptrdiff_t cut = partition_pivot_##SFX(a, first, last, cmp);                               \
        introsort_loop_##SFX(a, cut, last, depth, cmp);                                           \
        last = cut;                                                                               \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void std_sort_##SFX(pair_##SFX* a, ptrdiff_t first, ptrdiff_t last, int cmp)              \
{                                                                                                 \
    if (last - first < 2) return;                                                                 \
    introsort_loop_##SFX(a, first, last, 2 * floor_lg(last - first), cmp);                        \
    if (last - first > STL_THRESHOLD) {                                                           \
        insertion_sort_##SFX(a, first, first + STL_THRESHOLD, cmp);                               \
        for (ptrdiff_t i = first + STL_THRESHOLD; i < last; i++)                                  \
            unguarded_linear_insert_##SFX(a, i, cmp);                                             \
    } else {                                                                                      \
        insertion_sort_##SFX(a, first, last, cmp);                                                \
    }                                                                                             \
}                                                                                                 \
                                                                                                  \
static void nth_element_##SFX(pair_##SFX* a, ptrdiff_t nth, ptrdiff_t last, int cmp)             \
{                                                                                                 \
    ptrdiff_t first = 0;                                                                          \
    if (first == last || nth == last) return;                                                     \
    int depth = 2 * floor_lg(last - first);                                                       \
    while (last - first > 3) {                                                                    \
        if (depth == 0) {                                                                         \
            heap_select_##SFX(a + first, nth + 1 - first, last - first, cmp);                     \
            swap_##SFX(a, first, nth);                                                            \
            return;                                                                               \
        }                                                                                         \
        depth--;                                                                                  \
        ptrdiff_t cut = partition_pivot_##SFX(a, first, last, cmp);                               \
        if (cut <= nth) first = cut;                                                              \
        else last = cut;                                                                          \
    }                                                                                             \
    insertion_sort_##SFX(a, first, last, cmp);                                                    \
}                                                                                                 \
                                                                                                  \
void tg_stl_order_##SFX(const T* rows, ptrdiff_t n, const int64_t* redo, ptrdiff_t n_redo,       \
                        int algo, ptrdiff_t k, int sort_head, int cmp, ptrdiff_t width,           \
                        int64_t* out, void* scratch)                                              \
{                                                                                                 \
    pair_##SFX* a = (pair_##SFX*)scratch;                                                         \
    for (ptrdiff_t r = 0; r < n_redo; r++) {                                                      \
        const T* row = rows + redo[r] * n;                                                        \
        for (ptrdiff_t j = 0; j < n; j++) {                                                       \
            a[j].v = row[j];                                                                      \
            a[j].i = j;                                                                           \
        }                                                                                         \
        if (algo == 0) {                                                                          \
            std_sort_##SFX(a, 0, n, cmp);                                                         \
        } else if (algo == 1) {                                                                   \
            partial_sort_##SFX(a, k, n, cmp);                                                     \
        } else {                                                                                  \
            nth_element_##SFX(a, k - 1, n, cmp);                                                  \
            if (sort_head) std_sort_##SFX(a, 0, k - 1, cmp);                                      \
        }                                                                                         \
        for (ptrdiff_t j = 0; j < width; j++) out[r * width + j] = a[j].i;                        \
    }                                                                                             \
}

#define STL_THRESHOLD 16        /* libstdc++'s _S_threshold */

static int floor_lg(ptrdiff_t n)
{
    int lg = -1;
    while (n > 0) {
        n >>= 1;
        lg++;
    }
    return lg;
}

STL_KERNELS(f64, double)
STL_KERNELS(i64, int64_t)

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
