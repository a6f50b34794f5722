"""A physics-informed network for the damped oscillator u'' + 0.4 u' + 4 u = 0, u(0) = 1,
u'(0) = 0 on [0, 2], written for this corpus after hjlee21/PINN_STUDY's PINN_New.py (an ODE
PINN fitted with torch.optim.LBFGS and a closure).

Exercises: x.requires_grad = True on a linspace column, torch.autograd.grad of u.sum() and of
u with grad_outputs=ones_like (create_graph=True) for u_t and u_tt, the residual and initial
condition losses, a sinc/tanh/softplus feature layer (second derivatives through each), Adam
warm-up then LBFGS with line_search_fn="strong_wolfe" (the closure returns the loss; the
optimizer's state is read: func_evals, n_iter), torch.autograd.functional.hessian of the network
at one point, and a float32 copy of the model (state_dict into .float()) agreeing with it;
torch.set_default_dtype(torch.float64) for the whole run, as PINN codes often do.
Weights come from a sine pattern, so the run is the same under every library.
"""
import math

import torch
import torch.nn as nn

# PINN codes often run in float64: second derivatives through sinc cancel badly in float32
torch.set_default_dtype(torch.float64)

class Net(nn.Module):
    def __init__(self, width=12):
        super().__init__()
        self.inp = nn.Linear(1, width)
        self.hid = nn.Linear(width, width)
        self.out = nn.Linear(width, 1)

    def forward(self, t):
        h = self.inp(t)
        # three smooth activations: each one's second derivative enters u_tt
        h = torch.cat([torch.tanh(h[:, :4]), torch.sinc(h[:, 4:8]), nn.functional.softplus(h[:, 8:], beta=2)], 1)
        h = torch.tanh(self.hid(h))
        return self.out(h)


def fill(model, scale=0.6):
    with torch.no_grad():
        for k, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_(scale * torch.sin(torch.arange(n, dtype=p.dtype) * 0.917 + 0.5 * k + 0.3).reshape(p.shape))


def derivatives(model, t):
    u = model(t)
    u_t = torch.autograd.grad(u.sum(), t, create_graph=True)[0]
    u_tt = torch.autograd.grad(u_t, t, grad_outputs=torch.ones_like(u_t), create_graph=True)[0]
    return u, u_t, u_tt


def loss_terms(model, t):
    u, u_t, u_tt = derivatives(model, t)
    residual = u_tt + 0.4 * u_t + 4.0 * u
    ic = (u[0, 0] - 1.0) ** 2 + u_t[0, 0] ** 2
    return torch.mean(residual ** 2), ic


model = Net()
fill(model)
t = torch.linspace(0.0, 2.0, 41)[:, None]
t.requires_grad = True
print("collocation", t.shape, t.requires_grad, t.is_leaf)

u, u_t, u_tt = derivatives(model, t)
print("u[:3]", u[:3].detach().flatten())
print("u_t[:3]", u_t[:3].detach().flatten())
print("u_tt[:3]", u_tt[:3].detach().flatten())
print("grad_fn", type(u_tt.grad_fn).__name__ if u_tt.grad_fn is not None else None)

adam = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(15):
    adam.zero_grad()
    pde, ic = loss_terms(model, t)
    loss = pde + 10 * ic
    loss.backward()
    adam.step()
    if step % 5 == 0:
        print(f"adam {step:2d} pde={pde.item():.6f} ic={ic.item():.6f}")

lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=8, history_size=10,
                          line_search_fn="strong_wolfe", tolerance_grad=1e-9, tolerance_change=1e-12)


def closure():
    lbfgs.zero_grad()
    pde, ic = loss_terms(model, t)
    loss = pde + 10 * ic
    loss.backward()
    return loss


for outer in range(3):
    loss = lbfgs.step(closure)
    print(f"lbfgs {outer} loss={loss.item():.6f}")
state = lbfgs.state[next(iter(model.parameters()))]
print("lbfgs state", sorted(k for k in state.keys()), state["n_iter"], state["func_evals"])

with torch.no_grad():
    grid = torch.tensor([[0.0], [0.5], [1.0], [2.0]])
    pred = model(grid).flatten()
exact = torch.exp(-0.2 * grid.flatten()) * (torch.cos(math.sqrt(3.96) * grid.flatten())
                                             + 0.2 / math.sqrt(3.96) * torch.sin(math.sqrt(3.96) * grid.flatten()))
print("pred", pred)
print("exact", exact)

H = torch.autograd.functional.hessian(lambda z: model(z.reshape(1, 1)).sum(), torch.tensor([0.7]))
print("hessian", H.shape, H)

narrow = Net().float()
narrow.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
t32 = t.detach().float().requires_grad_(True)
pde32, ic32 = loss_terms(narrow, t32)
pde64, ic64 = loss_terms(model, t)
print("float32 vs float64", pde32.dtype, pde64.dtype, abs(pde64.item() - pde32.item()) < 1e-2 * max(1.0, pde64.item()))
