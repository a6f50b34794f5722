"""Weight-only float8 inference and a bfloat16 KV cache, as small LLM-serving scripts write them:
each Linear's weight is quantised per tensor to float8_e4m3fn (scale = amax / 448), the float8
state dict is saved with torch.save and loaded back, and the layers run through torch._scaled_mm
(the CPU kernel: float32 accumulation, bfloat16 or float32 output).  A bfloat16 cache is written
with index_copy_ and advanced indexing; a float32 source is refused until cast, as PyTorch does.
Weights come from numpy so the printed numbers do not depend on torch's random stream."""
import io

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(41)
FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def numpy_tensor(*shape, scale=0.5):
    return torch.tensor(rng.standard_normal(shape).astype("float32") * scale)


model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(numpy_tensor(*p.shape))
x = numpy_tensor(4, 16, scale=1.0)
reference = model(x).detach()

print("types:", type(x.dtype), type(model[0].weight), type(x.shape), type(torch.finfo(FP8)))
print("fp8 max", FP8_MAX, "eps", torch.finfo(FP8).eps)


def quantise(w):
    scale = (w.abs().max() / FP8_MAX).clamp(min=1e-12)
    return (w / scale).to(FP8), scale.float()


state = {}
for name, module in model.named_children():
    if isinstance(module, nn.Linear):
        q, s = quantise(module.weight.detach())
        state[f"{name}.qweight"] = q
        state[f"{name}.scale"] = s
        state[f"{name}.bias"] = module.bias.detach().clone()

buffer = io.BytesIO()
torch.save(state, buffer)
buffer.seek(0)
loaded = torch.load(buffer)
print("loaded:", sorted(loaded), loaded["0.qweight"].dtype, tuple(loaded["0.qweight"].shape),
      loaded["0.qweight"].element_size())
print("same codes:", torch.equal(loaded["0.qweight"].view(torch.uint8),
                                 state["0.qweight"].view(torch.uint8)))
frozen = nn.Parameter(loaded["2.qweight"], requires_grad=False)
print("fp8 parameter:", frozen.dtype, frozen.requires_grad, isinstance(frozen, nn.Parameter))


def fp8_linear(h, prefix, out_dtype):
    h_scale = (h.abs().max() / FP8_MAX).clamp(min=1e-12).float()
    h8 = (h / h_scale).to(FP8)
    w8 = loaded[prefix + ".qweight"]
    y = torch._scaled_mm(h8, w8.t(), scale_a=h_scale, scale_b=loaded[prefix + ".scale"],
                         out_dtype=out_dtype)
    return y + loaded[prefix + ".bias"].to(out_dtype)


for out_dtype in (torch.float32, torch.bfloat16):
    h = fp8_linear(x, "0", out_dtype)
    h = nn.functional.gelu(h.float())
    y = fp8_linear(h, "2", out_dtype)
    err = (y.float() - reference).abs().max().item()
    print(f"{str(out_dtype):15s} out {y.dtype} max abs err vs float32 {err:.4f}")

# float32 matrices: refused, but which check speaks first depends on the CPU (PyTorch's oneDNN
# float8 path on AVX-512 FP16 CPUs raises RuntimeError, its reference path ValueError)
try:
    torch._scaled_mm(x, x.t(), scale_a=torch.tensor(1.0), scale_b=torch.tensor(1.0))
except (RuntimeError, ValueError):
    print("refused: float32 matrices")
try:
    torch._scaled_mm(x.to(FP8), x.t().to(FP8), scale_a=torch.ones(3, 1), scale_b=torch.tensor(1.0))
except (RuntimeError, ValueError) as e:
    print("refused:", type(e).__name__, str(e).splitlines()[0])

# -- a bfloat16 KV cache ------------------------------------------------------------------------
heads, max_len, dim = 2, 6, 4
cache = torch.zeros(heads, max_len, dim, dtype=torch.bfloat16)
for step in range(3):
    k = numpy_tensor(heads, 1, dim)
    try:
        cache.index_copy_(1, torch.tensor([step]), k)
    except RuntimeError as e:
        if step == 0:
            print("index_copy_ refused:", str(e).splitlines()[0])
        cache.index_copy_(1, torch.tensor([step]), k.to(cache.dtype))
print("cache rows written:", (cache.abs().sum(-1) > 0).sum().item(), cache.dtype)
print("cache[0, :3, 0]:", cache[0, :3, 0].float().tolist())

positions = torch.tensor([3, 4])
update = numpy_tensor(heads, 2, dim)
for target, source in ((cache, update), (update.clone(), cache[:, :2])):
    try:
        target[:, positions] = source
    except RuntimeError as e:
        print("advanced write refused:", str(e).splitlines()[0])
cache[:, positions] = update.to(torch.bfloat16)
cache[:, 5] = update[:, 0]                    # a basic-index write casts, as copy_ does
print("cache[1, 3:, 1]:", cache[1, 3:, 1].float().tolist())

f32 = torch.zeros(4)
for name, write in (("scatter_add_", lambda s: f32.scatter_add_(0, torch.tensor([0, 2]), s)),
                    ("index_put_", lambda s: f32.index_put_((torch.tensor([1, 3]),), s)),
                    ("lerp_", lambda s: f32[:2].lerp_(s, 0.5)),
                    ("masked_fill_", lambda s: f32.masked_fill_(f32 == 0, s[0]))):
    try:
        write(torch.tensor([1.00390625, 2.0], dtype=torch.bfloat16) * 1.37)
        print(name, "wrote", f32.tolist())
    except RuntimeError as e:
        print(name, "refused:", str(e).splitlines()[0])
print("slice_scatter keeps bfloat16:",
      torch.slice_scatter(cache[0, :, 0], torch.tensor([0.1, 0.2]), 0, 0, 2).dtype)
