"""Elementwise math, special functions and small linear algebra PyTorch has on `torch` and
`Tensor` (issue 15): fmax/fmin, heaviside, logaddexp2, ldexp, nextafter, vdot, i0, polygamma,
mvlgamma, igamma/igammac, rsub, the complex-number queries on real tensors, renorm, addbmm,
chain_matmul, matrix_exp, cholesky_solve/cholesky_inverse, triangular_solve, qr and geqrf; the
functions torch removed in 1.9 (solve, lstsq, symeig, eig) raise its message; and the in-place
forms scripts call (erfc_, lgamma_, ldexp_, ...), made by the project's one in-place mechanism
(_extra_ops._in_place: the out-of-place result written into self).

Differentiable results are composites of recorded ops where the composite's gradient is the
one PyTorch computes; the rest are autograd Functions whose backward is written next to the
forward (special functions, cholesky_solve, whose PyTorch gradient is the full-matrix one).
Values without a numpy primitive are computed here in float64 and cast (i0's derivative is
special.i1, tapegrad/_special_bessel.py, itself differentiable): polygamma of order >= 2 (the Hurwitz zeta
function: shifted direct sum plus Euler-Maclaurin tail) and the regularised incomplete gamma
functions (power series below a + 1, Lentz's continued fraction above).
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math

import numpy as np

from ._deprecated_overloads import NOT_GIVEN, scale_first_product
from . import _complex, _core, creation as _creation
from ._class_members import has_member
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import (_check_broadcast, _check_tensor, _check_tensor_or_number, _dtype_name,
                         _in_place, _wrap, _wrap_like, register_family)
from ._incomplete_gamma import regularized_gamma
from ._special_functions import _lgamma_values, _polygamma_values
from .autograd.function import Function

TensorBase = _core.TensorBase


def _float_of(input):
    """input, or input cast to the default float dtype when it is an integer or bool tensor."""
    if input.dtype.is_floating_point:
        return input
    from . import get_default_dtype
    return input.to(get_default_dtype())


def _require_tensor_pair(fn: str, input, other, other_name: str = "other"):
    _check_tensor(input, fn)
    _check_tensor(other, fn, other_name, 2)


# -- NaN-ignoring extrema, heaviside, logaddexp2, ldexp, nextafter -------------------------------

def fmax(input, other):
    """The elementwise maximum that ignores NaN (NaN only where both are NaN); the gradient
    goes to input where input >= other or other is NaN, to other elsewhere."""
    _require_tensor_pair("fmax", input, other)
    _complex.refuse_if_complex("fmax", input)
    _complex.refuse_if_complex("fmax", other)
    take_input = _core.logical_or(_core.ge(input, other), other.isnan())
    return _core._name_grad_fn(_core.where(take_input, input, other), "FmaxBackward0")


def fmin(input, other):
    """The elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    _require_tensor_pair("fmin", input, other)
    _complex.refuse_if_complex("fmin", input)
    _complex.refuse_if_complex("fmin", other)
    take_input = _core.logical_or(_core.le(input, other), other.isnan())
    return _core._name_grad_fn(_core.where(take_input, input, other), "FminBackward0")


class _NotDifferentiable(Function):
    """A precomputed result that carries a grad_fn whose backward raises, as PyTorch's ops
    without a derivative formula do (the error comes at backward, not at the call)."""

    @staticmethod
    def forward(ctx, input, values, message, error=RuntimeError):
        ctx.message, ctx.error = message, error
        # (a tensor's array in a tensor of its own, its layout kept: returned as it is, an
        # argument of apply() counts as a view of it, and an in-place op on the result raised)
        return _core.wrap_array(values._array, False) if isinstance(values, TensorBase) \
            else _wrap(values)

    @staticmethod
    def backward(ctx, grad):
        raise ctx.error(ctx.message)


_torch_grad_fn_name(_NotDifferentiable, "NotImplemented")


def without_derivative(inputs, values, message: str, error=NotImplementedError,
                       node: str | None = None):
    """``values`` (an ndarray computed from ``inputs``, or a tensor of its own) as a tensor; when
    one of ``inputs`` requires grad, in the graph with a backward raising ``error(message)``, as
    PyTorch's ops without a derivative formula (their result requires grad; only differentiating
    fails).  Its grad_fn is PyTorch's generic NotImplemented node, or ``node`` for an op whose
    derivatives.yaml entry says not_implemented (PyTorch names that node after the op:
    Unique2Backward0)."""
    source = next((t for t in inputs if isinstance(t, TensorBase) and t.requires_grad), None)
    if source is not None and _core.is_grad_enabled():
        out = _NotDifferentiable.apply(source, values, message, error)
        return out if node is None else _core._name_grad_fn(out, node)
    return values if isinstance(values, TensorBase) else _wrap(values)


class _ZeroDerivative(Function):
    """A precomputed result whose gradient is zero for each tensor input (PyTorch's in-place
    comparisons of floats: their node gives zeros, so an operand that requires grad gets a zero
    .grad, not None)."""

    @staticmethod
    def forward(ctx, values, *inputs):
        ctx.shapes = [t.shape if isinstance(t, TensorBase) else None for t in inputs]
        ctx.dtypes = [t.dtype if isinstance(t, TensorBase) else None for t in inputs]
        return _wrap(values)

    @staticmethod
    def backward(ctx, grad):
        from . import zeros
        return (None, *(None if shape is None else zeros(shape, dtype=dtype)
                         for shape, dtype in zip(ctx.shapes, ctx.dtypes)))


def with_zero_derivative(inputs, values, node: str):
    """``values`` (an ndarray) as a tensor; when one of ``inputs`` requires grad (grad mode on),
    in the graph with zero gradients to them and grad_fn named ``node``."""
    if _core.is_grad_enabled() and any(isinstance(t, TensorBase) and t.requires_grad
                                       for t in inputs):
        return _core._name_grad_fn(_ZeroDerivative.apply(values, *inputs), node)
    return _wrap(values)


def heaviside(input, values):
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0 (same dtypes only;
    no derivative, as PyTorch)."""
    _require_tensor_pair("heaviside", input, values, "values")
    _complex.refuse_if_complex("heaviside", input)      # (np.heaviside of the real part
    _complex.refuse_if_complex("heaviside", values)     # would pass for a complex step)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    _check_broadcast(input, values)
    # (in the layout PyTorch's TensorIterator gives a binary op's result, not row-major)
    # PyTorch's rule: values where input == 0, else (input > 0); NaN input gives 0, where
    # np.heaviside gives NaN; in the layout PyTorch's TensorIterator gives a binary op's result
    x = input._array
    stepped = np.where(x == 0, values._array, (x > 0).astype(x.dtype)).astype(x.dtype)
    result = _core.wrap_array(_core._iterator_layout(stepped, input._array, values._array), False)
    # (either operand requiring grad makes the result require it)
    return without_derivative((input, values), result,
                              "derivative for aten::heaviside is not implemented", RuntimeError)


def logaddexp2(input, other):
    """log2(2 ** input + 2 ** other) without overflow (float tensors)."""
    _require_tensor_pair("logaddexp2", input, other)
    _check_broadcast(input, other)     # (PyTorch's RuntimeError, before numpy's ValueError)
    from . import float16, float32, result_type
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"logaddexp2_cpu" not implemented for '
                                  f"'{_dtype_name(np.empty(0, dtype.np_dtype))}'")
    if dtype == float16:                    # (float16 computes in float32, as PyTorch's kernel)
        return _core._name_grad_fn(logaddexp2(input.to(float32), other.to(float32)).to(float16),
                                   "Logaddexp2Backward0")
    # numpy's logaddexp2 works in base 2 throughout: scaling by ln 2 into logaddexp and back
    # rounds twice, and logaddexp2(1000, -inf) came out 999.9999999999999
    from ._tutorial_ops import _LogAddExp2
    return _LogAddExp2.apply(input.to(dtype), other.to(dtype))


def ldexp(input, other):
    """input * 2 ** other (integers give the default float dtype); differentiable in both."""
    _require_tensor_pair("ldexp", input, other)
    if other._array.dtype == np.bool_ and input.is_floating_point():
        # PyTorch's kernel for a float input reads the exponent in its own dtype, and has none
        # for bool (an integer or bool input goes another way, and computes)
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    from ._tutorial_ops import _floating_result_type
    from . import float16, float32
    # in the operands' promoted (float) dtype, float16 computing in float32 as PyTorch's kernel:
    # ldexp(float16 1e-3, 20) is 1049, not inf * 1e-3 from a float16 2 ** 20
    dtype = _floating_result_type(input, other)
    wide = float32 if dtype == float16 else dtype
    return _core._name_grad_fn(_core.mul(input.to(wide), _core.pow(2.0, other.to(wide))).to(dtype),
                               "LdexpBackward0")


class _Nextafter(Function):
    """The next float after x towards y; PyTorch's gradient is 1 in x where x != y (0 where they
    are equal: the result is y itself there) and 0 in y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.moved = _wrap_like(np.not_equal(x._array, y._array), x, y)
        ctx.x_shape, ctx.y_shape = tuple(x.shape), tuple(y.shape)
        return _wrap_like(np.nextafter(x._array, y._array), x, y)

    @staticmethod
    def backward(ctx, grad):
        # selected, not multiplied: a NaN or inf gradient gives 0 where x is y and to y, as
        # PyTorch's (grad * 0 was NaN there; 65005907)
        from .creation import zeros
        from ._scatter_functions import _sum_to
        grad_x = _sum_to(_core.where(ctx.moved, grad, 0.0), ctx.x_shape) \
            if ctx.needs_input_grad[0] else None
        return grad_x, zeros(ctx.y_shape, dtype=grad.dtype)


_torch_grad_fn_name(_Nextafter, "NextafterBackward0")


def nextafter(input, other):
    """The next float after input in the direction of other (numpy's nextafter); the gradient
    passes through to input where it differs from other and is 0 for other, as PyTorch's."""
    _require_tensor_pair("nextafter", input, other)
    _check_broadcast(input, other)
    from . import result_type
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"nextafter_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    return _Nextafter.apply(input.to(dtype), other.to(dtype))


def vdot(input, other):
    """The dot product of two 1-D tensors, the first conjugated (for real tensors, dot)."""
    _require_tensor_pair("vdot", input, other)
    from . import dot
    return _core._name_grad_fn(dot(conj(input) if _is_complex(input) else input, other),
                               "VdotBackward0")


def rsub(input, other, *, alpha=1):
    """other - alpha * input (the reversed subtraction)."""
    _check_tensor_or_number("rsub", (input, other), (
        "Tensor input, Tensor other, *, Number alpha = 1",
        "Tensor input, Number other, Number alpha = 1"), first_is_tensor=True)
    from . import sub
    integral = input._array.dtype.kind in "biu" and (
        other._array.dtype.kind in "biu" if isinstance(other, TensorBase)
        else isinstance(other, (int, np.integer)))
    if integral and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if isinstance(other, TensorBase):
        return _core._name_grad_fn(sub(other, input, alpha=alpha), "RsubBackward0")
    if alpha == 1 and type(alpha) is not bool:
        return input.__rsub__(other)        # `other - input`: PyTorch's RsubBackward1 node
    return sub(_scalar_like(other, input), input, alpha=alpha)


def _scalar_like(value, input):
    """A 0-d tensor of `value` that promotes with input as a Python scalar would."""
    from . import result_type, tensor
    dtype = result_type(input, value)
    return tensor(value, dtype=dtype)


# -- special functions ---------------------------------------------------------------------------

class I0(Function):
    """The modified Bessel function I0; its derivative is I1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with _core.IeeeResults():      # inf beyond |x| ~ 713 (and at inf), silently as PyTorch
            values = np.i0(x._array.astype(np.float64))
        return _wrap_like(values.astype(x._array.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        # (tapegrad.special's Bessel functions load on first use: ~60 KB of bytecode and the
        # decimal module that `import tapegrad` would otherwise read)
        from ._special_bessel import I1
        return grad * I1.apply(x)


_torch_grad_fn_name(I0, "I0Backward0")


def i0(input):
    """The zeroth-order modified Bessel function of the first kind, elementwise (integers give
    the default float dtype); gradient I1."""
    _check_tensor(input, "i0")
    _complex.refuse_if_complex("i0", input)
    return I0.apply(_float_of(input))


_BERNOULLI_OVER_FACTORIAL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
                             -691 / 1307674368000, 1 / 74724249600, -3617 / 10670622842880000)


def _hurwitz_zeta(s, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k) ** -s elementwise in float64, for s > 1 (a number or an array
    broadcast with q) and q not a pole (q < 0 only with an integer s): at least 10 terms summed
    directly and on until q + k >= 20, then the Euler-Maclaurin tail.  (The ten terms keep the
    tail's error small beside the sum for a large s, where the tail's series converges slowly.)"""
    s, q = np.broadcast_arrays(np.asarray(s, dtype=np.float64), np.asarray(q, dtype=np.float64))
    total = np.zeros(q.shape)
    w = q.copy()
    for k in range(_DIRECT_TERMS_AT_MOST):
        direct = (w < 20) | (k < 10)
        if not direct.any():
            break
        total += np.where(direct, w ** -s, 0.0)
        w = np.where(direct, w + 1, w)
    tail = w ** (1 - s) / (s - 1) + 0.5 * w ** -s
    rising = s.copy()            # s (s + 1) ... (s + 2j - 2)
    power = w ** (-s - 1)        # w ** (-s - 2j + 1)
    for j, b in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
        tail += b * rising * power
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        power = power / (w * w)
    return total + tail


# q far below 0 (only with an integer s) needs a term per unit up to 20; beyond this many
# the value is NaN rather than a slow loop
_DIRECT_TERMS_AT_MOST = 1 << 12


def _zeta_values(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The Hurwitz zeta function zeta(x, q) elementwise in float64, with PyTorch's edges: inf at
    x = 1 and at the poles q = 0, -1, -2, ... (for x > 1 or NaN); NaN for x < 1, for a negative
    non-integer q with a non-integer x (q ** -x undefined) and for q = +inf; at x = +inf, inf
    for q < 1, 1 at q = 1 and NaN above (the sum's first term, as PyTorch's series gives it)."""
    x, q = np.broadcast_arrays(x.astype(np.float64), q.astype(np.float64))
    out = np.full(x.shape, np.nan)
    pole = (q <= 0) & (q == np.floor(q))
    out[((x > 1) | np.isnan(x)) & pole] = np.inf
    out[x == 1] = np.inf
    defined = (x > 1) & ~pole & ((q > 0) | (x == np.floor(x))) & np.isfinite(q)
    out[defined & np.isposinf(x) & (q < 1)] = np.inf
    out[defined & np.isposinf(x) & (q == 1)] = 1.0
    finite = defined & np.isfinite(x)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out[finite] = _hurwitz_zeta(x[finite], q[finite])
    return out


def _polygamma_any(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma elementwise, in x's dtype."""
    if n <= 1:
        return _polygamma_values(n, x)
    x64 = x.astype(np.float64)
    pole_sign = 1.0 if n % 2 else -1.0      # (-1) ** (n + 1): the sign at the poles and -inf
    out = np.full(x64.shape, np.nan)
    poles = (x64 <= 0) & (x64 == np.floor(x64))
    out[poles | np.isneginf(x64)] = pole_sign * np.inf
    ok = np.isfinite(x64) & ~poles
    with np.errstate(over="ignore"):
        out[ok] = pole_sign * math.factorial(n) * _hurwitz_zeta(n + 1, x64[ok])
    return out.astype(x.dtype)


class Polygamma(Function):
    """polygamma(n, x); its derivative is polygamma(n + 1, x)."""

    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return _wrap_like(_polygamma_any(n, x._array), x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * Polygamma.apply(x, ctx.n + 1), None


_torch_grad_fn_name(Polygamma, "PolygammaBackward0")


def polygamma(n, input):
    """The n-th derivative of digamma (n = 0 is digamma), elementwise; integers give the
    default float dtype."""
    _check_tensor(input, "polygamma", "input", 2)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{_type_name(n)}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return Polygamma.apply(_float_of(input), int(n))


def _polygamma_method(self, n):
    """Tensor.polygamma(n): see :func:`tapegrad.polygamma`."""
    return polygamma(n, self)


def _no_derivative_in_first(function, first, second, message: str, *extra, node: str = None):
    """``function.apply(first, second, *extra)`` for an op PyTorch differentiates in its second
    argument only: ``first`` enters the Function detached and, when it requires grad, through a
    separate zero term whose backward raises ``message``.  So autograd.grad with respect to
    ``second`` alone works while ``first`` requires grad (the sweep runs only the records that
    lead to the requested inputs, as PyTorch's engine does), and a backward reaching ``first``
    raises PyTorch's error.  The result's grad_fn is named `node` (default: the Function's),
    PyTorch's single node for the op, either way."""
    result = function.apply(first.detach(), second, *extra)
    node = node or function._backward_cls.__name__
    if first.requires_grad and _core.is_grad_enabled():
        zeros = np.zeros(result.shape, dtype=result._array.dtype)
        result = result + without_derivative((first,), zeros, message)
    return _core._name_grad_fn(result, node)


class _Zeta(Function):
    """The Hurwitz zeta function zeta(x, q); differentiable in q only, d/dq = -x zeta(x + 1, q)
    (PyTorch raises at backward for x: _no_derivative_in_first)."""

    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x, q)
        return _wrap_like(_zeta_values(x._array, q._array).astype(x._array.dtype), x, q)

    @staticmethod
    def backward(ctx, grad):
        x, q = ctx.saved_tensors         # (x comes detached: see _no_derivative_in_first)
        grad_q = grad * -x * _Zeta.apply(x + 1, q)
        return None, _sum_to_shape(grad_q, q.shape)


_torch_grad_fn_name(_Zeta, "SpecialZetaBackward0")


def zeta(input, other):
    """The Hurwitz zeta function sum_k (other + k) ** -input, elementwise with broadcasting;
    either argument may be a number; integers give the default float dtype.  Differentiable in
    `other` (PyTorch has no derivative in `input`)."""
    signatures = ("Tensor input, Tensor other, *, Tensor out = None",
                  "Number self, Tensor other, *, Tensor out = None",
                  "Tensor input, Number other, *, Tensor out = None")
    _check_tensor_or_number("special_zeta", (input, other), signatures)
    _check_broadcast(input, other)
    from . import result_type, tensor
    dtype = result_type(input, other)
    if dtype.is_complex:            # (converting to a real dtype would drop the imaginary part)
        _complex.refuse("zeta", tensor([], dtype=dtype))
    if not dtype.is_floating_point:
        from . import get_default_dtype
        dtype = get_default_dtype()
    if dtype.np_dtype == np.float16:
        raise NotImplementedError("\"zeta_cpu\" not implemented for 'Half'")
    x, q = (a.to(dtype) if isinstance(a, TensorBase) else tensor(a, dtype=dtype)
            for a in (input, other))
    return _no_derivative_in_first(_Zeta, x, q, "the derivative for 'zeta' is not implemented.")


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum_j lgamma(input - j / 2) over j < p, plus
    p (p - 1) / 4 * log(pi)."""
    _check_tensor(input, "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    from . import lgamma
    # (row-major: PyTorch sums lgamma over a new last dim, a reduction, whose result is
    # contiguous whatever input's layout)
    x = _float_of(input).contiguous()
    total = lgamma(x)
    for j in range(1, p):
        total = total + lgamma(x - j / 2)
    return _core._name_grad_fn(total + p * (p - 1) / 4 * math.log(math.pi), "MvlgammaBackward0")


def _regularized_gamma(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (upper=False) or Q(a, x) = 1 - P(a, x) in float64, elementwise."""
    a, x = np.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
    out = np.full(a.shape, np.nan)
    # PyTorch's edge cases, tested in its order (a NaN fails every comparison, so a NaN
    # reaches a value where a test before it holds: P(nan, 0) = 0, P(inf, nan) = 0,
    # P(nan, inf) = 1): a < 0 or x < 0 is NaN; a = 0 puts all mass at 0; x = 0 none; a = inf
    # none below a finite x (NaN at x = inf); x = inf all of it
    lower_edge = np.select(
        [(a < 0) | (x < 0), a == 0, x == 0, np.isinf(a), np.isinf(x)],
        [np.nan, np.where(x > 0, 1.0, np.nan), 0.0, np.where(np.isinf(x), np.nan, 0.0), 1.0],
        np.nan)
    edge = (a < 0) | (x < 0) | (a == 0) | (x == 0) | np.isinf(a) | np.isinf(x)
    out[edge] = lower_edge[edge]
    inner = ~edge & ~np.isnan(a) & ~np.isnan(x)
    out[inner] = regularized_gamma(a[inner], x[inner], upper)
    if upper:
        out[edge] = 1 - out[edge]
    return out


class _IncompleteGamma(Function):
    """P(a, x) or Q(a, x); differentiable in x only (PyTorch has no derivative in a)."""

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        dtype = np.result_type(a._array, x._array)
        return _wrap_like(_regularized_gamma(a._array, x._array, upper).astype(dtype), a, x)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors         # (a comes detached: see _no_derivative_in_first)
        from . import lgamma
        # d P / dx = x^(a-1) e^-x / Gamma(a); Q = 1 - P
        density = _core.exp((a - 1) * x.log() - x - lgamma(a))
        grad_x = grad * density
        return None, (-grad_x if ctx.upper else grad_x), None


_torch_grad_fn_name(_IncompleteGamma, "IgammaBackward0")


def _incomplete_gamma(fn: str, input, other, upper: bool):
    _require_tensor_pair(fn, input, other)
    _check_broadcast(input, other)
    from . import result_type
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{fn}_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(dtype.np_dtype)}'")
    return _no_derivative_in_first(
        _IncompleteGamma, input.to(dtype), other.to(dtype),
        f"the derivative for '{fn}: input' is not implemented.", upper,
        node="IgammacBackward0" if upper else "IgammaBackward0")


def igamma(input, other):
    """The regularised lower incomplete gamma function P(input, other); differentiable in
    other only (PyTorch raises at backward for input)."""
    return _incomplete_gamma("igamma", input, other, False)


def igammac(input, other):
    """The regularised upper incomplete gamma function Q(input, other) = 1 - P."""
    return _incomplete_gamma("igammac", input, other, True)


# -- complex-number parts and conjugates (complex tensors: tapegrad/_complex.py) -----------------

def _is_complex(input) -> bool:
    return input._array.dtype.kind == "c"


def real(input):
    """The real part: of a complex tensor a real tensor (differentiable); a real tensor itself."""
    _check_tensor(input, "real")
    if _is_complex(input):
        return _complex.dispatch("real", input)
    return input


def imag(input):
    """The imaginary part of a complex tensor (PyTorch's error for a real tensor)."""
    _check_tensor(input, "imag")
    if _is_complex(input):
        return _complex.dispatch("imag", input)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


class _Angle(Function):
    """The argument of a real number: pi for negatives, 0 otherwise, NaN kept; gradient 0."""

    @staticmethod
    def forward(ctx, x):
        arr = x._array
        return _wrap_like(np.where(arr < 0, np.pi, np.where(np.isnan(arr), np.nan, 0.0))
                          .astype(arr.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        # zeros, as PyTorch's: grad * 0 would give -0.0 for negative and NaN for infinite grads
        return _creation.zeros_like(grad)


_torch_grad_fn_name(_Angle, "AngleBackward0")


def angle(input):
    """The elementwise angle: arg z of a complex tensor (a real tensor of its precision); of a
    real tensor pi where negative, 0 elsewhere (NaN stays NaN), integers giving the default
    float dtype, with a zero gradient."""
    _check_tensor(input, "angle")
    if _is_complex(input):
        return _complex.dispatch("angle", input)
    return _Angle.apply(_float_of(input))


def conj(input):
    """The conjugate.  PyTorch's is a lazy view with the conjugate bit set; tapegrad's holds its
    values in its own storage with the bit set (is_conj() says True, as PyTorch's), kept in step
    with input's storage by a conj link (views.pxi), so writes through either side, or through a
    view of either, reach the other.  A real tensor itself."""
    _check_tensor(input, "conj")
    if not _is_complex(input):
        return input
    res = _complex.conj(input)
    if not is_conj(input):
        res._conj_bit = True
    _core._link_conj(input, res)        # writes through either side reach the other
    if not _core.is_grad_enabled():
        _core._mark_no_grad_conj_view(res, input)
    return res


def conj_physical(input):
    """The materialised conjugate (for a real tensor, the tensor itself)."""
    _check_tensor(input, "conj_physical")
    if _is_complex(input):
        return _complex.conj_physical(input)
    return input


def conj_physical_(input):
    """In-place conj_physical (nothing to do on a real tensor)."""
    _check_tensor(input, "conj_physical_")
    if _is_complex(input):
        return input.copy_(_complex.conj_physical(input))
    return input


def resolve_conj(input):
    """input with a pending conjugation applied: a tensor without the conjugate bit (tapegrad
    holds conjugates materialised, so a copy of the values)."""
    _check_tensor(input, "resolve_conj")
    if is_conj(input):
        return input.clone()
    return input


def resolve_neg(input):
    """input with a pending negation applied: tapegrad has no lazy negation, so input."""
    _check_tensor(input, "resolve_neg")
    return input


def is_conj(input) -> bool:
    """Whether input's conjugate bit is set (by conj() of a complex tensor)."""
    _check_tensor(input, "is_conj")
    return getattr(input, "_conj_bit", False)


def is_neg(input) -> bool:
    """Whether input's negative bit is set: never in tapegrad."""
    _check_tensor(input, "is_neg")
    return False


def isreal(input):
    """A bool tensor, True where the element is real (imaginary part 0; always for a real
    tensor)."""
    _check_tensor(input, "isreal")
    if _is_complex(input):
        return _wrap_like(input._array.imag == 0, input)
    return _wrap_like(np.ones(input._array.shape, dtype=np.bool_), input)


# -- renorm, addbmm, chain_matmul ----------------------------------------------------------------

def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm rescaled to norm maxnorm (the factor
    maxnorm / (norm + 1e-7)); differentiable through the norm as PyTorch's."""
    _check_tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           f"dimensions")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_core.scalar_type_name_of(input._array.dtype)}")
    from .linalg import vector_norm
    d = _core.normalize_dim(dim, input.dim())
    others = tuple(i for i in range(input.dim()) if i != d)

    def rescaled(x):
        over = _core.gt(vector_norm(x.detach(), p, others, keepdim=True), maxnorm)
        # The norm is taken of the slices it rescales only (zeros elsewhere): a slice left as it
        # is gets its gradient unchanged, as PyTorch's where(norm > maxnorm, ..., grad), not
        # the norm's backward times zero, NaN for a slice holding NaN or inf (65005612).
        norm = vector_norm(_core.where(over, x, 0.0), p, others, keepdim=True)
        factor = _core.where(over, maxnorm / (norm + 1e-7), _ones_like(norm))
        return x * factor

    # (float16 in float32, PyTorch's opmath: a half norm underflows to 0 for slices of small
    # values, giving a NaN gradient, and overflows beyond 256)
    from ._half_precision import in_float32_if_half
    return _core._name_grad_fn(in_float32_if_half(rescaled, input), "RenormBackward0")


def _ones_like(t):
    from .creation import ones_like
    return ones_like(t)


def addbmm(input, batch1, batch2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1,
           alpha=1):
    """beta * input + alpha * sum over b of batch1[b] @ batch2[b]."""
    if old_third is not NOT_GIVEN:      # PyTorch's deprecated scale-first forms
        input, batch1, batch2, beta, alpha = scale_first_product(
            "addbmm", input, batch1, batch2, old_third, old_fourth, beta, alpha)
    _check_tensor(input, "addbmm")
    _check_tensor(batch1, "addbmm", "batch1", 2)
    _check_tensor(batch2, "addbmm", "batch2", 3)
    # (PyTorch reads the result's size, batch1.size(1) and batch2.size(2), before it checks the
    # ranks: a batch of fewer dims gives that read's IndexError)
    batch1.size(1), batch2.size(2)
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    from .contractions import _scaled_sum, _check_product_dtypes
    _check_product_dtypes(input, batch1, batch2)
    # (summed in the product's dtype, as PyTorch accumulates: sum's int64 for integer tensors
    # had made an int8 addbmm silently int64)
    product = _core.bmm(batch1, batch2).sum(0, dtype=_core.result_type(batch1, batch2))
    empty = batch1.shape[0] == 0 or batch1.shape[2] == 0
    return _core._name_grad_fn(
        _scaled_sum(input, product, beta, alpha, drop_zero_alpha=True, empty_sum=empty),
        "AddbmmBackward0")


def chain_matmul(*matrices):
    """The product of the 2-D matrices in order (deprecated by PyTorch, which warns, in favour
    of linalg.multi_dot)."""
    # (PyTorch warns once per process: TORCH_WARN_ONCE)
    _core.warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                    "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                    "more tensors rather than multiple parameters.",
                    "aten/src/ATen/native/LinearAlgebra.cpp:1102")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        _check_tensor(m, "chain_matmul", "matrices")
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    from .linalg import multi_dot
    return multi_dot(list(matrices))


# -- matrix functions and solvers ----------------------------------------------------------------

def _check_square(fn: str, A, what: str = "A") -> None:
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor {what} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: {what} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _check_float(fn: str, A) -> None:
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        from .linalg import _refuse_integer_by_kernel
        _refuse_integer_by_kernel(A, fn)
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_core.scalar_type_name_of(A._array.dtype)}")


def matrix_exp(input):
    """The matrix exponential of a square matrix (or a batch), computed as PyTorch does
    (tapegrad/_matrix_exp.py: Taylor polynomials of a degree chosen by each matrix's norm,
    scaling and squaring past the last one); its gradient is PyTorch's, itself a matrix_exp
    (_MatrixExp), so gradients of every order follow."""
    _check_tensor(input, "matrix_exp")
    _check_square("linalg.matrix_exp", input)
    if not input.is_complex():             # complex: the same recorded matmuls
        _check_float("linalg.matrix_exp", input)
    n = input.shape[-1]
    if n == 0 or input.numel() == 0:
        return _core._name_grad_fn(input.clone(), "LinalgMatrixExpBackward0")
    if n == 1:
        result = input.exp()                # (PyTorch's own shortcut)
        _core._guard_saved_version(result, input)     # (PyTorch's node saves it: a write raises)
    else:
        result = _MatrixExp.apply(input)
    return _core._name_grad_fn(result, "LinalgMatrixExpBackward0")


def _matrix_exp_values(input):
    """exp of each matrix of input (n >= 2) by the polynomials of _matrix_exp.py."""
    from ._matrix_exp import matrix_exp_3d
    n = input.shape[-1]
    result = matrix_exp_3d(input.reshape(-1, n, n)).reshape(input.shape)
    if not np.isfinite(input._array).all():
        # PyTorch's scaling of a matrix with an infinity or a NaN gives NaN everywhere in it
        # (the Taylor sum of [[inf, 1], [1, 2]] alone has finite and infinite entries)
        finite = np.isfinite(input._array).all((-2, -1))[..., None, None]
        result = _core.where(_wrap(finite), result, float("nan"))
    return result


class _MatrixExp(Function):
    """exp(A); its gradient is PyTorch's adjoint of the Frechet derivative, the top-right block
    of exp([[A^H, G], [0, A^H]]): a matrix_exp again, so it differentiates to every order.
    (Differentiating the Taylor polynomial instead, as this op once did, keeps only the orders
    below its degree, which the norm picks: at A = 0 the degree is 1 and the second derivative
    was 0, the gradient's graph empty.)"""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _matrix_exp_values(a)

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        n = a.shape[-1]
        ah = a.mH
        block = _core.cat([_core.cat([ah, grad.to(ah.dtype)], -1),
                           _core.cat([_creation.zeros_like(ah), ah], -1)], -2)
        return matrix_exp(block)[..., :n, n:]


def _cholesky_factor(L, upper: bool):
    """The triangle of L that cholesky_solve reads, as the lower factor (numpy): U^H for an
    upper factor (A = U^H U)."""
    arr = L._array
    return np.conj(np.swapaxes(np.triu(arr), -1, -2)) if upper else np.tril(arr)


class _CholeskySolve(Function):
    """X with (L L^H) X = B (or U^H U X = B); the gradient in the factor is PyTorch's
    full-matrix one: -(G X^H + X G^H) L (or U (...)) with G the solve of the gradient."""

    @staticmethod
    def forward(ctx, b, factor, upper):
        from .linalg import _substitute
        lower = _cholesky_factor(factor, upper)
        shape = np.broadcast_shapes(lower.shape[:-2], b._array.shape[:-2])
        lower = np.broadcast_to(lower, shape + lower.shape[-2:])
        B = np.broadcast_to(b._array, shape + b._array.shape[-2:])
        # two triangular solves, L Y = B then L^T X = Y, as PyTorch's potrs: solving with the
        # product L L^H squared the factor's condition number (fuzz 60624567's sibling)
        Y = _substitute(lower, B, upper=False)
        X = _substitute(np.conj(np.swapaxes(lower, -1, -2)), Y, upper=True)
        from .linalg import _lapack_layout                  # (column-major, as PyTorch's)
        result = _core.wrap_array(
            _lapack_layout(X, np.result_type(b._array, factor._array)), False)
        ctx.save_for_backward(factor, result)
        ctx.upper = upper
        ctx.b_shape = tuple(b.shape)
        ctx.factor_shape = tuple(factor.shape)
        return result

    @staticmethod
    def backward(ctx, grad):
        factor, result = ctx.saved_tensors
        grad_b = _CholeskySolve.apply(grad, factor, ctx.upper)
        grad_factor = _cholesky_factor_grad(grad_b, result, factor, ctx.upper)
        return (_sum_to_shape(grad_b, ctx.b_shape), _sum_to_shape(grad_factor, ctx.factor_shape),
                None)


def _cholesky_factor_grad(solved_grad, result, factor, upper):
    """The gradient in the Cholesky factor of X = (L L^H)^-1 B, from G = (L L^H)^-1 grad:
    -(G X^H + X G^H) L, or -U (G X^H + X G^H) for an upper factor."""
    common = _core.matmul(solved_grad, result.mH)
    common = common + common.mH
    return -(_core.matmul(factor, common) if upper else _core.matmul(common, factor))


def _sum_to_shape(grad, shape):
    """grad summed over the batch dims it was broadcast along, back to `shape`."""
    extra = grad.dim() - len(shape)
    if extra:
        grad = grad.sum(tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(stretched, keepdim=True) if stretched else grad


_torch_grad_fn_name(_CholeskySolve, "CholeskySolveBackward0")


def _signed_sum(products, axis):
    """The sum of `products` along `axis` started from -0.0, the additive identity that keeps
    the sign of zeros: a zero sum is -0.0 exactly when every term is (numpy starts from +0.0)."""
    return np.add.reduce(products, axis=axis, initial=-0.0)


def _potri(lower, lauum_as_gemv=False):
    """(L L^H)^-1 from the lower factor L (numpy, batched), computed as LAPACK's potri does:
    inv(L) column by column from the right (trtri: column j below the diagonal is
    -inv(L)[j, j] * inv(L22) L[j+1:, j]), then the lower triangle of inv(L)^H inv(L) row by row
    (lauum), mirrored.  Each entry sums exactly the terms LAPACK sums, so an exact zero carries
    LAPACK's sign: PyTorch prints the precision matrix of a diagonal covariance with -0. in its
    last row and column, which two triangular solves (all +0.) did not.

    lauum_as_gemv: row i as reference LAPACK's lauu2 forms it, inv[i, i] * inv[i, :i] plus a
    gemv's dot product over the rows below, started from +0.0 (so a zero row entry whose terms
    are all -0.0 comes out +0.0).  MKL takes that form for a real double lower factor on Intel
    CPUs (PyTorch there: +0. at [1, 0] of the inverse of [[1,0,0],[0,1,0],[-1,0,1]]), the
    signed-zero sum of every term elsewhere (its float32 and upper paths, and AMD CPUs)."""
    n = lower.shape[-1]
    inverse = np.zeros_like(lower)
    out = np.empty_like(lower)
    with np.errstate(all="ignore"):     # (a subnormal pivot overflows to inf quietly, as LAPACK)
        for j in range(n - 1, -1, -1):
            pivot = 1 / lower[..., j, j]
            inverse[..., j, j] = pivot
            if j < n - 1:
                products = np.where(np.tri(n - j - 1, dtype=bool),
                                    inverse[..., j + 1:, j + 1:] * lower[..., None, j + 1:, j],
                                    -0.0)
                inverse[..., j + 1:, j] = _signed_sum(products, -1) * -pivot[..., None]
        for i in range(n):
            rows = inverse[..., i:, :i + 1]                 # rows k >= i, the only nonzero terms
            out[..., i, :i + 1] = _signed_sum(np.conj(inverse[..., i:, i:i + 1]) * rows, -2)
            if lauum_as_gemv and i:
                diagonal = inverse[..., i, i, None]
                out[..., i, :i] = diagonal * inverse[..., i, :i]
                if i < n - 1:                               # (the last row: a scaling only)
                    out[..., i, :i] += np.add.reduce(
                        np.conj(inverse[..., i + 1:, i:i + 1]) * inverse[..., i + 1:, :i],
                        axis=-2, initial=0.0)
            out[..., :i, i] = np.conj(out[..., i, :i])
    return out


def _refuse_zero_diagonal(lower):
    """PyTorch's LinAlgError for a factor with an exact zero on its diagonal (potri's info > 0),
    naming the first such element (1-based) of the first such batch element: the inverse would
    otherwise come out inf and nan without a word."""
    from .linalg import LinAlgError, _batch_prefix
    diagonals = np.diagonal(lower, axis1=-2, axis2=-1)
    batch = math.prod(diagonals.shape[:-1])                # (not -1: a batch may be empty)
    for index, diagonal in enumerate(diagonals.reshape(batch, diagonals.shape[-1])):
        zeros = np.flatnonzero(diagonal == 0)
        if zeros.size:
            raise LinAlgError(f"cholesky_inverse: {_batch_prefix(index, lower.ndim > 2)}The "
                              f"diagonal element {zeros[0] + 1} is zero, the inversion could "
                              "not be completed because the input matrix is singular.")


class _CholeskyInverse(Function):
    """(L L^H)^-1 (or (U^H U)^-1) from a Cholesky factor; its gradient is cholesky_solve's with
    the identity as right-hand side."""

    @staticmethod
    def forward(ctx, factor, upper):
        from .linalg import _lapack_layout                  # (column-major, as PyTorch's)
        lower = _cholesky_factor(factor, upper)
        _refuse_zero_diagonal(lower)
        from .backends.cpu import _is_intel                 # (MKL's vendor-specific kernels)
        gemv_form = not upper and lower.dtype == np.float64 and _is_intel()
        result = _core.wrap_array(_lapack_layout(_potri(lower, gemv_form), factor._array.dtype),
                                  False)
        ctx.save_for_backward(factor, result)
        ctx.upper = upper
        return result

    @staticmethod
    def backward(ctx, grad):
        factor, result = ctx.saved_tensors
        solved_grad = _CholeskySolve.apply(grad, factor, ctx.upper)
        return _cholesky_factor_grad(solved_grad, result, factor, ctx.upper), None


_torch_grad_fn_name(_CholeskyInverse, "CholeskyInverseBackward0")


def _check_same_dtype_b_and_a(b, A):
    """PyTorch's refusal of a right-hand side b and a coefficient A of different dtypes, shared
    by cholesky_solve and triangular_solve (which otherwise returned a result in one of them)."""
    if b.dtype != A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_core.scalar_type_name_of(b._array.dtype)} and A of type "
                           f"{_core.scalar_type_name_of(A._array.dtype)} instead.")


def cholesky_solve(input, input2, upper=False):
    """The solution X of A X = input where A = L L^H for the lower-triangular Cholesky factor
    input2 (A = U^H U with upper=True); batches broadcast."""
    _require_tensor_pair("cholesky_solve", input, input2, "input2")
    _core.check_bool("cholesky_solve", "upper", upper)
    if input.dim() < 2 or input2.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.dim()} "
                           f"dimensions instead" if input.dim() < 2 else
                           f"u should have at least 2 dimensions, but has {input2.dim()} "
                           f"dimensions instead")
    _check_same_dtype_b_and_a(input, input2)
    n = input2.shape[-1]
    if input2.shape[-2] != n or input.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{input2.shape[-2]} by {n} but each b matrix is {input.shape[-2]} "
                           f"by {input.shape[-1]}")
    _check_float("cholesky_solve", input)
    from .linalg import _refuse_half
    _refuse_half(input, "cholesky_solve")
    from .creation import _broadcast_shapes     # (PyTorch's broadcasting error, b as tensor a)
    _broadcast_shapes(tuple(input.shape[:-2]), tuple(input2.shape[:-2]))
    return _CholeskySolve.apply(input, input2, bool(upper))


def cholesky_inverse(input, upper=False):
    """The inverse of A = L L^H (or U^H U with upper=True) from its Cholesky factor."""
    _check_tensor(input, "cholesky_inverse")
    _core.check_bool("cholesky_inverse", "upper", upper)
    _check_square("cholesky_inverse", input)
    _check_float("cholesky_inverse", input)
    from .linalg import _refuse_half
    _refuse_half(input, "cholesky_inverse")
    return _CholeskyInverse.apply(input, bool(upper))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """The solution X of op(A) X = input for triangular A (op transposes when asked), and a copy of
    A: the named tuple (solution, cloned_coefficient).  Deprecated by PyTorch (which warns) in
    favour of linalg.solve_triangular."""
    for name, flag in (("upper", upper), ("transpose", transpose),
                       ("unitriangular", unitriangular)):
        _core.check_bool("triangular_solve", name, flag)    # (its parser's, before the warning)
    _core.warn_once("torch.triangular_solve is deprecated in favor of "
                    "torch.linalg.solve_triangularand will be removed in a future PyTorch "
                    "release.\ntorch.linalg.solve_triangular has its arguments reversed and does "
                    "not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
                    "A).solution\nshould be replaced with\nX = "
                    "torch.linalg.solve_triangular(A, B).",
                    "aten/src/ATen/native/BatchLinearAlgebra.cpp:2273")
    _require_tensor_pair("triangular_solve", input, A, "A")
    # PyTorch's own checks, in its order (linalg.solve_triangular words them differently)
    for label, t in (("b", input), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {label} to have at least 2 "
                               f"dimensions, but it has {t.dim()} dimensions instead")
    _check_same_dtype_b_and_a(input, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if input.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{A.shape[-2]} by {A.shape[-1]} but each b matrix is "
                           f"{input.shape[-2]} by {input.shape[-1]}")
    from .linalg import solve_triangular
    coefficient = A.mT if transpose else A
    solution = solve_triangular(coefficient, input, upper=bool(upper) != bool(transpose),
                                unitriangular=unitriangular)
    # both outputs come from PyTorch's one TriangularSolveBackward0 node
    name = "TriangularSolveBackward0"
    return _core.return_types.triangular_solve((_core._name_grad_fn(solution, name),
                                                _core._name_grad_fn(A.clone(), name)))


def qr(input, some=True):
    """The QR decomposition (Q, R): reduced with some=True, complete otherwise.  Deprecated by
    PyTorch (which warns) in favour of linalg.qr."""
    _core.check_bool("qr", "some", some)
    _core.warn_once("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                    "future PyTorch release.\nThe boolean parameter 'some' has been replaced with "
                    "a string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced "
                    "with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')",
                    "aten/src/ATen/native/BatchLinearAlgebra.cpp:2505")
    _check_tensor(input, "qr")
    from .linalg import qr as linalg_qr
    q, r = linalg_qr(input, "reduced" if some else "complete")
    return _core.return_types.qr((q, r))


def geqrf(input):
    """LAPACK's geqrf: R on and above the diagonal, the Householder vectors below it, and the
    scalar factors tau (numpy's raw QR); no derivative, as PyTorch."""
    _check_tensor(input, "geqrf")
    if input.dim() < 2:
        raise RuntimeError(f"geqrf: The input tensor A must have at least 2 dimensions.")
    _check_float("geqrf", input)
    from .linalg import _refuse_half
    _refuse_half(input, "geqrf")
    from .linalg import _householder_input, _lapack_layout
    h, tau = np.linalg.qr(_householder_input(input._array), mode="raw")
    # (numpy's raw h is geqrf's a transposed)
    a_values = _core.wrap_array(_lapack_layout(np.swapaxes(h, -1, -2), input._array.dtype), False)
    tau_values = tau.astype(input._array.dtype)
    message = "the derivative for 'geqrf' is not implemented."
    a = without_derivative((input,), a_values, message, node="GeqrfBackward0")
    t = without_derivative((input,), tau_values, message, node="GeqrfBackward0")
    return _core.return_types.geqrf((a, t))


def orgqr(input, input2):
    """The Q of geqrf's Householder representation (input, input2 = tau): PyTorch's older name
    of linalg.householder_product."""
    from .linalg import householder_product
    return householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False):
    """op(Q) @ input3 (``left``) or input3 @ op(Q), Q the full product of the Householder
    reflectors geqrf stores in (input, input2 = tau), op the conjugate transpose when
    ``transpose``; differentiable in all three."""
    name = "torch.ormqr"
    _check_tensor(input, "ormqr")
    _check_tensor(input2, "ormqr", "input2", 2)
    _check_tensor(input3, "ormqr", "input3", 3)
    _core.check_bool("ormqr", "left", left)
    _core.check_bool("ormqr", "transpose", transpose)
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if input3.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if input2.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if input2.shape[-1] != min(input3.shape[side], input.shape[-1]):
        # (PyTorch's: exactly one reflector per column of Q's product, no fewer)
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    # (no broadcasting: tau's and other's batches are input's, as PyTorch's checks; 65101118)
    if input.dim() - input2.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {input2.dim()} and input.ndim is equal to "
                           f"{input.dim()}")
    if input.dim() != input3.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {input3.dim()} and input.ndim is "
                           f"equal to {input.dim()}")
    batch = list(input.shape[:-2])
    for label, t, keep in (("tau", input2, 1), ("other", input3, 2)):
        if list(t.shape[:-keep]) != batch:
            raise RuntimeError(f"{name}: Expected batch dimensions of {label} to be equal to "
                               f"input.shape[:-2], but got {list(t.shape[:-keep])}")
    for label, t in (("tau", input2), ("other", input3)):
        if t.dtype != input.dtype:
            raise RuntimeError(f"{name}: Expected input and {label} to have the same dtype, "
                               f"but input has dtype "
                               f"{_core.scalar_type_name_of(input._array.dtype)} and {label} has "
                               f"dtype {_core.scalar_type_name_of(t._array.dtype)}")
    _check_float("ormqr", input)
    from .linalg import _apply_reflectors, _in_lapack_layout
    result = _apply_reflectors(input, input2, input3, left=bool(left), adjoint=bool(transpose))
    return _in_lapack_layout(result, "OrmqrBackward0", (input, input2, input3))


# -- numerical gradient --------------------------------------------------------------------------

def _along(t, d: int, start, stop):
    return t[(slice(None),) * d + (slice(start, stop),)]


def _coefficients(values, d: int, ndim: int):
    """A 1-D numpy vector as a tensor broadcasting along dim d of an ndim-dim tensor."""
    shape = [1] * ndim
    shape[d] = len(values)
    return _wrap(np.asarray(values).reshape(shape))


def _gradient_along(f, d: int, spacing, edge_order: int):
    """The derivative estimate of f along dim d: central differences inside, one-sided ones
    of order edge_order at the two ends; spacing a number (uniform) or coordinates."""
    n = f.shape[d]
    first, last = _along(f, d, 0, 1), _along(f, d, n - 1, n)
    if not isinstance(spacing, np.ndarray):              # uniform step h
        h = float(spacing)
        inner = (_along(f, d, 2, n) - _along(f, d, 0, n - 2)) / (2 * h)
        if edge_order == 1:
            head = (_along(f, d, 1, 2) - first) / h
            tail = (last - _along(f, d, n - 2, n - 1)) / h
        else:
            head = (-1.5 * first + 2 * _along(f, d, 1, 2) - 0.5 * _along(f, d, 2, 3)) / h
            tail = (0.5 * _along(f, d, n - 3, n - 2) - 2 * _along(f, d, n - 2, n - 1) +
                    1.5 * last) / h
        return _cat([head, inner, tail], d)
    x = spacing.astype(np.float64)
    dx = np.diff(x)
    hd, hs = dx[:-1], dx[1:]                             # steps before and after each point
    ndim = f.dim()
    coef = lambda v: _coefficients(v.astype(f._array.dtype), d, ndim)  # noqa: E731
    inner = (coef(-hs / (hd * (hd + hs))) * _along(f, d, 0, n - 2) +
             coef((hs - hd) / (hd * hs)) * _along(f, d, 1, n - 1) +
             coef(hd / (hs * (hd + hs))) * _along(f, d, 2, n))
    if edge_order == 1:
        head = (_along(f, d, 1, 2) - first) / float(dx[0])
        tail = (last - _along(f, d, n - 2, n - 1)) / float(dx[-1])
    else:
        a, b = dx[0], dx[1]
        head = (first * float(-(2 * a + b) / (a * (a + b))) +
                _along(f, d, 1, 2) * float((a + b) / (a * b)) +
                _along(f, d, 2, 3) * float(-a / (b * (a + b))))
        a, b = dx[-2], dx[-1]
        tail = (_along(f, d, n - 3, n - 2) * float(b / (a * (a + b))) +
                _along(f, d, n - 2, n - 1) * float(-(a + b) / (a * b)) +
                last * float((a + 2 * b) / (b * (a + b))))
    return _cat([head, inner, tail], d)


def _cat(tensors, d):
    from . import cat
    return cat(tensors, d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of input's partial derivatives, one tensor per dim (all dims, or `dim`):
    second-order central differences inside, one-sided differences of order edge_order (1 or
    2) at the ends; spacing is a number, one number per dim, or one coordinate tensor per
    dim (non-uniform grids).  Differentiable in input."""
    _check_tensor(input, "gradient")
    if spacing is None:                 # (PyTorch's "unspecified": a unit spacing)
        spacing = 1
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if input.dim() == 0:
        return ()
    dims = list(range(input.dim())) if dim is None else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = [_core.normalize_dim(d, input.dim()) for d in dims]
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims) and dim is None:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or "
                               f"a list of length equal to 'self.dim() = {input.dim()}', since "
                               f"dim argument was not given, but got a list of length "
                               f"{len(spacing)}")
        if len(spacing) != len(dims):       # (PyTorch's own wording when dim is given)
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    f = input if input.is_complex() else _float_of(input)
    results = []
    for d, step in zip(dims, spacings):
        if f.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        if isinstance(step, TensorBase):
            if step.dim() == 0:
                step = float(step.item())
            else:
                step = step._array
                if step.shape != (f.shape[d],):
                    raise RuntimeError(f"torch.gradient expected the coordinates along dim {d} "
                                       f"to be a 1-D tensor of {f.shape[d]} values, got shape "
                                       f"{list(step.shape)}")
        results.append(_gradient_along(f, d, step, edge_order))
    return tuple(results)


# -- LU factorisation ------------------------------------------------------------------------------

def _batches(arr: np.ndarray, core: int) -> np.ndarray:
    """arr as (batch, *its last `core` dims): numpy's -1 cannot infer the batch count of an
    array with no elements (an empty matrix)."""
    split = arr.ndim - core
    return arr.reshape((int(np.prod(arr.shape[:split], dtype=np.int64)),) + arr.shape[split:])


def _zero_pivot_info(lu_values: np.ndarray) -> np.ndarray:
    """LAPACK getrf's info per matrix: the 1-based index of the first zero on U's diagonal."""
    diagonal = np.diagonal(lu_values, axis1=-2, axis2=-1)
    zero = diagonal == 0
    if not zero.shape[-1]:                              # empty matrices: nothing to divide by
        return np.zeros(zero.shape[:-1], dtype=np.int32)
    return np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)


def _lu_factor_values(a: np.ndarray):
    """LAPACK getrf by partial pivoting on a copy of a (..., m, n): the packed LU (L below the
    diagonal, unit diagonal implied, U on and above) and the 1-based int32 pivots (row k was
    swapped with row pivots[k] - 1; the first largest magnitude wins, measured as LAPACK's
    i?amax measures it: |x| for real values, |re x| + |im x| for complex ones, so a complex
    matrix is pivoted, and its factors come out, as PyTorch's)."""
    lu = np.array(a, dtype=a.dtype, copy=True)
    m, n = lu.shape[-2:]
    k_count = min(m, n)
    batch = lu.shape[:-2]
    lu = _batches(lu, 2)
    pivots = np.zeros((lu.shape[0], k_count), dtype=np.int32)
    rows = np.arange(lu.shape[0])
    # The rounding of PyTorch's getrf (MKL), which these steps reproduce bit for bit up to 4x4
    # (and in most matrices up to 16x16): a column of more than one element is scaled by the
    # pivot's reciprocal (without LAPACK's getf2 test for a tiny pivot: a subnormal one's
    # reciprocal overflows, and the column turns NaN, as PyTorch's), a single element divided
    # by it, and the trailing update is a fused multiply-add, one rounding, which the wider
    # dtype below gives for real matrices.  Beyond 16 columns MKL's blocked algorithm rounds
    # otherwise anyway: there the plain update saves the widening.
    wide = _FMA_WIDE.get(lu.dtype) if k_count <= 16 else None
    for k in range(k_count):
        column = lu[:, k:, k]
        magnitude = (np.abs(column.real) + np.abs(column.imag) if lu.dtype.kind == "c"
                     else np.abs(column))
        p = k + np.argmax(magnitude, axis=1)
        pivots[:, k] = p + 1
        top = lu[rows, k].copy()
        lu[rows, k] = lu[rows, p]
        lu[rows, p] = top
        pivot = lu[:, k, k]
        below = lu[:, k + 1:, k]
        zero = pivot == 0                               # a zero column stays zero (LAPACK)
        safe = np.where(zero, 1, pivot) if zero.any() else pivot
        with np.errstate(all="ignore"):     # (a subnormal pivot's reciprocal is inf: NaNs)
            if m - k - 1 > 1:
                below *= (1 / safe)[:, None]
            else:
                below /= safe[:, None]
            if wide is None:
                lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k, None] * lu[:, k, None, k + 1:]
            else:
                lu[:, k + 1:, k + 1:] = (lu[:, k + 1:, k + 1:].astype(wide)
                                         - lu[:, k + 1:, k, None].astype(wide)
                                         * lu[:, k, None, k + 1:].astype(wide))
    return lu.reshape(batch + (m, n)), pivots.reshape(batch + (k_count,))


# The dtype whose product of two elements is exact (float32's in float64) or nearly so
# (float64's in the x87 extended double, 64 bits of 106), so that a - l u computed in it and
# rounded back is getrf's fused multiply-add.  Where longdouble is double, float64's update
# rounds twice, as before.
_FMA_WIDE = {np.dtype(np.float32): np.float64,
             np.dtype(np.float64): (np.longdouble if np.finfo(np.longdouble).nmant > 52
                                    else None)}


def _permutation(pivots: np.ndarray, m: int) -> np.ndarray:
    """perm with A[..., perm, :] = L U for LAPACK pivots (P[perm[i], i] = 1)."""
    flat = _batches(pivots, 1)
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for k in range(flat.shape[1]):
        swap = flat[:, k] - 1
        current = perm[rows, k].copy()
        perm[rows, k] = perm[rows, swap]
        perm[rows, swap] = current
    return perm.reshape(pivots.shape[:-1] + (m,))


class _LUFactor(Function):
    """The packed LU of an (m, n) matrix, A = P L U with L (m, k) unit lower and U (k, n) upper,
    k = min(m, n).  Backward from the factors' gradients (tril(-1) of the packed gradient for L,
    triu for U), with L = [L1; L2] and U = [U1 | U2] split at k (L2 exists when m > n, U2 when
    m < n) and ^H the conjugate transpose:
        phi = tril(L1^H gL1 - gU2 U2^H, -1) + triu(gU1 U1^H - L2^H gL2)
        P^T gA = [L1^-H phi U1^-H | L1^-H gU2]   (m < n)
               = [L1^-H phi U1^-H ; gL2 U1^-H]   (m >= n)."""

    @staticmethod
    def forward(ctx, a, lu_values, pivots):
        from .linalg import _lapack_layout
        lu = _core.wrap_array(_lapack_layout(lu_values), False)     # (column-major, as PyTorch's)
        ctx.save_for_backward(lu)
        ctx.perm = _permutation(pivots, a.shape[-2])
        return lu

    @staticmethod
    def backward(ctx, grad):
        if grad._array.size == 0:
            return grad.clone(), None, None
        lu, = ctx.saved_tensors
        from .linalg import solve_triangular
        m, n = lu.shape[-2], lu.shape[-1]
        k = min(m, n)
        grad_L, grad_U = grad[..., :, :k].tril(-1), grad[..., :k, :].triu()
        lower, upper = lu[..., :, :k].tril(-1), lu[..., :k, :].triu()
        # L1^H gL1 with L1 = tril(lu1, -1) + I
        lower_term = _core.matmul(lower[..., :k, :].mH, grad_L[..., :k, :]) + grad_L[..., :k, :]
        upper_term = _core.matmul(grad_U[..., :, :k], upper[..., :, :k].mH)
        if n > m:
            lower_term = lower_term - _core.matmul(grad_U[..., :, k:], upper[..., :, k:].mH)
        if m > n:
            upper_term = upper_term - _core.matmul(lower[..., k:, :].mH, grad_L[..., k:, :])
        phi = lower_term.tril(-1) + upper_term.triu()
        # lu1^H is upper with L1^H's unit diagonal above and U1^H's below: one packed operand.
        lu1_h = lu[..., :k, :k].mH
        x = solve_triangular(lu1_h, phi, upper=True, unitriangular=True)
        x = solve_triangular(lu1_h, x, upper=False, left=False)
        if n > m:
            from . import cat
            rest = solve_triangular(lu1_h, grad_U[..., :, k:], upper=True, unitriangular=True)
            x = cat([x, rest], dim=-1)
        elif m > n:
            from . import cat
            rest = solve_triangular(lu1_h, grad_L[..., k:, :], upper=False, left=False)
            x = cat([x, rest], dim=-2)
        return _unpermute_rows(x, ctx.perm), None, None


def _unpermute_rows(x, perm: np.ndarray):
    """P x for the permutation perm (row perm[i] of the result is row i of x)."""
    inverse = np.argsort(perm, axis=-1)
    index = np.broadcast_to(inverse[..., None], inverse.shape + (x.shape[-1],))
    return x.gather(-2, _wrap(np.ascontiguousarray(index, dtype=np.int64)))


_torch_grad_fn_name(_LUFactor, "LinalgLuFactorExBackward0")


def lu(A, pivot=True, get_infos=False):
    """The LU factorisation with partial pivoting (deprecated by PyTorch, which warns, in
    favour of linalg.lu_factor): (LU, pivots) or, with get_infos, (LU, pivots, info) where info
    counts nothing but marks a zero pivot (its 1-based index), as LAPACK's."""
    _core.check_bool("_lu_with_info", "pivot", pivot)    # (get_infos is Python's truth value)
    _core.warn_once("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                    "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
                    "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots "
                    "= torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
                    "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, "
                    "pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)",
                    "aten/src/ATen/native/BatchLinearAlgebra.cpp:2073")
    _check_tensor(A, "lu", "A")
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A.shape)} instead")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):     # (complex as lu_factor)
        raise NotImplementedError(f'"lu_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(A._array.dtype)}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu_values, pivots = _lu_factor_values(A._array)
    packed = _LUFactor.apply(A, lu_values, pivots)
    pivots_t = _wrap(pivots)
    if not get_infos:
        return packed, pivots_t
    info = _zero_pivot_info(lu_values)
    return _core.return_types._lu_with_info((packed, pivots_t, _wrap(info)))


def _check_pivots(pivots, fn: str) -> None:
    if pivots._array.dtype != np.int32:
        raise RuntimeError(f"torch.{fn}: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype.\nNote: this function is intended to be used "
                           f"with the output produced by torch.linalg.lu_factor")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """(P, L, U) from a packed LU and its pivots: A = P L U; empty tensors for the parts not
    asked for."""
    _require_tensor_pair("lu_unpack", LU_data, LU_pivots, "LU_pivots")
    _core.check_bool("lu_unpack", "unpack_data", unpack_data)
    _core.check_bool("lu_unpack", "unpack_pivots", unpack_pivots)
    _check_pivots(LU_pivots, "lu_unpack")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = _wrap(np.empty(0, dtype=LU_data._array.dtype))
    if unpack_data:
        from .creation import eye
        lower = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype)
        upper = LU_data[..., :k, :].triu()
    else:
        lower = upper = empty
    if unpack_pivots:
        perm = _permutation(LU_pivots._array, m)
        p = np.zeros(perm.shape + (m,), dtype=LU_data._array.dtype)
        np.put_along_axis(p, perm[..., None], 1, axis=-1)   # row perm[i] gets column i
        permutation = _wrap(np.swapaxes(p, -1, -2))
    else:
        permutation = empty
    return _core.return_types.lu_unpack((permutation, lower, upper))


def lu_solve(b, LU_data, LU_pivots):  # noqa: N803
    """The solution x of A x = b from A's packed LU and pivots (torch.lu's outputs);
    differentiable in b and LU_data.  Deprecated by PyTorch (which warns) in favour of
    linalg.lu_solve."""
    _core.warn_once("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                    "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
                    "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
                    "with\nX = torch.linalg.lu_solve(LU, pivots, B)",
                    "aten/src/ATen/native/BatchLinearAlgebra.cpp:2230")
    _require_tensor_pair("lu_solve", b, LU_data, "LU_data")
    from ._linalg_factor import check_lu_and_b_dtypes
    check_lu_and_b_dtypes(LU_data, b)
    _check_pivots(LU_pivots, "lu_solve")
    if b.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LU_data.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({LU_data.shape[-2]}x{n} and "
                           f"{'x'.join(str(s) for s in b.shape[-2:])})")
    # (the checks above keep this entry's order; the solve itself, batch broadcasting and its
    # error included, is linalg.lu_solve's)
    from ._linalg_factor import lu_solve as linalg_lu_solve
    return linalg_lu_solve(LU_data, LU_pivots, b)


# -- functions PyTorch removed in 1.9 (they still exist and raise) -------------------------------

_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.\n\nTo get "
             "the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
             "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = "
             "torch.linalg.solve(A, B)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq`"
             " has reversed arguments and does not return the QR decomposition in the returned "
             "tuple (although it returns other information about the problem).\n\nTo get the QR "
             "decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
             "`torch.lstsq` stored the residuals of the solution in the last m - n columns of "
             "the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the"
             " field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, "
             "as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX "
             "= torch.linalg.lstsq(A, B).solution",
    "symeig": "The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.\n\nL, _ = torch.symeig"
              "(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' "
              "if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be "
              "replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "matrix_rank": "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
           "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
           "eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
           "torch.linalg.eig(A)",
}


def _removed(name: str):
    def fn(*args, **kwargs):
        separator = "" if _REMOVED[name].startswith("\n") else " "
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed."
                           + separator + _REMOVED[name])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Removed from PyTorch in 1.9 (it still exists and raises): use "
                  f"torch.linalg instead; raises RuntimeError with PyTorch's message.")
    return fn


solve, lstsq, symeig, eig, matrix_rank = (_removed(n) for n in ("solve", "lstsq", "symeig", "eig",
                                                                  "matrix_rank"))


# -- norms kept for TorchScript (deprecated by PyTorch, which warns) ------------------------------

def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over `dim` (PyTorch keeps it for TorchScript and warns: use
    linalg.vector_norm(input, 2, dim, keepdim))."""
    _core.warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                    "It will be removed in a future PyTorch release. Please use "
                    "`linalg.vector_norm(A, 2., dim, keepdim)` instead",
                    "aten/src/ATen/native/LinearAlgebra.cpp:3175")
    _check_tensor(input, "frobenius_norm")
    from .linalg import vector_norm
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return vector_norm(input, 2.0, dims, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of the matrices over `dim` (the last two by default;
    PyTorch warns: use linalg.matrix_norm(input, 'nuc', dim, keepdim))."""
    _core.warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                    "will be removed in a future PyTorch release. Please use "
                    "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                    "aten/src/ATen/native/LinearAlgebra.cpp:3229")
    _check_tensor(input, "nuclear_norm")
    if isinstance(dim, bool):            # nuclear_norm(input, keepdim) overload
        dim, keepdim = None, dim
    from .linalg import matrix_norm
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of v over every dim but `dim`, kept as size-1 dims (weight_norm's g); with
    dim=-1, the norm of all of v."""
    _check_tensor(v, "norm_except_dim", "v")
    from .linalg import vector_norm
    if dim == -1:
        return vector_norm(v, pow)
    d = _core.normalize_dim(dim, v.dim())
    others = tuple(i for i in range(v.dim()) if i != d)
    if not others:      # (an empty dim tuple would reduce everything: each entry is its own norm)
        return vector_norm(v.unsqueeze(-1), pow, -1)
    return vector_norm(v, pow, others, keepdim=True)


def _ger_method(self, vec2):
    """Tensor.ger: the outer product (PyTorch's deprecated name of outer)."""
    from . import ger
    return ger(self, vec2)


# -- registration --------------------------------------------------------------------------------

FUNCTIONS = ("fmax", "fmin", "heaviside", "logaddexp2", "ldexp", "nextafter", "vdot", "rsub",
             "i0", "polygamma", "mvlgamma", "igamma", "igammac", "real", "imag", "angle", "conj",
             "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "is_conj",
             "is_neg", "isreal", "renorm", "addbmm", "chain_matmul", "matrix_exp",
             "cholesky_solve", "cholesky_inverse", "triangular_solve", "qr", "geqrf", "orgqr",
             "ormqr", "solve", "lstsq", "symeig", "eig", "lu", "lu_unpack", "lu_solve", "matrix_rank",
             "frobenius_norm", "nuclear_norm", "norm_except_dim", "gradient")
METHODS = ("fmax", "fmin", "heaviside", "logaddexp2", "ldexp", "nextafter", "vdot", "i0",
           "polygamma", "mvlgamma", "igamma", "igammac", "angle", "conj", "conj_physical",
           "conj_physical_", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "isreal",
           "renorm", "addbmm", "matrix_exp", "cholesky_solve", "cholesky_inverse",
           "triangular_solve", "qr", "geqrf", "orgqr", "ormqr", "solve", "lstsq", "symeig",
           "eig", "lu", "lu_solve")
RETURN_TYPES = {"triangular_solve": ("solution", "cloned_coefficient"), "qr": ("Q", "R"),
                "geqrf": ("a", "tau"), "lu_unpack": ("P", "L", "U"),
                "_lu_with_info": ("LU", "pivots", "info")}
# Tensor.<name>_ made by _extra_ops._in_place; the second tuple also gets torch.<name>_
IN_PLACE = ("addbmm", "addmv", "addr", "copysign", "deg2rad", "rad2deg", "erfc", "erfinv",
            "exp2", "lgamma", "digamma", "logit", "sinc", "gcd", "lcm", "hypot", "heaviside",
            "ldexp", "nextafter", "i0", "polygamma", "mvlgamma", "igamma", "igammac", "renorm")
IN_PLACE_FUNCTIONS = ("deg2rad", "rad2deg", "erfc", "exp2", "logit", "sinc", "gcd", "lcm",
                      "addmv", "ldexp", "i0")


def _float_power_(self, exponent):
    """In-place float_power: self must already have the result's dtype, as PyTorch: complex128
    when either operand is complex, float64 otherwise."""
    complex_operand = self.is_complex() or (exponent.is_complex()
                                            if isinstance(exponent, TensorBase)
                                            else isinstance(exponent, complex))
    required = _core.complex128 if complex_operand else _core.float64
    if self.dtype != required:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{_core.scalar_type_name_of(self._array.dtype)} but the operation's "
                           f"result requires dtype {_core.scalar_type_name_of(required.np_dtype)}")
    return _in_place("float_power")(self, exponent)


def _real_property(self):
    """The real part (a real tensor itself)."""
    return real(self)


def _imag_property(self):
    """The imaginary part (PyTorch's error for a real tensor)."""
    return imag(self)


def _part_setter(getter):
    """`t.real = value` / `t.imag = value`: PyTorch copies value (a tensor, broadcast, or a
    number) into that part, in place, so a complex tensor's other part stays and autograd
    records the write (as any copy_ into a view)."""
    def set_part(self, value):
        part = getter(self)
        if not isinstance(value, _core.TensorBase):
            # a number as PyTorch's fill of the part checks and converts it (a str or None, or
            # a complex number for a real part, refused in its words)
            number = _creation.empty((), dtype=part.dtype)
            number[...] = value
            value = number
        if part is not self and _core.is_grad_enabled() and (self.requires_grad
                                                             or value.requires_grad):
            # The core records no in-place write through a reinterpreting view: write the
            # whole complex tensor instead, its other part read back (the same values and
            # gradients: each part's gradient is the real or imaginary part of self's).
            if value.is_complex():
                value = value.real      # (copy_ into a real part would drop the same part)
            value = value.to(part.dtype).expand_as(part)
            other = self.imag if getter is _real_property else self.real
            pair = (value, other) if getter is _real_property else (other, value)
            self.copy_(_complex.complex(*pair))
            _core._name_grad_fn(self, "CopySlices")     # (PyTorch: a copy_ into a view of self)
            return
        part.copy_(value)
    return set_part


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace` (tapegrad's globals), the methods, properties and
    in-place forms to `tensor_cls`; existing names win."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, RETURN_TYPES,
                    {"polygamma": _polygamma_method})
    if not has_member(tensor_cls, "ger"):
        tensor_cls.ger = _ger_method
    for name in IN_PLACE:
        if not has_member(tensor_cls, name + "_"):
            setattr(tensor_cls, name + "_", _in_place(name))
    for name in IN_PLACE_FUNCTIONS:
        namespace.setdefault(name + "_", getattr(tensor_cls, name + "_"))
    if not has_member(tensor_cls, "float_power_"):
        tensor_cls.float_power_ = _float_power_
    if not has_member(tensor_cls, "real"):
        tensor_cls.real = property(_real_property, _part_setter(_real_property))
    if not has_member(tensor_cls, "imag"):
        tensor_cls.imag = property(_imag_property, _part_setter(_imag_property))
