# Total-variation denoising by the Chambolle-Pock primal-dual algorithm: forward-difference
# gradient, its adjoint (the negative divergence), the dual projection onto the l2 ball.
import torch

def nabla(u):
    gx = torch.zeros_like(u)
    gy = torch.zeros_like(u)
    gx[:, :-1] = u[:, 1:] - u[:, :-1]
    gy[:-1, :] = u[1:, :] - u[:-1, :]
    return torch.stack([gx, gy], dim=0)

def nablaT(p):
    px, py = p[0], p[1]
    dx = torch.zeros_like(px)
    dy = torch.zeros_like(py)
    dx[:, 0] = px[:, 0]
    dx[:, 1:-1] = px[:, 1:-1] - px[:, :-2]
    dx[:, -1] = -px[:, -2]
    dy[0, :] = py[0, :]
    dy[1:-1, :] = py[1:-1, :] - py[:-2, :]
    dy[-1, :] = -py[-2, :]
    return -(dx + dy)

def chambolle_pock(f, lam, n_iter=100):
    tau = sigma = 1.0 / (8 ** 0.5)
    theta = 1.0
    x = f.clone()
    xbar = x.clone()
    y = torch.zeros((2,) + f.shape)
    for it in range(n_iter):
        y = y + sigma * nabla(xbar)
        norm = torch.clamp(torch.sqrt((y ** 2).sum(0, keepdim=True)) / lam, min=1.0)
        y = y / norm
        x_old = x
        x = (x - tau * nablaT(y) + tau * f) / (1 + tau)
        xbar = x + theta * (x - x_old)
        if it % 25 == 0:
            primal = 0.5 * ((x - f) ** 2).sum() + lam * torch.linalg.vector_norm(nabla(x), dim=0).sum()
            print(it, round(primal.item(), 5))
    return x

n = 12
i = torch.arange(n, dtype=torch.float32)
f = (i.view(-1, 1) > 5).float() * (i.view(1, -1) > 3).float() + 0.1 * torch.cos(i.view(-1, 1) * 2.1 + i.view(1, -1) * 1.7)
u = torch.randn(n, n)
p = torch.randn(2, n, n)
print("adjoint test:", torch.allclose((nabla(u) * p).sum(), (u * nablaT(p)).sum(), atol=1e-4))
x = chambolle_pock(f, 0.2)
print(x.shape, x.dtype, round(x.mean().item(), 5))
print(torch.linalg.vector_norm(nabla(x), dim=0).shape)
print(torch.linalg.vector_norm(torch.tensor([[3., 4.], [6., 8.]]), ord=1, dim=1))
print(torch.linalg.vector_norm(torch.tensor([3., -4.]), ord=float('inf')))
print(torch.linalg.vector_norm(torch.tensor([3., -4.]), ord=0))
