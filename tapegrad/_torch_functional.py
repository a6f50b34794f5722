"""The functional ops PyTorch also exposes on the `torch` namespace (torch.conv2d, torch.dropout,
torch.kl_div, ...), with the signatures of their ATen schemas, not of torch.nn.functional's.

Each is a thin adapter over the one implementation in tapegrad.nn.functional: the differences
are only in the calling convention.  ATen's forms take every argument positionally (dropout's
`train` is required, batch_norm takes weight/bias before the running stats), losses take the
reduction as an int (0 none, 1 mean, 2 sum; any other int reduces nothing, as ATen does; when it
is not given nothing is reduced either: the schemas say 1, but torch's Python binding of these
functions defaults to 0, and that is the behaviour scripts see), and
the max pools return no indices (the `*_with_indices` forms return both).  The nn package is
imported on first call, so `import tapegrad` stays light.

pdist (torch.pdist and F.pdist) is built here: the p-norm distances of the row pairs i < j.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math

import numpy as np

from . import _core
from ._extra_ops import _check_tensor, _index_tensor, _wrap

TensorBase = _core.TensorBase
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from .nn import functional
    return functional


def _reduction_name(reduction, fn: str, position: int) -> str:
    """ATen's int reduction as the functional API's string."""
    if not isinstance(reduction, (int, np.integer)) or isinstance(reduction, bool):
        raise TypeError(f"{fn}(): argument 'reduction' (position {position}) must be int, not "
                        f"{_type_name(reduction)}")
    return _REDUCTIONS.get(int(reduction), "none")


# -- convolutions and pools ----------------------------------------------------------------------

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv1d: see :func:`tapegrad.nn.functional.conv1d`."""
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv2d: see :func:`tapegrad.nn.functional.conv2d`."""
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.conv_transpose1d: see :func:`tapegrad.nn.functional.conv_transpose1d`."""
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.conv_transpose2d: see :func:`tapegrad.nn.functional.conv_transpose2d`."""
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """torch.convolution: the 1-, 2- or 3-d convolution (or transposed convolution) the weight's
    rank names, of a batched input."""
    if isinstance(weight, _core.TensorBase) and isinstance(input, _core.TensorBase) and \
            input.dim() != weight.dim():
        # (ATen's generic entry takes batched input only)
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight {list(weight.shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input.shape)} instead")
    nd = weight.dim() - 2 if isinstance(weight, _core.TensorBase) else 0
    if nd not in (1, 2, 3):
        raise RuntimeError("weight should have at least three dimensions" if nd < 1 else
                           f"convolution of {nd} spatial dims is not supported")
    F = _F()
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(input, weight, bias, stride, padding,
                                                  output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """torch.conv_tbc: a 1-d convolution of (time, batch, channel) input with a (kernel width,
    in channels, out channels) weight, zero-padded by `pad` in time; (time', batch, out)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = _F().conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return _core._name_grad_fn(out.permute(2, 0, 1).contiguous(), "ConvTbcBackward0")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv3d: see :func:`tapegrad.nn.functional.conv3d`."""
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.conv_transpose3d: see :func:`tapegrad.nn.functional.conv_transpose3d`."""
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def _stride(stride):
    # ATen spells "stride defaults to the kernel size" as an empty list
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: the pooled values only (no ``return_indices``)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: the pooled values only (no ``return_indices``)."""
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.rms_norm: see :func:`tapegrad.nn.functional.rms_norm`."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """torch.ctc_loss (int reduction: 0 none, 1 mean, 2 sum): see
    :func:`tapegrad.nn.functional.ctc_loss`."""
    name = _reduction_name(reduction, "ctc_loss", 6)
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, name,
                         zero_infinity)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d: the pooled values only (no ``return_indices``)."""
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, int64 indices into the length dim)."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """torch.avg_pool1d: see :func:`tapegrad.nn.functional.avg_pool1d`."""
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """torch.adaptive_avg_pool1d: see :func:`tapegrad.nn.functional.adaptive_avg_pool1d`."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, int64 indices), always both, as ATen returns."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


# -- normalisation -------------------------------------------------------------------------------

def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """torch.batch_norm (ATen's argument order, all required); ``cudnn_enabled`` is ignored.
    No check of the batch size: that is nn.functional's."""
    from .nn._batch_norm import aten_batch_norm
    return aten_batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    """torch.instance_norm (ATen's argument order, all required); ``cudnn_enabled`` is
    ignored."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """torch.group_norm: see :func:`tapegrad.nn.functional.group_norm`, without its check of
    one value per group (nn.functional's; ATen's normalises such a group to the bias)."""
    from .nn._group_norm import aten_group_norm
    return aten_group_norm(input, num_groups, weight, bias, eps)


# -- dropout family ------------------------------------------------------------------------------

def _check_p(p) -> None:
    # ATen's own check: a RuntimeError, even in eval mode (F's Python check raises ValueError)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def _returns_input_unchanged(input, p, train) -> bool:
    """ATen's dropout family hands back input itself when nothing would be dropped (eval, p == 0
    or no elements), before any check of the input's shape."""
    return not train or p == 0 or input.numel() == 0


def _check_feature_input(input) -> None:
    # ATen checks this only when it draws the per-channel mask: after the p == 0 / p == 1 /
    # empty-input shortcuts, so a 1-D input with p == 1 is zeros, not an error
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")


def dropout(input, p, train):
    """torch.dropout(input, p, train): zero each element with probability p, scale the rest by
    1/(1-p); the input itself when not training.  p outside [0, 1] is ATen's RuntimeError."""
    _check_p(p)
    return _core.TORCH_FUNCTIONS["dropout"](input, p, train)


def dropout_(input, p, train):
    """In-place torch.dropout."""
    _check_p(p)
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train): see :func:`tapegrad.nn.functional.alpha_dropout`."""
    _check_p(p)
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place torch.alpha_dropout."""
    _check_p(p)
    return _F().alpha_dropout(input, p, train, inplace=True)


def _feature_keep(input, p):
    """A 0/1 mask with one draw per (dim 0, dim 1) entry, broadcast over the later dims."""
    from .creation import default_generator
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return (default_generator().random(shape) >= p).astype(input._array.dtype)


def _finish(input, result, inplace):
    """The dropout's result, or in place written into input, whose node keeps the name of the
    result's last op (MulBackward0, AddBackward0) as PyTorch's in-place kernels: the
    activations' write-back, shared."""
    from .nn._extra_activations import _finish as write_back_activation
    return write_back_activation(input, result, inplace)


def _feature_dropout(input, p, train, inplace):
    _check_p(p)
    _core.check_bool("feature_dropout_" if inplace else "feature_dropout", "train", train, 3)
    if _returns_input_unchanged(input, p, train):
        return input
    if p == 1:
        return _finish(input, input * 0, inplace)
    _check_feature_input(input)
    scale = 1.0 / (1.0 - p)
    return _finish(input, input * _wrap(_feature_keep(input, p) * scale), inplace)


def feature_dropout(input, p, train):
    """torch.feature_dropout: zero whole (dim 0, dim 1) slices with probability p, scale the rest
    by 1/(1-p) (what dropout1d/2d/3d do on batched input); needs at least 2 dims."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    """In-place torch.feature_dropout."""
    return _feature_dropout(input, p, train, True)


def _feature_alpha_dropout(input, p, train, inplace):
    from .nn._extra_activations import _SELU_ALPHA, _SELU_SCALE
    _check_p(p)
    _core.check_bool("feature_alpha_dropout_" if inplace else "feature_alpha_dropout", "train",
                     train, 3)
    if _returns_input_unchanged(input, p, train):
        return input
    if p == 1:
        return _finish(input, input * 0, inplace)
    _check_feature_input(input)
    # as alpha_dropout: dropped slices take SELU's saturation value, then the affine map that
    # restores zero mean and unit variance
    saturation = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((saturation * saturation * p + 1) * (1 - p))
    keep = _feature_keep(input, p)
    b = (keep - 1) * (saturation * a) + saturation * a * p
    return _finish(input, input * _wrap(keep * a) + _wrap(b.astype(keep.dtype)), inplace)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout: alpha dropout of whole (dim 0, dim 1) slices (what
    nn.FeatureAlphaDropout does); needs at least 2 dims."""
    return _feature_alpha_dropout(input, p, train, False)


def feature_alpha_dropout_(input, p, train):
    """In-place torch.feature_alpha_dropout."""
    return _feature_alpha_dropout(input, p, train, True)


# -- activations ---------------------------------------------------------------------------------

def prelu(input, weight):
    """torch.prelu: see :func:`tapegrad.nn.functional.prelu`."""
    return _F().prelu(input, weight)


def selu(input):
    """torch.selu: see :func:`tapegrad.nn.functional.selu`."""
    return _F().selu(input)


def selu_(input):
    """In-place torch.selu."""
    return _F().selu_(input)


def celu(input, alpha=1.0):
    """torch.celu: see :func:`tapegrad.nn.functional.celu`."""
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place torch.celu."""
    return _F().celu_(input, alpha)


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """torch.rrelu: see :func:`tapegrad.nn.functional.rrelu` (``generator`` must be None)."""
    _no_generator(generator, "rrelu")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """In-place torch.rrelu (``generator`` must be None)."""
    _no_generator(generator, "rrelu_")
    return _F().rrelu_(input, lower, upper, training)


def _no_generator(generator, fn):
    if generator is not None:
        raise NotImplementedError(f"tapegrad's {fn} draws from the default generator: pass "
                                  f"generator=None")


def threshold(input, threshold, value):
    """torch.threshold: ``value`` where input <= threshold, input elsewhere."""
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place torch.threshold."""
    return _F().threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    """torch.hardshrink: input where |input| > lambd, 0 elsewhere."""
    return _F().hardshrink(input, lambd)


def pixel_shuffle(input, upscale_factor):
    """torch.pixel_shuffle: see :func:`tapegrad.nn.functional.pixel_shuffle`."""
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """torch.pixel_unshuffle: see :func:`tapegrad.nn.functional.pixel_unshuffle`."""
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """torch.channel_shuffle: see :func:`tapegrad.nn.functional.channel_shuffle`."""
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """torch.native_channel_shuffle: see :func:`tapegrad.nn.functional.native_channel_shuffle`."""
    return _F().native_channel_shuffle(input, groups)


def bilinear(input1, input2, weight, bias=None):
    """torch.bilinear: see :func:`tapegrad.nn.functional.bilinear`."""
    return _F().bilinear(input1, input2, weight, bias)


# -- distances -----------------------------------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """torch.cosine_similarity: see :func:`tapegrad.nn.functional.cosine_similarity`."""
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """torch.pairwise_distance: see :func:`tapegrad.nn.functional.pairwise_distance`."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2.0):
    """The p-norm distances between the rows of an (N, M) input, pair (i, j) for i < j in row
    order: a vector of N(N-1)/2 values (differentiable; the gradient at coincident rows is 0)."""
    _check_tensor(input, "pdist")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.shape[0] > 1 and input.shape[1]:       # (its kernel runs only with distances)
        from ._half_precision import refuse_half
        refuse_half(input, "pdist")
    first, second = np.triu_indices(input.shape[0], 1)
    from .nn._extra_losses import row_distances
    diff = input[_index_tensor(first)] - input[_index_tensor(second)]
    # (PyTorch's node saves the input: a write into it refuses the backward; the difference's
    # record saves nothing, so it has a free slot for that check)
    _core._guard_saved_version(diff, input)
    return _core._name_grad_fn(row_distances(diff, p), "PdistBackward0")


# -- losses (reduction as an int) ----------------------------------------------------------------

def kl_div(input, target, reduction=0, *, log_target=False):
    """torch.kl_div: ``reduction`` 1 is the mean over all elements (no 'batchmean' warning,
    ATen's mean is elementwise), 2 the sum, 0 none."""
    name = _reduction_name(reduction, "kl_div", 3)
    if name == "mean":      # F.kl_div warns on 'mean'; ATen's plain mean does not
        return _F().kl_div(input, target, reduction="none", log_target=log_target).mean()
    return _F().kl_div(input, target, reduction=name, log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits (int reduction)."""
    name = _reduction_name(reduction, "binary_cross_entropy_with_logits", 5)
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=name,
                                                 pos_weight=pos_weight)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss (every argument required, int reduction)."""
    name = _reduction_name(reduction, "poisson_nll_loss", 6)
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=name)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss (int reduction)."""
    name = _reduction_name(reduction, "margin_ranking_loss", 5)
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=name)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss (int reduction)."""
    name = _reduction_name(reduction, "hinge_embedding_loss", 4)
    return _F().hinge_embedding_loss(input, target, margin, reduction=name)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss (int reduction)."""
    name = _reduction_name(reduction, "cosine_embedding_loss", 5)
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=name)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=0):
    """torch.triplet_margin_loss (int reduction)."""
    from .nn._extra_losses import _triplet_margin_loss
    name = _reduction_name(reduction, "triplet_margin_loss", 8)
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, name)


# -- padding, recurrent cells, embedding renorm --------------------------------------------------

def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad with mode 'constant' (negative pads crop)."""
    from .nn._spatial_ops import padded_like_torch
    return padded_like_torch(input, list(pad), "constant", value)


def _linear_gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    from . import matmul
    _core.normalize_dim(1, input.dim())        # PyTorch's IndexError for unbatched input
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    if hx.shape[-1] != w_hh.shape[1]:
        raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {hx.shape[-1]}, expected "
                           f"{w_hh.shape[1]}")
    gi = matmul(input, w_ih.mT)
    gh = matmul(hx, w_hh.mT)
    if b_ih is not None:
        gi = gi + b_ih
    if b_hh is not None:
        gh = gh + b_hh
    return gi, gh


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN: tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    gi, gh = _linear_gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN with ReLU: relu(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    gi, gh = _linear_gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: hx = (h, c); gates i, f, g, o from input W_ih^T + h W_hh^T (+ biases);
    returns (o * tanh(c'), c') with c' = f * c + i * g."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to have 2 tensors (h and c), got {len(hx)}")
    h, c = hx
    gi, gh = _linear_gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: r, z from the summed gates, n = tanh(gi_n + r * gh_n), returns
    (1 - z) * n + z * hx."""
    gi, gh = _linear_gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = (i_r + h_r).sigmoid()
    z = (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


def _sequence(mode, args):
    """ATen's stacked recurrent layers (torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu),
    run by the layers' own loop (nn.modules.rnn._run_layers) over weights given as a flat list
    per layer and direction (`w_ih, w_hh[, b_ih, b_hh][, w_hr]`).  Two overloads of nine
    arguments, as ATen's: (input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) and, for a packed batch, (data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional).  hx is the (h, c) pair for LSTM, one
    tensor otherwise."""
    from .nn.modules.rnn import _run_layers
    names = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
             "bidirectional", "batch_first")
    packed = isinstance(args[1], TensorBase) and (mode == "LSTM"
                                                  or isinstance(args[2], TensorBase))
    if packed:
        names = ("data", "batch_sizes") + names[1:-1]
    elif args[-1] is None:
        raise TypeError(f"{mode.lower()}() missing 1 required positional argument: "
                        "'batch_first'")
    bound = dict(zip(names, args))
    data = bound["data" if packed else "input"]
    hx, params = bound["hx"], list(bound["params"])
    has_biases, num_layers = bool(bound["has_biases"]), int(bound["num_layers"])
    dropout, train = float(bound["dropout"]), bool(bound["train"])
    bidirectional = bool(bound["bidirectional"])
    batch_first = False if packed else bool(bound["batch_first"])
    if mode == "LSTM":
        state = list(hx)
        if len(state) != 2:
            raise RuntimeError("lstm expects two hidden states")
    else:
        if not isinstance(hx, TensorBase):
            raise TypeError(f"{mode.lower()}(): argument 'hx' must be Tensor, not "
                            f"{type(hx).__name__}")
        state = [hx]
    for t in state:
        if t.dim() != 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-t.dim()}, {t.dim() - 1}], but got 2)")
    # An LSTM with projections has an h narrower than its c, and a w_hr per direction.
    proj = mode == "LSTM" and state[0].shape[2] != state[1].shape[2]
    stride = (4 if has_biases else 2) + proj
    if len(params) % stride:
        raise RuntimeError(f"MatrixRef: ArrayRef size {len(params)} not divisible by stride "
                           f"{stride}" if mode == "LSTM"
                           else "got an incorrect number of RNN parameters")
    num_directions = 2 if bidirectional else 1
    groups = [params[k:k + stride] for k in range(0, len(params), stride)]
    # (ATen's LSTM uses the first groups it needs; its other RNNs refuse extra ones)
    if len(groups) > num_layers * num_directions and mode != "LSTM":
        raise RuntimeError("Expected more weights in stacked_rnn")
    if len(groups) < num_layers * num_directions:
        raise RuntimeError(f"{mode.lower()}: expected {num_layers * num_directions} groups of "
                           f"{stride} weights (num_layers * directions), got {len(groups)}")

    def direction_weights(layer, direction):
        group = groups[layer * num_directions + direction]
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
        return w_ih, w_hh, b_ih, b_hh, group[-1] if proj else None

    if not packed:
        if data.dim() != 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-data.dim()}, {data.dim() - 1}], but got 2)")
        if batch_first:
            data = data.transpose(0, 1)
        batch_sizes = None
        batch = data.shape[1]
    else:
        batch_sizes = [int(b) for b in bound["batch_sizes"].tolist()]
        batch = batch_sizes[0]
    w = groups[0][0]
    for t in [data] + state[:1]:
        if t.dtype != w.dtype:
            raise RuntimeError(
                f"mat1 and mat2 must have the same dtype, but got "
                f"{_core.scalar_type_name_of(t._array.dtype)} and "
                f"{_core.scalar_type_name_of(w._array.dtype)}")
    for t in state:
        if t.shape[1] != batch:
            raise RuntimeError(f"The size of tensor a ({t.shape[1]}) must match the size of "
                               f"tensor b ({batch}) at non-singleton dimension 0")
    output, final = _run_layers(mode, data, state, direction_weights, num_layers,
                                bidirectional, dropout, train, True, batch_sizes)
    if batch_first:
        # (as the layers: ATen's GRU and RNN transpose their fresh output in place)
        output = output.transpose(0, 1) if mode == "LSTM" else output.transpose_(0, 1)
    return (output, *final)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first=None):
    """torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n, c_n): the stacked LSTM of nn.LSTM over weights given as a
    flat list (`w_ih, w_hh[, b_ih, b_hh][, w_hr]` per layer and direction); hx is [h_0, c_0].
    Also ATen's packed form (data, batch_sizes, hx, params, has_biases, num_layers, dropout,
    train, bidirectional)."""
    return _sequence("LSTM", (input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first))


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first=None):
    """torch.gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n): nn.GRU's stacked layers over a flat weight list; also the
    packed form (data, batch_sizes, hx, params, ...)."""
    return _sequence("GRU", (input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first))


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first=None):
    """torch.rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n): nn.RNN's (tanh) stacked layers over a flat weight list;
    also the packed form (data, batch_sizes, hx, params, ...)."""
    return _sequence("RNN_TANH", (input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first))


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first=None):
    """torch.rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n): nn.RNN's (relu) stacked layers over a flat weight list;
    also the packed form (data, batch_sizes, hx, params, ...)."""
    return _sequence("RNN_RELU", (input, hx, params, has_biases, num_layers, dropout, train,
                           bidirectional, batch_first))


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale in place, without recording, the rows of weight named by indices whose
    norm_type-norm exceeds max_norm, to norm max_norm (factor max_norm / (norm + 1e-7))."""
    _check_tensor(weight, "embedding_renorm_")
    rows = np.unique(indices._array.reshape(-1))
    arr = weight._array
    norms = np.linalg.norm(arr[rows].astype(np.float64), ord=norm_type, axis=-1)
    over = norms > max_norm
    scale = (max_norm / (norms[over] + 1e-7)).astype(arr.dtype)
    from .grad_mode import no_grad
    with no_grad():
        updated = weight.detach().clone()
        updated._array[rows[over]] *= scale[:, None]
        weight.copy_(updated)
    return weight


FUNCTIONS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "convolution", "conv_tbc", "max_pool1d", "max_pool3d", "rms_norm", "ctc_loss",
             "max_pool2d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
             "adaptive_max_pool1d", "batch_norm", "instance_norm", "group_norm",
             "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
             "feature_alpha_dropout", "feature_alpha_dropout_", "prelu", "selu", "selu_", "celu",
             "celu_", "rrelu", "rrelu_", "threshold", "threshold_", "hardshrink", "pixel_shuffle",
             "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "bilinear", "cosine_similarity",
             "pairwise_distance", "pdist", "kl_div", "binary_cross_entropy_with_logits",
             "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
             "cosine_embedding_loss", "triplet_margin_loss", "constant_pad_nd", "rnn_tanh_cell",
             "rnn_relu_cell", "lstm_cell", "gru_cell", "embedding_renorm_", "lstm", "gru",
             "rnn_tanh", "rnn_relu")
# Tensor methods PyTorch has among these (Tensor.prelu, Tensor.hardshrink)
METHODS = ("prelu", "hardshrink")


def register(namespace: dict, tensor_cls) -> None:
    """Add the torch-level functional ops to `namespace` and their methods to `tensor_cls`;
    names that already exist win (tapegrad.dropout of the core is kept)."""
    from ._extra_ops import register_family
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, {})
    namespace["dropout"] = dropout     # the core's, behind ATen's range check of p
