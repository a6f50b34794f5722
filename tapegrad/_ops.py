"""torch.ops: operators by namespace (``torch.ops.mylib.scale``, ``torch.ops.aten.add.Tensor``)
and the registry behind them, where torch.library (tapegrad/library.py) writes.

An operator is an `OperatorEntry`: its schema and its kernels by dispatch key, PyTorch's keys
reduced to what a CPU library has: a device kernel ("CPU", or "CompositeExplicitAutograd" for any
device), a fake kernel ("Meta", register_fake: runs when an input is on the meta device), an
autograd formula (register_autograd; custom_op ops always have one, which refuses backward until
a formula is registered) and "CompositeImplicitAutograd"/"Autograd" kernels, which run with
recording on, their own ops giving the gradient.  `torch.ops.<ns>.<name>` is an OpOverloadPacket,
`.default` / `.<overload>` its OpOverloads; calling either runs `OperatorEntry.call`.

``torch.ops.aten`` reaches tapegrad's own functions (and Tensor methods, for aten ops that are
methods only: view, expand ...): every overload name resolves to that function, whose argument
parsing plays the part of PyTorch's overload resolution.  Their schemas are not tabulated.
"""
from __future__ import annotations as _annotations

import importlib.machinery
import os
import sys
import types

from . import _core
from ._op_schema import FunctionSchema
from ._torch_names import TorchNamedClass

_REGISTRY: dict = {}       # "ns::name.overload" ("ns::name" for default) -> OperatorEntry


def qualified(ns: str, name: str, overload: str = "") -> str:
    return f"{ns}::{name}" + (f".{overload}" if overload and overload != "default" else "")


class OperatorEntry:
    """One operator overload: schema, kernels, fake kernel, autograd formula."""

    def __init__(self, schema: FunctionSchema, custom_op=None):
        self.schema = schema
        self.kernels: dict = {}          # dispatch key -> callable
        self.fake = None
        self.autograd = None             # (backward, setup_context) once registered
        self.custom_op = custom_op       # the CustomOpDef that made it (its errors name it)
        self._generated = None

    @property
    def ns(self) -> str:
        return self.schema.name.partition("::")[0]

    @property
    def opname(self) -> str:
        return self.schema.name.partition("::")[2]

    @property
    def overload_name(self) -> str:
        return self.schema.overload_name or "default"

    def __str__(self) -> str:
        return f"{self.ns}.{self.opname}.{self.overload_name}"

    # -- calling ------------------------------------------------------------------------------

    def bind(self, args, kwargs):
        """(positional values in schema order, keyword-only values), defaults filled in;
        PyTorch's RuntimeError for arguments the schema does not take."""
        positional = [a for a in self.schema.arguments if not a.kwarg_only]
        keyword = [a for a in self.schema.arguments if a.kwarg_only]
        if len(args) > len(positional):
            raise RuntimeError(f"{self.schema.name}() expected at most {len(positional)} "
                            f"argument(s) but received {len(args)} argument(s). Declaration: "
                            f"{self.schema}")
        kwargs = dict(kwargs)
        values = list(args)
        for a in positional[len(args):]:
            if a.name in kwargs:
                values.append(kwargs.pop(a.name))
            elif a.has_default:
                values.append(a.default)
            else:
                raise RuntimeError(f"{self.schema.name}() is missing value for argument "
                                   f"'{a.name}'. Declaration: {self.schema}")
        kwonly = {}
        for a in keyword:
            if a.name in kwargs:
                kwonly[a.name] = kwargs.pop(a.name)
            elif a.has_default:
                kwonly[a.name] = a.default
            else:
                raise RuntimeError(f"{self.schema.name}() is missing value for argument "
                                   f"'{a.name}'. Declaration: {self.schema}")
        for position, (a, v) in enumerate(zip(self.schema.arguments,
                                              (*values, *(kwonly[a.name] for a in keyword)))):
            if not _fits(a.type, v):
                raise RuntimeError(f"{self.schema.name}() Expected a value of type "
                                   f"'{_type_label(a.type)}' for argument '{a.name}' but instead "
                                   f"found type '{type(v).__name__}'.\nPosition: {position}\n"
                                   f"Value: {v!r}\nDeclaration: {self.schema}")
        if kwargs:
            raise RuntimeError(f"Unknown keyword argument '{next(iter(kwargs))}' for operator "
                               f"'{self.schema.name}'. Schema: {self.schema}")
        return tuple(values), kwonly

    def device_kernel(self, args, kwonly):
        """The kernel an input's device selects: the fake one for meta inputs."""
        on_meta = any(getattr(t, "is_meta", False) for t in _tensors_in((*args, *kwonly.values())))
        if on_meta:
            if self.fake is not None:
                return self.fake
            if "Meta" in self.kernels:
                return self.kernels["Meta"]
            what = self.custom_op if self.custom_op is not None else self.schema.name
            fn = getattr(self.custom_op, "_name", self.opname)
            raise RuntimeError(f"There was no fake impl registered for {what!r}. This is "
                               f"necessary for torch.compile/export/fx tracing to work. Please "
                               f"use `{fn}.register_fake` to add an fake impl.")
        # (an Autograd kernel, where registered, runs first, as PyTorch's Autograd key precedes
        # the backend's: it is the one that records)
        for key in ("Autograd", "CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd"):
            if key in self.kernels:
                return self.kernels[key]
        raise NotImplementedError(f"Could not run '{self.schema.name}' with arguments from the "
                                  f"'CPU' backend. '{self.schema.name}' is only available for "
                                  f"these backends: [{', '.join(sorted(self.kernels)) or ''}].")

    def call(self, args, kwargs):
        from .grad_mode import is_grad_enabled, no_grad
        args, kwonly = self.bind(args, kwargs)
        kernel = self.device_kernel(args, kwonly)
        tensors = list(_tensors_in(args))
        wants_grad = is_grad_enabled() and any(t.requires_grad for t in tensors)
        if self.autograd is not None or self.custom_op is not None:
            if wants_grad:
                from ._custom_op_autograd import apply_generated
                result = apply_generated(self, kernel, args, kwonly)
            else:
                with no_grad():                 # (PyTorch runs the kernel below autograd)
                    result = kernel(*args, **kwonly)
        else:
            # a kernel registered by Library.impl with no autograd formula: PyTorch records what
            # it runs (its fallback warns at backward); so does tapegrad
            result = kernel(*args, **kwonly)
        if self.custom_op is not None and kernel is not self.fake:
            self.custom_op._check_no_alias(args, kwonly, result)
        self._bump_written(args, kwonly)
        return result

    def _bump_written(self, args, kwonly):
        """A write the schema declares counts as one more version of the tensor (PyTorch's
        ADInplaceOrView step), so a kernel that wrote through .numpy() is still seen by the
        saved-tensor checks."""
        from .grad_mode import no_grad
        values = dict(zip((a.name for a in self.schema.arguments if not a.kwarg_only), args))
        values.update(kwonly)
        for a in self.schema.arguments:
            if a.is_write:
                for t in _tensors_in((values.get(a.name),)):
                    with no_grad():
                        t.copy_(t)      # (a write of its own values: the version's one step)


_SCALAR_KINDS = {"float": (int, float), "int": (int,), "SymInt": (int,), "bool": (bool,),
                 "str": (str,), "Scalar": (int, float, complex, bool)}


def _fits(kind: str, value) -> bool:
    """Whether value can stand for an argument of schema type `kind` (PyTorch's casts: an int
    for a float, a tensor for a Tensor, a list of them for Tensor[]; None for an optional)."""
    import numpy as np
    if kind.endswith("?"):
        return value is None or _fits(kind[:-1], value)
    if kind.endswith("[]"):
        return isinstance(value, (list, tuple)) and all(_fits(kind[:-2], v) for v in value)
    if kind == "Tensor":
        return isinstance(value, _core.TensorBase)
    allowed = _SCALAR_KINDS.get(kind)
    if allowed is None:                 # (ScalarType, Device, Generator ...: not checked)
        return True
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) and kind != "bool" and kind != "Scalar":
        return False
    return isinstance(value, allowed)


def _type_label(kind: str) -> str:
    return {"SymInt": "int", "SymInt[]": "List[int]", "Tensor[]": "List[Tensor]",
            "Tensor?": "Optional[Tensor]"}.get(kind, kind)


def _tensors_in(values):
    for v in values:
        if isinstance(v, _core.TensorBase):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, _core.TensorBase))


def register(entry: OperatorEntry) -> OperatorEntry:
    key = qualified(entry.ns, entry.opname, entry.overload_name)
    if key in _REGISTRY:
        raise RuntimeError(f"Tried to register an operator ({entry.schema}) with the same name "
                           f"and overload name multiple times. Each overload's schema should "
                           f"only be registered with a single call to def(). Duplicate "
                           f"registration: registered by the Python library. Original "
                           f"registration: registered by the Python library")
    _REGISTRY[key] = entry
    return entry


def lookup(qualname: str) -> OperatorEntry:
    """The entry of "ns::name" or "ns::name.overload"; PyTorch's error when none is defined."""
    entry = _REGISTRY.get(qualname.replace(".default", ""))
    if entry is None:
        raise RuntimeError(f"Could not find schema for {qualname}")
    return entry


# -- torch.ops.<ns>.<name>.<overload> ------------------------------------------------------------

class OpOverload(metaclass=TorchNamedClass):
    """One overload of an operator (torch.ops.mylib.scale.default)."""

    def __init__(self, packet, overload_name: str, call, entry=None):
        self._overloadpacket = packet
        self._overloadname = overload_name
        self._call = call
        self._entry = entry
        self._opname = packet._opname
        self.namespace = packet._namespace
        self._namespace = packet._namespace
        self.__name__ = f"{packet._opname}.{overload_name}"
        self.__qualname__ = self.__name__

    @property
    def overloadpacket(self):
        return self._overloadpacket

    @property
    def _schema(self):
        if self._entry is None:
            raise AttributeError(f"tapegrad does not tabulate the schema of {self!r}")
        return self._entry.schema

    def name(self) -> str:
        return qualified(self._namespace, self._opname, self._overloadname)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._namespace}.{self._opname}.{self._overloadname}"

    __str__ = __repr__


class OpOverloadPacket(metaclass=TorchNamedClass):
    """All overloads of one operator name (torch.ops.mylib.scale); calling it calls the
    overload its arguments fit (the default one for operators registered here)."""

    def __init__(self, namespace: str, opname: str, resolve):
        self._namespace = namespace
        self._opname = opname
        self._resolve = resolve          # overload name -> OpOverload or None
        self._qualified_op_name = f"{namespace}::{opname}"
        self.__name__ = opname

    def __getattr__(self, overload: str):
        if overload.startswith("__"):
            raise AttributeError(overload)
        found = self._resolve(self, overload)
        if found is None:
            raise AttributeError(f"The underlying op of '{self!r}' has no overload name "
                                 f"'{overload}'")
        setattr(self, overload, found)
        return found

    def overloads(self) -> list:
        if self._namespace == "aten":
            raise NotImplementedError("tapegrad does not tabulate aten's overload names: every "
                                      "name reaches the one tapegrad function")
        return [key.partition(".")[2] or "default" for key in _REGISTRY
                if key.partition(".")[0] == self._qualified_op_name]

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._namespace}.{self._opname}"

    __str__ = __repr__


def _registered_overload(packet, overload):
    entry = _REGISTRY.get(qualified(packet._namespace, packet._opname, overload))
    if entry is None:
        return None
    return OpOverload(packet, overload, lambda *a, **k: entry.call(a, k), entry)


def _aten_overload(packet, overload):
    import tapegrad
    from .export._aten import aten_op
    recorded = aten_op(packet._opname, overload)
    if recorded is not None:            # an op torch.export records: aten's own arguments
        return OpOverload(packet, overload, recorded)
    fn = getattr(tapegrad, packet._opname, None)
    if not callable(fn):
        fn = getattr(tapegrad.Tensor, packet._opname, None)
    return None if fn is None else OpOverload(packet, overload, fn)


class _OpNamespace(types.ModuleType):
    """torch.ops.<ns>: its operators as attributes (AttributeError for one not defined)."""

    def __init__(self, name: str):
        super().__init__("tapegrad.ops." + name)
        self.name = name

    def __getattr__(self, opname: str):
        if opname.startswith("__"):
            raise AttributeError(opname)
        if self.name == "aten":
            import tapegrad
            from .export._aten import aten_names
            known = callable(getattr(tapegrad, opname, None)) or \
                callable(getattr(tapegrad.Tensor, opname, None)) or opname in aten_names()
            resolve = _aten_overload
        else:
            known = any(key.partition(".")[0] == f"{self.name}::{opname}" for key in _REGISTRY)
            resolve = _registered_overload
        if not known:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{opname}'")
        packet = OpOverloadPacket(self.name, opname, resolve)
        setattr(self, opname, packet)
        return packet


class _Ops(types.ModuleType):
    """torch.ops: a namespace per library, made on first use."""

    def __init__(self):
        super().__init__("tapegrad.ops")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _OpNamespace(name)
        setattr(self, name, namespace)
        return namespace

    # the libraries load_library loaded: none can be (PyTorch's set of paths, always empty here)
    loaded_libraries: set = set()

    def load_library(self, path):
        # PyTorch resolves the path and dlopens it: a path that names no loadable file is its
        # OSError (examples' fx/native_interpreter loads a library it has not built yet).
        path = os.path.realpath(path)
        if not os.path.isfile(path):
            raise OSError(f"Could not load this library: {path}")
        raise RuntimeError(f"tapegrad cannot load the compiled operator library {path!r}: "
                           f"its kernels are written against PyTorch's C++ API")


def _importable(module):
    """`module` as sys.modules' entry for its name, with a spec, so that `import <name>` (and
    importlib.util.find_spec, which the corpus hook's alias uses) finds it."""
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    sys.modules.setdefault(module.__name__, module)
    return module


# (`import tapegrad.ops` finds it, as `import torch.ops` does)
ops = _importable(_Ops())


class _ClassNamespace(types.ModuleType):
    """torch.classes.<ns>: the TorchScript custom classes a loaded C++ library registered under
    <ns>; tapegrad loads none, so each class asked for is PyTorch's "does not exist" error."""

    def __init__(self, name: str):
        super().__init__("tapegrad.classes." + name)
        self.name = name

    def __getattr__(self, classname: str):
        if classname.startswith("__"):
            raise AttributeError(classname)
        raise RuntimeError(f"Tried to instantiate class '{self.name}.{classname}', but it does "
                           f"not exist! Ensure that it is registered via torch::class_")


class _Classes(types.ModuleType):
    """torch.classes: a namespace per library of custom classes, made on first use."""

    def __init__(self):
        super().__init__("tapegrad.classes")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        namespace = _ClassNamespace(name)
        setattr(self, name, namespace)
        return namespace

    @property
    def loaded_libraries(self):
        return ops.loaded_libraries

    def load_library(self, path):
        ops.load_library(path)


classes = _importable(_Classes())
