"""A one-dimensional Gaussian mixture fitted two ways, after ConanMusk/GMM (GMM_torch/GMM.py and
GMM_EM-master/GMM_EM.py): expectation-maximisation written with log-density columns assigned
into a zeros tensor (log_gamma[:, i] = ...), a hand-written log-sum-exp, weighted means as vector
products and parameters overwritten through .data.copy_(); then the same model by
backpropagation with AdamW, clip_grad_value_ and ReduceLROnPlateau stepped on the loss.  A 2-D
mixture in the (n, k, d) broadcasting layout with torch.max assignments closes it.  Data from
numpy (gamma-distributed, as the original's Gamma noise) so nothing depends on the RNG."""
import math

import numpy as np
import torch

rng = np.random.default_rng(3)
data = torch.from_numpy(rng.gamma(10.0, 0.1, size=1500).astype(np.float32))


def log_norm_pdf(x, mu, sigma):
    return -0.5 * (torch.log(2 * torch.tensor(math.pi)) + 2 * torch.log(sigma) + ((x - mu) / sigma) ** 2)


def log_sum_exp(values, dim=None):
    m = torch.max(values, dim=dim, keepdim=True)[0]
    return m + torch.log(torch.sum(torch.exp(values - m), dim=dim, keepdim=True))


def nll(x, weights, means, stds):
    cols = torch.zeros(x.size(0), len(weights))
    for k in range(len(weights)):
        cols[:, k] = log_norm_pdf(x, means[k], stds[k]) + torch.log(weights[k])
    return -torch.mean(log_sum_exp(cols, dim=1))


class GMM(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.weights_logit = torch.nn.Parameter(torch.zeros(n))
        self.means = torch.nn.Parameter(torch.zeros(n))
        self.stds_logit = torch.nn.Parameter(torch.zeros(n))

    def initialize(self, x):
        mean, std = torch.mean(x), torch.std(x)
        with torch.no_grad():
            self.means.data.copy_(torch.linspace(mean - std, mean + std, self.n))
            self.stds_logit.data.copy_(torch.log(std / self.n).repeat(self.n))

    def forward(self):
        return torch.softmax(self.weights_logit, dim=0), self.means, torch.exp(self.stds_logit)


def fit_em(model, x, epochs=25):
    previous = torch.tensor(float("inf"))
    for epoch in range(epochs):
        log_gamma = torch.zeros((x.size(0), model.n))
        new_w = torch.zeros_like(model.weights_logit)
        new_m = torch.zeros_like(model.means)
        new_s = torch.zeros_like(model.stds_logit)
        with torch.no_grad():
            for i, (w, m, s) in enumerate(zip(*model())):
                log_gamma[:, i] = torch.log(w) + log_norm_pdf(x, m, s)
            log_gamma -= log_sum_exp(log_gamma, dim=1)
            for i in range(model.n):
                r = log_gamma[:, i].exp()
                nk = r.sum()
                new_w[i] = torch.log(nk) - torch.log(torch.tensor(x.size(0)))
                new_m[i] = (r @ x) / nk
                new_s[i] = torch.log(torch.sqrt((r @ (x - new_m[i]) ** 2) / nk))
        model.weights_logit.data.copy_(new_w)
        model.means.data.copy_(new_m)
        model.stds_logit.data.copy_(new_s)
        loss = nll(x, *model())
        if epoch % 5 == 0:
            print("em", epoch, round(loss.item(), 5))
        if previous <= loss:
            print("loss increased, stopping at", epoch)
            break
        previous = loss.detach()


def fit_backprop(model, x, epochs=30):
    opt = torch.optim.AdamW([model.weights_logit, model.means, model.stds_logit], lr=0.1)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2)
    for epoch in range(epochs):
        opt.zero_grad()
        loss = nll(x, *model())
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=1.0)
        opt.step()
        sched.step(loss.item())
        if epoch % 5 == 0:
            print("bp", epoch, round(loss.item(), 5), opt.param_groups[0]["lr"])


torch.set_printoptions(precision=4)
em = GMM(3)
em.initialize(data)
print("init", [t.detach() for t in em()])
fit_em(em, data)
print("em fit", [t.detach() for t in em()])
bp = GMM(3)
bp.initialize(data)
fit_backprop(bp, data)
print("bp fit", [t.detach() for t in bp()])
print("grad fn", type(bp()[0].grad_fn).__name__, type(nll(data, *bp()).grad_fn).__name__)

# 2-D mixture in the (n, k, d) layout: responsibilities, M-step, predictions
x2 = torch.from_numpy(np.concatenate([rng.normal(size=(60, 2)) + 2, rng.normal(size=(60, 2)) - 2]).astype(np.float32))
x2 = x2.unsqueeze(1)
alpha = torch.ones(1, 2, 1).fill_(0.5)
mu = torch.tensor([[[1.0, 0.5], [-0.5, -1.0]]])
var = torch.ones(1, 2, 2)
for it in range(5):
    std = torch.sqrt(var)
    dens = (1 / (std.log().sum(-1, keepdim=True).exp() * math.sqrt(2 * math.pi) ** 2)
            * ((-0.5) * ((x2 - mu) / std) ** 2).sum(-1, keepdim=True).exp())
    table = alpha * dens
    ll = torch.log(table.sum(dim=1)).sum()
    gamma = table / table.sum(dim=1, keepdim=True)
    nk = gamma.sum(dim=0, keepdim=True)
    alpha = nk / x2.shape[0]
    mu = torch.sum(gamma * x2, dim=0, keepdim=True) / nk
    var = torch.sum(gamma * (x2 - mu) ** 2, dim=0, keepdim=True) / nk
    print("2d", it, round(ll.item(), 3))
_, idx = torch.max(alpha * dens, dim=1)
print(mu.squeeze(0), var.squeeze(0), idx.shape, torch.bincount(idx.flatten()))
