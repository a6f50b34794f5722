"""Deep equilibrium layer with Anderson acceleration, in the style of the NeurIPS 2020 implicit
layers tutorial and the DEQ repositories (written for this corpus): Anderson mixing on a batch
of small least-squares systems (bmm, batched torch.linalg.solve on the bordered Gram matrix),
a forward solve under no_grad, one re-engaged step, and a backward hook that solves the adjoint
fixed point with autograd.grad(f0, z0, y, retain_graph=True); then a Hutchinson estimate of the
Jacobian's Frobenius norm (create_graph) as a regulariser, and a few Adam steps of a small
classifier around the layer.  Data and weights come from a seeded NumPy generator."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.autograd as autograd

rng = np.random.RandomState(0)


def anderson(f, x0, m=5, lam=1e-4, max_iter=50, tol=1e-4, beta=1.0):
    bsz, d, H, W = x0.shape
    X = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    F_ = torch.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    X[:, 0], F_[:, 0] = x0.view(bsz, -1), f(x0).view(bsz, -1)
    X[:, 1], F_[:, 1] = F_[:, 0], f(F_[:, 0].view_as(x0)).view(bsz, -1)

    Hm = torch.zeros(bsz, m + 1, m + 1, dtype=x0.dtype, device=x0.device)
    Hm[:, 0, 1:] = Hm[:, 1:, 0] = 1
    y = torch.zeros(bsz, m + 1, 1, dtype=x0.dtype, device=x0.device)
    y[:, 0] = 1

    res = []
    for k in range(2, max_iter):
        n = min(k, m)
        G = F_[:, :n] - X[:, :n]
        Hm[:, 1:n + 1, 1:n + 1] = torch.bmm(G, G.transpose(1, 2)) + lam * torch.eye(n, dtype=x0.dtype, device=x0.device)[None]
        alpha = torch.linalg.solve(Hm[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]
        X[:, k % m] = beta * (alpha[:, None] @ F_[:, :n])[:, 0] + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0]
        F_[:, k % m] = f(X[:, k % m].view_as(x0)).view(bsz, -1)
        res.append((F_[:, k % m] - X[:, k % m]).norm().item() / (1e-5 + F_[:, k % m].norm().item()))
        if res[-1] < tol:
            break
    return X[:, k % m].view_as(x0), res


def forward_iteration(f, x0, max_iter=100, tol=1e-4):
    f0 = f(x0)
    res = []
    for k in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


class ResNetLayer(nn.Module):
    def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=4):
        super().__init__()
        self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
        self.norm2 = nn.GroupNorm(num_groups, n_channels)
        self.norm3 = nn.GroupNorm(num_groups, n_channels)
        with torch.no_grad():
            self.conv1.weight.copy_(torch.from_numpy(rng.randn(*self.conv1.weight.shape) * 0.01))
            self.conv2.weight.copy_(torch.from_numpy(rng.randn(*self.conv2.weight.shape) * 0.01))

    def forward(self, z, x):
        y = self.norm1(F.relu(self.conv1(z)))
        return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))


class DEQFixedPoint(nn.Module):
    def __init__(self, f, solver, **kwargs):
        super().__init__()
        self.f = f
        self.solver = solver
        self.kwargs = kwargs
        self.jac_loss = None

    def forward(self, x):
        with torch.no_grad():
            z, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x), **self.kwargs)
        z = self.f(z, x)

        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        if self.training:
            # (its own graph: the hook below still needs f0's after the loss's backward)
            z1 = z.clone().detach().requires_grad_()
            v = torch.from_numpy(rng.randn(*z1.shape).astype(np.float32))
            vJ, = autograd.grad(self.f(z1, x), z1, v, create_graph=True)
            self.jac_loss = vJ.pow(2).sum() / v.numel()

        def backward_hook(grad):
            g, self.backward_res = self.solver(lambda y: autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                                               grad, **self.kwargs)
            return g

        if z.requires_grad:
            z.register_hook(backward_hook)
        return z


X = torch.from_numpy(rng.randn(4, 8, 6, 6).astype(np.float32))
f = ResNetLayer(8, 16)
deq = DEQFixedPoint(f, anderson, tol=1e-4, max_iter=100, m=6)
out = deq(X)
print("out", tuple(out.shape), out.dtype, out.grad_fn is not None)
print("anderson forward: %d iterations, converged %s" % (len(deq.forward_res), deq.forward_res[-1] < 1e-4))
z_fi, res_fi = forward_iteration(lambda z: f(z, X), torch.zeros_like(X))
print("plain iteration: %d iterations, converged %s" % (len(res_fi), res_fi[-1] < 1e-4))
print("same fixed point:", torch.allclose(out, z_fi, atol=1e-2))

target = torch.from_numpy(rng.randn(4, 8, 6, 6).astype(np.float32))
loss = F.mse_loss(out, target)
loss.backward()
print("adjoint: %d iterations, converged %s" % (len(deq.backward_res), deq.backward_res[-1] < 1e-4))
g_implicit = f.conv1.weight.grad.clone()

# reference: backpropagate through 60 unrolled steps of the same map
f.zero_grad()
z = torch.zeros_like(X)
for _ in range(60):
    z = f(z, X)
F.mse_loss(z, target).backward()
rel = (g_implicit - f.conv1.weight.grad).norm() / f.conv1.weight.grad.norm()
print("implicit vs unrolled gradient agree:", rel.item() < 2e-2)
print("jacobian penalty %.3f" % deq.jac_loss.item(), deq.jac_loss.requires_grad)

model = nn.Sequential(nn.Conv2d(3, 8, kernel_size=3, bias=True, padding=1),
                      nn.BatchNorm2d(8),
                      DEQFixedPoint(ResNetLayer(8, 16), anderson, tol=1e-3, max_iter=25, m=5),
                      nn.BatchNorm2d(8),
                      nn.AvgPool2d(4, 4),
                      nn.Flatten(),
                      nn.Linear(8 * 2 * 2, 10))
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.startswith(("0.", "6.")):
            p.copy_(torch.from_numpy(rng.randn(*p.shape).astype(np.float32) * 0.1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
xb = torch.from_numpy(rng.randn(6, 3, 8, 8).astype(np.float32))
yb = torch.tensor([1, 2, 3, 4, 0, 9])
for it in range(4):
    opt.zero_grad()
    yp = model(xb)
    loss = nn.CrossEntropyLoss()(yp, yb) + 0.1 * model[2].jac_loss
    loss.backward()
    opt.step()
    print(it, tuple(yp.shape), "loss %.4f" % loss.item(), "fwd its", len(model[2].forward_res), "bwd its", len(model[2].backward_res))
model.eval()
with torch.no_grad():
    pred = model(xb).argmax(1)
print("eval", pred.shape, pred.dtype, sum(p.numel() for p in model.parameters()))
