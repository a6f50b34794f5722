"""x[key] = value with masks and index tensors: which path (masked_fill_ or index_put_) PyTorch
takes, and so which dtypes it accepts, checked against PyTorch over a grid of keys and values.

Found by session 23's indexing sweep:
- SILENT: a uint8 mask in x[mask] = value was taken for integer indices (rows 0 and 1: every row
  written) where PyTorch reads it as a boolean mask (with its deprecation warning), as x[mask]
  already did; with a one-element value PyTorch's masked_fill_ refuses a byte mask.
- x[:, mask] = torch.tensor([9.0]) into float64 raised "Index put requires the source and
  destination dtypes match": with one boolean mask and a one-element value PyTorch's path is
  masked_fill_ (on the view the rest of the key takes), which casts.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

KEYS = {
    "list": lambda T: [0, 1],
    "long": lambda T: T.tensor([0, 1]),
    "long_int": lambda T: (T.tensor([0, 1]), 0),
    "slice_mask": lambda T: (slice(None), T.tensor([True, False, True])),
    "mask2d": lambda T: T.tensor([[True, False, True], [False, False, True]]),
    "int_mask": lambda T: (0, T.tensor([True, False, True])),
    "ellipsis_long": lambda T: (Ellipsis, T.tensor([1])),
    "byte_mask2d": lambda T: T.tensor([[1, 0, 1], [0, 0, 1]], dtype=T.uint8),
    "slice_byte_mask": lambda T: (slice(None), T.tensor([1, 0, 1], dtype=T.uint8)),
    "byte_and_long": lambda T: (T.tensor([1, 0], dtype=T.uint8), T.tensor([0, 2])),
    "bool0d": lambda T: T.tensor(True),
    "int_bool0d": lambda T: (0, T.tensor(False)),
}
VALUES = {
    "float32[1]": lambda T: T.tensor([9.0]),
    "int64 0-d": lambda T: T.tensor(9),
    "float32[1,1]": lambda T: T.tensor([[9.0]]),
    "float64[4]": lambda T: T.tensor([9.0, 8.0, 7.0, 6.0], dtype=T.float64),
    "bool 0-d": lambda T: T.tensor(True),
    "number": lambda T: 5.0,
    "ones float64[4]": lambda T: T.ones(4, dtype=T.float64),
}


def _write(T, key, value):
    z = T.zeros(2, 3, 4, dtype=T.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            z[KEYS[key](T)] = VALUES[value](T)
        except Exception as e:      # noqa: BLE001 - the outcome compared is the exception
            return type(e).__name__, str(e).splitlines()[0]
    return "ok", z.numpy().tolist()


@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("key", list(KEYS))
def test_setitem_path_and_dtypes_as_pytorch(key, value):
    assert _write(tg, key, value) == _write(torch, key, value)


def test_byte_mask_writes_the_masked_positions_with_pytorchs_warning():
    for T in (tg, torch):
        z = T.zeros(2, 3, 2, dtype=T.float64)
        mask = T.tensor([[1, 0, 1], [0, 1, 1]], dtype=T.uint8)
        with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
            z[mask] = T.full((2,), 5.0, dtype=T.float64)
        assert z[..., 0].tolist() == [[5.0, 0.0, 5.0], [0.0, 5.0, 5.0]]


def test_gradient_through_a_masked_write_of_a_one_element_value():
    def run(T):
        base = T.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
        v = T.tensor([2.0], requires_grad=True)
        z = base * 1
        z[:, T.tensor([True, False, True])] = v * 3
        (z * T.tensor(np.arange(24.0).reshape(2, 3, 4) % 5)).sum().backward()
        return z.detach().numpy(), base.grad.numpy(), v.grad.numpy()
    for got, want in zip(run(tg), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
