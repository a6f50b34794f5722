"""ExponentialFamily: the base of distributions with densities
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)); entropy and same-family KL come from the
log-normaliser F by automatic differentiation (Bregman divergences)."""
from __future__ import annotations as _annotations

from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family: subclasses give ``_natural_params`` (theta),
    ``_log_normalizer(*theta)`` (F) and ``_mean_carrier_measure`` (E[k(x)])."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[k(x)], by automatic differentiation of the
        log-normaliser (differentiable in the parameters: the gradient graph is kept)."""
        from ..autograd import grad
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm = self._log_normalizer(*nparams)
        gradients = grad(log_norm.sum(), nparams, create_graph=True)
        result = result + log_norm
        for theta, g in zip(nparams, gradients):
            result = result - (theta * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


def bregman_kl(p, q):
    """KL(p || q) for two members of one exponential family: the Bregman divergence of the
    log-normaliser, F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>."""
    from ..autograd import grad
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [theta.detach().requires_grad_() for theta in p._natural_params]
    q_nparams = q._natural_params
    log_norm = p._log_normalizer(*p_nparams)
    gradients = grad(log_norm.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - log_norm
    for pn, qn, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qn - pn) * g, len(q.event_shape))
    return result
