"""What the proxydj session (semi- and self-supervised training loops: FixMatch/UDA, Mean Teacher
and EMA teachers, MixMatch, DINO/BYOL/SimSiam) found tapegrad doing differently from PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.distributions import Beta, kl_divergence


# -- Beta holds a copy of its concentrations (PyTorch's inner Dirichlet of the stacked pair) ------

def test_beta_keeps_its_concentrations_when_the_source_tensors_change_in_place():
    # SILENT before: Beta aliased the tensors it was built from, so an optimizer step (or any
    # in-place update) on a learnable concentration changed an already-built Beta's mean,
    # log_prob and samples, where PyTorch's keeps the values it was built with
    torch = pytest.importorskip("torch")
    a, b = [1.0, 2.0], [2.0, 3.0]
    value = [0.3, 0.6]
    ours_a, ours_b = tg.tensor(a), tg.tensor(b)
    theirs_a, theirs_b = torch.tensor(a), torch.tensor(b)
    ours, theirs = Beta(ours_a, ours_b), torch.distributions.Beta(theirs_a, theirs_b)
    for t in (ours_a, ours_b):
        t.mul_(1.5)
    for t in (theirs_a, theirs_b):
        t.mul_(1.5)
    for name in ("concentration1", "concentration0", "mean", "variance"):
        np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(),
                                   rtol=1e-6)
    np.testing.assert_allclose(ours.log_prob(tg.tensor(value)).numpy(),
                               theirs.log_prob(torch.tensor(value)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-6)


def test_beta_concentrations_are_views_of_the_stacked_pair_with_gradients():
    torch = pytest.importorskip("torch")
    a = tg.tensor([0.5, 2.0], requires_grad=True)
    ours = Beta(a, tg.tensor([0.5, 3.0]))
    ta = torch.tensor([0.5, 2.0], requires_grad=True)
    theirs = torch.distributions.Beta(ta, torch.tensor([0.5, 3.0]))
    for name in ("concentration1", "concentration0"):
        assert getattr(ours, name).grad_fn.name() == getattr(theirs, name).grad_fn.name()
    lp = ours.log_prob(tg.tensor([0.3, 0.6]))
    tlp = theirs.log_prob(torch.tensor([0.3, 0.6]))
    assert lp.grad_fn.name() == tlp.grad_fn.name()          # the Dirichlet's density
    lp.sum().backward()
    tlp.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)
    # a learnable concentration still trains through a draw and an expanded copy
    assert ours.rsample((3,)).shape == (3, 2) and ours.rsample().requires_grad
    expanded = ours.expand((4, 2))
    assert expanded.concentration1.shape == (4, 2) and expanded.batch_shape == (4, 2)
    np.testing.assert_allclose(expanded.mean.detach().numpy()[1], ours.mean.detach().numpy())
    np.testing.assert_allclose(kl_divergence(ours, Beta(tg.tensor(1.0), tg.tensor(1.0))).detach().numpy(),
                               torch.distributions.kl_divergence(theirs, torch.distributions.Beta(
                                   torch.tensor(1.0), torch.tensor(1.0))).detach().numpy(), rtol=1e-5)


def test_beta_of_numbers_is_float32_scalar_batch_and_float64_params_stay_float64():
    b = Beta(0.5, 0.5)
    assert b.batch_shape == () and b.concentration1.dtype == tg.float32
    assert b.concentration1.shape == ()
    b64 = Beta(tg.tensor(0.5, dtype=tg.float64), 0.5)
    assert b64.concentration0.dtype == tg.float64
    assert repr(b) == "Beta()"


# -- fill_diagonal_ (the SimCLR / Barlow Twins mask idiom) writes through a view of the diagonal ----

def test_fill_diagonal_on_a_computed_tensor_is_copyslices_with_torch_gradients():
    torch = pytest.importorskip("torch")
    values = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    x, tx = tg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    sim, tsim = x * 2, tx * 2
    sim.fill_diagonal_(-1.0)
    tsim.fill_diagonal_(-1.0)
    assert type(sim.grad_fn).__name__ == type(tsim.grad_fn).__name__ == "CopySlices"
    assert sim.grad_fn.name() == tsim.grad_fn.name()
    np.testing.assert_array_equal(sim.detach().numpy(), tsim.detach().numpy())
    (sim * sim).sum().backward()
    (tsim * tsim).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    # a view keeps the view's node (AsStridedBackward0) and its base becomes CopySlices
    base, tbase = x * 1, tx * 1
    view, tview = base[:2], tbase[:2]
    view.fill_diagonal_(0.0)
    tview.fill_diagonal_(0.0)
    assert view.grad_fn.name() == tview.grad_fn.name()
    assert base.grad_fn.name() == tbase.grad_fn.name()


def test_fill_diagonal_on_a_leaf_that_requires_grad_names_the_view():
    leaf = tg.zeros(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being "
                                           "used in an in-place operation"):
        leaf.fill_diagonal_(1.0)
    with tg.no_grad():
        leaf.fill_diagonal_(1.0)
    np.testing.assert_array_equal(leaf.detach().numpy(), np.eye(3, dtype=np.float32))
