"""Integer symbol streams and quantisation utilities around a neural codec: latents rounded to
int32 / int16 symbols, their histogram (bincount, histc) and empirical entropy in bits, a
16-bit quantized CDF for a range coder (cumsum, searchsorted, bit ops), the symbols packed to
bytes and back, hand-written fake quantization with a straight-through estimator against
torch.fake_quantize_per_tensor_affine, and torch.quantize_per_tensor tensors (int_repr,
dequantize, the activations and reductions QuantizedCPU runs, and the errors of those it
does not)."""
import math
import struct
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore", category=UserWarning)

# ---- symbols and their entropy ----
t = torch.arange(240, dtype=torch.float32)
latent = 3.2 * torch.sin(t * 0.73) * torch.cos(t * 0.11)
symbols = torch.round(latent).to(torch.int32)
print(symbols.dtype, symbols.shape, symbols.min().item(), symbols.max().item())
offset = -symbols.min()
counts = torch.bincount((symbols + offset).long(), minlength=8)
print(counts, counts.dtype, counts.sum().item())
hist = torch.histc(latent, bins=8, min=-4, max=4)
print(hist, hist.dtype)
try:
    torch.bincount(symbols)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.histc(symbols, bins=4)
except RuntimeError as e:
    print("RuntimeError:", e)
p = counts.float() / counts.sum()
nz = p[p > 0]
entropy = -(nz * torch.log2(nz)).sum()
print(f"entropy {entropy.item():.4f} bits/symbol -> {entropy.item() * symbols.numel() / 8:.1f} bytes")
print(f"xlogy entropy {-torch.special.xlogy(p, p).sum().item() / math.log(2):.4f}")
vals, cnts = torch.unique(symbols, return_counts=True)
print(vals.tolist(), cnts.tolist())

# ---- quantized CDF for a range coder ----
precision = 16
pmf = cnts.double() / cnts.sum()
cdf = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(pmf, 0)])
qcdf = (cdf * (1 << precision)).round().to(torch.int32)
print(qcdf, (qcdf[1:] - qcdf[:-1]).min().item() > 0)
targets = torch.tensor([0, 1000, 30000, 65535], dtype=torch.int32)
print(torch.searchsorted(qcdf, targets, right=True) - 1)
sym16 = (symbols + offset).to(torch.int16)
print(sym16.dtype, sym16.element_size(), (sym16 << 2)[:6], (sym16 & 1)[:6], (sym16 >> 1)[:6])
packed = sym16.numpy().tobytes()
header = struct.pack(">2I", 1, sym16.numel())
print(len(header + packed), struct.unpack(">2I", header))
restored = torch.from_numpy(np.frombuffer(packed, dtype=np.int16).copy()).to(torch.int32) - offset
print(torch.equal(restored, symbols), restored.dtype)

# ---- fake quantization by hand (straight-through) vs PyTorch's ----
def fake_quant(x, scale, zero_point, qmin, qmax):
    q = torch.clamp(torch.round(x / scale) + zero_point, qmin, qmax)
    return (q - zero_point) * scale


w = torch.linspace(-2.0, 2.0, 13, requires_grad=True)
ste = w + (fake_quant(w, 0.25, 1, -8, 7) - w).detach()
ste.pow(2).sum().backward()
print(ste.detach())
print(w.grad)
w2 = w.detach().clone().requires_grad_()
ref = torch.fake_quantize_per_tensor_affine(w2, 0.25, 1, -8, 7)
ref.pow(2).sum().backward()
print(torch.equal(ref.detach(), ste.detach()), w2.grad)

# ---- quantized tensors ----
x = torch.linspace(-2, 2, 12).reshape(3, 4)
q = torch.quantize_per_tensor(x, scale=0.05, zero_point=3, dtype=torch.qint8)
print(q)
print(q.int_repr(), q.q_scale(), q.q_zero_point(), q.qscheme())
qu = torch.quantize_per_tensor(x * 1e9, 1.0, 0, torch.qint32)
print(qu.int_repr()[0], qu.int_repr()[2])
print(q.mean(), torch.mean(q, 1).int_repr())
print(torch.sigmoid(q).int_repr(), torch.sigmoid(q).q_scale(), torch.sigmoid(q).q_zero_point())
print(torch.tanh(q).dequantize()[0])
print(q.sort(dim=1, descending=True).values.int_repr()[0], q.topk(2).indices)
print(torch.nn.functional.leaky_relu(q, 0.2).int_repr()[0])
for expression in ["q * 2.0", "q + 1", "q.float()", "q.abs()", "torch.exp(q)", "q.sum()"]:
    try:
        eval(expression)
    except (RuntimeError, NotImplementedError) as e:
        print(expression, "->", type(e).__name__, str(e).split(" with arguments")[0].split(";")[0])
print(q.to("cpu").dtype, q.type(), q.dequantize().dtype)
