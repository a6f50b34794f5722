"""torch.nn.attention.flex_attention: flex_attention with score_mod / BlockMask, create_block_mask,
create_mask, BlockMask's printing and slicing, and_masks / or_masks / noop_mask; gradients to
q, k, v and to tensors a score_mod captures; tapegrad.compile over it."""
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.attention import flex_attention as GF

torch = pytest.importorskip("torch")
from torch.nn.attention import flex_attention as TF  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _tg(x, requires_grad=False):
    t = tg.tensor(x.detach().numpy())
    return t.requires_grad_(True) if requires_grad else t


def _close(t, g, tol=1e-5):
    a, b = t.detach().numpy(), g.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def _values(seed, *shape, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=dtype)


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _sliding(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2


DOCS = [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3]


def _doc_mask(lib):
    docs = lib.tensor(DOCS)

    def doc_causal(b, h, q_idx, kv_idx):
        return (docs[q_idx] == docs[kv_idx]) & (q_idx >= kv_idx)
    return doc_causal


def _alibi(lib, slopes):
    table = lib.tensor(slopes)

    def alibi(score, b, h, q_idx, kv_idx):
        return score + table[h] * (kv_idx - q_idx)
    return alibi


def _softcap(lib):
    def softcap(score, b, h, q_idx, kv_idx):
        return 3.0 * lib.tanh(score / 3.0)
    return softcap


@pytest.mark.parametrize("mod", ["none", "alibi", "softcap", "where"])
@pytest.mark.parametrize("mask", ["none", "causal", "doc", "sliding"])
def test_values_and_lse_match_torch(mod, mask):
    B, H, L, E = 2, 4, 12, 8
    q, k, v = _values(1, B, H, L, E), _values(2, B, H, L, E), _values(3, B, H, L, 6)
    slopes = [0.5, 0.25, 0.125, 0.0625]
    mods = {"none": (None, None), "alibi": (_alibi(torch, slopes), _alibi(tg, slopes)),
            "softcap": (_softcap(torch), _softcap(tg)),
            "where": (lambda s, b, h, qi, ki: torch.where(qi >= ki, s, -float("inf")),
                      lambda s, b, h, qi, ki: tg.where(qi >= ki, s, -float("inf")))}
    masks = {"none": (None, None), "causal": (_causal, _causal),
             "doc": (_doc_mask(torch), _doc_mask(tg)), "sliding": (_sliding, _sliding)}
    tmod, gmod = mods[mod]
    tmask, gmask = masks[mask]
    tbm = gbm = None
    if tmask is not None:
        tbm = TF.create_block_mask(tmask, B, H, L, L, device="cpu", BLOCK_SIZE=4)
        gbm = GF.create_block_mask(gmask, B, H, L, L, device="cpu", BLOCK_SIZE=4)
    to, ta = TF.flex_attention(q, k, v, score_mod=tmod, block_mask=tbm,
                               return_aux=TF.AuxRequest(lse=True))
    go, ga = GF.flex_attention(_tg(q), _tg(k), _tg(v), score_mod=gmod, block_mask=gbm,
                               return_aux=GF.AuxRequest(lse=True))
    _close(to, go)
    _close(ta.lse, ga.lse)
    assert ga.max_scores is None


def test_causal_block_mask_equals_sdpa_is_causal():
    q, k, v = _values(4, 2, 3, 10, 8), _values(5, 2, 3, 10, 8), _values(6, 2, 3, 10, 8)
    bm = GF.create_block_mask(_causal, None, None, 10, 10)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    _close(ref, GF.flex_attention(_tg(q), _tg(k), _tg(v), block_mask=bm))


def test_block_mask_fields_and_printing_match_torch():
    doc_t, doc_g = _doc_mask(torch), _doc_mask(tg)
    for bs in (4, (4, 2), 128):
        tbm = TF.create_block_mask(doc_t, 2, 1, 12, 12, device="cpu", BLOCK_SIZE=bs)
        gbm = GF.create_block_mask(doc_g, 2, 1, 12, 12, device="cpu", BLOCK_SIZE=bs)
        for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
            np.testing.assert_array_equal(getattr(gbm, name).numpy(),
                                          getattr(tbm, name).numpy())
            assert getattr(gbm, name).dtype == tg.int32
        np.testing.assert_array_equal(gbm.to_dense().numpy(), tbm.to_dense().numpy())
        assert str(gbm) == str(tbm)           # BlockMask(shape=..., sparsity=...%, picture)
        assert repr(gbm) == repr(tbm)
        assert gbm.shape == tbm.shape and gbm.BLOCK_SIZE == tbm.BLOCK_SIZE
        assert gbm.sparsity() == tbm.sparsity() and gbm.numel() == tbm.numel()
        assert gbm.to_string(grid_size=2) == tbm.to_string(grid_size=2)
        assert gbm.to_string(limit=1) == tbm.to_string(limit=1)
        assert gbm.as_tuple()[:2] == tbm.as_tuple()[:2] and len(gbm.as_tuple()) == \
            len(tbm.as_tuple())


def test_block_mask_slicing_and_adjust_match_torch():
    def mod(b, h, q_idx, kv_idx):
        return (q_idx != 3) & ((b == 0) | (q_idx >= kv_idx)) & (h < 1 + q_idx % 2)
    tbm = TF.create_block_mask(mod, 2, 2, 16, 16, device="cpu", BLOCK_SIZE=4)
    gbm = GF.create_block_mask(mod, 2, 2, 16, 16, device="cpu", BLOCK_SIZE=4)
    for index in (0, -1, (1, 0), (slice(0, 1), slice(1, 2))):
        assert repr(gbm[index]) == repr(tbm[index])
        assert str(gbm[index]) == str(tbm[index])
    assert str(gbm._adjust(8, 12)) == str(tbm._adjust(8, 12))
    np.testing.assert_array_equal(gbm._adjust(8, 12).to_dense().numpy(),
                                  tbm._adjust(8, 12).to_dense().numpy())
    q = tg.randn(1, 2, 16, 4)
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        GF.flex_attention(q, q, q, block_mask=gbm[0])


def test_create_mask_and_mask_combinators_match_torch():
    def window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= 2
    for comb in ("and_masks", "or_masks"):
        t = TF.create_mask(getattr(TF, comb)(_causal, window), 1, 1, 6, 7, device="cpu")
        g = GF.create_mask(getattr(GF, comb)(_causal, window), 1, 1, 6, 7, device="cpu")
        _close(t, g)
    _close(TF.create_mask(TF.noop_mask, 2, None, 3, 4, device="cpu"),
           GF.create_mask(GF.noop_mask, 2, None, 3, 4, device="cpu"))
    # a score_mod's mask: where it does not give -inf
    def neg(s, b, h, q_idx, kv_idx):
        return torch.where(q_idx >= kv_idx, s, -float("inf"))

    def neg_g(s, b, h, q_idx, kv_idx):
        return tg.where(q_idx >= kv_idx, s, -float("inf"))
    _close(TF.create_mask(neg, 1, 2, 5, 5, device="cpu"), GF.create_mask(neg_g, 1, 2, 5, 5))


def test_fully_masked_rows_give_zeros_and_minus_inf_lse_and_zero_grad():
    def mod(b, h, q_idx, kv_idx):
        return (q_idx != 3) & (q_idx >= kv_idx)
    q, k, v = _values(7, 1, 2, 6, 4), _values(8, 1, 2, 6, 4), _values(9, 1, 2, 6, 4)
    tbm = TF.create_block_mask(mod, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    gbm = GF.create_block_mask(mod, 1, 2, 6, 6, device="cpu", BLOCK_SIZE=2)
    to, tl = TF.flex_attention(q, k, v, block_mask=tbm, return_lse=True)
    gq = _tg(q, True)
    go, gl = GF.flex_attention(gq, _tg(k), _tg(v), block_mask=gbm, return_lse=True)
    _close(to, go)
    _close(tl, gl)
    assert np.isneginf(gl.detach().numpy()[:, :, 3]).all()
    go.sum().backward()
    assert np.isfinite(gq.grad.numpy()).all() and (gq.grad.numpy()[:, :, 3] == 0).all()


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_dtypes_follow_torch(dtype):
    tdt = getattr(torch, dtype)
    q, k, v = (_values(s, 1, 2, 5, 4).to(tdt) for s in (10, 11, 12))
    to, tl = TF.flex_attention(q, k, v, score_mod=_softcap(torch), return_lse=True)
    go, gl = GF.flex_attention(_tg(q), _tg(k), _tg(v), score_mod=_softcap(tg), return_lse=True)
    _close(to, go, 2e-3 if dtype == "float16" else 1e-10)
    _close(tl, gl, 1e-5)             # float32 logsumexp for half inputs, float64 for float64
    # a float32 key/value with a half query: values are read in the query's dtype
    to = TF.flex_attention(q.float().half(), k.float(), v.float())
    go = GF.flex_attention(_tg(q.float().half()), _tg(k.float()), _tg(v.float()))
    _close(to, go, 2e-3)


def test_gqa_and_batch_broadcast_match_torch():
    q, k, v = _values(13, 2, 4, 6, 4), _values(14, 2, 2, 6, 4), _values(15, 2, 2, 6, 4)
    slopes = [1.0, 0.5, 0.25, 0.125]
    _close(TF.flex_attention(q, k, v, score_mod=_alibi(torch, slopes), enable_gqa=True),
           GF.flex_attention(_tg(q), _tg(k), _tg(v), score_mod=_alibi(tg, slopes),
                             enable_gqa=True))
    # a key/value batch of 1 serves every query batch when the BlockMask has the query's batch
    tbm = TF.create_block_mask(_causal, 2, None, 6, 6, device="cpu")
    gbm = GF.create_block_mask(_causal, 2, None, 6, 6, device="cpu")
    _close(TF.flex_attention(q, k[:1].repeat(1, 2, 1, 1), v[:1].repeat(1, 2, 1, 1),
                             block_mask=tbm),
           GF.flex_attention(_tg(q), _tg(k[:1].repeat(1, 2, 1, 1)),
                             _tg(v[:1].repeat(1, 2, 1, 1)), block_mask=gbm))


def test_output_is_laid_out_like_the_query():
    # PyTorch gives the output the query's stride order: a (B, L, H, E) projection transposed
    # to (B, H, L, E) comes back so that out.transpose(1, 2) is contiguous (.view works)
    base = _values(16, 2, 5, 3, 4)
    tq = base.transpose(1, 2)
    gq = _tg(base).transpose(1, 2)
    to, go = TF.flex_attention(tq, tq, tq), GF.flex_attention(gq, gq, gq)
    _close(to, go)
    assert go.stride() == to.stride()
    assert go.transpose(1, 2).is_contiguous()


def test_gradients_to_qkv_and_captured_bias_match_torch_reference():
    # PyTorch's CPU flex_attention refuses backward (its CUDA kernel supports it): the reference
    # is the same attention written out in torch ops
    B, H, Hkv, L, E = 2, 4, 2, 7, 5
    q = _values(17, B, H, L, E, dtype=torch.float64).requires_grad_()
    k = _values(18, B, Hkv, L, E, dtype=torch.float64).requires_grad_()
    v = _values(19, B, Hkv, L, 3, dtype=torch.float64).requires_grad_()
    bias = _values(20, H, 2 * L - 1, dtype=torch.float64).requires_grad_()
    pos = torch.arange(L)
    rel = pos[:, None] - pos[None, :] + L - 1
    scores = q @ k.repeat_interleave(2, 1).transpose(-2, -1) * 0.3 + bias[:, rel]
    scores = scores.masked_fill(pos[:, None] < pos[None, :], -float("inf"))
    ref_lse = torch.logsumexp(scores, -1)
    ref = torch.softmax(scores, -1) @ v.repeat_interleave(2, 1)
    (ref.sin().sum() + (ref_lse * 0.7).sum()).backward()

    gq, gk, gv, gbias = (_tg(t, True) for t in (q, k, v, bias))

    def score_mod(s, b, h, q_idx, kv_idx):
        return s + gbias[h, q_idx - kv_idx + L - 1]
    bm = GF.create_block_mask(_causal, None, None, L, L, BLOCK_SIZE=4)
    out, lse = GF.flex_attention(gq, gk, gv, score_mod=score_mod, block_mask=bm, scale=0.3,
                                 enable_gqa=True, return_lse=True)
    (out.sin().sum() + (lse * 0.7).sum()).backward()
    _close(ref, out, 1e-10)
    _close(ref_lse, lse, 1e-10)
    for t, g in ((q, gq), (k, gk), (v, gv), (bias, gbias)):
        _close(t.grad, g.grad, 1e-10)


def test_gradcheck_float64():
    L = 4
    bm = GF.create_block_mask(_doc_mask(tg), None, None, L, L, BLOCK_SIZE=2)

    def fn(q, k, v, table):
        def score_mod(s, b, h, q_idx, kv_idx):
            return 2.0 * tg.tanh(s / 2.0) + table[h] * (q_idx - kv_idx)
        out, lse = GF.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm,
                                     enable_gqa=True, return_lse=True)
        return out, lse

    inputs = (tg.randn(1, 2, L, 3, dtype=tg.float64, requires_grad=True),
              tg.randn(1, 1, L, 3, dtype=tg.float64, requires_grad=True),
              tg.randn(1, 1, L, 2, dtype=tg.float64, requires_grad=True),
              tg.randn(2, dtype=tg.float64, requires_grad=True))
    assert tg.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6)


def test_errors_match_torch():
    def run(lib, F, fn):
        with pytest.raises(Exception) as info:
            fn(lib, F)
        return info.type, str(info.value)[:80]

    cases = [
        lambda L, F: F.flex_attention(L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 6), L.ones(1, 2, 4, 8)),
        lambda L, F: F.flex_attention(L.ones(2, 4, 8), L.ones(2, 4, 8), L.ones(2, 4, 8)),
        lambda L, F: F.flex_attention(L.ones(8), L.ones(2, 4, 8), L.ones(2, 4, 8)),
        lambda L, F: F.flex_attention(L.ones(1, 4, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8)),
        lambda L, F: F.flex_attention(L.ones(1, 3, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8),
                                      enable_gqa=True),
        lambda L, F: F.flex_attention(L.ones(2, 2, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8)),
        lambda L, F: F.flex_attention(
            L.ones(1, 2, 8, 8), L.ones(1, 2, 8, 8), L.ones(1, 2, 8, 8),
            block_mask=F.create_block_mask(_causal, None, None, 4, 4, device="cpu")),
        lambda L, F: F.flex_attention(
            L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8),
            block_mask=F.create_block_mask(_causal, None, None, 8, 8, device="cpu")),
        lambda L, F: F.flex_attention(L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8),
                                      return_lse=True, return_aux=F.AuxRequest(lse=True)),
        lambda L, F: F.flex_attention(L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8),
                                      return_aux=F.AuxRequest(max_scores=True)),
        lambda L, F: F.flex_attention(L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8),
                                      kernel_options={"BACKEND": "X"}),
        lambda L, F: F.create_block_mask(lambda a, b, c: a, 1, 1, 4, 4, device="cpu"),
        lambda L, F: F.create_block_mask(lambda s, a, b, c, d: s, 1, 1, 4, 4, device="cpu"),
        lambda L, F: F.BlockMask.from_kv_blocks(L.ones(3, dtype=L.int32),
                                                L.zeros(3, dtype=L.int32)),
        lambda L, F: F.flex_attention([1.0], L.ones(1, 2, 4, 8), L.ones(1, 2, 4, 8)),
    ]
    for case in cases:
        t_type, t_msg = run(torch, TF, case)
        g_type, g_msg = run(tg, GF, case)
        assert (g_type, g_msg) == (t_type, t_msg)
    with pytest.raises(RuntimeError, match="All inputs should be callable mask_mods"):
        GF.or_masks(_causal, 3)


def test_warnings_once_like_torch():
    GF._WARNINGS_SHOWN.clear()
    q = tg.ones(1, 1, 2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GF.flex_attention(q, q, q, return_lse=True)
        GF.flex_attention(q, q, q, return_lse=True)
    kinds = [w.category for w in caught]
    assert kinds.count(FutureWarning) == 1 and kinds.count(UserWarning) == 1
    assert any("flex_attention called without torch.compile()" in str(w.message)
               for w in caught)


def test_compile_replays_flex_attention_with_gradients():
    L = 8
    docs = tg.tensor([0, 0, 0, 1, 1, 2, 2, 2])
    bias = tg.zeros(2, 2 * L - 1, requires_grad=True)
    bm = GF.create_block_mask(lambda b, h, q_idx, kv_idx: (docs[q_idx] == docs[kv_idx])
                              & (q_idx >= kv_idx), None, None, L, L, BLOCK_SIZE=4)
    w = tg.randn(16, 16, requires_grad=True)

    def step(x):
        qkv = (x @ w).view(1, L, 2, 8).transpose(1, 2)

        def score_mod(s, b, h, q_idx, kv_idx):
            return s + bias[h, q_idx - kv_idx + L - 1]
        return GF.flex_attention(qkv, qkv, qkv, score_mod=score_mod, block_mask=bm).pow(2).mean()

    compiled = tg.compile(step)
    for _ in range(3):
        x = tg.randn(1, L, 16)
        eager = step(x)
        eager.backward()
        grads = (w.grad.numpy().copy(), bias.grad.numpy().copy())
        w.grad = bias.grad = None
        replayed = compiled(x)
        replayed.backward()
        assert float(replayed) == float(eager)
        np.testing.assert_array_equal(w.grad.numpy(), grads[0])
        np.testing.assert_array_equal(bias.grad.numpy(), grads[1])
        w.grad = bias.grad = None
    assert compiled.stats["replays"] == 2
    assert compiled.explain().startswith("replayed")

    # a BlockMask built inside the compiled function (from its argument) runs eagerly
    def step2(x, ids):
        bm2 = GF.create_block_mask(lambda b, h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx],
                                   None, None, L, L)
        return GF.flex_attention(x, x, x, block_mask=bm2).sum()
    compiled2 = tg.compile(step2)
    x = tg.randn(1, 2, L, 4)
    for ids in (docs, tg.tensor([0, 1, 1, 1, 1, 1, 2, 3])):
        assert float(compiled2(x, ids)) == float(step2(x, ids))
    assert compiled2.explain().startswith("eager")


def test_causal_bias_with_sdpa_matches_torch():
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left
    from tapegrad.nn.attention import bias as gbias
    q, k, v = _values(21, 1, 2, 3, 4), _values(22, 1, 2, 5, 4), _values(23, 1, 2, 5, 4)
    for tmake, gmake in ((causal_upper_left, gbias.causal_upper_left),
                         (causal_lower_right, gbias.causal_lower_right)):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=tmake(3, 5))
        got = tg.nn.functional.scaled_dot_product_attention(_tg(q), _tg(k), _tg(v),
                                                            attn_mask=gmake(3, 5))
        _close(ref, got)


def test_score_mod_result_dtype_follows_torch_vmap_promotion():
    # PyTorch calls a score_mod on 0-d tensors (vmap): a captured 0-d float64 tensor promotes
    # the float32 score to float64 (and the logsumexp with it), as does a float64 table
    q = _values(24, 1, 2, 4, 4)
    for make in (lambda lib: lib.tensor(2.0, dtype=lib.float64),
                 lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64)):
        tc, gc = make(torch), make(tg)
        to, tl = TF.flex_attention(q, q, q, return_lse=True,
                                   score_mod=lambda s, b, h, qi, ki: s * tc[h] if tc.dim() else s * tc)
        go, gl = GF.flex_attention(_tg(q), _tg(q), _tg(q), return_lse=True,
                                   score_mod=lambda s, b, h, qi, ki: s * gc[h] if gc.dim() else s * gc)
        _close(to, go)
        _close(tl, gl)


def test_compiled_flex_attention_without_block_mask_replays():
    # (the default one-block BlockMask is built without numpy: a compiled caller replays)
    compiled = tg.compile(GF.flex_attention)
    q = tg.randn(1, 2, 6, 4)

    def softcap(s, b, h, q_idx, kv_idx):
        return 2.0 * tg.tanh(s / 2.0)
    for _ in range(3):
        q = tg.randn(1, 2, 6, 4)
        np.testing.assert_array_equal(compiled(q, q, q, score_mod=softcap).numpy(),
                                      GF.flex_attention(q, q, q, score_mod=softcap).numpy())
    assert compiled.stats["replays"] == 2 and compiled.explain().startswith("replayed")
