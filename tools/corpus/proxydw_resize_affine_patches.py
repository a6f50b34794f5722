"""Geometric augmentation and resizing on image batches without torchvision: affine_grid +
grid_sample (identity, rotation with zeros/border/reflection padding, zoom, gradients to theta and
the image), F.interpolate in every mode (bilinear/bicubic with antialias, area, nearest-exact,
uint8 input, their errors), and ViT-style patches with unfold/fold, Tensor.unfold and
pixel_shuffle."""
import torch
import torch.nn.functional as F
import math
img = torch.arange(2*1*5*5, dtype=torch.float32).reshape(2, 1, 5, 5)
theta = torch.tensor([[[1., 0., 0.], [0., 1., 0.]]]).repeat(2, 1, 1)
grid = F.affine_grid(theta, img.size(), align_corners=False)
print(grid.shape, grid[0, 0, :3])
out = F.grid_sample(img, grid, align_corners=False)
print(torch.allclose(out, img, atol=1e-5))
a = math.pi / 6
rot = torch.tensor([[math.cos(a), -math.sin(a), 0.1], [math.sin(a), math.cos(a), 0.]], dtype=torch.float32).unsqueeze(0).expand(2, 2, 3)
g = F.affine_grid(rot, [2, 1, 5, 5], align_corners=True)
o1 = F.grid_sample(img, g, mode='bilinear', padding_mode='zeros', align_corners=True)
o2 = F.grid_sample(img, g, mode='nearest', padding_mode='border', align_corners=True)
o3 = F.grid_sample(img, g, mode='bilinear', padding_mode='reflection', align_corners=False)
print(o1[0, 0])
print(o2[1, 0])
print(o3[0, 0].round(decimals=3))
theta_p = rot[:1].clone().requires_grad_(True)
x = img[:1].clone().requires_grad_(True)
y = F.grid_sample(x, F.affine_grid(theta_p, x.shape, align_corners=False), align_corners=False)
loss = y.pow(2).mean()
loss.backward()
print(loss.item(), theta_p.grad, x.grad.sum())
try:
    F.affine_grid(torch.zeros(2, 3, 3), (2, 1, 5, 5))
except (ValueError, RuntimeError) as e:
    print(type(e).__name__, e)
sc = torch.tensor([[0.5, 0, 0], [0, 0.5, 0]]).unsqueeze(0)
zoom = F.grid_sample(img[:1], F.affine_grid(sc, (1, 1, 4, 4), align_corners=False), align_corners=False)
print(zoom)
img = torch.arange(1*2*8*8, dtype=torch.float32).view(1, 2, 8, 8) / 128
r1 = F.interpolate(img, size=(4, 4), mode='bilinear', align_corners=False, antialias=True)
print(r1[0, 0])
r2 = F.interpolate(img, size=(4, 4), mode='bilinear', align_corners=False)
print(r2[0, 1])
r3 = F.interpolate(img, scale_factor=0.5, mode='bicubic', antialias=True, align_corners=False)
print(r3[0, 0].round(decimals=4))
r4 = F.interpolate(img, size=(3, 5), mode='area')
print(r4[0, 0])
r5 = F.interpolate(img, scale_factor=2, mode='nearest')
print(r5.shape, r5[0, 0, :2, :4])
r6 = F.interpolate(img, size=(5, 3), mode='bilinear', antialias=True)
print(r6[0, 1])
r7 = F.interpolate(img, size=[16, 12], mode='bicubic', align_corners=True)
print(r7.shape, round(r7.sum().item(), 3))
r8 = F.interpolate(img, size=6, mode='nearest-exact')
print(r8[0, 0])
u8 = (img * 255 / 2).to(torch.uint8)
try:
    r9 = F.interpolate(u8, size=(4, 4), mode='bilinear', antialias=True)
    print(r9.dtype, r9[0, 0])
except RuntimeError as e:
    print("RuntimeError", e)
x = img.clone().double().requires_grad_()
F.interpolate(x, size=(3, 3), mode='bilinear', antialias=True).pow(2).sum().backward()
print(x.grad[0, 0].round(decimals=4))
im3 = img[0]
try:
    F.interpolate(im3, size=(4, 4), mode='bilinear')
except (ValueError, RuntimeError, NotImplementedError) as e:
    print(type(e).__name__, str(e)[:80])
print(F.interpolate(im3.unsqueeze(0), size=(4, 4)).squeeze(0).shape)
try:
    F.interpolate(img, size=(4, 4), mode='nearest', antialias=True)
except (ValueError, RuntimeError, NotImplementedError) as e:
    print(type(e).__name__, str(e)[:80])
print(F.interpolate(img, scale_factor=(0.5, 0.25), mode='bilinear', recompute_scale_factor=True).shape)
print(F.upsample(img, scale_factor=2).shape if hasattr(F, 'upsample') else None)
img = torch.arange(1*2*6*6, dtype=torch.float32).view(1, 2, 6, 6)
p = F.unfold(img, kernel_size=2, stride=2)
print(p.shape, p[0, :, 0])
patches = p.transpose(1, 2).reshape(1, 9, 2, 2, 2)
print(patches.shape)
rec = F.fold(p, output_size=(6, 6), kernel_size=2, stride=2)
print(torch.equal(rec, img))
p2 = F.unfold(img, kernel_size=3, padding=1)
ones = F.fold(F.unfold(torch.ones_like(img), 3, padding=1), (6, 6), 3, padding=1)
print(p2.shape, ones[0, 0])
print(torch.allclose(F.fold(p2, (6, 6), 3, padding=1) / ones, img))
t = img.unfold(2, 3, 3).unfold(3, 3, 3)
print(t.shape, t.stride(), t[0, 1, 1, 0])
t2 = t.contiguous().view(1, 2, -1, 3, 3).permute(0, 2, 1, 3, 4)
print(t2.shape, t2[0, 3, 0])
x = torch.arange(10.)
print(x.unfold(0, 4, 3))
w = img.clone().requires_grad_()
F.unfold(w, 3, dilation=1, stride=1).sum().backward()
print(w.grad[0, 0])
B, C, H, W = 2, 3, 8, 8
ps = 4
imgs = torch.arange(B*C*H*W, dtype=torch.float32).view(B, C, H, W)
x = imgs.reshape(B, C, H // ps, ps, W // ps, ps).permute(0, 2, 4, 1, 3, 5).flatten(1, 2).flatten(2, 4)
print(x.shape, x[0, 1, :5])
y = torch.nn.Unfold(kernel_size=(ps, ps), stride=ps)(imgs).transpose(1, 2)
print(y.shape, torch.equal(x.sort(-1).values, y.sort(-1).values))
fold = torch.nn.Fold(output_size=(8, 8), kernel_size=ps, stride=ps)
print(torch.equal(fold(y.transpose(1, 2)), imgs))
try:
    F.fold(torch.zeros(1, 5, 4), (4, 4), 2)
except RuntimeError as e:
    print("RuntimeError", str(e)[:90])
print(F.pixel_shuffle(torch.arange(16.).view(1, 4, 2, 2), 2))
print(F.pixel_unshuffle(torch.arange(16.).view(1, 1, 4, 4), 2).shape)
scale = torch.tensor(0.5)
try:
    F.interpolate(img, scale_factor=scale, mode='bilinear')
except TypeError as e:
    print("TypeError", "invalid combination of arguments" in str(e))
print(F.interpolate(img, scale_factor=scale.item(), mode='bilinear').shape)
print(F.interpolate(img, scale_factor=scale, mode='bilinear', recompute_scale_factor=True).shape)
