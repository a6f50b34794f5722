"""vector-quantize-pytorch style k-means codebook init: einops cdist, batched bincount with
scatter_add_, EMA via lerp_, straight-through estimator with pack/unpack, gumbel argmax with fixed
noise, perplexity and bincount; scatter_add_ dtype errors."""
import torch
import torch.nn.functional as F
import torch.distributed as distributed
from torch import nn, einsum
from einops import rearrange, repeat, reduce, pack, unpack

def exists(v):
    return v is not None

def log(t, eps=1e-20):
    return torch.log(t.clamp(min=eps))

def l2norm(t, dim=-1, eps=1e-6):
    return F.normalize(t, p=2, dim=dim, eps=eps)

def cdist(x, y):
    x2 = reduce(x ** 2, 'b n d -> b n', 'sum')
    y2 = reduce(y ** 2, 'b n d -> b n', 'sum')
    xy = einsum('b i d, b j d -> b i j', x, y) * -2
    return (rearrange(x2, 'b i -> b i 1') + rearrange(y2, 'b j -> b 1 j') + xy).clamp(min=0).sqrt()

def ema_inplace(old, new, decay):
    is_mps = str(old.device).startswith('mps:')
    if not is_mps:
        old.lerp_(new, 1 - decay)
    else:
        old.mul_(decay).add_(new * (1 - decay))

def batched_bincount(x, *, minlength):
    batch, dtype, device = x.shape[0], x.dtype, x.device
    target = torch.zeros(batch, minlength, dtype=dtype, device=device)
    values = torch.ones_like(x)
    target.scatter_add_(-1, x, values)
    return target

def batched_sample_vectors(samples, num):
    return torch.stack([s[torch.linspace(0, s.shape[0] - 1, num).long()] for s in samples.unbind(dim=0)], dim=0)

def kmeans(samples, num_clusters, num_iters=5, use_cosine_sim=False):
    num_codebooks, dim, dtype, device = samples.shape[0], samples.shape[-1], samples.dtype, samples.device
    means = batched_sample_vectors(samples, num_clusters)
    for _ in range(num_iters):
        if use_cosine_sim:
            dists = samples @ rearrange(means, 'h n d -> h d n')
        else:
            dists = -cdist(samples, means)
        buckets = torch.argmax(dists, dim=-1)
        bins = batched_bincount(buckets, minlength=num_clusters)
        zero_mask = bins == 0
        bins_min_clamped = bins.masked_fill(zero_mask, 1)
        new_means = buckets.new_zeros(num_codebooks, num_clusters, dim, dtype=dtype)
        new_means.scatter_add_(1, repeat(buckets, 'h n -> h n d', d=dim), samples)
        new_means = new_means / rearrange(bins_min_clamped, '... -> ... 1')
        if use_cosine_sim:
            new_means = l2norm(new_means)
        means = torch.where(rearrange(zero_mask, '... -> ... 1'), means, new_means)
    return means, bins

samples = torch.sin(torch.arange(1 * 40 * 3, dtype=torch.float32) * 0.77).reshape(1, 40, 3)
means, bins = kmeans(samples, 4)
print(means.shape, bins.tolist(), means.round(decimals=3).tolist())
means_c, bins_c = kmeans(l2norm(samples), 4, use_cosine_sim=True)
print(bins_c.tolist(), bins_c.dtype)
print(distributed.is_available(), distributed.is_initialized())
ema = torch.zeros(4)
ema_inplace(ema, bins[0].float(), 0.9)
print(ema.tolist())
ema2 = torch.zeros(4, 3)
ema2.lerp_(torch.ones(4, 3), torch.full((4, 3), 0.25))
print(ema2[0].tolist(), torch.lerp(torch.zeros(2), torch.ones(2), 0.3).tolist())
x = torch.cos(torch.arange(2 * 5 * 3, dtype=torch.float32)).reshape(2, 5, 3).requires_grad_()
flat, ps = pack([x], '* d')
flat = rearrange(flat, 'n d -> 1 n d')
dist = -cdist(flat, means)
ind = dist.argmax(dim=-1)
q = F.embedding(ind[0], means[0])
q = rearrange(q, 'n d -> 1 n d')
q_st = flat + (q - flat).detach()
q_out, = unpack(q_st[0], ps, '* d')
commit = F.mse_loss(q.detach(), flat)
(q_out.sum() * 0.5 + commit).backward()
print(ind.tolist(), f'{commit.item():.5f}', x.grad.abs().sum().round(decimals=4).item())
# rotation trick / gumbel with fixed noise
logits = torch.log_softmax(dist, dim=-1)
u = torch.linspace(0.05, 0.95, logits.numel()).reshape(logits.shape)
gumbel = -log(-log(u))
print(((logits + gumbel) / 1.0).argmax(dim=-1).tolist())
one_hot = F.one_hot(ind, 4).float()
avg_probs = reduce(one_hot, '... c -> c', 'mean')
perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
print(f'{perplexity.item():.4f}', avg_probs.tolist())
counts = torch.bincount(ind.flatten(), minlength=6)
print(counts.tolist(), torch.bincount(torch.tensor([0, 2, 2]), weights=torch.tensor([0.5, 1., 2.])).tolist())
try:
    torch.zeros(2, 3).scatter_add_(1, torch.zeros(2, 3), torch.ones(2, 3))
except RuntimeError as e:
    print('RuntimeError', 'int64' in str(e))
try:
    torch.zeros(2, 3).scatter_add_(1, torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.float64))
except RuntimeError as e:
    print('RuntimeError', 'same dtype' in str(e) or 'dtype' in str(e))
entropy = lambda p: -(p * log(p)).sum(dim=-1)
probs = F.softmax(dist * 10, dim=-1)
print(f'{entropy(probs).mean().item():.5f}', f'{entropy(probs.mean(dim=(0,1))).item():.5f}')
