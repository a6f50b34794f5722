"""3-d convolution, pooling and channel dropout for tapegrad.nn.functional, built on the 2-d ops.

Each 3-d window op here is a 2-d op over the (height, width) planes - the compiled im2col/BLAS
convolution and the C max-pooling kernel of _conv_ops.py / _pool_ops.py - combined along the
depth axis with a handful of whole-tensor differentiable ops (pad, strided slices, stack, a
reduction), one per depth tap of the kernel, never one per window or element:

- conv3d: the kd depth taps of every output depth are stacked into the channel axis, so the
  whole convolution is ONE conv2d of (N*D_out, kd*C, H, W) with the weight laid out to match
  (groups kept: each group's channels stay one contiguous block);
- conv_transpose3d: ONE conv_transpose2d of every input depth slice with all kd weight taps as
  output channels, then each tap's planes added at their (strided) output depths;
- max/avg pooling: the 2-d pool of every depth slice, then the max/sum over each depth window;
  windows are products of per-axis windows, so this equals the 3-d pool exactly (ties choose
  the first maximum in depth, height, width order, as PyTorch's kernel does);
- adaptive pooling: the same separation with adaptive windows along each axis.

Gradients (and create_graph) come from the 2-d ops' Functions and the core ops.
"""
from __future__ import annotations as _annotations

import warnings

import numpy as np

from .. import _core
from .._extra_ops import _check_tensor as _check_tensor_argument
from .._memory_format import follow_channels_last
from .. import stack as _stack
from ._complex_conv import by_real_parts
from ._conv_ops import (_check_tensor, _conv_arguments, _conv_checks, _out_size,
                        _transposed_weight_check, _tuple, _weight_rows_check, empty_input_output)
from ._conv_ops import conv2d, conv_transpose2d
from ._pool_ops import check_avg_pool_flags, check_max_pool_flags
from .._saved_indices import saves_returned_indices
from ._pool_ops import (_adaptive_bounds, _floating_kernel, _window_average, adaptive_max_pool2d,
                        avg_pool2d, integer_avg_pool, max_pool2d)
from ._spatial_ops import _channel_dropout, _unbatched_channel_dropout, check_dropout_p

_wrap = _core.wrap_array
_pad = _core.NN_FUNCTIONS["pad"]

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d",
           "adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "dropout3d"]


def _depth_taps(x, taps, start, stride, count):
    """(N, C, taps, count, ...) from x (N, C, D, ...): tap i holds depths start[i] + stride*j,
    j < count (strided slices of x, stacked; differentiable)."""
    parts = [x[:, :, s: s + stride * (count - 1) + 1: stride] for s in start]
    return _stack(parts, 2)


def _pad_depth(x, before, after, value=0.0):
    """x (N, C, D, H, W) with `before`/`after` planes of `value` along D."""
    if before == 0 and after == 0:
        return x
    return _pad(x, [0, 0, 0, 0, before, after], "constant", value)


# -- convolution ------------------------------------------------------------------------------------

def _conv3d_layout(out, input):
    """PyTorch's float32 3-d convolutions (its oneDNN kernels) follow a channels_last_3d input;
    its other dtypes (the slow kernels) and the weight's layout give row-major results."""
    return follow_channels_last(out, input) if out._array.dtype == np.float32 else out


@by_real_parts
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d cross-correlation over (N, C, D, H, W) (or unbatched (C, D, H, W)) input with weight
    (O, C/groups, kd, kh, kw); padding is an int, a triple, 'valid' or 'same' (stride 1)."""
    x, unbatched, stride, dilation, kernel, pads, _ = _conv_arguments(
        input, weight, bias, stride, padding, dilation, groups, 3)
    N, C, D, H, W = x.shape
    O = weight.shape[0]
    if C == 0:
        out_sp = tuple(_out_size(s, a + b, k, st, d) for s, (a, b), k, st, d in
                       zip((D, H, W), pads, kernel, stride, dilation))
        out = empty_input_output(x, weight, bias, (N, 0) + out_sp, False)
        return out.squeeze(0) if unbatched else out
    kd, kh, kw = kernel
    sd, sh, sw = stride
    dd, dh, dw = dilation
    Do = _out_size(D, pads[0][0] + pads[0][1], kd, sd, dd)
    # Height/width padding goes to conv2d (symmetric part); only an asymmetric 'same' excess
    # and the depth padding are materialised.
    extra = [b - a for a, b in pads[1:]]
    x = _pad(x, [0, extra[1], 0, extra[0], pads[0][0], pads[0][1]], "constant", 0.0) \
        if any(extra) or pads[0] != (0, 0) else x
    Hp, Wp = x.shape[3], x.shape[4]
    G = groups
    # (N, C, kd, Do, H, W) -> channels ordered (group, depth tap, channel in group).
    taps = _depth_taps(x, kd, [i * dd for i in range(kd)], sd, Do)
    taps = taps.reshape(N, G, C // G, kd, Do, Hp, Wp).permute(0, 4, 1, 3, 2, 5, 6)
    planes = taps.reshape(N * Do, G * kd * (C // G), Hp, Wp)
    # (the depth taps stacked rather than permuted: weight's gradient comes back row-major, as
    # PyTorch's; see conv_transpose3d's input)
    w2 = _stack(weight.unbind(2), 1).reshape(O, kd * (C // G), kh, kw)
    y = conv2d(planes, w2, bias, (sh, sw), (pads[1][0], pads[2][0]), (dh, dw), G)
    Ho, Wo = y.shape[2], y.shape[3]
    out = y.reshape(N, Do, O, Ho, Wo).permute(0, 2, 1, 3, 4).contiguous()
    # (PyTorch's batched result is its Convolution node; an unbatched one its squeeze)
    return out.squeeze(0) if unbatched else _core._name_grad_fn(_conv3d_layout(out, input),
                                                                "ConvolutionBackward0")


@by_real_parts
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv3d in its input; weight is (C_in, C_out/groups, kd, kh, kw)."""
    stride = _tuple(stride, 3, "stride")
    dilation = _tuple(dilation, 3, "dilation")
    padding = _tuple(padding, 3, "padding")
    output_padding = _tuple(output_padding, 3, "output_padding")
    x, unbatched = _conv_checks(input, weight, bias, 3, stride, padding, dilation, groups,
                                transposed=True)
    N, C, D, H, W = x.shape
    _weight_rows_check(weight, groups)
    _transposed_weight_check(weight, 3)
    if C != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[0]} channels, but "
                           f"got {C} channels instead")
    if C % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    G, Og = groups, weight.shape[1]
    O = Og * G
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != O):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got output_padding_depth: {output_padding[0]} output_padding_height: "
                           f"{output_padding[1]} output_padding_width: {output_padding[2]} "
                           f"stride_depth: {stride[0]} stride_height: {stride[1]} stride_width: "
                           f"{stride[2]} dilation_depth: {dilation[0]} dilation_height: "
                           f"{dilation[1]} dilation_width: {dilation[2]}")
    kd, kh, kw = weight.shape[2:]
    out_sp = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                   zip((D, H, W), stride, padding, dilation, (kd, kh, kw), output_padding))
    empty = x._array.size == 0
    # An empty batch takes PyTorch's empty-input path, where a spatial size of 0 is an answer.
    if any(o < 0 or (o == 0 and not empty) for o in out_sp):
        raise RuntimeError(f"Given input size per channel: ({D} x {H} x {W}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, out_sp))}). Output size is "
                           f"too small")
    if empty:
        out = empty_input_output(x, weight, bias, (N, O) + out_sp, True)
        return out.squeeze(0) if unbatched else out
    sd, dd, pd = stride[0], dilation[0], padding[0]
    # Every depth tap is a block of output channels: (C, Og, kd, kh, kw) -> (C, Og*kd, kh, kw),
    # output channel (group, o, tap) - each group's block stays contiguous.
    # (stacking the depth slices rather than permuting x: the gradient of a permute comes back
    # to x permuted, unbind's is stacked row-major, as PyTorch's input gradient is)
    planes = _stack(x.unbind(2), 1).reshape(N * D, C, H, W)
    y = conv_transpose2d(planes, weight.reshape(C, Og * kd, kh, kw), None, stride[1:],
                         padding[1:], output_padding[1:], G, dilation[1:])
    Ho, Wo = y.shape[2], y.shape[3]
    y = y.reshape(N, D, O, kd, Ho, Wo)
    # Tap i of input depth j lands at output depth j*sd + i*dd - pd: add each tap's D planes,
    # spread by the stride, into a zero volume long enough for all of them, then crop.
    full = (D - 1) * sd + dd * (kd - 1) + 1 + output_padding[0]
    span = (D - 1) * sd + 1
    total = None
    for i in range(kd):
        tap = y.select(3, i).permute(0, 2, 1, 3, 4)               # (N, O, D, Ho, Wo)
        if sd > 1:      # interleave sd-1 zero planes between the D input depths
            # (zeros in tap's dtype: a float 0.0 turned an int64 convolution into float32)
            tap = _stack([tap] + [tap * 0] * (sd - 1), 3).reshape(N, O, D * sd, Ho, Wo)
            tap = tap[:, :, :span]
        placed = _pad_depth(tap, i * dd, full - i * dd - span)
        total = placed if total is None else total + placed
    out = total[:, :, pd: pd + out_sp[0]]
    if bias is not None:
        out = out + bias.reshape(1, O, 1, 1, 1)
    out = out.contiguous()
    # (PyTorch's batched result is its Convolution node, as conv3d's; it was AliasBackward0)
    return out.squeeze(0) if unbatched else _core._name_grad_fn(_conv3d_layout(out, input),
                                                                "ConvolutionBackward0")


# -- pooling ----------------------------------------------------------------------------------------

def _pool3d_input(input, op):
    """`op`: the builtin PyTorch's argument parser names for a non-tensor input.  Empty dims
    are refused later, by pool_window_checks (PyTorch checks the padding first)."""
    _check_tensor_argument(input, op)
    if input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    unbatched = input.dim() == 4
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _pool3d_args(input, kernel_size, stride, padding, dilation, ceil_mode, fn_name):
    """(kernel, stride, padding, dilation) of a 3-d pool of `input`, after PyTorch's checks
    (pool_window_checks; fn_name: the kernel its empty-input message names, avg_pool3d()
    also checking the input against the kernel)."""
    from ._pool_ops import pool_window_checks
    kernel = _tuple(kernel_size, 3, "kernel_size", "pooling")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _tuple(stride, 3, "stride", "pooling")
    padding = _tuple(padding, 3, "padding", "pooling")
    dilation = _tuple(dilation, 3, "dilation", "pooling")
    pool_window_checks(tuple(input.shape), 3, kernel, stride, padding, dilation, ceil_mode,
                       avg=fn_name.startswith("avg"), fn_name=fn_name)
    return kernel, stride, padding, dilation


def _depth_window_geometry(D, k, s, p, d, ceil_mode):
    """Output depth count, the padding after the input that every window's reach needs, and
    each window's first (padded) depth per tap."""
    Do = _out_size(D, 2 * p, k, s, d, ceil_mode, p)
    after = max((Do - 1) * s + d * (k - 1) + 1 - D - p, 0)
    return Do, after, [i * d for i in range(k)]


@saves_returned_indices
def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    check_max_pool_flags("max_pool3d", ceil_mode, return_indices)
    x, unbatched = _pool3d_input(input, "max_pool3d")
    kernel, stride, padding, dilation = _pool3d_args(
        input, kernel_size, stride, padding, dilation, ceil_mode,
        "max_pool3d_with_indices_out_cpu_template()")
    N, C, D, H, W = x.shape
    Ho = _out_size(H, 2 * padding[1], kernel[1], stride[1], dilation[1], ceil_mode, padding[1])
    Wo = _out_size(W, 2 * padding[2], kernel[2], stride[2], dilation[2], ceil_mode, padding[2])
    if x._array.dtype == np.bool_:
        raise NotImplementedError("\"max_pool3d\" not implemented for 'Bool'")
    planes, plane_idx = max_pool2d(x.reshape(N, C * D, H, W), kernel[1:], stride[1:],
                                   padding[1:], dilation[1:], ceil_mode, True)
    planes = planes.reshape(N, C, D, Ho, Wo)
    k, s, p, d = kernel[0], stride[0], padding[0], dilation[0]
    Do, after, starts = _depth_window_geometry(D, k, s, p, d, ceil_mode)
    # padding planes never win: -inf, or the integer type's least value (no integer -inf)
    dtype = planes._array.dtype
    lowest = float("-inf") if dtype.kind in "fc" else int(np.iinfo(dtype).min)
    padded = _pad_depth(planes, p, after, lowest)
    values, tap = _depth_taps(padded, k, starts, s, Do).max(2)
    out = values.squeeze(0) if unbatched else follow_channels_last(values, input)
    # (PyTorch pools a batched or unbatched input in one node)
    out = _core._name_grad_fn(out, "MaxPool3DWithIndicesBackward0")
    if not return_indices:
        return out
    # The chosen depth of each output and the 2-d pool's index in that plane.
    depth = np.arange(Do).reshape(1, 1, Do, 1, 1) * s - p + tap._array * d
    depth = np.clip(depth, 0, D - 1)
    in_plane = np.take_along_axis(plane_idx._array.reshape(N, C, D, Ho, Wo), depth, 2)
    index = _wrap((depth * (H * W) + in_plane).astype(np.int64))
    return out, (index.squeeze(0) if unbatched else follow_channels_last(index, input))


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-d max pooling over (N, C, D, H, W) or (C, D, H, W); stride defaults to kernel_size;
    return_indices gives flat positions in each D*H*W volume (for max_unpool3d)."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool3d`` returning ``(values, indices)`` whatever ``return_indices`` says."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-d average pooling over (N, C, D, H, W) or (C, D, H, W) (count_include_pad,
    divisor_override and ceil_mode as PyTorch)."""
    check_avg_pool_flags("avg_pool3d", ceil_mode, count_include_pad)
    x, unbatched = _pool3d_input(input, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, _ = _pool3d_args(input, kernel_size, stride, padding, 1, ceil_mode,
                                              "avg_pool3d()")
    if x._array.dtype == np.int64:
        def pool(t, divisor):
            return avg_pool3d(t, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        return integer_avg_pool(pool, input, divisor_override)
    if x._array.dtype.kind != "f" or x._array.dtype == np.float16:   # (float and double only)
        raise NotImplementedError(f'"avg_pool3d_out_frame" not implemented for '
                                  f"'{_core.scalar_type_name_of(x._array.dtype)}'")
    N, C, D, H, W = x.shape
    # The 2-d pool averages each plane (its divisor is the height x width factor of the 3-d
    # divisor, which separates per axis); the depth factor divides the depth sum below.
    planes = avg_pool2d(x.reshape(N, C * D, H, W), kernel[1:], stride[1:], padding[1:],
                        ceil_mode, count_include_pad, 1 if divisor_override else None)
    Ho, Wo = planes.shape[2], planes.shape[3]
    planes = planes.reshape(N, C, D, Ho, Wo)
    k, s, p = kernel[0], stride[0], padding[0]
    Do, after, starts = _depth_window_geometry(D, k, s, p, 1, ceil_mode)
    sums = _depth_taps(_pad_depth(planes, p, after), k, starts, s, Do).sum(2)
    if divisor_override:
        out = sums / float(divisor_override)
    else:
        start = np.arange(Do) * s - p
        end = np.minimum(start + k, D + p)
        count = end - start if count_include_pad else np.minimum(end, D) - np.maximum(start, 0)
        out = sums / _wrap(count.astype(x._array.dtype).reshape(1, 1, Do, 1, 1))
    # (PyTorch pools a batched or unbatched input in one node)
    return _core._name_grad_fn(out.squeeze(0) if unbatched else out, "AvgPool3DBackward0")


def _adaptive3d_sizes(input, output_size, name):
    _check_tensor_argument(input, name)
    from ._pool_ops import (adaptive_negative_size_error, adaptive_size_count_error,
                            check_sizes_fillable)
    check_sizes_fillable(input, output_size)
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got"
                           f"{':' if 'max' in name else ''} {list(input.shape)}")
    sizes = tuple(output_size) if isinstance(output_size, (list, tuple)) else (output_size,) * 3
    if len(sizes) != 3:
        raise adaptive_size_count_error(name, 3, len(sizes))
    spatial = tuple(input.shape[-3:])
    empty = [i for i, s in enumerate(input.shape) if s == 0 and i >= 1]
    if empty:
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)} with dimension "
                           f"{empty[0]} being empty")
    out = tuple(s if o is None else int(o) for o, s in zip(sizes, spatial))
    if any(o < 0 for o in out):
        raise adaptive_negative_size_error(input, name, out)
    return spatial, out


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (an int or a
    triple; None keeps that size)."""
    from ._pool_ops import global_average
    mean = global_average(input, output_size, 3)
    if mean is not None:
        return mean
    _, (Do, Ho, Wo) = _adaptive3d_sizes(input, output_size, "adaptive_avg_pool3d")
    _floating_kernel(input, "adaptive_avg_pool3d_cpu")
    from ._pool_ops import refuse_empty_backward
    out = refuse_empty_backward(
        input, _window_average(_window_average(_window_average(input, -1, Wo), -2, Ho), -3, Do),
        "avg", 3)
    # PyTorch's global average is a mean (MeanBackward1, as the last mean here); any other size
    # is one AdaptiveAvgPool3D node
    if (Do, Ho, Wo) == (1, 1, 1):
        return out
    _core._reads_saved_input(out, input)    # PyTorch's node saves self
    return _core._name_grad_fn(out, "AdaptiveAvgPool3DBackward0")


def _adaptive_max_pool3d(input, output_size):
    (D, H, W), (Do, Ho, Wo) = _adaptive3d_sizes(input, output_size, "adaptive_max_pool3d")
    _floating_kernel(input, "adaptive_max_pool3d_cpu")
    if 0 in (Do, Ho, Wo):
        from ._pool_ops import _empty_pool_result
        return _empty_pool_result(input, (Do, Ho, Wo), 3, True)
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    N, C = x.shape[:2]
    planes, plane_idx = adaptive_max_pool2d(x.reshape(N, C * D, H, W), (Ho, Wo), True)
    planes = planes.reshape(N, C, D, Ho, Wo)
    # Depth windows padded to the longest by repeating their last depth (the max is unchanged
    # and the first maximum stays first).
    start, end = _adaptive_bounds(D, Do)
    k = int((end - start).max())
    depth_of_tap = np.minimum(start[:, None] + np.arange(k), end[:, None] - 1)     # (Do, k)
    taps = planes.index_select(2, _wrap(depth_of_tap.reshape(-1).astype(np.int64)))
    values, tap = taps.reshape(N, C, Do, k, Ho, Wo).max(3)
    depth = depth_of_tap[np.arange(Do)[:, None, None], tap._array]                  # N,C,Do,..
    in_plane = np.take_along_axis(plane_idx._array.reshape(N, C, D, Ho, Wo), depth, 2)
    index = _wrap((depth * (H * W) + in_plane).astype(np.int64))
    if unbatched:
        return values.squeeze(0), index.squeeze(0)
    return values, index


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size``; return_indices gives
    flat positions in each D*H*W volume."""
    values, index = adaptive_max_pool3d_with_indices(input, output_size)
    return (values, index) if return_indices else values


@saves_returned_indices
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` returning ``(values, indices)``."""
    from ._pool_ops import refuse_empty_backward
    values, index = _adaptive_max_pool3d(input, output_size)
    values = _core._name_grad_fn(refuse_empty_backward(input, values, "max", 3),
                                 "AdaptiveMaxPool3DBackward0")
    return values, index


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) (or (C, D, H, W)) input with probability p, scale
    by 1/(1-p)."""
    check_dropout_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. Note "
                      f"that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension "
                      f"(i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    # Unbatched (C, D, H, W) input - and any other rank, as PyTorch treats it as one sample -
    # draws one mask value per entry of its first dim.
    if input.dim() != 5:
        _check_tensor(input)
        return _unbatched_channel_dropout(input, p, training, inplace)
    return _channel_dropout(input, p, training, inplace)
