"""Idioms of a beginner lesson series (tensors to a full project), written anew with
deterministic data: gradient descent on a 0-d leaf (in-place under no_grad and through .data),
gradient accumulation and zero_, grad_fn names, manual mini-batches from a fixed permutation,
BatchNorm running statistics, StepLR and ReduceLROnPlateau (and its removed `verbose` keyword),
a checkpoint round-trip (model, full module and Adam state) that resumes bit-for-bit.

Source of the idioms: Mzh2002/PyTorch-Tutorial lessons 03-14 (read, not copied); weights and data
are drawn with numpy so both libraries see the same numbers.
"""
import io
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset

rng = np.random.default_rng(7)


def fill_(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.normal(0, 0.3, tuple(p.shape)), dtype=p.dtype))
    return model


# 0-d leaf, in-place update under no_grad
x = torch.tensor(0.0, requires_grad=True)
for step in range(20):
    loss = (x - 5) ** 2
    loss.backward()
    with torch.no_grad():
        x -= 0.1 * x.grad
    x.grad.zero_()
print("x", round(x.item(), 6), x.is_leaf, x.requires_grad, x.grad)
# update through .data
w = torch.tensor(10.0, requires_grad=True)
for step in range(50):
    loss = (w - 3) ** 2
    loss.backward()
    w.data -= 0.1 * w.grad
    w.grad.zero_()
print("w", round(w.item(), 6), w.grad_fn, w.is_leaf)
# accumulation and grad_fn names
a = torch.tensor(2.0, requires_grad=True)
b = a * 3
c = b + 1
d = c ** 2
print(b.grad_fn.name(), c.grad_fn.name(), d.grad_fn.name())
d.backward()
y1 = a ** 3
y1.backward()
print("a.grad", a.grad.item())

# manual mini-batches from a fixed permutation
X = torch.tensor(rng.normal(size=(200, 3)), dtype=torch.float32)
y = X @ torch.tensor([[2.0, 3.0, -1.0]]).T + 0.5
model = fill_(nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
perm = torch.tensor(rng.permutation(200))
for epoch in range(3):
    Xs, ys = X[perm], y[perm]
    tot = 0.0
    for i in range(0, 200, 32):
        loss = nn.functional.mse_loss(model(Xs[i:i + 32]), ys[i:i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
    print("epoch", epoch, "%.5f" % (tot / 7))
print("weights", model.weight.data.numpy().round(4), "%.4f" % model.bias.item())

# BatchNorm running stats, train vs eval
bn = nn.BatchNorm1d(4)
xb = torch.tensor(rng.normal(2.0, 3.0, size=(6, 4)), dtype=torch.float32)
out_train = bn(xb)
print("bn", bn.num_batches_tracked.item(), bn.running_mean.numpy().round(4), bn.running_var.numpy().round(4))
bn.eval()
print("bn eval", bn(xb)[0].detach().numpy().round(4), out_train[0].detach().numpy().round(4))

# schedulers
net = fill_(nn.Linear(2, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.001)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
for val in [1.0, 0.9, 0.95, 0.93, 0.92, 0.91, 0.99, 0.98, 0.97]:
    plateau.step(val)
    print("plateau lr %.6f" % opt.param_groups[0]["lr"], plateau.num_bad_epochs)
try:
    torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", verbose=False)
except TypeError as e:
    print("TypeError", "verbose" in str(e))
opt2 = torch.optim.Adam(net.parameters(), lr=0.001)
step_lr = torch.optim.lr_scheduler.StepLR(opt2, step_size=3, gamma=0.5)
for epoch in range(7):
    opt2.step()
    step_lr.step()
    print("step lr", epoch, step_lr.get_last_lr(), opt2.param_groups[0]["lr"])


# checkpoint round-trip and exact resume
class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        return self.net(x)


xs = torch.tensor(rng.normal(size=(16, 5)), dtype=torch.float32)
ts = torch.tensor(rng.integers(0, 3, 16))
m = fill_(SmallNet())
opt = torch.optim.Adam(m.parameters(), lr=0.01)
for i in range(3):
    loss = nn.functional.cross_entropy(m(xs), ts)
    opt.zero_grad()
    loss.backward()
    opt.step()
buf = io.BytesIO()
torch.save({"epoch": 3, "model_state_dict": m.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "loss": loss.item()}, buf)
buf.seek(0)
ck = torch.load(buf, weights_only=True)
m2 = SmallNet()
m2.load_state_dict(ck["model_state_dict"])
opt_r = torch.optim.Adam(m2.parameters())
opt_r.load_state_dict(ck["optimizer_state_dict"])
print("resumed", ck["epoch"], "%.5f" % ck["loss"], opt_r.param_groups[0]["lr"], sorted(opt_r.state_dict()["state"][0]))
for mm, oo in ((m, opt), (m2, opt_r)):
    loss = nn.functional.cross_entropy(mm(xs), ts)
    oo.zero_grad()
    loss.backward()
    oo.step()
print("same after resume", all(torch.equal(p, q) for p, q in zip(m.parameters(), m2.parameters())))
buf = io.BytesIO()
torch.save(m, buf)
buf.seek(0)
full = torch.load(buf, weights_only=False)
print(type(full).__name__, full.training, torch.equal(full(xs), m(xs)))
sd = m.state_dict().copy()
print(type(sd).__name__, list(sd))

# data utilities without shuffling
ds = TensorDataset(xs, ts)
sub = Subset(ds, range(4, 14))
for xb, tb in DataLoader(sub, batch_size=4, drop_last=True):
    print("batch", tuple(xb.shape), tb.tolist())
print(len(DataLoader(sub, batch_size=4)), len(DataLoader(sub, batch_size=4, drop_last=True)))
