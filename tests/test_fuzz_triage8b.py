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
