"""Robotics toy code in plain PyTorch, after Jooh34/differentiable-fk's quaternion joints
chained by 4x4 homogeneous bmm (written into a preallocated tensor, reading the previous joint
through .clone()) and its two backward passes per step (retain_graph=True); planar inverse
kinematics by gradient descent on joint angles; a LiDAR scan's bearings by atan2 binned with
bucketize, headings wrapped with remainder and integrated with cumsum; pinhole projection of a
depth map through meshgrid, inverse and einsum; and a soft rasteriser (sigmoid edge functions,
softmax depth blending) whose vertices get a gradient."""
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(3)


def quaternion_to_homogeneous(q):
    r, i, j, k = torch.unbind(q, -1)
    two_s = 2.0 / ((q * q).sum(-1) + 1e-9)
    zeros = torch.zeros(q.shape[:-1])
    o = torch.stack((1 - two_s * (j * j + k * k), two_s * (i * j - k * r), two_s * (i * k + j * r), zeros,
                     two_s * (i * j + k * r), 1 - two_s * (i * i + k * k), two_s * (j * k - i * r), zeros,
                     two_s * (i * k - j * r), two_s * (j * k + i * r), 1 - two_s * (i * i + j * j), zeros,
                     zeros, zeros, zeros, torch.ones(q.shape[:-1])), -1)
    return o.reshape(q.shape[:-1] + (4, 4))


class FKNet(nn.Module):
    def __init__(self, num_joint):
        super().__init__()
        self.num_joint = num_joint
        self.encoder = nn.Sequential(nn.Linear(3, 32), nn.LeakyReLU(), nn.Linear(32, num_joint * 4), nn.Tanh())

    def forward(self, x):
        b = x.shape[0]
        joints = self.encoder(x)
        coords = torch.zeros((b, self.num_joint, 4, 4))
        T = torch.tensor([[1, 0, 0, 0], [0, 1, 0, 0.4], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=torch.float)
        T = T.unsqueeze(0).repeat((b, 1, 1))
        for j in range(self.num_joint):
            c = torch.bmm(T, quaternion_to_homogeneous(joints[:, j * 4:j * 4 + 4]))
            coords[:, j] = c if j == 0 else torch.bmm(coords[:, j - 1].clone(), c)
        pts = torch.zeros((b, self.num_joint, 3))
        for j in range(self.num_joint):
            tr = torch.transpose(coords, 2, 3)
            pts[:, j] = tr[:, j, 3, :3] / (tr[:, j, 3, 3].unsqueeze(-1) + 1e-9)
        return pts


net = FKNet(3)
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.4, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
X = torch.from_numpy(rng.uniform(0, 1, (8, 3)).astype(np.float32))
mse = nn.MSELoss(reduction="sum")
for epoch in range(3):
    opt.zero_grad()
    pts = net(X)
    cost = mse(pts[:, -1], 0.8 * X)
    cost.backward(retain_graph=True)
    height = pts[:, 0, 1]
    for i in range(1, pts.shape[1]):
        height += pts[:, i, 1]
    (0.01 * height.sum()).backward()
    opt.step()
    print("fk epoch %d cost %.4f" % (epoch, cost.item()), pts.grad_fn.name(), height.grad_fn.name())

lengths = torch.tensor([1.0, 0.8, 0.5])
goal = torch.tensor([1.2, 1.1])
q = torch.zeros(3, requires_grad=True)
ik_opt = torch.optim.SGD([q], lr=0.05)
for it in range(25):
    ik_opt.zero_grad()
    a = torch.cumsum(q, 0)
    tip = torch.stack([(lengths * torch.cos(a)).sum(), (lengths * torch.sin(a)).sum()])
    err = ((tip - goal) ** 2).sum()
    err.backward()
    ik_opt.step()
    with torch.no_grad():
        q.clamp_(-math.pi, math.pi)
    if it % 6 == 0:
        print("ik %2d err %.5f" % (it, err.item()), [round(v, 4) for v in q.tolist()])

angles = torch.linspace(-math.pi, math.pi, 16)
ranges = 2.0 + 0.5 * torch.cos(3 * angles)
scan = torch.stack([ranges * torch.cos(angles), ranges * torch.sin(angles)], -1)
bearing = torch.atan2(scan[:, 1], scan[:, 0])
print("bins", torch.bucketize(bearing, torch.linspace(-math.pi, math.pi, 5)).tolist())
print("bearing ends %.7f %.7f" % (bearing[0].item(), bearing[-1].item()))
dth = torch.tensor([0.5, 1.2, 2.0, 2.5, -3.0, 1.9])
heading = torch.cumsum(dth, 0)
wrapped = torch.remainder(heading + math.pi, 2 * math.pi) - math.pi
print("wrapped", [round(v, 4) for v in wrapped.tolist()])
print("atan2 wrap", [round(v, 4) for v in torch.atan2(torch.sin(heading), torch.cos(heading)).tolist()])
v = torch.tensor([1.0, 0.5, 0.8, 1.2, 0.3, 0.7])
traj = torch.cumsum(torch.stack([v * torch.cos(wrapped), v * torch.sin(wrapped)], -1), 0)
print("trajectory end", [round(x, 4) for x in traj[-1].tolist()])
grid = torch.zeros(8, 8)
cells = ((scan + 4) / 1.0).long().clamp(0, 7)
grid.index_put_((cells[:, 1], cells[:, 0]), torch.ones(16), accumulate=True)
print("occupancy", grid.sum(0).tolist())

K = torch.tensor([[40.0, 0.0, 12.0], [0.0, 40.0, 8.0], [0.0, 0.0, 1.0]])
ys, xs = torch.meshgrid(torch.arange(16.0), torch.arange(24.0), indexing="ij")
pix = torch.stack([xs, ys, torch.ones_like(xs)], 0)
depth = torch.from_numpy(rng.uniform(2, 3, (16, 24)).astype(np.float32))
cam = torch.einsum("ij,jhw->ihw", torch.inverse(K), pix) * depth
yaw = torch.tensor(0.05, requires_grad=True)
Rz = torch.stack([torch.stack([torch.cos(yaw), -torch.sin(yaw), torch.zeros(())]),
                  torch.stack([torch.sin(yaw), torch.cos(yaw), torch.zeros(())]),
                  torch.tensor([0.0, 0.0, 1.0])])
proj = K @ (Rz @ cam.reshape(3, -1))
uv = proj[:2] / proj[2:].clamp(min=1e-6)
gx = uv[0] / 23 * 2 - 1
gy = uv[1] / 15 * 2 - 1
warped = F.grid_sample(depth[None, None], torch.stack([gx, gy], -1).view(1, 16, 24, 2),
                       align_corners=True, padding_mode="border")
photo = (warped[0, 0] - depth).abs().mean()
photo.backward()
print("photometric %.5f yaw grad %.5f" % (photo.item(), yaw.grad.item()))

H = W = 12
yy, xx = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
tris = torch.tensor([[[-0.5, -0.5], [0.5, -0.5], [0.0, 0.6]], [[-0.8, 0.2], [0.3, 0.1], [-0.2, 0.9]]],
                    requires_grad=True)
depths = torch.tensor([0.3, 0.7], requires_grad=True)


def coverage(t, sigma=0.05):
    cov = torch.ones(H, W)
    for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
        e = (b[0] - a[0]) * (yy - a[1]) - (b[1] - a[1]) * (xx - a[0])
        cov = cov * torch.sigmoid(e / sigma)
    return cov


cov = torch.stack([coverage(t) for t in tris])
logits = torch.log(cov.clamp(min=1e-6)) - depths.view(-1, 1, 1) / 0.1
weights = torch.softmax(torch.cat([logits, torch.full((1, H, W), -8.0)]), 0)
image = torch.einsum("khw,kc->hwc", weights[:2], torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
target = torch.zeros(H, W, 3)
target[3:8, 3:9, 0] = 1
loss = F.mse_loss(image, target)
loss.backward()
print("raster loss %.5f" % loss.item(), "vertex grad norm %.5f" % tris.grad.norm().item(),
      "depth grads", [round(g, 5) for g in depths.grad.tolist()])
