"""Inference mode and inference tensors: what PyTorch records, refuses and reports in and after
`with inference_mode():` (checked against torch 2.13)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tapegrad as tg

SAVED = "Inference tensors cannot be saved for backward"
INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"
REQUIRES_GRAD = "Setting requires_grad=True on inference tensor outside InferenceMode"


def _observe(lib):
    """A script's view of inference mode: flags, created tensors, and the errors outside it."""
    out = []

    def attempt(f):
        try:
            r = f()
            out.append(("ok", r if isinstance(r, (bool, tuple)) else None))
        except RuntimeError as e:
            out.append(("RuntimeError", str(e).split(".")[0]))

    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with lib.inference_mode():
        y = x * 2
        out.append((y.requires_grad, y.is_inference(), lib.is_inference_mode_enabled(),
                    lib.is_grad_enabled()))
        with lib.enable_grad():          # grad mode on again, yet nothing records
            e = x * 2
            out.append((e.requires_grad, e.grad_fn is None, lib.is_grad_enabled()))
        z = lib.ones(3)
        w = lib.ones(3, requires_grad=True)
        out.append((z.is_inference(), w.is_inference(), w.requires_grad))
        out.append((x.view(3).is_inference(), x[:2].is_inference(), x[:2].requires_grad))
        with lib.inference_mode(False):
            out.append((lib.is_inference_mode_enabled(), lib.is_grad_enabled(),
                        lib.ones(1).is_inference()))
        a = lib.arange(3.0)
        a.add_(1)                        # in place inside the mode: allowed
        out.append(tuple(a.tolist()))
    out.append((x.is_inference(), lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
    for write in (lambda: y.add_(1), lambda: y.mul_(2), lambda: y.__setitem__(0, 1.0),
                  lambda: z.zero_(), lambda: z.fill_(2), lambda: z.uniform_(),
                  lambda: z.copy_(lib.zeros(3)), lambda: lib.no_grad()(lambda: z.add_(1))()):
        attempt(write)
    attempt(lambda: (z * 2).is_inference())
    attempt(lambda: (x * z).requires_grad)         # mul saves z for x's gradient
    attempt(lambda: (x / z).requires_grad)
    attempt(lambda: (x ** z).requires_grad)
    attempt(lambda: lib.matmul(x, z).requires_grad)
    attempt(lambda: (x.exp() * z.exp()).requires_grad)   # z.exp() is a normal tensor
    attempt(lambda: (x + z).requires_grad)         # add saves nothing
    attempt(lambda: lib.cat([x, z]).requires_grad)
    attempt(lambda: (z.view(3).is_inference(), z[0:2].is_inference(), z.detach().is_inference(),
                     z.clone().is_inference()))
    attempt(lambda: z.requires_grad_())
    attempt(lambda: lib.nn.Parameter(z))
    attempt(lambda: z._version)
    lin = lib.nn.Linear(3, 2)
    attempt(lambda: lin(z).requires_grad)
    with lib.no_grad():
        attempt(lambda: lin(z).requires_grad)
    attempt(lambda: lib.nn.functional.mse_loss(x, z).requires_grad)
    return out


def test_inference_mode_matches_torch(torch):
    assert _observe(tg) == _observe(torch)


def test_inference_tensors_without_torch():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.inference_mode():
        y = x * 3
        assert tg.is_inference_mode_enabled() and not tg.is_grad_enabled()
    assert y.is_inference() and not y.requires_grad and y.grad_fn is None
    assert tg.is_inference(y) and not tg.is_inference(x)
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match=SAVED):
        x * y
    with pytest.raises(RuntimeError, match=INPLACE):
        y.add_(1)
    with pytest.raises(RuntimeError, match=REQUIRES_GRAD):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="do not track version counter"):
        y._version
    # A clone is a normal tensor again, usable with autograd.  (The refused add_ wrote before
    # it was refused, as PyTorch's does: y is [4., 7.] now.)
    c = y.clone()
    (x * c).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 7.0])
    assert not tg.is_inference_mode_enabled() and tg.is_grad_enabled()


def test_inference_mode_decorators_and_threads(torch):
    for lib in (tg, torch):
        @lib.inference_mode
        def bare():
            return lib.ones(1).is_inference(), lib.is_inference_mode_enabled()

        @lib.inference_mode(False)
        def off():
            return lib.ones(1).is_inference(), lib.is_inference_mode_enabled()

        @lib.inference_mode()
        def gen():
            yield lib.is_inference_mode_enabled()
            yield lib.ones(1).is_inference()

        seen = []
        with lib.inference_mode():
            thread = threading.Thread(target=lambda: seen.append(
                (lib.is_inference_mode_enabled(), lib.ones(1).is_inference())))
            thread.start()
            thread.join()
        assert (bare(), off(), list(gen()), seen) == (
            (True, True), (False, False), [True, True], [(False, False)]), lib
        assert not lib.is_inference_mode_enabled()


def test_grad_mode_guards_keep_inference_mode(torch):
    for lib in (tg, torch):
        states = []
        with lib.inference_mode():
            lib.set_grad_enabled(True)
            states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.no_grad():
                states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        lib.set_grad_enabled(False)
        with lib.inference_mode(False):
            states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        states.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        lib.set_grad_enabled(True)
        assert states == [(True, True), (False, True), (True, False), (True, False),
                          (False, False)], lib


def test_python_constructors_follow_inference_mode(torch):
    for lib in (tg, torch):
        with lib.inference_mode():
            made = [lib.Tensor([1.0, 2.0]), lib.FloatTensor([1.0]), lib.ones(2)]
        assert [t.is_inference() for t in made] == [True, True, True], lib
        assert not lib.Tensor([1.0]).is_inference()
        with pytest.raises(RuntimeError, match=REQUIRES_GRAD):
            lib.nn.Parameter(made[0])
        with lib.inference_mode():
            p = lib.nn.Parameter(made[0])
        assert p.is_inference() and p.requires_grad


def test_detach_and_data_of_an_inference_tensor_take_writes(torch):
    # PyTorch's detach() / .data of an inference tensor is still an inference tensor, but takes
    # in-place writes outside inference mode (an eval loop's `out.detach().clamp_(0, 1)`); the
    # tensor itself and views of the detached one still refuse them.  tapegrad refused them all.
    for lib in (tg, torch):
        with lib.inference_mode():
            x = lib.ones(3)
        y = x.detach()
        y.add_(1)
        x.data.mul_(3)
        y.detach().sub_(1)
        assert y.is_inference() and x.data.is_inference(), lib
        assert x.tolist() == [5.0, 5.0, 5.0], lib
        y.normal_()                     # (a random fill, written in Python)
        for write in (lambda: x.add_(1), lambda: y.view(3).add_(1), lambda: x.normal_()):
            with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
                write()
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
            y.requires_grad_()
        w = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            (w * y).sum()
