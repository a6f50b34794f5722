"""Backtest metrics and portfolio losses in the style of de-lachende-cavalier/findel
(losses/max_drawdown_loss.py: cumprod, cummax drawdowns), hobinkwak/Portfolio-Optimization-Deep-
Learning (model/loss.py: max-Sharpe and equal-risk-parity losses on softmax weights) and
emergix/NeuralNetwork_for_GARCH (a GARCH(1,1) negative log-likelihood fitted by Adam), written
afresh for this corpus.

Exercises: torch.cumprod / torch.cummax / torch.cummin (values and indices) and their gradients,
max over a dim, torch.cov with correction=0 and with aweights, torch.corrcoef, cholesky of a
covariance and correlated returns, softmax weights trained by Adam on a Sharpe ratio, risk
contributions through batched matmul, a pinball (quantile) loss with torch.max, a GARCH
recursion built with a Python list and torch.stack, softplus-constrained parameters.
"""
import numpy as np
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=4)
rng = np.random.default_rng(5)

# --- drawdowns ------------------------------------------------------------------------------------
rets = torch.tensor(rng.normal(0.0005, 0.01, size=(4, 60)), dtype=torch.float32, requires_grad=True)
wealth = torch.cumprod(1 + rets, dim=1)
peak, peak_idx = torch.cummax(wealth, dim=1)
dd = (peak - wealth) / peak
mdd, where = torch.max(dd, dim=1)
print("max drawdown", mdd.detach(), where, peak_idx[:, -1])
mdd.mean().backward()
print("grad nonzero per path", (rets.grad != 0).sum(1), rets.grad.abs().sum().item() > 0)
trough = torch.cummin(wealth.detach(), dim=1)
print("trough", trough.values[:, -1], trough.indices[:, -1])
hist = torch.tensor([100, 102, 105, 103, 108, 105, 110, 105])
print("int cummax", torch.cummax(hist, 0).values, torch.cummax(hist, 0).values.dtype)

# --- covariance, cholesky, correlated returns ----------------------------------------------------
n_assets, n_obs = 5, 120
A = torch.tensor(rng.normal(size=(n_assets, n_assets)), dtype=torch.float32)
cov_true = A @ A.T / n_assets * 1e-4 + torch.eye(n_assets) * 1e-5
L = torch.linalg.cholesky(cov_true)
z = torch.tensor(rng.standard_normal((n_obs, n_assets)), dtype=torch.float32)
R = 0.0004 + z @ L.T
cov = torch.cov(R.T, correction=0)
w_obs = torch.linspace(0.5, 1.5, n_obs)
print("cov", cov.shape, torch.allclose(cov, torch.tensor(np.cov(R.numpy().T, ddof=0), dtype=torch.float32), atol=1e-8))
print("weighted cov diag", torch.cov(R.T, aweights=w_obs).diagonal() * 1e4)
print("corr row", torch.corrcoef(R.T)[0])

# --- softmax portfolio: Sharpe and risk parity ---------------------------------------------------
logits = torch.zeros(n_assets, requires_grad=True)
opt = torch.optim.Adam([logits], lr=0.1)
mu = R.mean(0)
for step in range(25):
    w = torch.softmax(logits, dim=0)
    port = R @ w
    sharpe = port.mean() / port.std() * np.sqrt(252)
    loss = -sharpe
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 8 == 0:
        print("sharpe step", step, round(sharpe.item(), 2))
w = torch.softmax(logits, 0).detach()
print("weights sum", round(w.sum().item(), 6), "argmax", w.argmax().item())


def risk_parity_loss(weights, cov):
    B, Fn = weights.shape
    wcol = weights.unsqueeze(2)
    sigma = torch.sqrt(wcol.transpose(2, 1) @ cov @ wcol)
    mrc = (cov @ wcol) / sigma
    rc = weights * mrc.view(B, Fn)
    return torch.mean(torch.square(rc / sigma.view(B, 1) - 1.0 / Fn))


raw = torch.zeros(2, n_assets, requires_grad=True)
opt = torch.optim.Adam([raw], lr=0.2)
covs = torch.stack([cov, cov_true])
for step in range(30):
    opt.zero_grad()
    l = risk_parity_loss(F.softmax(raw, dim=1), covs)
    l.backward()
    opt.step()
print("risk parity loss", f"{l.item():.3e}" if l.item() > 1e-9 else "tiny", F.softmax(raw, 1).detach())


# --- pinball loss ----------------------------------------------------------------------------------
def pinball(pred, y, q):
    e = y - pred
    return torch.max((q - 1) * e, q * e).mean()


y = R[:, 0] * 100
qs = torch.tensor([0.05, 0.5, 0.95])
est = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([est], lr=0.05)
for step in range(200):
    opt.zero_grad()
    loss = sum(pinball(est[i], y, qs[i]) for i in range(3))
    loss.backward()
    opt.step()
print("pinball quantiles", est.detach(), torch.quantile(y, qs))

# --- GARCH(1,1) by Adam, list + stack ---------------------------------------------------------------
eps = torch.tensor(rng.standard_normal(150) * 0.8, dtype=torch.float64)
raw_p = torch.nn.Parameter(torch.tensor([-2.0, -2.0, 1.0], dtype=torch.float64))
opt = torch.optim.Adam([raw_p], lr=0.05)


def garch_nll(raw_p, x):
    omega, alpha = F.softplus(raw_p[0]), torch.sigmoid(raw_p[1]) * 0.5
    beta = torch.sigmoid(raw_p[2]) * (1 - alpha)
    s2 = [x.var()]
    for t in range(1, len(x)):
        s2.append(omega + alpha * x[t - 1] ** 2 + beta * s2[-1])
    s2 = torch.stack(s2)
    return 0.5 * (torch.log(s2) + x ** 2 / s2).sum(), s2


for it in range(15):
    opt.zero_grad()
    nll, s2 = garch_nll(raw_p, eps)
    nll.backward()
    opt.step()
    if it % 5 == 0:
        print("garch", it, round(nll.item(), 6), s2.grad_fn.name().split("::")[-1])
print("garch params", raw_p.data)
