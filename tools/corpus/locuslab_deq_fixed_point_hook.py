"""Deep equilibrium layers in the style of the NeurIPS implicit-layers tutorial
(implicit-layers-tutorial.org, locuslab; written for this corpus, not a copy): a tanh
fixed-point layer iterated until its error is below tol, then a DEQFixedPoint module around a
convolutional ResNet-style cell with GroupNorm: forward iteration under no_grad, one
re-engaged step, and a register_hook on the output that solves the adjoint fixed point with
torch.autograd.grad(f0, z0, y, retain_graph=True); gradients are checked against
backpropagation through the unrolled iteration.  Weights are filled deterministically."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def forward_iteration(f, x0, max_iter=50, tol=1e-4):
    f0 = f(x0)
    res = []
    for k in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


class TanhFixedPointLayer(nn.Module):
    def __init__(self, out_features, tol=1e-4, max_iter=50):
        super().__init__()
        self.linear = nn.Linear(out_features, out_features, bias=False)
        self.tol = tol
        self.max_iter = max_iter

    def forward(self, x):
        z = torch.zeros_like(x)
        self.iterations = 0
        while self.iterations < self.max_iter:
            z_next = torch.tanh(self.linear(z) + x)
            self.err = torch.norm(z - z_next)
            z = z_next
            self.iterations += 1
            if self.err < self.tol:
                break
        return z


class DEQFixedPoint(nn.Module):
    def __init__(self, f, solver, **kwargs):
        super().__init__()
        self.f = f
        self.solver = solver
        self.kwargs = kwargs

    def forward(self, x):
        with torch.no_grad():
            z, self.forward_res = self.solver(lambda z: self.f(z, x), torch.zeros_like(x), **self.kwargs)
        z = self.f(z, x)

        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            g, self.backward_res = self.solver(
                lambda y: torch.autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                grad, **self.kwargs)
            return g

        if z.requires_grad:
            z.register_hook(backward_hook)
        return z


class ResNetLayer(nn.Module):
    def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=2):
        super().__init__()
        self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
        self.norm2 = nn.GroupNorm(num_groups, n_channels)
        self.norm3 = nn.GroupNorm(num_groups, n_channels)

    def forward(self, z, x):
        y = self.norm1(F.relu(self.conv1(z)))
        # z damped by one half: the cell is then a contraction and the iterations converge
        return self.norm3(F.relu(0.5 * z + self.norm2(x + self.conv2(y))))


def det_fill_(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            n = p.numel()
            p.copy_(scale * torch.sin(torch.arange(n, dtype=p.dtype) * 0.37 + i).reshape(p.shape))


torch.manual_seed(0)
layer = TanhFixedPointLayer(10)
det_fill_(layer, 0.3)
x = torch.linspace(-1, 1, 40).reshape(4, 10)
z = layer(x)
print(f"Terminated after {layer.iterations} iterations with error {layer.err:.6f}")
print(z.shape, z.dtype)
print(z[0].detach())

f = ResNetLayer(4, 8, kernel_size=3)
det_fill_(f.conv1, 0.05)
det_fill_(f.conv2, 0.05)
deq = DEQFixedPoint(f, forward_iteration, tol=1e-5, max_iter=60)
X = torch.cos(torch.arange(2 * 4 * 6 * 6, dtype=torch.float32)).reshape(2, 4, 6, 6)
probe = torch.sin(torch.arange(2 * 4 * 6 * 6, dtype=torch.float32) * 0.3).reshape(2, 4, 6, 6)
out = deq(X)
print("forward iterations:", len(deq.forward_res))
print("final forward residual below 1e-4:", deq.forward_res[-1] < 1e-4)
loss = (out * probe).mean()
loss.backward()
print("loss %.5f" % loss.item())
print("backward iterations:", len(deq.backward_res), "converged:", deq.backward_res[-1] < 1e-4)
implicit = {n: p.grad.clone() for n, p in f.named_parameters()}
gn = torch.norm(torch.stack([g.norm() for g in implicit.values()]))
print("grad norm %.4f" % gn)
print({n: tuple(g.shape) for n, g in implicit.items()})

# the same gradients by backpropagation through 60 unrolled iterations
f.zero_grad()
z = torch.zeros_like(X)
for _ in range(60):
    z = f(z, X)
(z * probe).mean().backward()
for n, p in f.named_parameters():
    rel = ((implicit[n] - p.grad).norm() / p.grad.norm()).item()
    print(f"{n:14s} implicit vs unrolled relative difference below 1e-2: {rel < 1e-2}")
print(implicit["norm3.bias"])
