"""Tensor functions and methods that public tutorial scripts use and tapegrad lacked (issue 15).

`div(..., rounding_mode=)`, strides and storage offsets, `unique_consecutive`; each checked
against PyTorch 2.13.  Composed from recorded ops where a gradient flows, computed in numpy
where the result is an integer or index tensor (which never requires grad).

`register` (called from tapegrad/__init__.py) adds the functions to the tapegrad namespace and
the methods to Tensor; `div`/`divide` replace the compiled ones there, which take no
`rounding_mode`, and hand every call without one straight back to them.
"""
from __future__ import annotations

import numpy as np

from . import _core
from ._extra_ops import _check_tensor, _dim, _wrap, register_family

_core_div = _core.div
_ROUNDING_MODES = (None, "trunc", "floor")


def div(input, other, *, rounding_mode=None, out=None):
    """``input / other`` elementwise; ``rounding_mode='floor'`` rounds the quotient down,
    ``'trunc'`` toward zero (both keep integer dtypes and have zero gradient, as PyTorch's).
    """
    if rounding_mode is None:
        return _core_div(input, other) if out is None else _core_div(input, other, out=out)
    if rounding_mode not in _ROUNDING_MODES:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    floor = _core.floor_divide(input, other)
    if rounding_mode == "floor":
        result = floor
    elif floor.dtype.is_floating_point:
        result = _core.trunc(_core_div(input, other))
    else:
        # Integers never require grad: the magnitude's floor quotient with the quotient's sign.
        a, b = (x._array if isinstance(x, _core.TensorBase) else np.asarray(x) for x in (input, other))
        quotient = (np.abs(a) // np.abs(b)) * (np.sign(a) * np.sign(b))
        result = _wrap(np.asarray(quotient, dtype=floor._array.dtype))
    if out is not None:
        out.copy_(result)
        return out
    return result


def divide(input, other, *, rounding_mode=None, out=None):
    """Alias of :func:`div`."""
    return div(input, other, rounding_mode=rounding_mode, out=out)


def _div_method(self, other, *, rounding_mode=None):
    """``self / other``; ``rounding_mode`` as :func:`tapegrad.div`."""
    return div(self, other, rounding_mode=rounding_mode)


def _divide_method(self, other, *, rounding_mode=None):
    """Alias of ``Tensor.div``."""
    return div(self, other, rounding_mode=rounding_mode)


# -- memory layout -------------------------------------------------------------------------------

def stride(self, dim=None):
    """The step in elements between neighbours along each dim (a tuple), or along ``dim``."""
    steps = tuple(s // self._array.itemsize for s in self._array.strides)
    if dim is None:
        return steps
    return steps[_dim(dim, self.ndim)]


def storage_offset(self) -> int:
    """How many elements into its storage this tensor's first element lies."""
    from .tensor import _storage_and_geometry
    _, offset, _ = _storage_and_geometry(self._array)
    return offset // self._array.itemsize


# -- cross ---------------------------------------------------------------------------------------

def cross(input, other, dim=None, *, out=None):
    """The cross product of 3-vectors along ``dim``; without ``dim``, along the first dim of
    size 3 (deprecated in PyTorch, which warns), unlike ``linalg.cross``'s last dim."""
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                      "The default value of dim will change to agree with that of linalg.cross in "
                      "a future release.", UserWarning, stacklevel=2)
        sizes = list(input.shape)
        dim = sizes.index(3) if 3 in sizes else -1
    from .linalg import cross as linalg_cross
    return linalg_cross(input, other, dim=dim, out=out)


# -- mode ----------------------------------------------------------------------------------------

def _mode_index(row: np.ndarray) -> int:
    """Position in row of its most frequent value (the smallest among equally frequent ones),
    at that value's last occurrence, as PyTorch's CPU kernel answers."""
    values, counts = np.unique(row, return_counts=True)
    winner = values[np.argmax(counts)]
    return int(np.flatnonzero(row == winner)[-1])


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` and its index (named tuple ``values, indices``);
    the values are gathered by a recorded op, so the gradient reaches the chosen element."""
    _check_tensor(input, "mode")
    if input.ndim == 0:
        index = _wrap(np.zeros((), dtype=np.int64))
        return _core.return_types.mode((input.clone(), index))
    axis = _dim(dim, input.ndim)
    moved = np.moveaxis(input._array, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    picked = np.array([_mode_index(r) for r in rows], dtype=np.int64).reshape(moved.shape[:-1])
    index = _wrap(np.expand_dims(picked, axis))
    values = input.gather(axis, index)
    if not keepdim:
        values, index = values.squeeze(axis), index.squeeze(axis)
    return _core.return_types.mode((values, index))


# -- atleast_nd ----------------------------------------------------------------------------------

# How each of PyTorch's atleast_{1,2,3}d reshapes a tensor of fewer dims (a recorded view).
_ATLEAST_SHAPES = {
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1,) + s},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,), 2: lambda s: s + (1,)},
}


def _atleast(ndim: int, tensors):
    as_sequence = len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
    if as_sequence:
        tensors = tuple(tensors[0])
    results = []
    for t in tensors:
        _check_tensor(t, f"atleast_{ndim}d")
        grow = _ATLEAST_SHAPES[ndim].get(t.ndim)
        results.append(t.reshape(grow(tuple(t.shape))) if grow else t)
    return results[0] if len(results) == 1 and not as_sequence else tuple(results)


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dim (a 0-d tensor becomes shape (1,))."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each tensor viewed with at least two dims: (n,) becomes (1, n)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dims: (n,) becomes (1, n, 1), (m, n) (m, n, 1)."""
    return _atleast(3, tensors)


# -- dist ----------------------------------------------------------------------------------------

def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast, flattened): a 0-d tensor."""
    from .linalg import vector_norm
    return vector_norm(_core.sub(input, other), ord=p)


# -- unique_consecutive --------------------------------------------------------------------------

def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal neighbours to one element (over the flattened tensor, or of
    slices along ``dim``); optionally the run index of every element and each run's length."""
    _check_tensor(input, "unique_consecutive")
    arr = input._array
    if dim is None:
        flat = arr.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = arr.shape
    else:
        axis = _dim(dim, arr.ndim)
        moved = np.moveaxis(arr, axis, 0)
        starts = np.ones(moved.shape[0], dtype=bool)
        if moved.shape[0] > 1:
            starts[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        values = np.moveaxis(moved[starts], 0, axis)
        inverse_shape = (arr.shape[axis],)
    run_index = np.cumsum(starts) - 1
    outputs = [_wrap(np.ascontiguousarray(values))]
    if return_inverse:
        outputs.append(_wrap(run_index.reshape(inverse_shape).astype(np.int64)))
    if return_counts:
        outputs.append(_wrap(np.bincount(run_index, minlength=int(starts.sum())).astype(np.int64)))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# -- registration --------------------------------------------------------------------------------

FUNCTIONS = ("unique_consecutive", "cross", "mode", "atleast_1d", "atleast_2d", "atleast_3d", "dist")
METHODS = ("unique_consecutive", "cross", "mode", "dist")
RETURN_TYPES = {"mode": ("values", "indices")}


def register(namespace: dict, tensor_cls) -> None:
    """Add the functions to `namespace` (tapegrad's globals) and the methods to `tensor_cls`;
    `div`/`divide` (function and method) replace the compiled ones, adding `rounding_mode`."""
    register_family(namespace, tensor_cls, globals(), FUNCTIONS, METHODS, RETURN_TYPES)
    for name, method in (("stride", stride), ("storage_offset", storage_offset)):
        if name not in dir(tensor_cls):
            setattr(tensor_cls, name, method)
    namespace["div"] = div
    namespace["divide"] = divide
    tensor_cls.div = _div_method
    tensor_cls.divide = _divide_method
