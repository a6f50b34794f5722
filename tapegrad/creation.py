"""Tensor creation functions (tensor, zeros, ones, randn, arange, ...) and the seeded generator."""
from __future__ import annotations

import warnings

import numpy as np

from . import _core
from .tensor import Tensor

_DEFAULT_FLOAT = np.dtype(np.float32)


def _np_dtype(dtype):
    return None if dtype is None else _core.np_dtype_of(dtype)


def _make(arr: np.ndarray, requires_grad: bool) -> Tensor:
    return _core.wrap_array(arr, requires_grad)


def _size_args(size) -> tuple:
    """zeros(2, 3), zeros((2, 3)), zeros([2, 3]) and zeros(t.shape) all mean shape (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__} in {size!r}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _infer_dtype(arr: np.ndarray):
    """PyTorch's inference for Python data: floats -> float32, ints -> int64, bools -> bool."""
    kind = arr.dtype.kind
    if kind == "f":
        return _DEFAULT_FLOAT
    if kind in "iu":
        return np.dtype(np.int64)
    if kind == "b":
        return np.dtype(np.bool_)
    raise TypeError(f"Could not infer dtype of {arr.dtype}")


def tensor(data, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data` (nested lists, scalars, arrays or tensors)."""
    if isinstance(data, _core.TensorBase):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        arr = np.array(data._array, copy=True)
    elif isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
    else:
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"expected a rectangular nested sequence of numbers: {e}") from None
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
        if dtype is None:       # with an explicit dtype, convert once (no float32 rounding first)
            arr = arr.astype(_infer_dtype(arr), copy=False)
    target = _np_dtype(dtype)
    if target is not None:
        arr = arr.astype(target, copy=False)
    elif arr.dtype.num not in (np.dtype(d).num for d in (np.float16, np.float32, np.float64, np.uint8,
                                                           np.int8, np.int16, np.int32, np.int64,
                                                           np.bool_)):
        raise TypeError(f"can't convert np.ndarray of type {arr.dtype}; supported: float16, "
                        f"float32, float64, uint8, int8, int16, int32, int64 and bool")
    if requires_grad and arr.dtype.kind != "f":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return _make(arr, requires_grad)


def as_tensor(data, dtype=None) -> Tensor:
    """Like tensor(), but shares memory with a numpy array or tensor when no conversion is needed."""
    if isinstance(data, _core.TensorBase) and dtype is None:
        return data
    if isinstance(data, np.ndarray) and (dtype is None or _np_dtype(dtype) == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with numpy array `array`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _core.np_dtype_of(array.dtype)
    return _make(array, False)


def _filled(size, value, dtype, requires_grad) -> Tensor:
    shape = _size_args(size)
    dt = _np_dtype(dtype) or _DEFAULT_FLOAT
    if requires_grad and dt.kind != "f":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return _make(np.full(shape, value, dtype=dt), requires_grad)


def zeros(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    return _filled(size, 0, dtype, requires_grad)


def ones(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    return _filled(size, 1, dtype, requires_grad)


def full(size, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    if dtype is None:
        dtype = (np.bool_ if isinstance(fill_value, bool) else
                 np.int64 if isinstance(fill_value, int) else _DEFAULT_FLOAT)
    return _filled((size,) if not isinstance(size, (tuple, list)) else (tuple(size),),
                   fill_value, dtype, requires_grad)


def empty(*size, dtype=None, requires_grad: bool = False) -> Tensor:
    shape = _size_args(size)
    return _make(np.empty(shape, dtype=_np_dtype(dtype) or _DEFAULT_FLOAT), requires_grad)


def zeros_like(input: Tensor, dtype=None, requires_grad: bool = False) -> Tensor:
    return _filled(input.shape, 0, dtype or input.dtype, requires_grad)


def ones_like(input: Tensor, dtype=None, requires_grad: bool = False) -> Tensor:
    return _filled(input.shape, 1, dtype or input.dtype, requires_grad)


def full_like(input: Tensor, fill_value, dtype=None, requires_grad: bool = False) -> Tensor:
    return _filled(input.shape, fill_value, dtype or input.dtype, requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False) -> Tensor:
    """Values from start (default 0) up to but excluding end, every step; int64 for ints."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if is_int else _DEFAULT_FLOAT
    if (end - start) * step < 0:
        raise RuntimeError(f"upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    # Computed in float64 (or int64) and cast, as PyTorch does, so float32 ranges match its values.
    values = np.arange(start, end, step, dtype=np.float64 if np.dtype(_np_dtype(dtype)).kind == "f"
                       else np.int64)
    return _make(values.astype(_np_dtype(dtype)), requires_grad)


# -- random ----------------------------------------------------------------------------------------

_generator = np.random.default_rng()


def manual_seed(seed: int):
    """Seed the global generator (tapegrad's streams differ from PyTorch's; seeding repeats them)."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    return _generator


def randn(*size, dtype=None, requires_grad: bool = False, generator=None) -> Tensor:
    """Samples from the standard normal distribution."""
    gen = generator or _generator
    dt = _np_dtype(dtype) or _DEFAULT_FLOAT
    return _make(gen.standard_normal(_size_args(size)).astype(dt), requires_grad)


def rand(*size, dtype=None, requires_grad: bool = False, generator=None) -> Tensor:
    """Samples from the uniform distribution on [0, 1)."""
    gen = generator or _generator
    dt = _np_dtype(dtype) or _DEFAULT_FLOAT
    return _make(gen.random(_size_args(size)).astype(dt), requires_grad)
