"""Autoregressive masks two ways, in the style of Nagim123/DeepImageInpainting's PixelCNN and
karpathy/pytorch-made (written for this corpus, not a copy): a Conv2d subclass whose 'A'/'B' mask
is a buffer cloned from weight.data, filled with fill_ and zeroed by slice assignment (with a
bool-as-int offset kW // 2 + (mask_type == 'B')), applied by weight.data *= mask in forward;
BatchNorm2d + ReLU(True) stacks, 256-way logits reshaped to (N, 256, C, H, W) and trained with
F.cross_entropy on uint8-range integer targets; the receptive field checked through input
gradients; raster-scan greedy sampling under no_grad; a MADE whose connectivity comes from numpy
(m[l-1][:, None] <= m[l][None, :]) copied into buffers with mask.data.copy_(from_numpy(uint8 .T)),
F.linear(x, mask * weight, bias), the autoregressive property checked per output, mask resampling
across orderings, and a state_dict round trip that keeps the masks.  Every random draw comes from
one numpy RandomState.
"""
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(5)


def init_(module, scale=0.3):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.from_numpy((scale * rs.randn(*p.shape) / np.sqrt(p[0].numel())).astype(np.float32)))
            elif "bias" in name:
                p.copy_(torch.from_numpy((0.1 * rs.randn(*p.shape)).astype(np.float32)))
    return module


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kh, kw = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kh // 2, kw // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kh // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class PixelCNN(nn.Module):
    def __init__(self, ch=8, side=5):
        super().__init__()
        self.side = side
        self.net = nn.Sequential(
            MaskedConv2d("A", 1, ch, 5, 1, 2, bias=False), nn.BatchNorm2d(ch), nn.ReLU(True),
            MaskedConv2d("B", ch, ch, 3, 1, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(True),
            nn.Conv2d(ch, 256, 1))

    def forward(self, x):
        return self.net(x).reshape(-1, 256, 1, self.side, self.side)


model = init_(PixelCNN())
print(model.net[0].mask[0, 0].int().tolist())
print(model.net[3].mask[0, 0].int().tolist(), model.net[0].mask.dtype)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
imgs = torch.from_numpy(rs.randint(0, 256, (6, 1, 5, 5)))
for step in range(4):
    logits = model(imgs.float() / 255.0)
    loss = F.cross_entropy(logits, imgs)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} nll {loss.item():.4f} logits {tuple(logits.shape)}")
w0 = model.net[0].weight
print("masked weights stay zero:", bool((w0.data[model.net[0].mask == 0] == 0).all()))

model.eval()
x = torch.from_numpy(rs.rand(1, 1, 5, 5).astype(np.float32)).requires_grad_()
model(x)[0, :, 0, 2, 2].sum().backward()
print("pixel (2,2) sees:")
print((x.grad[0, 0] != 0).int().tolist())

sample = torch.zeros(2, 1, 5, 5)
with torch.no_grad():
    for i in range(5):
        for j in range(5):
            probs = F.softmax(model(sample)[:, :, 0, i, j], dim=1)
            sample[:, 0, i, j] = probs.argmax(1).float() / 255.0
print("greedy sample:", tuple(sample.shape), round(sample.sum().item(), 4))


class MaskedLinear(nn.Linear):
    def __init__(self, n_in, n_out, bias=True):
        super().__init__(n_in, n_out, bias)
        self.register_buffer("mask", torch.ones(n_out, n_in))

    def set_mask(self, mask):
        self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

    def forward(self, x):
        return F.linear(x, self.mask * self.weight, self.bias)


class MADE(nn.Module):
    def __init__(self, nin, hidden, nout, num_masks=1):
        super().__init__()
        self.nin, self.hidden, self.num_masks, self.seed = nin, hidden, num_masks, 0
        sizes = [nin] + hidden + [nout]
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [MaskedLinear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])
        self.m = {}
        self.update_masks()

    def update_masks(self):
        if self.m and self.num_masks == 1:
            return
        rng = np.random.RandomState(self.seed)
        self.seed = (self.seed + 1) % self.num_masks
        L = len(self.hidden)
        self.m[-1] = rng.permutation(self.nin)
        for l in range(L):
            self.m[l] = rng.randint(self.m[l - 1].min(), self.nin - 1, size=self.hidden[l])
        masks = [self.m[l - 1][:, None] <= self.m[l][None, :] for l in range(L)]
        masks.append(self.m[L - 1][:, None] < self.m[-1][None, :])
        for layer, mk in zip([l for l in self.net.modules() if isinstance(l, MaskedLinear)], masks):
            layer.set_mask(mk)

    def forward(self, x):
        return self.net(x)


D = 6
made = init_(MADE(D, [16, 16], D, num_masks=2))
xin = torch.from_numpy((rs.rand(1, D) > 0.5).astype(np.float32))
for ordering in range(2):
    made.update_masks()
    order = made.m[-1].tolist()
    ok = True
    for k in range(D):
        xt = xin.clone().requires_grad_(True)
        made(xt)[0, k].backward()
        deps = np.where(xt.grad[0].numpy() != 0)[0].tolist()
        ok &= all(order[d] < order[k] for d in deps)
    print("ordering", order, "autoregressive:", ok)
xb = torch.from_numpy((rs.rand(10, D) > 0.5).astype(np.float32))
mopt = torch.optim.SGD(made.parameters(), lr=0.1)
for step in range(3):
    made.update_masks()
    loss = F.binary_cross_entropy_with_logits(made(xb), xb, reduction="sum") / xb.size(0)
    mopt.zero_grad()
    loss.backward()
    mopt.step()
    print(f"made step {step} nll {loss.item():.4f}")
buf = io.BytesIO()
torch.save(made.state_dict(), buf)
buf.seek(0)
state = torch.load(buf)
print(sorted(k for k in state if k.endswith("mask")), state["net.0.mask"].sum().item())
