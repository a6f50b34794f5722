"""Perceiver (lucidrains/perceiver-pytorch style, einsum instead of einops) with fourier features."""
import math
from math import pi, log
from functools import wraps
import torch
from torch import nn, einsum
import torch.nn.functional as F


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def cache_fn(f):
    cache = dict()
    @wraps(f)
    def cached_fn(*args, _cache=True, key=None, **kwargs):
        if not _cache:
            return f(*args, **kwargs)
        nonlocal cache
        if key in cache:
            return cache[key]
        result = f(*args, **kwargs)
        cache[key] = result
        return result
    return cached_fn


def fourier_encode(x, max_freq, num_bands=4):
    x = x.unsqueeze(-1)
    device, dtype, orig_x = x.device, x.dtype, x
    scales = torch.linspace(1., max_freq / 2, num_bands, device=device, dtype=dtype)
    scales = scales[(*((None,) * (len(x.shape) - 1)), Ellipsis)]
    x = x * scales * pi
    x = torch.cat([x.sin(), x.cos()], dim=-1)
    x = torch.cat((x, orig_x), dim=-1)
    return x


class PreNorm(nn.Module):
    def __init__(self, dim, fn, context_dim=None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.norm_context = nn.LayerNorm(context_dim) if exists(context_dim) else None

    def forward(self, x, **kwargs):
        x = self.norm(x)
        if exists(self.norm_context):
            context = kwargs['context']
            normed_context = self.norm_context(context)
            kwargs.update(context=normed_context)
        return self.fn(x, **kwargs)


class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * F.gelu(gates)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4, dropout=0.):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult * 2), GEGLU(), nn.Linear(dim * mult, dim), nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = default(context_dim, query_dim)
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, context=None, mask=None):
        h = self.heads
        q = self.to_q(x)
        context = default(context, x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        b = q.shape[0]
        # 'b n (h d) -> (b h) n d'
        q, k, v = map(lambda t: t.reshape(b, t.shape[1], h, -1).permute(0, 2, 1, 3).reshape(b * h, t.shape[1], -1), (q, k, v))
        sim = einsum('b i d, b j d -> b i j', q, k) * self.scale
        if exists(mask):
            mask = mask.reshape(b, -1)
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = mask[:, None, None, :].expand(b, h, 1, mask.shape[-1]).reshape(b * h, 1, -1)
            sim.masked_fill_(~mask, max_neg_value)
        attn = sim.softmax(dim=-1)
        attn = self.dropout(attn)
        out = einsum('b i j, b j d -> b i d', attn, v)
        out = out.reshape(b, h, out.shape[1], -1).permute(0, 2, 1, 3).reshape(b, out.shape[1], -1)
        return self.to_out(out)


class Perceiver(nn.Module):
    def __init__(self, *, num_freq_bands, depth, max_freq, input_channels=3, input_axis=2, num_latents=16,
                 latent_dim=32, cross_heads=1, latent_heads=4, cross_dim_head=16, latent_dim_head=8,
                 num_classes=10, weight_tie_layers=False):
        super().__init__()
        self.input_axis = input_axis
        self.max_freq = max_freq
        self.num_freq_bands = num_freq_bands
        fourier_channels = (input_axis * ((num_freq_bands * 2) + 1))
        input_dim = fourier_channels + input_channels
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))

        get_cross_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, input_dim, heads=cross_heads, dim_head=cross_dim_head), context_dim=input_dim)
        get_cross_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim))
        get_latent_attn = lambda: PreNorm(latent_dim, Attention(latent_dim, heads=latent_heads, dim_head=latent_dim_head))
        get_latent_ff = lambda: PreNorm(latent_dim, FeedForward(latent_dim))
        get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff = map(cache_fn, (get_cross_attn, get_cross_ff, get_latent_attn, get_latent_ff))

        self.layers = nn.ModuleList([])
        for i in range(depth):
            should_cache = i > 0 and weight_tie_layers
            cache_args = {'_cache': should_cache}
            self.layers.append(nn.ModuleList([
                get_cross_attn(**cache_args), get_cross_ff(**cache_args),
                nn.ModuleList([nn.ModuleList([get_latent_attn(**cache_args, key=0), get_latent_ff(**cache_args, key=0)])])
            ]))
        self.to_logits = nn.Sequential(nn.LayerNorm(latent_dim), nn.Linear(latent_dim, num_classes))

    def forward(self, data, mask=None, return_embeddings=False):
        b, *axis, _ = data.shape
        device, dtype = data.device, data.dtype
        assert len(axis) == self.input_axis, 'input data must have the right number of axis'
        axis_pos = list(map(lambda size: torch.linspace(-1., 1., steps=size, device=device, dtype=dtype), axis))
        pos = torch.stack(torch.meshgrid(*axis_pos, indexing='ij'), dim=-1)
        enc_pos = fourier_encode(pos, self.max_freq, self.num_freq_bands)
        enc_pos = enc_pos.reshape(*enc_pos.shape[:-2], -1)
        enc_pos = enc_pos.unsqueeze(0).repeat(b, *((1,) * (enc_pos.dim())))
        data = torch.cat((data, enc_pos), dim=-1)
        data = data.reshape(b, -1, data.shape[-1])
        x = self.latents.unsqueeze(0).expand(b, -1, -1)
        for cross_attn, cross_ff, self_attns in self.layers:
            x = cross_attn(x, context=data, mask=mask) + x
            x = cross_ff(x) + x
            for self_attn, self_ff in self_attns:
                x = self_attn(x) + x
                x = self_ff(x) + x
        if return_embeddings:
            return x
        x = x.mean(dim=-2)
        return self.to_logits(x)


torch.manual_seed(0)
enc = fourier_encode(torch.tensor([[0.0, 0.5], [1.0, -1.0]]), max_freq=10., num_bands=4)
print("fourier", enc.shape)
print(enc[0])
model = Perceiver(num_freq_bands=4, depth=2, max_freq=10., weight_tie_layers=True)
print("tied:", model.layers[0][2] is model.layers[1][2], model.layers[0][0] is model.layers[1][0])
print("unique params:", sum(p.numel() for p in model.parameters()))
print("named (dedup) count:", len(list(model.named_parameters())), len(list(model.named_parameters(remove_duplicate=False))))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(0.1 * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.77 + 0.3 * i).view_as(p))
img = torch.sin(torch.arange(2 * 6 * 6 * 3, dtype=torch.float32) / 5).view(2, 6, 6, 3)
mask = torch.ones(2, 6, 6, dtype=torch.bool)
mask[1, 3:] = False
logits = model(img, mask=mask)
print(logits.shape)
print(logits)
emb = model(img, return_embeddings=True)
print("emb", emb.shape, emb.dtype)
logits.logsumexp(-1).sum().backward()
print("latents grad", model.latents.grad.shape, round(model.latents.grad.abs().sum().item(), 4))
print(-torch.finfo(torch.float32).max, torch.finfo(torch.float16).min, torch.finfo(torch.bfloat16).eps)
