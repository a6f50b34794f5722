"""Soft rasterisation in the style of SoftRas-like plain-PyTorch renderers: edge functions and
barycentric coordinates of 2-d triangles on a pixel grid, sigmoid coverage of the signed
distance, a softmax z-buffer with a background logit, alpha as 1 - prod(1 - p), and a silhouette
MSE whose gradient reaches the triangle vertices."""
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=4, sci_mode=False)

def edge_function(a, b, p):
    return (p[..., 0] - a[..., 0]) * (b[..., 1] - a[..., 1]) - (p[..., 1] - a[..., 1]) * (b[..., 0] - a[..., 0])

def barycentric(tri, p):
    v0, v1, v2 = tri[..., 0, :], tri[..., 1, :], tri[..., 2, :]
    area = edge_function(v0, v1, v2)
    w0 = edge_function(v1, v2, p) / area
    w1 = edge_function(v2, v0, p) / area
    w2 = edge_function(v0, v1, p) / area
    return torch.stack([w0, w1, w2], dim=-1)

H, W = 6, 6
ys, xs = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
pix = torch.stack([xs, ys], -1).float() + 0.5
pix = pix / torch.tensor([W, H]) * 2 - 1
print(pix.shape, pix.dtype)

tris = torch.tensor([[[-0.8, -0.8], [0.8, -0.6], [0.0, 0.9]],
                     [[-0.5, 0.0], [0.9, 0.2], [0.2, 0.8]]], requires_grad=True)
z = torch.tensor([[0.5, 0.5, 0.5], [0.3, 0.4, 0.2]])
colors = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])

def render(tris, sigma=1e-2, gamma=1e-1):
    bary = barycentric(tris[:, None, None], pix[None])  # F,H,W,3
    inside_d = bary.min(dim=-1).values
    prob = torch.sigmoid(inside_d / sigma)
    zi = (bary * z[:, None, None, :]).sum(-1)
    logits = -zi / gamma
    logits = torch.where(prob > 0.5, logits, torch.full_like(logits, -1e4))
    bg = torch.full((1, H, W), -1.0 / gamma)
    weights = torch.softmax(torch.cat([logits, bg], 0), dim=0)
    rgb = (weights[:-1, ..., None] * prob[..., None] * colors[:, None, None, :]).sum(0)
    alpha = 1 - torch.prod(1 - prob, dim=0)
    return rgb, alpha, bary

rgb, alpha, bary = render(tris)
print(rgb.shape, alpha.shape)
print(alpha)
print(rgb[..., 0])
print(rgb[..., 2])
print("bary sums to one:", torch.allclose(bary.sum(-1), torch.ones(2, H, W)))
target = torch.zeros(H, W)
target[1:5, 1:5] = 1
loss = F.mse_loss(alpha, target)
loss.backward()
print(f"loss = {loss.item():.5f}")
print(tris.grad)
print("grad finite:", torch.isfinite(tris.grad).all().item())
