"""Quantisation-aware training of a small MLP in float, the two ways scripts write it: by hand
(a min/max QParam object quantising weights through a torch.autograd.Function whose backward
passes the gradient straight through, and a round-with-detach STE with per-channel scales) and
with torch.ao.quantization's observers and FakeQuantize modules (MinMax / MovingAverage /
PerChannel observers, calculate_qparams, default fake-quant factories, disable_observer /
disable_fake_quant through model.apply, their buffers in state_dict, qint8 / quint8 dtypes and
qschemes).  Deterministic weights and data; prints losses, qparams and fake-quantised values."""
import io
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao import quantization as tq
from torch.autograd import Function

warnings.simplefilter("ignore")


def fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.83 + i).view_as(p) * scale)


def make_data(n=16):
    t = torch.arange(n * 5, dtype=torch.float32).view(n, 5)
    x = torch.sin(t * 0.29) * 2.0
    y = ((x[:, 0] - x[:, 3]) > 0).long() + (x[:, 1] > 0.8).long()
    return x, y


class MinMaxQParam:
    """Asymmetric 8-bit qparams from the running min / max (always including 0)."""

    def __init__(self, bits=8):
        self.bits, self.lo, self.hi = bits, None, None

    def update(self, t):
        self.lo = t.min().clamp(max=0) if self.lo is None else torch.min(self.lo, t.min())
        self.hi = t.max().clamp(min=0) if self.hi is None else torch.max(self.hi, t.max())
        qmax = 2 ** self.bits - 1
        self.scale = (self.hi - self.lo) / qmax
        self.zero_point = (qmax - self.hi / self.scale).round().clamp(0, qmax)

    def fake(self, t):
        q = (self.zero_point + t / self.scale).clamp(0, 2 ** self.bits - 1).round()
        return self.scale * (q - self.zero_point)


class FakeQuantFn(Function):
    @staticmethod
    def forward(ctx, x, qparam):
        return qparam.fake(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


def round_ste(x):
    return (x.round() - x).detach() + x


def per_channel_fake(w, bits=4):
    qmax = 2 ** (bits - 1) - 1
    scale = w.detach().abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / qmax
    return torch.clamp(round_ste(w / scale), -qmax - 1, qmax) * scale


class HandQATNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)
        self.q1 = MinMaxQParam()

    def forward(self, x):
        self.q1.update(self.fc1.weight.data)
        h = F.relu(F.linear(x, FakeQuantFn.apply(self.fc1.weight, self.q1), self.fc1.bias))
        return F.linear(h, per_channel_fake(self.fc2.weight), self.fc2.bias)


class QATLinear(nn.Linear):
    def __init__(self, i, o):
        super().__init__(i, o)
        self.weight_fake_quant = tq.default_per_channel_weight_fake_quant()
        self.act_fake_quant = tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver,
                                              quant_min=0, quant_max=255, dtype=torch.quint8)

    def forward(self, x):
        return self.act_fake_quant(F.linear(x, self.weight_fake_quant(self.weight), self.bias))


x, y = make_data()

print("== by hand")
net = HandQATNet()
fill_(net, 0.6)
opt = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
for step in range(5):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}", f"scale={net.q1.scale.item():.6f}", f"zp={net.q1.zero_point.item():.0f}")
print("grad through STE", net.fc2.weight.grad[0])
w = net.fc2.weight.detach().clone().requires_grad_()
fq = per_channel_fake(w, bits=3)
(fq * torch.arange(8.0)).sum().backward()
print(fq[1], w.grad[1])

print("== observers")
data = torch.stack([x[:, 0], x[:, 1] * 3 - 1.0])
for name, obs in [("minmax", tq.MinMaxObserver()),
                  ("symmetric int8", tq.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)),
                  ("symmetric uint8", tq.MinMaxObserver(qscheme=torch.per_tensor_symmetric)),
                  ("4-bit range", tq.MinMaxObserver(quant_min=0, quant_max=15)),
                  ("moving average", tq.MovingAverageMinMaxObserver(averaging_constant=0.25)),
                  ("per channel", tq.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                                              qscheme=torch.per_channel_symmetric)),
                  ("moving per channel", tq.MovingAveragePerChannelMinMaxObserver(averaging_constant=0.5))]:
    obs(data)
    obs(data * 0.5 + 0.25)
    scale, zp = obs.calculate_qparams()
    print(name, obs.quant_min, obs.quant_max, scale, zp)
    print("  ", obs)
    if scale.numel() == 1:
        print("   fake", torch.fake_quantize_per_tensor_affine(data[0, :4], scale.item(), int(zp.item()), obs.quant_min, obs.quant_max))
    else:
        print("   fake", torch.fake_quantize_per_channel_affine(data[:, :4], scale, zp.to(torch.int32), 0, obs.quant_min, obs.quant_max))

print("== FakeQuantize modules")
model = nn.Sequential(QATLinear(5, 8), nn.ReLU(), QATLinear(8, 3))
fill_(model, 0.5)
print(model[0].weight_fake_quant)
opt = torch.optim.Adam(model.parameters(), lr=0.05)
for step in range(6):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}", model[0].act_fake_quant.scale, model[0].act_fake_quant.zero_point)
    if step == 2:
        model.apply(tq.disable_observer)
    if step == 4:
        model.apply(tq.disable_fake_quant)
print(model[2].weight_fake_quant.scale, model[2].weight_fake_quant.zero_point)
print(model[0].weight_fake_quant.fake_quant_enabled, model[0].weight_fake_quant.observer_enabled)
print(sorted(k for k in model.state_dict() if k.startswith("0.")))
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
fresh = nn.Sequential(QATLinear(5, 8), nn.ReLU(), QATLinear(8, 3))
fresh.load_state_dict(torch.load(buf))
print(fresh[0].weight_fake_quant.scale.shape, fresh[0].weight_fake_quant.activation_post_process)
model.apply(tq.enable_fake_quant)
with torch.no_grad():
    print((model(x) - fresh(x)).abs().max().item() < 1e-6, model(x[:2]))
print(torch.qint8, torch.quint8, torch.per_channel_symmetric, torch.iinfo(torch.qint8).min, torch.iinfo(torch.quint8).max)
