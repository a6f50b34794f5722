"""The fast paths of the layer workloads (bench/test_layers.py) give the values of the general
ones: linear on N-D inputs as one GEMM, layer_norm's C rows, fused attention (its grad_fn, its
create_graph backward, packed multi-head self-attention with masks)."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


@pytest.mark.parametrize("contiguous", [True, False])
def test_linear_on_3d_input_folds_rows(contiguous):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 6))
    if not contiguous:
        x = x.transpose(1, 0, 2)
    w, b = rng.standard_normal((3, 6)), rng.standard_normal(3)
    xt = tg.tensor(np.array(x), requires_grad=True)
    if not contiguous:
        xt = tg.tensor(np.ascontiguousarray(x.transpose(1, 0, 2)), requires_grad=True)
        xin = xt.transpose(0, 1)
    else:
        xin = xt
    wt, bt = tg.tensor(w, requires_grad=True), tg.tensor(b, requires_grad=True)
    y = F.linear(xin, wt, bt)
    # PyTorch's grad_fn: a folded addmm (a view) for a contiguous input, matmul + add otherwise
    assert type(y.grad_fn).__name__ == ("ViewBackward0" if contiguous else "AddBackward0")
    np.testing.assert_allclose(y.detach().numpy(), x @ w.T + b, rtol=1e-12)
    g = rng.standard_normal(y.shape)
    y.backward(tg.tensor(g))
    gx = g @ w
    np.testing.assert_allclose(xt.grad.numpy(), gx if contiguous else gx.transpose(1, 0, 2),
                               rtol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), np.einsum("abo,abi->oi", g, x), rtol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy(), g.sum((0, 1)), rtol=1e-12)
    # matmul of a batch by a matrix folds too
    xm = tg.tensor(np.ascontiguousarray(x), requires_grad=True)
    ym = xm @ tg.tensor(w.T.copy())
    ym.backward(tg.tensor(g))
    np.testing.assert_allclose(xm.grad.numpy(), gx, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_rows_equal_the_numpy_formula(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 4, 37)) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(37).astype(dtype), rng.standard_normal(37).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    X, G, N = x.reshape(-1, 37), g.reshape(-1, 37), 37
    mean = np.add.reduce(X, axis=1, keepdims=True) / N
    mean = mean + np.add.reduce(X - mean, axis=1, keepdims=True) / N     # (corrected mean)
    xc = X - mean
    rstd = 1 / np.sqrt(np.add.reduce(xc * xc, axis=1, keepdims=True) / N + dtype(1e-5))
    xhat = xc * rstd
    gx = G * w
    a = np.add.reduce(gx, axis=1, keepdims=True) / N
    c = np.add.reduce(gx * xhat, axis=1, keepdims=True) / N
    xt, wt, bt = (tg.tensor(v, requires_grad=True) for v in (x, w, b))
    y = F.layer_norm(xt, (37,), wt, bt)
    y.backward(tg.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), (xhat * w + b).reshape(x.shape))
    np.testing.assert_array_equal(xt.grad.numpy(), (rstd * (gx - a - xhat * c)).reshape(x.shape))
    np.testing.assert_array_equal(wt.grad.numpy(), np.add.reduce(G * xhat, axis=0))
    np.testing.assert_array_equal(bt.grad.numpy(), np.add.reduce(G, axis=0))


def test_fused_attention_second_order_matches_torch(torch):
    rng = np.random.default_rng(2)
    # 3-D operands: PyTorch runs its math kernel (its flash kernel has no second derivative), and
    # the fused record computing them carries that kernel's last node name
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]
    mask = rng.random((3, 5)) > 0.3
    mask[:, 0] = True
    results = []
    for lib in (torch, tg):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=lib.tensor(mask))
        results.append(type(out.grad_fn).__name__)
        gq, = lib.autograd.grad((out ** 2).sum(), q, create_graph=True)
        gk, gv = lib.autograd.grad(gq.sin().sum(), (k, v))
        results += [gk.detach().numpy(), gv.detach().numpy()]
    t, g = results[:3], results[3:]
    assert g[0] == t[0] == "UnsafeViewBackward0"
    for a, b in zip(t[1:], g[1:]):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("batch_first", [True, False])
def test_packed_self_attention_with_masks_matches_torch(torch, batch_first):
    rng = np.random.default_rng(3)
    N, L, E, H = 2, 4, 4, 2
    x = rng.standard_normal((N, L, E) if batch_first else (L, N, E))
    kpm = np.zeros((N, L))
    kpm[1, 3:] = -np.inf                  # float, as the float attn_mask (no type-mismatch warning)
    causal = np.triu(np.full((L, L), -np.inf), 1)
    results = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=lib.float64)
        if lib is tg:
            m.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in state.items()})
        else:
            with torch.no_grad():
                m.in_proj_bias.normal_()
            state = m.state_dict()
        xt = lib.tensor(x, requires_grad=True)
        out, _ = m(xt, xt, xt, need_weights=False, key_padding_mask=lib.tensor(kpm),
                   attn_mask=lib.tensor(causal))
        (out ** 2).sum().backward()
        results.append([out.detach().numpy(), xt.grad.numpy(), m.in_proj_weight.grad.numpy(),
                        m.in_proj_bias.grad.numpy(), m.out_proj.weight.grad.numpy()])
        if lib is tg and batch_first:   # PyTorch has no double backward through its CPU flash kernel
            def f(t):
                return m(t, t, t, need_weights=False, key_padding_mask=tg.tensor(kpm),
                         attn_mask=tg.tensor(causal))[0]
            assert tg.autograd.gradgradcheck(f, (tg.tensor(x, requires_grad=True),))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
