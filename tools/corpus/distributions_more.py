"""torch.distributions beyond the policy-gradient trio: more families, KL, transforms, shapes and validation."""
import math

import torch
from torch import distributions as D
from torch.distributions import kl_divergence

u = D.Uniform(torch.tensor(0.0), torch.tensor(4.0))
print(u.mean, u.variance, u.entropy(), u.log_prob(torch.tensor(1.0)), u.cdf(torch.tensor(1.0)))
print(u.sample((5,)).shape, bool(((u.sample((100,)) >= 0) & (u.sample((100,)) < 4)).all()))

n = D.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
print(n.cdf(torch.tensor([0.0, 1.5])), n.icdf(torch.tensor([0.5, 0.975])))
print(n.log_prob(torch.tensor([[0.0, 1.0], [1.0, 2.0]])))
print(n, n.loc, n.scale)
ind = D.Independent(n, 1)
print(ind.batch_shape, ind.event_shape, ind.log_prob(torch.tensor([0.0, 1.0])))

mvn = D.MultivariateNormal(torch.zeros(2), covariance_matrix=torch.tensor([[2.0, 0.5], [0.5, 1.0]]))
print(mvn.batch_shape, mvn.event_shape, mvn.log_prob(torch.tensor([1.0, -1.0])), mvn.entropy())
print(mvn.sample((4,)).shape, mvn.scale_tril, mvn.variance)
diag = D.MultivariateNormal(torch.zeros(3), torch.eye(3))
print(diag.log_prob(torch.zeros(3)), -1.5 * math.log(2 * math.pi))

c = D.Categorical(logits=torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
print(c.probs, c.entropy(), c.log_prob(torch.tensor([2, 0])), c.batch_shape, c.param_shape)
oc = D.OneHotCategorical(probs=torch.tensor([0.2, 0.8]))
print(oc.sample().shape, oc.log_prob(torch.tensor([0.0, 1.0])), oc.event_shape)
bern = D.Bernoulli(logits=torch.tensor([0.0, 2.0]))
print(bern.probs, bern.mean, bern.variance, bern.entropy(), bern.log_prob(torch.tensor([1.0, 0.0])))
binom = D.Binomial(total_count=10, probs=torch.tensor(0.3))
print(binom.mean, binom.variance, binom.log_prob(torch.tensor(3.0)))
pois = D.Poisson(torch.tensor([2.0, 5.0]))
print(pois.mean, pois.log_prob(torch.tensor([1.0, 5.0])))
geo = D.Geometric(probs=torch.tensor(0.25))
print(geo.mean, geo.log_prob(torch.tensor(2.0)))

expo = D.Exponential(torch.tensor(2.0))
print(expo.mean, expo.log_prob(torch.tensor(0.5)), expo.cdf(torch.tensor(0.5)), expo.entropy())
beta = D.Beta(torch.tensor(2.0), torch.tensor(5.0))
print(beta.mean, beta.variance, beta.log_prob(torch.tensor(0.3)))
gamma = D.Gamma(torch.tensor(3.0), torch.tensor(2.0))
print(gamma.mean, gamma.variance, gamma.log_prob(torch.tensor(1.0)))
lap = D.Laplace(torch.tensor(0.0), torch.tensor(1.0))
print(lap.log_prob(torch.tensor(1.0)), lap.entropy(), lap.variance)
lognorm = D.LogNormal(torch.tensor(0.0), torch.tensor(1.0))
print(lognorm.mean, lognorm.log_prob(torch.tensor(1.0)))
dirichlet = D.Dirichlet(torch.tensor([1.0, 2.0, 3.0]))
print(dirichlet.mean, dirichlet.log_prob(torch.tensor([0.2, 0.3, 0.5])), dirichlet.sample().sum().round())
cauchy = D.Cauchy(torch.tensor(0.0), torch.tensor(1.0))
print(cauchy.log_prob(torch.tensor(0.0)), cauchy.cdf(torch.tensor(1.0)))
studentt = D.StudentT(torch.tensor(3.0))
print(studentt.log_prob(torch.tensor(0.0)), studentt.mean)

p = D.Normal(torch.tensor(0.0), torch.tensor(1.0))
q = D.Normal(torch.tensor(1.0), torch.tensor(2.0))
print('KL normal', kl_divergence(p, q), kl_divergence(q, p))
print('KL categorical', kl_divergence(D.Categorical(probs=torch.tensor([0.5, 0.5])), D.Categorical(probs=torch.tensor([0.9, 0.1]))))
print('KL bernoulli', kl_divergence(D.Bernoulli(torch.tensor(0.3)), D.Bernoulli(torch.tensor(0.6))))

mu = torch.tensor([0.5], requires_grad=True)
log_sigma = torch.tensor([0.0], requires_grad=True)
posterior = D.Normal(mu, log_sigma.exp())
kl = kl_divergence(posterior, D.Normal(torch.zeros(1), torch.ones(1))).sum()
kl.backward()
print('KL grads', mu.grad, log_sigma.grad)

tanh_normal = D.TransformedDistribution(D.Normal(torch.tensor(0.0), torch.tensor(1.0)), [D.transforms.TanhTransform()])
print('tanh-normal log_prob', tanh_normal.log_prob(torch.tensor(0.5)))
affine = D.TransformedDistribution(D.Normal(torch.tensor(0.0), torch.tensor(1.0)), [D.transforms.AffineTransform(loc=2.0, scale=3.0)])
print('affine log_prob', affine.log_prob(torch.tensor(2.0)), D.Normal(2.0, 3.0).log_prob(torch.tensor(2.0)))
print('support', D.Normal(0.0, 1.0).support, D.Bernoulli(0.5).support, D.Categorical(torch.ones(3)).support)
print('scalar args', D.Normal(0.0, 1.0).log_prob(torch.tensor(0.0)), D.Normal(0.0, 1.0).batch_shape)
print(D.Normal(torch.zeros(3), 1.0).expand((2, 3)).batch_shape, D.Normal(torch.zeros(3), 1.0).sample((4, 2)).shape)
try:
    D.Normal(torch.tensor(0.0), torch.tensor(-1.0))
except ValueError as e:
    print('invalid scale: ValueError', 'scale' in str(e))
try:
    D.Categorical(probs=torch.tensor([0.5, 0.5])).log_prob(torch.tensor(3))
except ValueError as e:
    print('out-of-support value: ValueError')
D.Distribution.set_default_validate_args(False)
print('validation off', D.Normal(torch.tensor(0.0), torch.tensor(1.0)).log_prob(torch.tensor(0.0)))
