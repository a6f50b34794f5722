"""Maximum-likelihood fits with torch.optim.LBFGS and closures: a Gamma fit on log parameters
(strong Wolfe), a right-censored Weibull survival fit, a Student-t regression without line
search, standard errors from autograd.functional.hessian, a double-backward Hessian and
torch.func.hessian through a Normal log_prob, LBFGS's repr, state and refusals.  float64
throughout; no randomness."""
import torch
import torch.nn as nn
from torch.distributions import Normal, Gamma, Weibull, StudentT

def _lcg(n, seed):
    """n pseudo-random values in [-1, 1) from a fixed integer recurrence (the same under any
    library and any seed)."""
    out, s = [], (seed * 2654435761 + 12345) % 2**32
    for _ in range(n):
        s = (1103515245 * s + 12345) % 2**31
        out.append((s / 2**31) * 2 - 1)
    return out


def det_init(model, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(_lcg(p.numel(), i + 100)).mul(scale).view_as(p))


def det_randn(*shape, seed=0.):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor(_lcg(n, int(seed * 7) + 1)).mul(1.7).view(*shape)

def show(label, f):
    try:
        r = f()
        print(label, r)
    except Exception as e:
        print(label, "EXC", type(e).__name__, str(e)[:200])
torch.set_default_dtype(torch.float64)
data = torch.tensor([2.1, 3.4, 1.9, 5.6, 2.8, 4.4, 3.3, 2.2, 6.1, 3.9, 2.5, 4.0])
# Gamma MLE with LBFGS on unconstrained params
log_a = torch.tensor(0.0, requires_grad=True)
log_b = torch.tensor(0.0, requires_grad=True)
opt = torch.optim.LBFGS([log_a, log_b], lr=1.0, max_iter=100, tolerance_grad=1e-9, tolerance_change=1e-12, history_size=10, line_search_fn="strong_wolfe")
def closure():
    opt.zero_grad()
    nll = -Gamma(log_a.exp(), log_b.exp()).log_prob(data).sum()
    nll.backward()
    return nll
loss = opt.step(closure)
print("gamma mle", round(log_a.exp().item(), 4), round(log_b.exp().item(), 4), round(loss.item(), 5))
print(opt)
st = opt.state_dict()
print(sorted(st['state'][0].keys()) if 0 in st['state'] else st['state'].keys())
print(st['param_groups'])
# Weibull survival fit with censoring
t = torch.tensor([5., 3., 3., 8., 2., 9., 5., 12., 7., 3., 1., 10.])
e = torch.tensor([1., 0., 1., 1., 1., 0., 1., 0., 1., 1., 0., 1.])
params = nn.Parameter(torch.zeros(2))
opt = torch.optim.LBFGS([params], max_iter=200, line_search_fn="strong_wolfe")
def closure2():
    opt.zero_grad()
    k, lam = params.exp()
    w = Weibull(lam, k)
    log_s = -(t / lam) ** k
    ll = e * w.log_prob(t) + (1 - e) * log_s
    loss = -ll.sum()
    loss.backward()
    return loss
for _ in range(5):
    opt.step(closure2)
print("weibull", [round(v, 4) for v in params.exp().tolist()], round(closure2().item(), 5))
print(Weibull(torch.tensor(2.), torch.tensor(1.5)))
print(Weibull(2., 1.5).mean, Weibull(2., 1.5).variance, Weibull(2., 1.5).entropy())
print(Weibull(2., 1.5).cdf(torch.tensor(1.)) if True else None)
# Student-t regression via LBFGS without line search
X = torch.stack([torch.ones(12), torch.arange(12.)], 1)
y = 0.5 + 0.3 * torch.arange(12.) + torch.tensor([0.1, -0.2, 0.05, 3.0, -0.1, 0.2, 0.0, -0.15, 0.1, -2.5, 0.05, 0.02])
beta = torch.zeros(2, requires_grad=True)
log_s = torch.zeros((), requires_grad=True)
opt = torch.optim.LBFGS([beta, log_s], lr=0.5, max_iter=20)
losses = []
for i in range(10):
    def closure3():
        opt.zero_grad()
        l = -StudentT(3., X @ beta, log_s.exp()).log_prob(y).mean()
        l.backward()
        return l
    losses.append(opt.step(closure3).item())
print("studentt", [round(v, 3) for v in beta.tolist()], round(losses[-1], 5))
# Fisher information / standard errors via hessian
from torch.autograd.functional import hessian, jacobian
def nll_fn(b):
    return -Normal(X @ b, 1.0).log_prob(y).sum()
H = hessian(nll_fn, beta.detach())
print(H)
se = torch.sqrt(torch.diag(torch.linalg.inv(H)))
print(se)
print(jacobian(lambda b: X @ b, beta.detach()).shape)
g = torch.autograd.grad(nll_fn(beta), beta, create_graph=True)[0]
H2 = torch.stack([torch.autograd.grad(g[i], beta, retain_graph=True)[0] for i in range(2)])
print(torch.allclose(H, H2))
print(torch.func.hessian(nll_fn)(beta.detach()))
show("lbfgs no closure", lambda: opt.step())
show("lbfgs two groups", lambda: torch.optim.LBFGS([{'params': [beta]}, {'params': [log_s]}]))
torch.set_default_dtype(torch.float32)
print(torch.tensor([1.]).dtype)
