"""Regressions found by the ninth argument-form sweep (elementwise arithmetic and type promotion,
bitwise and logical ops, unary math across dtypes) against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(dtype name, values) of a result, or the exception type's name."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    return str(out.dtype).split(".")[-1], out.numpy().tolist()


@pytest.mark.parametrize("call", [
    lambda L, a, b: L.sub(a, b, alpha=2),
    lambda L, a, b: L.sub(b, a, alpha=2),
    lambda L, a, b: a.sub(b, alpha=-1),
    lambda L, a, b: L.sub(a, True, alpha=2),
    lambda L, a, b: L.sub(3, b, alpha=2),
    lambda L, a, b: L.rsub(a, b, alpha=3),
    lambda L, a, b: a.clone().sub_(b, alpha=2),
])
def test_sub_with_alpha_refuses_bool_operands(call):
    # alpha scaled a bool operand into the result dtype first, so the bool check never saw it
    # and the subtraction went ahead
    def run(L):
        return call(L, L.tensor([3, -7, 0]), L.tensor([True, False, True]))
    assert _outcome(lambda: run(tg)) == _outcome(lambda: run(torch)) == "RuntimeError"
