"""The actor-critic parts of facebookresearch/drqv2 (drqv2.py, utils.py) and of its forks with an
ensemble critic, written afresh and run on small random images.

Exercises: a Normal subclass (a truncated normal policy) whose sample() builds its shape with
_extended_shape and draws through torch.distributions.utils._standard_normal, clips the noise and
clamps with a straight-through estimator; an ensemble linear layer (a (n, in, out) weight used
with matmul on (n, batch, in) input) initialised by kaiming_uniform_ and
_calculate_fan_in_and_fan_out, then re-initialised orthogonally per member through
tensor.new(...).normal_, unbind, in-place t_ on the pieces, linalg.qr and view_as(...).copy_;
module.apply weight init with calculate_gain; F.pad(..., 'replicate') and F.grid_sample for the
random-shift augmentation (here with a fixed shift); amin over the ensemble, zero_grad(set_to_none=
True), a linear-schedule parser, an eval_mode context manager and Polyak updates of the target.
What depends on the random draws is printed as properties that hold for every draw (shapes,
bounds, orthogonality, straight-through gradients); the rest uses weights set from numpy.
"""
import re

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import distributions as pyd
from torch.distributions.utils import _standard_normal

RS = np.random.RandomState(3)


class TruncatedNormal(pyd.Normal):
    def __init__(self, loc, scale, low=-1.0, high=1.0, eps=1e-6):
        super().__init__(loc, scale, validate_args=False)
        self.low, self.high, self.eps = low, high, eps

    def _clamp(self, x):
        clamped = torch.clamp(x, self.low + self.eps, self.high - self.eps)
        return x - x.detach() + clamped.detach()

    def sample(self, clip=None, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        eps *= self.scale
        if clip is not None:
            eps = torch.clamp(eps, -clip, clip)
        return self._clamp(self.loc + eps)


class Ensemble(nn.Module):
    def __init__(self, in_features, out_features, n):
        super().__init__()
        self.weight = nn.Parameter(torch.empty((n, in_features, out_features)))
        self.bias = nn.Parameter(torch.empty((n, 1, out_features)))
        nn.init.kaiming_uniform_(self.weight, a=np.sqrt(5))
        fan_in, fan_out = nn.init._calculate_fan_in_and_fan_out(self.weight)
        self.fans = (fan_in, fan_out)
        bound = 1 / np.sqrt(fan_in)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias

    def extra_repr(self):
        return "in={}, out={}, n={}".format(self.weight.shape[1], self.weight.shape[2], self.weight.shape[0])


def ensemble_orthogonal_(tensor, gain=1.0):
    n, rows = tensor.size(0), tensor.size(1)
    cols = tensor.numel() // n // rows
    flat = tensor.new(n, rows, cols).normal_(0, 1)
    qs = []
    for piece in torch.unbind(flat, dim=0):
        if rows < cols:
            piece.t_()
        q, r = torch.linalg.qr(piece)
        q *= torch.diag(r, 0).sign()
        if rows < cols:
            q.t_()
        qs.append(q)
    qs = torch.stack(qs, dim=0)
    with torch.no_grad():
        tensor.view_as(qs).copy_(qs)
        tensor.mul_(gain)
    return tensor


def weight_init(m):
    if isinstance(m, Ensemble):
        ensemble_orthogonal_(m.weight.data, nn.init.calculate_gain("relu"))
        m.bias.data.fill_(0.0)


def schedule(spec, step):
    try:
        return float(spec)
    except ValueError:
        match = re.match(r"linear\((.+),(.+),(.+)\)", spec)
        if match:
            init, final, duration = [float(g) for g in match.groups()]
            mix = np.clip(step / duration, 0.0, 1.0)
            return (1.0 - mix) * init + mix * final
    raise NotImplementedError(spec)


class eval_mode:
    def __init__(self, *models):
        self.models = models

    def __enter__(self):
        self.prev = [m.training for m in self.models]
        for m in self.models:
            m.train(False)

    def __exit__(self, *args):
        for m, state in zip(self.models, self.prev):
            m.train(state)
        return False


def shift_images(x, pad, shift):
    """drqv2's random shift with the shift given (integers in [0, 2 * pad])."""
    n, c, h, w = x.size()
    x = F.pad(x, (pad,) * 4, "replicate")
    eps = 1.0 / (h + 2 * pad)
    arange = torch.linspace(-1.0 + eps, 1.0 - eps, h + 2 * pad, device=x.device, dtype=x.dtype)[:h]
    arange = arange.unsqueeze(0).repeat(h, 1).unsqueeze(2)
    base_grid = torch.cat([arange, arange.transpose(1, 0)], dim=2).unsqueeze(0).repeat(n, 1, 1, 1)
    shift = torch.as_tensor(shift, dtype=x.dtype).view(n, 1, 1, 2) * (2.0 / (h + 2 * pad))
    return F.grid_sample(x, base_grid + shift, padding_mode="zeros", align_corners=False)


print("== schedule", [round(schedule("linear(1.0,0.1,100)", s), 4) for s in (0, 50, 250)], schedule("0.2", 7))

print("== truncated normal")
loc = torch.tensor([[0.95, -0.3, 0.0]], requires_grad=True)
dist = TruncatedNormal(torch.tanh(loc * 3), torch.ones(1, 3) * 0.4)
a = dist.sample(clip=0.3, sample_shape=torch.Size([4]))
print("sample", tuple(a.shape), a.dtype, "within bounds", bool(((a > -1) & (a < 1)).all()),
      "within clip", bool(((a - dist.loc).abs() <= 0.3 + 1e-6).all()))
a.sum().backward()
print("straight-through grad", loc.grad)
print("mean", dist.mean, "\nlog_prob at mean", dist.log_prob(dist.mean.detach()).sum(-1, keepdim=True))
print("entropy", dist.entropy().sum(-1).mean().item() - 3 * 0.5 * np.log(2 * np.pi * np.e * 0.16) < 1e-5)
print("_standard_normal", _standard_normal((2, 5), dtype=torch.float64, device=torch.device("cpu")).dtype)

print("== ensemble critic")
critic = nn.Sequential(Ensemble(5, 16, 2), nn.ReLU(inplace=True), Ensemble(16, 16, 2), nn.ReLU(inplace=True),
                       Ensemble(16, 1, 2))
print(critic)
print("fans", critic[0].fans, critic[2].fans, "kaiming bound ok",
      bool(critic[0].weight.abs().max() <= 1 / np.sqrt(critic[0].fans[0]) + 1e-6))
critic.apply(weight_init)
w = critic[2].weight
gram = torch.matmul(w.transpose(1, 2), w) / nn.init.calculate_gain("relu") ** 2
print("orthogonal", torch.allclose(gram, torch.eye(16).expand(2, 16, 16), atol=1e-5), critic[4].weight.shape)
with torch.no_grad():
    for p in critic.parameters():
        p.copy_(torch.from_numpy(RS.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
target = nn.Sequential(Ensemble(5, 16, 2), nn.ReLU(inplace=True), Ensemble(16, 16, 2), nn.ReLU(inplace=True),
                       Ensemble(16, 1, 2))
print(target.load_state_dict(critic.state_dict()))
opt = torch.optim.Adam(critic.parameters(), lr=1e-2)
obs = torch.from_numpy(RS.standard_normal((6, 3)).astype(np.float32))
act = torch.from_numpy(RS.uniform(-1, 1, (6, 2)).astype(np.float32))
rew = torch.from_numpy(RS.uniform(0, 1, (6, 1)).astype(np.float32))
for step in range(3):
    with torch.no_grad():
        target_qs = torch.squeeze(torch.transpose(target(torch.cat([obs, act.flip(0)], -1)), 0, 1), dim=-1)
        target_v = target_qs.amin(dim=1, keepdim=True)
        target_q = rew + 0.99 * target_v
    qs = torch.squeeze(torch.transpose(critic(torch.cat([obs, act], dim=-1)), 0, 1), dim=-1)
    loss = (qs - target_q).square().sum(1).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    for p, tp in zip(critic.parameters(), target.parameters()):
        tp.data.copy_(0.1 * p.data + (1 - 0.1) * tp.data)
    print(f"step {step}: qs {tuple(qs.shape)} target_v {tuple(target_v.shape)} loss {loss.item():.5f} "
          f"q1 {qs[..., 0].mean().item():.5f} q2 {qs[..., 1].mean().item():.5f}")
print("grads present after the last step:", [p.grad is not None for p in critic.parameters()][:2])
opt.zero_grad(set_to_none=True)
print("after zero_grad(set_to_none=True):", [p.grad is None for p in critic.parameters()][:2])

print("== eval_mode")
net = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
with eval_mode(net):
    print("inside", net.training, net[1].training)
print("after", net.training, net[1].training)

print("== random shift augmentation (fixed shifts)")
img = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).view(2, 1, 6, 6)
print("replicate pad\n", F.pad(img, (2, 2, 2, 2), "replicate")[0, 0, :3])
out = shift_images(img, 2, [[2, 2], [0, 4]])
print("centre shift is identity:", torch.allclose(out[0], img[0], atol=1e-4))
print("shifted\n", out[1, 0])

print("== a policy built from probs that sum to zero")
try:
    pyd.Categorical(probs=torch.tensor([0.5, -0.5]))
except ValueError as e:
    print("ValueError:", str(e).splitlines()[0])
