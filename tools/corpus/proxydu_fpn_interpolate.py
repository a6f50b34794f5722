"""An FPN top-down path (1x1 laterals, F.interpolate(size=...) of the coarser map, 3x3
outputs, an extra max-pooled level) and the interpolation calls detection and segmentation code
makes: nearest / nearest-exact / bilinear / bicubic with size= and scale_factor=, both
align_corners, nn.Upsample, gradchecks, and the errors of bad arguments.

Written for the proxydu corpus (detection without torchvision ops), modelled on
torchvision-free FPN implementations; the bicubic resize printed an ulp off PyTorch before the
interpolation kernels followed PyTorch's roundings.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

class FPN(nn.Module):
    def __init__(self, in_channels_list, out_channels):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        last_inner = self.inner_blocks[-1](x[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](x[idx])
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        results.append(F.max_pool2d(results[-1], 1, 2, 0))
        return results

torch.manual_seed(0)
fpn = FPN([8, 16, 32], 4).double()
feats = [torch.randn(2, 8, 13, 15, dtype=torch.float64), torch.randn(2, 16, 7, 8, dtype=torch.float64), torch.randn(2, 32, 4, 4, dtype=torch.float64)]
outs = fpn(feats)
for o in outs:
    print(tuple(o.shape), o.dtype)
s = sum(o.pow(2).mean() for o in outs)
s.backward()
print(fpn.inner_blocks[0].weight.grad.shape)
x = torch.arange(16, dtype=torch.float32).view(1, 1, 4, 4)
print(F.interpolate(x, scale_factor=2, mode="nearest")[0, 0, :3, :5])
print(F.interpolate(x, size=(3, 5), mode="nearest"))
print(F.interpolate(x, size=(6, 6), mode="bilinear", align_corners=False))
print(F.interpolate(x, size=(6, 6), mode="bilinear", align_corners=True))
print(F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False))
print(F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=False, recompute_scale_factor=True).shape)
print(F.interpolate(x, scale_factor=(2, 1), mode="nearest").shape)
print(F.interpolate(x, size=(7, 3), mode="nearest-exact"))
print(F.interpolate(x, size=5, mode="bicubic", align_corners=False))
up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
print(up, up(x).shape)
print(nn.Upsample(size=(5, 5)))
xd = torch.randn(1, 2, 3, 5, dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(lambda t: F.interpolate(t, size=(4, 7), mode="bilinear", align_corners=False), (xd,)))
print(torch.autograd.gradcheck(lambda t: F.interpolate(t, scale_factor=2.5, mode="nearest"), (xd,)))
print(torch.autograd.gradcheck(lambda t: F.interpolate(t, size=(2, 3), mode="bicubic", align_corners=True), (xd,)))
print(torch.autograd.gradcheck(lambda t: F.interpolate(t, scale_factor=0.6, mode="bilinear", antialias=True), (xd,)))
try:
    F.interpolate(x, size=(3, 3), scale_factor=2)
except ValueError as e:
    print("ValueError", e)
try:
    F.interpolate(x, mode="bilinear")
except ValueError as e:
    print("ValueError", e)
try:
    F.interpolate(x, size=(4, 4), mode="nearest", align_corners=True)
except ValueError as e:
    print("ValueError", e)
try:
    F.interpolate(x[0], size=(4, 4), mode="bilinear")
except Exception as e:
    print(type(e).__name__, str(e)[:80])
xi = torch.arange(8).view(1, 1, 2, 4)
try:
    print(F.interpolate(xi, scale_factor=2).dtype)
except Exception as e:
    print(type(e).__name__, str(e)[:80])
x1d = torch.arange(5.).view(1, 1, 5)
print(F.interpolate(x1d, size=8, mode="linear"))
print(F.interpolate(x1d, scale_factor=2))
print(F.upsample_nearest(x, scale_factor=2).shape)
print(F.upsample(x, size=(2, 2), mode="bilinear", align_corners=False))
