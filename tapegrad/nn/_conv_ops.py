"""Convolution and fold/unfold for tapegrad.nn.functional, and the sliding-window machinery
(geometry, im2col/col2im, gather/scatter) that _pool_ops.py and _spatial_ops.py share.

For float32 and float64, each map of the convolution is one fused C kernel of the compiled core
(nn_kernels.c: blocked im2col and a register-tiled product, see "compiled paths" below), and
unfold/fold's im2col and col2im are C kernels (one pass from the unpadded input, no padded copy).
Other dtypes run numpy's compiled routines from Python, one numpy call per op and never a Python
loop per element, window or output position:

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
these and the core's differentiable ops (sum, mul, matmul, index_select).  The convolution
family is made of KernelFunctions (tapegrad/autograd/function.py): tapegrad.compile replays each
call as one step running the same array kernels on its buffers.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import functools
import math
import operator
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _core
from .._memory_format import follow_channels_last
from ..autograd.function import Function, KernelFunction
from ._complex_conv import by_real_parts
from ..tensor import Tensor

_wrap = _core.wrap_array

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]


# -- geometry --------------------------------------------------------------------------------------

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
    # Floor division rounds towards -inf, so a too-short input gives 0 (or less) windows, and
    # ceil_mode still gives one window over a partial span.
    n = (span + (s - 1 if ceil_mode else 0)) // s + 1
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
    if _compiled(x) and g.out_hw[0] > 0 and g.out_hw[1] > 0:
        cols = _core._im2col(np.ascontiguousarray(x), _geom_tuple(g, N, C), True, fill)
        K = C // g.groups * g.kernel[0] * g.kernel[1]   # (sizes spelled out: N may be 0)
        return cols.reshape(N, g.groups, K, g.out_hw[0] * g.out_hw[1])
    win = _windows(_padded(x, g, fill), g)
    Ho, Wo = g.out_hw
    # (sizes spelled out, not -1: an empty batch must reshape too)
    kh, kw = g.kernel
    return np.ascontiguousarray(win).reshape(N, g.groups, C // g.groups * kh * kw, Ho * Wo)


def col2im(cols: np.ndarray, g: Geometry, channels: int) -> np.ndarray:
    """The adjoint of im2col: add each column entry back to the input position it was read from
    (one vectorised strided add per kernel offset)."""
    N = cols.shape[0]
    if _compiled(cols):
        return _core._col2im(np.ascontiguousarray(cols), _geom_tuple(g, N, channels), True)
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

# The three maps share one layout: the columns of all N samples side by side, (G, Cg*kh*kw,
# N*L), so each call is ONE matmul per group (one BLAS gemm when groups=1) rather than N small
# ones.  With stride 1 the columns are "wide": each output row runs over the whole padded width
# Wp (the last Wp - Wo entries of a row are junk and dropped), which makes every column row one
# contiguous slice of the flattened padded input - im2col becomes a copy with long inner runs and
# col2im kh*kw adds of long contiguous slices.

def _is_wide(g: Geometry) -> bool:
    return g.stride == (1, 1)


def _padded_flat(x: np.ndarray, g: Geometry) -> tuple:
    """x zero-padded to (N, C, Hp, Wp), flattened, with (kw-1)*dw spare zeros at the end (the
    last sample's junk columns read up to there)."""
    N, C, H, W = x.shape
    (Ho, Wo), (kh, kw), (dh, dw) = g.out_hw, g.kernel, g.dilation
    pt, pb, pl, pr = g.pad
    Hp = max(H + pt + pb, Ho + dh * (kh - 1))
    Wp = max(W + pl + pr, Wo + dw * (kw - 1))
    flat = np.zeros(N * C * Hp * Wp + dw * (kw - 1), dtype=x.dtype)
    flat[:N * C * Hp * Wp].reshape(N, C, Hp, Wp)[:, :, pt:pt + H, pl:pl + W] = x
    return flat, Hp, Wp


def _columns(x: np.ndarray, g: Geometry) -> np.ndarray:
    """The im2col matrix (G, Cg*kh*kw, N*L) of x (L = Ho*Wp when wide, else Ho*Wo)."""
    N, C = x.shape[:2]
    (Ho, Wo), (kh, kw), (dh, dw) = g.out_hw, g.kernel, g.dilation
    if _is_wide(g):
        flat, Hp, Wp = _padded_flat(x, g)
        e = flat.itemsize
        view = as_strided(flat, (C, kh, kw, N, Ho * Wp),
                          (Hp * Wp * e, dh * Wp * e, dw * e, C * Hp * Wp * e, e), writeable=False)
    else:
        view = _windows(_padded(x, g), g).transpose(1, 2, 3, 0, 4, 5)     # C,kh,kw,N,Ho,Wo
    return np.ascontiguousarray(view).reshape(g.groups, C // g.groups * kh * kw,
                                              N * _row_len(g, x.shape[3]) * Ho)


def _row_len(g: Geometry, W: int) -> int:
    """Columns per output row: the padded width when wide, else Wo."""
    if not _is_wide(g):
        return g.out_hw[1]
    (kw, dw), (pl, pr) = (g.kernel[1], g.dilation[1]), (g.pad[2], g.pad[3])
    return max(W + pl + pr, g.out_hw[1] + dw * (kw - 1))


def _grad_to_columns(gy: np.ndarray, g: Geometry, W: int) -> np.ndarray:
    """An output-shaped (N, O, Ho, Wo) array in the column layout (G, Og, N*L), zero in the
    junk columns."""
    N, O, Ho, Wo = gy.shape
    row = _row_len(g, W)
    out = np.zeros((O, N, Ho, row), dtype=gy.dtype)
    out[..., :Wo] = gy.transpose(1, 0, 2, 3)
    return out.reshape(g.groups, O // g.groups, -1)


def _columns_to_output(y: np.ndarray, g: Geometry, N: int, W: int) -> np.ndarray:
    """(G, Og, N*L) back to a contiguous (N, O, Ho, Wo)."""
    Ho, Wo = g.out_hw
    y = y.reshape(-1, N, Ho, _row_len(g, W))[..., :Wo]
    return np.ascontiguousarray(y.transpose(1, 0, 2, 3))


def _columns_to_input(cols: np.ndarray, g: Geometry, N: int, C: int) -> np.ndarray:
    """col2im of (G, Cg*kh*kw, N*L) columns into a contiguous (N, C, H, W) input gradient: one
    vectorised add per kernel offset."""
    (H, W), (Ho, Wo) = g.in_hw, g.out_hw
    (kh, kw), (sh, sw), (dh, dw) = g.kernel, g.stride, g.dilation
    pt, pl = g.pad[0], g.pad[2]
    if _is_wide(g):
        Wp = _row_len(g, W)
        Hp = max(H + g.pad[0] + g.pad[1], Ho + dh * (kh - 1))
        c = cols.reshape(C, kh, kw, N, Ho * Wp)
        acc = np.zeros((C, N * Hp * Wp + dw * (kw - 1)), dtype=cols.dtype)
        # Sample n's plane starts at n*Hp*Wp; a junk column (zero) may spill into the next one.
        planes = as_strided(acc, (C, N, Ho * Wp + dw * (kw - 1) + (kh - 1) * dh * Wp),
                            (acc.strides[0], Hp * Wp * acc.itemsize, acc.itemsize))
        n_cols = Ho * Wp
        for i in range(kh):
            for j in range(kw):
                off = i * dh * Wp + j * dw
                planes[:, :, off:off + n_cols] += c[:, i, j]
        full = acc[:, :N * Hp * Wp].reshape(C, N, Hp, Wp)
    else:
        Hp = max(H + g.pad[0] + g.pad[1], (Ho - 1) * sh + dh * (kh - 1) + 1)
        Wp = max(W + g.pad[2] + g.pad[3], (Wo - 1) * sw + dw * (kw - 1) + 1)
        c = cols.reshape(C, kh, kw, N, Ho, Wo)
        full = np.zeros((C, N, Hp, Wp), dtype=cols.dtype)
        for i in range(kh):
            rows = slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh)
            for j in range(kw):
                full[:, :, rows, j * dw: j * dw + sw * (Wo - 1) + 1: sw] += c[:, i, j]
    return np.ascontiguousarray(full[:, :, pt:pt + H, pl:pl + W].transpose(1, 0, 2, 3))


# -- compiled paths (float32 / float64): the fused kernels of nn_kernels.c ---------------------
# Each of the three maps is one C call (tg_conv2d*, nn_kernels.h): per block of output positions,
# im2col into a reused L2-sized buffer, a register-tiled product, the result stored straight into
# its NCHW place (the bias in the same pass).  Measured against the whole-batch im2col + one BLAS
# gemm per group that this replaced (which wrote a batch-sized column matrix, then transposed the
# result): LeNet's convolutions ~2x faster each way, 3x3 / 1x1 / strided / depthwise layers of
# 16-64 channels 1.1-4x, none slower.

def _compiled(a: np.ndarray) -> bool:
    return a.dtype == np.float32 or a.dtype == np.float64


def _geom_tuple(g: Geometry, N: int, C: int) -> tuple:
    """The geometry as the kernels take it (nn_kernels.h's tg_window)."""
    return (N, C) + tuple(g.in_hw) + tuple(g.out_hw) + tuple(g.kernel) + tuple(g.stride) \
        + (g.pad[0], g.pad[2]) + tuple(g.dilation)


def _fused(a: np.ndarray, g: Geometry, n: int) -> bool:
    """Whether the fused kernels take this call (they need a sample and a window position)."""
    return _compiled(a) and n > 0 and g.out_hw[0] > 0 and g.out_hw[1] > 0


def _c(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a)


def _conv_np(x, w, g: Geometry, bias=None):
    """conv(x, w) (+ bias, an (O,) array or None) as a new contiguous (N, O, Ho, Wo) array."""
    N, C = x.shape[:2]
    if _fused(x, g, N):
        return _core._conv2d_fused(_c(x), _c(w), None if bias is None else _c(bias),
                                   _geom_tuple(g, N, C), g.groups)
    G = g.groups
    y = np.matmul(w.reshape(G, w.shape[0] // G, -1), _columns(x, g))    # (G, Og, N*L)
    y = _columns_to_output(y, g, N, x.shape[3])
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1)
    return y


def _conv_input_grad_np(gy, w, g: Geometry, n):
    G = g.groups
    if _fused(gy, g, n):
        return _core._conv2d_grad_input_fused(_c(gy), _c(w), _geom_tuple(g, n, G * w.shape[1]),
                                              G)
    W = g.in_hw[1]
    wm = w.reshape(G, w.shape[0] // G, -1)
    cols = np.matmul(wm.transpose(0, 2, 1), _grad_to_columns(gy, g, W))  # (G, Cg*kh*kw, N*L)
    return _columns_to_input(cols, g, n, G * w.shape[1])


def _conv_weight_grad_np(x, gy, g: Geometry, wshape):
    N, C = x.shape[:2]
    if _fused(x, g, N):
        return _core._conv2d_grad_weight_fused(_c(x), _c(gy), _geom_tuple(g, N, C), wshape[0],
                                               g.groups).reshape(wshape)
    if _is_wide(g) and not np.isfinite(x).all():
        # A junk column could hold an inf or NaN of the next row, and 0 * inf is NaN: use the
        # exact (per-sample) layout for such inputs.
        return _conv_weight_grad_narrow(x, gy, g, wshape)
    gw = np.matmul(_grad_to_columns(gy, g, x.shape[3]), _columns(x, g).transpose(0, 2, 1))
    return gw.reshape(wshape)


def _conv_weight_grad_narrow(x, gy, g: Geometry, wshape):
    N, O = gy.shape[:2]
    G = g.groups
    cols = im2col(x, g)                                     # (N, G, K, Ho*Wo)
    gm = gy.reshape(N, G, O // G, -1)
    return np.matmul(gm, cols.transpose(0, 1, 3, 2)).sum(0).reshape(wshape)


def _via_2d(lift, lower, compute, *inputs, lowered: int = 2):
    """compute(*inputs) for a 2-d convolution.  A 1-d one ((N, C, L) inputs) runs as a 2-d one of
    height 1: its inputs lifted to (N, C, 1, L) by `lift`, the first `lowered` results (those of
    1-d shape) brought back by `lower` (None stays None).  So a 1-d convolution's grad_fn is the
    convolution's (PyTorch's) and a replay has no view steps around it."""
    if inputs[0].ndim != 3:
        return compute(*inputs)
    results = list(compute(*(lift(a) for a in inputs)))
    results[:lowered] = [None if r is None else lower(r) for r in results[:lowered]]
    return tuple(results)


def _named_double_backward(grads):
    """A convolution's gradients computed with a graph, named as PyTorch's: it computes them in
    one convolution_backward op (transposed or not, at any order), so each one's grad_fn is
    ConvolutionBackwardBackward0.  Only the names change."""
    return tuple(None if g is None else _core._name_grad_fn(g, "ConvolutionBackwardBackward0")
                 for g in grads)


def _lift_array(a):
    return a[:, :, None, :]


def _lower_array(a):
    return a[:, :, 0, :]


def _lift_tensor(t):
    return t.unsqueeze(2)


def _lower_tensor(t):
    return t.squeeze(2)


class _Conv(KernelFunction):
    """y = conv(x, w) + bias over a Geometry; the bias (O,) is optional, and is added in place of
    a separate broadcast add (one pass less each way, and PyTorch's single grad_fn)."""

    saved_args = (0, 1)
    saved_input_derivative = "none"     # PyTorch's convolution double backward

    @staticmethod
    def kernel_forward(x, w, geom, bias=None):
        def forward(x4, w4):
            return _conv_np(x4, w4, geom, bias), (x4, w4, geom)
        return _via_2d(_lift_array, _lower_array, forward, x, w, lowered=1)

    @staticmethod
    def kernel_backward(state, needs, grads):
        x, w, geom = state                                  # already 2-d (kernel_forward)

        def backward(gy):
            gx = _conv_input_grad_np(gy, w, geom, x.shape[0]) if needs[0] else None
            gw = _conv_weight_grad_np(x, gy, geom, w.shape) if needs[1] else None
            gb = np.add.reduce(gy, axis=(0, 2, 3)) if len(needs) > 3 and needs[3] else None
            return gx, gw, None, gb
        return _via_2d(_lift_array, _lower_array, backward, grads[0])

    @staticmethod
    def graph_backward(ctx, saved, gy):
        geom, need = ctx.params[2], ctx.needs_input_grad

        def backward(x, w, gy):
            gx = _ConvInputGrad.apply(gy, w, geom, x.shape[0]) if need[0] else None
            gw = _ConvWeightGrad.apply(x, gy, geom, tuple(w.shape)) if need[1] else None
            gb = gy.sum((0, 2, 3)) if len(need) > 3 and need[3] else None
            return gx, gw, None, gb
        return _named_double_backward(_via_2d(_lift_tensor, _lower_tensor, backward, *saved, gy))


# PyTorch's name for a convolution's grad_fn.
_Conv._backward_cls.__name__ = "ConvolutionBackward0"
_Conv._backward_cls.__qualname__ = "ConvolutionBackward0"


class _ConvInputGrad(KernelFunction):
    """x' = conv_input_grad(g, w) (+ bias, an (O,) tensor or absent), the adjoint of conv in x
    (= the transposed convolution, whose bias is added in the same step)."""

    saved_args = (0, 1)
    saved_input_derivative = "none"     # PyTorch's convolution double backward

    @staticmethod
    def kernel_forward(gy, w, geom, n, bias=None):
        def forward(gy4, w4):
            x = _conv_input_grad_np(gy4, w4, geom, n)
            if bias is not None:
                x += bias.reshape(1, -1, 1, 1)
            return x, (gy4, w4, geom)
        return _via_2d(_lift_array, _lower_array, forward, gy, w, lowered=1)

    @staticmethod
    def kernel_backward(state, needs, grads):
        gy, w, geom = state                                 # already 2-d (kernel_forward)

        def backward(gx):
            dgy = _conv_np(gx, w, geom) if needs[0] else None
            dw = _conv_weight_grad_np(gx, gy, geom, w.shape) if needs[1] else None
            db = np.add.reduce(gx, axis=(0, 2, 3)) if len(needs) > 4 and needs[4] else None
            return dgy, dw, None, None, db
        return _via_2d(_lift_array, _lower_array, backward, grads[0])

    @staticmethod
    def graph_backward(ctx, saved, gx):
        geom, need = ctx.params[2], ctx.needs_input_grad

        def backward(gy, w, gx):
            dgy = _Conv.apply(gx, w, geom) if need[0] else None
            dw = _ConvWeightGrad.apply(gx, gy, geom, tuple(w.shape)) if need[1] else None
            db = gx.sum((0, 2, 3)) if len(need) > 4 and need[4] else None
            return dgy, dw, None, None, db
        return _named_double_backward(_via_2d(_lift_tensor, _lower_tensor, backward, *saved, gx))


# PyTorch's name for a transposed convolution's grad_fn too.
_ConvInputGrad._backward_cls.__name__ = "ConvolutionBackward0"
_ConvInputGrad._backward_cls.__qualname__ = "ConvolutionBackward0"


class _ConvWeightGrad(KernelFunction):
    """w' = conv_weight_grad(x, g), the adjoint of conv in w."""

    saved_args = (0, 1)

    @staticmethod
    def kernel_forward(x, gy, geom, wshape):
        return _conv_weight_grad_np(x, gy, geom, wshape), (x, gy, geom)

    @staticmethod
    def kernel_backward(state, needs, grads):
        x, gy, geom = state
        gw = grads[0]
        dx = _conv_input_grad_np(gy, gw, geom, x.shape[0]) if needs[0] else None
        dgy = _conv_np(x, gw, geom) if needs[1] else None
        return dx, dgy, None, None

    @staticmethod
    def graph_backward(ctx, saved, gw):
        x, gy = saved
        geom = ctx.params[2]
        dx = _ConvInputGrad.apply(gy, gw, geom, x.shape[0]) \
            if ctx.needs_input_grad[0] else None
        dgy = _Conv.apply(x, gw, geom) if ctx.needs_input_grad[1] else None
        return _named_double_backward((dx, dgy, None, None))


# -- unfold / fold: each the other's adjoint -------------------------------------------------------

class _Unfold(Function):
    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom = geom
        ctx.channels = x.shape[1]
        cols = im2col(x._array, geom)
        return _wrap(cols.reshape(cols.shape[0], cols.shape[1] * cols.shape[2], cols.shape[-1]))

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

def _as_rows(a, B):
    """`a` viewed as B rows; spelled out because reshape(B, -1) is ambiguous for an empty batch."""
    return a.reshape(B, a.size // B if B else 0)


def _scatter_add_np(g, idx, plane):
    """out[b, idx[b, k]] += g[b, k] over (B, plane) planes, by one bincount."""
    B = idx.shape[0]
    flat = (_as_rows(idx, B) + (np.arange(B, dtype=np.int64) * plane)[:, None]).ravel()
    out = np.bincount(flat, weights=g.reshape(-1), minlength=B * plane)
    return out.astype(g.dtype, copy=False)


class _Gather(Function):
    """out = x.view(B, plane)[b, idx[b, k]] reshaped to `out_shape` (idx: int64 ndarray)."""

    @staticmethod
    def forward(ctx, x, idx, out_shape, values=None):
        B = idx.shape[0]
        ctx.idx, ctx.in_shape = idx, tuple(x.shape)
        if values is not None:          # the caller already has x at idx (max-pool's maxima)
            return _wrap(values.reshape(out_shape))
        xa = _as_rows(x._array, B)
        return _wrap(np.take_along_axis(xa, _as_rows(idx, B), 1).reshape(out_shape))

    @staticmethod
    def backward(ctx, g):
        return _ScatterAdd.apply(g, ctx.idx, ctx.in_shape), None, None, None


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
        if len(value) == 1 and n > 1:       # (PyTorch expands one value as it does an int)
            return (_int_entry(value[0], name, 1),) * n
        if len(value) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the {what} dimensions, but got "
                               f"{name}={list(value)}")
        return tuple(_int_entry(v, name, i + 1) for i, v in enumerate(value))
    return (_int_entry(value, name, None),) * n


def _int_entry(value, name, position):
    """One integer of a size argument (stride, padding, kernel_size, ...).  PyTorch's parser
    refuses a float there, 1.0 included (`padding=(k - 1) / 2` from Python 2 code), and a bool:
    int() would truncate 1.5 into 1 and compute a convolution PyTorch never runs."""
    if hasattr(value, "__index__") and not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:   # a tensor that is not an integer one
            pass
    found = f"but found element of type {_type_name(value)} at pos {position}" \
        if position is not None else f"not {_type_name(value)}"
    raise TypeError(f"argument '{name}' must be tuple of ints, {found}")


def _check_tensor(x, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a Tensor, not {_type_name(x)}")


def _ctype(arr):
    """The C name PyTorch's messages use for a dtype (float, double, long int...)."""
    return _core.c_type_name_of(arr.dtype)


def _legacy(arr):
    """A dtype's legacy type name in PyTorch's messages (complex ones have none: their
    backend's, CPUComplexFloatType)."""
    name = _core.scalar_type_name_of(arr.dtype)
    return f"CPU{name}Type" if arr.dtype.kind == "c" else f"torch.{name}Tensor"


def _mkldnn_backend(input, weight, nd, stride, dilation, groups) -> bool:
    """Whether PyTorch's CPU convolution takes its MKLDNN backend for these operands (its
    ``use_mkldnn`` heuristic, on the input seen as 4-D: a 1-D convolution has a unit height).
    Only the words of a dtype-mismatch error depend on it."""
    name = _core.scalar_type_name_of(input._array.dtype)
    if name in ("BFloat16", "Half"):
        # (half precision where oneDNN has half kernels: an AVX-512 FP16 CPU.  torch 2.13 on an
        # AVX-512 CPU without FP16 (Ice Lake class) words a half convolution's mismatch as the
        # non-MKLDNN path does, as on an AVX2-only AMD Zen 3)
        from ..backends.cpu import _has_avx512_fp16
        return name == "BFloat16" or _has_avx512_fp16()
    if name != "Float":
        return False
    shape = tuple(input.shape) if input.dim() == nd + 2 else (1,) + tuple(input.shape)
    kernel = tuple(weight.shape[2:])
    if nd == 1:
        shape, kernel = shape[:2] + (1,) + shape[2:], (1,) + kernel
    from .._threads import get_num_threads
    worth_it = (any(s != 1 for s in stride) or any(d != 1 for d in dilation) or shape[0] >= 16
                or kernel[-1] != 1 or kernel[-2] != 1 or get_num_threads() > 1)
    return worth_it and (groups > 1 or (kernel[-1] > 3 and kernel[-2] > 3) or shape[0] > 1
                         or shape[0] * shape[1] * shape[2] * shape[3] > 20480)


def _conv_checks(input, weight, bias, nd, stride, padding, dilation, groups, transposed=False):
    """Validate a conv call as PyTorch does; return (batched input, unbatched?)."""
    _check_tensor(input)
    _check_tensor(weight, "weight")
    name = f"conv{'_transpose' if transposed else ''}{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    bias_differs = bias is not None and bias._array.dtype != input._array.dtype
    if input._array.dtype.kind == "c":
        # PyTorch's complex convolution checks the bias's type, then the weight's, before it
        # splits the operands into real ones (and before the weight's shape)
        if bias_differs:
            raise RuntimeError(f"Input type ({_ctype(input._array)}) and bias type "
                               f"({_ctype(bias._array)}) should be the same")
        if weight._array.dtype != input._array.dtype:
            raise RuntimeError(f"Input type ({_legacy(input._array)}) and weight type "
                               f"({_legacy(weight._array)}) should be the same")
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.dim() != nd + 2 and (len(stride) == 1 or padding == "same"):
        # a single stride value (1-d) is expanded to the weight's dims, and padding='same' takes
        # its dims from the weight: the input's rank is off ('same''s check words it without
        # the space before the weight's shape)
        shape = list(input.shape) if input.dim() == nd + 2 else [1] + list(input.shape)
        space = "" if padding == "same" else " "
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight{space}{list(weight.shape)}, but got "
                           f"{len(shape)}-dimensional input of size {shape} instead")
    if weight.dim() != nd + 2:
        # PyTorch infers the dimensionality from the weight, so it reports the stride.
        raise RuntimeError(f"expected stride to be a single integer value or a list of "
                           f"{weight.dim() - 2} values to match the convolution dimensions, "
                           f"but got stride={list(stride)}")
    if transposed and input._array.size == 0:
        # (PyTorch's transposed convolution of an empty batch returns before its kernel looks
        # at the dtypes: a float32 ConvTranspose1d ran a float64 empty batch, fuzz seed
        # 67305458; empty_input_output keeps the input's dtype)
        bias_differs = False
    # PyTorch 2.13's order: a forward convolution checks the bias's dtype against the input's
    # first, then the weight's, in words that depend on the backend it picked
    if bias_differs and not transposed:
        raise RuntimeError(f"Input type ({_ctype(input._array)}) and bias type "
                           f"({_ctype(bias._array)}) should be the same")
    if input._array.dtype != weight._array.dtype and not (transposed and
                                                         input._array.size == 0):
        in_name = _core.scalar_type_name_of(input._array.dtype)
        if _mkldnn_backend(input, weight, nd, stride, dilation, groups):
            legacy = "CPUBFloat16Type" if in_name == "BFloat16" else _legacy(input._array)
            raise RuntimeError(f"Input type ({legacy}) and weight type ({_legacy(weight._array)}) "
                               "should be the same or input should be a MKLDNN tensor and "
                               "weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {in_name} but found "
                           f"{_core.scalar_type_name_of(weight._array.dtype)}")
    if bias_differs:
        raise RuntimeError(f"Input type ({_ctype(input._array)}) and bias type "
                           f"({_ctype(bias._array)}) should be the same")
    if input._array.dtype.kind not in "fiu":
        raise NotImplementedError(f'"slow_conv2d_cpu" not implemented for '
                           f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    # PyTorch 2.13's order: groups, padding, stride, then dilation (a negative one refused by
    # the shape check, a zero one by the kernel, which lists it)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if not isinstance(padding, str) and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
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



def empty_batch_safe(nd, planes_refused=False):
    """Decorator for a window op whose numpy kernels reshape per sample: an input with an empty
    batch (N = 0, which PyTorch accepts) runs with one zero sample appended and keeps the
    first 0 rows of every output - PyTorch's shapes and dtypes, zero gradients for weights.
    planes_refused: the op refuses other empty dims (after its argument checks), naming the
    input's shape: such an input goes to it as it is."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(input, *args, **kwargs):
            if not (isinstance(input, _core.TensorBase) and input.dim() == nd + 2
                    and input.shape[0] == 0) or (planes_refused and 0 in input.shape[1:]):
                return fn(input, *args, **kwargs)
            from .. import cat
            dummy = _wrap(np.zeros((1,) + tuple(input.shape[1:]), dtype=input._array.dtype))
            out = fn(cat([input, dummy], 0), *args, **kwargs)
            return tuple(o[:0] for o in out) if isinstance(out, tuple) else out[:0]
        return run
    return wrap


def _weight_rows_check(weight, groups) -> None:
    """PyTorch's first weight check of every convolution, transposed or not: at least one row
    (output channel, or input channel when transposed) per group."""
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")


def _transposed_weight_check(weight, nd) -> None:
    """A transposed convolution's weight with no output channels: PyTorch's shape check refuses
    it (1-d runs as 2-d and shows the weight with a height of 1)."""
    if weight._array.size == 0:
        if nd == 3:
            raise RuntimeError("non-empty 5D (n_output_plane x n_input_plane x kernel_depth x "
                               "kernel_height x kernel_width) tensor expected for weight, but "
                               f"got: {list(weight.shape)}")
        shape = list(weight.shape)
        if nd == 1:
            shape.insert(2, 1)
        raise RuntimeError(f"non-empty 2D or 4D weight tensor expected, but got: {shape}")


def empty_input_output(input, weight, bias, out_shape, transposed):
    """The result of a convolution whose batched input has no elements, as PyTorch's 'Empty'
    backend makes it: no kernel runs; the product of the flattened input with the flattened
    weight (its first element when the input has channels) and bias[0] keeps input, weight and
    bias in the graph, so each gets a zero gradient of its shape.  A transposed convolution
    accepts only an empty batch there; a convolution of an input with no channels gives no
    output channels either (PyTorch's shape, whatever the weight's row count)."""
    if transposed and input.shape[0] != 0:
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input "
                           f"shape: {list(input.shape)}")
    # (in the input's dtype: a transposed convolution takes an empty batch of another dtype
    # than its parameters', and its result has the input's dtype, each gradient its tensor's)
    w = weight.reshape(-1).to(input.dtype)
    out = input.reshape(-1) * (w if input.shape[1] == 0 else w[0])
    if bias is not None:
        out = out + bias[0].to(input.dtype)
    return out.reshape(out_shape)


def _channel_checks(input, weight, bias, groups) -> None:
    """PyTorch's errors for channel counts that do not fit the weight and groups, and a bias of
    the wrong size (every convolution's, whatever its dimensionality)."""
    C = input.shape[1]
    O = weight.shape[0]
    _weight_rows_check(weight, groups)
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


def _conv_arguments(input, weight, bias, stride, padding, dilation, groups, nd):
    """The checked arguments of an nd convolution (any dimensionality): (input batched,
    unbatched, stride, dilation, kernel, pads as (before, after) per dim, spatial size), with
    PyTorch's errors for bad channels, 'same' with a stride and a kernel that does not fit."""
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        pad_arg = padding
    else:
        pad_arg = _tuple(padding, nd, "padding")
    input, unbatched = _conv_checks(input, weight, bias, nd, stride, pad_arg, dilation, groups)
    kernel = tuple(weight.shape[2:])
    _channel_checks(input, weight, bias, groups)
    if pad_arg == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = _same_padding(kernel, dilation)
        if any(before != after for before, after in pads):
            # PyTorch notes (once per process, every dimensionality) that an odd total padding
            # cannot be split evenly, so its kernels pad a copy of the input.
            _core.warn_once("Using padding='same' with even kernel lengths and odd dilation may "
                            "require a zero-padded copy of the input be created",
                            "aten/src/ATen/native/Convolution.cpp:1101")
    elif pad_arg == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(p, p) for p in pad_arg]
    spatial = tuple(input.shape[2:])
    padded = tuple(s + a + b for s, (a, b) in zip(spatial, pads))
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size can't be greater than "
                           f"actual input size")
    return input, unbatched, stride, dilation, kernel, pads, spatial


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, nd):
    input, unbatched, stride, dilation, kernel, pads, spatial = _conv_arguments(
        input, weight, bias, stride, padding, dilation, groups, nd)
    N, C = input.shape[:2]
    O = weight.shape[0]
    out_sp = tuple(_out_size(s, a + b, k, st, d)
                   for s, (a, b), k, st, d in zip(spatial, pads, kernel, stride, dilation))
    if C == 0:
        out = empty_input_output(input, weight, bias, (N, 0) + out_sp, False)
        return out.squeeze(0) if unbatched else out
    if nd == 1:         # (as a 2-d convolution of height 1: _Conv)
        geom = Geometry((1, spatial[0]), (1, out_sp[0]), (1, kernel[0]), (1, stride[0]),
                        (0, 0) + pads[0], (1, dilation[0]), groups)
    else:
        geom = Geometry(spatial, out_sp, kernel, stride, pads[0] + pads[1], dilation, groups)
    out = (_Conv.apply(input, weight, geom, bias) if bias is not None
           else _Conv.apply(input, weight, geom))
    return out.squeeze(0) if unbatched else follow_channels_last(out, input, weight)


@by_real_parts
@empty_batch_safe(1)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation over (N, C, L) (or unbatched (C, L)) input."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1)


@by_real_parts
@empty_batch_safe(2)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation over (N, C, H, W) (or unbatched (C, H, W)) input; padding is an
    int, a pair, 'valid' or 'same' (stride 1 only)."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation,
                       nd):
    if isinstance(padding, str):    # ('same' and 'valid' are convolution-only forms)
        raise TypeError(f"conv_transpose{nd}d(): argument 'padding' must be tuple of ints, not "
                        f"str")
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    padding = _tuple(padding, nd, "padding")
    output_padding = _tuple(output_padding, nd, "output_padding")
    input, unbatched = _conv_checks(input, weight, bias, nd, stride, padding, dilation, groups,
                                    transposed=True)
    N, C = input.shape[:2]
    _weight_rows_check(weight, groups)
    _transposed_weight_check(weight, nd)
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
        # PyTorch runs 1-d as 2-d (height 1) and reports both axes.
        lead = (2 - nd) * (0,), (2 - nd) * (1,), (2 - nd) * (1,)

        def listed(what, values):
            return " ".join(f"{what}_{a}: {v}" for a, v in zip(("height", "width"), values))
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {listed('output_padding', lead[0] + output_padding)} "
                           f"{listed('stride', lead[1] + stride)} "
                           f"{listed('dilation', lead[2] + dilation)}")
    kernel = tuple(weight.shape[2:])
    spatial = tuple(input.shape[2:])
    out_sp = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                   zip(spatial, stride, padding, dilation, kernel, output_padding))
    empty = input._array.size == 0
    # An empty batch takes PyTorch's empty-input path, where a spatial size of 0 is an answer.
    if any(o < 0 or (o == 0 and not empty) for o in out_sp):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out_sp))}). Output size is too small")
    if empty:
        out = empty_input_output(input, weight, bias, (N, O) + out_sp, True)
        return out.squeeze(0) if unbatched else out
    if nd == 1:         # (as a 2-d transposed convolution of height 1: _ConvInputGrad)
        geom = Geometry((1, out_sp[0]), (1, spatial[0]), (1, kernel[0]), (1, stride[0]),
                        (0, 0, padding[0], padding[0]), (1, dilation[0]), groups)
    else:
        geom = Geometry(out_sp, spatial, kernel, stride,
                        (padding[0], padding[0], padding[1], padding[1]), dilation, groups)
    out = (_ConvInputGrad.apply(input, weight, geom, N, bias) if bias is not None
           else _ConvInputGrad.apply(input, weight, geom, N))
    return out.squeeze(0) if unbatched else follow_channels_last(out, input, weight)


@by_real_parts
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv1d in its input ("deconvolution"); weight is (C_in, C_out/groups, k)."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 1)


@by_real_parts
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv2d in its input; weight is (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups,
                              dilation, 2)


# -- unfold / fold ---------------------------------------------------------------------------------

def _fold_args(kernel_size, dilation, padding, stride):
    return (_tuple(kernel_size, 2, "kernel_size", "fold"), _tuple(dilation, 2, "dilation", "fold"),
            _tuple(padding, 2, "padding", "fold"), _tuple(stride, 2, "stride", "fold"))


def _check_block_geometry(kernel, dilation, padding, stride, order) -> None:
    """PyTorch's im2col/col2im shape checks, one per argument, in `order` (the two kernels check
    in different orders, and the first failing argument names the error)."""
    rules = {"kernel": (kernel, "kernel size should be greater than zero", "kernel", 1),
             "dilation": (dilation, "dilation should be greater than zero", "dilation", 1),
             "padding": (padding, "padding should be non-negative", "pad", 0),
             "stride": (stride, "stride should be greater than zero", "stride", 1)}
    for name in order:
        value, message, field, least = rules[name]
        if value[0] < least or value[1] < least:
            raise RuntimeError(f"{message}, but got {field}_height: {value[0]} "
                               f"{field}_width: {value[1]}")


def _require_floating_blocks(input, kernel: str) -> None:
    # PyTorch's im2col/col2im kernels exist for floating, complex and bool types only
    if not (input.is_floating_point() or input.is_complex() or input.dtype == _core.bool_):
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) input as columns (N, C*kh*kw, L) (im2col)."""
    _check_tensor(input)
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride)
    if input.dim() not in (3, 4):
        if input.dim() < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got 2)")
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    _check_block_geometry(kernel, dilation, padding, stride,
                          ("kernel", "dilation", "padding", "stride"))
    _require_floating_blocks(input, "im2col_out_cpu")
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    H, W = x.shape[2:]
    out_hw = tuple(_out_size(s, 2 * p, k, st, d)
                   for s, p, k, st, d in zip((H, W), padding, kernel, stride, dilation))
    if any(o <= 0 for o in out_hw):
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the "
                           f"array of sliding blocks as {out_hw}, but its components must be at "
                           f"least one.")
    geom = Geometry((H, W), out_hw, kernel, stride,
                    (padding[0], padding[0], padding[1], padding[1]), dilation)
    out = _Unfold.apply(x, geom)
    # (PyTorch's im2col takes a batched or unbatched input in one node)
    return _core._name_grad_fn(out.squeeze(0) if unbatched else out, "Im2ColBackward0")


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C*kh*kw, L) back into a (N, C, H, W) tensor (col2im, unfold's adjoint)."""
    _check_tensor(input)
    out_size = _tuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride)
    # (one check of the dims and their sizes, as PyTorch's col2im: its Python function's
    # NotImplementedError for another number of dims is gone)
    if input.dim() not in (2, 3) or any(s == 0 for s in input.shape[input.dim() - 2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    _check_block_geometry(kernel, dilation, padding, stride,
                          ("kernel", "stride", "dilation", "padding"))
    _require_floating_blocks(input, "col2im_out_cpu")
    unbatched = input.dim() == 2
    cols = input.unsqueeze(0) if unbatched else input
    K = kernel[0] * kernel[1]
    if cols.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={cols.shape[1]} and "
                           f"kernel_size={kernel}.")
    out_hw = tuple(_out_size(s, 2 * p, k, st, d)
                   for s, p, k, st, d in zip(out_size, padding, kernel, stride, dilation))
    if cols.shape[2] != out_hw[0] * out_hw[1]:
        raise RuntimeError(f"Given output_size={out_size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           f"size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {out_hw[0]} * {out_hw[1]} = {out_hw[0] * out_hw[1]}, "
                           f"but got input.size(2)={cols.shape[2]}.")
    geom = Geometry(out_size, out_hw, kernel, stride,
                    (padding[0], padding[0], padding[1], padding[1]), dilation)
    out = _Fold.apply(cols, geom, cols.shape[1] // K)
    # (PyTorch's col2im takes a batched or unbatched input in one node)
    return _core._name_grad_fn(out.squeeze(0) if unbatched else out, "Col2ImBackward0")
