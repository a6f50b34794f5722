"""torch.nn.functional.rms_norm and local_response_norm, composed of the core's differentiable
ops (so gradients, create_graph and float16-in-float32 numerics come from those ops)."""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from ..autograd.function import Function
from ._conv_ops import _check_tensor


def _normalized_shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, int):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims:
    ``input / sqrt(mean(input**2) + eps) * weight``.

    ``eps`` defaults to the machine epsilon of the dtype the norm is computed in (the input's,
    float32 for float16), as in PyTorch; the result has the input's dtype.
    """
    _check_tensor(input)
    shape = _normalized_shape(normalized_shape)
    n = len(shape)
    if n == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if tuple(input.shape[input.dim() - n:]) != shape or input.dim() < n:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(shape)}")
    # (complex too: PyTorch's composite squares without conjugating, x * x, and takes the
    # epsilon of the real dtype; numpy's finfo of a complex dtype is that)
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f'"rms_norm" not implemented for '
                           f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    # PyTorch composes rms_norm on the CPU (layer_norm.cpp, rms_norm_symint): the input cast to
    # its opmath dtype (float32 for float16), normalised, multiplied by the weight under
    # ordinary promotion (a weight of any dtype; a float64 one widens the product), the result
    # cast to the input's dtype.  (Casting the weight to the input's dtype first rounded a
    # float32 weight to float16 and gave its gradient in float16 precision.)
    x = input.to(_core.float32) if input.dtype == _core.float16 else input
    if eps is None:
        # the epsilon of the dtype computed in, as PyTorch's opmath: float32's for float16
        eps = float(np.finfo(x._array.dtype).eps)
    x = x.contiguous()      # PyTorch's result is row-major whatever the input's layout
    dims = tuple(range(x.dim() - n, x.dim()))
    out = x * (x * x).mean(dims, keepdim=True).add(eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out if out.dtype == input.dtype else out.to(input.dtype)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0):
    """Local response normalisation across channels (dim 1) of an input with at least 3 dims:
    ``input / (k + alpha / size * sum of squares over `size` neighbouring channels) ** beta``,
    the window centred on each channel (``size // 2`` before, ``(size - 1) // 2`` after) and
    zero beyond the first and last channel (AlexNet's normalisation)."""
    _check_tensor(input)
    if input.dim() < 3:
        # (PyTorch's message carries the run of spaces of its source line.)
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {input.dim()} dimensions)")
    if size <= 0:
        # (PyTorch averages the squares with avg_pool2d on 3-D input, avg_pool3d beyond)
        window = f"kH: {size} kW: 1" if input.dim() == 3 else f"kT: {size} kH: 1 kW: 1"
        raise RuntimeError(f"kernel size should be greater than zero, but got {window}")
    if input.numel() == 0:
        return input
    if input.dim() > 3:                             # (avg_pool3d has no float16 kernel)
        from .._half_precision import refuse_half
        refuse_half(input, "avg_pool3d_out_frame")
    channels = input.shape[1]
    squares = input * input
    # Zero channels before and after, then a sum of `size` shifted channel slices: one
    # vectorised add per window offset (size is small: AlexNet's is 5).
    before, after = size // 2, (size - 1) // 2
    pad_spec = [0, 0] * (input.dim() - 2) + [before, after]
    padded = _core.NN_FUNCTIONS["pad"](squares, pad_spec, "constant", 0.0)
    window_sum = None
    for offset in range(size):
        part = padded.narrow(1, offset, channels)
        window_sum = part if window_sum is None else window_sum + part
    if not (input.is_floating_point() or input.is_complex()):
        # (PyTorch averages with avg_pool on the integer squares, whose integer division
        # truncates the window mean before alpha scales it: int64 input gave values ~1e-5 off)
        return input / ((window_sum // size) * alpha + k) ** beta
    return input / (window_sum * (alpha / size) + k) ** beta


def _cross_map_window(channels: int, size: int) -> np.ndarray:
    """The (channels, channels) 0/1 matrix W of PyTorch's legacy CrossMapLRN2d: channel c is
    normalised by sum_j W[c, j] * x_j**2.  PyTorch builds these sums as a running sum over the
    channels (the first over channels [0, pre_pad), each next one adding the channel entering
    the window and, from channel pre_pad + 1 on, removing the one leaving it); that recurrence
    never removes channel 0, so from channel pre_pad on channel 0 stays in every window.  The
    matrix repeats the recurrence, so the values are PyTorch's; the gradient is the true
    derivative of them (PyTorch's hand-written backward assumes centred windows)."""
    pre_pad = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels))
    if channels == 0:
        return w
    w[0, :min(pre_pad, channels)] = 1.0
    for c in range(1, channels):
        w[c] = w[c - 1]
        if c < channels - pre_pad + 1:
            w[c, c + pre_pad - 1] += 1.0
        if c > pre_pad:
            w[c, c - pre_pad] -= 1.0
    return w


def _cross_map_scale(x, window, alpha: float, size: int, k: float):
    """k + alpha / size * (window-weighted sum of squares over the channels) of 4-D x."""
    n, c, h, w = x.shape
    sums = window @ (x * x).reshape(n, c, h * w)
    return (sums * (alpha / size) + k).reshape(n, c, h, w)


class CrossMapLRN2d(Function):
    """PyTorch's legacy (Lua torch) cross-channel LRN of a 4-D input: x * scale ** -beta.  One
    node, CrossMapLRN2dBackward as in PyTorch; its backward is composed of differentiable ops,
    so create_graph works (PyTorch's backward writes with out= and refuses there)."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        if input.dim() != 4:
            raise ValueError(
                f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        kind = input._array.dtype.kind
        if kind in "biu":
            # (PyTorch writes pow(input, 2), then pow(scale, -beta), into a tensor of the
            # input's dtype; squares of bools promote to Long)
            result = "Long" if kind == "b" else "Float"
            raise RuntimeError(f"result type {result} can't be cast to the desired output type "
                               f"{_core.scalar_type_name_of(input._array.dtype)}")
        window = _core.wrap_array(_cross_map_window(input.shape[1], size)).to(input.dtype)
        scale = _cross_map_scale(input, window, alpha, size, k)
        output = input * scale ** -beta
        ctx.save_for_backward(input)
        ctx.window, ctx.size, ctx.alpha, ctx.beta, ctx.k = window, size, alpha, beta, k
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        size, alpha, beta = ctx.size, ctx.alpha, ctx.beta
        scale = _cross_map_scale(input, ctx.window, alpha, size, ctx.k)
        powered = scale ** -beta
        # d/dx_j of x_c * scale_c ** -beta: the direct term, and through scale_c (which holds
        # x_j ** 2 with weight alpha / size * W[c, j]) -beta * x_c * scale_c ** (-beta - 1).
        n, c, h, w = input.shape
        through = (grad_output * input * powered / scale).reshape(n, c, h * w)
        spread = (ctx.window.transpose(0, 1) @ through).reshape(n, c, h, w)
        grad_input = grad_output * powered - (2.0 * alpha * beta / size) * input * spread
        return grad_input, None, None, None, None
