"""ExpandedWeight: the stand-in for a parameter that makes the layer functions it is given record
per-sample gradients, ``param.grad_sample`` of shape (batch, *param.shape), instead of
``param.grad``: the machinery of ``nn.utils._per_sample_grad.call_for_per_sample_grads``.

How: a handled layer function (linear, conv1d/2d/3d, embedding, layer_norm, group_norm,
instance_norm) computes with one copy of each expanded weight per sample, a leaf of shape
(batch, *weight.shape) (the weight broadcast along a new first dim), so that backward delivers
each sample's gradient to its own row; a hook on that leaf hands the rows to ``grad_sample``
(added to one already there: a weight used twice sums its contributions).  The forward values
are the layer's, every sample seeing the same weight.  Any other function given an
ExpandedWeight is refused, as in PyTorch: the batch dimension of its other inputs is unknown.
"""
from __future__ import annotations as _annotations

import functools

import tapegrad as _tg
from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F

__all__ = ["ExpandedWeight"]


class ExpandedWeight(Tensor):
    """``orig_weight`` (which must require grad) for a batch of ``batch_size`` samples whose
    per-sample gradients are wanted; ``loss_reduction`` "mean" scales them by the batch size (the
    loss's mean divided each sample's share by it)."""

    def __new__(cls, orig_weight, batch_size, loss_reduction):
        if not isinstance(orig_weight, Tensor):
            raise RuntimeError(f"Can only make Expanded Weights of Tensors, got "
                               f"{type(orig_weight).__name__}")
        if not orig_weight.requires_grad:
            raise RuntimeError("Can only build ExpandedWeights objects of tensors that "
                               "requires_grad")
        return Tensor._make_subclass(cls, orig_weight.detach(), True)

    def __init__(self, orig_weight, batch_size, loss_reduction) -> None:
        self.batch_size = batch_size
        self.batch_first = True
        self.orig_weight = orig_weight
        self.loss_reduction = loss_reduction

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        rule = _RULES.get(func)
        if rule is None:
            raise RuntimeError(f"Expanded Weights encountered but cannot handle function "
                               f"{getattr(func, '__name__', func)}")
        return rule(func, *args, **(kwargs or {}))


def _deliver(weight: ExpandedWeight, grad: Tensor) -> None:
    """The backward hook of a per-sample copy: its gradient rows are the samples' gradients."""
    if weight.loss_reduction == "mean":
        grad = grad * weight.batch_size
    grad = grad.detach()
    param = weight.orig_weight
    previous = getattr(param, "grad_sample", None)
    param.grad_sample = grad if previous is None else previous + grad


def _per_sample(weight):
    """A per-sample copy of an ExpandedWeight, (batch, *shape); None for None; a plain tensor
    (one that needs no gradient) is returned as it is, shared by every sample."""
    if not isinstance(weight, ExpandedWeight):
        if isinstance(weight, Tensor) and weight.requires_grad:
            raise RuntimeError("ExpandedWeights currently does not support a mixture of "
                               "ExpandedWeight parameters and normal Parameters. Please file and "
                               "issue with pytorch/pytorch")
        return weight
    w = weight.orig_weight
    copies = w.detach().unsqueeze(0).expand(weight.batch_size, *w.shape).requires_grad_()
    copies.register_hook(functools.partial(_deliver, weight))
    return copies


def _check_input(func, input, *weights) -> None:
    """PyTorch's checks of the batched input against the expanded weights."""
    name = func.__name__
    if isinstance(input, ExpandedWeight):
        raise RuntimeError(f"Expanded Weights do not support inputs that are also "
                           f"ExpandedWeights. Input must be a Tensor, got ExpandedWeight in "
                           f"function {name}")
    if not isinstance(input, Tensor):
        raise RuntimeError(f"Expanded Weights requires a Tensor as the first input to get the "
                           f"batch dimension, got {type(input).__name__} in function {name}")
    if input.dim() == 0:
        raise RuntimeError(f"Expanded Weights requires a batch dimension but got an input of "
                           f"size 0 in function {name}")
    if input.shape[0] == 0:
        raise RuntimeError(f"0 is not a valid batch size for Expanded Weights but got input "
                           f"tensor of {input} in function {name}")
    reductions = set()
    for w in weights:
        if isinstance(w, ExpandedWeight):
            if w.batch_size != input.shape[0]:
                raise RuntimeError(f"Expected ExpandedWeights to have batch size matching input "
                                   f"but got input batch size of {input.shape[0]} with "
                                   f"ExpandedWeight of batch size {w.batch_size}")
            reductions.add(w.loss_reduction)
    if len(reductions) > 1:
        raise RuntimeError("Expected ExpandedWeights to all have the same loss_reduction "
                           "argument but got one with sum and one with mean")


def _affine(out: Tensor, weight, bias, sample_shape) -> Tensor:
    """out * weight + bias for a layer computed without them: a per-sample weight or bias
    (batch, *shape) viewed as `sample_shape` to broadcast against `out`, a plain one (shape) as
    `sample_shape` without its batch dim."""
    for param, combine in ((weight, Tensor.__mul__), (bias, Tensor.__add__)):
        p = _per_sample(param)
        if p is not None:
            out = combine(out, p.reshape(sample_shape if isinstance(param, ExpandedWeight)
                                         else sample_shape[1:]))
    return out


def _linear(func, input, weight, bias=None):
    _check_input(func, input, weight, bias)
    if input.dim() <= 1:
        raise RuntimeError(f"Input does not have a batch dimension. Expanded Weights expected "
                           f"input of at least rank 2, got of rank {input.dim()}")
    batch = input.shape[0]
    x = input.reshape(batch, -1, input.shape[-1])              # (batch, rows, in)
    w = _per_sample(weight)
    out = (x @ w.transpose(1, 2) if isinstance(weight, ExpandedWeight)
           else F.linear(x, w))                                # (batch, rows, out)
    out = _affine(out, None, bias, (batch, 1, -1))
    return out.reshape(*input.shape[:-1], out.shape[-1])


def _conv(func, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    _check_input(func, input, weight, bias)
    spatial = {F.conv1d: 1, F.conv2d: 2, F.conv3d: 3}[func]
    if input.dim() != spatial + 2:
        raise RuntimeError(f"Expanded Weights only support convolution with batched input, got "
                           f"{func} with an unbatched input of dim {input.dim()}, expected input "
                           f"of dim {spatial + 2}")
    batch = input.shape[0]
    if isinstance(weight, ExpandedWeight):
        # every sample convolved with its own copy: the samples side by side as channel groups
        w = _per_sample(weight)
        x = input.reshape(1, -1, *input.shape[2:])
        out = func(x, w.reshape(-1, *w.shape[2:]), None, stride, padding, dilation,
                   groups * batch)
        out = out.reshape(batch, -1, *out.shape[2:])
    else:
        out = func(input, weight, None, stride, padding, dilation, groups)
    return _affine(out, None, bias, (batch, -1) + (1,) * spatial)


def _embedding(func, input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
               scale_grad_by_freq=False, sparse=False):
    _check_input(func, input, weight)
    if input.dim() == 1:
        raise RuntimeError(f"Expanded Weights needs an input with a batch size, got a 1D tensor, "
                           f"{input}")
    table = weight.orig_weight if isinstance(weight, ExpandedWeight) else weight
    if max_norm is not None:            # the rows looked up are renormalised in place first
        with no_grad():
            F.embedding(input, table, max_norm=max_norm, norm_type=norm_type)
    if not isinstance(weight, ExpandedWeight):
        return F.embedding(input, weight, padding_idx, None, norm_type, scale_grad_by_freq,
                           sparse)
    # (PyTorch's per-sample gradient scatters every looked-up row, padding_idx's too)
    copies = _per_sample(weight)
    sample = _tg.arange(input.shape[0]).reshape((-1,) + (1,) * (input.dim() - 1))
    return copies[sample, input]


def _layer_norm(func, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    _check_input(func, input, weight, bias)
    shape = ((normalized_shape,) if isinstance(normalized_shape, int)
             else tuple(normalized_shape))
    if input.dim() <= len(shape):
        raise RuntimeError(f"Expanded Weights: Layer norm should not normalize over batch "
                           f"dimension for per sample gradient computations but got that "
                           f"normalized shape, {list(shape)}, matched input shape.")
    out = F.layer_norm(input, shape, None, None, eps)
    return _affine(out, weight, bias,
                   (input.shape[0],) + (1,) * (input.dim() - 1 - len(shape)) + shape)


def _group_norm(func, input, num_groups, weight=None, bias=None, eps=1e-5):
    _check_input(func, input, weight, bias)
    out = F.group_norm(input, num_groups, None, None, eps)
    return _affine(out, weight, bias, (input.shape[0], -1) + (1,) * (input.dim() - 2))


def _instance_norm(func, input, running_mean=None, running_var=None, weight=None, bias=None,
                   use_input_stats=True, momentum=0.1, eps=1e-5):
    _check_input(func, input, weight, bias)
    out = F.instance_norm(input, running_mean, running_var, None, None, use_input_stats,
                          momentum, eps)
    return _affine(out, weight, bias, (input.shape[0], -1) + (1,) * (input.dim() - 2))


_RULES = {F.linear: _linear, F.conv1d: _conv, F.conv2d: _conv, F.conv3d: _conv,
          F.embedding: _embedding, F.layer_norm: _layer_norm, F.group_norm: _group_norm,
          F.instance_norm: _instance_norm}
