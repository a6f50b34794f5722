"""Pieces of the CS285 (Berkeley deep RL) actor-critic homework: an MLP builder from activation
names, a policy returning Independent(Normal) or Independent(TransformedDistribution(Normal,
TanhTransform(cache_size=1))) or Categorical, a truncated-normal Distribution subclass written
with broadcast_all / constraints.dependent_property / erf / erfinv, twin Q critics with a
clipped double-Q target, clip_grad_norm_ and a Polyak-averaged target network.  Weights are
set from a fixed formula; sampled values are only checked for shape and range."""
import math
import torch
import torch.distributions as D
from torch import nn
from torch.distributions import constraints
from torch.distributions.utils import broadcast_all

_act = {'relu': nn.ReLU(), 'tanh': nn.Tanh(), 'identity': nn.Identity()}


def build_mlp(input_size, output_size, n_layers, size, activation='tanh', output_activation='identity'):
    layers, in_size = [], input_size
    for _ in range(n_layers):
        layers += [nn.Linear(in_size, size), _act[activation]]
        in_size = size
    layers += [nn.Linear(in_size, output_size), _act[output_activation]]
    return nn.Sequential(*layers)


def fix_weights(module, phase=0.0):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(0.4 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i + phase).reshape(p.shape))
    return module


class TruncStdNormal(D.Distribution):
    arg_constraints = {"a": constraints.real, "b": constraints.real}
    has_rsample = True
    eps = 1e-6

    def __init__(self, a, b, validate_args=None):
        self.a, self.b = broadcast_all(a, b)
        super().__init__(self.a.size(), validate_args=validate_args)
        if any((self.a >= self.b).view(-1).tolist()):
            raise ValueError("Incorrect truncation range")
        self._phi_a, self._phi_b = self._little_phi(self.a), self._little_phi(self.b)
        self._Phi_a, self._Phi_b = self._big_phi(self.a), self._big_phi(self.b)
        self._Z = (self._Phi_b - self._Phi_a).clamp(self.eps, 1 - self.eps)
        self._mean = -(self._phi_b - self._phi_a) / self._Z

    @constraints.dependent_property
    def support(self):
        return constraints.interval(self.a, self.b)

    @property
    def mean(self):
        return self._mean

    @staticmethod
    def _little_phi(x):
        return (-(x ** 2) * 0.5).exp() / math.sqrt(2 * math.pi)

    def _big_phi(self, x):
        return (0.5 * (1 + (x / math.sqrt(2)).erf())).clamp(self.eps, 1 - self.eps)

    def icdf(self, value):
        y = (self._Phi_a + value * self._Z).clamp(self.eps, 1 - self.eps)
        return math.sqrt(2) * (2 * y - 1).erfinv()

    def log_prob(self, value):
        return -math.log(math.sqrt(2 * math.pi)) - self._Z.log() - value ** 2 * 0.5

    def rsample(self, sample_shape=torch.Size()):
        p = torch.empty(self._extended_shape(sample_shape)).uniform_(self.eps, 1 - self.eps)
        return self.icdf(p)


obs = torch.linspace(-1, 1, 24).reshape(6, 4)
acs = torch.tanh(torch.linspace(-2, 2, 12).reshape(6, 2)) * 0.9
mean_net = fix_weights(build_mlp(4, 2, 2, 8))
print(mean_net)
mean = mean_net(obs)
std = nn.functional.softplus(fix_weights(nn.Linear(4, 2), 1.0)(obs)) + 1e-2
normal = D.Independent(D.Normal(mean, std), reinterpreted_batch_ndims=1)
tanh_d = D.Independent(D.TransformedDistribution(D.Normal(mean, std), [D.TanhTransform(cache_size=1)]), 1)
cat = D.Categorical(logits=fix_weights(build_mlp(4, 3, 1, 8))(obs))
for name, d, a in [("normal", normal, acs), ("tanh", tanh_d, acs), ("cat", cat, torch.tensor([0, 1, 2, 2, 1, 0]))]:
    lp = d.log_prob(a)
    print(name, type(d).__name__, tuple(d.batch_shape), tuple(d.event_shape), lp.detach().numpy().round(4))
    s = d.rsample((3,)) if d.has_rsample else d.sample((3,))
    print("  sample", tuple(s.shape), s.dtype, bool((s.abs() <= 1).all()) if name == "tanh" else "")
print("entropy", normal.entropy().detach().numpy().round(4), cat.entropy().detach().numpy().round(4))
(-tanh_d.log_prob(acs).mean()).backward()
print("grad", [round(float(p.grad.norm()), 4) for p in mean_net.parameters()])

loc = torch.tensor([[0.2, -0.4], [0.0, 0.9]], requires_grad=True)
scale = torch.tensor([[0.5, 0.3], [1.0, 0.2]])
tn = TruncStdNormal((-1 - loc) / scale, (1 - loc) / scale)
print(tuple(tn.batch_shape), tn.mean.detach().numpy().round(4), tn.support)
q = tn.icdf(torch.tensor([[0.1, 0.5], [0.9, 0.25]])) * scale + loc
print(q.detach().numpy().round(4), tn.log_prob(torch.zeros(2, 2)).detach().numpy().round(4))
q.sum().backward()
print("dq/dloc", loc.grad.numpy().round(4), tuple(tn.rsample((5,)).shape))
try:
    TruncStdNormal(torch.tensor([1.0]), torch.tensor([0.0]))
except ValueError as e:
    print("ValueError:", e)

critics = nn.ModuleList([fix_weights(build_mlp(6, 1, 2, 8, 'relu'), k) for k in range(2)])
targets = nn.ModuleList([build_mlp(6, 1, 2, 8, 'relu') for _ in range(2)])
targets.load_state_dict(critics.state_dict())
opt = torch.optim.Adam(critics.parameters(), lr=3e-4)
rew = torch.linspace(-1, 1, 6)
done = torch.tensor([0., 0., 1., 0., 0., 1.])
with torch.no_grad():
    next_q = torch.stack([t(torch.cat([obs, acs], -1)).squeeze(-1) for t in targets]).min(dim=0).values
    target = rew + 0.99 * (1 - done) * next_q
for step in range(3):
    q = torch.stack([c(torch.cat([obs, acs], dim=-1)).squeeze(-1) for c in critics], dim=0)
    loss = nn.functional.mse_loss(q, target[None].expand_as(q))
    opt.zero_grad()
    loss.backward()
    gn = nn.utils.clip_grad_norm_(critics.parameters(), 1.0)
    opt.step()
    print(step, tuple(q.shape), f"{loss.item():.5f} {gn.item():.5f}")
for tp, p in zip(targets.parameters(), critics.parameters()):
    tp.data.copy_(tp.data * (1.0 - 0.005) + p.data * 0.005)
print(f"{sum(float(p.detach().sum()) for p in targets.parameters()):.5f}")
