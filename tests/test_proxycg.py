"""What the session-37 proxy of public plain-PyTorch time-series forecasting scripts (sliding
windows, RevIN, N-BEATS / N-HiTS bases, DeepAR likelihoods, TFT gates, Informer / Autoformer /
FEDformer / TimesNet pieces, TCN / WaveNet causal convolutions, seq2seq, metrics, schedulers)
touched that tapegrad did differently, each checked against PyTorch."""
from __future__ import annotations

import os
import subprocess
import sys

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
