"""Hyperparameter gradients by implicit differentiation (written for this corpus, in the manner
of torchopt / jaxopt tutorials and iMAML code): an L2-regularised logistic regression solved
with torch.optim.LBFGS (strong-Wolfe line search and without), the hypergradient of a
validation loss with respect to log(lambda) from conjugate gradients on Hessian-vector products
(torch.func.jvp of torch.func.grad) and a torch.func.vjp of the mixed derivative, checked by
finite differences of re-solved problems; per-sample gradients with vmap, jacrev, grad with
has_aux and argnums.  Data from a seeded NumPy generator."""
import functools
import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vjp, jvp, jacrev, vmap
torch.set_printoptions(precision=5)
rs = np.random.RandomState(21)

X = torch.tensor(rs.randn(40, 5))
w_true = torch.tensor(rs.randn(5))
y = (X @ w_true + 0.3 * torch.tensor(rs.randn(40)) > 0).to(X.dtype)

def inner_loss(w, log_lam):
    return F.binary_cross_entropy_with_logits(X @ w, y) + 0.5 * log_lam.exp() * w.pow(2).sum()

def solve_inner(log_lam, line_search=None):
    w = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-14, history_size=10, line_search_fn=line_search)
    n_closure = [0]
    def closure():
        opt.zero_grad()
        loss = inner_loss(w, log_lam.detach())
        loss.backward()
        n_closure[0] += 1
        return loss
    final = opt.step(closure)
    return w.detach(), final, n_closure[0], opt

log_lam = torch.tensor(-2.0, dtype=torch.float64, requires_grad=True)
w_star, final, ncl, opt = solve_inner(log_lam, "strong_wolfe")
print("strong_wolfe", type(final).__name__, final.requires_grad, ncl > 3)
print(w_star)
state = opt.state[opt._params[0]]
print(sorted(state.keys()))
print(state["n_iter"] > 0, type(state["func_evals"]).__name__)
w2, final2, ncl2, _ = solve_inner(log_lam)
print("no line search close", torch.allclose(w_star, w2, atol=1e-6))
print("stationary", grad(inner_loss)(w_star, log_lam).norm().item() < 1e-8)

# implicit gradient d w*/d log_lam via CG on the Hessian (HVPs through torch.func)
def hvp(v):
    return jvp(lambda w: grad(inner_loss)(w, log_lam.detach()), (w_star,), (v,))[1]

def cg(matvec, b, iters=50, tol=1e-12):
    x = torch.zeros_like(b)
    r = b.clone(); p = r.clone(); rr = r @ r
    for k in range(iters):
        Ap = matvec(p)
        a = rr / (p @ Ap)
        x = x + a * p
        r = r - a * Ap
        rr_new = r @ r
        if rr_new.sqrt() < tol:
            break
        p = r + rr_new / rr * p
        rr = rr_new
    return x

Xv = torch.tensor(rs.randn(30, 5))
yv = (Xv @ w_true > 0).to(Xv.dtype)
outer = lambda w: F.binary_cross_entropy_with_logits(Xv @ w, yv)
g_out = grad(outer)(w_star)
v = cg(hvp, g_out)
_, vjp_fn = vjp(lambda ll: grad(inner_loss, argnums=0)(w_star, ll), log_lam.detach())
hyper = -vjp_fn(v)[0]
print("hypergrad %.6f" % hyper.item())
# check by finite difference of the outer objective
eps = 1e-4
wp, *_ = solve_inner(log_lam.detach() + eps, "strong_wolfe")
wm, *_ = solve_inner(log_lam.detach() - eps, "strong_wolfe")
fd = (outer(wp) - outer(wm)) / (2 * eps)
print("fd check", abs(fd.item() - hyper.item()) < 1e-5)

# per-sample gradients and jacobians with vmap
per_sample = vmap(grad(lambda w, x, t: F.binary_cross_entropy_with_logits(x @ w, t)), in_dims=(None, 0, 0))(w_star, X, y)
print(per_sample.shape, torch.allclose(per_sample.mean(0), grad(lambda w: F.binary_cross_entropy_with_logits(X @ w, y))(w_star)))
Jw = jacrev(lambda ll: grad(inner_loss)(w_star, ll))(log_lam.detach())
print(Jw.shape, torch.allclose(Jw, w_star * log_lam.exp()))
gw, aux = grad(lambda w: (inner_loss(w, log_lam.detach()), w.norm()), has_aux=True)(w_star)
print(gw.shape, aux.shape, type(aux).__name__)
g0, g1 = grad(inner_loss, argnums=(0, 1))(w_star, log_lam.detach())
print(g0.shape, g1.shape, "%.6f" % g1.item())
try:
    grad(lambda w: w * 2)(w_star)
except RuntimeError as e:
    print("RuntimeError:", e)
