"""Regressions of the session-27 fuzz run of fuzz12 (programs 62672658-, 60665473-; surface
60788343-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import warnings

import numpy as np
import pytest

import tapegrad as tg


# -- var / std over all elements with no degrees of freedom (62673863; SILENT: NaN where PyTorch's
# gradient is inf) ---------------------------------------------------------------------------------
# PyTorch's gradient there is grad * where(input == mean, NaN, inf): it compares the input with its
# mean, so a NaN element (or a NaN mean) gets inf and an infinite element equal to an infinite mean
# NaN.  Formed from input - mean, both are NaN: the eager backward gave NaN for the first, the
# create_graph one inf for the second.

_NAN, _INF = float("nan"), float("inf")
_NO_DOF_CASES = [([_NAN], 1), ([2.0], 1), ([1.0, 3.0], 2), ([1.0, 3.0], 3), ([1.0, 1.0], 2),
                 ([1.0, _INF], 2), ([_NAN, 1.0], 2), ([_INF, _INF], 2), ([-_INF, 1.0, 2.0], 3)]


def _no_dof_gradients(lib, name, values, correction, upstream, create_graph):
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = getattr(x, name)(correction=correction)
    g, = lib.autograd.grad(y * upstream, [x], create_graph=create_graph)
    return g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("upstream", [0.7, -0.7, 0.0])
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("case", _NO_DOF_CASES, ids=str)
def test_var_std_without_degrees_of_freedom_gradients_match_torch(torch, case, name, upstream,
                                                                    create_graph):
    got = _no_dof_gradients(tg, name, *case, upstream, create_graph)
    expected = _no_dof_gradients(torch, name, *case, upstream, create_graph)
    np.testing.assert_array_equal(got, expected)


def test_var_without_degrees_of_freedom_after_bce_at_minus_inf_matches_torch(torch):
    # the fuzz program: a logit of -inf gives a NaN loss whose var() passes inf back
    def grads(lib):
        x = lib.tensor([-0.0855], requires_grad=True)
        logit = lib.add(x / 0.0 / 2.5, lib.tensor(2.0, requires_grad=True), alpha=2)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(
            logit, lib.tensor([0.668]), reduction="sum")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (loss.var() * 1.3).backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(grads(tg), grads(torch))
