"""PyTorch's printed names for tapegrad's classes.

A script run with `import tapegrad as torch` prints `type(x)`, `type(x.shape)` or
`type(torch.finfo())` and expects PyTorch's text (`<class 'torch.Size'>`).  Only the class's repr
changes: `__module__` stays in tapegrad, so pickle still finds our classes (renaming the module
would make an unpickler import PyTorch itself).  Classes outside the package (a user's subclass)
print as usual.
"""
from __future__ import annotations as _annotations

import abc
import sys
import types


# Our modules whose PyTorch counterparts sit elsewhere than `torch` + the same path.
_MOVED_MODULES = {
    "tapegrad.grad_mode": "torch.autograd.grad_mode",
    "tapegrad._optimized_module": "torch._dynamo.eval_frame",
}


def torch_module_name(module: str) -> str:
    """PyTorch's name for one of our modules (`tapegrad.x` -> `torch.x`); others unchanged."""
    if module in _MOVED_MODULES:
        return _MOVED_MODULES[module]
    if module == "tapegrad" or module.startswith("tapegrad."):
        return "torch" + module[len("tapegrad"):]
    return module


def object_repr(obj, module: str | None = None) -> str:
    """Python's default object repr with PyTorch's module path: `<torch.utils.data.dataloader.
    DataLoader object at 0x...>`, as a tutorial printing its loader, dataset, sampler or scheduler
    shows.  Used as `__repr__` by those base classes; a user's subclass keeps its own module.
    `module`: our module whose PyTorch counterpart holds the class, where ours lives elsewhere
    (or the class names PyTorch's module in its own `_torch_module`)."""
    cls = type(obj)
    # A class defined elsewhere in PyTorch than its path here says where in `_torch_module`, which
    # (read from the class's own namespace) a user's subclass does not inherit.
    path = cls.__dict__.get("_torch_module") or torch_module_name(module or cls.__module__)
    return f"<{path}.{cls.__qualname__} object at {id(obj):#x}>"


def _marked_class(cls) -> type:
    """The class a dtype's mark class (a bfloat16 or float8 tensor's) marks: Tensor or Parameter."""
    return next(c for c in cls.__mro__ if not getattr(c, "_dtype_class", False))


class TorchNamedClass(type):
    """A metaclass for the public classes whose PyTorch counterparts live in `torch` itself or a
    submodule of the same path (or one in _MOVED_MODULES): Tensor, Size, device, finfo, iinfo,
    layout, memory_format, the grad-mode guards, the autograd nodes, and the fx / export objects
    scripts print the type of (Graph, Node, ExportedProgram, ...).  (Not nn.Module: a metaclass there would conflict with a user's own, e.g.
    `class Net(nn.Module, ABC)`.)"""

    def __init__(cls, name, bases, namespace, **kwargs):
        super().__init__(name, bases, namespace, **kwargs)
        if "_c_type_name" in namespace:
            # (CPython's messages about its instances name it so: "'torch.Size' object does not
            # support item assignment")
            from . import _core
            _core._use_c_type_name(cls)
        if getattr(cls, "_dtype_class", False):
            # a dtype's mark answers to the name of the class it marks, as PyTorch's tensor of
            # that dtype does: type(t).__name__ (a distribution's "Expected parameter probs
            # (Tensor of shape ...)", format's "passed to Tensor.__format__") says Tensor or
            # Parameter.  (__qualname__ stays the mark's own: pickle finds the class by it.)
            cls.__name__ = _marked_class(cls).__name__

    def __repr__(cls) -> str:
        # a class whose PyTorch name is not its path (torch._C.Generator, the compiled dtype
        # class) says so in `_c_type_name`, which its subclasses do not inherit here
        named = cls.__dict__.get("_c_type_name")
        if named is not None:
            return f"<class '{named}'>"
        if getattr(cls, "_dtype_class", False):
            # a bfloat16 or float8 tensor's class is its dtype's mark: PyTorch's tensor is a
            # Tensor (or Parameter), the class this one marks
            return repr(_marked_class(cls))
        return f"<class '{torch_module_name(cls.__module__)}.{cls.__qualname__}'>"


class TorchTensorNamedClass(type):
    """A metaclass for tensor classes of ours that are not `tapegrad.Tensor` (the sparse COO
    tensor, kept apart so dense ops cannot misread it): PyTorch's sparse tensors are
    `torch.Tensor`, and `print(type(emb.weight.grad))` after a sparse=True embedding shows that."""

    def __repr__(cls) -> str:
        if torch_module_name(cls.__module__) == cls.__module__:     # a user's subclass
            return super().__repr__()
        return "<class 'torch.Tensor'>"


class TorchNamedABCMeta(TorchNamedClass, abc.ABCMeta):
    """The same repr for base classes users subclass and print `type(...)` of: Dataset,
    DataLoader, Optimizer, LRScheduler.  Deriving from ABCMeta keeps `class MyData(Dataset, ABC)` legal,
    as it is in PyTorch, where these bases have no metaclass at all."""

    def __new__(mcls, name, bases, namespace, **kwargs):
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        # PyTorch enforces @abstractmethod only in classes that are ABCs there: with ABC (or an
        # abc base such as IterableDataset's Iterable) among their bases.  A plain
        # `class Base(Dataset)` with an abstract method can be instantiated, as in PyTorch.
        if cls.__abstractmethods__ and not any(
                isinstance(base, abc.ABCMeta) and not isinstance(base, TorchNamedABCMeta)
                for base in cls.__mro__):
            cls.__abstractmethods__ = frozenset()
        return cls


def name_as_registered(functions: dict) -> None:
    """Give each compiled function its public name where the op families had to name it apart
    from a sibling of the same name (F.softmax is `functional_softmax` beside the tensor op
    `softmax`; torch.embedding is `torch_embedding` beside F.embedding): `print(F.softmax)` and a
    script listing `act.__name__` show PyTorch's names.  Other names (shared aliases) stay."""
    for name, fn in functions.items():
        if getattr(fn, "__name__", None) in ("functional_" + name, "torch_" + name):
            fn.__name__ = fn.__qualname__ = name


class TorchNamedModule(types.ModuleType):
    """The class of our public modules, so that a missing name is reported under PyTorch's module
    name: `torch.flattern(x)` or a name from a newer release raises "module 'torch' has no
    attribute 'flattern'", the message forum threads quote, not 'tapegrad'.  Python calls this
    only after the ordinary lookup and the module's own `__getattr__` (lazy names) have failed."""

    def __getattr__(self, name):
        raise AttributeError(f"module '{torch_module_name(self.__name__)}' has no attribute "
                             f"'{name}'", name=name, obj=self)


def report_missing_names_as_torch(module_name: str) -> None:
    """Called by a public module on itself (`report_missing_names_as_torch(__name__)`)."""
    module = sys.modules[module_name]
    module.__class__ = TorchNamedModule
    # A plain module has no `__module__`; an instance of a class defined here would inherit the
    # class's ("tapegrad._torch_names"), and tools that read `obj.__module__` to find where a
    # name was defined (griffe, for the API reference) would place the whole module there.
    module.__dict__.setdefault("__module__", module_name)


def _name_compiled_classes() -> None:
    """The core's classes scripts print the type of get TorchNamedClass as their metatype:
    `type(x.dtype)` is torch.dtype, a tensor hook's handle torch.utils.hooks.RemovableHandle,
    `type(x.max(0))` torch.return_types.max (the return types made later take the metatype
    from their base)."""
    from . import _core
    made = [c for c in vars(_core.return_types).values() if isinstance(c, type)]
    for cls in (_core.dtype, _core.RemovableHandle, _core._ReturnType, *made):
        if type(cls) is type:
            _core._set_printed_metatype(cls, TorchNamedClass)
            _core._use_c_type_name(cls)


_name_compiled_classes()
