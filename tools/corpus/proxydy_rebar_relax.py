"""REBAR / RELAX gradient estimators for Bernoulli variables: relaxed and conditional relaxed
samples from fixed uniforms, score-function terms via autograd.grad(create_graph=True), the
variance of the estimator differentiated into the temperature and a learned control variate;
then relaxed distributions in bfloat16 (a mixed-precision discrete VAE): clamp_probs, rsample
dtypes, masked-logit entropy, validation of normalised probabilities."""
import torch
import torch.nn as nn

def reparam_bernoulli(theta_logit, u, v, log_temp):
    # z = relaxed sample, b = hard sample, z_tilde = conditional relaxed sample
    eps = 1e-7
    theta = torch.sigmoid(theta_logit)
    z = theta_logit + torch.log(u) - torch.log1p(-u)
    b = (z > 0).float()
    uprime = 1 - theta
    v_cond = b * (v * (1 - uprime) + uprime) + (1 - b) * v * uprime
    v_cond = v_cond.clamp(eps, 1 - eps)
    z_tilde = theta_logit + torch.log(v_cond) - torch.log1p(-v_cond)
    temp = log_temp.exp()
    return b, torch.sigmoid(z / temp), torch.sigmoid(z_tilde / temp)

def f(b, t=0.45):
    return ((b - t) ** 2).sum(-1)

theta_logit = torch.tensor([0.2, -0.4, 1.0], requires_grad=True)
log_temp = torch.tensor(0.0, requires_grad=True)
eta = torch.tensor(1.0, requires_grad=True)
u = torch.tensor([0.3, 0.8, 0.55])
v = torch.tensor([0.6, 0.1, 0.9])

b, sz, szt = reparam_bernoulli(theta_logit, u, v, log_temp)
print(b, sz, szt)
fb = f(b)
fz = f(sz)
fzt = f(szt)
logp = (b * torch.log(torch.sigmoid(theta_logit)) + (1 - b) * torch.log(1 - torch.sigmoid(theta_logit))).sum()
dlogp = torch.autograd.grad(logp, theta_logit, create_graph=True)[0]
dfz = torch.autograd.grad(fz, theta_logit, create_graph=True)[0]
dfzt = torch.autograd.grad(fzt, theta_logit, create_graph=True)[0]
rebar = (fb - eta * fzt) * dlogp + eta * (dfz - dfzt)
print(rebar)
var_loss = (rebar ** 2).sum()
g_eta, g_temp = torch.autograd.grad(var_loss, [eta, log_temp], retain_graph=True)
print(g_eta, g_temp)

# learned control variate (RELAX) with a small network
torch.manual_seed(0)
cv = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
with torch.no_grad():
    for i, p in enumerate(cv.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).view_as(p) * (i + 1))
c_z = cv(sz.unsqueeze(0)).squeeze()
c_zt = cv(szt.unsqueeze(0)).squeeze()
d_cz = torch.autograd.grad(c_z, theta_logit, create_graph=True)[0]
d_czt = torch.autograd.grad(c_zt, theta_logit, create_graph=True)[0]
relax = (fb - c_zt) * dlogp + d_cz - d_czt
print(relax)
vl = (relax ** 2).mean()
grads = torch.autograd.grad(vl, list(cv.parameters()) + [log_temp])
print([tuple(g.shape) for g in grads])
print(grads[-2], grads[-1])
theta_logit.backward(relax.detach())
print(theta_logit.grad)
opt = torch.optim.SGD([theta_logit], lr=0.1)
opt.step()
print(theta_logit)
h = torch.autograd.functional.hessian(lambda t: f(torch.sigmoid(t / 0.5)), theta_logit.detach())
print(h)
print(torch.autograd.functional.vjp(lambda t: torch.sigmoid(t) ** 2, theta_logit.detach(), torch.ones(3)))

# --- the same relaxations with bfloat16 parameters ---
import torch.distributions as D
from torch.distributions.utils import clamp_probs
from torch.distributions.relaxed_bernoulli import LogitRelaxedBernoulli

probs16 = torch.tensor([0.999, 1.0, 0.0, 0.5], dtype=torch.bfloat16)
print(clamp_probs(probs16))
torch.manual_seed(0)
temp16 = torch.tensor(0.5, dtype=torch.bfloat16)
z16 = LogitRelaxedBernoulli(temp16, probs=probs16).rsample((64,))
print(z16.dtype, z16.shape, bool(torch.isfinite(z16).all()))
y16 = D.RelaxedBernoulli(temp16, probs=probs16).rsample((64,))
print(y16.dtype, bool(((y16 >= 0) & (y16 <= 1)).all()))
logits16 = torch.tensor([[2.0, 0.0, -1.0], [0.5, float("-inf"), 0.5]], dtype=torch.bfloat16, requires_grad=True)
cat16 = D.Categorical(logits=logits16)
print(f"{cat16.entropy()}")
oh = D.OneHotCategoricalStraightThrough(logits=logits16).rsample()
print(oh.dtype, oh.sum(-1))
(oh * torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)).sum().backward()
print(logits16.grad)
roc16 = D.RelaxedOneHotCategorical(temp16, logits=logits16.detach()[:1])
print(roc16.rsample().dtype, roc16.sample((3,)).shape)
print(D.Categorical(probs=torch.tensor([0.5, 0.2], dtype=torch.bfloat16), validate_args=True).probs)
print(D.Bernoulli(probs=probs16[3:]).enumerate_support().dtype)
print(D.transforms.SigmoidTransform()(torch.tensor([30.0, -3.0], dtype=torch.bfloat16)))
kl16 = D.kl_divergence(D.Bernoulli(logits=torch.tensor([0.3, -0.2], dtype=torch.bfloat16)),
                       D.Bernoulli(probs=torch.tensor([0.5, 0.5], dtype=torch.bfloat16)))
print(f"{kl16.sum():.3f}", kl16.dtype)
try:
    D.Gamma(torch.ones(2, dtype=torch.bfloat16), torch.ones(2, dtype=torch.bfloat16)).rsample()
except NotImplementedError as e:
    print("NotImplementedError", e)
