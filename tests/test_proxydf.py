"""What the uncertainty-estimation proxy (MC dropout, deep ensembles, heteroscedastic losses,
SWA/SWAG, Laplace, conformal prediction, calibration) found tapegrad doing differently from
PyTorch: dropout2d's mask on input that is not 3-D or 4-D, and gaussian_nll_loss's checks."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn
import tapegrad.nn.functional as F


def _varies_along(out):
    """For each dim: does the zero pattern of a dropout mask change along it?"""
    zeros = out.numpy() == 0
    return [bool((zeros != np.take(zeros, [0], axis=d)).any()) for d in range(zeros.ndim)]


# -- dropout2d: ATen's feature dropout, one draw per (dim 0, dim 1) entry ----------------------

@pytest.mark.parametrize("shape, expected", [
    ((200, 50), [True, True]),                        # (N, C): single elements, not whole rows
    ((20, 10, 30), [True, True, False]),
    ((4, 20, 3, 3), [True, True, False, False]),
    ((4, 20, 2, 2, 2), [True, True, False, False, False]),   # 5-D: per (N, C), not per sample
])
def test_dropout2d_masks_each_dim0_dim1_entry_whatever_the_rank(shape, expected):
    tg.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.dropout2d(tg.ones(shape), 0.5)
        module_out = nn.Dropout2d(0.5)(tg.ones(shape))
    assert _varies_along(out) == expected
    assert _varies_along(module_out) == expected
    assert set(np.unique(out.numpy())) <= {0.0, 2.0}


def test_dropout2d_refuses_1d_input_only_when_it_draws_a_mask():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            F.dropout2d(tg.ones(3), 0.5)
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            nn.Dropout2d(0.3)(tg.ones(4))
        # eval, p == 0, p == 1 and empty input return before ATen builds the mask
        assert F.dropout2d(tg.ones(3), 0.5, training=False).tolist() == [1.0, 1.0, 1.0]
        assert F.dropout2d(tg.ones(3), 0.0).tolist() == [1.0, 1.0, 1.0]
        assert F.dropout2d(tg.ones(3), 1.0).tolist() == [0.0, 0.0, 0.0]
        assert F.dropout2d(tg.ones(0), 0.5).shape == (0,)


def test_dropout1d_and_3d_keep_their_channel_masks():
    tg.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _varies_along(F.dropout1d(tg.ones(200, 50), 0.5)) == [True, False]   # (C, L)
        assert _varies_along(F.dropout3d(tg.ones(20, 10, 30), 0.5)) == [True, False, False]
        assert _varies_along(F.dropout3d(tg.ones(4, 20, 2, 2, 2), 0.5)) == [True, True, False,
                                                                             False, False]


def test_dropout2d_gradient_is_the_mask():
    tg.manual_seed(2)
    x = tg.ones(6, 5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.dropout2d(x, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


# -- gaussian_nll_loss: PyTorch's check order and its in-place clamp ---------------------------

def test_gaussian_nll_loss_integer_var_fails_as_pytorch_clamp_does():
    mu, target = tg.tensor([0.5, 1.0]), tg.zeros(2)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        F.gaussian_nll_loss(mu, target, tg.ones(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        nn.GaussianNLLLoss()(mu, target, tg.ones(2, dtype=tg.bool))
    with pytest.raises(TypeError):
        F.gaussian_nll_loss(mu, target, 1)


def test_gaussian_nll_loss_checks_negative_var_before_its_size():
    mu, target = tg.zeros(4), tg.zeros(4)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(mu, target, -tg.ones(3))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(mu, target, -0.5)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(mu, target, tg.ones(3))


def test_gaussian_nll_loss_matches_torch_with_clamped_var_gradients():
    torch = pytest.importorskip("torch")
    mu = np.array([[0.5, 1.0], [2.0, -1.0], [0.0, 0.3]])
    target = np.array([[0.4, 1.5], [1.0, -1.2], [0.1, 0.0]])
    var = np.array([[0.1, 1e-9], [1.0, 2.0], [1e-8, 0.3]])
    for full, red in [(False, "mean"), (True, "sum")]:
        grads = []
        for lib in (tg, torch):
            m = lib.tensor(mu, requires_grad=True)
            v = lib.tensor(var, requires_grad=True)
            loss = lib.nn.functional.gaussian_nll_loss(m, lib.tensor(target), v, full=full,
                                                       eps=1e-6, reduction=red)
            loss.backward()
            grads.append((loss.item(), m.grad.numpy(), v.grad.numpy()))
        (a_loss, a_m, a_v), (b_loss, b_m, b_v) = grads
        assert a_loss == pytest.approx(b_loss, rel=1e-12)
        np.testing.assert_allclose(a_m, b_m, rtol=1e-12)
        np.testing.assert_allclose(a_v, b_v, rtol=1e-12)
    v = tg.full((3,), 1e-9)
    before = v.tolist()
    F.gaussian_nll_loss(tg.zeros(3), tg.ones(3), v)
    assert v.tolist() == before   # the clamp works on a clone


def test_gaussian_nll_loss_gradcheck_float64():
    mu = tg.tensor([[0.3, -0.2], [1.1, 0.4]], dtype=tg.float64, requires_grad=True)
    var = tg.tensor([[0.5], [1.5]], dtype=tg.float64, requires_grad=True)
    target = tg.tensor([[0.0, 0.1], [1.0, 0.0]], dtype=tg.float64)
    assert tg.autograd.gradcheck(lambda m, v: F.gaussian_nll_loss(m, target, v, full=True),
                                 (mu, var))
