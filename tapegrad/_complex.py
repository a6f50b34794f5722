"""Complex tensors (complex64 / complex128): the ops that know complex arithmetic.

numpy holds and computes the values.  The compiled core is real-valued: its elementwise, math,
comparison and matmul entry points hand a complex operand to `dispatch` (complex_hook.pxi), and
it refuses to record any other compiled op on complex values unless that op's VJP is linear with
real coefficients (shape ops, sums, indexing, casts: `_SAFE_COMPILED_OPS`), whose gradients are
right for complex values as they are.

Gradients follow PyTorch's convention: for a real loss L and z = x + iy, z.grad = dL/dx + i dL/dy
(the conjugate Wirtinger derivative, times 2).  An op f receiving the output gradient g gives its
input  g * conj(df/dz) + conj(g) * df/dz̄ ; for a holomorphic f (exp, mul, ...) the second term
is zero, so the input gradient is g * conj(f'(z)).  A real input of a complex op receives the real
part of that (its imaginary direction does not exist).

Each op is an autograd.Function: its forward and its VJP side by side, recorded as one node named
as PyTorch names it (MulBackward0, ...).
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _core
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_tensor
from .autograd.function import Function, _modified_in_place_error

# grad_fn names of compiled ops whose VJP is linear with real coefficients: right for complex.
_SAFE_COMPILED_OPS = frozenset({
    "AddBackward0", "SubBackward0", "RsubBackward1", "NegBackward0", "SelectBackward0",
    "SliceBackward0", "IndexBackward0", "AliasBackward0", "UnsqueezeBackward0",
    "IndexSelectBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
    "SqueezeBackward4", "UnsafeViewBackward0", "CloneBackward0", "TransposeBackward0",
    "ViewBackward0", "ReshapeAliasBackward0", "TBackward0", "PermuteBackward0",
    "ExpandBackward0", "RepeatBackward0", "CatBackward0", "StackBackward0", "SplitBackward0",
    "SplitWithSizesBackward0", "UnbindBackward0", "SumBackward0", "SumBackward1",
    "MeanBackward0", "MeanBackward1", "ToCopyBackward0", "FunctionBackward", "FunctionOutput",
    "AccumulateGrad", "TrilBackward0", "TriuBackward0", "CopySlices", "MaskedFillBackward0",
    "MaskedFillBackward1", "MaskedSelectBackward0", "WhereBackward0", "ConstantPadNdBackward0",
    "AsStridedBackward0", "GatherBackward0",
    # overwrites: a zero gradient, or (fill_ with a tensor value) the summed one
    "ZeroBackward0", "FillBackward2", "FillBackward3",
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
    def vjp(ctx, g):
        raise NotImplementedError

    # whether the operands are computed in the op's dtype (not for ops of real operands)
    cast_operands = True
    # what the VJP reads (saved, so that an in-place write to it before backward raises, as
    # PyTorch's saved tensors do): the operands' values, the output's
    reads_inputs = True
    reads_output = True

    @classmethod
    def forward(cls, ctx, np_dt, *operands):
        dtypes = tuple(np_dt if cls.cast_operands or not isinstance(x, _core.TensorBase)
                       else x._array.dtype for x in operands)
        values = tuple(_value(x, dt) for x, dt in zip(operands, dtypes))
        with np.errstate(all="ignore"):
            res = _wrap(cls.compute(ctx, *values))
        ctx.dtypes = dtypes
        ctx.metas = tuple(_meta(x) for x in operands)
        ctx.pending = operands
        return res

    @classmethod
    def apply(cls, np_dt, *operands):
        out = super().apply(np_dt, *operands)
        ctx = out.grad_fn
        if isinstance(ctx, cls._backward_cls):
            # What the VJP reads, saved once the node is recorded, as the compiled ops save it:
            # the array itself (an in-place op records on a private copy, which later writes to
            # the tensor do not touch) with its storage's version, checked before backward.
            operands = ctx.__dict__.pop("pending")
            ctx.saved = ((tuple(_saved(x) for x in operands) if cls.reads_inputs else ())
                         + ((_saved(out, cls._backward_cls.__name__),) if cls.reads_output
                            else ()))
        return out

    @classmethod
    def backward(cls, ctx, g):
        arrays = tuple(_checked(entry) for entry in ctx.saved)
        ctx.values = (tuple(_value(a, dt) for a, dt in zip(arrays, ctx.dtypes))
                      if cls.reads_inputs else (None,) * len(ctx.dtypes))
        ctx.out = arrays[-1] if cls.reads_output else None
        with np.errstate(all="ignore"):
            grads = cls.vjp(ctx, g._array)
        return (None,) + tuple(_fit(gr, m) for gr, m in zip(grads, ctx.metas))


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

@_op("AddBackward0")
class _Add(_Op):
    reads_inputs = reads_output = False
    compute = staticmethod(lambda ctx, a, b: a + b)
    vjp = staticmethod(lambda ctx, g: (g, g))


@_op("SubBackward0")
class _Sub(_Op):
    reads_inputs = reads_output = False
    compute = staticmethod(lambda ctx, a, b: a - b)
    vjp = staticmethod(lambda ctx, g: (g, -g))


@_op("MulBackward0")
class _Mul(_Op):
    reads_output = False
    compute = staticmethod(lambda ctx, a, b: a * b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.values
        return g * np.conj(b), g * np.conj(a)


@_op("DivBackward0")
class _Div(_Op):
    reads_output = False                                # as PyTorch: a and b, not a / b
    compute = staticmethod(lambda ctx, a, b: a / b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.values
        # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
        return g / np.conj(b), -g * np.conj(a / b / b)


@_op("PowBackward1")
class _Pow(_Op):
    compute = staticmethod(lambda ctx, a, b: a ** b)

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.values
        # d(a^b)/da = b a^(b-1) (0 where b == 0, as PyTorch), d(a^b)/db = a^b log(a) (0 where
        # a == 0 and Re b >= 0)
        da = np.where(b == 0, 0, b * a ** (b - 1))
        db = np.where((a == 0) & (np.real(b) >= 0), 0, ctx.out * np.log(a))
        return g * np.conj(da), g * np.conj(db)


_BINARY = {"add": _Add, "sub": _Sub, "mul": _Mul, "div": _Div, "pow": _Pow}


def _as_operand(x, other, name):
    if isinstance(x, np.complexfloating):
        return builtins.complex(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (_core.TensorBase, bool, int, float, builtins.complex)):
        return x
    raise TypeError(f"{name}(): unsupported operand type {type(x).__name__}")


def _binary(name, a, b):
    a = _as_operand(a, b, name)
    b = _as_operand(b, a, name)
    dt = _core.result_type(a, b).np_dtype
    if isinstance(a, _core.TensorBase) and isinstance(b, _core.TensorBase):
        from .creation import _broadcast_shapes
        _broadcast_shapes(tuple(a.shape), tuple(b.shape))   # PyTorch's message on a mismatch
    cls = _BINARY[name]
    if name == "pow" and not isinstance(b, _core.TensorBase):
        cls = _PowScalar
    return cls.apply(dt, a, b)


@_op("PowBackward0")
class _PowScalar(_Pow):
    pass


# -- one-input functions ---------------------------------------------------------------------------

def _holomorphic(name, f, df, reads):
    """A holomorphic function f with derivative df(z, out), which reads z, out or both (reads:
    "input", "output", "both"): input gradient g * conj(f'(z))."""
    @_op(name)
    class _Holo(_Op):
        reads_inputs = reads in ("input", "both")
        reads_output = reads in ("output", "both")
        compute = staticmethod(lambda ctx, z: f(z))

        @staticmethod
        def vjp(ctx, g):
            (z,) = ctx.values
            return (g * np.conj(df(z, ctx.out)),)
    _Holo.__name__ = _Holo.__qualname__ = "_" + name
    return _Holo


_UNARY = {
    "neg": _holomorphic("NegBackward0", np.negative, lambda z, o: -1, "none"),
    "exp": _holomorphic("ExpBackward0", np.exp, lambda z, o: o, "output"),
    "log": _holomorphic("LogBackward0", np.log, lambda z, o: 1 / z, "input"),
    "sqrt": _holomorphic("SqrtBackward0", np.sqrt, lambda z, o: 1 / (2 * o), "output"),
    "rsqrt": _holomorphic("RsqrtBackward0", lambda z: 1 / np.sqrt(z), lambda z, o: -0.5 * o ** 3,
                          "output"),
    "reciprocal": _holomorphic("ReciprocalBackward0", np.reciprocal, lambda z, o: -o * o,
                               "output"),
    "sin": _holomorphic("SinBackward0", np.sin, lambda z, o: np.cos(z), "input"),
    "cos": _holomorphic("CosBackward0", np.cos, lambda z, o: -np.sin(z), "input"),
    "tanh": _holomorphic("TanhBackward0", np.tanh, lambda z, o: 1 - o * o, "output"),
    "sigmoid": _holomorphic("SigmoidBackward0", lambda z: 1 / (1 + np.exp(-z)),
                            lambda z, o: o * (1 - o), "output"),
    "log1p": _holomorphic("Log1PBackward0", np.log1p, lambda z, o: 1 / (1 + z), "input"),
    "expm1": _holomorphic("Expm1Backward0", np.expm1, lambda z, o: o + 1, "output"),
}


@_op("AbsBackward0")
class _Abs(_Op):
    """|z| (real): gradient Re(g) * sgn(z), 0 at 0.  Computed as hypot(x, y), as PyTorch's
    std::abs (numpy's complex64 abs can be one ulp off it: |polar(1, t)| = 1.0000001)."""
    reads_output = False
    compute = staticmethod(lambda ctx, z: np.hypot(z.real, z.imag))

    @staticmethod
    def vjp(ctx, g):
        (z,) = ctx.values
        return (np.real(g) * _sgn(z, np.hypot(z.real, z.imag)),)


def _sgn(z, abs_z):
    return np.where(abs_z == 0, 0, z / np.where(abs_z == 0, 1, abs_z)).astype(z.dtype)


@_op("AngleBackward0")
class _Angle(_Op):
    """arg z (real): d arg/dx = -y/|z|^2, d arg/dy = x/|z|^2, so the gradient is g * i z / |z|^2
    (0 at 0)."""
    reads_output = False
    compute = staticmethod(lambda ctx, z: np.angle(z))

    @staticmethod
    def vjp(ctx, g):
        (z,) = ctx.values
        r2 = (z * np.conj(z)).real
        return (np.where(r2 == 0, 0, np.real(g) * 1j * z / np.where(r2 == 0, 1, r2)),)


@_op("SgnBackward0")
class _Sgn(_Op):
    """z / |z| (0 at 0): not holomorphic, d sgn/dz = 1/(2|z|), d sgn/dz̄ = -sgn^2/(2|z|), so the
    gradient is (g - sgn^2 conj(g)) / (2|z|)."""
    compute = staticmethod(lambda ctx, z: _sgn(z, np.abs(z)))

    @staticmethod
    def vjp(ctx, g):
        (z,) = ctx.values
        a = np.abs(z)
        s = ctx.out
        return (np.where(a == 0, 0, (g - s * s * np.conj(g)) / np.where(a == 0, 1, 2 * a)),)


@_op("ConjPhysicalBackward0")
class _ConjPhysical(_Op):
    reads_inputs = reads_output = False
    compute = staticmethod(lambda ctx, z: np.conj(z))
    vjp = staticmethod(lambda ctx, g: (np.conj(g),))


@_op("ConjBackward0")
class _Conj(_ConjPhysical):
    """conj(): PyTorch's lazy conjugate view, here materialised (torch.conj sets is_conj)."""


def conj(z):
    return _Conj.apply(z._array.dtype, z)


def conj_physical(z):
    return _ConjPhysical.apply(z._array.dtype, z)


@_op("RealBackward0")
class _Real(_Op):
    reads_inputs = reads_output = False
    compute = staticmethod(lambda ctx, z: z.real)
    vjp = staticmethod(lambda ctx, g: (np.real(g) + 0j,))


@_op("ImagBackward0")
class _Imag(_Op):
    reads_inputs = reads_output = False
    compute = staticmethod(lambda ctx, z: z.imag)
    vjp = staticmethod(lambda ctx, g: (1j * np.real(g),))


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
    "max_dim": (RuntimeError, "max(): does not support complex input"),
    "min_dim": (RuntimeError, "min(): does not support complex input"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
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
    cls = {"abs": _Abs, "angle": _Angle, "sgn": _Sgn, "conj": _Conj, "real": _Real,
           "imag": _Imag}.get(name) or _UNARY[name]
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


# -- matmul ----------------------------------------------------------------------------------------

class _Matmul(_Op):
    """A @ B for same-dtype complex tensors: dA = g @ B^H, dB = A^H @ g."""
    reads_output = False
    compute = staticmethod(lambda ctx, a, b: np.matmul(a, b))

    @staticmethod
    def vjp(ctx, g):
        a, b = ctx.values
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        # g as the product of the matrices a2 @ b2 (1-D operands made matrices) is shaped
        g2 = g.reshape(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
                       + (a2.shape[-2], b2.shape[-1]))
        ga = np.matmul(g2, np.conj(np.swapaxes(b2, -1, -2)))
        gb = np.matmul(np.conj(np.swapaxes(a2, -1, -2)), g2)
        ga = _core._sum_to(ga, a2.shape).reshape(a.shape)
        gb = _core._sum_to(gb, b2.shape).reshape(b.shape)
        return ga, gb


_MATMUL_NAMES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
                 (3, 3): "BmmBackward0"}
_MATMULS = {key: _op(name)(type("_Matmul" + name, (_Matmul,), {}))
            for key, name in _MATMUL_NAMES.items()}
_MATMUL_BATCHED = _op("UnsafeViewBackward0")(type("_MatmulBatched", (_Matmul,), {}))


def _matmul(a, b):
    da, db = a._array.dtype, b._array.dtype
    if da != db:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{_scalar_type(da)} and {_scalar_type(db)}")
        if a.ndim == 2 and b.ndim == 1:
            raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                               f"{_scalar_type(db)}, {_scalar_type(da)}, and {_scalar_type(db)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_core.c_type_name_of(da)} != {_core.c_type_name_of(db)}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    cls = _MATMULS.get((a.ndim, b.ndim), _MATMUL_BATCHED)
    return cls.apply(a._array.dtype, a, b)


# -- construction: complex, polar, view_as_real / view_as_complex ---------------------------------

@_op("ComplexBackward0")
class _Complex(_Op):
    reads_inputs = reads_output = False
    cast_operands = False

    @staticmethod
    def compute(ctx, re, im):
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), _complex_of(re))
        out.real = re
        out.imag = im
        return out

    vjp = staticmethod(lambda ctx, g: (np.real(g), np.imag(g)))


@_op("PolarBackward0")
class _Polar(_Op):
    """abs * exp(i angle): d/d abs = Re(conj(e^{i angle}) g), d/d angle = Re(conj(i out) g)."""
    cast_operands = False

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

    @staticmethod
    def vjp(ctx, g):
        r, theta = ctx.values
        unit = np.cos(theta) + 1j * np.sin(theta)
        return np.real(g * np.conj(unit)), np.real(g * np.conj(1j * ctx.out))


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
    _core._complex_in_use()
    return np.result_type(da, np.complex64)


def complex(real, imag, *, out=None):
    """A complex tensor real + i imag from two real tensors of one floating dtype (float32 gives
    complex64, float64 complex128); broadcasting; differentiable in both."""
    dt = _real_pair("complex", real, imag, ("real", "imag"))
    return _out(_Complex.apply(dt, real, imag), out)


def polar(abs, angle, *, out=None):
    """The complex tensor abs * (cos(angle) + i sin(angle)); differentiable in both."""
    dt = _real_pair("polar", abs, angle, ("abs", "angle"))
    res = _Polar.apply(dt, abs, angle)
    return _out(res, out)


def _out(res, out):
    if out is None:
        return res
    out.copy_(res)
    return out


def _pairs_view(arr):
    """The (..., 2) float view of complex array arr (real and imaginary parts), sharing memory."""
    part = arr.real                                     # a view: same strides, part dtype
    return np.lib.stride_tricks.as_strided(part, arr.shape + (2,),
                                           arr.strides + (part.itemsize,))


@_op("ViewAsRealBackward0")
class _ViewAsReal(Function):
    @staticmethod
    def forward(ctx, z):
        ctx.meta = _meta(z)
        return _wrap(_pairs_view(z._array))

    @staticmethod
    def backward(ctx, g):
        g = g._array
        return _fit(g[..., 0] + 1j * g[..., 1], ctx.meta)


@_op("ViewAsComplexBackward0")
class _ViewAsComplex(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.meta = _meta(x)
        a = x._array
        return _wrap(_complex_view(a, np.complex64 if a.dtype == np.float32 else np.complex128))

    @staticmethod
    def backward(ctx, g):
        return _fit(_pairs_view(np.asarray(g._array)), ctx.meta)


def _complex_view(a, cdt):
    """The complex view of float array a of shape (..., 2) whose last stride is one element,
    sharing its memory."""
    first = a[..., 0]
    return np.ndarray(first.shape, dtype=cdt, buffer=_base_buffer(a), offset=_offset(a),
                      strides=first.strides)


def _base_buffer(a):
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
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
    return _ViewAsReal.apply(input)


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
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * a.itemsize) for s in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    _core._complex_in_use()
    return _ViewAsComplex.apply(input)


# -- reductions by composition ---------------------------------------------------------------------

def _var_std(is_std, z, dim, correction, keepdim):
    """var of a complex tensor: E|z - mean|^2 = var(real) + var(imag) (a real tensor); std its
    square root.  Composed of recorded ops, so the gradient is theirs."""
    var = (_core.var(real(z), dim, correction=correction, keepdim=keepdim)
           + _core.var(imag(z), dim, correction=correction, keepdim=keepdim))
    return var.sqrt() if is_std else var


def _norm(z, p, dim, keepdim):
    """The vector norm of a complex tensor: the norm of its moduli."""
    return _core.norm(_unary("abs", z), p, dim, keepdim)


def real(z):
    return _unary("real", z)


def imag(z):
    return _unary("imag", z)


# -- the door from the core ------------------------------------------------------------------------

def dispatch(name, *args):
    """Run complex op `name` (called by the compiled entry points, complex_hook.pxi)."""
    if name in _BINARY:
        return _binary(name, *args)
    if name == "compare":
        return _compare(*args)
    if name == "matmul":
        return _matmul(*args)
    if name == "refuse":
        return refuse(*args)
    if name == "var_std":
        return _var_std(*args)
    if name == "norm":
        return _norm(*args)
    return _unary(name, *args)


_core._install_complex_ops(dispatch, _SAFE_COMPILED_OPS)
