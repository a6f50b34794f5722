"""Burgers PINN (after Raissi et al.'s physics-informed networks) with torch.func: u_x, u_xx by
vmap(jacrev), the Laplacian by vmap(hessian), the Burgers residual and the gradient of the physics
loss by grad, and the same via autograd.grad(create_graph=True)."""
import torch
import torch.nn as nn
from torch.func import functional_call, vmap, jacrev, jacfwd, hessian, grad

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 20), nn.Tanh(), nn.Linear(20, 20), nn.Tanh(), nn.Linear(20, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape).mul(2.3 + i).cos() * 0.5)
params = {k: v.detach() for k, v in model.named_parameters()}

def u(params, xt):  # xt: (2,)
    return functional_call(model, params, (xt.unsqueeze(0),)).squeeze()

xt = torch.stack(torch.meshgrid(torch.linspace(-1, 1, 5), torch.linspace(0, 1, 4), indexing='ij'), -1).reshape(-1, 2)
print(xt.shape)
u_val = vmap(u, in_dims=(None, 0))(params, xt)
du = vmap(jacrev(u, argnums=1), in_dims=(None, 0))(params, xt)
print(u_val.shape, du.shape)
u_x, u_t = du[:, 0], du[:, 1]
H = vmap(hessian(u, argnums=1), in_dims=(None, 0))(params, xt)
print(H.shape)
u_xx = H[:, 0, 0]
nu = 0.01 / torch.pi
residual = u_t + u_val * u_x - nu * u_xx
print('residual', residual[:4])
print('mse', residual.pow(2).mean())

# autograd.grad version
xg = xt.clone().requires_grad_(True)
out = model(xg).squeeze(-1)
d = torch.autograd.grad(out, xg, torch.ones_like(out), create_graph=True)[0]
dxx = torch.autograd.grad(d[:, 0], xg, torch.ones_like(d[:, 0]), create_graph=True)[0][:, 0]
print(torch.allclose(d, du, atol=1e-6), torch.allclose(dxx, u_xx, atol=1e-5))
# Laplacian by trace of the hessian, and by jacfwd(jacrev)
lap = vmap(lambda z: torch.trace(hessian(u, argnums=1)(params, z)))(xt)
lap2 = vmap(lambda z: jacfwd(jacrev(u, argnums=1), argnums=1)(params, z).diagonal().sum())(xt)
print(torch.allclose(lap, lap2, atol=1e-6), lap[:3])
# gradient of the physics loss w.r.t. params (training step)
def physics_loss(params):
    uv = vmap(u, in_dims=(None, 0))(params, xt)
    du = vmap(jacrev(u, argnums=1), in_dims=(None, 0))(params, xt)
    uxx = vmap(hessian(u, argnums=1), in_dims=(None, 0))(params, xt)[:, 0, 0]
    r = du[:, 1] + uv * du[:, 0] - nu * uxx
    return r.pow(2).mean()
g = grad(physics_loss)(params)
print({k: tuple(v.shape) for k, v in g.items()})
print(round(physics_loss(params).item(), 6), g['4.bias'])
# same gradient through autograd
model.zero_grad()
xg = xt.clone().requires_grad_(True)
out = model(xg).squeeze(-1)
d = torch.autograd.grad(out, xg, torch.ones_like(out), create_graph=True)[0]
dxx = torch.autograd.grad(d[:, 0], xg, torch.ones_like(d[:, 0]), create_graph=True)[0][:, 0]
loss = (d[:, 1] + out * d[:, 0] - nu * dxx).pow(2).mean()
loss.backward()
print(torch.allclose(model[4].bias.grad, g['4.bias'], atol=1e-6), torch.allclose(model[0].weight.grad, g['0.weight'], atol=1e-5))
