"""Packed documents with FlexAttention, in the style of attention-gym's document-masking
examples: a document id per token, a causal mask kept inside each document, prefix-LM and
sliding-window variants combined with and_masks / or_masks, the BlockMask printed, and the
output checked against attention with an explicit dense mask."""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import (
    and_masks, create_block_mask, create_mask, flex_attention, noop_mask, or_masks)

torch.manual_seed(3)


def det(*shape, phase=0.0):
    """Deterministic stand-in for randn (the printed values must not depend on a seed)."""
    n = math.prod(shape)
    return torch.sin(torch.arange(n, dtype=torch.float32) * 0.731 + phase).view(*shape) * 1.5


lengths = [5, 9, 3, 7, 8]
doc_id = torch.cat([torch.full((n,), i, dtype=torch.long) for i, n in enumerate(lengths)])
T = doc_id.numel()
_, counts = torch.unique_consecutive(doc_id, return_counts=True)
offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)[:-1]])
print("T", T, "offsets", offsets.tolist())


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def wrap_documents(inner):
    def doc_mask(b, h, q_idx, kv_idx):
        same = doc_id[q_idx] == doc_id[kv_idx]
        q_local = q_idx - offsets[doc_id[q_idx]]
        kv_local = kv_idx - offsets[doc_id[kv_idx]]
        return same & inner(b, h, q_local, kv_local)
    return doc_mask


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= 4


def prefix(b, h, q_idx, kv_idx):
    return kv_idx < 6


doc_causal = wrap_documents(causal)
variants = {
    "doc_causal": doc_causal,
    "doc_window": and_masks(doc_causal, window),
    "prefix_or_causal": or_masks(prefix, causal),
    "doc_full": wrap_documents(noop_mask),
}

B, H, E = 2, 3, 8
q = det(B, H, T, E, phase=1.0)
k = det(B, H, T, E, phase=2.0)
v = det(B, H, T, E, phase=3.0)

for name, mod in variants.items():
    dense = create_mask(mod, 1, 1, T, T, device="cpu")
    bm = create_block_mask(mod, None, None, T, T, device="cpu", BLOCK_SIZE=8)
    print(name, "allowed", int(dense.sum()), "of", dense.numel())
    print(bm)
    print("sparsity %.2f" % bm.sparsity(), "shape", bm.shape)
    print("kv_num_blocks", bm.kv_num_blocks.flatten().tolist())
    print("full_kv_num_blocks", bm.full_kv_num_blocks.flatten().tolist())
    print("to_dense", bm.to_dense()[0, 0].tolist())
    out = flex_attention(q, k, v, block_mask=bm)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    print("out", tuple(out.shape), out.dtype, "max |flex - sdpa| < 1e-5:",
          bool((out - ref).abs().max() < 1e-5))
    print("row sums of out[0,0,:4]", [round(x, 4) for x in out[0, 0, :4].sum(-1).tolist()])

print(repr(create_block_mask(doc_causal, B, H, T, T, device="cpu", BLOCK_SIZE=16)))

# The default 128-token blocks: one block covers the whole packed sequence.
bm128 = create_block_mask(doc_causal, None, None, T, T, device="cpu")
print(bm128)
print("same output with 128-blocks:",
      bool((flex_attention(q, k, v, block_mask=bm128)
            - flex_attention(q, k, v, block_mask=create_block_mask(
                doc_causal, None, None, T, T, device="cpu", BLOCK_SIZE=8))).abs().max() < 1e-6))

# A per-batch mask: batch 1 sees the whole sequence, batch 0 only its documents.
def per_batch(b, h, q_idx, kv_idx):
    return (b == 1) | (doc_id[q_idx] == doc_id[kv_idx])

bmb = create_block_mask(per_batch, B, None, T, T, device="cpu", BLOCK_SIZE=8)
print(bmb.to_string(grid_size=4))
print(bmb[1])
out_b = flex_attention(q, k, v, block_mask=bmb)
print("batch 1 equals plain attention:",
      bool((out_b[1] - F.scaled_dot_product_attention(q[1], k[1], v[1])).abs().max() < 1e-5))

# Packed training batch through a tiny GQA block, inference only.
class Block(torch.nn.Module):
    def __init__(self, dim=16, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x, block_mask):
        Bx, Tx, C = x.shape
        q = self.q(x).view(Bx, Tx, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(Bx, Tx, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        y = flex_attention(q, k, v, block_mask=block_mask, enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(Bx, Tx, C))


block = Block().eval()
with torch.no_grad():
    for i, p in enumerate(block.parameters()):
        p.copy_(det(*p.shape, phase=10.0 + i) * 0.3)
x = det(2, T, 16, phase=4.0)
with torch.no_grad():
    y = block(x, variants["doc_causal"] and create_block_mask(doc_causal, None, None, T, T,
                                                              device="cpu", BLOCK_SIZE=8))
print("block out", tuple(y.shape), [round(t, 4) for t in y[0, :3, 0].tolist()])
# a token at a document start sees only itself: its attention output is its own value
with torch.no_grad():
    qb = block.q(x).view(2, T, 4, 4).transpose(1, 2)
    kb, vb = block.kv(x).view(2, T, 2, 2, 4).permute(2, 0, 3, 1, 4)
    yb = flex_attention(qb, kb, vb, block_mask=create_block_mask(
        doc_causal, None, None, T, T, device="cpu"), enable_gqa=True)
starts = offsets.tolist()
print("doc starts copy their value:",
      bool((yb[:, ::2, starts] - vb[:, :, starts]).abs().max() < 1e-6))
