"""What session 13's held-out proxy (GunhoChoi/PyTorch-FastCampus, keon/3-min-pytorch, znxlwm's
GANs, sgrvinod's tutorials, the hyunwoongko/jadore801120/pbloem transformers, AntixK's VAEs) found
tapegrad printing or raising differently from PyTorch."""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg


def _exp_via_saved_variables(T):
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_variables
            return grad_output * result

    a = T.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Exp.apply(a).sum().backward()
    return a.grad.tolist(), [(w.category, str(w.message)) for w in caught]


def test_saved_variables_warns_deprecated_as_torch(torch):
    # GunhoChoi's custom-Function notebook: PyTorch prints a DeprecationWarning, and still works.
    assert _exp_via_saved_variables(tg) == _exp_via_saved_variables(torch)
