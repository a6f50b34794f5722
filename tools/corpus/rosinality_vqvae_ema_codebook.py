"""A two-level VQ-VAE with exponential-moving-average codebooks, in the style of
rosinality/vq-vae-2-pytorch (written for this corpus, not a copy): codebooks kept as buffers
(embed, cluster_size, embed_avg) and updated in place under .data with mul_/add_(alpha=...),
nearest-code search with (-dist).max(1), F.one_hot(...).type(dtype), F.embedding lookups of the
transposed codebook, the straight-through estimator input + (q - input).detach(), a commitment
term, residual blocks that add in place (out += input), torch.distributed helpers that name
dist.ReduceOp.SUM as a default argument and fall back to a no-op without a process group,
Laplace-smoothed cluster sizes, codebook perplexity, decode_code from indices and a state_dict
round trip.  Every random draw comes from one numpy RandomState.
"""
import io

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

rs = np.random.RandomState(7)


def world_size():
    if not dist.is_available() or not dist.is_initialized():
        return 1
    return dist.get_world_size()


def all_reduce(tensor, op=dist.ReduceOp.SUM):
    # single process: the statistics are already global
    if world_size() == 1:
        return tensor
    dist.all_reduce(tensor, op=op)
    return tensor


class EMACodebook(nn.Module):
    def __init__(self, dim, n_codes, decay=0.9, eps=1e-5):
        super().__init__()
        self.dim, self.n_codes, self.decay, self.eps = dim, n_codes, decay, eps
        codes = torch.from_numpy(0.2 * rs.randn(dim, n_codes).astype(np.float32))
        self.register_buffer("embed", codes)
        self.register_buffer("cluster_size", torch.zeros(n_codes))
        self.register_buffer("embed_avg", codes.clone())

    def forward(self, z):
        flat = z.reshape(-1, self.dim)
        dist_ = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embed
                 + self.embed.pow(2).sum(0, keepdim=True))
        _, idx = (-dist_).max(1)
        onehot = F.one_hot(idx, self.n_codes).type(flat.dtype)
        idx = idx.view(*z.shape[:-1])
        quant = self.lookup(idx)
        if self.training:
            counts = all_reduce(onehot.sum(0))
            sums = all_reduce(flat.transpose(0, 1) @ onehot)
            self.cluster_size.data.mul_(self.decay).add_(counts, alpha=1 - self.decay)
            self.embed_avg.data.mul_(self.decay).add_(sums, alpha=1 - self.decay)
            n = self.cluster_size.sum()
            smoothed = (self.cluster_size + self.eps) / (n + self.n_codes * self.eps) * n
            self.embed.data.copy_(self.embed_avg / smoothed.unsqueeze(0))
        commit = (quant.detach() - z).pow(2).mean()
        quant = z + (quant - z).detach()
        probs = onehot.mean(0)
        perplexity = torch.exp(-(probs * torch.log(probs + 1e-10)).sum())
        return quant, commit, idx, perplexity

    def lookup(self, idx):
        return F.embedding(idx, self.embed.transpose(0, 1))


class Residual(nn.Module):
    def __init__(self, ch, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(ch, hidden, 3, padding=1),
                                  nn.ReLU(inplace=True), nn.Conv2d(hidden, ch, 1))

    def forward(self, x):
        out = self.body(x)
        out += x
        return out


class TwoLevelVQ(nn.Module):
    def __init__(self, ch=8, dim=4, n_codes=6):
        super().__init__()
        self.enc_b = nn.Sequential(nn.Conv2d(3, ch, 4, 2, 1), nn.ReLU(inplace=True),
                                   nn.Conv2d(ch, ch, 3, padding=1), Residual(ch, 4), nn.ReLU())
        self.enc_t = nn.Sequential(nn.Conv2d(ch, ch, 4, 2, 1), Residual(ch, 4), nn.ReLU())
        self.pre_t = nn.Conv2d(ch, dim, 1)
        self.code_t = EMACodebook(dim, n_codes)
        self.up_t = nn.ConvTranspose2d(dim, dim, 4, 2, 1)
        self.pre_b = nn.Conv2d(ch + dim, dim, 1)
        self.code_b = EMACodebook(dim, n_codes)
        self.dec = nn.Sequential(nn.Conv2d(2 * dim, ch, 3, padding=1), Residual(ch, 4),
                                 nn.ReLU(inplace=True), nn.ConvTranspose2d(ch, 3, 4, 2, 1))

    def encode(self, x):
        b = self.enc_b(x)
        t = self.enc_t(b)
        q_t, c_t, i_t, p_t = self.code_t(self.pre_t(t).permute(0, 2, 3, 1))
        q_t = q_t.permute(0, 3, 1, 2)
        b = torch.cat([self.up_t(q_t), b], 1)
        q_b, c_b, i_b, p_b = self.code_b(self.pre_b(b).permute(0, 2, 3, 1))
        return q_t, q_b.permute(0, 3, 1, 2), c_t.unsqueeze(0) + c_b.unsqueeze(0), i_t, i_b, (p_t, p_b)

    def decode(self, q_t, q_b):
        return self.dec(torch.cat([self.up_t(q_t), q_b], 1))

    def decode_code(self, i_t, i_b):
        return self.decode(self.code_t.lookup(i_t).permute(0, 3, 1, 2),
                           self.code_b.lookup(i_b).permute(0, 3, 1, 2))

    def forward(self, x):
        q_t, q_b, commit, _, _, perp = self.encode(x)
        return self.decode(q_t, q_b), commit, perp


model = TwoLevelVQ()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rs.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
print("buffers:", [name for name, _ in model.named_buffers()])
print("parameters:", sum(p.numel() for p in model.parameters()), "requires_grad of embed:",
      model.code_t.embed.requires_grad)
print("ReduceOp.SUM:", dist.ReduceOp.SUM, "available:", isinstance(dist.is_available(), bool))

opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(4):
    x = torch.from_numpy(rs.uniform(-1, 1, (3, 3, 8, 8)).astype(np.float32))
    opt.zero_grad()
    out, commit, (p_t, p_b) = model(x)
    recon = F.mse_loss(out, x)
    loss = recon + 0.25 * commit.mean()
    loss.backward()
    opt.step()
    print(f"step {step}: recon {recon.item():.4f} commit {commit.item():.4f} "
          f"perplexity {p_t.item():.3f}/{p_b.item():.3f} "
          f"cluster mass {model.code_b.cluster_size.sum().item():.3f}")
print("commit shape", tuple(commit.shape), "grad of pre_t", model.pre_t.weight.grad.abs().sum().item() > 0)
print("codebook gets no gradient:", model.code_t.embed.grad is None)

model.eval()
with torch.no_grad():
    before = model.code_b.embed.clone()
    q_t, q_b, commit, i_t, i_b, _ = model.encode(x)
    print("eval leaves codebooks alone:", torch.equal(before, model.code_b.embed))
    print("codes top", i_t.shape, i_t.dtype, i_t.flatten().tolist())
    print("codes bottom", i_b.shape, torch.bincount(i_b.flatten(), minlength=6).tolist())
    rebuilt = model.decode_code(i_t, i_b)
    print("decode_code matches decode:", torch.allclose(rebuilt, model.decode(q_t, q_b), atol=1e-6),
          tuple(rebuilt.shape))

# straight-through: the gradient reaches the encoder output unchanged
z = torch.from_numpy(rs.randn(2, 3, 3, 4).astype(np.float32)).requires_grad_()
q, _, _, _ = model.code_t(z)
(q * torch.arange(4.0)).sum().backward()
print("straight-through grad:", z.grad[0, 0].tolist())

buf = io.BytesIO()
torch.save(model.state_dict(), buf)
buf.seek(0)
state = torch.load(buf)
fresh = TwoLevelVQ()
print(fresh.load_state_dict(state))
print("codebook restored:", torch.equal(fresh.code_b.embed_avg, model.code_b.embed_avg),
      len(state), sorted(k for k in state if "code_t" in k))
