"""Rigid-body frames as in AlphaFold2 reimplementations: quaternion <-> rotation matrix, composing
and inverting rigids with einsum/matmul, Gram-Schmidt frames from backbone atoms (float32 and a
bfloat16 copy), backbone dihedrals by cross products and atan2."""
import torch
import torch.nn.functional as F
import numpy as np
_rs = np.random.RandomState(0)
def rnd(*s, dtype=None):
    return torch.tensor(_rs.standard_normal(s), dtype=dtype or torch.float32)
def reinit(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(rnd(*p.shape) * 0.3)

torch.manual_seed(0)

def quat_to_rot(q):
    q = q / torch.linalg.norm(q, dim=-1, keepdim=True)
    w, x, y, z = torch.unbind(q, dim=-1)
    R = torch.stack([
        1 - 2*(y**2 + z**2), 2*(x*y - w*z), 2*(x*z + w*y),
        2*(x*y + w*z), 1 - 2*(x**2 + z**2), 2*(y*z - w*x),
        2*(x*z - w*y), 2*(y*z + w*x), 1 - 2*(x**2 + y**2)], dim=-1)
    return R.view(q.shape[:-1] + (3, 3))

def rot_to_quat(R):
    m = R
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    w = torch.sqrt(torch.clamp(1 + trace, min=1e-8)) / 2
    x = (m[..., 2, 1] - m[..., 1, 2]) / (4 * w)
    y = (m[..., 0, 2] - m[..., 2, 0]) / (4 * w)
    z = (m[..., 1, 0] - m[..., 0, 1]) / (4 * w)
    return torch.stack((w, x, y, z), -1)

class Rigid:
    def __init__(self, rots, trans):
        self.rots = rots
        self.trans = trans
    def compose(self, other):
        new_rots = torch.einsum('...ij,...jk->...ik', self.rots, other.rots)
        new_trans = torch.einsum('...ij,...j->...i', self.rots, other.trans) + self.trans
        return Rigid(new_rots, new_trans)
    def invert(self):
        inv_rots = self.rots.transpose(-1, -2)
        inv_trans = -torch.matmul(inv_rots, self.trans.unsqueeze(-1)).squeeze(-1)
        return Rigid(inv_rots, inv_trans)
    def apply(self, pts):
        return (self.rots @ pts.unsqueeze(-1)).squeeze(-1) + self.trans
    def shape(self):
        return self.trans.shape[:-1]

q = rnd(2, 5, 4)
R = quat_to_rot(q)
t = rnd(2, 5, 3)
T = Rigid(R, t)
print(T.shape(), R.dtype, R.shape)
I = T.compose(T.invert())
print(torch.allclose(I.rots, torch.eye(3).expand(2, 5, 3, 3), atol=1e-5))
print(torch.allclose(I.trans, torch.zeros(2, 5, 3), atol=1e-5))
q2 = rot_to_quat(R)
qn = F.normalize(q, dim=-1)
qn = qn * torch.sign(qn[..., :1])
print("quat roundtrip", torch.allclose(q2, qn, atol=1e-4))
pts = rnd(2, 5, 3)
local = T.invert().apply(pts)
back = T.apply(local)
print("apply roundtrip err < 1e-5:", (back - pts).abs().max().item() < 1e-5)
dets = torch.det(R)
print(dets.shape, torch.allclose(dets, torch.ones_like(dets), atol=1e-5))
# gradient through composition
q.requires_grad_(True)
R = quat_to_rot(q)
T = Rigid(R, t)
loss = T.compose(T).apply(pts).pow(2).sum()
loss.backward()
print(q.grad.shape, q.grad.dtype, round(q.grad.norm().item(), 3))
print(q.grad[0, 0])
# unsqueeze broadcasting of frames vs points: [B, N, 1, 3, 3] @ [B, 1, M, 3, 1]
pts2 = rnd(2, 1, 7, 3)
out = T.invert().rots[:, :, None] @ (pts2 - t[:, :, None]).unsqueeze(-1)
print(out.shape, out.squeeze(-1).shape)

def rigid_from_3_points(x1, x2, x3, eps=1e-8):
    v1 = x3 - x2
    v2 = x1 - x2
    e1 = v1 / torch.linalg.vector_norm(v1, dim=-1, keepdim=True).clamp(min=eps)
    u2 = v2 - e1 * (e1 * v2).sum(-1, keepdim=True)
    e2 = u2 / torch.norm(u2, dim=-1, keepdim=True).clamp(min=eps)
    e3 = torch.cross(e1, e2, dim=-1)
    return torch.stack([e1, e2, e3], dim=-1), x2

bb = rnd(6, 3, 3) * 1.5 + torch.arange(6, dtype=torch.float32)[:, None, None] * 3.8
Rf, tf = rigid_from_3_points(bb[:, 0], bb[:, 1], bb[:, 2])
print("frames", Rf.shape, torch.linalg.det(Rf).mean().round(decimals=4))
Rb, _ = rigid_from_3_points(*bb.bfloat16().unbind(1))
print(Rb.dtype, Rb[0])
e3 = torch.linalg.cross(Rb[..., 0], Rb[..., 1])
print("e3 bf16", e3[:2])

def dihedral(p0, p1, p2, p3):
    b0, b1, b2 = p0 - p1, p2 - p1, p3 - p2
    b1 = b1 / torch.norm(b1, dim=-1, keepdim=True)
    v = b0 - (b0 * b1).sum(-1, keepdim=True) * b1
    w = b2 - (b2 * b1).sum(-1, keepdim=True) * b1
    x = (v * w).sum(-1)
    y = (torch.cross(b1, v, dim=-1) * w).sum(-1)
    return torch.atan2(y, x)

flat = bb.reshape(-1, 3)
ang = dihedral(flat[:-3], flat[1:-2], flat[2:-1], flat[3:])
print("dihedrals (deg)", torch.rad2deg(ang).round(decimals=2))
feats = torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1)
print(feats.shape, feats.norm(dim=-1).min().round(decimals=5))
