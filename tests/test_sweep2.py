"""Regressions found by differential sweeps of argument forms against PyTorch (sweep2)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

INTS = np.array([[-3, 0, 2, 7], [4, -1, 9, 1]])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
@pytest.mark.parametrize("call", [
    lambda F, nn, x: F.relu6(x),
    lambda F, nn, x: nn.ReLU6()(x),
    lambda F, nn, x: F.hardtanh(x, -0.5, 2.5),
    lambda F, nn, x: nn.Hardtanh(-0.9, 6.5)(x),
    lambda F, nn, x: F.hardtanh(x.clone(), 0.0, 2.0, inplace=True),
])
def test_hardtanh_of_integers_keeps_the_dtype_and_truncates_the_limits(dtype, call):
    # SILENT before: float limits promoted an integer input to float32 and clamped to -0.5, 2.5
    expected = call(TF, torch.nn, torch.tensor(INTS.astype(dtype)))
    got = call(F, tg.nn, tg.tensor(INTS.astype(dtype)))
    assert str(got.dtype) == str(expected.dtype)
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("dtype, limits, error", [
    ("uint8", (-1.0, 2.0), RuntimeError),   # negative limit on an unsigned type
    ("uint8", (-1, 2), RuntimeError),       # (it used to wrap to 255 and clamp everything to 2)
    ("uint8", (0, 300), RuntimeError),      # limit out of the type's range
    ("int8", (-200.0, 2.0), RuntimeError),
    ("bool", (0.0, 1.0), RuntimeError),
    ("int64", (3.7, 2.0), ValueError),      # min_val > max_val
    ("float32", (1.0, 0.0), ValueError),
])
def test_hardtanh_limits_torch_rejects(dtype, limits, error):
    with pytest.raises(error):
        TF.hardtanh(torch.tensor(INTS.astype(dtype)), *limits)
    with pytest.raises(error):
        F.hardtanh(tg.tensor(INTS.astype(dtype)), *limits)


def test_hardtanh_of_uint8_with_a_limit_that_truncates_to_zero():
    x = INTS.astype("uint8")
    assert F.hardtanh(tg.tensor(x), -0.9, 2.0).tolist() == TF.hardtanh(torch.tensor(x), -0.9, 2.0).tolist()
