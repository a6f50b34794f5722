"""Max, average, adaptive pooling and max unpooling for tapegrad.nn.functional.

Max pooling of float32/float64 is a C kernel (nn_kernels.c) that finds each window's maximum and
its position in one pass; its gradient is a C scatter of the output gradient to those positions
(a differentiable scatter-add under create_graph).  Other dtypes, like the rest, are numpy-backed
(see _conv_ops.py): max pooling is a running max over the kernel offsets whose result is a
differentiable gather of the chosen elements (its adjoint a scatter-add); average pooling is
unfold (the C im2col for float32/float64) then a sum; adaptive average pooling is a sum of
index_select taps per axis (a loop over the longest window's length, never per element).
"""
from __future__ import annotations as _annotations

import math

import numpy as np

from .. import _core
from .._core import type_name as _type_name
from .._extra_ops import _check_tensor as _check_tensor_argument
from .. import where as _where
from .._memory_format import follow_channels_last
from .._saved_indices import saves_returned_indices
from ..autograd.function import Function, KernelFunction
from ._conv_ops import (Geometry, _as_rows, _check_tensor, _compiled, _Conv, _Fold, _Gather,
                        _geom_tuple, _int_entry, _out_size, _padded, _ScatterAdd, _tuple, _Unfold,
                        _windows, _wrap, col2im, empty_batch_safe, im2col)

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d"]


# -- pooling ---------------------------------------------------------------------------------------

def _pool_input(input, nd, name, views=True, op=None):
    """(input batched, whether it was unbatched) after PyTorch's refusals of its dims; `op`: the
    builtin PyTorch's argument parser names for a non-tensor input (max_pool2d_with_indices),
    if not `name`.  A 2-d pool's empty dims are refused later, by pool_window_checks (PyTorch
    checks its padding first)."""
    _check_tensor_argument(input, op or name)
    if nd == 2:
        if name.startswith("avg"):
            if input.dim() < 3:     # (PyTorch's avg_pool2d reads input.size(-3) first)
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-max(input.dim(), 1)}, {max(input.dim(), 1) - 1}], but got "
                                 f"-3)")
        elif input.dim() not in (3, 4):
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    elif input.dim() not in (nd + 1, nd + 2) or any(s == 0 for s in input.shape[1:]):
        if name.startswith("avg") and input.dim() < nd + 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                               f"tensor for argument #1 'self' (while checking arguments for "
                               f"{name})")
        raise RuntimeError(f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{list(input.shape)}")
    unbatched = input.dim() == nd + 1
    if nd == 1 and unbatched and input.shape[0] == 0:
        # An unbatched input's first dim is its channels, which may not be empty either (only a
        # batch may be); PyTorch's kernels see a 1-d pool's input as 2-d, (C, 1, L).
        if name == "max_pool1d" and (op or name) == name:
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                               f"0 dim batch size for input, but got:{list(input.shape)}")
        seen = list(input.shape[:1]) + [1] + list(input.shape[1:])
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{seen}")
    if not views:       # (the caller's kernel takes the input as it is)
        return input, unbatched
    x = input.unsqueeze(0) if unbatched else input
    if nd == 1:
        x = x.unsqueeze(2)
    return x, unbatched


def _pool_output(out, nd, unbatched):
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _pool_geometry(x, nd, name, kernel_size, stride, padding, dilation, ceil_mode,
                   own_1d_kernel=False, input_shape=None):
    """The window geometry of a max/avg pool (1-d pools are 2-d pools of height 1); x: the
    input, with its batch dim or not (input_shape: the caller's input's, which a 2-d pool's
    messages name).  own_1d_kernel: PyTorch runs the pool with its 1-d kernel
    (max_pool1d without indices), whose argument messages name it; its other pools run the
    2-d kernel, whose messages are generic."""
    what = "pooling"
    kernel = _tuple(kernel_size, nd, "kernel_size", what)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _tuple(stride, nd, "stride", what)
    padding = _tuple(padding, nd, "padding", what)
    dilation = _tuple(dilation, nd, "dilation", what)
    if nd == 2:
        out_sp = pool_window_checks(tuple(input_shape or x.shape), 2, kernel, stride, padding, dilation,
                                    ceil_mode, avg=name.startswith("avg"))
        return Geometry(tuple(x.shape)[-2:], out_sp, kernel, stride,
                        (padding[0], padding[0], padding[1], padding[1]), dilation)
    if own_1d_kernel:
        _check_1d_kernel_args(name, kernel[0], stride[0], padding[0], dilation[0])
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: 1 "
                           f"kW: {kernel[0]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: "
                           f"{dilation[0]} dilationW: {dilation[-1]}")
    if any(p < 0 for p in padding):
        negative = next(p for p in padding if p < 0)
        raise RuntimeError(f"pad must be non-negative, but got pad: {negative}")
    too_wide = [(p, k, d) for p, k, d in zip(padding, kernel, dilation) if p > k // 2]
    if too_wide:        # (PyTorch names the first dim that fails)
        p, k, d = too_wide[0]
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={p}, kernel_size={k} and dilation={d}")
    spatial = tuple(x.shape)[-nd:]
    out_sp = tuple(_out_size(s, 2 * p, k, st, d, ceil_mode, p)
                   for s, p, k, st, d in zip(spatial, padding, kernel, stride, dilation))
    if any(o <= 0 for o in out_sp):
        if own_1d_kernel:
            raise RuntimeError(f"{name}() Invalid computed output size: {min(out_sp)}")
        # (a 1-d pool runs PyTorch's 2-d kernel on a height-1 view, which its message shows;
        # x is that (N, C, 1, L) view here)
        C = x.shape[x.dim() - 3]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (C, 1) + spatial))}). "
                           f"Calculated output size: "
                           f"({'x'.join(map(str, (C, 1) + out_sp))}). "
                           f"Output size is too small")
    return Geometry((1,) + spatial, (1,) + out_sp, (1,) + kernel, (1,) + stride,
                    (0, 0, padding[0], padding[0]), (1,) + dilation)


def _c_half(value: int) -> int:
    """value / 2 in C (rounded toward zero), as PyTorch's checks compute it."""
    return value // 2 if value >= 0 else -(-value // 2)


def pool_window_checks(shape, nd, kernel, stride, padding, dilation, ceil_mode, *, avg,
                       fn_name=None):
    """The output sizes of a 2-d or 3-d max/avg pool of an input of `shape`, after PyTorch's
    checks in its order: each dim's stride, padding and padding against the effective kernel
    (while it computes the output size), then the kernel, stride and dilation signs, the
    input's empty dims, (avg_pool3d) the input against the kernel, the padding against the
    kernel, and the output size.  `fn_name`: the 3-d kernel its empty-dims message names."""
    out = []
    for size, k, s, p, d in zip(shape[-nd:], kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > _c_half((k - 1) * d + 1):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
        out.append(_out_size(size, 2 * p, k, s, d, ceil_mode, p))
    axes = "THW"[-nd:]
    for values, what, prefix in ((kernel, "kernel size", "k"), (stride, "stride", "d"),
                                 (dilation, "dilation", "dilation")):
        if any(v <= 0 for v in values):
            got = " ".join(f"{prefix}{a}: {v}" for a, v in zip(axes, values))
            raise RuntimeError(f"{what} should be greater than zero, but got {got}")
    shape = tuple(shape)
    if nd == 2:
        if not ((len(shape) == 3 and all(shape)) or (len(shape) == 4 and all(shape[1:]))):
            raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                               f"size for input, but got:{list(shape)}")
        (kH, kW), (padH, padW) = kernel, padding
        if not (_c_half(kW) >= padW and _c_half(kH) >= padH):
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                               f"got padW = {padW}, padH = {padH}, kW = {kW}, kH = {kH}")
    else:
        empty = [n for i, n in enumerate(shape) if n == 0 and not (len(shape) == 5 and i == 0)]
        if empty:
            raise RuntimeError(f"{fn_name}: Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of {list(shape)} and "
                               f"non-batch dimension 0 has length zero!")
        (kT, kH, kW), (pT, pH, pW) = kernel, padding
        if avg and not all(n >= k for n, k in zip(shape[-3:], kernel)):
            raise RuntimeError(f"input image (T: {shape[-3]} H: {shape[-2]} W: {shape[-1]}) "
                               f"smaller than kernel size (kT: {kT} kH: {kH} kW: {kW})")
        if not (_c_half(kT) >= pT and _c_half(kW) >= pW and _c_half(kH) >= pH):
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                               f"got kT: {kT} kW: {kW} kH: {kH} padT: {pT} padW: {pW} padH: {pH}")
    if any(o < 1 for o in out):
        planes = shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (planes,) + shape[-nd:]))}). "
                           f"Calculated output size: ({'x'.join(map(str, [planes] + out))}). "
                           f"Output size is too small")
    return tuple(out)


def _check_1d_kernel_args(name, kernel, stride, padding, dilation):
    """PyTorch's 1-d max-pool kernel checks its arguments in this order, each message naming
    the function (its 2-d kernel, which the other pools use, has other order and wording)."""
    if kernel <= 0:
        raise RuntimeError(f"{name}() kernel_size must be greater than zero, but got {kernel}")
    if stride <= 0:
        raise RuntimeError(f"{name}() stride must be greater than zero, but got {stride}")
    if padding < 0:
        raise RuntimeError(f"{name}() padding must be non-negative, but got {padding}")
    if padding > kernel // 2:
        raise RuntimeError(f"{name}() padding should be at most half of kernel size, but got "
                           f"padding={padding} and kernel_size={kernel}")
    if dilation <= 0:
        raise RuntimeError(f"{name}() dilation must be greater than zero, but got {dilation}")


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _window_max(xp: np.ndarray, g: Geometry):
    """Max of each window of a padded input and the kernel offset it came from, as a running max
    over the kh*kw offsets (one vectorised compare per offset; no window copy).  Ties keep the
    first offset and a NaN wins over numbers, as PyTorch's kernel does."""
    win = _windows(xp, g)                                    # (N, C, kh, kw, Ho, Wo)
    kh, kw = g.kernel
    best = win[:, :, 0, 0].copy()
    arg = np.zeros(best.shape, dtype=np.intp)
    # One sum tells whether NaN handling is needed at all (inf - inf also says yes: harmless).
    nan_aware = xp.dtype.kind == "f" and bool(np.isnan(np.sum(xp)))
    take = np.empty(best.shape, dtype=bool)
    for k in range(1, kh * kw):
        v = win[:, :, k // kw, k % kw]
        np.greater(v, best, out=take)
        if nan_aware:
            take |= np.isnan(v)
        np.copyto(best, v, where=take)
        np.copyto(arg, k, where=take)
    return best, arg


def check_max_pool_flags(name: str, ceil_mode, return_indices) -> None:
    """PyTorch's F.max_poolNd passes ceil_mode on as its builtin's 6th argument (return_indices,
    a Python truth value, picks max_poolNd_with_indices)."""
    _core.check_bool(name + "_with_indices" if return_indices else name, "ceil_mode", ceil_mode,
                     6)


def check_avg_pool_flags(name: str, ceil_mode, count_include_pad) -> None:
    """F.avg_poolNd are PyTorch's builtins: their parser takes only bools for these."""
    _core.check_bool(name, "ceil_mode", ceil_mode)
    _core.check_bool(name, "count_include_pad", count_include_pad)


@saves_returned_indices
def _max_pool(input, nd, name, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    check_max_pool_flags(name, ceil_mode, return_indices)
    result = _max_pool_of(input, nd, name, kernel_size, stride, padding, dilation, ceil_mode,
                          return_indices)
    _core._guard_saved_version(result, input)     # PyTorch's node saves self: a write raises
    return _in_input_layout(result, input, nd)


def _in_input_layout(result, input, nd):
    """PyTorch pools a channels_last (N, C, H, W) input into channels_last results (the indices
    too), so a later .view() of them fails as it fails there."""
    if nd != 2:
        return result
    if isinstance(result, tuple):
        return tuple(follow_channels_last(r, input) for r in result)
    return follow_channels_last(result, input)


def _refuse_max_pool_dtype(x, nd, name, return_indices):
    if x._array.dtype == np.bool_:
        raise NotImplementedError(f'"{name}{"_impl" if nd == 1 else ""}" not implemented for '
                                  f"'Bool'")
    if nd == 1 and not return_indices and x._array.dtype.kind in "iu":
        # PyTorch's 1-d kernel without indices (used when nothing needs a gradient) is compiled
        # for floating types only; the indexed one goes through max_pool2d, which takes integers
        raise NotImplementedError(f'"max_pool1d_impl" not implemented for '
                                  f"'{_core.scalar_type_name_of(x._array.dtype)}'")


def _max_pool_of(input, nd, name, kernel_size, stride, padding, dilation, ceil_mode,
                 return_indices):
    # (a 2-d input as it is, batched or not: the kernel takes both, and a capture notes one
    # step without views around it; PyTorch's graph has none either)
    direct = isinstance(input, _core.TensorBase) and nd == 2 and _compiled(input._array)
    x, unbatched = _pool_input(input, nd, name, views=not direct,
                               op=name + "_with_indices" if return_indices else name)
    if nd == 1:     # (PyTorch's 1-d pools refuse a dtype first, its 2-d kernel last)
        _refuse_max_pool_dtype(x, nd, name, return_indices)
    g = _pool_geometry(x, nd, name, kernel_size, stride, padding, dilation, ceil_mode,
                       own_1d_kernel=nd == 1 and not return_indices, input_shape=input.shape)
    _refuse_max_pool_dtype(x, nd, name, return_indices)
    if direct:
        N, C = (1, x.shape[0]) if unbatched else x.shape[:2]
        out, idx = _MaxPool2d.apply(x, _geom_tuple(g, N, C))
        return (out, idx) if return_indices else out
    N, C, H, W = x.shape
    if _compiled(x._array):
        values, idx = _MaxPool2d.apply(x, _geom_tuple(g, N, C))
        out = _pool_output(values, nd, unbatched)
        return (out, idx.reshape(out.shape)) if return_indices else out
    (Ho, Wo), (kh, kw), (sh, sw), (dh, dw) = g.out_hw, g.kernel, g.stride, g.dilation
    best, k = _window_max(_padded(x._array, g, _lowest(x._array.dtype)), g)
    # Flat position in each (n, c) plane of every chosen element (PyTorch's indices): the
    # window's corner plus the chosen offset's displacement.
    corner0 = (np.arange(Ho) * sh - g.pad[0])[:, None] * W + (np.arange(Wo) * sw - g.pad[2])
    shift = (np.arange(kh * kw) // kw) * dh * W + (np.arange(kh * kw) % kw) * dw
    idx = corner0 + shift[k]
    reaches_padding = any(g.pad) or (Ho - 1) * sh + dh * (kh - 1) >= H \
        or (Wo - 1) * sw + dw * (kw - 1) >= W
    if not reaches_padding:
        out = _Gather.apply(x, idx.reshape(N * C, -1), (N, C, Ho, Wo), best)
        out = _pool_output(out, nd, unbatched)
        return (out, _wrap(idx.reshape(out.shape))) if return_indices else out
    h = (np.arange(Ho) * sh - g.pad[0])[:, None] + (k // kw) * dh
    w = (np.arange(Wo) * sw - g.pad[2]) + (k % kw) * dw
    # A window with no real element above the padding's -inf (one wholly in the padding, which
    # dilation allows) keeps -inf; PyTorch then reports (and sends the gradient to) the first
    # window position at or after the top-left corner of the input, wherever it lands.
    outside = (h < 0) | (h >= H) | (w < 0) | (w >= W)
    drop = None
    if outside.any():
        def first_inside(n, s, p, d):
            start = np.arange(n) * s - p
            return start + (-(np.minimum(start, 0) // d)) * d
        corner = (first_inside(Ho, g.stride[0], g.pad[0], g.dilation[0])[:, None] * W
                  + first_inside(Wo, g.stride[1], g.pad[2], g.dilation[1]))
        idx = np.where(outside, corner, idx)
        drop = (idx < 0) | (idx >= H * W)
        if drop.any():
            gather_idx = np.where(drop, 0, idx)
        else:
            gather_idx, drop = idx, None
    else:
        gather_idx = idx
    out = _Gather.apply(x, gather_idx.reshape(N * C, -1), (N, C, Ho, Wo), best)
    if drop is not None:
        out = _where(_wrap(~drop), out, _wrap(best))
    out = _pool_output(out, nd, unbatched)
    if return_indices:
        ind = idx.reshape(out.shape)
        return out, _wrap(ind)
    return out


class _MaxPool2d(KernelFunction):
    """Max pooling of x (N, C, H, W) over the windows of `geom` (nn_kernels.h's tg_window): the
    maxima and their flat positions in each (n, c) plane, found in one pass by the C kernel; the
    gradient goes back to those positions (in C; under create_graph as a differentiable
    scatter-add whose own adjoint is a gather).  The positions (int64) get no gradient."""

    saved_args = (0,)       # as PyTorch's node: x's gradient is in x's graph (create_graph),
    saved_input_derivative = "zeros"    # with a zero derivative

    @staticmethod
    def kernel_forward(x, geom):
        flat = x.ndim == 3              # an unbatched (C, H, W) input: a batch of one
        values, idx = _core._max_pool2d_arrays(np.ascontiguousarray(x[None] if flat else x), geom)
        return ((values[0], idx[0]) if flat else (values, idx)), (idx, geom, x.shape, flat)

    @staticmethod
    def kernel_backward(state, needs, grads):
        idx, geom, _, flat = state
        g = grads[0]
        if g is None or not needs[0]:
            return None, None
        gx = _core._max_pool2d_grad_array(np.ascontiguousarray(g[None] if flat else g), idx,
                                          geom)
        return (gx[0] if flat else gx), None

    @staticmethod
    def graph_backward(ctx, saved, g, g_idx=None):
        idx, geom, in_shape, _ = ctx.kernel_state
        plane = geom[2] * geom[3]
        idx = idx.reshape(geom[0] * geom[1], geom[4] * geom[5])
        drop = (idx < 0) | (idx >= plane)
        if drop.any():      # windows with no real element send their gradient nowhere
            g = g * _wrap((~drop).reshape(g.shape).astype(g._array.dtype))
            idx = np.where(drop, 0, idx)
        return _ScatterAdd.apply(g, idx, tuple(in_shape)), None


class _ReluMaxPool2d:
    """The kernels of _MaxPool2d on relu(x), given x: a replay's step for a relu whose output only
    the pooling reads (KernelFunction.relu_fused).  The forward pools each plane's relu from a
    cache-sized buffer (the full relu output is never written), the backward adds the pooling's
    gradient only where x > 0 (or is NaN): relu's gradient (TG_RELU_GRAD) of the pooling's, for
    each position gets all of its windows' gradients or none.  Bit for bit the two steps."""

    @staticmethod
    def kernel_forward(x, geom):
        flat = x.ndim == 3
        x4 = np.ascontiguousarray(x[None] if flat else x)
        values, idx = _core._max_pool2d_arrays(x4, geom, True)
        return ((values[0], idx[0]) if flat else (values, idx)), (idx, geom, x4, flat)

    @staticmethod
    def kernel_backward(state, needs, grads):
        idx, geom, x4, flat = state
        g = grads[0]
        if g is None or not needs[0]:
            return None, None
        gx = _core._max_pool2d_grad_array(np.ascontiguousarray(g[None] if flat else g), idx,
                                          geom, x4)
        return (gx[0] if flat else gx), None


_MaxPool2d.relu_fused = _ReluMaxPool2d


class _ConvReluMaxPool2d:
    """The kernels of _Conv followed by _ReluMaxPool2d's: a replay's step for a convolution whose
    output only a relu and a max pooling read (_ReluMaxPool2d.input_fused; src/tapegrad/
    replay.pxi, _fuse_kernel_inputs).  Arguments: _Conv's, then the pooling's geometry.  For the
    2x2 / stride 2 pooling (LeNet's, most CNNs') the forward is one C pass
    (_conv2d_relu_max_pool2d_fused): each block of the convolution's output rows is relu'd and
    pooled while in cache, the full-size output never written; relu's gradient test at each
    window's chosen position is kept as a byte per window (no full-size output to test later),
    and the backward scatters the pooling's gradient with it.  Other poolings and shapes run the
    two steps' kernels one after the other.  Bit for bit the two steps either way."""

    @staticmethod
    def kernel_forward(*args):
        conv_args, pool_geom = args[:-1], args[-1]
        x, w, geom = conv_args[:3]
        bias = conv_args[3] if len(conv_args) > 3 else None
        if _pools_in_epilogue(x, w, bias, geom, pool_geom):
            values, idx, keep = _core._conv2d_relu_max_pool2d_fused(
                np.ascontiguousarray(x), np.ascontiguousarray(w),
                None if bias is None else np.ascontiguousarray(bias),
                _geom_tuple(geom, x.shape[0], x.shape[1]), geom.groups)
            return (values, idx), ((x, w, geom), (idx, pool_geom, keep))
        y, conv_state = _Conv.kernel_forward(*conv_args)
        outs, pool_state = _ReluMaxPool2d.kernel_forward(y, pool_geom)
        return outs, (conv_state, pool_state)

    @staticmethod
    def kernel_backward(state, needs, grads):
        conv_state, pool_state = state
        conv_needs = needs[:-1]
        if grads[0] is None or not any(conv_needs):
            return (None,) * len(needs)
        if len(pool_state) == 3:        # the fused forward's (indices, geometry, relu's test)
            idx, pool_geom, keep = pool_state
            gy = _core._max_pool2d_grad_array(np.ascontiguousarray(grads[0]), idx, pool_geom,
                                              keep=keep)
        else:
            gy = _ReluMaxPool2d.kernel_backward(pool_state, (True, False), grads)[0]
        return tuple(_Conv.kernel_backward(conv_state, conv_needs, [gy])) + (None,)


def _pools_in_epilogue(x, w, bias, geom, pool_geom) -> bool:
    """Whether _conv2d_relu_max_pool2d_fused computes conv(x, w) + bias, relu and the pooling
    of `pool_geom`: a batched 2-d float convolution whose output the 2x2 / stride 2 pooling
    (no padding, dilation 1, no ceil_mode overhang) reads, one dtype throughout."""
    if x.ndim != 4 or not _compiled(x) or w.dtype != x.dtype or (
            bias is not None and bias.dtype != x.dtype):
        return False
    N, O = x.shape[0], w.shape[0]
    Ho, Wo = geom.out_hw
    return (N > 0 and Ho >= 2 and Wo >= 2
            and tuple(pool_geom) == (N, O, Ho, Wo, Ho // 2, Wo // 2, 2, 2, 2, 2, 0, 0, 1, 1))


_ReluMaxPool2d.input_fused = {_Conv: _ConvReluMaxPool2d}

# PyTorch's name for max pooling's grad_fn.
_MaxPool2d._backward_cls.__name__ = "MaxPool2DWithIndicesBackward0"
_MaxPool2d._backward_cls.__qualname__ = "MaxPool2DWithIndicesBackward0"


@empty_batch_safe(1)
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-d max pooling over (N, C, L) or (C, L)."""
    return _max_pool(input, 1, "max_pool1d", kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


@empty_batch_safe(2, planes_refused=True)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-d max pooling over (N, C, H, W) or (C, H, W); stride defaults to kernel_size."""
    return _max_pool(input, 2, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _avg_divisor(g: Geometry, count_include_pad):
    """Each window's divisor (Ho, Wo): PyTorch counts the padding but not the ceil_mode overhang
    when count_include_pad, and only the real input otherwise."""
    def per_axis(size, n, k, s, p):
        start = np.arange(n) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            return end - start
        return np.minimum(end, size) - np.maximum(start, 0)
    (H, W), (Ho, Wo) = g.in_hw, g.out_hw
    dh = per_axis(H, Ho, g.kernel[0], g.stride[0], g.pad[0])
    dw = per_axis(W, Wo, g.kernel[1], g.stride[1], g.pad[2])
    return np.outer(dh, dw)


class _AvgPool2d(KernelFunction):
    """Average pooling of x (N, C, H, W) or unbatched (C, H, W) over the windows of a Geometry:
    each window's sum (im2col of the (N*C, 1, H, W) planes, summed over the window axis) times
    1 / its divisor (one factor per window position), or divided by divisor_override; the
    gradient is the output gradient scaled alike, spread back over each window (col2im)."""

    saved_args = (0,)       # as PyTorch's node: x's gradient is in x's graph (create_graph),
    saved_input_derivative = "zeros"    # with a zero derivative

    @staticmethod
    def kernel_forward(x, geom, count_include_pad, divisor_override):
        H, W = x.shape[-2:]
        cols = im2col(x.reshape(-1, 1, H, W), geom)           # (N*C, 1, K, L)
        sums = np.add.reduce(cols.reshape(cols.shape[0], cols.shape[2], cols.shape[3]), axis=1)
        state = (geom, _avg_scale(geom, count_include_pad, divisor_override, x.dtype), x.shape)
        out = _avg_scaled(sums, state[1]).reshape(x.shape[:-2] + tuple(geom.out_hw))
        return out, state

    @staticmethod
    def kernel_backward(state, needs, grads):
        geom, scale, in_shape = state
        g = grads[0]
        if g is None or not needs[0]:
            return None, None, None, None
        K = geom.kernel[0] * geom.kernel[1]
        gs = _avg_scaled(g.reshape(-1, 1, geom.out_hw[0] * geom.out_hw[1]), scale)
        cols = np.ascontiguousarray(np.broadcast_to(gs, (gs.shape[0], K, gs.shape[2])))
        return col2im(cols, geom, 1).reshape(in_shape), None, None, None

    @staticmethod
    def graph_backward(ctx, saved, g):
        geom, (factor, divide), in_shape = ctx.kernel_state
        K = geom.kernel[0] * geom.kernel[1]
        L = geom.out_hw[0] * geom.out_hw[1]
        gs = g.reshape((-1, 1, L))
        gs = gs / float(factor) if divide else gs * _wrap(factor)
        cols = gs.expand((gs.shape[0], K, L)).contiguous()
        return _Fold.apply(cols, geom, 1).reshape(tuple(in_shape)), None, None, None


def _avg_scale(geom, count_include_pad, divisor_override, dtype):
    """(factor, divide): sums are divided by divisor_override, else multiplied by one factor
    per window position (1 / its divisor)."""
    if divisor_override is not None:
        return float(divisor_override), True
    return (1.0 / _avg_divisor(geom, count_include_pad).reshape(-1)).astype(dtype), False


def _avg_scaled(a, scale):
    factor, divide = scale
    return np.divide(a, np.asarray(factor, dtype=a.dtype)) if divide else np.multiply(a, factor)


# PyTorch's name for average pooling's grad_fn.
_AvgPool2d._backward_cls.__name__ = "AvgPool2DBackward0"
_AvgPool2d._backward_cls.__qualname__ = "AvgPool2DBackward0"


def integer_avg_pool(pool, input, divisor_override):
    """Average pooling of an int64 tensor as PyTorch's CPU kernel does it: each window's sum
    divided by the window's divisor in integer arithmetic, truncated toward zero (-5 / 4 is -1).
    `pool(t, divisor_override)` is the float pool with the same geometry: run on float64 it gives
    the window sums (divisor 1) and, on ones, each window's element count and divisor, exactly
    while the sums stay within float64's 2**53 integers."""
    floats = input.double()
    sums = np.rint(pool(floats, 1)._array).astype(np.int64)
    if divisor_override is not None:
        divisor = np.int64(divisor_override)
    else:
        ones = floats.new_ones(floats.shape)
        divisor = np.rint(pool(ones, 1)._array / pool(ones, None)._array).astype(np.int64)
    quotient = (np.abs(sums) // np.abs(divisor)) * (np.sign(sums) * np.sign(divisor))
    return _wrap(np.ascontiguousarray(quotient, dtype=np.int64))


def _avg_pool(input, nd, name, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    check_avg_pool_flags(name, ceil_mode, count_include_pad)
    result = _avg_pool_of(input, nd, name, kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override)
    _core._guard_saved_version(result, input)     # PyTorch's node saves self: a write raises
    return _in_input_layout(result, input, nd)


def _refuse_avg_pool_dtype(x):
    if x._array.dtype.kind != "f":
        # PyTorch pools 1-d inputs with its 2-d kernel, whose name the message carries.
        raise NotImplementedError(f'"avg_pool2d" not implemented for '
                                  f"'{_core.scalar_type_name_of(x._array.dtype)}'")


def _avg_pool_of(input, nd, name, kernel_size, stride, padding, ceil_mode, count_include_pad,
                 divisor_override):
    # (a 2-d input as it is, batched or not: one kernel step, as _max_pool)
    direct = (isinstance(input, _core.TensorBase) and nd == 2
              and input._array.dtype in (np.float32, np.float64))
    if nd == 2 and divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")      # (PyTorch's first check)
    x, unbatched = _pool_input(input, nd, name, views=not direct)
    if x._array.dtype == np.int64:
        def pool(t, divisor):
            return _avg_pool(t, nd, name, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor)
        return integer_avg_pool(pool, input, divisor_override)
    if nd == 1:     # (a 1-d pool refuses a dtype first, the 2-d one after its shape checks)
        _refuse_avg_pool_dtype(x)
    g = _pool_geometry(x, nd, name, kernel_size, stride, padding, 1, ceil_mode,
                       input_shape=input.shape)
    _refuse_avg_pool_dtype(x)
    if direct:
        return _AvgPool2d.apply(x, g, bool(count_include_pad), divisor_override)
    N, C, H, W = x.shape
    Ho, Wo = g.out_hw
    # A window sum is unfold then a sum over the window axis: differentiable through the
    # unfold/fold pair.
    sums = _Unfold.apply(x.reshape((N * C, 1, H, W)), g).sum(1)
    if divisor_override is not None:
        out = sums / float(divisor_override)
    else:
        inv = 1.0 / _avg_divisor(g, count_include_pad).reshape(-1).astype(x._array.dtype)
        out = sums * _wrap(inv)
    out = _pool_output(out.reshape((N, C, Ho, Wo)), nd, unbatched)
    _core._reads_saved_input(out, input)      # (the kernel's node reads it: create_graph)
    return out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-d average pooling over (N, C, L) or (C, L)."""
    return _avg_pool(input, 1, "avg_pool1d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-d average pooling over (N, C, H, W) or (C, H, W)."""
    return _avg_pool(input, 2, "avg_pool2d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_bounds(size, n):
    i = np.arange(n)
    return (i * size) // n, -((-(i + 1) * size) // n)


def check_sizes_fillable(input, output_size) -> None:
    """PyTorch's adaptive 2-d and 3-d pooling functions (Python there) fill None sizes from the
    input's last dims before anything else (_list_with_default), which refuses an input with no
    more dims than the sizes given."""
    if isinstance(output_size, (list, tuple)) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


_INT64_MAX = 2 ** 63 - 1


def adaptive_size_count_error(name, nd, got):
    """PyTorch's words for an output_size of the wrong length: 1-d's argument parser, the max
    pools' kernels (an internal check), the average pools' own check."""
    if nd == 1:
        return RuntimeError(f"{name}() argument 'output_size' should contain one int (got {got})")
    if "max" in name:
        return RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
    return RuntimeError(f"{name}: output_size must be {nd}")


def adaptive_negative_size_error(input, name, out):
    """A negative output size (`out` as the kernel sees it: 1-d as 2-d): the average pools check
    it, the max pools fail allocating their output of that shape."""
    if "max" in name:
        spatial_dims = 1 if "1d" in name else len(out)
        shape = list(input.shape[:input.dim() - spatial_dims]) + list(out)
        neg = next(o for o in shape if o < 0)
        return RuntimeError(f"Trying to create tensor with negative dimension {neg}: {shape}")
    return RuntimeError(f"{name.replace('1d', '2d')}: elements of output_size must be greater "
                        f"than or equal to 0 but received {{{', '.join(map(str, out))}}}")


def _adaptive_sizes(input, output_size, nd, name):
    _check_tensor_argument(input, name)
    if nd > 1:
        check_sizes_fillable(input, output_size)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * nd
    if len(sizes) != nd:
        raise adaptive_size_count_error(name, nd, len(sizes))
    spatial = tuple(input.shape[-nd:])
    out = tuple(s if o is None else _int_entry(o, "output_size", i + 1)
                for i, (o, s) in enumerate(zip(sizes, spatial)))
    if any(o < 0 for o in out):
        # (1-d runs as 2-d of height 1 in PyTorch, and its messages show that height)
        raise adaptive_negative_size_error(input, name, ((1,) if nd == 1 else ()) + out)
    # Average pooling allows empty batch and channel dims, max pooling only an empty dim 0; 1-d
    # pooling reports itself as the 2-d op, as PyTorch (which runs it as 2-d) does.
    first_checked = input.dim() - nd if "avg" in name else 1
    kernel_name = name.replace("1d", "2d") if "avg" in name else name   # (max_pool1d checks first)
    empty = [i for i, s in enumerate(input.shape) if s == 0 and i >= first_checked]
    if empty:
        shown, at = list(input.shape), empty[0]
        if kernel_name != name:         # (the 2-d kernel sees a height of 1)
            shown.insert(input.dim() - 1, 1)
            at += at == input.dim() - 1
        raise RuntimeError(f"{kernel_name}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {shown} with dimension {at} being "
                           f"empty")
    _check_result_size(input, out, nd, "avg" in name)
    return spatial, out


def _check_result_size(input, out, nd, average) -> None:
    """PyTorch's overflow checks of the result's size (numpy would raise a ValueError): the
    average pools' element count, the max pools' byte count (1-d as 2-d, a height of 1)."""
    sizes = list(input.shape[:-nd]) + ([1] if nd == 1 and not average else []) + list(out)
    numel = math.prod(sizes)
    if average and numel > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    if not average and numel * input._array.dtype.itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={sizes}")


def _shape_along(ndim, dim, n):
    shape = [1] * ndim
    shape[dim] = n
    return shape


def _window_average(x, dim, n):
    """Adaptive average pooling of x along `dim` to n positions: each output is the sum of its
    window divided by the window's length, as PyTorch computes it.  Only the window's own
    elements enter an output (and only its output's gradient reaches them), so a NaN or inf
    stays inside its windows - a product with a dense averaging matrix would spread it (0 * nan)
    over the whole axis, forward and backward."""
    dim = dim % x.dim()
    size = x.shape[dim]
    if n == 0:                  # PyTorch allows an output size of 0: an empty result
        return x.index_select(dim, _wrap(np.zeros(0, dtype=np.int64)))
    if size % n == 0:           # equal windows (global pooling, 2x downsampling): one mean
        shape = tuple(x.shape[:dim]) + (n, size // n) + tuple(x.shape[dim + 1:])
        return x.reshape(shape).mean(dim + 1)
    start, end = _adaptive_bounds(size, n)
    # Windows are shorter than the longest one: their missing taps read element 0 and are
    # filled with zeros (a fill, not a product: a NaN there must not leak into the window).
    # Each tap is an index_select of x itself, so x's gradient is one fresh contiguous
    # accumulation, as PyTorch's (a concatenated zero would leave it a strided slice).
    along = _shape_along(x.dim(), dim, n)
    total = None
    for k in range(int((end - start).max())):
        inside = start + k < end
        tap = x.index_select(dim, _wrap(np.where(inside, start + k, 0)))
        if not inside.all():
            tap = tap.masked_fill(_wrap(~inside.reshape(along)), 0)
        total = tap if total is None else total + tap
    counts = (end - start).astype(x._array.dtype).reshape(along)
    return total / _wrap(counts)


def _floating_kernel(input, kernel):
    """PyTorch's dispatch error of a kernel compiled for floating point types only."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")


def _empty_pool_result(input, out_sp, nd: int, return_indices: bool):
    """An adaptive max pool's result with an empty output size (values and int64 indices)."""
    shape = tuple(input.shape[:input.dim() - nd]) + tuple(out_sp)
    values = _wrap(np.zeros(shape, dtype=input._array.dtype))
    return (values, _wrap(np.zeros(shape, dtype=np.int64))) if return_indices else values


def refuse_empty_backward(input, result, kind: str, nd: int):
    """`result` of an adaptive pool of kind "avg" or "max" (values, not indices), whose backward
    PyTorch refuses when a non-batch dim of the output is empty (its grad_output: the 1-d pools
    run as the 2-d ones), as there (fuzz 60706190, 60708564: area interpolation to size 0)."""
    shape = list(result.shape)
    if nd == 1:
        shape.insert(len(shape) - 1, 1)
    empty = next((d for d in range(1, len(shape)) if shape[d] == 0), None)
    if empty is None or not (input.requires_grad and _core.is_grad_enabled()):
        return result
    from .._more_math import without_derivative
    return without_derivative(
        (input,), result.detach()._array,
        f"adaptive_{kind}_pool{max(nd, 2)}d_backward(): Expected grad_output to have non-zero size "
        f"for non-batch dimensions, but grad_output has sizes {shape} with dimension {empty} "
        "being empty", RuntimeError)


def global_average(input, output_size, nd):
    """PyTorch's adaptive average pools to size 1 along all `nd` dims: before any check of the
    input's rank or sizes, ATen takes one mean over the last `nd` dims (MeanBackward1), so any
    input with at least `nd` dims pools (an empty window is a NaN mean) and a smaller one fails
    as that mean does.  None when the size is not all ones (the pooling kernel's path)."""
    check_sizes_fillable(input, output_size)
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * nd
    if len(sizes) != nd:
        return None
    # (a None keeps that dim's size, filled from the input's last dims as PyTorch's Python does)
    for o, s in zip(sizes, tuple(input.shape[-nd:]) if input.dim() >= nd else (None,) * nd):
        if not (o is None and s == 1 or o is not None and not isinstance(o, bool)
                and isinstance(o, (int, np.integer)) and o == 1):
            return None
    mean = input.mean(tuple(range(-1, -nd - 1, -1)), keepdim=True)
    if not isinstance(mean, _core.TensorBase):
        return mean         # (a quantized tensor's mean: it has no memory format to follow)
    return _in_input_layout(mean, input, nd)


def _check_rank_1d(input, name, output_size) -> None:
    """PyTorch's 1-d adaptive pools parse `output_size` as an int list of one (no None there, as
    the 2-d and 3-d ones take), then check the rank, with ATen's checkDimRange message."""
    _check_tensor_argument(input, name)
    packed = isinstance(output_size, (list, tuple))
    for i, one in enumerate(output_size if packed else (output_size,)):
        if hasattr(one, "__index__") and not isinstance(one, bool):
            continue
        if i > 0:   # (the parser took the argument for an int list from its first element)
            raise TypeError(f"{name}(): argument 'output_size' failed to unpack the object at "
                            f"pos {i + 1} with error \"type must be tuple of ints,but got "
                            f"{_type_name(one)}\"")
        found = (f"but found element of type {_type_name(one)} at pos 0" if packed
                 else f"not {_type_name(one)}")
        raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of "
                        f"ints, {found}")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {name})")


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to `output_size` positions (each window spans floor..ceil of its share)."""
    _check_rank_1d(input, "adaptive_avg_pool1d", output_size)
    # (PyTorch runs it as the 2-d pool of height 1: size 1 is that pool's global mean)
    if not isinstance(output_size, (list, tuple)) or len(output_size) == 1:
        one = output_size[0] if isinstance(output_size, (list, tuple)) else output_size
        if isinstance(one, (int, np.integer)) and not isinstance(one, bool) and one == 1:
            return _core._name_grad_fn(input.mean(-1, keepdim=True), "SqueezeBackward1")
    (L,), (Lo,) = _adaptive_sizes(input, output_size, 1, "adaptive_avg_pool1d")
    _floating_kernel(input, "adaptive_avg_pool2d")      # (PyTorch runs it as the 2-d one)
    # (PyTorch's result is the squeeze of its 2-d pooling's)
    result = refuse_empty_backward(input, _window_average(input, -1, Lo), "avg", 1)
    _core._reads_saved_input(result, input)    # PyTorch's node saves self
    return _core._name_grad_fn(result, "SqueezeBackward1")


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to an (H_out, W_out) grid (None keeps that dimension)."""
    mean = global_average(input, output_size, 2)
    if mean is not None:
        return mean
    (H, W), (Ho, Wo) = _adaptive_sizes(input, output_size, 2, "adaptive_avg_pool2d")
    _floating_kernel(input, "adaptive_avg_pool2d")
    # (any other size is one AdaptiveAvgPool2D node in PyTorch, whatever ops compute it here)
    result = _in_input_layout(refuse_empty_backward(
        input, _window_average(_window_average(input, -1, Wo), -2, Ho), "avg", 2), input, 2)
    _core._reads_saved_input(result, input)    # PyTorch's node saves self
    return _core._name_grad_fn(result, "AdaptiveAvgPool2DBackward0")


@saves_returned_indices
def _adaptive_max(input, output_size, return_indices, nd, name):
    result = _adaptive_max_of(input, output_size, return_indices, nd, name)
    _core._reads_saved_input(result, input)    # PyTorch's node saves self: a write raises
    if isinstance(result, tuple):
        result = (refuse_empty_backward(input, result[0], "max", nd),) + tuple(result[1:])
    else:
        result = refuse_empty_backward(input, result, "max", nd)
    result = _in_input_layout(result, input, nd)
    if nd == 2:     # (the 1-d pool's result is PyTorch's squeeze of the 2-d one, named so)
        values = result[0] if isinstance(result, tuple) else result
        _core._name_grad_fn(values, "AdaptiveMaxPool2DBackward0")
    return result


def _adaptive_max_of(input, output_size, return_indices, nd, name):
    spatial, out_sp = _adaptive_sizes(input, output_size, nd, name)
    _floating_kernel(input, "adaptive_max_pool2d")      # (1-d runs as the 2-d one)
    if 0 in out_sp:                                     # (no window: an empty result)
        return _empty_pool_result(input, out_sp, nd, return_indices)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    if nd == 1:
        x = x.unsqueeze(2)
        spatial, out_sp = (1,) + spatial, (1,) + out_sp
    N, C, H, W = x.shape
    (Ho, Wo) = out_sp

    def window_index(size, n):
        # Each window padded to the longest one by repeating its last element (max unchanged).
        start, end = _adaptive_bounds(size, n)
        k = int((end - start).max())
        return np.minimum(start[:, None] + np.arange(k), end[:, None] - 1)
    ih, iw = window_index(H, Ho), window_index(W, Wo)
    vals = x._array[:, :, ih[:, None, :, None], iw[None, :, None, :]]    # N,C,Ho,Wo,kh,kw
    # (sizes spelled out, not -1: an empty batch or no channels leave -1 ambiguous)
    kw = iw.shape[1]
    k = vals.reshape(N, C, Ho, Wo, ih.shape[1] * kw).argmax(axis=-1)
    idx = (ih[np.arange(Ho)[:, None], k // kw] * W
           + iw[np.arange(Wo)[None, :], k % kw]).astype(np.int64).reshape(N, C, Ho * Wo)
    out = _Gather.apply(x, idx.reshape(N * C, Ho * Wo), (N, C, Ho, Wo))
    out = _pool_output(out, nd, unbatched)
    if return_indices:
        ind = idx.reshape(out.shape)
        return out, _wrap(ind)
    return out


@empty_batch_safe(1)
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling over the last dim of an (N, C, L) or (C, L) input into ``output_size``
    windows of (near) equal size; ``return_indices=True`` also returns the argmax positions."""
    _check_rank_1d(input, "adaptive_max_pool1d", output_size)
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


@empty_batch_safe(2)
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to an (H_out, W_out) grid; return_indices gives flat positions per plane."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


# -- max unpooling ---------------------------------------------------------------------------------

class _Scatter(Function):
    """out = zeros(out_shape) with out.view(B, plane)[b, idx[b, k]] = x[b, k]: an assignment, so
    an index that occurs twice (overlapping pooling windows choose the same maximum) holds the
    value once, the last written, as PyTorch's max_unpool; the backward gathers the gradient
    at each index for every input element that names it, as PyTorch's."""

    @staticmethod
    def forward(ctx, x, idx, out_shape):
        B = idx.shape[0]
        ctx.idx, ctx.in_shape = idx, tuple(x.shape)
        out = np.zeros((B, math.prod(out_shape) // B if B else 0), dtype=x._array.dtype)
        rows = np.arange(B, dtype=np.int64)[:, None]
        out[rows, idx] = x._array.reshape(idx.shape)     # (B may be 0: no -1 to infer)
        return _wrap(out.reshape(out_shape))

    @staticmethod
    def backward(ctx, g):
        return _Gather.apply(g, ctx.idx, ctx.in_shape), None, None


def _unpool_output_size(input, kernel, stride, padding, output_size) -> tuple:
    """The spatial output size of max_unpool, checked before anything else as PyTorch's Python
    function does: the one max_pool came from by default, else output_size (its last nd sizes
    when it has nd + 2, as input.shape would) within a stride of that one."""
    nd = len(kernel)
    if input.dim() < nd:
        # (PyTorch's Python function indexes input.size() from the end: an IndexError)
        raise IndexError("tuple index out of range")
    spatial = tuple(input.shape[-nd:])
    default = [(s - 1) * st - 2 * p + k for s, st, p, k in zip(spatial, stride, padding, kernel)]
    if output_size is None:
        out_sp = tuple(default)
    else:
        sizes = tuple(output_size)
        if len(sizes) == nd + 2:
            sizes = sizes[2:]
        if len(sizes) != nd:
            # (another length had been cut to its last nd sizes, silently)
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(sizes)}'")
        out_sp = tuple(int(v) for v in sizes)
        for d, (o, lo, st) in enumerate(zip(out_sp, default, stride)):
            if not lo - st < o < lo + st:
                raise ValueError(f'invalid output_size "{sizes}" (dim {d} must be '
                                 f"between {lo - st} and {lo + st})")
    for d, o in enumerate(out_sp):
        if o < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={o}")
    return out_sp


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    """Put each input value at its index (from max_pool's return_indices) in a zero output."""
    _check_tensor(input)
    _check_tensor(indices, "indices")
    kernel = _tuple(kernel_size, nd, "kernel_size", "pooling")
    stride = kernel if stride is None else _tuple(stride, nd, "stride", "pooling")
    padding = _tuple(padding, nd, "padding", "pooling")
    out_sp = _unpool_output_size(input, kernel, stride, padding, output_size)
    if indices.dtype != _core.int64:
        # (no int32 indices: PyTorch's kernel refuses them rather than reading them)
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_core.scalar_type_name_of(indices._array.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if not input.is_floating_point():
        # (PyTorch runs 1-d unpooling through its 2-d kernel)
        raise NotImplementedError(f'"max_unpool{3 if nd == 3 else 2}d" not implemented for '
                                  f"'{_core.scalar_type_name_of(input._array.dtype)}'")
    lead = tuple(input.shape[:-nd])
    planes = math.prod(lead)
    plane = math.prod(out_sp)
    idx = _as_rows(indices._array.astype(np.int64, copy=False), planes)
    bad = (idx < 0) | (idx >= plane)
    if bad.any():
        # (1-d unpooling runs through PyTorch's 2-d kernel, whose volumes are length x 1)
        volume = out_sp + (1,) if nd == 1 else out_sp
        # PyTorch's kernel scans on past a bad index and names the last one it met (in a
        # single thread: the last in row-major order)
        raise RuntimeError(f"Found an invalid max index: {int(idx[bad][-1])} (output volumes are "
                           f"of size {'x'.join(map(str, volume))})")
    # (PyTorch's 2-d unpooling, as its pooling, keeps a channels_last input's layout)
    return _in_input_layout(_Scatter.apply(input, idx, lead + out_sp), input, nd)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: values back at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: values back at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: values back at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
