"""kl_divergence(p, q): KL(p || q) for registered pairs of distribution types."""
from __future__ import annotations as _annotations

import math

from .. import digamma, lgamma, linalg, where
from ..nn import functional as F
from .bernoulli import Bernoulli
from .categorical import Categorical
from .continuous_bernoulli import ContinuousBernoulli
from ._count_families import Binomial, Poisson
from .exp_family import ExponentialFamily, bregman_kl
from ._gamma_family import Beta, Dirichlet, Gamma
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from ._location_scale import Cauchy, Exponential, Geometric, Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .transformed_distribution import TransformedDistribution
from .utils import _sum_rightmost
from .uniform import Uniform

from .utils import euler_constant as _EULER_GAMMA

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for instances of type_p and type_q."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError(f"Expected type_p and type_q to be subclasses of Distribution but got "
                        f"{type_p} and {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def _lookup(type_p, type_q):
    """The implementation for the most specific registered pair of base classes."""
    for p_base in type_p.__mro__:
        for q_base in type_q.__mro__:
            fn = _KL_REGISTRY.get((p_base, q_base))
            if fn is not None:
                return fn
    return None


def kl_divergence(p, q):
    """KL(p || q), one value per batch member; NotImplementedError for an unregistered pair."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand(*t.shape), float("inf"))
    t = t.masked_fill((p.probs == 0).expand(*t.shape), 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = t1.masked_fill(q.probs == 0, float("inf")).masked_fill(p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = t2.masked_fill(q.probs == 1, float("inf")).masked_fill(p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return result.masked_fill((q.low > p.low) | (q.high < p.high), float("inf"))


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # the same bijection on both sides leaves the divergence unchanged
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


def _lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    return (_lbeta(a2, b2) - _lbeta(a1, b1) + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1)
            + (a2 - a1 + b2 - b1) * digamma(a1 + b1))


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - rate_ratio.log() - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return (-scale_ratio.log() + loc_abs_diff / q.scale
            + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
            - (4 * p.scale * q.scale).log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return kl.masked_fill(p.total_count > q.total_count, math.inf)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _EULER_GAMMA
    t3 = (ct2 + lgamma(1 + ct1) - ct3).exp()
    return t1 + t2 + t3 - (1 + _EULER_GAMMA)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return result.masked_fill(p.scale < q.scale, math.inf)


def _cholesky_factor(d):
    """A Gaussian's covariance Cholesky factor, read without caching MultivariateNormal's
    scale_tril (it would then show in the repr, as PyTorch's does not after a KL)."""
    return d._tril if isinstance(d, MultivariateNormal) else d.scale_tril


# Gaussians over vectors: the divergence depends only on the means and covariances, so one
# formula over the Cholesky factors serves every pairing of the full and low-rank forms.
@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_gaussian_vectors(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {_gaussian_kind(p, q)} with different "
                         f"event shapes cannot be computed")
    n = p.event_shape[0]
    p_tril, q_tril = _cholesky_factor(p), _cholesky_factor(q)
    batch = tuple(_broadcast_batch_shapes(tuple(p_tril.shape[:-2]), tuple(q_tril.shape[:-2])))
    p_tril = p_tril.expand(*(batch + (n, n)))
    q_tril = q_tril.expand(*(batch + (n, n)))
    half_log_det_ratio = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                          - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    trace = linalg.solve_triangular(q_tril, p_tril, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*(batch + (n,)))
    mahalanobis = _batch_mahalanobis(q_tril, diff)
    return half_log_det_ratio + 0.5 * (trace + mahalanobis - n)


def _gaussian_kind(p, q):
    if isinstance(p, MultivariateNormal) and isinstance(q, MultivariateNormal):
        return "Multivariate Normals"
    if isinstance(p, LowRankMultivariateNormal) and isinstance(q, LowRankMultivariateNormal):
        return "Low Rank Multivariate Normals"
    return "Low Rank Multivariate Normal and Multivariate Normal"


def _broadcast_batch_shapes(a, b):
    from ..creation import _broadcast_shapes
    return _broadcast_shapes(a, b)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    return bregman_kl(p, q)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


# -- between families --------------------------------------------------------------------------
# KL(p || q) = -H(p) - E_p[log q(X)].  E_p[log q] needs only a few expectations under p, so one
# formula per q family serves every p that provides them (mean, variance, E[log X], ...); a p
# whose support leaves q's has an infinite divergence.

def _infinite_like(t):
    return t.detach().new_full(tuple(t.shape), math.inf)


def _first_param(p):
    for name in ("loc", "rate", "concentration", "concentration1", "scale", "probs", "low"):
        if name in vars(p) or hasattr(type(p), name):
            try:
                return getattr(p, name)
            except AttributeError:
                continue
    raise NotImplementedError


def _register_infinite(p_types, q_types):
    def infinite(p, q):
        return _infinite_like(_first_param(p))
    for tp in p_types:
        for tq in q_types:
            register_kl(tp, tq)(infinite)


_register_infinite((Beta, ContinuousBernoulli), (Pareto,))
_register_infinite((Exponential, Gamma), (Beta, ContinuousBernoulli, Pareto, Uniform))
_register_infinite((Gumbel, Laplace, Normal),
                   (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform))
_register_infinite((Pareto,), (Beta, ContinuousBernoulli, Uniform))
_register_infinite((Poisson,), (Bernoulli, Binomial))


def _x_log_x(t):
    """t log t with 0 log 0 = 0."""
    return (t * t.clamp(min=1e-300).log()).masked_fill(t == 0, 0.0)


def _expected_log(p):
    """E_p[log X] for the positive families that have it in closed form."""
    if isinstance(p, Beta):
        return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Exponential):
        return -_EULER_GAMMA - p.rate.log()
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):
        width = p.high - p.low
        return (_x_log_x(p.high) - _x_log_x(p.low)) / width - 1
    raise NotImplementedError


@register_kl(Beta, Normal)
@register_kl(ContinuousBernoulli, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Laplace, Normal)
@register_kl(Pareto, Normal)
@register_kl(Uniform, Normal)
def _kl_to_normal(p, q):
    # -E log N(x; mu, s) = log(sqrt(2 pi) s) + (Var_p + (E_p - mu)^2) / (2 s^2)
    p, heavy = _with_finite_moment(p, order=2)
    var = q.scale.pow(2)
    result = (-p.entropy() + 0.5 * (2 * math.pi * var).log()
              + (p.variance + (p.mean - q.loc).pow(2)) / (2 * var))
    return _fill_heavy(result, heavy)


def _with_finite_moment(p, order):
    """(p, heavy): a Pareto p whose moment of this order is infinite (alpha <= order) has an
    infinite divergence to q.  Those entries are computed with a stand-in alpha and filled with
    inf afterwards, so that, as in PyTorch, they send no gradient back: computed from the
    infinite moments they sent inf, NaN or arbitrary finite gradients to p and q."""
    if not isinstance(p, Pareto):
        return p, None
    heavy = p.alpha <= order
    return Pareto(p.scale, where(heavy, order + 1.0, p.alpha), validate_args=False), heavy


def _fill_heavy(result, heavy):
    return result if heavy is None else result.masked_fill(heavy, math.inf)


@register_kl(Beta, Exponential)
@register_kl(ContinuousBernoulli, Exponential)
@register_kl(Gamma, Exponential)
@register_kl(Pareto, Exponential)
@register_kl(Uniform, Exponential)
def _kl_to_exponential(p, q):
    # -E log Exp(x; rate) = -log rate + rate E_p[X]
    p, heavy = _with_finite_moment(p, order=1)
    result = -p.entropy() - q.rate.log() + q.rate * p.mean
    if isinstance(p, Uniform):
        result = result.masked_fill(p.low < 0, math.inf)
    return _fill_heavy(result, heavy)


@register_kl(Beta, Gamma)
@register_kl(Exponential, Gamma)
@register_kl(Pareto, Gamma)
@register_kl(Uniform, Gamma)
def _kl_to_gamma(p, q):
    # -E log Gamma(x; a, b) = lgamma(a) - a log b - (a - 1) E_p[log X] + b E_p[X]
    p, heavy = _with_finite_moment(p, order=1)
    a, b = q.concentration, q.rate
    result = (-p.entropy() + lgamma(a) - a * b.log() - (a - 1) * _expected_log(p)
              + b * p.mean)
    if isinstance(p, Uniform):
        result = result.masked_fill(p.low < 0, math.inf)
    return _fill_heavy(result, heavy)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    # -E log Beta(x; a, b) = lbeta(a, b) - (a - 1) E[log X] - (b - 1) E[log(1 - X)]
    width = p.high - p.low
    e_log1m = (_x_log_x(1 - p.low) - _x_log_x(1 - p.high)) / width - 1
    a, b = q.concentration1, q.concentration0
    result = (-p.entropy() + _lbeta(a, b) - (a - 1) * _expected_log(p) - (b - 1) * e_log1m)
    return result.masked_fill((p.high > 1) | (p.low < 0), math.inf)


@register_kl(Beta, ContinuousBernoulli)
@register_kl(Uniform, ContinuousBernoulli)
def _kl_to_continuous_bernoulli(p, q):
    # log CB(x; p) = x logits + log(1 - p) + log C(p)
    result = (-p.entropy() - p.mean * q.logits - (-q.probs).log1p()
              - q._cont_bern_log_norm())
    if isinstance(p, Uniform):
        # PyTorch's test includes the boundary (a Uniform on exactly [0, 1] gets inf)
        result = result.masked_fill((p.high >= 1) | (p.low <= 0), math.inf)
    return result


@register_kl(Beta, Uniform)
@register_kl(ContinuousBernoulli, Uniform)
def _kl_unit_interval_to_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    if isinstance(p, Beta):
        outside = (q.low > 0) | (q.high < 1)
    else:
        # PyTorch's condition for ContinuousBernoulli, kept: inf unless q's interval strictly
        # contains [0, 1]
        outside = (q.low >= 0) | (q.high <= 1)
    return result.masked_fill(outside, math.inf)


def _laplace_transform(p, t):
    """E_p[exp(-t X)] for the families that have it in closed form."""
    if isinstance(p, Exponential):
        return p.rate / (p.rate + t)
    if isinstance(p, Gamma):
        return (1 + t / p.rate).pow(-p.concentration)
    if isinstance(p, Normal):
        return (-t * p.loc + 0.5 * (t * p.scale).pow(2)).exp()
    if isinstance(p, Uniform):
        return ((-t * p.low).exp() - (-t * p.high).exp()) / (t * (p.high - p.low))
    raise NotImplementedError


@register_kl(Exponential, Gumbel)
@register_kl(Gamma, Gumbel)
@register_kl(Normal, Gumbel)
@register_kl(Uniform, Gumbel)
def _kl_to_gumbel(p, q):
    # -E log Gumbel(x; m, s) = log s + (E_p[X] - m) / s + exp(m / s) E_p[exp(-X / s)]
    return (-p.entropy() + q.scale.log() + (p.mean - q.loc) / q.scale
            + (q.loc / q.scale).exp() * _laplace_transform(p, q.scale.reciprocal()))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # -E log Laplace(x; m, b) = log(2 b) + E_p|X - m| / b, the folded-normal mean
    d = p.loc - q.loc
    mean_abs = (math.sqrt(2 / math.pi) * p.scale * (-0.5 * (d / p.scale).pow(2)).exp()
                + d * (d / (p.scale * math.sqrt(2))).erf())
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    # -E log Pareto(x; s, a) = -log a - a log s + (a + 1) E_p[log X]
    result = (-p.entropy() - q.alpha.log() - q.alpha * q.scale.log()
              + (q.alpha + 1) * _expected_log(p))
    return result.masked_fill(p.low < q.scale, math.inf)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log Poisson(k; rate) = k log rate - rate for k in {0, 1}
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)
