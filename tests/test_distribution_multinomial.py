"""Multinomial (d2l's probability chapter counts die rolls with it) and the torch.distributions
submodule paths scripts import classes from."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import distributions as D

_PROBS = [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]
_COUNTS = [[2.0, 3.0, 5.0], [7.0, 0.0, 3.0]]


def test_multinomial_values():
    m = D.Multinomial(10, tg.tensor([0.2, 0.3, 0.5]))
    assert (m.batch_shape, m.event_shape, m.total_count) == ((), (3,), 10)
    assert m.mean.tolist() == pytest.approx([2.0, 3.0, 5.0])
    assert m.variance.tolist() == pytest.approx([1.6, 2.1, 2.5])
    # log P(2, 3, 5) = log(10! / (2! 3! 5!)) + 2 log .2 + 3 log .3 + 5 log .5
    expected = (math.log(2520) + 2 * math.log(0.2) + 3 * math.log(0.3) + 5 * math.log(0.5))
    assert m.log_prob(tg.tensor([2.0, 3.0, 5.0])).item() == pytest.approx(expected, rel=1e-5)
    # One draw is a Categorical: entropy -sum p log p.
    one = D.Multinomial(1, tg.tensor([0.25, 0.75], dtype=tg.float64))
    assert one.entropy().item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    assert repr(m) == "Multinomial()" and repr(m.support) == "Multinomial()"


def test_multinomial_samples_are_counts_summing_to_total():
    tg.manual_seed(0)
    m = D.Multinomial(6, logits=tg.zeros(2, 4))
    draws = m.sample((500,))
    assert draws.shape == (500, 2, 4) and draws.dtype == tg.float32
    assert draws.sum(-1).eq(6).all() and draws.ge(0).all()
    assert draws.mean(0).numpy() == pytest.approx(np.full((2, 4), 1.5), abs=0.2)
    fair = D.Multinomial(1000, tg.ones(6) / 6).sample()
    assert fair.shape == (6,) and fair.sum().item() == 1000
    assert D.Multinomial(3, probs=tg.tensor([0.0, 1.0])).sample().tolist() == [0.0, 3.0]
    assert m.expand((3, 2)).sample().shape == (3, 2, 4)


def test_multinomial_errors():
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(2.5, tg.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Multinomial(2)
    m = D.Multinomial(10, tg.tensor([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match=r"within the support \(Multinomial\(\)\)"):
        m.log_prob(tg.tensor([2.0, 3.0, 6.0]))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        m.log_prob(tg.tensor([2.0, 8.0]))


def test_multinomial_gradcheck(gradcheck):
    counts = tg.tensor(_COUNTS, dtype=tg.float64)
    gradcheck(lambda lg: D.Multinomial(10, logits=lg).log_prob(counts), [[0.1, -0.4, 1.2], [0.0, 2.0, -1.0]])
    gradcheck(lambda p: D.Multinomial(10, probs=p).log_prob(counts), _PROBS)
    gradcheck(lambda p: D.Multinomial(4, probs=p).entropy(), _PROBS)


def test_multinomial_matches_torch(torch):
    for lib_make in (lambda m, p: m.distributions.Multinomial(10, probs=p),
                     lambda m, p: m.distributions.Multinomial(10, logits=p.log())):
        ours_p = tg.tensor(_PROBS, dtype=tg.float64, requires_grad=True)
        theirs_p = torch.tensor(_PROBS, dtype=torch.float64, requires_grad=True)
        ours, theirs = lib_make(tg, ours_p), lib_make(torch, theirs_p)
        for attr in ("mean", "variance", "probs", "logits"):
            np.testing.assert_allclose(getattr(ours, attr).detach().numpy(),
                                       getattr(theirs, attr).detach().numpy(), rtol=1e-12)
        value = [[2.0, 3.0, 5.0], [10.0, 0.0, 0.0]]
        lp_ours = ours.log_prob(tg.tensor(value, dtype=tg.float64))
        lp_theirs = theirs.log_prob(torch.tensor(value, dtype=torch.float64))
        np.testing.assert_allclose(lp_ours.detach().numpy(), lp_theirs.detach().numpy(), rtol=1e-12)
        total_ours = lp_ours.sum() + ours.entropy().sum()
        total_theirs = lp_theirs.sum() + theirs.entropy().sum()
        np.testing.assert_allclose(total_ours.item(), total_theirs.item(), rtol=1e-12)
        total_ours.backward()
        total_theirs.backward()
        np.testing.assert_allclose(ours_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-9, atol=1e-12)
    # A zero-probability category never drawn contributes nothing (not 0 * -inf).
    zero = [0.0, 0.4, 0.6]
    ours = D.Multinomial(5, tg.tensor(zero)).log_prob(tg.tensor([0.0, 2.0, 3.0]))
    theirs = torch.distributions.Multinomial(5, torch.tensor(zero)).log_prob(torch.tensor([0.0, 2.0, 3.0]))
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)
    assert tuple(D.Multinomial(3, tg.ones(2, 5)).expand((4, 2)).batch_shape) == tuple(
        torch.distributions.Multinomial(3, torch.ones(2, 5)).expand((4, 2)).batch_shape)


_SUBMODULES = {"beta": "Beta", "binomial": "Binomial", "cauchy": "Cauchy", "dirichlet": "Dirichlet",
               "exponential": "Exponential", "gamma": "Gamma", "geometric": "Geometric",
               "laplace": "Laplace", "log_normal": "LogNormal", "multinomial": "Multinomial",
               "poisson": "Poisson", "studentT": "StudentT", "normal": "Normal",
               "categorical": "Categorical", "bernoulli": "Bernoulli"}


def test_classes_import_from_pytorchs_submodule_paths():
    for module, name in _SUBMODULES.items():
        found = getattr(importlib.import_module(f"tapegrad.distributions.{module}"), name)
        assert found is getattr(D, name)


def test_submodule_paths_are_pytorchs(torch):
    for module, name in _SUBMODULES.items():
        assert hasattr(importlib.import_module(f"torch.distributions.{module}"), name)
