"""What the session-14 proxy g of public scripts (EdwardRaff/Inside-Deep-Learning,
spro/practical-pytorch and char-rnn.pytorch, bentrevett/pytorch-sentiment-analysis,
cs230-stanford/cs230-code-examples, Shawn1993/cnn-text-classification-pytorch, locuslab/TCN,
tkipf/pygcn, Diego999/pyGAT, adambielski/siamese-triplet, jaxony/unet-pytorch) found tapegrad
doing differently from PyTorch, each checked against torch."""
from __future__ import annotations

import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _message(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared by the caller
        return type(e), str(e)
    return None, None


# -- Tensor.reinforce: removed in PyTorch 0.4; 0.3-era REINFORCE scripts still call it ----------

def test_reinforce_raises_pytorchs_removal_error():
    expected = _message(lambda: torch.ones(2).reinforce(1.0))
    assert expected[0] is RuntimeError
    assert _message(lambda: tg.ones(2).reinforce(1.0)) == expected
    assert _message(lambda: tg.ones(2, requires_grad=True).multinomial(1).reinforce(0.5)) == expected
