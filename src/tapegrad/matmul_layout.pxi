# ---------------------------------------------------------------------------------------------
# A @ W^T for C-contiguous matrices A (n, k) and W (m, k): linear's product, and `x @ w.t()`.
#
# The BLAS can compute it two ways: directly into a C-contiguous (n, m) result, or as W @ A^T,
# an (m, n) result transposed afterwards.  Both make the same multiply-adds in the same order, but
# the BLAS packs its operands differently, and which way is faster depends on the shapes, the
# dtype and the BLAS build.  On OpenBLAS 0.3.31 (SkylakeX kernels), 64x784 @ (256x784)^T in
# float32 (the MLP benchmark's first layer) takes 290 us directly and 210 us the other way, while
# 1000x64 @ (64x64)^T is faster directly.  No fixed rule holds across dtypes, so each shape is
# measured: its first calls after the first compute both ways, timed, and later calls take the
# faster.
#
# The choice must never change a value.  Each probing call computes both ways on the caller's
# operands, and the shape stays direct for good the first time their bits differ; it is only
# chosen by speed after LAYOUT_TRIALS calls that all agreed.  A BLAS's order of operations depends
# on the shapes and layouts, not on the values, so a different order shows in the bits of generic
# operands; calls with operands that could hide it (more than half of either's elements zero, as
# in a zero-initialised layer) do not count as trials.  Probing on the caller's operands rather
# than on random ones of the same shapes keeps memory flat: a (256, 784) float32 probe weight
# alone would add 0.8 MB to a small model's peak footprint.
#
# Linear's bias row rides along (product_a_bt's `bias`): the transposed way adds it while it
# copies the (m, n) result back into (n, m) order, so the layer output is written once instead of
# written and then read and written again by a separate bias pass (eager and replayed linear
# alike).  Each element gets the one IEEE addition product + bias that add_into makes, so the
# values are the same bits either way.
# ---------------------------------------------------------------------------------------------

from cpython.time cimport perf_counter_ns
from libc.stdint cimport int64_t, INT64_MAX
from libc.string cimport memcmp

cdef enum:
    LAYOUT_MIN_WORK = 1 << 18   # n*k*m below this: direct (the timing would not pay for itself)
    LAYOUT_TRIALS = 5           # agreeing probing calls before choosing (fastest of each)
    LAYOUT_MAX_PLANS = 1024     # shapes measured at most; later new shapes stay direct
    LAYOUT_MAX_SKIPS = 64       # degenerate calls before a shape stays direct without trials

cdef enum:
    LAYOUT_PROBING, LAYOUT_DIRECT, LAYOUT_TRANSPOSED
    LAYOUT_DIFFERS              # direct for good: the two ways gave different bits

cdef tuple LAYOUT_NAMES = ("probing", "direct", "transposed", "differs")


@cython.final
cdef class LayoutPlan:
    """How A @ W^T is computed for one (n, k, m, dtype)."""
    cdef int choice
    cdef int trials             # probing calls whose two results agreed
    cdef int skips              # probing calls with operands too degenerate to count
    cdef int64_t best[2]        # the fastest timed call of each way (direct, transposed), in ns


cdef dict LAYOUT_PLANS = {}


cdef extern from *:
    """
    /* dst (cols x rows, C order) = src (rows x cols, C order) transposed, with add[i] added to
       every element of src's row i: the transposed product's copy back with linear's bias.  One
       IEEE addition per element, product first, as add_into's kernel makes it.  Tiles as
       tg_transpose_4 / tg_transpose_8 (kernels.c); float32 in 4 x 4 SSE register blocks. */
    #define TG_ADD_TILE 32
    /* (its loop variables are named apart from the callers' i and j, which its bounds read) */
    #define TG_TRANSPOSE_ADD_TAIL(i0_, i1_, j0_, j1_)                                    \
        for (ptrdiff_t tail_j = (j0_); tail_j < (j1_); tail_j++)                            \
            for (ptrdiff_t tail_i = (i0_); tail_i < (i1_); tail_i++)                        \
                dst[tail_j * rows + tail_i] = src[tail_i * cols + tail_j] + add[tail_i];
    static void tg_transpose_add_f64(ptrdiff_t rows, ptrdiff_t cols, const double *src,
                                     const double *add, double *dst)
    {
        for (ptrdiff_t i0 = 0; i0 < rows; i0 += TG_ADD_TILE) {
            const ptrdiff_t i1 = i0 + TG_ADD_TILE < rows ? i0 + TG_ADD_TILE : rows;
            for (ptrdiff_t j0 = 0; j0 < cols; j0 += TG_ADD_TILE) {
                const ptrdiff_t j1 = j0 + TG_ADD_TILE < cols ? j0 + TG_ADD_TILE : cols;
                TG_TRANSPOSE_ADD_TAIL(i0, i1, j0, j1)
            }
        }
    }
    #if defined(__SSE2__)
    #include <xmmintrin.h>
    static void tg_transpose_add_f32(ptrdiff_t rows, ptrdiff_t cols, const float *src,
                                     const float *add, float *dst)
    {
        for (ptrdiff_t i0 = 0; i0 < rows; i0 += TG_ADD_TILE) {
            const ptrdiff_t i1 = i0 + TG_ADD_TILE < rows ? i0 + TG_ADD_TILE : rows;
            const ptrdiff_t i4 = i0 + ((i1 - i0) & ~(ptrdiff_t)3);
            for (ptrdiff_t j0 = 0; j0 < cols; j0 += TG_ADD_TILE) {
                const ptrdiff_t j1 = j0 + TG_ADD_TILE < cols ? j0 + TG_ADD_TILE : cols;
                const ptrdiff_t j4 = j0 + ((j1 - j0) & ~(ptrdiff_t)3);
                for (ptrdiff_t i = i0; i < i4; i += 4) {
                    const __m128 b = _mm_loadu_ps(add + i);     /* the bias of rows i .. i+3 */
                    for (ptrdiff_t j = j0; j < j4; j += 4) {
                        const float *s = src + i * cols + j;
                        __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + cols);
                        __m128 r2 = _mm_loadu_ps(s + 2 * cols), r3 = _mm_loadu_ps(s + 3 * cols);
                        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);      /* r_k: column j+k, rows i.. */
                        float *d = dst + j * rows + i;
                        _mm_storeu_ps(d, _mm_add_ps(r0, b));
                        _mm_storeu_ps(d + rows, _mm_add_ps(r1, b));
                        _mm_storeu_ps(d + 2 * rows, _mm_add_ps(r2, b));
                        _mm_storeu_ps(d + 3 * rows, _mm_add_ps(r3, b));
                    }
                    TG_TRANSPOSE_ADD_TAIL(i, i + 4, j4, j1)     /* the tile's last columns */
                }
                TG_TRANSPOSE_ADD_TAIL(i4, i1, j0, j1)           /* the tile's last rows */
            }
        }
    }
    #else
    static void tg_transpose_add_f32(ptrdiff_t rows, ptrdiff_t cols, const float *src,
                                     const float *add, float *dst)
    {
        for (ptrdiff_t i0 = 0; i0 < rows; i0 += TG_ADD_TILE) {
            const ptrdiff_t i1 = i0 + TG_ADD_TILE < rows ? i0 + TG_ADD_TILE : rows;
            for (ptrdiff_t j0 = 0; j0 < cols; j0 += TG_ADD_TILE) {
                const ptrdiff_t j1 = j0 + TG_ADD_TILE < cols ? j0 + TG_ADD_TILE : cols;
                TG_TRANSPOSE_ADD_TAIL(i0, i1, j0, j1)
            }
        }
    }
    #endif
    """
    void tg_transpose_add_f32(ptrdiff_t rows, ptrdiff_t cols, const float* src,
                              const float* add, float* dst) noexcept nogil
    void tg_transpose_add_f64(ptrdiff_t rows, ptrdiff_t cols, const double* src,
                              const double* add, double* dst) noexcept nogil


cdef object product_transposed(cnp.ndarray A, cnp.ndarray W, object bias=None):
    """A @ W^T computed as the BLAS's W @ A^T, then transposed into a new C-contiguous array;
    `bias` (None, or a C-contiguous row of m values of A's dtype: bias_row) added on the way."""
    cdef cnp.npy_intp n = cnp.PyArray_DIM(A, 0), m = cnp.PyArray_DIM(W, 0)
    cdef cnp.ndarray t = <cnp.ndarray>nd(np.matmul(W, A.T))                 # (m, n), C order
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = m
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, dims, cnp.PyArray_TYPE(A), 0)
    cdef bint f32 = cnp.PyArray_ITEMSIZE(A) == 4
    if bias is not None:
        if f32:
            tg_transpose_add_f32(m, n, <const float*>cnp.PyArray_DATA(t),
                                 <const float*>cnp.PyArray_DATA(<cnp.ndarray>bias),
                                 <float*>cnp.PyArray_DATA(out))
        else:
            tg_transpose_add_f64(m, n, <const double*>cnp.PyArray_DATA(t),
                                 <const double*>cnp.PyArray_DATA(<cnp.ndarray>bias),
                                 <double*>cnp.PyArray_DATA(out))
    elif f32:
        tg_transpose_4(m, n, <const uint32_t*>cnp.PyArray_DATA(t), <uint32_t*>cnp.PyArray_DATA(out))
    else:
        tg_transpose_8(m, n, <const uint64_t*>cnp.PyArray_DATA(t), <uint64_t*>cnp.PyArray_DATA(out))
    return out


cdef bint bias_row(object C, object X, object W) except -1:
    """Whether linear's bias C can ride along product_a_bt (its `bias`): a C-contiguous row of
    W's rows (the result's columns) in the input's float dtype, X and W matrices' or batches'
    operands of that dtype too."""
    if not (cnp.PyArray_Check(C) and cnp.PyArray_Check(X) and cnp.PyArray_Check(W)):
        return False
    cdef cnp.ndarray c = <cnp.ndarray>C, w = <cnp.ndarray>W
    cdef int t = cnp.PyArray_TYPE(c)
    return (cnp.PyArray_NDIM(c) == 1 and cnp.PyArray_NDIM(w) == 2
            and (t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64)
            and cnp.PyArray_TYPE(<cnp.ndarray>X) == t and cnp.PyArray_TYPE(w) == t
            and cnp.PyArray_IS_C_CONTIGUOUS(c)
            and cnp.PyArray_DIM(c, 0) == cnp.PyArray_DIM(w, 0))


cdef bint mostly_nonzero(cnp.ndarray x):
    return 2 * <cnp.npy_intp>np.count_nonzero(x) >= cnp.PyArray_SIZE(x)


cdef object probe_layouts(LayoutPlan plan, cnp.ndarray A, object B, cnp.ndarray W):
    """One probing call: both ways, timed (their order alternating, so neither always finds the
    operands in cache); returns the direct result, and settles the plan when it can."""
    if not (mostly_nonzero(A) and mostly_nonzero(W)):
        plan.skips += 1
        if plan.skips == LAYOUT_MAX_SKIPS:
            plan.choice = LAYOUT_DIRECT
        return nd(np.matmul(A, B))
    cdef int first = plan.trials & 1                       # 0: direct first, 1: transposed first
    cdef int64_t t0, t1, t2
    t0 = perf_counter_ns()
    if first:
        other = product_transposed(A, W)
        t1 = perf_counter_ns()
        direct = nd(np.matmul(A, B))
    else:
        direct = nd(np.matmul(A, B))
        t1 = perf_counter_ns()
        other = product_transposed(A, W)
    t2 = perf_counter_ns()
    plan.best[first] = min(plan.best[first], t1 - t0)
    plan.best[1 - first] = min(plan.best[1 - first], t2 - t1)
    if memcmp(cnp.PyArray_DATA(<cnp.ndarray>direct), cnp.PyArray_DATA(<cnp.ndarray>other),
              cnp.PyArray_NBYTES(<cnp.ndarray>direct)) != 0:
        plan.choice = LAYOUT_DIFFERS                        # a different order: never transposed
        return direct
    plan.trials += 1
    if plan.trials == LAYOUT_TRIALS:
        plan.choice = LAYOUT_TRANSPOSED if plan.best[1] < plan.best[0] else LAYOUT_DIRECT
    return direct


cdef object product_a_bt(object A, object B, object bias=None):
    """np.matmul(A, B) as an ndarray; the caller owns the errstate.  When A is a C-contiguous
    float32/float64 matrix and B the transpose of one (linear's W^T, `x @ w.t()`), with enough
    work to matter, the shape's faster layout; otherwise numpy's call as it is.  A few rows:
    korder_product, MKL's summation order.  `bias` (None, or a row that bias_row accepts): added
    to each row of the result, as add_into adds it."""
    if not (cnp.PyArray_Check(A) and cnp.PyArray_Check(B)):
        return plus_bias(nd(np.matmul(A, B)), bias)
    cdef cnp.ndarray a = <cnp.ndarray>A, b = <cnp.ndarray>B
    cdef int t = cnp.PyArray_TYPE(a)
    cdef object korder = korder_product(a, b, bias)
    if korder is not None:
        return korder
    if (cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_NDIM(b) != 2
            or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or cnp.PyArray_TYPE(b) != t
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_IS_F_CONTIGUOUS(b)
            or cnp.PyArray_DIM(a, 1) != cnp.PyArray_DIM(b, 0)):
        return plus_bias(nd(np.matmul(A, B)), bias)
    cdef cnp.npy_intp n = cnp.PyArray_DIM(a, 0), k = cnp.PyArray_DIM(a, 1)
    cdef cnp.npy_intp m = cnp.PyArray_DIM(b, 1)
    if n * k * m < LAYOUT_MIN_WORK or n == 1 or m == 1:
        return plus_bias(nd(np.matmul(A, B)), bias)
    key = (n, k, m, t)
    cdef LayoutPlan plan = <LayoutPlan>LAYOUT_PLANS.get(key)
    if plan is None:
        # First sight of the shape: direct.  Probing (each way computed) starts at its second
        # call, so shapes seen once (a last partial batch, varying lengths) never pay for it, and
        # the table stops growing at LAYOUT_MAX_PLANS shapes.
        if len(LAYOUT_PLANS) < LAYOUT_MAX_PLANS:
            plan = LayoutPlan.__new__(LayoutPlan)
            plan.choice = LAYOUT_PROBING
            plan.best[0] = plan.best[1] = INT64_MAX
            LAYOUT_PLANS[key] = plan
        return plus_bias(nd(np.matmul(A, B)), bias)
    if plan.choice == LAYOUT_DIRECT or plan.choice == LAYOUT_DIFFERS:
        return plus_bias(nd(np.matmul(A, B)), bias)
    if plan.choice == LAYOUT_TRANSPOSED:
        return product_transposed(a, <cnp.ndarray>b.T, bias)
    # (probing compares the two products without the bias: its addition is the same in both)
    return plus_bias(probe_layouts(plan, a, B, <cnp.ndarray>b.T), bias)


# PyTorch's float32/float64 mm is MKL's gemm, which sums each entry of a product with few rows
# in k order, one fused multiply-add per term (a grid of 2-64 rows by 5-128 inner by 20-384
# columns: PyTorch's bits wherever numpy's were, and in ~20% more shapes), as the recurrent
# layers' packed kernel (nn_kernels.c) does; numpy's OpenBLAS takes another order for few rows
# (8 rows by 32 inputs: other last bits).  With few rows that kernel computes x @ W^T here, so
# linear's bits are PyTorch's more often, and an RNNCell step's are its RNN layer's step's, row
# for row, whatever the number of rows (a layer projects all its steps' inputs at once).
# (Beyond 128 inputs MKL's order is no longer k order, nor is numpy's: numpy's blocked sums
# stay, the more accurate for a long inner dimension.)
cdef Py_ssize_t KORDER_MAX_ROWS = 64
cdef Py_ssize_t KORDER_MAX_INNER = 128

cdef extern from "nn_kernels.h" nogil:
    ptrdiff_t tg_gemm_packed_size_f32(ptrdiff_t K, ptrdiff_t N)
    ptrdiff_t tg_gemm_packed_size_f64(ptrdiff_t K, ptrdiff_t N)
    void tg_gemm_pack_f32(ptrdiff_t K, ptrdiff_t N, const float* b, ptrdiff_t rs, ptrdiff_t cs,
                          float* packed)
    void tg_gemm_pack_f64(ptrdiff_t K, ptrdiff_t N, const double* b, ptrdiff_t rs, ptrdiff_t cs,
                          double* packed)
    void tg_gemm_packed_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                            const float* packed, const float* bias, const float* add,
                            ptrdiff_t ldadd, float* c, ptrdiff_t ldc)
    void tg_gemm_packed_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a,
                            ptrdiff_t lda, const double* packed, const double* bias,
                            const double* add, ptrdiff_t ldadd, double* c, ptrdiff_t ldc)


cdef object korder_product(cnp.ndarray a, cnp.ndarray b, object bias):
    """a @ b (+ bias row), each entry summed in k order by the packed kernel, bias added to the
    rounded product, when a is a float32/float64 matrix of 2..KORDER_MAX_ROWS rows and at most
    KORDER_MAX_INNER columns whose rows are
    contiguous (a step x[t] of a batch-first input is strided: BLAS reads it with its row stride
    too) and b is the transpose of a C-contiguous matrix of a's dtype (linear's W^T); else None."""
    cdef int t = cnp.PyArray_TYPE(a)
    if (cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_NDIM(b) != 2
            or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or cnp.PyArray_TYPE(b) != t
            or not cnp.PyArray_IS_F_CONTIGUOUS(b)
            or cnp.PyArray_DIM(a, 1) != cnp.PyArray_DIM(b, 0)):
        return None
    cdef cnp.npy_intp n = cnp.PyArray_DIM(a, 0), k = cnp.PyArray_DIM(a, 1)
    cdef cnp.npy_intp m = cnp.PyArray_DIM(b, 1), isz = cnp.PyArray_ITEMSIZE(a)
    cdef cnp.npy_intp rs = cnp.PyArray_STRIDE(a, 0)
    if not (2 <= n <= KORDER_MAX_ROWS and m >= 2 and 1 <= k <= KORDER_MAX_INNER):
        return None
    if (cnp.PyArray_STRIDE(a, 1) != isz and k > 1) or rs < k * isz or rs % isz:
        return None
    cdef cnp.npy_intp lda = rs // isz
    cdef bint f32 = t == cnp.NPY_FLOAT32
    dt = a.dtype
    out = np.empty((n, m), dtype=dt)
    cdef void* pb = NULL if bias is None else cnp.PyArray_DATA(<cnp.ndarray>bias)
    if f32:
        packed = np.empty(tg_gemm_packed_size_f32(k, m), dtype=dt)
        tg_gemm_pack_f32(k, m, <float*>cnp.PyArray_DATA(b), 1, k,
                         <float*>cnp.PyArray_DATA(<cnp.ndarray>packed))
        tg_gemm_packed_f32(n, m, k, <float*>cnp.PyArray_DATA(a), lda,
                           <float*>cnp.PyArray_DATA(<cnp.ndarray>packed), <float*>pb, NULL, 0,
                           <float*>cnp.PyArray_DATA(<cnp.ndarray>out), m)
    else:
        packed = np.empty(tg_gemm_packed_size_f64(k, m), dtype=dt)
        tg_gemm_pack_f64(k, m, <double*>cnp.PyArray_DATA(b), 1, k,
                         <double*>cnp.PyArray_DATA(<cnp.ndarray>packed))
        tg_gemm_packed_f64(n, m, k, <double*>cnp.PyArray_DATA(a), lda,
                           <double*>cnp.PyArray_DATA(<cnp.ndarray>packed), <double*>pb, NULL, 0,
                           <double*>cnp.PyArray_DATA(<cnp.ndarray>out), m)
    return nd(out)


cdef inline object plus_bias(object out, object bias):
    """out + bias in place (out a fresh product) when there is a bias."""
    if bias is not None:
        add_into(out, bias)
    return out


def _matmul_layouts():
    """{(n, k, m, dtype name): (choice, fastest direct ns, fastest transposed ns)} of the shapes
    measured so far (for tests and benchmarks); choice is "probing", "direct", "transposed" or
    "differs" (direct because the two ways gave different bits)."""
    cdef LayoutPlan plan
    out = {}
    for (n, k, m, t), p in LAYOUT_PLANS.items():
        plan = <LayoutPlan>p
        out[(n, k, m, cnp.PyArray_DescrFromType(t).name)] = (
            LAYOUT_NAMES[plan.choice], plan.best[0], plan.best[1])
    return out


def _matmul_transposed(A, W, bias=None):
    """A @ W^T the transposed way (for tests): A (n, k) and W (m, k) float32/float64 matrices of
    one dtype; `bias`, m values of that dtype, added to each row on the way."""
    A = np.ascontiguousarray(A)
    W = np.ascontiguousarray(W)
    if (A.ndim != 2 or W.ndim != 2 or A.shape[1] != W.shape[1] or A.dtype != W.dtype
            or A.dtype.name not in ("float32", "float64")):
        raise ValueError(f"expected (n, k) and (m, k) float32/float64 matrices of one dtype, got "
                         f"{A.shape} {A.dtype} and {W.shape} {W.dtype}")
    if bias is not None:
        bias = np.ascontiguousarray(bias)
        if not bias_row(bias, A, W):
            raise ValueError(f"expected a bias of {W.shape[0]} {W.dtype} values, got "
                             f"{bias.shape} {bias.dtype}")
    return product_transposed(A, W, bias)


def _set_matmul_layout(Py_ssize_t n, Py_ssize_t k, Py_ssize_t m, dtype, choice):
    """Settle the plan of A (n, k) @ W^T (W (m, k)) in `dtype` to "direct" or "transposed", or
    (None) forget it, so that the shape is measured again (for tests: which way a shape takes is
    otherwise timed)."""
    key = (n, k, m, np.dtype(dtype).num)
    if choice is None:
        LAYOUT_PLANS.pop(key, None)
        return
    if choice not in ("direct", "transposed"):
        raise ValueError(f"choice must be 'direct', 'transposed' or None, got {choice!r}")
    cdef LayoutPlan plan = LayoutPlan.__new__(LayoutPlan)
    plan.choice = LAYOUT_DIRECT if choice == "direct" else LAYOUT_TRANSPOSED
    plan.best[0] = plan.best[1] = INT64_MAX
    LAYOUT_PLANS[key] = plan
