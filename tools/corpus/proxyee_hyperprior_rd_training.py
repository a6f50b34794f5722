"""A scale hyperprior codec trained on a rate-distortion loss, as neural-codec course notebooks
write it: Conv2d / ConvTranspose2d analysis and synthesis transforms (stride 2, padding=k//2,
output_padding), straight-through rounding x + (round(x) - x).detach(), Gaussian conditional
likelihoods from erfc with lower-bounded scales and a scale table, a factorised prior for z,
bpp = sum(-log2 p) / num_pixels, lambda * 255^2 * MSE, PSNR, a main and an auxiliary Adam
optimizer split by parameter names ending in '.quantiles', gradient clipping, and checkpoint
state_dict surgery (renamed keys, strict=False).  Weights are set deterministically."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(cin, cout, k=5, s=2):
    return nn.Conv2d(cin, cout, kernel_size=k, stride=s, padding=k // 2)


def deconv(cin, cout, k=5, s=2):
    return nn.ConvTranspose2d(cin, cout, kernel_size=k, stride=s, output_padding=s - 1, padding=k // 2)


def get_scale_table(min=0.11, max=256, levels=64):
    return torch.exp(torch.linspace(math.log(min), math.log(max), levels))


class LowerBound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bound):
        ctx.save_for_backward(x, bound)
        return torch.max(x, bound)

    @staticmethod
    def backward(ctx, grad_output):
        x, bound = ctx.saved_tensors
        pass_through = (x >= bound) | (grad_output < 0)
        return pass_through.type(grad_output.dtype) * grad_output, None


def ste_round(x):
    return x + (torch.round(x) - x).detach()


class FactorizedPrior(nn.Module):
    """A one-layer factorised density per channel: logistic cdf with learned location/scale."""

    def __init__(self, C):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(C, 1))
        self.log_scale = nn.Parameter(torch.zeros(C, 1))
        self.quantiles = nn.Parameter(torch.tensor([-4.0, 0.0, 4.0]).repeat(C, 1))
        self.register_buffer("target", torch.tensor([-math.log(2 / 1e-3 - 1), 0.0, math.log(2 / 1e-3 - 1)]))

    def _logits(self, v, stop_gradient=False):
        loc, log_scale = self.loc, self.log_scale
        if stop_gradient:
            loc, log_scale = loc.detach(), log_scale.detach()
        return (v - loc) * F.softplus(-log_scale) * 2

    def forward(self, z):
        C = z.size(1)
        v = z.transpose(0, 1).reshape(C, -1)
        lower = self._logits(v - 0.5)
        upper = self._logits(v + 0.5)
        sign = -torch.sign(lower + upper).detach()
        lik = torch.abs(torch.sigmoid(sign * upper) - torch.sigmoid(sign * lower))
        return lik.clamp(min=1e-9).reshape(C, z.size(0), *z.shape[2:]).transpose(0, 1)

    def loss(self):
        return torch.abs(self._logits(self.quantiles, stop_gradient=True) - self.target).sum()


class ScaleHyperprior(nn.Module):
    def __init__(self, N=8, M=12):
        super().__init__()
        self.g_a = nn.Sequential(conv(3, N), nn.ReLU(), conv(N, N), nn.ReLU(), conv(N, M))
        self.g_s = nn.Sequential(deconv(M, N), nn.ReLU(), deconv(N, N), nn.ReLU(), deconv(N, 3))
        self.h_a = nn.Sequential(conv(M, N, 3, 1), nn.ReLU(inplace=True), conv(N, N), nn.ReLU(inplace=True), conv(N, N))
        self.h_s = nn.Sequential(deconv(N, N), nn.ReLU(inplace=True), deconv(N, N), nn.ReLU(inplace=True), conv(N, M, 3, 1), nn.ReLU(inplace=True))
        self.entropy_bottleneck = FactorizedPrior(N)
        self.register_buffer("scale_table", get_scale_table())
        self.register_buffer("scale_bound", torch.tensor([0.11]))

    def gaussian_likelihood(self, y_hat, scales):
        scales = LowerBound.apply(scales, self.scale_bound)
        values = torch.abs(y_hat)
        upper = 0.5 * torch.erfc(-(2 ** -0.5) * (0.5 - values) / scales)
        lower = 0.5 * torch.erfc(-(2 ** -0.5) * (-0.5 - values) / scales)
        return torch.clamp(upper - lower, min=1e-9)

    def forward(self, x):
        y = self.g_a(x)
        z = self.h_a(torch.abs(y))
        z_hat = ste_round(z)
        z_likelihoods = self.entropy_bottleneck(z_hat)
        scales_hat = self.h_s(z_hat)
        y_hat = ste_round(y)
        y_likelihoods = self.gaussian_likelihood(y_hat, scales_hat)
        x_hat = self.g_s(y_hat)
        return {"x_hat": x_hat, "likelihoods": {"y": y_likelihoods, "z": z_likelihoods}}

    def aux_loss(self):
        return sum(m.loss() for m in self.modules() if isinstance(m, FactorizedPrior))

    def build_indexes(self, scales):
        scales = torch.max(scales, self.scale_bound)
        indexes = scales.new_full(scales.size(), len(self.scale_table) - 1).int()
        for s in self.scale_table[:-1]:
            indexes -= (scales <= s).int()
        return indexes


class RateDistortionLoss(nn.Module):
    def __init__(self, lmbda=1e-2):
        super().__init__()
        self.mse = nn.MSELoss()
        self.lmbda = lmbda

    def forward(self, output, target):
        N, _, H, W = target.size()
        out = {}
        num_pixels = N * H * W
        out["bpp_loss"] = sum((torch.log(l).sum() / (-math.log(2) * num_pixels)) for l in output["likelihoods"].values())
        out["mse_loss"] = self.mse(output["x_hat"], target)
        out["loss"] = self.lmbda * 255 ** 2 * out["mse_loss"] + out["bpp_loss"]
        return out


def det_init(model):
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if name.endswith("quantiles") or "entropy_bottleneck" in name:
                continue
            p.copy_(0.25 * torch.sin(torch.arange(p.numel(), dtype=p.dtype) * (0.37 + 0.011 * i)).reshape(p.shape))


def configure_optimizers(net, lr=1e-3, aux_lr=1e-2):
    parameters = {n for n, p in net.named_parameters() if not n.endswith(".quantiles") and p.requires_grad}
    aux_parameters = {n for n, p in net.named_parameters() if n.endswith(".quantiles") and p.requires_grad}
    params_dict = dict(net.named_parameters())
    assert len(parameters & aux_parameters) == 0
    assert len(parameters | aux_parameters) == len(params_dict)
    optimizer = torch.optim.Adam((params_dict[n] for n in sorted(parameters)), lr=lr)
    aux_optimizer = torch.optim.Adam((params_dict[n] for n in sorted(aux_parameters)), lr=aux_lr)
    return optimizer, aux_optimizer


def psnr(a, b):
    mse = torch.mean((a - b) ** 2).item()
    return -10 * math.log10(mse)


net = ScaleHyperprior()
det_init(net)
print(net.h_s)
print(f"{sum(p.numel() for p in net.parameters()):,} parameters")
print([n for n, _ in net.named_parameters() if n.endswith(".quantiles")])
yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
img = torch.stack([torch.sin(xx / 5) * torch.cos(yy / 7), torch.cos((xx + yy) / 9), torch.sin(xx * yy / 200)])
x = ((img + 1) / 2).unsqueeze(0).repeat(2, 1, 1, 1)
print(x.shape, x.dtype, round(x.min().item(), 4), round(x.max().item(), 4))

out = net(x)
print({k: tuple(v.shape) for k, v in out["likelihoods"].items()}, tuple(out["x_hat"].shape))
criterion = RateDistortionLoss(lmbda=0.0067)
optimizer, aux_optimizer = configure_optimizers(net)
print(len(optimizer.param_groups[0]["params"]), len(aux_optimizer.param_groups[0]["params"]))
for step in range(6):
    optimizer.zero_grad()
    aux_optimizer.zero_grad()
    out_net = net(x)
    out_criterion = criterion(out_net, x)
    out_criterion["loss"].backward()
    total_norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    optimizer.step()
    aux_loss = net.aux_loss()
    aux_loss.backward()
    aux_optimizer.step()
    print(f"step {step} | Loss: {out_criterion['loss'].item():.4f} | MSE loss: {out_criterion['mse_loss'].item():.5f} | "
          f"Bpp loss: {out_criterion['bpp_loss'].item():.4f} | Aux loss: {aux_loss.item():.3f} | grad norm {total_norm.item():.4f}")

net.eval()
with torch.no_grad():
    out_net = net(x)
    x_hat = out_net["x_hat"].clamp_(0, 1)
    num_pixels = x.size(0) * x.size(2) * x.size(3)
    bpp = sum(torch.log(l).sum() / (-math.log(2) * num_pixels) for l in out_net["likelihoods"].values())
    print(f"PSNR {psnr(x_hat, x):.3f} dB, bpp {bpp.item():.4f}")
    scales = net.h_s(torch.round(net.h_a(torch.abs(net.g_a(x)))))
    idx = net.build_indexes(scales)
    print(idx.dtype, idx.shape, idx.min().item(), idx.max().item())
print(net.entropy_bottleneck.quantiles.data[:2])

# checkpoint surgery: a DataParallel checkpoint with renamed keys, loaded non-strictly
sd = net.state_dict()
ckpt = {"module." + k.replace("entropy_bottleneck", "eb"): v for k, v in sd.items()}
ckpt["module.extra.weight"] = torch.zeros(1)
renamed = {k[len("module."):].replace("eb.", "entropy_bottleneck."): v for k, v in ckpt.items() if k.startswith("module.")}
net2 = ScaleHyperprior()
res = net2.load_state_dict(renamed, strict=False)
print(res.missing_keys, res.unexpected_keys)
print(torch.equal(net2.g_a[0].weight, net.g_a[0].weight))
try:
    net2.load_state_dict(renamed)
except RuntimeError as e:
    print(str(e).splitlines()[0])
del renamed["scale_table"]
print(net2.load_state_dict(renamed, strict=False))
