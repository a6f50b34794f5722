"""Dynamic quantization of nn.LSTM / nn.GRU (qint8 and float16), float16 dynamic Linear, and the
operations scripts call on quantized tensors, each compared with PyTorch."""
import io
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::UserWarning")


def _model(T, cls, bidirectional=False, batch_first=False, num_layers=1):
    T.manual_seed(0)

    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(T.nn, cls)(6, 7, num_layers=num_layers, batch_first=batch_first,
                                          bidirectional=bidirectional)
            self.dec = T.nn.Linear(7 * (2 if bidirectional else 1), 5)

        def forward(self, x, h=None):
            out, h = self.rnn(x, h)
            return self.dec(out), h
    return Net().eval()


def _pair(cls, dtype_name, **kw):
    m = _model(torch, cls, **kw)
    mt = _model(tapegrad, cls, **kw)
    mt.load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in m.state_dict().items()})
    q = torch.ao.quantization.quantize_dynamic(
        m, {torch.nn.LSTM, torch.nn.GRU, torch.nn.Linear}, dtype=getattr(torch, dtype_name))
    qt = tapegrad.ao.quantization.quantize_dynamic(
        mt, {tapegrad.nn.LSTM, tapegrad.nn.GRU, tapegrad.nn.Linear},
        dtype=getattr(tapegrad, dtype_name))
    return q, qt


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype_name", ["qint8", "float16"])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2},
                                {"bidirectional": True, "batch_first": True},
                                {"num_layers": 2, "bidirectional": True}])
def test_quantize_dynamic_rnn_matches_torch(cls, dtype_name, kw):
    q, qt = _pair(cls, dtype_name, **kw)
    assert repr(qt) == repr(q)
    assert list(qt.state_dict()) == list(q.state_dict())
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 4, 6) if kw.get("batch_first") else (4, 3, 6)) * 1.7
         ).astype(np.float32)
    out, h = q(torch.tensor(x))
    out_t, h_t = qt(tapegrad.tensor(x))
    # the integer products are exact; sigmoid / tanh may differ from PyTorch's by an ulp
    np.testing.assert_allclose(_np(out_t), _np(out), rtol=0, atol=2e-6)
    hs, hts = (h, h_t) if cls == "LSTM" else ((h,), (h_t,))
    for a, b in zip(hs, hts):
        assert tuple(b.shape) == tuple(a.shape)
        np.testing.assert_allclose(_np(b), _np(a), rtol=0, atol=2e-6)
    # an explicit initial state, passed on
    out2, _ = q(torch.tensor(x), h)
    out2_t, _ = qt(tapegrad.tensor(x), h_t)
    np.testing.assert_allclose(_np(out2_t), _np(out2), rtol=0, atol=5e-6)


def test_dynamic_lstm_whole_sequence_input_range():
    # PyTorch quantizes the input projection of the whole sequence with one range: a step of
    # large values changes the other steps' outputs (a per-step range would not)
    q, qt = _pair("LSTM", "qint8")
    x = np.full((3, 2, 6), 0.3, np.float32)
    x[2] = 40.0
    out = q.rnn(torch.tensor(x))[0]
    out_t = qt.rnn(tapegrad.tensor(x))[0]
    np.testing.assert_allclose(_np(out_t), _np(out), rtol=0, atol=2e-6)


def test_dynamic_rnn_state_dict_save_load_and_size():
    q, qt = _pair("LSTM", "qint8", num_layers=2)
    b, bt = io.BytesIO(), io.BytesIO()
    torch.save(q.state_dict(), b)
    tapegrad.save(qt.state_dict(), bt)
    # the tutorials' print_size_of_model
    assert abs(len(bt.getvalue()) - len(b.getvalue())) < 0.08 * len(b.getvalue())
    bt.seek(0)
    fresh = tapegrad.ao.quantization.quantize_dynamic(
        _model(tapegrad, "LSTM", num_layers=2), {tapegrad.nn.LSTM, tapegrad.nn.Linear})
    fresh.load_state_dict(tapegrad.load(bt, weights_only=False))
    x = tapegrad.randn(4, 3, 6)
    np.testing.assert_array_equal(fresh(x)[0].numpy(), qt(x)[0].numpy())
    w = qt.rnn.get_weight()["weight_ih_l1"]
    wt = q.rnn.get_weight()["weight_ih_l1"]
    assert w.dtype == tapegrad.qint8 and w.q_scale() == wt.q_scale()
    np.testing.assert_array_equal(w.int_repr().numpy(), wt.int_repr().numpy())


def test_dynamic_rnn_errors():
    q, qt = _pair("LSTM", "qint8")
    for T, mod in ((torch, q.rnn), (tapegrad, qt.rnn)):
        with pytest.raises(RuntimeError, match="input must have 3 dimensions, got 2"):
            mod(T.zeros(3, 6))
        with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
            mod(T.zeros(2, 3, 5))
        with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 7\), got "
                                               r"\[1, 2, 7\]"):
            mod(T.zeros(2, 3, 6), (T.zeros(1, 2, 7), T.zeros(1, 3, 7)))


def test_dynamic_linear_float16():
    T = [torch, tapegrad]
    mods = []
    for t in T:
        t.manual_seed(0)
        mods.append(t.nn.Sequential(t.nn.Linear(9, 4)))
    mods[1].load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in mods[0].state_dict().items()})
    with torch.no_grad():
        mods[0][0].weight[0, 0] = 1e6        # saturated to float16's largest
    mods[1][0].weight.data[0, 0] = 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.ao.quantization.quantize_dynamic(mods[0], dtype=torch.float16)
        qt = tapegrad.ao.quantization.quantize_dynamic(mods[1], dtype=tapegrad.float16)
    assert repr(qt) == repr(q)
    assert "qscheme" not in repr(qt)
    np.testing.assert_array_equal(qt[0].weight().numpy(), _np(q[0].weight()))
    assert qt[0].weight()[0, 0].item() == 65504.0
    x = np.random.default_rng(2).standard_normal((5, 9)).astype(np.float32)
    np.testing.assert_allclose(qt(tapegrad.tensor(x)).numpy(), _np(q(torch.tensor(x))),
                               rtol=1e-6, atol=1e-5)
    assert list(qt.state_dict()) == list(q.state_dict())
