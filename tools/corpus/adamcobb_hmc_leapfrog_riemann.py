"""Hamiltonian Monte Carlo by hand in the style of AdamCobb/hamiltorch (samplers.py: a flat
parameter vector, gradients by torch.autograd.grad, a leapfrog integrator with diagonal or
full inverse mass, the Hamiltonian's accept ratio, a Hessian metric through
torch.autograd.functional.hessian and its softabs eigen-filter), written afresh.

Exercises: autograd.grad of a MultivariateNormal / Normal log_prob, clone/detach/requires_grad_
in a loop, in-place momentum updates, torch.dot, matmul with view(-1, 1), the Hessian (with
create_graph) and eigh(UPLO='L'), tanh-based softabs, cholesky + solve_triangular twice
(an inverse-metric product), MultivariateNormal with a covariance / precision matrix, and a
deterministic Metropolis decision (the uniform draw replaced by a fixed value).
"""
import torch

torch.set_printoptions(precision=5)
mean = torch.tensor([0.5, -1.0, 0.0])
scale = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [-0.2, 0.3, 0.5]])
target = torch.distributions.MultivariateNormal(mean, scale_tril=scale)


def log_prob(theta):
    return target.log_prob(theta)


def funnel(theta):
    lp = torch.distributions.Normal(0.0, 3.0).log_prob(theta[0])
    return lp + torch.distributions.Normal(0.0, torch.exp(theta[0] / 2)).log_prob(theta[1:]).sum()


def grad_log_prob(f, theta):
    theta = theta.detach().requires_grad_()
    return torch.autograd.grad(f(theta), theta)[0]


def leapfrog(f, theta, p, steps, eps, inv_mass=None):
    theta, p = theta.clone(), p.clone()
    p += 0.5 * eps * grad_log_prob(f, theta)
    for i in range(steps):
        if inv_mass is None:
            theta = theta + eps * p
        elif inv_mass.dim() == 2:
            theta = theta + eps * torch.matmul(inv_mass, p.view(-1, 1)).view(-1)
        else:
            theta = theta + eps * inv_mass * p
        g = grad_log_prob(f, theta)
        p += eps * g if i < steps - 1 else 0.5 * eps * g
    return theta, p


def hamiltonian(f, theta, p, inv_mass=None):
    if inv_mass is None:
        kinetic = 0.5 * torch.dot(p, p)
    elif inv_mass.dim() == 2:
        kinetic = 0.5 * (p.view(1, -1) @ inv_mass @ p.view(-1, 1)).view(-1)[0]
    else:
        kinetic = 0.5 * (inv_mass * p * p).sum()
    return -f(theta) + kinetic


theta = torch.tensor([0.2, 0.1, -0.3])
momenta = [torch.tensor([0.3, -0.1, 0.2]), torch.tensor([-0.5, 0.4, 0.1]),
           torch.tensor([0.05, 0.2, -0.6])]
uniforms = [0.3, 0.9, 0.5]
accepted = 0
for p0, u in zip(momenta, uniforms):
    new_theta, new_p = leapfrog(log_prob, theta, p0, steps=8, eps=0.15)
    h0 = hamiltonian(log_prob, theta, p0)
    h1 = hamiltonian(log_prob, new_theta, new_p)
    ratio = torch.exp(h0 - h1).clamp(max=1.0)
    if u < ratio.item():
        theta = new_theta
        accepted += 1
    print("H", round(h0.item(), 5), round(h1.item(), 5), "accept", u < ratio.item())
print("theta", theta, "accepted", accepted)

inv_mass = torch.tensor([1.0, 0.5, 2.0])
th, pp = leapfrog(funnel, torch.tensor([0.4, 0.2, -0.1]), momenta[0], steps=5, eps=0.05,
                  inv_mass=inv_mass)
print("funnel diag", th, pp, hamiltonian(funnel, th, pp, inv_mass))
th, pp = leapfrog(funnel, torch.tensor([0.4, 0.2, -0.1]), momenta[0], steps=5, eps=0.05,
                  inv_mass=torch.diag(inv_mass))
print("funnel full", th, hamiltonian(funnel, th, pp, torch.diag(inv_mass)))

point = torch.tensor([0.4, 0.2, -0.1])
hess = torch.autograd.functional.hessian(funnel, point, create_graph=True)
metric = -hess
print("metric", metric, metric.grad_fn is not None)
evals, evecs = torch.linalg.eigh(metric, UPLO='L')
soft = evals / torch.tanh(1e3 * evals)
metric_soft = evecs @ torch.diag(soft) @ evecs.t()
print("softabs", soft, "symmetric", torch.dist(metric_soft, metric_soft.t()).item() < 1e-6)
lower = torch.linalg.cholesky(metric_soft)
y = torch.linalg.solve_triangular(lower, momenta[1].view(-1, 1), upper=False)
inv_p = torch.linalg.solve_triangular(lower.t(), y, upper=True)
print("G^-1 p", inv_p.view(-1), torch.allclose(metric_soft @ inv_p, momenta[1].view(-1, 1),
                                               atol=1e-5))
dist = torch.distributions.MultivariateNormal(torch.zeros(3), metric_soft.detach())
print("momentum log_prob", round(dist.log_prob(momenta[1]).item(), 4), dist.entropy())
dist2 = torch.distributions.MultivariateNormal(torch.zeros(3),
                                               precision_matrix=metric_soft.detach())
print("precision form", dist2.log_prob(momenta[1]), dist2.covariance_matrix.diagonal())
print("log det metric", torch.logdet(metric_soft.detach()), torch.det(metric_soft.detach()))
