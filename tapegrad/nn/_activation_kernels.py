"""Activations computed as one autograd.Function whose backward is PyTorch's formula grad * f'(x),
rather than the chain rule through the ops that compose f: there an infinite upstream gradient
met the partial derivatives separately (inf - inf or inf * 0, NaN) where PyTorch's product is
+-inf or its mask 0 (mish: fuzz 62678047; hardswish, logsigmoid: fuzz13's open class).

Mish's backward is written in differentiable ops, as PyTorch's infinitely_differentiable_mish_backward,
so its second derivatives are the derivatives of that formula, as PyTorch's.  Hardswish's and
logsigmoid's backwards are Functions too (PyTorch's HardswishBackwardBackward0,
LogSigmoidBackwardBackward0) whose derivatives are derivatives.yaml's formulas.

Gelu's, elu's and softplus's forwards and first backwards are compiled ops; only their gradients
under create_graph are the Functions below (GeluBackwardBackward0, ...): the compiled graph VJP
hands each the eager gradient's value and the Function supplies PyTorch's double-backward formula
as one product grad_grad * grad * f''(x), so an infinite factor meets f'' once (inf, or NaN where
f'' or the mask is 0) rather than each term of f'' separately (fuzz14)."""
from __future__ import annotations as _annotations

import tapegrad as _tg
from .._extra_functions import _torch_grad_fn_name
from ..autograd.function import Function


# -- mish --------------------------------------------------------------------------------------

def _tanh_softplus(x):
    return _tg.nn.functional.softplus(x).tanh()


class MishKernel(Function):
    """x * tanh(softplus(x)); backward grad * (t + x * sigmoid(x) * (1 - t * t)), t the
    tanh(softplus(x)), from the saved input (PyTorch's MishBackward0 saves self)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * _tanh_softplus(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        t = _tanh_softplus(x)
        return grad * (t + x * x.sigmoid() * (1 - t * t))


# -- hardswish ---------------------------------------------------------------------------------

class HardswishKernel(Function):
    """x * clamp(x + 3, 0, 6) / 6, saving the input (PyTorch's HardswishBackward0 saves self)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # PyTorch's kernel's expression, in its order: (x * clamp(x + 3, 0, 6)) / 6, so from 3 on
        # the result is x * 6 / 6 (not always x: 2514 of 100,000 float32 values differed), and
        # below -3 it is x * 0, a negative zero
        return x * _tg.clamp(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return HardswishBackward.apply(grad, x)


class HardswishBackward(Function):
    """PyTorch's hardswish_backward: 0 for x <= -3, grad * (x / 3 + 1/2) below 3, grad from 3 on
    (PyTorch 2.13's CPU kernel's bounds).  Its derivatives, derivatives.yaml's: the same backward
    of the incoming gradient, and grad_grad * grad / 3 strictly inside (-3, 3), 0 elsewhere."""

    @staticmethod
    def forward(ctx, grad, x):
        ctx.save_for_backward(grad, x)
        return _tg.where(x <= -3.0, 0.0, _tg.where(x < 3.0, grad * (x / 3.0 + 0.5), grad))

    @staticmethod
    def backward(ctx, grad_grad):
        grad, x = ctx.saved_tensors
        inside = (x > -3.0) & (x < 3.0)
        return (HardswishBackward.apply(grad_grad, x),
                _tg.where(inside, grad_grad * grad / 3.0, 0.0))


# -- hardsigmoid -------------------------------------------------------------------------------

# PyTorch's hardsigmoid_backward multiplies by its kernel's constant 1.0f / 6.0f, a float32
# 1/6 in every dtype (float64 gradients are 0.1666666716337204 * grad, not grad / 6)
_ONE_SIXTH_F32 = 0.1666666716337204


class HardsigmoidInside(Function):
    """hardsigmoid where it is not clamped (-3 < x < 3): PyTorch's forward clamp(x + 3, 0, 6) / 6
    is (x + 3) / 6 there; its backward grad * (float32 1/6), not the grad / 6 of the quotient."""

    @staticmethod
    def forward(ctx, x):
        return (x + 3.0) / 6.0

    @staticmethod
    def backward(ctx, grad):
        return grad * _ONE_SIXTH_F32


# -- logsigmoid --------------------------------------------------------------------------------

class LogSigmoidKernel(Function):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), saving the input (PyTorch's
    LogSigmoidBackward0 saves self and the buffer exp(-|x|), recomputed here)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # two branches that each see only their own half of the inputs, so neither overflows
        zero = _tg.zeros(x.shape, dtype=x.dtype)     # (row-major: PyTorch's result is)
        negative = x < 0
        x_neg = _tg.where(negative, x, zero)
        x_pos = _tg.where(negative, zero, x)
        # (0 - log1p(...), not a negation: where exp(-x) underflows the result is +0, as
        # PyTorch's min(x, 0) - log1p(exp(-|x|)) gives, not -0)
        # (made row-major at the end: PyTorch's log_sigmoid allocates its result contiguous
        # whatever x's layout, where `where` would follow x's)
        return _tg.where(negative, x_neg - _tg.log1p(_tg.exp(x_neg)),
                         0.0 - _tg.log1p(_tg.exp(-x_pos))).contiguous()

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return LogSigmoidBackward.apply(grad, x)


class LogSigmoidBackward(Function):
    """PyTorch's log_sigmoid_backward: (max_deriv - sign * z / (1 + z)) * grad, z = exp(-|x|),
    max_deriv and sign 1 for x < 0, 0 and -1 otherwise.  Its derivatives, derivatives.yaml's:
    the same backward of the incoming gradient, and log_sigmoid_double_backward(grad_grad * grad,
    x) = (grad_grad * grad) * (s - 1) * s, s = sigmoid(x)."""

    @staticmethod
    def forward(ctx, grad, x):
        ctx.save_for_backward(grad, x)
        negative = x < 0
        z = _tg.exp(-x.abs())
        return (_tg.where(negative, 1.0, 0.0) - _tg.where(negative, 1.0, -1.0) * (z / (1.0 + z))) \
            * grad

    @staticmethod
    def backward(ctx, grad_grad):
        grad, x = ctx.saved_tensors
        s = x.sigmoid()
        return LogSigmoidBackward.apply(grad_grad, x), grad_grad * grad * (s - 1.0) * s


# -- gradients of the compiled gelu, elu and softplus under create_graph ------------------------

def _given_or(value, compute):
    """The eager kernel's gradient `value` (an ndarray, handed over by the compiled graph VJP) as a
    tensor, or, for a gradient of a gradient, the formula's value."""
    return _tg.from_numpy(value) if value is not None else compute()


_GELU_BETA = 0.7978845608028654         # sqrt(2 / pi), PyTorch's kBeta of the tanh form
_GELU_KAPPA = 0.044715
_INV_SQRT_2PI = 0.3989422804014327


def _gelu_derivative(x, approximate):
    """d gelu / dx, PyTorch's gelu_backward without its grad factor."""
    if approximate == "tanh":
        tanh_inner = (_GELU_BETA * (x + _GELU_KAPPA * x * x * x)).tanh()
        return 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) \
            * (_GELU_BETA * (1 + 3 * _GELU_KAPPA * x * x))
    return 0.5 * (1 + _tg.erf(x * 0.7071067811865476)) \
        + x * (_tg.exp(-0.5 * x * x) * _INV_SQRT_2PI)


def _gelu_second_derivative(x, approximate):
    """PyTorch's gelu_double_backward without its grad_grad * grad factor."""
    if approximate == "tanh":
        inner = _GELU_BETA * (x + _GELU_KAPPA * x * x * x)
        tanh_inner = inner.tanh()
        sech_inner = 1 / inner.cosh()
        f = 0.5 * x
        g = 1 - tanh_inner * tanh_inner
        h = _GELU_BETA * (1 + 3 * _GELU_KAPPA * x * x)
        g_prime = (2 * sech_inner) * (-sech_inner * tanh_inner) * h
        h_prime = 6 * _GELU_KAPPA * x * _GELU_BETA
        f_prime_gh = 0.5 * g * h     # (twice: from 0.5 (1 + tanh) and from f g h)
        return f_prime_gh + (f_prime_gh + f * h * g_prime + f * g * h_prime)
    pdf = _tg.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return 2 * pdf - x * x * pdf


class GeluBackward(Function):
    """grad * gelu'(x) (gelu_backward); derivatives gelu_backward(grad_grad, x) and
    grad_grad * grad * gelu''(x) (gelu_double_backward)."""

    @staticmethod
    def forward(ctx, grad, x, value, approximate):
        ctx.save_for_backward(grad, x)
        ctx.approximate = approximate
        return _given_or(value, lambda: grad * _gelu_derivative(x, approximate))

    @staticmethod
    def backward(ctx, grad_grad):
        grad, x = ctx.saved_tensors
        return (GeluBackward.apply(grad_grad, x, None, ctx.approximate),
                grad_grad * grad * _gelu_second_derivative(x, ctx.approximate), None, None)


class EluBackward(Function):
    """elu_backward: grad for x > 0, grad * alpha * exp(x) otherwise; derivatives
    elu_backward(grad_grad, x) and elu_double_backward, elu_backward(grad_grad * grad, x) * (x < 0)
    (the mask multiplies, so an infinite product gives NaN where x >= 0, as PyTorch's)."""

    @staticmethod
    def forward(ctx, grad, x, value, alpha):
        ctx.save_for_backward(grad, x)
        ctx.alpha = alpha
        return _given_or(value, lambda: _elu_backward(grad, x, alpha))

    @staticmethod
    def backward(ctx, grad_grad):
        grad, x = ctx.saved_tensors
        negative = (x < 0).to(x.dtype)
        return (EluBackward.apply(grad_grad, x, None, ctx.alpha),
                _elu_backward(grad_grad * grad, x, ctx.alpha) * negative, None, None)


def _elu_backward(grad, x, alpha):
    return _tg.where(x > 0, grad, grad * alpha * _tg.exp(_tg.clamp(x, max=0.0)))


class SoftplusBackward(Function):
    """softplus_backward: grad where beta x > threshold, grad * sigmoid(beta x) otherwise;
    derivatives softplus_backward(grad_grad, x) and softplus_double_backward,
    (grad_grad * grad) (1 - s) s (beta x < threshold) beta, s = sigmoid(beta x)."""

    @staticmethod
    def forward(ctx, grad, x, value, beta, threshold):
        ctx.save_for_backward(grad, x)
        ctx.beta, ctx.threshold = beta, threshold
        return _given_or(value, lambda: _tg.where(x * beta > threshold, grad,
                                                  grad * (x * beta).sigmoid()))

    @staticmethod
    def backward(ctx, grad_grad):
        grad, x = ctx.saved_tensors
        z = x * ctx.beta
        s = z.sigmoid()
        below = (z < ctx.threshold).to(x.dtype)
        return (SoftplusBackward.apply(grad_grad, x, None, ctx.beta, ctx.threshold),
                grad_grad * grad * (1 - s) * s * below * ctx.beta, None, None, None)


_torch_grad_fn_name(GeluBackward, "GeluBackwardBackward0")
_torch_grad_fn_name(EluBackward, "EluBackwardBackward0")
_torch_grad_fn_name(SoftplusBackward, "SoftplusBackwardBackward0")
_torch_grad_fn_name(MishKernel, "MishBackward0")
_torch_grad_fn_name(HardswishKernel, "HardswishBackward0")
_torch_grad_fn_name(HardswishBackward, "HardswishBackwardBackward0")
_torch_grad_fn_name(LogSigmoidKernel, "LogSigmoidBackward0")
_torch_grad_fn_name(LogSigmoidBackward, "LogSigmoidBackwardBackward0")
