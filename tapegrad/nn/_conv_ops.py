"""Convolution, pooling, fold/unfold and resampling for tapegrad.nn.functional.

The compiled core has no window ops yet, so these run numpy's compiled routines from Python, one
numpy call per op and never a Python loop per element, window or output position:

- im2col is a strided view of the (padded) input (`as_strided`) copied once into a column
  matrix; a convolution is then one batched BLAS matmul;
- col2im (the adjoint, for input gradients and transposed convolutions) is one strided add per
  kernel offset (kh*kw vectorised adds).

Autograd goes through custom Functions whose backward is written with differentiable ops only,
so `create_graph=True` works to any order:

- the convolution family is three bilinear maps over one geometry - `conv(x, w)`, its adjoint in
  x `conv_input_grad(g, w)` (which is also the transposed convolution) and its adjoint in w
  `conv_weight_grad(x, g)` - and each one's derivatives are the other two;
- `unfold` and `fold` are each other's adjoints;
- max-pooling picks input elements: a gather whose adjoint is a scatter-add, and vice versa.
Everything else (bias, average pooling, adaptive average pooling, interpolation) is built from
these and the core's differentiable ops (sum, mul, matmul, index_select).  tapegrad.compile does
not replay custom Functions, so a compiled function that calls these runs eagerly (its
`explain()` names the Function).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _core
from ..autograd.function import Function
from ..tensor import Tensor

_wrap = _core.wrap_array

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold",
           "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate",
           "batch_norm", "dropout1d", "dropout2d", "pad"]


# -- geometry ---------------------------------------------------------------------------------------

class Geometry(NamedTuple):
    """Where the windows of a 2-d sliding-window op lie.  `in_hw` is the unpadded input's spatial
    size, `out_hw` the number of window positions (given, not recomputed, so that a transposed
    convolution whose output_padding leaves rows no window reaches stays consistent)."""
    in_hw: tuple
    out_hw: tuple
    kernel: tuple
    stride: tuple
    pad: tuple          # (top, bottom, left, right)
    dilation: tuple
    groups: int = 1


def _out_size(size, pad_total, k, s, d, ceil_mode=False, pad_before=0):
    span = size + pad_total - d * (k - 1) - 1
    if span < 0:
        return 0
    n = (-(-span // s) if ceil_mode else span // s) + 1
    # A last window that would start inside the right padding is dropped (PyTorch's rule).
    if ceil_mode and (n - 1) * s >= size + pad_before:
        n -= 1
    return n


def _padded(x: np.ndarray, g: Geometry, fill=0.0) -> np.ndarray:
    """x with the geometry's padding (and enough extra zero rows on the bottom/right that every
    window fits, which ceil_mode pooling needs)."""
    (H, W), (Ho, Wo) = g.in_hw, g.out_hw
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    pt, pb, pl, pr = g.pad
    pb = max(pb, (Ho - 1) * sh + dh * (kh - 1) + 1 - H - pt, 0)
    pr = max(pr, (Wo - 1) * sw + dw * (kw - 1) + 1 - W - pl, 0)
    if not (pt or pb or pl or pr):
        return x
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)


def _windows(xp: np.ndarray, g: Geometry) -> np.ndarray:
    """Read-only view (N, C, kh, kw, Ho, Wo) of a padded input's windows."""
    N, C = xp.shape[:2]
    s = xp.strides
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    Ho, Wo = g.out_hw
    return as_strided(xp, (N, C, kh, kw, Ho, Wo),
                      (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)


def im2col(x: np.ndarray, g: Geometry, fill=0.0) -> np.ndarray:
    """Columns (N, groups, C/groups*kh*kw, Ho*Wo): one copy of the windows."""
    N, C = x.shape[:2]
    win = _windows(_padded(x, g, fill), g)
    Ho, Wo = g.out_hw
    return np.ascontiguousarray(win).reshape(N, g.groups, -1, Ho * Wo)


def col2im(cols: np.ndarray, g: Geometry, channels: int) -> np.ndarray:
    """The adjoint of im2col: add each column entry back to the input position it was read from
    (one vectorised strided add per kernel offset)."""
    N = cols.shape[0]
    (H, W), (Ho, Wo) = g.in_hw, g.out_hw
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    pt, pb, pl, pr = g.pad
    Hp = max(H + pt + pb, (Ho - 1) * sh + dh * (kh - 1) + 1)
    Wp = max(W + pl + pr, (Wo - 1) * sw + dw * (kw - 1) + 1)
    acc = np.zeros((N, channels, Hp, Wp), dtype=cols.dtype)
    c = cols.reshape(N, channels, kh, kw, Ho, Wo)
    for i in range(kh):
        rows = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)
        for j in range(kw):
            acc[:, :, rows, j * dw: j * dw + sw * (Wo - 1) + 1: sw] += c[:, :, i, j]
    return acc[:, :, pt:pt + H, pl:pl + W]


# -- the convolution family: three bilinear maps, each the others' derivatives ---------------------

def _conv_np(x, w, g: Geometry):
    N = x.shape[0]
    O = w.shape[0]
    cols = im2col(x, g)                                     # (N, G, K, L)
    wm = w.reshape(g.groups, O // g.groups, -1)             # (G, Og, K)
    out = np.matmul(wm, cols)                               # (N, G, Og, L)
    return out.reshape(N, O, *g.out_hw)


def _conv_input_grad_np(gy, w, g: Geometry):
    N, O = gy.shape[:2]
    G = g.groups
    wm = w.reshape(G, O // G, -1)
    cols = np.matmul(wm.transpose(0, 2, 1), gy.reshape(N, G, O // G, -1))     # (N, G, K, L)
    return np.ascontiguousarray(col2im(cols, g, G * w.shape[1]))


def _conv_weight_grad_np(x, gy, g: Geometry, wshape):
    N, O = gy.shape[:2]
    G = g.groups
    cols = im2col(x, g)                                     # (N, G, K, L)
    gm = gy.reshape(N, G, O // G, -1)
    gw = np.matmul(gm, cols.transpose(0, 1, 3, 2)).sum(0)   # (G, Og, K)
    return gw.reshape(wshape)


class _Conv(Function):
    """y = conv(x, w) over a Geometry (no bias: the bias is a differentiable add)."""

    @staticmethod
    def forward(ctx, x, w, geom):
        ctx.geom = geom
        ctx.save_for_backward(x, w)
        return _wrap(_conv_np(x._array, w._array, geom))

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        gx = _ConvInputGrad.apply(gy, w, ctx.geom, x.shape[0]) if ctx.needs_input_grad[0] else None
        gw = _ConvWeightGrad.apply(x, gy, ctx.geom, tuple(w.shape)) \
            if ctx.needs_input_grad[1] else None
        return gx, gw, None


class _ConvInputGrad(Function):
    """x' = conv_input_grad(g, w), the adjoint of conv in x (= the transposed convolution)."""

    @staticmethod
    def forward(ctx, gy, w, geom, n):
        ctx.geom = geom
        ctx.save_for_backward(gy, w)
        return _wrap(_conv_input_grad_np(gy._array, w._array, geom))

    @staticmethod
    def backward(ctx, gx):
        gy, w = ctx.saved_tensors
        dgy = _Conv.apply(gx, w, ctx.geom) if ctx.needs_input_grad[0] else None
        dw = _ConvWeightGrad.apply(gx, gy, ctx.geom, tuple(w.shape)) \
            if ctx.needs_input_grad[1] else None
        return dgy, dw, None, None


class _ConvWeightGrad(Function):
    """w' = conv_weight_grad(x, g), the adjoint of conv in w."""

    @staticmethod
    def forward(ctx, x, gy, geom, wshape):
        ctx.geom = geom
        ctx.save_for_backward(x, gy)
        return _wrap(_conv_weight_grad_np(x._array, gy._array, geom, wshape))

    @staticmethod
    def backward(ctx, gw):
        x, gy = ctx.saved_tensors
        dx = _ConvInputGrad.apply(gy, gw, ctx.geom, x.shape[0]) \
            if ctx.needs_input_grad[0] else None
        dgy = _Conv.apply(x, gw, ctx.geom) if ctx.needs_input_grad[1] else None
        return dx, dgy, None, None


# -- unfold / fold: each the other's adjoint --------------------------------------------------------

class _Unfold(Function):
    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom = geom
        ctx.channels = x.shape[1]
        cols = im2col(x._array, geom)
        return _wrap(cols.reshape(cols.shape[0], -1, cols.shape[-1]))

    @staticmethod
    def backward(ctx, g):
        return _Fold.apply(g, ctx.geom, ctx.channels), None


class _Fold(Function):
    @staticmethod
    def forward(ctx, cols, geom, channels):
        ctx.geom = geom
        return _wrap(np.ascontiguousarray(col2im(cols._array, geom, channels)))

    @staticmethod
    def backward(ctx, g):
        return _Unfold.apply(g, ctx.geom), None, None


# -- gather / scatter-add along the flattened trailing dims: each the other's adjoint --------------

def _scatter_add_np(g, idx, plane):
    """out[b, idx[b, k]] += g[b, k] over (B, plane) planes, by one bincount."""
    B = idx.shape[0]
    flat = (idx.reshape(B, -1) + (np.arange(B, dtype=np.int64) * plane)[:, None]).ravel()
    out = np.bincount(flat, weights=g.reshape(-1), minlength=B * plane)
    return out.astype(g.dtype, copy=False)


class _Gather(Function):
    """out = x.view(B, plane)[b, idx[b, k]] reshaped to `out_shape` (idx: int64 ndarray)."""

    @staticmethod
    def forward(ctx, x, idx, out_shape):
        B = idx.shape[0]
        ctx.idx, ctx.in_shape = idx, tuple(x.shape)
        xa = x._array.reshape(B, -1)
        return _wrap(np.take_along_axis(xa, idx.reshape(B, -1), 1).reshape(out_shape))

    @staticmethod
    def backward(ctx, g):
        return _ScatterAdd.apply(g, ctx.idx, ctx.in_shape), None, None


class _ScatterAdd(Function):
    @staticmethod
    def forward(ctx, g, idx, in_shape):
        ctx.idx, ctx.out_shape = idx, tuple(g.shape)
        plane = math.prod(in_shape) // idx.shape[0] if idx.shape[0] else 0
        return _wrap(_scatter_add_np(g._array, idx, plane).reshape(in_shape))

    @staticmethod
    def backward(ctx, g):
        return _Gather.apply(g, ctx.idx, ctx.out_shape), None, None


# -- argument parsing and checks, with PyTorch's messages ------------------------------------------

def _tuple(value, n, name, what="convolution"):
    if isinstance(value, (list, tuple)):
        if len(value) == 1 and n > 1 and what != "convolution":
            return tuple(int(value[0]) for _ in range(n))
        if len(value) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the {what} dimensions, but got "
                               f"{name}={list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _check_tensor(x, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a Tensor, not {type(x).__name__}")


def _ctype(arr):
    """The C name PyTorch's messages use for a dtype (float, double, long...)."""
    return {"f": "float", "d": "double", "e": "c10::Half", "l": "long", "i": "int",
            "h": "short", "b": "signed char", "B": "unsigned char", "?": "bool"}.get(
        arr.dtype.char, str(arr.dtype))


def _legacy(arr):
    return f"torch.{_core.scalar_type_name_of(arr.dtype)}Tensor"


def _conv_checks(input, weight, bias, nd, stride, padding, dilation, groups, transposed=False):
    """Validate a conv call as PyTorch does; return (batched input, unbatched?)."""
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv{'_transpose' if transposed else ''}{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        # PyTorch infers the dimensionality from the weight, so it reports the stride.
        raise RuntimeError(f"expected stride to be a single integer value or a list of "
                           f"{weight.dim() - 2} values to match the convolution dimensions, "
                           f"but got stride={list(stride)}")
    if input._array.dtype != weight._array.dtype:
        raise RuntimeError(f"Input type ({_legacy(input._array)}) and weight type "
                           f"({_legacy(weight._array)}) should be the same or input should be a "
                           "MKLDNN tensor and weight is a dense tensor")
    if bias is not None and bias._array.dtype != input._array.dtype:
        raise RuntimeError(f"Input type ({_ctype(input._array)}) and bias type "
                           f"({_ctype(bias._array)}) should be the same")
    if input._array.dtype.kind != "f":
        raise RuntimeError(f'"slow_conv2d_cpu" not implemented for '
                           f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if not isinstance(padding, str) and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    unbatched = input.dim() == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    return input, unbatched


def _same_padding(kernel, dilation):
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, nd):
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        pad_arg = padding
    else:
        pad_arg = _tuple(padding, nd, "padding")
    input, unbatched = _conv_checks(input, weight, bias, nd, stride, pad_arg, dilation, groups)
    N, C = input.shape[:2]
    O = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {weight.shape[1] * groups} "
                           f"channels, but got {C} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != O):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    if pad_arg == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = _same_padding(kernel, dilation)
    elif pad_arg == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(p, p) for p in pad_arg]
    spatial = tuple(input.shape[2:])
    padded = tuple(s + a + b for s, (a, b) in zip(spatial, pads))
    if any(p < d * (k - 1) + 1 for p, k, d in zip(padded, kernel, dilation)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, (d * (k - 1) + 1 for k, d in zip(kernel, dilation))))})"
                           f". Kernel size can't be greater than actual input size")
    out_sp = tuple(_out_size(s, a + b, k, st, d)
                   for s, (a, b), k, st, d in zip(spatial, pads, kernel, stride, dilation))
    if nd == 1:
        x4 = input.unsqueeze(2)
        w4 = weight.unsqueeze(2)
        geom = Geometry((1, spatial[0]), (1, out_sp[0]), (1, kernel[0]), (1, stride[0]),
                        (0, 0) + pads[0], (1, dilation[0]), groups)
    else:
        x4, w4 = input, weight
        geom = Geometry(spatial, out_sp, kernel, stride, pads[0] + pads[1], dilation, groups)
    out = _Conv.apply(x4, w4, geom)
    if bias is not None:
        out = out + bias.reshape((1, O, 1, 1))
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation over (N, C, L) (or unbatched (C, L)) input."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation over (N, C, H, W) (or unbatched (C, H, W)) input; padding is an
    int, a pair, 'valid' or 'same' (stride 1 only)."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                       nd):
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    padding = _tuple(padding, nd, "padding")
    output_padding = _tuple(output_padding, nd, "output_padding")
    input, unbatched = _conv_checks(input, weight, bias, nd, stride, padding, dilation, groups,
                                    transposed=True)
    N, C = input.shape[:2]
    if C != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {weight.shape[0]} channels, but "
                           f"got {C} channels instead")
    if C % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    O = weight.shape[1] * groups
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != O):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        names = "hw" if nd == 2 else "w"
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(f"output_padding_{n}: {v}" for n, v in zip(("height", "width")[-nd:],
                                                                   output_padding)).replace(
                "output_padding_height", "output_padding_height") + " "
            + " ".join(f"stride_{n}: {v}" for n, v in zip(("height", "width")[-nd:], stride))
            + " " + " ".join(f"dilation_{n}: {v}" for n, v in zip(("height", "width")[-nd:],
                                                                  dilation)))
    kernel = tuple(weight.shape[2:])
    spatial = tuple(input.shape[2:])
    out_sp = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                   zip(spatial, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out_sp))}). Output size is too small")
    if nd == 1:
        x4, w4 = input.unsqueeze(2), weight.unsqueeze(2)
        geom = Geometry((1, out_sp[0]), (1, spatial[0]), (1, kernel[0]), (1, stride[0]),
                        (0, 0, padding[0], padding[0]), (1, dilation[0]), groups)
    else:
        x4, w4 = input, weight
        geom = Geometry(out_sp, spatial, kernel, stride,
                        (padding[0], padding[0], padding[1], padding[1]), dilation, groups)
    out = _ConvInputGrad.apply(x4, w4, geom, N)
    if bias is not None:
        out = out + bias.reshape((1, O, 1, 1))
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv1d in its input ("deconvolution"); weight is (C_in, C_out/groups, k)."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv2d in its input; weight is (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 2)
