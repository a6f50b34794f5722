"""Batch statistics with var_mean, a norm written into a preallocated buffer that stays in the
graph, a forward-mode directional derivative, and a quick device check, as a small data
pipeline script would write them."""
import warnings

import torch
import torch.autograd.forward_ad as fwAD

warnings.filterwarnings("ignore", message=".*torch.jit.script.*")
# (deterministic data: a script's values, not the random stream, are what is compared)
feats = torch.sin(torch.arange(320, dtype=torch.float32).reshape(64, 5) * 0.37) * 3 + 1.5
var, mean = torch.var_mean(feats, dim=0)
std, mean2 = torch.std_mean(feats, dim=0, keepdim=True)
print("mean", mean)
print("var", var)
print("std", std, mean2.shape)
print("normalized", ((feats - mean2) / std)[:2])

w = torch.cos(torch.arange(15.0).reshape(5, 3)).requires_grad_()
buf = torch.empty(0)
norms = torch.linalg.norm(feats @ w, dim=1, out=buf)
print(norms is buf, buf.shape, buf.grad_fn.name())
loss = norms.mean()
loss.backward()
print("loss", loss.item(), "grad", w.grad.sum(dim=0))

x = torch.tensor([0.5, -1.0, 2.0])
with fwAD.dual_level():
    d = fwAD.make_dual(x, torch.ones(3))
    y = (d.sin() * d).sum()
    print("jvp", fwAD.unpack_dual(y).tangent)
    try:
        fwAD.make_dual(d * 2, torch.ones(3))
    except RuntimeError as e:
        print("RuntimeError:", str(e)[:60])

print(torch.Tensor.is_cuda.__get__(feats), feats.is_cpu, feats.layout, feats.device)
c = torch.tensor([True, False, True])
try:
    torch.where(c, feats[0, :3], 0.0, out=torch.empty(3))
except TypeError as e:
    print("TypeError:", e)
