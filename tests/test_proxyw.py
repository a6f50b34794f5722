"""What proxy w's run of public PyTorch tutorial scripts (TingsongYu/PyTorch-Tutorial-2nd, ...)
found tapegrad doing differently from PyTorch, each checked against torch."""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type and message are compared by the caller
        return type(e), str(e)


# -- save_for_backward of a non-tensor: PyTorch refuses it only when the call is recorded ------

def _legendre(lib):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)
    return LegendrePolynomial3


def test_function_applied_to_a_plain_number_runs_as_in_torch():
    # (TingsongYu's autograd notebook: y = a + b * P3(c + d * x) with Python ints)
    expected = 1 + 2 * _legendre(torch).apply(3)
    got = 1 + 2 * _legendre(tg).apply(3)
    assert got == expected == 127.0 and type(got) is type(expected)


def _saves_an_int(lib):
    class SavesAnInt(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x, k)
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, None
    return SavesAnInt


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("grad_enabled", [False, True])
def test_saving_a_non_tensor_raises_only_when_recorded(requires_grad, grad_enabled):
    def run(lib):
        x = lib.ones(2, requires_grad=requires_grad)
        with lib.set_grad_enabled(grad_enabled):
            return _outcome(lambda: _saves_an_int(lib).apply(x, 2).tolist())
    expected = run(torch)
    assert run(tg) == expected
    assert (expected[0] is TypeError) == (requires_grad and grad_enabled)


# -- mark_dirty / mark_non_differentiable of a non-tensor: PyTorch refuses it always -----------

def _marks(lib, method, arg):
    class Marks(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            getattr(ctx, method)(arg)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g
    return Marks


@pytest.mark.parametrize("method, phrase", [
    ("mark_dirty", "mark_dirty can only accept variables, but argument "),
    ("mark_non_differentiable", "mark_non_differentiable only accepts variable arguments, but got ")])
@pytest.mark.parametrize("arg", [3, None, "s"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_marking_a_non_tensor_raises_torchs_error(method, phrase, arg, requires_grad):
    def run(lib):
        return _outcome(lambda: _marks(lib, method, arg).apply(
            lib.ones(2, requires_grad=requires_grad)))
    expected, got = run(torch), run(tg)
    assert expected[0] is RuntimeError and expected[1].startswith(phrase)
    assert got[0] is RuntimeError and got[1].startswith(expected[1])
