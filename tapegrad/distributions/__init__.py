"""tapegrad.distributions: probability distributions as torch.distributions has them.

Each distribution has PyTorch's parameters and argument validation, batch/event shapes,
expand(), support and arg_constraints, moments, log_prob (and cdf/icdf/entropy where PyTorch has
them) built from tapegrad's differentiable ops, so `-(dist.log_prob(action) * reward).sum()
.backward()` trains a policy; rsample is reparameterised where PyTorch's is (location-scale
families, transforms of them, the relaxed categoricals).  Transforms, biject_to / transform_to
and kl_divergence are PyTorch's too.  Samples come from tapegrad's global stream (manual_seed).
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .uniform import Uniform
from .independent import Independent
from ._location_scale import Cauchy, Exponential, Geometric, Laplace
from .multivariate_normal import MultivariateNormal
from ._gamma_family import Beta, Dirichlet, Gamma, StudentT
from ._count_families import Binomial, Poisson
from .multinomial import Multinomial
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform, CumulativeDistributionTransform, ExpTransform,
                         IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                         PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StackTransform, StickBreakingTransform,
                         TanhTransform, Transform, identity_transform)
from .constraint_registry import biject_to, transform_to
from .half_normal import HalfNormal
from .half_cauchy import HalfCauchy
from .gumbel import Gumbel
from .weibull import Weibull
from .pareto import Pareto
from .chi2 import Chi2
from .inverse_gamma import InverseGamma
from .fishersnedecor import FisherSnedecor
from .kumaraswamy import Kumaraswamy
from .negative_binomial import NegativeBinomial
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .mixture_same_family import MixtureSameFamily
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .exp_family import ExponentialFamily
from .continuous_bernoulli import ContinuousBernoulli
from .generalized_pareto import GeneralizedPareto
from .von_mises import VonMises
from .logistic_normal import LogisticNormal
from .lkj_cholesky import LKJCholesky
from .wishart import Wishart
# PyTorch's submodule paths (`from torch.distributions.normal import Normal`): the modules
# above, bound as attributes of the package as PyTorch's __init__ leaves them.
from . import (bernoulli, beta, binomial, categorical, cauchy, chi2, constraint_registry,
               continuous_bernoulli, dirichlet, distribution, exp_family, exponential,
               fishersnedecor, gamma, generalized_pareto, geometric, gumbel, half_cauchy,
               half_normal, independent, inverse_gamma, kl, kumaraswamy, laplace, lkj_cholesky,
               log_normal, logistic_normal, lowrank_multivariate_normal, mixture_same_family,
               multinomial, multivariate_normal, negative_binomial, normal, one_hot_categorical,
               pareto, poisson, relaxed_bernoulli, relaxed_categorical, studentT,
               transformed_distribution, uniform, utils, von_mises, weibull, wishart)

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
           "Categorical", "Cauchy", "Chi2", "ComposeTransform", "CorrCholeskyTransform",
           "ContinuousBernoulli", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
           "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
           "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
           "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial",
           "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
           "Poisson", "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform",
           "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
           "VonMises", "Weibull", "Wishart", "biject_to", "constraints", "identity_transform", "kl_divergence",
           "register_kl", "transform_to", "transforms"]

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
