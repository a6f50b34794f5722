# ---------------------------------------------------------------------------------------------
# Elementwise ops.  For each: forward (in binary_op / unary_op), VJP, registration, side by side.
#
# Broadcasting: a binary op whose inputs differ from the output in shape or dtype keeps
# (shape_a, dtype_a, shape_b, dtype_b) in aux; its VJP sums each gradient back to its input's
# shape and casts it to its input's dtype (fit_grad).  Python scalar operands are kept as Python
# scalars: numpy 2 treats them as "weak", which matches PyTorch's promotion for the cases we cast.
# ---------------------------------------------------------------------------------------------

import math


cdef object sum_to(object g, tuple shape):
    """Sum gradient `g` over the dims that broadcasting added or stretched, to `shape`."""
    cdef tuple gs = g.shape
    if gs == shape:
        return g
    cdef Py_ssize_t lead = len(gs) - len(shape), i
    axes = list(range(lead))
    for i in range(len(shape)):
        if shape[i] == 1 and gs[lead + i] != 1:
            axes.append(lead + i)
    if not axes:
        return nd(g).reshape(shape)
    if cnp.PyArray_Check(g) and not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>g):
        # the order of a sum follows the memory layout: a gradient that is a view here (a
        # transpose's) but arrives C-contiguous in a tapegrad.compile replay (which adopts
        # gradients contiguous) must sum the same, bit for bit, so both sum a contiguous array
        g = np.ascontiguousarray(g)
    out = cascade_reduce(g, tuple(axes), True)      # PyTorch's order, as its sum_to
    if out is None:
        out = np.add.reduce(g, axis=tuple(axes), keepdims=True)
    return nd(out).reshape(shape)


cdef inline object fit_grad(object g, object shape, object dt):
    """Gradient for an input of `shape`/`dt` from the output's gradient `g` (None passes)."""
    if g is None:
        return None
    if shape is not None:
        g = sum_to(g, <tuple>shape)
    if dt is not None and g.dtype != dt:
        if g.dtype.kind == "c" and dt.kind != "c":      # a real input of a complex op: the
            g = g.real                                  # real part (no imaginary direction)
        g = g.astype(dt)
    return g


cdef inline tuple operand_shape(object x):
    return (<TensorBase>x)._array.shape if isinstance(x, TensorBase) else ()


cdef tuple broadcast_shapes_torch(tuple sa, tuple sb):
    """numpy broadcasting, with PyTorch's error message on mismatch."""
    cdef Py_ssize_t na = len(sa), nb = len(sb), n = max(na, nb), i
    out = [0] * n
    for i in range(1, n + 1):
        da = sa[na - i] if i <= na else 1
        db = sb[nb - i] if i <= nb else 1
        if da == db or db == 1:
            out[n - i] = da
        elif da == 1:
            out[n - i] = db
        else:
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                               f"at non-singleton dimension {n - i}")
    return tuple(out)


cdef inline object operand_value(object x, object dt):
    """The numpy operand for tensor-or-scalar `x` in an op computed in dtype `dt`."""
    cdef cnp.ndarray a
    if isinstance(x, TensorBase):
        a = (<TensorBase>x)._array
        if a.dtype is dt or a.dtype == dt:
            return a
        # (an expanded operand's cast row-major, as PyTorch's: numpy's order "K" puts a
        # stride-0 dim innermost, and the result of the op followed that cast: e + 1j of an
        # expand e came out strided where PyTorch's is contiguous; fuzz 60673519)
        with IeeeResults():         # (a float32 1e9 cast to float16 is inf, silently in PyTorch)
            return torch_copy_source(a).astype(dt)
    return x


cdef object as_operand(object x):
    """Normalise a non-tensor operand: Python scalars stay, numpy scalars become Python scalars;
    anything else, an ndarray included, is not ours to handle (NotImplemented).

    An ndarray is not a Tensor to PyTorch's argument parser, so its operators return
    NotImplemented and Python hands `t + array` to numpy: ndarray's reflected method runs the
    ufunc, which reads the tensor through Tensor.__array__ (numpy() refuses a tensor that
    requires grad) and wraps numpy's result (numpy's dtype, no graph) through __array_wrap__;
    `array + t` defers to Tensor's reflected method by __array_priority__ and fails alike.  The
    named forms (torch.add(t, array)) raise TypeError.  Only Tensor.__eq__ takes an array."""
    if isinstance(x, np.generic):       # before float: np.float64 subclasses float, but numpy
        if isinstance(x, np.bool_):     # treats it as a typed (not weak) scalar
            return float(x)             # PyTorch's Scalar: a numpy bool is neither a Python
        return x.item()                 # bool nor a numpy int, so it is read as a double
    if isinstance(x, (TensorBase, float, int)):
        return x
    return real_torch_tensor(x)


cdef object real_torch_tensor(object x):
    """x, a real PyTorch tensor (a library imported the real torch), as a tapegrad tensor:
    tapegrad/_real_torch.py reads it as an array-like (its TypeError for one that requires
    grad); NotImplemented for anything else.  Asked only of an operand, index item or value no
    other rule took, so ordinary calls pay nothing; without it the operator declined and the
    real tensor's reflected operator dispatched back to tapegrad (`t += real` rebound t to a
    new tensor instead of writing into it)."""
    from tapegrad._real_torch import real_tensor_or_none
    real = real_tensor_or_none(x)
    return NotImplemented if real is None else real


def number_operand(x):
    """as_operand for the Python-level ops: a numpy scalar as the Python number PyTorch reads it
    as (a numpy bool as a double); anything else as it is."""
    y = as_operand(x)
    return x if y is NotImplemented else y


cdef inline bint takes_operand(object x):
    """Whether the binary ops take x: a tensor or a Python or numpy number (complex included);
    not an ndarray (as_operand)."""
    return is_complex_operand(x) or as_operand(x) is not NotImplemented


# The named forms whose PyTorch signature has a Number overload report "invalid combination"
# rather than "must be Tensor" for an operand of another type.
cdef frozenset INVALID_COMBINATION_NAMES = frozenset(
    ("pow", "pow_", "true_divide", "fmod", "remainder", "floor_divide"))


cdef object bad_operand_error(str name, object a, object b):
    """PyTorch's TypeError for a named binary op (add, add_, fmod, ...) given an operand that is
    neither a tensor nor a number; the operators return NotImplemented instead, so that Python
    can try the reflected op."""
    if name in INVALID_COMBINATION_NAMES:
        return TypeError(f"{name}() received an invalid combination of arguments - got "
                         f"({type_name(a)}, {type_name(b)}), but expected one of:\n"
                         f" * (Tensor input, Tensor other)\n * (Tensor input, Number other)")
    if as_operand(a) is NotImplemented:
        return TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                         f"{type_name(a)}")
    # In-place forms exist only as methods, where other is the first argument.
    return TypeError(f"{name}(): argument 'other' (position {1 if name.endswith('_') else 2}) must be "
                     f"Tensor, not {type_name(b)}")


cdef object scaled_operand(str name, object a, object b, object alpha):
    """b * alpha for add/sub's alpha, refusing a b that is neither tensor nor number first (a
    tuple or str would silently repeat)."""
    if type(alpha) is int and alpha == 1:
        return b
    if isinstance(alpha, TensorBase):
        # PyTorch's parser takes a tensor for a Number only 0-dim and not requiring grad: alpha
        # is a constant, never a path for a gradient
        if (<TensorBase>alpha)._array.ndim != 0 or alpha.requires_grad:
            raise TypeError(f"{name}(): argument 'alpha' must be Number, not Tensor")
        alpha = alpha.item()
    if not isinstance(b, TensorBase) and getattr(type(b), "_add_into_dense", None) is not None:
        return b * alpha        # a sparse COO operand (dense.add_(sparse, alpha=...))
    x, y = complex_number_operand(a), complex_number_operand(b)
    if y is NotImplemented:
        raise bad_operand_error(name, a, b)
    cdef bint subtracting = name.startswith("sub")
    if subtracting:
        # before the scaling below turns a bool operand into the result dtype and hides it
        check_no_bool_subtraction(a, b)
    if x is not NotImplemented:
        # PyTorch's alpha_check against the result dtype (an integer result never silently
        # becomes a float one because alpha is a float)
        R = result_dtype(x, y)
        kind = R.kind
        if isinstance(alpha, (bool, np.bool_)):
            if kind != "b":
                raise RuntimeError("Boolean alpha only supported for Boolean results.")
        elif kind != "f" and kind != "c" and not isinstance(alpha, (int, np.integer)):
            raise RuntimeError("For integral input tensors, argument alpha must not be a "
                               "floating point number.")
        elif kind != "c" and isinstance(alpha, (complex, np.complexfloating)):
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                               "complex number.")
        if kind == "b":
            # a bool result: alpha * b is b where alpha is non-zero, else all False
            return b if alpha else (b * False if isinstance(b, TensorBase) else False)
        # PyTorch's kernel converts alpha to the result type, checked: int8's alpha=300 and
        # float16's 70000 are its overflow error, not a silently wrapped factor or inf.  Its sub
        # is add with -alpha, which is what must fit (int32's sub takes alpha=2**31).
        value = alpha.item() if isinstance(alpha, np.generic) else alpha
        scalar_to_dtype(-value if subtracting else value, R)
        if isinstance(b, TensorBase) and (<TensorBase>b)._array.dtype != R:
            # PyTorch scales other in the result dtype, after converting it: int8's 3 * 100 in
            # an int64 sum is 300, not int8's wrapped 44; float32's 1e300 in a float64 sum is
            # no inf.  (A bool tensor has no gradient to keep: converted unrecorded.)
            if (<TensorBase>b)._array.dtype == NP_BOOL:
                b = wrap((<TensorBase>b)._array.astype(R))
            else:
                b = b.to(DTYPE_OF_NUM[R.num])
    if alpha == 1:
        return b
    return b * alpha



cdef object half_alpha_values(object a, object b, object alpha, bint subtracting):
    """add/sub's a + alpha * b (a - alpha * b) for a float16 tensor a and a float16 result,
    computed in float32 and rounded once, as PyTorch's vectorized kernel (its opmath), or None
    for any other case.  b is a float16 tensor, or a number or a 0-d tensor, which PyTorch's
    add casts to float16 first (add reads no CPU scalar at float32: measured).  The recorded sum
    of the scaled operand rounds alpha * b to float16 first (float16 -20 + 0.33333 * -20 was
    -26.65625, PyTorch's -26.671875; add(x, 0.1, alpha=2.5) rounded 0.25 for 0.2499); its VJP
    reads no forward value, so the caller writes these values over the recorded result (over
    self, for add_/sub_: computed before the write).  (PyTorch's scalar loop over the last
    elements that do not fill its vector, up to 31 of them, rounds alpha * b first: a rounding
    tapegrad does not copy.)"""
    if type(alpha) is int and alpha == 1 or not isinstance(a, TensorBase):
        return None
    A = (<TensorBase>a)._array
    if not is_half_array(A) or isinstance(alpha, (complex, np.complexfloating)):
        return None
    if isinstance(b, TensorBase):
        B = (<TensorBase>b)._array
        if B.dtype != np.float16:
            # a 0-d real operand: cast to float16, the dtype of a result with dims
            if B.ndim != 0 or A.ndim == 0 or B.dtype.kind not in "fiu":
                return None
            with IeeeResults():
                B = B.astype(np.float16)
    elif isinstance(b, (int, float)) and not isinstance(b, bool):
        try:
            with IeeeResults():
                B = np.float16(float(b))
        except OverflowError:                           # (an int beyond float64)
            return None
    else:
        return None
    with IeeeResults():
        # (alpha itself is first converted to float16, as PyTorch's: 1e-9 is 0 there; beyond
        # float16's range it is scaled_operand's overflow error, raised after this)
        scale = np.float32(np.float16(alpha))
        if not np.isfinite(scale) and np.isfinite(alpha):
            return None
        if subtracting:
            scale = -scale
        return (A.astype(NP_FLOAT32) + scale * B.astype(NP_FLOAT32)).astype(np.float16)


cdef object with_half_alpha_values(object result, object values):
    """result, its float16 values replaced by half_alpha_values' (None: as it is)."""
    if values is not None:
        np.copyto((<TensorBase>result)._array, values)
    return result

cdef object half_scalar_read(object b, object dt):
    """The number PyTorch's float16 mul, div, div_floor and div_trunc kernels compute with when
    their SECOND operand `b` is a CPU scalar, or None when that rule does not apply here.

    TensorIterator hands such a kernel a Python number or a 0-d tensor (of any dtype) as a CPU
    scalar read from its ORIGINAL value at the opmath type, float32 for float16
    (original_scalar_value<opmath_t>), not from its cast to the result dtype float16: x * tensor(0.1)
    came out 1 ulp off and x // 0.1 a whole unit (3.1 // 0.1: 31, PyTorch's 30).  Returned as a
    Python number, which half_and_number's float32 path reads as float32.  Measured in PyTorch:
    add, sub, remainder, fmod, pow and the comparisons DO round the scalar to float16 first, and
    a 0-d tensor FIRST operand (tensor(0.1) * x) is cast to float16 too.  (A float16 0-d
    operand reads exactly, but div_floor still computes it in float32, not in float16 steps.)"""
    if (<cnp.dtype>dt).type_num != cnp.NPY_FLOAT16:
        return None
    if isinstance(b, TensorBase):
        B = (<TensorBase>b)._array
        if cnp.PyArray_NDIM(<cnp.ndarray>B) != 0:
            return None
        value = B.item()
        return float(value) if isinstance(value, bool) else value
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return b
    return None


# -- binary ops ----------------------------------------------------------------------------------

cdef object fit_binary_grads(Record* r, object ga, object gb):
    """Apply the aux (shapes, dtypes) of a broadcasting/promoting binary op to its VJP's result."""
    if r.aux == NULL:
        return (ga, gb)
    cdef tuple aux = <tuple>r.aux
    return (fit_grad(ga, aux[0], aux[1]), fit_grad(gb, aux[2], aux[3]))


cdef object vjp_add(Record* r, object g):
    return fit_binary_grads(r, g if r.inp[0] >= 0 else None, g if r.inp[1] >= 0 else None)

cdef object vjp_sub(Record* r, object g):
    return fit_binary_grads(r, g if r.inp[0] >= 0 else None, negate(g) if r.inp[1] >= 0 else None)

cdef object vjp_mul(Record* r, object g):
    a = <object>r.saved[0] if r.saved[0] != NULL else None
    b = <object>r.saved[1] if r.saved[1] != NULL else None
    gb = None
    if r.inp[1] >= 0:       # straight into b's adjoint when the sweep offers it (kernels.pxi)
        gb = ACCUMULATED if accumulate_product(r, 1, g, a) else ew(TG_MUL, g, a)
    return fit_binary_grads(r, ew_g(TG_MUL, g, b) if r.inp[0] >= 0 else None, gb)   # g last

cdef object vjp_div(Record* r, object g):
    a = <object>r.saved[0] if r.saved[0] != NULL else None
    b = <object>r.saved[1]
    # PyTorch's formulas: grad / b and -grad * ((a / b) / b), two quotients, so the gradient
    # stays finite where b * b would overflow or underflow (b = 1e-200: -1e200, not -inf)
    return fit_binary_grads(r, ew(TG_DIV, g, b) if r.inp[0] >= 0 else None,
                            ew(TG_MUL, negate(g), ew(TG_DIV, ew(TG_DIV, a, b), b))
                            if r.inp[1] >= 0 else None)

cdef object vjp_pow(Record* r, object g):
    base = <object>r.saved[0]
    expo = <object>r.saved[1]
    ga = gb = None
    if r.inp[0] >= 0:
        # d/da a**e = e * a**(e-1), defined as 0 where e == 0 (PyTorch's convention)
        if isinstance(expo, (int, float)):
            if expo == 0:
                ga = np.zeros(g.shape, g.dtype)
            else:
                # e * a**(e-1) * g; the C kernel: products/roots for the common exponents,
                # vecmath's vector pow for the others (the forward's kernel)
                t = fast_binary(TG_POW, base, expo - 1) if kernel_scalar(expo - 1) else None
                if t is None:
                    t = nd(base ** (expo - 1))
                ga = ew(TG_MUL, g, ew(TG_MUL, t, expo))
        else:
            ga = nd(np.where(expo == 0, 0, g * (expo * base ** (expo - 1))))
    if r.inp[1] >= 0:
        # d/de a**e = a**e * log(a), defined as 0 where a == 0 and e >= 0 (PyTorch's mask; for
        # e < 0 it is inf * -inf = -inf; a negative base gives nan, as log does).  The mask
        # comes before the product with g, as PyTorch's pow_backward_exponent: an infinite or
        # NaN g at a masked element gives NaN, not 0 (fuzz 60661280)
        out = <object>r.saved[2]
        if isinstance(base, (int, float)):
            log_base = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
            gb = out * log_base
            if base == 0:
                gb = np.where(expo >= 0, 0, gb)
        else:
            gb = np.where((base == 0) & (expo >= 0), 0, out * np.log(base))
        gb = nd(g * gb)
    return fit_binary_grads(r, ga, gb)


OP_ADD = register_op("AddBackward0", vjp_add)
OP_SUB = register_op("SubBackward0", vjp_sub)
OP_RSUB = register_op("RsubBackward1", vjp_sub)
OP_MUL = register_op("MulBackward0", vjp_mul)
OP_DIV = register_op("DivBackward0", vjp_div)
OP_RDIV = register_op("DivBackward0", vjp_div)        # div(scalar, tensor) (`/`: __rtruediv__)
OP_POW = register_op("PowBackward0", vjp_pow)         # tensor ** scalar
OP_POW_T = register_op("PowBackward1", vjp_pow)       # tensor ** tensor
OP_POW_R = register_op("PowBackward2", vjp_pow)       # scalar ** tensor
# PyTorch's pow with a number operand has one edge, the tensor's (the record keeps the number's
# place as an input without gradient)
register_edges(OP_POW, lambda fn: (0,))
register_edges(OP_POW_R, lambda fn: (1,))


cdef inline bint special_exponent(object e) noexcept:
    """Exponents the C kernel computes by products/roots (no pow call) at any size."""
    return kernel_scalar(e) and (e == 2 or e == 3 or e == 1 or e == 0.5 or e == -0.5 or e == -1
                                 or e == -2)


cdef inline object negate(object g):
    r = fast_unary(TG_NEG, g)
    return r if r is not None else nd(-g)


cdef inline int kernel_of(int op) noexcept:
    if op == OP_ADD:
        return TG_ADD
    if op == OP_SUB or op == OP_RSUB:
        return TG_SUB
    if op == OP_MUL:
        return TG_MUL
    if op == OP_DIV or op == OP_RDIV:
        return TG_DIV
    return TG_POW


cdef object binary_forward(int op, object a, object b):
    """The numpy fallback of a binary op (called under errstate: IEEE results, no warnings)."""
    if (op == OP_MUL or op == OP_DIV) and half_and_number(a, b):   # PyTorch's float32 opmath
        return binary_forward(op, as_float32(a), as_float32(b)).astype(np.float16)
    if op == OP_ADD:
        return a + b
    if op == OP_SUB or op == OP_RSUB:
        if getattr(a, "dtype", None) == NP_BOOL and getattr(b, "dtype", None) == NP_BOOL:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        return a - b
    if op == OP_MUL:
        return a * b
    if op == OP_DIV:
        return a / b
    if op == OP_POW:
        try:
            return a ** b
        except ValueError as e:                         # numpy: integers to negative powers
            raise RuntimeError(str(e)) from None
    raise AssertionError(f"binary_forward: unknown op {op}")


cdef object bool_power(object A, object B, bint exponent_tensor):
    """A bool tensor to a bool power: PyTorch has no pow kernel for bool tensor exponents, and a
    Python bool exponent keeps the bool dtype (x ** True is x, x ** False all True), where numpy
    would give int8."""
    if exponent_tensor:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    return nd(np.array(A, dtype=np.bool_) if B else np.ones(np.shape(A), dtype=np.bool_))


cdef object integer_power(object A, object B):
    """Integer base to a tensor of integer exponents, as PyTorch's powi: an exponent below zero
    gives 0, except for base 1 (1) and base -1 (-1 or 1 by the exponent's parity).  numpy refuses
    negative integer exponents outright; PyTorch refuses only a Python number exponent (that
    path never comes here)."""
    negative = B < 0
    if not negative.any():
        return nd(A ** B)
    out = np.asarray(A ** np.where(negative, 0, B))
    odd = (B % 2) != 0
    reciprocal = np.where(A == 1, 1, np.where(A == -1, np.where(odd, -1, 1), 0))
    np.copyto(out, reciprocal, where=negative, casting="unsafe")
    return nd(out)


cdef inline bint is_float_num(int t) noexcept:
    return t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64


cdef int check_no_bool_subtraction(object a, object b) except -1:
    """PyTorch refuses a bool operand of `-` (a bool tensor, or a Python bool with a tensor)."""
    cdef bint ab = type(a) is bool or (isinstance(a, TensorBase) and
                                        (<TensorBase>a)._array.dtype == NP_BOOL)
    cdef bint bb = type(b) is bool or (isinstance(b, TensorBase) and
                                        (<TensorBase>b)._array.dtype == NP_BOOL)
    if ab and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ab or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return 0


# the meta device's names of binary_op's ops (a op b): _meta.py's entered_cpu_op
cdef dict BINARY_NAMES = {OP_ADD: "add", OP_SUB: "sub", OP_RSUB: "sub", OP_MUL: "mul",
                          OP_DIV: "div", OP_RDIV: "div", OP_POW: "pow", OP_POW_T: "pow",
                          OP_POW_R: "pow"}


cdef int iterator_should_swap(Py_ssize_t* sa, Py_ssize_t* sb, Py_ssize_t* shape, int d0,
                              int d1) noexcept:
    """TensorIterator's reorder_dimensions comparison of dims d0 and d1 (operands in order; a
    broadcast dim defers to the next operand; equal strides put the longer dim outside)."""
    cdef Py_ssize_t* s
    cdef int k
    for k in range(2):
        s = sa if k == 0 else sb
        if s[d0] == 0 or s[d1] == 0:
            continue
        if s[d0] < s[d1]:
            return -1
        if s[d0] > s[d1]:
            return 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


cdef void broadcast_strides(cnp.ndarray X, int nd_, Py_ssize_t* shape, Py_ssize_t* out) noexcept:
    cdef int m = cnp.PyArray_NDIM(X), off = nd_ - m, k
    for k in range(nd_):
        if k < off or (cnp.PyArray_DIM(X, k - off) == 1 and shape[k] != 1):
            out[k] = 0
        else:
            out[k] = cnp.PyArray_STRIDE(X, k - off)


cdef inline object operands_layout(object out, TensorBase a, TensorBase b):
    """out, the result of a binary op of tensors a and b, in PyTorch's layout: iterator_layout
    of the operands' own arrays (their strides, not those of a promoted cast of one), when one
    of them is not row-major."""
    A = a._array
    B = b._array
    if cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>A) and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>B):
        return out
    return iterator_layout(out, A, B)


cdef object iterator_layout(object out, object A, object B):
    """out, the result of a binary op of arrays A and B, in the layout PyTorch's TensorIterator
    gives it: dims ordered by the first operand's strides, a broadcast dim deferring to the
    next operand.  numpy orders a result of operands with different layouts row-major (x.T + x
    came out row-major where PyTorch's follows x.T), so stride() and .view() differed.  Called
    only when an operand is not row-major; a copy only when the layouts differ."""
    cdef cnp.ndarray o = <cnp.ndarray>out
    cdef int nd_ = cnp.PyArray_NDIM(o), i, d0, d1, c, t
    if nd_ < 2 or nd_ > 32 or cnp.PyArray_SIZE(o) == 0:
        return out
    cdef Py_ssize_t shape[32]
    cdef Py_ssize_t sa[32]
    cdef Py_ssize_t sb[32]
    cdef int perm[32]
    for i in range(nd_):
        shape[i] = cnp.PyArray_DIM(o, i)
        perm[i] = nd_ - 1 - i                   # innermost first
    broadcast_strides(<cnp.ndarray>A, nd_, shape, sa)
    broadcast_strides(<cnp.ndarray>B, nd_, shape, sb)
    for i in range(1, nd_):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = iterator_should_swap(sa, sb, shape, perm[d0], perm[d1])
            if c > 0:
                t = perm[d0]
                perm[d0] = perm[d1]
                perm[d1] = t
                d1 = d0
            elif c < 0:
                break
    cdef Py_ssize_t want = cnp.PyArray_ITEMSIZE(o)
    cdef bint same = True
    for i in range(nd_):
        if shape[perm[i]] != 1 and cnp.PyArray_STRIDE(o, perm[i]) != want:
            same = False
            break
        want *= shape[perm[i]]
    if same:
        return out
    outer = [perm[nd_ - 1 - i] for i in range(nd_)]
    fresh_out = np.empty([shape[d] for d in outer], dtype=o.dtype).transpose(
        np.argsort(outer))
    np.copyto(fresh_out, out)
    return fresh_out


def _iterator_layout(out, A, B):
    """iterator_layout for the Python-level binary ops (arrays; numbers are left as they are)."""
    if not (cnp.PyArray_Check(out) and cnp.PyArray_Check(A) and cnp.PyArray_Check(B)):
        return out
    return iterator_layout(out, A, B)


cdef object binary_op(int op, object a, object b):
    """Forward and record of a binary elementwise op; a and/or b is a TensorBase.

    The common case takes a short path kept small enough for the compiler to inline its helpers
    (at sizes 1-16 the op is its overhead): a float32/float64 C-contiguous tensor of the plain
    Tensor class with a Python number, or two such tensors of one dtype and shape.  Such a pair
    passes every check of binary_general (meta operand: not the Tensor class; bool subtraction,
    complex, promotion: no bool or non-float operand; broadcasting: one shape; TensorIterator
    layout: both row-major), and both paths compute it with the same fast_binary call, so the
    results are the same bits.  Anything else, and pow of a tensor exponent, goes the long way."""
    cdef bint a_tensor = type(a) is TensorType, b_tensor = type(b) is TensorType
    if a_tensor:
        A = (<TensorBase>a)._array
        if b_tensor:
            B = (<TensorBase>b)._array
            if not (cnp.PyArray_Check(B) and same_shape(<cnp.ndarray>A, <cnp.ndarray>B)):
                return binary_general(op, a, b)
        elif kernel_scalar(b):
            B = b
        else:
            return binary_general(op, a, b)
    elif b_tensor and kernel_scalar(a):
        A = a
        B = (<TensorBase>b)._array
    else:
        return binary_general(op, a, b)
    cdef int kop = kernel_of(op)
    if kop == TG_POW and not kernel_scalar(B):
        return binary_general(op, a, b)                 # a tensor exponent: numpy's pow
    out = fast_binary(kop, A, B)                        # None: not contiguous float32/float64
    if out is None:
        return binary_general(op, a, b)
    cdef TensorBase res = wrap(out)
    if CAPTURE is not None and capturing():
        capture_binary(kop, a, b, False, True, res)
    if not grad_enabled():
        return res
    return record_binary(op, a, b, A, B, out, res, a_tensor, b_tensor, False, True)


cdef object binary_general(int op, object a, object b):
    """binary_op for every pair: meta operands, promotion, broadcasting, bool and complex."""
    if is_meta_tensor(a) or is_meta_tensor(b):          # a meta operand of a CPU tensor's op
        return meta_entry(BINARY_NAMES.get(op, "binary"), (a, b))
    cdef bint a_tensor = isinstance(a, TensorBase), b_tensor = isinstance(b, TensorBase)
    cdef bint promote = True, same_shapes = True
    # Fast path (the common case): same-dtype float tensors, or a float tensor and a Python
    # number, need no promotion or cast: skip result_dtype and every dtype object.
    if a_tensor and b_tensor:
        A = (<TensorBase>a)._array
        B = (<TensorBase>b)._array
        promote = not (cnp.PyArray_TYPE(A) == cnp.PyArray_TYPE(B)
                       and is_float_num(cnp.PyArray_TYPE(A)))
    elif a_tensor and kernel_scalar(b):
        A = (<TensorBase>a)._array
        B = b
        promote = not is_float_num(cnp.PyArray_TYPE(A))
    elif b_tensor and kernel_scalar(a):
        A = a
        B = (<TensorBase>b)._array
        promote = not is_float_num(cnp.PyArray_TYPE(B))
    if promote and not (takes_operand(a) and takes_operand(b)):
        return NotImplemented                            # (an ndarray: before any other check)
    # Only an operand off the fast path (any non-float tensor) or a Python bool can be a bool:
    # the fast path pays two pointer compares, not two dtype lookups.
    if (op == OP_SUB or op == OP_RSUB) and (promote or type(a) is bool or type(b) is bool):
        check_no_bool_subtraction(a, b)
    if promote:
        if is_complex_operand(a) or is_complex_operand(b):
            return complex_binary(op, a, b)
        a = as_operand(a)
        b = as_operand(b)
        if a is NotImplemented or b is NotImplemented:
            return NotImplemented
        a_tensor = isinstance(a, TensorBase)
        b_tensor = isinstance(b, TensorBase)
        dt = result_dtype(a, b)
        if not (a_tensor or b_tensor) and dt.kind == "f":
            # two Python numbers (add(2., 3)): PyTorch wraps them as tensors of the default
            # dtype, so a float result is float32 by default, not numpy's float64
            dt = DEFAULT_FLOAT
        if op == OP_DIV and dt.kind != "f":
            dt = DEFAULT_FLOAT                           # true division of integers: the default
        if dt.kind in "iu":
            # A Python int is PyTorch's wrapped number: cast to dt unchecked (uint8 + 300 is
            # uint8 + 44), except a tensor's power, whose exponent is checked
            if op == OP_POW and not b_tensor:
                if isinstance(b, (int, np.integer)) and b < 0:     # (checked before the range)
                    raise RuntimeError("Integers to negative integer powers are not allowed.")
                scalar_to_dtype(b, dt)
            else:
                a = wrapped_int(a, dt)
                b = wrapped_int(b, dt)
        A = operand_value(a, dt)
        B = operand_value(b, dt)
        if not (a_tensor or b_tensor):
            A = np.asarray(A, dtype=dt)      # (computed in dt, not in a Python float's float64)
    if a_tensor and b_tensor and not same_shape(<cnp.ndarray>A, <cnp.ndarray>B):
        same_shapes = False
        broadcast_shapes_torch(A.shape, B.shape)         # raises PyTorch's message on mismatch
    if promote and a_tensor and b_tensor and (op == OP_MUL or op == OP_DIV):
        # a 0-d second operand of a float16 product/quotient, read at float32 and computed in
        # float32 by half_and_number (binary_forward here, the VJPs' ew from the saved number)
        read = half_scalar_read(b, dt)
        if read is not None:
            B = read
    cdef int kop = kernel_of(op)
    out = None
    # pow in C only for a number exponent: its kernel takes x*x*x, sqrt, ... for the special
    # ones, as PyTorch does for a scalar exponent only, and vecmath's vector pow for the others
    # (a tensor exponent is std::pow, numpy's).
    if kop != TG_POW or kernel_scalar(B):
        out = fast_binary(kop, A, B)
    cdef bint in_c = out is not None
    if out is None:
        with IeeeResults():                              # IEEE results (inf, nan) as PyTorch gives
            if kop == TG_POW and np.result_type(A, B).kind == "b":
                out = bool_power(A, B, b_tensor)
            elif kop == TG_POW and b_tensor and np.result_type(A, B).kind in "iu":
                out = integer_power(A, B)
            else:
                out = nd(binary_forward(OP_POW if op == OP_POW_T or op == OP_POW_R else
                                        (OP_DIV if op == OP_RDIV else op), A, B))
    if promote and a_tensor and b_tensor and op == OP_MUL:
        # b's gradient, g * a, as PyTorch's MulBackward0 computes it: grad * self, where a 0-d
        # self is the CPU scalar SECOND operand, read at float32 (its forward read it cast to
        # float16): the saved number, which the VJP's ew computes with in float32
        read = half_scalar_read(a, dt)
        if read is not None:
            A = read
    if a_tensor and b_tensor:
        out = operands_layout(out, <TensorBase>a, <TensorBase>b)
    cdef TensorBase res = wrap(out)
    if CAPTURE is not None and capturing():
        capture_binary(kop, a, b, promote, in_c, res)
    if not grad_enabled():
        return res
    return record_binary(op, a, b, A, B, out, res, a_tensor, b_tensor, promote, same_shapes)


cdef object record_binary(int op, object a, object b, object A, object B, object out,
                          TensorBase res, bint a_tensor, bint b_tensor, bint promote,
                          bint same_shapes):
    """The record of binary_op's a (op) b (A, B: the operands as computed; out: res's array)
    when grad mode is on; returns res."""
    cdef Py_ssize_t inp[2]
    cdef Record* r
    begin_record(2)
    inp[0] = node_for_input(<TensorBase>a) if a_tensor else -1
    inp[1] = node_for_input(<TensorBase>b) if b_tensor else -1
    if not wants_record(inp, 2):
        return res
    if (op == OP_POW or op == OP_DIV and not a_tensor) and not (a_tensor and b_tensor) and \
            inference_only(&inp[0] if a_tensor else &inp[1], 1):
        # (PyTorch's pow takes a number as a Scalar and `number / x` is x.reciprocal() times
        # it: no wrapped tensor, so an inference tensor alone records nothing, inference_only)
        return res
    if op == OP_POW:
        op = OP_POW_R if not a_tensor else (OP_POW if not b_tensor else OP_POW_T)
    elif op == OP_DIV and not a_tensor:
        op = OP_RDIV
    r = record_op(op, res, 2, inp)
    if op == OP_MUL:
        if inp[1] >= 0:
            save_value(r, 0, A, a)
        if inp[0] >= 0:
            save_value(r, 1, B, b)
    elif op == OP_DIV or op == OP_RDIV:
        if inp[1] >= 0:
            save_value(r, 0, A, a)
        save_value(r, 1, B, b)
    elif op == OP_POW or op == OP_POW_T or op == OP_POW_R:
        save_value(r, 0, A, a)
        save_value(r, 1, B, b)
        # The number operand also in the scalar: grad_fn._saved_exponent / _saved_self still
        # read it after a backward freed the saved values, as PyTorch's do.
        if op == OP_POW and isinstance(b, (int, float)):
            r.scalar = b
        elif op == OP_POW_R and isinstance(a, (int, float)):
            r.scalar = a
        # tensor ** tensor keeps its output even when only the base needs a gradient: PyTorch's
        # node saves its result either way, so an in-place change of it before backward raises
        # "modified by an inplace operation" there too
        if inp[1] >= 0 or op == OP_POW_T:
            keep_saved(r, 2, out, res)
    if promote or not same_shapes:
        # The VJP must sum each gradient back to its input's shape and cast it to its dtype.
        out_shape = out.shape
        shape_a = operand_shape(a)
        shape_b = operand_shape(b)
        da = (<TensorBase>a)._array.dtype if a_tensor else None
        db = (<TensorBase>b)._array.dtype if b_tensor else None
        if (shape_a != out_shape or shape_b != out_shape
                or (a_tensor and da != out.dtype) or (b_tensor and db != out.dtype)):
            keep(&r.aux, (shape_a if shape_a != out_shape else None, da,
                          shape_b if shape_b != out_shape else None, db))
    return res


# -- unary ops -----------------------------------------------------------------------------------

cdef object vjp_neg(Record* r, object g):
    return negate(g)

# ew_g: into g itself when the sweep offers it (kernels.pxi).
cdef object vjp_exp(Record* r, object g):
    return ew_g(TG_MUL, g, <object>r.saved[0])          # d exp(x) = exp(x): reuse the output

cdef object vjp_log(Record* r, object g):
    return ew_g(TG_DIV, g, <object>r.saved[0])

cdef object vjp_tanh(Record* r, object g):
    return ew_g(TG_TANH_GRAD, g, <object>r.saved[0])    # 1 - tanh(x)^2: reuse the output

cdef object vjp_relu(Record* r, object g):
    return ew_g(TG_RELU_GRAD, g, <object>r.saved[0])    # 0 where relu(x) <= 0 (NaN passes)


OP_NEG = register_op("NegBackward0", vjp_neg)
OP_EXP = register_op("ExpBackward0", vjp_exp)
OP_LOG = register_op("LogBackward0", vjp_log)
OP_TANH = register_op("TanhBackward0", vjp_tanh)
OP_RELU = register_op("ReluBackward0", vjp_relu)

# the names _complex.py knows unary_op's ops by
cdef dict UNARY_NAMES = {OP_NEG: "neg", OP_EXP: "exp", OP_LOG: "log", OP_TANH: "tanh",
                         OP_RELU: "relu"}


cdef object unary_numpy(int op, object A):
    """numpy's version of a unary op (integer, non-contiguous or large input)."""
    if op == OP_TANH:
        return nd(np.tanh(A))                           # cannot raise a floating point warning
    with IeeeResults():                                 # IEEE results, no warnings, as PyTorch
        if op == OP_NEG:
            return nd(-A)
        if op == OP_EXP:
            return nd(np.exp(A))
        if op == OP_LOG:
            return nd(np.log(A))
        if op == OP_TANH:
            return nd(np.tanh(A))
        if op == OP_RELU:
            return nd(np.where(np.less(A, 0), 0, A).astype(A.dtype, copy=False))   # keeps -0.0
    raise AssertionError(f"unary_numpy: unknown op {op}")


cdef inline int unary_kernel_of(int op) noexcept:
    if op == OP_EXP:
        return TG_EXP
    if op == OP_LOG:
        return TG_LOG
    if op == OP_TANH:
        return TG_TANH
    if op == OP_RELU:
        return TG_RELU
    return TG_NEG


cdef object unary_op(int op, TensorBase x):
    """Forward and record of a one-input elementwise op."""
    cdef Py_ssize_t inp[1]
    cdef Record* r
    A = x._array
    cdef char kind = dtype_kind(<cnp.ndarray>A)
    if kind == c'c':
        return complex_unary(UNARY_NAMES[op], x)
    if op != OP_NEG and op != OP_RELU and kind != c'f':
        A = A.astype(DEFAULT_FLOAT)                     # PyTorch: exp/log/tanh of ints: the default
    if op == OP_RELU and kind == c'b':
        raise RuntimeError("Boolean inputs not supported for relu")
    if op == OP_NEG and kind == c'b':
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    # The C kernels (vectorised exp/log/tanh, threads for big arrays) at every size; numpy for
    # other layouts and dtypes.
    out = fast_unary(unary_kernel_of(op), A)
    cdef bint in_c = out is not None
    if out is None:
        out = unary_numpy(op, A)
    cdef TensorBase res = wrap(out)
    if CAPTURE is not None and capturing():
        capture_unary(op, unary_kernel_of(op), x, A, in_c, res)
    if not grad_enabled():
        return res
    begin_record(1)
    inp[0] = node_for_input(x)
    if inp[0] < 0 or inference_only(inp, 1):
        return res
    r = record_op(op, res, 1, inp)
    if op == OP_EXP or op == OP_TANH or op == OP_RELU:
        keep_saved(r, 0, out, res)
    elif op == OP_LOG:
        save_value(r, 0, A, x)
    return res


def exp(TensorBase input):
    """e ** input, elementwise; integer and bool tensors give the default float dtype (its
    gradient is exp(x) itself).  ``tapegrad.exp(tapegrad.tensor([0., 1.]))`` is
    ``tensor([1.0000, 2.7183])``."""
    return unary_op(OP_EXP, input)

def log(TensorBase input):
    """The natural logarithm, elementwise: -inf at 0, nan below it; integer and bool tensors
    give the default float dtype (gradient 1 / x).  ``tapegrad.log(tapegrad.tensor([1., 4.]))``
    is ``tensor([0.0000, 1.3863])``."""
    return unary_op(OP_LOG, input)

def tanh(TensorBase input):
    """Hyperbolic tangent, elementwise (its gradient is 1 - tanh(x)**2)."""
    return unary_op(OP_TANH, input)

def relu(TensorBase input):
    """max(input, 0), elementwise, in input's dtype (gradient 1 where x > 0, else 0).
    ``tapegrad.relu(tapegrad.tensor([-1., 2.]))`` is ``tensor([0., 2.])``."""
    return unary_op(OP_RELU, input)

def neg(TensorBase input):
    """-input, elementwise, in input's dtype (bool tensors are refused, as PyTorch's).
    ``tapegrad.neg(tapegrad.tensor([1, -2]))`` is ``tensor([-1,  2])``."""
    return unary_op(OP_NEG, input)

# PyTorch's deprecated scalar-first forms (add(input, alpha, other)): see the module.
from tapegrad._deprecated_overloads import NOT_GIVEN as SCALAR_FIRST_NOT_GIVEN, scalar_first

def add(input, other, other_after_scale=SCALAR_FIRST_NOT_GIVEN, *, alpha=1, out=None):
    """input + alpha * other (out=: written into `out`, not differentiable).  add(input, alpha,
    other), PyTorch's deprecated form, too (tapegrad/_deprecated_overloads.py)."""
    if other_after_scale is not SCALAR_FIRST_NOT_GIVEN:
        alpha, (other,) = scalar_first("add", "alpha", other, alpha, (other_after_scale,))
    if out is not None:
        return WRITE_OUT("add", out, (input, other), add, {"alpha": alpha})
    values = half_alpha_values(input, other, alpha, False)
    return with_half_alpha_values(named_result(
        binary_op(OP_ADD, input, scaled_operand("add", input, other, alpha)), "add", input, other),
        values)

def sub(input, other, other_after_scale=SCALAR_FIRST_NOT_GIVEN, *, alpha=1, out=None):
    """input - alpha * other (out=: written into `out`, not differentiable).  sub(input, alpha,
    other), PyTorch's deprecated form, too."""
    if other_after_scale is not SCALAR_FIRST_NOT_GIVEN:
        alpha, (other,) = scalar_first("sub", "alpha", other, alpha, (other_after_scale,))
    if out is not None:
        return WRITE_OUT("sub", out, (input, other), sub, {"alpha": alpha})
    values = half_alpha_values(input, other, alpha, True)
    return with_half_alpha_values(named_result(
        binary_op(OP_SUB, input, scaled_operand("sub", input, other, alpha)), "sub", input, other),
        values)

def mul(input, other, *, out=None):
    """input * other (out=: written into `out`, not differentiable)."""
    if out is not None:
        return WRITE_OUT("mul", out, (input, other), mul, None)
    return named_result(binary_op(OP_MUL, input, other), "mul", input, other)

def div(input, other, *, out=None):
    """input / other, true division (out=: written into `out`, not differentiable)."""
    if out is not None:
        return WRITE_OUT("div", out, (input, other), div, None)
    return named_result(binary_op(OP_DIV, input, other), "div", input, other)

def pow(input, exponent):
    """input ** exponent, elementwise and broadcasting; either may be a number (the result's
    dtype follows PyTorch's promotion: an int tensor to an int power stays int, a negative int
    power of one raises).  ``tapegrad.pow(tapegrad.tensor([2., 3.]), 2)`` is
    ``tensor([4., 9.])``."""
    if not isinstance(input, TensorBase) and not isinstance(exponent, TensorBase):
        raise bad_operand_error("pow", input, exponent)     # (PyTorch has no Number ** Number)
    return named_result(binary_op(OP_POW, input, exponent), "pow", input, exponent)


NN_FUNCTIONS.update(relu=relu, tanh=tanh)
