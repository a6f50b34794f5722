# ---------------------------------------------------------------------------------------------
# More elementwise ops: math functions, activations, clamp, maximum/minimum, where, comparisons,
# dtype conversions.
#
# Each op's forward, VJP and registration sit side by side.  The VJPs call only C-level numpy
# (ufuncs with out=/where=, ndarray methods and operators, np.empty/np.zeros/np.array): np.where,
# np.copyto, np.concatenate, np.empty_like ... go through a Python-level __array_function__
# dispatcher, which would be a Python call per node in the sweep; `masked` below replaces np.where.
#
# Kernels: contiguous float32/float64 arrays run in the C kernels (kernels.c) at every size: the
# transcendental functions (exp, sin, log1p, sigmoid, erf, ...) and the activations and fused
# gradients built on them call the vectorised functions of vecmath.c, split over the thread pool
# for big arrays; sqrt / reciprocal leave big arrays to numpy's wider SIMD loops (rsqrt stays in C:
# numpy needs two passes and a temporary for it).  Other
# layouts and dtypes go to numpy (erf and exact gelu: always C, numpy has no erf).
# ---------------------------------------------------------------------------------------------

from libc.math cimport INFINITY, M_2_SQRTPI

cdef extern from *:
    const Py_ssize_t PY_SSIZE_T_MAX

cdef enum:
    ARITH_C_MAX_SIZE = 4096     # sqrt / reciprocal: numpy's wider SIMD wins beyond this


cdef object masked(object mask, object g, tuple shape, object dt):
    """where(mask, g, 0) as a fresh array of `shape`/`dt` (mask and g broadcast to it) with C-level
    numpy calls only, so VJPs may use it; masked-out entries are 0 even where g is inf or NaN."""
    out = np.zeros(shape, dt)
    np.positive(g, out=out, where=mask)
    return out


cdef object operand_layout(object out, object a, object b):
    """out, the numpy result of an elementwise op of a and b (tensors, numbers or None), in the
    layout PyTorch's TensorIterator gives it (_core._iterator_layout, over the operands' own
    arrays).  numpy lays a result of operands with different layouts out row-major, and a copy
    (np.where, a float64 detour) loses even one operand's layout, so a transposed or column-major
    input gave a row-major result: stride() differed and flatten() aliased where PyTorch's
    copies.  Only when an operand is not row-major (the common case pays two flag tests)."""
    A = (<TensorBase>a)._array if isinstance(a, TensorBase) else None
    B = (<TensorBase>b)._array if isinstance(b, TensorBase) else None
    if ((A is None or cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A))
            and (B is None or cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>B))):
        return out
    if not cnp.PyArray_Check(out):
        return out
    return _core_iterator_layout(out, B if A is None else A, A if B is None else B)


cdef object promote2(object a, object b):
    """torch.result_type(a, b) for a tensor and a tensor or Python scalar (see promote_operands)."""
    cdef cnp.ndarray A
    if isinstance(a, TensorBase):
        A = (<TensorBase>a)._array
        if isinstance(b, TensorBase):
            if (<TensorBase>b)._array.dtype == A.dtype:
                return A.dtype
        elif scalar_category(b) <= np_category(cnp.PyArray_TYPE(A)):
            return A.dtype
    return promote_operands((a, b))


cdef object promote_operands(tuple ops):
    """torch.result_type over several operands (tensors or Python scalars; None entries skipped):
    dimensioned tensors, then zero-dim tensors, then Python scalars, by category (dtypes.pxi's
    rules, with PyTorch's promoteTypes for mixed integer/floating tensors)."""
    cdef object dims = None, zeros = None, out = None
    cdef int cat = -1, sc = -1, c
    for x in ops:
        if x is None:
            continue
        if isinstance(x, TensorBase):
            a = (<TensorBase>x)._array
            if cnp.PyArray_NDIM(a) > 0:
                dims = a.dtype if dims is None else promote_pair(dims, a.dtype)
            else:
                zeros = a.dtype if zeros is None else promote_pair(zeros, a.dtype)
        else:
            c = scalar_category(x)
            if c > sc:
                sc = c
    if dims is not None:
        out = dims
        cat = np_category(out.num)
    if zeros is not None and np_category(zeros.num) > cat:
        out = overtaken(out, cat, zeros)
        cat = np_category(out.num)
    if sc > cat:
        out = overtaken(out, cat, scalar_default(sc))
    return out


def _promote_operands(*operands):
    """promote_operands for the Python-level ops (addcmul/addcdiv's common dtype): the numpy
    dtype of torch.result_type over several tensors and numbers."""
    return promote_operands(operands)


cdef object number_or_tensor(object v):
    """A clamp/where operand: a tensor, a Python number (numpy scalars become Python numbers),
    None; anything else gives NotImplemented."""
    if v is None or isinstance(v, (TensorBase, bool, int, float)):
        return v
    if isinstance(v, np.bool_):     # PyTorch's Scalar reads a numpy bool as a double (as the
        return float(v)             # binary operators' as_operand does)
    if isinstance(v, np.generic) and v.dtype.kind in "biuf":
        return v.item()
    return NotImplemented


cdef object complex_or_number_or_tensor(object v):
    """number_or_tensor, also taking a complex number (where's operands; clamp refuses them)."""
    if isinstance(v, (complex, np.complexfloating)):
        return complex(v)
    return number_or_tensor(v)


cdef inline Record* record1(int op, TensorBase res, TensorBase x) except? NULL:
    """Record a one-input op when grad mode is on and x requires grad (else NULL)."""
    cdef Py_ssize_t inp[1]
    if not grad_enabled():
        return NULL
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0 or inference_only(inp, 1):
        return NULL
    return record_op(op, res, 1, inp)


# -- math functions --------------------------------------------------------------------------------

cdef inline Py_ssize_t c_kernel_max_size(int kop) noexcept:
    """Largest array a unary C kernel is used for (numpy's SIMD loops take over beyond)."""
    if kop == TG_SQRT or kop == TG_RECIPROCAL:
        return ARITH_C_MAX_SIZE
    return PY_SSIZE_T_MAX


cdef object sign_numpy(object A):
    """PyTorch's sign, (0 < x) - (x < 0): 0 for NaN and -0 (np.sign gives NaN and -0)."""
    if A.dtype.kind == "b":
        return A.copy()
    if A.dtype.kind != "f":
        return nd(np.sign(A))
    dt = A.dtype
    return nd((A > 0).astype(dt) - (A < 0).astype(dt))


cdef object kernel_numpy(int kop, object A):
    """numpy's version of unary kernel `kop` (callers own the errstate in forward)."""
    if kop == TG_ABS:
        return nd(np.abs(A))
    if kop == TG_SIGN:
        return sign_numpy(A)
    if kop == TG_SQRT:
        return nd(np.sqrt(A))
    if kop == TG_RSQRT:
        return nd(1 / np.sqrt(A))
    if kop == TG_SIN:
        return nd(np.sin(A))
    if kop == TG_COS:
        return nd(np.cos(A))
    if kop == TG_LOG1P:
        return nd(np.log1p(A))
    if kop == TG_EXPM1:
        return nd(np.expm1(A))
    if kop == TG_EXP:
        return nd(np.exp(A))
    if kop == TG_SIGMOID:
        return nd(1 / (np.exp(-A) + 1))
    if kop == TG_RECIPROCAL:
        return nd(np.reciprocal(A))
    if kop == TG_SQUARE:
        return nd(A * A)
    if kop == TG_NEG:
        return nd(-A)
    if kop == TG_SILU:
        return nd(A / (np.exp(-A) + 1))
    if kop == TG_GELU_TANH:
        return nd(A * gelu_tanh_sigmoid(A))
    if kop == TG_ERF or kop == TG_GELU:
        return unary_c(kop, A)
    raise AssertionError(f"kernel_numpy: unknown kernel {kop}")


cdef object UNARY_FLOAT16 = np.dtype(np.float16)


cdef inline object widen16(object A):
    """A as float32 when it is float16 (PyTorch computes half precision in float32, its
    "opmath", and rounds once), else A itself.  Its counterpart narrow16 rounds the result back;
    the tensor-level twins (recorded casts, for composites) are tapegrad/_half_precision.py's."""
    return A.astype(NP_FLOAT32) if is_half(A) else A


cdef inline object narrow16(object R):
    """A result computed in float32 from float16 operands (widen16), rounded once to float16
    (beyond float16's range to inf, without numpy's overflow warning: PyTorch gives none)."""
    with IeeeResults():
        return nd(R.astype(UNARY_FLOAT16))


cdef object ucall(int kop, object A):
    """Unary kernel `kop` of float array A: C when small enough (and contiguous float32/64),
    numpy otherwise.  VJPs call it as is (the sweep owns the errstate).  float16 is computed in
    float32 and rounded once, as PyTorch's (a float16 exp(17) is inf: sigmoid(-17) would be 0)."""
    if is_half(A):
        return narrow16(ucall(kop, widen16(A)))
    if cnp.PyArray_SIZE(A) <= c_kernel_max_size(kop):
        r = fast_unary(kop, A)
        if r is not None:
            return r
    return kernel_numpy(kop, A)


cdef object ucall_forward(int kop, object A):
    """ucall for forward ops: numpy's fallback under errstate (IEEE results, no warnings)."""
    if is_half(A):                                      # computed in float32 (see ucall)
        return narrow16(ucall_forward(kop, widen16(A)))
    if cnp.PyArray_SIZE(A) <= c_kernel_max_size(kop):
        r = fast_unary(kop, A)
        if r is not None:
            return r
    with IeeeResults():
        return kernel_numpy(kop, A)


cdef object vjp_abs(Record* r, object g):
    return ew(TG_MUL, g, ucall(TG_SIGN, <object>r.saved[0]))        # grad * sgn(x), 0 at 0

cdef object vjp_sign(Record* r, object g):
    return np.zeros(g.shape, g.dtype)

# The VJPs below compute their formula in one fused C kernel when the layout allows (ew_g: into
# the upstream gradient itself when the sweep offers it), each rounding as the numpy fallback
# after it, which is the formula's own order: both give the same bits.

cdef object vjp_log1p(Record* r, object g):
    x = <object>r.saved[0]
    out = ew_g(TG_LOG1P_GRAD, g, x)
    return out if out is not None else ew(TG_DIV, g, ew(TG_ADD, x, 1.0))   # grad / (x + 1)

cdef object vjp_expm1(Record* r, object g):
    y = <object>r.saved[0]
    out = ew_g(TG_EXPM1_GRAD, g, y)
    return out if out is not None else ew(TG_MUL, g, ew(TG_ADD, y, 1.0))   # grad * (y + 1)

cdef object vjp_sqrt(Record* r, object g):
    y = <object>r.saved[0]
    out = ew_g(TG_SQRT_GRAD, g, y)
    return out if out is not None else ew(TG_DIV, g, ew(TG_MUL, y, 2.0))   # grad / (2 y)

cdef object vjp_rsqrt(Record* r, object g):
    y = <object>r.saved[0]
    out = ew_g(TG_RSQRT_GRAD, g, y)
    if out is not None:
        return out
    return ew(TG_MUL, ew(TG_MUL, g, -0.5), ew(TG_MUL, ew(TG_MUL, y, y), y))   # -0.5 grad y^3

cdef object vjp_sin(Record* r, object g):
    x = <object>r.saved[0]
    out = ew_g(TG_SIN_GRAD, g, x)
    return out if out is not None else ew(TG_MUL, g, ucall(TG_COS, x))     # grad * cos(x)

cdef object vjp_cos(Record* r, object g):
    x = <object>r.saved[0]
    out = ew_g(TG_COS_GRAD, g, x)
    return out if out is not None else ew(TG_MUL, g, negate(ucall(TG_SIN, x)))   # grad * -sin(x)

cdef object vjp_sigmoid(Record* r, object g):
    return ew_g(TG_SIGMOID_GRAD, g, <object>r.saved[0])              # grad * y * (1 - y)

cdef object vjp_reciprocal(Record* r, object g):
    y = <object>r.saved[0]
    return ew(TG_MUL, negate(g), ew(TG_MUL, y, y))                   # -grad * y^2

cdef object vjp_erf(Record* r, object g):
    x = <object>r.saved[0]
    out = ew_g(TG_ERF_GRAD, g, x)
    if out is not None:
        return out
    e = ucall(TG_EXP, negate(ew(TG_MUL, x, x)))
    return ew(TG_MUL, ew(TG_MUL, g, M_2_SQRTPI), e)                  # grad * 2/sqrt(pi) e^(-x^2)


OP_ABS = register_op("AbsBackward0", vjp_abs)
OP_SIGN = register_op("SignBackward0", vjp_sign)
OP_LOG1P = register_op("Log1PBackward0", vjp_log1p)
OP_EXPM1 = register_op("Expm1Backward0", vjp_expm1)
OP_SQRT = register_op("SqrtBackward0", vjp_sqrt)
OP_RSQRT = register_op("RsqrtBackward0", vjp_rsqrt)
OP_SIN = register_op("SinBackward0", vjp_sin)
OP_COS = register_op("CosBackward0", vjp_cos)
OP_SIGMOID = register_op("SigmoidBackward0", vjp_sigmoid)
OP_RECIPROCAL = register_op("ReciprocalBackward0", vjp_reciprocal)
OP_ERF = register_op("ErfBackward0", vjp_erf)

# the names _complex.py knows math_op's ops by
cdef dict MATH_NAMES = {OP_ABS: "abs", OP_SIGN: "sign", OP_LOG1P: "log1p", OP_EXPM1: "expm1",
                        OP_SQRT: "sqrt", OP_RSQRT: "rsqrt", OP_SIN: "sin", OP_COS: "cos",
                        OP_SIGMOID: "sigmoid", OP_RECIPROCAL: "reciprocal", OP_ERF: "erf"}


cdef object math_op(int op, int kop, TensorBase x, bint save_output):
    """Forward and record of a one-input math function.  Integer and bool inputs give float32
    (PyTorch), except abs and sign, which keep integer dtypes."""
    cdef Record* r
    A = x._array
    cdef char kind = dtype_kind(<cnp.ndarray>A)
    if kind == c'c':
        return complex_unary(MATH_NAMES[op], x)
    if op == OP_ABS or op == OP_SIGN:
        if kind == c'b':
            if op == OP_ABS:
                raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
            out = A.copy()
        elif kind != c'f':
            out = nd(np.abs(A)) if op == OP_ABS else sign_numpy(A)
        else:
            out = ucall_forward(kop, A)
    else:
        if kind != c'f':
            A = A.astype(DEFAULT_FLOAT)
        out = ucall_forward(kop, A)
    cdef TensorBase res = wrap(out)
    r = record1(op, res, x)
    if r != NULL and op != OP_SIGN:
        if save_output:
            keep_saved(r, 0, out, res)
        else:
            save_value(r, 0, A, x)
    # compile: a C step when eager ran C, or ran numpy's sqrt / reciprocal (correctly rounded
    # in both: the same bits; `number / x` is a reciprocal, see TensorBase.__rtruediv__)
    if CAPTURE is not None and capturing() and (
            A is x._array and (cnp.PyArray_SIZE(A) <= c_kernel_max_size(kop)
                               or kop == TG_SQRT or kop == TG_RECIPROCAL)
            and (A.dtype.num == cnp.NPY_FLOAT32 or A.dtype.num == cnp.NPY_FLOAT64)):
        capture_unary(op, kop, x, A, True, res)
    return res


def abs_(TensorBase input):
    """|input| elementwise (integer dtypes kept; gradient grad * sign(input), 0 at 0)."""
    return math_op(OP_ABS, TG_ABS, input, False)

def sign(TensorBase input):
    """-1, 0 or 1 by the sign of each element (0 for NaN); gradient zero."""
    return math_op(OP_SIGN, TG_SIGN, input, False)

def log1p(TensorBase input):
    """log(1 + input), accurate for small input."""
    return math_op(OP_LOG1P, TG_LOG1P, input, False)

def expm1(TensorBase input):
    """exp(input) - 1, accurate for small input."""
    return math_op(OP_EXPM1, TG_EXPM1, input, True)

def sqrt(TensorBase input):
    """Square root (NaN for negative input; gradient inf at 0)."""
    return math_op(OP_SQRT, TG_SQRT, input, True)

def rsqrt(TensorBase input):
    """1 / sqrt(input)."""
    return math_op(OP_RSQRT, TG_RSQRT, input, True)

def sin(TensorBase input):
    """Sine (radians)."""
    return math_op(OP_SIN, TG_SIN, input, False)

def cos(TensorBase input):
    """Cosine (radians)."""
    return math_op(OP_COS, TG_COS, input, False)

def sigmoid(TensorBase input):
    """1 / (1 + exp(-input)), without overflow."""
    return math_op(OP_SIGMOID, TG_SIGMOID, input, True)

def reciprocal(TensorBase input):
    """1 / input (float32 for integer input)."""
    return math_op(OP_RECIPROCAL, TG_RECIPROCAL, input, True)

def erf(TensorBase input):
    """The error function."""
    return math_op(OP_ERF, TG_ERF, input, False)

def square(TensorBase input):
    """input * input: PyTorch computes it as input ** 2 (PowBackward0; integer dtypes kept)."""
    return binary_op(OP_POW, input, 2)


# -- activations (nn.functional) -------------------------------------------------------------------

cdef object activation_input(TensorBase x, str kernel):
    """The array of an activation's input: floating point only, PyTorch's error otherwise."""
    A = x._array
    if dtype_kind(<cnp.ndarray>A) != c'f':
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(A.dtype)}'")
    return A


cdef int check_activation_inplace(TensorBase x) except -1:
    """inplace=True on a tensor outside any graph (in_graph routed the others): PyTorch's leaf
    rule, then a plain write."""
    check_inplace(x, False)
    fresh(x)
    return 0


cdef inline bint in_graph(TensorBase x) noexcept:
    """Whether an inplace=True activation of x must be recorded (x requires grad, grad mode on)."""
    return x._requires_grad and grad_enabled()


cdef object ACTIVATION_IN_GRAPH = None


cdef object activation_in_graph(object activation, TensorBase x, tuple args):
    """inplace=True on a tensor in a graph, `args` the out-of-place call's (inplace=False among
    them): recorded as PyTorch records its in-place activations, by
    tapegrad/nn/_graph_inplace.py (imported on first use: the plain call never pays for it)."""
    global ACTIVATION_IN_GRAPH
    if ACTIVATION_IN_GRAPH is None:
        from tapegrad.nn._graph_inplace import activation_in_graph as recorder
        ACTIVATION_IN_GRAPH = recorder
    return ACTIVATION_IN_GRAPH(activation, x, args)


cdef object write_inplace(TensorBase x, object out):
    A = x._array
    if not A.flags.writeable:
        # numpy marks every broadcast view read-only; PyTorch writes one that stretches nothing
        # (broadcast_tensors(a, 0-d)[0], fuzz 67100440) and refuses only shared elements
        if overlaps_itself(A):
            raise RuntimeError(overlapping_write_message())
        try:
            A.flags.writeable = True                    # (a view of writable memory)
        except ValueError:
            pass                                        # (read-only memory: refused below)
    try:
        A[...] = out
    except ValueError as e:                             # read-only storage (e.g. from_numpy)
        raise RuntimeError(f"cannot modify this tensor in place: {e}") from None
    bump_version(x)
    return x


cdef object vjp_leaky_relu(Record* r, object g):
    x = <object>r.saved[0]
    out = fast_param(TG_LEAKY_RELU_GRAD, g, x, r.scalar, 0)
    if out is None:
        half = is_half(g)                               # (in float32: see leaky_relu)
        W = widen16(g)
        with IeeeResults():
            out = nd(np.multiply(W, r.scalar))          # PyTorch: x > 0 ? grad : grad * slope
        np.positive(W, out=out, where=x > 0)
        if half:
            out = narrow16(out)
    return out

cdef object vjp_elu(Record* r, object g):
    x = <object>r.saved[0]
    out = fast_param(TG_ELU_GRAD, g, x, r.scalar, 0)
    if out is not None:
        return out
    # PyTorch: x > 0 ? grad : grad*alpha*e^x (its vectorized loop: NaN where x is NaN); float16
    # in float32, rounded once (see elu)
    half = is_half(x)
    g, x = widen16(g), widen16(x)
    out = np.array(g, dtype=g.dtype, copy=True)
    np.multiply(g, np.exp(x) * r.scalar, out=out, where=np.logical_not(x > 0))
    return narrow16(out) if half else out

cdef object vjp_softplus(Record* r, object g):
    x = <object>r.saved[0]
    beta, threshold = <tuple>r.aux
    out = fast_param(TG_SOFTPLUS_GRAD, g, x, beta, threshold)
    if out is not None:
        return out
    if is_half(x):                                      # in float32 (see softplus)
        return narrow16(vjp_softplus_value(widen16(g), widen16(x), beta, threshold))
    return vjp_softplus_value(g, x, beta, threshold)


cdef object vjp_softplus_value(object g, object x, double beta, double threshold):
    z = x * beta
    e = np.exp(z)
    # PyTorch: z > threshold ? grad : grad * e / (e + 1)  (e may overflow where z > threshold)
    out = nd(g * (e / (e + 1)))
    np.positive(g, out=out, where=z > threshold)
    return out

cdef object vjp_silu(Record* r, object g):
    x = <object>r.saved[0]
    if is_half(x):                      # in float32, rounded once (see ucall)
        return narrow16(ew(TG_SILU_GRAD, widen16(g), widen16(x)))
    return ew_g(TG_SILU_GRAD, g, x)                     # C, or numpy for other layouts

cdef object vjp_gelu(Record* r, object g):
    x = <object>r.saved[0]
    if is_half(x):                      # in float32, rounded once (see ucall)
        g, x = widen16(g), widen16(x)
        return narrow16(binary_c(TG_GELU_GRAD, g, x) if r.scalar == 0 else
                        ew(TG_GELU_TANH_GRAD, g, x))
    if r.scalar == 0:
        out = ew_g(TG_GELU_GRAD, g, x)
        return out if out is not None else binary_c(TG_GELU_GRAD, g, x)   # erf: C at every size
    return ew_g(TG_GELU_TANH_GRAD, g, x)


OP_LEAKY_RELU = register_op("LeakyReluBackward0", vjp_leaky_relu)
OP_ELU = register_op("EluBackward0", vjp_elu)
OP_SOFTPLUS = register_op("SoftplusBackward0", vjp_softplus)
OP_SILU = register_op("SiluBackward0", vjp_silu)
OP_GELU = register_op("GeluBackward0", vjp_gelu)


def leaky_relu(TensorBase input, negative_slope=0.01, bint inplace=False):
    """x if x > 0 else negative_slope * x."""
    cdef Record* r
    if inplace and in_graph(input):
        return activation_in_graph(leaky_relu, input, (negative_slope, False))
    A = activation_input(input, "leaky_relu_cpu")
    cdef double slope = number_arg(negative_slope, "leaky_relu", "negative_slope", 2)
    if inplace:
        check_activation_inplace(input)
    out = fast_param(TG_LEAKY_RELU, A, None, slope, 0)
    if out is None:
        # float16 in float32, rounded once, as PyTorch's opmath (a slope of 1e5 is inf in
        # float16, 1e-9 is 0)
        W = widen16(A)
        if -1 <= slope <= 1:                            # cannot overflow: no errstate needed
            out = nd(W * slope)
        else:
            with IeeeResults():
                out = nd(W * slope)
        np.positive(W, out=out, where=W > 0)
        if out.dtype != A.dtype:
            out = narrow16(out)
    if inplace:
        return write_inplace(input, out)
    cdef TensorBase res = wrap(out)
    r = record1(OP_LEAKY_RELU, res, input)
    if r != NULL:
        save_value(r, 0, A, input)
        r.scalar = slope
    return res


def elu(TensorBase input, alpha=1.0, bint inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    cdef Record* r
    if inplace and in_graph(input):
        return activation_in_graph(elu, input, (alpha, False))
    A = activation_input(input, "elu_cpu")
    cdef double a = number_arg(alpha, "elu", "alpha", 2)
    if inplace:
        check_activation_inplace(input)
    out = fast_param(TG_ELU, A, None, a, 0)
    if out is None:
        # float16 in float32, rounded once, as PyTorch's opmath (alpha 1e5 is inf in float16)
        W = widen16(A)
        out = torch_copy_source(W)                      # (PyTorch's layout: see unary_c)
        out = W.copy(order="K") if out is W else out
        neg = W <= 0                                    # expm1 only there: no overflow warnings
        np.expm1(W, out=out, where=neg)
        np.multiply(out, a, out=out, where=neg)
        if out.dtype != A.dtype:
            out = narrow16(out)
    if inplace:
        return write_inplace(input, out)
    cdef TensorBase res = wrap(out)
    r = record1(OP_ELU, res, input)
    if r != NULL:
        save_value(r, 0, A, input)
        r.scalar = a
    return res


def softplus(TensorBase input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    cdef Record* r
    A = activation_input(input, "softplus_cpu")
    cdef double b = number_arg(beta, "softplus", "beta", 0)
    cdef double t = number_arg(threshold, "softplus", "threshold", 0)
    out = fast_param(TG_SOFTPLUS, A, None, b, t)
    if out is None:
        # float16 in float32, rounded once, as PyTorch's (a float16 exp(11.1) is inf)
        W = widen16(A)
        with IeeeResults():
            z = W * b
            out = nd(np.where(z > t, W, np.log1p(np.exp(z)) / b)).astype(A.dtype, copy=False)
    cdef TensorBase res = wrap(out)
    r = record1(OP_SOFTPLUS, res, input)
    if r != NULL:
        save_value(r, 0, A, input)
        keep(&r.aux, (b, t))
    return res


cdef object complex_silu(TensorBase input, bint inplace):
    """silu of a complex tensor, which PyTorch computes (x / (1 + exp(-x))) but does not
    differentiate: an input that would record raises its error."""
    if in_graph(input):
        raise RuntimeError("silu does not support automatic differentiation for outputs with "
                           "complex dtype.")
    A = input._array
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = np.asarray(A / (1 + np.exp(-A)), dtype=A.dtype)     # (a 0-d A gives a scalar)
    if inplace:
        check_activation_inplace(input)
        return write_inplace(input, out)
    return wrap(out)


def silu(TensorBase input, bint inplace=False):
    """x * sigmoid(x) (also called swish)."""
    cdef Record* r
    if input._array.dtype.kind == "c":
        return complex_silu(input, inplace)
    if inplace and in_graph(input):
        return activation_in_graph(silu, input, (False,))
    A = activation_input(input, "silu_cpu")
    if inplace:
        check_activation_inplace(input)
    out = ucall_forward(TG_SILU, A)
    if inplace:
        return write_inplace(input, out)
    cdef TensorBase res = wrap(out)
    r = record1(OP_SILU, res, input)
    if r != NULL:
        save_value(r, 0, A, input)
    return res


def gelu(TensorBase input, *, str approximate="none"):
    """x * Phi(x) (Phi: the standard normal CDF); approximate='tanh' uses PyTorch's tanh formula."""
    cdef Record* r
    if approximate != "none" and approximate != "tanh":
        raise RuntimeError("approximate argument must be either none or tanh.")
    A = activation_input(input, "GeluKernelImpl")
    cdef bint tanh_form = approximate == "tanh"
    out = ucall_forward(TG_GELU_TANH if tanh_form else TG_GELU, A)
    cdef TensorBase res = wrap(out)
    r = record1(OP_GELU, res, input)
    if r != NULL:
        save_value(r, 0, A, input)
        r.scalar = 1 if tanh_form else 0
    return res


def relu_nn(TensorBase input, bint inplace=False):
    """nn.functional.relu: max(x, 0), optionally in place."""
    if not inplace:
        return unary_op(OP_RELU, input)
    if dtype_kind(<cnp.ndarray>input._array) == c'b':
        raise RuntimeError("Boolean inputs not supported for relu")
    if in_graph(input):
        return activation_in_graph(relu_nn, input, (False,))
    check_activation_inplace(input)
    return write_inplace(input, unary_op(OP_RELU, input)._array)


# -- clamp -----------------------------------------------------------------------------------------

cdef object vjp_clamp_scalar(Record* r, object g):
    x = <object>r.saved[0]
    lo, hi = <tuple>r.aux
    # PyTorch: grad where min <= x <= max (NaN x and min > max give 0)
    out = fast_param(TG_CLAMP_GRAD, g, x, -INFINITY if lo is None else lo,
                     INFINITY if hi is None else hi)
    if out is not None:
        return out
    if lo is None:
        m = x <= hi
    elif hi is None:
        m = x >= lo
    else:
        m = np.logical_and(x >= lo, x <= hi)
    return masked(m, g, g.shape, g.dtype)


cdef object vjp_clamp_tensor(Record* r, object g):
    x = <object>r.saved[0]
    lo = <object>r.saved[1] if r.saved[1] != NULL else None
    hi = <object>r.saved[2] if r.saved[2] != NULL else None
    cdef tuple aux = <tuple>r.aux
    gx = glo = ghi = None
    shape, dt = g.shape, g.dtype
    if needs_grad(r, 0):
        if lo is None:
            m = x <= hi
        elif hi is None:
            m = x >= lo
        else:
            m = np.logical_and(x >= lo, x <= hi)
        gx = masked(m, g, shape, dt)
    if lo is not None and needs_grad(r, 1):             # PyTorch's clamp_backward_min_max
        m = np.logical_and(x < lo, lo < hi) if hi is not None else x < lo
        glo = masked(m, g, shape, dt)
    if hi is not None and needs_grad(r, 2):
        m = np.logical_or(x > hi, hi < lo) if lo is not None else x > hi
        ghi = masked(m, g, shape, dt)
    return (fit_grad(gx, aux[0], aux[1]), fit_grad(glo, aux[2], aux[3]),
            fit_grad(ghi, aux[4], aux[5]))


OP_CLAMP = register_op("ClampBackward1", vjp_clamp_scalar)
OP_CLAMP_MIN = register_op("ClampMinBackward0", vjp_clamp_scalar)
OP_CLAMP_MAX = register_op("ClampMaxBackward0", vjp_clamp_scalar)
OP_CLAMP_T = register_op("ClampBackward0", vjp_clamp_tensor)
OP_CLAMP_MIN_T = register_op("ClampMinBackward1", vjp_clamp_tensor)
OP_CLAMP_MAX_T = register_op("ClampMaxBackward1", vjp_clamp_tensor)

cdef enum:
    CLAMP_BOTH = 0
    CLAMP_MIN_ONLY = 1
    CLAMP_MAX_ONLY = 2


cdef object max_nan(object X, object lo):
    """max(X, lo) propagating NaN from either side, X where they tie (PyTorch's clamp and
    maximum: max(-0.0, 0.0) is -0.0; numpy's maximum may return either zero)."""
    r = fast_binary(TG_MAX, X, lo)
    return r if r is not None else nd(np.where(np.logical_and(
        np.logical_not(np.isnan(X)), np.logical_or(np.isnan(lo), np.greater(lo, X))), lo, X))


cdef object min_nan(object X, object hi):
    """min(X, hi) propagating NaN from either side, X where they tie."""
    r = fast_binary(TG_MIN, X, hi)
    return r if r is not None else nd(np.where(np.logical_and(
        np.logical_not(np.isnan(X)), np.logical_or(np.isnan(hi), np.less(hi, X))), hi, X))


cdef tuple clamp_signature(int variant):
    if variant == CLAMP_MIN_ONLY:
        return "clamp_min", " * (Tensor min)\n * (Number min)"
    if variant == CLAMP_MAX_ONLY:
        return "clamp_max", " * (Tensor max)\n * (Number max)"
    return "clamp", (" * (Tensor min = None, Tensor max = None)\n"
                      " * (Number min = None, Number max = None)")


cdef object real_clamp_bound(object bound, TensorBase input, int variant):
    """A complex Number bound as PyTorch's clamp takes it: its real part, for a floating input
    when the imaginary part is 0 (the result keeps input's dtype); PyTorch refuses it for
    clamp_min and clamp_max, and for an integer or bool input (whose result would be complex).
    Any other bound as it is."""
    if not isinstance(bound, (complex, np.complexfloating)):
        return bound
    if variant != CLAMP_BOTH or dtype_kind(<cnp.ndarray>input._array) != c'f':
        raise NotImplementedError("clamp is not supported for complex types")
    if bound.imag != 0:
        raise RuntimeError("value cannot be converted to type double without overflow")
    return float(bound.real)


cdef object clamp_op(TensorBase input, object lo, object hi, int variant):
    """clamp / clamp_min / clamp_max: Number bounds (ClampBackward1 ...) or Tensor bounds
    (ClampBackward0 ..., broadcasting, gradients to the bounds too), as PyTorch's overloads."""
    cdef Record* r
    if dtype_kind(<cnp.ndarray>input._array) == c'c':
        return complex_call("refuse", ("clamp", input))
    for bound, kernel in ((lo, "maximum"), (hi, "minimum")):
        # a complex tensor bound: PyTorch's maximum/minimum kernels have no complex type (a
        # promotion to complex would return a complex clamp of a real input)
        if isinstance(bound, TensorBase) and dtype_kind(<cnp.ndarray>(<TensorBase>bound)._array) == c'c':
            raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for "
                                      f"'{scalar_type_name((<TensorBase>bound)._array.dtype)}'")
    lo2 = number_or_tensor(real_clamp_bound(lo, input, variant))
    hi2 = number_or_tensor(real_clamp_bound(hi, input, variant))
    name, sigs = clamp_signature(variant)
    if (lo2 is NotImplemented or hi2 is NotImplemented
            or (variant == CLAMP_MIN_ONLY and lo2 is None)
            or (variant == CLAMP_MAX_ONLY and hi2 is None)):
        got = []
        if variant != CLAMP_MAX_ONLY:
            got.append(f"min={type_name(lo)}")
        if variant != CLAMP_MIN_ONLY:
            got.append(f"max={type_name(hi)}")
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({', '.join(got)}), but expected one of:\n{sigs}")
    lo, hi = lo2, hi2
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    cdef bint lo_t = isinstance(lo, TensorBase), hi_t = isinstance(hi, TensorBase)
    A = input._array
    if (lo_t or lo is None) and (hi_t or hi is None):
        return clamp_tensor(input, lo, hi, variant)
    # Number overload: zero-dim tensors convert to numbers; other tensors cannot mix with numbers.
    if lo_t:
        if (<TensorBase>lo)._array.ndim != 0:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(min=Tensor, max={type_name(hi)}), but expected one of:\n{sigs}")
        lo = (<TensorBase>lo)._array.item()
    if hi_t:
        if (<TensorBase>hi)._array.ndim != 0:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(min={type_name(lo)}, max=Tensor), but expected one of:\n{sigs}")
        hi = (<TensorBase>hi)._array.item()
    dt = promote_operands((input, lo, hi))
    if dt == NP_BOOL:
        # PyTorch's number-bound kernels have no bool form (its tensor-bound ones do)
        kernel = ("clamp_scalar" if lo is not None and hi is not None else
                  "clamp_min_scalar" if lo is not None else "clamp_max_scalar")
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'")
    # (the bounds converted to dt as every number written into a tensor: uint8's -1 is 255)
    if lo is not None:
        lo = scalar_to_dtype(lo, dt)
    if hi is not None:
        hi = scalar_to_dtype(hi, dt)
    X = A if A.dtype == dt else A.astype(dt)
    out = fast_param(TG_CLAMP, X, None, -INFINITY if lo is None else lo,
                     INFINITY if hi is None else hi)
    if out is None:
        out = X
        if lo is not None:
            out = max_nan(out, lo)
        if hi is not None:
            out = min_nan(out, hi)
    cdef TensorBase res = wrap(out)
    cdef int op = OP_CLAMP_MIN if variant == CLAMP_MIN_ONLY else (
        OP_CLAMP_MAX if variant == CLAMP_MAX_ONLY else OP_CLAMP)
    r = record1(op, res, input)
    if r != NULL:
        save_value(r, 0, X, input)
        keep(&r.aux, (lo, hi))
    return res


cdef object clamp_tensor(TensorBase input, object lo, object hi, int variant):
    cdef Record* r
    A = input._array
    dt = promote_operands((input, lo, hi))
    shape = A.shape
    if lo is not None:
        shape = broadcast_shapes_torch(shape, (<TensorBase>lo)._array.shape)
    if hi is not None:
        shape = broadcast_shapes_torch(shape, (<TensorBase>hi)._array.shape)
    X = operand_value(input, dt)
    L = operand_value(lo, dt) if lo is not None else None
    H = operand_value(hi, dt) if hi is not None else None
    out = X
    if L is not None:
        out = max_nan(out, L)
    if H is not None:
        out = min_nan(out, H)
    out = operand_layout(out, input, lo if lo is not None else hi)
    cdef TensorBase res = wrap(out)
    cdef int op = OP_CLAMP_MIN_T if variant == CLAMP_MIN_ONLY else (
        OP_CLAMP_MAX_T if variant == CLAMP_MAX_ONLY else OP_CLAMP_T)
    r = record_from(op, res, (input, lo, hi))
    if r != NULL:
        save_value(r, 0, X, input)
        if L is not None:
            save_value(r, 1, L, lo)
        if H is not None:
            save_value(r, 2, H, hi)
        keep(&r.aux, (A.shape, A.dtype,
                      (<TensorBase>lo)._array.shape if L is not None else None,
                      (<TensorBase>lo)._array.dtype if L is not None else None,
                      (<TensorBase>hi)._array.shape if H is not None else None,
                      (<TensorBase>hi)._array.dtype if H is not None else None))
    return res


def clamp(TensorBase input, min=None, max=None):
    """Limit each element to [min, max] (Python numbers or broadcasting tensors; either may be
    None).  The gradient passes where min <= input <= max; tensor bounds receive the rest."""
    return clamp_op(input, min, max, CLAMP_BOTH)


def clamp_min(TensorBase input, min):
    """max(input, min) with clamp's gradient rule."""
    return clamp_op(input, min, None, CLAMP_MIN_ONLY)


def clamp_max(TensorBase input, max):
    """min(input, max) with clamp's gradient rule."""
    return clamp_op(input, None, max, CLAMP_MAX_ONLY)


# -- maximum / minimum -----------------------------------------------------------------------------

cdef object vjp_maximum(Record* r, object g):
    A = <object>r.saved[0]
    B = <object>r.saved[1]
    shape, dt = g.shape, g.dtype
    # PyTorch: where(a == b, grad / 2, grad).masked_fill_(a < b, 0) (and b symmetrically)
    # (NaN on either side: neither comparison holds, both inputs get the full gradient)
    tie = A == B
    lt = A < B
    gt = A > B
    cdef bint is_max = r.op == OP_MAXIMUM
    ga = gb = None
    if needs_grad(r, 0):
        ga = masked(np.logical_not(lt if is_max else gt), g, shape, dt)
        np.multiply(g, 0.5, out=ga, where=tie)
    if needs_grad(r, 1):
        gb = masked(np.logical_not(gt if is_max else lt), g, shape, dt)
        np.multiply(g, 0.5, out=gb, where=tie)
    return fit_binary_grads(r, ga, gb)


OP_MAXIMUM = register_op("MaximumBackward0", vjp_maximum)
OP_MINIMUM = register_op("MinimumBackward0", vjp_maximum)


cdef object maximum_op(int op, TensorBase input, object other):
    cdef Record* r
    cdef str name = "maximum" if op == OP_MAXIMUM else "minimum"
    if not isinstance(other, TensorBase):   # (PyTorch's parser speaks before its kernel)
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type_name(other)}")
    if is_complex_operand(input) or is_complex_operand(other):
        return complex_call("refuse", (name, input))
    dt = promote2(input, other)
    A = operand_value(input, dt)
    B = operand_value(other, dt)
    sa, sb = input._array.shape, (<TensorBase>other)._array.shape
    if sa != sb:
        broadcast_shapes_torch(sa, sb)
    out = fast_binary(TG_MAX if op == OP_MAXIMUM else TG_MIN, A, B)
    if out is None:                                     # numpy's maximum/minimum propagate NaN
        out = max_nan(A, B) if op == OP_MAXIMUM else min_nan(A, B)
    out = operand_layout(out, input, other)
    cdef TensorBase res = wrap(out)
    r = record_from(op, res, (input, other))
    if r != NULL:
        save_value(r, 0, A, input)
        save_value(r, 1, B, other)
        oshape = out.shape
        keep(&r.aux, (sa if sa != oshape else None,
                      input._array.dtype if input._array.dtype != dt else None,
                      sb if sb != oshape else None,
                      (<TensorBase>other)._array.dtype
                      if (<TensorBase>other)._array.dtype != dt else None))
    return res


def maximum(TensorBase input, other):
    """Elementwise maximum of two broadcasting tensors (NaN propagates; ties split the gradient)."""
    return maximum_op(OP_MAXIMUM, input, other)


def minimum(TensorBase input, other):
    """Elementwise minimum of two broadcasting tensors (NaN propagates; ties split the gradient)."""
    return maximum_op(OP_MINIMUM, input, other)


# -- where -----------------------------------------------------------------------------------------

cdef object vjp_where(Record* r, object g):
    C = <object>r.saved[0]
    shape, dt = g.shape, g.dtype
    ga = masked(C, g, shape, dt) if needs_grad(r, 0) else None
    gb = masked(np.logical_not(C), g, shape, dt) if needs_grad(r, 1) else None
    return fit_binary_grads(r, ga, gb)


OP_WHERE = register_op("WhereBackward0", vjp_where)


cdef str WHERE_SIGNATURES = (
    " * (Tensor condition)\n"
    " * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)\n"
    " * (Tensor condition, Number self, Tensor other)\n"
    " * (Tensor condition, Tensor input, Number other)\n"
    " * (Tensor condition, Number self, Number other)")


def where(condition, input=None, other=None):
    """input where condition is True, other elsewhere (broadcasting; either may be a Python
    number).  where(condition) alone is nonzero(condition, as_tuple=True)."""
    return where_record(condition, input, other, None)


def piecewise_where(condition, TensorBase input, other, str backward):
    """where(condition, input, other) for a piecewise activation (hardtanh, threshold, hardshrink,
    ...) that PyTorch differentiates with a backward formula reading the input, e.g.
    hardtanh_backward(grad, x): under create_graph its gradient then requires grad (zero second
    derivative) where where's own gradient, a constant mask of the adjoint, would not.  The
    record is where's; `backward` names the formula its graph VJP records the gradient through
    ("hardtanh", "threshold", "hardshrink", "softshrink", or "hardsigmoid", whose formula PyTorch
    does not differentiate)."""
    return where_record(condition, input, other, backward)


cdef object where_record(object condition, object input, object other, object backward):
    cdef Record* r
    x = complex_or_number_or_tensor(input)
    y = complex_or_number_or_tensor(other)
    if (not isinstance(condition, TensorBase) or x is NotImplemented or y is NotImplemented
            or ((x is None) != (y is None))):
        got = ", ".join(type_name(v) for v in (condition, input, other)[:1 if input is None and
                                                                            other is None else 3])
        raise TypeError(f"where() received an invalid combination of arguments - got ({got}), but "
                        f"expected one of:\n{WHERE_SIGNATURES}")
    C = (<TensorBase>condition)._array
    if x is None:
        # where(condition) is nonzero(condition, as_tuple=True): any dtype, no uint8 warning (a
        # 0-dim condition counts as one element, as nonzero reads it)
        return tuple(wrap(nd(i.astype(NP_INT64))) for i in np.nonzero(C.reshape(-1) if C.ndim == 0
                                                                       else C))
    if C.dtype.kind != "b":
        if C.dtype.num == cnp.NPY_UINT8:
            warn_once("where received a uint8 condition tensor. This behavior is deprecated "
                      "and will be removed in a future version of PyTorch. Use a boolean "
                      "condition instead.", "aten/src/ATen/native/TensorCompare.cpp:621")
            C = C.astype(NP_BOOL)
        else:
            raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                               f"with dtype {scalar_type_name(C.dtype)}")
    dt = promote_operands((x, y))
    sx, sy = operand_shape(x), operand_shape(y)
    shape = broadcast_shapes_torch(C.shape, sx)
    shape = broadcast_shapes_torch(shape, sy)
    # (a number is converted as x[key] = number: beyond float16's range it is inf, as PyTorch)
    X = operand_value(x, dt) if isinstance(x, TensorBase) else np.asarray(
        scalar_to_dtype(x, dt, True), dtype=dt)
    Y = operand_value(y, dt) if isinstance(y, TensorBase) else np.asarray(
        scalar_to_dtype(y, dt, True), dtype=dt)
    out = nd(np.where(C, X, Y))
    if out.dtype != dt:
        out = out.astype(dt)
    out = operand_layout(out, condition, x if isinstance(x, TensorBase) else y)
    cdef TensorBase res = wrap(out)
    r = record_from(OP_WHERE, res, (x, y))
    if r != NULL:
        save_value(r, 0, C, condition)
        keep(&r.aux, (sx if sx != shape else None,
                      (<TensorBase>x)._array.dtype
                      if isinstance(x, TensorBase) and (<TensorBase>x)._array.dtype != dt else None,
                      sy if sy != shape else None,
                      (<TensorBase>y)._array.dtype
                      if isinstance(y, TensorBase) and (<TensorBase>y)._array.dtype != dt
                      else None, backward))
    return res


def where_method(TensorBase self, condition, other):
    """Tensor.where(condition, other): self where condition is True, other elsewhere (the
    parameters named as PyTorch's, which a call may give by keyword)."""
    return where(condition, self, other)


# -- comparisons and logical ops (bool results, never recorded) ------------------------------------

cdef enum:
    CMP_EQ = 0
    CMP_NE = 1
    CMP_LT = 2
    CMP_LE = 3
    CMP_GT = 4
    CMP_GE = 5
    BIT_AND = 6
    BIT_OR = 7
    BIT_XOR = 8
    LOGIC_AND = 9
    LOGIC_OR = 10
    LOGIC_XOR = 11

cdef tuple CMP_NAMES = ("eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
                        "bitwise_xor", "logical_and", "logical_or", "logical_xor")
# Looked up in a loop, not written as a 12-item tuple: a tuple display holds each item in its
# own temporary of the module's load function (see the registration at the end of this file).
cdef tuple CMP_UFUNCS = tuple(getattr(np, name) for name in (
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and",
    "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"))


cdef object elementwise_nograd(int which, object a, object b, bint dunder):
    """A comparison, bitwise or logical op of two operands (a tensor and a tensor or Python
    number), computed in their promoted dtype.  Dunders return NotImplemented for other types
    (so `t == None` is False and `t < None` a TypeError, as in PyTorch)."""
    cdef bint complex_op = is_complex_operand(a) or is_complex_operand(b)
    a2 = a if complex_op and is_complex_operand(a) else as_operand(a)
    b2 = b if complex_op and is_complex_operand(b) else as_operand(b)
    if a2 is NotImplemented or b2 is NotImplemented or (which >= LOGIC_AND and not (
            isinstance(a2, TensorBase) and isinstance(b2, TensorBase))):
        if dunder:
            return NotImplemented
        name = CMP_NAMES[which]
        if which >= LOGIC_AND:           # PyTorch's logical ops have no Number overload
            raise bad_operand_error(name, a, b)
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type_name(a)}, {type_name(b)}), but expected one of:\n"
                        f" * (Tensor input, Tensor other)\n * (Tensor input, Number other)")
    sa, sb = operand_shape(a2), operand_shape(b2)
    if sa != sb and isinstance(a2, TensorBase) and isinstance(b2, TensorBase):
        broadcast_shapes_torch(sa, sb)                   # PyTorch's message, complex included
    if complex_op:
        return complex_call("compare", (CMP_NAMES[which], a, b))
    dt = promote2(a2, b2) if isinstance(a2, TensorBase) else promote2(b2, a2)
    if BIT_AND <= which <= BIT_XOR and dt.kind == "f":
        raise NotImplementedError(f"\"{CMP_NAMES[which]}_cpu\" not implemented for "
                                  f"'{scalar_type_name(dt)}'")
    # (an operator's Python int is PyTorch's wrapped number: cast to dt unchecked, so uint8's
    # 300 is 44 and `uint8 < 300` can be False)
    if not isinstance(a2, TensorBase):
        a2 = wrapped_int(a2, dt)
    if not isinstance(b2, TensorBase):
        b2 = wrapped_int(b2, dt)
    A = operand_value(a2, dt)
    B = operand_value(b2, dt)
    with IeeeResults():             # (float16 < 1e9: numpy's cast of the number overflows)
        return wrap(operand_layout(nd((<object>CMP_UFUNCS[which])(A, B)), a2, b2))


def eq(TensorBase input, other):
    """input == other elementwise (bool tensor; other a tensor or number)."""
    return elementwise_nograd(CMP_EQ, input, other, False)

def ne(TensorBase input, other):
    """input != other elementwise."""
    return elementwise_nograd(CMP_NE, input, other, False)

def lt(TensorBase input, other):
    """input < other elementwise."""
    return elementwise_nograd(CMP_LT, input, other, False)

def le(TensorBase input, other):
    """input <= other elementwise."""
    return elementwise_nograd(CMP_LE, input, other, False)

def gt(TensorBase input, other):
    """input > other elementwise."""
    return elementwise_nograd(CMP_GT, input, other, False)

def ge(TensorBase input, other):
    """input >= other elementwise."""
    return elementwise_nograd(CMP_GE, input, other, False)

cdef tuple bitwise_operands(str name, object input, object other):
    """(input, other) for bitwise_and/or/xor, which alone among the binary ops have PyTorch's
    (Number self, Tensor other) overload: a Python number first is the same op with the operands
    swapped (the three commute; the number is typed as the second operand would be).  Anything
    else first is refused as PyTorch's parser does."""
    if isinstance(input, TensorBase):
        return input, other
    if isinstance(other, TensorBase) and isinstance(input, (bool, int, float, complex)):
        return other, input
    raise TypeError(f"{name}() received an invalid combination of arguments - got "
                    f"({type_name(input)}, {type_name(other)}), but expected one of:\n"
                    f" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                    f" * (Number self, Tensor other)\n"
                    f" * (Tensor input, Number other, *, Tensor out = None)")

def bitwise_and(input, other):
    """Bitwise AND of integer/bool tensors (logical AND for bool)."""
    input, other = bitwise_operands("bitwise_and", input, other)
    return elementwise_nograd(BIT_AND, input, other, False)

def bitwise_or(input, other):
    """Bitwise OR of integer/bool tensors."""
    input, other = bitwise_operands("bitwise_or", input, other)
    return elementwise_nograd(BIT_OR, input, other, False)

def bitwise_xor(input, other):
    """Bitwise XOR of integer/bool tensors."""
    input, other = bitwise_operands("bitwise_xor", input, other)
    return elementwise_nograd(BIT_XOR, input, other, False)

def logical_and(TensorBase input, other):
    """Elementwise `input and other` of any dtypes (nonzero is True); bool tensor."""
    return elementwise_nograd(LOGIC_AND, input, other, False)

def logical_or(TensorBase input, other):
    """Elementwise `input or other`; bool tensor."""
    return elementwise_nograd(LOGIC_OR, input, other, False)

def logical_xor(TensorBase input, other):
    """Elementwise `bool(input) != bool(other)`; bool tensor."""
    return elementwise_nograd(LOGIC_XOR, input, other, False)


cdef inline object operator_nograd(int which, object a, object b):
    """elementwise_nograd of a Tensor operator (==, <, & ...): one profiler event, named as
    PyTorch's op, while a profiler is active (profiling.pxi)."""
    if not PROFILING:
        return elementwise_nograd(which, a, b, True)
    token = profiler_open(CMP_NAMES[which], (a, b))
    try:
        return elementwise_nograd(which, a, b, True)
    finally:
        profiler_close(token)


def tensor_eq(self, other):
    if cnp.PyArray_Check(other):
        # PyTorch's __eq__ alone of the operators takes an ndarray (as_operand says why the
        # others leave it to numpy): as torch.from_numpy(other), compared by PyTorch's rules (a
        # 0-d array as a 0-d tensor); a dtype no tensor has gives NotImplemented.
        try:
            other = tensor_from_numpy(other)
        except TypeError:
            return NotImplemented
    return operator_nograd(CMP_EQ, self, other)

def tensor_ne(self, other):
    return operator_nograd(CMP_NE, self, other)

def tensor_lt(self, other):
    return operator_nograd(CMP_LT, self, other)

def tensor_le(self, other):
    return operator_nograd(CMP_LE, self, other)

def tensor_gt(self, other):
    return operator_nograd(CMP_GT, self, other)

def tensor_ge(self, other):
    return operator_nograd(CMP_GE, self, other)

def tensor_and(self, other):
    return operator_nograd(BIT_AND, self, other)

def tensor_rand(self, other):
    return operator_nograd(BIT_AND, other, self)

def tensor_or(self, other):
    return operator_nograd(BIT_OR, self, other)

def tensor_ror(self, other):
    return operator_nograd(BIT_OR, other, self)

def tensor_xor(self, other):
    return operator_nograd(BIT_XOR, self, other)

def tensor_rxor(self, other):
    return operator_nograd(BIT_XOR, other, self)


def logical_not(TensorBase input):
    """Elementwise `not input` (nonzero is True); bool tensor."""
    return wrap(nd(np.logical_not(input._array)))


def bitwise_not(TensorBase input):
    """~input for integer tensors, logical not for bool tensors."""
    A = input._array
    if A.dtype.kind in "fc":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{scalar_type_name(A.dtype)}'")
    return wrap(nd(np.invert(A)))                       # np.invert of bool is logical not


def tensor_invert(TensorBase self):
    if self._array.dtype.kind in "fc":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)


cdef object float_test(TensorBase input, object ufunc, bint non_float_value,
                       str complex_refusal=None):
    """ufunc's answer for float and complex values (a complex value is NaN / infinite when
    either part is: numpy's and PyTorch's rule); integers and bools are finite and not NaN.
    complex_refusal: the name of a test PyTorch refuses for complex input (isposinf, isneginf)."""
    A = input._array
    if A.dtype.kind == "c" and complex_refusal is not None:
        raise RuntimeError(f"{complex_refusal} does not support complex inputs.")
    if A.dtype.kind in "fc":
        return wrap(nd(ufunc(A)))
    return wrap(np.full(A.shape, non_float_value, dtype=NP_BOOL))


def isnan(TensorBase input):
    """True where input is NaN."""
    return float_test(input, np.isnan, False)

def isinf(TensorBase input):
    """True where input is +inf or -inf."""
    return float_test(input, np.isinf, False)

def isfinite(TensorBase input):
    """True where input is neither NaN nor infinite."""
    return float_test(input, np.isfinite, True)

def isposinf(TensorBase input):
    """True where input is +inf."""
    return float_test(input, np.isposinf, False, "isposinf")

def isneginf(TensorBase input):
    """True where input is -inf."""
    return float_test(input, np.isneginf, False, "isneginf")


cdef object any_all(TensorBase input, object dim, bint keepdim, bint is_any):
    A = input._array
    axes = normalize_dims(dim, A.ndim, True, False)       # (`int dim` or `int[]? dim`)
    out = nd(np.any(A, axis=axes, keepdims=keepdim) if is_any
             else np.all(A, axis=axes, keepdims=keepdim))
    if A.dtype.num == cnp.NPY_UINT8:                    # PyTorch keeps uint8 for any/all
        out = out.astype(np.uint8)
    return wrap(contiguous_result(out))                 # PyTorch's layout, not the input's


def any_(TensorBase input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Whether any element (over `dim`, an int or tuple, if given) is nonzero; bool tensor."""
    return any_all(input, dim_alias("any", dim, axis), keepdim_alias("any", keepdim, keepdims),
                   True)


def all_(TensorBase input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Whether all elements (over `dim`, an int or tuple, if given) are nonzero; bool tensor."""
    return any_all(input, dim_alias("all", dim, axis), keepdim_alias("all", keepdim, keepdims),
                   False)


# -- dtype conversions -----------------------------------------------------------------------------

cdef object vjp_to_copy(Record* r, object g):
    if dtype_kind(<cnp.ndarray>g) == c'c' and (<object>r.aux).kind != "c":
        return g.real.astype(<object>r.aux)             # a real input: the real part
    return g.astype(<object>r.aux)                      # back to the input's dtype


OP_TO_COPY = register_op("ToCopyBackward0", vjp_to_copy)


cdef object convert(TensorBase x, object np_dt, bint copy):
    """x in dtype np_dt: x itself when it already has it (unless copy), else a converted copy;
    float -> float conversions are differentiable (ToCopyBackward0)."""
    cdef Record* r
    A = x._array
    if A.dtype == np_dt and not copy:
        return x
    if dtype_kind(<cnp.ndarray>A) == c'c':
        A = complex_cast_to(A, np_dt.kind)
    with IeeeResults():                                 # overflow to inf, NaN to int: as PyTorch
        out = torch_copy_source(A).astype(np_dt)      # (PyTorch's layout: see torch_copy_source)
    cdef TensorBase res = wrap(out)
    if (np_dt.kind == "f" or np_dt.kind == "c") and (A.dtype.kind == "f" or
                                                     A.dtype.kind == "c"):
        r = record1(OP_TO_COPY, res, x)
        if r != NULL:
            keep(&r.aux, x._array.dtype)
    return res


cdef object dtype_arg(object d):
    """The numpy dtype of a dtype argument (tapegrad dtype, Python float/int/bool/complex as
    PyTorch maps them), or None when `d` is not one (a numpy dtype is not, as in PyTorch)."""
    return numpy_dtype_of(d) if is_dtype_arg(d) else None


cdef tuple KNOWN_DEVICES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                            "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta",
                            "hpu", "mtia", "privateuseone")


cdef bint is_device(object d):
    return isinstance(d, str) or (not isinstance(d, (bool, TensorBase)) and (
        isinstance(d, int) or isinstance(getattr(d, "type", None), str)))


cdef int check_device(object d) except -1:
    """Accept the CPU device (a string such as "cpu" / "cpu:0", or an object whose .type is
    "cpu"); anything else raises as PyTorch does on a machine without accelerators."""
    if d is None:
        return 0
    if isinstance(d, int):
        raise RuntimeError("Cannot access accelerator device when none is available.")
    s = d if isinstance(d, str) else d.type
    base = s.split(":")[0]
    if base == "cpu":
        return 0
    if base == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled (tapegrad runs on the CPU only)")
    if base in KNOWN_DEVICES:
        raise RuntimeError(f"tapegrad runs on the CPU only; device '{s}' is not available")
    raise RuntimeError(f"Expected one of {', '.join(KNOWN_DEVICES)} device type at start of device "
                       f"string: {s}")


def to(TensorBase self, *args, **kwargs):
    """Tensor.to(dtype) / to(device, dtype) / to(other): a tensor of that dtype (self when it
    already has it, unless copy=True).  Devices other than the CPU are not available."""
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    device = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    cdef list rest = list(args)
    if rest:
        a0 = rest.pop(0)
        if isinstance(a0, TensorBase):
            dt = (<TensorBase>a0)._array.dtype
        elif dtype_arg(a0) is not None:
            dt = a0
        elif is_device(a0):
            device = a0
            if rest and (dtype_arg(rest[0]) is not None or rest[0] is None):
                dt = rest.pop(0)
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type_name(a0)}), but expected one of:\n"
                            " * (torch.device device = None, torch.dtype dtype = None, "
                            "bool non_blocking = False, bool copy = False)\n"
                            " * (torch.dtype dtype, bool non_blocking = False, bool copy = False)\n"
                            " * (Tensor tensor, bool non_blocking = False, bool copy = False)")
        if len(rest) > 2:
            raise TypeError(f"to() takes at most 4 positional arguments ({len(args)} given)")
        if len(rest) == 2:
            copy = bool(rest[1])
    if device is not None and not is_device(device):
        raise TypeError(f"to(): argument 'device' must be torch.device, not "
                        f"{type_name(device)}")
    check_device(device)
    if dt is None:
        return convert(self, self._array.dtype, copy)
    np_dt = dtype_arg(dt)
    if np_dt is None:
        raise TypeError(f"to(): argument 'dtype' must be torch.dtype, not {type_name(dt)}")
    return convert(self, np_dt, copy)


cdef dict TENSOR_TYPE_NAMES = {
    "float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
    "int64": "torch.LongTensor", "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
    "int8": "torch.CharTensor", "uint8": "torch.ByteTensor", "bool": "torch.BoolTensor",
    "uint16": "torch.UInt16Tensor", "uint32": "torch.UInt32Tensor",
    "uint64": "torch.UInt64Tensor", "complex64": "torch.ComplexFloatTensor",
    "complex128": "torch.ComplexDoubleTensor"}


def type_(TensorBase self, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(): the type string ('torch.FloatTensor'); Tensor.type(t): conversion to dtype or
    type string t (self when it already has it)."""
    if dtype is None:
        return TENSOR_TYPE_NAMES[self._array.dtype.name]
    if isinstance(dtype, str):
        for name, s in TENSOR_TYPE_NAMES.items():
            if s == dtype:
                return convert(self, np.dtype(name), False)
        raise ValueError(f"invalid type: '{dtype}'")
    if not (isinstance(dtype, type) or is_dtype_arg(dtype)):
        raise TypeError("dtype must be a type, str, or dtype object")
    if not isinstance(dtype, type):
        return convert(self, dtype_arg(dtype), False)
    # PyTorch names the type by its tp_name: a class defined in Python by its bare name, a C type
    # by its dotted name
    module = dtype.__module__
    heap = dtype.__flags__ & (1 << 9)           # Py_TPFLAGS_HEAPTYPE
    name = dtype.__name__ if heap or module == "builtins" else module + "." + dtype.__qualname__
    raise ValueError(f"invalid type: '{name}'")


def type_as(TensorBase self, other):
    """self converted to other's dtype (self when they match)."""
    if not isinstance(other, TensorBase):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not "
                        f"{type_name(other)}")
    return convert(self, (<TensorBase>other)._array.dtype, False)


cdef object shortcut(TensorBase self, object np_dt, object memory_format):
    """self.float() and its siblings: convert's (layout kept), or to()'s for a memory_format
    other than preserve_format (x.byte(memory_format=torch.contiguous_format) lays it out)."""
    if memory_format is not None and getattr(memory_format, "_name", None) != "preserve_format":
        return self.to(dtype_of_array(np.empty(0, np_dt)), memory_format=memory_format)
    return convert(self, np_dt, False)


def to_float(TensorBase self, memory_format=None):
    """self as float32 (self if it already is)."""
    return shortcut(self, NP_FLOAT32, memory_format)

def to_double(TensorBase self, memory_format=None):
    """self as float64 (self if it already is)."""
    return shortcut(self, np.dtype(np.float64), memory_format)

def to_half(TensorBase self, memory_format=None):
    """self as float16 (self if it already is)."""
    return shortcut(self, np.dtype(np.float16), memory_format)

def to_long(TensorBase self, memory_format=None):
    """self as int64 (self if it already is); not differentiable."""
    return shortcut(self, NP_INT64, memory_format)

def to_int(TensorBase self, memory_format=None):
    """self as int32 (self if it already is); not differentiable."""
    return shortcut(self, np.dtype(np.int32), memory_format)

def to_short(TensorBase self, memory_format=None):
    """self as int16 (self if it already is); not differentiable."""
    return shortcut(self, np.dtype(np.int16), memory_format)

def to_char(TensorBase self, memory_format=None):
    """self as int8 (self if it already is); not differentiable."""
    return shortcut(self, np.dtype(np.int8), memory_format)

def to_byte(TensorBase self, memory_format=None):
    """self as uint8 (self if it already is); not differentiable."""
    return shortcut(self, np.dtype(np.uint8), memory_format)

def to_bool(TensorBase self, memory_format=None):
    """self as bool (self if it already is); not differentiable."""
    return shortcut(self, NP_BOOL, memory_format)


# -- registration ----------------------------------------------------------------------------------

# Module-level registration is written with dict literals, not keyword calls or tuples of pairs:
# Cython holds every argument of a call (and every pair of a tuple) in a C temporary of the
# module's load function, and GCC then stores each temporary at each of that function's several
# hundred error exits.  A 30-argument call made this module's load function 167 KB (a third of
# the module); a dict literal is built one item at a time, with two temporaries.

# Functions whose Python name would shadow a builtin inside this module are defined with a suffix
# and take their public name here (for repr and help()).
for _name, _fn in {"abs": abs_, "any": any_, "all": all_, "type": type_, "relu": relu_nn,
                   "where": where_method, "float": to_float, "double": to_double,
                   "half": to_half, "long": to_long, "int": to_int, "short": to_short,
                   "char": to_char, "byte": to_byte, "bool": to_bool}.items():
    _fn.__name__ = _name
    _fn.__qualname__ = _name
_TENSOR_DUNDERS = {
    "__eq__": tensor_eq, "__ne__": tensor_ne, "__lt__": tensor_lt, "__le__": tensor_le,
    "__gt__": tensor_gt, "__ge__": tensor_ge, "__and__": tensor_and, "__rand__": tensor_rand,
    "__or__": tensor_or, "__ror__": tensor_ror, "__xor__": tensor_xor, "__rxor__": tensor_rxor,
    "__invert__": tensor_invert}
for _name, _fn in _TENSOR_DUNDERS.items():
    _fn.__name__ = _name
    _fn.__qualname__ = "Tensor." + _name

_UNARY_FUNCTIONS = {
    "abs": abs_, "absolute": abs_, "sign": sign, "log1p": log1p, "expm1": expm1, "sqrt": sqrt,
    "rsqrt": rsqrt, "sin": sin, "cos": cos, "sigmoid": sigmoid, "reciprocal": reciprocal,
    "erf": erf, "square": square,
    "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "maximum": maximum, "minimum": minimum,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "not_equal": ne, "less": lt,
    "less_equal": le, "greater": gt, "greater_equal": ge, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "isposinf": isposinf, "isneginf": isneginf, "any": any_, "all": all_,
    "logical_not": logical_not, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "bitwise_not": bitwise_not, "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor}

TORCH_FUNCTIONS.update(_UNARY_FUNCTIONS)
TORCH_FUNCTIONS["where"] = where
TENSOR_METHODS.update(_UNARY_FUNCTIONS)
TENSOR_METHODS.update(_TENSOR_DUNDERS)
TENSOR_METHODS.update({
    "where": where_method, "to": to, "type": type_, "type_as": type_as, "float": to_float,
    "double": to_double, "half": to_half, "long": to_long, "int": to_int, "short": to_short,
    "char": to_char, "byte": to_byte, "bool": to_bool})
NN_FUNCTIONS.update({"sigmoid": sigmoid, "tanh": tanh, "relu": relu_nn, "leaky_relu": leaky_relu,
                     "elu": elu, "softplus": softplus, "silu": silu, "gelu": gelu})
