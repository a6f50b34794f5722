"""The C elementwise kernels agree with numpy for every layout they accept or decline."""
import numpy as np
import pytest

import tapegrad as tg

SIZES = [1, 7, 33, 1000]
DTYPES = [np.float32, np.float64]


def _data(n, dtype, positive=False, seed=0):
    rng = np.random.default_rng(seed + n)
    a = rng.standard_normal(n)
    return (np.abs(a) + 0.1 if positive else a).astype(dtype)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,ref,positive", [
    ("exp", np.exp, False), ("log", np.log, True), ("tanh", np.tanh, False),
    ("relu", lambda a: np.maximum(a, 0), False), ("neg", np.negative, False),
])
def test_unary_matches_numpy(name, ref, positive, n, dtype):
    a = _data(n, dtype, positive)
    out = getattr(tg.from_numpy(a), name)().numpy()
    assert out.dtype == dtype
    np.testing.assert_allclose(out, ref(a), rtol=2e-7 if dtype == np.float64 else 2e-6)
    strided = np.repeat(a, 2)[::2]              # non-contiguous: takes the numpy path
    np.testing.assert_allclose(getattr(tg.from_numpy(strided), name)().numpy(), ref(a),
                               rtol=2e-7 if dtype == np.float64 else 2e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**"])
def test_binary_layouts_match_numpy(op, n, dtype):
    a, b = _data(n, dtype, True), _data(n, dtype, True, seed=1)
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power}[op]
    cases = [
        (a, b),                                 # same shape, contiguous
        (a, b[:1]),                             # size-1 array broadcast
        (a[:1], b),
        (a, np.asarray(b[0])),                  # 0-d array
        (a.reshape(1, -1), b.reshape(-1, 1)),   # true broadcasting: numpy path
    ]
    for x, y in cases:
        got = eval(f"tg.from_numpy(x) {op} tg.from_numpy(y)").numpy()
        assert got.dtype == dtype
        np.testing.assert_allclose(got, f(x, y), rtol=1e-6 if dtype == np.float32 else 1e-12)
    scalar = 1.75
    np.testing.assert_allclose(eval(f"tg.from_numpy(a) {op} scalar").numpy(),
                               f(a, dtype(scalar)), rtol=1e-6)
    np.testing.assert_allclose(eval(f"scalar {op} tg.from_numpy(a)").numpy(),
                               f(dtype(scalar), a), rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_arithmetic_is_exact_at_every_size(op, dtype):
    """Few elements take a scalar path before the vectorised kernels (kernels.c, TG_TINY): both
    round each operation once, so every size and layout gives numpy's bits."""
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op]
    for n in range(1, 18):
        a, b = _data(n, dtype, seed=2), _data(n, dtype, True, seed=3)
        for x, y in ((a, b), (a, b[:1]), (a[:1], b), (a, np.asarray(b[0]))):
            got = eval(f"tg.from_numpy(x) {op} tg.from_numpy(y)").numpy()
            np.testing.assert_array_equal(got, f(x, y), err_msg=f"n={n} {x.shape} {y.shape}")
        np.testing.assert_array_equal(eval(f"tg.from_numpy(a) {op} 1.75").numpy(),
                                      f(a, dtype(1.75)), err_msg=f"n={n} scalar")


def test_ieee_results_without_warnings():
    z = tg.tensor([0.0, 1.0, -1.0])
    assert np.isinf((1.0 / z).numpy()[0])
    assert np.isnan(tg.tensor([-1.0]).log().numpy()[0])
    assert np.isinf(tg.tensor([1000.0]).exp().numpy()[0])
    assert np.isnan(tg.tensor([float("nan")]).relu().numpy()[0])   # relu propagates NaN
