"""A @ W^T takes the faster of two BLAS layouts per shape, and never a different value.

The first calls of each (n, k, m, dtype) alternate the direct product and W @ A^T transposed,
then keep the faster; a shape whose two ways differ in a bit on seeded random operands stays
direct.  So whatever the timings, results equal numpy's direct product to the bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _core

F = tg.nn.functional


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m", [(64, 784, 256), (37, 300, 45), (300, 33, 70)])
def test_linear_equals_numpys_product_to_the_bit_before_and_after_the_choice(n, k, m, dtype):
    rng = np.random.default_rng(n * k + m)
    w = tg.tensor(rng.standard_normal((m, k)).astype(dtype), requires_grad=True)
    b = tg.tensor(rng.standard_normal(m).astype(dtype), requires_grad=True)
    for call in range(10):          # probing calls (both ways) and chosen ones
        x = rng.standard_normal((n, k)).astype(dtype)
        got = F.linear(tg.from_numpy(x), w, b)
        want = np.matmul(x, w.detach().numpy().T)
        want += b.detach().numpy()
        assert got.detach().numpy().flags.c_contiguous
        np.testing.assert_array_equal(got.detach().numpy(), want, err_msg=f"call {call}")
        no_bias = tg.from_numpy(x) @ w.t()
        np.testing.assert_array_equal(no_bias.detach().numpy(), np.matmul(x, w.detach().numpy().T))
    choice, direct_ns, transposed_ns = _core._matmul_layouts()[(n, k, m, np.dtype(dtype).name)]
    assert choice in ("direct", "transposed", "differs")
    if choice != "differs":                                 # chosen by speed: the faster one
        assert choice == ("transposed" if transposed_ns < direct_ns else "direct")


def test_gradients_through_a_measured_shape_match_the_formula():
    rng = np.random.default_rng(5)
    x = tg.tensor(rng.standard_normal((64, 784)).astype(np.float32), requires_grad=True)
    w = tg.tensor(rng.standard_normal((256, 784)).astype(np.float32), requires_grad=True)
    g = rng.standard_normal((64, 256)).astype(np.float32)
    for _ in range(8):
        x.grad = w.grad = None
        F.linear(x, w).backward(tg.from_numpy(g))
    np.testing.assert_array_equal(x.grad.numpy(), g @ w.detach().numpy())
    np.testing.assert_array_equal(w.grad.numpy(), g.T @ x.detach().numpy())


def test_small_products_are_not_measured():
    before = set(_core._matmul_layouts())
    a = tg.randn(8, 16)
    w = tg.randn(4, 16)
    F.linear(a, w)
    a @ w.t()
    assert set(_core._matmul_layouts()) == before


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (31, 5, 33), (64, 7, 65), (100, 3, 32)])
def test_the_transposed_way_is_the_product_in_c_order(n, k, m, dtype):
    # Odd sizes exercise the transpose's partial tiles.  Values are small integers, so every
    # summation order gives the exact product.
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (n, k)).astype(dtype)
    w = rng.integers(-4, 5, (m, k)).astype(dtype)
    got = _core._matmul_transposed(a, w)
    assert got.shape == (n, m) and got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, a @ w.T)


def test_the_test_hook_rejects_what_the_kernel_cannot_take():
    with pytest.raises(ValueError, match=r"\(2, 3\) int64"):
        _core._matmul_transposed(np.zeros((2, 3), np.int64), np.zeros((4, 3), np.int64))
    with pytest.raises(ValueError, match="float32"):
        _core._matmul_transposed(np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32))


def test_calls_with_a_zero_initialised_weight_do_not_count_as_trials():
    # All-zero products agree whatever the summation order, so they prove nothing about it.
    rng = np.random.default_rng(9)
    n, k, m = 48, 600, 96
    x = tg.from_numpy(rng.standard_normal((n, k)).astype(np.float32))
    w = tg.zeros(m, k)
    for _ in range(12):
        F.linear(x, w)
    assert _core._matmul_layouts()[(n, k, m, "float32")][0] == "probing"
    with tg.no_grad():
        w.copy_(tg.from_numpy(rng.standard_normal((m, k)).astype(np.float32)))
    for _ in range(12):
        np.testing.assert_array_equal(F.linear(x, w).numpy(), x.numpy() @ w.numpy().T)
    assert _core._matmul_layouts()[(n, k, m, "float32")][0] in ("direct", "transposed", "differs")


def test_a_shape_seen_once_is_not_probed():
    # A last partial batch or a one-off length must not pay for computing both ways.
    rng = np.random.default_rng(11)
    x = rng.standard_normal((29, 700)).astype(np.float32)
    w = rng.standard_normal((70, 700)).astype(np.float32)
    F.linear(tg.from_numpy(x), tg.from_numpy(w))
    choice, direct_ns, transposed_ns = _core._matmul_layouts()[(29, 700, 70, "float32")]
    assert choice == "probing" and direct_ns == transposed_ns == 2**63 - 1
