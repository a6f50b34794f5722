"""Regressions of the fuzz41 run: differential fuzzing against PyTorch (tools/fuzz.py, seeds
named per test) and hand-written random programs against tapegrad.compile's replay guards.

A compiled call must return what the eager call returns; the eager values are checked against
torch where it is installed.
"""
import numpy as np
import pytest

import tapegrad as tg


def _values(t):
    return t.detach().numpy().tolist()


# -- tapegrad.compile: the helpers a compiled function calls by name --------------------------------
# The environment guard followed the numbers and tensors the compiled function itself read from
# its closure and globals, but not the Python functions it called: rebinding a helper, or changing
# a number only the helper reads, replayed the old capture (a SILENT stale result).

SCALE = 2.0


def _scaled(x):
    return x * SCALE


def _calls_scaled(x):
    return _scaled(x) + 1


def test_compile_recaptures_when_a_helpers_global_number_changes():
    global SCALE
    torch = pytest.importorskip("torch")
    compiled = tg.compile(_calls_scaled)
    x = [1.0, 2.0]
    try:
        for scale in (2.0, 2.0, 3.0, 3.0, -0.0):
            SCALE = scale
            expected = (torch.tensor(x) * scale + 1).tolist()
            assert _values(compiled(tg.tensor(x))) == expected, scale
    finally:
        SCALE = 2.0


def _adder(c):
    def add(x):
        return x + c
    return add


def test_compile_recaptures_when_a_called_function_is_rebound():
    torch = pytest.importorskip("torch")
    namespace = {"helper": _adder(1.0)}
    exec("def f(x):\n    return helper(x) * 2\n", namespace)
    compiled = tg.compile(namespace["f"])
    x = [2.0, -3.0]
    for step, c in enumerate((1.0, 1.0, 5.0, 5.0)):
        namespace["helper"] = _adder(c)
        expected = ((torch.tensor(x) + c) * 2).tolist()
        assert _values(compiled(tg.tensor(x))) == expected, step


def test_compile_recaptures_when_a_helpers_closure_cell_changes():
    def make():
        n = 1.0

        def times(x):
            return x * n

        def bump():
            nonlocal n
            n += 1
        return times, bump
    times, bump = make()
    compiled = tg.compile(lambda x: times(x))
    x = tg.tensor([1.0, 2.0])
    for n in (1.0, 2.0, 3.0):
        assert _values(compiled(x)) == [n, 2 * n]
        bump()
