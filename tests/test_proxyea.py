"""What the session-44 proxy of public statistical-model scripts (Cox / DeepSurv survival models,
mixture density networks, quantile and ordinal regression, count models, Bayesian regression by
variational inference and Laplace approximation, LBFGS maximum likelihood, bootstrap, custom
distributions and transforms) found tapegrad doing differently from PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _outcome(fn):
    """(exception type name, message) of fn(), or ("ok", its value)."""
    try:
        return "ok", fn()
    except Exception as exc:     # noqa: BLE001 -- the type is what is compared
        return type(exc).__name__, str(exc)


# -- distributions inside torch.func transforms (a vmap's BatchedTensor is a tensor) -------------

_X = [[1.0, -1.0], [1.0, 0.0], [1.0, 0.5], [1.0, 2.0]]
_Y = [0.3, 0.9, 1.2, 2.4]


def _regression_nll(lib):
    X, y = lib.tensor(_X, dtype=lib.float64), lib.tensor(_Y, dtype=lib.float64)

    def nll(theta):
        # loc X @ b and a scale from a parameter: both are batched under jacfwd's vmap
        return -lib.distributions.Normal(X @ theta[:2], theta[2].exp()).log_prob(y).sum()
    return nll


def test_func_hessian_through_a_normal_log_prob():
    # Standard errors of a maximum-likelihood fit: torch.func.hessian of a negative
    # log-likelihood built with torch.distributions.  broadcast_all refused the BatchedTensor
    # ("Input arguments must all be instances of Number, torch.Tensor ...")
    theta = [0.2, 0.8, -0.5]
    ours = tg.func.hessian(_regression_nll(tg))(tg.tensor(theta, dtype=tg.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # (torch.jit.script, inside torch)
        theirs = torch.func.hessian(_regression_nll(torch))(
            torch.tensor(theta, dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    grad = tg.func.grad(_regression_nll(tg))(tg.tensor(theta, dtype=tg.float64))
    np.testing.assert_allclose(
        grad.numpy(), torch.func.grad(_regression_nll(torch))(
            torch.tensor(theta, dtype=torch.float64)).numpy(), rtol=1e-10)


def _mapped_cases(lib):
    D = lib.distributions
    rows = lib.tensor([[0.5, 1.0], [2.0, 3.0]])
    return {
        # a mapped value: _validate_sample refused it ("must be a Tensor")
        "normal value": lambda: lib.vmap(lambda v: D.Normal(0., 1.).log_prob(v))(rows),
        "poisson value": lambda: lib.vmap(lambda v: D.Poisson(2.).log_prob(v))(rows.round()),
        # mapped parameters, checked by their constraints
        "gamma conc": lambda: lib.vmap(lambda a: D.Gamma(a, 1.).log_prob(lib.tensor(2.)))(rows),
        "mvn loc": lambda: lib.vmap(
            lambda m: D.MultivariateNormal(m, lib.eye(2)).log_prob(lib.zeros(2)))(rows),
        "dirichlet": lambda: lib.vmap(
            lambda c: D.Dirichlet(c).log_prob(lib.tensor([0.2, 0.8])))(rows),
        "kl": lambda: lib.vmap(
            lambda m: D.kl_divergence(D.Normal(m, 1.), D.Normal(0., 2.)))(rows),
    }


@pytest.mark.parametrize("case", sorted(_mapped_cases(tg)))
def test_vmap_over_distribution_values_and_parameters(case):
    kind, ours = _outcome(_mapped_cases(tg)[case])
    theirs = _mapped_cases(torch)[case]()
    assert kind == "ok", ours
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_vmap_validation_still_refuses_an_invalid_mapped_parameter():
    # every sample of the batch is checked: a negative scale in one of them raises as PyTorch's
    # vmap does (there, through .item() on the batched check)
    def make(lib):
        return lambda s: lib.distributions.Normal(0., s).log_prob(lib.tensor(0.3))
    ours = _outcome(lambda: tg.vmap(make(tg))(tg.tensor([1.0, -2.0])))
    theirs = _outcome(lambda: torch.vmap(make(torch))(torch.tensor([1.0, -2.0])))
    assert ours[0] == theirs[0] == "RuntimeError"


# -- transforms' forward_shape / inverse_shape keep the given shape's type -----------------------

def _shape_transforms(lib):
    T = lib.distributions.transforms
    return {
        "stick": T.StickBreakingTransform(), "stick inv": T.StickBreakingTransform().inv,
        "corr": T.CorrCholeskyTransform(), "reshape": T.ReshapeTransform((4,), (2, 2)),
        "compose": T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]),
        "independent": T.IndependentTransform(T.StickBreakingTransform(), 1),
        "affine": T.AffineTransform(lib.zeros(3), 1.0), "power": T.PowerTransform(lib.ones(3)),
    }


@pytest.mark.parametrize("method", ["forward_shape", "inverse_shape"])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4), [5, 3], (3,), "size"])
@pytest.mark.parametrize("name", sorted(_shape_transforms(tg)))
def test_transform_shapes_follow_pytorch(name, shape, method):
    def run(lib):
        given = lib.Size([5, 3]) if shape == "size" else shape
        kind, value = _outcome(lambda: getattr(_shape_transforms(lib)[name], method)(given))
        # the value's repr tells a tuple (5, 4) from torch.Size([5, 4])
        return kind, repr(value) if kind == "ok" else value
    assert run(tg) == run(torch)


def test_broadcast_shapes_message_shows_the_argument_as_given():
    for args in [((2, 4), (3,)), ((2, 4), "size"), ((2, 4), [3]), ((2, 4), 3)]:
        ours = _outcome(lambda: tg.broadcast_shapes(
            *[tg.Size([3]) if a == "size" else a for a in args]))
        theirs = _outcome(lambda: torch.broadcast_shapes(
            *[torch.Size([3]) if a == "size" else a for a in args]))
        assert ours == theirs


# -- sampling with integral parameters (SILENT: int64 samples) -----------------------------------

def _integral_families(lib):
    D, i = lib.distributions, lib.tensor([1, 2])
    return {
        "Normal": lambda: D.Normal(i, 1.), "Normal int scale": lambda: D.Normal(i, i),
        "HalfNormal": lambda: D.HalfNormal(i), "LogNormal": lambda: D.LogNormal(i, 1.),
        "StudentT": lambda: D.StudentT(3., i), "LogisticNormal": lambda: D.LogisticNormal(i, 1.),
        "MultivariateNormal": lambda: D.MultivariateNormal(i, lib.eye(2, dtype=lib.long)),
        "Laplace": lambda: D.Laplace(i, 1.), "Cauchy": lambda: D.Cauchy(i, 1.),
        "Gumbel": lambda: D.Gumbel(i, 1.), "Uniform": lambda: D.Uniform(i, 3.),
        "Exponential": lambda: D.Exponential(i), "Weibull": lambda: D.Weibull(i, 1.),
        "Pareto": lambda: D.Pareto(i, 1.), "Kumaraswamy": lambda: D.Kumaraswamy(i, 1.),
        "Gamma": lambda: D.Gamma(i, 1.), "Beta": lambda: D.Beta(i, 1.),
        "Dirichlet": lambda: D.Dirichlet(i), "Bernoulli": lambda: D.Bernoulli(i * 0 + 1),
        "Geometric": lambda: D.Geometric(i * 0 + 1),
        # these convert and sample fine in PyTorch too
        "Poisson": lambda: D.Poisson(i), "Chi2": lambda: D.Chi2(i),
    }


@pytest.mark.parametrize("what", ["sample", "rsample", "entropy"])
@pytest.mark.parametrize("family", sorted(_integral_families(tg)))
def test_integral_parameters_refuse_as_pytorchs_samplers(family, what):
    def run(lib):
        kind, value = _outcome(lambda: getattr(_integral_families(lib)[family](), what)())
        # a sample's values are random: its dtype is what must agree
        return (kind, str(value.dtype)) if kind == "ok" else (kind, value)
    assert run(tg) == run(torch)


def test_gamma_cdf_with_an_integral_concentration_promotes_as_pytorch():
    # an int64 concentration and a float32 value: float32 (numpy's promotion gave float64)
    ours = tg.distributions.Gamma(tg.tensor([1, 2]), 1.).cdf(tg.tensor([0.5, 0.5]))
    theirs = torch.distributions.Gamma(torch.tensor([1, 2]), 1.).cdf(torch.tensor([0.5, 0.5]))
    assert str(ours.dtype) == str(theirs.dtype) == "torch.float32"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


# -- a script's Distribution subclass reads back the batch/event shapes it passed ----------------

def _custom_shapes(lib, batch_shape, event_shape):
    class Custom(lib.distributions.Distribution):
        arg_constraints = {}

        def __init__(self):
            super().__init__(batch_shape, event_shape, validate_args=False)
    d = Custom()
    return _outcome(lambda: (repr(d.batch_shape), repr(d.event_shape),
                             repr(d._extended_shape((5,))), repr(d._extended_shape())))


@pytest.mark.parametrize("shapes", [((2,), ()), ((2, 3), (4,)), ("size", ()), ((), (3,)),
                                    ([2, 3], ())])
def test_distribution_keeps_the_shapes_given(shapes):
    # PyTorch stores them as given: a tuple prints as (2,), not torch.Size([2]); a list breaks
    # _extended_shape's concatenation with its TypeError
    def run(lib):
        batch, event = shapes
        batch = lib.Size([4]) if batch == "size" else batch
        return _custom_shapes(lib, batch, event)
    ours, theirs = run(tg), run(torch)
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        assert ours == theirs


def test_builtin_families_still_report_torch_size():
    # (the built-in families pass torch.Size: Categorical's batch shape was a tuple slice)
    for lib_d in (tg.distributions,):
        for d in [lib_d.Categorical(tg.ones(2, 3)), lib_d.OneHotCategorical(tg.ones(2, 3)),
                  lib_d.Normal(tg.zeros(2), 1.).expand((3, 2)),
                  lib_d.Independent(lib_d.Normal(tg.zeros(2, 3), 1.), 1).expand([4, 2])]:
            assert type(d.batch_shape) is tg.Size and type(d.event_shape) is tg.Size
