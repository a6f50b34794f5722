"""Rotation representations as lichang-jin/Research_Exercise's VGGT rotation utilities and
pytorch3d-style code write them in plain PyTorch: quaternion -> matrix with unbind/stack,
matrix -> quaternion choosing the best-conditioned candidate through a one_hot boolean mask and
a masked write under autograd, the 6-D Gram-Schmidt representation (F.normalize,
torch.linalg.cross), so(3) exp by Rodrigues and by torch.linalg.matrix_exp of the hat matrix,
the log map with acos / atan2, and Kabsch alignment with svd and a det sign fix; then fitting a
6-D rotation to point correspondences with Adam."""
import math
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(11)
torch.set_printoptions(precision=4)


def quaternion_to_matrix(q):
    r, i, j, k = torch.unbind(q, -1)
    two_s = 2.0 / (q * q).sum(-1)
    o = torch.stack((1 - two_s * (j * j + k * k), two_s * (i * j - k * r), two_s * (i * k + j * r),
                     two_s * (i * j + k * r), 1 - two_s * (i * i + k * k), two_s * (j * k - i * r),
                     two_s * (i * k - j * r), two_s * (j * k + i * r), 1 - two_s * (i * i + j * j)), -1)
    return o.reshape(q.shape[:-1] + (3, 3))


def _sqrt_positive_part(x):
    ret = torch.zeros_like(x)
    positive = x > 0
    ret[positive] = torch.sqrt(x[positive])
    return ret


def matrix_to_quaternion(m):
    if m.size(-1) != 3 or m.size(-2) != 3:
        raise ValueError(f"Invalid rotation matrix shape {m.shape}.")
    batch = m.shape[:-2]
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = torch.unbind(m.reshape(batch + (9,)), dim=-1)
    q_abs = _sqrt_positive_part(torch.stack([1.0 + m00 + m11 + m22, 1.0 + m00 - m11 - m22,
                                             1.0 - m00 + m11 - m22, 1.0 - m00 - m11 + m22], dim=-1))
    quat_by_rijk = torch.stack([
        torch.stack([q_abs[..., 0] ** 2, m21 - m12, m02 - m20, m10 - m01], dim=-1),
        torch.stack([m21 - m12, q_abs[..., 1] ** 2, m10 + m01, m02 + m20], dim=-1),
        torch.stack([m02 - m20, m10 + m01, q_abs[..., 2] ** 2, m12 + m21], dim=-1),
        torch.stack([m10 - m01, m20 + m02, m21 + m12, q_abs[..., 3] ** 2], dim=-1)], dim=-2)
    flr = torch.tensor(0.1).to(dtype=q_abs.dtype)
    cands = quat_by_rijk / (2.0 * q_abs[..., None].max(flr))
    best = F.one_hot(q_abs.argmax(dim=-1), num_classes=4) > 0.5
    out = cands[best, :].reshape(batch + (4,))
    return torch.where(out[..., 0:1] < 0, -out, out)


def rot6d_to_matrix(d6):
    a1, a2 = d6[..., :3], d6[..., 3:]
    b1 = F.normalize(a1, dim=-1)
    b2 = F.normalize(a2 - (b1 * a2).sum(-1, keepdim=True) * b1, dim=-1)
    b3 = torch.linalg.cross(b1, b2, dim=-1)
    return torch.stack((b1, b2, b3), dim=-2)


def hat(v):
    z = torch.zeros_like(v[..., 0])
    return torch.stack([z, -v[..., 2], v[..., 1], v[..., 2], z, -v[..., 0],
                        -v[..., 1], v[..., 0], z], -1).view(v.shape[:-1] + (3, 3))


def so3_exp_rodrigues(w):
    theta = w.norm(dim=-1, keepdim=True).clamp(min=1e-8)
    K = hat(w / theta)
    t = theta.unsqueeze(-1)
    return torch.eye(3) + torch.sin(t) * K + (1 - torch.cos(t)) * (K @ K)


def so3_log(R):
    cos = ((R.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1 + 1e-6, 1 - 1e-6)
    axis = torch.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                        R[..., 1, 0] - R[..., 0, 1]], -1)
    sin = axis.norm(dim=-1) / 2
    angle = torch.atan2(sin, cos)
    return axis * (angle / (2 * torch.sin(angle))).unsqueeze(-1), torch.acos(cos)


def kabsch(P, Q):
    pc, qc = P.mean(-2, keepdim=True), Q.mean(-2, keepdim=True)
    H = (P - pc).transpose(-1, -2) @ (Q - qc)
    U, S, Vh = torch.linalg.svd(H)
    d = torch.sign(torch.linalg.det(Vh.transpose(-1, -2) @ U.transpose(-1, -2)))
    D = torch.diag_embed(torch.stack([torch.ones_like(d), torch.ones_like(d), d], -1))
    R = Vh.transpose(-1, -2) @ D @ U.transpose(-1, -2)
    return R, (qc - pc @ R.transpose(-1, -2)).squeeze(-2)


q = torch.from_numpy(rng.normal(size=(5, 4))).requires_grad_()
R = quaternion_to_matrix(q)
print("det", [round(v, 6) for v in torch.linalg.det(R).tolist()])
q_back = matrix_to_quaternion(R)
qn = F.normalize(q, dim=-1)
print("round trip", torch.allclose(q_back, torch.where(qn[:, :1] < 0, -qn, qn)))
q_back.sum().backward()
print("grad", q.grad.shape, [round(v, 4) for v in q.grad[0].tolist()])
with torch.no_grad():
    print("no_grad path", torch.allclose(matrix_to_quaternion(R), q_back))
try:
    matrix_to_quaternion(torch.zeros(2, 3, 4))
except ValueError as e:
    print("ValueError:", e)

w = torch.from_numpy(rng.normal(size=(4, 3)).astype(np.float32)).requires_grad_()
R1 = so3_exp_rodrigues(w)
R2 = torch.linalg.matrix_exp(hat(w))
print("exp maps agree", torch.allclose(R1, R2, atol=1e-5))
(R2 * torch.tensor([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [0.0, 1.0, -2.0]])).sum().backward()
print("matrix_exp grad", [round(v, 4) for v in w.grad.flatten().tolist()])
w_back, ang = so3_log(R1.detach())
print("log map", torch.allclose(w_back, w.detach(), atol=1e-4), [round(v, 4) for v in ang.tolist()])
print("degrees", [round(v, 3) for v in torch.rad2deg(ang).tolist()])

P = torch.from_numpy(rng.normal(size=(2, 12, 3)))
R_true = quaternion_to_matrix(torch.from_numpy(rng.normal(size=(2, 4)))).detach()
Q = P @ R_true.transpose(-1, -2) + torch.tensor([0.5, -0.2, 0.1], dtype=torch.float64)
Rk, tk = kabsch(P, Q)
print("kabsch", torch.allclose(Rk, R_true), [round(v, 4) for v in tk[0].tolist()])
print("reflection fixed", [round(v, 4) for v in torch.linalg.det(kabsch(P, -Q)[0]).tolist()])

target = Q[0] - Q[0].mean(0)
src = P[0] - P[0].mean(0)
d6 = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0], dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([d6], lr=0.1)
for step in range(6):
    opt.zero_grad()
    Rm = rot6d_to_matrix(d6)
    loss = ((src @ Rm - target) ** 2).mean()
    loss.backward()
    opt.step()
    print("6d fit %d %.5f" % (step, loss.item()))
print("orthonormal", torch.allclose(Rm @ Rm.T, torch.eye(3, dtype=torch.float64)),
      round(torch.linalg.det(Rm).item(), 6))
