"""Regressions of the session-27 fuzz run of fuzz11 (programs 62666160-, 60663073-; surface
60783193-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import math

import numpy as np
import pytest

import tapegrad as tg


# -- tril_ / triu_ on an expand()ed view (62668407: RuntimeError where PyTorch runs) ---------------
# PyTorch's kernel writes only the zeros, with no overlap check: a memory location that any
# dropped element sees becomes zero at every element seeing it.  Recorded, the write goes to the
# base and its backward raises the overlap error.

_TRIANGLE_CASES = [("tril_", 0, (1, 3), (3, 3)), ("triu_", 0, (1, 3), (3, 3)),
                   ("triu_", 0, (3, 1), (3, 3)), ("tril_", -1, (3, 1), (3, 3)),
                   ("triu_", 1, (1,), (2, 2)), ("tril_", 1, (1,), (2, 2)),
                   ("tril_", 0, (2, 1, 3), (2, 4, 3)), ("triu_", 5, (1, 3), (3, 3)),
                   ("tril_", 5, (1, 3), (3, 3))]


def _triangle_on_expanded(lib, name, diagonal, shape, expanded, requires_grad):
    x = lib.arange(1.0, 1.0 + math.prod(shape), dtype=lib.float64).reshape(shape)
    x.requires_grad_(requires_grad)
    base = x * 1
    view = base.expand(expanded)
    out = getattr(view, name)(diagonal)
    backward_error = None
    if requires_grad:
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad(out.sum(), x)
        backward_error = str(e.value)[:60]
    return (out.detach().numpy(), base.detach().numpy(), out.requires_grad, out._version,
            backward_error)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("case", _TRIANGLE_CASES, ids=lambda c: f"{c[0]}{c[1]}-{c[2]}")
def test_triangle_in_place_on_expanded_view_matches_torch(torch, case, requires_grad):
    got = _triangle_on_expanded(tg, *case, requires_grad)
    expected = _triangle_on_expanded(torch, *case, requires_grad)
    for a, b in zip(got[:2], expected[:2]):
        np.testing.assert_array_equal(a, b)
    assert got[2:] == expected[2:]
