"""PyTorch's fused weighted tap sums (acc = x_0 * w_0, then acc = fma(x_k, w_k, acc)) of float32
tensors, each as one node: interpolate's separable linear and bicubic passes (fused_tap_sum),
its channels-last bilinear kernel (corner_sum) and grid_sample's 2-d bilinear taps
(GridTapSum), where PyTorch's build fuses multiply-adds.

Composed from recorded ops, each fused step took four float64 passes (widen, multiply, add,
narrow) forward and as many backward, and every pass a fresh array: a (4, 16, 32, 32) ->
(64, 64) bilinear resize ran 4x slower than with a plain sum.  Here the forward is the C fused
multiply-add kernel (fmaf, rounded once as PyTorch's), reading weights and gathered rows in
place; the gradient of each tap by its values is g * w_k in float32 (the composition's bits: the
product of two float32 values is exact in float64).  KernelFunctions, so tapegrad.compile
replays their kernels, and their create_graph backward is the same formula in ops.
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from ..autograd.function import KernelFunction
from ._conv_ops import _wrap


def _quiet(kernel):
    """A kernel run without numpy's floating-point warnings: inf * 0 is NaN silently, as in
    PyTorch's kernels."""
    def run(*args):
        with np.errstate(all="ignore"):
            return kernel(*args)
    return run


class FusedTapSum(KernelFunction):
    """fused_tap_sum's node: arguments (weights, x_0, x_1, ...), weights a tuple of float32
    arrays that broadcast against the x_k (all float32, of the output's shape), each over one
    run of dims (a weight per row or per column)."""

    @staticmethod
    @_quiet
    def kernel_forward(weights, *xs):
        acc = np.multiply(xs[0], weights[0])        # (a new C-contiguous array: written in place)
        for x, w in zip(xs[1:], weights[1:]):
            x = np.ascontiguousarray(x)
            if _core.fused_multiply_add_broadcast(x, w, acc, acc) is None:
                # (a weight broadcasting over more than one run of dims: not one of interpolate's;
                # rounded once all the same, the product of two float32 values being exact in
                # float64)
                acc = (x.astype(np.float64) * w + acc).astype(np.float32)
        return acc, weights

    @staticmethod
    @_quiet
    def kernel_backward(weights, needs, grads):
        g = grads[0]
        if g is None:
            return (None,) * len(needs)
        return (None,) + tuple(np.multiply(g, w) if need else None
                               for w, need in zip(weights, needs[1:]))

    @staticmethod
    def graph_backward(ctx, saved, g):
        weights = ctx.params[0]
        return (None,) + tuple(g * _wrap(w) if need else None
                               for w, need in zip(weights, ctx.needs_input_grad[1:]))


def fused_tap_sum(terms):
    """sum of x_k * w_k over terms [(x_k, w_k)], x_k float32 tensors of one shape and w_k
    constant float32 arrays broadcasting against it, rounded as PyTorch's fused kernels:
    acc = x_0 * w_0, then acc = fma(x_k, w_k, acc) in the order given."""
    weights = tuple(np.ascontiguousarray(w, dtype=np.float32) for _, w in terms)
    return FusedTapSum.apply(weights, *(x for x, _ in terms))


class CornerSum(KernelFunction):
    """corner_sum's node: arguments (terms, col_0, col_1), terms a tuple of (j, rows, w) in the
    order of the sum: the tap col_j[:, :, rows] (rows int64, one per output row) weighted by w
    (output rows x columns, float32); col_j float32 (N, C, H, W_out).  The backward scatters
    g * w (rounded) back onto the rows each tap read, taps in order and rows in order, as
    index_add does (its create_graph form)."""

    @staticmethod
    @_quiet
    def kernel_forward(terms, *cols):
        n, c, h, width = cols[0].shape
        src = [np.ascontiguousarray(col).reshape(n * c, h, width) for col in cols]
        out_rows = len(terms[0][1])
        acc = np.empty((n * c, out_rows, width), np.float32)
        for k, (j, rows, w) in enumerate(terms):
            if _core.gathered_rows_fma(src[j], rows, w, acc, k == 0) is None:
                raise TypeError("corner_sum: operands of another layout or dtype")
        # (the row count spelled out: an empty batch leaves -1 undetermined)
        return acc.reshape(n, c, out_rows, width), (terms, cols[0].shape)

    @staticmethod
    @_quiet
    def kernel_backward(state, needs, grads):
        terms, (n, c, h, width) = state
        g = grads[0]
        if g is None:
            return (None,) * len(needs)
        g = np.ascontiguousarray(g, dtype=np.float32).reshape(n * c, len(terms[0][1]), width)
        out = [None, None]
        for j, rows, w in terms:
            if needs[1 + j]:
                if out[j] is None:
                    out[j] = np.zeros((n * c, h, width), np.float32)
                if _core.scattered_rows_product(g, rows, w, out[j]) is None:
                    raise TypeError("corner_sum: operands of another layout or dtype")
        return (None,) + tuple(None if o is None else o.reshape(n, c, h, width) for o in out)

    @staticmethod
    def graph_backward(ctx, saved, g):
        terms, shape = ctx.kernel_state
        from .. import zeros
        grads = [None, None]
        for j, rows, w in terms:
            if ctx.needs_input_grad[1 + j]:
                if grads[j] is None:
                    grads[j] = zeros(shape, dtype=g.dtype)
                grads[j] = grads[j].index_add(2, _wrap(rows), g * _wrap(w))
        return (None,) + tuple(grads)


def corner_sum(cols, terms):
    """The channels-last bilinear sum of PyTorch's fused kernel: acc = col_j0[:, :, rows_0] *
    w_0, then acc = fma(col_jk[:, :, rows_k], w_k, acc) over terms [(j, rows, w)] in order,
    cols the two float32 (N, C, H, W_out) column gathers."""
    terms = tuple((j, np.ascontiguousarray(rows, dtype=np.int64),
                   np.ascontiguousarray(w, dtype=np.float32)) for j, rows, w in terms)
    return CornerSum.apply(terms, *cols)


class GridTapSum(KernelFunction):
    """grid_sample's 2-d bilinear sum over its four taps (dim 2) of values (N, C, 4, Q) times
    weights w (N, 1, 4, Q), both float32 and w a function of the grid: values_0 * w_0, then
    fma(values_k, w_k, acc), as PyTorch's kernel.  The gradient by the values is g * w_k
    (float32, the composition's bits); by w_k, the sum over the channels of g * values_k taken
    in float64 (the products are exact there) and rounded once (PyTorch's kernel sums in
    float32: its last bits differ either way, as the composition's did)."""

    saved_args = (0, 1)

    @staticmethod
    @_quiet
    def kernel_forward(values, w):
        acc = np.multiply(values[:, :, 0], w[:, :, 0])
        for k in range(1, values.shape[2]):
            x = np.ascontiguousarray(values[:, :, k])
            b = np.ascontiguousarray(np.broadcast_to(w[:, :, k], x.shape))
            if _core.fused_multiply_add(x, b, acc, acc) is None:
                raise TypeError("grid tap sum: operands of another layout or dtype")
        return acc, (values, w)

    @staticmethod
    @_quiet
    def kernel_backward(state, needs, grads):
        values, w = state
        g = grads[0]
        if g is None:
            return None, None
        g = g[:, :, None]
        grad_values = np.multiply(g, w) if needs[0] else None
        grad_w = None
        if needs[1]:
            grad_w = np.add.reduce(g.astype(np.float64) * values, axis=1,
                                   keepdims=True).astype(np.float32)
        return grad_values, grad_w

    @staticmethod
    def graph_backward(ctx, saved, g):
        values, w = saved
        g = g.unsqueeze(2)
        grad_values = g * w if ctx.needs_input_grad[0] else None
        grad_w = None
        if ctx.needs_input_grad[1]:
            grad_w = (g.double() * values.double()).sum(1, keepdim=True).float()
        return grad_values, grad_w
