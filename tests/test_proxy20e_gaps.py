"""What the session-20 proxy of Han-Adam's DRL tutorials (tensor replay buffers written row by row),
asun975's zero-to-mastery scripts and yakhyo's tutorials turned up around them:

- x[key] = number read numbers as numpy does, not as PyTorch's indexing does: numpy float32 /
  float16 / bool / complex64 scalars were accepted (PyTorch refuses them: "can't assign a
  numpy.float32 to a torch.FloatTensor"), a number outside the dtype's range was wrapped or
  saturated silently (1e40 into float32 was inf, into int64 the minimum, np.uint64(2**63 + 5)
  into int64 a negative number), an unsigned tensor refused -200 (PyTorch stores 56), and a
  complex number with no imaginary part was refused for a real tensor;
- a ragged list of numpy arrays (torch.FloatTensor([np.array([1., 2.]), np.array([3.])]))
  missed PyTorch's "expected sequence of length 2 at dim 1 (got 1)";
- MultivariateNormal's message for a 1-D covariance_matrix said "covariance_matrix matrix".
"""
from __future__ import annotations

import fractions

import numpy as np
import pytest

import tapegrad as tg

FLOAT_SCALARS = [np.float32(2.5), np.float16(1.5), np.longdouble(2.5), np.complex64(1 + 1j),
                 np.bool_(True)]
ACCEPTED = [True, 3, -2, 2.5, np.float64(2.25), np.int8(-3), np.uint8(7), np.int64(5),
            np.int32(4), 3 + 0j, np.complex128(2 + 0j), -0.0, float("inf"), float("nan")]
DTYPES = ["uint8", "int8", "int16", "int32", "int64", "bool", "float16", "float32", "float64",
          "complex64", "complex128"]
OVERFLOWING = [300, -200, 2 ** 40, 2 ** 64, -2 ** 63, 2 ** 63 - 1, 1e40, -1.5, 255.9, -0.5,
               2147483647.9, 9.3e18, 9.2e18, 3.5e38, 70000.0, 3 + 1j, 1e40 + 0j, 1e40j,
               np.uint64(2 ** 63 + 5), np.float64(1e40)]
KEYS = [0, slice(None), Ellipsis, "mask", "index"]


def _key(mod, key):
    if key == "mask":
        return mod.tensor([True, False, True])
    if key == "index":
        return mod.tensor([0, 2])
    return key


def _assign(mod, dtype, key, value):
    t = mod.zeros(3, dtype=getattr(mod, dtype))
    try:
        t[_key(mod, key)] = value
    except Exception as e:                  # noqa: BLE001 - the outcome compared with PyTorch's
        return type(e).__name__, str(e).splitlines()[0]
    return "ok", t.tolist()


def _same(a, b):
    if a[0] != "ok" or b[0] != "ok":
        return a == b
    return np.array_equal(np.array(a[1]), np.array(b[1]), equal_nan=True)


@pytest.mark.parametrize("value", FLOAT_SCALARS, ids=lambda v: type(v).__name__)
def test_setitem_refuses_numpy_scalars_that_are_not_python_numbers(value):
    t = tg.zeros(3)
    name = f"numpy.{type(value).__name__}"
    with pytest.raises(TypeError, match=f"can't assign a {name} to a torch.FloatTensor"):
        t[0] = value
    with pytest.raises(TypeError, match=f"can't assign a {name} to a torch.LongTensor"):
        tg.zeros(3, dtype=tg.long)[1:] = value
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_setitem_type_names_as_cpython_spells_them():
    with pytest.raises(TypeError, match="can't assign a Fraction to a torch.FloatTensor"):
        tg.zeros(2)[0] = fractions.Fraction(1, 2)
    with pytest.raises(TypeError, match="can't assign a numpy.ndarray to a torch.FloatTensor"):
        tg.zeros(2)[0] = np.array([1.0])
    with pytest.raises(TypeError, match="can't assign a list to a torch.FloatTensor"):
        tg.zeros(2)[:] = [1.0, 2.0]


def test_setitem_numbers_out_of_range_raise_instead_of_wrapping():
    # SILENT before: these were written as inf, the int64 minimum and a wrapped negative number
    t = tg.zeros(3)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                                           "overflow"):
        t[0] = 1e40
    i = tg.zeros(3, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t without "
                                           "overflow"):
        i[0] = np.float64(1e40)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        i[0] = np.uint64(2 ** 63 + 5)
    with pytest.raises(RuntimeError, match="type int without overflow"):
        tg.zeros(3, dtype=tg.int32)[1] = 2147483647.9
    with pytest.raises(RuntimeError, match="type uint8_t without overflow"):
        tg.zeros(3, dtype=tg.uint8)[1] = -0.5
    assert t.tolist() == [0.0, 0.0, 0.0] and i.tolist() == [0, 0, 0]


def test_setitem_values_pytorch_accepts():
    u = tg.zeros(3, dtype=tg.uint8)
    u[0] = -200                             # stored modulo 256, as C converts it
    u[1] = 255
    u[2] = np.int64(-1)
    assert u.tolist() == [56, 255, 255]
    f = tg.zeros(3)
    f[0] = 3 + 0j
    f[1:] = np.complex128(2 + 0j)
    assert f.tolist() == [3.0, 2.0, 2.0]
    h = tg.zeros(2, dtype=tg.float16)
    h[0] = 70000.0                          # checked as a double, then rounded to inf
    assert h.tolist()[0] == float("inf")
    b = tg.zeros(2, dtype=tg.bool)
    b[0] = 3 + 1j
    assert b.tolist() == [True, False]
    i = tg.zeros(2, dtype=tg.int64)
    i[0] = 9.2e18
    i[1] = -2.7
    assert i.tolist() == [9200000000000000000, -2]


def test_replay_buffer_rows_written_from_tensors_keep_their_values():
    s = tg.zeros(size=[4, 3], dtype=tg.float)
    done = tg.zeros(size=[4], dtype=tg.float)
    s[1] = tg.tensor(np.array([0.5, -1.0, 2.0], dtype=np.float32), dtype=tg.float)
    done[1] = tg.tensor(1, dtype=tg.long)
    r = tg.zeros(size=[4])
    r[2] = np.float64(-0.75)                # np.float64 is a Python float
    assert s[1].tolist() == [0.5, -1.0, 2.0] and done.tolist() == [0, 1, 0, 0]
    assert r.tolist() == [0.0, 0.0, -0.75, 0.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_scalars_against_torch(torch, dtype):
    for value in FLOAT_SCALARS + ACCEPTED + OVERFLOWING:
        for key in KEYS:
            want = _assign(torch, dtype, key, value)
            got = _assign(tg, dtype, key, value)
            assert _same(got, want), (dtype, key, value, got, want)


RAGGED = [[np.array([1.0, 2.0]), np.array([3.0])], [[1.0, 2.0], np.array([3.0])],
          [np.array([1.0, 2.0]), [3.0]], [np.array([1.0, 2.0]), 3.0],
          [3.0, np.array([1.0, 2.0])], [[np.array([1.0]), np.array([2.0, 3.0])]]]


def _ctor_outcome(mod, ctor, data):
    try:
        return "ok", getattr(mod, ctor)(data).tolist()
    except Exception as e:                  # noqa: BLE001 - the outcome compared with PyTorch's
        return type(e).__name__, str(e).splitlines()[0]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
def test_ragged_lists_of_arrays_name_the_lengths():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        tg.FloatTensor([np.array([1.0, 2.0]), np.array([3.0])])
    with pytest.raises(ValueError, match=r"expected sequence of length 1 at dim 2 \(got 2\)"):
        tg.tensor([[np.array([1.0]), np.array([2.0, 3.0])]])
    with pytest.raises(TypeError, match="not a sequence"):
        tg.tensor([np.array([1.0, 2.0]), 3.0])


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
@pytest.mark.parametrize("ctor", ["tensor", "FloatTensor"])
def test_ragged_lists_of_arrays_against_torch(torch, ctor):
    for data in RAGGED:
        assert _ctor_outcome(tg, ctor, data) == _ctor_outcome(torch, ctor, data), data


def test_multivariate_normal_one_dim_matrix_messages():
    from tapegrad.distributions import MultivariateNormal
    loc = tg.zeros(2)
    with pytest.raises(ValueError, match="^covariance_matrix must be at least two-dimensional"):
        MultivariateNormal(loc, covariance_matrix=tg.ones(2))
    with pytest.raises(ValueError, match="^precision_matrix must be at least two-dimensional"):
        MultivariateNormal(loc, precision_matrix=tg.ones(2))
    with pytest.raises(ValueError, match="^scale_tril matrix must be at least two-dimensional"):
        MultivariateNormal(loc, scale_tril=tg.ones(2))


# The same conversion in full and masked_fill (scalar_to_dtype): a float for an integer dtype
# was cast by numpy, NaN and values past the range silently becoming the type's minimum.
FILL_VALUES = [1e40, -1e40, float("nan"), float("inf"), 9.3e18, 9.2e18, 2147483648.0, -0.5,
               255.9, 2.7, -2.7]


def _fill_outcome(mod, how, dtype, value):
    try:
        if how == "full":
            t = mod.full((2,), value, dtype=getattr(mod, dtype))
        else:
            t = mod.zeros(2, dtype=getattr(mod, dtype)).masked_fill(mod.tensor([True, False]), value)
    except Exception as e:                  # noqa: BLE001 - the outcome compared with PyTorch's
        return type(e).__name__
    return t.tolist()


def test_full_and_masked_fill_refuse_floats_past_an_integer_range():
    # SILENT before: both wrote -9223372036854775808
    with pytest.raises(RuntimeError, match="without overflow"):
        tg.full((2,), 1e40, dtype=tg.long)
    with pytest.raises(RuntimeError, match="without overflow"):
        tg.zeros(2, dtype=tg.long).masked_fill(tg.tensor([True, False]), float("nan"))
    assert tg.full((2,), -2.7, dtype=tg.int32).tolist() == [-2, -2]


@pytest.mark.parametrize("how", ["full", "masked_fill"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_full_and_masked_fill_floats_against_torch(torch, how, dtype):
    for value in FILL_VALUES:
        assert _fill_outcome(tg, how, dtype, value) == _fill_outcome(torch, how, dtype, value), value
