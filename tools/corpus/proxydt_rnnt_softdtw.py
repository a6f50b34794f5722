import math
import numpy as np
import torch
import torch.nn.functional as F

# inputs drawn with NumPy so that what is printed does not depend on torch's random stream
rng = np.random.default_rng(0)


def randn(*shape, requires_grad=False):
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if requires_grad else t


def randint(low, high, size):
    return torch.from_numpy(rng.integers(low, high, size))


def rnnt_loss(logits, targets, logit_lengths, target_lengths, blank=0):
    # logits: (B, T, U+1, V)
    log_probs = logits.log_softmax(dim=-1)
    B, T, U1, V = log_probs.shape
    blank_lp = log_probs[..., blank]                       # (B, T, U+1)
    tgt = targets.unsqueeze(1).unsqueeze(-1).expand(B, T, U1 - 1, 1)
    emit_lp = torch.gather(log_probs[:, :, :-1, :], 3, tgt).squeeze(-1)  # (B, T, U)
    alpha = torch.full((B, T, U1), float("-inf"))
    alphas = [[None] * U1 for _ in range(T)]
    for t in range(T):
        for u in range(U1):
            if t == 0 and u == 0:
                a = torch.zeros(B)
            else:
                cands = []
                if t > 0:
                    cands.append(alphas[t - 1][u] + blank_lp[:, t - 1, u])
                if u > 0:
                    cands.append(alphas[t][u - 1] + emit_lp[:, t, u - 1])
                a = torch.logsumexp(torch.stack(cands), dim=0)
            alphas[t][u] = a
    b = torch.arange(B)
    final = torch.stack([torch.stack([alphas[t][u] for u in range(U1)], 1) for t in range(T)], 1)
    ll = final[b, logit_lengths - 1, target_lengths] + blank_lp[b, logit_lengths - 1, target_lengths]
    return -ll

B, T, U, V = 2, 6, 3, 5
logits = randn(B, T, U + 1, V, requires_grad=True)
targets = randint(1, V, (B, U))
logit_lengths = torch.tensor([6, 5], dtype=torch.int32)
target_lengths = torch.tensor([3, 2], dtype=torch.int32)
loss = rnnt_loss(logits, targets, logit_lengths.long(), target_lengths.long())
print(loss)
loss.mean().backward()
print(logits.grad.shape, logits.grad.sum(dim=-1).abs().max() < 1e-5)
print(logits.grad[0, 0, 0])

# vectorised along anti-diagonals with logaddexp
def rnnt_diag(logits, targets):
    lp = logits.log_softmax(-1)
    B, T, U1, V = lp.shape
    blank_lp = lp[..., 0]
    emit = lp[:, :, :-1].gather(3, targets[:, None, :, None].expand(B, T, U1 - 1, 1)).squeeze(3)
    alpha = lp.new_full((B, T, U1), -float("inf"))
    alpha = alpha.clone()
    rows = []
    prev = None
    for t in range(T):
        row = []
        for u in range(U1):
            if t == 0 and u == 0:
                row.append(lp.new_zeros(B))
                continue
            from_t = prev[u] + blank_lp[:, t - 1, u] if t > 0 else torch.full((B,), -float("inf"))
            from_u = row[u - 1] + emit[:, t, u - 1] if u > 0 else torch.full((B,), -float("inf"))
            row.append(torch.logaddexp(from_t, from_u))
        prev = row
        rows.append(row)
    return -(prev[-1] + blank_lp[:, -1, -1])

logits2 = randn(2, 4, 3, 4).double().requires_grad_()
tg2 = torch.tensor([[1, 2], [3, 3]])
l2 = rnnt_diag(logits2, tg2)
print(l2, l2.dtype)
print(torch.autograd.gradcheck(lambda x: rnnt_diag(x, tg2), (logits2,)))
g, = torch.autograd.grad(l2.sum(), logits2)
print(g.abs().sum())


def dtw(x, y):
    D = torch.cdist(x, y)   # (n, m)
    n, m = D.shape
    R = torch.full((n + 1, m + 1), float("inf"))
    R[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R[i, j] = D[i - 1, j - 1] + torch.min(torch.stack([R[i - 1, j], R[i, j - 1], R[i - 1, j - 1]]))
    # backtrack
    i, j = n, m
    path = []
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        k = torch.argmin(torch.stack([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]])).item()
        if k == 0:
            i, j = i - 1, j - 1
        elif k == 1:
            i -= 1
        else:
            j -= 1
    return R[n, m], path[::-1]

x = randn(8, 3)
y = randn(10, 3)
cost, path = dtw(x, y)
print(round(cost.item(), 4), len(path), path[:4])

def soft_min(a, b, c, gamma):
    s = torch.stack([a, b, c], dim=-1)
    return -gamma * torch.logsumexp(-s / gamma, dim=-1)

def soft_dtw(x, y, gamma=0.1):
    # batched x: (B, N, D), y: (B, M, D)
    D = ((x.unsqueeze(2) - y.unsqueeze(1)) ** 2).sum(-1)
    B, N, M = D.shape
    R = [[None] * (M + 1) for _ in range(N + 1)]
    inf = torch.full((B,), float("inf"), dtype=x.dtype)
    for i in range(N + 1):
        for j in range(M + 1):
            R[i][j] = inf
    R[0][0] = torch.zeros(B, dtype=x.dtype)
    for i in range(1, N + 1):
        for j in range(1, M + 1):
            R[i][j] = D[:, i - 1, j - 1] + soft_min(R[i - 1][j - 1], R[i - 1][j], R[i][j - 1], gamma)
    return R[N][M]

xb = randn(2, 6, 2).double().requires_grad_()
yb = randn(2, 7, 2).double()
sd = soft_dtw(xb, yb, gamma=0.5)
print(sd)
sd.sum().backward()
print(xb.grad.norm(), xb.grad.shape)
print(torch.autograd.gradcheck(lambda a: soft_dtw(a, yb, 1.0), (xb,)))
# anti-diagonal vectorised soft-dtw with tensor R
def soft_dtw_mat(D, gamma):
    N, M = D.shape
    R = torch.ones(N + 2, M + 2, dtype=D.dtype) * float("inf")
    R[0, 0] = 0.0
    for i in range(1, N + 1):
        for j in range(1, M + 1):
            r0 = -R[i - 1, j - 1] / gamma
            r1 = -R[i - 1, j] / gamma
            r2 = -R[i, j - 1] / gamma
            rmax = max(max(r0, r1), r2)
            rsum = torch.exp(r0 - rmax) + torch.exp(r1 - rmax) + torch.exp(r2 - rmax)
            softmin = -gamma * (torch.log(rsum) + rmax)
            R[i, j] = D[i - 1, j - 1] + softmin
    return R[N, M]
D = torch.cdist(xb[0].detach(), yb[0]).requires_grad_()
r = soft_dtw_mat(D, 0.1)
r.backward()
print(r, D.grad.sum(0))
