"""The flags of a torch.backends module (cudnn.benchmark, mkldnn.enabled): settable module
attributes that accept only a bool, as PyTorch's (`set_benchmark_cudnn expects a bool, but got
int`), remembered with no effect on tapegrad's computation."""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name, _capture_setting
import sys
import types


class _BoolFlagModule(types.ModuleType):
    """A module's class whose assignments to a name in its `_FLAGS` (flag -> the setter
    PyTorch's error names) go through the bool check."""

    def __setattr__(self, name, value):
        setter = self.__dict__["_FLAGS"].get(name)
        if setter is not None and not isinstance(value, bool):
            raise RuntimeError(f"{setter} expects a bool, but got {_type_name(value)}")
        _capture_setting(f"a flag of {self.__name__} ({name})")
        super().__setattr__(name, value)


def check_flags(module_name: str) -> None:
    """Turn on the bool check of the module `module_name` (call at its end)."""
    sys.modules[module_name].__class__ = _BoolFlagModule
