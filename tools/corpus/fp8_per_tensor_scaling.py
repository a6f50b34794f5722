# FP8 per-tensor scaling, the recipe of FP8 training write-ups, on the CPU.
import torch

torch.manual_seed(0)
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
print(E4M3, torch.finfo(E4M3).max, torch.finfo(E5M2).max, E4M3.itemsize)


def to_fp8(x, dtype):
    amax = x.abs().max().clamp(min=1e-12)
    scale = torch.finfo(dtype).max / amax
    return (x * scale).to(dtype), scale


def from_fp8(q, scale):
    return q.to(torch.float32) / scale


w = torch.sin(torch.arange(4096.0).reshape(64, 64)) * 3
x = torch.cos(torch.arange(1024.0).reshape(16, 64) * 0.37)
qw, sw = to_fp8(w, E4M3)
qx, sx = to_fp8(x, E4M3)
print(qw.dtype, qw.shape, qw.element_size(), qw.nbytes)
y_ref = x @ w.t()
y_fp8 = from_fp8(qx, sx) @ from_fp8(qw, sw).t()
rel = ((y_fp8 - y_ref).norm() / y_ref.norm()).item()
print(f"relative error {rel:.6f}")
g = torch.sin(torch.arange(1024.0).reshape(16, 64) * 1.3) * 1e-3
qg, sg = to_fp8(g, E5M2)
print("grad roundtrip", ((from_fp8(qg, sg) - g).abs().max() / g.abs().max()).item())
print(qw[0, :4], qw.view(torch.uint8)[0, :4])
try:
    qw + qw
except NotImplementedError as e:
    print("add:", e)
try:
    qw * torch.ones(64, 64)
except RuntimeError as e:
    print("promote:", e)
print(torch.cat([qw[:1], qw[1:2]]).shape, (qw == qw).all().item())
