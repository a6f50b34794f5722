"""Proxy corpus for modern vision architectures (session proxyct): the building blocks paper
repositories write (Swin shifted windows, deformable sampling, GFNet global filters, ToMe token
merging, LeViT cached attention biases, CLIP attention pooling, RepVGG re-parameterization),
run under tapegrad and under torch on the same float64 values; outputs and gradients must agree.

The round found no difference from PyTorch; these tests keep the composite idioms pinned so that a
later change to one of the ops they lean on shows up here as the idiom a user would write.
"""
import itertools

import numpy as np
import pytest

import tapegrad


def _values(shape, freq):
    """Deterministic float64 values: no random stream is shared between the two libraries."""
    return np.sin(np.arange(int(np.prod(shape))) * freq).reshape(shape)


def _run(lib, body, arrays):
    """(output, grads of the inputs) of body(lib, *inputs) under `lib`, as numpy arrays; the loss
    weights the output with a fixed cosine so every output element carries its own gradient."""
    inputs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = body(lib, *inputs)
    weights = lib.tensor(np.cos(np.arange(out.numel()) * 0.37).reshape(tuple(out.shape)), dtype=out.dtype)
    grads = lib.autograd.grad((out * weights).sum(), inputs)
    return out.detach().numpy(), [g.numpy() for g in grads]


def _assert_same_as_torch(body, arrays):
    torch = pytest.importorskip("torch")
    out_tg, grads_tg = _run(tapegrad, body, arrays)
    out_t, grads_t = _run(torch, body, arrays)
    np.testing.assert_allclose(out_tg, out_t, rtol=1e-9, atol=1e-10)
    for g_tg, g_t in zip(grads_tg, grads_t):
        np.testing.assert_allclose(g_tg, g_t, rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------- Swin shifted-window attention

def _swin_shifted_window_attention(lib, x, qkv_w, table, window=2, shift=1, heads=2):
    """One shifted-window attention pass as microsoft/Swin-Transformer writes it: roll, window
    partition by view/permute, relative position bias gathered by a meshgrid-built index buffer,
    the -100 mask built by slice assignment, window reverse, roll back."""
    B, H, W, C = x.shape
    coords = lib.stack(lib.meshgrid([lib.arange(window), lib.arange(window)], indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += window - 1
    rel[:, :, 1] += window - 1
    rel[:, :, 0] *= 2 * window - 1
    index = rel.sum(-1)

    img_mask = lib.zeros((1, H, W, 1), dtype=x.dtype)
    cnt = 0
    for h in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
        for w in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
            img_mask[:, h, w, :] = cnt
            cnt += 1

    def partition(t):
        b, hh, ww, c = t.shape
        t = t.view(b, hh // window, window, ww // window, window, c)
        return t.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window * window, c)

    mask_windows = partition(img_mask).squeeze(-1)
    attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
    attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)

    windows = partition(lib.roll(x, shifts=(-shift, -shift), dims=(1, 2)))
    n_win, N, _ = windows.shape
    qkv = (windows @ qkv_w.t()).reshape(n_win, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0] * (C // heads) ** -0.5, qkv[1], qkv[2]
    bias = table[index.view(-1)].view(N, N, -1).permute(2, 0, 1)
    attn = q @ k.transpose(-2, -1) + bias.unsqueeze(0)
    nW = attn_mask.shape[0]
    attn = (attn.view(n_win // nW, nW, heads, N, N) + attn_mask.unsqueeze(1).unsqueeze(0)).view(-1, heads, N, N)
    out = (attn.softmax(-1) @ v).transpose(1, 2).reshape(n_win, N, C)
    out = out.view(B, H // window, W // window, window, window, C).permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, C)
    return lib.roll(out, shifts=(shift, shift), dims=(1, 2))


def test_swin_shifted_window_attention_matches_torch():
    _assert_same_as_torch(_swin_shifted_window_attention,
                          [_values((2, 4, 4, 4), 0.3), _values((12, 4), 0.7) * 0.5, _values((9, 2), 1.1)])


# ---------------------------------------------------------------- deformable sampling

@pytest.mark.parametrize("mode,padding_mode,align_corners",
                         list(itertools.product(["bilinear", "nearest", "bicubic"],
                                                ["zeros", "border", "reflection"], [False, True])))
def test_grid_sample_with_offsets_past_the_border_matches_torch(mode, padding_mode, align_corners):
    # deformable offsets push sampling points outside [-1, 1]: every padding mode is exercised
    def body(lib, x, offsets):
        ys, xs = lib.meshgrid(lib.linspace(-1, 1, 3, dtype=x.dtype), lib.linspace(-1, 1, 4, dtype=x.dtype), indexing="ij")
        grid = lib.stack((xs, ys), -1).unsqueeze(0) + 1.4 * offsets
        return lib.nn.functional.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _assert_same_as_torch(body, [_values((1, 2, 4, 5), 0.37), _values((1, 3, 4, 2), 0.91)])


# ---------------------------------------------------------------- GFNet, ToMe, CLIP pooling

def test_gfnet_global_filter_matches_torch():
    def body(lib, x, complex_weight):
        spectrum = lib.fft.rfft2(x, dim=(1, 2), norm="ortho") * lib.view_as_complex(complex_weight)
        return lib.fft.irfft2(spectrum, s=(4, 4), dim=(1, 2), norm="ortho")
    _assert_same_as_torch(body, [_values((2, 4, 4, 3), 0.3), _values((4, 3, 3, 2), 0.5)])


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_tome_scatter_reduce_merge_matches_torch(reduce, include_self):
    def body(lib, dst, src):
        index = lib.tensor([[0, 2, 0, 1]]).unsqueeze(-1).expand(1, 4, 3)
        return dst.scatter_reduce(-2, index, src, reduce=reduce, include_self=include_self)
    _assert_same_as_torch(body, [_values((1, 3, 3), 1.3), _values((1, 4, 3), 0.7)])


def test_clip_attention_pool_with_separate_projections_matches_torch():
    def body(lib, x, w_q, w_k, w_v, w_o, b_in, b_out):
        tokens = x.flatten(2).permute(2, 0, 1)
        tokens = lib.cat([tokens.mean(dim=0, keepdim=True), tokens], dim=0)
        out, _ = lib.nn.functional.multi_head_attention_forward(
            tokens[:1], tokens, tokens, 4, 2, None, b_in, None, None, False, 0.0, w_o, b_out,
            training=False, need_weights=False, use_separate_proj_weight=True,
            q_proj_weight=w_q, k_proj_weight=w_k, v_proj_weight=w_v)
        return out.squeeze(0)
    arrays = [_values((2, 4, 2, 3), 0.3)] + [_values((4, 4), f) for f in (0.2, 0.3, 0.4, 0.6)]
    _assert_same_as_torch(body, arrays + [_values((12,), 0.1), _values((4,), 0.15)])


# ---------------------------------------------------------------- module-level idioms (tapegrad only)

class _LeViTBias(tapegrad.nn.Module):
    """LeViT caches its gathered attention biases in eval() by overriding train()."""

    def __init__(self):
        super().__init__()
        self.attention_biases = tapegrad.nn.Parameter(tapegrad.arange(6.0).view(2, 3))
        self.register_buffer("idxs", tapegrad.tensor([[0, 1, 2], [1, 0, 1], [2, 1, 0]]))

    @tapegrad.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and hasattr(self, "ab"):
            del self.ab
        else:
            self.ab = self.attention_biases[:, self.idxs]
        return self

    def forward(self):
        return self.attention_biases[:, self.idxs] if self.training else self.ab


def test_levit_train_override_caches_biases_without_a_graph():
    module = _LeViTBias()
    module.forward().sum().backward()
    # each bias collects one gradient per position of the index buffer that names it
    assert module.attention_biases.grad.tolist() == [[3.0, 4.0, 2.0], [3.0, 4.0, 2.0]]
    module.eval()
    assert not module.ab.requires_grad and module.ab.shape == (2, 3, 3)
    module.train()
    assert not hasattr(module, "ab")


def test_repvgg_fused_kernel_reproduces_the_three_branches():
    nn, F = tapegrad.nn, tapegrad.nn.functional
    x = tapegrad.tensor(_values((2, 3, 5, 5), 0.17), dtype=tapegrad.float32)
    dense, pointwise = nn.Conv2d(3, 3, 3, padding=1, bias=False), nn.Conv2d(3, 3, 1, bias=False)
    bns = [nn.BatchNorm2d(3) for _ in range(3)]
    with tapegrad.no_grad():
        for i, bn in enumerate(bns):
            bn.running_mean.copy_(tapegrad.linspace(-0.2, 0.3, 3) * (i + 1))
            bn.running_var.copy_(tapegrad.linspace(0.5, 1.5, 3))
            bn.weight.fill_(1.0 + 0.1 * i)
            bn.bias.fill_(0.05 * i)
    for m in (dense, pointwise, *bns):
        m.eval()
    expected = bns[0](dense(x)) + bns[1](pointwise(x)) + bns[2](x)

    def fuse(kernel, bn):
        std = (bn.running_var + bn.eps).sqrt()
        return kernel * (bn.weight / std).reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * bn.weight / std

    identity = tapegrad.zeros(3, 3, 3, 3)
    for i in range(3):
        identity[i, i, 1, 1] = 1.0
    k3, b3 = fuse(dense.weight, bns[0])
    k1, b1 = fuse(pointwise.weight, bns[1])
    kid, bid = fuse(identity, bns[2])
    fused = F.conv2d(x, k3 + F.pad(k1, [1, 1, 1, 1]) + kid, b3 + b1 + bid, padding=1)
    np.testing.assert_allclose(fused.detach().numpy(), expected.detach().numpy(), atol=1e-5)
