"""torch.sparse.FloatTensor, DoubleTensor, ...: PyTorch's legacy sparse constructors, still
called by scripts written for PyTorch 0.x (tkipf/pygcn's sparse_mx_to_torch_sparse_tensor:
``torch.sparse.FloatTensor(indices, values, shape)``).  Each form warns as PyTorch does and
builds the sparse COO tensor sparse_coo_tensor would; isinstance(t, torch.sparse.FloatTensor)
asks whether t is a sparse float32 tensor."""
from __future__ import annotations as _annotations

import warnings

from . import _core
from ._device import check_device
from ._legacy import LegacyTensorClassMeta, legacy_tensor_class
from .tensor import Size, is_int

_SIGNATURES = (" * (*, torch.device device = None)\n"
               " * (Tensor indices, Tensor values, *, torch.device device = None)\n"
               " * (Tensor indices, Tensor values, tuple of ints size, *, torch.device device = None)\n"
               " * (tuple of ints size, *, torch.device device = None)\n")

# {who}: "torch.sparse.SparseTensor" for the typed classes, "SparseTensor.new" for Tensor.new
_SEQUENCE_REFUSED = ("{who}(sequence) only accepts sizes.  Please use "
                     "torch.sparse_coo_tensor() or construct a strided tensor and convert it to "
                     "sparse via to_sparse.")
_DEPRECATED = {
    "empty": ("torch.sparse.SparseTensor() is deprecated.  Please use "
              "torch.sparse_coo_tensor((0,), dtype=)."),
    "shape": ("torch.sparse.SparseTensor(shape, *, device=) is deprecated.  Please use "
              "torch.sparse_coo_tensor(shape, dtype=, device=)."),
    "indices, values": ("torch.sparse.SparseTensor(indices, values, *, device=) is deprecated.  "
                        "Please use torch.sparse_coo_tensor(indices, values, dtype=, device=)."),
    "indices, values, shape": ("torch.sparse.SparseTensor(indices, values, shape, *, device=) is "
                               "deprecated.  Please use torch.sparse_coo_tensor(indices, values, "
                               "shape, dtype=, device=)."),
}


_warned: set[str] = set()


def _warn_once(form: str, stacklevel: int) -> None:
    """PyTorch's TORCH_WARN_ONCE: each form's deprecation warning once per process, whatever the
    warning filters (``stacklevel`` counts from the caller: the script's frame)."""
    if form not in _warned:
        _warned.add(form)
        warnings.warn(_DEPRECATED[form], UserWarning, stacklevel=stacklevel + 1)


def _form(args: tuple, who: str) -> str | None:
    """Which of the four signatures args match (None: no match)."""
    if not args:
        return "empty"
    if all(is_int(a) for a in args):
        return "shape"
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and all(is_int(a) for a in args[0]):
        if not isinstance(args[0], Size):       # PyTorch takes its sizes as a torch.Size only
            raise TypeError(_SEQUENCE_REFUSED.format(who=who))
        return "shape"
    if len(args) in (2, 3) and all(isinstance(a, _core.TensorBase) for a in args[:2]):
        if len(args) == 2:
            return "indices, values"
        if isinstance(args[2], (tuple, list)) and all(is_int(a) for a in args[2]):
            return "indices, values, shape"
    return None


def _arg_types(args: tuple) -> str:
    return ", ".join("Tensor" if isinstance(a, _core.TensorBase) else _core.type_name(a) for a in args)


def legacy_sparse_new(dtype, args: tuple, device, who: str, warn: bool):
    """PyTorch's legacy constructor for the sparse COO layout, shared by the typed classes
    (torch.sparse.FloatTensor(...), which warn each form's deprecation once) and a sparse
    tensor's ``new(...)`` (dlrm's RWSAdagrad: ``grad.new(indices, values, size)``, no warning):
    ``(indices, values[, size])`` builds sparse_coo_tensor from them, the values keeping their
    own dtype; ``(*sizes)``, ``(Size)`` and ``()`` an empty tensor of ``dtype``."""
    from . import zeros
    from ._sparse_coo import _sparse_coo_tensor
    check_device(device, "new")
    if len(args) > 3:
        raise TypeError(f"new() takes 3 positional arguments but {len(args)} were given")
    form = _form(args, who)
    if form is None:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({_arg_types(args)}), but expected one of:\n{_SIGNATURES}")
    if warn:
        _warn_once(form, stacklevel=3)      # over this function and the class's __call__
    if form in ("empty", "shape"):
        shape = (0,) if form == "empty" else tuple(args[0] if len(args) == 1 and not is_int(args[0]) else args)
        return _sparse_coo_tensor(zeros((len(shape), 0), dtype=_core.int64),
                                  zeros((0,), dtype=dtype), shape)
    indices, values = args[0], args[1]
    if indices.dtype != _core.int64:
        # PyTorch's two forms check in different places, with different messages
        raise RuntimeError("indices must be an int64 tensor" if form.endswith("shape") else
                           f"expected scalar type Long but found "
                           f"{_core.scalar_type_name_of(indices._array.dtype)}")
    # The values keep their own dtype (PyTorch's legacy constructors do not convert them).
    return _sparse_coo_tensor(indices, values, *(tuple(args[2]),) if form.endswith("shape") else ())


class SparseTypedTensorMeta(LegacyTensorClassMeta):
    """The metaclass of torch.sparse.FloatTensor, ...: none of them is a class of the tensors it
    makes (as in PyTorch).  Not a TypedTensorMeta: Tensor.type() and Module.type() take those as
    dense dtypes."""

    is_sparse = True

    def __call__(cls, *args, device=None):
        return legacy_sparse_new(cls.dtype, args, device, "torch.sparse.SparseTensor", warn=True)

    def __instancecheck__(cls, obj) -> bool:
        return bool(getattr(obj, "is_sparse", False)) and obj.dtype == cls.dtype


def _sparse_typed_class(name: str, dt) -> type:
    return legacy_tensor_class(
        SparseTypedTensorMeta, name, dt, "tapegrad.sparse",
        f"Legacy constructor of sparse COO {dt} tensors: {name}(indices, values, size), "
        f"{name}(indices, values), {name}(*sizes), {name}() (each deprecated).")


FloatTensor = _sparse_typed_class("FloatTensor", _core.float32)
DoubleTensor = _sparse_typed_class("DoubleTensor", _core.float64)
HalfTensor = _sparse_typed_class("HalfTensor", _core.float16)
BFloat16Tensor = _sparse_typed_class("BFloat16Tensor", _core.bfloat16)
LongTensor = _sparse_typed_class("LongTensor", _core.int64)
IntTensor = _sparse_typed_class("IntTensor", _core.int32)
ShortTensor = _sparse_typed_class("ShortTensor", _core.int16)
CharTensor = _sparse_typed_class("CharTensor", _core.int8)
ByteTensor = _sparse_typed_class("ByteTensor", _core.uint8)
