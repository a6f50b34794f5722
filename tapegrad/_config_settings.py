"""The settings modules of PyTorch's compiler (torch._dynamo.config, torch._inductor.config):
modules whose attributes are exactly a fixed set of named settings, some grouped
(``torch._inductor.config.triton.cudagraphs``).

A script assigns them before torch.compile and may read them back; tapegrad keeps what it
writes and its replay (tapegrad/replay.py) computes the same whatever they say.  As in PyTorch,
reading or assigning a name that is not a setting raises AttributeError ("<name> does not
exist"), so a misspelt setting is not silently ignored.
"""
from __future__ import annotations as _annotations

import sys
import types


def _missing(public_name: str, name: str) -> AttributeError:
    return AttributeError(f"{public_name}.{name} does not exist")


class SettingsGroup:
    """A group of settings inside a settings module (``config.triton``)."""

    def __init__(self, public_name: str, defaults: dict):
        object.__setattr__(self, "_public_name", public_name)
        object.__setattr__(self, "_names", frozenset(defaults))
        for name, value in defaults.items():
            object.__setattr__(self, name, _grouped(f"{public_name}.{name}", value))

    def __getattr__(self, name):
        # Reached only for names the group does not hold.
        raise _missing(self._public_name, name)

    def __setattr__(self, name, value):
        if name not in self._names:
            raise _missing(self._public_name, name)
        object.__setattr__(self, name, value)

    def __repr__(self):
        return f"<settings {self._public_name}>"


def _grouped(public_name: str, value):
    return SettingsGroup(public_name, value) if isinstance(value, dict) else value


class SettingsModule(types.ModuleType):
    """The class a settings module takes on in install()."""

    def __getattr__(self, name):
        raise _missing(self._public_name, name)

    def __setattr__(self, name, value):
        if not name.startswith("__") and name not in self._names:
            raise _missing(self._public_name, name)
        super().__setattr__(name, value)


def install(module_name: str, defaults: dict) -> None:
    """Make the module ``module_name`` (tapegrad.X.config) hold exactly ``defaults`` (a nested
    dict is a group), reporting unknown names under its PyTorch name (torch.X.config)."""
    module = sys.modules[module_name]
    module._public_name = "torch" + module_name[len("tapegrad"):]
    module._names = frozenset(defaults)
    for name, value in defaults.items():
        setattr(module, name, _grouped(f"{module._public_name}.{name}", value))
    module.__class__ = SettingsModule
