"""Quantized tensors (torch.quantize_per_tensor / quantize_per_channel) and dynamic quantization
(torch.ao.quantization.quantize_dynamic), checked against PyTorch itself."""
import io
import pickle
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(torch), fn(tapegrad)


# values on and near the rounding ties of scale 0.1, a large one (clamped) and negatives
X = np.array([[-1.0, 0.05, 0.15, 2.5], [0.25, 0.35, 100.0, -3.0]], np.float32)


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("scale,zero_point", [(0.1, 10), (1 / 3, 0), (0.0173, 5)])
def test_quantize_per_tensor_integers_values_and_repr(dtype, scale, zero_point):
    def make(lib):
        return lib.quantize_per_tensor(lib.tensor(X), scale, zero_point, getattr(lib, dtype))
    t, g = _both(make)
    np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())
    assert g.int_repr().dtype.name == t.int_repr().dtype.__repr__().split(".")[1]
    np.testing.assert_array_equal(g.dequantize().numpy(), t.dequantize().numpy())
    assert repr(g) == repr(t)
    assert (g.q_scale(), g.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    assert repr(g.qscheme()) == repr(t.qscheme()) == "torch.per_tensor_affine"
    assert repr(g.dtype) == repr(t.dtype) and g.is_quantized and t.is_quantized
    assert tuple(g.shape) == tuple(t.shape) and g.stride() == t.stride()


def test_rounding_is_half_to_even_bit_for_bit_on_random_ties():
    # PyTorch (FBGEMM) rounds fma(x, 1/scale, zero_point) in float32 for (q)uint8 / qint8 and
    # zero_point + float32(x * (1/scale)) for qint32 and per channel: each on many exact ties
    rng = np.random.default_rng(7)
    for dtype in ("quint8", "qint8", "qint32"):
        for scale in (0.1, 0.07, 1 / 3, 0.0123):
            k = rng.integers(-400, 400, 300)
            x = np.concatenate([((k + 0.5) * scale).astype(np.float32),
                                rng.normal(0, 4, 300).astype(np.float32)])
            zp = 7 if dtype == "quint8" else -3
            t, g = _both(lambda L: L.quantize_per_tensor(L.tensor(x), scale, zp, getattr(L, dtype)))
            np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())
            xs = x.reshape(3, -1)
            s, z = np.array([scale, 2 * scale, 0.5 * scale]), np.array([1, 2, 3])
            t, g = _both(lambda L: L.quantize_per_channel(L.tensor(xs), L.tensor(s), L.tensor(z), 0,
                                                          getattr(L, dtype)))
            np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())
            np.testing.assert_array_equal(g.dequantize().numpy(), t.dequantize().numpy())


def test_quantize_per_channel_accessors_and_repr():
    s, z = np.array([0.1, 0.2]), np.array([1, -2])
    t, g = _both(lambda L: L.quantize_per_channel(L.tensor(X), L.tensor(s), L.tensor(z), 0, L.qint8))
    assert repr(g) == repr(t)
    np.testing.assert_array_equal(g.q_per_channel_scales().numpy(), t.q_per_channel_scales().numpy())
    assert g.q_per_channel_scales().dtype == tapegrad.float64
    np.testing.assert_array_equal(g.q_per_channel_zero_points().numpy(),
                                  t.q_per_channel_zero_points().numpy())
    assert g.q_per_channel_axis() == t.q_per_channel_axis() == 0
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        g.q_scale()
    q = tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 0, tapegrad.qint8)
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()


def test_scale_and_zero_point_given_as_tensors_and_lists_of_tensors():
    t, g = _both(lambda L: L.quantize_per_tensor(L.tensor(X), L.tensor(0.1), L.tensor(2), L.quint8))
    assert repr(g) == repr(t)          # (the scale is float32's 0.1: 0.10000000149011612)
    t, g = _both(lambda L: L.quantize_per_tensor([L.tensor(X), L.tensor(-X)], L.tensor([0.1, 0.2]),
                                                 L.tensor([1, 2]), L.quint8))
    assert isinstance(g, tuple) and [repr(a) for a in g] == [repr(a) for a in t]
    t, g = _both(lambda L: L.dequantize(L.quantize_per_tensor(
        [L.tensor(X)], L.tensor([0.1]), L.tensor([1]), L.quint8)))
    np.testing.assert_array_equal(g[0].numpy(), t[0].numpy())


def test_empty_and_zero_dim():
    for x in (np.array(2.5, np.float32), np.zeros((0,), np.float32), np.zeros((0, 3), np.float32)):
        t, g = _both(lambda L: L.quantize_per_tensor(L.tensor(x), 1.0, 0, L.quint8))
        assert repr(g) == repr(t)
        assert repr(g.int_repr()) == repr(t.int_repr())


@pytest.mark.parametrize("op", [
    lambda q: q.view(8), lambda q: q.reshape(4, 2), lambda q: q.t(), lambda q: q[0],
    lambda q: q[:, 1], lambda q: q.clone(), lambda q: q.select(1, 2), lambda q: q[:, ::2],
    lambda q: q.transpose(0, 1).contiguous(), lambda q: q.unsqueeze(0), lambda q: q.flatten(),
    lambda q: q[[1, 0, 1]], lambda q: q.detach(), lambda q: q.permute(1, 0)])
def test_shape_ops_of_per_tensor_quantized(op):
    t, g = _both(lambda L: op(L.quantize_per_tensor(L.tensor(X), 0.1, 10, L.quint8)))
    assert repr(g) == repr(t)
    assert g.stride() == t.stride() and g.is_contiguous() == t.is_contiguous()


@pytest.mark.parametrize("op", [
    lambda q: q[0], lambda q: q[:, 1:3], lambda q: q[:, 1:2], lambda q: q[0, ::2],
    lambda q: q.unsqueeze(0), lambda q: q[None], lambda q: q[:, 2], lambda q: q.select(0, 1)])
def test_indexing_per_channel_moves_the_channels_with_the_axis(op):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 7
    s, z = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1, 2, 3, 4])
    t, g = _both(lambda L: op(L.quantize_per_channel(L.tensor(x), L.tensor(s), L.tensor(z), 1,
                                                     L.quint8)))
    assert repr(g) == repr(t)


def test_per_channel_select_after_the_axis_keeps_the_channels():
    # PyTorch lowers the axis on every select (create_subtensor_quantizer), so qc[:, :, 1] of a
    # tensor quantized along dim 1 claims its channels lie along dim 0 and dequantizes with the
    # wrong scales; tapegrad keeps them on dim 1, so the values equal the float path's.
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 7
    s, z = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1, 2, 3, 4])
    t, g = _both(lambda L: L.quantize_per_channel(L.tensor(x), L.tensor(s), L.tensor(z), 1,
                                                  L.quint8))
    sub = g[:, :, 1]
    assert sub.q_per_channel_axis() == 1
    np.testing.assert_array_equal(sub.dequantize().numpy(), t.dequantize()[:, :, 1].numpy())


def test_errors_match_pytorch():
    q = tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 10, tapegrad.quint8)
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        q + q
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        q.sum()
    with pytest.raises(RuntimeError, match="empty_strided not supported on quantized"):
        q * 2
    with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
        tapegrad.tensor(X) + q
    with pytest.raises(RuntimeError, match="only works on Float Tensor, got Double"):
        tapegrad.quantize_per_tensor(tapegrad.tensor(X).double(), 0.1, 0, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="only works on Float Tensor, got Long"):
        tapegrad.quantize_per_tensor(tapegrad.tensor([1, 2]), 0.1, 0, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="ScalarType Float is not supported in new_qtensor"):
        tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 0, tapegrad.float32)
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 300, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="length of scales must equal to channel"):
        tapegrad.quantize_per_channel(tapegrad.tensor(X), tapegrad.tensor([0.1, 0.2, 0.3]),
                                      tapegrad.tensor([1, 2, 3]), 0, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="Channel axis out of range"):
        tapegrad.quantize_per_channel(tapegrad.tensor(X), tapegrad.tensor([0.1, 0.2]),
                                      tapegrad.tensor([1, 2]), 2, tapegrad.quint8)
    with pytest.raises(RuntimeError, match="floating point dtype can require gradients"):
        q.requires_grad_()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        q.t().view(8)
    with pytest.raises(NotImplementedError, match="'aten::int_repr' with arguments from the 'CPU'"):
        tapegrad.tensor(X).int_repr()


def test_dense_tensor_conveniences():
    x = tapegrad.tensor(X)
    assert x.dequantize() is x and not x.is_quantized
    q = tapegrad.quantize_per_tensor(x, 0.1, 10, tapegrad.quint8)
    assert tapegrad.is_tensor(q) and repr(type(q)) == "<class 'torch.Tensor'>"
    assert q[0, 1].item() == pytest.approx(0.0) and q[0, 3].item() == pytest.approx(2.5)
    assert tapegrad.int_repr(q).dtype == tapegrad.uint8 and tapegrad.q_scale(q) == 0.1


def test_setitem_quantizes_with_the_tensors_qparams():
    t, g = _both(lambda L: L.quantize_per_tensor(L.tensor(X), 0.1, 3, L.qint8))
    t[0, 1] = 7.26
    g[0, 1] = 7.26
    np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())


def test_save_load_and_pickle_roundtrip():
    q = tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 10, tapegrad.quint8)
    qc = tapegrad.quantize_per_channel(tapegrad.tensor(X), tapegrad.tensor([0.1, 0.2]),
                                       tapegrad.tensor([1, -2]), 0, tapegrad.qint8)
    buf = io.BytesIO()
    tapegrad.save({"q": q, "qc": qc, "qt": q.t()}, buf)
    buf.seek(0)
    back = tapegrad.load(buf)          # weights_only=True, as PyTorch loads quantized tensors
    for key, orig in (("q", q), ("qc", qc), ("qt", q.t())):
        assert repr(back[key]) == repr(orig)
        np.testing.assert_array_equal(back[key].int_repr().numpy(), orig.int_repr().numpy())
    assert repr(pickle.loads(pickle.dumps(qc))) == repr(qc)


def test_deprecation_warning_as_pytorch():
    import tapegrad._quantized as mod
    mod._warned = False
    with pytest.warns(UserWarning, match="quantized tensor creation functions .* are deprecated"):
        tapegrad.quantize_per_tensor(tapegrad.tensor(X), 0.1, 0, tapegrad.quint8)
