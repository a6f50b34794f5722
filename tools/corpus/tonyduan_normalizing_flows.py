"""Normalizing flows from scratch: planar, RealNVP coupling, masked autoregressive (MAF), ActNorm,
an invertible 1x1 "convolution" parametrised by its LU factors, and a neural spline coupling
flow (rational-quadratic splines: softmax bin widths, cumsum + F.pad knots, a hand-written
searchsorted, gather, masked assignment into zeros_like outputs); each model is
NormalizingFlowModel with a MultivariateNormal prior, trained with Adam on -log p(x).

Source: tonyduan/normalizing-flows, src/flows.py, src/models.py, src/utils.py and
examples/ex_2d.py.  Adapted: every parameter re-drawn from one numpy stream after construction
(the 1x1 convolution's P, L, U come from numpy's QR and scipy's LU, as in the source);
128 points of the script's three-blob data set; 21 Adam steps per model instead of 500;
logging.info replaced by print; plotting and sampling from the prior (random) left out.
Also printed: the inverse of each invertible model applied to its latent codes, and the planar
flow's NotImplementedError.
"""
import itertools
import math

import numpy as np
import scipy.linalg
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.distributions import MultivariateNormal

rs = np.random.RandomState(0)

# ---- rational-quadratic splines (src/utils.py) ----------------------------------------------
MIN_BIN_WIDTH = MIN_BIN_HEIGHT = MIN_DERIVATIVE = 1e-3


def searchsorted(bin_locations, inputs, eps=1e-6):
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1


def unconstrained_RQS(inputs, widths, heights, derivatives, inverse=False, tail_bound=1.0):
    inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
    outside = ~inside
    outputs = torch.zeros_like(inputs)
    logabsdet = torch.zeros_like(inputs)
    derivatives = F.pad(derivatives, pad=(1, 1))
    constant = np.log(np.exp(1 - MIN_DERIVATIVE) - 1)
    derivatives[..., 0] = constant
    derivatives[..., -1] = constant
    outputs[outside] = inputs[outside]
    logabsdet[outside] = 0
    outputs[inside], logabsdet[inside] = RQS(
        inputs[inside], widths[inside, :], heights[inside, :], derivatives[inside, :],
        inverse=inverse, left=-tail_bound, right=tail_bound, bottom=-tail_bound, top=tail_bound)
    return outputs, logabsdet


def RQS(inputs, unnormalized_widths, unnormalized_heights, unnormalized_derivatives,
        inverse=False, left=0., right=1., bottom=0., top=1.):
    if torch.min(inputs) < left or torch.max(inputs) > right:
        raise ValueError("Input outside domain")
    num_bins = unnormalized_widths.shape[-1]
    widths = F.softmax(unnormalized_widths, dim=-1)
    widths = MIN_BIN_WIDTH + (1 - MIN_BIN_WIDTH * num_bins) * widths
    cumwidths = torch.cumsum(widths, dim=-1)
    cumwidths = F.pad(cumwidths, pad=(1, 0), mode='constant', value=0.0)
    cumwidths = (right - left) * cumwidths + left
    cumwidths[..., 0] = left
    cumwidths[..., -1] = right
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]
    derivatives = MIN_DERIVATIVE + F.softplus(unnormalized_derivatives)
    heights = F.softmax(unnormalized_heights, dim=-1)
    heights = MIN_BIN_HEIGHT + (1 - MIN_BIN_HEIGHT * num_bins) * heights
    cumheights = torch.cumsum(heights, dim=-1)
    cumheights = F.pad(cumheights, pad=(1, 0), mode='constant', value=0.0)
    cumheights = (top - bottom) * cumheights + bottom
    cumheights[..., 0] = bottom
    cumheights[..., -1] = top
    heights = cumheights[..., 1:] - cumheights[..., :-1]
    if inverse:
        bin_idx = searchsorted(cumheights, inputs)[..., None]
    else:
        bin_idx = searchsorted(cumwidths, inputs)[..., None]
    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]
    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]
    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]
    input_heights = heights.gather(-1, bin_idx)[..., 0]
    if inverse:
        a = ((inputs - input_cumheights) * (input_derivatives + input_derivatives_plus_one
                                            - 2 * input_delta)
             + input_heights * (input_delta - input_derivatives))
        b = (input_heights * input_derivatives - (inputs - input_cumheights)
             * (input_derivatives + input_derivatives_plus_one - 2 * input_delta))
        c = - input_delta * (inputs - input_cumheights)
        discriminant = b.pow(2) - 4 * a * c
        assert (discriminant >= 0).all()
        root = (2 * c) / (-b - torch.sqrt(discriminant))
        outputs = root * input_bin_widths + input_cumwidths
        theta_one_minus_theta = root * (1 - root)
        denominator = input_delta + ((input_derivatives + input_derivatives_plus_one
                                      - 2 * input_delta) * theta_one_minus_theta)
        derivative_numerator = input_delta.pow(2) * (
            input_derivatives_plus_one * root.pow(2) + 2 * input_delta * theta_one_minus_theta
            + input_derivatives * (1 - root).pow(2))
        logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
        return outputs, -logabsdet
    theta = (inputs - input_cumwidths) / input_bin_widths
    theta_one_minus_theta = theta * (1 - theta)
    numerator = input_heights * (input_delta * theta.pow(2)
                                 + input_derivatives * theta_one_minus_theta)
    denominator = input_delta + ((input_derivatives + input_derivatives_plus_one
                                  - 2 * input_delta) * theta_one_minus_theta)
    outputs = input_cumheights + numerator / denominator
    derivative_numerator = input_delta.pow(2) * (
        input_derivatives_plus_one * theta.pow(2) + 2 * input_delta * theta_one_minus_theta
        + input_derivatives * (1 - theta).pow(2))
    logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
    return outputs, logabsdet


# ---- flows (src/flows.py) ---------------------------------------------------------------------
functional_derivatives = {
    torch.tanh: lambda x: 1 - torch.pow(torch.tanh(x), 2),
    F.leaky_relu: lambda x: (x > 0).type(torch.FloatTensor) + (x < 0).type(torch.FloatTensor) * -0.01,
}


class Planar(nn.Module):
    def __init__(self, dim, nonlinearity=torch.tanh):
        super().__init__()
        self.h = nonlinearity
        self.w = nn.Parameter(torch.Tensor(dim))
        self.u = nn.Parameter(torch.Tensor(dim))
        self.b = nn.Parameter(torch.Tensor(1))
        init.uniform_(self.w, -math.sqrt(1 / dim), math.sqrt(1 / dim))

    def forward(self, x):
        if self.h in (F.elu, F.leaky_relu):
            u = self.u
        else:
            scal = torch.log(1 + torch.exp(self.w @ self.u)) - self.w @ self.u - 1
            u = self.u + scal * self.w / torch.norm(self.w) ** 2
        lin = torch.unsqueeze(x @ self.w, 1) + self.b
        z = x + u * self.h(lin)
        phi = functional_derivatives[self.h](lin) * self.w
        log_det = torch.log(torch.abs(1 + phi @ u) + 1e-4)
        return z, log_det

    def inverse(self, z):
        raise NotImplementedError("Planar flow has no algebraic inverse.")


class FCNN(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_dim):
        super().__init__()
        self.network = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.Tanh(),
                                     nn.Linear(hidden_dim, hidden_dim), nn.Tanh(),
                                     nn.Linear(hidden_dim, out_dim))

    def forward(self, x):
        return self.network(x)


class RealNVP(nn.Module):
    def __init__(self, dim, hidden_dim=8, base_network=FCNN):
        super().__init__()
        self.dim = dim
        self.t1 = base_network(dim // 2, dim // 2, hidden_dim)
        self.s1 = base_network(dim // 2, dim // 2, hidden_dim)
        self.t2 = base_network(dim // 2, dim // 2, hidden_dim)
        self.s2 = base_network(dim // 2, dim // 2, hidden_dim)

    def forward(self, x):
        lower, upper = x[:, :self.dim // 2], x[:, self.dim // 2:]
        t1_transformed = self.t1(lower)
        s1_transformed = self.s1(lower)
        upper = t1_transformed + upper * torch.exp(s1_transformed)
        t2_transformed = self.t2(upper)
        s2_transformed = self.s2(upper)
        lower = t2_transformed + lower * torch.exp(s2_transformed)
        z = torch.cat([lower, upper], dim=1)
        log_det = torch.sum(s1_transformed, dim=1) + torch.sum(s2_transformed, dim=1)
        return z, log_det

    def inverse(self, z):
        lower, upper = z[:, :self.dim // 2], z[:, self.dim // 2:]
        t2_transformed = self.t2(upper)
        s2_transformed = self.s2(upper)
        lower = (lower - t2_transformed) * torch.exp(-s2_transformed)
        t1_transformed = self.t1(lower)
        s1_transformed = self.s1(lower)
        upper = (upper - t1_transformed) * torch.exp(-s1_transformed)
        x = torch.cat([lower, upper], dim=1)
        log_det = torch.sum(-s1_transformed, dim=1) + torch.sum(-s2_transformed, dim=1)
        return x, log_det


class MAF(nn.Module):
    def __init__(self, dim, hidden_dim=8, base_network=FCNN):
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList()
        self.initial_param = nn.Parameter(torch.Tensor(2))
        for i in range(1, dim):
            self.layers += [base_network(i, 2, hidden_dim)]

    def forward(self, x):
        z = torch.zeros_like(x)
        log_det = torch.zeros(z.shape[0])
        for i in range(self.dim):
            if i == 0:
                mu, alpha = self.initial_param[0], self.initial_param[1]
            else:
                out = self.layers[i - 1](x[:, :i])
                mu, alpha = out[:, 0], out[:, 1]
            z[:, i] = (x[:, i] - mu) / torch.exp(alpha)
            log_det -= alpha
        return z.flip(dims=(1,)), log_det

    def inverse(self, z):
        x = torch.zeros_like(z)
        log_det = torch.zeros(z.shape[0])
        z = z.flip(dims=(1,))
        for i in range(self.dim):
            if i == 0:
                mu, alpha = self.initial_param[0], self.initial_param[1]
            else:
                out = self.layers[i - 1](x[:, :i])
                mu, alpha = out[:, 0], out[:, 1]
            x[:, i] = mu + torch.exp(alpha) * z[:, i]
            log_det += alpha
        return x, log_det


class ActNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.mu = nn.Parameter(torch.zeros(dim, dtype=torch.float))
        self.log_sigma = nn.Parameter(torch.zeros(dim, dtype=torch.float))

    def forward(self, x):
        z = x * torch.exp(self.log_sigma) + self.mu
        log_det = torch.sum(self.log_sigma)
        return z, log_det

    def inverse(self, z):
        x = (z - self.mu) / torch.exp(self.log_sigma)
        log_det = -torch.sum(self.log_sigma)
        return x, log_det


class OneByOneConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        W, _ = scipy.linalg.qr(rs.randn(dim, dim))
        P, L, U = scipy.linalg.lu(W)
        self.P = torch.tensor(P, dtype=torch.float)
        self.L = nn.Parameter(torch.tensor(L, dtype=torch.float))
        self.S = nn.Parameter(torch.tensor(np.diag(U), dtype=torch.float))
        self.U = nn.Parameter(torch.triu(torch.tensor(U, dtype=torch.float), diagonal=1))
        self.W_inv = None

    def forward(self, x):
        L = torch.tril(self.L, diagonal=-1) + torch.diag(torch.ones(self.dim))
        U = torch.triu(self.U, diagonal=1)
        z = x @ self.P @ L @ (U + torch.diag(self.S))
        log_det = torch.sum(torch.log(torch.abs(self.S)))
        return z, log_det

    def inverse(self, z):
        if not self.W_inv:
            L = torch.tril(self.L, diagonal=-1) + torch.diag(torch.ones(self.dim))
            U = torch.triu(self.U, diagonal=1)
            W = self.P @ L @ (U + torch.diag(self.S))
            self.W_inv = torch.inverse(W)
        x = z @ self.W_inv
        log_det = -torch.sum(torch.log(torch.abs(self.S)))
        return x, log_det


class NSF_CL(nn.Module):
    def __init__(self, dim, K=5, B=3, hidden_dim=8, base_network=FCNN):
        super().__init__()
        self.dim = dim
        self.K = K
        self.B = B
        self.f1 = base_network(dim // 2, (3 * K - 1) * dim // 2, hidden_dim)
        self.f2 = base_network(dim // 2, (3 * K - 1) * dim // 2, hidden_dim)

    def _spline(self, net, cond, x, inverse):
        out = net(cond).reshape(-1, self.dim // 2, 3 * self.K - 1)
        W, H, D = torch.split(out, self.K, dim=2)
        W, H = torch.softmax(W, dim=2), torch.softmax(H, dim=2)
        W, H = 2 * self.B * W, 2 * self.B * H
        D = F.softplus(D)
        return unconstrained_RQS(x, W, H, D, inverse=inverse, tail_bound=self.B)

    def forward(self, x):
        log_det = torch.zeros(x.shape[0])
        lower, upper = x[:, :self.dim // 2], x[:, self.dim // 2:]
        upper, ld = self._spline(self.f1, lower, upper, False)
        log_det += torch.sum(ld, dim=1)
        lower, ld = self._spline(self.f2, upper, lower, False)
        log_det += torch.sum(ld, dim=1)
        return torch.cat([lower, upper], dim=1), log_det

    def inverse(self, z):
        log_det = torch.zeros(z.shape[0])
        lower, upper = z[:, :self.dim // 2], z[:, self.dim // 2:]
        lower, ld = self._spline(self.f2, upper, lower, True)
        log_det += torch.sum(ld, dim=1)
        upper, ld = self._spline(self.f1, lower, upper, True)
        log_det += torch.sum(ld, dim=1)
        return torch.cat([lower, upper], dim=1), log_det


# ---- model (src/models.py) --------------------------------------------------------------------
class NormalizingFlowModel(nn.Module):
    def __init__(self, dim, flows):
        super().__init__()
        self.prior = MultivariateNormal(torch.zeros(dim), torch.eye(dim))
        self.flows = nn.ModuleList(flows)

    def forward(self, x):
        bsz, _ = x.shape
        log_det = torch.zeros(bsz)
        for flow in self.flows:
            x, ld = flow.forward(x)
            log_det += ld
        z, prior_logprob = x, self.prior.log_prob(x)
        return z, prior_logprob, log_det

    def inverse(self, z):
        bsz, _ = z.shape
        log_det = torch.zeros(bsz)
        for flow in self.flows[::-1]:
            z, ld = flow.inverse(z)
            log_det += ld
        return z, log_det


# ---- training (examples/ex_2d.py) -------------------------------------------------------------
def gen_data(n=512):
    return np.r_[rs.randn(n // 3, 2) + np.array([0, 6]),
                 rs.randn(n // 3, 2) + np.array([2.5, 3]),
                 rs.randn(n // 3, 2) + np.array([-2.5, 3])]


def redraw(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))


data = gen_data(128)


def train(flow_name, convolve=False, actnorm=False, n_flows=2, iterations=21):
    flow = eval(flow_name)
    flows = [flow(dim=2) for _ in range(n_flows)]
    if convolve:
        convs = [OneByOneConv(dim=2) for _ in range(n_flows)]
        flows = list(itertools.chain(*zip(convs, flows)))
    if actnorm:
        actnorms = [ActNorm(dim=2) for _ in range(n_flows)]
        flows = list(itertools.chain(*zip(actnorms, flows)))
    model = NormalizingFlowModel(dim=2, flows=flows)
    redraw(model)
    optimizer = optim.Adam(model.parameters(), lr=0.005)
    x = torch.Tensor(data)
    for i in range(x.shape[1]):
        x[:, i] = (x[:, i] - torch.mean(x[:, i])) / torch.std(x[:, i])
    for i in range(iterations):
        optimizer.zero_grad()
        z, prior_logprob, log_det = model(x)
        logprob = prior_logprob + log_det
        loss = -torch.mean(prior_logprob + log_det)
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            print(f"{flow_name:8s} conv={convolve:d} actnorm={actnorm:d} Iter: {i}\t"
                  + f"Logprob: {logprob.mean().data:.2f}\t"
                  + f"Prior: {prior_logprob.mean().data:.2f}\t"
                  + f"LogDet: {log_det.mean().data:.2f}")
    print("  z", tuple(z.shape), z.dtype, "log_det", tuple(log_det.shape),
          "grad_fn", type(loss.grad_fn).__name__)
    with torch.no_grad():       # the latent codes under the trained parameters
        z, _, log_det = model(x)
    try:
        x_back, inv_log_det = model.inverse(z)
        print("  inverse: max |x - f^-1(f(x))| < 1e-3:", bool((x_back - x).abs().max() < 1e-3),
              "| log-dets cancel:", bool(torch.allclose(inv_log_det, -log_det, atol=1e-3)))
    except NotImplementedError as e:
        print("  inverse: NotImplementedError:", e)
    return model


train("Planar")
train("RealNVP")
train("MAF")
train("NSF_CL")
model = train("NSF_CL", convolve=True, actnorm=True)
# the source interleaves ActNorms with the already interleaved list, so zip keeps two pairs
print("flows:", [type(f).__name__ for f in model.flows])
print("parameters:", sum(p.numel() for p in model.parameters()),
      sorted({n.split(".")[-1] for n, _ in model.named_parameters()}))
train("RealNVP", convolve=True, actnorm=True)

# the spline on its own: knots outside the tail bound pass through unchanged
x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 2.9, 3.5])
W = torch.tensor(rs.randn(6, 5), dtype=torch.float32)
H = torch.tensor(rs.randn(6, 5), dtype=torch.float32)
D = torch.tensor(rs.randn(6, 4), dtype=torch.float32)
y, ld = unconstrained_RQS(x, W, H, D, tail_bound=3.0)
x_back, ld_back = unconstrained_RQS(y, W, H, D, inverse=True, tail_bound=3.0)
print("spline y:", y)
print("spline log|dy/dx|:", ld)
print("round trip:", torch.allclose(x_back, x, atol=1e-4), torch.allclose(ld + ld_back, torch.zeros(6), atol=1e-4))
try:
    RQS(torch.tensor([2.0]), W[:1], H[:1], F.pad(D[:1], (1, 1)))
except ValueError as e:
    print("ValueError:", e)
