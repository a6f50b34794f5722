"""Inspired by ShivaMalakummari/SynPep-AI's PeptideTransformer (Embedding with padding_idx=0 and
a batch-first TransformerEncoder over amino-acid tokens): peptides padded with pad_sequence,
a masked-residue training step with src_key_padding_mask and CrossEntropyLoss(ignore_index),
then inference the three ways scripts write the padding mask (bool, float -1e9, a soft float
bias) in eval mode under no_grad, where PyTorch runs its fused layer and nested-tensor paths:
padded positions come back as zeros, a fully masked query as NaN in the bare layer, and
MultiheadAttention keeps its ordinary path for a float mask.  Deterministic sin weights."""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

warnings.simplefilter("ignore")          # (the nested-tensor prototype note goes to stderr)
torch.manual_seed(0)

AA = "ACDEFGHIKLMNPQRSTVWY"
aa2i = {a: i + 2 for i, a in enumerate(AA)}                   # 0 = pad, 1 = mask token
peps = ["MKTAYIAKQR", "GLFDIVKK", "ACDW", "WYVRSTPEG"]
toks = pad_sequence([torch.tensor([aa2i[a] for a in p]) for p in peps], batch_first=True)
pad = toks == 0
print("tokens", toks.shape, "padded", pad.sum(1).tolist())


def det_(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            k = torch.arange(p.numel(), dtype=torch.float32).view(p.shape)
            p.copy_(torch.sin(k * 0.61 + 0.5 * i) * scale)
    return module


class PeptideTransformer(nn.Module):
    def __init__(self, vocab=22, d=16, heads=4, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=32, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.fc = nn.Linear(d, vocab)
        self.d = d

    def forward(self, x, mask=None):
        h = self.embedding(x) * math.sqrt(self.d)
        return self.fc(self.encoder(h, src_key_padding_mask=mask))


model = det_(PeptideTransformer())
with torch.no_grad():
    model.embedding.weight[0].zero_()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
masked = toks.clone()
masked[:, 1::3] = torch.where(toks[:, 1::3] > 0, torch.ones_like(toks[:, 1::3]), toks[:, 1::3])
target = torch.where(masked == 1, toks, torch.zeros_like(toks))
for step in range(3):
    logits = model(masked, pad)
    loss = F.cross_entropy(logits.reshape(-1, 22), target.reshape(-1), ignore_index=0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} pad-row grad {model.embedding.weight.grad[0].abs().sum().item()}")

model.eval()
with torch.no_grad():
    out_bool = model.encoder(model.embedding(toks), src_key_padding_mask=pad)
    out_big = model.encoder(model.embedding(toks), src_key_padding_mask=pad.float() * -1e9)
    soft = pad.float() * -0.5
    out_soft = model.encoder(model.embedding(toks), src_key_padding_mask=soft)
    print("zeros at padding:", out_bool[pad].abs().sum().item(), out_big[pad].abs().sum().item(),
          out_soft[pad].abs().sum().item())
    print("bool == -1e9:", torch.allclose(out_bool, out_big, atol=1e-5),
          "bool == soft:", torch.allclose(out_bool, out_soft, atol=1e-5))
    print("row sums", out_big.sum(-1)[2])
    model.train()
    out_train = model.encoder(model.embedding(toks), src_key_padding_mask=soft)
    print("train soft mask (added):", out_train.sum(-1)[2])
    model.eval()

    layer = model.encoder.layers[0]
    full = torch.tensor([[True] * 4, [False, True, False, True]])
    x = model.embedding(toks[:2, :4])
    print("layer bool  ", layer(x, src_key_padding_mask=full).sum(-1))
    print("layer -1e9  ", layer(x, src_key_padding_mask=full.float() * -1e9).sum(-1))
    mha = layer.self_attn
    kp = torch.zeros(2, 4).masked_fill(full, float("-inf"))
    print("mha float   ", mha(x, x, x, key_padding_mask=kp, need_weights=False)[0].sum(-1))
    print("mha bool    ", mha(x, x, x, key_padding_mask=full, need_weights=False)[0].sum(-1))
    o, w = mha(x, x, x, key_padding_mask=full[1:].expand(2, 4))
    print("weights", w.shape, w[0, 0])
    pred = model(toks, pad).argmax(-1)
    print("pred", pred.masked_fill(pad, -1)[2].tolist())
