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


# -- batch_norm / instance_norm of an empty input (60665994: RuntimeError where PyTorch runs) ------
# PyTorch returns a clone (times weight[0], plus bias[0]) that saves nothing, so a write into the
# input before backward is no error; tapegrad's record saved the input.

_EMPTY_NORMS = {
    "batch_norm": lambda F, t, w, b: F.batch_norm(t, None, None, w, b, training=True),
    "batch_norm-eval": lambda F, t, w, b: F.batch_norm(t, t.new_zeros(t.shape[1]),
                                                       t.new_ones(t.shape[1]), w, b),
    "instance_norm": lambda F, t, w, b: F.instance_norm(t, weight=w, bias=b),
}


def _empty_norm(lib, name, shape, affine):
    x = lib.zeros(shape, dtype=lib.float64, requires_grad=True)
    w = lib.full((shape[1],), 2.0, dtype=lib.float64, requires_grad=True) if affine else None
    b = lib.full((shape[1],), 0.5, dtype=lib.float64, requires_grad=True) if affine else None
    y = x * 1
    out = _EMPTY_NORMS[name](lib.nn.functional, y, w, b)
    y.mul_(0.0)
    out.sum().backward()
    grads = [t.grad.numpy() for t in (x, w, b) if t is not None]
    return tuple(out.shape), type(out.grad_fn).__name__, grads


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(3, 0, 3), (0, 2, 3), (0, 2)], ids=str)
@pytest.mark.parametrize("name", sorted(_EMPTY_NORMS))
def test_norm_of_empty_input_saves_nothing_as_torch(torch, name, shape, affine):
    if name == "instance_norm" and len(shape) < 3:
        pytest.skip("instance_norm needs a spatial dim")
    # (an empty weight raises at weight[0]; instance_norm's is repeated per sample, so no sample
    # empties it too)
    if affine and (shape[1] == 0 or (name == "instance_norm" and shape[0] == 0)):
        with pytest.raises(IndexError):
            _empty_norm(torch, name, shape, affine)
        with pytest.raises(IndexError):
            _empty_norm(tg, name, shape, affine)
        return
    got = _empty_norm(tg, name, shape, affine)
    expected = _empty_norm(torch, name, shape, affine)
    assert got[:2] == expected[:2]
    for a, b in zip(got[2], expected[2]):
        np.testing.assert_array_equal(a, b)
