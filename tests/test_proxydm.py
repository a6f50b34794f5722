"""What the signal-processing proxy (FIR/IIR filters, windows, stft/istft, torch.fft, wavelets,
complex tensors and their gradients) found tapegrad getting wrong, checked against PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg


def _torch():
    return pytest.importorskip("torch")


# -- zero gradients are zeros, whatever the upstream gradient --------------------------------------

_UPSTREAM = [-1.0, math.inf, 2.0]


@pytest.mark.parametrize("make", [
    lambda lib, x: lib.angle(x),
    lambda lib, x: lib.fill(x, 3.0),
    lambda lib, x: x.clone().fill_(lib.tensor(2.0)),
], ids=["angle", "fill", "fill_tensor"])
def test_constant_outputs_give_zero_not_nan_or_negative_zero_gradients(make):
    torch = _torch()
    results = []
    for lib in (tg, torch):
        x = lib.tensor([-1.0, 2.0, 0.0], requires_grad=True)
        (make(lib, x) * lib.tensor(_UPSTREAM)).sum().backward()
        results.append(x.grad.numpy())
    ours, theirs = results
    np.testing.assert_array_equal(ours, theirs)
    assert not np.signbit(ours).any()        # (assert_array_equal takes -0.0 == 0.0)
