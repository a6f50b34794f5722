"""Rotation matrices from quaternions, axis-angle (matrix_exp of a skew matrix vs Rodrigues),
the 6D Gram-Schmidt representation; cross products, determinants, SVD and gradcheck."""
import math
import torch
import torch.nn.functional as F

def quaternion_to_matrix(q):
    r, i, j, k = torch.unbind(q, -1)
    two_s = 2.0 / (q * q).sum(-1)
    o = torch.stack((
        1 - two_s * (j * j + k * k), two_s * (i * j - k * r), two_s * (i * k + j * r),
        two_s * (i * j + k * r), 1 - two_s * (i * i + k * k), two_s * (j * k - i * r),
        two_s * (i * k - j * r), two_s * (j * k + i * r), 1 - two_s * (i * i + j * j),
    ), -1)
    return o.reshape(q.shape[:-1] + (3, 3))

def skew(v):
    zero = torch.zeros_like(v[..., 0])
    x, y, z = v.unbind(-1)
    return torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).view(*v.shape[:-1], 3, 3)

def axis_angle_to_matrix_exp(aa):
    return torch.linalg.matrix_exp(skew(aa))

def rodrigues(aa):
    theta = aa.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    k = aa / theta
    K = skew(k)
    I = torch.eye(3, dtype=aa.dtype).expand_as(K)
    s = torch.sin(theta)[..., None]
    c = torch.cos(theta)[..., None]
    return I + s * K + (1 - c) * (K @ K)

q = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.7071, 0.7071, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
q = F.normalize(q, dim=-1)
R = quaternion_to_matrix(q)
print(R.shape)
print(torch.round(R, decimals=4))
print("dets:", torch.linalg.det(R))
print("orthogonal:", torch.allclose(R @ R.transpose(-1, -2), torch.eye(3).expand(3, 3, 3), atol=1e-5))
aa = torch.tensor([[0.0, 0.0, math.pi / 2], [0.3, -0.2, 0.5], [1e-9, 0.0, 0.0]], dtype=torch.float64)
R1 = axis_angle_to_matrix_exp(aa)
R2 = rodrigues(aa)
print(R1.dtype, torch.allclose(R1, R2, atol=1e-7))
print(torch.round(R1[0], decimals=6))
torch.testing.assert_close(R1, R2, atol=1e-7, rtol=0)
# cross product properties
a = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
b = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
print(torch.cross(a, b, dim=-1), torch.linalg.cross(a, b))
print(a.cross(b, dim=1))
try:
    torch.linalg.cross(torch.zeros(2, 2), torch.zeros(2, 2))
except RuntimeError as e:
    print("RuntimeError:", e)
# gradient through matrix_exp
w = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64, requires_grad=True)
Rw = torch.linalg.matrix_exp(skew(w))
loss = (Rw @ torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)).sum()
loss.backward()
print(w.grad)
print(torch.autograd.gradcheck(lambda v: torch.linalg.matrix_exp(skew(v)), (w.detach().clone().requires_grad_(),)))
# rotation angle from matrix
tr = R1.diagonal(dim1=-2, dim2=-1).sum(-1)
angle = torch.acos(((tr - 1) / 2).clamp(-1, 1))
print(angle, aa.norm(dim=-1))
# SO(3) via Gram-Schmidt from 6D representation
d6 = torch.tensor([[1.0, 0.1, 0.0, 0.0, 1.0, 0.2]])
a1, a2 = d6[..., :3], d6[..., 3:]
b1 = F.normalize(a1, dim=-1)
b2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
b2 = F.normalize(b2, dim=-1)
b3 = torch.cross(b1, b2, dim=-1)
Rm = torch.stack((b1, b2, b3), dim=-2)
print(torch.det(Rm), Rm.shape)
print(torch.linalg.det(torch.eye(3).unsqueeze(0).repeat(2, 1, 1)))
U, S, Vh = torch.linalg.svd(R[2] + 0.01)
print(S.shape, torch.det(U @ Vh).sign())
