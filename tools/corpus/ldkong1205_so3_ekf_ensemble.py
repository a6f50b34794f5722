"""Rotation utilities and state estimation, after ldkong1205/RoboDepth's liegroups (SO3 exp/log,
quaternions, roll-pitch-yaw) and its EKF: batched Rodrigues exp map and log map with masks,
quaternion products and conversions (torch.cross, F.normalize, torch.atan2, einsum traces),
an extended Kalman filter on a unicycle (Jacobians by torch.func.jacrev, torch.linalg.inv /
cholesky, the innovation likelihood from MultivariateNormal), and an ensemble of learned
dynamics models trained with vmap(grad(functional_call)) over stacked parameters (with a
bias-only ensemble through F.linear)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal
from torch.func import functional_call, grad, jacrev, stack_module_state, vmap


def wedge(phi):
    z = torch.zeros_like(phi[:, 0])
    return torch.stack((z, -phi[:, 2], phi[:, 1], phi[:, 2], z, -phi[:, 0],
                        -phi[:, 1], phi[:, 0], z), 1).view(-1, 3, 3)


def vee(M):
    return torch.stack((M[:, 2, 1], M[:, 0, 2], M[:, 1, 0]), dim=1)


def so3_exp(phi):
    angle = phi.norm(dim=1, keepdim=True)
    small = angle[:, 0] < 1e-8
    eye = torch.eye(3).expand(phi.shape[0], 3, 3)
    R = phi.new_empty(phi.shape[0], 3, 3)
    R[small] = eye[small] + wedge(phi[small])
    axis = phi[~small] / angle[~small]
    c = angle[~small].cos().unsqueeze(2)
    s = angle[~small].sin().unsqueeze(2)
    R[~small] = c * eye[~small] + (1 - c) * torch.einsum('bi,bj->bij', axis, axis) + s * wedge(axis)
    return R


def so3_log(R):
    cos_angle = (0.5 * torch.einsum('bii->b', R) - 0.5).clamp(-1.0, 1.0)
    angle = cos_angle.acos()
    phi = vee(R - torch.eye(3))
    big = angle > 1e-8
    phi[big] = vee((0.5 * angle[big] / angle[big].sin()).view(-1, 1, 1)
                   * (R[big] - R[big].transpose(1, 2)))
    return phi


def quat_mul(q, r):
    w1, v1 = q[:, :1], q[:, 1:]
    w2, v2 = r[:, :1], r[:, 1:]
    w = w1 * w2 - (v1 * v2).sum(1, keepdim=True)
    v = w1 * v2 + w2 * v1 + torch.cross(v1, v2, dim=1)
    return torch.cat((w, v), 1)


def quat_to_matrix(q):
    q = F.normalize(q, dim=1)
    w, x, y, z = q.unbind(1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
                       1).view(-1, 3, 3)


def to_rpy(R):
    pitch = torch.atan2(-R[:, 2, 0], torch.sqrt(R[:, 0, 0] ** 2 + R[:, 1, 0] ** 2))
    yaw = torch.atan2(R[:, 1, 0], R[:, 0, 0])
    roll = torch.atan2(R[:, 2, 1], R[:, 2, 2])
    return torch.stack([roll, pitch, yaw], 1)


phi = torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0], [1.0, 0.5, -0.7], [0.0, 0.0, 2.5]])
R = so3_exp(phi)
print("exp", R[0], "det", torch.linalg.det(R))
print("orthonormal", torch.allclose(R @ R.mT, torch.eye(3).expand(4, 3, 3), atol=1e-6))
print("log(exp(phi))", so3_log(R))
rpy = to_rpy(R)
print("rpy (deg)", torch.rad2deg(rpy))
half = 0.5 * phi.norm(dim=1, keepdim=True)
axis = F.normalize(phi, dim=1)
q = torch.cat([half.cos(), half.sin() * axis], 1)
print("quaternions", q)
print("quat -> matrix agrees", torch.allclose(quat_to_matrix(q), R, atol=1e-6))
qq = quat_mul(q, q)
print("q*q is exp(2 phi)", torch.allclose(quat_to_matrix(qq), so3_exp(2 * phi), atol=1e-5))
conj = q * torch.tensor([1.0, -1.0, -1.0, -1.0])
print("q * conj(q) is the identity", torch.allclose(quat_mul(q, conj), torch.tensor([[1.0, 0, 0, 0]]).expand(4, 4), atol=1e-6))
v = torch.tensor([[1.0, 0.0, 0.0]]).expand(4, 3)
rotated = (R @ v.unsqueeze(-1)).squeeze(-1)
print("rotated x axis", rotated, "norms", torch.linalg.vector_norm(rotated, dim=1))

# gradient through exp and log
p = phi[2:].clone().requires_grad_(True)
loss = (so3_log(so3_exp(p)) ** 2).sum() + so3_exp(p)[:, 0, 1].sum()
loss.backward()
print("d loss / d phi", p.grad)

# --- extended Kalman filter: unicycle with range-bearing to a beacon -----------------------------
dt = 0.1
beacon = torch.tensor([2.0, 1.0])


def f(x, u):
    px, py, th = x.unbind(-1)
    v, w = u.unbind(-1)
    return torch.stack([px + dt * v * torch.cos(th), py + dt * v * torch.sin(th), th + dt * w], -1)


def h(x):
    d = beacon - x[:2]
    return torch.stack([d.norm(), torch.atan2(d[1], d[0]) - x[2]])


x_true = torch.tensor([0.0, 0.0, 0.1])
x = torch.tensor([0.1, -0.1, 0.0])
P = torch.diag(torch.tensor([0.1, 0.1, 0.05]))
Q = torch.diag(torch.tensor([1e-4, 1e-4, 1e-4]))
Rn = torch.diag(torch.tensor([1e-2, 1e-3]))
nll = torch.tensor(0.0)
for t in range(15):
    u = torch.tensor([1.0, 0.3 * math.sin(0.5 * t)])
    x_true = f(x_true, u)
    z = h(x_true) + torch.tensor([0.01 * math.cos(t), 0.005 * math.sin(2 * t)])
    Fx = jacrev(f)(x, u)
    x = f(x, u)
    P = Fx @ P @ Fx.T + Q
    Hx = jacrev(h)(x)
    S = Hx @ P @ Hx.T + Rn
    innov = z - h(x)
    nll = nll - MultivariateNormal(torch.zeros(2), covariance_matrix=S).log_prob(innov)
    K = P @ Hx.T @ torch.linalg.inv(S)
    x = x + K @ innov
    I_KH = torch.eye(3) - K @ Hx
    P = I_KH @ P @ I_KH.T + K @ Rn @ K.T        # Joseph form
print("ekf estimate", x, "truth", x_true)
print("ekf error", round((x - x_true).norm().item(), 3), "nll", round(nll.item(), 2))
L = torch.linalg.cholesky(P)
print("posterior std", torch.sqrt(P.diagonal()),
      "chol ok", torch.allclose(L @ L.T, P, atol=1e-7))

# --- ensemble of dynamics models, trained together under vmap ------------------------------------
class Dyn(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(5, 16)
        self.l2 = nn.Linear(16, 3)

    def forward(self, xu):
        return xu[..., :3] + self.l2(torch.tanh(self.l1(xu)))


models = [Dyn() for _ in range(3)]
for k, m in enumerate(models):
    with torch.no_grad():
        for prm in m.parameters():
            prm.copy_(0.3 * torch.sin(torch.arange(prm.numel(), dtype=torch.float32) + k).view_as(prm))
params, buffers = stack_module_state(models)
base = Dyn().to("meta")
xs = torch.stack([torch.linspace(-1, 1, 32), torch.linspace(0.5, -0.5, 32), torch.linspace(0, 3, 32)], 1)
us = torch.stack([torch.ones(32), torch.cos(torch.linspace(0, 6, 32))], 1)
xu = torch.cat([xs, us], 1)
target = f(xs, us)


def loss_fn(prm, buf, inp, tgt):
    return F.mse_loss(functional_call(base, (prm, buf), (inp,)), tgt)


lr = 0.1
for step in range(30):
    grads = vmap(grad(loss_fn), in_dims=(0, 0, None, None))(params, buffers, xu, target)
    params = {k: (v - lr * grads[k]).detach() for k, v in params.items()}
    if step % 10 == 0:
        losses = vmap(loss_fn, in_dims=(0, 0, None, None))(params, buffers, xu, target)
        print("ensemble step", step, losses)
preds = vmap(functional_call, in_dims=(None, 0, None))(base, params, (xu[:4],))
print("ensemble predictions", tuple(preds.shape), "disagreement", preds.std(0).mean())
print("grad shapes", {k: tuple(v.shape) for k, v in grads.items()})

# per-member biases only (shared weight): one batched linear
W = torch.tensor([[0.5, -0.25, 1.0], [0.0, 1.0, -0.5]])
biases = torch.tensor([[0.0, 0.0], [0.1, -0.1], [1.0, 2.0]])
out = vmap(lambda b: F.linear(xs[:5], W, b))(biases)
print("bias ensemble", tuple(out.shape), out[:, 0])
print("bias ensemble mean", vmap(lambda b: F.linear(xs[:5], W, b).mean(0))(biases))
