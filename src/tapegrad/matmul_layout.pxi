# ---------------------------------------------------------------------------------------------
# A @ W^T for C-contiguous matrices A (n, k) and W (m, k): linear's product, and `x @ w.t()`.
#
# The BLAS can compute it two ways: directly into a C-contiguous (n, m) result, or as W @ A^T,
# an (m, n) result transposed afterwards.  Both make the same multiply-adds in the same order, but
# the BLAS packs its operands differently, and which way is faster depends on the shapes, the
# dtype and the BLAS build.  On OpenBLAS 0.3.31 (SkylakeX kernels), 64x784 @ (256x784)^T in
# float32 (the MLP benchmark's first layer) takes 290 us directly and 210 us the other way, while
# 1000x64 @ (64x64)^T is faster directly.  No fixed rule holds across dtypes, so each shape is
# measured: its first calls alternate the two ways, timed, and later calls take the faster.
#
# The choice must never change a value.  Before timing, each shape is tried once on seeded random
# operands (not the caller's: all-zero or integer-valued weights would hide a different summation
# order); unless both ways give the same bits there, the shape stays direct.  A BLAS's order of
# operations depends on the shapes and layouts, not on the values, so results are the same bits
# whichever way a shape ends up, and whatever the timings were.
# ---------------------------------------------------------------------------------------------

from cpython.time cimport perf_counter_ns
from libc.stdint cimport int64_t, INT64_MAX
from libc.string cimport memcmp

cdef enum:
    LAYOUT_MIN_WORK = 1 << 18   # n*k*m below this: direct (the timing would not pay for itself)
    LAYOUT_TRIALS = 5           # timed calls of each way before choosing (the minimum counts)

cdef enum:
    LAYOUT_PROBING, LAYOUT_DIRECT, LAYOUT_TRANSPOSED

cdef tuple LAYOUT_NAMES = ("probing", "direct", "transposed")


@cython.final
cdef class LayoutPlan:
    """How A @ W^T is computed for one (n, k, m, dtype)."""
    cdef int choice
    cdef int trials             # timed calls so far, both ways
    cdef int64_t best[2]        # the fastest timed call of each way (direct, transposed), in ns


cdef dict LAYOUT_PLANS = {}


cdef object product_transposed(cnp.ndarray A, cnp.ndarray W):
    """A @ W^T computed as the BLAS's W @ A^T, then transposed into a new C-contiguous array."""
    cdef cnp.npy_intp n = cnp.PyArray_DIM(A, 0), m = cnp.PyArray_DIM(W, 0)
    cdef cnp.ndarray t = <cnp.ndarray>nd(np.matmul(W, A.T))                 # (m, n), C order
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = m
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, dims, cnp.PyArray_TYPE(A), 0)
    if cnp.PyArray_ITEMSIZE(A) == 4:
        tg_transpose_4(m, n, <const uint32_t*>cnp.PyArray_DATA(t), <uint32_t*>cnp.PyArray_DATA(out))
    else:
        tg_transpose_8(m, n, <const uint64_t*>cnp.PyArray_DATA(t), <uint64_t*>cnp.PyArray_DATA(out))
    return out


cdef LayoutPlan new_layout_plan(cnp.ndarray A, cnp.ndarray W):
    """A shape's plan: probing when both ways give the same bits on seeded random operands,
    direct otherwise."""
    cdef LayoutPlan plan = LayoutPlan.__new__(LayoutPlan)
    rng = np.random.default_rng(0x7A9E)
    a = rng.standard_normal((A.shape[0], A.shape[1])).astype(A.dtype)
    w = rng.standard_normal((W.shape[0], W.shape[1])).astype(W.dtype)
    cdef cnp.ndarray direct = <cnp.ndarray>nd(np.matmul(a, w.T))
    cdef cnp.ndarray other = <cnp.ndarray>product_transposed(a, w)
    same = memcmp(cnp.PyArray_DATA(direct), cnp.PyArray_DATA(other),
                  cnp.PyArray_NBYTES(direct)) == 0
    plan.choice = LAYOUT_PROBING if same else LAYOUT_DIRECT
    plan.trials = 0
    plan.best[0] = plan.best[1] = INT64_MAX
    return plan



cdef object product_a_bt(object A, object B):
    """np.matmul(A, B) as an ndarray; the caller owns the errstate.  When A is a C-contiguous
    float32/float64 matrix and B the transpose of one (linear's W^T, `x @ w.t()`), with enough
    work to matter, the shape's faster layout; otherwise numpy's call as it is."""
    if not (cnp.PyArray_Check(A) and cnp.PyArray_Check(B)):
        return nd(np.matmul(A, B))
    cdef cnp.ndarray a = <cnp.ndarray>A, b = <cnp.ndarray>B
    cdef int t = cnp.PyArray_TYPE(a)
    if (cnp.PyArray_NDIM(a) != 2 or cnp.PyArray_NDIM(b) != 2
            or (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or cnp.PyArray_TYPE(b) != t
            or not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_IS_F_CONTIGUOUS(b)
            or cnp.PyArray_DIM(a, 1) != cnp.PyArray_DIM(b, 0)):
        return nd(np.matmul(A, B))
    cdef cnp.npy_intp n = cnp.PyArray_DIM(a, 0), k = cnp.PyArray_DIM(a, 1)
    cdef cnp.npy_intp m = cnp.PyArray_DIM(b, 1)
    if n * k * m < LAYOUT_MIN_WORK or n == 1 or m == 1:
        return nd(np.matmul(A, B))
    W = b.T                                                     # (m, k), C-contiguous
    key = (n, k, m, t)
    cdef LayoutPlan plan = <LayoutPlan>LAYOUT_PLANS.get(key)
    if plan is None:
        plan = new_layout_plan(a, <cnp.ndarray>W)
        LAYOUT_PLANS[key] = plan
    if plan.choice == LAYOUT_DIRECT:
        return nd(np.matmul(A, B))
    if plan.choice == LAYOUT_TRANSPOSED:
        return product_transposed(a, <cnp.ndarray>W)
    cdef int way = plan.trials & 1                              # 0: direct, 1: transposed
    cdef int64_t start = perf_counter_ns()
    out = product_transposed(a, <cnp.ndarray>W) if way else nd(np.matmul(A, B))
    cdef int64_t took = perf_counter_ns() - start
    if took < plan.best[way]:
        plan.best[way] = took
    plan.trials += 1
    if plan.trials == 2 * LAYOUT_TRIALS:
        plan.choice = LAYOUT_TRANSPOSED if plan.best[1] < plan.best[0] else LAYOUT_DIRECT
    return out


def _matmul_layouts():
    """{(n, k, m, dtype name): (choice, fastest direct ns, fastest transposed ns)} of the shapes
    measured so far (for tests and benchmarks)."""
    cdef LayoutPlan plan
    out = {}
    for (n, k, m, t), p in LAYOUT_PLANS.items():
        plan = <LayoutPlan>p
        out[(n, k, m, cnp.PyArray_DescrFromType(t).name)] = (
            LAYOUT_NAMES[plan.choice], plan.best[0], plan.best[1])
    return out


def _matmul_transposed(A, W):
    """A @ W^T the transposed way (for tests): A (n, k) and W (m, k) float32/float64 matrices of
    one dtype."""
    A = np.ascontiguousarray(A)
    W = np.ascontiguousarray(W)
    if (A.ndim != 2 or W.ndim != 2 or A.shape[1] != W.shape[1] or A.dtype != W.dtype
            or A.dtype.name not in ("float32", "float64")):
        raise ValueError(f"expected (n, k) and (m, k) float32/float64 matrices of one dtype, got "
                         f"{A.shape} {A.dtype} and {W.shape} {W.dtype}")
    return product_transposed(A, W)
