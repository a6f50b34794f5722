# Gumbel-Sinkhorn (Mena et al. 2018) style log-space Sinkhorn
import torch
import torch.nn.functional as F

def log_sinkhorn_norm(log_alpha, n_iters=20):
    for _ in range(n_iters):
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-1, keepdim=True)
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-2, keepdim=True)
    return log_alpha.exp()

def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)

def gumbel_sinkhorn(log_alpha, tau=1.0, n_iter=20, noise=True):
    if noise:
        log_alpha = log_alpha + sample_gumbel(log_alpha.shape)
    return log_sinkhorn_norm(log_alpha / tau, n_iter)

torch.manual_seed(1)
n = 4
log_alpha = (torch.sin(torch.arange(n * n, dtype=torch.float64)).reshape(1, n, n) * 4).requires_grad_(True)
P = gumbel_sinkhorn(log_alpha, tau=0.5, noise=False)
print(P)
print(P.sum(-1), P.sum(-2))
row_ind = P.argmax(-1)
print(row_ind, row_ind.dtype)
loss = -(P * torch.eye(n, dtype=torch.float64)).sum()
loss.backward()
print(log_alpha.grad)
noisy = gumbel_sinkhorn(log_alpha.detach().repeat(3, 1, 1), tau=1.0)
print(noisy.shape, noisy.dtype)
print(torch.allclose(noisy.sum(-2), torch.ones(3, n, dtype=torch.float64), atol=1e-6))
g = sample_gumbel((2, 3))
print(g.shape, torch.isfinite(g).all())
# matching via hungarian-ish greedy
P2 = log_sinkhorn_norm(torch.randn(2, 5, 5), 50)
print(P2.sum(dim=(1, 2)))
