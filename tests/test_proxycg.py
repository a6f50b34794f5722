"""What the session-37 proxy of public plain-PyTorch time-series forecasting scripts (sliding
windows, RevIN, N-BEATS / N-HiTS bases, DeepAR likelihoods, TFT gates, Informer / Autoformer /
FEDformer / TimesNet pieces, TCN / WaveNet causal convolutions, seq2seq, metrics, schedulers)
touched that tapegrad did differently, each checked against PyTorch."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def _conv_errors(lib) -> list[str]:
    """The errors for a bad padding string (a TCN author's first guess, 'causal') and a bad
    padding_mode: PyTorch prints its sets of valid names, in an order that follows the hash seed."""
    said = []
    for kw in (dict(padding="causal"), dict(padding_mode="circ")):
        with pytest.raises(ValueError) as info:
            lib.nn.Conv1d(1, 1, 3, **kw)
        said.append(str(info.value))
    return said


def test_conv_padding_errors_print_pytorchs_sets():
    """tapegrad printed a fixed text, which differed from PyTorch's under most hash seeds."""
    ours = _conv_errors(tg)
    assert ours[0].startswith("Invalid padding string 'causal', should be one of {")
    assert ours[1].startswith("padding_mode must be one of {") and ours[1].endswith("padding_mode='circ'")
    assert ours == _conv_errors(torch)


_COMPARE_IN_A_FRESH_INTERPRETER = """
import tapegrad, torch
from tests.test_proxycg import _conv_errors
assert _conv_errors(tapegrad) == _conv_errors(torch), (_conv_errors(tapegrad), _conv_errors(torch))
"""


@pytest.mark.parametrize("seed", [3, 17])
def test_conv_padding_errors_match_under_other_hash_seeds(seed):
    """Seeds under which the four padding modes' hashes collide, so the order is also the order
    the set was built in (tapegrad's first fix, from the source order, still differed there)."""
    env = dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=_ROOT)
    subprocess.run([sys.executable, "-c", _COMPARE_IN_A_FRESH_INTERPRETER], env=env, cwd=_ROOT, check=True)


def test_conv_padding_errors_are_value_errors():
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="Invalid padding string 'causal'"):
            lib.nn.Conv1d(2, 2, 3, padding="causal")
        with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
            lib.nn.Conv1d(2, 2, 3, padding="same", stride=2)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"])
def test_grad_mode_classes_print_pytorchs_path(name):
    """print(torch.no_grad) (a DeepAR sampler printing its guard) showed tapegrad.grad_mode."""
    ours, theirs = getattr(tg, name), getattr(torch, name)
    assert repr(ours) == repr(theirs) == f"<class 'torch.autograd.grad_mode.{name}'>"
    assert tg.typename(ours) == torch.typename(theirs)


def test_grad_mode_guard_subclass_keeps_its_own_path():
    for lib in (tg, torch):
        class Quiet(lib.no_grad):
            pass
        assert repr(Quiet) == f"<class '{__name__}.test_grad_mode_guard_subclass_keeps_its_own_path.<locals>.Quiet'>"
        assert repr(lib.no_grad()).startswith("<torch.autograd.grad_mode.no_grad object at 0x")


# -- fft / ifft of a real signal: PyTorch's r2c with the other half mirrored -------------------

_EXACT_SIGNALS = [[1.0, 0.0, -1.0, 0.0], [1.0, -1.0, 1.0, -1.0, 1.0, -1.0], [0.0, 1.0, 0.0, -1.0],
                  [0.0, 0.0, 2.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize("signal", _EXACT_SIGNALS)
@pytest.mark.parametrize("fn", ["fft", "ifft"])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_fft_of_a_real_signal_mirrors_its_half_spectrum(signal, fn, norm):
    """torch.fft.fft of a real signal is its rfft with entries k > n // 2 the conjugates of
    entries n - k: fft([1, -1, 1, -1, 1, -1]) printed 4.4409e-16 in its last entry where
    PyTorch prints 0., and the mirrored entries' zero imaginary parts had the other sign."""
    # (both resolved: ifft of a real signal is a conj() view, whose numpy() both refuse)
    ours = getattr(tg.fft, fn)(tg.tensor(signal), norm=norm).resolve_conj()
    theirs = getattr(torch.fft, fn)(torch.tensor(signal), norm=norm).resolve_conj()
    assert np.array_equal(ours.numpy(), theirs.numpy())
    if signal != _EXACT_SIGNALS[1]:
        # (there numpy's r2c core itself gives entry 1 a +0.0 imaginary part, PyTorch's -0.0)
        assert repr(ours) == repr(theirs)
    n = len(signal)
    for k in range(n // 2 + 1, n):                       # exact conjugate mirrors
        assert ours[k].item() == ours[n - k].item().conjugate()
        assert str(ours[k].imag.item()) == str(-ours[n - k].imag.item())


@pytest.mark.parametrize("fn", ["fft", "ifft"])
def test_fft_of_a_real_signal_gradients_against_torch(fn):
    """The mirrored forward keeps the complex transform's VJP (float64, dims and n as given),
    and its double backward."""
    signal = [[0.3, -1.2, 2.0, 0.7, -0.4], [1.1, 0.0, -0.6, 0.25, 0.9]]
    weights = [[0.5 - 1.0j, 2.0 + 0.5j, -0.3 + 0.0j, 1.0 + 1.0j, 0.1 - 0.2j, -1.0 + 0.3j]] * 2
    grads = []
    for lib in (tg, torch):
        x = lib.tensor(signal, dtype=lib.float64, requires_grad=True)
        y = getattr(lib.fft, fn)(x, n=6, dim=-1, norm="ortho")
        loss = (y * lib.tensor(weights)).real.sum() + y.abs().pow(2).sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.pow(2).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(*grads):
        assert ours == pytest.approx(theirs, abs=1e-12)
    x = tg.tensor(signal, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: getattr(tg.fft, fn)(t, n=7).abs(), (x,))
