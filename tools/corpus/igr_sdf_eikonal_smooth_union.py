"""Signed distance functions as IGR / NeuS-style research code writes them: analytic sphere and
box SDFs, a smooth minimum with lerp, normals and the eikonal term through
torch.autograd.grad(create_graph=True), an MLP SDF with Softplus(beta=100) and deterministic
weights, and a Laplacian by a second autograd.grad per coordinate."""
import torch
import torch.nn as nn

torch.manual_seed(0)

def sdf_sphere(p, r=1.0):
    return p.norm(dim=-1, keepdim=True) - r

def sdf_box(p, b):
    q = p.abs() - b
    return q.clamp(min=0).norm(dim=-1, keepdim=True) + q.max(dim=-1, keepdim=True).values.clamp(max=0)

def sdf_union(a, b):
    return torch.minimum(a, b)

def smooth_min(a, b, k=0.1):
    h = torch.clamp(0.5 + 0.5 * (b - a) / k, 0.0, 1.0)
    return torch.lerp(b, a, h) - k * h * (1.0 - h)

pts = torch.tensor([[0.0, 0.0, 0.0], [1.5, 0.0, 0.0], [0.5, 0.5, 0.5], [2.0, 2.0, 0.0]], requires_grad=True)
d = sdf_sphere(pts)
print(d.squeeze(-1))
grad = torch.autograd.grad(d.sum(), pts, create_graph=True)[0]
print("normals:", grad)
print("eikonal:", ((grad.norm(dim=-1) - 1) ** 2).mean().item())
box = sdf_box(pts, torch.tensor([0.5, 0.5, 0.5]))
print("box sdf", box.squeeze(-1).detach())
u = smooth_min(d, box)
print("smooth union", u.detach().squeeze())
print("hard union", sdf_union(d, box).detach().flatten())

class SDFNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, hidden), nn.Softplus(beta=100), nn.Linear(hidden, hidden), nn.Softplus(beta=100), nn.Linear(hidden, 1))
        for m in self.net:
            if isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0.0)
                with torch.no_grad():
                    n = m.weight.numel()
                    m.weight.copy_(torch.sin(torch.arange(n, dtype=torch.float32)).reshape(m.weight.shape) * 0.3)
    def forward(self, x):
        return self.net(x)

net = SDFNet()
x = torch.linspace(-1, 1, 24).reshape(8, 3).requires_grad_(True)
y = net(x)
g = torch.autograd.grad(outputs=y, inputs=x, grad_outputs=torch.ones_like(y), create_graph=True, retain_graph=True, only_inputs=True)[0]
print(g.shape)
eik = ((g.norm(2, dim=1) - 1) ** 2).mean()
surf = y.abs().mean()
loss = surf + 0.1 * eik
loss.backward()
print(f"surface {surf.item():.5f} eikonal {eik.item():.5f}")
total = sum(p.grad.norm() ** 2 for p in net.parameters()) ** 0.5
print(f"param grad norm {total.item():.5f}")
# hessian trace (laplacian) via double backward
x2 = torch.tensor([[0.3, -0.2, 0.1]], requires_grad=True)
d2 = sdf_sphere(x2)
g2 = torch.autograd.grad(d2, x2, create_graph=True)[0]
lap = sum(torch.autograd.grad(g2[0, i], x2, retain_graph=True)[0][0, i] for i in range(3))
print("laplacian %.5f expected %.5f" % (lap.item(), 2 / x2.norm().item()))
