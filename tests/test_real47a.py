"""Idioms of public "from scratch" model scripts (task real47a), each compared with PyTorch.

The scripts run in this task showed no difference beyond random draws; these tests guard the
idioms they lean on (diffusion schedules, causal and grouped-query attention, sampling loops,
schedulers chained by warm-up scripts, einops over tensors) so that a later change cannot break
them silently."""
import math

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _close(ours, theirs, rtol=1e-5, atol=1e-6):
    assert str(ours.dtype) == str(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _diffusion_step(lib, x0, noise, t):
    # DDPM forward process: a linear beta schedule, alphas' cumulative product, per-sample
    # coefficients gathered at the timesteps and broadcast over (C, H, W)
    betas = lib.linspace(1e-4, 0.02, 10)
    alphas_cumprod = lib.cumprod(1.0 - betas, dim=0)
    prev = lib.nn.functional.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
    variance = betas * (1.0 - prev) / (1.0 - alphas_cumprod)
    log_var = lib.log(lib.clamp(variance, min=1e-20))

    def extract(a):
        return a.gather(-1, t).reshape(t.shape[0], *((1,) * (x0.dim() - 1)))
    xt = extract(alphas_cumprod.sqrt()) * x0 + extract((1.0 - alphas_cumprod).sqrt()) * noise
    loss = lib.nn.functional.mse_loss(xt, lib.zeros_like(xt))
    loss.backward()
    return xt, log_var, x0.grad


def test_ddpm_schedule_gather_and_gradient():
    x = np.linspace(-1, 1, 2 * 3 * 4 * 4).reshape(2, 3, 4, 4).astype(np.float32)
    n = np.cos(np.arange(x.size)).reshape(x.shape).astype(np.float32)
    ours = _diffusion_step(tg, tg.tensor(x, requires_grad=True), tg.tensor(n), tg.tensor([1, 7]))
    theirs = _diffusion_step(torch, torch.tensor(x, requires_grad=True), torch.tensor(n),
                             torch.tensor([1, 7]))
    for a, b in zip(ours, theirs):
        _close(a, b)


def _attention(lib, q, k, v, **kw):
    q, k, v = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    (out * lib.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    return out, q.grad, k.grad, v.grad


@pytest.mark.parametrize("kw", [
    dict(is_causal=True),
    dict(attn_mask="bool_tril"),
    dict(scale=0.3),
    dict(enable_gqa=True),
])
def test_sdpa_variants_values_and_grads(kw):
    rng = np.random.default_rng(0)
    hk = 2 if kw.get("enable_gqa") else 4
    q = rng.standard_normal((2, 4, 5, 8)).astype(np.float32)
    k = rng.standard_normal((2, hk, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, hk, 5, 8)).astype(np.float32)

    def args(lib):
        if kw.get("attn_mask") == "bool_tril":
            return dict(attn_mask=lib.tril(lib.ones(5, 5, dtype=lib.bool)))
        return kw
    for a, b in zip(_attention(tg, q, k, v, **args(tg)), _attention(torch, q, k, v, **args(torch))):
        _close(a, b, rtol=1e-4, atol=1e-5)


def _manual_causal_head(lib, x):
    # the "attention from scratch" head: scores masked with masked_fill(-inf) on a tril buffer
    T = x.shape[1]
    tril = lib.tril(lib.ones(T, T))
    wei = x @ x.transpose(-2, -1) * x.shape[-1] ** -0.5
    wei = wei.masked_fill(tril[:T, :T] == 0, float("-inf"))
    wei = lib.nn.functional.softmax(wei, dim=-1)
    out = wei @ x
    out.pow(2).sum().backward()
    return wei, out


def test_masked_fill_causal_head_matches_sdpa_and_torch():
    x = np.sin(np.arange(2 * 4 * 6)).reshape(2, 4, 6).astype(np.float32)
    ours = _manual_causal_head(tg, tg.tensor(x, requires_grad=True))
    theirs = _manual_causal_head(torch, torch.tensor(x, requires_grad=True))
    for a, b in zip(ours, theirs):
        _close(a, b)
    # the hand-written head equals the fused causal attention
    fused = tg.nn.functional.scaled_dot_product_attention(tg.tensor(x), tg.tensor(x), tg.tensor(x),
                                                          is_causal=True)
    np.testing.assert_allclose(fused.numpy(), ours[1].detach().numpy(), rtol=1e-5, atol=1e-6)


def _top_k_filter(lib, logits, k, temperature):
    # GPT sampling: keep the k largest logits (others -inf), temperature, softmax
    v, _ = lib.topk(logits, k)
    logits = logits.clone()
    logits[logits < v[:, [-1]]] = -float("Inf")
    return lib.nn.functional.softmax(logits / temperature, dim=-1)


def test_top_k_sampling_filter_and_multinomial_contract():
    logits = np.array([[0.1, 2.0, -1.0, 1.5, 0.3], [3.0, -2.0, 0.0, 0.5, 2.5]], np.float32)
    ours = _top_k_filter(tg, tg.tensor(logits), 2, 0.8)
    theirs = _top_k_filter(torch, torch.tensor(logits), 2, 0.8)
    _close(ours, theirs)
    # the draw itself follows tapegrad's stream; its dtype, shape and support follow PyTorch's
    tg.manual_seed(0)
    idx = tg.multinomial(ours, num_samples=1)
    assert idx.dtype == tg.int64 and tuple(idx.shape) == (2, 1)
    assert all(ours[i, idx[i, 0]].item() > 0 for i in range(2))
    grown = tg.cat((tg.zeros((2, 1), dtype=tg.long), idx), dim=1)
    assert grown.dtype == tg.int64 and tuple(grown.shape) == (2, 2)


def _lr_trace(lib, kind):
    p = lib.nn.Parameter(lib.zeros(2))
    sch = lib.optim.lr_scheduler
    if kind == "onecycle":
        opt = lib.optim.AdamW([p], lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
        s = sch.OneCycleLR(opt, max_lr=1e-2, total_steps=12)
    elif kind == "warm_restarts":
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True)
        s = sch.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=1e-4)
    elif kind == "warmup_then_cosine":
        opt = lib.optim.Adam([p], lr=1e-3)
        s = sch.SequentialLR(opt, [sch.LinearLR(opt, 0.1, 1.0, total_iters=3),
                                   sch.CosineAnnealingLR(opt, T_max=6)], milestones=[3])
    else:
        opt = lib.optim.Adam([p], lr=1e-3)
        s = sch.LambdaLR(opt, lambda step: min((step + 1) / 4, 1.0) * 0.5 ** (step // 5))
    lrs = []
    for _ in range(11):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    return lrs


@pytest.mark.parametrize("kind", ["onecycle", "warm_restarts", "warmup_then_cosine", "lambda"])
def test_scheduler_traces(kind):
    np.testing.assert_allclose(_lr_trace(tg, kind), _lr_trace(torch, kind), rtol=1e-12, atol=0)


def test_einops_over_tensors_keeps_gradients():
    einops = pytest.importorskip("einops")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        heads = einops.rearrange(t, "b n (h d) -> b h n d", h=2)
        scores = einops.einsum(heads, heads, "b h n d, b h m d -> b h n m")
        pooled = einops.reduce(scores, "b h n m -> b n", "mean")
        rep = einops.repeat(pooled, "b n -> b r n", r=2)
        (rep * math.pi).sum().backward()
        return rep, t.grad
    for a, b in zip(run(tg), run(torch)):
        _close(a, b)
