"""The autograd.Functions behind cdist's (and pdist's) distances (loaded on first use).

PyTorch computes p = 2 distances with one matrix product when compute_mode asks for it or either
side has more than 25 rows: ||a||^2 - 2 a.b + ||b||^2, floored at 0, square-rooted.  Its values
round differently from the row-difference kernel (they are what k-means and k-NN scripts print),
and its node has its own derivative, which gives 0 where two rows coincide.
"""
from __future__ import annotations as _annotations

from .. import _core
from .._extra_functions import _torch_grad_fn_name
from ..autograd.function import Function


def euclidean_dist_values(x1, x2):
    """dist[..., i, j] = sqrt(max(0, |x1_i|^2 - 2 x1_i.x2_j + |x2_j|^2)) over (..., r, c) inputs,
    in PyTorch's steps (one product of the padded rows); nothing recorded."""
    import tapegrad as tg
    with tg.no_grad():
        n1 = x1.pow(2).sum(-1, keepdim=True)
        n2 = x2.pow(2).sum(-1, keepdim=True)
        left = tg.cat([x1.mul(-2), n1, tg.ones_like(n1)], -1)
        right = tg.cat([x2, tg.ones_like(n2), n2], -1)
        return left.matmul(right.mT).clamp_min_(0).sqrt_()


class EuclideanDist(Function):
    """euclidean_dist_values with PyTorch's derivative for it."""

    @staticmethod
    def forward(ctx, x1, x2):
        dist = euclidean_dist_values(x1, x2)
        ctx.save_for_backward(x1, x2, dist)
        return dist

    @staticmethod
    def backward(ctx, grad):
        x1, x2, dist = ctx.saved_tensors
        # d dist_ij / d x1_i = (x1_i - x2_j) / dist_ij: the subgradient 0 where dist_ij is 0
        ratio = (grad / dist).masked_fill(dist == 0, 0)
        g1 = x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2)
        g2 = x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1)
        return g1, g2


_torch_grad_fn_name(EuclideanDist, "EuclideanDistBackward0")


class RowTwoNorm(Function):
    """The 2-norms over the last dim of row differences (cdist's and pdist's row kernel), with
    their kernel's derivative grad * diff / dist, in that order: the norm's own derivative,
    diff * (grad / dist), rounds differently, so cdist(x, y).pow(2) gradients that are whole
    numbers in PyTorch (-24.) came out a unit in the last place off (-23.9999981)."""

    @staticmethod
    def forward(ctx, diff):
        dist = diff.norm(2, -1)
        # dist is saved only for its version: PyTorch's kernel derivative reads its output, so
        # an in-place change of the distances (d.pow_(2), C.mul_(scale)) before backward raises
        # "modified by an inplace operation" there, and must here too
        ctx.save_for_backward(diff, dist)
        return dist

    @staticmethod
    def backward(ctx, grad):
        diff, _ = ctx.saved_tensors
        # recomputed from diff, so a create_graph backward differentiates through it; where dist
        # is 0 diff is 0 too, and the safe denominator leaves the kernel's 0 there
        dist = diff.norm(2, -1, keepdim=True)
        return (grad.unsqueeze(-1) * diff) / dist.masked_fill(dist == 0, 1)


class KeepsOutput(Function):
    """The identity whose node saves its output: the last step of cdist's / pdist's composed
    p = 0 and p = inf distances, whose PyTorch kernel node saves its result, so that changing the
    distances in place before backward raises "modified by an inplace operation" as there."""

    @staticmethod
    def forward(ctx, dist):
        out = dist.clone()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors                       # (unpacking is what checks the saved version)
        return grad
