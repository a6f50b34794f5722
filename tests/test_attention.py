"""Attention: scaled_dot_product_attention, MultiheadAttention and the Transformer layers against
PyTorch (outputs and every gradient), finite differences, masks, errors and warnings."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


@pytest.fixture(autouse=True)
def _torch_single_thread():
    """PyTorch's thread pool on a shared 2-core machine turns millisecond ops into seconds."""
    try:
        import torch
    except Exception:  # pragma: no cover - torch is optional
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tg(t, requires_grad=False):
    return tg.tensor(t.detach().numpy().copy(),
                     requires_grad=requires_grad and t.dtype.is_floating_point)


def _copy_state(tmod, gmod):
    gmod.load_state_dict({k: tg.from_numpy(v.detach().numpy().copy())
                          for k, v in tmod.state_dict().items()})


def _close(a, b, tol):
    a = a.detach().numpy()
    b = b.detach().numpy()
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, atol=tol, rtol=tol)


SDPA_CASES = [
    # q shape, k shape, v shape, mask kind, is_causal, scale, enable_gqa
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), None, False, None, False),
    ((2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5), None, True, None, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), None, True, 0.3, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "bool", False, None, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "float", False, None, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "dead_bool", False, None, False),
    ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "dead_float", False, None, False),
    ((4, 5), (6, 5), (6, 7), "bool", False, None, False),
    ((2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 7), None, False, None, True),
    ((2, 3, 4, 5), (1, 6, 5), (6, 7), "float_4d", False, 2.0, False),
]


def _mask(torch, kind, L, S, dtype):
    if kind is None:
        return None
    if kind == "float":
        return torch.randn(L, S, dtype=dtype)
    if kind == "float_4d":
        return torch.randn(2, 1, L, S, dtype=dtype)
    if kind == "dead_float":
        m = torch.randn(L, S, dtype=dtype)
        m[2] = float("-inf")
        return m
    m = torch.rand(L, S) > 0.3
    m[:, 0] = True
    if kind == "dead_bool":
        m[1] = False
    return m


@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
def test_sdpa_parity(torch, case, dtype_name):
    qs, ks, vs, mask_kind, causal, scale, gqa = case
    dt = getattr(torch, dtype_name)
    tol = 1e-10 if dtype_name == "float64" else 2e-5
    torch.manual_seed(0)
    q, k, v = (torch.randn(*s, dtype=dt, requires_grad=True) for s in (qs, ks, vs))
    m = _mask(torch, mask_kind, qs[-2], ks[-2], dt)
    r = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal,
                                                         scale=scale, enable_gqa=gqa)
    gq, gk, gv = _tg(q, True), _tg(k, True), _tg(v, True)
    g = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=None if m is None else _tg(m),
                                       is_causal=causal, scale=scale, enable_gqa=gqa)
    _close(r, g, tol)
    w = torch.randn(r.shape, dtype=dt)
    (r * w).sum().backward()
    (g * _tg(w)).sum().backward()
    for a, b in ((q, gq), (k, gk), (v, gv)):
        _close(a.grad, b.grad, tol)


def test_sdpa_values_without_torch():
    # One query, two keys with scores 0 and log(3): weights 1/4 and 3/4.
    q = tg.tensor([[1.0]], dtype=tg.float64)
    k = tg.tensor([[0.0], [math.log(3.0)]], dtype=tg.float64)
    v = tg.tensor([[10.0], [20.0]], dtype=tg.float64)
    out = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out.numpy(), [[17.5]], rtol=1e-14)
    # A query that may attend nothing gives zeros, not NaN.
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor([[False, False]]))
    np.testing.assert_array_equal(out.numpy(), [[0.0]])
    # Causal: the first query sees only the first key.
    q2 = tg.zeros(2, 1, dtype=tg.float64)
    out = F.scaled_dot_product_attention(q2, k, v, is_causal=True)
    np.testing.assert_allclose(out.numpy(), [[10.0], [15.0]], rtol=1e-14)


def test_sdpa_finite_differences(gradcheck):
    rng = np.random.default_rng(0)
    mask = tg.tensor(np.array([[True, False, True], [True, True, False]]))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) ** 2

    gradcheck(fn, rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 3, 4)),
              rng.standard_normal((2, 3, 3)))

    def causal(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7).tanh()

    gradcheck(causal, rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
              rng.standard_normal((3, 2)))


def test_sdpa_errors_match_torch(torch):
    tf = torch.nn.functional.scaled_dot_product_attention
    q, k, v = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5), torch.randn(2, 3, 6, 7)
    gq, gk, gv = _tg(q), _tg(k), _tg(v)
    cases = [
        ((q, k, v), {"attn_mask": torch.ones(4, 6, dtype=torch.bool), "is_causal": True},
         (gq, gk, gv), {"attn_mask": tg.ones(4, 6, dtype=tg.bool), "is_causal": True}),
        ((q, k[..., :4], v), {}, (gq, gk[..., :4], gv), {}),
        ((q, k, v[:, :, :5]), {}, (gq, gk, gv[:, :, :5]), {}),
        ((q, k, v), {"attn_mask": torch.zeros(4, 6, dtype=torch.int64)},
         (gq, gk, gv), {"attn_mask": tg.zeros(4, 6, dtype=tg.int64)}),
        ((q, k, v), {"attn_mask": torch.zeros(4, 6).double()},
         (gq, gk, gv), {"attn_mask": tg.zeros(4, 6).double()}),
        ((q, k.double(), v), {}, (gq, gk.double(), gv), {}),
        ((q[0, 0, 0], k[0, 0, 0], v[0, 0, 0]), {}, (gq[0, 0, 0], gk[0, 0, 0], gv[0, 0, 0]), {}),
        ((q, k[:, :2], v[:, :2]), {"enable_gqa": True},
         (gq, gk[:, :2], gv[:, :2]), {"enable_gqa": True}),
        ((q, k, v), {"dropout_p": 1.5}, (gq, gk, gv), {"dropout_p": 1.5}),
    ]
    for targs, tkw, gargs, gkw in cases:
        with pytest.raises(Exception) as expected:
            tf(*targs, **tkw)
        with pytest.raises(type(expected.value)) as got:
            F.scaled_dot_product_attention(*gargs, **gkw)
        assert str(got.value) == str(expected.value)


def test_sdpa_dropout_is_training_noise():
    tg.manual_seed(0)
    q = tg.randn(2, 4, 3)
    a = F.scaled_dot_product_attention(q, q, q)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert a.shape == b.shape and not np.allclose(a.numpy(), b.numpy())
    c = F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    np.testing.assert_array_equal(c.numpy(), np.zeros((2, 4, 3), dtype=np.float32))


# -- MultiheadAttention --------------------------------------------------------------------------

MHA_GRID = list(itertools.product(
    [False, True],            # batch_first
    [True, False],            # bias
    [None, (3, 5)],           # kdim, vdim
    [False, True],            # add_bias_kv
    [False, True],            # add_zero_attn
    [True, False],            # need_weights
))


def _mha_case(torch, index, dtype_name, bf, bias, kv, bkv, zero, nw):
    # Masks, averaging and self-attention vary with the index so the grid stays small.
    avg = index % 2 == 0
    self_attention = kv is None and index % 3 == 0
    unbatched = index % 5 == 1
    kpm_kind = [None, "bool", "float"][index % 3]
    am_kind = [None, "float", "3d", "bool"][index % 4]
    if unbatched and am_kind == "3d":
        am_kind = "float"
    if kpm_kind and am_kind and (kpm_kind == "bool") != (am_kind == "bool"):
        am_kind = "bool" if kpm_kind == "bool" else "float"
    dt = getattr(torch, dtype_name)
    E, H, L, S, B = 8, 2, 4, 5, 3
    torch.manual_seed(index)
    kd, vd = kv if kv else (None, None)
    kwargs = dict(bias=bias, add_bias_kv=bkv, add_zero_attn=zero, kdim=kd, vdim=vd,
                  batch_first=bf)
    tm = torch.nn.MultiheadAttention(E, H, dtype=dt, **kwargs)
    gm = tg.nn.MultiheadAttention(E, H, dtype=getattr(tg, dtype_name), **kwargs)
    _copy_state(tm, gm)

    def shape(n, e):
        return (n, e) if unbatched else ((B, n, e) if bf else (n, B, e))

    Lq = S if self_attention else L
    q = torch.randn(*shape(Lq, E), dtype=dt, requires_grad=True)
    if self_attention:
        k = v = q
    else:
        k = torch.randn(*shape(S, kd or E), dtype=dt, requires_grad=True)
        v = torch.randn(*shape(S, vd or E), dtype=dt, requires_grad=True)
    kp = None
    if kpm_kind:
        kp = torch.rand(*((S,) if unbatched else (B, S))) > 0.6
        kp[..., 0] = False
        if kpm_kind == "float":
            kp = torch.where(kp, float("-inf"), 0.0).to(dt)
    am = None
    if am_kind == "bool":
        am = torch.rand(Lq, S) > 0.7
        am[:, 0] = False
    elif am_kind == "float":
        am = torch.randn(Lq, S, dtype=dt)
    elif am_kind == "3d":
        am = torch.randn(B * H, Lq, S, dtype=dt)
    gq = _tg(q, True)
    gk = gq if self_attention else _tg(k, True)
    gv = gq if self_attention else _tg(v, True)
    t_res = tm(q, k, v, key_padding_mask=kp, need_weights=nw, attn_mask=am,
               average_attn_weights=avg)
    g_res = gm(gq, gk, gv, key_padding_mask=None if kp is None else _tg(kp), need_weights=nw,
               attn_mask=None if am is None else _tg(am), average_attn_weights=avg)
    return tm, gm, (q, k, v), (gq, gk, gv), t_res, g_res, self_attention


@pytest.mark.parametrize("index,config", list(enumerate(MHA_GRID)))
def test_multihead_attention_parity(torch, index, config):
    dtype_name = "float64" if index % 4 else "float32"
    tol = 1e-10 if dtype_name == "float64" else 2e-5
    tm, gm, tin, gin, (ro, rw), (go, gw), self_attention = _mha_case(
        torch, index, dtype_name, *config)
    _close(ro, go, tol)
    loss = (ro * torch.arange(ro.numel(), dtype=ro.dtype).reshape(ro.shape).sin()).sum()
    g_loss = (go * _tg(torch.arange(ro.numel(), dtype=ro.dtype).reshape(ro.shape).sin())).sum()
    if config[-1]:
        _close(rw, gw, tol)
        loss = loss + (rw * rw).sum()
        g_loss = g_loss + (gw * gw).sum()
    else:
        assert gw is None
    loss.backward()
    g_loss.backward()
    pairs = zip(tin[:1], gin[:1]) if self_attention else zip(tin, gin)
    for a, b in pairs:
        _close(a.grad, b.grad, tol)
    t_named, g_named = list(tm.named_parameters()), list(gm.named_parameters())
    assert [n for n, _ in t_named] == [n for n, _ in g_named]
    for (_, p), (_, q) in zip(t_named, g_named):
        _close(p.grad, q.grad, tol)


def test_multihead_attention_causal_hint(torch):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    gm = tg.nn.MultiheadAttention(8, 2, batch_first=True, dtype=tg.float64)
    _copy_state(tm, gm)
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    for need_weights in (False, True):
        r = tm(x, x, x, attn_mask=mask, is_causal=True, need_weights=need_weights)[0]
        g = gm(*[_tg(x)] * 3, attn_mask=_tg(mask), is_causal=True, need_weights=need_weights)[0]
        _close(r, g, 1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        gm(*[_tg(x)] * 3, is_causal=True)


def test_multihead_attention_repr_init_and_errors(torch):
    for args, kwargs in (((8, 2), {}), ((8, 2), {"kdim": 3, "vdim": 5, "add_bias_kv": True}),
                         ((8, 4), {"bias": False})):
        t, g = torch.nn.MultiheadAttention(*args, **kwargs), \
            tg.nn.MultiheadAttention(*args, **kwargs)
        assert repr(g) == repr(t)
        assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    g = tg.nn.MultiheadAttention(8, 2)
    assert np.all(g.in_proj_bias.detach().numpy() == 0)
    assert np.all(g.out_proj.bias.detach().numpy() == 0)
    bound = math.sqrt(6.0 / (24 + 8))
    assert np.all(np.abs(g.in_proj_weight.detach().numpy()) <= bound)
    for args in ((8, 3), (0, 3)):
        with pytest.raises(Exception) as expected:
            torch.nn.MultiheadAttention(*args)
        with pytest.raises(type(expected.value)) as got:
            tg.nn.MultiheadAttention(*args)
        assert str(got.value) == str(expected.value)
    t, g = torch.nn.MultiheadAttention(8, 2), tg.nn.MultiheadAttention(8, 2)
    x, gx = torch.randn(4, 3, 8), tg.randn(4, 3, 8)
    bad = [
        ((x, x, x[:, :, :4]), (gx, gx, gx[:, :, :4]), {}),
        ((x, x[0], x), (gx, gx[0], gx), {}),
        ((x[0, 0], x[0, 0], x[0, 0]), (gx[0, 0], gx[0, 0], gx[0, 0]), {}),
        ((x, x, x), (gx, gx, gx), {"attn_mask": "2d"}),
        ((x, x, x), (gx, gx, gx), {"attn_mask": "3d"}),
        ((x, x, x), (gx, gx, gx), {"key_padding_mask": "1d"}),
        ((x, x, x), (gx, gx, gx), {"key_padding_mask": "int"}),
    ]
    masks = {"2d": (torch.zeros(3, 4), tg.zeros(3, 4)),
             "3d": (torch.zeros(5, 4, 4), tg.zeros(5, 4, 4)),
             "1d": (torch.zeros(4, dtype=torch.bool), tg.zeros(4, dtype=tg.bool)),
             "int": (torch.zeros(3, 4, dtype=torch.int64), tg.zeros(3, 4, dtype=tg.int64))}
    for targs, gargs, kw in bad:
        tkw = {key: masks[val][0] for key, val in kw.items()}
        gkw = {key: masks[val][1] for key, val in kw.items()}
        with pytest.raises(Exception) as expected:
            t(*targs, **tkw)
        with pytest.raises(type(expected.value)) as got:
            g(*gargs, **gkw)
        assert str(got.value) == str(expected.value)


def test_mismatched_mask_types_warn_as_torch(torch):
    g = tg.nn.MultiheadAttention(8, 2)
    x = tg.randn(4, 3, 8)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
        g(x, x, x, key_padding_mask=tg.zeros(3, 4, dtype=tg.bool), attn_mask=tg.zeros(4, 4))
    te = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 1,
                                     enable_nested_tensor=False)
    ge = tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, 16), 1,
                                  enable_nested_tensor=False)
    kp = torch.zeros(3, 4, dtype=torch.bool)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    with pytest.warns(UserWarning) as t_rec:
        te(torch.randn(4, 3, 8), mask=mask, src_key_padding_mask=kp)
    with pytest.warns(UserWarning) as g_rec:
        ge(tg.randn(4, 3, 8), mask=_tg(mask), src_key_padding_mask=_tg(kp))
    assert [str(w.message) for w in g_rec] == [str(w.message) for w in t_rec]


# -- Transformer layers --------------------------------------------------------------------------

ENCODER_GRID = [
    # batch_first, norm_first, activation, bias, key padding, mask, unbatched
    (False, False, "relu", True, False, None, False),
    (True, False, "gelu", True, True, None, False),
    (True, True, "gelu_module", False, False, "causal", False),
    (False, True, "relu", True, True, "float", False),
    (True, False, "relu", True, False, "causal", True),
    (False, False, "gelu", False, True, "float", False),
]


@pytest.mark.parametrize("config", ENCODER_GRID)
def test_transformer_encoder_parity(torch, config):
    bf, nf, act, bias, kpm, mask, unbatched = config
    torch.manual_seed(0)
    t_act = torch.nn.GELU() if act == "gelu_module" else act
    g_act = tg.nn.GELU() if act == "gelu_module" else act
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=t_act,
                                          batch_first=bf, norm_first=nf, bias=bias,
                                          dtype=torch.float64)
    gl = tg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=g_act, batch_first=bf,
                                       norm_first=nf, bias=bias, dtype=tg.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the nested-tensor notice, checked separately
        te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8, dtype=torch.float64))
        ge = tg.nn.TransformerEncoder(gl, 2, norm=tg.nn.LayerNorm(8, dtype=tg.float64))
    _copy_state(te, ge)
    assert repr(ge.layers[0]) == repr(te.layers[0])
    shape = (5, 8) if unbatched else ((3, 5, 8) if bf else (5, 3, 8))
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    gx = _tg(x, True)
    kp = None
    if kpm:
        kp = torch.zeros(3, 5, dtype=torch.bool)
        kp[0, 3:] = True
        kp[2, 4] = True
    m = None
    if mask == "causal":
        m = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    elif mask == "float":
        m = torch.randn(5, 5, dtype=torch.float64)
        kp = None if kp is None else torch.where(kp, float("-inf"), 0.0).double()
    r = te(x, mask=m, src_key_padding_mask=kp)
    g = ge(gx, mask=None if m is None else _tg(m),
           src_key_padding_mask=None if kp is None else _tg(kp))
    _close(r, g, 1e-10)
    w = torch.randn(r.shape, dtype=torch.float64)
    (r * w).sum().backward()
    (g * _tg(w)).sum().backward()
    _close(x.grad, gx.grad, 1e-10)
    for (_, p), (_, q) in zip(te.named_parameters(), ge.named_parameters()):
        _close(p.grad, q.grad, 1e-10)
    if kp is not None and m is None:
        # Inference: PyTorch's nested-tensor path returns zeros at padded positions.
        te.eval()
        ge.eval()
        with torch.no_grad(), tg.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's "nested tensors are a prototype" notice
            _close(te(x, src_key_padding_mask=kp), ge(gx, src_key_padding_mask=_tg(kp)), 1e-10)


def test_transformer_and_decoder_parity(torch):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.nn.Transformer(8, 2, 2, 2, dtype=torch.float64, **kw)
        gt = tg.nn.Transformer(8, 2, 2, 2, dtype=tg.float64, **kw)
    _copy_state(tt, gt)
    src = torch.randn(3, 5, 8, dtype=torch.float64, requires_grad=True)
    tgt = torch.randn(3, 4, 8, dtype=torch.float64, requires_grad=True)
    gsrc, gtgt = _tg(src, True), _tg(tgt, True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    mkp = torch.zeros(3, 5, dtype=torch.bool)
    mkp[1, 3:] = True
    r = tt(src, tgt, tgt_mask=mask, memory_key_padding_mask=mkp)
    g = gt(gsrc, gtgt, tgt_mask=_tg(mask), memory_key_padding_mask=_tg(mkp))
    _close(r, g, 1e-10)
    r.pow(2).sum().backward()
    g.pow(2).sum().backward()
    _close(src.grad, gsrc.grad, 1e-10)
    _close(tgt.grad, gtgt.grad, 1e-10)
    for (n, p), (n2, q) in zip(tt.named_parameters(), gt.named_parameters()):
        assert n == n2
        _close(p.grad, q.grad, 1e-10)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        gt(gsrc, gtgt[:2])
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
        gt(gsrc[..., :4], gtgt)


def test_generate_square_subsequent_mask_without_torch():
    m = tg.nn.Transformer.generate_square_subsequent_mask(3)
    assert m.dtype == tg.float32
    inf = float("inf")
    np.testing.assert_array_equal(m.numpy(), [[0, -inf, -inf], [0, 0, -inf], [0, 0, 0]])
    assert tg.nn.Transformer.generate_square_subsequent_mask(2, dtype=tg.float64).dtype == \
        tg.float64


def test_encoder_layer_activation_errors_and_nested_tensor_warning(torch):
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        tg.nn.TransformerEncoderLayer(8, 2, 16, activation="tanh")
    cases = [dict(), dict(batch_first=True, norm_first=True)]
    for kw in cases:
        with pytest.warns(UserWarning) as t_rec:
            torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, **kw), 2)
        with pytest.warns(UserWarning) as g_rec:
            tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, 16, **kw), 2)
        assert str(g_rec[0].message) == str(t_rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
        tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, 16), 2,
                                 enable_nested_tensor=False)


def test_tiny_transformer_training_matches_torch(torch):
    V, D, T, B = 11, 8, 6, 4
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, V, size=(B, T + 1))

    def build(lib, dtype):
        class TinyLM(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(V, D, dtype=dtype)
                layer = lib.nn.TransformerEncoderLayer(D, 2, 16, dropout=0.0, batch_first=True,
                                                       dtype=dtype)
                self.encoder = lib.nn.TransformerEncoder(layer, 2)
                self.head = lib.nn.Linear(D, V, dtype=dtype)

            def forward(self, x):
                mask = lib.nn.Transformer.generate_square_subsequent_mask(x.shape[1],
                                                                          dtype=dtype)
                return self.head(self.encoder(self.embed(x), mask=mask, is_causal=True))
        return TinyLM()

    torch.manual_seed(0)
    tm, gm = build(torch, torch.float64), build(tg, tg.float64)
    _copy_state(tm, gm)
    losses = {}
    for lib, model in ((torch, tm), (tg, gm)):
        x, y = lib.tensor(tokens[:, :-1]), lib.tensor(tokens[:, 1:])
        out = []
        for _ in range(4):
            loss = lib.nn.functional.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
            loss.backward()
            with lib.no_grad():
                for p in model.parameters():
                    p.sub_(0.3 * p.grad)
                    p.grad = None
            out.append(loss.item())
        losses[lib.__name__] = out
    np.testing.assert_allclose(losses["tapegrad"], losses["torch"], rtol=1e-9)


# -- the probabilities' workspace: a buffer a live graph saves is never reused -----------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_workspace_graphs_alive_at_once(dtype):
    """Several graphs on the same shapes alive at once (two forwards before the backwards, one
    retained graph backpropagated again after other steps): each keeps its own probabilities, so
    the gradients equal those of one graph at a time."""
    rng = np.random.default_rng(5)
    data = [[rng.standard_normal((2, 3, 6, 4)).astype(dtype) for _ in range(4)] for _ in range(3)]

    def run(arrays):
        q, k, v = (tg.tensor(a, requires_grad=True) for a in arrays[:3])
        loss = (F.scaled_dot_product_attention(q, k, v, is_causal=True) * tg.tensor(arrays[3])).sum()
        return loss, (q, k, v)

    def grads(ts):
        return [t.grad.numpy().copy() for t in ts]

    expect = []
    for arrays in data:                         # one graph at a time
        loss, ts = run(arrays)
        loss.backward()
        expect.append(grads(ts))
    runs = [run(arrays) for arrays in data]     # all forwards first
    runs[0][0].backward(retain_graph=True)
    for k in (2, 1):
        runs[k][0].backward()
    for (_, ts), want in zip(runs, expect):
        for a, b in zip(grads(ts), want):
            np.testing.assert_array_equal(a, b)
    for t in runs[0][1]:
        t.grad = None
    for arrays in data[1:]:                     # whole steps in between
        loss, _ = run(arrays)
        loss.backward()
    runs[0][0].backward()                       # the retained graph again
    for a, b in zip(grads(runs[0][1]), expect[0]):
        np.testing.assert_array_equal(a, b)


def _merge_masks_scenario(L):
    m = L.nn.MultiheadAttention(4, 2, batch_first=True)
    q = L.zeros(3, 5, 4)
    am = L.triu(L.ones(5, 5), 1) * -1.0
    kpm = L.zeros(3, 5)
    kpm[0, 4] = -2.0
    out = []
    for a, k in ((None, None), (None, kpm), (am, None), (am, kpm), (am.expand(6, 5, 5), kpm)):
        merged, kind = m.merge_masks(a, k, q)
        out.append((kind, None if merged is None else (tuple(merged.shape), merged.tolist())))
    return out


def test_merge_masks_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert _merge_masks_scenario(tg) == _merge_masks_scenario(torch)
