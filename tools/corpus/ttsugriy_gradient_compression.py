"""Communication-efficient and secure aggregation of client updates, deterministic throughout:
top-k sparsification with error feedback (torch.topk on magnitudes, zeros_like + index
assignment, scatter_ / gather, the residual carried to the next round), server-side sums with
index_add_ / scatter_add_ and a sparse COO tensor, per-tensor int8 quantisation by hand
(round, clamp, .to(torch.int8), dequantise) and with torch.quantize_per_tensor_dynamic /
quantize_per_tensor (int_repr, q_scale, q_zero_point, dequantize), sign compression, a
bucketize quantiser, and a secure-aggregation toy: pairwise additive masks from seeded
generators that cancel in the sum, and additive secret sharing of fixed-point updates in int64
modular arithmetic."""
import warnings

import numpy as np
import torch

warnings.simplefilter("ignore", UserWarning)     # (quantized-tensor deprecation notice)
rng = np.random.default_rng(11)
D, CLIENTS, K = 16, 3, 4
updates = [torch.from_numpy(rng.standard_normal(D).astype(np.float32)) for _ in range(CLIENTS)]


class TopK:
    def __init__(self, k):
        self.k = k
        self.residual = None

    def compress(self, g):
        if self.residual is not None:
            g = g + self.residual
        _, idx = torch.topk(g.abs(), self.k)
        sent = torch.zeros_like(g)
        sent[idx] = g[idx]
        self.residual = g - sent
        return g[idx], idx


comps = [TopK(K) for _ in range(CLIENTS)]
for rnd in range(2):
    agg = torch.zeros(D)
    counts = torch.zeros(D, dtype=torch.long)
    sparse = None
    for c, u in zip(comps, updates):
        vals, idx = c.compress(u)
        agg.index_add_(0, idx, vals)
        counts.index_add_(0, idx, torch.ones_like(idx))
        sp = torch.sparse_coo_tensor(idx.unsqueeze(0), vals, (D,))
        sparse = sp if sparse is None else sparse + sp
    print(rnd, agg, counts)
    print(torch.allclose(sparse.to_dense(), agg), sparse.coalesce().values().shape)
    print(torch.where(counts > 0, agg / counts.clamp(min=1), torch.zeros(())))
    print([round(c.residual.norm().item(), 5) for c in comps])
flat = updates[0]
_, ind = flat.abs().topk(K, sorted=False)
dense = torch.zeros_like(flat).scatter_(0, ind, flat.gather(0, ind))
print(torch.equal(dense != 0, torch.zeros(D, dtype=torch.bool).scatter_(0, ind, True)))
print(torch.zeros(D).scatter_add_(0, ind, flat[ind]).count_nonzero())

# int8 by hand
scale = flat.abs().max() / 127.0
q = torch.clamp(torch.round(flat / scale), -128, 127).to(torch.int8)
deq = q.float() * scale
print(q, q.dtype, q.element_size() * q.numel(), flat.element_size() * flat.numel())
print((deq - flat).abs().max() <= scale / 2 + 1e-6)
# quantised tensors
for dtype in (torch.qint8, torch.quint8):
    for reduce_range in (False, True):
        qd = torch.quantize_per_tensor_dynamic(flat, dtype, reduce_range)
        print(dtype, reduce_range, f"{qd.q_scale():.8f}", qd.q_zero_point(), qd.int_repr()[:6].tolist(),
              f"{(qd.dequantize() - flat).abs().max().item():.6f}")
qt = torch.quantize_per_tensor(flat, float(scale), 0, torch.qint8)
print(torch.equal(qt.int_repr(), q), qt.qscheme(), qt.dequantize().dtype)
print(torch.quantize_per_tensor_dynamic(flat, torch.float16, False).dtype)
# sign compression with a per-tensor scale, and a bucketize quantiser
sgn = flat.sign().to(torch.int8)
print(sgn, (flat.abs().mean() * sgn.float())[:4])
bounds = torch.linspace(-2, 2, 9)
codes = torch.bucketize(flat, bounds)
centers = torch.cat([bounds[:1] - 0.25, (bounds[1:] + bounds[:-1]) / 2, bounds[-1:] + 0.25])
print(codes, f"{(centers[codes] - flat).abs().max().item():.5f}")

# secure aggregation: pairwise masks
masked = []
for i, u in enumerate(updates):
    m = torch.zeros(D)
    for j in range(CLIENTS):
        if i != j:
            gen = torch.Generator().manual_seed(100 * min(i, j) + max(i, j))
            r = torch.rand(D, generator=gen)
            m += r if i < j else -r
    masked.append(u + m)
print(torch.allclose(torch.stack(masked).sum(0), torch.stack(updates).sum(0), atol=1e-5))
# additive secret sharing of fixed-point values mod P
P, SCALE = 2 ** 31 - 1, 2 ** 16
enc = [torch.round(u * SCALE).long() % P for u in updates]
shares = []
for e in enc:
    parts = [torch.from_numpy(rng.integers(0, P, D)) for _ in range(CLIENTS - 1)]
    parts.append((e - sum(parts)) % P)
    shares.append(parts)
total = sum(sum(shares[c][s] for c in range(CLIENTS)) % P for s in range(CLIENTS)) % P
total[total > P // 2] -= P
dec = total.double() / SCALE
print(enc[0].dtype, dec.dtype, torch.allclose(dec.float(), torch.stack(updates).sum(0), atol=1e-3))
print(torch.tensor([-7, 7]) % 5, torch.fmod(torch.tensor([-7, 7]), 5), torch.tensor([7, -7]) // 2)
