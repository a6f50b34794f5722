"""Colour jitter written directly on (C, H, W) float tensors, as tensor-only augmentation code
(torchvision-style functional ops re-implemented): grayscale by channel weights, brightness /
contrast / saturation blends with clamp, RGB <-> HSV through unbind, max/min, torch.where, fmod and
an einsum over a one-hot mask, uint8 round trips, and the gradient of a jitter chain. Random draws
are printed only through seed-independent summaries."""
import torch
torch.manual_seed(0)
img = torch.linspace(0, 1, 3*4*4).reshape(3, 4, 4)
def rgb_to_grayscale(img):
    r, g, b = img.unbind(dim=-3)
    l = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype)
    return l.unsqueeze(dim=-3)
def adjust_brightness(img, f):
    return (img * f).clamp(0, 1)
def adjust_contrast(img, f):
    mean = torch.mean(rgb_to_grayscale(img), dim=(-3, -2, -1), keepdim=True)
    return (f * img + (1 - f) * mean).clamp(0, 1)
def adjust_saturation(img, f):
    return (f * img + (1 - f) * rgb_to_grayscale(img)).clamp_(0.0, 1.0)
def _rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc = torch.max(img, dim=-3).values
    minc = torch.min(img, dim=-3).values
    eqc = maxc == minc
    cr = maxc - minc
    ones = torch.ones_like(maxc)
    s = cr / torch.where(eqc, ones, maxc)
    cr_divisor = torch.where(eqc, ones, cr)
    rc = (maxc - r) / cr_divisor
    gc = (maxc - g) / cr_divisor
    bc = (maxc - b) / cr_divisor
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = hr + hg + hb
    h = torch.fmod((h / 6.0 + 1.0), 1.0)
    return torch.stack((h, s, maxc), dim=-3)
def _hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = torch.floor(h * 6.0)
    f = (h * 6.0) - i
    i = i.to(dtype=torch.int32)
    p = torch.clamp((v * (1.0 - s)), 0.0, 1.0)
    q = torch.clamp((v * (1.0 - s * f)), 0.0, 1.0)
    t = torch.clamp((v * (1.0 - s * (1.0 - f))), 0.0, 1.0)
    i = i % 6
    mask = i.unsqueeze(dim=-3) == torch.arange(6, device=i.device).view(-1, 1, 1)
    a1 = torch.stack((v, q, p, p, t, v), dim=-3)
    a2 = torch.stack((t, v, v, q, p, p), dim=-3)
    a3 = torch.stack((p, p, t, v, v, q), dim=-3)
    a4 = torch.stack((a1, a2, a3), dim=-4)
    return torch.einsum("...ijk, ...xijk -> ...xjk", mask.to(dtype=img.dtype), a4)
def adjust_hue(img, hue_factor):
    hsv = _rgb2hsv(img)
    h, s, v = hsv.unbind(dim=-3)
    h = (h + hue_factor) % 1.0
    return _hsv2rgb(torch.stack((h, s, v), dim=-3))
print(adjust_brightness(img, 1.5)[0, 0])
print(adjust_contrast(img, 0.5)[1, 1])
print(adjust_saturation(img, 2.0)[2, 3])
out = adjust_hue(img, 0.1)
print(out.shape, out.dtype, out[:, 1, 2])
hsv = _rgb2hsv(img)
print(torch.allclose(_hsv2rgb(hsv), img, atol=1e-5))
b = torch.empty(1).uniform_(0.8, 1.2)
print(b.shape, 0.8 <= b.item() <= 1.2)
fn_idx = torch.randperm(4)
print(sorted(fn_idx.tolist()))
u8 = (img * 255).to(torch.uint8)
gray = rgb_to_grayscale(u8.float()).to(torch.uint8)
print(gray.dtype, gray[0, 0])
x = img.clone().to(torch.float64).requires_grad_()
adjust_contrast(adjust_brightness(x, 1.2), 0.7).sum().backward()
print(x.grad[0, 0])
