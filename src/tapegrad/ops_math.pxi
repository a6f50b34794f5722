# ---------------------------------------------------------------------------------------------
# Math functions beyond ops_unary's C kernels: log10, log2, sinh, cosh, asin, acos, atan; the
# rounding family floor, ceil, round (decimals=), trunc, frac; and the two-input atan2, fmod,
# remainder (%) and floor_divide (//).
#
# Forwards are numpy ufuncs under IeeeResults (inf and NaN as PyTorch gives them, no warnings);
# each VJP is PyTorch's derivative formula, next to its forward.  Integer inputs of the
# transcendental functions give the default float dtype; the rounding functions keep integer
# dtypes (as PyTorch), and their gradient is zero.  tapegrad.compile replays these ops by running
# each again as a whole (capture_call).
# ---------------------------------------------------------------------------------------------

LN10 = 2.302585092994045684017991454684364208
LN2 = 0.693147180559945309417232121458176568


# -- one-input functions -------------------------------------------------------------------------

cdef object float32_in_double(object ufunc, object A, object B=None):
    """ufunc of float32 values evaluated in float64 and rounded once: PyTorch's float32 kernels
    (SLEEF's, ~1 ulp) agree with that rounding in 92-99.9% of elements, numpy's float32 loops of
    atan2 / asin / acos / atan / sinh / cosh / log2 / log10 only in 52-87% (one ulp off in the
    others, enough to move an angle across a bin edge).  Other dtypes go to ufunc as they are
    (float16: numpy computes in float32 and rounds, as PyTorch does)."""
    if A.dtype.num == cnp.NPY_FLOAT32 and (B is None or B.dtype.num == cnp.NPY_FLOAT32):
        # (the ufunc casts as it goes: its result is laid out as for float32 operands)
        if B is None:
            return ufunc(A, dtype=np.float64).astype(np.float32)
        return ufunc(A, B, dtype=np.float64).astype(np.float32)
    return ufunc(A) if B is None else ufunc(A, B)


cdef object vjp_math1(Record* r, object g):
    cdef int op = r.op
    if op == OP_FRAC:
        return g
    if r.saved[0] == NULL:                              # floor, ceil, round, trunc
        return np.zeros(g.shape, g.dtype)
    x = <object>r.saved[0]
    with IeeeResults():
        if op == OP_LOG10:
            return nd(np.divide(g, np.multiply(x, LN10)))       # grad / (x ln 10)
        if op == OP_LOG2:
            return nd(np.divide(g, np.multiply(x, LN2)))        # grad / (x ln 2)
        if op == OP_SINH:
            return nd(np.multiply(g, float32_in_double(np.cosh, x)))
        if op == OP_COSH:
            return nd(np.multiply(g, float32_in_double(np.sinh, x)))
        if op == OP_ASIN:                                       # grad / sqrt(1 - x^2)
            return nd(np.divide(g, np.sqrt(np.subtract(1, np.multiply(x, x)))))
        if op == OP_ACOS:                                       # -grad / sqrt(1 - x^2)
            return nd(np.divide(np.negative(g), np.sqrt(np.subtract(1, np.multiply(x, x)))))
        return nd(np.divide(g, np.add(np.multiply(x, x), 1)))  # atan: grad / (1 + x^2)


OP_LOG10 = register_op("Log10Backward0", vjp_math1)
OP_LOG2 = register_op("Log2Backward0", vjp_math1)
OP_SINH = register_op("SinhBackward0", vjp_math1)
OP_COSH = register_op("CoshBackward0", vjp_math1)
OP_ASIN = register_op("AsinBackward0", vjp_math1)
OP_ACOS = register_op("AcosBackward0", vjp_math1)
OP_ATAN = register_op("AtanBackward0", vjp_math1)
OP_FLOOR = register_op("FloorBackward0", vjp_math1)
OP_CEIL = register_op("CeilBackward0", vjp_math1)
OP_ROUND = register_op("RoundBackward0", vjp_math1)
OP_ROUND_DECIMALS = register_op("RoundBackward1", vjp_math1)
OP_TRUNC = register_op("TruncBackward0", vjp_math1)
OP_FRAC = register_op("FracBackward0", vjp_math1)


# the names _complex.py knows transcendental's ops by
cdef dict TRANSCENDENTAL_NAMES = {OP_LOG10: "log10", OP_LOG2: "log2", OP_SINH: "sinh",
                                  OP_COSH: "cosh", OP_ASIN: "asin", OP_ACOS: "acos",
                                  OP_ATAN: "atan"}


cdef object transcendental(int op, object ufunc, TensorBase x):
    """A one-input function of the float value of x (integers give the default float dtype)."""
    A = x._array
    if dtype_kind(<cnp.ndarray>A) == c'c':
        return complex_unary(TRANSCENDENTAL_NAMES[op], x)
    if A.dtype.kind != "f":
        A = A.astype(DEFAULT_FLOAT)
    with IeeeResults():
        out = nd(float32_in_double(ufunc, A))
    cdef TensorBase res = wrap(out)
    cdef Record* r = record1(op, res, x)
    if r != NULL:
        save_value(r, 0, A, x)
    return res


cdef object rounding(int op, TensorBase x, object fn, str kernel):
    """floor / ceil / round / trunc / frac: integer dtypes kept (frac refuses them); the
    derivative is zero (frac: one)."""
    A = x._array
    if dtype_kind(<cnp.ndarray>A) == c'c':
        return complex_call("refuse", (kernel, x))
    if A.dtype.kind != "f":
        if op == OP_FRAC or op == OP_ROUND_DECIMALS:
            raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                      f"'{scalar_type_name(A.dtype)}'")
        if A.dtype.kind == "b":     # (PyTorch's floor / ceil / round / trunc of bools: the
                                    # vectorised kernels' names, floor_vml_cpu)
            raise NotImplementedError(f"\"{kernel.replace('_cpu', '_vml_cpu')}\" "
                                      f"not implemented for 'Bool'")
        out = A.copy()
    else:
        with IeeeResults():
            out = nd(fn(A))
    cdef TensorBase res = wrap(out)
    record1(op, res, x)                                 # no saved value: the VJP needs none
    return res


def log10(TensorBase input):
    """Base-10 logarithm."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(log10, (input,), None)
    return transcendental(OP_LOG10, np.log10, input)

def log2(TensorBase input):
    """Base-2 logarithm."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(log2, (input,), None)
    return transcendental(OP_LOG2, np.log2, input)

def sinh(TensorBase input):
    """Hyperbolic sine."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(sinh, (input,), None)
    return transcendental(OP_SINH, np.sinh, input)

def cosh(TensorBase input):
    """Hyperbolic cosine."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(cosh, (input,), None)
    return transcendental(OP_COSH, np.cosh, input)

def asin(TensorBase input):
    """Inverse sine (NaN outside [-1, 1])."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(asin, (input,), None)
    return transcendental(OP_ASIN, np.arcsin, input)

def acos(TensorBase input):
    """Inverse cosine (NaN outside [-1, 1])."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(acos, (input,), None)
    return transcendental(OP_ACOS, np.arccos, input)

def atan(TensorBase input):
    """Inverse tangent."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(atan, (input,), None)
    return transcendental(OP_ATAN, np.arctan, input)


def floor(TensorBase input):
    """Largest integer <= input (integer dtypes kept); zero gradient."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(floor, (input,), None)
    return rounding(OP_FLOOR, input, np.floor, "floor_cpu")

def ceil(TensorBase input):
    """Smallest integer >= input (integer dtypes kept); zero gradient."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(ceil, (input,), None)
    return rounding(OP_CEIL, input, np.ceil, "ceil_cpu")

def trunc(TensorBase input):
    """input rounded toward zero (integer dtypes kept); zero gradient."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(trunc, (input,), None)
    return rounding(OP_TRUNC, input, np.trunc, "trunc_cpu")

def frac(TensorBase input):
    """input - trunc(input) (floating point only); gradient one."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(frac, (input,), None)
    return rounding(OP_FRAC, input, lambda A: A - np.trunc(A), "frac_cpu")

cdef object round_to_decimals(object A, object d):
    """PyTorch's round(decimals=d): x * 10^d rounded half to even, then / 10^d (for d < 0,
    x / 10^-d rounded, then * 10^-d).  float16 is scaled in float32, PyTorch's opmath: 1234.5 *
    1000 would overflow float16 to inf.  A 10^|d| beyond float64 is inf, and the result NaN, as
    PyTorch's."""
    W = A.astype(np.float32) if A.dtype == np.float16 else A
    scale = float(np.float64(10.0) ** abs(d))           # (a numpy float64 would widen float32)
    out = np.rint(W * scale) / scale if d > 0 else np.rint(W / scale) * scale
    return out.astype(A.dtype, copy=False)

def round_(TensorBase input, *, decimals=0):
    """Round half to even, to `decimals` decimal places (see round_to_decimals); zero gradient."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(round_, (input,), {"decimals": decimals})
    d = operator.index(decimals)
    if d == 0:
        return rounding(OP_ROUND, input, np.rint, "round_cpu")
    return rounding(OP_ROUND_DECIMALS, input, lambda A: round_to_decimals(A, d), "round_cpu")


# -- two-input functions -------------------------------------------------------------------------
# saved = (a, b) in the computation dtype (a scalar operand as itself); aux as binary_op's.

cdef object vjp_math2(Record* r, object g):
    cdef int op = r.op
    ga = gb = None
    with IeeeResults():
        if op == OP_ATAN2:                              # (grad b, -grad a) / (a^2 + b^2)
            A = <object>r.saved[0]
            B = <object>r.saved[1]
            den = np.add(np.multiply(A, A), np.multiply(B, B))
            # 0 where a^2 + b^2 is 0 (PyTorch's: no NaN at the origin, nor where it underflows)
            recip = np.where(np.equal(den, 0), 0, np.reciprocal(den)).astype(den.dtype, copy=False)
            if needs_grad(r, 0):
                ga = nd(np.multiply(np.multiply(g, B), recip))
            if needs_grad(r, 1):
                gb = nd(np.multiply(np.multiply(g, np.negative(A)), recip))
        else:                                           # fmod: trunc(a / b); remainder: floor
            if needs_grad(r, 0):
                ga = g
            if needs_grad(r, 1):                        # (a, b saved only for this one)
                A = <object>r.saved[0]
                B = <object>r.saved[1]
                # remainder's quotient is PyTorch's div(rounding_mode='floor'), the quotient its
                # forward (numpy's remainder) is consistent with: floor_divide, which rounds as
                # Python's // does; floor(a / b) differs where a / b rounds up to an integer
                # (-0.25 / -0.001: floor 250, floor_divide 249) and gave b a wrong gradient.
                # fmod's is trunc(a / b), as PyTorch's div(rounding_mode='trunc') computes it.
                if op == OP_FMOD or op == OP_FMOD_T:
                    q = np.trunc(np.divide(A, B))
                else:
                    q = np.floor_divide(A, B)
                gb = nd(np.multiply(np.negative(g), q))
    return fit_binary_grads(r, ga, gb)


cdef object vjp_not_implemented(Record* r, object g):
    raise RuntimeError(f"derivative for {<object>r.aux} is not implemented")


OP_ATAN2 = register_op("Atan2Backward0", vjp_math2)
OP_FMOD = register_op("FmodBackward0", vjp_math2)          # scalar other
OP_FMOD_T = register_op("FmodBackward1", vjp_math2)        # tensor other
OP_REMAINDER = register_op("RemainderBackward0", vjp_math2)
OP_REMAINDER_T = register_op("RemainderBackward1", vjp_math2)
# floor_divide, and remainder(number, tensor): PyTorch records a node whose backward raises
OP_NOT_IMPLEMENTED = register_op("NotImplemented", vjp_not_implemented)
cdef int OP_FLOOR_DIVIDE = -1                           # (binary_math's selector only)


cdef object integer_division(object ufunc, object A, object B):
    """An integer fmod / remainder / floor_divide: PyTorch's error for a zero divisor."""
    if np.any(np.equal(B, 0)):
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(over="ignore"):    # (the minimum // -1 wraps to itself, silently as in
        return nd(np.asarray(ufunc(A, B)))      # PyTorch; numpy warned)


cdef object half_floor_divide(object A, object B, object scalar_read):
    """PyTorch's float16 div_floor (floor_divide, //, div(rounding_mode='floor')), called under
    IEEE results.  Its div_floor_floating is Python's float //: mod = fmod(a, b), (a - mod) / b,
    minus 1 where mod's sign is not b's, floored, plus 1 where that dropped more than 0.5, a
    signed 0 for a zero quotient, and a / b for b = 0.  With a CPU scalar second operand
    (`scalar_read`, half_scalar_read's number) the kernel computes all that in float32 and
    rounds once: numpy's float32 floor_divide, the same steps.  Otherwise it runs in c10::Half
    arithmetic, each step rounded to float16, where numpy's float16 floor_divide computes in
    float32 throughout (float16 -0.8867 // -0.0003302 was 2684, PyTorch's 2686)."""
    if scalar_read is not None:
        return np.floor_divide(np.asarray(A, np.float32), np.float32(scalar_read)).astype(np.float16)
    a = np.asarray(A, np.float16)
    b = np.asarray(B, np.float16)
    one = np.float16(1)
    mod = np.fmod(a, b)
    quotient = (a - mod) / b
    quotient = np.where((mod != 0) & ((b < 0) != (mod < 0)), quotient - one, quotient)
    floored = np.floor(quotient)
    floored = np.where(quotient - floored > np.float16(0.5), floored + one, floored)
    floored = np.where(quotient == 0, np.copysign(np.float16(0), a / b), floored)
    return np.where(b == 0, a / b, floored)


cdef object binary_math(int op, object a, object b, str name):
    """Forward and record of atan2 / fmod / remainder / floor_divide (a or b may be a number)."""
    cdef Record* r
    for number, tensor in ((a, b), (b, a)):
        # a complex number with a tensor: PyTorch's promotion to complex, then its missing kernel
        # (atan2 takes no number at all: its TypeError below speaks first)
        if (op != OP_ATAN2 and isinstance(number, (complex, np.complexfloating))
                and isinstance(tensor, TensorBase)):
            raise NotImplementedError(
                f"\"{'div_floor' if op == OP_FLOOR_DIVIDE else name}_cpu\" not implemented for "
                f"'{scalar_type_name(result_dtype(tensor, complex(number)))}'")
    a = as_operand(a)
    b = as_operand(b)
    if a is NotImplemented or b is NotImplemented:
        return NotImplemented
    cdef bint a_tensor = isinstance(a, TensorBase), b_tensor = isinstance(b, TensorBase)
    if op == OP_ATAN2 and not b_tensor:
        raise TypeError(f"atan2(): argument 'other' (position 2) must be Tensor, not "
                        f"{type_name(b)}")
    dt = result_dtype(a, b)
    if dt.kind == "c":      # (PyTorch has none of these kernels for complex; a cast would drop
                            # the imaginary part)
        raise NotImplementedError(f"\"{'div_floor' if op == OP_FLOOR_DIVIDE else name}_cpu\" "
                                  f"not implemented for '{scalar_type_name(dt)}'")
    if op == OP_ATAN2 and dt.kind != "f":
        dt = DEFAULT_FLOAT
    a = wrapped_int(a, dt)              # (PyTorch's wrapped number: uint8 % 300 is uint8 % 44)
    b = wrapped_int(b, dt)
    A = operand_value(a, dt)
    B = operand_value(b, dt)
    sa, sb = operand_shape(a), operand_shape(b)
    if a_tensor and b_tensor and sa != sb:
        broadcast_shapes_torch(sa, sb)
    if dt.kind == "b" and op != OP_ATAN2:      # (floor_divide's kernel is div_floor's)
        raise NotImplementedError(f"\"{'div_floor' if op == OP_FLOOR_DIVIDE else name}_cpu\" "
                                  f"not implemented for 'Bool'")
    if op == OP_ATAN2:
        with IeeeResults():
            out = nd(np.asarray(float32_in_double(np.arctan2, np.asarray(A), np.asarray(B))))
    elif dt.kind != "f":
        out = integer_division(np.fmod if op == OP_FMOD else
                               (np.remainder if op == OP_REMAINDER else np.floor_divide), A, B)
    else:
        with IeeeResults():
            if op == OP_FMOD:
                out = nd(np.asarray(np.fmod(A, B)))
            elif op == OP_REMAINDER:
                out = nd(np.asarray(np.remainder(A, B)))
                # PyTorch's remainder is fmod moved into the divisor's sign: a zero keeps
                # fmod's sign, the dividend's (numpy gives it the divisor's)
                zero = out == 0
                if zero.any():
                    out = nd(np.asarray(np.where(zero, np.copysign(out, A), out)))
            elif (<cnp.dtype>dt).type_num == cnp.NPY_FLOAT16:
                out = nd(np.asarray(half_floor_divide(A, B, half_scalar_read(b, dt)
                                                      if a_tensor else None)))
            else:                                       # Python's float //, as PyTorch's
                out = nd(np.asarray(np.floor_divide(A, B)))
    out = operand_layout(np.asarray(out, dtype=dt), a, b)
    cdef TensorBase res = wrap(out)
    cdef str aten = None
    if op == OP_FLOOR_DIVIDE or (op == OP_REMAINDER and not a_tensor):
        aten = "aten::" + name
        op = OP_NOT_IMPLEMENTED
    elif (op == OP_FMOD or op == OP_REMAINDER) and b_tensor:
        op = OP_FMOD_T if op == OP_FMOD else OP_REMAINDER_T
    r = record_from(op, res, (a if a_tensor else None, b if b_tensor else None))
    if r != NULL and aten is not None:
        keep(&r.aux, aten)
    elif r != NULL:
        # fmod / remainder read a and b only for b's gradient (a's is the gradient itself): as
        # PyTorch's FmodBackward1, they are saved (and a later write into a refused) only then
        # (fuzz 60624546)
        if op == OP_ATAN2 or needs_grad(r, 1):
            save_value(r, 0, A, a)
            save_value(r, 1, B, b)
        oshape = out.shape
        keep(&r.aux, (sa if sa != oshape else None,
                      (<TensorBase>a)._array.dtype if a_tensor else None,
                      sb if sb != oshape else None,
                      (<TensorBase>b)._array.dtype if b_tensor else None))
    return res


def atan2(TensorBase input, other):
    """Angle of the point (other, input): arctan(input / other) in the right quadrant."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(atan2, (input, other), None)
    return named_result(binary_math(OP_ATAN2, input, other, "atan2"), "atan2", input, other)

def fmod(TensorBase input, other):
    """C's fmod: input - trunc(input / other) * other (the sign of input)."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(fmod, (input, other), None)
    return named_result(binary_math(OP_FMOD, input, other, "fmod"), "fmod", input, other)

def remainder(input, other):
    """Python's modulus: input - floor(input / other) * other (the sign of other)."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(remainder, (input, other), None)
    if not isinstance(input, TensorBase) and not isinstance(other, TensorBase):
        raise bad_operand_error("remainder", input, other)  # (no Number % Number overload)
    return named_result(binary_math(OP_REMAINDER, input, other, "remainder"), "remainder", input, other)

def floor_divide(input, other):
    """floor(input / other) (integer dtypes kept); not differentiable, as in PyTorch."""
    if CAPTURE is not None and capturing() and CAPTURE.depth == 0:   # compile: one step
        return capture_call(floor_divide, (input, other), None)
    return named_result(binary_math(OP_FLOOR_DIVIDE, input, other, "floor_divide"), "floor_divide", input, other)

def tensor_mod(self, other):
    return binary_math(OP_REMAINDER, self, other, "remainder")

def tensor_rmod(self, other):
    return binary_math(OP_REMAINDER, other, self, "remainder")

def tensor_floordiv(self, other):
    return binary_math(OP_FLOOR_DIVIDE, self, other, "floor_divide")

def tensor_rfloordiv(self, other):
    return binary_math(OP_FLOOR_DIVIDE, other, self, "floor_divide")


# Dict literals, not keyword calls: ops_unary.pxi's registration says why (load-code size).
round_.__name__ = round_.__qualname__ = "round"
_MATH_DUNDERS = {"__mod__": tensor_mod, "__rmod__": tensor_rmod,
                 "__floordiv__": tensor_floordiv, "__rfloordiv__": tensor_rfloordiv}
for _name, _fn in _MATH_DUNDERS.items():
    _fn.__name__ = _name
    _fn.__qualname__ = "Tensor." + _name

_MATH_FUNCTIONS = {
    "log10": log10, "log2": log2, "sinh": sinh, "cosh": cosh, "asin": asin, "arcsin": asin,
    "acos": acos, "arccos": acos, "atan": atan, "arctan": atan, "floor": floor, "ceil": ceil,
    "round": round_, "trunc": trunc, "fix": trunc, "frac": frac, "atan2": atan2,
    "arctan2": atan2, "fmod": fmod, "remainder": remainder, "floor_divide": floor_divide}
TORCH_FUNCTIONS.update(_MATH_FUNCTIONS)
TENSOR_METHODS.update(_MATH_FUNCTIONS)
TENSOR_METHODS.update(_MATH_DUNDERS)
