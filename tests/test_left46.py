"""Differences from PyTorch closed by session left46: forward_ad's level and dual checks,
out= calls that give a Python number where the out overload takes a tensor, ...

Each scenario runs with L = tapegrad and L = torch (the oracle) and compares what a script would
print: values, dtypes, exception types and key phrases, and out's state after a refusal."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def both(scenario):
    """scenario(L) for tapegrad and torch; returns (tapegrad's result, torch's)."""
    torch = pytest.importorskip("torch")
    return scenario(tg), scenario(torch)


def outcome(fn):
    """What a call gives, as comparable data: ("ok", value) or (exception type, message)."""
    try:
        result = fn()
    except Exception as error:          # noqa: BLE001 - the type is what is compared
        return type(error).__name__, str(error)
    if hasattr(result, "detach"):
        return "ok", str(result.dtype).replace("torch.", ""), result.detach().tolist()
    return "ok", result


# -- 1. forward_ad: levels, and a dual made of a tensor that already has a tangent -------------

def _forward_ad_levels(L):
    fa = L.autograd.forward_ad
    x, t = L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])
    got = []
    with fa.dual_level() as level:
        got.append(level)
        for bad in (1, 5, -1):
            got.append(outcome(lambda: fa.make_dual(x, t, level=bad)))
        d = fa.make_dual(x, t, level=0)
        for bad in (1, 5):
            got.append(outcome(lambda: fa.unpack_dual(d, level=bad)))
        got.append(fa.unpack_dual(d, level=-1).tangent is None)
        got.append(fa.unpack_dual(d, level=0).tangent.tolist())
    return got


# (PyTorch's forward_ad scripts a helper on first use, which warns in torch 2.13)
TORCH_JIT_WARNING = "ignore:`torch.jit.script` is deprecated:DeprecationWarning"


@pytest.mark.filterwarnings(TORCH_JIT_WARNING)
def test_forward_ad_level_arguments():
    ours, theirs = both(_forward_ad_levels)
    assert ours == theirs


def _dual_of_dual(L):
    fa = L.autograd.forward_ad
    x, t = L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])
    got = []
    with fa.dual_level():
        d = fa.make_dual(x, t)
        y = d * 2
        got.append(outcome(lambda: fa.make_dual(d, t)))
        got.append(outcome(lambda: fa.make_dual(y, t)))
        # a primal, a detached dual, a tensor of the caller's that requires grad: no tangent
        p = fa.unpack_dual(y).primal
        got.append(fa.unpack_dual(fa.make_dual(p, t)).tangent.tolist())
        got.append(fa.unpack_dual(fa.make_dual(d.detach(), t)).tangent.tolist())
        w = L.tensor([1.0, 2.0], requires_grad=True) * 3
        dw = fa.make_dual(w, t)
        got.append(fa.unpack_dual(dw * dw).tangent.tolist())
        dw.sum().backward()
    return got


@pytest.mark.filterwarnings(TORCH_JIT_WARNING)
def test_make_dual_of_a_tensor_with_a_tangent_is_refused():
    ours, theirs = both(_dual_of_dual)
    assert theirs[0][0] == "RuntimeError" and "already has a forward gradient" in theirs[0][1]
    assert ours == theirs


# -- 2. out= with a Python number where the out overload takes a tensor ----------------------

@pytest.mark.parametrize("args", [("x", 0), (0, "x"), (1.5, 2), ("i", 0.5), ("x", 1j), (True, 0)])
@pytest.mark.parametrize("out_shape", [(3,), (5,)])
def test_where_out_refuses_numbers_before_touching_out(args, out_shape):
    def scenario(L):
        c = L.tensor([True, False, True])
        named = {"x": L.tensor([1.0, 2.0, 3.0]), "i": L.tensor([1, 2, 3])}
        operands = [named.get(a, a) if isinstance(a, str) else a for a in args]
        out = L.full(out_shape, 7.0)
        return outcome(lambda: L.where(c, *operands, out=out)), out.shape, out.tolist()
    ours, theirs = both(scenario)
    assert theirs[0][0] == "TypeError"
    assert ours == theirs


def test_where_out_keyword_number():
    def scenario(L):
        c = L.tensor([True, False, True])
        out = L.zeros(3)
        return (outcome(lambda: L.where(c, input=2.0, other=L.ones(3), out=out)),
                outcome(lambda: L.where(c, L.ones(3) * 2, other=L.ones(3), out=out)))
    ours, theirs = both(scenario)
    assert ours == theirs


@pytest.mark.parametrize("name", ["remainder", "bitwise_and", "bitwise_xor", "bitwise_left_shift"])
def test_number_self_overload_has_no_out(name):
    # PyTorch's (Number self, Tensor other) overload takes no out=: remainder(2, x, out=o) was
    # computed into o by tapegrad
    def scenario(L):
        x = L.tensor([1, 2, 3])
        out = L.zeros(3, dtype=L.int64)
        return (outcome(lambda: getattr(L, name)(2, x, out=out)), out.tolist(),
                outcome(lambda: getattr(L, name)(x, 2, out=out)), out.tolist())
    ours, theirs = both(scenario)
    assert "received an invalid combination of arguments" in theirs[0][1]
    assert ours == theirs
