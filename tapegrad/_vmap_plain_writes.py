"""vmap's refusal of in-place writes into a plain tensor from batched values.

Inside vmap, a tensor the function captured (a global, a closure's, a freshly made
``torch.zeros(3)``) is not mapped over: one tensor cannot hold every sample's result, so PyTorch
refuses ``captured.index_add_(0, i, x)``, ``acc += x``, ``buf.copy_(x)`` when x is batched.  The
namespaces' wrappers (tapegrad/_vmap.py) see calls made through ``torch.*``; a plain tensor's own
method does not pass through them, and its Python body meeting a BatchedTensor failed with a
TypeError, after which vmap ran the function once per sample: each sample then wrote into the
same captured tensor (accumulating, or leaving the last sample's values), and every sample
returned the last state -- silently wrong results.

So before vmap answers a failed batched run with its per-sample loop, it runs the function
batched once more with the Tensor class's in-place methods guarded: a call on a plain self with a
BatchedTensor among its arguments raises PyTorch's error (an UnbatchedWriteError, which vmap
never answers with the loop).  Installing the guards rewrites ~170 class attributes (~1.5 ms),
so only that already slow path pays it; a batched run that succeeds never does.
"""
from __future__ import annotations

import contextlib

from . import _vmap

# PyTorch's wording names the op whose batching rule refused: binary arithmetic says
# "inplace arithmetic", ops with a rule of their own give their name, the rest go through
# its fallback, which names the aten op.  add_ is decomposed first and fails on the shape check.
_ARITHMETIC = {"sub_", "mul_", "div_", "true_divide_", "copy_", "masked_fill_", "__isub__",
               "__imul__", "__itruediv__"}
_OWN_RULE = {"fill_", "index_add_", "scatter_add_", "index_put_", "index_fill_"}
_SHAPE_CHECKED = {"add_", "__iadd__", "atan2_"}
# In-place operator methods; the named in-place methods are found by their trailing underscore.
_INPLACE_DUNDERS = ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                    "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                    "__irshift__")
# Trailing-underscore methods that do not write values from their arguments into self.
_NOT_WRITES = {"requires_grad_", "share_memory_", "retain_grad_", "rename_", "refine_names_"}

_guards = None          # TemporaryAttributes(Tensor), made on first use
_names: list = []       # the Tensor class's in-place method names, found once


def _batched_in(value) -> bool:
    if type(value) is _vmap.BatchedTensor:
        return True
    if isinstance(value, (list, tuple)):
        return any(_batched_in(v) for v in value)
    return False


def _physical_shape(x):
    return list(_vmap._peel(x)[0].shape) if type(x) is _vmap.BatchedTensor else list(x.shape)


def refusal(name, self, args):
    """PyTorch's error for in-place ``name`` on the plain ``self`` with a batched argument."""
    if name in _SHAPE_CHECKED and args and type(args[0]) is _vmap.BatchedTensor:
        import numpy as np
        try:
            shape = list(np.broadcast_shapes(tuple(self.shape), tuple(_physical_shape(args[0]))))
        except ValueError:
            shape = None
        if shape is not None:
            return _vmap.UnbatchedWriteError(f"output with shape {list(self.shape)} doesn't "
                                             f"match the broadcast shape {shape}")
    if name in _ARITHMETIC or name in _SHAPE_CHECKED:
        return _vmap.unbatched_write_error()
    return _vmap.unbatched_write_error(name if name in _OWN_RULE else f"aten::{name}")


def _guarded(name, method):
    def guarded(self, *args, **kwargs):
        if type(self) is not _vmap.BatchedTensor and (
                _batched_in(args) or _batched_in(tuple(kwargs.values()))):
            raise refusal(name, self, args)
        return method(self, *args, **kwargs)
    guarded.__name__ = guarded.__qualname__ = name
    guarded.__wrapped__ = method
    return guarded


def _inplace_names(cls):
    for name in dir(cls):
        if name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")
                                        and name not in _NOT_WRITES):
            if callable(getattr(cls, name, None)):
                yield name


_depth = 0      # nested vmaps' retries share one installation


@contextlib.contextmanager
def guarded():
    """The Tensor class's in-place methods guarded while the block runs."""
    global _depth
    with _vmap._lock:
        if _depth == 0:
            _guard_tensor_methods()
        _depth += 1
    try:
        yield
    finally:
        with _vmap._lock:
            _depth -= 1
            if _depth == 0:
                _unguard_tensor_methods()


def _guard_tensor_methods() -> None:
    global _guards
    from ._class_attributes import TemporaryAttributes
    from .tensor import Tensor
    if _guards is None:
        _guards = TemporaryAttributes(Tensor)
        _names.extend(_inplace_names(Tensor))
    for name in _names:
        _guards.set(name, _guarded(name, getattr(Tensor, name)))


def _unguard_tensor_methods() -> None:
    """Restore the Tensor class as it was."""
    _guards.restore()
