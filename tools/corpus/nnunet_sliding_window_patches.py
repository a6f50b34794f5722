"""Sliding-window inference over a volume as patch-based segmentation repositories write it:
pad to a multiple of the stride, Tensor.unfold over three dims into overlapping patches, batched
softmax predictions added back with a count map and averaged, the padding cropped; nnU-Net's
Gaussian importance map (nnunet/network_architecture/neural_network.py, _get_gaussian);
non-overlapping patches folded back with view / permute.

Adapted: a two-layer 3-D conv net with weights from linspace in place of a trained network; a
14x13x15 synthetic volume; the Gaussian built with torch instead of scipy.ndimage.
"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def extract_patches(vol, patch, stride):
    # vol: (C, D, H, W) -> (n, C, p, p, p)
    C = vol.shape[0]
    patches = vol.unfold(1, patch, stride).unfold(2, patch, stride).unfold(3, patch, stride)
    print("unfolded", patches.shape, patches.is_contiguous())
    grid = patches.shape[1:4]
    patches = patches.permute(1, 2, 3, 0, 4, 5, 6).contiguous().view(-1, C, patch, patch, patch)
    return patches, grid


def pad_to_multiple(vol, patch, stride):
    D, H, W = vol.shape[-3:]
    pads = []
    for s in (W, H, D):
        n = max(math.ceil((s - patch) / stride), 0)
        need = n * stride + patch - s
        pads += [need // 2, need - need // 2]
    return F.pad(vol, pads, mode="constant", value=0), pads


class TinySeg(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(1, 4, 3, padding=1)
        self.head = nn.Conv3d(4, 3, 1)
        with torch.no_grad():
            self.conv.weight.copy_(torch.linspace(-0.5, 0.5, 108).view(4, 1, 3, 3, 3))
            self.conv.bias.fill_(0.01)
            self.head.weight.copy_(torch.linspace(-1, 1, 12).view(3, 4, 1, 1, 1))
            self.head.bias.zero_()

    def forward(self, x):
        return self.head(F.leaky_relu(self.conv(x), 0.1))


@torch.no_grad()
def sliding_window_inference(vol, model, patch=8, stride=4, num_classes=3):
    vol, pads = pad_to_multiple(vol, patch, stride)
    print("padded", tuple(vol.shape), pads)
    C, D, H, W = vol.shape
    out = torch.zeros(num_classes, D, H, W)
    count = torch.zeros(1, D, H, W)
    patches, grid = extract_patches(vol, patch, stride)
    print("patches", patches.shape, "grid", tuple(grid))
    preds = []
    for batch in torch.split(patches, 4):
        preds.append(torch.softmax(model(batch), dim=1))
    preds = torch.cat(preds)
    i = 0
    for zi in range(grid[0]):
        for yi in range(grid[1]):
            for xi in range(grid[2]):
                z, y, x = zi * stride, yi * stride, xi * stride
                out[:, z:z + patch, y:y + patch, x:x + patch] += preds[i]
                count[:, z:z + patch, y:y + patch, x:x + patch] += 1
                i += 1
    out /= count
    # crop the padding
    out = out[:, pads[4]:D - pads[5], pads[2]:H - pads[3], pads[0]:W - pads[1]]
    return out, count


vol = torch.sin(torch.arange(14 * 13 * 15, dtype=torch.float32) / 17.0).reshape(1, 14, 13, 15)
model = TinySeg().eval()
prob, count = sliding_window_inference(vol, model)
print("prob", prob.shape, prob.sum(0).mean().item())
print("count min/max", count.min().item(), count.max().item(), count.unique())
seg = prob.argmax(0)
print("labels", torch.bincount(seg.flatten(), minlength=3))
full = torch.softmax(model(vol.unsqueeze(0)), 1)[0]
print("max diff vs whole volume", f"{(full - prob).abs().max().item():.4f}")

# gaussian importance map as in nnU-Net
def gaussian_importance(patch, sigma_scale=1. / 8):
    c = (torch.arange(patch, dtype=torch.float32) - (patch - 1) / 2)
    g1 = torch.exp(-c ** 2 / (2 * (patch * sigma_scale) ** 2))
    g = g1[:, None, None] * g1[None, :, None] * g1[None, None, :]
    g = g / g.max()
    g[g == 0] = g[g != 0].min()
    return g

g = gaussian_importance(8)
print("gaussian", g.shape, round(g.sum().item(), 4), g[3:5, 3:5, 3:5].mean().item())

# patches via unfold with step equal to size (non-overlapping) and back via view/permute
v = torch.arange(2 * 8 * 8 * 8).float().view(2, 8, 8, 8)
p = v.unfold(1, 4, 4).unfold(2, 4, 4).unfold(3, 4, 4)
unfold_shape = p.size()
p = p.contiguous().view(-1, 4, 4, 4)
print("non-overlap", p.shape, unfold_shape)
back = p.view(unfold_shape).permute(0, 1, 4, 2, 5, 3, 6).contiguous().view(2, 8, 8, 8)
print("reconstructed equal:", torch.equal(back, v), (back == v).all().item())
print("stride", v.unfold(3, 4, 2).stride(), v.unfold(3, 4, 2).shape)
