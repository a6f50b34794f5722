"""sweep37: MultiheadAttention / Transformer / scaled_dot_product_attention / RNNs against
PyTorch (CPU math path): the differences a differential sweep of PyTorch's own test cases found."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

torch = pytest.importorskip("torch")


def _tg(t, requires_grad=False):
    out = tg.tensor(t.detach().numpy().copy())
    return out.requires_grad_(requires_grad)


# -- scaled_dot_product_attention: nothing to compute ----------------------------------------------

@pytest.mark.parametrize("shapes", [
    ((2, 3, 0, 4), (2, 3, 6, 4), (2, 3, 6, 4)),      # no query rows
    ((2, 3, 5, 4), (2, 3, 0, 4), (2, 3, 0, 4)),      # no keys
    ((0, 3, 5, 4), (0, 3, 6, 4), (0, 3, 6, 4)),      # empty batch
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 0)),      # empty value features
    ((3, 5, 4), (3, 0, 4), (3, 0, 4)),
    ((5, 4), (0, 4), (0, 4)),
])
def test_sdpa_empty_returns_zeros_before_mask_checks(shapes):
    """PyTorch returns zeros for empty attention before it looks at the mask: an explicit mask with
    is_causal=True (refused otherwise) is accepted there, and every input gets a zero gradient."""
    rng = np.random.RandomState(3)
    qs, ks, vs = shapes
    arrs = [rng.randn(*s) for s in shapes]
    mask = np.zeros((qs[-2], ks[-2]))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrs)
    gq, gk, gv = (tg.tensor(a, requires_grad=True) for a in arrs)
    want = torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=torch.tensor(mask), is_causal=True)
    got = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=tg.tensor(mask), is_causal=True)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype == tg.float64
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__ == "AddBackward0"
    want.sum().backward()
    got.sum().backward()
    for t, g in ((tq, gq), (tk, gk), (tv, gv)):
        assert g.grad is not None and tuple(g.grad.shape) == tuple(t.grad.shape)
        np.testing.assert_array_equal(g.grad.numpy(), t.grad.numpy())


def test_sdpa_empty_skips_shape_and_dropout_checks_but_not_dtype():
    """The early return comes after the dtype checks (still raised) and before the dropout and
    head-size checks (not raised)."""
    q = np.ones((2, 3, 5, 4), dtype=np.float32)
    e = np.ones((2, 3, 0, 4), dtype=np.float32)
    want = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(e)[..., :3], torch.tensor(e), dropout_p=2.0)
    got = F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(e)[..., :3], tg.tensor(e),
                                         dropout_p=2.0)
    assert tuple(got.shape) == tuple(want.shape) == (2, 3, 5, 4)
    assert not got.requires_grad
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(e), tg.tensor(e),
                                       attn_mask=tg.zeros(5, 0, dtype=tg.int32))
    with pytest.raises(RuntimeError, match="to have the same dtype"):
        F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(e).double(), tg.tensor(e))


# -- MultiheadAttention: separate projections check the inputs' feature sizes ----------------------

@pytest.mark.parametrize("which,match", [
    ("key", r"expecting key weights shape of \(6, 6\), but got"),
    ("value", r"expecting value weights shape of \(6, 6\), but got"),
])
def test_mha_separate_projection_shape_errors(which, match):
    """kdim/vdim modules fed inputs of the wrong feature size raise PyTorch's AssertionError
    naming the projection, not a matmul's RuntimeError."""
    tm = torch.nn.MultiheadAttention(6, 2, kdim=4, vdim=5)
    gm = tg.nn.MultiheadAttention(6, 2, kdim=4, vdim=5)
    q, k, v = torch.randn(3, 2, 6), torch.randn(5, 2, 4), torch.randn(5, 2, 5)
    args = {"query": q, "key": k, "value": v}
    args[which] = torch.randn(5, 2, 6)
    with pytest.raises(AssertionError, match=match):
        tm(args["query"], args["key"], args["value"])
    with pytest.raises(AssertionError, match=match):
        gm(_tg(args["query"]), _tg(args["key"]), _tg(args["value"]))


# -- TransformerEncoder's nested-tensor inference path ---------------------------------------------

def _encoder_pair(num_layers=1, norm=False):
    torch.manual_seed(11)
    t = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), num_layers,
        norm=torch.nn.LayerNorm(8) if norm else None).double().eval()
    g = tg.nn.TransformerEncoder(
        tg.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dtype=tg.float64), num_layers,
        norm=tg.nn.LayerNorm(8, dtype=tg.float64) if norm else None).eval()
    g.load_state_dict({k: _tg(v) for k, v in t.state_dict().items()})
    return t, g


@pytest.mark.parametrize("num_layers,norm", [(1, False), (2, True)])
@pytest.mark.parametrize("pad", [
    [[0, 1], [0, 1], [1, 1]],                  # the last sequence is all padding
    [[1, 1, 1, 1], [0, 0, 1, 1]],
])
def test_encoder_nested_path_fully_padded_sequence_is_zeros(num_layers, norm, pad):
    """In eval without grad PyTorch runs the encoder on nested tensors: a sequence that is all
    padding is empty there and comes back as zeros (then the norm's bias), not NaN."""
    t, g = _encoder_pair(num_layers, norm)
    pad = np.array(pad, dtype=bool)
    x = np.random.RandomState(5).rand(pad.shape[0], pad.shape[1], 8)
    with torch.no_grad():
        want = t(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
    with tg.no_grad():
        got = g(tg.tensor(x), src_key_padding_mask=tg.tensor(pad))
    assert not np.isnan(want.numpy()).any()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_encoder_nested_path_all_padding_raises():
    t, g = _encoder_pair()
    pad = np.ones((2, 3), dtype=bool)
    x = np.random.RandomState(6).rand(2, 3, 8)
    with torch.no_grad(), pytest.raises(RuntimeError, match="at least one constituent tensor"):
        t(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
    with tg.no_grad(), pytest.raises(RuntimeError, match="at least one constituent tensor"):
        g(tg.tensor(x), src_key_padding_mask=tg.tensor(pad))


def test_encoder_nested_path_warns_once_per_process():
    """PyTorch's nested path warns that nested tensors are a prototype, once per process."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import warnings
        import tapegrad as tg
        m = tg.nn.TransformerEncoder(tg.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                                     1).eval()
        x = tg.rand(2, 3, 8)
        pad = tg.tensor([[False, False, True], [False, False, False]])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.train()(x, src_key_padding_mask=pad)       # slow path: no warning
            print(len(w))
            m.eval()
            with tg.no_grad():
                m(x, src_key_padding_mask=pad)
                m(x, src_key_padding_mask=pad)
            print(len(w), w[-1].category.__name__, str(w[-1].message)[:25])
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["0", "1 UserWarning The PyTorch API of nested"]


# -- RNN / GRU / LSTM: an initial state of another dtype ---------------------------------------------

@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("h_dtype,name", [(np.float32, "Float"), (np.int64, "Long")])
def test_rnn_hidden_state_dtype_mismatch_is_runtime_error(cls, batched, h_dtype, name):
    """A float64 module given a float32 (or int64) h0 raises PyTorch's matmul RuntimeError, not
    tapegrad's internal kernel ValueError/TypeError."""
    g = getattr(tg.nn, cls)(3, 4, num_layers=2).double()
    t = getattr(torch.nn, cls)(3, 4, num_layers=2).double()
    x = np.random.RandomState(1).randn(5, 2, 3)
    h = np.ones((2, 2, 4))
    if not batched:
        x, h = x[:, 0], h[:, 0]
    match = f"mat1 and mat2 must have the same dtype, but got {name} and Double"
    th, gh = torch.tensor(h.astype(h_dtype)), tg.tensor(h.astype(h_dtype))
    thx = (th, torch.tensor(h)) if cls == "LSTM" else th
    ghx = (gh, tg.tensor(h)) if cls == "LSTM" else gh
    with pytest.raises(RuntimeError, match=match):
        t(torch.tensor(x), thx)
    with pytest.raises(RuntimeError, match=match):
        g(tg.tensor(x), ghx)


@pytest.mark.parametrize("batched", [True, False])
def test_lstm_cell_state_of_another_dtype_is_promoted(batched):
    """An LSTM's c0 only meets gate values: PyTorch promotes a float32 c0 for a float64 module
    (c_n float64) and its gradient comes back float32."""
    torch.manual_seed(2)
    t = torch.nn.LSTM(3, 4).double()
    g = tg.nn.LSTM(3, 4).double()
    g.load_state_dict({k: _tg(v) for k, v in t.state_dict().items()})
    rng = np.random.RandomState(4)
    x, h, c = rng.randn(5, 2, 3), rng.randn(1, 2, 4), rng.randn(1, 2, 4).astype(np.float32)
    if not batched:
        x, h, c = x[:, 0], h[:, 0], c[:, 0]
    tc, gc = torch.tensor(c, requires_grad=True), tg.tensor(c, requires_grad=True)
    tout, (th, tcn) = t(torch.tensor(x), (torch.tensor(h), tc))
    gout, (gh, gcn) = g(tg.tensor(x), (tg.tensor(h), gc))
    assert gcn.dtype == tg.float64 and tcn.dtype == torch.float64
    np.testing.assert_allclose(gout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gcn.detach().numpy(), tcn.detach().numpy(), rtol=1e-12)
    (tout.sum() + tcn.sum()).backward()
    (gout.sum() + gcn.sum()).backward()
    assert gc.grad.dtype == tg.float32
    np.testing.assert_allclose(gc.grad.numpy(), tc.grad.numpy(), rtol=1e-6)
