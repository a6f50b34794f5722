"""3-d Gaussian splatting pieces in the style of graphdeco-inria/gaussian-splatting's Python
code: covariance from scale and quaternion (build_rotation, strip_lowerdiag), EWA projection
with the perspective Jacobian, the 2-d conic and radius, front-to-back alpha compositing by
cumprod over depth-sorted splats, gradients to means, scales and rotations, and degree-1
spherical harmonics colours."""
import math
import torch

torch.set_printoptions(precision=4, sci_mode=False)

def build_rotation(r):
    norm = torch.sqrt(r[:, 0] * r[:, 0] + r[:, 1] * r[:, 1] + r[:, 2] * r[:, 2] + r[:, 3] * r[:, 3])
    q = r / norm[:, None]
    R = torch.zeros((q.size(0), 3, 3))
    r, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - r * z)
    R[:, 0, 2] = 2 * (x * z + r * y)
    R[:, 1, 0] = 2 * (x * y + r * z)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - r * x)
    R[:, 2, 0] = 2 * (x * z - r * y)
    R[:, 2, 1] = 2 * (y * z + r * x)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R

def build_scaling_rotation(s, r):
    L = torch.zeros((s.shape[0], 3, 3), dtype=torch.float)
    R = build_rotation(r)
    L[:, 0, 0] = s[:, 0]
    L[:, 1, 1] = s[:, 1]
    L[:, 2, 2] = s[:, 2]
    return R @ L

def strip_lowerdiag(L):
    uncertainty = torch.zeros((L.shape[0], 6), dtype=torch.float)
    uncertainty[:, 0] = L[:, 0, 0]
    uncertainty[:, 1] = L[:, 0, 1]
    uncertainty[:, 2] = L[:, 0, 2]
    uncertainty[:, 3] = L[:, 1, 1]
    uncertainty[:, 4] = L[:, 1, 2]
    uncertainty[:, 5] = L[:, 2, 2]
    return uncertainty

scales_raw = torch.tensor([[-1.0, -2.0, -0.5], [0.0, -1.0, -1.0], [-3.0, -3.0, -3.0]], requires_grad=True)
rots = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.9, 0.1, -0.2, 0.3], [0.5, 0.5, 0.5, 0.5]], requires_grad=True)
opac_raw = torch.tensor([[0.0], [2.0], [-1.0]], requires_grad=True)
means = torch.tensor([[0.0, 0.0, 4.0], [0.5, -0.3, 5.0], [-0.4, 0.2, 3.0]], requires_grad=True)
scaling_activation = torch.exp
inverse_opacity = lambda x: torch.log(x / (1 - x))
L = build_scaling_rotation(scaling_activation(scales_raw), rots)
cov3d = L @ L.transpose(1, 2)
print(cov3d[1])
print(strip_lowerdiag(cov3d))
print("sym:", torch.allclose(cov3d, cov3d.mT))
print(torch.linalg.eigvalsh(cov3d[1]))
print(inverse_opacity(torch.sigmoid(opac_raw)).squeeze())

# EWA projection
fx = fy = 100.0
W, H = 32, 24
t = means
tx, ty, tz = t[:, 0], t[:, 1], t[:, 2]
J = torch.zeros(3, 2, 3)
J[:, 0, 0] = fx / tz
J[:, 0, 2] = -fx * tx / tz ** 2
J[:, 1, 1] = fy / tz
J[:, 1, 2] = -fy * ty / tz ** 2
cov2d = J @ cov3d @ J.transpose(1, 2)
cov2d = cov2d + 0.3 * torch.eye(2)
det = cov2d[:, 0, 0] * cov2d[:, 1, 1] - cov2d[:, 0, 1] ** 2
conic = torch.stack([cov2d[:, 1, 1] / det, -cov2d[:, 0, 1] / det, cov2d[:, 0, 0] / det], -1)
print("det2d:", det)
print("conic:", conic)
mid = 0.5 * (cov2d[:, 0, 0] + cov2d[:, 1, 1])
lam1 = mid + torch.sqrt(torch.clamp(mid * mid - det, min=0.1))
radius = torch.ceil(3.0 * torch.sqrt(lam1))
print("radius:", radius)
xy = torch.stack([fx * tx / tz + W / 2, fy * ty / tz + H / 2], -1)
print(xy)
# splat onto image
ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float32), torch.arange(W, dtype=torch.float32), indexing="ij")
pix = torch.stack([xs, ys], -1)[None]
d = pix - xy[:, None, None, :]
power = -0.5 * (conic[:, 0, None, None] * d[..., 0] ** 2 + conic[:, 2, None, None] * d[..., 1] ** 2) - conic[:, 1, None, None] * d[..., 0] * d[..., 1]
alpha = torch.clamp(torch.sigmoid(opac_raw)[:, :, None] * torch.exp(power), max=0.99)
order = torch.argsort(tz)
alpha = alpha[order]
colors = torch.eye(3)[order]
T = torch.cumprod(torch.cat([torch.ones(1, H, W), 1 - alpha[:-1]], 0), 0)
img = (T[..., None] * alpha[..., None] * colors[:, None, None, :]).sum(0)
print(img.shape, img.sum(dim=(0, 1)))
loss = (img - 0.1).abs().mean()
loss.backward()
print(f"L1 {loss.item():.6f}")
print(means.grad)
print(scales_raw.grad)
print(rots.grad.norm(dim=1))
# SH degree 0/1 evaluation
C0 = 0.28209479177387814
C1 = 0.4886025119029199
sh = torch.arange(3 * 4 * 3, dtype=torch.float32).reshape(3, 4, 3) / 36
dirs = torch.nn.functional.normalize(means.detach() - torch.tensor([0.0, 0.0, -1.0]), dim=-1)
x, y, z = dirs[:, 0:1], dirs[:, 1:2], dirs[:, 2:3]
rgb = C0 * sh[:, 0] - C1 * y * sh[:, 1] + C1 * z * sh[:, 2] - C1 * x * sh[:, 3]
print(torch.clamp_min(rgb + 0.5, 0.0))
