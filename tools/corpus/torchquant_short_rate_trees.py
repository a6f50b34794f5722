"""Short-rate paths, binomial trees and Longstaff-Schwartz in the style of jialuechen/torchquant
(torchquantlib: black_karasinski.py / vasicek.py fill a (paths, steps) tensor column by column
from parameters that require grad; binomial_tree.py writes scalars into a price tree; var.py and
american_option.py), written afresh for this corpus.

Exercises: recorded column writes x[:, t] = f(x[:, t - 1]) on a tensor that requires grad over
many steps (CopySlices chains) and their backward to the model parameters, clamp of a parameter,
scalar writes into a 2-D tree and level-wise backward induction with torch.maximum, a historical VaR / ES by
sort and indexing, torch.quantile, a Longstaff-Schwartz regression through torch.linalg.lstsq on a
well-conditioned basis (float64), boolean-mask reads and writes, torch.where, nn.Parameter dicts
with .data.clamp_, and Adam calibrating the mean-reversion speed to a target mean.
"""
import numpy as np
import torch

torch.set_printoptions(precision=5)
rng = np.random.default_rng(11)

# --- Vasicek / Black-Karasinski style Euler paths, parameters that require grad -----------------
N, steps, T = 64, 300, 3.0
noise = torch.tensor(rng.standard_normal((N, steps)), dtype=torch.float32)
params = {"a": torch.nn.Parameter(torch.tensor(0.8)), "theta": torch.nn.Parameter(torch.tensor(0.04)),
          "sigma": torch.nn.Parameter(torch.tensor(0.01)), "r0": torch.nn.Parameter(torch.tensor(0.02))}


def vasicek_paths(p):
    dt = torch.tensor(T / steps)
    a = torch.clamp(p["a"], min=1e-6)
    r = torch.zeros(N, steps)
    r[:, 0] = p["r0"]
    for t in range(1, steps):
        prev = r[:, t - 1]
        r[:, t] = prev + a * (p["theta"] - prev) * dt + p["sigma"] * torch.sqrt(dt) * noise[:, t]
    return r


def bk_paths(p):
    dt = T / steps
    log_r = torch.zeros(N, steps)
    log_r[:, 0] = torch.log(p["r0"])
    for t in range(1, steps):
        prev = log_r[:, t - 1]
        log_r[:, t] = prev + (torch.log(p["theta"]) - prev) * p["a"] * dt + 0.2 * np.sqrt(dt) * noise[:, t]
    return torch.exp(log_r)


r = vasicek_paths(params)
print("vasicek", r.shape, r.grad_fn.name().split("::")[-1], round(r[:, -1].mean().item(), 5))
r[:, -1].mean().backward()
print({k: round(v.grad.item(), 4) for k, v in params.items()})
for v in params.values():
    v.grad = None
rb = bk_paths(params)
print("black-karasinski", rb.dtype, bool((rb > 0).all()), round(rb[:, -1].mean().item(), 5))
discount = torch.exp(-rb.mean(1) * T).mean()
discount.backward()
print("d(bond)/d(a, theta, r0)", [round(params[k].grad.item(), 5) for k in ("a", "theta", "r0")])

# calibrate the mean-reversion speed so the mean 3y rate hits a target
for v in params.values():
    v.grad = None
opt = torch.optim.Adam([params["a"]], lr=0.05)
for it in range(6):
    opt.zero_grad()
    loss = (vasicek_paths(params)[:, -1].mean() - 0.035) ** 2 * 1e4
    loss.backward()
    opt.step()
    params["a"].data.clamp_(min=1e-3)
    print("calib", it, round(loss.item(), 5), round(params["a"].item(), 4))


# --- binomial tree (scalar writes into a tree, backward induction) --------------------------------
def binomial(kind, style, S, K, T, vol, rate, n):
    dt = T / n
    u = torch.exp(vol * torch.sqrt(dt))
    d = 1 / u
    p = (torch.exp(rate * dt) - d) / (u - d)
    tree = torch.zeros((n + 1, n + 1))
    for i in range(n + 1):
        for j in range(i + 1):
            tree[j, i] = S * u ** (i - j) * d ** j
    pay = (tree[:, n] - K) if kind == "call" else (K - tree[:, n])
    value = torch.maximum(pay, torch.tensor(0.0))
    for i in range(n - 1, -1, -1):
        # (one level at a time: a write value[j] = f(value[j]) would overwrite what the
        # backward of f reads)
        value = (p * value[: i + 1] + (1 - p) * value[1 : i + 2]) * torch.exp(-rate * dt)
        if style == "american":
            ex = (tree[: i + 1, i] - K) if kind == "call" else (K - tree[: i + 1, i])
            value = torch.maximum(value, ex)
    return value[0]


S = torch.tensor(100.0, requires_grad=True)
args = (torch.tensor(100.0), torch.tensor(1.0), torch.tensor(0.2), torch.tensor(0.05), 40)
for kind in ("call", "put"):
    for style in ("european", "american"):
        v = binomial(kind, style, S, *args)
        delta, = torch.autograd.grad(v, S)
        print(f"{kind:4s} {style:8s} {v.item():.4f} delta {delta.item():.4f}")

# --- historical VaR / expected shortfall ----------------------------------------------------------
returns = torch.tensor(rng.standard_t(4, size=(3, 250)) * 0.01, dtype=torch.float32)


def var_es(x, level):
    s = torch.sort(x, dim=-1).values
    k = int((1 - level) * x.shape[-1])
    return -s[..., k], -s[..., : k + 1].mean(-1)


for level in (0.95, 0.99):
    v, es = var_es(returns, level)
    print(level, v, es, bool((es >= v).all()))
print("quantile", torch.quantile(returns, torch.tensor([0.01, 0.05]), dim=1).T)
try:
    var_es(torch.tensor([]), 0.95)
except IndexError as e:
    print("IndexError", str(e)[:40])

# --- Longstaff-Schwartz American put (normalised basis, float64) ---------------------------------
M, n_ex = 4000, 10
z = torch.tensor(rng.standard_normal((M, n_ex)))
S0, K, rr, vol, Tm = 36.0, 40.0, 0.06, 0.2, 1.0
dt = Tm / n_ex
paths = S0 * torch.exp(torch.cumsum((rr - 0.5 * vol ** 2) * dt + vol * np.sqrt(dt) * z, dim=1))
cash = torch.clamp(K - paths[:, -1], min=0.0)
for t in range(n_ex - 2, -1, -1):
    cash = cash * np.exp(-rr * dt)
    x = paths[:, t]
    itm = x < K
    xs = x[itm] / K
    A = torch.stack([torch.ones_like(xs), xs, xs ** 2], dim=1)
    coef = torch.linalg.lstsq(A, cash[itm].unsqueeze(1)).solution
    cont = (A @ coef).squeeze(1)
    exercise = K - x[itm]
    cash[itm] = torch.where(exercise > cont, exercise, cash[itm])
price = cash.mean() * np.exp(-rr * dt)
print("LSM american put", price.dtype, round(price.item(), 3), coef.shape)
