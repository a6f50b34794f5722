"""A hand-written adaptive ODE solver and adjoint, in the style of rtqichen/torchdiffeq
(_impl/misc.py initial-step selection and step-size control, dopri5 tableau, adjoint.py's
augmented backward dynamics), written anew without the library.

Exercises: Dormand-Prince 5(4) with an error RMS norm, torch.clamp / torch.min / torch.max
step control in a while loop on tensor comparisons, torch.nextafter, torch.finfo, a custom
torch.autograd.Function whose backward integrates the adjoint state backwards with
torch.autograd.grad(grad_outputs=..., allow_unused=True), its gradients checked against
backprop through the solver, and the vmap refusals of
tensor-valued control flow and float() inside a batched step rule.
"""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(3)
torch.set_printoptions(precision=6)
DT = torch.float64

C = [0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0]
A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
     [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
     [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
     [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
B_HIGH = torch.tensor([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0], dtype=DT)
B_LOW = torch.tensor([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40],
                     dtype=DT)


def rms(x):
    return x.pow(2).mean().sqrt()


def first_step(f, t0, y0, rtol, atol):
    with torch.no_grad():
        f0 = f(t0, y0)
        scale = atol + y0.abs() * rtol
        d0, d1 = rms(y0 / scale), rms(f0 / scale)
        h0 = torch.tensor(1e-6, dtype=DT) if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        f1 = f(t0 + h0, y0 + h0 * f0)
        d2 = rms((f1 - f0) / scale) / h0
        h1 = (0.01 / torch.max(d1, d2)) ** (1.0 / 5)
        return torch.min(100 * h0, h1)


def dopri5(f, y0, t0, t1, rtol=1e-7, atol=1e-9):
    t, y = torch.as_tensor(t0, dtype=DT), y0
    t1 = torch.as_tensor(t1, dtype=DT)
    h = first_step(f, t, y, rtol, atol)
    accepted = rejected = 0
    while t < t1:
        h = torch.clamp(h, max=t1 - t)
        ks = [f(t, y)]
        for i in range(1, 7):
            ks.append(f(t + C[i] * h, y + h * sum(a * k for a, k in zip(A[i], ks))))
        stack = torch.stack(ks)
        high = y + h * torch.tensordot(B_HIGH, stack, dims=1)
        low = y + h * torch.tensordot(B_LOW, stack, dims=1)
        err = rms((high - low) / (atol + rtol * torch.max(y.abs(), high.abs())))
        if err <= 1.0:
            t, y, accepted = t + h, high, accepted + 1
        else:
            rejected += 1
        factor = torch.clamp(0.9 * err.clamp(min=1e-10) ** -0.2, 0.2, 10.0)
        h = h * factor.detach()
    return y, accepted, rejected


class Field(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(2, 16)
        self.lin2 = nn.Linear(16, 2)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape))))
        self.double()

    def forward(self, t, y):
        return self.lin2(torch.tanh(self.lin1(y))) - 0.1 * y * torch.cos(t)


class AdjointSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y0, t1, field, *params):
        with torch.no_grad():
            y1, _, _ = dopri5(field, y0, 0.0, t1)
        ctx.field, ctx.t1 = field, t1
        ctx.save_for_backward(y1, *params)
        return y1

    @staticmethod
    def backward(ctx, grad_y1):
        y1, *params = ctx.saved_tensors
        field, n = ctx.field, y1.numel()
        sizes = [p.numel() for p in params]

        def augmented(t, state):
            y, a = state[:n].view_as(y1), state[n:2 * n].view_as(y1)
            with torch.enable_grad():
                y = y.detach().requires_grad_(True)
                dy = field(t, y)
                vjps = torch.autograd.grad(dy, (y,) + tuple(params), grad_outputs=a,
                                           allow_unused=True, retain_graph=False)
            flat = [torch.zeros(s, dtype=DT) if v is None else v.reshape(-1)
                    for v, s in zip(vjps, [n] + sizes)]
            # d/ds of (y, a, int a.df/dtheta) with s = t1 - t running backwards
            return torch.cat([-dy.reshape(-1)] + flat)

        state = torch.cat([y1.reshape(-1), grad_y1.reshape(-1), torch.zeros(sum(sizes), dtype=DT)])
        back, _, _ = dopri5(lambda s, z: augmented(ctx.t1 - s, z), state, 0.0, ctx.t1)
        grads = back[2 * n:].split(sizes)
        return (back[n:2 * n].view_as(y1), None, None) + tuple(g.view_as(p) for g, p in zip(grads, params))


field = Field()
y0 = torch.tensor([[1.0, -0.5], [0.2, 0.8]], dtype=DT, requires_grad=True)
eps = torch.finfo(DT).eps
print("eps", eps, "nextafter", (torch.nextafter(torch.tensor(1.0, dtype=DT), torch.tensor(2.0, dtype=DT)) - 1).item() == eps)
print("h0", f"{first_step(field, torch.tensor(0.0, dtype=DT), y0.detach(), 1e-7, 1e-9).item():.8f}")

y1, acc, rej = dopri5(field, y0, 0.0, 1.5)
print("steps", acc, rej, [round(v, 7) for v in y1.flatten().tolist()])
loss = (y1 ** 2).sum()
direct = torch.autograd.grad(loss, [y0] + list(field.parameters()))

y1_adj = AdjointSolve.apply(y0, 1.5, field, *field.parameters())
loss_adj = (y1_adj ** 2).sum()
adjoint = torch.autograd.grad(loss_adj, [y0] + list(field.parameters()))
print("adjoint grad_fn", type(y1_adj.grad_fn).__name__)
for name, d, a in zip(["y0"] + [n for n, _ in field.named_parameters()], direct, adjoint):
    print(f"{name:12s} {tuple(a.shape)} max|adjoint-direct| < 1e-5: {bool((a - d).abs().max() < 1e-5)}")

opt = torch.optim.SGD(field.parameters(), lr=0.05)
for step in range(3):
    opt.zero_grad()
    out = AdjointSolve.apply(y0.detach(), 1.0, field, *field.parameters())
    l = (out - torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=DT)).pow(2).mean()
    l.backward()
    opt.step()
    print("train", step, f"{l.item():.8f}")

# A step rule that branches on a tensor cannot run under vmap.
def step_rule(err):
    return err * 0.5 if err > 1 else err * 2


try:
    torch.func.vmap(step_rule)(torch.tensor([0.5, 2.0], dtype=DT))
except RuntimeError as e:
    print("vmap RuntimeError:", str(e)[:64])
try:
    torch.func.vmap(lambda e: torch.full((2,), float(e)))(torch.tensor([0.5, 2.0], dtype=DT))
except RuntimeError as e:
    print("vmap RuntimeError:", str(e)[:64])
print("branch-free", torch.func.vmap(lambda e: torch.where(e > 1, e * 0.5, e * 2))(torch.tensor([0.5, 2.0], dtype=DT)))
