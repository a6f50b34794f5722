"""The floating-point operation counts the profiler reports with ``with_flops=True``, by PyTorch's
profiler's formulas: a multiply-add counts 2 (mm, addmm, bmm, baddbmm, conv2d), an elementwise
mul or add counts one per element of its first operand, every other op 0.  An op run inside an
op already counted (addmm's inner add) counts 0: its work is in the outer count.

PyTorch counts a linear layer's or a matmul's FLOPs on the aten::addmm / aten::mm / aten::bmm
event it runs inside them; tapegrad records no such inner event, so the same count goes on the
aten::linear / aten::matmul event itself: the totals agree, the key carrying them differs."""
from __future__ import annotations as _annotations

import math


def _shape(x):
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else None


def _numel(shape) -> int:
    return math.prod(shape)


def _mm(a, b) -> int:
    (m, k), n = a, b[-1]
    return 2 * m * k * n


def _batched(a, b) -> int:
    return 2 * a[0] * a[1] * a[2] * b[-1]


def _pair(value, ndim=2):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * ndim


def _conv2d(operands) -> int:
    # The event sees the positional arguments only: a count needs all of them (nn.Conv2d passes
    # them so); a call with stride/padding/... as keywords, or left out, counts 0 rather than a
    # count for arguments it cannot see.
    if len(operands) != 7:
        return 0
    x, w = _shape(operands[0]), _shape(operands[1])
    if x is None or w is None or len(w) != 4 or len(x) not in (3, 4):
        return 0
    stride, padding, dilation, groups = operands[3:7]
    stride, dilation = _pair(stride), _pair(dilation)
    batch, channels, height, width = (1, *x) if len(x) == 3 else x
    out_channels, _, kh, kw = w
    if isinstance(padding, str):     # 'valid': none; 'same': the output keeps the input's size
        out_h, out_w = ((height, width) if padding == "same" else
                        ((height - dilation[0] * (kh - 1) - 1) // stride[0] + 1,
                         (width - dilation[1] * (kw - 1) - 1) // stride[1] + 1))
    else:
        padding = _pair(padding)
        out_h = (height + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        out_w = (width + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    return 2 * batch * out_h * out_w * kh * kw * channels * out_channels // groups


def _matmul(a, b) -> int:
    # matmul runs mm or bmm inside PyTorch (counted), or mv / dot for a 1-D right side (not)
    if len(b) < 2:
        return 0
    if len(a) == 1:
        a = (1, *a)
    batch = _numel(_broadcast(a[:-2], b[:-2]))
    return 2 * batch * a[-2] * a[-1] * b[-1]


def _broadcast(s, t):
    length = max(len(s), len(t))
    s, t = (1,) * (length - len(s)) + tuple(s), (1,) * (length - len(t)) + tuple(t)
    return tuple(j if i == 1 else i for i, j in zip(s, t))     # (1 against 0 is 0, not 1)


def _linear(x, w) -> int:
    # addmm (or mm) over the input's rows: 2 * rows * in_features * out_features
    return 2 * _numel(x) * (w[0] if len(w) == 2 else 1)


def op_flops(name: str, operands) -> int:
    """The FLOPs PyTorch's profiler reports for the op event `name` called with `operands`."""
    if not operands:
        return 0
    shapes = [_shape(x) for x in operands]
    first = shapes[0]
    if first is None:
        return 0
    if name in ("aten::mul", "aten::add"):
        return _numel(first)
    if name == "aten::conv2d":
        return _conv2d(operands)
    second = shapes[1] if len(shapes) > 1 else None
    third = shapes[2] if len(shapes) > 2 else None
    if name == "aten::mm" and second is not None and len(first) == 2 == len(second):
        return _mm(first, second)
    if name == "aten::addmm" and third is not None and len(second) == 2 == len(third):
        return _mm(second, third)
    if name == "aten::bmm" and second is not None and len(first) == 3 == len(second):
        return _batched(first, second)
    if name == "aten::baddbmm" and third is not None and len(second) == 3 == len(third):
        return _batched(second, third)
    if name == "aten::matmul" and second is not None and first:
        return _matmul(first, second)
    if name == "aten::linear" and second is not None and first:
        return _linear(first, second)
    return 0
