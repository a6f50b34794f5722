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
        return nd(np.matmul(A, B))
    if plan.choice == LAYOUT_DIRECT or plan.choice == LAYOUT_DIFFERS:
        return nd(np.matmul(A, B))
    if plan.choice == LAYOUT_TRANSPOSED:
        return product_transposed(a, <cnp.ndarray>b.T)
    return probe_layouts(plan, a, B, <cnp.ndarray>b.T)


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
