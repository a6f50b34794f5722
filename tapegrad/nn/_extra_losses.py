"""Losses and distances PyTorch has in torch.nn.functional beyond the compiled ones, composed of
differentiable ops: kl_div, margin / embedding / triplet losses, Poisson and Gaussian NLL,
cosine_similarity, pairwise_distance, cdist."""
from __future__ import annotations as _annotations

import math
import warnings

import numpy as np

import tapegrad as _tg

from .. import _core
from .._half_precision import refuse_half
from ._extra_activations import logsigmoid
from ._legacy_reduction import mean_alias
from . import _reduction as _legacy

_KL_MEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release.")


def _reduction(size_average, reduce, reduction: str) -> str:
    # The legacy size_average / reduce flags override reduction, as in PyTorch.  Its warning
    # names the loss's own code (the loss module's __init__ or the functional loss), as
    # PyTorch's does, not the caller's line: under the default filter it prints once per
    # process and message however many losses a script builds.
    if size_average is None and reduce is None:
        return reduction
    result = _legacy.legacy_string(size_average, reduce)
    warnings.warn(_legacy._FLAGS_WARNING.format(result), stacklevel=2)
    return result


def _reduce(loss, reduction: str):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str, extra=(), *, legacy_mean: bool = True,
                     message: str = "{} is not a valid value for reduction") -> str:
    """The reduction to apply: one of PyTorch's names, or 'elementwise_mean' read as 'mean' by
    the losses that still accept it (legacy_mean); anything else raises ValueError(message)."""
    if legacy_mean:
        reduction = mean_alias(reduction, stacklevel=4)
    if reduction not in ("none", "mean", "sum") + tuple(extra):
        raise ValueError(message.format(reduction))
    return reduction


def _refuse_gradient_of(arg, fname: str, name: str) -> None:
    """PyTorch's autograd refusal of an argument its loss has no derivative for (a target, a
    class weight) when that argument requires grad and grad mode is on."""
    if isinstance(arg, _core.TensorBase) and arg.requires_grad and _tg.is_grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to "
                           f"argument '{name}'. This input cannot have requires_grad True.")


def _check_loss_operands(name: str, input, target) -> None:
    """PyTorch's binding TypeError when the input or target of a builtin loss is not a tensor."""
    from .._extra_ops import _check_tensor
    _check_tensor(input, name)
    _check_tensor(target, name, "target", 2)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False):
    """KL(target || exp(input)) pointwise: input is log-probabilities; target is probabilities
    (or log-probabilities with log_target)."""
    if reduction == "mean" and size_average is None and reduce is None:
        # Only a 'mean' asked for by that name (not the legacy flags or alias) warns, as PyTorch.
        warnings.warn(_KL_MEAN_WARNING, stacklevel=2)
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction, ("batchmean",))
    _check_loss_operands("kl_div", input, target)
    _core.check_bool("kl_div", "log_target", log_target)
    if any(t._array.dtype.kind in "biu" for t in (input, target)):
        # (PyTorch refuses them; computed, they gave a number from integer log-probabilities)
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        pointwise = _tg.exp(target) * (target - input)
    else:
        # xlogy's 0 log 0 = 0, with its derivatives: PyTorch's kl_div is this expression, so
        # a target's gradient where it is 0 is NaN (0 / 0 from log's derivative), not -input
        pointwise = _tg.xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = pointwise.sum()
        return total / input.shape[0] if input.dim() > 0 else total
    return _reduce(pointwise, reduction)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """Sum over dim of (x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)), the max taken as a value
    only (its derivative is the norm's, as in PyTorch)."""
    from .._extra_ops import _broadcast_shapes, _check_tensor
    _check_tensor(x1, "cosine_similarity", "x1", 1)
    _check_tensor(x2, "cosine_similarity", "x2", 2)
    _broadcast_shapes(tuple(x1.shape), tuple(x2.shape))     # (PyTorch's error if they do not)
    # (dim is an `int`: a 0-d integer tensor too; not a tuple, which .sum(dim) would take)
    dim = _core.int_arg(dim, "cosine_similarity", "dim", 3)
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    common = _tg.promote_types(x1.dtype, x2.dtype)
    if not (common.is_floating_point or common.is_complex):
        # (integers meet a float in its dtype: cosine_similarity(int64, float32) is float32)
        holder = x1 if x1.dtype == common else x2
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_core.scalar_type_name_of(holder._array.dtype)}")
    x1, x2 = (x if x.dtype == common else x.to(common) for x in (x1, x2))
    # float16 in PyTorch's steps: each norm is computed in float32 but rounded to float16 (a
    # row of norm beyond 65504 gives zeros there) and eps converted to float16 by the clamp
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = _norm_floored_without_derivative(x1, dim, eps)
    n2 = _norm_floored_without_derivative(x2, dim, eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _norm_floored_without_derivative(x, dim, eps):
    """||x|| over `dim` (kept), raised to at least eps as a value only.  PyTorch clamps a clone of
    the norm in place under no_grad, so the derivative through the norm is the unclamped one:
    a row whose norm is below eps (but not zero) still gets a gradient through its norm."""
    norm = x.norm(2, dim, keepdim=True).clone()
    with _tg.no_grad():
        norm.clamp_(min=eps)
    return norm


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """||x1 - x2 + eps||_p over the last dimension (eps keeps the gradient finite at 0)."""
    from .._extra_ops import _check_tensor
    _check_tensor(x1, "pairwise_distance", "x1", 1)
    _check_tensor(x2, "pairwise_distance", "x2", 2)
    _core.check_bool("pairwise_distance", "keepdim", keepdim)
    # (PyTorch adds eps as a Scalar: its node is add's Scalar overload, AddBackward1)
    diff = _core._name_grad_fn(x1 - x2 + eps, "AddBackward1")
    dim = -1 if diff.dim() > 0 else 0
    # (PyTorch's node is torch.norm's with a dim, NormBackward1, for every p)
    return _core._name_grad_fn(diff.norm(p, dim, keepdim=keepdim), "NormBackward1")


# (None is not among them: PyTorch's Python wrapper refuses it with its ValueError)
_CDIST_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                        "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R)."""
    from .._extra_ops import _check_tensor
    _check_tensor(x1, "cdist", "x1", 1)
    _check_tensor(x2, "cdist", "x2", 2)
    if compute_mode not in _CDIST_COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2}"
                           f" got: {min(x1.dim(), x2.dim())}D")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.is_floating_point():           # (integers, bools and complex alike)
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_tg._core.scalar_type_name_of(x._array.dtype)}")
    from ..linalg import _same_scalar_type
    _same_scalar_type(x1, x2)
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. "
                           f"X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if p == 2 and x1.numel() and x2.numel() and (
            compute_mode == "use_mm_for_euclid_dist"
            or (compute_mode != "donot_use_mm_for_euclid_dist"
                and (x1.shape[-2] > 25 or x2.shape[-2] > 25))):
        return _euclidean_distances(x1, x2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if diff.numel():                                # (its kernel runs only with distances)
        refuse_half(diff, "cdist")
    # PyTorch's CdistBackward0 saves both inputs: a later write into one (an ICP loop moving its
    # points under no_grad) refuses the backward, where the difference here kept the old points.
    # (The difference's record saves nothing, so it has the free slots; the norms' may not.)
    _core._guard_saved_version(diff, x1, x2)
    return _core._name_grad_fn(row_distances(diff, p), "CdistBackward0")


def _euclidean_distances(x1, x2):
    """cdist's matrix-product path, in PyTorch's steps: the batch dims broadcast (inputs expanded
    only where they differ), the distances of the product, viewed to the output shape.  (Half
    precision too: PyTorch's kernel refuses it, its matrix product does not.)"""
    from ._euclidean_dist import EuclideanDist, euclidean_dist_values
    batch = tuple(_tg.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    if math.prod(batch) != 1:
        x1 = x1.expand(batch + tuple(x1.shape[-2:]))
        x2 = x2.expand(batch + tuple(x2.shape[-2:]))
    if _tg.is_grad_enabled() and (x1.requires_grad or x2.requires_grad):
        dist = EuclideanDist.apply(x1, x2)
    else:                                       # (the Function's bookkeeping only when recording)
        dist = euclidean_dist_values(x1, x2)
    return dist.view(batch + (x1.shape[-2], x2.shape[-2]))


def row_distances(diff, p: float):
    """The p-norms over the last dim of row differences, as cdist's and pdist's kernels give
    them: their gradient at p = 0 is zeros, where the norm's (vector_norm's, PyTorch's too) is
    none, which left x.grad None."""
    from ..contractions import _zeroed          # (zeros in the graph; NaN/inf do not leak)
    if diff.shape[-1] == 0:                     # (rows of no coordinates are 0 apart, any p)
        return diff.abs().sum(-1)
    if p == 2 and diff.requires_grad and _tg.is_grad_enabled():
        from ._euclidean_dist import RowTwoNorm
        return RowTwoNorm.apply(diff)
    dist = diff.norm(p, -1)
    if p == 0 and diff.requires_grad:
        dist = dist + _zeroed(diff).sum(-1)
    elif p == math.inf and diff.requires_grad:
        # Their p = inf gradient is sign(diff) at EVERY coordinate reaching the maximum, where
        # the norm's (amax's) splits it evenly among tied coordinates: the value stays the
        # norm's, the graph carries |diff| of the tied coordinates (value minus itself, 0).
        magnitude = diff.abs()
        tied = magnitude.detach() == dist.detach().unsqueeze(-1)
        at_max = _tg.where(tied, magnitude, _zeroed(magnitude))
        dist = dist.detach() + (at_max - at_max.detach()).sum(-1)
    if (p == 0 or p == math.inf) and dist.requires_grad:
        from ._euclidean_dist import KeepsOutput
        dist = KeepsOutput.apply(dist)
    return dist


def _margin_number(margin, fn: str, position: int):
    """A loss's margin as PyTorch's parser reads its float: a tensor that requires grad (a
    learnable margin) is refused there, not differentiated (creation._number_argument)."""
    from ..creation import _number_argument
    return _number_argument(margin, fn, "margin", position, "float")


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    margin = _margin_number(margin, "cosine_embedding_loss", 4)
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    from .._extra_ops import _check_tensor
    for position, (name, t) in enumerate((("input1", input1), ("input2", input2),
                                          ("target", target)), 1):
        _check_tensor(t, "cosine_embedding_loss", name, position)
    eps = 1e-12  # PyTorch's EPSILON inside cosine_embedding_loss
    # (one pair of vectors per target element: PyTorch refuses any other ranks, which would
    # otherwise broadcast into a result of the wrong shape)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != target.dim() + 1 or input2.dim() != target.dim() + 1:
        raise RuntimeError(f"{target.dim()}D target tensor expects {target.dim() + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")
    dim = input1.dim() - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / _tg.sqrt(mag1 * mag2)
    zeros = _tg.zeros_like(cos)
    pos = _tg.where(target == 1, 1 - cos, zeros)
    neg = _tg.where(target == -1, _tg.clamp(cos - margin, min=0), zeros)
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean"):
    """``max(0, -target * (input1 - input2) + margin)`` per element (target is 1 or -1), reduced by
    ``reduction`` ('mean', 'sum' or 'none').
    """
    margin = _margin_number(margin, "margin_ranking_loss", 4)
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: "
                           f"{input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """x where target is 1, max(0, margin - x) where target is -1."""
    margin = _margin_number(margin, "hinge_embedding_loss", 3)
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    _check_loss_operands("hinge_embedding_loss", input, target)
    zeros = _tg.zeros_like(input)
    margin_part = _tg.where(target != 1, _tg.clamp(margin - input, min=0), zeros)
    self_part = _tg.where(target != -1, input, zeros)
    return _reduce(margin_part + self_part, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """``log(1 + exp(-target * input))`` per element (target 1 or -1), reduced by ``reduction``."""
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    _check_loss_operands("soft_margin_loss", input, target)
    _refuse_gradient_of(target, "soft_margin_loss", "target")
    # PyTorch computes into a tensor of input's dtype (neg, then mul_ by target, exp_, log1p_):
    # the loss has input's dtype whatever target's, and an integer input cannot hold exp's
    margin = -input * target
    if input._array.dtype.kind in "iu":
        # (its mul_ by a floating target fails, or else its exp_)
        result = margin.dtype if margin.is_floating_point() else _tg.get_default_dtype()
        raise RuntimeError(f"result type {_core.scalar_type_name_of(result.np_dtype)} can't be "
                           f"cast to the desired output type "
                           f"{_core.scalar_type_name_of(input._array.dtype)}")
    if margin.dtype != input.dtype:
        margin = margin.to(input.dtype)
    # (one node in PyTorch, whatever the reduction)
    return _core._name_grad_fn(_reduce(_tg.log1p(_tg.exp(margin)), reduction),
                               "SoftMarginLossBackward0")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean"):
    """Per-sample mean over classes of the binary logistic loss."""
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction, legacy_mean=False, message="{} is not valid")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _check_vector_or_matrix(input):
    """The input check of PyTorch's multi-class margin losses: a 0-d tensor, a non-empty vector,
    or a matrix with non-empty rows."""
    if not (input.dim() == 0 or input.dim() == 1 and input.shape[0]
            or input.dim() == 2 and input.shape[1]):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,
                      size_average=None, reduce=None, reduction: str = "mean"):
    """Per sample: sum over classes j != y of max(0, margin - x[y] + x[j])^p / C."""
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _refuse_gradient_of(weight, "multi_margin_loss", "weight")
    _check_vector_or_matrix(input)
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    if target.dim() > 1 or target.numel() != x.shape[0]:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the "
                           "number of input samples (batch size). Expected target size "
                           f"[{x.shape[0]}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    y = target.reshape(-1)
    n_classes = x.shape[1]
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(f"inconsistent weight size, expected {n_classes} but got "
                           f"{list(weight.shape)}")
    refuse_half(x, "multi_margin_loss_cpu_kernel")     # (before the target's range)
    labels = y._array
    if labels.dtype != np.int64 and labels.size:
        # Class indices are Long: PyTorch's kernel refuses another dtype (an int32 target had
        # been computed with; a float one failed in gather); it checks no empty target.
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{_core.scalar_type_name_of(labels.dtype)}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise RuntimeError("target out of range")
    x_y = x.gather(1, y.unsqueeze(1))
    # PyTorch's kernel adds a term only where z > 0: a term at exactly the margin passes no
    # gradient, and a NaN term is left out (relu kept it: a NaN loss; fuzz 63015582)
    # The j == y term is max(0, margin)^p, not part of the loss.
    z = margin - x_y + x
    added = (z > 0).logical_and(_tg.arange(n_classes).unsqueeze(0) != y.unsqueeze(1))
    zeros = _tg.zeros_like(z)
    z = _tg.where(added, z, zeros)
    if p == 2:
        z = z * z
    if weight is not None:
        # (masked again after the product: a skipped term's 0 times an infinite weight is NaN,
        # which PyTorch never forms; the first where() stops that NaN's gradient)
        z = _tg.where(added, z * weight[y].unsqueeze(1), zeros)
    loss = z.sum(1) / n_classes
    if squeeze:
        loss = loss.reshape(target.shape)
    return _core._name_grad_fn(_reduce(loss, reduction), "MultiMarginLossBackward0")


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """``max(d(anchor, positive) - d(anchor, negative) + margin, 0)`` with ``d`` the p-norm pairwise
    distance over the last dim (``swap=True`` uses the smaller of d(a, n) and d(p, n)), reduced by
    ``reduction``.
    """
    margin = _margin_number(margin, "triplet_margin_loss", 4)
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction)
    # (the functional's own check: the builtin torch.triplet_margin_loss takes any margin)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)


def _triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction: str):
    """The builtin triplet margin loss (a checked reduction name, any margin)."""
    _core.check_bool("triplet_margin_loss", "swap", swap, 7)     # (its builtin's 7th argument)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _tg.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    # (PyTorch's C++ adds the margin as a Scalar: AddBackward1)
    shifted = _core._name_grad_fn(margin + d_pos, "AddBackward1")
    return _reduce((shifted - d_neg).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """Poisson negative log likelihood: ``exp(input) - target * input`` with ``log_input=True``, else
    ``input - target * log(input + eps)``; ``full=True`` adds Stirling's term for targets > 1.
    """
    reduction = _reduction(size_average, reduce, reduction)
    reduction = _check_reduction(reduction, legacy_mean=False)
    # (PyTorch passes them on as its builtin poisson_nll_loss's 3rd and 4th arguments)
    _core.check_bool("poisson_nll_loss", "log_input", log_input, 3)
    _core.check_bool("poisson_nll_loss", "full", full, 4)
    _check_loss_operands("poisson_nll_loss", input, target)
    if log_input:
        loss = _tg.exp(input) - target * input
    else:
        loss = input - target * _tg.log(input + eps)
    if full:
        # Stirling's approximation of log(target!), used where target > 1, computed everywhere
        # and masked as PyTorch does: a target's gradient is then PyTorch's, NaN where the
        # target is 0 or negative (0 times log's infinite or NaN derivative)
        stirling = target * _tg.log(target) - target + 0.5 * _tg.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean"):
    """0.5 (log(var) + (input - target)^2 / var), var clamped to eps without altering its
    gradient.  The checks run in PyTorch's order (negative entries, then var's size, then the
    reduction), and the clamp is PyTorch's: in place on a clone under no_grad, so an integer
    var fails as PyTorch's does (a float result cannot be cast back)."""
    if isinstance(var, float):      # (a Python int is no tensor for PyTorch's torch.any either)
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _tg.ones_like(input)
    elif bool(_tg.any(var < 0)):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        # Otherwise var must have input's rank and differ from it in sizes that sum to 1: one
        # dim of size 1 broadcast over input's (homoscedastic along any dim, as PyTorch's test).
        elif not (var.dim() == input.dim()
                  and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    reduction = _check_reduction(reduction, legacy_mean=False, message="{} is not valid")
    var = var.clone()
    with _tg.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_tg.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


__all__ = ["kl_div", "cosine_similarity", "pairwise_distance", "cdist", "cosine_embedding_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "triplet_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss"]
