"""Optimizers written by hand, as tutorials write them: SGD with momentum, Adam and a soft
target-network update, one parameter at a time with the in-place methods under no_grad; then the
scalar range rules of fill_, full, masked_fill and lerp_, and silent overflowing casts."""
import math
import warnings

import torch

torch.manual_seed(0)
warnings.simplefilter("error")          # a spurious warning would stop the script


def make_model():
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():               # (weights from a formula: the same in any library)
        for k, p in enumerate(model.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel()) * 1.3 + k).reshape(p.shape) * 0.4)
    return model


x = torch.linspace(-1, 1, 40).reshape(10, 4)
y = torch.arange(10) % 3


def loss_of(model):
    return torch.nn.functional.cross_entropy(model(x), y)


# SGD with momentum, by hand
model = make_model()
bufs = [torch.zeros_like(p) for p in model.parameters()]
for step in range(30):
    model.zero_grad()
    loss = loss_of(model)
    loss.backward()
    with torch.no_grad():
        for p, b in zip(model.parameters(), bufs):
            b.mul_(0.9).add_(p.grad)
            p.sub_(b, alpha=0.1)
    if step % 10 == 0:
        print(f"momentum step {step}: loss {loss.item():.5f}")

# Adam, by hand
model = make_model()
params = list(model.parameters())
m = [torch.zeros_like(p) for p in params]
v = [torch.zeros_like(p) for p in params]
b1, b2, lr, eps = 0.9, 0.999, 0.01, 1e-8
for t in range(1, 31):
    for p in params:
        p.grad = None
    loss = loss_of(model)
    loss.backward()
    with torch.no_grad():
        for p, mi, vi in zip(params, m, v):
            mi.lerp_(p.grad, 1 - b1)
            vi.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            denom = (vi.sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
            p.addcdiv_(mi, denom, value=-lr / (1 - b1 ** t))
    if t % 10 == 0:
        print(f"adam step {t}: loss {loss.item():.5f}")
print("adam first weights", params[0][0].detach())

# a target network following the online one (soft update with copy_)
target = make_model()
online = make_model()
with torch.no_grad():
    for p in online.parameters():
        p.mul_(2.0)
    for tp, op in zip(target.parameters(), online.parameters()):
        tp.copy_(0.95 * tp + 0.05 * op)
    for tp in target.parameters():
        tp.clamp_(min=-0.5, max=0.5)
print("target bias", target[2].bias.detach())
print("versions move:", target[2].bias._version > 0)

# copy_ casts as the destination's dtype, silently
ints = torch.zeros(3, dtype=torch.int64)
print(ints.copy_(torch.tensor([1.7, -2.7, 3.2])))
halves = torch.zeros(3, dtype=torch.float32)
print(halves.copy_(torch.tensor([0.1, 1e40, -1e300], dtype=torch.float64)))
print(torch.tensor([1e40], dtype=torch.float32))

# a Python number that the dtype cannot hold is refused
for name, fn in [("fill_", lambda: torch.zeros(2).fill_(1e40)),
                 ("full", lambda: torch.full((2,), 1e5, dtype=torch.float16)),
                 ("full uint8", lambda: torch.full((2,), 300, dtype=torch.uint8)),
                 ("masked_fill", lambda: torch.zeros(2).masked_fill(torch.tensor([True, False]), 1e40)),
                 ("lerp_", lambda: torch.zeros(2).lerp_(torch.ones(2), 1e40)),
                 ("fill_ inf", lambda: torch.zeros(2, dtype=torch.float16).fill_(float("inf")))]:
    try:
        print(name, fn())
    except RuntimeError as e:
        print(name, "RuntimeError:", e)

# in-place on a leaf that requires grad, outside no_grad
w = torch.ones(2, requires_grad=True)
try:
    w.addcmul_(w, w)
except RuntimeError as e:
    print("RuntimeError:", e)
