"""Proxy corpus for model-based RL and world models (session proxydi): Dreamer RSSM pieces,
PETS/MBPO ensembles, CEM/MPPI planning, MuZero supports, replay buffers, iLQR, run under tapegrad
and compared with torch on the same values.
"""
import numpy as np
import pytest

import tapegrad
from tapegrad import distributions as td


# --------------------------------------------------------------------- user-written transforms

class _TanhBijector(td.Transform):
    """Dreamer's actor squashing transform: it sets domain/codomain/bijective on the instance."""

    def __init__(self):
        super().__init__()
        self.bijective = True
        self.domain = td.constraints.real
        self.codomain = td.constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return tapegrad.tanh(x)

    def _inverse(self, y):
        return tapegrad.atanh(y.clamp(-0.99999997, 0.99999997))

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (np.log(2.0) - x - tapegrad.nn.functional.softplus(-2.0 * x))


def test_transform_subclass_may_set_domain_in_init():
    torch = pytest.importorskip("torch")

    class TorchTanhBijector(torch.distributions.Transform):
        def __init__(self):
            super().__init__()
            self.bijective = True
            self.domain = torch.distributions.constraints.real
            self.codomain = torch.distributions.constraints.interval(-1.0, 1.0)

        def _call(self, x):
            return torch.tanh(x)

        def _inverse(self, y):
            return torch.atanh(y.clamp(-0.99999997, 0.99999997))

        def log_abs_det_jacobian(self, x, y):
            return 2.0 * (np.log(2.0) - x - torch.nn.functional.softplus(-2.0 * x))

    mean = np.array([[0.3, -1.2], [2.0, 0.0]])
    std = np.array([[0.7, 0.8], [0.5, 1.3]])
    act = np.array([[0.5, -0.5], [0.9, 0.0]])
    ours = td.Independent(td.TransformedDistribution(
        td.Normal(tapegrad.tensor(mean), tapegrad.tensor(std)), _TanhBijector()), 1)
    ref = torch.distributions.Independent(torch.distributions.TransformedDistribution(
        torch.distributions.Normal(torch.tensor(mean), torch.tensor(std)), TorchTanhBijector()), 1)
    np.testing.assert_allclose(ours.log_prob(tapegrad.tensor(act)).numpy(),
                               ref.log_prob(torch.tensor(act)).numpy(), rtol=1e-10)
    assert ours.event_shape == (2,)


def test_transform_without_domain_raises_attribute_error_like_torch():
    class NoDomain(td.Transform):
        pass

    with pytest.raises(AttributeError):
        NoDomain().domain


# --------------------------------------------------------- errors reported by inner distributions

@pytest.mark.parametrize("build", [
    lambda d, T: d.Beta(T([-1.0]), T([1.0])),
    lambda d, T: d.Beta(T([1.0, 2.0]), -1.0),
    lambda d, T: d.Beta(-1.0, 1.0, validate_args=False) and d.StudentT(-1.0, validate_args=False),
    lambda d, T: d.StudentT(T([2.0, 0.0]), 0.0, 1.0),
    lambda d, T: d.FisherSnedecor(-1.0, 1.0),
    lambda d, T: d.FisherSnedecor(1.0, -1.0, validate_args=False),
])
def test_bad_parameters_reported_by_the_inner_distribution_as_torch(build):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as ref:
        build(torch.distributions, torch.tensor)
    with pytest.raises(ValueError) as ours:
        build(td, tapegrad.tensor)
    # the first line names the parameter and the distribution that checked it
    assert str(ours.value).split(" to satisfy")[0] == str(ref.value).split(" to satisfy")[0]


def test_beta_without_validation_keeps_bad_parameters():
    assert td.Beta(-1.0, 1.0, validate_args=False).concentration1.item() == -1.0


# ------------------------------------------------------------- MultivariateNormal derived matrices

@pytest.mark.parametrize("given", ["scale_tril", "covariance_matrix", "precision_matrix"])
def test_mvn_derived_matrices_match_torch_values_grads_and_nodes(given):
    torch = pytest.importorskip("torch")
    L = np.array([[1.0, 0.0], [0.5, 2.0]])
    arg = {"scale_tril": L, "covariance_matrix": L @ L.T, "precision_matrix": L @ L.T}[given]
    results = []
    for lib in (tapegrad, torch):
        m = lib.tensor(arg, dtype=lib.float64, requires_grad=True)
        d = lib.distributions.MultivariateNormal(lib.zeros(3, 2, dtype=lib.float64), **{given: m})
        mats = [d.covariance_matrix, d.precision_matrix, d.scale_tril]
        (sum((x * lib.arange(1.0, 13.0, dtype=lib.float64).view(3, 2, 2)).sum() for x in mats)).backward()
        results.append(([x.detach().numpy() for x in mats], m.grad.numpy(),
                        [type(x.grad_fn).__name__ for x in mats]))
    (ours, ours_grad, ours_nodes), (ref, ref_grad, ref_nodes) = results
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours_grad, ref_grad, rtol=1e-10)
    # only derived matrices end in an expand, the given one is the user's expanded argument
    assert ours_nodes == ref_nodes
