"""Invariant point attention and a triangle multiplicative update, written as in OpenFold-style
code: points in local frames, softplus head weights, einsum over pair tensors, masks."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np
_rs = np.random.RandomState(0)
def rnd(*s, dtype=None):
    return torch.tensor(_rs.standard_normal(s), dtype=dtype or torch.float32)
def reinit(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(rnd(*p.shape) * 0.3)

def permute_final_dims(tensor, inds):
    zero_index = -1 * len(inds)
    first_inds = list(range(len(tensor.shape[:zero_index])))
    return tensor.permute(first_inds + [zero_index + i for i in inds])

def flatten_final_dims(t, no_dims):
    return t.reshape(t.shape[:-no_dims] + (-1,))

class IPA(nn.Module):
    def __init__(self, c_s, c_z, c_hidden, no_heads, no_qk_points, no_v_points, inf=1e5, eps=1e-8):
        super().__init__()
        self.c_hidden, self.no_heads = c_hidden, no_heads
        self.no_qk_points, self.no_v_points = no_qk_points, no_v_points
        self.inf, self.eps = inf, eps
        hc = c_hidden * no_heads
        self.linear_q = nn.Linear(c_s, hc)
        self.linear_kv = nn.Linear(c_s, 2 * hc)
        self.linear_q_points = nn.Linear(c_s, no_heads * no_qk_points * 3)
        self.linear_kv_points = nn.Linear(c_s, no_heads * (no_qk_points + no_v_points) * 3)
        self.linear_b = nn.Linear(c_z, no_heads)
        self.head_weights = nn.Parameter(torch.zeros((no_heads)))
        with torch.no_grad():
            self.head_weights.fill_(0.541324854612918)
        concat_out_dim = no_heads * (c_z + c_hidden + no_v_points * 4)
        self.linear_out = nn.Linear(concat_out_dim, c_s)
        self.softmax = nn.Softmax(dim=-1)
        self.softplus = nn.Softplus()

    def forward(self, s, z, R, t, mask):
        q = self.linear_q(s).view(s.shape[:-1] + (self.no_heads, -1))
        kv = self.linear_kv(s).view(s.shape[:-1] + (self.no_heads, -1))
        k, v = torch.split(kv, self.c_hidden, dim=-1)
        q_pts = self.linear_q_points(s)
        q_pts = torch.split(q_pts, q_pts.shape[-1] // 3, dim=-1)
        q_pts = torch.stack(q_pts, dim=-1)
        q_pts = torch.einsum('...ij,...hpj->...hpi', R, q_pts.view(q_pts.shape[:-2] + (self.no_heads, self.no_qk_points, 3))) + t[..., None, None, :]
        kv_pts = self.linear_kv_points(s)
        kv_pts = torch.stack(torch.split(kv_pts, kv_pts.shape[-1] // 3, dim=-1), dim=-1)
        kv_pts = kv_pts.view(kv_pts.shape[:-2] + (self.no_heads, -1, 3))
        kv_pts = torch.einsum('...ij,...hpj->...hpi', R, kv_pts) + t[..., None, None, :]
        k_pts, v_pts = torch.split(kv_pts, [self.no_qk_points, self.no_v_points], dim=-2)
        b = self.linear_b(z)
        a = torch.matmul(permute_final_dims(q, (1, 0, 2)), permute_final_dims(k, (1, 2, 0)))
        a *= math.sqrt(1.0 / (3 * self.c_hidden))
        a += math.sqrt(1.0 / 3) * permute_final_dims(b, (2, 0, 1))
        pt_att = q_pts.unsqueeze(-4) - k_pts.unsqueeze(-5)
        pt_att = pt_att ** 2
        pt_att = sum(torch.unbind(pt_att, dim=-1))
        head_weights = self.softplus(self.head_weights).view(*((1,) * len(pt_att.shape[:-2]) + (-1, 1)))
        head_weights = head_weights * math.sqrt(1.0 / (3 * (self.no_qk_points * 9.0 / 2)))
        pt_att = pt_att * head_weights
        pt_att = torch.sum(pt_att, dim=-1) * (-0.5)
        square_mask = mask.unsqueeze(-1) * mask.unsqueeze(-2)
        square_mask = self.inf * (square_mask - 1)
        pt_att = permute_final_dims(pt_att, (2, 0, 1))
        a = a + pt_att
        a = a + square_mask.unsqueeze(-3)
        a = self.softmax(a)
        o = torch.matmul(a, v.transpose(-2, -3).to(dtype=a.dtype)).transpose(-2, -3)
        o = flatten_final_dims(o, 2)
        o_pt = torch.sum((a[..., None, :, :, None] * permute_final_dims(v_pts, (1, 3, 0, 2))[..., None, :, :]), dim=-2)
        o_pt = permute_final_dims(o_pt, (2, 0, 3, 1))
        o_pt = torch.einsum('...ji,...hpj->...hpi', R, o_pt - t[..., None, None, :])
        o_pt_norm = flatten_final_dims(torch.sqrt(torch.sum(o_pt ** 2, dim=-1) + self.eps), 2)
        o_pt = o_pt.reshape(*o_pt.shape[:-3], -1, 3)
        o_pair = torch.matmul(a.transpose(-2, -3), z.to(dtype=a.dtype))
        o_pair = flatten_final_dims(o_pair, 2)
        s = self.linear_out(torch.cat((o, *torch.unbind(o_pt, dim=-1), o_pt_norm, o_pair), dim=-1))
        return s

B, N = 2, 6
ipa = IPA(c_s=8, c_z=4, c_hidden=4, no_heads=2, no_qk_points=3, no_v_points=2); reinit(ipa)
s = rnd(B, N, 8)
z = rnd(B, N, N, 4)
R = torch.linalg.qr(rnd(B, N, 3, 3))[0]
t = rnd(B, N, 3)
mask = torch.ones(B, N); mask[1, -2:] = 0
out = ipa(s, z, R, t, mask)
print(out.shape, round(out.sum().item(), 3), round(out.abs().mean().item(), 4))
# invariance under global rotation
G = torch.linalg.qr(rnd(3, 3))[0]
out2 = ipa(s, z, G @ R, t @ G.T + 1.0, mask)
print("invariant", torch.allclose(out, out2, atol=1e-4))
out.pow(2).mean().backward()
print(ipa.head_weights.grad.shape, [round(v, 5) for v in ipa.head_weights.grad.tolist()])
print(sum(p.numel() for p in ipa.parameters()), len(list(ipa.named_parameters())))
print(F.softplus(torch.tensor([0.541324854612918])), F.softplus(torch.tensor([30.0, -30.0]), beta=2, threshold=10))
class TriangleMultiplicativeUpdate(nn.Module):
    def __init__(self, c_z, c_hidden, outgoing=True):
        super().__init__()
        self.outgoing = outgoing
        self.layer_norm_in = nn.LayerNorm(c_z)
        self.linear_a_p = nn.Linear(c_z, c_hidden)
        self.linear_a_g = nn.Linear(c_z, c_hidden)
        self.linear_b_p = nn.Linear(c_z, c_hidden)
        self.linear_b_g = nn.Linear(c_z, c_hidden)
        self.linear_g = nn.Linear(c_z, c_z)
        self.linear_z = nn.Linear(c_hidden, c_z)
        self.layer_norm_out = nn.LayerNorm(c_hidden)

    def forward(self, z, mask=None):
        if mask is None:
            mask = z.new_ones(z.shape[:-1])
        mask = mask.unsqueeze(-1)
        z = self.layer_norm_in(z)
        a = mask * self.linear_a_p(z) * self.linear_a_g(z).sigmoid()
        b = mask * self.linear_b_p(z) * torch.sigmoid(self.linear_b_g(z))
        if self.outgoing:
            x = torch.einsum("bikc,bjkc->bijc", a, b)
        else:
            x = torch.einsum("bkic,bkjc->bijc", a, b)
        x = self.layer_norm_out(x)
        x = self.linear_z(x)
        g = torch.sigmoid(self.linear_g(z))
        return x * g

B, N, C = 2, 6, 8
z = rnd(B, N, N, C)
mask = torch.ones(B, N, N)
mask[1, 4:, :] = 0
mask[1, :, 4:] = 0
for outgoing in (True, False):
    m = TriangleMultiplicativeUpdate(C, 4, outgoing); reinit(m)
    out = m(z, mask)
    print(out.shape, out.dtype, round(out.sum().item(), 3), round(out.std().item(), 4))
    loss = (z + out).pow(2).mean()
    loss.backward()
    print("grad", round(m.linear_a_p.weight.grad.norm().item(), 4), round(m.layer_norm_in.weight.grad.sum().item(), 4))

# permute-based version (matmul)
a = rnd(B, N, N, 4)
b = rnd(B, N, N, 4)
x1 = torch.einsum("bikc,bjkc->bijc", a, b)
x2 = torch.matmul(a.permute(0, 3, 1, 2), b.permute(0, 3, 2, 1)).permute(0, 2, 3, 1)
print(torch.allclose(x1, x2, atol=1e-5), x2.is_contiguous(), x2.contiguous().is_contiguous())
print(torch.einsum("...ikc,...jkc->...ijc", a, b).shape)
print(torch.einsum("bikc, bjkc -> bijc", a, b).shape)
ln = nn.LayerNorm(4, elementwise_affine=False)
print(ln(a).mean(-1).abs().max() < 1e-5, ln)
print(F.layer_norm(a, (4,)).std(-1, unbiased=False).mean().round(decimals=3))
