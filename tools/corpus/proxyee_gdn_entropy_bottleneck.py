"""Learned image compression building blocks, CompressAI style: a GDN / inverse GDN layer whose
beta and gamma are reparameterised through a lower bound with a straight-through custom
autograd.Function, and a factorised-prior entropy bottleneck (cumulative logits built from
softplus matrices and tanh factors, sign-flipped sigmoid differences for the likelihood,
clamp(min=1e-9) then -log2 for the bits, an auxiliary loss on the quantiles).  Deterministic
inputs; the training-mode noise only reaches printed shapes and dtypes."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

torch.manual_seed(0)


class LowerBoundFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_, bound):
        ctx.save_for_backward(input_, bound)
        return torch.max(input_, bound)

    @staticmethod
    def backward(ctx, grad_output):
        input_, bound = ctx.saved_tensors
        pass_through_if = (input_ >= bound) | (grad_output < 0)
        return pass_through_if * grad_output, None


class LowerBound(nn.Module):
    bound: Tensor

    def __init__(self, bound: float):
        super().__init__()
        self.register_buffer("bound", torch.Tensor([float(bound)]))

    @torch.jit.unused
    def lower_bound(self, x):
        return LowerBoundFunction.apply(x, self.bound)

    def forward(self, x):
        if torch.jit.is_scripting():
            return torch.max(x, self.bound)
        return self.lower_bound(x)


class NonNegativeParametrizer(nn.Module):
    pedestal: Tensor

    def __init__(self, minimum: float = 0, reparam_offset: float = 2**-18):
        super().__init__()
        self.minimum = float(minimum)
        self.reparam_offset = float(reparam_offset)
        pedestal = self.reparam_offset**2
        self.register_buffer("pedestal", torch.Tensor([pedestal]))
        bound = (self.minimum + self.reparam_offset**2) ** 0.5
        self.lower_bound = LowerBound(bound)

    def init(self, x: Tensor) -> Tensor:
        return torch.sqrt(torch.max(x + self.pedestal, self.pedestal))

    def forward(self, x: Tensor) -> Tensor:
        out = self.lower_bound(x)
        out = out**2 - self.pedestal
        return out


class GDN(nn.Module):
    def __init__(self, in_channels, inverse=False, beta_min=1e-6, gamma_init=0.1):
        super().__init__()
        beta_min = float(beta_min)
        gamma_init = float(gamma_init)
        self.inverse = bool(inverse)
        self.beta_reparam = NonNegativeParametrizer(minimum=beta_min)
        beta = torch.ones(in_channels)
        beta = self.beta_reparam.init(beta)
        self.beta = nn.Parameter(beta)
        self.gamma_reparam = NonNegativeParametrizer()
        gamma = gamma_init * torch.eye(in_channels)
        gamma = self.gamma_reparam.init(gamma)
        self.gamma = nn.Parameter(gamma)

    def forward(self, x: Tensor) -> Tensor:
        _, C, _, _ = x.size()
        beta = self.beta_reparam(self.beta)
        gamma = self.gamma_reparam(self.gamma)
        gamma = gamma.reshape(C, C, 1, 1)
        norm = F.conv2d(x**2, gamma, beta)
        if self.inverse:
            norm = torch.sqrt(norm)
        else:
            norm = torch.rsqrt(norm)
        out = x * norm
        return out


gdn = GDN(4)
igdn = GDN(4, inverse=True)
print(gdn)
for n, b in gdn.named_buffers():
    print(n, b.shape, b.dtype, b)
for n, p in gdn.named_parameters():
    print(n, tuple(p.shape), p.requires_grad)
x = torch.sin(torch.arange(2 * 4 * 8 * 8, dtype=torch.float32) * 0.37).reshape(2, 4, 8, 8) * 2
y = gdn(x)
z = igdn(y)
print(y.shape, y.dtype, round(y.abs().mean().item(), 4))
print("roundtrip err", round((z - x).abs().max().item(), 4))
loss = (z - x).pow(2).mean() + y.abs().mean()
loss.backward()
print("beta grad", gdn.beta.grad.shape, round(gdn.beta.grad.norm().item(), 4))
print("gamma grad", gdn.gamma.grad.shape, round(gdn.gamma.grad.norm().item(), 4))
print(igdn.gamma.grad.diag())

# LowerBound gradient semantics
lb = LowerBound(0.5)
v = torch.tensor([0.1, 0.4, 0.6, 1.0], requires_grad=True)
out = lb(v)
out.backward(torch.tensor([1.0, -1.0, 1.0, -1.0]))
print(out, v.grad)

# gradcheck of the custom function in double
inp = torch.linspace(-1, 1, 5, dtype=torch.double).requires_grad_()
bound = torch.tensor([-10.0], dtype=torch.double)
print(torch.autograd.gradcheck(LowerBoundFunction.apply, (inp, bound)))
print(gdn.state_dict().keys())


# ---- factorised entropy bottleneck ----


class EntropyBottleneck(nn.Module):
    def __init__(self, channels, tail_mass=1e-9, init_scale=10, filters=(3, 3, 3, 3), likelihood_bound=1e-9):
        super().__init__()
        self.channels = int(channels)
        self.filters = tuple(int(f) for f in filters)
        self.init_scale = float(init_scale)
        self.tail_mass = float(tail_mass)
        self.likelihood_lower_bound = likelihood_bound
        filters = (1,) + self.filters + (1,)
        scale = self.init_scale ** (1 / (len(self.filters) + 1))
        channels = self.channels
        self.matrices = nn.ParameterList()
        self.biases = nn.ParameterList()
        self.factors = nn.ParameterList()
        for i in range(len(self.filters) + 1):
            init = np.log(np.expm1(1 / scale / filters[i + 1]))
            matrix = torch.Tensor(channels, filters[i + 1], filters[i])
            matrix.data.fill_(init)
            self.matrices.append(nn.Parameter(matrix))
            bias = torch.Tensor(channels, filters[i + 1], 1)
            bias.data.copy_(torch.linspace(-0.5, 0.5, bias.numel()).reshape(bias.shape))
            self.biases.append(nn.Parameter(bias))
            if i < len(self.filters):
                factor = torch.Tensor(channels, filters[i + 1], 1)
                nn.init.zeros_(factor)
                self.factors.append(nn.Parameter(factor))
        self.quantiles = nn.Parameter(torch.Tensor(channels, 1, 3))
        init = torch.Tensor([-self.init_scale, 0, self.init_scale])
        self.quantiles.data = init.repeat(self.quantiles.size(0), 1, 1)
        target = np.log(2 / self.tail_mass - 1)
        self.register_buffer("target", torch.Tensor([-target, 0, target]))

    def _logits_cumulative(self, inputs, stop_gradient):
        logits = inputs
        for i in range(len(self.filters) + 1):
            matrix = self.matrices[i]
            if stop_gradient:
                matrix = matrix.detach()
            logits = torch.matmul(F.softplus(matrix), logits)
            bias = self.biases[i]
            if stop_gradient:
                bias = bias.detach()
            logits += bias
            if i < len(self.factors):
                factor = self.factors[i]
                if stop_gradient:
                    factor = factor.detach()
                logits += torch.tanh(factor) * torch.tanh(logits)
        return logits

    def _get_medians(self):
        medians = self.quantiles[:, :, 1:2]
        return medians

    def loss(self):
        logits = self._logits_cumulative(self.quantiles, stop_gradient=True)
        loss = torch.abs(logits - self.target).sum()
        return loss

    def _likelihood(self, inputs):
        half = float(0.5)
        v0 = inputs - half
        v1 = inputs + half
        lower = self._logits_cumulative(v0, stop_gradient=False)
        upper = self._logits_cumulative(v1, stop_gradient=False)
        sign = -torch.sign(lower + upper)
        sign = sign.detach()
        likelihood = torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))
        return likelihood

    def quantize(self, inputs, mode, means=None):
        if mode == "noise":
            half = float(0.5)
            noise = torch.empty_like(inputs).uniform_(-half, half)
            return inputs + noise
        outputs = inputs.clone()
        if means is not None:
            outputs -= means
        outputs = torch.round(outputs)
        if mode == "dequantize":
            if means is not None:
                outputs += means
            return outputs
        assert mode == "symbols", mode
        outputs = outputs.int()
        return outputs

    def forward(self, x, training=None):
        if training is None:
            training = self.training
        perm = np.arange(len(x.shape))
        perm[0], perm[1] = perm[1], perm[0]
        inv_perm = np.arange(len(x.shape))[np.argsort(perm)]
        x = x.permute(*perm).contiguous()
        shape = x.size()
        values = x.reshape(x.size(0), 1, -1)
        outputs = self.quantize(values, "noise" if training else "dequantize", self._get_medians())
        likelihood = self._likelihood(outputs)
        likelihood = torch.clamp(likelihood, min=self.likelihood_lower_bound)
        outputs = outputs.reshape(shape)
        outputs = outputs.permute(*inv_perm).contiguous()
        likelihood = likelihood.reshape(shape)
        likelihood = likelihood.permute(*inv_perm).contiguous()
        return outputs, likelihood


eb = EntropyBottleneck(8)
print(sum(p.numel() for p in eb.parameters()))
print([tuple(m.shape) for m in eb.matrices])
print(eb.target)
y = torch.cos(torch.arange(256.) * 0.91).reshape(2, 8, 4, 4) * 3
eb.eval()
y_hat, lik = eb(y)
print(y_hat.shape, lik.shape, lik.dtype)
print("eval bits", round((-torch.log2(lik)).sum().item(), 3))
print(torch.equal(y_hat, torch.round(y - eb._get_medians().reshape(1, 8, 1, 1)) + eb._get_medians().reshape(1, 8, 1, 1)))
eb.train()
y = y.requires_grad_()
y_hat, lik = eb(y)
bpp = torch.log(lik).sum() / (-np.log(2) * 2 * 64)
print("bpp", type(bpp.item()), bpp.dtype, bpp.requires_grad)
bpp.backward()
print(y.grad.shape, eb.matrices[0].grad.shape, eb.quantiles.grad)
aux = eb.loss()
print("aux", round(aux.item(), 3))
aux.backward()
print(eb.quantiles.grad.shape, round(eb.quantiles.grad.abs().sum().item(), 4))
print(eb.matrices[0].grad is not None)
sym = eb.quantize(y.detach(), "symbols")
print(sym.dtype, sym.shape, sym.min().item() <= sym.max().item())
