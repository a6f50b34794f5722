"""Faults found by replaying the hand-written tests of PyTorch's test/distributions
(test_distributions.py's TestDistributions / TestRsample / TestDistributionShapes methods,
test_utils.py, test_reparam.py, test_gmm.py) against tapegrad (sweep 35); each case is written
out explicitly and checked against torch, scipy or finite differences."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")
scipy_stats = pytest.importorskip("scipy.stats")


def _both(build):
    """build(lib) evaluated with torch and with tapegrad."""
    return build(torch), build(tapegrad)


# -- Beta and Dirichlet rsample: PyTorch's implicit gradient, dx/dalpha a function of the draw --

def _beta_cdf_tangent(x, a, b):
    """dx/da for x ~ Beta(a, b) at a fixed cdf, by a central difference of scipy's cdf."""
    eps = 1e-6 * a
    d_cdf = (scipy_stats.beta.cdf(x, a + eps, b) - scipy_stats.beta.cdf(x, a - eps, b)) / (2 * eps)
    return -d_cdf / scipy_stats.beta.pdf(x, a, b)


@pytest.mark.parametrize("a,b", [(0.3, 2.0), (1.0, 1.0), (4.0, 0.5), (20.0, 30.0)])
def test_beta_rsample_gradient_is_the_implicit_one(a, b):
    # SILENT before: each draw was g1 / (g1 + g0) of two Gamma draws, each with its own implicit
    # gradient, so dx/da depended on the hidden Gamma draws and not only on x (per-sample
    # gradients other than PyTorch's; test_beta_wrt_alpha / _wrt_beta of TestRsample)
    tapegrad.manual_seed(0)
    c1 = tapegrad.tensor([a] * 40, dtype=tapegrad.float64, requires_grad=True)
    c0 = tapegrad.tensor([b] * 40, dtype=tapegrad.float64, requires_grad=True)
    x = tapegrad.distributions.Beta(c1, c0).rsample()
    x.sum().backward()
    xs = x.detach().numpy()
    np.testing.assert_allclose(c1.grad.numpy(), _beta_cdf_tangent(xs, a, b), rtol=1e-4, atol=1e-12)
    # in the second concentration: x -> 1 - x swaps them
    np.testing.assert_allclose(c0.grad.numpy(), -_beta_cdf_tangent(1 - xs, b, a),
                               rtol=1e-4, atol=1e-12)


def test_dirichlet_rsample_gradient_matches_torch_dirichlet_grad():
    # the gradient of a weighted sum of a Dirichlet draw, from torch's own backward formula
    # (torch._dirichlet_grad at the same x) and from tapegrad's rsample
    tapegrad.manual_seed(1)
    conc = tapegrad.tensor([[0.4, 1.5, 3.0], [2.0, 0.7, 0.9]], dtype=tapegrad.float64,
                           requires_grad=True)
    x = tapegrad.distributions.Dirichlet(conc).rsample((5,))
    w = np.array([1.0, -2.0, 0.5])
    (x * tapegrad.tensor(w, dtype=tapegrad.float64)).sum().backward()
    xt = torch.tensor(x.detach().numpy())
    ct = torch.tensor(conc.detach().numpy()).expand(5, 2, 3)
    wt = torch.tensor(w).expand(5, 2, 3)
    tangent = torch._dirichlet_grad(xt, ct, ct.sum(-1, True).expand_as(ct))
    expected = (tangent * (wt - (xt * wt).sum(-1, True))).sum(0)
    np.testing.assert_allclose(conc.grad.numpy(), expected.numpy(), rtol=2e-3)


def test_dirichlet_rsample_gradient_on_the_diagonal_against_finite_differences():
    # TestRsample.test_dirichlet_on_diagonal: dx0/dalpha0 is the Beta(a0, a1 + a2) tangent
    tapegrad.manual_seed(2)
    a0, a1, a2 = 0.5, 2.0, 1.0
    conc = tapegrad.tensor([[a0, a1, a2]] * 30, dtype=tapegrad.float64, requires_grad=True)
    x = tapegrad.distributions.Dirichlet(conc).rsample()[:, 0]
    x.sum().backward()
    np.testing.assert_allclose(conc.grad.numpy()[:, 0],
                               _beta_cdf_tangent(x.detach().numpy(), a0, a1 + a2), rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_beta_draws_of_tiny_concentrations_stay_inside_the_open_interval(dtype):
    # SILENT before: Beta(0.01, 0.01) gave exact 0s and 1s (8769 zeros and 20985 ones in 50000
    # float32 draws), where log_prob is infinite; PyTorch clamps each Dirichlet coordinate into
    # [smallest normal, largest number below 1] (test_beta_underflow)
    tapegrad.manual_seed(3)
    conc = tapegrad.tensor(1e-2, dtype=getattr(tapegrad, dtype))
    s = tapegrad.distributions.Beta(conc, conc).sample([20000])
    assert s.dtype == getattr(tapegrad, dtype)
    assert int((s == 0).sum()) == 0 and int((s == 1).sum()) == 0
    assert abs(float((s < 0.1).sum()) / 20000 - 0.5) < 0.05
    assert bool(tapegrad.isfinite(tapegrad.distributions.Beta(conc, conc).log_prob(s)).all())
    d = tapegrad.distributions.Dirichlet(tapegrad.tensor([1e-3, 1e-3, 1e-3], dtype=conc.dtype))
    v = d.sample((2000,))
    assert float(v.min()) > 0 and float(v.max()) < 1


def test_dirichlet_rsample_twice_differentiated_raises_as_torch():
    for lib in (torch, tapegrad):
        a = lib.tensor([0.5, 1.5, 2.0], dtype=lib.float64, requires_grad=True)
        x = lib.distributions.Dirichlet(a).rsample()
        ga, = lib.autograd.grad((x * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum(), a,
                                create_graph=True)
        with pytest.raises(RuntimeError, match="does not require grad|differentiate twice"):
            lib.autograd.grad(ga.sum(), a)


# -- MixtureSameFamily's support check with per-component discrete supports --------------------

def test_mixture_of_binomials_with_per_component_counts_validates_as_torch():
    # a numpy "cannot reshape array" ValueError leaked from the support check when the
    # component's support varied along the mixture dim (test_mixture_same_family_binomial_log_prob)
    def build(lib):
        mix = lib.distributions.Categorical(lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]))
        comp = lib.distributions.Binomial(lib.tensor([[20.0, 5.0, 8.0], [3.0, 20.0, 4.0]]),
                                          lib.tensor([[0.2, 0.5, 0.9], [0.1, 0.3, 0.7]]))
        m = lib.distributions.MixtureSameFamily(mix, comp, validate_args=True)
        return m, m.log_prob(lib.tensor([[1.0], [2.0]]))
    (mt, t), (mg, g) = _both(build)
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5)
    # a count outside one component's support is refused, as by torch
    for lib, m in ((torch, mt), (tapegrad, mg)):
        with pytest.raises(ValueError, match="within the support"):
            m.log_prob(lib.tensor([[6.0], [1.0]]))
        with pytest.raises(ValueError, match="within the support"):
            m.log_prob(lib.tensor([2.5, 1.0]))


# -- Wishart's parameter check raises PyTorch's AssertionError ----------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"covariance_matrix": 1, "scale_tril": 1}])
def test_wishart_needs_exactly_one_matrix_assertion_error(kwargs):
    for lib in (torch, tapegrad):
        given = {k: lib.eye(2) for k in kwargs}
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
            lib.distributions.Wishart(lib.tensor(3.0), **given)
    # MultivariateNormal's is a ValueError in both
    for lib in (torch, tapegrad):
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
            lib.distributions.MultivariateNormal(lib.zeros(2))


# -- distributions.utils.vec_to_tril_matrix of a length no triangle has -------------------------

@pytest.mark.parametrize("shape", [(4,), (2, 7)])
def test_vec_to_tril_matrix_bad_length_runtime_error(shape):
    # numpy's ValueError leaked (PyTorch's size test lets 4 and 7 through; its write refuses)
    msgs = []
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="shape mismatch") as info:
            lib.distributions.utils.vec_to_tril_matrix(lib.ones(*shape))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


# -- multivariate_normal._batch_mahalanobis (test_gmm.py calls and replaces it) -----------------

def test_batch_mahalanobis_is_there_and_log_prob_reads_it():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 3))
    tril = np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3))
    x = rng.standard_normal((4, 2, 3))
    t, g = _both(lambda lib: lib.distributions.multivariate_normal._batch_mahalanobis(
        lib.tensor(tril), lib.tensor(x)))
    assert tuple(g.shape) == tuple(t.shape) == (4, 2)
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10)
    # a Gaussian mixture's log_prob goes through the module's current helper, as in PyTorch
    module = tapegrad.distributions.multivariate_normal
    original = module._batch_mahalanobis
    calls = []

    def counting(bL, bx):
        calls.append(tuple(bx.shape))
        return original(bL, bx)

    gmm = tapegrad.distributions.MixtureSameFamily(
        tapegrad.distributions.Categorical(tapegrad.tensor([[0.3, 0.7], [0.5, 0.5]])),
        tapegrad.distributions.MultivariateNormal(tapegrad.zeros(2, 2, 3), scale_tril=tapegrad.tensor(
            np.broadcast_to(tril[:1], (2, 2, 3, 3)).astype(np.float32))))
    module._batch_mahalanobis = counting
    try:
        lp = gmm.log_prob(tapegrad.tensor(x.astype(np.float32)))
    finally:
        module._batch_mahalanobis = original
    assert calls and tuple(lp.shape) == (4, 2)


# -- a user Distribution without arg_constraints / support validates with PyTorch's warnings ----

def test_subclass_without_constraints_warns_instead_of_raising():
    # tapegrad raised NotImplementedError at construction (TestValidation's Delta)
    messages = []
    for lib in (torch, tapegrad):
        class Delta(lib.distributions.Distribution):
            def __init__(self, validate_args=True):
                super().__init__(validate_args=validate_args)

            def sample(self, sample_shape=()):
                return lib.tensor(0.0).expand(sample_shape)

            def log_prob(self, value):
                if self._validate_args:
                    self._validate_sample(value)
                return value * 0

        with pytest.warns(UserWarning, match="does not define `arg_constraints`") as first:
            d = Delta()
        with pytest.warns(UserWarning, match="does not define `support`") as second:
            out = d.log_prob(d.sample((2,)))
        assert tuple(out.shape) == (2,)
        messages.append([str(w.message).split(">", 1)[1] for w in (*first, *second)])
    assert messages[0] == messages[1]


# -- Binomial built from logits keeps probs unbuilt through enumerate_support ------------------

def test_binomial_enumerate_support_does_not_build_probs():
    # TestLazyLogitsInitialization: PyTorch reads the given parameter's dtype (_param)
    for lib in (torch, tapegrad):
        d = lib.distributions.Binomial(10, logits=lib.tensor([0.3, -1.2], dtype=lib.float64))
        values = d.enumerate_support()
        assert values.dtype == lib.float64 and tuple(values.shape) == (11, 2)
        assert "probs" not in d.__dict__
        assert d._param is d.logits


# -- support on the class: a dependent constraint with the static attributes PyTorch gives -----

@pytest.mark.parametrize("name,is_discrete,event_dim", [
    ("Binomial", True, 0), ("Categorical", True, 0), ("Multinomial", True, 1),
    ("Uniform", False, 0), ("Pareto", False, 0), ("GeneralizedPareto", False, 0),
    ("Independent", None, None), ("MixtureSameFamily", None, None),
    ("TransformedDistribution", False, None)])
def test_parameter_dependent_support_on_the_class(name, is_discrete, event_dim):
    # the class attribute was a plain property object: AttributeError on .event_dim, not a
    # Constraint, not is_dependent (TestDistributions.test_support_attributes,
    # TestConstraints.test_support_constraints)
    for lib in (torch, tapegrad):
        support = getattr(lib.distributions, name).support
        c = lib.distributions.constraints
        assert isinstance(support, c.Constraint) and c.is_dependent(support)
        assert repr(support) == "DependentProperty()"
        for attr, expected in (("is_discrete", is_discrete), ("event_dim", event_dim)):
            if expected is None:
                with pytest.raises(NotImplementedError, match="cannot be determined statically"):
                    getattr(support, attr)
            else:
                assert getattr(support, attr) == expected
    # the instance still reads its own support
    d = tapegrad.distributions.Binomial(tapegrad.tensor([3.0, 5.0]), tapegrad.tensor(0.5))
    assert d.support.check(tapegrad.tensor([3.0, 5.0])).tolist() == [True, True]
    assert d.support.check(tapegrad.tensor([4.0, 5.0])).tolist() == [False, True]


def test_constraints_dependent_attributes_and_call():
    for lib in (torch, tapegrad):
        c = lib.distributions.constraints
        with pytest.raises(NotImplementedError, match="event_dim cannot be determined"):
            c.dependent.event_dim
        with pytest.raises(NotImplementedError, match="is_discrete cannot be determined"):
            c.dependent.is_discrete
        refined = c.dependent(is_discrete=True, event_dim=1)
        assert refined.is_discrete is True and refined.event_dim == 1
        assert c.is_dependent(refined)


# -- torch.distributions.dirichlet._Dirichlet_backward (TestRsample.test_dirichlet_tangent_field) --

def test_dirichlet_backward_helper_matches_torch_and_the_rsample_gradient():
    rng = np.random.default_rng(6)
    x = rng.dirichlet([0.5, 1.0, 2.0], size=4)
    alpha = np.broadcast_to([0.5, 1.0, 2.0], (4, 3)).copy()
    up = rng.standard_normal((4, 3))
    from torch.distributions.dirichlet import _Dirichlet_backward as torch_backward

    from tapegrad.distributions.dirichlet import _Dirichlet_backward
    t = torch_backward(torch.tensor(x), torch.tensor(alpha), torch.tensor(up))
    g = _Dirichlet_backward(tapegrad.tensor(x), tapegrad.tensor(alpha), tapegrad.tensor(up))
    assert g.dtype == tapegrad.float64 and tuple(g.shape) == (4, 3)
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=2e-3, atol=1e-6)
    # it is rsample's backward: the tangent field v[:, i] = dx_i / dalpha_0
    tapegrad.manual_seed(7)
    a = tapegrad.tensor([0.5, 1.0, 2.0], dtype=tapegrad.float64, requires_grad=True).expand(6, 3)
    draw = tapegrad.distributions.Dirichlet(a).rsample()
    for i in range(3):
        v, = tapegrad.autograd.grad(draw[:, i].sum(), a, retain_graph=True)
        e = tapegrad.eye(3, dtype=tapegrad.float64)[i].expand_as(draw)
        np.testing.assert_allclose(v.numpy(), _Dirichlet_backward(draw, a, e).numpy(), rtol=1e-12)
