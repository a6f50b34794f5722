"""DeepAR as in zhykoties/TimeSeries and the GluonTS-style likelihoods: a two-layer LSTM stepped one
time step at a time with its (hidden, cell) carried, mu / softplus sigma heads read from the
permuted hidden state, a Gaussian negative log-likelihood over the non-zero targets (boolean
masks), clip_grad_norm_, and torch.distributions Normal / StudentT / NegativeBinomial (logits and
the mu-alpha parametrisation, checked against a hand-written lgamma log-likelihood) / Poisson /
Gamma / LogNormal / Independent: log_prob, cdf, icdf, moments, entropy, sample shapes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, StudentT, NegativeBinomial, Poisson, Gamma
import torch.distributions as dist

def fill(m, scale=0.2):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.37 + 0.11 * i)).reshape(p.shape) * scale)
    return m

class DeepAR(nn.Module):
    def __init__(self, input_size=2, hidden_size=8, num_layers=2, likelihood='g'):
        super().__init__()
        self.lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                            bias=True, batch_first=False, dropout=0.0)
        self.distribution_mu = nn.Linear(hidden_size * num_layers, 1)
        self.distribution_presigma = nn.Linear(hidden_size * num_layers, 1)
        self.distribution_sigma = nn.Softplus()
        self.likelihood = likelihood

    def forward(self, x, hidden, cell):
        output, (hidden, cell) = self.lstm(x, (hidden, cell))
        hidden_permute = hidden.permute(1, 2, 0).contiguous().view(hidden.shape[1], -1)
        pre_sigma = self.distribution_presigma(hidden_permute)
        mu = self.distribution_mu(hidden_permute)
        sigma = self.distribution_sigma(pre_sigma)
        return torch.squeeze(mu), torch.squeeze(sigma), hidden, cell

    def init_hidden(self, input_size):
        return torch.zeros(self.lstm.num_layers, input_size, self.lstm.hidden_size)

def loss_fn(mu, sigma, labels):
    zero_index = (labels != 0)
    distribution = torch.distributions.normal.Normal(mu[zero_index], sigma[zero_index])
    likelihood = distribution.log_prob(labels[zero_index])
    return -torch.mean(likelihood)

model = fill(DeepAR())
print(model)
T, B = 12, 4
t = torch.arange(T, dtype=torch.float32)
series = torch.stack([torch.sin(t / 2 + b) + 1.5 for b in range(B)], 1)  # (T, B)
series[3, 1] = 0.0
covar = (t / T).unsqueeze(1).expand(T, B)
hidden = model.init_hidden(B)
cell = model.init_hidden(B)
loss = torch.zeros(1)
for step in range(T - 1):
    x = torch.stack([series[step], covar[step]], -1).unsqueeze(0)
    mu, sigma, hidden, cell = model(x, hidden, cell)
    loss = loss + loss_fn(mu, sigma, series[step + 1])
loss.backward()
print(loss.shape, round(loss.item(), 4))
print(mu.shape, sigma.shape, (sigma > 0).all())
print(model.lstm.weight_hh_l1.grad.shape)
gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
print(gn.dtype, gn.item() > 0)

n = Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
print(n.log_prob(torch.tensor([0.5, 0.5])), n.mean, n.stddev, n.variance)
print(n.cdf(torch.tensor([0.0, 1.0])), n.icdf(torch.tensor([0.975, 0.5])))
print(n.entropy(), n.batch_shape, n.event_shape)
st = StudentT(df=torch.tensor(3.0), loc=torch.tensor([0.0, 1.0]), scale=torch.tensor([1.0, 0.5]))
print(st.log_prob(torch.tensor([1.0, 1.0])), st.mean, st.variance)
total_count = torch.tensor([5.0, 10.0])
logits = torch.tensor([0.2, -0.3], requires_grad=True)
nb = NegativeBinomial(total_count=total_count, logits=logits)
lp = nb.log_prob(torch.tensor([3.0, 7.0]))
print(lp, nb.mean, nb.variance)
lp.sum().backward()
print(logits.grad)
# DeepAR-style NB parametrised by mu, alpha
mu_ = torch.tensor([4.0, 2.0]); alpha = torch.tensor([0.5, 0.1])
r = 1.0 / alpha
p = mu_ / (mu_ + r)
nb2 = NegativeBinomial(total_count=r, probs=p)
print(nb2.mean, nb2.log_prob(torch.tensor([2.0, 2.0])))
def nb_loglik(z, mu, alpha):
    return (torch.lgamma(z + 1. / alpha) - torch.lgamma(z + 1) - torch.lgamma(1. / alpha)
            - 1. / alpha * torch.log(1 + alpha * mu) + z * torch.log(alpha * mu / (1 + alpha * mu)))
print(nb_loglik(torch.tensor([2.0, 2.0]), mu_, alpha))
po = Poisson(torch.tensor([3.0]))
print(po.log_prob(torch.tensor([2.0])), po.mean)
g = Gamma(torch.tensor([2.0]), torch.tensor([3.0]))
print(g.log_prob(torch.tensor([0.5])), g.mean, g.variance)
torch.manual_seed(0)
samples = n.sample((100,))
print(samples.shape, n.rsample().shape, n.sample(torch.Size([3, 2])).shape)
print(nb.sample((7,)).shape, st.sample((5,)).shape)
q = torch.tensor([0.1, 0.5, 0.9])
print(Normal(0., 1.).icdf(q))
print(dist.Independent(Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1).log_prob(torch.zeros(3, 2)))
ln = dist.LogNormal(torch.tensor(0.0), torch.tensor(0.5))
print(ln.mean, ln.log_prob(torch.tensor(1.0)))
