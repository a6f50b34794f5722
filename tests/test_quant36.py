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


# -- operations on quantized tensors -------------------------------------------------------------

def _q(T, values, scale, zero_point, dtype_name):
    return T.quantize_per_tensor(T.tensor(values), scale, zero_point, getattr(T, dtype_name))


def _qrepr(r):
    return (r.int_repr().numpy().tolist(), str(r.dtype), r.q_scale(), r.q_zero_point())


def _from_ints(T, ints, scale, zero_point):
    if T is torch:
        return torch._make_per_tensor_quantized_tensor(torch.tensor(ints), scale, zero_point)
    from tapegrad._quantized import QuantizedTensor
    dtype = {np.uint8: tapegrad.quint8, np.int8: tapegrad.qint8,
             np.int32: tapegrad.qint32}[ints.dtype.type]
    return QuantizedTensor._make(ints.copy(), dtype, tapegrad.per_tensor_affine, scale,
                                 zero_point)


A = [[-1.0, 0.5, 2.0], [0.26, -0.3, 1.1]]
B = [[3.0, -2.0, 0.05]]


@pytest.mark.parametrize("dtype_name", ["quint8", "qint8"])
def test_cat_of_quantized_requantizes_to_the_first(dtype_name):
    got = []
    for T in (torch, tapegrad):
        a, b = _q(T, A, 0.1, 10, dtype_name), _q(T, B, 0.05, 3, dtype_name)
        # (b's -0.15 and 0.05 land on ties at a's scale: round half to even)
        got.append([_qrepr(T.cat([a, b])), _qrepr(T.cat([b, a])), _qrepr(T.cat([a, a], 1)),
                    _qrepr(T.cat((a, a), dim=-1))])
    assert got[0] == got[1]


def test_cat_of_quantized_errors():
    for T in (torch, tapegrad):
        a = _q(T, A, 0.1, 10, "quint8")
        with pytest.raises(RuntimeError, match="All dtypes must be the same"):
            T.cat([a, _q(T, B, 0.1, 10, "qint8")])
        with pytest.raises(NotImplementedError, match="Could not run 'aten::qscheme'"):
            T.cat([a, T.ones(1, 3)])
        pc = T.quantize_per_channel(T.ones(2, 3), T.tensor([0.1, 0.2]), T.tensor([0, 0]), 0,
                                    T.quint8)
        with pytest.raises(RuntimeError, match="Only per-tensor quantization is supported"):
            T.cat([pc, pc])


@pytest.mark.parametrize("dtype_name,zp", [("quint8", 10), ("qint8", -3), ("qint32", 7)])
def test_relu_of_quantized(dtype_name, zp):
    got = []
    for T in (torch, tapegrad):
        a = _q(T, A, 0.1, zp, dtype_name)
        c = a.clone()
        same = c.relu_() is c
        d = a.clone()
        m = T.nn.ReLU(inplace=True)(d)
        got.append([_qrepr(T.relu(a)), _qrepr(a.relu()), _qrepr(T.nn.ReLU()(a)),
                    _qrepr(T.nn.functional.relu(a)), _qrepr(c), same, _qrepr(d), m is d,
                    _qrepr(a)])
    assert got[0] == got[1]


def test_comparisons_of_quantized_dequantize():
    # was: a == a.clone() was Python's identity test (False), a == b a bool, not a tensor
    got = []
    for T in (torch, tapegrad):
        a, b = _q(T, A, 0.1, 10, "quint8"), _q(T, B, 0.05, 3, "quint8")
        rows = [a == a.clone(), a != b, a < a, a > 0.5, a.eq(a), a == a.dequantize(),
                T.ge(a, a.dequantize()), T.eq(a, b)]
        assert all(type(r) is type(T.ones(1)) for r in rows)
        got.append([r.numpy().tolist() for r in rows]
                   + [T.equal(a, a.clone()), T.equal(a, b), T.equal(a, a.dequantize()),
                      T.equal(a, _q(T, A, 0.1, 10, "qint8"))])
    assert got[0] == got[1]
    assert got[1][0] == [[True] * 3] * 2


def test_per_channel_view_reshape_transpose():
    got = []
    for T in (torch, tapegrad):
        x = T.arange(24.0).reshape(2, 3, 4) / 10 - 1
        pc = T.quantize_per_channel(x, T.tensor([0.1, 0.02, 0.05]), T.tensor([0, 3, -2]), 1,
                                    T.qint8)
        row = []
        for f in (lambda: pc.view(2, 3, 2, 2), lambda: pc.reshape(2, 3, 2, 2),
                  lambda: pc.reshape(2, 3, -1), lambda: pc.unsqueeze(0)):
            r = f()
            row.append((tuple(r.shape), r.int_repr().numpy().tolist(), r.q_per_channel_axis(),
                        r.q_per_channel_scales().numpy().tolist(),
                        r.dequantize().numpy().tolist()))
        got.append(row)
        with pytest.raises(RuntimeError, match="length of scales must equal to channel, "
                                               "expected 12 got, 3"):
            pc.view(2, 12).dequantize()
        with pytest.raises(RuntimeError, match="Channel axis out of range"):
            pc.reshape(-1).dequantize()
        for f in (lambda: pc.transpose(0, 1), lambda: pc.permute(2, 0, 1),
                  lambda: pc[0].t()):
            with pytest.raises(RuntimeError, match="Setting strides is possible only on "
                                                   "uniformly quantized tensor"):
                f()
    assert got[0] == got[1]


def test_per_channel_view_that_moves_channels_is_refused():
    # (2, 2, 2) axis 1 -> (4, 2): PyTorch keeps axis 1 (2 channels) and silently gives the
    # elements of the old last dimension the channel scales; tapegrad refuses
    pc = tapegrad.quantize_per_channel(tapegrad.ones(2, 2, 2), tapegrad.tensor([0.1, 0.2]),
                                       tapegrad.tensor([0, 0]), 1, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="regroups the dimensions before its channel axis"):
        pc.view(4, 2)


@pytest.mark.parametrize("dtype_name,np_type,lo,hi", [("quint8", np.uint8, 0, 255),
                                                      ("qint8", np.int8, -128, 127),
                                                      ("qint32", np.int32, -900, 900)])
def test_qfunctional_add_mul_bit_exact(dtype_name, np_type, lo, hi):
    rng = np.random.default_rng(17)
    for n, scales in ((5, (0.1, 0.1, 0.2)), (70, (0.1, 0.3, 0.2)), (200, (0.05, 0.05, 0.1)),
                      (131, (0.07, 0.13, 0.011))):
        # the grids of these scales put many sums exactly on rounding ties; n covers PyTorch's
        # vector blocks and its scalar remainder
        x = rng.integers(lo, hi + 1, n).astype(np_type)
        y = rng.integers(lo, hi + 1, n).astype(np_type)
        zs = [int(v) for v in rng.integers(max(lo, -100), min(hi, 100), 3)]
        got = []
        for T in (torch, tapegrad):
            s = [float(np.float32(v)) for v in scales]
            a, b = _from_ints(T, x, s[0], zs[0]), _from_ints(T, y, s[1], zs[1])
            q = T.ao.nn.quantized.QFunctional()
            q.scale, q.zero_point = s[2], zs[2]
            got.append([_qrepr(q.add(a, b)), _qrepr(q.add_relu(a, b)), _qrepr(q.mul(a, b)),
                        _qrepr(q.cat([a, b])), _qrepr(q.add_scalar(a, 0.37)),
                        _qrepr(q.add_scalar(a, -55.0)), _qrepr(q.mul_scalar(a, -0.3)),
                        _qrepr(q.mul_scalar(a, 0.0))])
        assert got[0] == got[1]


def test_qfunctional_errors_repr_state_dict():
    got = []
    for T in (torch, tapegrad):
        Q = T.ao.nn.quantized
        q = Q.QFunctional()
        q.scale, q.zero_point = 0.07, 4
        a = _q(T, A, 0.1, 10, "quint8")
        row = [repr(q), repr(Q.FloatFunctional()), repr(Q.Quantize(0.1, 3, T.qint8)),
               repr(Q.DeQuantize()), list(q.state_dict()),
               {k: v.tolist() for k, v in Q.Quantize(0.1, 3, T.qint8).state_dict().items()}]
        for f in (lambda: q.add(a, _q(T, A, 0.1, 10, "qint8")),
                  lambda: q.mul(a, _q(T, A, 0.1, 10, "qint8")),
                  lambda: q.add(T.quantize_per_channel(T.ones(2, 3), T.tensor([0.1, 0.2]),
                                                       T.tensor([0, 0]), 0, T.quint8), a),
                  lambda: q(a), lambda: Q.FloatFunctional()(a)):
            with pytest.raises(RuntimeError) as info:
                f()
            row.append(str(info.value).split("\n")[0])
        with pytest.raises(NotImplementedError, match="Could not run 'aten::qscheme'"):
            q.add(a, a.dequantize())
        fresh = Q.QFunctional()
        fresh.load_state_dict(q.state_dict())
        row.append((fresh.scale, fresh.zero_point))
        got.append(row)
    assert got[0] == got[1]


def test_quantize_dequantize_modules_and_float_functional():
    got = []
    for T in (torch, tapegrad):
        Q = T.ao.nn.quantized
        qa = Q.Quantize(0.1, 3, T.qint8)(T.tensor([1.0, -0.25, 0.35]))
        f = Q.FloatFunctional()
        got.append([_qrepr(qa), qa.q_scale(), Q.DeQuantize()(qa).numpy().tolist(),
                    f.add(T.ones(2), T.tensor([1.0, -3.0])).numpy().tolist(),
                    f.add_relu(T.ones(2), T.tensor([1.0, -3.0])).numpy().tolist(),
                    f.mul_scalar(T.ones(2), 3.0).numpy().tolist(),
                    _qrepr(f.cat([qa, qa]))])
    # the scale is the float32 buffer's: 0.10000000149011612
    assert got[0] == got[1] and got[1][1] == float(np.float32(0.1))


def test_nn_quantized_is_the_older_name_of_ao_nn_quantized():
    import tapegrad.nn.quantized.dynamic as dynamic
    for T in (torch, tapegrad):
        assert T.nn.quantized.FloatFunctional is T.ao.nn.quantized.FloatFunctional
        assert T.nn.quantized.QFunctional is T.ao.nn.quantized.QFunctional
        assert T.nn.quantized.dynamic.LSTM is T.ao.nn.quantized.dynamic.LSTM
        assert T.nn.quantized.dynamic.Linear is T.ao.nn.quantized.dynamic.Linear
    assert dynamic.GRU is tapegrad.ao.nn.quantized.dynamic.GRU


def test_dynamic_lstm_tutorial_print_size_of_model(tmp_path):
    # the word-language-model tutorial: quantize {LSTM, Linear}, print the model, compare the
    # checkpoint sizes written by torch.save(model.state_dict(), path)
    def build(T):
        T.manual_seed(0)

        class LM(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = T.nn.Dropout(0.5)
                self.encoder = T.nn.Embedding(60, 16)
                self.rnn = T.nn.LSTM(16, 24, 2, dropout=0.5)
                self.decoder = T.nn.Linear(24, 60)

            def forward(self, x, hidden):
                out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
                return self.decoder(self.drop(out)).view(-1, 60), hidden
        return LM().eval()
    m, mt = build(torch), build(tapegrad)
    mt.load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in m.state_dict().items()})
    q = torch.ao.quantization.quantize_dynamic(m, {torch.nn.LSTM, torch.nn.Linear},
                                               dtype=torch.qint8)
    qt = tapegrad.quantization.quantize_dynamic(mt, {tapegrad.nn.LSTM, tapegrad.nn.Linear},
                                                dtype=tapegrad.qint8)
    assert str(qt) == str(q)
    sizes = []
    for T, model in ((torch, q), (tapegrad, qt)):
        path = tmp_path / f"{T.__name__}.p"
        T.save(model.state_dict(), str(path))
        sizes.append(path.stat().st_size)
    assert abs(sizes[1] - sizes[0]) < 0.08 * sizes[0]
    x = np.random.default_rng(4).integers(0, 60, (7, 3))
    h = (torch.zeros(2, 3, 24), torch.zeros(2, 3, 24))
    ht = (tapegrad.zeros(2, 3, 24), tapegrad.zeros(2, 3, 24))
    for _ in range(3):      # the hidden state carried over batches
        out, h = q(torch.tensor(x), h)
        out_t, ht = qt(tapegrad.tensor(x), ht)
        np.testing.assert_allclose(_np(out_t), _np(out), rtol=0, atol=5e-6)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_dynamic_rnn_packed_sequence(cls, enforce_sorted):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    import tapegrad.nn.utils.rnn as trnn
    torch.manual_seed(0)
    m = getattr(torch.nn, cls)(5, 6, num_layers=2, bidirectional=True)
    mt = getattr(tapegrad.nn, cls)(5, 6, num_layers=2, bidirectional=True)
    mt.load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in m.state_dict().items()})
    q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(m), {getattr(torch.nn, cls)})[0]
    qt = tapegrad.ao.quantization.quantize_dynamic(tapegrad.nn.Sequential(mt),
                                                   {getattr(tapegrad.nn, cls)})[0]
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((7, 4, 5)) * 1.5).astype(np.float32)
    lengths = [7, 5, 5, 2] if enforce_sorted else [3, 7, 1, 5]
    h0 = rng.standard_normal((4, 4, 6)).astype(np.float32)
    packed = pack_padded_sequence(torch.tensor(x), torch.tensor(lengths),
                                  enforce_sorted=enforce_sorted)
    packed_t = trnn.pack_padded_sequence(tapegrad.tensor(x), tapegrad.tensor(lengths),
                                         enforce_sorted=enforce_sorted)
    if cls == "LSTM":
        out, h = q(packed, (torch.tensor(h0), torch.tensor(h0 * 0.5)))
        out_t, h_t = qt(packed_t, (tapegrad.tensor(h0), tapegrad.tensor(h0 * 0.5)))
    else:
        out, h = q(packed, torch.tensor(h0))
        out_t, h_t = qt(packed_t, tapegrad.tensor(h0))
        h, h_t = (h,), (h_t,)
    assert type(out_t) is trnn.PackedSequence
    np.testing.assert_array_equal(out_t.batch_sizes.numpy(), out.batch_sizes.numpy())
    np.testing.assert_allclose(trnn.pad_packed_sequence(out_t)[0].numpy(),
                               _np(pad_packed_sequence(out)[0]), rtol=0, atol=2e-6)
    for a, b in zip(h, h_t):
        np.testing.assert_allclose(b.numpy(), _np(a), rtol=0, atol=2e-6)


def test_more_quantized_tensor_ops():
    got = []
    for T in (torch, tapegrad):
        F = T.nn.functional
        a = _q(T, [[-1.0, 0.5, 2.0], [0.26, -0.3, 7.1]], 0.1, 10, "quint8")
        a8 = _q(T, A, 0.05, -3, "qint8")
        pc = T.quantize_per_channel(T.ones(2, 1, 3), T.tensor([0.1, 0.2]), T.tensor([0, 1]), 0,
                                    T.quint8)

        def cv(r):
            if isinstance(r, tuple):
                return [cv(x) for x in r]
            if not r.is_quantized:
                return r.numpy().tolist()
            scales = (r.q_scale() if r.qscheme() == T.per_tensor_affine
                      else r.q_per_channel_scales().numpy().tolist())
            return (tuple(r.shape), r.int_repr().numpy().tolist(), str(r.dtype), scales)
        row = [cv(r) for r in (
            T.max(a), a.min(), a.max(0), T.min(a, 1, keepdim=True), a8.clamp(-0.26, 0.33),
            T.clamp(a, min=0.55), F.relu6(a8), F.relu6(a), F.hardtanh(a8, -0.5, 0.75),
            pc.squeeze(1), pc.squeeze(), pc.narrow(0, 1, 1), a.split(2, 1), a.chunk(3, 1),
            T.stack([a, a], 1), a.T, a.mT, a[0:1].expand(3, 3), F.dropout(a, 0.5, False),
            a8.clone().fill_(-0.125))]
        for f, err, phrase in ((lambda: pc.expand(4, 2, 1, 3), RuntimeError, "Setting strides"),
                               (lambda: F.dropout(a, 0.5, True), NotImplementedError,
                                "aten::bernoulli_"),
                               (lambda: T.exp(a), NotImplementedError, "aten::exp")):
            with pytest.raises(err, match=phrase):
                f()
        got.append(row)
    assert got[0] == got[1]
