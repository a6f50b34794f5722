"""Gaussian mixtures fitted by EM, in the style of Minqi824/ADBench's gmm-torch port (full and
diagonal covariances held as (1, k, d[, d]) parameters, log-responsibilities by logsumexp, a
Cholesky log-determinant, BIC) and of EM loops built on torch.distributions, written afresh.

Exercises: nn.Parameter(requires_grad=False) updated through .data, Tensor().fill_ on a fresh
Parameter, torch.inverse on a (1, k, d, d) batch, per-component mm into a preallocated tensor by
slice assignment, torch.linalg.cholesky + diagonal + log, rsqrt, logsumexp(keepdim), torch.max
(values, indices) with .type(torch.LongTensor), MultivariateNormal with batched covariances and
scale_tril, MixtureSameFamily log_prob, Categorical probs, torch.distributions.Dirichlet
log_prob, and a gradient-based fit of the same mixture (log_softmax weights, a Cholesky factor
via tril + softplus diagonal) with Adam.
"""
import math

import numpy as np
import torch
import torch.distributions as D

torch.set_printoptions(precision=4)


class Mixture(torch.nn.Module):
    def __init__(self, k, d, mu_init, covariance="full", eps=1e-6):
        super().__init__()
        self.k, self.d, self.covariance, self.eps = k, d, covariance, eps
        self.mu = torch.nn.Parameter(mu_init.clone(), requires_grad=False)
        if covariance == "full":
            eye = torch.eye(d).reshape(1, 1, d, d).repeat(1, k, 1, 1)
            self.var = torch.nn.Parameter(eye, requires_grad=False)
        else:
            self.var = torch.nn.Parameter(torch.ones(1, k, d), requires_grad=False)
        self.pi = torch.nn.Parameter(torch.Tensor(1, k, 1), requires_grad=False).fill_(1.0 / k)

    def log_gauss(self, x):
        x = x.unsqueeze(1)
        if self.covariance == "diag":
            prec = torch.rsqrt(self.var)
            quad = torch.sum((x - self.mu) ** 2 * prec ** 2, dim=2, keepdim=True)
            return -0.5 * (self.d * math.log(2 * math.pi) + quad) + torch.log(prec).sum(2, keepdim=True)
        precision = torch.inverse(self.var)
        diff = (x - self.mu).unsqueeze(-2)
        weighted = torch.zeros(diff.shape)
        for j in range(self.k):
            weighted[:, j, :, :] = diff[:, j, :, :].squeeze(-2).mm(precision[0, j]).unsqueeze(1)
        quad = torch.sum(weighted.squeeze(-2) * diff.squeeze(-2), dim=2, keepdim=True)
        log_det = torch.empty(self.k)
        for j in range(self.k):
            log_det[j] = 2 * torch.log(torch.diagonal(torch.linalg.cholesky(precision[0, j]))).sum()
        return -0.5 * (self.d * math.log(2 * math.pi) - log_det.unsqueeze(-1) + quad)

    def e_step(self, x):
        weighted = self.log_gauss(x) + torch.log(self.pi)
        norm = torch.logsumexp(weighted, dim=1, keepdim=True)
        return norm.mean(), weighted - norm

    def m_step(self, x, log_resp):
        x = x.unsqueeze(1)
        resp = torch.exp(log_resp)
        nk = resp.sum(0, keepdim=True) + self.eps
        mu = (resp * x).sum(0, keepdim=True) / nk
        if self.covariance == "full":
            outer = (x - mu).unsqueeze(-1).matmul((x - mu).unsqueeze(-2))
            var = (outer * resp.unsqueeze(-1)).sum(0, keepdim=True) / nk.unsqueeze(-1)
            var = var + self.eps * torch.eye(self.d)
        else:
            var = (resp * (x - mu) ** 2).sum(0, keepdim=True) / nk + self.eps
        self.pi.data = nk / x.shape[0]
        self.mu.data = mu
        self.var.data = var

    def fit(self, x, iters, delta=1e-6):
        previous = -float("inf")
        for i in range(iters):
            ll, log_resp = self.e_step(x)
            self.m_step(x, log_resp)
            if ll.item() - previous < delta:
                break
            previous = ll.item()
        return i + 1, self.e_step(x)[0]

    def predict(self, x):
        scores = self.log_gauss(x) + torch.log(self.pi)
        return torch.squeeze(torch.max(scores, 1)[1].type(torch.LongTensor))

    def bic(self, x):
        n = x.shape[0]
        free = self.d * self.k + self.d + self.k - 1
        per_sample = torch.logsumexp(self.log_gauss(x) + torch.log(self.pi), dim=1)
        return -2.0 * per_sample.mean() * n + free * math.log(n)


rng = np.random.RandomState(0)
A = rng.randn(2, 2) * 0.4
data = torch.from_numpy(np.concatenate([rng.randn(70, 2) @ A + [2.0, 1.0],
                                        rng.randn(50, 2) * 0.6 + [-2.0, -1.5],
                                        rng.randn(40, 2) * 0.3 + [0.0, 3.0]]).astype(np.float32))
mu0 = torch.tensor([[[1.0, 0.0], [-1.0, -1.0], [0.0, 2.0]]])
for covariance in ("full", "diag"):
    gmm = Mixture(3, 2, mu0, covariance)
    steps, ll = gmm.fit(data, 50)
    labels = gmm.predict(data)
    print(covariance, "steps", steps, "mean log-lik", round(ll.item(), 4), labels.dtype)
    print(" weights", gmm.pi.data.squeeze(), "sizes", torch.bincount(labels, minlength=3))
    print(" means", gmm.mu.data.squeeze(0))
    print(" bic", round(gmm.bic(data).item(), 2), tuple(gmm.var.shape), gmm.var.requires_grad)

# the fitted full mixture as a torch.distributions object agrees with the hand-written density
gmm = Mixture(3, 2, mu0, "full")
gmm.fit(data, 50)
mix = D.MixtureSameFamily(D.Categorical(probs=gmm.pi.data.view(-1)),
                          D.MultivariateNormal(gmm.mu.data[0], covariance_matrix=gmm.var.data[0]))
hand = torch.logsumexp(gmm.log_gauss(data[:4]) + torch.log(gmm.pi), dim=1).squeeze(-1)
print("mixture log_prob", mix.log_prob(data[:4]), torch.allclose(hand, mix.log_prob(data[:4]), atol=1e-4))
print("dirichlet prior on weights", D.Dirichlet(torch.full((3,), 2.0)).log_prob(gmm.pi.data.view(-1)))

# the same model by gradient ascent on the log-likelihood
logits = torch.zeros(3, requires_grad=True)
means = mu0[0].clone().requires_grad_()
raw = torch.zeros(3, 2, 2, requires_grad=True)
opt = torch.optim.Adam([logits, means, raw], lr=0.05)
for step in range(40):
    tril = torch.tril(raw, diagonal=-1) + torch.diag_embed(torch.nn.functional.softplus(
        torch.diagonal(raw, dim1=-2, dim2=-1)) + 1e-3)
    comp = D.MultivariateNormal(means, scale_tril=tril)
    log_w = torch.log_softmax(logits, 0)
    ll = torch.logsumexp(comp.log_prob(data.unsqueeze(1)) + log_w, dim=1).mean()
    opt.zero_grad()
    (-ll).backward()
    opt.step()
    if step % 10 == 0:
        print("sgd", step, round(ll.item(), 4), means.grad.norm().round(decimals=3))
print("sgd weights", torch.softmax(logits, 0).detach(), "means", means.detach())
