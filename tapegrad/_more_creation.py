"""Creation functions PyTorch scripts still call (issue 15): torch.range (deprecated, end
inclusive), asarray (sharing memory where it can, with PyTorch's copy= rules), frombuffer,
empty_strided / Tensor.new_empty_strided, the spectral windows (hann, hamming, blackman,
bartlett, kaiser), unravel_index, typename and newaxis, plus the legacy Tensor.new.

Memory sharing: a numpy array or a tensor given to asarray is kept (no copy) when its dtype is
the one asked for; frombuffer views the buffer's bytes.  Windows are computed in float64 and
cast, so float32 results are the correctly rounded values (PyTorch computes in the target dtype:
they can differ in the last bit).
"""
from __future__ import annotations as _annotations

import collections.abc

from tapegrad._core import type_name as _type_name
import math
import os
import warnings

import numpy as np

from . import _core
from ._device import check_unpinned
from ._layout import sparse_factory_layout
from ._uninitialised import uninitialised
from ._class_members import has_member
from ._extra_ops import _check_tensor, _wrap
from .storage import buffer_element_count
from ._torch_names import torch_module_name

TensorBase = _core.TensorBase

newaxis = None


from .creation import _np_dtype


def _default_dtype():
    from . import get_default_dtype
    return get_default_dtype()


def _finish(t, requires_grad: bool):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _check_cpu(device) -> None:
    if device is not None:
        from ._device import as_device
        as_device(device)       # raises PyTorch's error for an unavailable backend


# -- range ---------------------------------------------------------------------------------------

def torch_range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
          requires_grad=False):
    """The values start, start + step, ... up to and including end (PyTorch's deprecated
    torch.range, which warns; arange excludes end).  Default dtype: the default float dtype."""
    sparse_factory_layout(layout, "range", "range.out")
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    _check_cpu(device)
    for position, (name, v) in enumerate((("start", start), ("end", end), ("step", step)), 1):
        if isinstance(v, TensorBase) and v.ndim:        # (its Number parser takes 0-d only)
            raise TypeError(f"range(): argument '{name}' (position {position}) must be Number, "
                            f"not Tensor")
    start, end, step = (float(v.item()) if isinstance(v, TensorBase) else v
                        for v in (start, end, step))
    np_dt = _np_dtype(dtype, "range") or _default_dtype().np_dtype
    if np_dt.kind in "iu":
        # ATen counts and steps in int64 for an integer dtype: range(0, 5, 1.5, dtype=int64) is
        # [0, 1, 2, 3, 4, 5] (its values from the float step had been [0, 1, 3, 4])
        from .creation import _truncated_to_int64
        first, last, stride = _truncated_to_int64(start, end, step)
        if stride == 0:
            raise RuntimeError("step must be nonzero")     # (PyTorch divides by it: SIGFPE)
    elif step == 0:
        raise RuntimeError("step must be nonzero")
    elif not (math.isfinite(start) and math.isfinite(end)):
        from .creation import _bound_text
        raise RuntimeError(f"unsupported range: {_bound_text(start)} -> {_bound_text(end)}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if np_dt.kind in "iu":
        count = abs(last - first) // abs(stride) + 1
        values = (first + np.arange(count, dtype=np.int64) * stride).astype(np_dt)
    else:
        count = int(math.floor((end - start) / step)) + 1
        values = (start + np.arange(count, dtype=np.float64) * step).astype(np_dt)
    return _finish(_wrap(values), requires_grad)


torch_range.__name__ = torch_range.__qualname__ = "range"


# -- asarray, frombuffer -------------------------------------------------------------------------

def _alias_error(source_dt, target_dt):
    return ValueError(f"can't alias tensor with dtype "
                      f"'{_core.scalar_type_name_of(np.dtype(source_dt))}' into dtype "
                      f"'{_core.scalar_type_name_of(np.dtype(target_dt))}'.")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """obj as a tensor, sharing memory where it can: a tensor of the asked dtype is returned
    itself, a numpy array is viewed (from_numpy), a buffer (bytes, bytearray, array.array) is
    read as the default float dtype unless dtype says otherwise; sequences and scalars are
    converted (copied).  copy=True always copies; copy=False raises where sharing is
    impossible.  requires_grad not given keeps a tensor's own (and its graph)."""
    _check_cpu(device)
    target = _np_dtype(dtype, "asarray")
    if isinstance(obj, TensorBase):
        return _tensor_as_tensor(obj, dtype, target, copy, requires_grad)
    requires_grad = bool(requires_grad)
    if isinstance(obj, np.ndarray):
        if target is not None and obj.dtype != target:
            if copy is False:
                raise _alias_error(obj.dtype, target)
            obj = obj.astype(target)
        elif copy:
            obj = obj.copy()
        from .creation import from_numpy
        return _finish(from_numpy(obj), requires_grad)
    if _is_buffer(obj) and not isinstance(obj, (np.generic,)):
        result = frombuffer(obj, dtype=dtype or _default_dtype())
        return _finish(result.clone() if copy else result, requires_grad)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    from .creation import tensor
    return tensor(obj, dtype=dtype, requires_grad=requires_grad)


def _tensor_as_tensor(obj, dtype, target, copy, requires_grad):
    """asarray of a tensor: itself, a clone or a conversion (recorded).  requires_grad=False
    cuts the result from the graph as PyTorch does: a detached alias, or, when the result is
    obj itself and a leaf, obj with requires_grad switched off."""
    if target is None or obj._array.dtype == target:
        result = obj.clone() if copy else obj
    elif copy is False:
        raise _alias_error(obj._array.dtype, target)
    else:
        result = obj.to(dtype)
    if requires_grad is None:
        if result is obj and obj.requires_grad and obj.is_leaf:
            _core.torch_warn("torch.asarray: unspecified requires_grad now defaults to "
                             "obj.requires_grad instead of False. Pass requires_grad=False "
                             "explicitly to get the old behavior and silence this warning.",
                             "torch/csrc/utils/tensor_new.cpp:1737")
        return result
    if requires_grad:
        return result if result.requires_grad else _finish(result, True)
    if not result.requires_grad:
        return result
    if result is obj and obj.is_leaf:
        return obj.requires_grad_(False)
    return result.detach()


def _is_buffer(obj) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


_FROMBUFFER_ERRORS = {
    "offset": "offset ({offset} bytes) must be non-negative and no greater than buffer length "
              "({length} bytes) minus 1",
    "multiple": "buffer length ({rest} bytes) after offset ({offset} bytes) must be a multiple "
                "of element size ({itemsize})",
    "size": "requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) "
            "must not be greater than actual buffer length ({length} bytes)",
}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor viewing the bytes of a Python buffer (bytearray, array.array, mmap, ...)
    from byte `offset`, `count` elements of `dtype` (-1: all that fit).  Writes through the
    tensor reach the buffer; a read-only buffer (bytes) gives PyTorch's warning."""
    if not _is_buffer(buffer):
        raise ValueError("object does not implement Python buffer protocol.")
    view = memoryview(buffer).cast("B")
    length = view.nbytes
    np_dt = dtype.np_dtype
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    count = buffer_element_count(length, np_dt.itemsize, offset, count, _FROMBUFFER_ERRORS,
                                 offset_may_reach_end=False)
    if view.readonly:
        _core.torch_warn("The given buffer is not writable, and PyTorch does not support "
                         "non-writable tensors. This means you can write to the underlying "
                         "(supposedly non-writable) buffer using the tensor. You may want to "
                         "copy the buffer to protect its data or make it writable before "
                         "converting it to a tensor. This type of warning will be suppressed for "
                         "the rest of this program.", "torch/csrc/utils/tensor_new.cpp:1556")
    array = np.frombuffer(view, dtype=np_dt, count=count, offset=offset)
    if not array.flags.writeable:
        # numpy refuses to write into a read-only buffer; tapegrad, as PyTorch, shares it anyway
        # (hence the warning above), so the tensor holds a private writable copy instead
        array = array.copy()
    from .creation import from_numpy
    return _finish(from_numpy(array), requires_grad)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """A 1-D tensor of `size` elements of `dtype` over a memory map of `filename`: with `shared`,
    writes reach the file (created or extended to fit when needed); otherwise the map is private
    (copy on write) and the file must already hold the `size` elements."""
    sparse_factory_layout(layout, "from_file", "from_file")
    _check_cpu(device)
    np_dt = _np_dtype(dtype, "from_file") or _default_dtype().np_dtype
    filename = os.fspath(filename)
    size = int(size)
    if size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {size}: [{size}]")
    needed = size * np_dt.itemsize
    if shared:
        try:
            with open(filename, "ab"):      # (created when missing, left as it is otherwise)
                pass
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-write mode: "
                               f"{e.strerror} ({e.errno})") from None
        if os.path.getsize(filename) < needed:
            os.truncate(filename, needed)   # (PyTorch grows a shared file to the mapping's size)
    else:
        try:
            length = os.path.getsize(filename)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: "
                               f"{e.strerror} ({e.errno})") from None
        if length < needed:
            raise RuntimeError(f"file <{filename}> size <{length}> is smaller than the required "
                               f"mapping size <{needed}>")
    if size == 0:
        array = np.empty(0, dtype=np_dt)
    else:
        array = np.memmap(filename, dtype=np_dt, mode="r+" if shared else "c", shape=(size,))
    from .creation import from_numpy
    return _finish(from_numpy(array), requires_grad)


# -- strided allocation --------------------------------------------------------------------------

def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor of `size` whose elements lie `stride` apart in a new storage
    (as_strided over a fresh 1-D allocation just large enough)."""
    sparse_factory_layout(layout, "empty_strided", "empty_strided")
    _check_cpu(device)
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    np_dt = _np_dtype(dtype, "empty_strided") or _default_dtype().np_dtype
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(size)}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    storage = _wrap(uninitialised(extent, np_dt))
    result = storage.as_strided(size, stride) if size else storage.reshape(())
    if requires_grad:
        result = result.detach().requires_grad_(True)
    return result


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                       requires_grad=False, pin_memory=False):
    """Tensor.new_empty_strided: empty_strided with this tensor's dtype unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device,
                         requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of logical `size` whose memory order is `physical_layout` (the
    dims from outermost to innermost): empty((size[p] for p in layout)).permute(inverse)."""
    sparse_factory_layout(layout, "empty_permuted", "as_strided")
    _check_cpu(device)
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    if sorted(order) != list(range(len(size))):
        raise RuntimeError("Duplicate dim not allowed")
    np_dt = _np_dtype(dtype, "empty_permuted") or _default_dtype().np_dtype
    physical = _wrap(uninitialised(tuple(size[d] for d in order), np_dt))
    result = physical.permute(tuple(np.argsort(order).tolist()))    # (a tuple: 0-d has none)
    if requires_grad:
        result = result.detach().requires_grad_(True)
    return result


# -- windows -------------------------------------------------------------------------------------

def _window(name: str, window_length, periodic, dtype, requires_grad, values_of, layout=None):
    """A window of window_length points: values_of(arange(N) in the window's dtype, N) with N
    one more for a periodic window (whose last point is dropped).  The formulas are PyTorch's,
    op for op in the window's dtype, so float32 and float16 windows round as its do."""
    from .creation import _count_arg, arange, ones
    window_length = _count_arg(window_length, name, "window_length", 1)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    _np_dtype(dtype, name)                              # PyTorch's TypeError for a non-dtype
    dt = dtype or _default_dtype()
    if not (dt.is_floating_point or dt.is_complex):     # (arange refuses complex, as PyTorch's)
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           f"{_window_options_text(dt, layout)}")
    from .autograd.grad_mode import no_grad
    with no_grad():
        if window_length <= 1:
            window = ones(window_length, dtype=dt)
        else:
            n = window_length + 1 if periodic else window_length
            window = values_of(arange(n, dtype=dt), n)[:window_length].contiguous()
    return _finish(window, requires_grad)


def _window_options_text(dt, layout) -> str:
    """The TensorOptions PyTorch prints when a window is asked for an integer dtype (its C type
    names; a layout the caller passed loses its "(default)" tag, a requires_grad never shows)."""
    layout_text = "Strided" if layout is not None else "Strided (default)"
    return (f"TensorOptions(dtype={_core.c_type_name_of(dt.np_dtype)}, "
            f"device=cpu, layout={layout_text}, requires_grad=false (default), "
            f"pinned_memory=false, memory_format=(nullopt))")


def _hamming(alpha, beta):
    def values(points, length):
        return points.mul(2 * math.pi / (length - 1)).cos().mul(-beta).add(alpha)
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory: bool = False, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi n / (N - 1)); periodic windows are the first N of
    N + 1 points (for spectral analysis)."""
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "hann_window", "hann_window")
    _check_cpu(device)
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   _hamming(0.5, 0.5), layout)


def hamming_window(window_length, periodic=None, alpha=None, beta=None, *, dtype=None,
                   layout=None, device=None, pin_memory: bool = False, requires_grad=False):
    """The Hamming window alpha - beta cos(2 pi n / (N - 1)) (periodic=True, alpha=0.54,
    beta=0.46 by default).  PyTorch's overloads take alpha only after periodic and beta only
    after alpha: hamming_window(N, alpha=0.5) is its "invalid combination" TypeError."""
    given = {"periodic": periodic, "alpha": alpha, "beta": beta}
    if (periodic is None and (alpha is not None or beta is not None)) or (
            alpha is None and beta is not None):
        raise _invalid_window_call("hamming_window", window_length, given,
                                   ("bool periodic", "float alpha", "float beta"))
    periodic = True if periodic is None else periodic
    alpha = 0.54 if alpha is None else alpha
    beta = 0.46 if beta is None else beta
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "hamming_window", "hamming_window")
    _check_cpu(device)
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _hamming(alpha, beta), layout)


def _blackman(points, length):
    angle = points.mul(math.pi / (length - 1))
    return angle.mul(4).cos().mul(0.08) - angle.mul(2).cos().mul(0.5) + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "blackman_window", "blackman_window")
    _check_cpu(device)
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _blackman,
                   layout)


def _bartlett(points, length):
    """2n / (N - 1) rising to the middle, 2 - 2n / (N - 1) after it."""
    ramp = points.mul(2.0 / (length - 1))
    rising = ((length - 1) >> 1) + 1
    ramp[rising:] = ramp[rising:].mul(-1).add(2)
    return ramp


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad=False):
    """The triangular Bartlett window 1 - |2n / (N - 1) - 1|."""
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "bartlett_window", "bartlett_window")
    _check_cpu(device)
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, _bartlett,
                   layout)


_WINDOW_TAIL = ("*, torch.dtype dtype = None, torch.layout layout = None, torch.device device = "
                "None, bool pin_memory = False, bool requires_grad = False")


def _invalid_window_call(name, window_length, given, parameters):
    """PyTorch's TypeError for a window whose optional parameters skip one: its overloads take
    `parameters` (after window_length) as a growing prefix, so a later one without the earlier
    ones fits none.  The given ones are listed as keywords, last first, as its parser does (the
    public-call layer rewrites "got" from the call itself)."""
    got = [_type_name(window_length)] + [f"{k}={_type_name(v)}"
                                         for k, v in reversed(given.items()) if v is not None]
    lines = "".join(f"\n * ({', '.join(('int window_length',) + parameters[:k])}, "
                    f"{_WINDOW_TAIL})" for k in range(len(parameters) + 1))
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:{lines}\n")


def kaiser_window(window_length, periodic=None, beta=None, *, dtype=None, layout=None,
                  device=None, pin_memory: bool = False, requires_grad=False):
    """The Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta) (periodic=True,
    beta=12.0 by default).  PyTorch's overloads take beta only after periodic: a beta without a
    periodic is its "invalid combination of arguments" TypeError, not a window."""
    if periodic is None and beta is not None:
        raise _invalid_window_call("kaiser_window", window_length, {"beta": beta},
                                   ("bool periodic", "float beta"))
    periodic = True if periodic is None else periodic
    beta = 12.0 if beta is None else beta
    check_unpinned(pin_memory)
    sparse_factory_layout(layout, "kaiser_window", "kaiser_window")
    _check_cpu(device)

    def values(points, length):
        # (PyTorch's kernel computes in the dtype's opmath type, float for float16, rounding once)
        from .creation import tensor
        from .special import i0
        wide = points.float() if points.dtype == _core.float16 else points
        half_span = (length - 1) / 2.0
        ratio = (wide - half_span) / half_span
        shape = i0((1 - ratio.pow(2)).abs().sqrt().mul(beta))
        return (shape / i0(tensor(beta, dtype=wide.dtype))).to(points.dtype)
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, values, layout)


# -- unravel_index, typename ---------------------------------------------------------------------

def _class_repr(value) -> str:
    """repr(type(value)) as PyTorch's messages print it (a tensor's class is torch.Tensor)."""
    if isinstance(value, TensorBase):
        return "<class 'torch.Tensor'>"
    cls = type(value)
    name = cls.__qualname__
    if cls.__module__ != "builtins":
        name = f"{cls.__module__}.{name}"
    return f"<class '{name}'>"


def unravel_index(indices, shape):
    """The coordinates of flat `indices` in a tensor of `shape`: a tuple of int64 tensors
    shaped like indices, one per dim (indices wrap around modulo the size, as PyTorch's)."""
    if not isinstance(indices, TensorBase):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {_type_name(indices)}")
    if indices._array.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)):
        dims = (shape,)
    elif isinstance(shape, collections.abc.Sequence):
        for d in shape:
            if not isinstance(d, (int, np.integer)):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{_class_repr(d)}")
        dims = tuple(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got "
                        f"{_class_repr(shape)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    flat = indices._array.astype(np.int64)
    coordinates = []
    stride = 1
    for d in reversed(dims):
        coordinates.append(_wrap((flat // stride) % d if d else flat * 0))
        stride *= d
    return tuple(reversed(coordinates))


def typename(obj) -> str:
    """The type name PyTorch prints: 'torch.FloatTensor' & co. for a tensor; for an object that
    has a qualified name of its own (a class, a function, a lambda, a method) that name, so that
    `nn.Sequential(lambda x: x)` names '__main__.<lambda>'; otherwise its class's name (builtins
    unqualified; our classes under PyTorch's module path, 'torch.nn.parameter.Parameter')."""
    if isinstance(obj, TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(name, str):
        cls = type(obj)
        module = getattr(cls, "__module__", "") or ""
        name = cls.__qualname__
    if module == "tapegrad._core":          # our compiled classes are PyTorch's torch.<name> (dtype)
        module = "tapegrad"
    return (name if module in ("", "builtins", "__builtin__")
            else f"{torch_module_name(module)}.{name}")


# -- binomial sampling ---------------------------------------------------------------------------

def binomial(count, prob, generator=None):
    """Samples of Binomial(count, prob) elementwise (broadcast), in the inputs' float dtype: the
    number of successes in floor(count) trials (negative counts give 0, prob is clipped to
    [0, 1], as PyTorch's sampler does; NaN in either gives NaN).  No derivative: backward
    raises, as PyTorch's."""
    from ._random import _numpy_rng
    if not isinstance(count, TensorBase) or not isinstance(prob, TensorBase):
        bad, position = ("count", 1) if not isinstance(count, TensorBase) else ("prob", 2)
        raise TypeError(f"binomial(): argument '{bad}' (position {position}) must be Tensor, not "
                        f"{type(count if position == 1 else prob).__name__}")
    for name, t in (("count", count), ("prob", prob)):
        if t._array.dtype.kind != "f":
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{_core.scalar_type_name_of(t._array.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {_core.scalar_type_name_of(prob._array.dtype)} but "
                           f"expected {_core.scalar_type_name_of(count._array.dtype)}")
    n, p = np.broadcast_arrays(count._array.astype(np.float64), prob._array.astype(np.float64))
    missing = np.isnan(n) | np.isnan(p)
    trials = np.where(missing, 0, np.maximum(np.floor(np.where(np.isinf(n), 0, n)), 0))
    draws = _numpy_rng(generator, "binomial").binomial(trials.astype(np.int64),
                                                       np.clip(np.where(missing, 0, p), 0, 1))
    values = np.where(missing, np.nan, draws).astype(count._array.dtype)
    if (count.requires_grad or prob.requires_grad):
        from ._more_math import _NotDifferentiable
        source = count if count.requires_grad else prob
        return _NotDifferentiable.apply(source, values,
                                        "derivative for aten::binomial is not implemented")
    return _wrap(values)


# -- Tensor.new ----------------------------------------------------------------------------------

def _tensor_new(self, *args, **kwargs):
    """Tensor.new: the legacy constructor with this tensor's dtype: new() is empty, new(*sizes)
    uninitialised, new(data) a copy of the data, new(other) shares other (same dtype only)."""
    from ._legacy import legacy_value
    value = legacy_value(self._array.dtype, args, kwargs)
    if isinstance(value, TensorBase):
        return value.view(value._array.shape) if value.requires_grad else value.detach()
    return _core.wrap_array(value)


FUNCTIONS = ("range", "asarray", "frombuffer", "from_file", "empty_strided", "hann_window",
             "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
             "unravel_index", "typename", "empty_permuted", "binomial")


def register(namespace: dict, tensor_cls) -> None:
    """Add the creation functions and newaxis to `namespace` and Tensor.new /
    new_empty_strided to `tensor_cls` (existing names win)."""
    for name in FUNCTIONS:
        namespace.setdefault(name, globals()["torch_range" if name == "range" else name])
    namespace.setdefault("newaxis", None)
    if not has_member(tensor_cls, "new"):
        tensor_cls.new = _tensor_new
    if not has_member(tensor_cls, "new_empty_strided"):
        tensor_cls.new_empty_strided = _new_empty_strided
