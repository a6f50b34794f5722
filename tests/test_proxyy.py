"""Faults found by running university homework scripts (proxy units) under tapegrad."""
import warnings

import numpy as np
import pytest

import tapegrad
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")

_SAME_NOTE = "padding='same' with even kernel lengths"


def _ones_conv1d(lib):
    conv = lib.nn.Conv1d(2, 3, 4, padding="same")
    lib.nn.init.ones_(conv.weight)
    lib.nn.init.zeros_(conv.bias)
    return conv


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.functional.conv1d(lib.ones(1, 2, 8), lib.ones(3, 2, 4), padding="same"),
    lambda lib: lib.nn.functional.conv2d(lib.ones(1, 2, 6, 6), lib.ones(3, 2, 3, 2),
                                         padding="same"),
    lambda lib: _ones_conv1d(lib)(lib.ones(1, 2, 8)),
    lambda lib: lib.nn.functional.conv3d(lib.ones(1, 2, 4, 4, 4), lib.ones(3, 2, 2, 3, 3),
                                         padding="same"),
])
def test_same_padding_with_an_even_kernel_warns_once_per_process(make):
    # CS224N's 2024 NMT homework uses nn.Conv1d(kernel_size=2, padding='same'): PyTorch notes
    # once that the odd total padding is split unevenly (TORCH_WARN_ONCE), in every dimensionality.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = make(tapegrad)
        make(tapegrad)
    notes = [w for w in seen if _SAME_NOTE in str(w.message)]
    assert len(notes) == 1 and notes[0].category is UserWarning
    assert notes[0].filename == __file__          # the user's line, as PyTorch's warning names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = make(torch)
    np.testing.assert_allclose(first.detach().numpy(), want.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("kernel,dilation", [(3, 1), (4, 2), (5, 1)])
def test_same_padding_that_splits_evenly_stays_silent(kernel, dilation):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.conv1d(tapegrad.ones(1, 2, 9), tapegrad.ones(3, 2, kernel), padding="same",
                 dilation=dilation)
        F.conv2d(tapegrad.ones(1, 2, 9, 9), tapegrad.ones(3, 2, kernel, 3), padding="same",
                 dilation=dilation)
