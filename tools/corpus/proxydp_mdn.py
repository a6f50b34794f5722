"""A mixture density network as the public MDN tutorials write it: pi / mu / sigma heads, the
hand-written logsumexp mixture NLL checked against MixtureSameFamily(Categorical(logits),
Independent(Normal)), the mixture's batch/event shapes, mean, variance and repr, Categorical's
log_prob, entropy and param_shape, a 1-D Gaussian mixture's log_prob, cdf, mean and variance.
Weights come from sin(); samples are printed by shape only."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributions as D

torch.manual_seed(42)

class MDN(nn.Module):
    def __init__(self, in_dim, out_dim, n_gauss):
        super().__init__()
        self.n = n_gauss
        self.out_dim = out_dim
        self.pi = nn.Linear(in_dim, n_gauss)
        self.mu = nn.Linear(in_dim, n_gauss * out_dim)
        self.sigma = nn.Linear(in_dim, n_gauss * out_dim)
    def forward(self, x):
        logits = self.pi(x)
        mu = self.mu(x).view(-1, self.n, self.out_dim)
        sigma = torch.exp(self.sigma(x)).view(-1, self.n, self.out_dim)
        return logits, mu, sigma

def mdn_loss(logits, mu, sigma, y):
    y = y.unsqueeze(1).expand_as(mu)
    log_prob = D.Normal(mu, sigma).log_prob(y).sum(-1)
    log_mix = F.log_softmax(logits, dim=-1)
    return -torch.logsumexp(log_mix + log_prob, dim=-1).mean()

m = MDN(1, 1, 3)
with torch.no_grad():
    for i, p in enumerate(m.parameters()):
        p.copy_(0.3 * torch.sin(torch.arange(p.numel()).float() + 2 * i).view_as(p))
x = torch.linspace(-1, 1, 16).unsqueeze(1)
y = torch.sin(3 * x) + 0.5 * x
logits, mu, sigma = m(x)
print(logits.shape, mu.shape, sigma.shape)
loss = mdn_loss(logits, mu, sigma, y)
print("nll", round(loss.item(), 4))
mix = D.Categorical(logits=logits)
comp = D.Independent(D.Normal(mu, sigma), 1)
gmm = D.MixtureSameFamily(mix, comp)
print(gmm.batch_shape, gmm.event_shape)
lp = gmm.log_prob(y)
print(lp.shape)
print(torch.allclose(-lp.mean(), loss))
print(gmm.mean.shape, gmm.variance.shape)
print(gmm.mean[:3])
s = gmm.sample()
print(s.shape)
s2 = gmm.sample((4,))
print(s2.shape)
print(mix.probs.sum(-1)[:4])
print(mix.entropy()[:3])
print(mix.batch_shape, mix.event_shape, mix.param_shape)
c = D.Categorical(probs=torch.tensor([0.2, 0.3, 0.5]))
print(c.log_prob(torch.tensor([0, 1, 2])))
print(c.sample((10,)).shape, c.sample().dtype)
print(c)
print(gmm)
loss.backward()
print(m.pi.weight.grad)
# 1D gmm
mix1 = D.Categorical(torch.ones(5,))
comp1 = D.Normal(torch.linspace(-2, 2, 5), torch.full((5,), 0.5))
g1 = D.MixtureSameFamily(mix1, comp1)
print(g1.log_prob(torch.tensor([0.0, 1.0])))
print(g1.cdf(torch.tensor([0.0])))
print(g1.mean, g1.variance)
