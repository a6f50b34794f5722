"""kl_divergence(p, q): KL(p || q) for registered pairs of distribution types."""
from __future__ import annotations

import math

from .. import digamma, lgamma, linalg
from ..nn import functional as F
from .bernoulli import Bernoulli
from .categorical import Categorical
from .continuous_bernoulli import ContinuousBernoulli
from .count_families import Binomial, Poisson
from .exp_family import ExponentialFamily, bregman_kl
from .gamma_family import Beta, Dirichlet, Gamma
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .location_scale import Cauchy, Exponential, Geometric, Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .transformed_distribution import TransformedDistribution
from .transforms import _sum_rightmost
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
    p_tril, q_tril = p.scale_tril, q.scale_tril
    batch = tuple(_broadcast_batch_shapes(tuple(p_tril.shape[:-2]), tuple(q_tril.shape[:-2])))
    p_tril = p_tril.expand(*(batch + (n, n)))
    q_tril = q_tril.expand(*(batch + (n, n)))
    half_log_det_ratio = (q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                          - p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    trace = linalg.solve_triangular(q_tril, p_tril, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*(batch + (n,)))
    mahalanobis = linalg.solve_triangular(q_tril, diff.unsqueeze(-1), upper=False).pow(2).sum((-2, -1))
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
