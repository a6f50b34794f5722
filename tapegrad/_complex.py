"""Complex tensors (complex64 / complex128): the ops that know complex arithmetic.

numpy holds and computes the values.  The hot ops (add, sub, mul, div, neg, abs, conj and the
holomorphic functions exp, log, sqrt, sin, tanh, ...) are compiled records of the core
(src/tapegrad/ops_complex.pxi), matmul is the real ops' record (its VJP conjugates); the others
are here.  The core's other compiled entry points (comparisons, prod, var, ...) hand a complex
operand to `dispatch` (complex_hook.pxi), and it refuses to record any other compiled op on
complex values unless that op's VJP is linear with real coefficients (shape ops, sums, indexing,
casts: `_SAFE_COMPILED_OPS`), whose gradients are right for complex values as they are.

Gradients follow PyTorch's convention: for a real loss L and z = x + iy, z.grad = dL/dx + i dL/dy
(the conjugate Wirtinger derivative, times 2).  An op f receiving the output gradient g gives its
input  g * conj(df/dz) + conj(g) * df/dz̄ ; for a holomorphic f (exp, mul, ...) the second term
is zero, so the input gradient is g * conj(f'(z)).  A real input of a complex op receives the real
part of that (its imaginary direction does not exist).

Each op here is an autograd.Function: its forward and its VJP side by side, recorded as one node
named as PyTorch names it (PowBackward0, ...).
"""
from __future__ import annotations as _annotations

import builtins

import numpy as np

from . import _core
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_broadcast, _check_tensor
from .autograd.function import Function, _SavedOutput, _modified_in_place_error

# grad_fn names of compiled ops whose VJP is linear with real coefficients: right for complex.
_SAFE_COMPILED_OPS = frozenset({
    "AddBackward0", "SubBackward0", "RsubBackward1", "NegBackward0", "SelectBackward0",
    "SliceBackward0", "IndexBackward0", "AliasBackward0", "UnsqueezeBackward0",
    "IndexSelectBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
    "SqueezeBackward4", "UnsafeViewBackward0", "CloneBackward0", "TransposeBackward0",
    "TransposeBackward1", "TBackward1", "SqueezeBackward3", "SqueezeBackward5",
    "UnsqueezeBackward1",
    "ViewBackward0", "ReshapeAliasBackward0", "TBackward0", "PermuteBackward0",
    "ExpandBackward0", "RepeatBackward0", "CatBackward0", "StackBackward0", "SplitBackward0",
    "SplitWithSizesBackward0", "UnbindBackward0",
    # (unsafe_split/unsafe_chunk: split's VJP under PyTorch's names)
    "UnsafeSplitBackward0", "UnsafeSplitWithSizesBackward0", "SumBackward0", "SumBackward1",
    "MeanBackward0", "MeanBackward1", "ToCopyBackward0", "FunctionBackward", "FunctionOutput",
    "AccumulateGrad", "TrilBackward0", "TriuBackward0", "CopySlices", "CopyBackwards",
    "IndexPutBackward0", "MaskedFillBackward0",
    "MaskedFillBackward1", "MaskedSelectBackward0", "WhereBackward0", "ConstantPadNdBackward0",
    "AsStridedBackward0", "UnfoldBackward0", "GatherBackward0", "IndexBackwardBackward0",
    # matmul's records: their VJPs multiply by the operands' conjugates
    "DotBackward0", "MvBackward0", "MmBackward0", "BmmBackward0",
    # overwrites: a zero gradient, or (fill_ with a tensor value) the summed one
    "ZeroBackward0", "FillBackward2", "FillBackward3",
    # the link from a composed op's last record to the input it saved (graph_vjp.pxi): the
    # adjoint passed through, zeros to the input
    "ReadsInputBackward0",
})


def _wrap(arr) -> "Tensor":
    return _core.wrap_array(np.asarray(arr))


def _scalar_type(np_dt) -> str:
    return _core.scalar_type_name_of(np_dt)


def _value(x, np_dt):
    """A tensor's values or a Python number, in numpy dtype np_dt."""
    if isinstance(x, _core.TensorBase):
        return x._array.astype(np_dt, copy=False)
    return np.asarray(x, dtype=np_dt)


def _meta(x):
    """What _fit needs of an operand: (shape, dtype) of a tensor, None for a number."""
    return (x._array.shape, x._array.dtype) if isinstance(x, _core.TensorBase) else None


def _fit(grad, meta):
    """The gradient `grad` for an input of _meta `meta`: summed over broadcast dims to its shape,
    the real part for a real input, in its dtype.  None for an input that is no tensor."""
    if meta is None or grad is None:
        return None
    shape, dtype = meta
    grad = np.asarray(grad)
    if grad.shape != shape:
        grad = _core._sum_to(grad, shape)
    if dtype.kind != "c":
        grad = grad.real
    return _wrap(np.ascontiguousarray(grad, dtype=dtype))


class _Op(Function):
    """A complex op: `compute(ctx, *values)` gives the forward value, `vjp(ctx, g)` the gradient
    of each operand (numpy arrays, before _fit).  apply(np_dtype, *operands): operands are
    tensors or Python numbers, computed in np_dtype."""

    @staticmethod
    def compute(ctx, *values):
        raise NotImplementedError

    @staticmethod
    def vjp(ctx, g, m):
        raise NotImplementedError

    # whether the operands are computed in the op's dtype (not for ops of real operands)
    cast_operands = True
    # what the VJP reads (saved, so that an in-place write to it before backward raises, as
    # PyTorch's saved tensors do): the operands' values, the output's
    reads_inputs = True
    reads_output = True
    # whether vjp(ctx, g, m) also runs on tensors (m = the tapegrad module, ctx.values and
    # ctx.out tensors with their graphs): backward with create_graph=True; other ops refuse it
    graph = False
    # whether the output is a view of the first operand's storage (.real, .imag): it then shares
    # that storage's version counter, as PyTorch's views do
    views_input = False
    # whether the op is elementwise in two tensors: its output is then laid out as PyTorch's
    # TensorIterator lays a binary op's out (complex() of a column-major inv is column-major:
    # a flat view() of it raises, its flatten() copies), not row-major
    binary_layout = False

    @classmethod
    def forward(cls, ctx, np_dt, *operands):
        # a last operand of type _Params: the op's non-tensor arguments (ctx.params), no gradient
        params = operands[-1] if operands and type(operands[-1]) is _Params else None
        if params is not None:
            operands = operands[:-1]
        ctx.params = params
        dtypes = tuple(np_dt if cls.cast_operands or not isinstance(x, _core.TensorBase)
                       else x._array.dtype for x in operands)
        values = tuple(_value(x, dt) for x, dt in zip(operands, dtypes))
        with _IeeeResults():
            out = cls.compute(ctx, *values)
            res = _core.wrap_array(_core._iterator_layout(out, *values), False) \
                if cls.binary_layout else _wrap(out)
        if cls.views_input:
            _core._reinterpreting_view(res, operands[0], _core.is_grad_enabled())
            # a view op's output is an ordinary view (PyTorch's .real / .imag), not the view a
            # user's Function returns, which _core._function_record guards against writes
            ctx._plain_output_views = True
        ctx.dtypes = dtypes
        ctx.np_dt = np_dt
        ctx.metas = tuple(_meta(x) for x in operands) + ((None,) if params is not None else ())
        ctx.pending = operands
        return res

    @classmethod
    def apply(cls, np_dt, *operands):
        # Function.apply's work, less what a complex op never needs (setup_context, dirty and
        # non-differentiable outputs, a no_grad block around a numpy forward, save_for_backward):
        # this is the per-op cost of every complex op.  Forward-mode AD too: an op is no tangent
        # source (it has no jvp), unpack_dual's two reverse passes go through its backward.
        if not (_core.is_grad_enabled() and any(
                isinstance(x, _core.TensorBase) and x.requires_grad for x in operands)):
            return cls.forward(_Unrecorded(), np_dt, *operands)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = (False,) + tuple(
            isinstance(x, _core.TensorBase) and x.requires_grad for x in operands)
        ctx.materialize_grads = True
        out = _core._function_record(ctx, (np_dt,) + operands,
                                     cls.forward(ctx, np_dt, *operands), (), ())
        ctx._saved = ()
        ctx = out.grad_fn
        if isinstance(ctx, cls._backward_cls):
            # What the VJP reads, saved once the node is recorded, as the compiled ops save it:
            # the array itself (an in-place op records on a private copy, which later writes to
            # the tensor do not touch) with its storage's version, checked before backward.
            operands = ctx.__dict__.pop("pending")
            ctx.saved = ((tuple(_saved(x) for x in operands) if cls.reads_inputs else ())
                         + ((_saved(out, cls._backward_cls.__name__),) if cls.reads_output
                            else ()))
            if cls.graph and cls.reads_output and not cls.reads_inputs:
                # create_graph reads the output itself, with its graph (re-deriving it from the
                # operands would read values written since, which nothing checks)
                ctx.saved_output = _SavedOutput(out, 0)
            elif cls.graph and cls.reads_inputs:
                # Graph-free aliases, not the operands: an in-place op makes its tensor the
                # output of this record (a cycle through the tape, and a later value); the
                # graph is found again from the record's inputs (_graph_operands).
                ctx.graph_operands = tuple(x.detach() if isinstance(x, _core.TensorBase) else x
                                           for x in operands)
        return out

    @classmethod
    def backward(cls, ctx, g):
        if _core.is_grad_enabled():
            return cls._graph_backward(ctx, g)
        arrays = tuple(_checked(entry) for entry in ctx.saved)
        ctx.values = (tuple(_value(a, dt) for a, dt in zip(arrays, ctx.dtypes))
                      if cls.reads_inputs else (None,) * len(ctx.dtypes))
        ctx.out = arrays[-1] if cls.reads_output else None
        with _IeeeResults():
            grads = cls.vjp(ctx, g._array, np)
        grads = tuple(grads) + (None,) * (len(ctx.metas) - len(grads))
        return (None,) + tuple(_fit(gr, m) for gr, m in zip(grads, ctx.metas))

    @classmethod
    def _graph_backward(cls, ctx, g):
        """backward with create_graph=True: the same vjp on tensors, so the gradient has a
        graph (the output re-derived from the inputs, as linalg's factorisations do)."""
        if not cls.graph:
            raise NotImplementedError(f"tapegrad: backward with create_graph=True through the "
                                      f"complex op {type(ctx).__name__} is not implemented")
        for entry in ctx.saved:
            _checked(entry)                             # PyTorch's in-place check
        import tapegrad
        operands = _graph_operands(ctx)
        # An op that reads neither its inputs nor its output (neg, conj, ...) kept no operands:
        # its vjp unpacks one placeholder per input, as on the array path (fuzz seed 154).
        ctx.values = (tuple(_graph_value(x, dt) for x, dt in zip(operands, ctx.dtypes))
                      if cls.reads_inputs else (None,) * len(ctx.dtypes))
        ctx.out = None
        if cls.reads_output and not cls.reads_inputs:
            ctx.out = ctx.saved_output.get(ctx)
        elif cls.reads_output:
            params = (ctx.params,) if ctx.params is not None else ()
            ctx.out = cls.apply(ctx.np_dt, *operands, *params)
        try:
            grads = cls.vjp(ctx, g, tapegrad)
        finally:
            # Tensors with graphs, dropped: the output read back (polar) is this record's own
            # output, and kept on ctx it would hold the record through the tape, a cycle that
            # no collector sees
            ctx.values = ctx.out = None
        grads = tuple(grads) + (None,) * (len(ctx.metas) - len(grads))
        return (None,) + tuple(_fit_graph(gr, m) for gr, m in zip(grads, ctx.metas))


def _graph_operands(ctx):
    """The operands of ctx's record with their graphs (create_graph): each input record's output
    tensor, revived on the saved alias's storage when it died or was overwritten in place."""
    aliases = ctx.__dict__.get("graph_operands", ())
    if not any(isinstance(x, _core.TensorBase) for x in aliases):
        return aliases
    nodes = ctx.__dict__.get("_output_nodes") or ()
    n_out = len(ctx._output_meta)
    record = nodes[n_out] if len(nodes) > n_out else -1
    inputs = next((entry[2] for entry in _core.tape().records() if entry[0] == record), None)
    if inputs is None:
        raise RuntimeError(f"tapegrad: backward with create_graph=True through "
                           f"{type(ctx).__name__} could not find its record's inputs")
    # (input 0 of the record is the op's dtype argument)
    return tuple(_core._resurrect(inputs[j + 1], x)
                 if isinstance(x, _core.TensorBase) and inputs[j + 1] >= 0 else x
                 for j, x in enumerate(aliases))


def _graph_value(x, np_dt):
    """Operand x as a tensor of numpy dtype np_dt, in x's graph."""
    if not isinstance(x, _core.TensorBase):
        return _wrap(np.asarray(x, dtype=np_dt))
    return x if x._array.dtype == np_dt else x.to(_core.np_dtype_to_dtype(np_dt))


def _fit_graph(grad, meta):
    """_fit for a gradient tensor with a graph."""
    if meta is None or grad is None:
        return None
    shape, dtype = meta
    if tuple(grad.shape) != shape:
        grad = grad.sum_to_size(shape)
    if dtype.kind != "c" and grad.is_complex():
        grad = grad.real
    if grad._array.dtype != dtype:
        grad = grad.to(_core.np_dtype_to_dtype(dtype))
    return grad


def _cj(m, x):
    """conj(x) for an array (m = numpy), a tensor (m = tapegrad) or a Python number."""
    if isinstance(x, (int, float, builtins.complex)):
        return x.conjugate()
    return m.conj(x)


class _Unrecorded:
    """The ctx of a complex op run without recording (grad mode off, no input requiring grad)."""


_IeeeResults = _core.IeeeResults        # np.errstate(all="ignore"), at a fraction of its cost


class _Params(tuple):
    """The non-tensor arguments of an op (dim, keepdim, ...), passed as its last operand."""


def _saved(x, grad_fn_name=None):
    """An operand or output as the VJP will read it: (value, version, its value now, name of
    the node that made it) for a tensor, the number itself for a Python number."""
    if not isinstance(x, _core.TensorBase):
        return x
    version = _core._version_of(x)
    return (x._array, version, version.value,
            grad_fn_name if grad_fn_name is not None else _core._grad_fn_name_of(x))


def _checked(entry):
    """The saved value, after PyTorch's check that no in-place op wrote it since."""
    if not isinstance(entry, tuple):
        return entry
    arr, version, expected, name = entry
    if version.value != expected:
        raise _modified_in_place_error(arr, name, version.value, expected)
    return arr


def _op(name: str):
    """Name the grad_fn of a Function as PyTorch names the op's node."""
    def deco(cls):
        _torch_grad_fn_name(cls, name)
        return cls
    return deco


# -- binary arithmetic -----------------------------------------------------------------------------
# add, sub, mul and div are compiled records (src/tapegrad/ops_complex.pxi); pow is here.

def _pow_values(ctx, a, b):
    """a ** b with a tensor exponent: PyTorch's complex pow is C's cpow, exp(b log a) (_cpow),
    everywhere; numpy's power multiplies out a whole exponent, so it gave 1 for 0 ** 0
    (fuzz 59400251, PyTorch NaN), and at infinities 1 for inf ** 0 and NaN for
    (-inf+infj) ** -1 (PyTorch NaN and -0), and other last bits (a silent difference)."""
    dt = np.result_type(a, b)
    return _cpow(np.asarray(a).astype(dt, copy=False), np.asarray(b).astype(dt, copy=False))


@_op("PowBackward1")
class _Pow(_Op):
    graph = True
    compute = staticmethod(_pow_values)

    @staticmethod
    def vjp(ctx, g, m):
        a, b = ctx.values
        # d(a^b)/db = a^b log(a) (0 where a == 0 and b is real and >= 0, as PyTorch's
        # pow_backward_exponent: a zero base to 1+1j gives NaN there)
        db = m.where((a == 0) & (m.real(b) >= 0) & (m.imag(b) == 0), 0, ctx.out * m.log(a))
        power = _cpow(a, b - 1) if m is np else a ** (b - 1)
        return _pow_base_gradient(g, m, b, power), g * _cj(m, db)


_BINARY = {"pow": _Pow}


def _as_operand(x, other, name):
    if isinstance(x, np.complexfloating):
        return builtins.complex(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (_core.TensorBase, bool, int, float, builtins.complex)):
        return x
    raise TypeError(f"{name}(): unsupported operand type {type(x).__name__}")


def _binary(name, a, b):
    if isinstance(a, _core.TensorBase) and isinstance(b, _core.TensorBase):
        A, B = a._array, b._array
        dt = A.dtype if A.dtype == B.dtype else _core.result_type(a, b).np_dtype
        if A.shape != B.shape:
            _broadcast_shapes(A.shape, B.shape)         # PyTorch's message on a mismatch
        return _BINARY[name].apply(dt, a, b)
    a = _as_operand(a, b, name)
    b = _as_operand(b, a, name)
    dt = _core.result_type(a, b).np_dtype
    if isinstance(a, _core.TensorBase) and isinstance(b, _core.TensorBase):
        _broadcast_shapes(tuple(a.shape), tuple(b.shape))
    cls = _BINARY[name]
    if name == "pow" and not isinstance(b, _core.TensorBase):
        cls = _PowScalar
    return cls.apply(dt, a, b)


def _pow_number(z, b):
    """z ** b for an array z and a number b as PyTorch's kernel computes it: the exponents 0.5,
    -0.5 and -1 are its sqrt, rsqrt and reciprocal (a complex division, as the compiled
    ops_complex.pxi's), so their special values are those functions' (sqrt(-inf + 0.7j) is
    infj, 1 / -inf is -0; the general power's exp(b log z) gave inf+nanj and nan+nanj: fuzz
    62676977, silent).  -2 is its 1 / (z * z); 0, 1, 2 and 3 are its products, as numpy's
    (near enough: PyTorch's own last bits differ between its vectorised body and its scalar
    tail, whose products are contracted to fused multiply-adds); any other exponent is C's cpow, exp(b log z), which numpy's power is too except for a whole b
    (repeated products: other last bits, and NaN for (-inf + 0.7j) ** -3, PyTorch's -0)."""
    if b == 0.5:
        return np.sqrt(z)
    if b == -0.5:
        return 1 / np.sqrt(z)
    if b == -1:
        return 1 / z
    if b == -2:
        # its 1 / (z * z): a division (numpy's, Smith's, as c10's scalar one), where numpy's
        # power divides its own way ((-3e200j) ** -2 was nan+nanj, PyTorch -0-0j)
        return 1 / (z * z)
    e = builtins.complex(b)
    if e.imag == 0 and e.real.is_integer() and e.real not in (0, 1, 2, 3) \
            and abs(e.real) < 100:
        return _cpow(z, e.real).astype(z.dtype, copy=False)
    return z ** b


def _c_mul(x, y):
    """x * y for complex arrays as C multiplies them (C11 Annex G, libgcc's __muldc3): where the
    plain product is NaN in both parts but an operand is infinite (or a partial product
    overflowed), the infinity is recovered, so cpow's exp(y log x) is 0 or inf where numpy's
    product is NaN (exp(-3 log(inf + nanj)) is 0, as PyTorch's)."""
    dt = np.result_type(x, y)
    part = np.finfo(dt).dtype               # (a number y is computed in x's precision)
    a, b, c, d = (np.asarray(v, dtype=part) for v in (x.real, x.imag, np.real(y), np.imag(y)))
    with np.errstate(invalid="ignore", over="ignore"):
        ac, bd, ad, bc = a * c, b * d, a * d, b * c
        re, im = ac - bd, ad + bc
        lost = np.isnan(re) & np.isnan(im)
        if np.any(lost):
            def unit(v, inf):       # an infinite part as +-1, a finite one as +-0
                return np.where(inf, np.copysign(np.isinf(v).astype(v.dtype), v), v)

            def zero_nan(v, cond):  # a NaN part as +-0
                return np.where(cond & np.isnan(v), np.copysign(np.zeros_like(v), v), v)
            x_inf = np.isinf(a) | np.isinf(b)
            a, b = unit(a, x_inf), unit(b, x_inf)
            c, d = zero_nan(c, x_inf), zero_nan(d, x_inf)
            y_inf = np.isinf(c) | np.isinf(d)
            c, d = unit(c, y_inf), unit(d, y_inf)
            a, b = zero_nan(a, y_inf), zero_nan(b, y_inf)
            overflow = ~(x_inf | y_inf) & (np.isinf(ac) | np.isinf(bd) | np.isinf(ad)
                                           | np.isinf(bc))
            a, b, c, d = (zero_nan(v, overflow) for v in (a, b, c, d))
            again = lost & (x_inf | y_inf | overflow)
            re = np.where(again, np.inf * (a * c - b * d), re)
            im = np.where(again, np.inf * (a * d + b * c), im)
    out = np.empty(np.broadcast(re, im).shape, dtype=dt)
    out.real, out.imag = re, im
    return out


def _cpow(z, b):
    """C's cpow (PyTorch's std::pow of complex numbers): exp(b log z), b's product with log z
    as C's."""
    return np.exp(_c_mul(np.log(z), b))


@_op("PowBackward0")
class _PowScalar(_Pow):
    """z ** number: the gradient reads the input only, so (as PyTorch's PowBackward0 saves self
    and the exponent) an in-place write to the result before backward is no error."""
    reads_output = False
    compute = staticmethod(lambda ctx, a, b: _pow_number(a, b))

    @staticmethod
    def vjp(ctx, g, m):
        a, b = ctx.values
        # a^(b-1) by PyTorch's pow of a number (its rsqrt for b = 0.5); under create_graph the
        # exponent came as a 0-d tensor, and a power of tensors is the general one
        e = b.item() if isinstance(b, _core.TensorBase) else b
        power = _pow_number(a, e - 1) if m is np else a ** (e - 1)
        return (_pow_base_gradient(g, m, b, power),)


def _pow_base_gradient(g, m, b, power):
    """d(a^b)/da = b a^(b-1), given that power (0 where b == 0, as PyTorch)."""
    return g * _cj(m, m.where(b == 0, 0, b * power))


def _broadcast_shapes(sa, sb):
    from .creation import _broadcast_shapes as broadcast
    broadcast(tuple(sa), tuple(sb))


# -- one-input functions ---------------------------------------------------------------------------

# neg, abs, conj, conj_physical and the holomorphic functions (exp, log, sqrt, sin, tan, ...)
# are compiled records (src/tapegrad/ops_complex.pxi).

@_op("AngleBackward0")
class _Angle(_Op):
    """arg z (real): d arg/dx = -y/|z|^2, d arg/dy = x/|z|^2, so the gradient is g * i z / |z|^2
    (0 at 0)."""
    reads_output = False
    graph = True
    compute = staticmethod(lambda ctx, z: np.angle(z))

    @staticmethod
    def vjp(ctx, g, m):
        (z,) = ctx.values
        r2 = m.real(z * _cj(m, z))
        return (m.where(r2 == 0, 0, m.real(g) * 1j * z / m.where(r2 == 0, 1, r2)),)


def _sgn(z, abs_z):
    return np.where(abs_z == 0, 0, z / np.where(abs_z == 0, 1, abs_z)).astype(z.dtype)


@_op("SgnBackward0")
class _Sgn(_Op):
    """z / |z| (0 at 0): not holomorphic, d sgn/dz = 1/(2|z|), d sgn/dz̄ = -sgn^2/(2|z|), so the
    gradient is (g - sgn^2 conj(g)) / (2|z|)."""
    compute = staticmethod(lambda ctx, z: _sgn(z, np.abs(z)))
    graph = True

    @staticmethod
    def vjp(ctx, g, m):
        (z,) = ctx.values
        a = m.abs(z)
        s = ctx.out
        safe = m.where(a == 0, 1, 2 * a)
        return (m.where(a == 0, 0, (g - s * s * _cj(m, g)) / safe),)


def conj(z):
    """The conjugate of complex tensor z (ConjBackward0; _more_math.conj sets the conj bit)."""
    return _core._complex_op("conj", z)


def conj_physical(z):
    return _core._complex_op("conj_physical", z)


# PyTorch computes z.real and z.imag as view_as_real(z).select(-1, 0 or 1), so their node is a
# SelectBackward0 (what a printed tensor shows as its grad_fn).
@_op("SelectBackward0")
class _Real(_Op):
    reads_inputs = reads_output = False
    graph = True
    views_input = True
    compute = staticmethod(lambda ctx, z: z.real)
    vjp = staticmethod(lambda ctx, g, m: (m.real(g) + 0j,))


@_op("SelectBackward0")
class _Imag(_Op):
    reads_inputs = reads_output = False
    graph = True
    views_input = True
    compute = staticmethod(lambda ctx, z: z.imag)
    vjp = staticmethod(lambda ctx, g, m: (1j * m.real(g),))


# Ops PyTorch refuses for complex tensors (complex numbers have no order): name -> error.  The
# compiled entry points and the Python ones (sort, topk, ...) ask `refuse` with these names.
_NOT_IMPLEMENTED_FOR = "\"{kernel}\" not implemented for '{t}'"
_REFUSED = {
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead."),
    "relu": (NotImplementedError, "clamp is not supported for complex types"),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
    "erf": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "erf_vml_cpu")),
    "max_all": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "max_all")),
    "min_all": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "min_all")),
    "amax": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "max_values_cpu")),
    "amin": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "min_values_cpu")),
    "aminmax": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "aminmax_cpu")),
    "aminmax_0d_dim": (RuntimeError, "aminmax not implemented for {t}"),
    "max_dim": (RuntimeError, "max(): does not support complex input"),
    "min_dim": (RuntimeError, "min(): does not support complex input"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "fmax": (RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": (RuntimeError, "fmin not implemented for complex tensors."),
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "unique": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "unique")),
    "unique_dim": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "unique_dim")),
    "floor_cpu": (NotImplementedError, "floor is not supported for complex inputs"),
    "ceil_cpu": (NotImplementedError, "ceil is not supported for complex inputs"),
    "trunc_cpu": (NotImplementedError, "trunc is not supported for complex inputs"),
    "frac_cpu": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "frac_cpu")),
    "round_cpu": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "round_vml_cpu")),
    "sort": (RuntimeError, " Sort does not support complex dtypes on CPU"),
    "topk": (RuntimeError, " topk does not support complex dtypes on CPU"),
    "median": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "median_cpu")),
    "kthvalue": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "kthvalue_cpu")),
    "cummax": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "cummax_cpu")),
    "cummin": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "cummin_cpu")),
    "mode": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "mode_cpu")),
    "isin": (RuntimeError, "Unsupported input type encountered for isin(): {t}"),
    "deg2rad": (RuntimeError, "deg2rad is not supported for complex tensors."),
    "rad2deg": (RuntimeError, "rad2deg is not supported for complex tensors."),
    "i0": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "i0_vml_cpu")),
    "heaviside": (RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "zeta": (NotImplementedError, _NOT_IMPLEMENTED_FOR.replace("{kernel}", "zeta_cpu")),
    # |x| is real: written back into a complex x it would pass for a complex result
    "abs_": (RuntimeError, "In-place abs is not supported for complex tensors."),
}


def refuse(name, x):
    """Raise PyTorch's error for op `name` (a key of _REFUSED) on complex tensor x."""
    error, message = _REFUSED[name]
    raise error(message.format(t=_scalar_type(x._array.dtype)))


def refuse_if_complex(name, x):
    """refuse(name, x) when x is a complex tensor (for the Python-level ops)."""
    if isinstance(x, _core.TensorBase) and x._array.dtype.kind == "c":
        refuse(name, x)


def _unary(name, x):
    if name in _REFUSED:
        return refuse(name, x)
    cls = {"angle": _Angle, "sgn": _Sgn, "real": _Real, "imag": _Imag}[name]
    return cls.apply(x._array.dtype, x)


# -- comparisons -----------------------------------------------------------------------------------

_ORDERED = {"lt", "le", "gt", "ge"}


def _compare(name, a, b):
    a = _as_operand(a, b, name)
    b = _as_operand(b, a, name)
    dt = _core.result_type(a, b).np_dtype
    if name in _ORDERED or name.startswith("bitwise"):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_scalar_type(dt)}'")
    fn = getattr(np, {"eq": "equal", "ne": "not_equal"}.get(name, name))
    return _wrap(fn(_value(a, dt), _value(b, dt)))


# -- construction: complex, polar, view_as_real / view_as_complex ---------------------------------

@_op("ComplexBackward0")
class _Complex(_Op):
    reads_inputs = reads_output = False
    cast_operands = False
    binary_layout = True

    @staticmethod
    def compute(ctx, re, im):
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), _complex_of(re))
        out.real = re
        out.imag = im
        return out

    graph = True
    vjp = staticmethod(lambda ctx, g, m: (m.real(g), m.imag(g)))


@_op("PolarBackward0")
class _Polar(_Op):
    """abs * exp(i angle): d/d abs = Re(conj(sgn(out)) g), d/d angle = Re(conj(i out) g).  As
    PyTorch's polar_backward, it reads the output only (so writing to abs or angle after the
    forward does not invalidate it), and sgn(out) is PyTorch's unit: 0 where abs is 0, -e^{i
    angle} where abs is negative."""
    cast_operands = False
    reads_inputs = False
    binary_layout = True

    @staticmethod
    def compute(ctx, r, theta):
        # cos and sin correctly rounded to theta's precision (numpy's float32 SIMD cos may be
        # one ulp off, and |polar(1, t)| would then print 1.0000 where PyTorch prints 1.)
        cos = np.cos(theta.astype(np.float64)).astype(theta.dtype)
        sin = np.sin(theta.astype(np.float64)).astype(theta.dtype)
        out = np.empty(np.broadcast_shapes(r.shape, theta.shape), _complex_of(r))
        out.real = r * cos
        out.imag = r * sin
        return out

    graph = True

    @staticmethod
    def vjp(ctx, g, m):
        out = ctx.out
        unit = _sgn(out, np.abs(out)) if m is np else m.sgn(out)
        return m.real(g * _cj(m, unit)), m.real(g * _cj(m, 1j * out))


def _complex_of(real_values):
    """The complex dtype with real_values' precision."""
    return np.result_type(real_values.dtype, np.complex64)


def _real_pair(fn, a, b, what):
    _check_tensor(a, fn, what[0], 1)
    _check_tensor(b, fn, what[1], 2)
    da, db = a._array.dtype, b._array.dtype
    if da.kind != "f" or db.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_scalar_type(da)} and {_scalar_type(db)}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {_scalar_type(da)} but got scalar "
                           f"type {_scalar_type(db)} for second argument")
    if da == np.float16:
        raise TypeError(_core.NO_COMPLEX32)
    _check_broadcast(a, b)
    _core._complex_in_use()
    return np.result_type(da, np.complex64)


def complex(real, imag):
    """A complex tensor real + i imag from two real tensors of one floating dtype (float32 gives
    complex64, float64 complex128); broadcasting; differentiable in both."""
    dt = _real_pair("complex", real, imag, ("real", "imag"))
    return _Complex.apply(dt, real, imag)


def polar(abs, angle):
    """The complex tensor abs * (cos(angle) + i sin(angle)); differentiable in both."""
    dt = _real_pair("polar", abs, angle, ("abs", "angle"))
    return _Polar.apply(dt, abs, angle)


@_op("ViewAsRealBackward0")
class _ViewAsReal(Function):
    @staticmethod
    def forward(ctx, z):
        ctx.meta = _meta(z)
        return _wrap(_core._real_parts(z._array))

    @staticmethod
    def backward(ctx, g):
        if _core.is_grad_enabled():                     # create_graph
            return _fit_graph(view_as_complex(g.contiguous()), ctx.meta)
        g = g._array
        return _fit(g[..., 0] + 1j * g[..., 1], ctx.meta)

    @staticmethod
    def jvp(ctx, t):                                    # forward-mode AD: linear
        return None if t is None else view_as_real(t.resolve_conj())


@_op("ViewAsComplexBackward0")
class _ViewAsComplex(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.meta = _meta(x)
        a = x._array
        return _wrap(_complex_view(a, np.complex64 if a.dtype == np.float32 else np.complex128))

    @staticmethod
    def backward(ctx, g):
        if _core.is_grad_enabled():                     # create_graph
            return _fit_graph(view_as_real(g.resolve_conj()), ctx.meta)
        return _fit(_core._real_parts(g._array), ctx.meta)

    @staticmethod
    def jvp(ctx, t):                                    # forward-mode AD: linear
        return None if t is None else view_as_complex(t.contiguous())


def _complex_view(a, cdt):
    """The complex view of float array a of shape (..., 2) whose last stride is one element,
    sharing its memory."""
    first = a[..., 0]
    if a.size == 0:
        return np.empty(first.shape, dtype=cdt)        # (no memory to share)
    return np.ndarray(first.shape, dtype=cdt, buffer=_base_buffer(a), offset=_offset(a),
                      strides=first.strides)


def _base_buffer(a):
    """The array owning a's memory, as a contiguous array (numpy takes only those as buffers).
    An owner made in a permuted layout (the clone of a permuted tensor keeps its strides:
    held-out fuzz 59910464) is its own axes reordered by decreasing stride: the same memory,
    C-contiguous."""
    from ._strided import dense_in_memory_order
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    if not (base.flags.c_contiguous or base.flags.f_contiguous):
        dense = dense_in_memory_order(base)
        if dense is not None:
            return dense
    return base


def _offset(a):
    return (a.__array_interface__["data"][0]
            - _base_buffer(a).__array_interface__["data"][0])


def view_as_real(input):
    """The real view of a complex tensor: shape (..., 2) holding real and imaginary parts,
    sharing memory with input."""
    _check_tensor(input, "view_as_real")
    if input._array.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if input.is_conj():
        # PyTorch refuses: a real view of a lazily conjugated tensor cannot alias its memory
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")
    return _view_of(_ViewAsReal, input)


def view_as_complex(input):
    """The complex view of a float tensor of shape (..., 2) (last dim: real, imaginary), sharing
    memory with input."""
    _check_tensor(input, "view_as_complex")
    a = input._array
    if a.dtype.kind != "f":
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {_scalar_type(a.dtype)}")
    if a.dtype == np.float16:
        raise TypeError(_core.NO_COMPLEX32)
    if a.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.size == 0:
        pass        # (no element to read; tapegrad's empty results have zero strides, seed 56000183)
    elif a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    elif any(s % (2 * a.itemsize) for s, n in zip(a.strides[:-1], a.shape) if n != 1):
        # (a dim of size 1 is never stepped along: PyTorch ignores its stride, 58104149)
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    elif input.storage_offset() % 2:
        # (a complex element is two reals: it cannot start between two complex slots)
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    _core._complex_in_use()
    return _view_of(_ViewAsComplex, input)


def _view_of(view_fn, base):
    """view_fn(base), a view of base reading its storage as another dtype (a view to the core:
    rebased after a write to base, see _core._reinterpreting_view)."""
    grad_mode = _core.is_grad_enabled()       # (Function.apply runs forward under no_grad)
    out = view_fn.apply(base)
    _core._reinterpreting_view(out, base, grad_mode)
    return out


# -- reductions -----------------------------------------------------------------------------------

def _regrow(g, axes, keepdim):
    """The gradient g of a reduction over `axes` with the reduced dims back (size 1); g an array
    or (create_graph, one axis) a tensor."""
    if keepdim:
        return g
    if isinstance(g, np.ndarray):
        return np.expand_dims(g, axes)
    for axis in sorted(axes) if isinstance(axes, tuple) else (axes,):
        g = g.unsqueeze(axis)
    return g


def _prod_of_others(z, axis):
    """For each element of z, the product of the other elements along `axis`: exclusive running
    products from both ends (exact with zeros in z, where out / z is not)."""
    ones = np.ones_like(np.take(z, [0], axis))
    left = np.concatenate([ones, np.cumprod(z, axis)], axis)
    right = np.flip(np.cumprod(np.flip(z, axis), axis), axis)
    right = np.concatenate([right, ones], axis)
    n = z.shape[axis]
    return (np.take(left, np.arange(n), axis) * np.take(right, np.arange(1, n + 1), axis))


def _prod_of_others_graph(z, axis):
    """_prod_of_others of a tensor, with its graph (create_graph): row i of an n x n matrix holds
    z along `axis` with element i replaced by 1, and its product is element i's (exact with
    zeros; n^2 elements, for the second derivative only)."""
    import tapegrad
    zt = z.movedim(axis, -1)
    n = zt.shape[-1]
    rows = zt.unsqueeze(-2).expand(*zt.shape[:-1], n, n)
    return rows.masked_fill(tapegrad.eye(n, dtype=tapegrad.bool), 1).prod(-1).movedim(-1, axis)


def _others(m, z, axis):
    return _prod_of_others(z, axis) if m is np else _prod_of_others_graph(z, axis)


@_op("ProdBackward0")
class _ProdAll(_Op):
    reads_output = False
    graph = True
    compute = staticmethod(lambda ctx, z: np.prod(z))

    @staticmethod
    def vjp(ctx, g, m):
        (z,) = ctx.values
        flat = z.reshape(-1)
        if flat.shape[0] == 0:
            return (m.zeros_like(z),)
        if m is np:
            # PyTorch's prod_backward: without zeros g * conj(out / z) (NaN at an infinite
            # element, as PyTorch's); two zeros make every product of the others 0, returned
            # without multiplying (an infinite or NaN g gives 0, not NaN); under create_graph
            # (below) the products of the others
            zeros = np.count_nonzero(flat == 0)
            if zeros == 0:
                return (g * np.conj(np.prod(flat) / z),)
            if zeros > 1:
                return (np.zeros_like(z),)
        return ((g * _cj(m, _others(m, flat, 0))).reshape(z.shape),)


@_op("ProdBackward1")
class _ProdDim(_Op):
    reads_output = False
    graph = True

    @staticmethod
    def compute(ctx, z):
        dim, keepdim = ctx.params
        return np.prod(z, axis=dim, keepdims=keepdim) if z.ndim else z.copy()

    @staticmethod
    def vjp(ctx, g, m):
        (z,) = ctx.values
        dim, keepdim = ctx.params
        if z.ndim == 0:
            return (g,)
        if z.shape[dim] == 0:
            return (m.zeros_like(z),)
        g = _regrow(g, dim, keepdim)
        if m is np and not (z == 0).any():
            # PyTorch's prod_backward without a zero anywhere: g * conj(out / z) (NaN at an
            # infinite element, as PyTorch's)
            return (g * np.conj(np.prod(z, axis=dim, keepdims=True) / z),)
        return (g * _cj(m, _others(m, z, dim)),)


def _prod_dtype(x, dim, keepdim, dtype):
    """prod(x, dim, dtype=...) with a complex input or dtype: x cast to dtype first, as PyTorch
    casts (a complex input cast to a real dtype drops its imaginary part, with its warning; the
    cast's gradient is the real adjoint), then the product in that dtype."""
    z = x.to(dtype)
    if not z.is_complex():
        return z.prod() if dim is None else z.prod(dim, keepdim)
    return _prod(z, dim, keepdim)


def _prod(z, dim, keepdim):
    if dim is None:
        return _ProdAll.apply(z._array.dtype, z)
    from ._extra_ops import _dim
    d = _dim(dim, max(z.ndim, 1)) if z.ndim else 0
    return _ProdDim.apply(z._array.dtype, z, _Params((d, keepdim)))


@_op("LogsumexpBackward0")
class _Logsumexp(_Op):
    """log(sum(exp(z))), shifted by the largest real part (PyTorch's): gradient
    g * conj(exp(z - out)), also with create_graph."""

    graph = True

    @staticmethod
    def compute(ctx, z):
        axes, keepdim = ctx.params
        shift = np.max(z.real, axis=axes, keepdims=True, initial=-np.inf) if z.size else 0
        shift = np.where(np.isinf(shift), 0, shift)
        out = np.log(np.sum(np.exp(z - shift), axis=axes, keepdims=True)) + shift
        return out if keepdim else np.squeeze(out, axes)

    @staticmethod
    def vjp(ctx, g, m):
        (z,) = ctx.values
        axes, keepdim = ctx.params
        out = _regrow(ctx.out, axes, keepdim)
        return (_regrow(g, axes, keepdim) * _cj(m, m.exp(z - out)),)


def _logsumexp(z, axes, keepdim):
    return _Logsumexp.apply(z._array.dtype, z, _Params((axes, keepdim)))


def _linear(x, w, bias):
    """F.linear: x @ w^T + bias, of complex operands, composed of the complex matmul and add."""
    y = _core.matmul(x, w.t() if w.ndim == 2 else w)
    return y if bias is None else y + bias


def _l1_loss(input, target, reduction):
    """F.l1_loss of complex operands: the mean (or sum) of |input - target| (real)."""
    d = (input - target).abs()
    return d.mean() if reduction == "mean" else d.sum() if reduction == "sum" else d


# -- reductions by composition ---------------------------------------------------------------------

@_op("VarBackward0")
class _VarWithoutDof(Function):
    """A complex var over all elements with no degrees of freedom (its value given): PyTorch's
    gradient is grad * where(z == mean(z), NaN, inf), real, compared on the complex values.  The
    parts' variances would each compare their own part (a NaN real part beside an equal imaginary
    one gave inf + NaNj, PyTorch's inf + 0j)."""

    @staticmethod
    def forward(ctx, z, value):
        A = z._array
        ctx.factor = np.where(A == A.mean(), np.nan, np.inf).astype(A.real.dtype)
        return _core.wrap_array(value._array.copy(), False)

    @staticmethod
    def backward(ctx, grad):
        return grad * _core.wrap_array(ctx.factor, False), None


def _var_std(is_std, z, dim, correction, keepdim):
    """var of a complex tensor: E|z - mean|^2 = var(real) + var(imag) (a real tensor); std its
    square root.  Composed of recorded ops, so the gradient is theirs, except with no degrees
    of freedom over all elements (_VarWithoutDof)."""
    var = (_core.var(real(z), dim, correction=correction, keepdim=keepdim)
           + _core.var(imag(z), dim, correction=correction, keepdim=keepdim))
    if (dim is None or z.ndim == 0) and z.numel() - correction <= 0 and z.requires_grad \
            and _core.is_grad_enabled():
        var = _VarWithoutDof.apply(z, var.detach())
    # (the composite's last node named as PyTorch's one node: its repr shows grad_fn=<...>)
    if not is_std:
        return _core._name_grad_fn(var, "VarBackward0")
    # sqrt's derivative is infinite at 0, times var's zero gradient: NaN.  PyTorch's std gradient
    # is 0 where std is 0 (fuzz 58402318), which routing no gradient through zeros gives.
    return _core._name_grad_fn(_core.where(var == 0, 0.0, var).sqrt(), "StdBackward0")


def _norm(z, p, dim, keepdim):
    """torch.norm of a complex tensor: a vector norm (or 'fro') is the norm of the moduli;
    the nuclear norm is not (it sums singular values), so it goes to matrix_norm."""
    if isinstance(p, str) and p == "nuc":
        from .linalg import matrix_norm
        dims = tuple(range(z.ndim)) if dim is None else dim
        return matrix_norm(z, "nuc", dims, keepdim)
    return _core.norm(z.abs(), p, dim, keepdim)


def real(z):
    return _unary("real", z)


def imag(z):
    return _unary("imag", z)


# -- the door from the core ------------------------------------------------------------------------

def dispatch(name, *args):
    """Run complex op `name` (called by the compiled entry points, complex_hook.pxi, and by the
    Python-level ops)."""
    if name in _COMPILED:
        return _core._complex_op(name, *args)
    if name in _BINARY:
        return _binary(name, *args)
    op = _ENTRIES.get(name)
    return op(*args) if op is not None else _unary(name, *args)


# the entry points other than the binary and one-input ops, by the name the core calls them
_ENTRIES = {"compare": _compare, "refuse": refuse, "var_std": _var_std,
            "norm": _norm, "prod": _prod, "prod_dtype": _prod_dtype, "logsumexp": _logsumexp, "linear": _linear,
            "l1_loss": _l1_loss}


_COMPILED = _core._compiled_complex_ops()
_core._install_complex_ops(dispatch, _SAFE_COMPILED_OPS)
