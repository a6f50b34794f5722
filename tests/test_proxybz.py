"""Regression tests from the proxybz pass (MoE routing, efficient attention, RoPE/ALiBi, KV caches)."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(*shapes, seed=0):
    rs = np.random.RandomState(seed)
    arrs = [rs.randn(*s) for s in shapes]
    return [torch.tensor(a) for a in arrs], [tapegrad.tensor(a) for a in arrs]


@pytest.mark.parametrize("eq,shapes", [
    ("se,ec->sec", [(6, 4), (4, 2)]),       # GShard-style combine weights, no summed subscript
    ("se,sc->ces", [(6, 4), (6, 2)]),
    ("se,sc->esc", [(6, 4), (6, 2)]),
    ("i,j->ij", [(4,), (3,)]),              # outer product of positions and frequencies
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bnd,bne->bnde", [(2, 3, 4), (2, 3, 5)]),   # causal linear attention's per-step outer product
    ("se,sc,s->sec", [(6, 4), (6, 2), (6,)]),
])
def test_einsum_without_summed_subscript_multiplies_like_torch(eq, shapes):
    ts, gs = _pair(*shapes)
    ts = [t.requires_grad_() for t in ts]
    gs = [g.requires_grad_() for g in gs]
    rt = torch.einsum(eq, *ts)
    rg = tapegrad.einsum(eq, *gs)
    np.testing.assert_allclose(rg.detach().numpy(), rt.detach().numpy(), rtol=1e-12)
    assert rg.stride() == rt.stride()
    assert rg.is_contiguous() == rt.is_contiguous()
    assert type(rg.grad_fn).__name__ == type(rt.grad_fn).__name__ == "MulBackward0"
    if rt.is_contiguous():      # PyTorch's product takes .view(); it failed before the fix
        assert tuple(rg.view(-1).shape) == tuple(rt.view(-1).shape)
    w = np.random.RandomState(1).randn(*rt.shape)
    (rt * torch.tensor(w)).sum().backward()
    (rg * tapegrad.tensor(w)).sum().backward()
    for t, g in zip(ts, gs):
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_einsum_outer_product_view_gradcheck():
    # float64 finite differences through the product's .view() (which raised before the fix)
    a = tapegrad.tensor(np.random.RandomState(2).randn(5, 3), requires_grad=True)
    c = tapegrad.tensor(np.random.RandomState(3).randn(3, 2), requires_grad=True)
    assert tapegrad.autograd.gradcheck(
        lambda x, y: tapegrad.einsum("se,ec->sec", x, y).view(5, 6), (a, c))
    # a mixed-dtype pair still promotes (float32 x int64 -> float32), as PyTorch's product does
    rt = torch.einsum("i,j->ij", torch.ones(3, dtype=torch.float32), torch.arange(2))
    rg = tapegrad.einsum("i,j->ij", tapegrad.ones(3, dtype=tapegrad.float32), tapegrad.arange(2))
    assert str(rg.dtype) == str(rt.dtype)
    np.testing.assert_array_equal(rg.numpy(), rt.numpy())


@pytest.mark.parametrize("dim", [1, 2, -1])
def test_repeat_interleave_count_mismatch_names_the_dim_given(dim):
    counts = [1, 3, 2, 1]
    with pytest.raises(RuntimeError) as et:
        torch.zeros(2, 2, 3).repeat_interleave(torch.tensor(counts), dim=dim)
    with pytest.raises(RuntimeError) as eg:
        tapegrad.zeros(2, 2, 3).repeat_interleave(tapegrad.tensor(counts), dim=dim)
    assert str(eg.value) == str(et.value)


@pytest.mark.parametrize("maker,L,S", [("causal_lower_right", 4, 6), ("causal_upper_left", 4, 6),
                                       ("causal_lower_right", 5, 5)])
def test_causal_bias_as_sdpa_mask(maker, L, S):
    from torch.nn.attention import bias as tbias
    from tapegrad.nn.attention import bias as gbias
    tb, gb = getattr(tbias, maker)(L, S), getattr(gbias, maker)(L, S)
    np.testing.assert_array_equal(gb._materialize().numpy(), tb._materialize().numpy())
    assert repr(gb) == repr(tb)
    assert (gb.seq_len_q, gb.seq_len_kv, int(gb.variant)) == (tb.seq_len_q, tb.seq_len_kv,
                                                               int(tb.variant))
    (qt, kt, vt), (qg, kg, vg) = _pair((1, 2, L, 8), (1, 2, S, 8), (1, 2, S, 3))
    qt.requires_grad_(); qg.requires_grad_()
    ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=tb, scale=0.4)
    og = tapegrad.nn.functional.scaled_dot_product_attention(qg, kg, vg, attn_mask=gb, scale=0.4)
    np.testing.assert_allclose(og.detach().numpy(), ot.detach().numpy(), rtol=1e-10)
    ot.sum().backward(); og.sum().backward()
    np.testing.assert_allclose(qg.grad.numpy(), qt.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert tapegrad.autograd.gradcheck(
        lambda q: tapegrad.nn.functional.scaled_dot_product_attention(q, kg, vg, attn_mask=gb),
        (qg.detach().requires_grad_(),))


def test_causal_bias_errors():
    from tapegrad.nn.attention import bias as gbias
    from torch.nn.attention import bias as tbias
    with pytest.raises(AssertionError, match="only supports 2D tensors"):
        gbias.causal_lower_right(2, 3, 4)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant"):
        gbias.CausalBias(1, 2, 3)
    with pytest.warns(UserWarning, match="will produce NaNs"):
        gbias.causal_lower_right(6, 4)
    q = tapegrad.zeros(1, 1, 3, 2)
    qt = torch.zeros(1, 1, 3, 2)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        torch.nn.functional.scaled_dot_product_attention(qt, qt, qt, attn_mask=tbias.causal_upper_left(3, 3), is_causal=True)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        tapegrad.nn.functional.scaled_dot_product_attention(
            q, q, q, attn_mask=gbias.causal_upper_left(3, 3), is_causal=True)
