"""Quantized tensors as learned-compression and quantisation tutorials use them (integers,
saturation, the activations and reductions PyTorch's QuantizedCPU backend has, the errors of
the ones it lacks), checked against PyTorch itself."""
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")]


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(torch), fn(tapegrad)


def _same_quantized(g, t):
    np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())
    assert (g.q_scale(), g.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    assert repr(g.dtype) == repr(t.dtype)
    assert tuple(g.shape) == tuple(t.shape)


def _outcome(lib, fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn(lib)
    except Exception as e:      # noqa: BLE001 (the exception itself is what is compared)
        return type(e).__name__, str(e).split(" If you are a Facebook")[0].split("  (Could")[0]


# Random values at random qparams: several thousand elements, so that the kernels' vector
# blocks and scalar remainders both run, and odd zero points make the rounding visible.
def _cases():
    rng = np.random.default_rng(0)
    for n in (7, 64, 100, 1000):
        for dtype, zp in (("quint8", 131), ("qint8", -5), ("qint8", 17)):
            x = (rng.standard_normal(n) * 4).astype(np.float32)
            yield x, float(rng.uniform(0.01, 0.1)), zp, dtype


CASES = list(_cases())


def _quantized(lib, x, scale, zp, dtype):
    return lib.quantize_per_tensor(lib.tensor(x), scale, zp, getattr(lib, dtype))


def test_qint32_saturates_at_its_maximum_not_its_minimum():
    # SILENT before: the float32 clamp rounded int32's max up to 2**31, which overflowed
    x = np.array([1e10, -1e10, 3e9, -3e9, 12.5], np.float32)
    t, g = _both(lambda lib: lib.quantize_per_tensor(lib.tensor(x), 1.0, 0, lib.qint32))
    _same_quantized(g, t)
    t, g = _both(lambda lib: lib.quantize_per_channel(
        lib.tensor(x.reshape(5, 1)), lib.tensor([1.0, 0.5, 2.0, 1.0, 1.0], dtype=lib.float64),
        lib.tensor([0, 3, 0, 0, 7]), 0, lib.qint32))
    np.testing.assert_array_equal(g.int_repr().numpy(), t.int_repr().numpy())


def test_qint32_add_saturates_like_pytorch():
    x = np.array([2e9, -2e9, 1.0], np.float32)

    def add(lib):
        f = lib.ao.nn.quantized.QFunctional()
        f.scale, f.zero_point = 1.0, 0
        q = lib.quantize_per_tensor(lib.tensor(x), 1.0, 0, lib.qint32)
        return f.add(q, q)
    t, g = _both(add)
    _same_quantized(g, t)


@pytest.mark.parametrize("op", ["sigmoid", "tanh", "hardsigmoid", "leaky_relu"])
def test_activations_bit_for_bit_with_their_output_qparams(op):
    def call(lib, q):
        if op == "hardsigmoid":
            return lib.nn.functional.hardsigmoid(q)
        if op == "leaky_relu":
            return lib.nn.functional.leaky_relu(q, 0.1)
        return getattr(lib, op)(q)
    for x, scale, zp, dtype in CASES:
        t, g = _both(lambda lib: call(lib, _quantized(lib, x, scale, zp, dtype)))
        _same_quantized(g, t)
    t, g = _both(lambda lib: getattr(_quantized(lib, x, 0.05, 3, "qint8"), op)()
                 if op in ("sigmoid", "tanh") else call(lib, _quantized(lib, x, 0.05, 3, "qint8")))
    _same_quantized(g, t)


@pytest.mark.parametrize("op", ["sigmoid", "tanh", "hardsigmoid"])
def test_activations_of_qint32_use_the_full_range(op):
    # (the integers of scale 2**-32 carry float32 rounding of the activation itself: compared
    # as values, the qparams exactly)
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    t, g = _both(lambda lib: getattr(lib.nn.functional, op)(
        lib.quantize_per_tensor(lib.tensor(x), 0.01, 5, lib.qint32)))
    assert (g.q_scale(), g.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    np.testing.assert_allclose(g.dequantize().numpy(), t.dequantize().numpy(), rtol=0,
                               atol=1e-7)
    assert g.int_repr().numpy()[3:].tolist() == t.int_repr().numpy()[3:].tolist()  # saturated


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((1, 2), True), (0, False),
                                         ((0, 2), False), (-1, True)])
def test_mean_keeps_the_qparams_bit_for_bit(dim, keepdim):
    rng = np.random.default_rng(1)
    for dtype, zp in (("quint8", 30), ("qint8", -3)):
        for _ in range(20):
            x = (rng.standard_normal((3, 5, int(rng.integers(1, 9)))) * 2).astype(np.float32)
            scale = float(rng.uniform(0.01, 0.1))

            def mean(lib):
                q = _quantized(lib, x, scale, zp, dtype)
                return q.mean() if dim is None else lib.mean(q, dim, keepdim=keepdim)
            t, g = _both(mean)
            _same_quantized(g, t)


def test_sort_argsort_topk_move_the_integers():
    # (ties in sort keep their order, as PyTorch's stable CPU sort; topk's tie order is
    # PyTorch's implementation detail, so its rows have none)
    x = np.array([[0.3, -1.2, 0.3, 2.0], [1.0, 0.0, -0.5, 0.25]], np.float32)
    y = np.array([[0.3, -1.2, 0.4, 2.0], [1.0, 0.0, -0.5, 0.25]], np.float32)
    for call in (lambda q: q.sort(), lambda q: q.sort(0, descending=True),
                 lambda q: torch_or_tg(q).sort(q, 1), lambda q: q.topk(2),
                 lambda q: q.topk(1, dim=0, largest=False)):
        data = y if call.__code__.co_names[-1:] == ("topk",) else x
        t, g = _both(lambda lib: call(_quantized(lib, data, 0.05, 7, "quint8")))
        _same_quantized(g.values, t.values)
        np.testing.assert_array_equal(g.indices.numpy(), t.indices.numpy())
    t, g = _both(lambda lib: _quantized(lib, x, 0.05, 7, "quint8").argsort(descending=True))
    np.testing.assert_array_equal(g.numpy(), t.numpy())


def torch_or_tg(q):
    return tapegrad if type(q).__module__.startswith("tapegrad") else torch


EXPRESSIONS = [
    "q * 2.0", "2.0 * q", "q + 1.5", "1.0 - q", "q / 2.0", "q + 1", "q * 2", "q + True",
    "q + lib.ones(1)", "lib.ones(1) + q", "q * lib.ones(1, dtype=lib.float64)",
    "q.float()", "q.double()", "q.half()", "q.int()", "q.long()", "q.byte()", "q.bool()",
    "q.to(lib.float32)", "q.to('cpu').q_scale()", "q.to(lib.qint8).q_scale()", "q.cpu().q_scale()",
    "q.type()", "q.type(lib.float32)", "q.abs()", "q.exp()", "q.argmax()", "-q", "q.add_(1)",
    "q.mul_(2.0)", "q.sub(1)", "q.zero_()", "q.clamp_(0, 1)",
    "lib.nn.functional.hardswish(q)", "lib.nn.functional.elu(q)", "q.no_such_method()",
    "lib.sigmoid(pc)", "pc.mean()", "pc.q_scale()", "lib.exp(q)", "q.square()", "q.any()",
    "lib.nn.functional.elu(q)", "q.clamp(0, 1).int_repr()",
    "lib.nn.functional.interpolate(q, scale_factor=2)",
    "lib.nn.functional.interpolate(q[None, None], scale_factor=2, mode='bicubic')",
    "lib.nn.functional.interpolate(q[None], scale_factor=2, mode='bicubic')",
    "lib.nn.functional.max_pool2d(q[None], 2, return_indices=True)",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_refused_and_allowed_calls_match_pytorch(expression):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def run(lib):
        q = _quantized(lib, x, 0.05, 3, "qint8")
        pc = lib.quantize_per_channel(lib.tensor(x), lib.tensor([0.1, 0.05, 0.02]),
                                      lib.tensor([0, 1, -2]), 0, lib.qint8)
        return eval(expression, {"lib": lib, "q": q, "pc": pc})
    t = _outcome(torch, run)
    g = _outcome(tapegrad, run)
    assert g[0] == t[0]
    if t[0] == "ok":
        assert str(g[1]).replace("tapegrad", "torch") == str(t[1])
    else:
        # PyTorch names the missing kernel's out= overload (aten::abs.out): the phrase up to
        # the kernel's name is the key
        assert g[1].split("'aten::")[0] == t[1].split("'aten::")[0]
        if "aten::" in t[1]:
            assert g[1].split("'aten::")[1].split("'")[0] == t[1].split("'aten::")[1].split("'")[0]
        else:
            assert g[1] == t[1]


POOLS = [
    ("avg_pool2d", dict(kernel_size=2)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", dict(kernel_size=3, stride=1, padding=1, count_include_pad=False)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=4)),
    ("adaptive_avg_pool2d", dict(output_size=1)),
    ("adaptive_avg_pool2d", dict(output_size=(3, 3))),
    ("adaptive_avg_pool2d", dict(output_size=(2, 5))),
    ("interpolate", dict(scale_factor=2, mode="nearest")),
    ("interpolate", dict(size=(5, 7), mode="nearest")),
    ("interpolate", dict(scale_factor=1.5, mode="nearest-exact")),
    ("max_pool2d", dict(kernel_size=2)),
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1)),
]


@pytest.mark.parametrize("fn,kwargs", POOLS)
def test_pooling_and_resizing_keep_the_qparams_bit_for_bit(fn, kwargs):
    # odd zero points: a window mean's tie rounds after the zero point is added, as PyTorch's
    rng = np.random.default_rng(3)
    # (a 3-d input is (C, H, W) to the pools, (N, C, L) to interpolate: no quantized 1-d kernel)
    shapes = ((2, 3, 6, 7), (1, 2, 9, 8)) + (((3, 5, 5),) if fn != "interpolate" else ())
    for shape in shapes:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        for dtype, zp in (("quint8", 131), ("qint8", 5), ("qint8", -4)):
            t, g = _both(lambda lib: getattr(lib.nn.functional, fn)(
                _quantized(lib, x, 0.03, zp, dtype), **kwargs))
            _same_quantized(g, t)


def test_bilinear_resize_of_a_quantized_tensor_is_within_one_at_ties():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 3, 6, 7)) * 2).astype(np.float32)
    for kwargs in (dict(scale_factor=2, mode="bilinear", align_corners=False),
                   dict(size=(5, 9), mode="bilinear", align_corners=True)):
        t, g = _both(lambda lib: lib.nn.functional.interpolate(
            _quantized(lib, x, 0.03, 7, "quint8"), **kwargs))
        assert (g.q_scale(), g.q_zero_point(), tuple(g.shape)) == \
            (t.q_scale(), t.q_zero_point(), tuple(t.shape))
        diff = np.abs(g.int_repr().numpy().astype(int) - t.int_repr().numpy().astype(int))
        assert diff.max() <= 1 and diff.mean() < 0.01


def test_static_quantized_model_with_pools_and_upsampling_runs():
    # a converted model whose forward reaches the quantized pools (it raised before)
    def run(lib):
        tq = lib.ao.quantization
        nn = lib.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
                self.conv, self.relu = nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()
                self.pool, self.up = nn.AvgPool2d(2), nn.Upsample(scale_factor=2)
                self.gap, self.mp = nn.AdaptiveAvgPool2d(1), nn.MaxPool2d(2)

            def forward(self, x):
                x = self.pool(self.relu(self.conv(self.quant(x))))
                return self.dequant(self.gap(self.mp(self.up(x))))
        m = Net()
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(0.2 * lib.cos(lib.arange(p.numel(), dtype=lib.float32) * (0.5 + 0.1 * i))
                        .view_as(p))
        m.eval()
        m.qconfig = tq.get_default_qconfig("x86")
        prepared = tq.prepare(m)
        x = lib.sin(lib.arange(2 * 3 * 8 * 8, dtype=lib.float32) / 5).view(2, 3, 8, 8)
        prepared(x)
        return tq.convert(prepared)(x)
    t, g = _both(run)
    assert tuple(g.shape) == tuple(t.shape) == (2, 4, 1, 1)
    np.testing.assert_allclose(g.numpy(), t.numpy(), atol=0.02)
