"""Eager-mode static quantization and model-compression recipes, checked against PyTorch:
HistogramObserver's qparams, fuse_modules, prepare / convert of QuantStub / Conv2d (+BN+ReLU) /
Linear (+ReLU) models with the integers PyTorch's x86 kernels produce, and PyTorch's errors."""
import numpy as np
import pytest

import tapegrad

# PyTorch (and tapegrad with it) warns that quantized tensors and eager-mode quantization are
# deprecated, on every call.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _torch():
    return pytest.importorskip("torch")


def _fill(model, lib):
    # Deterministic weights (no random stream), the same under both libraries.
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_(lib.tensor(np.cos(np.arange(n) * 0.7 + i).reshape(tuple(p.shape)) * 0.3,
                               dtype=lib.float32))


def _histogram_qparams(lib, batches, **kwargs):
    obs = lib.ao.quantization.HistogramObserver(**kwargs)
    for batch in batches:
        obs(lib.tensor(batch, dtype=lib.float32))
    scale, zero_point = obs.calculate_qparams()
    return (float(scale), int(zero_point), float(obs.min_val), float(obs.max_val),
            obs.histogram.numpy().copy())


@pytest.mark.parametrize("kwargs", [{}, {"reduce_range": True}, {"bins": 256},
                                    {"dtype": "qint8", "qscheme": "per_tensor_symmetric"}])
def test_histogram_observer_matches_pytorch(kwargs):
    torch = _torch()
    rng = np.random.default_rng(0)
    # widening ranges (the histogram is re-spread), an outlier, a heavy tail
    batches = [rng.normal(size=300) * (1 + k) + (5.0 if k == 2 else 0.0) for k in range(4)]
    batches.append(np.exp(rng.normal(size=200)))
    results = []
    for lib in (torch, tapegrad):
        args = {k: getattr(lib, v) if isinstance(v, str) else v for k, v in kwargs.items()}
        results.append(_histogram_qparams(lib, batches, **args))
    (ts, tz, tmin, tmax, thist), (gs, gz, gmin, gmax, ghist) = results
    assert (tz, tmin, tmax) == (gz, gmin, gmax)
    assert gs == pytest.approx(ts, rel=1e-6)
    np.testing.assert_allclose(ghist, thist, rtol=1e-4, atol=1e-3)


def test_histogram_observer_errors_and_defaults():
    obs = tapegrad.ao.quantization.HistogramObserver()
    scale, zero_point = obs.calculate_qparams()     # unobserved: PyTorch's defaults
    assert float(scale) == 1.0 and int(zero_point) == 0
    with pytest.raises(NotImplementedError, match="per_tensor_symmetric"):
        tapegrad.ao.quantization.HistogramObserver(qscheme=tapegrad.per_channel_affine)
    from tapegrad.ao.quantization.observer import HistogramObserver
    assert HistogramObserver is tapegrad.ao.quantization.HistogramObserver


def _conv_model(lib):
    nn, tq = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(4, 3, 3, stride=2, bias=False)
            self.fc = nn.Linear(3 * 2 * 2, 5)
            self.relu2 = nn.ReLU()
            self.fc2 = nn.Linear(5, 2)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.conv2(self.relu(self.bn(self.conv(self.quant(x)))))
            x = self.fc2(self.relu2(self.fc(lib.flatten(x, 1))))
            return self.dequant(x)

    model = Net()
    _fill(model, lib)
    with lib.no_grad():
        model.bn.running_mean.copy_(lib.linspace(-0.1, 0.1, 4))
        model.bn.running_var.copy_(lib.linspace(0.5, 2.0, 4))
    return model.eval()


def _static_pipeline(lib, qconfig_name):
    tq = lib.ao.quantization
    model = tq.fuse_modules(_conv_model(lib), [["conv", "bn", "relu"], ["fc", "relu2"]])
    model.qconfig = (tq.default_qconfig if qconfig_name == "default"
                     else tq.get_default_qconfig(qconfig_name))
    prepared = tq.prepare(model)
    grid = np.sin(np.arange(3 * 2 * 6 * 6) * 0.37).reshape(3, 2, 6, 6)
    for k in range(3):
        prepared(lib.tensor(grid * (k + 1), dtype=lib.float32))
    quantized = tq.convert(prepared)
    x = lib.tensor(grid[:2] * 1.5, dtype=lib.float32)
    inner = quantized.conv(quantized.quant(x))
    return quantized, inner, quantized(x)


@pytest.mark.parametrize("qconfig_name", ["x86", "fbgemm", "qnnpack", "default"])
def test_static_quantization_matches_pytorch(qconfig_name):
    torch = _torch()
    tq_model, tq_inner, tq_out = _static_pipeline(torch, qconfig_name)
    tg_model, tg_inner, tg_out = _static_pipeline(tapegrad, qconfig_name)
    assert _same_layout(tg_model, tq_model)
    assert tg_inner.q_scale() == pytest.approx(tq_inner.q_scale(), rel=1e-6)
    assert tg_inner.q_zero_point() == tq_inner.q_zero_point()
    # the integers of a quantized conv + relu output, as PyTorch's kernel computes them
    diff = np.abs(tg_inner.int_repr().numpy().astype(int) - tq_inner.int_repr().numpy())
    assert diff.max() <= 1 and (diff != 0).mean() < 0.01
    np.testing.assert_allclose(tg_out.numpy(), tq_out.numpy(), atol=tq_model.fc2.scale * 1.01)
    for name in ("conv", "conv2", "fc", "fc2"):
        np.testing.assert_array_equal(getattr(tg_model, name).weight().int_repr().numpy(),
                                      getattr(tq_model, name).weight().int_repr().numpy())


def _same_layout(a, b) -> bool:
    # reprs equal up to the last digits of the printed float scales
    strip = __import__("re").compile(r"scale=[0-9.e-]+")
    return strip.sub("", repr(a)) == strip.sub("", repr(b))


def test_static_quantized_linear_relu_integers_exact():
    torch = _torch()
    outs = []
    for lib in (torch, tapegrad):
        x = lib.tensor(np.linspace(-3, 3, 40).reshape(5, 8), dtype=lib.float32)
        w = lib.tensor(np.cos(np.arange(48)).reshape(6, 8), dtype=lib.float32)
        qx = lib.quantize_per_tensor(x, 0.025, 120, lib.quint8)
        qw = lib.quantize_per_channel(w, lib.tensor([0.01, 0.02, 0.004, 0.008, 0.03, 0.005],
                                                    dtype=lib.float64),
                                      lib.zeros(6, dtype=lib.long), 0, lib.qint8)
        for module_type in (lib.ao.nn.quantized.Linear, lib.ao.nn.intrinsic.quantized.LinearReLU):
            layer = module_type(8, 6)
            layer.set_weight_bias(qw, lib.linspace(-0.5, 0.5, 6))
            layer.scale, layer.zero_point = 0.05, 100
            outs.append(layer(qx).int_repr().numpy())
    np.testing.assert_array_equal(outs[2], outs[0])
    np.testing.assert_array_equal(outs[3], outs[1])
    assert outs[1].min() == 100      # fused ReLU clamps at the zero point


def test_fuse_modules_folds_and_checks():
    nn, tq = tapegrad.nn, tapegrad.ao.quantization
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
    _fill(model, tapegrad)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tq.fuse_modules(model, ["0", "1", "2"])
    qat = tq.fuse_modules_qat(model, ["0", "1", "2"])
    assert type(qat[0]).__name__ == "ConvBnReLU2d" and isinstance(qat[1], nn.Identity)
    model.eval()
    fused = tq.fuse_modules(model, ["0", "1", "2"])
    assert type(fused[0]).__name__ == "ConvReLU2d"
    x = tapegrad.linspace(-1, 1, 50).reshape(2, 1, 5, 5)
    np.testing.assert_allclose(fused(x).detach().numpy(), model(x).detach().numpy(),
                               atol=1e-6)
    with pytest.raises(AssertionError, match="did not find fuser method"):
        tq.fuse_modules(model, ["2", "0"])
    with pytest.raises(AssertionError, match="Incorrect types"):
        tapegrad.ao.nn.intrinsic.ConvReLU2d(nn.Linear(1, 1), nn.ReLU())


def test_convert_refuses_to_leave_observed_modules_in_float():
    nn, tq = tapegrad.nn, tapegrad.ao.quantization
    model = nn.Sequential(tq.QuantStub(), nn.Linear(4, 4), nn.LayerNorm(4), tq.DeQuantStub())
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)
    assert hasattr(prepared[2], "activation_post_process")
    assert not hasattr(prepared[3], "activation_post_process")
    prepared(tapegrad.ones(2, 4))
    with pytest.raises(NotImplementedError, match="LayerNorm"):
        tq.convert(prepared)


def test_quantized_engine_setting():
    quantized = tapegrad.backends.quantized
    assert quantized.engine == "x86" and "fbgemm" in quantized.supported_engines
    quantized.engine = "fbgemm"
    try:
        assert quantized.engine == "fbgemm"
        with pytest.raises(RuntimeError, match="not a valid value for quantized engine"):
            quantized.engine = "nope"
    finally:
        quantized.engine = "x86"


def _qat_run(lib, backend):
    nn, tq = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv = nn.Conv2d(1, 3, 3)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(3 * 3 * 3, 2)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(lib.flatten(x, 1)))

    net = Net()
    _fill(net, lib)
    net.qconfig = tq.get_default_qat_qconfig(backend)
    tq.fuse_modules_qat(net, [["conv", "relu"]], inplace=True)
    qat = tq.prepare_qat(net.train())
    opt = lib.optim.SGD(qat.parameters(), lr=0.05)
    x = lib.tensor(np.sin(np.arange(2 * 25) * 0.9).reshape(2, 1, 5, 5), dtype=lib.float32)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = qat(x).pow(2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grad = qat.conv.weight.grad.numpy().copy()
    fq = qat.conv.weight_fake_quant
    fq_qparams = (fq.scale.numpy().copy(), fq.zero_point.numpy().copy())
    act = qat.fc.activation_post_process
    act_qparams = (float(act.scale), int(act.zero_point))
    quantized = tq.convert(qat.eval())
    return losses, grad, fq_qparams, act_qparams, quantized(x).numpy(), repr(quantized)


@pytest.mark.parametrize("backend", ["x86", "qnnpack"])
def test_quantization_aware_training_matches_pytorch(backend):
    torch = _torch()
    expected = _qat_run(torch, backend)
    actual = _qat_run(tapegrad, backend)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-5)
    np.testing.assert_allclose(actual[1], expected[1], rtol=1e-4, atol=1e-6)
    # the fused fake quantizer's qparams are ATen's choose_qparams (symmetric: max(|min|/128,
    # max/127)), not the observers' formula
    np.testing.assert_allclose(actual[2][0], expected[2][0], rtol=1e-6)
    np.testing.assert_array_equal(actual[2][1], expected[2][1])
    assert actual[3][1] == expected[3][1]
    assert actual[3][0] == pytest.approx(expected[3][0], rel=1e-6)
    np.testing.assert_allclose(actual[4], expected[4], rtol=1e-5, atol=1e-6)
    assert _same_layout_text(actual[5], expected[5])


def _same_layout_text(a: str, b: str) -> bool:
    strip = __import__("re").compile(r"scale=[0-9.e-]+")
    return strip.sub("", a) == strip.sub("", b)


def test_prepare_qat_errors():
    nn, tq = tapegrad.nn, tapegrad.ao.quantization
    model = nn.Sequential(nn.Linear(2, 2))
    model.qconfig = tq.get_default_qat_qconfig("x86")
    with pytest.raises(AssertionError, match="training mode"):
        tq.prepare_qat(model.eval())
    conv_bn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    conv_bn.qconfig = tq.get_default_qat_qconfig("x86")
    fused = tq.fuse_modules_qat(conv_bn, ["0", "1"])
    with pytest.raises(NotImplementedError, match="ConvBn2d"):
        tq.prepare_qat(fused)
    with pytest.raises(AssertionError, match="qconfig must be provided"):
        tapegrad.ao.nn.qat.Linear(2, 2)


def test_quantized_module_input_errors():
    nnq = tapegrad.ao.nn.quantized
    with pytest.raises(NotImplementedError, match="quantized::conv2d.new"):
        nnq.Conv2d(1, 2, 3)(tapegrad.ones(1, 1, 4, 4))
    qint8 = tapegrad.quantize_per_tensor(tapegrad.ones(1, 2), 1.0, 0, tapegrad.qint8)
    with pytest.raises(RuntimeError, match="Expected input data type QUInt8 but got QInt8"):
        nnq.Linear(2, 2)(qint8)
    model = tapegrad.nn.Sequential(tapegrad.nn.Linear(2, 2))
    model[0].qconfig = tapegrad.ao.quantization.default_qconfig
    with pytest.raises(AttributeError, match="activation_post_process"):
        tapegrad.ao.quantization.convert(model)      # never prepared: no observer


def test_qconfig_repr_names_pytorch_classes():
    torch = _torch()
    for name in ("get_default_qconfig", "get_default_qat_qconfig"):
        for backend in ("x86", "qnnpack", "onednn"):
            expected = repr(getattr(torch.ao.quantization, name)(backend))
            assert repr(getattr(tapegrad.ao.quantization, name)(backend)) == expected
    assert repr(tapegrad.ao.quantization.default_qat_qconfig) == \
        repr(torch.ao.quantization.default_qat_qconfig)
