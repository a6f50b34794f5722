"""Barlow Twins and VICReg losses as facebookresearch/barlowtwins and facebookresearch/vicreg
write them (written for this corpus, not a copy): the off_diagonal view trick
(flatten()[:-1].view(n - 1, n + 1)[:, 1:]), BatchNorm1d(affine=False) cross-correlation with
in-place div_ / add_ / pow_ on torch.diagonal, a hand-written cross-correlation, the VICReg
variance / covariance terms, torch.cov, a float64 gradcheck.  Deterministic weights."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def det(*shape, phase=0.0, scale=1.0):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.917 + phase) * scale).reshape(shape)


def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class BarlowTwins(nn.Module):
    def __init__(self, sizes=(12, 16, 16), lambd=0.0051, batch_size=8):
        super().__init__()
        self.lambd, self.batch_size = lambd, batch_size
        layers = []
        for i in range(len(sizes) - 2):
            layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=False))
            layers.append(nn.BatchNorm1d(sizes[i + 1]))
            layers.append(nn.ReLU(inplace=True))
        layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
        self.projector = nn.Sequential(*layers)
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(y1)
        z2 = self.projector(y2)
        c = self.bn(z1).T @ self.bn(z2)
        c.div_(self.batch_size)
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + self.lambd * off_diag
        return loss, on_diag, off_diag, c


model = BarlowTwins()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(det(*p.shape, phase=i, scale=0.4))
y1 = det(8, 12, phase=0.4)
y2 = y1 + 0.2 * det(8, 12, phase=5.0)
loss, on_diag, off_diag, c = model(y1, y2)
print(f"barlow loss {loss.item():.4f} on {on_diag.item():.4f} off {off_diag.item():.4f}")
print("c", c.shape, c.grad_fn.name(), "diag", torch.diagonal(c)[:4])
loss.backward()
print("grad", [round(p.grad.abs().sum().item(), 4) for p in model.parameters()])
x = torch.arange(16.).view(4, 4)
print(off_diagonal(x))
print(x.flatten()[:-1].view(3, 5))
print(torch.diagonal(x, offset=1), torch.diagonal(x, 0, -2, -1))

# hand written cross correlation (as in many blog posts) must match
z1n = (y1 - y1.mean(0)) / y1.std(0, unbiased=False)
z2n = (y2 - y2.mean(0)) / y2.std(0, unbiased=False)
cc = torch.mm(z1n.T, z2n) / y1.shape[0]
eye = torch.eye(cc.shape[0], device=cc.device)
c_diff = (cc - eye).pow(2)
c_diff[~eye.bool()] *= 0.0051
print("manual barlow", round(c_diff.sum().item(), 4))
off = cc.masked_select(~torch.eye(12, dtype=torch.bool)).view(12, 11)
print("off", off.shape, round(off.pow(2).sum().item(), 4), round(off_diagonal(cc).pow(2).sum().item(), 4))


def vicreg_loss(x, y, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0):
    batch_size, num_features = x.shape
    repr_loss = F.mse_loss(x, y)
    x = x - x.mean(dim=0)
    y = y - y.mean(dim=0)
    std_x = torch.sqrt(x.var(dim=0) + 0.0001)
    std_y = torch.sqrt(y.var(dim=0) + 0.0001)
    std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2
    cov_x = (x.T @ x) / (batch_size - 1)
    cov_y = (y.T @ y) / (batch_size - 1)
    cov_loss = off_diagonal(cov_x).pow_(2).sum().div(num_features) + off_diagonal(cov_y).pow_(2).sum().div(num_features)
    loss = sim_coeff * repr_loss + std_coeff * std_loss + cov_coeff * cov_loss
    return loss, repr_loss, std_loss, cov_loss


a = det(10, 6, phase=0.0, scale=0.7).requires_grad_()
b = det(10, 6, phase=0.3, scale=0.9).requires_grad_()
out = vicreg_loss(a, b)
print("vicreg", [round(t.item(), 4) for t in out])
out[0].backward()
print("a.grad", a.grad[0], "b.grad sum", round(b.grad.sum().item(), 5))
print("cov", torch.cov(a.detach().T).shape, torch.allclose(torch.cov(a.T), ((a - a.mean(0)).T @ (a - a.mean(0))) / 9, atol=1e-6))
a64 = a.detach().double().requires_grad_()
b64 = b.detach().double().requires_grad_()
print("gradcheck", torch.autograd.gradcheck(lambda u, v: vicreg_loss(u, v)[0], (a64, b64)))
# collapse: constant embeddings give std loss == 1
const = torch.ones(10, 6)
print("collapsed", [round(t.item(), 4) for t in vicreg_loss(const, const)])
