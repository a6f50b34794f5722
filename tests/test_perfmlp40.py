"""Issue 19's MLP step replayed: the fixed costs around the replayed call (perfmlp40)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn  # noqa: F401  (registers nn's own dispatching subclasses)
from tapegrad import overrides, replay


# -- compiled calls look for dispatching subclass instances in C ---------------------------------

class Seen(tg.Tensor):
    """A subclass that keeps the __torch_function__ protocol and notes the calls it sees."""
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.fixture
def context_calls(monkeypatch):
    """The calls that took CompiledFunction._context_call (the Python detour)."""
    seen = []
    original = replay.CompiledFunction._context_call

    def counting(self, args, kwargs):
        seen.append(args)
        return original(self, args, kwargs)

    monkeypatch.setattr(replay.CompiledFunction, "_context_call", counting)
    return seen


def test_nn_imported_plain_calls_replay_without_the_python_detour(context_calls):
    # nn's UninitializedParameter / UninitializedBuffer dispatch: the set is not empty
    assert overrides._SUBCLASS_TYPES
    f = tg.compile(lambda a, b: (a * b).sum())
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0, 4.0])
    for _ in range(3):
        f(x, y).backward()
    assert f.stats["replays"] == 2 and f.stats["eager"] == 0
    assert context_calls == []
    assert x.grad.tolist() == [9.0, 12.0]


@pytest.mark.parametrize("wrap", ["plain", "list", "tuple", "keyword"])
def test_an_argument_holding_a_dispatching_instance_still_runs_eagerly(context_calls, wrap):
    f = tg.compile(lambda a, b: (a[0] if isinstance(a, (list, tuple)) else a) + b)
    y = tg.tensor([1.0, 2.0])
    plain = tg.tensor([3.0, 4.0])
    for _ in range(2):                          # captured, then replayed
        f(plain, y)
    sub = tg.tensor([5.0, 6.0]).as_subclass(Seen)
    Seen.calls.clear()
    arg = {"plain": sub, "list": [sub], "tuple": (sub,), "keyword": sub}[wrap]
    out = f(arg, b=y) if wrap == "keyword" else f(arg, y)
    assert out.tolist() == [6.0, 8.0]
    assert len(context_calls) == 1             # only the call with the instance took the detour
    assert Seen.calls                          # the subclass saw the eager call's ops
    assert f.stats["eager"] == 1
    f(plain, y)                                 # and plain calls replay again
    assert len(context_calls) == 1
