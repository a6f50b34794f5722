"""Regressions of the issue-16 fuzz run of session 8 (seeds from 50000000) and of its
adjudicator (tools/fuzz_adjudicate.py).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it.
"""
import math
import os
import sys

import numpy as np
import pytest

import tapegrad as tg

nan, inf = math.nan, math.inf


# -- x[mask] = one-element value aliasing x (seed 50002974) -------------------------------------
# PyTorch writes a boolean mask with a one-element value through masked_fill_, which reads the
# value first and checks no overlap; tapegrad applied index_put_'s overlap refusal.

MASK_CASES = {
    "(1,) view of x": lambda x: x[0:1],
    "(1,) view of a written element": lambda x: x[3:4],
    "0-d view": lambda x: x[3],
    "(1, 1) view": lambda x: x[2:3].view(1, 1),
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_mask_setitem_with_an_aliasing_one_element_value(case):
    x = tg.tensor(np.arange(1.0, 7.0))
    expected = x.numpy().copy()
    value = float(MASK_CASES[case](x).reshape(-1)[0])
    expected[expected > 2] = value
    x[x > 2] = MASK_CASES[case](x)
    np.testing.assert_array_equal(x.numpy(), expected)


@pytest.mark.parametrize("case", sorted(MASK_CASES))
def test_mask_setitem_with_an_aliasing_value_as_torch(torch, case):
    def run(L):
        a = L.tensor(np.arange(1.0, 7.0), requires_grad=True)
        y = a * 1.0
        y[y > 2] = MASK_CASES[case](y)
        (y * L.tensor(np.arange(6.0) - 2.5)).sum().backward()
        return y.detach().numpy().copy(), a.grad.numpy().copy()
    for ours, theirs in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_index_put_with_an_aliasing_value_still_refused(torch):
    # a list index, or a mask with a value of several elements, is index_put_: refused in both
    for key, value in (([1, 2], lambda x: x[0:1]), (None, lambda x: x)):
        for L in (tg, torch):
            x = L.tensor(np.arange(1.0, 7.0))
            with pytest.raises(RuntimeError, match="single memory location"):
                x[x > 0 if key is None else key] = value(x)


# -- second derivatives through a mean of an empty input (seed 50006602) -------------------------
# The mean's adjoint divided G by the count before expanding it; of an empty input the count is
# 0, so differentiating again divided a sum of nothing (0) by 0: NaN where PyTorch's formulas,
# dividing the expanded (empty) gradient, give exact zeros.  Same in the mean-reduced losses.

def _F(L):
    return L.nn.functional


EMPTY_MEANS = {
    "mean dim": lambda L, x: x.mean(-2, keepdim=True),
    "mean all": lambda L, x: x.mean().reshape(()),
    "mse": lambda L, x: _F(L).mse_loss(x, L.zeros_like(x)),
    "l1": lambda L, x: _F(L).l1_loss(x, L.zeros_like(x)),
    "smooth_l1": lambda L, x: _F(L).smooth_l1_loss(x, L.zeros_like(x)),
    "huber": lambda L, x: _F(L).huber_loss(x, L.zeros_like(x), delta=0.5),
    "bce": lambda L, x: _F(L).binary_cross_entropy(x.sigmoid(), L.zeros_like(x)),
    "bce_logits": lambda L, x: _F(L).binary_cross_entropy_with_logits(x, L.zeros_like(x)),
}


def _empty_mean_second(L, case):
    x = L.tensor(np.zeros((2, 0, 3)), requires_grad=True)
    w = L.tensor(np.arange(1.0, 7.0).reshape(2, 3, 1), requires_grad=True)
    y = EMPTY_MEANS[case](L, x)
    z = y @ w if y.dim() == 3 else y * w          # NaN (a mean of nothing) times w
    gx, gw = L.autograd.grad(z.sum(), [x, w], create_graph=True)
    s = (gx * 0.7).sum() + (gw * 0.7).sum()
    g2x, g2w = L.autograd.grad(s, [x, w], allow_unused=True)
    return g2w


@pytest.mark.parametrize("case", sorted(EMPTY_MEANS))
def test_second_derivative_through_a_mean_of_nothing_is_zero(case):
    # d/dw of sum(G_x) + sum(G_w): G_x is empty (its sum is 0 whatever w is) and G_w = mean(x)
    # (NaN) does not depend on w: the derivative is exactly 0
    g2w = _empty_mean_second(tg, case)
    np.testing.assert_array_equal(g2w.numpy(), np.zeros((2, 3, 1)))


@pytest.mark.parametrize("case", sorted(EMPTY_MEANS))
def test_second_derivative_through_a_mean_of_nothing_as_torch(torch, case):
    ours, theirs = _empty_mean_second(tg, case), _empty_mean_second(torch, case)
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())


def test_mean_of_a_nonempty_input_second_derivative_unchanged(torch):
    # the non-empty route (divide, then expand) is untouched: float64 values equal torch's
    def run(L):
        x = L.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        y = (x.mean(0) ** 3).sum() + _F(L).mse_loss(x, L.ones_like(x)) ** 2
        g, = L.autograd.grad(y, x, create_graph=True)
        g2, = L.autograd.grad((g * g).sum(), x)
        return g2.detach().numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-12, atol=1e-14)
