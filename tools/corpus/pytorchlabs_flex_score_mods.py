"""FlexAttention score_mods, as the FlexAttention blog post and attention-gym write them:
ALiBi slopes, tanh softcapping, a relative-position bias table, a score_mod that masks, and the
logsumexp returned alongside the output; each checked against attention computed by hand."""
import math

import torch
from torch.nn.attention.flex_attention import (
    AuxRequest, create_block_mask, create_mask, flex_attention)

torch.manual_seed(11)


def det(*shape, phase=0.0):
    """Deterministic stand-in for randn (the printed values must not depend on a seed)."""
    n = math.prod(shape)
    return torch.sin(torch.arange(n, dtype=torch.float32) * 0.731 + phase).view(*shape) * 1.5

B, H, L, S, E = 2, 4, 12, 12, 16
q = det(B, H, L, E, phase=1.0)
k = det(B, H, S, E, phase=2.0)
v = det(B, H, S, E, phase=3.0)


def reference(bias_fn, allowed=None, scale=None):
    scale = 1 / math.sqrt(E) if scale is None else scale
    s = (q @ k.transpose(-2, -1)) * scale
    s = bias_fn(s)
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


slopes = torch.tensor([2.0 ** (-8 * (i + 1) / H) for i in range(H)])
print("slopes", [round(x, 5) for x in slopes.tolist()])


def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return 5.0 * torch.tanh(score / 5.0)


rel_table = torch.nn.Parameter(torch.linspace(-1, 1, 2 * L - 1))


def relative(score, b, h, q_idx, kv_idx):
    return score + rel_table[q_idx - kv_idx + L - 1]


def causal_score(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx >= kv_idx, score, -float("inf"))


pos = torch.arange(L)
dist = pos[None, :] - pos[:, None]
cases = {
    "alibi": (alibi, lambda s: s + slopes[:, None, None] * dist),
    "softcap": (softcap, lambda s: 5.0 * torch.tanh(s / 5.0)),
    "relative": (relative, lambda s: s + rel_table.detach()[(-dist) + L - 1]),
    "causal_score": (causal_score, lambda s: s.masked_fill(dist > 0, float("-inf"))),
}
with torch.no_grad():
    for name, (mod, by_hand) in cases.items():
        out, aux = flex_attention(q, k, v, score_mod=mod, return_aux=AuxRequest(lse=True))
        ref, ref_lse = reference(by_hand)
        print(name, out.dtype, tuple(aux.lse.shape), aux.lse.dtype, aux.max_scores,
              "out ok", bool((out - ref).abs().max() < 1e-5),
              "lse ok", bool((aux.lse - ref_lse).abs().max() < 1e-4))
        print("  out[0,0,-1,:4]", [round(x, 4) for x in out[0, 0, -1, :4].tolist()])

# score_mod and block mask together, a custom scale, and create_mask of a score_mod
def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


bm = create_block_mask(causal, None, None, L, S, device="cpu", BLOCK_SIZE=4)
out = flex_attention(q, k, v, score_mod=softcap, block_mask=bm, scale=0.1)
ref, _ = reference(lambda s: 5.0 * torch.tanh(s / 5.0), allowed=dist <= 0, scale=0.1)
print("softcap+causal, scale 0.1:", bool((out - ref).abs().max() < 1e-5))
print("create_mask(causal_score) lower-triangular:",
      bool((create_mask(causal_score, 1, 1, L, S, device="cpu")[0, 0]
            == torch.ones(L, S, dtype=torch.bool).tril()).all()))

# a query row that may attend nothing gives zeros and a logsumexp of -inf
def no_row_5(b, h, q_idx, kv_idx):
    return (q_idx != 5) & (kv_idx <= q_idx)


bm5 = create_block_mask(no_row_5, None, None, L, S, device="cpu", BLOCK_SIZE=4)
out5, aux5 = flex_attention(q, k, v, block_mask=bm5, return_aux=AuxRequest(lse=True))
print("row 5 zeros:", bool((out5[:, :, 5] == 0).all()), "lse", aux5.lse[0, 0, 4:7].tolist()[1])
print("other rows finite:", bool(torch.isfinite(out5).all()))

# half precision in, half out; the logsumexp stays float32
oh, auxh = flex_attention(q.half(), k.half(), v.half(), score_mod=alibi,
                          return_aux=AuxRequest(lse=True))
print("half:", oh.dtype, auxh.lse.dtype,
      bool((oh.float() - flex_attention(q, k, v, score_mod=alibi)).abs().max() < 1e-2))

# a float64 query keeps float64 throughout
od = flex_attention(q.double(), k.double(), v.double(), score_mod=relative)
print("double:", od.dtype, round(od.sum().item(), 6))

# GQA: 4 query heads share 2 key/value heads
k2, v2 = k[:, :2], v[:, :2]
og = flex_attention(q, k2, v2, score_mod=alibi, enable_gqa=True)
print("gqa equals repeated heads:",
      bool((og - flex_attention(q, k2.repeat_interleave(2, 1), v2.repeat_interleave(2, 1),
                                score_mod=alibi)).abs().max() < 1e-6))
for bad in [lambda: flex_attention(q, k2, v2),
            lambda: flex_attention(q, k[:, :3], v[:, :3], enable_gqa=True),
            lambda: flex_attention(q, k[..., :8], v),
            lambda: flex_attention(q[0], k[0], v[0]),
            lambda: flex_attention(q[:, :, :8], k, v, block_mask=bm)]:
    try:
        bad()
    except Exception as e:
        print(type(e).__name__, str(e)[:90])
