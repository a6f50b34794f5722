"""Black-Scholes prices, Greeks and implied volatilities by autograd in the style of
ushakovaoxana/DeepGalerkinPINN pdeog.py (torch.autograd.grad with create_graph for theta, delta,
gamma, vega, rho, and the Black-Scholes PDE residual) and StevenJokess/torchqf autogreek.py
(Greeks of a pricing formula over a batch of volatilities), written afresh for this corpus.

Exercises: torch.Tensor([..]).requires_grad_(), erf-based and torch.distributions.Normal cdf /
log_prob / icdf, autograd.grad with grad_outputs, create_graph and only_inputs, a second
derivative (gamma) and a mixed one (vanna), torch.func-free batched Greeks, a Newton implied
volatility loop with in-place updates under no_grad, put-call parity, a digital option through
torch.sigmoid smoothing, and torch.enable_grad used as a decorator.
"""
import math

import torch
import torch.autograd as tgrad
from torch.distributions import Normal

torch.set_printoptions(precision=4)
N = Normal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))


def Phi(x):
    return 0.5 * (1 + torch.erf(x / 2 ** 0.5))


def call(S, K, r, sigma, tau):
    d1 = (torch.log(S / K) + (r + 0.5 * sigma ** 2) * tau) / (sigma * torch.sqrt(tau))
    d2 = d1 - sigma * torch.sqrt(tau)
    return S * Phi(d1) - K * Phi(d2) * torch.exp(-r * tau)


S = torch.Tensor([92.0]).double().requires_grad_()
t = torch.Tensor([0.25]).double().requires_grad_()
sigma = torch.Tensor([0.25]).double().requires_grad_()
r = torch.Tensor([0.03]).double().requires_grad_()
K, T = torch.tensor([85.0], dtype=torch.float64), torch.tensor([1.0], dtype=torch.float64)
C = call(S, K, r, sigma, T - t)
print("price", round(C.item(), 6), C.grad_fn.name().split("::")[-1])
ones = torch.ones(C.shape, dtype=C.dtype)
dCdt, = tgrad.grad(C, t, grad_outputs=ones, create_graph=True, only_inputs=True)
dCdS, = tgrad.grad(C, S, grad_outputs=ones, create_graph=True)
gamma, = tgrad.grad(dCdS, S, grad_outputs=ones, create_graph=True)
vega, = tgrad.grad(C, sigma, grad_outputs=ones, create_graph=True)
vanna, = tgrad.grad(dCdS, sigma, grad_outputs=ones, retain_graph=True)
rho, = tgrad.grad(C, r, grad_outputs=ones, create_graph=True)
for name, g in [("theta", -dCdt), ("delta", dCdS), ("gamma", gamma), ("vega", vega),
                ("vanna", vanna), ("rho", rho)]:
    print(f"{name:6s} {g.item():.6f}")
tau = T - t
pde = dCdt + 0.5 * sigma ** 2 * S ** 2 * gamma + r * S * dCdS - r * C
print("pde residual below 1e-9:", abs(pde.item()) < 1e-9, gamma.requires_grad)

# closed forms against autograd, through Normal
d1 = (torch.log(S / K) + (r + 0.5 * sigma ** 2) * tau) / (sigma * torch.sqrt(tau))
print("delta == N(d1):", torch.allclose(dCdS, N.cdf(d1)),
      "vega == S phi(d1) sqrt(tau):", torch.allclose(vega, S * N.log_prob(d1).exp() * torch.sqrt(tau)))


@torch.enable_grad()
def greeks(price_fn, spot, **kw):
    spot = spot.detach().requires_grad_()
    p = price_fn(spot, **kw)
    d, = torch.autograd.grad(p, spot, torch.ones_like(p), create_graph=True)
    g, = torch.autograd.grad(d, spot, torch.ones_like(d))
    return p.detach(), d.detach(), g


vols = torch.tensor([0.18, 0.20, 0.22])
with torch.no_grad():
    p, d, g = greeks(lambda s, **kw: call(s, **kw), torch.ones(3), K=torch.ones(3),
                     r=torch.zeros(3), sigma=vols, tau=torch.ones(3))
print("batch", p, d, g)

# implied volatility by Newton with autograd vega
strikes = torch.tensor([80.0, 95.0, 100.0, 105.0, 130.0], dtype=torch.float64)
true_vol = torch.tensor([0.32, 0.27, 0.25, 0.24, 0.22], dtype=torch.float64)
spot, rate, mat = torch.tensor(100.0, dtype=torch.float64), 0.01, torch.tensor(0.5, dtype=torch.float64)
market = call(spot, strikes, rate, true_vol, mat)
iv = torch.full_like(strikes, 0.4, requires_grad=True)
for it in range(20):
    diff = call(spot, strikes, rate, iv, mat) - market
    v, = torch.autograd.grad(diff.sum(), iv)
    with torch.no_grad():
        iv -= diff / v
        iv.clamp_(min=1e-4)
    if diff.abs().max() < 1e-10:
        break
print("newton iterations", it, "implied", iv.detach(), "max err", float((iv.detach() - true_vol).abs().max()) < 1e-8)

# put-call parity and a smoothed digital
put = call(spot, strikes, rate, true_vol, mat) - spot + strikes * math.exp(-rate * 0.5)
print("puts", put)
x = torch.linspace(80, 120, 5, requires_grad=True)
digital = torch.sigmoid((x - 100.0) / 2.0)
digital.sum().backward()
print("digital", digital.detach(), x.grad)
print("icdf", N.icdf(torch.tensor([0.01, 0.5, 0.99], dtype=torch.float64)))
