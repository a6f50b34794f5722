"""torch.special beyond erf/gamma: scaled Bessel functions in a von Mises log-likelihood, a
probit model's log-likelihood through log_ndtr (stable in the tail), erfcx, Bessel J/Y/K and
airy values, a Chebyshev/Legendre feature expansion and a Hermite-basis fit by least squares."""
import math

import torch

torch.set_printoptions(precision=5)

# von Mises log-density with a learnable concentration: log I0(k) = log(i0e(k)) + k
kappa = torch.tensor([0.5, 3.0, 40.0], dtype=torch.float64, requires_grad=True)
theta = torch.tensor([0.1, -0.4, 0.05], dtype=torch.float64)
log_norm = torch.log(2 * math.pi * torch.special.i0e(kappa)) + kappa
log_density = kappa * torch.cos(theta) - log_norm
log_density.sum().backward()
print("von Mises log density", log_density.detach())
print("d/dkappa", kappa.grad)
print("i1/i0 ratio", torch.special.i1e(kappa.detach()) / torch.special.i0e(kappa.detach()))

# probit regression: log Phi(y * x w) stays finite far in the tail
k = torch.arange(64, dtype=torch.float64)
x = torch.stack([torch.sin(0.7 * k), torch.cos(1.3 * k), torch.sin(0.11 * k * k)], 1)
w_true = torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64)
y = torch.where(x @ w_true + 0.3 * torch.sin(5.1 * k) > 0, 1.0, -1.0)
w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
for step in range(60):
    opt.zero_grad()
    nll = -torch.special.log_ndtr(y * (x @ w)).mean()
    nll.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} nll {nll.item():.6f}")
print("probit weights", w.detach())
print("far tail", torch.special.log_ndtr(torch.tensor([-40.0, -10.0, 0.0, 10.0], dtype=torch.float64)))
print("erfcx", torch.special.erfcx(torch.tensor([-3.0, 0.0, 1.0, 30.0, 1e4])))

r = torch.linspace(0.5, 30.0, 7, dtype=torch.float64)
for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
             "scaled_modified_bessel_k1", "spherical_bessel_j0"):
    print(name, getattr(torch.special, name)(r))
print("airy_ai", torch.special.airy_ai(torch.tensor([-8.0, -1.0, 0.0, 1.0, 6.0], dtype=torch.float64)))

# polynomial features on [-1, 1] and a Hermite least-squares fit
t = torch.linspace(-1, 1, 5)
degrees = torch.arange(4)
print("chebyshev T", torch.special.chebyshev_polynomial_t(t[:, None], degrees))
print("legendre P", torch.special.legendre_polynomial_p(t[:, None], degrees))
print("shifted U", torch.special.shifted_chebyshev_polynomial_u(torch.tensor([0.25, 0.75]), 5))
grid = torch.linspace(-2, 2, 41, dtype=torch.float64)
basis = torch.special.hermite_polynomial_he(grid[:, None], torch.arange(6))
target = torch.tanh(2 * grid)
coef = torch.linalg.lstsq(basis, target[:, None]).solution.squeeze(1)
print("hermite coefficients", torch.round(coef * 1e6) / 1e6 + 0.0)  # (round-off apart)
print("fit error", (basis @ coef - target).abs().max().item() < 0.2)
print("laguerre", torch.special.laguerre_polynomial_l(torch.tensor([0.0, 1.0, 3.0]), 4))
print("requires grad (no derivative)", torch.special.bessel_j0(kappa).requires_grad)
