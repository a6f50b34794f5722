"""The C row kernels behind broadcast gradients and linear's bias give numpy's bits.

A gradient summed over leading dims (the bias of a linear layer, the b of `x + b`) is a column
sum in C, and linear adds its bias row by row in C.  Both must equal what numpy computes (its
order of additions and its rounding) to the bit, in float32 and float64, including the -0.0 a
sum that starts from numpy's identity turns into +0.0, and the one-column case that numpy sums
pairwise (which therefore stays with numpy).
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _grad_sample(rng, shape, dtype):
    g = rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)
    g = g.astype(dtype)
    g.reshape(-1)[::7] = -0.0
    return g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,b_shape", [
    ((64, 256), (256,)), ((10000, 3), (3,)), ((8193, 7), (7,)), ((5, 2, 9), (2, 9)),
    ((300, 40, 3), (3,)), ((1, 5), (5,)), ((10000, 1), (1,)), ((9, 1), (1,)),
    ((12, 4), (1, 4)), ((6, 5), (6, 1))])
def test_broadcast_gradient_is_numpys_sum_to_the_bit(x_shape, b_shape, dtype):
    rng = np.random.default_rng(len(x_shape) * 100 + x_shape[0])
    x = tg.tensor(rng.standard_normal(x_shape).astype(dtype), requires_grad=True)
    b = tg.tensor(rng.standard_normal(b_shape).astype(dtype), requires_grad=True)
    g = _grad_sample(rng, x_shape, dtype)
    (x + b).backward(tg.from_numpy(g))
    lead = len(x_shape) - len(b_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(b_shape)
                                      if n == 1 and x_shape[lead + i] != 1)
    want = np.add.reduce(g, axis=axes, keepdims=True).reshape(b_shape)
    assert b.grad.dtype == (tg.float32 if dtype == np.float32 else tg.float64)
    np.testing.assert_array_equal(_bits(b.grad.numpy()), _bits(want))


def test_a_column_of_negative_zeros_sums_to_positive_zero_as_numpy():
    x = tg.zeros(3, 2, requires_grad=True)
    b = tg.zeros(2, requires_grad=True)
    (x + b).backward(tg.full((3, 2), -0.0))
    assert np.signbit(np.add.reduce(np.full((3, 2), -0.0), axis=0)).tolist() == [False, False]
    assert np.signbit(b.grad.numpy()).tolist() == [False, False]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,m,bias_shape", [(64, 784, 256, (256,)), (3, 4, 5, (5,)),
                                              (7, 3, 1, (1,)), (4, 6, 5, (1,)),
                                              (4, 6, 5, (4, 5)), (2, 3, 5, (1, 5))])
def test_linear_bias_is_numpys_addition_to_the_bit(n, k, m, bias_shape, dtype):
    rng = np.random.default_rng(n + k + m)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    bias = rng.standard_normal(bias_shape).astype(dtype)
    got = F.linear(tg.from_numpy(x), tg.from_numpy(w), tg.from_numpy(bias)).numpy()
    want = x @ w.T
    np.add(want, bias, out=want)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_linear_on_a_batch_of_matrices_adds_the_bias_to_every_row():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    bias = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    got = F.linear(tg.from_numpy(x), tg.from_numpy(w), tg.from_numpy(bias)).numpy()
    want = np.matmul(x, w.T) + bias
    np.testing.assert_array_equal(_bits(got), _bits(want))
