"""torch.distributions as RL, VAE, mixture and Bayesian tutorials use it: a squashed-Gaussian
(SAC) policy, a Gaussian mixture fitted by gradient descent, constrained parameters through
transform_to / biject_to, Gumbel-softmax and straight-through samples, and the heavier-tailed
and count families."""
import math

import numpy as np
import torch
import torch.distributions as D
from torch.distributions import constraints, transforms
from torch.distributions.kl import kl_divergence

torch.manual_seed(0)

# -- SAC-style policy: tanh-squashed, rescaled Gaussian -------------------------------------
mu = torch.tensor([[0.1, -0.2]], requires_grad=True)
log_std = torch.tensor([[-0.5, 0.3]], requires_grad=True)
policy = D.TransformedDistribution(D.Normal(mu, log_std.exp()),
                                   [transforms.TanhTransform(cache_size=1),
                                    transforms.AffineTransform(0.0, 2.0)])
action = torch.tensor([[0.5, -1.2]])
log_prob = D.Independent(policy, 1).log_prob(action)
log_prob.sum().backward()
print("policy", policy.batch_shape, policy.event_shape, policy.support)
print("log_prob", round(log_prob.item(), 5), [round(g, 5) for g in mu.grad.flatten().tolist()])
a = policy.rsample()
print("rsample in range", bool((a.abs() < 2).all()), a.shape, a.requires_grad)

# -- Gaussian mixture by maximum likelihood -------------------------------------------------
rng = np.random.default_rng(0)
data = torch.tensor(np.concatenate([rng.normal(-2, 0.5, 200), rng.normal(3, 1.0, 300)]),
                    dtype=torch.float32)
logits = torch.zeros(2, requires_grad=True)
locs = torch.tensor([-1.0, 1.0], requires_grad=True)
log_scales = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([logits, locs, log_scales], lr=0.05)
for step in range(150):
    gmm = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(locs, log_scales.exp()))
    loss = -gmm.log_prob(data).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("gmm nll", round(loss.item(), 3), [round(v, 2) for v in locs.tolist()],
      [round(v, 2) for v in gmm.mixture_distribution.probs.tolist()])
print("gmm moments", round(gmm.mean.item(), 3), round(gmm.variance.item(), 3),
      round(gmm.cdf(torch.tensor(0.0)).item(), 4))
print(gmm.sample((7,)).shape, gmm.batch_shape, gmm.event_shape)

# -- constrained parameters -----------------------------------------------------------------
for c in [constraints.positive, constraints.unit_interval, constraints.interval(-1.0, 3.0),
          constraints.simplex, constraints.greater_than(2.0)]:
    t = D.transform_to(c)
    b = D.biject_to(c)
    x = torch.tensor([0.3, -1.2, 0.7])
    y = b(x)
    print(type(t).__name__, type(b).__name__, bool(c.check(y).all()),
          [round(v, 4) for v in b.inv(y).tolist()],
          [round(v, 4) for v in b.log_abs_det_jacobian(x, y).reshape(-1).tolist()])
u = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([u], lr=0.5)
target = torch.tensor([0.3, 1.0, 1.9])
for _ in range(60):
    value = D.transform_to(constraints.interval(0.0, 2.0))(u)
    loss = ((value - target) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("constrained fit", [round(v, 3) for v in value.tolist()])
L = transforms.CorrCholeskyTransform()(torch.tensor([0.5, -0.3, 0.8]))
print("corr cholesky", [round(v, 4) for v in (L @ L.T).diagonal().tolist()],
      constraints.corr_cholesky.check(L).item())

# -- relaxed and straight-through categoricals ----------------------------------------------
logits = torch.tensor([0.2, 0.5, -0.3], requires_grad=True)
relaxed = D.RelaxedOneHotCategorical(torch.tensor(0.5), logits=logits)
y = relaxed.rsample((4,))
print("gumbel-softmax", y.shape, [round(v, 4) for v in y.sum(-1).tolist()],
      round(relaxed.log_prob(torch.tensor([0.2, 0.7, 0.1])).item(), 4))
st = D.OneHotCategoricalStraightThrough(logits=logits)
s = st.rsample((5,))
(s * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print("straight-through", s.shape, s.sum(-1).tolist(),
      [round(v, 4) for v in logits.grad.tolist()])
rb = D.RelaxedBernoulli(torch.tensor(0.3), probs=torch.tensor([0.2, 0.9]))
print("relaxed bernoulli", round(rb.log_prob(torch.tensor([0.1, 0.8])).sum().item(), 4),
      bool(((rb.sample((50,)) > 0) & (rb.sample((50,)) < 1)).all()))

# -- more families at fixed values ----------------------------------------------------------
families = [
    D.HalfNormal(torch.tensor([1.0, 2.0])), D.HalfCauchy(torch.tensor([1.0, 2.0])),
    D.Gumbel(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])),
    D.Weibull(torch.tensor([1.0, 2.0]), torch.tensor([1.5, 3.0])),
    D.Pareto(torch.tensor([1.0, 2.0]), torch.tensor([2.5, 3.0])),
    D.Chi2(torch.tensor([3.0, 5.0])), D.InverseGamma(torch.tensor([3.0, 4.0]), torch.tensor([1.0, 2.0])),
    D.Kumaraswamy(torch.tensor([2.0, 3.0]), torch.tensor([1.5, 2.0])),
    D.NegativeBinomial(torch.tensor([3.0, 5.0]), probs=torch.tensor([0.3, 0.6])),
    D.GeneralizedPareto(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]), torch.tensor([0.2, 0.1])),
    D.ContinuousBernoulli(probs=torch.tensor([0.3, 0.8])),
    D.VonMises(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 4.0])),
    D.FisherSnedecor(torch.tensor([5.0, 6.0]), torch.tensor([7.0, 9.0])),
]
value = torch.tensor([2.5, 3.0])
for d in families:
    v = torch.tensor([0.3, 0.6]) if isinstance(d, (D.Kumaraswamy, D.ContinuousBernoulli)) else value
    v = torch.tensor([2.0, 4.0]) if isinstance(d, D.NegativeBinomial) else v
    row = [type(d).__name__, [round(x, 4) for x in d.log_prob(v).tolist()],
           [round(x, 4) for x in d.mean.tolist()], [round(x, 4) for x in d.variance.tolist()]]
    try:
        row.append([round(x, 4) for x in d.entropy().tolist()])
    except NotImplementedError:
        row.append("no entropy")
    try:
        row.append([round(x, 4) for x in d.cdf(v).tolist()])
    except NotImplementedError:
        row.append("no cdf")
    print(*row)
    print("  ", d.sample((3,)).shape, d.has_rsample, d.expand((4, 2)).batch_shape)

# -- multivariate ---------------------------------------------------------------------------
lr = D.LowRankMultivariateNormal(torch.zeros(3), torch.tensor([[1.0], [0.5], [0.0]]),
                                 torch.tensor([1.0, 0.5, 2.0]))
full = D.MultivariateNormal(torch.zeros(3), covariance_matrix=lr.covariance_matrix)
x = torch.tensor([0.3, -0.2, 1.0])
print("lowrank", round(lr.log_prob(x).item(), 4), round(full.log_prob(x).item(), 4),
      round(lr.entropy().item(), 4), abs(kl_divergence(lr, full).item()) < 1e-5)
ln = D.LogisticNormal(torch.tensor([0.0, 1.0]), torch.tensor([0.5, 2.0]))
print("logistic normal", ln.event_shape, round(ln.log_prob(torch.tensor([0.2, 0.3, 0.5])).item(), 4))
lkj = D.LKJCholesky(3, torch.tensor(2.0))
print("lkj", round(lkj.log_prob(L).item(), 4), lkj.sample((2,)).shape)
w = D.Wishart(torch.tensor(5.0), covariance_matrix=torch.tensor([[2.0, 0.3], [0.3, 1.0]]))
print("wishart", round(w.log_prob(torch.tensor([[8.0, 1.0], [1.0, 5.0]])).item(), 4),
      round(w.entropy().item(), 4), w.mean.tolist())

# -- KL between families and a Beta-VAE style reparameterised Gamma --------------------------
print("kl", round(kl_divergence(D.Normal(0.0, 1.0), D.Laplace(0.5, 2.0)).item(), 5),
      round(kl_divergence(D.Gamma(torch.tensor(2.0), torch.tensor(1.0)),
                          D.Exponential(torch.tensor(0.5))).item(), 5),
      kl_divergence(D.Normal(0.0, 1.0), D.Exponential(torch.tensor(1.0))).item())
conc = torch.tensor([2.0, 3.0], requires_grad=True)
samples = D.Dirichlet(conc).rsample((4000,))
samples[:, 0].mean().backward()
print("dirichlet pathwise gradient", conc.grad.shape, bool((conc.grad[0] > 0) & (conc.grad[1] < 0)))
