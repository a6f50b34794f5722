"""torch.jit._script's names that scripts reach as torch.jit.Attribute and torch.jit.interface
(this module's path is PyTorch's, where their classes print from: torch.jit._script.Attribute)."""
from __future__ import annotations as _annotations

import collections
import inspect
import warnings

from .._torch_names import TorchNamedClass as _TorchNamedClass
from ..nn import Module


class Attribute(collections.namedtuple("Attribute", ("value", "type")),
                metaclass=_TorchNamedClass):
    """``Attribute(value, type)``: marks a module attribute's TorchScript type; in eager code the
    (value, type) pair, as PyTorch's."""
    __slots__ = ()


def interface(obj):
    """Declares a TorchScript interface (a class or Module whose implementations share its
    methods): checked as PyTorch's compiler checks it, marked as PyTorch marks it, and returned
    unchanged (nothing is compiled: the implementations run as Python)."""
    warnings.warn("`torch.jit.interface` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning)       # (stacklevel 1, as PyTorch's: hidden by default)
    if not isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    module_interface = issubclass(obj, Module) and len(obj.mro()) == 3
    if not module_interface and len(obj.mro()) > 2:
        raise RuntimeError("TorchScript interface does not support inheritance yet. Please "
                           "directly inherit from 'object' or 'nn.Module'.")
    for name, method in vars(obj).items():
        if inspect.isfunction(method) and \
                inspect.signature(method).return_annotation is inspect.Signature.empty:
            raise RuntimeError(f"\ninterface declarations must have a return type annotated.: "
                               f"{obj.__qualname__}.{name}")
    # TorchScript's name for it: __torch__, the module's path but for __main__, the class's
    # __name__ (a local class's too)
    module = obj.__module__
    prefix = "__torch__" if module == "__main__" else f"__torch__.{module}"
    obj.__torch_script_interface__ = f"{prefix}.{obj.__name__}"
    return obj
