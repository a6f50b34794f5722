"""torch.SymInt, SymFloat, SymBool and the sym_* utilities.

In PyTorch a Sym* value stands for a size traced symbolically by torch.compile / export; eager
code only meets plain ints, floats and bools.  tapegrad traces nothing symbolically, so the
classes exist for what model code does with them (isinstance checks, type hints): no plain
number is an instance, as in PyTorch.  The sym_* functions compute on plain numbers exactly as
PyTorch's do on non-symbolic values (including their promotions and AssertionErrors).
"""
from __future__ import annotations as _annotations

import builtins
import math

import numpy as np

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_not", "sym_max",
           "sym_min", "sym_ite", "sym_sum", "sym_sqrt"]


class _SymbolicNumber:
    """A value of a symbolic shape expression: wraps the tracer's node (`node`)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __repr__(self):
        return repr(self.node)


class SymInt(_SymbolicNumber):
    """An int traced symbolically (torch.compile's dynamic sizes); never a plain int."""


class SymFloat(_SymbolicNumber):
    """A float traced symbolically; never a plain float."""


class SymBool(_SymbolicNumber):
    """A bool traced symbolically; never a plain bool."""


_NUMBER_TYPES = (np.integer, np.floating, builtins.int, builtins.float)
_FLOAT_TYPES = (np.floating, builtins.float)


def sym_int(a):
    """int(a), PyTorch's SymInt-aware int cast (truncates toward zero)."""
    if isinstance(a, SymInt):
        return a
    return builtins.int(a)


def sym_float(a):
    """float(a), PyTorch's SymInt-aware float cast."""
    if isinstance(a, SymFloat):
        return a
    return builtins.float(a)


def sym_not(a):
    """not a."""
    return not a


def _check_numbers(a, b) -> None:
    for x in (a, b):
        if not isinstance(x, _NUMBER_TYPES):
            raise AssertionError(f"expected {_NUMBER_TYPES}, got {type(x)}")


def sym_max(a, b):
    """max(a, b) of ints and floats, a float when either is one (builtins.max keeps the winner's
    type; PyTorch promotes, as its symbolic form must).  NaN follows builtins.max's order."""
    _check_numbers(a, b)
    m = builtins.max(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES) else m


def sym_min(a, b):
    """min(a, b), promoted as sym_max."""
    _check_numbers(a, b)
    m = builtins.min(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES) else m


def sym_ite(b, t, f):
    """t if b else f; b must be a bool and t, f of one type (PyTorch's assertions)."""
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sum(*args):
    """The sum of the numbers, given as sym_sum(a, b, c) or sym_sum([a, b, c])."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_sqrt(a):
    """math.sqrt(a) (ValueError for a negative number, as math's)."""
    return math.sqrt(a)
