"""torch.nn.functional.rms_norm and local_response_norm, composed of the core's differentiable
ops (so gradients, create_graph and float16-in-float32 numerics come from those ops)."""
from __future__ import annotations

import numpy as np

from .. import _core
from .._half_precision import narrow_half, widen_half
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
    if n == 0 or tuple(input.shape[input.dim() - n:]) != shape or input.dim() < n:
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
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)         # PyTorch's result keeps the input's dtype
    (x, w), half = widen_half(input, weight)
    if eps is None:
        # the epsilon of the dtype computed in, as PyTorch's opmath: float32's for float16
        eps = float(np.finfo(x._array.dtype).eps)
    x = x.contiguous()      # PyTorch's result is row-major whatever the input's layout
    dims = tuple(range(x.dim() - n, x.dim()))
    out = x * (x * x).mean(dims, keepdim=True).add(eps).rsqrt()
    if w is not None:
        out = out * w
    return narrow_half(out, half)


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
    return input / (window_sum * (alpha / size) + k) ** beta
