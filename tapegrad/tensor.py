"""tapegrad.Tensor: the Python facade over the compiled TensorBase.

Everything on the per-op path (arithmetic, recording, backward) is compiled in TensorBase; this
class adds the conveniences PyTorch users expect: shape and size queries, conversions, repr.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math
import numbers
import sys

import numpy as np

from . import _core, _dlpack
from ._uninitialised import uninitialised
from ._device import CPU, as_device, check_device, is_device_like
from ._device import device as _device_type
from ._format import tensor_repr
from ._real_torch import call_counterpart
from ._deprecated_overloads import NOT_GIVEN
from ._layout import sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc, strided
from ._torch_names import TorchNamedClass as _TorchNamedClass


_NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. "
                        "Use tensor.detach().numpy() instead.")
# (tapegrad's conj() holds its values materialised, but PyTorch's numpy() refuses the lazy view)
_NUMPY_CONJ_BIT = ("Can't call numpy() on Tensor that has conjugate bit set. "
                   "Use tensor.resolve_conj().numpy() instead.")


def _size_item(item, position: int):
    """Item `position` of a torch.Size as PyTorch stores it: an int (a bool, or a one-element
    integer tensor, as its int), a numpy integer kept as given; anything else refused."""
    if isinstance(item, _core.TensorBase):
        if item.dtype.is_floating_point or item.dtype.is_complex or item.numel() != 1:
            raise TypeError(f"torch.Size() takes an iterable of 'int' (item {position} is "
                            f"'{_type_name(item)}')")
        item = int(item.item())
    elif isinstance(item, np.integer):
        return item
    elif not isinstance(item, int):     # (bool is an int: True is 1)
        raise TypeError(f"torch.Size() takes an iterable of 'int' (item {position} is "
                        f"'{_type_name(item)}')")
    return int(item)


class Size(tuple, metaclass=_TorchNamedClass):
    """A tensor's shape: a tuple that prints as PyTorch prints it."""
    _c_type_name = "torch.Size"  # (its name in PyTorch's messages)
    # No instance attributes, as PyTorch's (s.x = 1 is its AttributeError); it also makes each
    # t.shape cheaper to build (no per-instance dict).
    __slots__ = ()

    __module__ = "tapegrad"

    def __new__(cls, sizes=()):
        # PyTorch's Size holds integer sizes: anything else is refused by its position, not
        # kept (torch.Size([1.5]) is a TypeError).  (t.shape is built by the core without this check:
        # its sizes are numpy's.)
        items = tuple(sizes)
        for i, item in enumerate(items):
            if type(item) is not int:
                items = items[:i] + tuple(_size_item(v, j) for j, v in enumerate(items[i:], i))
                break
        return tuple.__new__(cls, items)

    @classmethod
    def _unchecked(cls, items):
        """A Size of sizes tapegrad made itself, symbolic ones too (a jagged tensor's NestedInt,
        PyTorch's SymInt), which the public constructor would refuse."""
        return tuple.__new__(cls, items)

    def __repr__(self) -> str:
        # numpy integers a script put in (torch.Size([np.prod(shape)]), shape + (np.int64(3),))
        # stay numpy integers, as in PyTorch, but print as the numbers they are: numpy 2's
        # repr would show `np.int64(3)`
        return f"torch.Size({[int(s) if isinstance(s, np.integer) else s for s in self]})"

    __str__ = __repr__

    # Sizes combine into Sizes, as PyTorch's (x.shape + (1,), x.shape[1:], 2 * x.shape); a list
    # is refused as a tuple refuses it.
    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {_type_name(other)}) to "
                            "torch.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (the product of the sizes; 1 for ``()``)."""
        n = 1
        for s in self:
            n *= s
        return int(n)       # a Python int even where a size is a numpy integer, as PyTorch's


_TO_SIGNATURES = (
    "\n * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)"
    "\n * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)"
    "\n * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n")


def _is_dtype(x) -> bool:
    # Python's float, int and bool name float64, int64 and bool, as in PyTorch.
    return isinstance(x, _core.dtype) or x is float or x is int or x is bool


def as_dtype(x):
    """The tapegrad dtype of a dtype argument given as a dtype or as Python's float/int/bool."""
    if isinstance(x, _core.dtype):
        return x
    return {float: _core.float64, int: _core.int64, bool: _core.bool_}[x]


def is_int(x) -> bool:
    """Whether PyTorch's argument parser takes x as an int (a size, a count, a dim): a Python or
    numpy integer, not a bool (Python's or numpy's).  The one test of the Python modules."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _arg_label(x) -> str:
    if isinstance(x, _core.TensorBase):
        return "Tensor"
    if isinstance(x, _core.dtype):
        return "torch.dtype"
    if is_device_like(x) and not isinstance(x, (str, int)):
        return "torch.device"
    return _type_name(x)


def _compiled_op(method):
    """Marks a method whose body only hands self to the compiled op of its name: Tensor holds
    that op itself, behind the methods' entry (_public_calls.install_methods), with the method's
    docstring; the def documents it."""
    method.__compiled_op__ = True
    return method


def invalid_arguments(fn: str, args: tuple, kwargs: dict, signatures: str) -> TypeError:
    """PyTorch's error for a call that matches none of a function's overloads."""
    return TypeError(f"{fn}() received an invalid combination of arguments - got "
                     f"({arguments_got(args, kwargs)}), but expected one of:" + signatures)


def arguments_got(args: tuple, kwargs: dict) -> str:
    """What PyTorch's parser lists of a call's arguments in "got (...)": "Tensor, int",
    "Tensor, min=str", "dimm=int, " (its separator stays after keywords alone).  The keywords
    come last-given first: PyTorch's parser lists them from a C++ hash map, whose order for the
    two or three keywords of a call is that one but for hash collisions (clamp(x, min=a, max=b)
    is "got (Tensor, max=..., min=...)"; sort(x, stable=, dim=, descending=) is a collision)."""
    got = [_arg_label(a) for a in args] + [f"{k}={_arg_label(v)}"
                                           for k, v in reversed(kwargs.items())]
    return ", ".join(got) + ("" if args or not kwargs else ", ")


def parse_to(args: tuple, kwargs: dict):
    """The (device, dtype, non_blocking, copy) of a `to(...)` call (Tensor.to and Module.to), by
    PyTorch's three overloads: to(device=None, dtype=None, non_blocking=False, copy=False),
    to(dtype, non_blocking=False, copy=False), to(tensor, non_blocking=False, copy=False); each
    also takes memory_format= (left to the caller: Tensor.to and Module.to apply it).  dtype is None when
    the call keeps the dtype; a dtype given as Python float/int/bool is returned as is."""
    if len(args) > 4:
        raise TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} were given")
    kw = dict(kwargs)
    kw.pop("memory_format", None)
    first = args[0] if args else None
    if args and (isinstance(first, _core.TensorBase) or _is_dtype(first)):
        device, dtype, flags = None, (first.dtype if isinstance(first, _core.TensorBase) else
                                      first), list(args[1:])
        ok = len(flags) <= 2 and "device" not in kw and "dtype" not in kw
    else:
        ok = first is None or is_device_like(first)
        device = first if args else kw.pop("device", None)
        if args and "device" in kw:
            ok = False
        flags = list(args[2:])
        if len(args) > 1:
            dtype = args[1]
            ok = ok and "dtype" not in kw
        else:
            dtype = kw.pop("dtype", None)
        ok = ok and (dtype is None or _is_dtype(dtype)) and (device is None or
                                                             is_device_like(device))
    for i, name in enumerate(("non_blocking", "copy")):
        if i < len(flags):
            ok = ok and name not in kw
        elif name in kw:
            flags.append(kw.pop(name))
        else:
            flags.append(False)
        ok = ok and type(flags[i]) is bool      # (an int is no bool to PyTorch's parser)
    if not ok or kw:
        raise invalid_arguments("to", args, kwargs, _TO_SIGNATURES)
    return device, dtype, bool(flags[0]), bool(flags[1])


def _size_kwarg(size: tuple, kwargs: dict) -> tuple:
    """new_zeros(2, 3), new_zeros((2, 3)) and new_zeros(size=(2, 3)) name the same shape."""
    if "size" in kwargs:
        if size:
            raise TypeError("new_*() got multiple values for argument 'size'")
        size = (tuple(kwargs.pop("size")),)
    if kwargs:
        raise TypeError(f"new_*() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return size


_warned_scalar_of_grad_tensor = False
def _real_part(value: complex, c_type: str):
    """A complex element read as a real number: its real part when its imaginary part is 0
    (PyTorch's conversion check, which words any other as an overflow of the C type)."""
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
    return value.real


def _warn_scalar_of_grad_tensor(t) -> None:
    """float(t) / complex(t) (math.exp(t) too) of a tensor requiring grad, with grad mode on:
    PyTorch warns once per process that the result leaves the graph (int(), item() and
    formatting do not warn)."""
    global _warned_scalar_of_grad_tensor
    if _warned_scalar_of_grad_tensor or not t.requires_grad or not _core.is_grad_enabled():
        return
    _warned_scalar_of_grad_tensor = True
    _core.torch_warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                     "unexpected behavior.\nConsider using tensor.detach() first.",
                     "torch/csrc/autograd/generated/python_variable_methods.cpp:822")


class Tensor(_core.TensorBase, metaclass=_TorchNamedClass):
    """A multi-dimensional array that records the operations applied to it for autograd."""

    __module__ = "tapegrad"
    # numpy scalars and arrays on the left defer to our reflected operators (as for torch.Tensor).
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        """PyTorch's legacy constructor: Tensor(data), Tensor(*sizes), Tensor(size=...),
        Tensor(other) (other's storage), Tensor() (empty); device= must name the CPU.

        Only a call of the class runs this: ops create their results through TensorBase's own
        allocator, which does not call __init__ (a Python __new__ here would instead put a
        Python call on every op's path).  It raises or leaves self initialised."""
        if self._array is not None:
            return      # made by a subclass's own __new__: its arguments are not ours
        from ._legacy import legacy_value
        value = legacy_value(None, args, kwargs)
        # Tensor(other) shares other's storage (a view of its data: not differentiable through
        # this object, whose identity is already fixed; FloatTensor(other) & co. are).
        self._array = value._array if isinstance(value, _core.TensorBase) else value
        self._set_inference(_core.is_inference_mode_enabled())

    # PyTorch's `_grad` is the `.grad` slot under a second name (one getter and setter: the same
    # checks, the same non-leaf warning).  A3C code hands a worker's gradients to the shared
    # model with `shared_param._grad = param.grad`; as a plain attribute it reached no optimizer.
    # The compiled descriptor itself, so a warning still names the user's line.
    _grad = _core.TensorBase.grad

    def __init_subclass__(cls, **kwargs):
        """A subclass keeps PyTorch's __torch_function__ protocol: ops on its instances go to its
        __torch_function__ (tapegrad.overrides)."""
        super().__init_subclass__(**kwargs)
        from .overrides import _register_subclass
        _register_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """PyTorch's default override: run `func` with subclass dispatch off and return its
        tensors as `cls` (tapegrad.overrides)."""
        from .overrides import _convert, _DisableTorchFunctionSubclass, _wraps_result
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        # A call of the real torch (a library's torch.flip(x), its `real + x`) runs tapegrad's
        # function of that name: calling `func` would dispatch back here without end
        # (tapegrad._real_torch).
        called = call_counterpart(func, args, kwargs)
        if called is not None:
            return _convert(called[0], cls)
        with _DisableTorchFunctionSubclass():
            result = func(*args, **(kwargs or {}))
        return _convert(result, cls) if _wraps_result(func) else result

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None,
                       dispatch_device=False, dispatch_layout=False, _extra_dispatch_keys=None,
                       storage_size=None):
        """A new leaf of class `cls` (a Tensor subclass) sharing `data`'s storage, detached from
        its graph, requiring grad when `require_grad`: how Parameter and subclasses' __new__
        wrap existing values (the dispatch_* arguments concern PyTorch's C++ dispatcher)."""
        if not (isinstance(cls, type) and issubclass(cls, _core.TensorBase)):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                            "Tensor is not possible. Make sure your class inherits from Tensor.")
        if not isinstance(data, _core.TensorBase):
            raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, not "
                            f"{_core.type_name(data)}")
        flag = _core.check_bool("_make_subclass", "require_grad", require_grad, 3)
        out = _core.TensorBase.__new__(cls)
        out._array = data._array
        # A subclass of an inference tensor is one too (it shares that storage), so making it
        # require grad outside inference mode raises, as in PyTorch.
        out._set_inference(data.is_inference())
        if flag and not data._can_require_grad():
            # (PyTorch's _make_subclass words it as its factory functions do)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        out.requires_grad = flag
        return out

    # -- shape --------------------------------------------------------------------------------
    # (the compiled getter answers to the property's name: tapegrad's dtype classes and the
    # function modes key a dispatched read on it -- float8's metadata reads allow "shape")
    _core.shape_of.__name__ = "shape"
    shape = property(_core.shape_of, doc="""The tensor's shape as a ``torch.Size`` (a tuple of
        ints); the same as ``size()``.""")

    def size(self, dim: int | None = None):
        """The shape as a ``torch.Size``, or with ``dim`` the size of that dimension as an int (negative
        ``dim`` counts from the end; out of range raises ``IndexError``).

        Examples
        --------
        >>> x = tapegrad.zeros(2, 3)
        >>> x.size(), x.size(-1)
        (torch.Size([2, 3]), 3)
        """
        if dim is None:
            return Size(self._array.shape)
        if type(dim) is int:        # (the common call, x.size(0), without the general checks)
            shape = self._array.shape
            if -len(shape) <= dim < len(shape):
                return shape[dim]
        if self._array.ndim == 0:
            from ._extra_ops import _no_dims_of_scalar
            _no_dims_of_scalar(dim, "size")
        return self._array.shape[_core.normalize_dim(dim, self._array.ndim, "size")]

    def dim(self) -> int:
        """The number of dimensions (0 for a scalar tensor); also ``ndim``."""
        return self._array.ndim

    def numel(self) -> int:
        """The number of elements: the product of the shape (1 for a 0-d tensor)."""
        return self._array.size

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self):
        # PyTorch iterates over unbind(0): the rows are UnbindBackward0 views, and writing one
        # in place where autograd tracks it is refused (rows of a multi-output view op)
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # -- conversions ----------------------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor (any shape) as a Python number (``float``, ``int`` or
        ``bool`` by dtype); more than one element raises ``RuntimeError``.

        Examples
        --------
        >>> tapegrad.tensor([[2.5]]).item()
        2.5
        """
        if self._array.size != 1:
            raise RuntimeError(f"a Tensor with {self._array.size} elements cannot be converted to Scalar")
        value = self._array.item()      # (ndarray.item() reads a one-element array of any shape)
        _core._capture_read(self, "item", value)
        return value

    def tolist(self):
        """The values as (nested) Python lists of Python numbers; a 0-d tensor gives a number.

        Examples
        --------
        >>> tapegrad.arange(4).reshape(2, 2).tolist()
        [[0, 1], [2, 3]]
        """
        value = self._array.tolist()
        _core._capture_read(self, "tolist", value)
        return value

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's values as an ndarray sharing its memory.  force=True detaches first, so it
        also works on a tensor that requires grad (on a CPU-only build that needs no copy)."""
        # (PyTorch refuses only while grad mode is on: under no_grad, as in an
        # autograd.Function's forward, numpy() shares the values of a tensor that requires grad)
        if self.requires_grad and not force and _core.is_grad_enabled():
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        if getattr(self, "_conj_bit", False) and not force:
            raise RuntimeError(_NUMPY_CONJ_BIT)
        _core._capture_read(self, "numpy", None)
        # A fresh ndarray on the tensor's memory each call, as PyTorch's: handing out the array
        # the tensor holds would let `a.shape = ...` or `a.dtype = ...` on the result reshape or
        # reinterpret the tensor itself.
        return self._array.view()

    def __array__(self, dtype=None, copy=None):
        # numpy 2's protocol: copy=None shares when it can (np.asarray), copy=True must return a
        # fresh array (np.array), copy=False must share or raise.
        if self.requires_grad and _core.is_grad_enabled():
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        if getattr(self, "_conj_bit", False):
            raise RuntimeError(_NUMPY_CONJ_BIT)
        _core._capture_read(self, "numpy", None)
        arr = self._array
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while creating an array as requested: "
                                 f"the tensor's dtype {self.dtype} differs from {np.dtype(dtype)}")
            return arr.astype(dtype)
        return arr.copy() if copy else arr.view()     # a fresh ndarray object, as in numpy()

    def __array_wrap__(self, array):
        # numpy hands back what it computed on a tensor as a tensor, as for torch.Tensor: ufuncs
        # (np.exp(t)) and the functions that fall back to the array method (np.clip(t, 0, 1) in
        # a denoising-autoencoder tutorial, np.round, np.transpose...).  Bool results become
        # uint8, as PyTorch's do.  One parameter, as PyTorch's: numpy 2 then warns alike.
        # (Wrapped without from_numpy's read-only warning: a read-only result here comes from a
        # tapegrad broadcast view, whose PyTorch counterpart is writable.)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _core.tensor_from_numpy(array)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _dlpack.export_tensor(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _dlpack.CPU_DEVICE

    # Python scalars.  PyTorch raises ValueError for a size mismatch here, RuntimeError in item().
    def _scalar(self):
        if self._array.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if type(self) is Tensor:
            # (float(loss), int(n): item()'s read without its call; a subclass's own item() is
            # honoured)
            value = self._array.item()
            _core._capture_read(self, "item", value)
            return value
        return self.item()

    def __bool__(self) -> bool:
        if self._array.size != 1:
            amount = "no values" if self._array.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
        value = bool(self._array.item())
        _core._capture_read(self, "bool", value)
        return value

    def __float__(self) -> float:
        if self.requires_grad:
            _warn_scalar_of_grad_tensor(self)
        value = self._scalar()
        return float(_real_part(value, "double") if isinstance(value, complex) else value)

    def __int__(self) -> int:
        value = self._scalar()
        if isinstance(value, complex):
            value = _real_part(value, "int64_t")
            if value != value:      # (a NaN real part: PyTorch's overflow of the C type too)
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(value)

    def __complex__(self) -> complex:
        _warn_scalar_of_grad_tensor(self)
        return complex(self._scalar())

    def __index__(self) -> int:
        if self._array.dtype.kind not in "iub" or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, format_spec: str) -> str:
        # A 0-d tensor formats as its Python scalar (f"{loss:.4f}"); any other tensor, and any
        # subclass (a 0-d nn.Parameter too, as in PyTorch), only accepts the empty spec, as
        # object.__format__ does.
        if self._array.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(format_spec)
        if format_spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    def __contains__(self, element) -> bool:
        if not isinstance(element, (_core.TensorBase, numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        # (element == self, as PyTorch writes it: a shape mismatch names element's size first)
        return bool((element == self).any())

    __hash__ = object.__hash__

    # Builtins that PyTorch routes to tensor ops: abs(t) is t.abs() (recorded, differentiable), and
    # reversed(t) flips the first dimension as one tensor (a 0-d tensor is its own reverse) rather
    # than iterating rows backwards.
    def __abs__(self):
        return self.abs()

    def __reversed__(self):
        if self._array.ndim == 0:
            return self
        return self.flip(0)

    # -- pickle and copy ------------------------------------------------------------------------
    # A tensor is saved as (storage, byte offset, shape, strides), as torch saves its storage and
    # view geometry: a view survives with its offset and strides, and copy.copy (which rebuilds from
    # the same arguments without copying them) shares the original's memory, as torch's does.
    # The storage goes in a fresh _PickledStorage per tensor, so pickle writes each tensor's
    # storage by value, as torch's does: two views of one buffer unpickle as two buffers.
    def __reduce_ex__(self, protocol):
        torch_format = sys.modules.get("tapegrad._torch_format")
        if torch_format is not None:
            pickler = torch_format.REDUCING_FOR.get()
            if pickler is not None:     # (torch.save running a subclass's own __reduce_ex__)
                return pickler._reduce_tensor(self)
        storage, offset, strides = _storage_and_geometry(self._array)
        state = dict(self.__dict__) if self.__dict__ else None
        return (_rebuild_tensor,
                (type(self), _PickledStorage(storage), offset, self._array.shape, strides,
                 self.requires_grad, state))

    def share_memory_(self):
        """Move the values into shared memory, for worker processes to update in place."""
        from . import _shared_memory
        return _shared_memory.share_memory_(self)

    def is_shared(self) -> bool:
        """Whether the values are in shared memory (after share_memory_)."""
        from . import _shared_memory
        return _shared_memory.is_shared(self)

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError(_DEEPCOPY_NON_LEAF)
        if id(self) in memo:
            return memo[id(self)]
        if not type(self).__module__.startswith("tapegrad"):
            # PyTorch's copy of a user's subclass is made by new_empty, run with the subclass
            # dispatch off: unless the class's own new_empty keeps the class, it refuses
            from .overrides import _DisableTorchFunctionSubclass
            with _DisableTorchFunctionSubclass():
                probe = self.new_empty([])
            if type(probe) is not type(self):
                raise RuntimeError(_DEEPCOPY_SUBCLASS)
        import copy as _copy       # (loaded already: copy.deepcopy is what calls this)
        storage, offset, strides = _storage_and_geometry(self._array)
        # Going through the memo keeps tensors that view one storage aliased in the copy.
        new_storage = _copy.deepcopy(storage, memo)
        new = _rebuild_tensor(type(self), new_storage, offset, self._array.shape, strides,
                              self.requires_grad, None)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = _copy.deepcopy(self.grad, memo)
        if self.__dict__:
            # (a grad_dtype setting is autograd's, not an attribute: PyTorch's copy has none)
            attributes = {k: v for k, v in self.__dict__.items() if k != "_grad_dtype"}
            new.__dict__.update(_copy.deepcopy(attributes, memo))
        return new

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __str__(self) -> str:
        # type(self)'s repr, as object.__str__ gives in PyTorch: print(parameter) says
        # "Parameter containing:" and a subclass's own __repr__ is what print shows.
        return type(self).__repr__(self)

    # -- device (tapegrad computes on the CPU only) -------------------------------------------
    @property
    def device(self):
        """The tensor's device: always ``device(type='cpu')``."""
        return CPU

    def _constant_attribute(name, value):
        """A read-only attribute that is the same for every dense CPU tensor, as a getter:
        PyTorch's are descriptors of the class (print(torch.Tensor.is_cuda) shows one, not
        False), and a read on a tensor goes through __torch_function__ modes and subclasses
        as every other attribute's (a class constant was invisible to them)."""
        def read(self):
            return value
        read.__name__ = read.__qualname__ = name
        read.__doc__ = f"{name} of a dense CPU tensor: {value!r}."
        return property(read)

    is_cuda = _constant_attribute("is_cuda", False)
    is_cpu = _constant_attribute("is_cpu", True)
    is_meta = _constant_attribute("is_meta", False)
    is_mps = _constant_attribute("is_mps", False)
    is_xpu = _constant_attribute("is_xpu", False)
    is_sparse = _constant_attribute("is_sparse", False)
    is_sparse_csr = _constant_attribute("is_sparse_csr", False)
    is_quantized = _constant_attribute("is_quantized", False)
    is_nested = _constant_attribute("is_nested", False)
    is_mkldnn = _constant_attribute("is_mkldnn", False)
    is_xla = _constant_attribute("is_xla", False)
    is_ipu = _constant_attribute("is_ipu", False)
    is_vulkan = _constant_attribute("is_vulkan", False)
    is_mtia = _constant_attribute("is_mtia", False)
    is_maia = _constant_attribute("is_maia", False)
    layout = _constant_attribute("layout", strided)
    del _constant_attribute

    def dequantize(self):
        """A float tensor is its own dequantization (PyTorch returns it unchanged); quantized
        tensors (tapegrad._quantized) have their own."""
        return self

    def _quantized_only(name):
        def method(self, *args, **kwargs):
            from ._quantized import _not_implemented
            raise _not_implemented(name, "CPU")
        method.__name__ = name
        # (where it lives: the docs build inspects it, and the factory's <locals> name sent its
        # alias resolution round in circles for minutes)
        method.__qualname__ = f"Tensor.{name}"
        method.__doc__ = f"{name}() of a quantized tensor; a dense one raises, as in PyTorch."
        return method

    int_repr = _quantized_only("int_repr")
    q_scale = _quantized_only("q_scale")
    q_zero_point = _quantized_only("q_zero_point")
    q_per_channel_scales = _quantized_only("q_per_channel_scales")
    q_per_channel_zero_points = _quantized_only("q_per_channel_zero_points")
    q_per_channel_axis = _quantized_only("q_per_channel_axis")
    qscheme = _quantized_only("qscheme")
    del _quantized_only

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """The sparse COO form of this tensor (its non-zero elements; the first ``sparse_dim``
        dimensions sparse, default all), coalesced; differentiable.

        Examples
        --------
        >>> tapegrad.tensor([[0., 2.], [3., 0.]]).to_sparse()._nnz()
        2
        """
        from ._sparse_coo import to_sparse
        if layout is not None and layout is not sparse_coo:
            from ._sparse_compressed import to_compressed
            return to_compressed(self, layout, dense_dim, blocksize)
        return to_sparse(self, sparse_dim)

    def to_sparse_csr(self, dense_dim=None):
        """The sparse CSR form of this 2-D tensor (its non-zero elements; ``dense_dim``
        trailing dimensions kept dense); differentiable.

        Examples
        --------
        >>> tapegrad.tensor([[0., 2.], [3., 0.]]).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
        """
        from ._sparse_compressed import to_compressed
        return to_compressed(self, sparse_csr, dense_dim)

    def to_sparse_csc(self, dense_dim=None):
        """The sparse CSC form of this 2-D tensor, as ``to_sparse_csr`` by columns."""
        from ._sparse_compressed import to_compressed
        return to_compressed(self, sparse_csc, dense_dim)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        """The sparse BSR form of this 2-D tensor: its blocks of shape ``blocksize`` (a pair,
        or an int for square blocks) holding a non-zero element, by block rows;
        differentiable."""
        from ._sparse_compressed import to_compressed
        return to_compressed(self, sparse_bsr, dense_dim, blocksize)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        """The sparse BSC form of this 2-D tensor, as ``to_sparse_bsr`` by block columns."""
        from ._sparse_compressed import to_compressed
        return to_compressed(self, sparse_bsc, dense_dim, blocksize)

    def sparse_mask(self, mask):
        """A sparse COO tensor on ``mask``'s indices (its values ignored) holding this tensor's
        elements there; differentiable.

        Examples
        --------
        >>> m = tapegrad.sparse_coo_tensor([[0, 1], [1, 0]], [1., 1.], (2, 2)).coalesce()
        >>> tapegrad.tensor([[1., 2.], [3., 4.]]).sparse_mask(m).values()
        tensor([2., 3.])
        """
        from ._sparse_coo import sparse_mask
        return sparse_mask(self, mask)

    def to_sparse_coo(self):
        """The sparse COO form of this tensor, as ``to_sparse()``."""
        return self.to_sparse()

    def module_load(self, other, assign=False):
        """How load_state_dict transforms the state dict's `other` before swapping it into this
        parameter or buffer (when torch.__future__.get_swap_module_params_on_conversion()):
        `other` detached (assign=True) or this tensor's values copied from it, detached.  A
        tensor subclass overrides it through __torch_function__."""
        from .overrides import handle_torch_function, has_torch_function_variadic
        if has_torch_function_variadic(self, other):
            return handle_torch_function(Tensor.module_load, (self, other), self, other,
                                         assign=assign)
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def to_dense(self, dtype=None, *, masked_grad=None):
        """Self (a dense tensor), or a copy converted to ``dtype``."""
        if dtype is None:
            return self
        _core.np_dtype_of(dtype, "to_dense")            # PyTorch's TypeError for a non-dtype
        return self.to(dtype)

    # A sparse tensor's accessors exist on every PyTorch tensor (scripts read `t.values` as an
    # attribute, e.g. by mistake for `torch.max(...).values`, and only fail if they call it);
    # called on a dense tensor they raise PyTorch's layout RuntimeError.
    def values(self):
        """A sparse tensor's stored values; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("values", "sparse tensor")

    def indices(self):
        """A sparse COO tensor's indices; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("indices", "sparse coordinate tensor")

    def coalesce(self):
        """A sparse COO tensor, coalesced; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("coalesce", "sparse coordinate tensor")

    def is_coalesced(self):
        """Whether a sparse COO tensor is coalesced; a dense tensor raises PyTorch's
        RuntimeError."""
        _refuse_strided("is_coalesced", "sparse coordinate tensor")

    def crow_indices(self):
        """A CSR tensor's compressed row indices; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("crow_indices", "sparse row compressed tensor")

    def col_indices(self):
        """A CSR tensor's column indices; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("col_indices", "sparse row compressed tensor")

    def ccol_indices(self):
        """A CSC tensor's compressed column indices; a dense tensor raises PyTorch's
        RuntimeError."""
        _refuse_strided("ccol_indices", "sparse column compressed tensor")

    def row_indices(self):
        """A CSC tensor's row indices; a dense tensor raises PyTorch's RuntimeError."""
        _refuse_strided("row_indices", "sparse column compressed tensor")

    def sparse_dim(self) -> int:
        """0: a dense tensor has no sparse dimensions."""
        return 0

    def dense_dim(self) -> int:
        """Every dimension of a dense tensor is dense: its number of dimensions."""
        return self.ndim

    def get_device(self) -> int:
        """-1: the index PyTorch reports for a CPU tensor."""
        return -1

    def to(self, *args, **kwargs):
        """Tensor.to(device), to(dtype), to(device, dtype), to(other), with non_blocking= and
        copy=: self when nothing changes (unless copy=True), else a converted copy."""
        if not kwargs and len(args) == 1 and type(args[0]) is _core.dtype \
                and not _made_elsewhere(args[0]):
            return _core_to(self, args[0])      # (t.to(torch.float64): the common call)
        device, dtype, _, copy = parse_to(args, kwargs)
        if _made_elsewhere(dtype):
            return _to_bfloat16(Tensor.to, (self, *args), kwargs)
        if args and isinstance(args[0], _core.TensorBase):
            device = args[0].device
        if device is not None and getattr(device, "type", device) in ("meta", "meta:0"):
            from ._meta import to_meta
            return to_meta(self, None if dtype is None else as_dtype(dtype))
        check_device(device, "to")
        if device is not None and not isinstance(device, int) and as_device(device).index \
                is not None:
            copy = True     # PyTorch: 'cpu:0' is not the device of a CPU tensor ('cpu'): a copy
        result = _core_to(self, copy=copy) if dtype is None else _core_to(self, dtype, copy=copy)
        if kwargs.get("memory_format") is not None:     # channels_last & co.: a real layout
            from ._memory_format import apply_to_result
            return apply_to_result(result, kwargs["memory_format"])
        return result

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """Tensor.type(): the type string ('torch.FloatTensor'); type(t): self converted to t, a
        dtype, a tensor type (DoubleTensor, or torch.Tensor: the default dtype) or its name (self
        when it already has that type)."""
        _core.check_bool("type", "non_blocking", non_blocking)
        from ._legacy import TypedTensorMeta
        if isinstance(dtype, TypedTensorMeta) and not dtype.is_cuda:
            dtype = dtype.dtype
        elif dtype is Tensor or (isinstance(dtype, str) and dtype == "torch.Tensor"):
            from . import get_default_dtype     # torch.Tensor: the default tensor type
            dtype = get_default_dtype()
        elif dtype is not None and (getattr(dtype, "is_cuda", False) is True or (
                isinstance(dtype, str) and dtype.startswith("torch.cuda."))):
            raise RuntimeError("Cannot initialize CUDA without ATen_cuda library. tapegrad runs "
                               "on the CPU only.")
        if _made_elsewhere(dtype):
            return _to_bfloat16(Tensor.type, (self, dtype, non_blocking), kwargs)
        return _core_type(self, dtype, non_blocking, **kwargs)

    def bfloat16(self, memory_format=None):
        """self as bfloat16 (self when it already is)."""
        return self.to(_core.bfloat16, memory_format=memory_format)

    def cfloat(self, memory_format=None):
        """self as complex64 (self when it already is)."""
        return self.to(_core.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=None):
        """self as complex128 (self when it already is)."""
        return self.to(_core.complex128, memory_format=memory_format)

    def chalf(self, memory_format=None):
        """Raises TypeError: tapegrad has no complex32 tensors (see docs/differences.md)."""
        return self.to(_core.complex32)

    def cpu(self, *, memory_format=None):
        """Return self: tapegrad tensors always live on the CPU."""
        return self

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None):
        """Raises as a PyTorch build without CUDA does (an ordinal: its no-accelerator error); a
        device of another type is refused first, as PyTorch checks the argument before CUDA."""
        if isinstance(device, int) and not isinstance(device, bool):
            check_device(device, "cuda")
        elif device is not None:
            if not isinstance(device, (str, _device_type)):
                raise TypeError(f"cuda(): argument 'device' (position 1) must be torch.device, "
                                f"not {_type_name(device)}")
            if as_device(device).type != "cuda":
                raise RuntimeError("Invalid device, must be cuda device")
        check_device("cuda", "cuda")

    def pin_memory(self, device=None):
        """Raises as PyTorch on a machine without an accelerator: pinned memory needs one."""
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def is_pinned(self, device=None) -> bool:
        """Always False: pinned memory needs an accelerator."""
        return False

    # -- storage queries ------------------------------------------------------------------------
    def element_size(self) -> int:
        """The size of one element in bytes (4 for float32, 8 for int64, 1 for bool)."""
        return self._array.itemsize

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes, as ``element_size()``."""
        return self._array.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes the tensor's elements occupy: ``numel() * element_size()``."""
        return self._array.nbytes

    def untyped_storage(self):
        """The bytes this tensor's data lives in (shared by all its views), as an
        ``UntypedStorage``: one object for as long as it is referenced."""
        from .storage import untyped_storage_of
        return untyped_storage_of(self._array)

    def storage(self):
        """The storage read as this tensor's dtype (a ``TypedStorage``; PyTorch deprecates it
        and warns once)."""
        from .storage import typed_storage_of
        return typed_storage_of(self._array, self.dtype)

    def storage_type(self):
        """The legacy storage class of this tensor's dtype (``FloatStorage`` for float32)."""
        from .storage import legacy_class_of
        return legacy_class_of(self._array.dtype)

    def nelement(self) -> int:
        """The number of elements, as ``numel()``."""
        return self._array.size

    @property
    def _base(self):
        """The tensor this one is a view of (the root when views are chained), or None."""
        return self._view_base

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's storage has seen (inference tensors keep no
        count and raise, as in PyTorch)."""
        return self._version_value

    def data_ptr(self) -> int:
        """The address of the first element (numpy's data pointer)."""
        return self._array.__array_interface__["data"][0]

    def const_data_ptr(self) -> int:
        """The address of the first element, as ``data_ptr()`` (PyTorch's read-only variant)."""
        return self.data_ptr()

    def is_distributed(self) -> bool:
        """False: no tapegrad tensor is a distributed one."""
        return False

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one (float16, float32, float64)."""
        return self._array.dtype.kind == "f"

    def is_complex(self) -> bool:
        """Whether the dtype is a complex one (complex64, complex128)."""
        return self._array.dtype.kind == "c"

    # -- new tensors with self's dtype (Tensor.new_*) --------------------------------------------
    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False,
                   layout=None, pin_memory: bool = False):
        """A new leaf tensor holding a copy of `data`, of self's dtype unless `dtype` is given."""
        from . import creation
        _core.check_bool("new_tensor", "requires_grad", requires_grad)
        if isinstance(data, _core.TensorBase):
            import warnings
            warnings.warn("To copy construct from a tensor, it is recommended to use "
                          "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                          "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                          UserWarning, stacklevel=2)
            data = data._array
        creation._check_placement("new_tensor", device, pin_memory)
        dtype = self.dtype if dtype is None else dtype
        np_dt = _core.np_dtype_of(dtype, "new_tensor")
        if isinstance(data, np.ndarray):
            arr = data
        else:
            data, arr = creation._nested_array(data, np_dt)
            if arr.dtype in creation._WIDE_INT_RESULTS and arr.dtype.kind != "O":
                arr = creation._with_wide_ints_read(data, arr, np_dt)   # ints past int64
        if arr.dtype.kind not in "biuf":
            if arr.dtype.kind == "O" and all(type(v) is int for v in creation._python_leaves(data)):
                arr = creation._with_wide_ints_read(data, arr, np_dt)
            else:
                raise creation._storing_error(data, np_dt)
        if arr is not data:
            # Python numbers must fit an integer dtype, as tensor() checks them (it wrapped
            # silently: new_tensor([250]) of an int8 tensor held -6)
            from ._legacy import _check_int_range
            _check_int_range(arr, np_dt)
        return creation.tensor(arr, dtype=dtype, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False,
                  layout=None, pin_memory: bool = False, **kwargs):
        """A new tensor of zeros with shape ``size`` (ints, a sequence or ``size=``), of self's dtype
        unless ``dtype`` is given; not connected to self's graph.

        Examples
        --------
        >>> x = tapegrad.ones(2, dtype=tapegrad.float64)
        >>> x.new_zeros(3)
        tensor([0., 0., 0.], dtype=torch.float64)
        """
        return self._new_filled("new_zeros", _size_kwarg(size, kwargs), 0, dtype, device,
                                requires_grad, pin_memory)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False,
                 layout=None, pin_memory: bool = False, **kwargs):
        """A new tensor of ones with shape ``size``, of self's dtype unless ``dtype`` is given."""
        return self._new_filled("new_ones", _size_kwarg(size, kwargs), 1, dtype, device,
                                requires_grad, pin_memory)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False,
                  layout=None, pin_memory: bool = False, **kwargs):
        """A new uninitialised tensor with shape ``size``, of self's dtype unless ``dtype`` is given:
        its values are arbitrary until written.
        """
        return self._new_filled("new_empty", _size_kwarg(size, kwargs), None, dtype, device,
                                requires_grad, pin_memory)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad: bool = False,
                 layout=None, pin_memory: bool = False):
        """A new tensor of shape ``size`` filled with ``fill_value``, of self's dtype unless ``dtype`` is
        given (``fill_value`` is cast to it).
        """
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {_type_name(size)}")
        return self._new_filled("new_full", (tuple(size),), fill_value, dtype, device,
                                requires_grad, pin_memory)

    def _new_filled(self, fn, size, value, dtype, device, requires_grad, pin_memory):
        """new_zeros / new_ones / new_empty / new_full: `value` (None: uninitialised) in
        shape `size`, of self's dtype unless `dtype` is given."""
        from . import creation
        if not size:
            raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
        _core.check_bool(fn, "requires_grad", requires_grad)
        creation._check_placement(fn, device, pin_memory)
        shape = creation._size_args(size, fn)
        dt = _core.np_dtype_of(self.dtype if dtype is None else dtype, fn)
        creation._check_requires_grad(dt, requires_grad)
        if fn == "new_full":            # (new_zeros' 0 and new_ones' 1 fit every dtype)
            value = creation._fill_scalar(creation._number_argument(value, fn), dt,
                                          math.prod(shape))
        arr = (uninitialised(shape, dt) if value is None
               else np.full(shape, value, dtype=dt))
        return _core.wrap_array(arr, requires_grad)

    # -- ops as methods -------------------------------------------------------------------------
    # addmm / baddbmm live in tapegrad.contractions, which loads on first use: the methods are
    # here so that `x.addmm(...)` works before anything has touched `tapegrad.addmm`.
    def addmm(self, mat1, mat2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)``, as ``tapegrad.addmm(self, mat1, mat2)``
        (the deprecated ``self.addmm(beta, [alpha,] mat1, mat2)`` too)."""
        from .contractions import addmm
        return addmm(self, mat1, mat2, old_third, old_fourth, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, old_third=NOT_GIVEN, old_fourth=NOT_GIVEN, *, beta=1,
                alpha=1):
        """``beta * self + alpha * (batch1 @ batch2)`` over a batch of matrices, as
        ``tapegrad.baddbmm(self, batch1, batch2)`` (the deprecated scale-first forms too).
        """
        from .contractions import baddbmm
        return baddbmm(self, batch1, batch2, old_third, old_fourth, beta=beta, alpha=alpha)

    @_compiled_op
    def exp(self):
        """Elementwise ``e ** self``; the same as ``tapegrad.exp(self)`` (recorded, gradient
        ``grad * exp(self)``).
        """
        return _core.exp(self)

    @_compiled_op
    def log(self):
        """Elementwise natural logarithm (``nan`` below 0, ``-inf`` at 0); the same as
        ``tapegrad.log(self)``.
        """
        return _core.log(self)

    @_compiled_op
    def tanh(self):
        """Elementwise hyperbolic tangent; the same as ``tapegrad.tanh(self)``."""
        return _core.tanh(self)

    @_compiled_op
    def relu(self):
        """Elementwise ``max(self, 0)``; the gradient at 0 is 0, as PyTorch's."""
        return _core.relu(self)

    @_compiled_op
    def neg(self):
        """Elementwise ``-self``; the same as ``tapegrad.neg(self)``."""
        return _core.neg(self)

    @_compiled_op
    def add(self, other, other_after_scale=NOT_GIVEN, *, alpha=1):
        """``self + alpha * other`` with broadcasting and PyTorch's type promotion (``other`` may be a
        Python number).

        Examples
        --------
        >>> tapegrad.tensor([1., 2.]).add(tapegrad.tensor([10., 20.]), alpha=2)
        tensor([21., 42.])
        """
        return _core.add(self, other, other_after_scale, alpha=alpha)

    @_compiled_op
    def sub(self, other, other_after_scale=NOT_GIVEN, *, alpha=1):
        """``self - alpha * other`` with broadcasting and PyTorch's type promotion."""
        return _core.sub(self, other, other_after_scale, alpha=alpha)

    @_compiled_op
    def mul(self, other):
        """``self * other`` elementwise, with broadcasting and PyTorch's type promotion."""
        return _core.mul(self, other)

    def div(self, other):
        """``self / other`` elementwise (true division: integer inputs give the default float dtype)."""
        return _core.div(self, other)

    @_compiled_op
    def pow(self, exponent):
        """``self ** exponent`` elementwise; ``exponent`` is a number or a broadcastable tensor."""
        return _core.pow(self, exponent)

    @_compiled_op
    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The sum of all elements (a 0-d tensor), or over ``dim`` (an int or a tuple of ints; negative
        counts from the end), keeping reduced dims as size 1 with ``keepdim=True``.

        Integer and bool inputs sum to int64, as in PyTorch; ``dtype`` casts before summing.
        numpy's ``axis=``/``keepdims=`` spellings are accepted too.

        Examples
        --------
        >>> x = tapegrad.tensor([[1., 2.], [3., 4.]])
        >>> x.sum(), x.sum(0), x.sum(1, keepdim=True).shape
        (tensor(10.), tensor([4., 6.]), torch.Size([2, 1]))
        """
        return _core.sum(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    @_compiled_op
    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The mean of all elements, or over ``dim`` (int or tuple) with ``keepdim``; the input must be
        floating point (or ``dtype`` given), as in PyTorch.
        """
        return _core.mean(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    @_compiled_op
    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the largest element of the flattened tensor (int64, 0-d), or along ``dim``; not
        differentiable (the result never requires grad).
        """
        return _core.argmax(self, dim, keepdim, axis=axis, keepdims=keepdims)


# The compiled dtype conversion behind Tensor.to (which parses the device part first).
def _made_elsewhere(dtype) -> bool:
    """Whether a conversion to `dtype` is made by the module of a dtype numpy lacks (bfloat16,
    the float8 dtypes) rather than by the core (not while an op runs on such a tensor's
    storage, the dispatch off)."""
    return (dtype is _core.bfloat16 or dtype in _FLOAT8_DTYPES) \
        and not _core._subclass_dispatch_set_off(None)


_FLOAT8_DTYPES = _core.FLOAT8_DTYPES


def _to_bfloat16(method, args, kwargs):
    """A plain tensor's conversion to bfloat16 or a float8 dtype (tapegrad/_bfloat16.py,
    tapegrad/_float8.py make it)."""
    from .overrides import _dispatching_dtype_handler
    return _dispatching_dtype_handler(args, kwargs)(method, args, kwargs)


_core_to = _core.TENSOR_METHODS["to"]
_core_type = _core.TENSOR_METHODS["type"]
_DEEPCOPY_SUBCLASS = (
    "The default implementation of __deepcopy__() for non-wrapper subclasses only works for "
    "subclass types that implement new_empty() and for which that function returns another "
    "instance of the same subclass. You should either properly implement new_empty() for your "
    "subclass or override __deepcopy__() if it is intended behavior for new_empty() to return an "
    "instance of a different type.")
_DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
    "the moment.  If you were attempting to deepcopy a module, this may be because of a "
    "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")


def _refuse_strided(method: str, expected_layout: str):
    """PyTorch's RuntimeError for a sparse-only accessor called on a dense (strided) tensor."""
    raise RuntimeError(f"{method} expected {expected_layout} layout but got Strided")


def _storage_and_geometry(arr: np.ndarray):
    """(storage, byte offset, byte strides) of arr: the storage is the outermost ndarray whose
    memory arr views, so two views of one buffer name the same storage object."""
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is arr:
        return arr, 0, arr.strides
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.dtype != arr.dtype:
        # A buffer numpy built with stride tricks or a reinterpreting view: keep the values only.
        dense = arr.copy(order="C")     # (np.ascontiguousarray would make a 0-d array 1-d)
        return dense, 0, dense.strides
    offset = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return root, offset, arr.strides


class _PickledStorage:
    """A tensor's storage as its __reduce_ex__ hands it out.  copy.copy passes it on unpickled
    (the copy shares the memory); pickle writes its bytes afresh for each tensor, because
    PyTorch pickles each tensor's storage by value (a storage object made per tensor, never
    found in pickle's memo): tensors viewing one buffer do not share memory once unpickled.
    tapegrad.save does not pickle tensors through this: it writes PyTorch's records
    (_torch_format.py), where views share one storage, as torch.save's do."""
    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __reduce__(self):
        arr = self.array
        if arr.flags.c_contiguous or arr.flags.f_contiguous:
            fortran = not arr.flags.c_contiguous
            return (_rebuild_storage, (arr.tobytes(order="F" if fortran else "C"), arr.dtype.str,
                                       arr.shape, fortran))
        # A root with its own strides (expand's zero strides, as_strided): the tensor's
        # geometry is relative to them, so keep them over the memory they reach.
        reach = 0 if 0 in arr.shape else 1 + sum((n - 1) * abs(st) for n, st in
                                                 zip(arr.shape, arr.strides)) // arr.itemsize
        if any(st < 0 for st in arr.strides) or any(st % arr.itemsize for st in arr.strides):
            dense = np.ascontiguousarray(arr)            # (no root numpy makes has these)
            return (_rebuild_storage, (dense.tobytes(), arr.dtype.str, arr.shape, False))
        memory = np.lib.stride_tricks.as_strided(arr, (reach,), (arr.itemsize,))
        return (_rebuild_strided_storage,
                (memory.tobytes(), arr.dtype.str, arr.shape, arr.strides))


def _rebuild_storage(data: bytes, dtype: str, shape, fortran: bool) -> np.ndarray:
    """Inverse of _PickledStorage.__reduce__: a writable array of its own."""
    flat = np.frombuffer(data, dtype=np.dtype(dtype)).copy()
    return flat.reshape(shape, order="F" if fortran else "C")


def _rebuild_strided_storage(data: bytes, dtype: str, shape, strides) -> np.ndarray:
    """Inverse of _PickledStorage.__reduce__ for a root with its own strides."""
    flat = np.frombuffer(data, dtype=np.dtype(dtype)).copy()
    return np.lib.stride_tricks.as_strided(flat, tuple(shape), tuple(strides))


def _rebuild_tensor(cls, storage, offset, shape, strides, requires_grad, state):
    """Inverse of Tensor.__reduce_ex__: a leaf of type cls viewing `storage` with that geometry."""
    if isinstance(storage, _PickledStorage):
        storage = storage.array
    if offset == 0 and tuple(shape) == storage.shape and tuple(strides) == storage.strides:
        arr = storage
    elif 0 in tuple(shape):
        # (an empty view may start past its storage's end, as PyTorch allows - a one-element
        # tensor's [1:][1:] - where numpy refuses the offset; it reads nothing, so its geometry
        # is the contiguous one, as every empty tensor's here: fuzz formats 2283, 2556, 2619)
        arr = storage.reshape(-1)[:0].reshape(shape)
    else:
        arr = np.ndarray(shape, storage.dtype, buffer=storage, offset=offset, strides=strides)
    t = _core.TensorBase.__new__(cls)
    t._array = arr
    if requires_grad:
        t.requires_grad = True
    if state:
        t.__dict__.update(state)
    return t


# Methods the compiled op families register (each is a binding function: `t.op(...)` passes t).
for _name, _fn in _core.TENSOR_METHODS.items():
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, _fn)

_core._set_tensor_class(Tensor)
_core._set_size_class(Size)
