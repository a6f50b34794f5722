"""erfinv / lgamma / digamma and the distribution families added for the tutorial corpus
(Independent, MultivariateNormal, Exponential, Laplace, Cauchy, Geometric, LogNormal and the
transforms, Gamma, Beta, Dirichlet, StudentT, Poisson, Binomial), plus nn.init.dirac_/sparse_:
closed-form values without torch, and parity of values and gradients with torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import distributions as D


# -- special functions ---------------------------------------------------------------------------

def test_special_function_values():
    np.testing.assert_allclose(tg.erfinv(tg.tensor([0.0, 0.5, -0.5])).numpy(),
                               [0.0, 0.4769362762, -0.4769362762], rtol=1e-6)
    assert tg.erfinv(tg.tensor([1.0, -1.0])).tolist() == [math.inf, -math.inf]
    assert math.isnan(tg.erfinv(tg.tensor([1.5])).item())
    np.testing.assert_allclose(tg.lgamma(tg.tensor([1.0, 5.0, 0.5])).numpy(),
                               [0.0, math.log(24), math.log(math.sqrt(math.pi))], rtol=1e-6)
    assert tg.lgamma(tg.tensor([0.0, -2.0])).tolist() == [math.inf, math.inf]
    np.testing.assert_allclose(tg.digamma(tg.tensor([1.0, 0.5], dtype=tg.float64)).numpy(),
                               [-0.5772156649015329, -1.9635100260214235], rtol=1e-12)
    assert tg.digamma(tg.tensor([0.0])).item() == -math.inf
    assert math.isnan(tg.digamma(tg.tensor([-1.0])).item())
    assert tg.lgamma(tg.tensor([3])).dtype == tg.float32      # integers give the default float
    x = tg.tensor([0.3], requires_grad=True)
    assert type(tg.lgamma(x).grad_fn).__name__ == "LgammaBackward0"
    assert type(x.erfinv().grad_fn).__name__ == "ErfinvBackward0"


@pytest.mark.parametrize("fn", [tg.erfinv, tg.lgamma, tg.digamma])
def test_special_function_gradients(fn, gradcheck):
    values = [-0.7, 0.2, 0.9] if fn is tg.erfinv else [0.3, 2.5, 7.0, -1.5]
    gradcheck(fn, values)


def test_lgamma_second_derivative(gradcheck):
    x = tg.tensor([0.7, 3.0], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(tg.lgamma, (x,))


def test_special_functions_match_torch(torch):
    rng = np.random.default_rng(0)
    for name, values in (("erfinv", rng.uniform(-0.999, 0.999, 200)),
                         ("lgamma", rng.uniform(-6, 40, 200)),
                         ("digamma", rng.uniform(-6, 40, 200))):
        for dtype in (np.float32, np.float64):
            ours = getattr(tg, name)(tg.tensor(values.astype(dtype))).numpy()
            theirs = getattr(torch, name)(torch.tensor(values.astype(dtype))).numpy()
            np.testing.assert_allclose(ours, theirs, rtol=2e-6 if dtype == np.float32 else 1e-9,
                                       atol=1e-6 if dtype == np.float32 else 1e-12)


# -- continuous families -------------------------------------------------------------------------

def test_closed_form_values():
    assert D.Normal(0.0, 1.0).icdf(tg.tensor(0.975)).item() == pytest.approx(1.959964, rel=1e-5)
    e = D.Exponential(tg.tensor(2.0))
    assert e.mean.item() == 0.5 and e.log_prob(tg.tensor(0.5)).item() == pytest.approx(math.log(2) - 1)
    assert e.cdf(tg.tensor(0.5)).item() == pytest.approx(1 - math.exp(-1))
    lap = D.Laplace(tg.tensor(0.0), tg.tensor(1.0))
    assert lap.log_prob(tg.tensor(1.0)).item() == pytest.approx(-math.log(2) - 1)
    assert lap.icdf(lap.cdf(tg.tensor(0.3))).item() == pytest.approx(0.3, rel=1e-5)
    c = D.Cauchy(tg.tensor(0.0), tg.tensor(1.0))
    assert c.cdf(tg.tensor(1.0)).item() == pytest.approx(0.75)
    g = D.Gamma(tg.tensor(3.0), tg.tensor(2.0))
    assert g.mean.item() == 1.5 and g.variance.item() == 0.75
    assert g.log_prob(tg.tensor(1.0)).item() == pytest.approx(3 * math.log(2) - 2 - math.log(2))
    b = D.Beta(tg.tensor(2.0), tg.tensor(2.0))
    assert b.log_prob(tg.tensor(0.5)).item() == pytest.approx(math.log(6 * 0.25))
    t = D.StudentT(tg.tensor(1.0))                          # df = 1 is the Cauchy
    assert t.log_prob(tg.tensor(0.0)).item() == pytest.approx(-math.log(math.pi), rel=1e-6)
    assert math.isnan(t.mean.item())
    p = D.Poisson(tg.tensor(2.0))
    assert p.log_prob(tg.tensor(1.0)).item() == pytest.approx(math.log(2) - 2)
    bi = D.Binomial(10, probs=tg.tensor(0.3))
    assert bi.log_prob(tg.tensor(3.0)).item() == pytest.approx(
        math.log(math.comb(10, 3) * 0.3 ** 3 * 0.7 ** 7), rel=1e-5)
    geo = D.Geometric(probs=tg.tensor(0.25))
    assert geo.mean.item() == 3.0 and geo.log_prob(tg.tensor(2.0)).item() == pytest.approx(
        math.log(0.75 ** 2 * 0.25))
    dirichlet = D.Dirichlet(tg.tensor([1.0, 1.0, 1.0]))
    assert dirichlet.log_prob(tg.tensor([0.2, 0.3, 0.5])).item() == pytest.approx(math.log(2))
    assert D.LogNormal(tg.tensor(0.0), tg.tensor(1.0)).mean.item() == pytest.approx(math.exp(0.5))


def test_shapes_samples_and_validation():
    ind = D.Independent(D.Normal(tg.zeros(3, 2), tg.ones(3, 2)), 1)
    assert ind.batch_shape == (3,) and ind.event_shape == (2,)
    assert ind.log_prob(tg.zeros(3, 2)).shape == (3,)
    assert repr(ind).startswith("Independent(Normal(") and ind.rsample((4,)).shape == (4, 3, 2)
    mvn = D.MultivariateNormal(tg.zeros(2), covariance_matrix=tg.eye(2))
    assert mvn.log_prob(tg.zeros(2)).item() == pytest.approx(-math.log(2 * math.pi))
    assert mvn.sample((5,)).shape == (5, 2) and mvn.event_shape == (2,)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(tg.zeros(2))
    with pytest.raises(ValueError, match="positive_definite|PositiveDefinite"):
        D.MultivariateNormal(tg.zeros(2), covariance_matrix=-tg.eye(2))
    for dist, low, high in ((D.Gamma(tg.tensor(2.0), tg.tensor(1.0)), 0, math.inf),
                            (D.Beta(tg.tensor(2.0), tg.tensor(3.0)), 0, 1),
                            (D.Poisson(tg.tensor(3.0)), 0, math.inf),
                            (D.Binomial(5, probs=tg.tensor(0.5)), 0, 5),
                            (D.Exponential(tg.tensor(1.0)), 0, math.inf)):
        s = dist.sample((200,))
        assert s.shape == (200,) and bool((s >= low).all()) and bool((s <= high).all())
    assert D.Dirichlet(tg.ones(4)).sample((3,)).sum(-1).numpy() == pytest.approx([1, 1, 1])
    with pytest.raises(ValueError):
        D.Poisson(tg.tensor(1.0)).log_prob(tg.tensor(0.5))
    with pytest.raises(ValueError):
        D.Gamma(tg.tensor(-1.0), tg.tensor(1.0))


def test_transformed_distributions():
    base = D.Normal(tg.tensor(0.0), tg.tensor(1.0))
    affine = D.TransformedDistribution(base, [D.transforms.AffineTransform(loc=2.0, scale=3.0)])
    assert affine.log_prob(tg.tensor(2.0)).item() == pytest.approx(
        D.Normal(2.0, 3.0).log_prob(tg.tensor(2.0)).item(), rel=1e-6)
    squashed = D.TransformedDistribution(base, [D.transforms.TanhTransform()])
    y = tg.tensor(0.5)
    x = 0.5 * math.log(1.5 / 0.5)
    expected = base.log_prob(tg.tensor(x)).item() - math.log(1 - 0.25)
    assert squashed.log_prob(y).item() == pytest.approx(expected, rel=1e-5)
    draws = squashed.rsample((50,))
    assert bool((draws.abs() < 1).all())


FAMILIES = [
    ("Gamma", (np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.3, 2.0])), np.array([0.4, 2.0, 1.1])),
    ("Beta", (np.array([0.5, 2.0, 3.5]), np.array([1.0, 0.3, 2.0])), np.array([0.4, 0.9, 0.1])),
    ("StudentT", (np.array([1.5, 4.0, 9.0]), np.array([0.0, 1.0, -1.0]), np.array([1.0, 2.0, 0.5])),
     np.array([0.3, -1.0, 2.0])),
    ("Poisson", (np.array([0.5, 2.0, 7.0]),), np.array([0.0, 3.0, 5.0])),
    ("Exponential", (np.array([0.5, 2.0, 7.0]),), np.array([0.1, 3.0, 0.5])),
    ("Laplace", (np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 2.0])), np.array([0.3, 1.0, 2.0])),
    ("Cauchy", (np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 2.0])), np.array([0.3, 1.0, 2.0])),
    ("LogNormal", (np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 2.0])), np.array([0.3, 1.0, 2.0])),
    ("Geometric", (np.array([0.2, 0.5, 0.9]),), np.array([0.0, 2.0, 5.0])),
    ("Dirichlet", (np.array([[0.5, 1.0, 2.0], [3.0, 1.5, 0.7]]),),
     np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
]


@pytest.mark.parametrize("name,params,value", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_family_matches_torch(name, params, value, torch):
    results = []
    for lib in (tg, torch):
        tensors = [lib.tensor(p, dtype=lib.float64, requires_grad=True) for p in params]
        dist = getattr(lib.distributions, name)(*tensors)
        log_prob = dist.log_prob(lib.tensor(value, dtype=lib.float64))
        log_prob.sum().backward()
        try:
            entropy = dist.entropy().detach().numpy()
        except NotImplementedError:          # Poisson has none in PyTorch either
            entropy = None
        results.append((log_prob.detach().numpy(), [t.grad.numpy() for t in tensors], entropy,
                        dist.mean.detach().numpy(), dist.variance.detach().numpy(),
                        tuple(dist.batch_shape), tuple(dist.event_shape),
                        tuple(dist.sample((2,)).shape)))
    ours, theirs = results
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-12)
    assert (ours[2] is None) == (theirs[2] is None)
    if ours[2] is not None and theirs[2] is not None:
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-9)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-9)
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-9)
    assert ours[5:] == theirs[5:]


def test_binomial_and_mvn_match_torch(torch):
    for lib in (tg, torch):
        probs = lib.tensor([0.2, 0.7], dtype=lib.float64, requires_grad=True)
        dist = lib.distributions.Binomial(lib.tensor([5.0, 9.0], dtype=lib.float64), probs=probs)
        dist.log_prob(lib.tensor([1.0, 6.0], dtype=lib.float64)).sum().backward()
        lib._result = (probs.grad.numpy(), dist.mean.detach().numpy(), dist.variance.detach().numpy())
    for a, b in zip(tg._result, torch._result):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    del tg._result, torch._result
    grads = []
    for lib in (tg, torch):
        loc = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        cov = lib.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=lib.float64, requires_grad=True)
        dist = lib.distributions.MultivariateNormal(loc, covariance_matrix=cov)
        lp = dist.log_prob(lib.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=lib.float64))
        (lp.sum() + dist.entropy()).backward()
        grads.append((lp.detach().numpy(), loc.grad.numpy(), cov.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9)


# -- nn.init.dirac_ / sparse_ --------------------------------------------------------------------

def test_dirac_and_sparse_init():
    w = tg.empty(4, 2, 3, 3)
    tg.nn.init.dirac_(w, groups=2)
    assert w.nonzero().tolist() == [[0, 0, 1, 1], [1, 1, 1, 1], [2, 0, 1, 1], [3, 1, 1, 1]]
    x = tg.arange(18.0).reshape(1, 2, 3, 3)
    assert tg.equal(tg.nn.functional.conv2d(x, tg.nn.init.dirac_(tg.empty(2, 2, 3, 3)), padding=1), x)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        tg.nn.init.dirac_(tg.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        tg.nn.init.dirac_(tg.empty(3, 2, 2), groups=2)
    s = tg.empty(10, 4)
    tg.nn.init.sparse_(s, sparsity=0.3)
    assert (s == 0).sum(0).tolist() == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        tg.nn.init.sparse_(tg.empty(3), 0.1)
    assert tg.nn.init.calculate_gain("sigmoid") == 1 and isinstance(tg.nn.init.calculate_gain("linear"), int)


# -- tapegrad.special, erfc/exp2, linalg.solve_triangular ------------------------------------------

def test_special_namespace_values(gradcheck):
    sp = tg.special
    # one function each, behind entries of their own (PyTorch's are distinct objects too, and
    # name themselves special_expit ... in their messages)
    assert sp.expit.__wrapped__ is tg.sigmoid.__wrapped__ and sp.expit is not tg.sigmoid
    assert sp.gammaln.__wrapped__ is tg.lgamma.__wrapped__
    assert sp.psi.__wrapped__ is tg.digamma.__wrapped__
    assert tg.erfc(tg.tensor([5.0])).item() == pytest.approx(1.5374597944e-12, rel=1e-6)
    assert tg.exp2(tg.tensor([3])).tolist() == [8.0]
    assert sp.ndtr(tg.tensor([0.0])).item() == 0.5
    assert sp.ndtri(tg.tensor([0.975])).item() == pytest.approx(1.959964, rel=1e-5)
    x = tg.tensor([0.0, 0.5, -1.0], requires_grad=True)
    y = sp.entr(x)
    assert y[0].item() == 0.0 and y[1].item() == pytest.approx(0.5 * math.log(2)) and y[2].item() == -math.inf
    y.sum().backward()
    assert x.grad[0].item() == math.inf and math.isnan(x.grad[2].item())
    a = tg.tensor([0.0, 2.0], requires_grad=True)
    sp.xlog1py(a, tg.tensor([-1.0, 1.0])).sum().backward()
    assert a.grad.tolist() == [0.0, pytest.approx(math.log(2))]
    gradcheck(lambda t: tg.erfc(t), [-1.0, 0.3, 2.0])
    gradcheck(lambda t: sp.ndtr(t), [-1.0, 0.3, 2.0])


def test_special_matches_torch(torch):
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.normal(size=20) * 3, [0.0, 5.0, -5.0]]).astype(np.float32)
    p = rng.uniform(0.001, 0.999, 20).astype(np.float32)
    for name, values in (("erfc", v), ("exp2", v), ("ndtr", v), ("ndtri", p), ("entr", p)):
        grads = []
        for lib in (tg, torch):
            x = lib.tensor(values, requires_grad=True)
            y = getattr(lib.special, name)(x)
            y.sum().backward()
            grads.append((y.detach().numpy(), x.grad.numpy()))
        np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-6)


def test_solve_triangular(torch):
    A = tg.tensor([[2.0, 0.0], [1.0, 4.0]])
    assert tg.linalg.solve_triangular(A, tg.tensor([[2.0], [9.0]]), upper=False).tolist() == [[1.0], [2.0]]
    ones = tg.linalg.solve_triangular(A, tg.tensor([[1.0], [3.0]]), upper=False, unitriangular=True)
    assert ones.tolist() == [[1.0], [2.0]]
    rng = np.random.default_rng(0)
    a_np = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b_np = rng.normal(size=(3, 2))
    for kwargs in ({"upper": True}, {"upper": False, "unitriangular": True}, {"upper": True, "left": False}):
        results = []
        for lib in (tg, torch):
            a = lib.tensor(a_np, requires_grad=True)
            b = lib.tensor(b_np if kwargs.get("left", True) else b_np.T.copy(), requires_grad=True)
            x = lib.linalg.solve_triangular(a, b, **kwargs)
            (x * x).sum().backward()
            results.append((x.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
        for ours, theirs in zip(*results):
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
