"""torch.nn.functional.ctc_loss: connectionist temporal classification.

The negative log-likelihood of each target sequence under the per-frame log-probabilities,
summed over all alignments, by the forward (alpha) recursion in log space over the target
with a blank between and around its labels; the gradient by the backward (beta) recursion.
Both recursions are vectorised over the batch and the extended-label positions: one numpy step
per time frame, never a Python loop per sample or label.

The gradient with respect to log_probs is PyTorch's: ``exp(log_probs) - posterior`` per frame
and class (the posterior of the class over all alignments).  It is the gradient with respect
to the logits when log_probs = log_softmax(logits) (the exp term then vanishes through the
log_softmax), which is how CTC is used; frames past an input's length get zero.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as np

from .. import _core
from .._saved_indices import saves_index_args
from ..autograd.function import Function
from ._conv_ops import _check_tensor

_wrap = _core.wrap_array

__all__ = ["ctc_loss"]


def _logsumexp(*arrays):
    top = np.maximum.reduce(arrays)
    safe = np.where(np.isfinite(top), top, 0.0)
    total = sum(np.exp(a - safe) for a in arrays)
    with np.errstate(divide="ignore"):
        return np.log(total) + safe


def _shifted(a, k):
    """a moved k positions along its last axis (k > 0: to higher positions), -inf filled."""
    out = np.full_like(a, -np.inf)
    if abs(k) < a.shape[-1]:
        if k > 0:
            out[..., k:] = a[..., :-k]
        else:
            out[..., :k] = a[..., -k:]
    return out


def _extended_labels(targets, target_lengths, blank):
    """(N, 2*S_max+1): blank, l1, blank, l2, ..., blank (positions past 2*S_n+1 are blank and
    never reached)."""
    n, s_max = targets.shape
    ext = np.full((n, 2 * s_max + 1), blank, dtype=np.int64)
    ext[:, 1::2] = targets
    positions = np.arange(2 * s_max + 1)
    return np.where(positions[None, :] < (2 * target_lengths[:, None] + 1), ext, blank)


def _gather_classes(lp_t, ext):
    """lp_t (N, C) at the extended labels: (N, L)."""
    return np.take_along_axis(lp_t, ext, 1)


def _alphas(lp, ext, input_lengths, target_lengths):
    """Log forward variables (T, N, L); each sample's frames past its length repeat its last."""
    T, n, _ = lp.shape
    L = ext.shape[1]
    alpha = np.full((T, n, L), -np.inf)
    first = _gather_classes(lp[0], ext)
    alpha[0, :, 0] = first[:, 0]
    if L > 1:
        has_label = target_lengths > 0
        alpha[0, has_label, 1] = first[has_label, 1]
    # A label may be reached from two positions back when it is not a blank and differs from
    # the label before it (otherwise the blank between them is required).
    skip = np.zeros((n, L), dtype=bool)
    skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
    skip[:, 0::2] = False                               # blanks never skip
    for t in range(1, T):
        prev = alpha[t - 1]
        one = _shifted(prev, 1)
        two = np.where(skip, _shifted(prev, 2), -np.inf)
        step = _logsumexp(prev, one, two) + _gather_classes(lp[t], ext)
        alpha[t] = np.where((t < input_lengths)[:, None], step, prev)
    return alpha, skip


def _betas(lp, ext, skip, input_lengths, target_lengths):
    """Log backward variables (T, N, L), including each frame's own log-probability."""
    T, n, _ = lp.shape
    L = ext.shape[1]
    beta = np.full((T, n, L), -np.inf)
    rows = np.arange(n)
    last = 2 * target_lengths                            # the final blank's position
    # skip[s + 2] says position s may jump to s + 2.
    skip_ahead = np.zeros_like(skip)
    skip_ahead[:, :-2] = skip[:, 2:]
    current = np.full((n, L), -np.inf)
    for t in range(T - 1, -1, -1):
        lp_ext = _gather_classes(lp[t], ext)
        one = _shifted(current, -1)
        two = np.where(skip_ahead, _shifted(current, -2), -np.inf)
        step = _logsumexp(current, one, two) + lp_ext
        start = np.full((n, L), -np.inf)                 # a sample's final frame
        start[rows, last] = lp_ext[rows, last]
        ends_on_label = target_lengths > 0
        start[rows[ends_on_label], last[ends_on_label] - 1] = \
            lp_ext[rows[ends_on_label], last[ends_on_label] - 1]
        current = np.where((t == input_lengths - 1)[:, None], start,
                           np.where((t < input_lengths - 1)[:, None], step, -np.inf))
        beta[t] = current
    return beta


def _ctc_forward(lp, targets, input_lengths, target_lengths, blank):
    ext = _extended_labels(targets, target_lengths, blank)
    alpha, skip = _alphas(lp, ext, input_lengths, target_lengths)
    rows = np.arange(lp.shape[1])
    final = alpha[np.maximum(input_lengths - 1, 0), rows]      # (N, L) at each last frame
    last = 2 * target_lengths
    end_blank = final[rows, last]
    end_label = np.where(target_lengths > 0, final[rows, np.maximum(last - 1, 0)], -np.inf)
    # An input of no frames has one alignment (probability 1) for the empty target and none
    # for any other; alpha's row 0 has already consumed frame 0, so it must not be read.
    empty = input_lengths == 0
    end_blank = np.where(empty, np.where(target_lengths == 0, 0.0, -np.inf), end_blank)
    end_label = np.where(empty, -np.inf, end_label)
    nll = -_logsumexp(end_blank, end_label)
    return nll, ext, alpha, skip


class _CtcLoss(Function):
    """Per-sample negative log-likelihoods (N,) of log_probs (T, N, C)."""

    @staticmethod
    def forward(ctx, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        lp = log_probs._array.astype(np.float64)
        nll, ext, alpha, skip = _ctc_forward(lp, targets, input_lengths, target_lengths, blank)
        ctx.state = (lp, ext, alpha, skip, nll, targets, input_lengths, target_lengths,
                     zero_infinity, log_probs._array.dtype)
        # (saved as PyTorch's _ctc_loss_backward saves it: an in-place write before backward is
        # refused, and a create_graph gradient depends on it)
        ctx.save_for_backward(log_probs)
        if zero_infinity:
            nll = np.where(np.isinf(nll), 0.0, nll)
        return _wrap(nll.astype(log_probs._array.dtype))

    @staticmethod
    def backward(ctx, grad):
        (lp, ext, alpha, skip, nll, targets, input_lengths, target_lengths, zero_infinity,
         dtype) = ctx.state
        T, n, C = lp.shape
        beta = _betas(lp, ext, skip, input_lengths, target_lengths)
        log_both = alpha + beta                                  # (T, N, L)
        # Sum alpha*beta over the positions of each class: per (t, n) shift by the max, one
        # batched matmul with the positions' one-hot classes, back to logs.
        top = log_both.max(2, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        one_hot = np.zeros((n, ext.shape[1], C))
        np.put_along_axis(one_hot, ext[:, :, None], 1.0, 2)
        summed = np.matmul(np.exp(log_both - top).transpose(1, 0, 2), one_hot)    # (N, T, C)
        with np.errstate(divide="ignore"):
            log_class = np.log(summed.transpose(1, 0, 2)) + top
        with np.errstate(invalid="ignore"):
            g = np.exp(lp) - np.exp(log_class + nll[None, :, None] - lp)
        g = np.where((np.arange(T)[:, None] < input_lengths[None, :])[:, :, None], g, 0.0)
        if zero_infinity:
            g = np.where(np.isinf(nll)[None, :, None], 0.0, g)
        g = g * grad._array.astype(np.float64)[None, :, None]
        # PyTorch's _ctc_loss_backward has no derivative: under create_graph its result is in the
        # graph and differentiating it raises (a constant here had made a double backward 0)
        from .._more_math import without_derivative
        log_probs, = ctx.saved_tensors
        return (without_derivative((log_probs, grad), g.astype(dtype),
                                   "derivative for aten::_ctc_loss_backward is not implemented",
                                   RuntimeError),
                None, None, None, None, None)


_CtcLoss._backward_cls.__name__ = "CtcLossBackward0"
_CtcLoss._backward_cls.__qualname__ = "CtcLossBackward0"


_OVERLOADS = "".join(
    f" * (Tensor log_probs, Tensor targets, {lengths} input_lengths, {lengths} target_lengths, "
    "int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = False)\n"
    for lengths in ("tuple of ints", "Tensor"))


def _int_list(value, name, position):
    """A sequence of lengths as PyTorch's int-list parser takes it: its first item decides
    whether the sequence is one (an int, or anything with __index__ such as a 0-d integer
    tensor); a later float is an unpacking error naming its position, never truncated."""
    out = []
    for item in value:
        if isinstance(item, (float, complex)) or not hasattr(item, "__index__"):
            raise TypeError(f"ctc_loss(): argument '{name}' failed to unpack the object at pos "
                            f"{position} with error \"type must be tuple of ints,but got "
                            f"{_type_name(item)}\"")
        out.append(item.__index__())
    return np.asarray(out, dtype=np.int64)


def _is_int_list(value) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    first = value[0] if len(value) else 0
    return not isinstance(first, (float, complex)) and hasattr(first, "__index__")


def _parse_lengths(input_lengths, target_lengths, blank, zero_infinity):
    """(input_lengths, target_lengths) as int64 arrays, as torch.ctc_loss's two overloads take
    them: both int sequences or both tensors, the tensors of an integral dtype.  A float length
    is refused, never truncated (10.5 must not become 10)."""
    if isinstance(input_lengths, _core.TensorBase) and isinstance(target_lengths,
                                                                  _core.TensorBase):
        _core.check_bool("ctc_loss", "zero_infinity", zero_infinity, 0, _OVERLOADS)
        for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
            if lengths.dtype.is_floating_point or lengths.dtype.is_complex or \
                    lengths._array.dtype == np.bool_:
                raise RuntimeError(f"{name} must be integral")
        return (np.asarray(input_lengths._array, dtype=np.int64).reshape(-1),
                np.asarray(target_lengths._array, dtype=np.int64).reshape(-1))
    if _is_int_list(input_lengths) and _is_int_list(target_lengths):
        _core.check_bool("ctc_loss", "zero_infinity", zero_infinity, 0, _OVERLOADS)
        return (_int_list(input_lengths, "input_lengths", 2),
                _int_list(target_lengths, "target_lengths", 3))
    got = ", ".join(["Tensor", "Tensor"] + [
        "Tensor" if isinstance(v, _core.TensorBase) else _type_name(v)
        for v in (input_lengths, target_lengths, blank)] + ["int", _type_name(zero_infinity)])
    raise TypeError(f"ctc_loss() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n{_OVERLOADS}")


def _check_lengths(lengths, name, most=None):
    """PyTorch's refusal of the first length below 0 (or above `most`), in sample order."""
    bad = (lengths < 0) if most is None else (lengths < 0) | (lengths > most)
    if bad.any():
        value = int(lengths[np.argmax(bad)])
        bound = "at least 0" if value < 0 else f"at most {most}"
        raise RuntimeError(f"Expected {name} to have value {bound}, but got value {value} "
                           f"(while checking arguments for ctc_loss_allocate_outputs)")


@saves_index_args("targets")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The CTC loss of log_probs (T, N, C) (or unbatched (T, C)) - log_softmax outputs - for
    targets (N, S) padded or 1-d concatenated (sum of target_lengths), with input_lengths and
    target_lengths per sample (tensors or sequences of ints).  reduction 'mean' divides each
    loss by its target length, then averages; 'sum'; 'none' gives the (N,) losses.
    zero_infinity replaces infinite losses (impossible alignments) and their gradients by 0."""
    _check_tensor(log_probs, "log_probs")
    _check_tensor(targets, "targets")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    # torch.ctc_loss's argument parser and its integral-lengths check come before the rest
    in_len, tgt_len = _parse_lengths(input_lengths, target_lengths, blank, zero_infinity)
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs to be 2-D (unbatched) or 3-D, but "
                           f"got {log_probs.dim()}-D")
    if not lp.is_floating_point() or lp._array.dtype.itemsize < 4:      # (float and double only)
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for '
                           f"'{_core.scalar_type_name_of(lp._array.dtype)}'")
    T, n, C = lp.shape
    # (unbatched, 1-d targets stay the concatenated form of one sample, 2-d ones a batch of one)
    tgt = np.asarray(targets._array).astype(np.int64)
    if not 1 <= tgt.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {tgt.ndim}-dimensional tensor "
                           f"for argument #2 'targets' (while checking arguments for "
                           f"ctc_loss_allocate_outputs)")
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if in_len.size != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tgt_len.size != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    # ATen's ctc_loss_allocate_outputs checks the lengths sample by sample: each target length,
    # then each input length (at least 0, then at most T); a negative length must not reach the
    # recursions, which would read it as an empty or shifted sequence.
    _check_lengths(tgt_len, "target_lengths")
    if tgt.ndim == 1:           # concatenated targets: split them into padded rows
        # (exactly their total: a label left over means the lengths do not describe them)
        if tgt.size != tgt_len.sum():
            raise RuntimeError(f"Expected tensor to have size {int(tgt_len.sum())} at "
                               f"dimension 0, but got size {tgt.size} for argument #2 'targets' "
                               f"(while checking arguments for ctc_loss_allocate_outputs)")
        offsets = np.concatenate([[0], np.cumsum(tgt_len)[:-1]]).astype(np.int64)
        within = np.arange(int(tgt_len.max(initial=0)))[None, :] < tgt_len[:, None]
        positions = offsets[:, None] + np.arange(within.shape[1])[None, :]
        tgt = np.where(within, tgt[np.where(within, positions, 0)] if tgt.size else blank,
                       blank)
    else:
        if tgt.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{tgt.shape[0]} for argument #2 'targets' (while checking "
                               f"arguments for ctc_loss_allocate_outputs)")
        longest = int(tgt_len.max(initial=0))
        if tgt.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension "
                               f"1, but got size {tgt.shape[1]} for argument #2 'targets' (while "
                               f"checking arguments for ctc_loss_allocate_outputs)")
        tgt = tgt[:, :longest] if longest else tgt[:, :0]
    _check_lengths(in_len, "input_lengths", T)
    # Padding past each target's length must not read a class outside the table.
    tgt = np.where(np.arange(tgt.shape[1])[None, :] < tgt_len[:, None], tgt, blank)
    # PyTorch's CPU kernel reads a label outside [0, C) out of bounds (an undefined result, a
    # device assert on CUDA); refuse it by name rather than index (or wrap, for a negative
    # label) numpy arrays with it.
    outside = (tgt < 0) | (tgt >= C)
    if outside.any():
        raise IndexError(f"ctc_loss(): target label {int(tgt[outside][0])} is out of bounds for "
                         f"log_probs with {C} classes")
    losses = _CtcLoss.apply(lp, tgt, in_len, tgt_len, int(blank), bool(zero_infinity))
    if reduction == "none":
        if unbatched:
            return losses.squeeze(0)
        # PyTorch zeroes infinite losses with a where() on its kernel's result, whose node the
        # losses show
        return _core._name_grad_fn(losses, "WhereBackward0") if zero_infinity else losses
    if reduction == "sum":
        return losses.sum()
    divisor = _wrap(np.maximum(tgt_len, 1).astype(lp._array.dtype))
    return (losses / divisor).mean()
