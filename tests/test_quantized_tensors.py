"""Quantized tensors (torch.quantize_per_tensor / quantize_per_channel) and dynamic quantization
(torch.ao.quantization.quantize_dynamic), checked against PyTorch itself."""
import io
import pickle
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated")]


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


# -- dynamic quantization ---------------------------------------------------------------------

def _mlp(lib, rng, k, hidden, n, bias=True):
    m = lib.nn.Sequential(lib.nn.Linear(k, hidden, bias=bias), lib.nn.ReLU(),
                          lib.nn.Linear(hidden, n))
    return m


def _mlp_state(rng, k, hidden, n, bias=True):
    sd = {"0.weight": rng.normal(0, 1 / np.sqrt(k), (hidden, k)).astype(np.float32),
          "2.weight": rng.normal(0, 0.3, (n, hidden)).astype(np.float32),
          "2.bias": rng.normal(0, 0.1, n).astype(np.float32)}
    if bias:
        sd["0.bias"] = rng.normal(0, 0.1, hidden).astype(np.float32)
    return sd


def test_quantize_dynamic_linear_is_bit_for_bit_pytorchs_fbgemm():
    # input ranges that exercise the zero point from either end, all-positive / all-negative
    # inputs (zero joins the range), tiny ranges (FBGEMM's smallest scale) and column counts that
    # are not multiples of the vector width
    rng = np.random.default_rng(3)
    for trial in range(24):
        k, hidden, n = (int(v) for v in rng.integers(1, 40, 3))
        bias = trial % 4 != 0
        sd = _mlp_state(rng, k, hidden, n, bias)
        shape = tuple(int(v) for v in rng.integers(1, 7, 1 + trial % 2)) + (k,)
        x = (rng.normal(0, [1e-6, 1e-2, 1.0, 30.0][trial % 4], shape)
             + [0.0, 2.0, -5.0][trial % 3]).astype(np.float32)
        outs = []
        for lib in (torch, tapegrad):
            m = _mlp(lib, rng, k, hidden, n, bias)
            m.load_state_dict({key: lib.tensor(v) for key, v in sd.items()})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                q = lib.ao.quantization.quantize_dynamic(m, {lib.nn.Linear}, dtype=lib.qint8)
                outs.append((q(lib.tensor(x)).numpy(), repr(q), q[0].weight().int_repr().numpy(),
                             q[0].weight().q_scale()))
        (t_out, t_repr, t_w, t_s), (g_out, g_repr, g_w, g_s) = outs
        np.testing.assert_array_equal(g_out, t_out)
        assert g_repr == t_repr
        np.testing.assert_array_equal(g_w, t_w)
        assert g_s == t_s


@pytest.mark.parametrize("how", ["set", "dict", "default", "alias", "name"])
def test_quantize_dynamic_spec_forms_and_module_surface(how):
    rng = np.random.default_rng(5)
    sd = _mlp_state(rng, 4, 3, 2)
    results = []
    for lib in (torch, tapegrad):
        m = _mlp(lib, rng, 4, 3, 2)
        m.load_state_dict({key: lib.tensor(v) for key, v in sd.items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = {"set": {lib.nn.Linear}, "default": None, "alias": {lib.nn.Linear},
                    "dict": {lib.nn.Linear: lib.ao.quantization.default_dynamic_qconfig},
                    "name": {"2"}}[how]
            api = lib.quantization if how == "alias" else lib.ao.quantization
            q = api.quantize_dynamic(m, spec) if spec is not None else api.quantize_dynamic(m)
            x = lib.tensor(np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.3, 0.7]], np.float32))
            results.append((repr(q), q(x).detach().numpy(), list(q.state_dict()), q is m, q.training,
                            list(q.parameters()) == [] if how != "name" else None,
                            repr(q[2].weight()) if how == "name" else repr(q[0].bias())))
    t, g = results
    assert g[0] == t[0]
    if how == "name":       # (layer 0 stays float: float32 Linear agrees to rounding only)
        np.testing.assert_allclose(g[1], t[1], rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(g[1], t[1])
    assert g[2:] == t[2:]


def test_quantize_dynamic_errors_and_edge_inputs():
    rng = np.random.default_rng(6)
    sd = _mlp_state(rng, 4, 3, 2)
    for lib in (torch, tapegrad):
        m = _mlp(lib, rng, 4, 3, 2)
        m.load_state_dict({key: lib.tensor(v) for key, v in sd.items()})
        q = lib.ao.quantization.quantize_dynamic(m, {lib.nn.Linear})
        with pytest.raises(RuntimeError, match="larger than or equal to 2"):
            q(lib.zeros(4))
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            q(lib.zeros(2, 4, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="packB should be equal to K: 5"):
            q(lib.zeros(2, 5))
        assert tuple(q(lib.zeros(0, 4)).shape) == (0, 2)
        with pytest.raises(ValueError, match="Don't know how to quantize with default settings"):
            lib.ao.quantization.quantize_dynamic(m, dtype=lib.float32)
        with pytest.raises(AssertionError, match="only supported dtypes for dynamic quantized"):
            lib.ao.quantization.quantize_dynamic(m, {lib.nn.Linear}, dtype=lib.quint8)
        root = lib.nn.Linear(4, 3)        # the model itself is not swapped, only its children
        assert type(lib.ao.quantization.quantize_dynamic(root)) is type(root)
    assert not hasattr(q, "qconfig") and not hasattr(q[0], "qconfig")


def test_quantize_dynamic_refuses_lstm_cell_rather_than_leaving_it_float():
    m = tapegrad.nn.Sequential(tapegrad.nn.LSTMCell(4, 3))
    with pytest.raises(NotImplementedError, match="nn.LSTMCell"):
        tapegrad.ao.quantization.quantize_dynamic(m)


def test_quantized_model_state_dict_save_load_roundtrip():
    rng = np.random.default_rng(8)
    sd = _mlp_state(rng, 6, 5, 3)
    x = rng.normal(0, 1, (4, 6)).astype(np.float32)
    m = _mlp(tapegrad, rng, 6, 5, 3)
    m.load_state_dict({key: tapegrad.tensor(v) for key, v in sd.items()})
    q = tapegrad.ao.quantization.quantize_dynamic(m, {tapegrad.nn.Linear})
    buf = io.BytesIO()
    tapegrad.save(q.state_dict(), buf)
    buf.seek(0)
    fresh = tapegrad.ao.quantization.quantize_dynamic(_mlp(tapegrad, rng, 6, 5, 3),
                                                      {tapegrad.nn.Linear})
    assert repr(fresh.load_state_dict(tapegrad.load(buf))) == "<All keys matched successfully>"
    np.testing.assert_array_equal(fresh(tapegrad.tensor(x)).numpy(),
                                  q(tapegrad.tensor(x)).numpy())
    # print_size_of_model: the quantized file is about a quarter of the float one (PyTorch's
    # files are 1073373 and 272909 bytes for this model; the archive formats differ a little)
    big = tapegrad.nn.Sequential(tapegrad.nn.Linear(512, 512), tapegrad.nn.ReLU(),
                                 tapegrad.nn.Linear(512, 10))
    sizes = []
    for model in (big, tapegrad.ao.quantization.quantize_dynamic(big, {tapegrad.nn.Linear})):
        out = io.BytesIO()
        tapegrad.save(model.state_dict(), out)
        sizes.append(out.getbuffer().nbytes)
    assert round(sizes[0] / 1e6, 2) == 1.07 and round(sizes[1] / 1e6, 2) == 0.27


def test_quantize_dynamic_deprecation_warning_as_pytorch():
    m = tapegrad.nn.Sequential(tapegrad.nn.Linear(4, 3))
    with pytest.warns(DeprecationWarning, match="torch.ao.quantization is deprecated") as record:
        tapegrad.ao.quantization.quantize_dynamic(m, {tapegrad.nn.Linear})
    assert len([w for w in record if w.category is DeprecationWarning]) == 2  # (and convert's)


def test_dynamic_linear_module_and_qconfig_surface():
    t_mod = torch.ao.nn.quantized.dynamic.Linear(4, 3)
    g_mod = tapegrad.ao.nn.quantized.dynamic.Linear(4, 3)
    assert repr(g_mod) == repr(t_mod)
    assert dict(g_mod.state_dict()._metadata) == dict(t_mod.state_dict()._metadata)
    assert (repr(tapegrad.ao.quantization.default_dynamic_qconfig.activation())
            == repr(torch.ao.quantization.default_dynamic_qconfig.activation()))
    with pytest.raises(Exception, match="should not be called for PlaceholderObserver"):
        tapegrad.ao.quantization.default_dynamic_qconfig.activation().calculate_qparams()
