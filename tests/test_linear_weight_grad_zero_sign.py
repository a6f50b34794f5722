"""linear's weight gradient for a 1-D input, eager and compiled, against PyTorch down to the sign of
zero: PyTorch multiplies the input as one row (mm), whose sum starts at +0.0, so a zero input
under a negative gradient gives +0.0, not the outer product's -0.0 (fuzz 61401252: the compiled
step's 1-D record gave -0.0 with a bias where eager's folded 2-D record gave +0.0)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

# one input feature: PyTorch's product is a sum of one term started at +0.0 (with more features
# its sign of zero follows its BLAS kernel's order, no oracle for eager)
CASES = [([0.0], True), ([-0.0], True), ([0.0], False), ([-0.0], False),
         ([[0.0]], True), ([[0.0], [-0.0]], False)]
WIDER = [([0.0, -0.0], True), ([0.0, -0.0], False), ([0.0, -0.0, 0.0], True)]


def _weight(lib, n_in, dtype):
    w = np.array([1.5, -0.0, 2.0][:n_in] * 2, dtype=dtype).reshape(2, n_in)
    return lib.tensor(w, requires_grad=True)


def _step(lib, x, w, b, seed):
    y = lib.nn.functional.linear(x, w, b)
    return (y * seed).sum()


def _grads(lib, xs, bias, dtype, compiled=False):
    """The weight's gradient (and the input's, as a check) over three calls (a compiled
    function replays from the second)."""
    fn = _step
    if compiled:
        fn = tg.compile(lambda x, w, b, seed: _step(tg, x, w, b, seed))
    out = []
    for _ in range(3):
        x = lib.tensor(np.array(xs, dtype=dtype))
        w = _weight(lib, x.shape[-1], dtype)
        b = lib.tensor(np.array([0.5, 0.25], dtype=dtype)) if bias else None
        seed = lib.tensor(np.array([-1.0, 1.0], dtype=dtype))
        (fn(x, w, b, seed) if compiled else fn(lib, x, w, b, seed)).backward()
        out.append(w.grad.numpy().copy())
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, bias", CASES)
def test_weight_grad_matches_torch_bit_for_bit(xs, bias, dtype):
    torch = pytest.importorskip("torch")
    want = _grads(torch, xs, bias, dtype)[0]
    for compiled in (False, True):
        for got in _grads(tg, xs, bias, dtype, compiled):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(np.signbit(got), np.signbit(want)), (compiled, got, want)
            assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, bias", CASES + WIDER)
def test_compiled_weight_grad_equals_eager_bit_for_bit(xs, bias, dtype):
    want = _grads(tg, xs, bias, dtype)[0]
    for got in _grads(tg, xs, bias, dtype, compiled=True):
        assert np.array_equal(np.signbit(got), np.signbit(want)), (got, want)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("bias", [True, False])
def test_weight_grad_of_a_row_input_matches_finite_differences(bias):
    rng = np.random.default_rng(3)
    x = tg.tensor(rng.standard_normal(3), dtype=tg.float64)
    w = tg.tensor(rng.standard_normal((2, 3)), dtype=tg.float64, requires_grad=True)
    b = tg.tensor(rng.standard_normal(2), dtype=tg.float64) if bias else None
    assert tg.autograd.gradcheck(lambda w: tg.nn.functional.linear(x, w, b), (w,))
