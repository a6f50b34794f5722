# ---------------------------------------------------------------------------------------------
# The C kernels (kernels.h / kernels.c) and the two drivers that pick them: fast_binary and
# fast_unary return a new ndarray computed in C, or None when the operands are not float32/float64
# arrays (or Python scalars) in a layout the kernels take; callers then fall back to numpy.
# ---------------------------------------------------------------------------------------------

from libc.stddef cimport ptrdiff_t
from libc.stdint cimport uint32_t, uint64_t
from cpython.float cimport PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact


# The two floating dtypes the C paths take: a Cython loop written once over real_t compiles to a
# float and a double version, where the caller picks one by the array's type number.


cdef extern from "threadpool.h" nogil:
    int tg_get_num_threads() noexcept
    void tg_set_num_threads(int n) noexcept


def _kernel_threads(n=None):
    """The number of threads the C kernels split big arrays over (threadpool.h), after setting it
    to n when n is given.  tapegrad.set_num_threads / get_num_threads call this."""
    if n is not None:
        tg_set_num_threads(n)
    return tg_get_num_threads()


def _default_kernel_threads():
    """OMP_NUM_THREADS when it holds a positive integer (as PyTorch honours it), else the cores
    this process may run on."""
    import os
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        n = 0
    if n > 0:
        return n
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


tg_set_num_threads(_default_kernel_threads())


cdef enum:
    NOGIL_MIN_SIZE = 32768      # release the GIL for kernels at least this large
    # A broadcast over rows runs the kernel once per row: for rows this narrow, numpy's own
    # broadcast loop is faster once there are many of them (measured: (1000, 2) * (1000, 1)
    # 10 us in C rows vs 8 us in numpy; (64, 2) 1.7 vs 2.6 us; 8 columns and up: C faster).
    ROWS_MIN_COLS = 8
    ROWS_NARROW_MAX_SIZE = 1024

# kernel_array, same_shape and kernel_scalar, the operand tests of every elementwise op, are
# defined in _core.pxd (inlined in every module).

cdef bint rows_layout(int nf, const cnp.npy_intp* df, int npart, const cnp.npy_intp* dp,
                      ptrdiff_t* stride, ptrdiff_t* step) noexcept:
    """True when an operand of dims dp broadcast against one of dims df gives df as a row
    repeated over df's rows of at least 2 elements (dp = (1, ..., 1, cols), no more dims than df)
    or as one value per row (df with a last dim of 1); then *stride and *step are the part's
    element stride within a row and its step, in elements, from row to row."""
    cdef int i
    if nf < 2 or npart == 0 or npart > nf:
        return False
    cdef cnp.npy_intp cols = df[nf - 1]
    if cols < 2:
        return False
    if dp[npart - 1] == cols:
        for i in range(npart - 1):
            if dp[i] != 1:
                return False
        stride[0] = 1
        step[0] = 0
        return True
    if dp[npart - 1] == 1 and npart == nf:
        for i in range(nf - 1):
            if dp[i] != df[i]:
                return False
        stride[0] = 0
        step[0] = 1
        return True
    return False


cdef inline bint repeats_over_rows(cnp.ndarray full, cnp.ndarray part, ptrdiff_t* stride,
                                   ptrdiff_t* step) noexcept:
    """rows_layout for two arrays, *step in bytes."""
    if not rows_layout(cnp.PyArray_NDIM(full), cnp.PyArray_DIMS(full), cnp.PyArray_NDIM(part),
                       cnp.PyArray_DIMS(part), stride, step):
        return False
    step[0] *= cnp.PyArray_ITEMSIZE(part)
    return True


cdef inline bint rows_worth_it(cnp.ndarray full) noexcept:
    return (cnp.PyArray_DIMS(full)[cnp.PyArray_NDIM(full) - 1] >= ROWS_MIN_COLS
            or cnp.PyArray_SIZE(full) <= ROWS_NARROW_MAX_SIZE)


cdef object kernel_operands(object A, object B, KernelOperands* ko):
    """Fill *ko for A (op) B and return the array whose shape the result takes, or None when the
    kernels do not take the pair: same-shape float32/float64 arrays of one dtype, or such an
    array with a size-1 array (of no more dims), a row repeated over its rows, one value per
    row (repeats_over_rows) or a Python number."""
    cdef int ta = -1, tb = -1
    cdef bint a_arr = kernel_array(A, &ta), b_arr = kernel_array(B, &tb)
    cdef cnp.ndarray a, b
    ko.sa = 1
    ko.sb = 1
    ko.cols = 0
    ko.da = 0
    ko.db = 0
    if a_arr and b_arr:
        if ta != tb:
            return None
        a = <cnp.ndarray>A
        b = <cnp.ndarray>B
        ko.t = ta
        ko.pa = <const char*>cnp.PyArray_DATA(a)
        ko.pb = <const char*>cnp.PyArray_DATA(b)
        if same_shape(a, b):
            return a
        if cnp.PyArray_SIZE(b) == 1 and cnp.PyArray_NDIM(b) <= cnp.PyArray_NDIM(a):
            ko.sb = 0
            return a
        if cnp.PyArray_SIZE(a) == 1 and cnp.PyArray_NDIM(a) <= cnp.PyArray_NDIM(b):
            ko.sa = 0
            return b
        if repeats_over_rows(a, b, &ko.sb, &ko.db) and rows_worth_it(a):
            ko.cols = cnp.PyArray_DIMS(a)[cnp.PyArray_NDIM(a) - 1]
            ko.da = ko.cols * cnp.PyArray_ITEMSIZE(a)
            return a
        if repeats_over_rows(b, a, &ko.sa, &ko.da) and rows_worth_it(b):
            ko.cols = cnp.PyArray_DIMS(b)[cnp.PyArray_NDIM(b) - 1]
            ko.db = ko.cols * cnp.PyArray_ITEMSIZE(b)
            return b
        return None
    if a_arr and kernel_scalar(B):
        ko.t = ta
        ko.sd = B
        ko.sf = <float>ko.sd
        ko.pa = <const char*>cnp.PyArray_DATA(<cnp.ndarray>A)
        ko.pb = <const char*>&ko.sd if ta == cnp.NPY_FLOAT64 else <const char*>&ko.sf
        ko.sb = 0
        return A
    if b_arr and kernel_scalar(A):
        ko.t = tb
        ko.sd = A
        ko.sf = <float>ko.sd
        ko.pa = <const char*>&ko.sd if tb == cnp.NPY_FLOAT64 else <const char*>&ko.sf
        ko.pb = <const char*>cnp.PyArray_DATA(<cnp.ndarray>B)
        ko.sa = 0
        return B
    return None


cdef void run_binary(int kop, ptrdiff_t n, KernelOperands* ko, void* out) noexcept:
    """The binary kernel on operands from kernel_operands, n elements into out (which may be
    operand a's storage: element i is read before it is written)."""
    if n >= NOGIL_MIN_SIZE:
        with nogil:
            binary_rows(kop, n, ko, <char*>out)
    else:
        binary_rows(kop, n, ko, <char*>out)


cdef void binary_rows(int kop, ptrdiff_t n, const KernelOperands* ko, char* out) noexcept nogil:
    # One kernel call for all n elements, or one per row of ko.cols (n is a multiple of it).
    cdef ptrdiff_t cols = ko.cols if ko.cols > 0 else n
    cdef bint f64 = ko.t == cnp.NPY_FLOAT64
    cdef ptrdiff_t row_bytes = cols * (8 if f64 else 4), done = 0
    cdef const char* pa = ko.pa
    cdef const char* pb = ko.pb
    if n <= 0:
        return
    while True:
        if f64:
            tg_binary_f64(kop, cols, <const double*>pa, ko.sa, <const double*>pb, ko.sb,
                          <double*>out)
        else:
            tg_binary_f32(kop, cols, <const float*>pa, ko.sa, <const float*>pb, ko.sb,
                          <float*>out)
        done += cols
        if done >= n:
            return
        pa += ko.da
        pb += ko.db
        out += row_bytes


cdef object fast_binary(int kop, object A, object B):
    """A (op) B in C as a new array, or None (see kernel_operands)."""
    cdef KernelOperands ko
    shape_src = kernel_operands(A, B, &ko)
    if shape_src is None:
        return None
    cdef cnp.ndarray src = <cnp.ndarray>shape_src
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(src),
                                                              cnp.PyArray_DIMS(src), ko.t)
    run_binary(kop, cnp.PyArray_SIZE(src), &ko, cnp.PyArray_DATA(out))
    return out


cdef int add_into(object out, object C) except -1:
    """out += C in place, for a fresh `out` (no storage shared with C) that C broadcasts to: the C
    kernel when it takes the pair (a bias row: numpy's IEEE additions), else numpy's ufunc, which
    costs about 2 us a call, more than the additions of a small layer."""
    cdef KernelOperands ko
    if kernel_operands(out, C, &ko) is out:
        run_binary(TG_ADD, cnp.PyArray_SIZE(<cnp.ndarray>out), &ko,
                   cnp.PyArray_DATA(<cnp.ndarray>out))
    else:
        np.add(out, C, out=out)
    return 0


cdef object fast_unary(int kop, object A):
    """kop(A) in C for a contiguous float32/float64 array, or None."""
    cdef int t = -1
    if not kernel_array(A, &t):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef cnp.ndarray out = <cnp.ndarray>cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(a),
                                                              cnp.PyArray_DIMS(a), t)
    cdef ptrdiff_t n = cnp.PyArray_SIZE(a)
    if t == cnp.NPY_FLOAT64:
        if n >= NOGIL_MIN_SIZE:
            with nogil:
                tg_unary_f64(kop, n, <const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out))
        else:
            tg_unary_f64(kop, n, <const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out))
    else:
        if n >= NOGIL_MIN_SIZE:
            with nogil:
                tg_unary_f32(kop, n, <const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out))
        else:
            tg_unary_f32(kop, n, <const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out))
    return out


cdef inline object kernel_work_dtype(object dt):
    """The dtype a C kernel computes `dt` in: float64 stays, everything else goes via float32."""
    return dt if dt.num == cnp.NPY_FLOAT64 else np.dtype(np.float32)


cdef object unary_c(int kop, object A):
    """kop(A) in C whatever A's layout or floating dtype: for kernels numpy has no ufunc for (erf).
    Non-contiguous or float16 input is copied to a contiguous float32/float64 array first, and the
    result cast back to A's dtype (float16 computes in float32, as PyTorch's CPU kernels do)."""
    r = fast_unary(kop, A)
    if r is not None:
        return r
    dt = A.dtype
    wt = kernel_work_dtype(dt)
    # the result keeps A's layout (numpy's order "K": PyTorch's elementwise output for a
    # permuted or sliced input, so .view() works or raises as there): the kernel runs on the
    # copy's dims in memory order, then they go back
    K = np.array(torch_copy_source(A), dtype=wt, order="K")
    order = np.argsort([-abs(s) for s in K.strides], kind="stable")
    r = fast_unary(kop, np.asarray(K.transpose(order), order="C"))
    r = r.transpose(np.argsort(order))
    return r if wt == dt else r.astype(dt, order="K")


cdef object binary_c(int kop, object a, object b):
    """A same-shape fused binary kernel in C whatever the layout or floating dtype (see unary_c)."""
    r = fast_binary(kop, a, b)
    if r is not None:
        return r
    dt = a.dtype
    wt = kernel_work_dtype(dt)
    r = fast_binary(kop, np.array(a, dtype=wt, order="C"), np.array(b, dtype=wt, order="C"))
    return r if wt == dt else r.astype(dt)


GELU_BETA = 0.79788456080286535588     # sqrt(2 / pi)
GELU_KAPPA = 0.044715


cdef object gelu_tanh_sigmoid(object x):
    """sigmoid(2u) for the tanh gelu, u = sqrt(2/pi) (x + 0.044715 x^3): 1 + tanh(u) = 2 sigmoid(2u)
    without tanh's cancellation for negative x (0-d arrays give scalars: no out=)."""
    return 1 / (np.exp((x + x * x * x * GELU_KAPPA) * (-2 * GELU_BETA)) + 1)


cdef object gelu_tanh_grad_numpy(object g, object x):
    """The tanh gelu's gradient with numpy ufuncs: d/dx [x s] = s + 2 x s (1 - s) u'."""
    s = gelu_tanh_sigmoid(x)
    return nd(g * (s + x * 2 * s * (1 - s) * ((x * x * (3 * GELU_KAPPA) + 1) * GELU_BETA)))


cdef object silu_grad_numpy(object g, object x):
    s = 1 / (np.exp(-x) + 1)                            # (0-d arrays give scalars: no out=)
    return nd(g * s * (x * (1 - s) + 1))


cdef object fast_param(int kop, object A, object B, double p0, double p1):
    """kop(A[, B]; p0, p1) in C (the tg_param ops), or None unless A (and B, for the gradient ops)
    are float32/float64 arrays of one dtype and shape, contiguous for the forward ops.  A
    gradient op's strided operands are made contiguous (contiguous_gradient)."""
    cdef int t = -1, tb = -1
    if not kernel_array(A, &t):
        return contiguous_gradient(kop, A, B, p0, p1) if B is not None else None
    cdef cnp.ndarray a = <cnp.ndarray>A, b
    cdef const char* pb = NULL
    if B is not None:
        if not kernel_array(B, &tb) or tb != t or not same_shape(a, <cnp.ndarray>B):
            return contiguous_gradient(kop, A, B, p0, p1)
        b = <cnp.ndarray>B
        pb = <const char*>cnp.PyArray_DATA(b)
    cdef cnp.ndarray out
    if B is not None and cnp.PyArray_ISWRITEABLE(a) and take_adjoint(A):
        out = a                                         # a gradient op's g, offered by the sweep
    else:
        out = <cnp.ndarray>cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), t)
    cdef ptrdiff_t n = cnp.PyArray_SIZE(a)
    cdef const char* pa = <const char*>cnp.PyArray_DATA(a)
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    cdef float f0 = <float>p0, f1 = <float>p1
    if t == cnp.NPY_FLOAT64:
        if n >= NOGIL_MIN_SIZE:
            with nogil:
                tg_param_f64(kop, n, <const double*>pa, <const double*>pb, p0, p1, <double*>po)
        else:
            tg_param_f64(kop, n, <const double*>pa, <const double*>pb, p0, p1, <double*>po)
    else:
        if n >= NOGIL_MIN_SIZE:
            with nogil:
                tg_param_f32(kop, n, <const float*>pa, <const float*>pb, f0, f1, <float*>po)
        else:
            tg_param_f32(kop, n, <const float*>pa, <const float*>pb, f0, f1, <float*>po)
    return out


cdef object contiguous_gradient(int kop, object A, object B, double p0, double p1):
    """fast_param of a gradient op on strided float32/float64 operands of one dtype and shape:
    on contiguous copies, so that an eager VJP equals the replay's (which runs the same kernel
    on its contiguous buffers) bit for bit; numpy's exp is not the kernel's (a permuted adjoint
    gave softplus' gradient an ulp off under tapegrad.compile; fuzz 62647162).  None where the
    kernel does not apply (other dtypes or shapes, float16)."""
    if not (cnp.PyArray_Check(A) and cnp.PyArray_Check(B)):
        return None
    if A.dtype != B.dtype or A.shape != B.shape or A.dtype.kind != "f" or A.dtype.itemsize < 4:
        return None
    if A.flags.c_contiguous and B.flags.c_contiguous:
        return None
    return fast_param(kop, np.ascontiguousarray(A), np.ascontiguousarray(B), p0, p1)


cdef inline bint half_and_number(object a, object b):
    """Whether a float16 array meets a Python number.  PyTorch multiplies and divides such
    operands in float32 (its opmath type) and rounds once, where numpy would first round the
    number to float16 (x / 70000.0 would divide by inf, x * 1e-8 multiply by 0); its add and
    sub do round the number to float16 first (x + 70000.0 is inf even for x = -60000)."""
    if cnp.PyArray_Check(a) and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_FLOAT16:
        return isinstance(b, (int, float)) and not isinstance(b, bool)
    if cnp.PyArray_Check(b) and cnp.PyArray_TYPE(<cnp.ndarray>b) == cnp.NPY_FLOAT16:
        return isinstance(a, (int, float)) and not isinstance(a, bool)
    return False


cdef inline bint is_half_array(object x) noexcept:
    return cnp.PyArray_Check(x) and cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT16


cdef inline object as_float32(object x):
    return x.astype(np.float32) if cnp.PyArray_Check(x) else x


cdef object ew(int kop, object a, object b):
    """Elementwise binary op for the sweep's VJPs: C kernel when possible, numpy otherwise."""
    r = fast_binary(kop, a, b)
    if r is not None:
        return r
    if (kop == TG_MUL or kop == TG_DIV) and half_and_number(a, b):
        with IeeeResults():
            return nd(ew(kop, as_float32(a), as_float32(b)).astype(np.float16))
    if kop == TG_TANH_GRAD and is_half_array(a) and is_half_array(b):
        # PyTorch's tanh backward computes float16 in float32 from the float16 output and
        # rounds once (1 - y*y in float16 steps lost digits near |y| = 1: the gradient at 1.5
        # was 5 ulps off); its sigmoid backward does round each step (measured), as numpy's
        with IeeeResults():
            return nd(ew(kop, a.astype(np.float32), b.astype(np.float32)).astype(np.float16))
    if kop == TG_GELU_GRAD:
        return binary_c(kop, a, b)
    if kop == TG_GELU_TANH_GRAD:
        return gelu_tanh_grad_numpy(a, b)
    if kop == TG_SILU_GRAD:
        return silu_grad_numpy(a, b)
    if kop == TG_ADD:
        return nd(a + b)
    if kop == TG_SUB:
        return nd(a - b)
    if kop == TG_MUL:
        return nd(a * b)
    if kop == TG_DIV:
        return nd(a / b)
    if kop == TG_TANH_GRAD:
        return tanh_grad_numpy(a, b)
    if kop == TG_RELU_GRAD:                             # b <= 0 ? 0 : a, without 0 * inf = nan
        out = np.zeros(a.shape, a.dtype)
        np.positive(a, out=out, where=np.logical_not(b <= 0))
        return out
    if kop == TG_SIGMOID_GRAD:
        return nd(a * (1 - b) * b)                      # PyTorch's sigmoid_backward order
    raise AssertionError(f"ew: unknown kernel op {kop}")


cdef object tanh_grad_numpy(object a, object b):
    """a * (1 - b*b) for a pair the C kernel does not take as it is (broadcast, strided, mixed
    float dtypes): 1 - b*b must round once, as PyTorch's fused tanh_backward does, which numpy
    cannot express, so a float32/float64 pair runs the C kernel on contiguous copies."""
    dt = np.result_type(a, b)
    if dt == np.float64 or dt == np.float32:
        A, B = np.broadcast_arrays(a, b)
        r = fast_binary(TG_TANH_GRAD, np.ascontiguousarray(A, dt), np.ascontiguousarray(B, dt))
        if r is not None:
            return r
    return nd(a * (1 - b * b))


# -- writing a VJP's result into its upstream gradient ------------------------------------------
# The sweep offers the adjoint it is about to hand to a VJP when nothing else can see it (its one
# reference is the sweep's, it owns its memory, no view of it exists): the VJP's kernel may then
# write its result into it instead of a fresh array, so that a backward through an elementwise
# chain runs in one buffer (no allocation and no page faults of a new array per node).  The offer
# names that one array and is taken at most once (a VJP that reads g again after a kernel wrote
# into it would read the result), and withdrawn when the VJP returns.
# Threads: REUSABLE_ADJOINT is one module global, read and written only with the GIL held, but a
# VJP may release the GIL (a big numpy call, a nogil kernel) while its sweep's offer stands, and
# another thread's sweep may then offer, take or withdraw.  That is safe: the offered array is
# identified by address and is, by sole_reference, reachable from its own sweep's VJP alone, which
# keeps it alive (so the address cannot be reused) until it withdraws.  Another thread can only
# overwrite or clear the offer, never pass that array to ew_g: the worst case is a missed reuse
# (a fresh result array), never a write into an array someone else can see.

cdef PyObject* REUSABLE_ADJOINT = NULL


cdef void offer_adjoint(object g) noexcept:
    """The sweep: `g` may be overwritten by the VJP it is passed to (see ew_g)."""
    global REUSABLE_ADJOINT
    REUSABLE_ADJOINT = <PyObject*>g


cdef void withdraw_adjoint() noexcept:
    global REUSABLE_ADJOINT
    REUSABLE_ADJOINT = NULL


cdef inline bint take_adjoint(object g) noexcept:
    """Whether g is the offered adjoint (then the offer is used up)."""
    global REUSABLE_ADJOINT
    if REUSABLE_ADJOINT == NULL or <PyObject*>g != REUSABLE_ADJOINT:
        return False
    REUSABLE_ADJOINT = NULL
    return True


# -- accumulating a product straight into an adjoint the sweep owns -----------------------------
# A leaf multiplied at every step of a chain (`* w`) receives one product g * x per use; summing
# each into its adjoint would make a temporary per use.  Before a multiplication's VJP the sweep
# offers the adjoints of its inputs that it owns (arrays it made by summing, or fresh results
# nobody else holds: owned[k], sweep.pxi) and the VJP adds g * x into the offered array in one
# pass (TG_MUL_ACC: the product, then the sum, each rounded as the separate operations would be)
# and returns ACCUMULATED for that input.  The offer names the sweep's Record (its own stack copy,
# so no other thread's or other caller's VJP matches it) and is withdrawn when the VJP returns;
# another thread can at worst overwrite or clear it (a missed saving, as REUSABLE_ADJOINT's).

cdef extern from "kernels.h":
    enum: TG_MUL_ACC

cdef Record* ACCUMULATOR_OWNER = NULL
cdef PyObject* ACCUMULATORS[2]
ACCUMULATORS[0] = NULL
ACCUMULATORS[1] = NULL
cdef object ACCUMULATED = object()


cdef void offer_accumulator(Record* owner, int q, PyObject* adjoint) noexcept:
    """The sweep: the adjoint of input q of `owner`, which it owns, may receive q's gradient."""
    global ACCUMULATOR_OWNER
    ACCUMULATOR_OWNER = owner
    ACCUMULATORS[q] = adjoint


cdef void withdraw_accumulators() noexcept:
    global ACCUMULATOR_OWNER
    ACCUMULATOR_OWNER = NULL
    ACCUMULATORS[0] = NULL
    ACCUMULATORS[1] = NULL


cdef bint accumulate_product(Record* r, int q, object g, object x) except -1:
    """Add g * x into the adjoint the sweep offered for input q of r, when there is one and the
    kernels take the operands with the adjoint's shape and dtype; True when done."""
    if ACCUMULATOR_OWNER != r or ACCUMULATORS[q] == NULL:
        return False
    acc = <object>ACCUMULATORS[q]
    ACCUMULATORS[q] = NULL
    cdef KernelOperands ko
    if (kernel_operands(g, x, &ko) is not g or not cnp.PyArray_CheckExact(acc)
            or not same_shape(<cnp.ndarray>acc, <cnp.ndarray>g)
            or cnp.PyArray_TYPE(<cnp.ndarray>acc) != ko.t
            or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>acc)
            or not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>acc)):
        return False
    run_binary(TG_MUL_ACC, cnp.PyArray_SIZE(<cnp.ndarray>g), &ko,
               cnp.PyArray_DATA(<cnp.ndarray>acc))
    return True


cdef object ew_g(int kop, object g, object b):
    """ew(kop, g, b) for a VJP's upstream gradient g, written into g itself when the sweep offered
    it (offer_adjoint) and the result has g's shape and dtype.  The fused gradient kernels that
    ew has no numpy formula for (TG_SIN_GRAD ...) return None when the C kernels do not take the
    operands: the caller computes it another way then.  A VJP calls this as its last use of g."""
    cdef KernelOperands ko
    if REUSABLE_ADJOINT != NULL and <PyObject*>g == REUSABLE_ADJOINT:
        if (kernel_operands(g, b, &ko) is g and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>g)
                and take_adjoint(g)):
            run_binary(kop, cnp.PyArray_SIZE(<cnp.ndarray>g), &ko,
                       cnp.PyArray_DATA(<cnp.ndarray>g))
            return g
    if kop >= TG_SIN_GRAD:
        return fast_binary(kop, g, b)
    return ew(kop, g, b)


def fused_multiply_add(object a, object b, object c, object out):
    """out = a * b + c rounded once, for C-contiguous float32/float64 arrays of one dtype and
    shape (b may also be a Python number).  Returns out, or None when the layout does not fit
    (the caller then computes it another way)."""
    cdef int ta = -1, tc = -1, to = -1, tb = -1
    if not (kernel_array(a, &ta) and kernel_array(c, &tc) and kernel_array(out, &to)):
        return None
    if ta != tc or ta != to or not same_shape(<cnp.ndarray>a, <cnp.ndarray>c) \
            or not same_shape(<cnp.ndarray>a, <cnp.ndarray>out):
        return None
    if not (<cnp.ndarray>out).flags.writeable:
        return None
    cdef ptrdiff_t n = cnp.PyArray_SIZE(<cnp.ndarray>a), sb = 1
    cdef double bd
    cdef float bf
    cdef const void* pb
    if kernel_scalar(b):
        bd = b
        bf = <float>bd
        pb = <const void*>&bd if ta == cnp.NPY_FLOAT64 else <const void*>&bf
        sb = 0
    elif kernel_array(b, &tb) and tb == ta and same_shape(<cnp.ndarray>a, <cnp.ndarray>b):
        pb = cnp.PyArray_DATA(<cnp.ndarray>b)
    else:
        return None
    if ta == cnp.NPY_FLOAT64:
        tg_fma_f64(n, <const double*>cnp.PyArray_DATA(<cnp.ndarray>a), <const double*>pb, sb,
                   <const double*>cnp.PyArray_DATA(<cnp.ndarray>c),
                   <double*>cnp.PyArray_DATA(<cnp.ndarray>out))
    else:
        tg_fma_f32(n, <const float*>cnp.PyArray_DATA(<cnp.ndarray>a), <const float*>pb, sb,
                   <const float*>cnp.PyArray_DATA(<cnp.ndarray>c),
                   <float*>cnp.PyArray_DATA(<cnp.ndarray>out))
    return out


cdef bint _row_operands(object src, object rows, object w, object acc):
    """Whether src (B, H, L), rows (R,) int64 in 0..H-1, w (R, L) and acc (B, R, L) are
    C-contiguous float32 arrays (rows int64) of those shapes."""
    cdef int ts = -1, tw = -1, ta = -1
    if not (kernel_array(src, &ts) and kernel_array(w, &tw) and kernel_array(acc, &ta)):
        return False
    if ts != cnp.NPY_FLOAT32 or tw != ts or ta != ts or not cnp.PyArray_Check(rows):
        return False
    if (cnp.PyArray_TYPE(<cnp.ndarray>rows) != cnp.NPY_INT64
            or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>rows)
            or cnp.PyArray_NDIM(<cnp.ndarray>rows) != 1
            or cnp.PyArray_NDIM(<cnp.ndarray>src) != 3 or cnp.PyArray_NDIM(<cnp.ndarray>w) != 2
            or cnp.PyArray_NDIM(<cnp.ndarray>acc) != 3):
        return False
    cdef cnp.npy_intp* ds = cnp.PyArray_DIMS(<cnp.ndarray>src)
    cdef cnp.npy_intp* dw = cnp.PyArray_DIMS(<cnp.ndarray>w)
    cdef cnp.npy_intp* da = cnp.PyArray_DIMS(<cnp.ndarray>acc)
    cdef cnp.npy_intp r = cnp.PyArray_DIMS(<cnp.ndarray>rows)[0]
    if not (da[0] == ds[0] and da[1] == r and dw[0] == r and da[2] == ds[2] and dw[1] == ds[2]):
        return False
    cdef const long long* ix = <const long long*>cnp.PyArray_DATA(<cnp.ndarray>rows)
    cdef cnp.npy_intp k
    for k in range(r):
        if ix[k] < 0 or ix[k] >= ds[1]:
            return False
    return True


def gathered_rows_fma(object src, object rows, object w, object acc, bint first):
    """acc[b, r] = fma(src[b, rows[r]], w[r], acc[b, r]) (rounded once), or with `first`
    acc[b, r] = src[b, rows[r]] * w[r]: a weighted tap of interpolate's channels-last bilinear
    sum read straight from the rows it gathers (no gathered copy of the output's size per
    tap).  float32 arrays, see _row_operands; returns acc, or None when they do not fit."""
    if not (_row_operands(src, rows, w, acc) and (<cnp.ndarray>acc).flags.writeable):
        return None
    cdef cnp.npy_intp* ds = cnp.PyArray_DIMS(<cnp.ndarray>src)
    cdef ptrdiff_t nb = ds[0], h = ds[1], length = ds[2], b, r
    cdef ptrdiff_t nr = cnp.PyArray_DIMS(<cnp.ndarray>rows)[0]
    cdef const float* ps = <const float*>cnp.PyArray_DATA(<cnp.ndarray>src)
    cdef const float* pw = <const float*>cnp.PyArray_DATA(<cnp.ndarray>w)
    cdef float* pa = <float*>cnp.PyArray_DATA(<cnp.ndarray>acc)
    cdef const long long* ix = <const long long*>cnp.PyArray_DATA(<cnp.ndarray>rows)
    cdef const float* s
    cdef const float* wr
    cdef float* a
    with nogil:
        for b in range(nb):
            for r in range(nr):
                s = ps + (b * h + ix[r]) * length
                wr = pw + r * length
                a = pa + (b * nr + r) * length
                if first:
                    tg_binary_f32(TG_MUL, length, s, 1, wr, 1, a)
                else:
                    tg_fma_f32(length, s, wr, 1, a, a)
    return acc


def scattered_rows_product(object g, object rows, object w, object grad):
    """grad[b, rows[r]] += g[b, r] * w[r] (the product rounded, then the sum), for r in order:
    the gradient of gathered_rows_fma's tap by its src, accumulated into grad (B, H, L).
    float32 arrays as gathered_rows_fma's (g in acc's place); returns grad, or None."""
    if not (_row_operands(grad, rows, w, g) and (<cnp.ndarray>grad).flags.writeable):
        return None
    cdef cnp.npy_intp* ds = cnp.PyArray_DIMS(<cnp.ndarray>grad)
    cdef ptrdiff_t nb = ds[0], h = ds[1], length = ds[2], b, r
    cdef ptrdiff_t nr = cnp.PyArray_DIMS(<cnp.ndarray>rows)[0]
    cdef float* pd = <float*>cnp.PyArray_DATA(<cnp.ndarray>grad)
    cdef const float* pw = <const float*>cnp.PyArray_DATA(<cnp.ndarray>w)
    cdef const float* pg = <const float*>cnp.PyArray_DATA(<cnp.ndarray>g)
    cdef const long long* ix = <const long long*>cnp.PyArray_DATA(<cnp.ndarray>rows)
    with nogil:
        for b in range(nb):
            for r in range(nr):
                tg_madd_unfused_f32(length, pg + (b * nr + r) * length, pw + r * length,
                                    pd + (b * h + ix[r]) * length)
    return grad


def fused_multiply_add_broadcast(object a, object b, object c, object out):
    """out = a * b + c rounded once (fused_multiply_add's kernel), with b a C-contiguous array
    of a's dtype broadcasting against a in one block of dims: its shape, aligned to a's right
    end, is 1 outside a run of dims equal to a's (a weight per row, per column or per plane of
    interpolate's taps).  b is read in place, never expanded into a copy of a's size (a copy
    per tap made a resize memory-bound).  Returns out, or None when the layout does not fit."""
    cdef int ta = -1, tb = -1, tc = -1, to = -1
    if not (kernel_array(a, &ta) and kernel_array(b, &tb) and kernel_array(c, &tc)
            and kernel_array(out, &to)):
        return None
    if ta != tb or ta != tc or ta != to or not same_shape(<cnp.ndarray>a, <cnp.ndarray>c) \
            or not same_shape(<cnp.ndarray>a, <cnp.ndarray>out) \
            or not (<cnp.ndarray>out).flags.writeable:
        return None
    cdef cnp.npy_intp* sa = cnp.PyArray_DIMS(<cnp.ndarray>a)
    cdef cnp.npy_intp* sbs = cnp.PyArray_DIMS(<cnp.ndarray>b)
    cdef Py_ssize_t nda = cnp.PyArray_NDIM(<cnp.ndarray>a), ndb = cnp.PyArray_NDIM(<cnp.ndarray>b)
    cdef Py_ssize_t lead = nda - ndb, d, first = -1, last = -1
    if ndb > nda:
        return None
    for d in range(ndb):
        if sbs[d] != 1:
            if first < 0:
                first = d
            elif last != d - 1:
                return None             # (two separate runs of dims)
            last = d
            if sbs[d] != sa[lead + d]:
                return None
    cdef ptrdiff_t outer = 1, nb = 1, inner = 1, o, k, at
    for d in range(nda):
        if first < 0 or d < lead + first:
            outer *= <ptrdiff_t>sa[d]
        elif d <= lead + last:
            nb *= <ptrdiff_t>sa[d]
        else:
            inner *= <ptrdiff_t>sa[d]
    if first < 0:                       # b holds one value
        inner, outer = outer, 1
    cdef char* pa = <char*>cnp.PyArray_DATA(<cnp.ndarray>a)
    cdef char* pb = <char*>cnp.PyArray_DATA(<cnp.ndarray>b)
    cdef char* pc = <char*>cnp.PyArray_DATA(<cnp.ndarray>c)
    cdef char* po = <char*>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef ptrdiff_t size = cnp.PyArray_ITEMSIZE(<cnp.ndarray>a)
    with nogil:
        for o in range(outer):
            if inner == 1:              # b runs along the innermost dims: one call per row
                at = o * nb * size
                if ta == cnp.NPY_FLOAT64:
                    tg_fma_f64(nb, <const double*>(pa + at), <const double*>pb, 1,
                               <const double*>(pc + at), <double*>(po + at))
                else:
                    tg_fma_f32(nb, <const float*>(pa + at), <const float*>pb, 1,
                               <const float*>(pc + at), <float*>(po + at))
                continue
            for k in range(nb):         # b[k] is one value over `inner` elements
                at = (o * nb + k) * inner * size
                if ta == cnp.NPY_FLOAT64:
                    tg_fma_f64(inner, <const double*>(pa + at), <const double*>(pb + k * size),
                               0, <const double*>(pc + at), <double*>(po + at))
                else:
                    tg_fma_f32(inner, <const float*>(pa + at), <const float*>(pb + k * size),
                               0, <const float*>(pc + at), <float*>(po + at))
    return out
