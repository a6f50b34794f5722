"""nn.AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"):
frequent classes (the shortlist) are scored by a head layer, rarer ones in clusters, each cluster
one head entry whose probability is shared out by a smaller tail network."""
from __future__ import annotations as _annotations

from collections import namedtuple

import tapegrad as _tg
from ... import creation
from ...tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` classes split at ``cutoffs``: classes below
    ``cutoffs[0]`` are scored by ``head`` directly; cluster ``i`` (classes ``cutoffs[i]`` up to
    the next cutoff) gets one head entry and a tail ``Linear(in, in // div_value**(i+1)) ->
    Linear(.., cluster size)``.

    ``forward(input, target)`` returns ``(output, loss)``: each row's log-probability of its
    target and their negated mean.  ``log_prob(input)`` gives the full (N, n_classes)
    log-probabilities; ``predict(input)`` the most likely class.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self) -> None:
        """Draw the head's and the tails' weights afresh (each Linear's own initialisation)."""
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def _check_shapes(self, input: Tensor, target: Tensor) -> None:
        if target.dim() == 1:
            if input.size(0) != target.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs "
                                   f"with size {input.size()}")
        elif target.dim() == 0:
            if input.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs "
                                   f"with size {input.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        self._check_shapes(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        batch = target.size(0)
        # Each row's entry in the head: its class if in the shortlist, else its cluster's.
        head_index = target.clone()
        in_tail = creation.zeros(batch, dtype=input.dtype)
        rows_seen = int(((target >= 0) & (target < self.shortlist_size)).sum())
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= low) & (target < high)
            rows = in_cluster.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            head_index[rows] = self.shortlist_size + i
            logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = logprob.gather(1, (target[in_cluster] - low).unsqueeze(1)).squeeze(1)
            in_tail = in_tail.index_add(0, rows, local)
            rows_seen += rows.numel()
        if rows_seen != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, {target.max().item()}] "
                               "were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = in_tail + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _tg.cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class, (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: the head's argmax when it is a shortlist class,
        else the argmax of the full log-probabilities."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        if bool(outside.all()):
            return self._full_log_prob(input, head_output).argmax(dim=1)
        output[outside] = self._full_log_prob(input[outside], head_output[outside]).argmax(dim=1)
        return output
