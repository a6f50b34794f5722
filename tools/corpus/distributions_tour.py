"""torch.distributions as policy-gradient and VAE code uses them: log_prob, entropy, sample, rsample."""
import math

import torch
from torch.distributions import Bernoulli, Categorical, Normal

torch.manual_seed(0)

normal = Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
print(normal.mean, normal.stddev, normal.variance)
print(normal.log_prob(torch.tensor([0.0, 3.0])))
print(normal.entropy())
print(round(-0.5 * math.log(2 * math.pi), 4))
print(normal.sample().shape, normal.sample((3,)).shape, normal.batch_shape, normal.event_shape)

mu = torch.tensor(0.5, requires_grad=True)
sigma = torch.tensor(2.0, requires_grad=True)
d = Normal(mu, sigma)
z = d.rsample((1000,))
z.mean().backward()
print('rsample is differentiable:', round(mu.grad.item(), 4), sigma.grad is not None)
print(d.has_rsample, Categorical(torch.tensor([0.5, 0.5])).has_rsample)

cat = Categorical(probs=torch.tensor([0.1, 0.2, 0.7]))
print(cat.log_prob(torch.tensor(2)), cat.entropy())
samples = cat.sample((2000,))
print(samples.shape, samples.dtype, bool((samples >= 0).all() and (samples < 3).all()))
print('most frequent is 2:', torch.bincount(samples, minlength=3).argmax().item() == 2)
logits_cat = Categorical(logits=torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]]))
print(logits_cat.probs)
print(logits_cat.log_prob(torch.tensor([0, 0])))

b = Bernoulli(torch.tensor([0.3, 0.9]))
print(b.log_prob(torch.tensor([1.0, 0.0])), b.entropy())
print(b.sample((4,)).shape, b.mean)
b_logits = Bernoulli(logits=torch.tensor([0.0]))
print(b_logits.probs)

logits = torch.zeros(4, 3, requires_grad=True)
dist = Categorical(logits=logits)
actions = torch.tensor([0, 1, 2, 2])
loss = -(dist.log_prob(actions) * torch.tensor([1.0, -1.0, 0.5, 0.5])).sum()
loss.backward()
print(logits.grad)
