"""tapegrad.distributions: probability distributions as torch.distributions has them.

Distribution, Normal, Uniform, Bernoulli, Categorical, OneHotCategorical: sample (and rsample for
Normal and Uniform, differentiable with respect to the parameters), log_prob and entropy built
from tapegrad's differentiable ops (so `-(dist.log_prob(action) * reward).sum().backward()`
trains a policy), mean / variance / stddev, PyTorch's argument validation, and kl_divergence for
pairs of the same family.  Samples come from tapegrad's global stream (manual_seed).
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform
from .independent import Independent
from .location_scale import Cauchy, Exponential, Geometric, Laplace
from .multivariate_normal import MultivariateNormal
from .gamma_family import Beta, Dirichlet, Gamma, StudentT
from .count_families import Binomial, Poisson
from .multinomial import Multinomial
from .transformed_distribution import LogNormal, TransformedDistribution

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Dirichlet", "Distribution",
           "Exponential", "Gamma", "Geometric", "Independent", "Poisson", "StudentT", "Laplace", "LogNormal", "Multinomial", "MultivariateNormal", "Normal",
           "OneHotCategorical", "TransformedDistribution", "Uniform", "constraints",
           "kl_divergence", "register_kl", "transforms"]
