"""mamba_ssm reference selective scan (selective_scan_ref / selective_state_update_ref style):
delta softplus with bias, variable B/C, einsum scans, real and complex A (B/C as view_as_complex
pairs), bfloat16 input, grouped B; step-wise state update against the full scan. numpy values."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
import numpy as np
_rng = np.random.default_rng(0)
def nrandn(*shape, scale=1.0, dtype=None):
    a = _rng.standard_normal(shape) * scale
    t = torch.tensor(a.astype(np.float32))
    return t if dtype is None else t.to(dtype)
def nrand(*shape):
    return torch.tensor(_rng.random(shape).astype(np.float32))
def npinit(model, scale=0.3):
    with torch.no_grad():
        for p in model.parameters():
            if p.is_complex():
                re = _rng.standard_normal(tuple(p.shape)) * scale
                im = _rng.standard_normal(tuple(p.shape)) * scale
                p.copy_(torch.complex(torch.tensor(re.astype(np.float32)), torch.tensor(im.astype(np.float32))).to(p.dtype))
            else:
                p.copy_(torch.tensor((_rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)).to(p.dtype))
# mamba_ssm selective_scan_ref / selective_state_update_ref style (real and complex A)
def unpair(t):   # "... (L two) -> ... L two"
    return t.reshape(*t.shape[:-1], t.shape[-1] // 2, 2)

def selective_scan_ref(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, return_last_state=False):
    dtype_in = u.dtype
    u = u.float()
    delta = delta.float()
    if delta_bias is not None:
        delta = delta + delta_bias[..., None].float()
    if delta_softplus:
        delta = F.softplus(delta)
    batch, dim, dstate = u.shape[0], A.shape[0], A.shape[1]
    is_variable_B = B.dim() >= 3
    is_variable_C = C.dim() >= 3
    if A.is_complex():
        if is_variable_B:
            B = torch.view_as_complex(unpair(B.float()).contiguous())
        if is_variable_C:
            C = torch.view_as_complex(unpair(C.float()).contiguous())
    else:
        B = B.float()
        C = C.float()
    x = A.new_zeros((batch, dim, dstate))
    ys = []
    deltaA = torch.exp(torch.einsum('bdl,dn->bdln', delta, A))
    if not is_variable_B:
        deltaB_u = torch.einsum('bdl,dn,bdl->bdln', delta, B, u)
    else:
        if B.dim() == 3:
            deltaB_u = torch.einsum('bdl,bnl,bdl->bdln', delta, B, u)
        else:
            B = B.repeat_interleave(dim // B.shape[1], dim=1)
            deltaB_u = torch.einsum('bdl,bdnl,bdl->bdln', delta, B, u)
    if is_variable_C and C.dim() == 4:
        C = C.repeat_interleave(dim // C.shape[1], dim=1)
    last_state = None
    for i in range(u.shape[2]):
        x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
        if not is_variable_C:
            y = torch.einsum('bdn,dn->bd', x, C)
        else:
            if C.dim() == 3:
                y = torch.einsum('bdn,bn->bd', x, C[:, :, i])
            else:
                y = torch.einsum('bdn,bdn->bd', x, C[:, :, :, i])
        if i == u.shape[2] - 1:
            last_state = x
        if y.is_complex():
            y = y.real * 2
        ys.append(y)
    y = torch.stack(ys, dim=2)
    out = y if D is None else y + u * D[:, None]
    if z is not None:
        out = out * F.silu(z)
    out = out.to(dtype=dtype_in)
    return out if not return_last_state else (out, last_state)

def selective_state_update_ref(state, x, dt, A, B, C, D=None, z=None, dt_bias=None, dt_softplus=False):
    batch, dim, dstate = state.shape
    if dt_bias is not None:
        dt = dt + dt_bias
    dt = F.softplus(dt) if dt_softplus else dt
    dA = torch.exp(dt.unsqueeze(-1) * A)
    dB = dt.unsqueeze(-1) * B.unsqueeze(1)
    state.copy_(state * dA + dB * x.unsqueeze(-1))
    out = torch.einsum("bdn,bn->bd", state.to(C.dtype), C)
    if D is not None:
        out += (x * D).to(out.dtype)
    return (out if z is None else out * F.silu(z)).to(x.dtype)

bsz, dim, dstate, L = 2, 4, 3, 7
u = nrandn(bsz, dim, L).requires_grad_()
delta = nrandn(bsz, dim, L, scale=0.5).requires_grad_()
A = (-0.5 * torch.rand(dim, dstate) * 0 - 0.5 * (1 + nrand(dim, dstate))).requires_grad_()
B = nrandn(bsz, dstate, L).requires_grad_()
C = nrandn(bsz, dstate, L).requires_grad_()
D = nrandn(dim).requires_grad_()
z = nrandn(bsz, dim, L).requires_grad_()
delta_bias = (0.5 * nrand(dim)).requires_grad_()
out, last = selective_scan_ref(u, delta, A, B, C, D, z=z, delta_bias=delta_bias, delta_softplus=True, return_last_state=True)
print(out.shape, last.shape, out.dtype)
print(out[0, 0].detach().numpy().round(4))
out.sum().backward()
for n_, t in [("u", u), ("delta", delta), ("A", A), ("B", B), ("C", C), ("D", D), ("z", z), ("delta_bias", delta_bias)]:
    print(n_, round(t.grad.abs().sum().item(), 4))
state = torch.zeros(bsz, dim, dstate)
with torch.no_grad():
    outs = [selective_state_update_ref(state, u[:, :, t], delta[:, :, t], A, B[:, :, t], C[:, :, t], D, z=z[:, :, t], dt_bias=delta_bias, dt_softplus=True) for t in range(L)]
print(torch.allclose(torch.stack(outs, -1), out, atol=1e-5), torch.allclose(state, last, atol=1e-5))

# complex A with paired B/C
Ac = torch.complex(-0.5 * torch.ones(dim, dstate), math.pi * torch.arange(dstate).float().repeat(dim, 1)).requires_grad_()
Bc = nrandn(bsz, dstate, 2 * L).requires_grad_()
Cc = nrandn(bsz, dstate, 2 * L).requires_grad_()
outc, lastc = selective_scan_ref(u, delta, Ac, Bc, Cc, D, delta_softplus=True, return_last_state=True)
print(outc.dtype, lastc.dtype, lastc.shape)
print(outc[1, 2].detach().numpy().round(4))
outc.pow(2).mean().backward()
print(Ac.grad.dtype, Ac.grad[0].detach().numpy().round(4))
print(round(Bc.grad.abs().sum().item(), 4), round(Cc.grad.abs().sum().item(), 4))
ub = u.detach().to(torch.bfloat16)
outb = selective_scan_ref(ub, delta.detach(), A.detach(), B.detach(), C.detach(), D.detach())
print(outb.dtype, outb.shape, (outb.float() - selective_scan_ref(ub.float(), delta.detach(), A.detach(), B.detach(), C.detach(), D.detach())).abs().max().item() < 0.1)
Bg = nrandn(bsz, 2, dstate, L)
outg = selective_scan_ref(u.detach(), delta.detach(), A.detach(), Bg, Bg, D.detach())
print(outg.shape, outg[0, :, 0].numpy().round(4))
