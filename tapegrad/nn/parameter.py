"""nn.Parameter: a leaf tensor that a Module registers as one of its parameters; the lazy
modules' placeholders, UninitializedParameter and UninitializedBuffer."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import types

from .. import _core
from ..tensor import Tensor


class _FlaggedInstanceMeta(type(Tensor)):
    """isinstance(t, Parameter) / isinstance(t, Buffer) also holds for a tensor that keeps its
    own class and carries the flag the class names (``_instance_flag``), as PyTorch's metaclasses
    make it: a Buffer is a plain tensor flagged ``_is_buffer``, a Parameter of a user's tensor
    subclass an instance of that subclass flagged ``_is_param``.  Derived from Tensor's
    metaclass (the one that prints the class under torch's name), as a subclass's must be."""

    def __instancecheck__(cls, instance) -> bool:
        flag = cls.__dict__.get("_instance_flag")
        if flag is not None and isinstance(instance, Tensor) and getattr(instance, flag, False):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_FlaggedInstanceMeta):
    """A tensor that is a module parameter: it shares `data`'s storage and requires grad."""

    _instance_flag = "_is_param"

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from ..creation import empty
            data = empty(0)
        if not isinstance(data, _core.TensorBase):
            raise TypeError(f"Parameter data must be a Tensor, got {_type_name(data)}")
        if data.is_meta and cls.is_meta is not True:   # (Tensor's is a getter; MetaTensor's True)
            from .._meta import meta_parameter_class
            cls = meta_parameter_class()
        if cls is Parameter and data.dtype is _core.bfloat16:
            from .._bfloat16 import BFloat16Parameter as cls    # (its class carries its dtype)
        elif cls is Parameter and data.dtype in _core.FLOAT8_DTYPES:
            from .._float8 import parameter
            return parameter(data, requires_grad)
        if not type(data).__module__.startswith("tapegrad"):
            return _custom_tensor_parameter(data, requires_grad)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, *args, **kwargs):
        # All the work is __new__'s; a subclass's __new__ may take other arguments (as PyTorch's
        # Parameter has no __init__ of its own).
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    # Parameters opt out of the __torch_function__ protocol, as PyTorch's do.
    from ..overrides import _disabled_torch_function_impl as __torch_function__

    # Pickling is Tensor.__reduce_ex__ (it rebuilds type(self) with requires_grad). A deep copy
    # is a fresh Parameter on cloned data, as torch's Parameter.__deepcopy__ makes: without .grad
    # and without the attributes code set on it (an Opacus-style p.grad_sample stays behind, so
    # a deep-copied client model starts clean and `hasattr(p, "grad_sample")` is False).
    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor.detach(self).clone(), self.requires_grad)
        memo[id(self)] = result
        return result


def _custom_tensor_parameter(data, requires_grad):
    """nn.Parameter(x) of a user's Tensor subclass: x detached, still of its class, flagged a
    parameter (PyTorch's path for custom tensors; its subclass behaviour is kept)."""
    t = data.detach().requires_grad_(requires_grad)
    if type(t) is not type(data):
        raise RuntimeError(
            f"Creating a Parameter from an instance of type {type(data).__name__} requires that "
            f"detach() returns an instance of the same type, but return type {type(t).__name__} "
            "was found instead. To use the type as a Parameter, please correct the detach() "
            "semantics defined by its __torch_dispatch__() implementation.")
    t._is_param = True
    return t


_UNINITIALIZED_MESSAGE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized one. "
    "Call `forward` to initialize the parameters before accessing their attributes.")


def _uninitialized_use(what: str, kind: str = "UninitializedParameter") -> str:
    return (f"Attempted to use an uninitialized parameter in {what}. This error happens when you "
            f"are using a `LazyModule` or explicitly manipulating `torch.nn.parameter.{kind}` "
            "objects. When using LazyModules Call `forward` with a dummy batch to initialize the "
            "parameters before calling torch functions")


def _describe(func) -> str:
    """`func` as PyTorch's message prints it: a Tensor method as the C method it is there."""
    name = getattr(func, "__name__", None)
    if name is not None and getattr(Tensor, name, None) is func:
        return f"<method '{name}' of 'torch._C.TensorBase' objects>"
    if name is not None and not isinstance(func, types.FunctionType):
        return f"<built-in method {name}>"      # a C entry (a torch function)
    return repr(func)


# What a placeholder still allows (PyTorch's UninitializedTensorMixin._allowed_methods): what a
# module's conversions (to, float, ...) and load_state_dict's copy into it need; property reads
# (method-wrappers: dtype, requires_grad, data...) pass too.
_ALLOWED_METHOD_NAMES = ("__hash__", "size", "copy_", "is_complex", "is_floating_point", "half",
                         "float", "double", "char", "short", "int", "long", "cuda", "cpu", "to",
                         "get_device")


class UninitializedTensorMixin:
    """What both lazy placeholders share (PyTorch's UninitializedTensorMixin): reading the
    shape raises until the module's first forward gives it one."""

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED_MESSAGE)

    # (PyTorch lets size() read the placeholder's empty shape; other uses name the function)
    def numel(self):
        raise ValueError(_uninitialized_use("<method 'numel' of 'torch._C.TensorBase' objects>",
                                            type(self).__name__))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Any op but the allowed ones on a placeholder raises ValueError naming the op, as in
        PyTorch (an op on the empty placeholder would otherwise compute on no elements)."""
        if (type(func).__name__ == "method-wrapper"
                or any(func is getattr(Tensor, name) for name in _ALLOWED_METHOD_NAMES)):
            return super().__torch_function__(func, types, args, kwargs)
        raise ValueError(_uninitialized_use(_describe(func), cls.__name__))

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    cls_to_become: type = Tensor      # what materialize() turns the placeholder into

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Become a ``cls_to_become`` of ``shape`` (values uninitialised) and of the
        placeholder's dtype unless ``dtype`` is given - in place, as PyTorch's: an optimizer or
        a hook that holds the placeholder then holds the real tensor."""
        from ..creation import empty
        self.data = empty(tuple(shape), device=device,
                          dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet; reading its shape raises, as in PyTorch."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return super().__new__(cls, _empty(dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    # A copy is a fresh placeholder (Parameter's deep copy clones data, which has no shape yet).
    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, dtype=self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A lazy module's buffer whose shape is not known yet (e.g. LazyBatchNorm's running_mean).
    A plain tensor, not a Parameter, as in PyTorch."""

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        t = _core.TensorBase.__new__(cls)
        t._array = _empty(dtype)._array
        t.requires_grad = requires_grad
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass


def is_lazy(param) -> bool:
    """Whether `param` is a lazy module's placeholder not yet given its shape."""
    return isinstance(param, UninitializedTensorMixin)


def _empty(dtype):
    from ..creation import empty
    return empty(0, dtype=dtype)


class Buffer(Tensor, metaclass=_FlaggedInstanceMeta):
    """A tensor that a Module registers as a buffer when assigned as its attribute (module state
    that is not a parameter, such as running statistics); plain tensors assigned so stay plain
    attributes.  ``persistent=False`` keeps it out of ``state_dict()``.

    ``Buffer(data)`` returns ``data`` detached (keeping its ``requires_grad``), marked as a buffer.
    """

    _instance_flag = "_is_buffer"

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            from ..creation import empty
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
