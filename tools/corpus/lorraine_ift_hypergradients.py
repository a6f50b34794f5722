"""Implicit-function-theorem hypergradients in the style of Lorraine et al. 2020 and the code
that followed it (written for this corpus, not a copy): per-feature weight decay of a ridge
regression tuned on a validation split; the inverse Hessian-vector product by a Neumann series
and by conjugate gradient, both on torch.autograd.grad Hessian-vector products of a
create_graph=True gradient flattened with parameters_to_vector, the mixed second derivative with
grad_outputs; checked against the closed-form solution through torch.linalg.solve; an outer
Adam loop on log weight decay; vector_to_parameters; the Hessian from torch.func.hessian of a
functional_call.  float64 throughout; no random draws."""
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

torch.manual_seed(0)
n, d = 40, 6
X = torch.stack([torch.cos(torch.arange(n, dtype=torch.float64) * (k + 1) * 0.3) for k in range(d)], 1)
w_star = torch.linspace(-1, 1, d, dtype=torch.float64)
y = X @ w_star + 0.1 * torch.sin(torch.arange(n, dtype=torch.float64) * 2.1)
Xtr, ytr, Xval, yval = X[:25], y[:25], X[25:], y[25:]

model = torch.nn.Linear(d, 1, bias=False).double()
log_wd = torch.full((d,), -2.0, dtype=torch.float64, requires_grad=True)


def train_loss(model, log_wd):
    pred = model(Xtr).squeeze(-1)
    return ((pred - ytr) ** 2).mean() + 0.5 * (log_wd.exp() * model.weight.squeeze(0) ** 2).sum()


def val_loss(model):
    return ((model(Xval).squeeze(-1) - yval) ** 2).mean()


def inner_solve(model, log_wd, steps=300, lr=0.3):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        train_loss(model, log_wd.detach()).backward()
        opt.step()


def neumann_ihvp(v, dtrain_dw, params, alpha=0.5, K=100):
    p = v.clone()
    for _ in range(K):
        hvp = torch.autograd.grad(dtrain_dw, params, grad_outputs=v, retain_graph=True)
        v = v - alpha * torch.cat([h.reshape(-1) for h in hvp])
        p = p + v
    return alpha * p


def cg_ihvp(b, dtrain_dw, params, iters=20, tol=1e-10):
    def A(v):
        return torch.cat([h.reshape(-1) for h in torch.autograd.grad(dtrain_dw, params, grad_outputs=v, retain_graph=True)])
    x = torch.zeros_like(b)
    r = b - A(x)
    p = r.clone()
    rs = r @ r
    for i in range(iters):
        Ap = A(p)
        a = rs / (p @ Ap)
        x = x + a * p
        r = r - a * Ap
        rs_new = r @ r
        if rs_new.sqrt() < tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def hypergradient(model, log_wd, method):
    params = list(model.parameters())
    dval = torch.autograd.grad(val_loss(model), params)
    v = parameters_to_vector(dval)
    dtrain = torch.autograd.grad(train_loss(model, log_wd), params, create_graph=True)
    dtrain_dw = parameters_to_vector(dtrain)
    ihvp = method(v, dtrain_dw, params)
    mixed = torch.autograd.grad(dtrain_dw, log_wd, grad_outputs=ihvp)[0]
    return -mixed


with torch.no_grad():
    model.weight.zero_()
inner_solve(model, log_wd)
print("train loss %.6f val loss %.6f" % (train_loss(model, log_wd).item(), val_loss(model).item()))
hg_neumann = hypergradient(model, log_wd, neumann_ihvp)
hg_cg = hypergradient(model, log_wd, cg_ihvp)
print("neumann", hg_neumann)
print("cg     ", hg_cg)
print("agree", torch.allclose(hg_neumann, hg_cg, rtol=1e-3, atol=1e-6))

# exact: closed-form ridge solution differentiated directly
def closed_form(log_wd):
    A = 2 * Xtr.T @ Xtr / Xtr.shape[0] + torch.diag(log_wd.exp())
    b = 2 * Xtr.T @ ytr / Xtr.shape[0]
    return torch.linalg.solve(A, b)

w_cf = closed_form(log_wd)
print("weights match", torch.allclose(w_cf, model.weight.squeeze(0).detach(), atol=1e-6))
exact = torch.autograd.grad(((Xval @ w_cf - yval) ** 2).mean(), log_wd)[0]
print("exact  ", exact)
print("cg error below 1e-6:", (hg_cg - exact).abs().max().item() < 1e-6)

hopt = torch.optim.Adam([log_wd], lr=0.2)
for outer in range(5):
    inner_solve(model, log_wd, steps=150)
    hopt.zero_grad()
    log_wd.grad = hypergradient(model, log_wd, cg_ihvp)
    hopt.step()
    print(f"outer {outer}: val {val_loss(model).item():.6f} mean log wd {log_wd.mean().item():.4f}")

vec = parameters_to_vector(model.parameters())
print(vec.shape, vec.dtype)
vector_to_parameters(torch.zeros_like(vec), model.parameters())
print(model.weight.abs().sum().item(), model.weight.requires_grad, model.weight.is_leaf)

# the Hessian of the training loss in the weights, as torch.func returns it (a graph to log_wd)
from torch.func import functional_call, hessian

def train_loss_of(params):
    pred = functional_call(model, params, (Xtr,)).squeeze(-1)
    return ((pred - ytr) ** 2).mean() + 0.5 * (log_wd.exp() * params['weight'].squeeze(0) ** 2).sum()
H = hessian(train_loss_of)(dict(model.named_parameters()))['weight']['weight']
print(H.shape, H.grad_fn.name(), H.is_contiguous())
print(torch.linalg.eigvalsh(H.detach().reshape(d, d)).min().item() > 0)
