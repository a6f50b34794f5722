"""The autograd.Functions behind _scatter_ops' accumulating writes (loaded on first use).

`accumulate` (scatter_add, index_add, index_put with accumulate=True): numpy's np.add.at into a
copy of self, in index order as PyTorch's CPU kernel adds; its backward is the gradient itself
for self and the gradient read at the written positions for the values, both recorded ops (so
create_graph works).  `scatter_reduce_apply` follows PyTorch's derivative formulas for each
reduction; its backward is computed in numpy, or with recorded ops under create_graph (the
'prod' one through scatter_reduce itself, so derivatives of any order exist, as PyTorch's).
"""
from __future__ import annotations as _annotations

import numpy as np

from . import _core
from ._ops_shape import _add_at, _scatter_along
from .autograd.function import Function


def _wrap(arr):
    # asarray with order "C", not ascontiguousarray, which turns a 0-d result into shape (1,)
    return _core.wrap_array(np.asarray(arr, order="C"), False)


def _tensor_key(key):
    """key with its index arrays as tensors, to index a tensor (recorded) with it."""
    return tuple(_wrap(k) if isinstance(k, np.ndarray) else k for k in key)


def _sum_to(t, shape):
    """t summed over the dims broadcasting added or stretched to reach `shape` (recorded)."""
    shape = tuple(shape)
    lead = t.ndim - len(shape)
    if lead:
        t = t.sum(dim=tuple(range(lead)))
    stretched = tuple(d for d, n in enumerate(shape) if n == 1 and t.shape[d] != 1)
    if stretched:
        t = t.sum(dim=stretched, keepdim=True)
    return t


def _indexed_shape(arr: np.ndarray, key) -> tuple:
    """arr[key].shape without the gather: the broadcast shape of a key of integer arrays, one
    per dim (scatter_add's); arr[key].shape for any other key."""
    if (isinstance(key, tuple) and len(key) == arr.ndim
            and all(isinstance(k, np.ndarray) and k.dtype.kind in "iu" for k in key)):
        return np.broadcast_shapes(*[k.shape for k in key])
    return arr[key].shape


class _Accumulate(Function):
    """self with `values` added at `key` (repeated positions accumulate)."""

    @staticmethod
    def forward(ctx, x, values, key, along):
        ctx.key, ctx.values_shape = key, values.shape
        out = x._array.copy()
        # scatter_add's positions along a dim (`along`: (dim, index array)) go straight to its
        # compiled loop, which adds in the same order as np.add.at with the key
        if along is None or not _scatter_along(out, along[0], along[1], values._array, "sum"):
            _add_at(out, key, np.broadcast_to(values._array, _indexed_shape(out, key)))
        return _wrap(out)

    @staticmethod
    def backward(ctx, grad):
        return grad, _sum_to(grad[_tensor_key(ctx.key)], ctx.values_shape), None, None


def _named(name: str):
    cls = type(name.replace("Backward0", ""), (_Accumulate,), {})
    cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = name
    return cls


_ACCUMULATE_BY_NAME = {name: _named(name) for name in
                       ("ScatterAddBackward0", "IndexAddBackward0", "IndexPutBackward0")}


def accumulate(x, key, values, grad_fn_name: str, along=None):
    """x with values added at key (repeats accumulate); along = (dim, index array) when key
    names scatter_add's positions: index's entries along dim, each element's own elsewhere."""
    return _ACCUMULATE_BY_NAME[grad_fn_name].apply(x, values, key, along)


# -- scatter_reduce -------------------------------------------------------------------------------

_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
           "amin": np.minimum}


def _identity(reduce: str, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:            # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _reduce_values(x, key, src, reduce, include_self, along=None):
    """(result, mask of the positions written, count of the values each reduces) in numpy;
    along = (dim, index array) when key is scatter's, whose ufunc.at and count then run in C
    (_scatter_along: the same order and values, ~10x faster; amax / amin keep the target on a
    tie of -0 and +0, as PyTorch, where numpy's maximum.at, still the path of other dtypes and
    keys, takes the value)."""
    out = x.copy()
    count = np.zeros(x.shape, dtype=np.int64)
    if along is not None and _scatter_along(count, along[0], along[1], None, "count"):
        mask = count > 0                # (where a value lands: mask[key] = True, in one pass)
    else:
        along = None
        mask = np.zeros(x.shape, dtype=bool)
        mask[key] = True
        np.add.at(count, key, 1)
    if not include_self:
        out[mask] = _identity(reduce, x.dtype)
    ufunc = "sum" if reduce == "mean" else reduce
    if along is None or not _scatter_along(out, along[0], along[1], src, ufunc):
        with _core.IeeeResults():   # (inf + -inf, inf * 0, overflow: nan or inf, silently)
            _UFUNCS[reduce].at(out, key, src)
    if include_self:
        count += 1
    count = np.maximum(count, 1)        # positions nothing lands on keep self (count 1)
    if reduce == "mean":
        if out.dtype.kind in "fc":
            out = np.where(mask | include_self, out / count.astype(out.dtype), out)
        else:
            out = np.where(mask, np.floor_divide(out, count.astype(out.dtype)), out)
    return out.astype(x.dtype, copy=False), mask, count


class ScatterReduce(Function):
    @staticmethod
    def forward(ctx, x, src, key, reduce, include_self, along=None):
        out, mask, count = _reduce_values(x._array, key, src._array, reduce, include_self, along)
        ctx.key, ctx.reduce, ctx.include_self, ctx.along = key, reduce, include_self, along
        ctx.mask, ctx.count = mask, count
        result = _wrap(out)
        # amax, amin and prod's backward read the result: saved, as PyTorch saves it for every
        # reduce, version-checked, so a write into it before backward raises instead of giving
        # a wrong gradient
        ctx.save_for_backward(x, src, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        x_t, src_t, result = ctx.saved_tensors
        out = result._array
        if _core.is_grad_enabled():             # create_graph: the same formulas, recorded
            return _recorded_grads(ctx, grad, x_t, src_t, out) + (None, None, None, None)
        g = grad._array
        key, reduce, mask, count = ctx.key, ctx.reduce, ctx.mask, ctx.count
        x, src = x_t._array, src_t._array
        if reduce == "sum":
            gx, gs = g, g[key]
        elif reduce == "mean":
            scaled = g / count.astype(g.dtype)
            gx, gs = scaled, scaled[key]
        elif reduce in ("amax", "amin"):
            # The gradient is shared evenly by every value equal to the result.  As in
            # PyTorch, self's value counts among the ties even when include_self=False (its own
            # share is then dropped below).
            x_hits = x == out
            src_hits = src == out[key]
            ties = np.array(x_hits, dtype=g.dtype)     # (an array even when 0-d)
            np.add.at(ties, key, src_hits.astype(g.dtype))
            share = g / np.maximum(ties, 1)
            gx, gs = share * x_hits, share[key] * src_hits
        else:
            gx, gs = _prod_grads(g, x, src, out, key, ctx.include_self)
        if not ctx.include_self:
            gx = np.where(mask, 0, gx)
        return _wrap(np.asarray(gx, dtype=g.dtype)), _wrap(np.asarray(gs, dtype=g.dtype)), \
            None, None, None, None


def _recorded_grads(ctx, g, x, src, out):
    """(grad of self, grad of src) as recorded ops of g, x and src: the backward formulas above
    with their masks and counts as constants (sum, mean, amax, amin are linear in g), and prod's
    products of the other factors as scatter_reduce calls of their own."""
    key, reduce, mask, include_self = ctx.key, ctx.reduce, ctx.mask, ctx.include_self
    at = _tensor_key(key)
    const = lambda a: _wrap(np.asarray(a, dtype=g._array.dtype))    # noqa: E731
    if reduce == "sum":
        gx, gs = g, g[at]
    elif reduce == "mean":
        scaled = g / const(ctx.count)
        gx, gs = scaled, scaled[at]
    elif reduce in ("amax", "amin"):
        xa, sa = x._array, src._array
        x_hits, src_hits = xa == out, sa == out[key]
        ties = np.array(x_hits, dtype=g._array.dtype)     # (an array even when 0-d)
        np.add.at(ties, key, src_hits)
        share = g / const(np.maximum(ties, 1))
        gx, gs = share * const(x_hits), share[at] * const(src_hits)
    else:
        xa, sa = x._array, src._array
        masked_x = x.masked_fill(_wrap(xa == 0), 1)
        gx = g * ScatterReduce.apply(masked_x, src, key, "prod", include_self, ctx.along) / masked_x
        src_zero = sa == 0
        zeros_at = np.zeros(xa.shape, dtype=np.int64)
        np.add.at(zeros_at, key, src_zero.astype(np.int64))
        single_zero = src_zero & (zeros_at[key] == 1)
        result = ScatterReduce.apply(x, src, key, "prod", include_self, ctx.along)
        gs = (g * result)[at] / src.masked_fill(_wrap(src_zero), 1)
        if single_zero.any():
            others = ScatterReduce.apply(x, src.masked_fill(_wrap(single_zero), 1), key, "prod",
                                         include_self, ctx.along)
            gs = _core.TORCH_FUNCTIONS["where"](_wrap(single_zero), (g * others)[at], gs)
    if not include_self:
        gx = gx * const(~mask)
    return gx, gs


def _prod_grads(g, x, src, out, key, include_self):
    """d prod / d each factor = the product of the other factors, computed without dividing by
    a zero factor."""
    x_nonzero = np.where(x == 0, 1, x)
    others_of_x, _, _ = _reduce_values(x_nonzero, key, src, "prod", include_self)
    gx = g * others_of_x / x_nonzero
    src_zero = src == 0
    zeros_at = np.zeros(x.shape, dtype=np.int64)
    np.add.at(zeros_at, key, src_zero.astype(np.int64))
    single_zero = src_zero & (zeros_at[key] == 1)
    gs = (g * out)[key] / np.where(src_zero, 1, src)
    if single_zero.any():
        src_unzeroed = np.where(single_zero, 1, src)
        others_of_src, _, _ = _reduce_values(x, key, src_unzeroed, "prod", include_self)
        gs = np.where(single_zero, (g * others_of_src)[key], gs)
    return gx, gs


ScatterReduce._backward_cls.__name__ = "ScatterReduceBackward0"
ScatterReduce._backward_cls.__qualname__ = "ScatterReduceBackward0"


class IndexReduce(ScatterReduce):
    """index_reduce: the same reduction and derivatives, under PyTorch's name for its node."""


IndexReduce._backward_cls.__name__ = IndexReduce._backward_cls.__qualname__ = \
    "IndexReduceBackward0"


def scatter_reduce_apply(x, key, src, reduce, include_self, index_reduce=False, along=None):
    return (IndexReduce if index_reduce else ScatterReduce).apply(x, src, key, reduce,
                                                                   include_self, along)


class _NoDerivative(Function):
    """Passes a computed value through, recorded, and raises if a gradient reaches it (for
    ops PyTorch records but has no derivative for)."""

    @staticmethod
    def forward(ctx, value, op_name, *inputs):
        ctx.op_name = op_name
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(f"derivative for {ctx.op_name} is not implemented")


_NoDerivative._backward_cls.__name__ = _NoDerivative._backward_cls.__qualname__ = "ScatterBackward0"


def no_derivative(value, self, src, op_name: str):
    inputs = [t for t in (self, src) if isinstance(t, _core.TensorBase)]
    return _NoDerivative.apply(value, op_name, *inputs)
