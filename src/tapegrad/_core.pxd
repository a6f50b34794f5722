# The typed header of tapegrad's compiled core: the tape record, the tape and the tensor base type,
# then what the op-family extension modules cimport from the core (declarations only: the
# implementations live in the .pxi files _core.pyx includes).

cimport numpy as cnp
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XINCREF, Py_XDECREF
from libc.stddef cimport ptrdiff_t
from libc.stdint cimport int64_t, uint32_t, uint64_t
from cpython.float cimport PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact, PyLong_AsLongLongAndOverflow

cdef enum:
    MAX_IN = 3              # most inputs an op records (where(cond, a, b) has three)
    MAX_SAVED = 3           # most values an op saves for its backward

# Record flags (bits of Record.flags)
cdef enum:
    RF_FREE = 1             # slot released: no tensor and no later record refers to it
    RF_RETAIN_GRAD = 2      # output tensor asked for retain_grad(): deliver its adjoint to .grad
    RF_RELEASED = 4         # saved values freed by a backward without retain_graph
    RF_MOVED = 8            # a LEAF record whose tensor an in-place op gave a history since
    RF_PACK_PENDING = 16    # saved while saved-tensor hooks were active: to be packed (saved_hooks.pxi)
    RF_PACKED = 32          # some saved[j] is a PackedSaved: the sweep unpacks it first
    RF_SAVED_NO_HISTORY = 64    # << j: saved[j] is an input that had no history (no grad) when
                                # saved (bits 64 .. 64 << (MAX_SAVED - 1))
    RF_NO_GRAD_VIEW_INPUT = 512 # << j: input j (j < MAX_IN) is a view taken under no_grad of a
                                # tensor requiring grad: no edge, but it requires grad, so a
                                # create_graph gradient computed from it does too (as PyTorch's)
    RF_INTEGER_OUTPUT = 4096    # the output is an integer or bool tensor (an int self filled in
                                # place with a value that requires grad): no gradient may reach it

cdef struct Record:
    int op                          # opcode: index into the op table (OPS)
    int n_in                        # number of inputs in `inp`
    Py_ssize_t refcnt               # 1 while the output tensor lives + 1 per live later record using it
    int flags                       # RF_* bits
    int name                        # 0: the grad_fn is named OP_NAMES[op]; k > 0: GRAD_FN_NAMES[k],
                                    # a composite's PyTorch name (tensor_base.pxi, _name_grad_fn)
    Py_ssize_t inp[MAX_IN]          # record index of each input, or -1 when no gradient flows to it
    Py_ssize_t* more                # owned: all n_in inputs when n_in > MAX_IN (cat, stack), else NULL
    PyObject* saved[MAX_SAVED]      # owned: arrays (or scalars) the VJP needs, NULL when unused
    PyObject* aux                   # owned: attribute payload (shapes, axes, index key) or NULL
    double scalar                   # scalar attribute (exponent, constant factor, count)
    PyObject* out                   # borrowed: the output tensor, NULL once it has died
    PyObject* fn                    # borrowed: the cached grad_fn object, NULL when none lives
    PyObject* ver[MAX_SAVED]        # owned: Version of the storage saved[j] lives in (or NULL)
    Py_ssize_t ver_at[MAX_SAVED]    # that Version's value when it was saved (checked by the sweep)
    PyObject* extra                 # owned: RecordExtra (tensor hooks, anomaly trace) or NULL


cdef inline Py_ssize_t* rec_inputs(Record* r) noexcept:
    """The input indices of a record: inline, or in `more` for ops with many inputs."""
    return r.more if r.more != NULL else r.inp


cdef class Tape:
    cdef Record* recs               # the arena: records in creation order (a topological order)
    cdef Py_ssize_t n               # records in use: [0, n) (some may be RF_FREE holes)
    cdef Py_ssize_t cap             # records allocated
    cdef Py_ssize_t live            # records not RF_FREE
    cdef Py_ssize_t* stack          # scratch stack for iterative release
    cdef Py_ssize_t stack_cap
    cdef Py_ssize_t sp              # top of the release stack (shared by re-entrant releases)
    cdef int sweeping               # sweeps in progress: record indices must not move meanwhile
    cdef Py_ssize_t pending_packs   # records saved under saved-tensor hooks, not yet packed

    cdef int _resize(self, Py_ssize_t min_cap) except -1
    cdef int reserve(self, Py_ssize_t k) except -1
    cdef int compact(self) except -1
    cdef Py_ssize_t append(self, int op, int n_in, Py_ssize_t* inp) except -1
    cdef int decref(self, Py_ssize_t i) except -1
    cdef int release_saved(self, Py_ssize_t i) except -1


cdef class GradFn:
    cdef Py_ssize_t _node           # the record this grad_fn names (kept alive by one reference)
    cdef tuple _edges               # next_functions once read: its nodes live as long as this one


cdef class Version:
    cdef readonly Py_ssize_t value  # bumped by every in-place write to the storage it guards


# A view's creation (TensorBase._view_kind), PyTorch's CreationMeta besides no_grad (_gen & 1):
# such a view is refused in-place writes with grad mode on, and refuses to be used once its
# storage was written after it was taken (views.pxi).
cdef enum:
    VIEW_DEFAULT = 0
    VIEW_MULTI_OUTPUT = 1           # an output of split / chunk / unbind, or a view of one
    VIEW_OF_NO_GRAD_VIEW = 2        # taken with grad enabled of a view taken in no_grad
    VIEW_IN_CUSTOM_FUNCTION = 3     # the one differentiable output of a custom Function that is a
                                    # view (an input returned as-is, or a view of one), or a view
                                    # of such an output


cdef enum:
    INFERENCE_TENSOR = 1
    INFERENCE_DETACHED = 2


cdef class TensorBase:
    cdef public object _array       # the value: a numpy ndarray (0-d for scalars), never a numpy scalar
    cdef object _grad               # accumulated gradient (a Tensor) or None
    cdef bint _requires_grad
    cdef char _inference            # created in inference mode (INFERENCE_TENSOR): never saved
                                    # for backward, and written in place or made to require grad
                                    # only inside it; INFERENCE_DETACHED: its detach() / .data,
                                    # which PyTorch lets take in-place writes anywhere
    cdef Py_ssize_t _node           # tape record producing this tensor (or its LEAF record), -1 if none
    cdef Version _version           # shared by every tensor viewing the same storage; None until needed
    cdef object _base               # the tensor this one is a view of, or None
    cdef Py_ssize_t _gen            # a base: how often a recorded in-place write gave it a new
                                    # history; a view: 2 * its base's _gen when the view's history
                                    # was taken, + 1 if it was taken in no_grad (ops_inplace.pxi)
    cdef int _view_kind             # a view's creation besides no_grad, as PyTorch's CreationMeta:
                                    # VIEW_DEFAULT, VIEW_MULTI_OUTPUT, VIEW_OF_NO_GRAD_VIEW,
                                    # VIEW_IN_CUSTOM_FUNCTION (views.pxi)
    cdef int _view_output           # the output number PyTorch names for a VIEW_MULTI_OUTPUT view
    cdef Py_ssize_t _view_version   # a view: its storage's version when its history was taken
    cdef object __weakref__

    cdef int _set_requires_grad(self, bint flag) except -1


# -- what the op families use ----------------------------------------------------------------------

cdef bint grad_enabled() noexcept

cdef bint inference_mode_on() noexcept

cdef int check_saveable(TensorBase t) except -1

cdef class no_grad_scope:
    cdef int prev

cdef int set_grad_disabled(int disabled) noexcept

cdef class IeeeResults:
    cdef object token
    cdef object fallback

cdef extern from "kernels.h" nogil:
    enum:
        TG_ADD, TG_SUB, TG_MUL, TG_DIV, TG_POW, TG_MAX, TG_MIN
        TG_TANH_GRAD, TG_RELU_GRAD, TG_SIGMOID_GRAD
        TG_GELU_GRAD, TG_GELU_TANH_GRAD, TG_SILU_GRAD
        TG_SIN_GRAD, TG_COS_GRAD, TG_ERF_GRAD, TG_SQRT_GRAD, TG_RSQRT_GRAD, TG_EXPM1_GRAD
        TG_LOG1P_GRAD
    enum:
        TG_NEG, TG_EXP, TG_LOG, TG_TANH, TG_RELU, TG_SIGMOID, TG_SQRT, TG_ABS, TG_SIN, TG_COS
        TG_LOG1P, TG_EXPM1, TG_RSQRT, TG_SQUARE, TG_RECIPROCAL, TG_SIGN
        TG_ERF, TG_GELU, TG_GELU_TANH, TG_SILU
    int tg_binary_f64(int op, ptrdiff_t n, const double* a, ptrdiff_t sa, const double* b,
                      ptrdiff_t sb, double* out) noexcept
    int tg_binary_f32(int op, ptrdiff_t n, const float* a, ptrdiff_t sa, const float* b,
                      ptrdiff_t sb, float* out) noexcept
    int tg_unary_f64(int op, ptrdiff_t n, const double* a, double* out) noexcept
    void tg_fma_f32(ptrdiff_t n, const float* a, const float* b, ptrdiff_t sb, const float* c,
                    float* out) noexcept
    void tg_fma_f64(ptrdiff_t n, const double* a, const double* b, ptrdiff_t sb, const double* c,
                    double* out) noexcept
    void tg_madd_unfused_f32(ptrdiff_t n, const float* a, const float* b, float* acc) noexcept
    int tg_unary_f32(int op, ptrdiff_t n, const float* a, float* out) noexcept
    void tg_sincos_f64(ptrdiff_t n, const double* x, double* s, double* c) noexcept
    void tg_sincos_f32(ptrdiff_t n, const float* x, float* s, float* c) noexcept
    enum:
        TG_SUM_MAX_N
    float tg_sum_f32(ptrdiff_t n, const float* a) noexcept
    double tg_sum_f64(ptrdiff_t n, const double* a) noexcept
    void tg_softmax_rows_f32(int log_, ptrdiff_t rows, ptrdiff_t cols, const float* x,
                             float* out) noexcept
    void tg_softmax_rows_f64(int log_, ptrdiff_t rows, ptrdiff_t cols, const double* x,
                             double* out) noexcept
    void tg_softmax_grad_rows_f32(int log_, ptrdiff_t rows, ptrdiff_t cols, const float* g,
                                  const float* y, float* out) noexcept
    void tg_softmax_grad_rows_f64(int log_, ptrdiff_t rows, ptrdiff_t cols, const double* g,
                                  const double* y, double* out) noexcept
    enum:
        TG_LEAKY_RELU, TG_LEAKY_RELU_GRAD, TG_ELU, TG_ELU_GRAD, TG_SOFTPLUS, TG_SOFTPLUS_GRAD
        TG_CLAMP, TG_CLAMP_GRAD
    int tg_param_f64(int op, ptrdiff_t n, const double* a, const double* b, double p0, double p1,
                     double* out) noexcept
    int tg_param_f32(int op, ptrdiff_t n, const float* a, const float* b, float p0, float p1,
                     float* out) noexcept
    void tg_transpose_4(ptrdiff_t rows, ptrdiff_t cols, const uint32_t* src,
                        uint32_t* dst) noexcept
    void tg_transpose_8(ptrdiff_t rows, ptrdiff_t cols, const uint64_t* src,
                        uint64_t* dst) noexcept

# The pooled kernels above, called through the core by the modules above it (pooled_kernels.pxi
# says why): one copy of the vectorised math and one thread pool in the package.
cdef int pooled_binary_f64(int op, ptrdiff_t n, const double* a, ptrdiff_t sa, const double* b,
                           ptrdiff_t sb, double* out) noexcept nogil
cdef int pooled_binary_f32(int op, ptrdiff_t n, const float* a, ptrdiff_t sa, const float* b,
                           ptrdiff_t sb, float* out) noexcept nogil
cdef int pooled_unary_f64(int op, ptrdiff_t n, const double* a, double* out) noexcept nogil
cdef int pooled_unary_f32(int op, ptrdiff_t n, const float* a, float* out) noexcept nogil
cdef void pooled_sincos_f64(ptrdiff_t n, const double* x, double* s, double* c) noexcept nogil
cdef void pooled_sincos_f32(ptrdiff_t n, const float* x, float* s, float* c) noexcept nogil

# Sums in PyTorch's order (cascade_sum.pxi), called through the core by the modules above it.
cdef extern from "cascade_sum.h" nogil:
    float tg_cascade_sum_f32(ptrdiff_t n, const float* a, int blocks) noexcept
    double tg_cascade_sum_f64(ptrdiff_t n, const double* a, int blocks) noexcept
    float tg_cascade_strided_sum_f32(ptrdiff_t n, ptrdiff_t stride, const float* a,
                                     int blocks) noexcept
    double tg_cascade_strided_sum_f64(ptrdiff_t n, ptrdiff_t stride, const double* a,
                                      int blocks) noexcept
    void tg_cascade_rows_f32(ptrdiff_t rows, ptrdiff_t n, const float* a, float* out) noexcept
    void tg_cascade_rows_f64(ptrdiff_t rows, ptrdiff_t n, const double* a, double* out) noexcept
    void tg_cascade_cols_f32(ptrdiff_t rows, ptrdiff_t cols, const float* a, float* out) noexcept
    void tg_cascade_cols_f64(ptrdiff_t rows, ptrdiff_t cols, const double* a,
                             double* out) noexcept
    void tg_cascade_groups_f32(int ngroups, const ptrdiff_t* sizes, const char* reduced,
                               const float* a, float* out) noexcept
    void tg_cascade_groups_f64(int ngroups, const ptrdiff_t* sizes, const char* reduced,
                               const double* a, double* out) noexcept
    float tg_nll_sum_f32(ptrdiff_t n, const float* values, const char* valid) noexcept
    double tg_nll_sum_f64(ptrdiff_t n, const double* values, const char* valid) noexcept
    float tg_nll_sum_f16(ptrdiff_t n, const float* values, const char* valid) noexcept

cdef double cascade_sum_f64(ptrdiff_t n, const double* a) noexcept nogil
cdef float cascade_sum_f32(ptrdiff_t n, const float* a) noexcept nogil
cdef object cascade_reduce(object A, tuple axes, bint keepdim, double divisor=*)
cdef object nll_sum(object values, object valid)

cdef extern from "threadpool.h" nogil:
    ctypedef void (*tg_range_fn)(void* ctx, ptrdiff_t begin, ptrdiff_t end) noexcept nogil

# The pool itself, for work split by its caller (replay's fused loops: fusion.pxi).
cdef void pooled_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align,
                              tg_range_fn fn, void* ctx) noexcept nogil
cdef int pooled_threads() noexcept nogil

ctypedef fused real_t:
    float
    double

cdef inline bint kernel_array(object x, int* typenum) noexcept:
    """True when x is a C-contiguous float32/float64 ndarray (its type number in *typenum)."""
    if not cnp.PyArray_Check(x):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int t = cnp.PyArray_TYPE(a)
    if (t != cnp.NPY_FLOAT64 and t != cnp.NPY_FLOAT32) or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        return False
    typenum[0] = t
    return True


cdef inline char dtype_kind(cnp.ndarray a) noexcept:
    """a's dtype kind character (c'f', c'b', ...), read from its descriptor: `a.dtype.kind` is two
    attribute lookups and a new one-character str, ~130 instructions, which a one-element op paid
    up to three times."""
    return a.descr.kind


cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyTypeObject_numpy "PyTypeObject":
        pass
    PyTypeObject_numpy PyComplexFloatingArrType_Type
    bint PyObject_TypeCheck_numpy "PyObject_TypeCheck"(object, PyTypeObject_numpy*)


cdef inline bint is_complex_operand(object x) noexcept:
    """A complex tensor or a Python (or numpy) complex number: the operands the compiled ops
    hand to tapegrad/_complex.py (complex_hook.pxi)."""
    if isinstance(x, TensorBase):
        return dtype_kind(<cnp.ndarray>(<TensorBase>x)._array) == c'c'
    return (isinstance(x, complex)
            or PyObject_TypeCheck_numpy(x, &PyComplexFloatingArrType_Type))


cdef inline bint dense_layout(cnp.ndarray A) noexcept:
    """PyTorch's is_non_overlapping_and_dense: A's elements fill its extent exactly once (dims
    of size 1 have no stride that matters; negative strides do not occur in PyTorch).  The dims
    sorted by (stride, size) must be a row-major layout of some order."""
    cdef int nd_ = cnp.PyArray_NDIM(A), i, j, m = 0
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(A)
    cdef cnp.npy_intp* strides = cnp.PyArray_STRIDES(A)
    cdef cnp.npy_intp st[64]
    cdef cnp.npy_intp sz[64]
    cdef cnp.npy_intp expected = cnp.PyArray_ITEMSIZE(A)
    for i in range(nd_):
        if dims[i] == 1:
            continue
        j = m
        while j > 0 and (st[j - 1] > strides[i] or (st[j - 1] == strides[i]
                                                     and sz[j - 1] > dims[i])):
            st[j] = st[j - 1]
            sz[j] = sz[j - 1]
            j -= 1
        st[j] = strides[i]
        sz[j] = dims[i]
        m += 1
    for i in range(m):
        if st[i] != expected:
            return False
        expected *= sz[i]
    return True


cdef inline bint same_shape(cnp.ndarray a, cnp.ndarray b) noexcept:
    cdef int nd_ = cnp.PyArray_NDIM(a), i
    if nd_ != cnp.PyArray_NDIM(b):
        return False
    cdef cnp.npy_intp* da = cnp.PyArray_DIMS(a)
    cdef cnp.npy_intp* db = cnp.PyArray_DIMS(b)
    for i in range(nd_):
        if da[i] != db[i]:
            return False
    return True


cdef inline bint kernel_scalar(object x) noexcept:
    # Exact Python float/int only: bool is excluded, and numpy scalars (np.float64 subclasses
    # float) are typed for numpy, so they take the promotion path; so does an int beyond int64,
    # whose range PyTorch's argument parser checks there (OverflowError past 64 bits).
    cdef int overflow = 0
    if PyFloat_CheckExact(x):
        return True
    if not PyLong_CheckExact(x):
        return False
    PyLong_AsLongLongAndOverflow(x, &overflow)
    return overflow == 0

cdef struct KernelOperands:
    # Two operands as the binary kernels take them: type number, data and element stride (0: one
    # value for all n) of each; a Python number is held converted in sd / sf.
    int t
    const char* pa
    ptrdiff_t sa
    const char* pb
    ptrdiff_t sb
    double sd
    float sf
    # A broadcast over rows (x + bias, x - x.amax(-1, keepdim=True)): the kernel runs once per row
    # of `cols` elements, and a / b move on by da / db bytes between rows (0: the repeated row,
    # or one value per row with its stride 0 and a step of one element).  cols 0: one call for all.
    ptrdiff_t cols
    ptrdiff_t da
    ptrdiff_t db

cdef bint rows_layout(int nf, const cnp.npy_intp* df, int npart, const cnp.npy_intp* dp,
                      ptrdiff_t* stride, ptrdiff_t* step) noexcept

cdef object kernel_operands(object A, object B, KernelOperands* ko)

cdef void run_binary(int kop, ptrdiff_t n, KernelOperands* ko, void* out) noexcept

cdef void binary_rows(int kop, ptrdiff_t n, const KernelOperands* ko, char* out) noexcept nogil

cdef object fast_binary(int kop, object A, object B)

cdef int add_into(object out, object C) except -1

cdef object fast_unary(int kop, object A)

cdef object unary_c(int kop, object A)

cdef object binary_c(int kop, object a, object b)

cdef double GELU_BETA

cdef double GELU_KAPPA

cdef object gelu_tanh_sigmoid(object x)

cdef object gelu_tanh_grad_numpy(object g, object x)

cdef object silu_grad_numpy(object g, object x)

cdef object fast_param(int kop, object A, object B, double p0, double p1)

cdef object ew(int kop, object a, object b)

cdef object ew_g(int kop, object g, object b)

cdef void offer_adjoint(object g) noexcept

cdef void withdraw_adjoint() noexcept

cdef enum:
    CAT_BOOL = 0
    CAT_INT = 1
    CAT_FLOAT = 2
    CAT_COMPLEX = 3

cdef class dtype:
    cdef readonly str name
    cdef readonly object np_dtype
    cdef readonly int category
    cdef readonly int itemsize

cdef object NP_FLOAT32

cdef object NP_INT64

cdef object NP_BOOL

cdef object DEFAULT_FLOAT

cdef object numpy_dtype_of(object d)
cdef bint is_dtype_arg(object d)
cdef object to_np_dtype(object d, str fn=*)

cpdef str type_name(object x)

cpdef int user_stacklevel() except -1
cpdef str triggered_internally(str message, str origin)
cpdef object torch_warn(str message, str origin)
cpdef object warn_once(str message, str origin)
cpdef object warn_complex_discard()
cpdef object complex_cast_to(object value, str target_kind)

cdef int np_category(int type_num) noexcept

cdef int scalar_category(object s) noexcept

cdef object promote_pair(object a, object b)

cdef object overtaken(object out, int cat, object higher)

cdef object scalar_default(int sc)

cdef object complex_call(str name, tuple args)

cdef object result_dtype(object a, object b)

ctypedef object (*vjp_fn)(Record* r, object g)

cdef enum:
    MAX_OPS = 256

cdef vjp_fn OP_VJP[MAX_OPS]

cdef list OP_NAMES

cdef int register_op(str name, vjp_fn vjp) except -1

# An op's replay step (tapegrad.compile, replay.pxi), registered next to its forward and VJP: its
# forward on arrays (`ins`: the record's inputs, then the other tensor operands it reads, None for
# an absent optional one; `attrs`: what the capture noted), returning its result array and
# filling `r` (opcode, saved values, aux, scalar) as the eager op fills its record - without a
# tensor or the tape - so that the op's own VJP (OP_VJP[r.op]) runs the replayed backward.
# r.inp[j] >= 0 marks the inputs that need a gradient (needs_grad), as in a recorded op.
ctypedef object (*replay_fn)(Record* r, tuple ins, object attrs)

cdef replay_fn OP_REPLAY[MAX_OPS]

cdef int register_replay(int op, replay_fn forward) except -1

cdef int OP_LEAF

cdef class CompiledBackward:
    cdef object backward(self, list g, list seeds)
    cdef object backward_one(self, object g, object seed)
    cdef object graph_backward(self, list g, list seeds)
    cdef release(self)

cdef Tape TAPE

cdef enum:
    SK_BINARY = 0       # out = a (kop) b; a/b are slots (out's shape, one element, a row or one value
                        # per row repeated over out's rows: Program.set_layout) or scalars (slot -1)
    SK_UNARY = 1        # out = kop(a) in C
    SK_UNARY_NUMPY = 2  # out = numpy ufunc(a) (large transcendental inputs, as eager does)
    SK_REDUCE = 3       # out = sum/mean of a over axes (numpy, as eager does)
    SK_SUM_ALL = 4      # out = sum/mean of all of a, in C in numpy's summation order
    SK_CALL = 5         # out = the eager op re-run on the slots' values (matmul, losses, ...);
                        # its backward is that op's own, by a nested sweep of its records
    SK_MATMUL = 6       # out = a @ b of two matrices by eager's product(); backward: eager's
                        # matmul_grad_a / matmul_grad_b (ops_linalg.pxi)
    SK_OP = 7           # out = the op's registered replay step (OP_REPLAY) on the slots' arrays:
                        # no tensor, no record; backward: its own VJP (OP_VJP) on the step's record

cdef class Capture:
    cdef public list created        # every tensor an op made during the call
    cdef public list steps          # (kind, op, operands..., result) of the replayable ops
    cdef public set claimed         # id() of the tensors a step produced
    cdef public list reads          # (tensor, kind, value): Python-level reads of tensor values
    cdef public list unsupported    # why the call cannot be replayed (empty: it can)
    cdef unsigned long thread
    cdef Py_ssize_t depth           # > 0 inside a captured op call (capture_call)

cdef extern from "pythread.h":
    unsigned long PyThread_get_thread_ident()

cdef Capture CAPTURE


cdef inline bint capturing() noexcept:
    return CAPTURE is not None and CAPTURE.thread == PyThread_get_thread_ident()

cdef int capture_created(object t) except -1

cdef int capture_step(tuple step) except -1

cdef object capture_call(object fn, tuple args, dict kwargs)

cdef int capture_op(int op, tuple tensors, int n_rec_in, object attrs, TensorBase res) except -1

cdef int capture_unary(int op, int kop, TensorBase x, object A, bint in_c,
                       TensorBase res) except -1

cdef int capture_reduce(int op, TensorBase x, object A, tuple axes, bint keepdim, double count,
                        TensorBase res) except -1


# The per-op helpers below are defined here, not in their .pxi files, so that every extension
# module compiles them inline: called through the cross-module function table instead, they made
# the op families measurably slower than the single module was (issue 18).

cdef object TensorType                  # the class of op results (tapegrad.Tensor once imported;
                                        # `object`: its metaclass is a subclass of type)
cdef tuple EMPTY_TUPLE

# The meta device (tapegrad/_meta.py): its tensor classes, None until the first meta tensor is
# made.  A meta tensor dispatches its own methods; a CPU op that is handed one (`cpu.add(meta)`)
# notices it by two type-pointer compares on its operands and hands the call to meta_entry, so
# CPU tensors pay nothing for the meta device.
cdef object MetaTensorType
cdef object MetaParameterType

cdef object meta_entry(str name, tuple args)


cdef inline bint is_meta_tensor(object x) noexcept:
    return type(x) is MetaTensorType or type(x) is MetaParameterType

cdef object as_ndarray(object x)


cdef inline object nd(object x):
    """numpy returns scalars, not 0-d arrays, from operations on 0-d arrays; tensors hold arrays."""
    if cnp.PyArray_Check(x):
        return x
    return as_ndarray(x)


cdef inline TensorBase wrap(object arr):
    """A new tensor (of the registered Tensor class) holding ndarray `arr`, no grad, no node."""
    cdef TensorBase t = <TensorBase>(<PyTypeObject*>TensorType).tp_new(
        <type>TensorType, <PyObject*>EMPTY_TUPLE, NULL)
    t._array = arr
    t._inference = inference_mode_on()
    if CAPTURE is not None:
        capture_created(t)
    return t


cdef inline Version version_of(TensorBase t):
    """t's version counter, created on first need (most tensors never need one)."""
    if t._version is None:
        t._version = Version.__new__(Version)
    return t._version

cdef TensorBase wrap_result(object out, TensorBase x)
cdef TensorBase make_view(object arr, TensorBase base)


cdef inline object torch_copy_source(object A):
    """A, or A made row-major when an expanded dim (stride 0, size > 1) would make numpy's order
    "K" copy differ from PyTorch's: PyTorch lays a copy of an expanded tensor out row-major (its
    infer_dense_strides takes a zero stride as a tie that keeps the dims' order), numpy puts the
    stride-0 dim innermost ((1, 8, 2) for a (2, 3, 4) expand of a (1, 3, 4) tensor, so that
    x.expand(...).clone().view(-1) raised)."""
    cdef cnp.ndarray a = <cnp.ndarray>A
    cdef int i
    for i in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_STRIDES(a)[i] == 0 and cnp.PyArray_DIMS(a)[i] > 1:
            return cnp.PyArray_NewCopy(a, cnp.NPY_CORDER)
    return A


cdef inline void keep(PyObject** slot, object value) noexcept:
    """Store an owned reference to `value` in a record slot (saved value or aux)."""
    Py_INCREF(value)
    slot[0] = <PyObject*>value


cdef inline int keep_saved(Record* r, int j, object value, TensorBase owner) except -1:
    """Save `value` (owner's array or a view of it) in slot j together with owner's version, so
    the sweep refuses to use it if it is overwritten in place before backward."""
    if owner._inference:
        check_saveable(owner)
    cdef Version v = version_of(owner)
    keep(&r.saved[j], value)
    keep(&r.ver[j], v)
    r.ver_at[j] = v.value
    return 0

cdef int refresh_view(TensorBase t) except -1


cdef inline Py_ssize_t node_for_input(TensorBase t) except -2:
    """The record index a gradient for `t` flows to: -1 if none; creates a leaf's LEAF record."""
    cdef Py_ssize_t i
    if t._base is not None:
        refresh_view(t)                 # a view whose base was rewritten in place (ops_inplace)
    if not t._requires_grad:
        return -1
    if t._node >= 0:
        return t._node
    i = TAPE.append(OP_LEAF, 0, NULL)
    TAPE.recs[i].out = <PyObject*>t
    t._node = i
    return i


cdef inline int fresh(TensorBase t) except -1:
    """Before reading t's autograd state: rebase t if it is a stale view (see refresh_view)."""
    if t._base is not None:
        refresh_view(t)
    return 0


cdef inline bint is_leaf_c(TensorBase t) noexcept:
    return t._node < 0 or TAPE.recs[t._node].op == OP_LEAF


cdef inline bint no_grad_view_drops_grad(TensorBase t) noexcept:
    """Whether t is a view taken under no_grad of a tensor that requires grad: PyTorch gives it
    no gradient accumulator, so a gradient reaching it is dropped (neither its .grad nor its
    base's)."""
    return t._base is not None and (t._gen & 1) and (<TensorBase>t._base)._requires_grad


cdef int flush_packs(bint written=*, tuple known=*, object saved_as=*) except -1

cdef bint saved_hooks_on() noexcept

cdef inline int begin_record(Py_ssize_t n_in) except -1:
    """Called before an op reads its inputs' record indices: room for the record and for one
    LEAF record per input, so no index moves until the op has appended.  First, the previous
    op's saved values go through the active saved-tensor hooks (saved_hooks.pxi: a hook runs
    Python code, so it runs here, before this op holds any index or record pointer)."""
    if TAPE.pending_packs:
        flush_packs()
    return TAPE.reserve(n_in + 1)

cdef Record* record_op(int op, TensorBase result, int n_in, Py_ssize_t* inp) except NULL

cdef bint inference_only(Py_ssize_t* inp, int n_in) noexcept

cdef int save_value(Record* r, int j, object value, object owner) except -1

cdef class SavedIndex:
    cdef readonly int slot          # the saved slot holding this part of an op's index key

cdef int save_index(Record* r, int j, TensorBase owner) except -1

cdef dict save_indices(Record* r, object owners, int first=*)

cdef object saved_index_key(Record* r, object key, object owners, int first=*)

cdef object resolve_index_key(Record* r, object key)

cdef Record* record_from(int op, TensorBase result, tuple inputs) except? NULL


cdef inline bint needs_grad(Record* r, int j) noexcept:
    """Whether input j of record r receives a gradient (VJPs skip the others' work)."""
    return rec_inputs(r)[j] >= 0

cpdef object int_param(object v)
cpdef object symint_param(object v)
cpdef object int_arg(object v, str fname, str argname, int pos=*, bint symint=*)

cdef object dim_alias(str fname, object dim, object axis)

cdef bint keepdim_alias(str fname, object keepdim, object keepdims) except -1
cpdef bint check_bool(str fname, str name, object value, int position=*,
                      str overloads=*) except -1

cdef tuple normalize_dims(object dim, int ndim, bint range_first=*, bint one_element_tensor=*)

cdef void history_rewritten(TensorBase t) noexcept

cdef int rebase_view(TensorBase t, tuple key) except -1

cdef int mark_multi_output_views(tuple views) except -1

cdef int bump_version(TensorBase t) except -1

cdef int check_inplace(TensorBase t, bint recording, bint via_base=*) except -1

cdef bint writes_through_view(TensorBase t) noexcept

cdef tuple view_key(TensorBase view)

cdef int fresh_operands(TensorBase t, object other) except -1

cdef int guard_version(Record* r, TensorBase t) except -1

cdef object sum_to(object g, tuple shape)

cdef object fit_grad(object g, object shape, object dt)

cdef tuple operand_shape(object x)

cdef tuple broadcast_shapes_torch(tuple sa, tuple sb)

cdef object operand_value(object x, object dt)

cdef object as_operand(object x)

cdef object real_torch_tensor(object x)

cdef object bad_operand_error(str name, object a, object b)

cdef object scaled_operand(str name, object a, object b, object alpha)
cdef object half_alpha_values(object a, object b, object alpha, bint subtracting)
cdef object with_half_alpha_values(object result, object values)
cdef object half_scalar_read(object b, object dt)

cdef inline object named_result(object result, str name, object a, object b):
    """result, unless the op gave NotImplemented (an operand neither tensor nor number): the
    operators pass that on to Python's protocol, the named forms raise PyTorch's TypeError."""
    if result is NotImplemented:
        raise bad_operand_error(name, a, b)
    return result

cdef object fit_binary_grads(Record* r, object ga, object gb)

cdef int OP_ADD

cdef int OP_SUB

cdef int OP_RSUB

cdef int OP_MUL

cdef int OP_DIV

cdef int OP_RDIV

cdef int OP_POW

cdef int OP_POW_T

cdef int OP_POW_R

cdef object negate(object g)

cdef int kernel_of(int op) noexcept

cdef bint is_float_num(int t) noexcept

cdef object binary_op(int op, object a, object b)

cdef int OP_NEG

cdef int OP_EXP

cdef int OP_LOG

cdef int OP_TANH

cdef int OP_RELU

cdef enum:
    SIMD_TRANSCENDENTAL_MIN_SIZE = 32

cdef object unary_numpy(int op, object A)

cdef object unary_op(int op, TensorBase x)

# ops_complex.pxi
cdef object conj_of(object x)

cdef int OP_COMPLEX_MUL

cdef int OP_COMPLEX_DIV

cdef object complex_binary(int op, object a, object b)

cdef tuple holomorphic_factor(int op, object z, object out, object m)

cdef char HOLOMORPHIC_READS_OUTPUT[MAX_OPS]

cdef int OP_COMPLEX_EXP
cdef int OP_COMPLEX_LOG
cdef int OP_COMPLEX_SQRT
cdef int OP_COMPLEX_RSQRT
cdef int OP_COMPLEX_RECIPROCAL
cdef int OP_COMPLEX_SIN
cdef int OP_COMPLEX_COS
cdef int OP_COMPLEX_TANH
cdef int OP_COMPLEX_SIGMOID
cdef int OP_COMPLEX_LOG1P
cdef int OP_COMPLEX_EXPM1
cdef int OP_COMPLEX_LOG10
cdef int OP_COMPLEX_LOG2
cdef int OP_COMPLEX_SINH
cdef int OP_COMPLEX_COSH
cdef int OP_COMPLEX_ASIN
cdef int OP_COMPLEX_ACOS
cdef int OP_COMPLEX_ATAN

cdef int OP_COMPLEX_ABS

cdef object complex_unary(str name, TensorBase x)

# Which of a record's hooks run_tensor_hooks / run_graph_hooks run: PyTorch runs a node's
# tensor hooks, then delivers a retained .grad, then runs its grad_fn's pre-hooks.
cdef enum:
    HOOKS_ALL = 0
    HOOKS_TENSOR = 1
    HOOKS_NODE_PRE = 2

cdef object run_graph_hooks(Py_ssize_t i, object g, int which=*)

cdef bint has_node_prehooks(Py_ssize_t i) except -1

cdef int run_post_accumulate_hooks(Py_ssize_t i) except -1

cdef bint has_node_hooks(Record* rec) noexcept

cdef bint carries_hooks(Record* rec) noexcept

cdef object run_node_hooks(Record* rec, object grads, object g, bint graph)

cdef object FUNCTION_BACKWARD

cdef object UNDEFINED_GRAD

cdef list undefined_passes_to(Py_ssize_t i, char* need, bint retain_graph)

cdef int OP_FUNCTION

cdef int OP_FN_OUTPUT

cdef enum:
    ONE_RECORD = -1     # an OP_FUNCTION record's scalar (else its number of outputs) when it is
                        # a replayed compiled call's one output's own node (ops_function.pxi)

cdef int release_function_ctx(Py_ssize_t i) except -1

cdef int ANOMALY_MODE

# The profiler's per-op events (profiling.pxi): PROFILING is the flag every public call tests.
cdef int PROFILING
cdef int set_core_profiler(object open_event, object close_event) except -1
cdef object profiler_open(str name, object args)
cdef int profiler_close(object token, object result=*) except -1
cdef object profiled_call(str name, object fn, tuple args)
cdef object profiled_binary(str name, int op, object a, object b)
cdef str record_name(Record* r)

cdef int note_output_shape(Py_ssize_t i, tuple shape) except -1
cdef int split_accumulator(TensorBase t, object old_dtype) except -1

cdef object arriving_shape(Py_ssize_t k, object g, Record* producer, Py_ssize_t q)
cdef int profile_captured(Record* r) except -1

cdef object anomaly_reraise(Record* r, object e)

cdef str BACKWARD_TWICE

cdef int check_saved_versions(Record* r) except -1

cdef bint leaf_takes_grad(Record* r) except -1
cdef int unpack_saved(Record* rec) except -1

cdef enum:
    SWEEP_ACCUMULATE = 0
    SWEEP_INPUTS = 1
    SWEEP_CAPTURE = 2

cdef tuple captured_results(tuple inputs, list captured, bint allow_unused)

# When a sweep delivers each leaf's gradient: PyTorch's ready queue, replayed (ready_order.pxi).
cdef class ReadyOrder:
    cdef Py_ssize_t n               # records [0, n) are the sweep's
    cdef int* deps                  # owned: per node, edges still to arrive (PyTorch's dependencies)
    cdef char* reach                # owned: per record, whether it is on a path from a root
    cdef char* ran                  # owned: per record, whether it has run
    cdef char* need                 # borrowed: the sweep's `need` (with targets) or NULL
    cdef Py_ssize_t cursor          # the lowest record run so far
    cdef long long* keys            # owned: the heap's keys (AccumulateGrad: the largest)
    cdef Py_ssize_t* items          # owned: the heap's nodes: a record, or -(v + 1): extra node v
    cdef Py_ssize_t size, cap
    cdef list virtual_nodes         # extra node v: (its record, its ranked entries)

    cdef int push(self, long long key, Py_ssize_t item) except -1
    cdef void sift_up(self, Py_ssize_t hole, long long key, Py_ssize_t item) noexcept
    cdef void remove_at(self, Py_ssize_t at) noexcept
    cdef int arrive(self, Py_ssize_t k) except -1
    cdef int push_entries(self, Py_ssize_t i, tuple entries) except -1
    cdef int run_node(self, Py_ssize_t i, bint pushes) except -1
    cdef list reached(self, Py_ssize_t i)
    cdef list ran_record(self, Py_ssize_t i)
    cdef list pop_ready(self)

cdef ReadyOrder ready_order_for(list roots, Py_ssize_t n, char* need)

# Entry points into higher modules, installed by them when they load (ops_registry.pxi).
cdef object (*INDEX_OP)(TensorBase x, object key)
cdef object (*SETITEM_OP)(TensorBase x, object key, object value)
cdef object (*INPLACE_BINARY)(int op, TensorBase x, object other)
cdef object (*WRITE_OUT)(str name, object out, tuple operands, object fn, dict kwargs)
cdef object (*GRAPH_ENGINE_RUN)(tuple outputs, list grads, bint retain_graph, tuple inputs,
                                bint allow_unused, bint accumulate_grad)
# the subclass dispatch's setting on this thread (out_arg_call.h's tg_subclass_dispatch_set_off:
# 1 off, 0 on, -1 leave it; returns the previous one)
cdef int (*SUBCLASS_DISPATCH_SET_OFF)(int off) noexcept

cdef int OP_AS_STRIDED

cdef str scalar_type_name(object np_dt)
cdef bint torch_castable(object src, object dst) except -1

cdef dict SCALAR_TYPE_NAMES

cdef dict C_TYPE_NAMES
cdef object scalar_to_dtype(object v, object dt, bint half_as_double=*)
cdef object wrapped_int(object v, object dt)

cdef dtype dtype_of_array(cnp.ndarray a)
