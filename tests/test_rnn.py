"""Recurrent layers and sequence packing: PyTorch parity of outputs and of every gradient, finite
differences, error parity, and a tiny char-level LSTM trained in lock-step with PyTorch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn.utils import rnn as R


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
    return tg.tensor(t.detach().numpy().copy(), requires_grad=requires_grad)


def _copy_state(tmod, gmod):
    gmod.load_state_dict({k: tg.from_numpy(v.detach().numpy().copy())
                          for k, v in tmod.state_dict().items()})


def _close(a, b, tol):
    a = a.detach().numpy()
    b = b.detach().numpy()
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, atol=tol, rtol=tol)


def _quiet(fn):
    # PyTorch warns that LSTM projections bypass oneDNN; the values are what we compare.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# kind, extra constructor arguments, input layout
RNN_CONFIGS = [
    ("RNN", {}, {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, {}),
    ("RNN", {"bias": False, "batch_first": True}, {"hx": True}),
    ("LSTM", {}, {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, {"hx": True}),
    ("LSTM", {"batch_first": True, "bias": False}, {"hx": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}, {"hx": True}),
    ("LSTM", {"num_layers": 2}, {"unbatched": True, "hx": True}),
    ("LSTM", {"bidirectional": True, "batch_first": True}, {"packed": True, "hx": True}),
    ("LSTM", {"num_layers": 2, "proj_size": 3}, {"packed": True}),
    ("GRU", {}, {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}, {"hx": True}),
    ("GRU", {"bias": False}, {"unbatched": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True}, {"packed": True, "hx": True}),
    ("RNN", {"bidirectional": True}, {"packed": True, "sorted": True}),
]


def _run_pair(torch, kind, cfg, layout, dtype_name="float64", I=3, H=4, T=5, B=3):
    tdtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(I, H, dtype=tdtype, **cfg)
    gm = getattr(tg.nn, kind)(I, H, dtype=getattr(tg, dtype_name), **cfg)
    _copy_state(tm, gm)
    bf = cfg.get("batch_first", False)
    D = 2 if cfg.get("bidirectional") else 1
    L = cfg.get("num_layers", 1)
    h_out = cfg.get("proj_size", 0) or H
    unbatched = layout.get("unbatched", False)
    shape = (T, I) if unbatched else ((B, T, I) if bf else (T, B, I))
    x = torch.randn(*shape, dtype=tdtype, requires_grad=True)
    gx = _tg(x, True)
    states = []
    if layout.get("hx"):
        lead = (L * D,) if unbatched else (L * D, B)
        states.append(torch.randn(*lead, h_out, dtype=tdtype, requires_grad=True))
        if kind == "LSTM":
            states.append(torch.randn(*lead, H, dtype=tdtype, requires_grad=True))
    gstates = [_tg(s, True) for s in states]
    t_in, g_in = x, gx
    if layout.get("packed"):
        lengths = [5, 4, 2] if layout.get("sorted") else [4, 5, 2]
        t_in = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=bf,
                                                       enforce_sorted=layout.get("sorted", False))
        g_in = R.pack_padded_sequence(gx, tg.tensor(lengths), batch_first=bf,
                                      enforce_sorted=layout.get("sorted", False))

    def call(m, inp, st):
        if not st:
            return m(inp)
        return m(inp, tuple(st)) if kind == "LSTM" else m(inp, st[0])

    t_out, t_h = _quiet(lambda: call(tm, t_in, states))
    g_out, g_h = call(gm, g_in, gstates)
    if layout.get("packed"):
        assert isinstance(g_out, R.PackedSequence)
        np.testing.assert_array_equal(g_out.batch_sizes.numpy(), t_out.batch_sizes.numpy())
        t_out = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=bf)[0]
        g_out = R.pad_packed_sequence(g_out, batch_first=bf)[0]
    t_hs = list(t_h) if kind == "LSTM" else [t_h]
    g_hs = list(g_h) if kind == "LSTM" else [g_h]
    return tm, gm, x, gx, states, gstates, t_out, g_out, t_hs, g_hs


@pytest.mark.parametrize("kind,cfg,layout", RNN_CONFIGS)
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
def test_recurrent_parity_values_and_all_gradients(torch, kind, cfg, layout, dtype_name):
    tol = 1e-10 if dtype_name == "float64" else 1e-5
    tm, gm, x, gx, states, gstates, t_out, g_out, t_hs, g_hs = _run_pair(
        torch, kind, cfg, layout, dtype_name)
    _close(t_out, g_out, tol)
    for a, b in zip(t_hs, g_hs):
        _close(a, b, tol)
    torch.manual_seed(1)
    weights = [torch.randn(t.shape, dtype=t.dtype) for t in [t_out] + t_hs]
    loss = sum((t * w).sum() for t, w in zip([t_out] + t_hs, weights))
    _quiet(loss.backward)
    g_loss = None
    for t, w in zip([g_out] + g_hs, weights):
        term = (t * _tg(w)).sum()
        g_loss = term if g_loss is None else g_loss + term
    g_loss.backward()
    _close(x.grad, gx.grad, tol)
    for a, b in zip(states, gstates):
        _close(a.grad, b.grad, tol)
    t_named = list(tm.named_parameters())
    g_named = list(gm.named_parameters())
    assert [n for n, _ in t_named] == [n for n, _ in g_named]
    for (_, p), (_, q) in zip(t_named, g_named):
        _close(p.grad, q.grad, tol)



# Sizes that cross the packed hidden-side GEMM's edges: 13 rows are two blocks of 6 and one of 1;
# H = 21 leaves partial column panels (16 floats / 8 doubles wide) both ways (G*H and H columns).
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
def test_recurrent_parity_across_gemm_tiles(torch, kind, dtype_name):
    tol = 1e-10 if dtype_name == "float64" else 2e-5
    _, _, x, gx, states, gstates, t_out, g_out, t_hs, g_hs = _run_pair(
        torch, kind, {"bidirectional": True}, {"hx": True}, dtype_name, I=5, H=21, T=4, B=13)
    _close(t_out, g_out, tol)
    for a, b in zip(t_hs, g_hs):
        _close(a, b, tol)
    torch.manual_seed(2)
    w = torch.randn(t_out.shape, dtype=t_out.dtype)
    (t_out * w).sum().backward()
    (g_out * _tg(w)).sum().backward()
    _close(x.grad, gx.grad, tol)
    for a, b in zip(states, gstates):
        _close(a.grad, b.grad, tol)


def _numpy_lstm(x, h, c, w_ih, w_hh, b):
    """A plain float64 LSTM layer (gates i, f, g, o) over the steps of x (T, B, I)."""
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    H = h.shape[1]
    outs = []
    for xt in x:
        z = xt @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = sig(z[:, :H]), sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), sig(z[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def test_lstm_values_across_gemm_tiles_without_torch():
    rng = np.random.default_rng(3)
    T, B, I, H = 3, 13, 4, 21
    m = tg.nn.LSTM(I, H, dtype=tg.float64)
    x = rng.standard_normal((T, B, I))
    h0, c0 = rng.standard_normal((1, B, H)), rng.standard_normal((1, B, H))
    out, (h, c) = m(tg.tensor(x), (tg.tensor(h0), tg.tensor(c0)))
    p = {k: v.detach().numpy() for k, v in m.named_parameters()}
    ref_out, ref_h, ref_c = _numpy_lstm(x, h0[0], c0[0], p["weight_ih_l0"], p["weight_hh_l0"],
                                        p["bias_ih_l0"] + p["bias_hh_l0"])
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h.detach().numpy()[0], ref_h, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(c.detach().numpy()[0], ref_c, rtol=1e-12, atol=1e-13)
    # the gradient of h0 through all steps equals the float32 run's within float rounding
    m32 = tg.nn.LSTM(I, H)
    m32.load_state_dict({k: v.float() for k, v in m.state_dict().items()})
    g64 = tg.tensor(h0, requires_grad=True)
    g32 = tg.tensor(h0.astype(np.float32), requires_grad=True)
    m(tg.tensor(x), (g64, tg.tensor(c0)))[0].sum().backward()
    m32(tg.tensor(x.astype(np.float32)), (g32, tg.tensor(c0.astype(np.float32))))[0].sum().backward()
    np.testing.assert_allclose(g32.grad.numpy(), g64.grad.numpy(), rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched,with_hx,bias", [(True, True, True), (True, False, False),
                                                  (False, True, True), (False, False, True)])
def test_cell_parity(torch, kind, batched, with_hx, bias):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 4, bias=bias, dtype=torch.float64)
    gm = getattr(tg.nn, kind)(3, 4, bias=bias, dtype=tg.float64)
    _copy_state(tm, gm)
    lead = (2,) if batched else ()
    x = torch.randn(*lead, 3, dtype=torch.float64, requires_grad=True)
    n_states = 2 if kind == "LSTMCell" else 1
    hx = [torch.randn(*lead, 4, dtype=torch.float64, requires_grad=True)
          for _ in range(n_states)] if with_hx else []
    gx, ghx = _tg(x, True), [_tg(h, True) for h in hx]

    def call(m, inp, st):
        if not st:
            return m(inp)
        return m(inp, tuple(st)) if n_states == 2 else m(inp, st[0])

    t_res, g_res = call(tm, x, hx), call(gm, gx, ghx)
    t_res = list(t_res) if n_states == 2 else [t_res]
    g_res = list(g_res) if n_states == 2 else [g_res]
    for a, b in zip(t_res, g_res):
        _close(a, b, 1e-12)
    sum(((k + 1) * r).sum() for k, r in enumerate(t_res)).backward()
    total = None
    for k, r in enumerate(g_res):
        term = ((k + 1) * r).sum()
        total = term if total is None else total + term
    total.backward()
    _close(x.grad, gx.grad, 1e-12)
    for a, b in zip(hx, ghx):
        _close(a.grad, b.grad, 1e-12)
    for p, q in zip(tm.parameters(), gm.parameters()):
        _close(p.grad, q.grad, 1e-12)


def test_rnn_cell_relu_and_second_order(torch):
    torch.manual_seed(0)
    tm = torch.nn.GRUCell(2, 3, dtype=torch.float64)
    gm = tg.nn.GRUCell(2, 3, dtype=tg.float64)
    _copy_state(tm, gm)
    x = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)
    gx = _tg(x, True)
    (tg_x,) = torch.autograd.grad(tm(x).pow(2).sum(), x, create_graph=True)
    (gg_x,) = tg.autograd.grad(gm(gx).pow(2).sum(), gx, create_graph=True)
    _close(tg_x, gg_x, 1e-12)
    tg_x.sum().backward()
    gg_x.sum().backward()
    _close(x.grad, gx.grad, 1e-10)
    for p, q in zip(tm.parameters(), gm.parameters()):
        _close(p.grad, q.grad, 1e-10)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_finite_differences(gradcheck, kind):
    tg.manual_seed(0)
    m = getattr(tg.nn, kind)(2, 3, num_layers=2, bidirectional=True, dtype=tg.float64)
    rng = np.random.default_rng(0)

    def fn(x, h0):
        hx = (h0, h0 * 0.5) if kind == "LSTM" else h0
        out, h = m(x, hx)
        last = h[0] if kind == "LSTM" else h
        return out.sum() + (last * last).sum()

    gradcheck(fn, rng.standard_normal((4, 2, 2)), rng.standard_normal((4, 2, 3)))


def test_finite_differences_packed(gradcheck):
    tg.manual_seed(0)
    m = tg.nn.GRU(2, 3, bidirectional=True, dtype=tg.float64)
    rng = np.random.default_rng(1)

    def fn(x):
        packed = R.pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        out, h = m(packed)
        padded, _ = R.pad_packed_sequence(out, padding_value=0.0)
        return (padded * padded).sum() + h.sum()

    gradcheck(fn, rng.standard_normal((4, 3, 2)))


def test_known_values_without_torch():
    m = tg.nn.RNN(1, 1, dtype=tg.float64)
    with tg.no_grad():
        m.weight_ih_l0.fill_(1.0)
        m.weight_hh_l0.fill_(0.5)
        m.bias_ih_l0.fill_(0.0)
        m.bias_hh_l0.fill_(0.25)
    out, h = m(tg.tensor([[[1.0]], [[1.0]]], dtype=tg.float64))
    h1 = math.tanh(1.25)
    h2 = math.tanh(1.25 + 0.5 * h1)
    np.testing.assert_allclose(out.detach().numpy().ravel(), [h1, h2], rtol=1e-14)
    np.testing.assert_allclose(h.detach().numpy().ravel(), [h2], rtol=1e-14)
    # LSTM, one step, zero weights: every gate is sigmoid(0) = 0.5, g = tanh(0) = 0.
    lstm = tg.nn.LSTM(2, 3)
    for p in lstm.parameters():
        with tg.no_grad():
            p.zero_()
    out, (h, c) = lstm(tg.ones(1, 1, 2), (tg.zeros(1, 1, 3), tg.ones(1, 1, 3)))
    np.testing.assert_allclose(c.detach().numpy(), np.full((1, 1, 3), 0.5), rtol=1e-6)
    np.testing.assert_allclose(h.detach().numpy(), np.full((1, 1, 3), 0.5 * math.tanh(0.5)),
                               rtol=1e-6)


def test_parameters_shapes_and_init_without_torch():
    m = tg.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_hr_l0"]
    assert "weight_ih_l1_reverse" in names
    assert m.weight_ih_l0.shape == (16, 3)
    assert m.weight_hh_l0.shape == (16, 2)
    assert m.weight_hr_l0.shape == (2, 4)
    assert m.weight_ih_l1.shape == (16, 4)
    bound = 1 / math.sqrt(4)
    for p in m.parameters():
        assert np.all(np.abs(p.detach().numpy()) <= bound)
    assert tg.nn.GRU(3, 5).weight_hh_l0.shape == (15, 5)
    out, (h, c) = m(tg.randn(6, 2, 3))
    assert out.shape == (6, 2, 4) and h.shape == (4, 2, 2) and c.shape == (4, 2, 4)


def test_repr_matches_torch(torch):
    cases = [("RNN", (3, 4, 2), {"nonlinearity": "relu", "batch_first": True, "bias": False}),
             ("LSTM", (3, 4), {"proj_size": 2, "bidirectional": True}),
             ("GRU", (3, 4, 3), {"dropout": 0.5}),
             ("RNNCell", (3, 4), {"nonlinearity": "relu"}),
             ("LSTMCell", (3, 4), {"bias": False}),
             ("GRUCell", (3, 4), {})]
    for kind, args, kwargs in cases:
        assert repr(getattr(tg.nn, kind)(*args, **kwargs)) == \
            repr(getattr(torch.nn, kind)(*args, **kwargs))


def _raises_like(torch_fn, tg_fn):
    with pytest.raises(Exception) as expected:
        _quiet(torch_fn)
    with pytest.raises(type(expected.value)) as got:
        tg_fn()
    assert str(got.value) == str(expected.value)


def test_errors_match_torch(torch):
    tl, gl = torch.nn.LSTM(3, 4, 2), tg.nn.LSTM(3, 4, 2)
    tgr, ggr = torch.nn.GRU(3, 4), tg.nn.GRU(3, 4)
    T, G = torch.randn, tg.randn
    cases = [
        (lambda: tl(T(5)), lambda: gl(G(5))),
        (lambda: tgr(T(2, 2, 2, 2)), lambda: ggr(G(2, 2, 2, 2))),
        (lambda: torch.nn.RNN(3, 4)(T(2, 2, 2, 2)), lambda: tg.nn.RNN(3, 4)(G(2, 2, 2, 2))),
        (lambda: tl(T(5, 2, 4)), lambda: gl(G(5, 2, 4))),
        (lambda: tl(T(5, 2, 3).double()), lambda: gl(G(5, 2, 3).double())),
        (lambda: tl(T(5, 2, 3), (T(2, 3, 4), T(2, 2, 4))),
         lambda: gl(G(5, 2, 3), (G(2, 3, 4), G(2, 2, 4)))),
        (lambda: tl(T(5, 2, 3), (T(2, 2, 4), T(2, 3, 4))),
         lambda: gl(G(5, 2, 3), (G(2, 2, 4), G(2, 3, 4)))),
        (lambda: tl(T(5, 2, 3), (T(2, 4), T(2, 2, 4))),
         lambda: gl(G(5, 2, 3), (G(2, 4), G(2, 2, 4)))),
        (lambda: tl(T(5, 3), (T(2, 2, 4), T(2, 2, 4))),
         lambda: gl(G(5, 3), (G(2, 2, 4), G(2, 2, 4)))),
        (lambda: tgr(T(5, 2, 3), T(1, 3, 4)), lambda: ggr(G(5, 2, 3), G(1, 3, 4))),
        (lambda: tgr(T(5, 2, 3), T(3, 4)), lambda: ggr(G(5, 2, 3), G(3, 4))),
        (lambda: tgr(T(5, 3), T(1, 1, 4)), lambda: ggr(G(5, 3), G(1, 1, 4))),
        (lambda: torch.nn.LSTM(3, 4, dropout=1.5), lambda: tg.nn.LSTM(3, 4, dropout=1.5)),
        (lambda: torch.nn.LSTM(3, 4, dropout=True), lambda: tg.nn.LSTM(3, 4, dropout=True)),
        (lambda: torch.nn.LSTM(3, 4.0), lambda: tg.nn.LSTM(3, 4.0)),
        (lambda: torch.nn.LSTM(3, 0), lambda: tg.nn.LSTM(3, 0)),
        (lambda: torch.nn.LSTM(3, 4, 0), lambda: tg.nn.LSTM(3, 4, 0)),
        (lambda: torch.nn.LSTM(3, 4, proj_size=4), lambda: tg.nn.LSTM(3, 4, proj_size=4)),
        (lambda: torch.nn.LSTM(3, 4, proj_size=-1), lambda: tg.nn.LSTM(3, 4, proj_size=-1)),
        (lambda: torch.nn.RNN(3, 4, nonlinearity="sig"),
         lambda: tg.nn.RNN(3, 4, nonlinearity="sig")),
        (lambda: torch.nn.GRU(3, 4, proj_size=2), lambda: tg.nn.GRU(3, 4, proj_size=2)),
    ]
    tc, gc = torch.nn.LSTMCell(3, 4), tg.nn.LSTMCell(3, 4)
    trc, grc = torch.nn.RNNCell(3, 4), tg.nn.RNNCell(3, 4)
    cases += [
        (lambda: tc(T(2, 2, 3)), lambda: gc(G(2, 2, 3))),
        (lambda: tc(T(2, 5)), lambda: gc(G(2, 5))),
        (lambda: tc(T(2, 3), (T(3, 4), T(3, 4))), lambda: gc(G(2, 3), (G(3, 4), G(3, 4)))),
        (lambda: tc(T(2, 3), (T(2, 5), T(2, 4))), lambda: gc(G(2, 3), (G(2, 5), G(2, 4)))),
        (lambda: trc(T(2, 3), T(2, 2, 4)), lambda: grc(G(2, 3), G(2, 2, 4))),
        (lambda: trc(T(2, 3), T(4)), lambda: grc(G(2, 3), G(4))),
        (lambda: torch.nn.GRUCell(3, 4)(T(2, 3), T(2, 5)),
         lambda: tg.nn.GRUCell(3, 4)(G(2, 3), G(2, 5))),
    ]
    for torch_fn, tg_fn in cases:
        _raises_like(torch_fn, tg_fn)


def test_dropout_warning_and_training_only():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        tg.nn.GRU(3, 4, dropout=0.5)
    m = tg.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = tg.randn(5, 2, 3)
    m.eval()
    with tg.no_grad():
        a, _ = m(x)
        b, _ = m(x)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        m.train()
        tg.manual_seed(0)
        c, _ = m(x)
        assert not np.allclose(a.numpy(), c.numpy())


def test_device_and_dtype_arguments():
    m = tg.nn.LSTM(3, 4, device="cpu", dtype=tg.float64)
    assert m.weight_ih_l0.dtype == tg.float64
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        tg.nn.GRU(3, 4, device="cuda")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        tg.nn.GRUCell(3, 4, device="cuda")


# -- padding and packing ------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_parity(torch, batch_first, padding_side):
    seqs = [torch.randn(n, 2, dtype=torch.float64, requires_grad=True) for n in (3, 5, 1)]
    gseqs = [_tg(s, True) for s in seqs]
    t = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.5,
                                        padding_side=padding_side)
    g = R.pad_sequence(gseqs, batch_first=batch_first, padding_value=-1.5,
                       padding_side=padding_side)
    _close(t, g, 0)
    w = torch.randn(t.shape, dtype=torch.float64)
    (t * w).sum().backward()
    (g * _tg(w)).sum().backward()
    for a, b in zip(seqs, gseqs):
        _close(a.grad, b.grad, 0)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted,lengths", [(True, [5, 3, 3, 1]),
                                                    (False, [2, 5, 2, 4])])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_and_unpack_parity(torch, batch_first, enforce_sorted, lengths, as_tensor):
    shape = (4, 5, 2) if batch_first else (5, 4, 2)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    gx = _tg(x, True)
    t_len = torch.tensor(lengths) if as_tensor else lengths
    g_len = tg.tensor(lengths) if as_tensor else lengths
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, t_len, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    gp = R.pack_padded_sequence(gx, g_len, batch_first=batch_first,
                                enforce_sorted=enforce_sorted)
    _close(tp.data, gp.data, 0)
    np.testing.assert_array_equal(gp.batch_sizes.numpy(), tp.batch_sizes.numpy())
    assert gp.batch_sizes.dtype == tg.int64
    for a, b in ((tp.sorted_indices, gp.sorted_indices),
                 (tp.unsorted_indices, gp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(b.numpy(), a.numpy())
    tpad, tl = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=batch_first,
                                                      padding_value=7.0, total_length=6)
    gpad, gl = R.pad_packed_sequence(gp, batch_first=batch_first, padding_value=7.0,
                                     total_length=6)
    _close(tpad, gpad, 0)
    np.testing.assert_array_equal(gl.numpy(), tl.numpy())
    assert gl.dtype == tg.int64
    w = torch.randn(tpad.shape, dtype=torch.float64)
    (tpad * w).sum().backward()
    (gpad * _tg(w)).sum().backward()
    _close(x.grad, gx.grad, 0)


def test_pack_sequence_and_unpack(torch):
    seqs = [torch.randn(n, 3) for n in (2, 4, 3)]
    tp = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    gp = R.pack_sequence([_tg(s) for s in seqs], enforce_sorted=False)
    _close(tp.data, gp.data, 0)
    back = R.unpack_sequence(gp)
    for s, b in zip(seqs, back):
        _close(s, b, 0)
    assert repr(gp).startswith("PackedSequence(data=tensor(")


def test_packing_errors_match_torch(torch):
    x = torch.randn(4, 3, 2)
    gx = _tg(x)
    U = torch.nn.utils.rnn
    cases = [
        (lambda: U.pack_padded_sequence(x, [2, 3, 1]),
         lambda: R.pack_padded_sequence(gx, [2, 3, 1])),
        (lambda: U.pack_padded_sequence(x, [3, 0, 0]),
         lambda: R.pack_padded_sequence(gx, [3, 0, 0])),
        (lambda: U.pack_padded_sequence(x, [3, 1]), lambda: R.pack_padded_sequence(gx, [3, 1])),
        (lambda: U.pad_sequence([]), lambda: R.pad_sequence([])),
        (lambda: U.pad_sequence([torch.ones(2, 3), torch.ones(1, 4)]),
         lambda: R.pad_sequence([tg.ones(2, 3), tg.ones(1, 4)])),
        (lambda: U.pad_sequence([torch.ones(2)], padding_side="middle"),
         lambda: R.pad_sequence([tg.ones(2)], padding_side="middle")),
        (lambda: U.pack_sequence([torch.ones(2), torch.ones(3)]),
         lambda: R.pack_sequence([tg.ones(2), tg.ones(3)])),
    ]
    p = U.pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False)
    gp = R.pack_padded_sequence(gx, [2, 3, 1], enforce_sorted=False)
    cases.append((lambda: U.pad_packed_sequence(p, total_length=2),
                  lambda: R.pad_packed_sequence(gp, total_length=2)))
    for torch_fn, tg_fn in cases:
        _raises_like(torch_fn, tg_fn)
    with pytest.raises(RuntimeError, match="at most the padded length"):
        R.pack_padded_sequence(gx, [5, 3, 1])


# -- a tiny character-level model trained in lock-step with PyTorch ------------------------------

def test_char_lstm_training_matches_torch(torch):
    text = "hello tapegrad, hello torch. "
    vocab = sorted(set(text))
    ids = [vocab.index(c) for c in text]
    V, E, H = len(vocab), 6, 8
    seq = np.array(ids[:-1]).reshape(4, 7)  # batch 4, time 7
    tgt = np.array(ids[1:]).reshape(4, 7)

    def build(lib, dtype):
        class CharLSTM(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(V, E, dtype=dtype)
                self.lstm = lib.nn.LSTM(E, H, num_layers=2, batch_first=True, dtype=dtype)
                self.head = lib.nn.Linear(H, V, dtype=dtype)

            def forward(self, x):
                out, _ = self.lstm(self.embed(x))
                return self.head(out)
        return CharLSTM()

    torch.manual_seed(0)
    tm = build(torch, torch.float64)
    gm = build(tg, tg.float64)
    _copy_state(tm, gm)
    # Plain SGD by hand: importing torch.optim costs seconds (dynamo) and adds nothing here.
    def step(lib, model):
        with lib.no_grad():
            for p in model.parameters():
                p.sub_(0.5 * p.grad)
                p.grad = None
    tx, ty = torch.tensor(seq), torch.tensor(tgt)
    gx, gy = tg.tensor(seq), tg.tensor(tgt)
    t_losses, g_losses = [], []
    for _ in range(6):
        loss = torch.nn.functional.cross_entropy(tm(tx).reshape(-1, V), ty.reshape(-1))
        loss.backward()
        step(torch, tm)
        t_losses.append(loss.item())
        gloss = tg.nn.functional.cross_entropy(gm(gx).reshape(-1, V), gy.reshape(-1))
        gloss.backward()
        step(tg, gm)
        g_losses.append(gloss.item())
    np.testing.assert_allclose(g_losses, t_losses, rtol=1e-9)
    assert g_losses[-1] < g_losses[0]


def test_output_grad_fn_names_match_torch(torch):
    # PyTorch's CPU build runs an LSTM layer as one oneDNN op (MkldnnRnnLayerBackward0) and stacks
    # the steps of GRU and plain RNN layers (StackBackward0); scripts print these names.
    def names(lib):
        lib.manual_seed(0)
        found = []
        for cls in ("GRU", "LSTM", "RNN"):
            for layers, bidirectional in ((1, False), (2, False), (1, True)):
                out, h = getattr(lib.nn, cls)(4, 3, layers, bidirectional=bidirectional)(
                    lib.randn(5, 1, 4))
                h = h[0] if cls == "LSTM" else h
                found.append((cls, layers, bidirectional, type(out.grad_fn).__name__,
                              type(h.grad_fn).__name__))
        return found
    assert names(tg) == names(torch)


# -- the packed GEMM's AVX-512 and AVX2 kernels give the same bits ------------------------------

_GEMM_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import tapegrad as tg
from tapegrad import _core

arrays = {}
rng = np.random.default_rng(3)
# batch sizes cover every row block (1..12 rows, the halves of 13..23, 12-row runs past 24) and
# hidden sizes every panel (full and masked: G*H and H not multiples of 16)
for mode, gates in ((0, 4), (1, 3), (2, 1)):
    for B, H in ((1, 5), (7, 16), (11, 33), (20, 128), (23, 9), (37, 20)):
        for dt in (np.float32, np.float64):
            T = 3
            gi = rng.standard_normal((T, B, gates * H)).astype(dt)
            h0 = rng.standard_normal((B, H)).astype(dt)
            c0 = rng.standard_normal((B, H)).astype(dt) if mode == 0 else None
            w = (rng.standard_normal((gates * H, H)) * 0.3).astype(dt)
            b = rng.standard_normal(gates * H).astype(dt) if mode == 1 else None
            out, h, c, saved = _core._rnn_sequence_forward(mode, gi, h0, c0, w, b, False)
            dout = rng.standard_normal(out.shape).astype(dt)
            grads = _core._rnn_sequence_backward(mode, saved, c0, w, b is not None, dout, None,
                                                 None, False)
            for k, a in enumerate((out, h) + tuple(grads)):
                if a is not None:
                    arrays[f"{mode}-{B}-{H}-{np.dtype(dt).name}-{k}"] = a
np.savez(sys.argv[2], **arrays)
"""


def test_packed_gemm_kernels_agree(tmp_path):
    """The recurrent layers' hidden-side products run an AVX-512 kernel where the CPU has it and
    TAPEGRAD_SIMD is unset, the AVX2 one under TAPEGRAD_SIMD=avx2.  Each output element is the
    same k-ordered chain of fused multiply-adds in both, so the layers' results are the same bits
    on every row block and every (full or masked) panel; the hidden weights' gradient (the
    transposed kernel against BLAS) agrees to rounding."""
    import os
    import subprocess
    import sys
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    runs = {}
    for name, extra in (("default", {}), ("avx2", {"TAPEGRAD_SIMD": "avx2"})):
        env = {k: v for k, v in os.environ.items() if k != "TAPEGRAD_SIMD"}
        env.update(extra)
        out = tmp_path / f"{name}.npz"
        subprocess.run([sys.executable, "-c", _GEMM_CHILD, package_root, str(out)], env=env,
                       check=True)
        runs[name] = np.load(out)
    a, b = runs["default"], runs["avx2"]
    assert sorted(a.files) == sorted(b.files) and len(a.files) > 100
    for k in a.files:
        if k.endswith("-5"):
            # dW_hh, a sum over every step and row: the AVX-512 kernel sums in k order, BLAS in
            # its own blocks (and the AVX2 path uses BLAS), so they agree to rounding
            tol = 2e-5 if "float32" in k else 1e-12
            np.testing.assert_allclose(a[k], b[k], rtol=tol, atol=tol, err_msg=k)
        else:
            assert np.array_equal(a[k], b[k]), k


# -- the sequence buffers' workspace: a buffer still in use is never handed out again -----------

def _grads_of(m, x):
    return [p.grad.numpy().copy() for p in m.parameters()] + [x.grad.numpy().copy()]


def _fresh_grads(kind, inputs, weights, dtype):
    """Each input's gradients from its own forward and backward, one graph at a time."""
    found = []
    for xa, wa in zip(inputs, weights):
        m = _workspace_model(kind, dtype)
        x = tg.tensor(xa, requires_grad=True)
        (m(x)[0] * tg.tensor(wa)).sum().backward()
        found.append(_grads_of(m, x))
    return found


def _workspace_model(kind, dtype):
    tg.manual_seed(0)
    return getattr(tg.nn, kind)(3, 17, num_layers=2, bidirectional=True, dtype=dtype)


def _workspace_data(dtype, n=3):
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((5, 4, 3)).astype(dtype) for _ in range(n)]
    ws = [rng.standard_normal((5, 4, 34)).astype(dtype) for _ in range(n)]
    return xs, ws


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_workspace_two_forwards_before_backwards(kind, dtype):
    """Graphs alive at once keep their own buffers: the second forward (same shapes) must not
    write into the first one's saved gates, states or outputs."""
    xs, ws = _workspace_data(dtype)
    expect = _fresh_grads(kind, xs, ws, tg.float64 if dtype == np.float64 else tg.float32)
    tdt = tg.float64 if dtype == np.float64 else tg.float32
    models = [_workspace_model(kind, tdt) for _ in xs]
    inputs = [tg.tensor(a, requires_grad=True) for a in xs]
    losses = [(m(x)[0] * tg.tensor(w)).sum() for m, x, w in zip(models, inputs, ws)]
    for k in (1, 0, 2):                 # backwards in another order than the forwards
        losses[k].backward()
    for m, x, want in zip(models, inputs, expect):
        for a, b in zip(_grads_of(m, x), want):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_workspace_retain_graph_with_steps_between(kind):
    """A retained graph's buffers survive other steps on the same shapes: its second backward
    gives the first one's gradients again."""
    xs, ws = _workspace_data(np.float32)
    m = _workspace_model(kind, tg.float32)
    x = tg.tensor(xs[0], requires_grad=True)
    loss = (m(x)[0] * tg.tensor(ws[0])).sum()
    loss.backward(retain_graph=True)
    first = _grads_of(m, x)
    other = _workspace_model(kind, tg.float32)
    for a, w in zip(xs[1:], ws[1:]):            # whole training steps in between
        xo = tg.tensor(a, requires_grad=True)
        (other(xo)[0] * tg.tensor(w)).sum().backward()
    m.zero_grad()
    x.grad = None
    loss.backward()
    for a, b in zip(_grads_of(m, x), first):
        np.testing.assert_array_equal(a, b)


def test_workspace_outputs_kept_by_the_caller():
    """Outputs (and numpy views of them) a caller keeps are never overwritten by later calls,
    nor is an output the caller writes into in place read back as a state by the backward."""
    xs, ws = _workspace_data(np.float32)
    tg.manual_seed(0)
    m = tg.nn.LSTM(3, 17)           # one layer, one direction: the output is the layer's buffer
    with tg.no_grad():
        out0, (h0, c0) = m(tg.tensor(xs[0]))
    view = out0.numpy()[1:]
    saved = (out0.numpy().copy(), h0.numpy().copy(), c0.numpy().copy())
    for a in xs[1:]:
        m(tg.tensor(a))[0].sum().backward()
    np.testing.assert_array_equal(out0.numpy(), saved[0])
    np.testing.assert_array_equal(view, saved[0][1:])
    np.testing.assert_array_equal(h0.numpy(), saved[1])
    np.testing.assert_array_equal(c0.numpy(), saved[2])
    # an in-place write into the output between forward and backward changes nothing upstream
    tg.manual_seed(0)
    m2 = tg.nn.LSTM(3, 17)
    x = tg.tensor(xs[0], requires_grad=True)
    (m2(x)[0] * tg.tensor(ws[0][..., :17])).sum().backward()
    expect = _grads_of(m2, x)
    m2.zero_grad()
    x.grad = None
    out = m2(x)[0]
    loss = (out * tg.tensor(ws[0][..., :17])).sum()
    with tg.no_grad():
        out.fill_(3.0)
    loss.backward()
    for a, b in zip(_grads_of(m2, x), expect):
        np.testing.assert_array_equal(a, b)


def test_workspace_double_backward_after_steps(torch):
    """create_graph through a layer whose first-order buffers are reused by later steps: the
    second-order gradient matches PyTorch's."""
    tm = torch.nn.LSTM(3, 5, num_layers=2).double()
    gm = tg.nn.LSTM(3, 5, num_layers=2, dtype=tg.float64)
    _copy_state(tm, gm)
    rng = np.random.default_rng(11)
    xa = rng.standard_normal((4, 2, 3))
    tx = torch.tensor(xa, requires_grad=True)
    gx = tg.tensor(xa, requires_grad=True)
    (tgx,) = torch.autograd.grad(tm(tx)[0].pow(2).sum(), tx, create_graph=True)
    (ggx,) = tg.autograd.grad(gm(gx)[0].pow(2).sum(), gx, create_graph=True)
    for _ in range(2):                          # steps on the same shapes in between
        gm(tg.tensor(rng.standard_normal((4, 2, 3)), requires_grad=True))[0].sum().backward()
    gm.zero_grad()
    tgx.pow(2).sum().backward()
    ggx.pow(2).sum().backward()
    _close(tx.grad, gx.grad, 1e-10)
    for (_, p), (_, q) in zip(tm.named_parameters(), gm.named_parameters()):
        _close(p.grad, q.grad, 1e-10)


def test_workspace_is_bounded_and_released():
    """The workspace holds at most its limit, and buffers no graph uses are free for reuse."""
    import gc
    from tapegrad import _core
    # A graph an earlier test left in an uncollected reference cycle (a caught exception's
    # traceback holds its frames) still holds its buffers: collect it first.
    gc.collect()
    m = _workspace_model("LSTM", tg.float32)
    xs, ws = _workspace_data(np.float32)
    for a, w in zip(xs, ws):
        (m(tg.tensor(a))[0] * tg.tensor(w)).sum().backward()
    pooled, used = _core._nn_workspace_bytes()
    assert 0 < pooled <= 64 << 20
    assert used == 0
    out = m(tg.tensor(xs[0]))[0]
    assert _core._nn_workspace_bytes()[1] > 0      # the live graph's buffers are in use
    del out
    assert _core._nn_workspace_bytes()[1] == 0


def _public_checks_scenario(L):
    """RNNBase's public checks (check_input, get_expected_hidden_size / cell size,
    check_hidden_size, check_forward_args, permute_hidden), which custom RNN subclasses call."""
    out = []

    def attempt(f):
        try:
            return f()
        except (RuntimeError, ValueError) as e:
            return type(e).__name__, str(e)

    for cls in (L.nn.RNN, L.nn.GRU, L.nn.LSTM):
        m = cls(3, 4, num_layers=2, bidirectional=True)
        x = L.zeros(5, 2, 3)
        h = L.zeros(4, 2, 4)
        hid = (h, L.zeros(4, 3, 4)) if cls is L.nn.LSTM else h
        out.append((m.get_expected_hidden_size(x, None),
                    m.get_expected_hidden_size(L.zeros(7, 3), L.tensor([3, 2, 2]))))
        out.append(attempt(lambda: m.check_forward_args(x, hid, None)))
        out.append(attempt(lambda: m.check_input(L.zeros(5, 2, 3, dtype=L.float64), None)))
        out.append(attempt(lambda: m.check_input(L.zeros(5, 3), None)))
        out.append(attempt(lambda: m.check_input(L.zeros(5, 2, 2), None)))
        out.append(attempt(lambda: m.check_hidden_size(h, (4, 2, 4))))
        hp = L.arange(16.).reshape(4, 2, 2)
        r = m.permute_hidden((hp, hp + 1) if cls is L.nn.LSTM else hp, L.tensor([1, 0]))
        out.append(([t.tolist() for t in r] if isinstance(r, tuple) else r.tolist(),
                    m.permute_hidden(hp, None) is hp))
    lstm = L.nn.LSTM(3, 4, proj_size=2, batch_first=True)
    out.append((lstm.get_expected_hidden_size(L.zeros(6, 5, 3), None),
                lstm.get_expected_cell_size(L.zeros(6, 5, 3), None)))
    return out


def test_rnn_public_checks_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _public_checks_scenario(tg) == _public_checks_scenario(torch)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 200.0, -200.0])
@pytest.mark.parametrize("where", ["input", "hidden"])
def test_float32_gates_saturate_exactly_as_torch(torch, kind, bad, where):
    # The float32 gate kernels' exp is an approximation that used to stop at ~1e-38: a saturated
    # gate was 6e-39 instead of 0, so with an infinite hidden state GRU gave inf where PyTorch's
    # 0 * inf gives NaN (fuzz seed 60607158).  Now 0/1 exactly, NaN where PyTorch has NaN.
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((2, 3, 3)).astype(np.float32)
    h00 = rng.standard_normal((1, 2, 2)).astype(np.float32)
    (x0 if where == "input" else h00)[0, 0, 1] = bad
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 2, batch_first=True)
    ours = getattr(tg.nn, kind)(3, 2, batch_first=True)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    h_t = torch.tensor(h00) if kind == "GRU" else (torch.tensor(h00), torch.zeros(1, 2, 2))
    h_g = tg.tensor(h00) if kind == "GRU" else (tg.tensor(h00), tg.zeros(1, 2, 2))
    expected = theirs(torch.tensor(x0), h_t)[0].detach().numpy()
    actual = ours(tg.tensor(x0), h_g)[0].detach().numpy()
    assert np.array_equal(np.isnan(actual), np.isnan(expected))
    assert np.array_equal(np.isinf(actual), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=1e-5, atol=1e-6)


def test_gru_infinite_hidden_state_is_nan_where_torch_is(torch):
    # fuzz seed 60607158's values: the update gate saturates at 0 for unit 0, so PyTorch's
    # n + z * (h - n) is 0 * inf = NaN there; tapegrad's float32 gate was 6e-39, giving inf
    x0 = np.array([[[-1.4040865, 1.069657, -0.11640299], [-0.23668197, 1.1334829, -1.1752589]],
                   [[-1.6394017, -0.23572513, 0.6019364], [-0.94130063, -1.0412496, -0.3972641]]],
                  np.float32)
    h00 = np.array([[[np.inf, -0.3570306], [np.inf, -0.326518]]], np.float32)
    torch.manual_seed(0)
    theirs = torch.nn.GRU(3, 2, batch_first=True)
    ours = tg.nn.GRU(3, 2, batch_first=True)
    ours.load_state_dict({k: tg.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    expected = theirs(torch.tensor(x0), torch.tensor(h00))[0].detach().numpy()
    actual = ours(tg.tensor(x0), tg.tensor(h00))[0].detach().numpy()
    assert np.isnan(expected).any()
    np.testing.assert_array_equal(actual, expected)
