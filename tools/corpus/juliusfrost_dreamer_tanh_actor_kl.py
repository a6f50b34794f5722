# Dreamer v1/v2 style continuous latent: Normal stochastic state, free nats, KL balancing, tanh actor
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import distributions as D
from torch.distributions import Normal, Independent, kl_divergence

torch.manual_seed(0)

class Posterior(nn.Module):
    def __init__(self, deter=6, embed=5, stoch=3, min_std=0.1):
        super().__init__()
        self.fc = nn.Linear(deter + embed, 2 * stoch)
        self.min_std = min_std

    def forward(self, deter, embed):
        x = self.fc(torch.cat([deter, embed], dim=-1))
        mean, std = torch.chunk(x, 2, dim=-1)
        std = F.softplus(std) + self.min_std
        return mean, std

post_net = Posterior()
prior_net = nn.Linear(6, 6)
with torch.no_grad():
    for m in (post_net.fc, prior_net):
        m.weight.copy_(torch.linspace(-0.5, 0.5, m.weight.numel()).view_as(m.weight))
        m.bias.fill_(0.05)
deter = torch.tanh(torch.arange(24.0).view(4, 6) / 10)
embed = torch.cos(torch.arange(20.0).view(4, 5))
pm, ps = post_net(deter, embed)
qm, qs = torch.chunk(prior_net(deter), 2, -1)
qs = 2 * torch.sigmoid(qs / 2) + 0.1
post = Independent(Normal(pm, ps), 1)
prior = Independent(Normal(qm, qs), 1)
print(post)
print("batch", post.batch_shape, "event", post.event_shape)
kl = kl_divergence(post, prior)
print("kl", kl)
free_nats = torch.full((1,), 3.0)
kl_free = torch.max(kl.mean(), free_nats)
print("free nats", kl_free)
# KL balancing (DreamerV2)
def detach_dist(m, s):
    return Independent(Normal(m.detach(), s.detach()), 1)
alpha = 0.8
kl_lhs = kl_divergence(detach_dist(pm, ps), prior).mean()
kl_rhs = kl_divergence(post, detach_dist(qm, qs)).mean()
kl_loss = alpha * torch.clamp(kl_lhs, min=1.0) + (1 - alpha) * torch.clamp(kl_rhs, min=1.0)
print("balanced", round(kl_lhs.item(), 4), round(kl_rhs.item(), 4), round(kl_loss.item(), 4))
kl_loss.backward()
print("post grad", post_net.fc.weight.grad.abs().sum().item(), "prior grad", prior_net.weight.grad.abs().sum().item())
post_net.zero_grad(set_to_none=True); prior_net.zero_grad()
print(post_net.fc.weight.grad, prior_net.weight.grad)
# analytic vs manual KL
manual = (torch.log(qs / ps) + (ps ** 2 + (pm - qm) ** 2) / (2 * qs ** 2) - 0.5).sum(-1)
print("manual match", torch.allclose(manual, kl, atol=1e-6))
z = post.rsample()
print("rsample", z.shape, z.requires_grad, post.log_prob(pm).shape)
print("entropy", post.entropy())
print("mean/stddev", post.mean.shape, post.stddev.shape, post.variance[0])
mix = D.MixtureSameFamily(D.Categorical(logits=torch.zeros(4, 2)), D.Independent(D.Normal(torch.zeros(4, 2, 3), torch.ones(4, 2, 3)), 1))
print("mixture lp", mix.log_prob(torch.zeros(4, 3)))

# tanh-squashed Gaussian actor
class SampleDist:
    def __init__(self, dist):
        self._dist = dist
    def __getattr__(self, name):
        return getattr(self._dist, name)

class TanhBijector(D.Transform):
    def __init__(self):
        super().__init__()
        self.bijective = True
        self.domain = D.constraints.real
        self.codomain = D.constraints.interval(-1.0, 1.0)
    def _call(self, x):
        return torch.tanh(x)
    def _inverse(self, y):
        y = torch.where(torch.abs(y) <= 1.0, torch.clamp(y, -0.99999997, 0.99999997), y)
        return torch.atanh(y)
    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (torch.log(torch.tensor(2.0)) - x - F.softplus(-2.0 * x))

mean = torch.tensor([[0.3, -1.2], [2.0, 0.0]])
std = F.softplus(torch.tensor([[0.1, 0.2], [-0.5, 1.0]])) + 1e-4
base = Normal(5 * torch.tanh(mean / 5), std)
dist = D.TransformedDistribution(base, TanhBijector())
dist = Independent(dist, 1)
act = torch.tensor([[0.5, -0.5], [0.9, 0.0]])
print("actor lp", dist.log_prob(act))
d2 = Independent(D.TransformedDistribution(base, [D.TanhTransform(cache_size=1)]), 1)
print("tanh lp", d2.log_prob(act))
a = d2.rsample()
print("action", a.shape, bool((a.abs() <= 1).all()))
sd = SampleDist(dist)
print("event", sd.event_shape, sd.batch_shape)
try:
    kl_divergence(dist, post)
except NotImplementedError as e:
    print("NotImplementedError")
try:
    Independent(Normal(torch.zeros(3), torch.ones(3)), 2)
except ValueError as e:
    print("ValueError", "reinterpreted_batch_ndims" in str(e) or str(e)[:50])
try:
    Normal(torch.zeros(2), torch.tensor([1.0, -1.0]))
except ValueError as e:
    print("ValueError", str(e).split(" ")[0:4])
