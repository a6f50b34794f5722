"""Regressions from fuzz25 (session 34): the differential fuzzer's complex and integer programs
(tools/fuzz.py, seeds >= COMPLEX_FROM), each finding as an explicit case checked against
PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(tapegrad)


# -- integer paths --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_lcm_wraps_then_takes_the_absolute_value_as_pytorch(dtype):
    # SILENT before: an int32 / int64 lcm whose product wraps came out negative (numpy's
    # |a| / gcd * |b| wraps after the absolute value; PyTorch's |a / gcd * b| before it)
    big = {"int8": 127, "int16": 30001, "int32": 1230910003, "int64": 5446287336568797217,
           "uint8": 255}[dtype]
    a = np.array([big, 100, 7, 0, big], dtype=dtype)
    b = np.array([3, 3, 2, 5, 2] if dtype == "uint8" else [3, -3, -2, 5, 2], dtype=dtype)

    def run(lib):
        x, y = lib.tensor(a), lib.tensor(b)
        z = x.clone()
        z.lcm_(y)
        return lib.lcm(x, y), z, lib.lcm(x[0], y[0])

    for t, g in zip(*_both(run)):
        assert str(g.dtype) == str(t.dtype)
        np.testing.assert_array_equal(g.numpy(), t.numpy())
