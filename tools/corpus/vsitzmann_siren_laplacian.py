# SIREN (vsitzmann/siren explore_siren notebook) with deterministic target image
import math
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def get_mgrid(sidelen, dim=2):
    '''Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1.'''
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                            np.sqrt(6 / self.in_features) / self.omega_0)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))

    def forward_with_intermediate(self, input):
        intermediate = self.omega_0 * self.linear(input)
        return torch.sin(intermediate), intermediate


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features,
                 outermost_linear=False, first_omega_0=30, hidden_omega_0=30.):
        super().__init__()
        self.net = []
        self.net.append(SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0))
        for i in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features, is_first=False,
                                      omega_0=hidden_omega_0))
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                             np.sqrt(6 / hidden_features) / hidden_omega_0)
            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features, is_first=False,
                                      omega_0=hidden_omega_0))
        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        output = self.net(coords)
        return output, coords


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
    return grad


def divergence(y, x):
    div = 0.
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i:i + 1]
    return div


def laplace(y, x):
    grad = gradient(y, x)
    return divergence(grad, x)


torch.manual_seed(0)
sidelen = 16
coords = get_mgrid(sidelen, 2)
print(coords.shape, coords[:3])
img = (torch.sin(3 * coords[:, :1]) * torch.cos(2 * coords[:, 1:])).float()
print("target", img.shape, img.mean().item())

net = Siren(in_features=2, out_features=1, hidden_features=32, hidden_layers=2, outermost_linear=True)
# bounds of uniform_ init
for i, layer in enumerate(net.net):
    lin = layer.linear if isinstance(layer, SineLayer) else layer
    w = lin.weight
    bound = 1 / lin.in_features if i == 0 else math.sqrt(6 / lin.in_features) / 30
    print(i, tuple(w.shape), bool(w.abs().max() <= bound), round(bound, 5))

# deterministic weights so the losses are reproducible
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        k = torch.arange(p.numel(), dtype=torch.float32).reshape(p.shape)
        scale = 0.5 if i == 0 else 0.05
        p.copy_(torch.sin(k * 0.37 + i) * scale)

out, c = net(coords)
print("output", out.shape, c.requires_grad, c.is_leaf)
g = gradient(out, c)
lap = laplace(out, c)
print("grad", g.shape, "norm", g.norm().item())
print("laplace", lap.shape, lap.abs().mean().item())

optim = torch.optim.Adam(lr=1e-4, params=net.parameters())
for step in range(25):
    model_output, coords_ = net(coords)
    loss = ((model_output - img) ** 2).mean()
    if step % 5 == 0:
        psnr = 10 * torch.log10(1 / loss)
        print("Step %d, Total loss %0.6f, PSNR %.3f" % (step, loss, psnr))
    optim.zero_grad()
    loss.backward()
    optim.step()

# Poisson: fit gradients
gt_grad = torch.cat([3 * torch.cos(3 * coords[:, :1]) * torch.cos(2 * coords[:, 1:]),
                     -2 * torch.sin(3 * coords[:, :1]) * torch.sin(2 * coords[:, 1:])], -1)
out, c = net(coords)
grad_loss = ((gradient(out, c) - gt_grad) ** 2).sum(-1).mean()
print("gradient loss", grad_loss.item())
grad_loss.backward()
print("param grad norm", torch.nn.utils.clip_grad_norm_(net.parameters(), 1e9).item())
