"""Activation functions PyTorch has in torch.nn.functional beyond the compiled ones, composed of
differentiable ops. Each piecewise function is built with where() so that the gradient at a
breakpoint is the one PyTorch's own backward formula gives there (not the one a clamp would)."""
from __future__ import annotations as _annotations

import math
import warnings

import numpy as np

from .. import _core
from .._real_torch import real_tensor_or_item
from .._aten_loops import scalar_path_mask
from .._half_precision import in_float32_if_half, narrow_half, widen_half
from .._preserve_layout import inverse, preserved_order
from ..tensor import Tensor
import tapegrad as _tg
from ._graph_inplace import recording_inplace
from .._ops_unary import piecewise_where as _piecewise_where

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _compiled(name):
    return _core.NN_FUNCTIONS[name]


def _operand(input, inplace: bool):
    """What an activation computes from: input itself, or with inplace=True on a view that
    overlaps itself (unfold, as_strided), a copy whose gradient reaches each shared element
    once, as PyTorch's in-place write into a view sends it (the core's _overlap_operand)."""
    return _core._overlap_operand(input) if inplace else input


def _dtype_name(input) -> str:
    return _core.scalar_type_name_of(input._array.dtype)


def _require_floating(input, kernel: str) -> None:
    """PyTorch has these activations' kernels for floating types only: an integer, bool or
    complex input raises there instead of being computed in float32 here."""
    if isinstance(input, _core.TensorBase):
        if not input.is_floating_point():
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(input)}'")
    elif hasattr(type(input), "__torch_function__"):
        # a tensor-like (a quantized tensor): the public entry's refused-call path hands the
        # call to its __torch_function__, as PyTorch's handle_torch_function does
        raise TypeError(f"{kernel}: expected a Tensor, got {type(input).__name__}")


def _finish(input, out, inplace: bool, node: str = None, inplace_node: str = None):
    """The activation's result.  In-place variants write it back into the caller's tensor, as
    PyTorch's do.  Its grad_fn is named `node` when given: PyTorch's node for the activation
    (HardtanhBackward0), not the last op it is composed of here; in place, `inplace_node` where
    PyTorch's in-place form has another (threshold_'s ThresholdBackward1), and not for a view
    (PyTorch names its node after the view).  Without `node`, in place too the node keeps the
    name of out's own last op: PyTorch's in-place alpha_dropout ends in add_ (AddBackward0),
    not in a copy_ (CopyBackwards)."""
    if inplace:
        if node is None and out.grad_fn is not None:
            node = type(out.grad_fn).__name__
        input.copy_(out)
        if node is not None and input._base is None:
            _core._name_grad_fn(input, inplace_node or node)
        return input
    return out if node is None else _core._name_grad_fn(out, node)


def _finish_saving_input(input, out, inplace: bool, node: str):
    """_finish for the activations whose PyTorch node saves the input (hardtanh, relu6,
    hardsigmoid): out of place, a write into the input before backward raises as there."""
    if not inplace:
        _tg._core._guard_saved_version(out, input)
    return _finish(input, out, inplace, node)


def _piecewise(passes, input, other, backward: str):
    # input where `passes`, the constant `other` elsewhere, recorded so that its gradient reads
    # input as PyTorch's backward formula does (zero second derivatives under create_graph).
    # `passes` is written so that NaN passes wherever PyTorch's formula lets a NaN through.
    return _piecewise_where(passes, input, other, backward)


def _integer_limits(dtype, min_val, max_val):
    """hardtanh's limits for an integer input: PyTorch converts them to the input's type
    (truncating, so relu6 of an int64 tensor stays int64 and hardtanh(x, -0.5, 2.5) clamps to
    [0, 2]); a float limit would otherwise promote the result to float32 and clamp to -0.5."""
    if dtype == _tg.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    info = _tg.iinfo(dtype)
    limits = [int(min_val), int(max_val)]
    if info.min == 0 and limits[0] < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    for value in limits:
        if not info.min <= value <= info.max:
            c_type = str(dtype).split(".")[-1] + "_t"
            raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
    return limits


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    # PyTorch's backward passes the gradient except at or beyond the bounds (NaN passes).
    """Elementwise ``clamp(x, min_val, max_val)`` (default -1, 1), with PyTorch's zero gradient at
    the bounds.
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    from ..creation import _number_argument
    min_val = _number_argument(min_val, "hardtanh", "min_val", 2)
    max_val = _number_argument(max_val, "hardtanh", "max_val", 3)
    from .._extra_ops import _check_tensor
    _check_tensor(input, "hardtanh_" if inplace else "hardtanh")    # (PyTorch's builtins)
    if not (input.is_floating_point() or input.is_complex()):
        min_val, max_val = _integer_limits(input.dtype, min_val, max_val)
    with _tg.no_grad():
        # the clamped value keeps a zero's sign (relu6(-0.0) is -0.0) and NaN, as PyTorch's
        clamped = _tg.clamp(input.detach(), min_val, max_val)
    x = _operand(input, inplace)
    out = _piecewise(~((input <= min_val) | (input >= max_val)), x, clamped, "hardtanh")
    return _finish_saving_input(input, out, inplace, "HardtanhBackward0")


def relu6(input, inplace: bool = False):
    """Elementwise ``min(max(0, x), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


@recording_inplace(node="EluBackward1")
def selu(input, inplace: bool = False):
    """Elementwise ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with PyTorch's constants
    alpha = 1.6733 and scale = 1.0507.
    """
    # (float16 in float32, rounded once, as PyTorch's opmath: see _half_precision)
    out = in_float32_if_half(lambda x: _compiled("elu")(x, alpha=_SELU_ALPHA) * _SELU_SCALE,
                             input)
    return _finish(input, out, inplace, "EluBackward0")


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """Elementwise ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    alpha = _number_argument(alpha, "celu", "alpha", 2)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _require_floating(input, "elu_cpu")
    # (float16 in float32: x / 1e-5 overflowed float16, and alpha 1e-5 is subnormal there)
    out = in_float32_if_half(lambda x: _compiled("elu")(x / alpha, alpha=1.0) * alpha,
                             _operand(input, inplace))
    return _finish(input, out, inplace, "CeluBackward0", "CeluBackward1")


@recording_inplace
def mish(input, inplace: bool = False):
    """Elementwise ``x * tanh(softplus(x))``."""
    _require_floating(input, "mish_cpu")
    # (float16 in float32: the gradient of a large input was NaN, inf * 0 in float16)
    from ._activation_kernels import MishKernel
    out = in_float32_if_half(MishKernel.apply, input)
    return _finish(input, out, inplace, "MishBackward0")


@recording_inplace
def hardswish(input, inplace: bool = False):
    # Gradient x/3 + 1/2 strictly inside (-3, 3), 0 at -3 and 1 at 3, as PyTorch 2.13 gives.
    """Elementwise ``x * clamp(x + 3, 0, 6) / 6``."""
    _require_floating(input, "hardswish_cpu")
    from ._activation_kernels import HardswishKernel
    out = in_float32_if_half(HardswishKernel.apply, input)
    return _finish(input, out, inplace, "HardswishBackward0")


def hardsigmoid(input, inplace: bool = False):
    """Elementwise ``clamp(x / 6 + 1 / 2, 0, 1)``."""
    _require_floating(input, "hardsigmoid_cpu")
    # PyTorch's gradient is (float32) 1/6 strictly inside (-3, 3), 0 elsewhere and at NaN
    from ._activation_kernels import HardsigmoidInside
    inside = (input > -3.0) & (input < 3.0)
    linear = in_float32_if_half(HardsigmoidInside.apply, _operand(input, inplace))
    with _tg.no_grad():
        outside = _tg.clamp(linear.detach(), 0.0, 1.0)
    return _finish_saving_input(input, _piecewise(inside, linear, outside, "hardsigmoid"),
                                inplace, "HardsigmoidBackward0")


def logsigmoid(input):
    """Elementwise ``log(sigmoid(x))``, computed stably as ``-softplus(-x)``."""
    from .._extra_ops import _check_tensor
    _check_tensor(input, "log_sigmoid")      # (PyTorch's builtin is named log_sigmoid)
    _require_floating(input, "log_sigmoid_cpu")
    from ._activation_kernels import LogSigmoidKernel
    return in_float32_if_half(LogSigmoidKernel.apply, input)


def softsign(input):
    """Elementwise ``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """Elementwise ``x - tanh(x)``."""
    # (PyTorch's Python form, whose input.tanh() is what a non-tensor fails on)
    return input - input.tanh()


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """Elementwise ``x`` where ``x > threshold``, else ``value``."""
    from ..creation import _number_argument
    threshold = _number_argument(threshold, "threshold", "threshold", 2)
    value = _number_argument(value, "threshold", "value", 3)
    if input.dtype == _tg.bool:     # (PyTorch's kernel takes every other type)
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    # PyTorch replaces x <= threshold: NaN is kept, with its gradient.  Its float16 kernel
    # compares in float32 (opmath), the threshold not rounded to float16 as `<=` would: 1000.5
    # is above 1000.3 and kept, where float16's 1000.3 is 1000.5 itself
    replaced = (input.detach().float() <= threshold if input.dtype == _tg.float16
                else input <= threshold)
    out = _piecewise(~replaced, _operand(input, inplace), _tg.full_like(input, value),
                     "threshold")
    return _finish(input, out, inplace, "ThresholdBackward0", "ThresholdBackward1")


def _number_argument(value, fn, keyword, position):
    """value as PyTorch's parser reads a Number argument (creation._number_argument: a tensor
    that requires grad is refused, not silently cut off from its gradient)."""
    from ..creation import _number_argument as number_argument
    return number_argument(value, fn, keyword, position)


def _check_lambd(input, lambd: float) -> None:
    if lambd < 0:
        # (the range is the input dtype's: [0, 65504] for float16, [0, 1.79769e+308] for float64)
        top = float(_tg.finfo(input.dtype if input.is_floating_point() else _tg.float32).max)
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{_dtype_name(input)}, but found {lambd:g}")


def hardshrink(input, lambd: float = 0.5):
    """Elementwise ``x`` where ``|x| > lambd`` (default 0.5), else 0."""
    _require_floating(input, "hardshrink_cpu")
    lambd = _number_argument(lambd, "hardshrink", "lambd", None)
    # (no lambda check: PyTorch's hardshrink keeps every value for a negative lambd)
    # PyTorch zeroes -lambd <= x <= lambd: NaN is kept, with its gradient
    dead = (input >= -lambd) & (input <= lambd)
    return _core._name_grad_fn(_piecewise(~dead, input, _tg.zeros_like(input), "hardshrink"),
                               "HardshrinkBackward0")


def softshrink(input, lambd: float = 0.5):
    """Elementwise ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _require_floating(input, "softshrink_check")
    lambd = _number_argument(lambd, "softshrink", "lambd", 2)
    _check_lambd(input, lambd)
    # PyTorch zeroes -lambd <= x <= lambd and shifts the rest towards 0: NaN is kept
    dead = (input >= -lambd) & (input <= lambd)
    shifted = in_float32_if_half(lambda x: _tg.where(x > lambd, x - lambd, x + lambd), input)
    zero = _softshrink_zeros(input)
    return _core._name_grad_fn(_piecewise(~dead, shifted, zero, "softshrink"),
                               "SoftshrinkBackward0")


def _softshrink_zeros(input):
    """The zeros PyTorch's softshrink writes in its dead zone: its SIMD lanes give 0.0, its scalar
    code x * 0, which is -0.0 for a negative x.  Which elements take the scalar code depends on
    the input's size and layout (the few after the last full pair of vectors of each run), so a
    printed result shows "-0." only there: [-0.1] * 8 in float64 gives -0. everywhere, [-0.1] * 9
    only in its last place."""
    # (a bfloat16 tensor shows its float32 storage while its op runs: PyTorch's 2 bytes count)
    size = 2 if getattr(type(input), "_dtype_class", False) else input.element_size()
    scalar = scalar_path_mask(input._array, size, _core._kernel_threads())
    with _tg.no_grad():
        if scalar.all():
            return input.detach() * 0.0
        if not scalar.any():
            return _tg.zeros_like(input)
        return _tg.where(_core.wrap_array(scalar), input.detach() * 0.0, 0.0)


def prelu(input, weight):
    """x if x > 0 else weight * x, with one weight per channel (dim 1) or one shared weight."""
    if input.dtype != weight.dtype:
        # (no promotion: a float64 weight does not make a float32 input's result float64)
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_dtype_name(input)} and "
                           f"{_dtype_name(weight)}")
    _require_floating(input, "prelu_cpu")
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        weight = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    elif weight.dim() > 0:
        # (one shared weight of shape (1,): a 0-d input keeps its shape, as PyTorch's)
        weight = weight.reshape(())
    from ._prelu_function import PreluKernel
    return PreluKernel.apply(input, weight)


@recording_inplace(node="RreluWithNoiseBackward1")
def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False):
    """Randomized leaky ReLU: in training each non-positive entry gets a slope drawn from
    U(lower, upper); in evaluation the slope is their mean."""
    # (PyTorch passes training on as its builtin rrelu's 4th argument; inplace is Python's)
    _core.check_bool("rrelu_" if inplace else "rrelu", "training", training, 4)
    lower = _number_argument(lower, "rrelu", "lower", 2)
    upper = _number_argument(upper, "rrelu", "upper", 3)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        out = _compiled("leaky_relu")(input, (lower + upper) / 2)
    else:
        slope = _tg.rand(input.shape, dtype=input.dtype) * (upper - lower) + lower
        out = _tg.where(input > 0, input, input * slope)
    if not inplace:
        # row-major whatever input's layout: PyTorch's rrelu_with_noise allocates its result
        # contiguous (leaky_relu and where would keep a column-major input's layout)
        out = out.contiguous()
    return _finish(input, out, inplace, "RreluWithNoiseBackward0", "RreluWithNoiseBackward1")


def _legacy_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``softmax(-input, dim)``: along ``dim``, weights that sum to 1, largest for the smallest value."""
    if not isinstance(input, _core.TensorBase):
        input = real_tensor_or_item(input)  # (a real torch tensor: read, as every entry reads it)
    if dim is None:
        dim = _legacy_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    negated = -input
    if not isinstance(negated, _core.TensorBase):
        # PyTorch calls `(-input).softmax(dim)`: a non-tensor fails naming that method.
        return negated.softmax(dim)
    return _compiled("softmax")(negated, dim)


def glu(input, dim: int = -1):
    """Gated linear unit: split ``input`` in two halves ``a, b`` along ``dim`` (even size) and return
    ``a * sigmoid(b)``; the result has half the size along ``dim``.
    """
    _require_floating(input, "glu_cpu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        wrapped = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {wrapped} is size "
                           f"{size}")
    a, b = input.chunk(2, dim)
    return _core._name_grad_fn(a * _tg.sigmoid(b), "GluBackward0")


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if not isinstance(input, _core.TensorBase):
        input = real_tensor_or_item(input)  # (a real torch tensor: read, as every entry reads it)
    if not isinstance(input, _core.TensorBase):
        input.norm(p, dim, keepdim=True)    # PyTorch's first use of input: its error, if any
    order = preserved_order(input)
    if order is not None and out is None and -input.ndim <= dim < input.ndim:
        # PyTorch's quotient keeps the input's layout
        d = order.index(dim % input.ndim)
        return normalize(input.permute(*order), p, d, eps).permute(*inverse(order))
    # PyTorch's composite: a float16 input's norm is rounded to float16 (the norm computes in
    # float32: no overflow of the squares) before the division, and eps is converted to
    # float16 by the clamp (1e-12 is 0 there: a zero row is NaN, as PyTorch's)
    denom = _tg.clamp_min(input.norm(p, dim, keepdim=True), eps).expand_as(input)
    if out is not None:     # (PyTorch's torch.div(input, denom, out=out): div's out= rules)
        from .._out_arg import compute_then_write
        return compute_then_write("div", out, (input,), lambda: input / denom)
    return input / denom


__all__ = ["hardtanh", "relu6", "selu", "celu", "mish", "hardswish", "hardsigmoid", "logsigmoid",
           "softsign", "tanhshrink", "threshold", "hardshrink", "softshrink", "prelu", "rrelu",
           "softmin", "glu", "normalize", "alpha_dropout", "gumbel_softmax"]


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps SELU's zero mean / unit variance: dropped entries take SELU's
    negative saturation value and the result is re-affined (a * x + b)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p != p:      # NaN passes PyTorch's Python check; its kernel's (even in eval) raises
        raise RuntimeError("dropout probability has to be between 0 and 1, but got nan")
    # (PyTorch passes training on as its builtin alpha_dropout's 3rd argument `train`)
    _core.check_bool("alpha_dropout_" if inplace else "alpha_dropout", "train", training, 3)
    if not training or p == 0:
        return input
    if p == 1:
        return _finish(input, input * 0, inplace)
    saturation = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((saturation * saturation * p + 1) * (1 - p))
    keep = (_tg.rand(input.shape, dtype=input.dtype) >= p).to(input.dtype)
    b = (keep - 1) * (saturation * a) + saturation * a * p
    return _finish(input, _operand(input, inplace) * (keep * a) + b, inplace)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1):
    """A sample from the Gumbel-softmax (concrete) distribution over `dim`: ``softmax((logits +
    g) / tau)`` with g standard Gumbel noise; ``hard=True`` returns the one-hot of its argmax in
    the forward pass with the soft sample's gradient (straight-through estimator)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # -log(E) with E ~ Exponential(1) is standard Gumbel noise.
    noise = -_tg.empty_like(logits).exponential_().log()
    soft = ((logits + noise) / tau).softmax(dim)
    if not hard:
        return soft
    winner = soft.argmax(dim, keepdim=True)
    one_hot = _tg.zeros_like(logits).scatter_(dim, winner, 1.0)
    return one_hot - soft.detach() + soft
