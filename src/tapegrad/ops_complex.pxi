# ---------------------------------------------------------------------------------------------
# Complex elementwise ops as compiled records: forward (numpy), VJP and registration side by side.
# The graph VJPs (create_graph) sit in graph_vjp.pxi and share the derivative formulas here.
#
# Gradients follow PyTorch's convention: for a real loss L and z = x + iy, z.grad = dL/dx +
# i dL/dy.  A holomorphic f receiving the output gradient g gives its input g * conj(f'(z)); a
# real input of a complex op receives the real part of that (fit_grad).  The real ops' compiled
# VJPs multiply without conjugating, so complex values get records of their own (registered under
# PyTorch's names) and complex_hook.pxi's guard lets only these and the linear ops record them.
# The ops not here (pow, sgn, angle, real, imag, ...) stay tapegrad/_complex.py's Function records.
# ---------------------------------------------------------------------------------------------


cdef object conj_of(object x):
    """conj(x) of an array or a number; a real one passes unchanged.  Numbers include numpy's
    complex scalars, which arithmetic on 0-d arrays returns (a / b / b in the division's VJP):
    np.complex64 is not a Python complex, and passing it unconjugated gave 0-d complex64
    divisors a silently wrong gradient (fuzz 58000093)."""
    if cnp.PyArray_Check(x):
        if dtype_kind(<cnp.ndarray>x) == c'c':
            return np.conjugate(x)
        return x
    if isinstance(x, (complex, np.complexfloating)):
        return x.conjugate()
    return x


# -- binary ops ----------------------------------------------------------------------------------
# add and sub record the real ops' OP_ADD / OP_SUB: their VJPs are linear with real coefficients.

cdef object vjp_complex_mul(Record* r, object g):
    # d(ab)/da = b, d(ab)/db = a
    a = saved_or_none(r, 0)
    b = saved_or_none(r, 1)
    with IeeeResults():
        return fit_binary_grads(r, nd(g * conj_of(b)) if r.inp[0] >= 0 else None,
                                nd(g * conj_of(a)) if r.inp[1] >= 0 else None)

cdef object vjp_complex_div(Record* r, object g):
    # PyTorch's formulas: grad / conj(b) and -grad * conj(a / b / b)
    a = saved_or_none(r, 0)
    b = <object>r.saved[1]
    with IeeeResults():
        return fit_binary_grads(r, nd(g / conj_of(b)) if r.inp[0] >= 0 else None,
                                nd(-g * conj_of(a / b / b)) if r.inp[1] >= 0 else None)


cdef inline object saved_or_none(Record* r, int j):
    return <object>r.saved[j] if r.saved[j] != NULL else None


OP_COMPLEX_MUL = register_op("MulBackward0", vjp_complex_mul)
OP_COMPLEX_DIV = register_op("DivBackward0", vjp_complex_div)


cdef object complex_number_operand(object x):
    """A non-tensor operand of a complex op: Python numbers stay (numpy's are made Python ones),
    arrays become tensors; NotImplemented for anything else."""
    if PyObject_TypeCheck_numpy(x, &PyComplexFloatingArrType_Type):
        return complex(x)
    if isinstance(x, complex):
        return x
    return as_operand(x)


cdef object complex_binary(int op, object a, object b):
    """Forward and record of a + b, a - b, a * b or a / b where an operand is complex (a complex
    tensor or a complex number); pow stays _complex.py's."""
    cdef Py_ssize_t inp[2]
    cdef Record* r
    if op != OP_ADD and op != OP_SUB and op != OP_MUL and op != OP_DIV:
        return complex_call(BINARY_NAMES[op], (a, b))
    a = complex_number_operand(a)
    b = complex_number_operand(b)
    if a is NotImplemented or b is NotImplemented:
        return NotImplemented
    cdef bint a_tensor = isinstance(a, TensorBase), b_tensor = isinstance(b, TensorBase)
    cdef bint promote = True
    if a_tensor and b_tensor:
        A = (<TensorBase>a)._array
        B = (<TensorBase>b)._array
        promote = cnp.PyArray_TYPE(A) != cnp.PyArray_TYPE(B)
        if not same_shape(<cnp.ndarray>A, <cnp.ndarray>B):
            broadcast_shapes_torch(A.shape, B.shape)     # PyTorch's message on a mismatch
    if promote:
        dt = result_dtype(a, b)
        A = operand_value(a, dt)
        B = operand_value(b, dt)
    with IeeeResults():
        out = nd(binary_forward(op, A, B))
    if a_tensor and b_tensor:           # (numpy's layout of two layouts is row-major; fuzz 60673519)
        out = operands_layout(out, <TensorBase>a, <TensorBase>b)
    cdef TensorBase res = wrap(out)
    if CAPTURE is not None and capturing():             # compile: the operator runs again
        capture_binary(kernel_of(op), a, b, True, False, res)
    if not grad_enabled():
        return res
    begin_record(2)
    inp[0] = node_for_input(<TensorBase>a) if a_tensor else -1
    inp[1] = node_for_input(<TensorBase>b) if b_tensor else -1
    if not wants_record(inp, 2):
        return res
    # The VJPs read each operand in its own dtype (numpy promotes exactly), not the promoted
    # copy: a create_graph backward revives a dead operand's tensor on the saved array, which
    # must keep that operand's dtype.
    if op == OP_MUL:
        r = record_op(OP_COMPLEX_MUL, res, 2, inp)
        if inp[1] >= 0:
            save_value(r, 0, own_value(a), a)
        if inp[0] >= 0:
            save_value(r, 1, own_value(b), b)
    elif op == OP_DIV:
        r = record_op(OP_COMPLEX_DIV, res, 2, inp)
        if inp[1] >= 0:
            save_value(r, 0, own_value(a), a)
        save_value(r, 1, own_value(b), b)
    else:
        r = record_op(op, res, 2, inp)
    keep_fit_aux(r, a, b, out)
    return res


cdef inline object own_value(object x):
    """A tensor operand's array, a number itself."""
    return (<TensorBase>x)._array if isinstance(x, TensorBase) else x


cdef int keep_fit_aux(Record* r, object a, object b, object out) except -1:
    """What a binary op's VJP needs to sum each gradient back to its input's shape and cast it
    to its input's dtype (fit_binary_grads), when an input differs from the output."""
    out_shape = out.shape
    shape_a = operand_shape(a)
    shape_b = operand_shape(b)
    da = (<TensorBase>a)._array.dtype if isinstance(a, TensorBase) else None
    db = (<TensorBase>b)._array.dtype if isinstance(b, TensorBase) else None
    if (shape_a != out_shape or shape_b != out_shape
            or (da is not None and da != out.dtype) or (db is not None and db != out.dtype)):
        keep(&r.aux, (shape_a if shape_a != out_shape else None, da,
                      shape_b if shape_b != out_shape else None, db))
    return 0


# -- holomorphic one-input functions -------------------------------------------------------------
# Each: numpy's function, whether the derivative reads the output (else the input), and the
# derivative f'(z) (holomorphic_factor, in arrays for the VJP and in tensors for the graph VJP:
# `m` is numpy or the tapegrad module).  The derivatives are written as PyTorch writes them
# (same branch cuts), and where PyTorch divides the gradient by conj(w) (log: grad / conj(z))
# the factor is w with `divides` set: at a pole the complex division by zero gives inf+infj, as
# PyTorch's does, where multiplying by conj(1 / z) gave nan+nanj.

cdef object sigmoid_numpy(object z):
    return 1 / (1 + np.exp(-z))

cdef object rsqrt_numpy(object z):
    return 1 / np.sqrt(z)

cdef object log1p_numpy(object z):
    """log(1 + z) accurate near 0, as PyTorch's: numpy's complex log1p is log(hypot(1 + x, y))
    and keeps no digits of a small z (log1p(1e-5) in complex64 was 1.0014e-05, of 4e-09 zero).
    Below |z| = 0.5 the real part is log1p(x (2 + x) + y^2) / 2 (exactly x where that sum is
    0: log1p(-0.0) is -0.0); the imaginary part is atan2(y, 1 + x)."""
    x, y = z.real, z.imag
    r = x * (2 + x) + y * y
    out = np.empty_like(z)
    out.real = np.where(np.hypot(x, y) < 0.5, np.where(r == 0, x, 0.5 * np.log1p(r)),
                        np.log(np.hypot(x + 1, y)))
    out.imag = np.arctan2(y, x + 1)
    return out

cdef object reciprocal_numpy(object z):
    # a complex division, as PyTorch's 1 / z: np.reciprocal gives nan+nanj at 0 (PyTorch inf+nanj)
    return 1 / z


cdef tuple holomorphic_factor(int op, object z, object out, object m):
    """(w, divides) of the holomorphic op `op`, from its input z or its output out (arrays or
    tensors): its VJP is g / conj(w) when `divides`, else g * conj(w) (w = f'(z))."""
    if op == OP_COMPLEX_EXP:
        return out, False
    if op == OP_COMPLEX_LOG:
        return z, True
    if op == OP_COMPLEX_SQRT:
        return 2 * out, True
    if op == OP_COMPLEX_RSQRT:
        return -0.5 * out * out * out, False
    if op == OP_COMPLEX_RECIPROCAL:
        return -out * out, False
    if op == OP_COMPLEX_SIN:
        return m.cos(z), False
    if op == OP_COMPLEX_COS:
        return -m.sin(z), False
    if op == OP_COMPLEX_TANH:
        return 1 - out * out, False
    if op == OP_COMPLEX_SIGMOID:
        return out * (1 - out), False
    if op == OP_COMPLEX_LOG1P:
        return z + 1, True
    if op == OP_COMPLEX_EXPM1:
        return out + 1, False
    if op == OP_COMPLEX_LOG10:
        return z * LN10_C, True
    if op == OP_COMPLEX_LOG2:
        return z * LN2_C, True
    if op == OP_COMPLEX_SINH:
        return m.cosh(z), False
    if op == OP_COMPLEX_COSH:
        return m.sinh(z), False
    if op == OP_COMPLEX_ASIN:
        return (1 - z * z) ** -0.5, False
    if op == OP_COMPLEX_ACOS:
        return -(1 - z * z) ** -0.5, False
    if op == OP_COMPLEX_ATAN:
        return z * z + 1, True
    if op == OP_COMPLEX_EXP2:
        return out * LN2_C, False
    if op == OP_COMPLEX_TAN:
        return 1 + out * out, False
    if op == OP_COMPLEX_ASINH:
        return (z * z + 1) ** -0.5, False
    if op == OP_COMPLEX_ACOSH:
        return 1 / (m.sqrt(z - 1) * m.sqrt(z + 1)), False
    if op == OP_COMPLEX_ATANH:
        return 1 - z * z, True
    raise AssertionError(f"holomorphic_factor: unknown op {op}")


cdef double LN10_C = 2.302585092994045684017991454684364208
cdef double LN2_C = 0.693147180559945309417232121458176568


cdef object vjp_holomorphic(Record* r, object g):
    """g * conj(f'(z)) (or g / conj(w)), read off the saved input or output (saved[0])."""
    v = <object>r.saved[0]
    with IeeeResults():
        if HOLOMORPHIC_READS_OUTPUT[r.op]:
            w, divides = holomorphic_factor(r.op, None, v, np)
        else:
            w, divides = holomorphic_factor(r.op, v, None, np)
        return nd(g / np.conjugate(w) if divides else g * np.conjugate(w))


cdef dict HOLOMORPHIC = {}          # name (as the core calls the op) -> (opcode, numpy function)


cdef int register_holomorphic(str name, str grad_fn, object fn, bint reads_output) except -1:
    cdef int op = register_op(grad_fn, vjp_holomorphic)
    HOLOMORPHIC_READS_OUTPUT[op] = reads_output
    HOLOMORPHIC[name] = (op, fn)
    COMPLEX_SAFE[op] = True
    return op


OP_COMPLEX_EXP = register_holomorphic("exp", "ExpBackward0", np.exp, True)
OP_COMPLEX_LOG = register_holomorphic("log", "LogBackward0", np.log, False)
OP_COMPLEX_SQRT = register_holomorphic("sqrt", "SqrtBackward0", np.sqrt, True)
OP_COMPLEX_RSQRT = register_holomorphic("rsqrt", "RsqrtBackward0", rsqrt_numpy, True)
OP_COMPLEX_RECIPROCAL = register_holomorphic("reciprocal", "ReciprocalBackward0", reciprocal_numpy,
                                             True)
OP_COMPLEX_SIN = register_holomorphic("sin", "SinBackward0", np.sin, False)
OP_COMPLEX_COS = register_holomorphic("cos", "CosBackward0", np.cos, False)
OP_COMPLEX_TANH = register_holomorphic("tanh", "TanhBackward0", np.tanh, True)
OP_COMPLEX_SIGMOID = register_holomorphic("sigmoid", "SigmoidBackward0", sigmoid_numpy, True)
OP_COMPLEX_LOG1P = register_holomorphic("log1p", "Log1PBackward0", log1p_numpy, False)
OP_COMPLEX_EXPM1 = register_holomorphic("expm1", "Expm1Backward0", np.expm1, True)
OP_COMPLEX_LOG10 = register_holomorphic("log10", "Log10Backward0", np.log10, False)
OP_COMPLEX_LOG2 = register_holomorphic("log2", "Log2Backward0", np.log2, False)
OP_COMPLEX_SINH = register_holomorphic("sinh", "SinhBackward0", np.sinh, False)
OP_COMPLEX_COSH = register_holomorphic("cosh", "CoshBackward0", np.cosh, False)
OP_COMPLEX_ASIN = register_holomorphic("asin", "AsinBackward0", np.arcsin, False)
OP_COMPLEX_ACOS = register_holomorphic("acos", "AcosBackward0", np.arccos, False)
OP_COMPLEX_ATAN = register_holomorphic("atan", "AtanBackward0", np.arctan, False)
cdef int OP_COMPLEX_EXP2 = register_holomorphic("exp2", "Exp2Backward0", np.exp2, True)
cdef int OP_COMPLEX_TAN = register_holomorphic("tan", "TanBackward0", np.tan, True)
cdef int OP_COMPLEX_ASINH = register_holomorphic("asinh", "AsinhBackward0", np.arcsinh, False)
cdef int OP_COMPLEX_ACOSH = register_holomorphic("acosh", "AcoshBackward0", np.arccosh, False)
cdef int OP_COMPLEX_ATANH = register_holomorphic("atanh", "AtanhBackward0", np.arctanh, False)


def _holomorphic_opcodes():
    """The opcodes of the holomorphic functions (graph_vjp.pxi gives them gv_holomorphic)."""
    return [entry[0] for entry in HOLOMORPHIC.values()]


# -- abs: |z|, real ------------------------------------------------------------------------------

cdef object complex_abs_numpy(object z):
    """|z| as hypot(x, y), as PyTorch's std::abs (numpy's complex64 abs can be one ulp off it:
    |polar(1, t)| = 1.0000001)."""
    return np.hypot(z.real, z.imag)


cdef object sgn_numpy(object z):
    """z / |z|, 0 at 0."""
    a = complex_abs_numpy(z)
    zero = a == 0
    return nd(np.where(zero, 0, z / np.where(zero, 1, a)).astype(z.dtype))


cdef object vjp_complex_abs(Record* r, object g):
    # g is real (|z| is): the gradient g * sgn(z)
    with IeeeResults():
        return nd(g * sgn_numpy(<object>r.saved[0]))


OP_COMPLEX_ABS = register_op("AbsBackward0", vjp_complex_abs)


# -- conj: the conjugate (materialised; tapegrad/_more_math.py sets the conj bit) ----------------

cdef object vjp_conj(Record* r, object g):
    return nd(np.conjugate(g))


cdef int OP_COMPLEX_CONJ = register_op("ConjBackward0", vjp_conj)
cdef int OP_COMPLEX_CONJ_PHYSICAL = register_op("ConjPhysicalBackward0", vjp_conj)


def _conj_opcodes():
    """The opcodes of conj and conj_physical (graph_vjp.pxi gives them their graph VJP)."""
    return [OP_COMPLEX_CONJ, OP_COMPLEX_CONJ_PHYSICAL]


cdef object complex_unary(str name, TensorBase x):
    """Forward and record of the one-input op `name` of a complex tensor: neg, abs, conj,
    conj_physical and the holomorphic functions here, the others by _complex.py."""
    cdef Py_ssize_t inp[1]
    cdef Record* r
    cdef int op
    A = x._array
    entry = HOLOMORPHIC.get(name)
    if entry is not None:
        op = entry[0]
        with IeeeResults():
            out = nd(entry[1](A))
    elif name == "neg":
        op = OP_NEG
        out = nd(-A)
    elif name == "conj" or name == "conj_physical":
        op = OP_COMPLEX_CONJ if name == "conj" else OP_COMPLEX_CONJ_PHYSICAL
        out = nd(np.conjugate(A))
    elif name == "abs":
        op = OP_COMPLEX_ABS
        with IeeeResults():
            out = nd(complex_abs_numpy(A))
    else:
        return complex_call(name, (x,))
    # (compile: no step noted, so the public op that called this is replayed as a whole)
    cdef TensorBase res = wrap(out)
    if not grad_enabled():
        return res
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0 or inference_only(inp, 1):
        return res
    r = record_op(op, res, 1, inp)
    if op == OP_NEG or op == OP_COMPLEX_CONJ or op == OP_COMPLEX_CONJ_PHYSICAL:
        pass                                            # linear: the VJP reads no value
    elif op != OP_COMPLEX_ABS and HOLOMORPHIC_READS_OUTPUT[op]:
        keep_saved(r, 0, out, res)
    else:
        save_value(r, 0, A, x)
    return res


COMPLEX_SAFE[OP_COMPLEX_MUL] = True
COMPLEX_SAFE[OP_COMPLEX_DIV] = True
COMPLEX_SAFE[OP_COMPLEX_ABS] = True
COMPLEX_SAFE[OP_COMPLEX_CONJ] = True
COMPLEX_SAFE[OP_COMPLEX_CONJ_PHYSICAL] = True


# -- the door from tapegrad/_complex.py ----------------------------------------------------------
# Python-level ops of complex tensors (torch.log10, logaddexp, ...) reach the compiled ones here.

cdef dict COMPLEX_BINARY_OPS = {"add": OP_ADD, "sub": OP_SUB, "mul": OP_MUL, "div": OP_DIV}


def _compiled_complex_ops():
    """The names of the complex ops compiled here (_complex.dispatch sends them back)."""
    return (frozenset(COMPLEX_BINARY_OPS) | frozenset(HOLOMORPHIC)
            | {"neg", "abs", "conj", "conj_physical"})


def _complex_op(str name, *args):
    """Run the compiled complex op `name` (one of _compiled_complex_ops())."""
    op = COMPLEX_BINARY_OPS.get(name)
    if op is not None:
        return complex_binary(op, args[0], args[1])
    return complex_unary(name, <TensorBase?>args[0])
