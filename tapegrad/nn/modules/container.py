"""Containers: Sequential, ModuleList, ModuleDict."""
from __future__ import annotations as _annotations

import operator
import warnings
from collections import OrderedDict

# T: what a self-returning method hands back (scripts import it from here, as from PyTorch's)
from .module import Module, T, _addindent


def _absolute_index(idx, length: int) -> int:
    """idx as a position in 0..length-1 (negative counts from the end), as PyTorch's containers
    resolve it: a non-integer raises TypeError, a position outside raises IndexError."""
    idx = operator.index(idx)
    if not -length <= idx < length:
        raise IndexError(f"index {idx} is out of range")
    return idx % length if length else idx


def _renumber(container: Module, modules) -> None:
    # After a deletion or insertion the children are keyed 0..n-1 again, as PyTorch does.
    container._modules.clear()
    for i, m in enumerate(modules):
        container._modules[str(i)] = m


class Container(Module):
    """PyTorch's deprecated container: ``Container(name=module, ...)`` registers each keyword as a
    submodule (a FutureWarning says to subclass Module instead)."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented "
                      "in `nn.Module`. Subclass that instead.", FutureWarning, stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)


class Sequential(Module):
    """Applies its modules in order; built from modules or an OrderedDict of named modules."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        items = list(self._modules.values())
        return items[_absolute_index(idx, len(items))]

    def __setitem__(self, idx, module: Module) -> None:
        key = list(self._modules)[_absolute_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        modules = list(self._modules.values())
        if isinstance(idx, slice):
            del modules[idx]
        else:
            del modules[_absolute_index(idx, len(modules))]
        _renumber(self, modules)

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, "
                             f"but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self: T, other) -> T:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, "
                             f"but {type(other)} is given.")
        for m in list(other):
            self.append(m)
        return self

    def __mul__(self, other: int) -> "Sequential":
        _check_repeat(self, other)
        return Sequential(*(list(self) * other))

    def __rmul__(self, other: int) -> "Sequential":
        return self.__mul__(other)

    def __imul__(self: T, other: int) -> T:
        _check_repeat(self, other)
        # the same module objects again, as PyTorch repeats them (they share parameters)
        for m in list(self) * (other - 1):
            self.append(m)
        return self

    def append(self: T, module: Module) -> T:
        """Add ``module`` at the end of the sequence (registered under the next index); returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self: T, sequential) -> T:
        """Append each module of `sequential` (any iterable of modules)."""
        for m in sequential:
            self.append(m)
        return self

    def insert(self: T, index: int, module: Module) -> T:
        """Put `module` at position `index`; the children are numbered 0..n-1 again."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        modules = list(self._modules.values())
        modules.insert(index, module)
        _renumber(self, modules)
        return self

    def pop(self, key) -> Module:
        """Remove and return the module at position `key`."""
        module = self[key]
        del self[key]
        return module


def _check_repeat(seq, factor) -> None:
    if not isinstance(factor, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(factor)}")
    if factor <= 0:
        raise ValueError(f"Non-positive multiplication factor {factor} for {type(seq)}")


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[_absolute_index(idx, len(items))]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_absolute_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        modules = list(self._modules.values())
        if isinstance(idx, slice):
            del modules[idx]
        else:
            del modules[_absolute_index(idx, len(modules))]
        _renumber(self, modules)

    def __add__(self, other) -> "ModuleList":
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        # As PyTorch prints a list: a run of consecutive children with the same repr shows once,
        # as "(first-last): n x <repr>" (a transformer's stack of identical blocks); no extra_repr.
        runs = []                                   # [first index, last index, repr]
        for i, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        if not runs:
            return self._get_name() + "()"
        lines = [_addindent(f"({first}): {text}" if first == last else
                            f"({first}-{last}): {last - first + 1} x {text}", 2)
                 for first, last, text in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __iadd__(self, modules) -> "ModuleList":
        return self.extend(modules)

    def insert(self, index: int, module: Module) -> None:
        """Put `module` at position `index` (list.insert's rules); renumbers the children."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        _renumber(self, modules)

    def pop(self, key) -> Module:
        """Remove and return the module at position `key`."""
        module = self[key]
        del self[key]
        return module

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end (registered under its index); returns the list."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        """Append each module of an iterable; returns the list."""
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self


class ModuleDict(Module):
    """A dict of modules, registered so their parameters are found."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        """The module names, in insertion order."""
        return self._modules.keys()

    def items(self):
        """``(name, module)`` pairs, in insertion order."""
        return self._modules.items()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def pop(self, key: str) -> Module:
        """Remove `key` and return its module."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules) -> None:
        """Add or replace modules from a mapping or an iterable of ``(name, module)`` pairs."""
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/value "
                            f"pairs, but got {type(modules).__name__}")
        if hasattr(modules, "items"):
            for k, m in modules.items():
                self[k] = m
            return
        for j, pair in enumerate(modules):
            if not hasattr(pair, "__iter__"):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; "
                                f"is{type(pair).__name__}")
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]
