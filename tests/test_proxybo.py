"""Regressions found running training-technique scripts (federated averaging, continual
learning, distillation, pruning, quantisation-aware training, SWA, checkpoints) under tapegrad,
compared with PyTorch: torch.ao.quantization's observers and FakeQuantize, the quantized dtypes
and torch.qscheme values that configure them."""
import copy
import io
import pickle
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")

X = [[-1.0, 2.0, 3.0], [0.5, -0.25, 4.0]]


def _both(fn):
    """fn(lib) under PyTorch and tapegrad, warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(torch), fn(tapegrad)


def _assert_same_tensor(a, b):
    assert str(a.dtype) == str(b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_quantized_dtypes_and_qschemes_exist():
    for name in ("qint8", "quint8", "qint32", "quint4x2", "quint2x4"):
        t, g = getattr(torch, name), getattr(tapegrad, name)
        assert repr(g) == repr(t)
        assert g.itemsize == t.itemsize
        assert g.is_floating_point == t.is_floating_point and g.is_complex == t.is_complex
        assert (tapegrad.iinfo(g).min, tapegrad.iinfo(g).max, tapegrad.iinfo(g).bits) == \
            (torch.iinfo(t).min, torch.iinfo(t).max, torch.iinfo(t).bits)
        assert pickle.loads(pickle.dumps(g)) is g
        assert g != tapegrad.int8
    with pytest.raises(RuntimeError, match="isSignedType not supported for quantized types"):
        tapegrad.qint8.is_signed
    with pytest.raises(NotImplementedError, match="\"dtype\" not implemented for 'QInt8'"):
        tapegrad.iinfo(tapegrad.qint8).dtype
    for name in ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                 "per_channel_symmetric", "per_channel_affine_float_qparams"):
        g = getattr(tapegrad, name)
        assert repr(g) == repr(getattr(torch, name))
        assert isinstance(g, tapegrad.qscheme)
        assert pickle.loads(pickle.dumps(g)) is g
    assert repr(tapegrad.qscheme) == repr(torch.qscheme)
    with pytest.raises(TypeError, match="quantized"):
        tapegrad.zeros(2, dtype=tapegrad.qint8)


OBSERVERS = [
    ("MinMaxObserver", {}),
    ("MinMaxObserver", {"dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
    ("MinMaxObserver", {"dtype": "quint8", "qscheme": "per_tensor_symmetric"}),
    ("MinMaxObserver", {"reduce_range": True}),
    ("MinMaxObserver", {"quant_min": 0, "quant_max": 15}),
    ("MinMaxObserver", {"dtype": "quint8", "qscheme": "per_tensor_symmetric",
                        "quant_min": 0, "quant_max": 15}),
    ("MovingAverageMinMaxObserver", {}),
    ("MovingAverageMinMaxObserver", {"averaging_constant": 0.5, "dtype": "qint32"}),
    ("PerChannelMinMaxObserver", {}),
    ("PerChannelMinMaxObserver", {"ch_axis": 1, "dtype": "qint8",
                                  "qscheme": "per_channel_symmetric"}),
    ("PerChannelMinMaxObserver", {"qscheme": "per_channel_affine_float_qparams"}),
    ("MovingAveragePerChannelMinMaxObserver", {"ch_axis": -1}),
]


@pytest.mark.parametrize("cls,kwargs", OBSERVERS)
def test_observer_qparams_as_torch(cls, kwargs):
    def run(lib):
        kw = {k: getattr(lib, v) if k in ("dtype", "qscheme") else v for k, v in kwargs.items()}
        obs = getattr(lib.ao.quantization, cls)(**kw)
        fresh = obs.calculate_qparams()
        x = lib.tensor(X)
        assert obs(x) is x
        obs(x * 2.5)
        obs(lib.tensor([]))          # an empty tensor changes nothing
        return (repr(obs), fresh, obs.calculate_qparams(), obs.state_dict(),
                (obs.quant_min, obs.quant_max, repr(obs.dtype), repr(obs.qscheme)))
    t, g = _both(run)
    assert g[0] == t[0]
    for a, b in zip(t[1] + t[2], g[1] + g[2]):
        _assert_same_tensor(a, b)
    assert list(g[3]) == list(t[3])
    for k in t[3]:
        _assert_same_tensor(t[3][k], g[3][k])
    assert g[4] == t[4]


def test_observer_warns_before_first_observation():
    with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
        scale, zp = tapegrad.ao.quantization.MinMaxObserver().calculate_qparams()
    assert scale.tolist() == [1.0] and zp.tolist() == [0] and zp.dtype == tapegrad.int64


@pytest.mark.parametrize("make,match,exc", [
    (lambda q, lib: q.MinMaxObserver(qscheme=lib.per_channel_affine),
     "MinMaxObserver's qscheme only support", NotImplementedError),
    (lambda q, lib: q.PerChannelMinMaxObserver(qscheme=lib.per_tensor_affine),
     "PerChannelMinMaxObserver's qscheme only support", NotImplementedError),
    (lambda q, lib: q.MinMaxObserver(quant_min=1, quant_max=5),
     "must include 0", AssertionError),
    (lambda q, lib: q.MinMaxObserver(dtype=lib.float32),
     "Default Observer only works for", AssertionError),
    (lambda q, lib: q.MinMaxObserver(qscheme=lib.per_tensor_symmetric, reduce_range=True),
     "Cannot reduce range for symmetric", NotImplementedError),
    (lambda q, lib: q.FakeQuantize(quant_min=0, quant_max=300), "quant_max out of bound",
     AssertionError),
    (lambda q, lib: q.FakeQuantize(quant_min=5, quant_max=3),
     "quant_min must be less than or equal to quant_max", AssertionError),
])
def test_observer_and_fake_quantize_errors_as_torch(make, match, exc):
    for lib in (torch, tapegrad):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=match):
                make(lib.ao.quantization, lib)


def test_fake_quantize_module_forward_gradient_and_switches():
    def run(lib):
        q = lib.ao.quantization
        out = []
        fq = q.FakeQuantize()
        x = lib.tensor(X)
        out.append(fq(x))
        out += [fq.scale, fq.zero_point, fq.activation_post_process.min_val]
        r = repr(fq)
        fq.disable_observer()
        fq.disable_fake_quant()
        passed = fq(x) is x
        pc = q.FakeQuantize(observer=q.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                            quant_max=127, dtype=lib.qint8, qscheme=lib.per_channel_symmetric,
                            ch_axis=0)
        xx = (x * 3).requires_grad_()
        y = pc(xx)
        y.sum().backward()
        out += [y, xx.grad, pc.scale, pc.zero_point]
        fresh = q.FakeQuantize(observer=q.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                               quant_max=127, dtype=lib.qint8,
                               qscheme=lib.per_channel_symmetric, ch_axis=0)
        fresh.load_state_dict(pc.state_dict())     # per-channel shapes taken from the file
        out += [fresh.scale, fresh.activation_post_process.max_val]
        return out, r, repr(pc), passed, y.grad_fn.name(), list(pc.state_dict())
    t, g = _both(run)
    for a, b in zip(t[0], g[0]):
        _assert_same_tensor(a, b)
    assert g[1:] == t[1:]


def test_default_fake_quants_in_a_qat_loop_as_torch():
    """A hand-written QAT linear layer: per-channel weight fake quant, per-tensor activation
    fake quant; observers frozen after two steps, fake quant off after three (model.apply)."""
    def run(lib):
        q = lib.ao.quantization
        nn = lib.nn

        class QLinear(nn.Linear):
            def __init__(self, *a):
                super().__init__(*a)
                self.wq = q.default_per_channel_weight_fake_quant()
                self.aq = q.default_fake_quant()

            def forward(self, inp):
                return self.aq(nn.functional.linear(inp, self.wq(self.weight), self.bias))

        m = nn.Sequential(QLinear(3, 4), nn.ReLU(), QLinear(4, 2))
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.cos(lib.arange(p.numel(), dtype=lib.float32) * 1.3 + i).view_as(p))
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        losses = []
        x = lib.tensor(X)
        for step in range(4):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if step == 1:
                m.apply(q.disable_observer)
            if step == 2:
                m.apply(q.disable_fake_quant)
        buf = io.BytesIO()
        lib.save(m.state_dict(), buf)
        buf.seek(0)
        m2 = copy.deepcopy(m)
        m2.load_state_dict(lib.load(buf))
        return (losses, [p.detach() for p in m.parameters()], m[0].wq.scale, m2[2].aq.zero_point,
                m[0].wq.fake_quant_enabled, sorted(m.state_dict()))
    t, g = _both(run)
    np.testing.assert_allclose(g[0], t[0], rtol=1e-6)
    for a, b in zip(t[1], g[1]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(t[2:5], g[2:5]):
        _assert_same_tensor(a, b)
    assert g[5] == t[5]


def test_with_args_factories_and_torch_quantization_alias():
    q = tapegrad.ao.quantization
    assert tapegrad.quantization.FakeQuantize is q.FakeQuantize
    assert tapegrad.ao.quantization.observer.MinMaxObserver is q.MinMaxObserver
    obs = q.MinMaxObserver.with_args(dtype=tapegrad.qint8)()
    assert obs.dtype is tapegrad.qint8 and (obs.quant_min, obs.quant_max) == (-128, 127)
    fq = q.FakeQuantize.with_args(observer=q.MinMaxObserver)()
    assert type(fq.activation_post_process) is q.MinMaxObserver
    assert (q.default_observer().quant_min, q.default_observer().quant_max) == (0, 127)
    w = q.default_weight_fake_quant()
    assert w.qscheme is tapegrad.per_tensor_symmetric and w.dtype is tapegrad.qint8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = q.default_fake_quant()
    assert (a.quant_min, a.quant_max) == (0, 127)     # reduce_range halves the range


def test_fake_quantize_learnable_per_tensor_affine_as_torch():
    """LSQ: the scale and zero point are Parameters learned with the weights."""
    def run(lib):
        f = lib._fake_quantize_learnable_per_tensor_affine
        x = lib.tensor([[0.1, 0.26, 3.0], [-1.0, 0.05, 0.35]], requires_grad=True)
        s = lib.tensor([0.1], requires_grad=True)
        z = lib.tensor([2.4], requires_grad=True)
        out = []
        for qmin, qmax, gf in ((0, 15, 1.0), (-8, 7, 0.5)):
            x.grad = s.grad = z.grad = None
            y = f(x, s, z, qmin, qmax, gf)
            (y * lib.arange(6.0).view(2, 3)).sum().backward()
            out += [y, x.grad, s.grad, z.grad]
        out.append(f(x, s, lib.tensor([30.0]), 0, 15, 1.0))     # zero point clamped into range
        out.append(f(x.double(), s, z, 0, 15))                  # float64 quantises in float64
        return out, y.grad_fn.name()
    t, g = _both(run)
    assert g[1] == t[1]
    for a, b in zip(t[0], g[0]):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    x = tapegrad.tensor([0.3, -0.2], requires_grad=True)
    s, z = tapegrad.tensor([0.1], requires_grad=True), tapegrad.tensor([0.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="quantization range should include 0"):
        tapegrad._fake_quantize_learnable_per_tensor_affine(x, s, z, 2, 15, 1.0).sum().backward()
    with pytest.raises(RuntimeError, match="ScalarType::Float"):
        tapegrad._fake_quantize_learnable_per_tensor_affine(x.double(), s, z, 0, 15).sum().backward()


def test_fake_quantize_learnable_gradients_match_the_ste_composition():
    # LSQ's gradients are those of the straight-through composition
    #   y = (clamp(round_ste(x / s) + z, qmin, qmax) - z) * s,  round_ste(v) = v + (round(v) - v).detach()
    # (no finite-difference check applies: round's true derivative is 0 almost everywhere);
    # the composition is differentiated here by tapegrad's own autograd in float64
    xs = [0.123, -0.31, 0.77, 2.9, -0.52]
    w = [1.0, 2.0, -1.0, 0.5, 3.0]
    x = tapegrad.tensor(xs, requires_grad=True)
    s = tapegrad.tensor([0.1], requires_grad=True)
    z = tapegrad.tensor([1.0], requires_grad=True)
    y = tapegrad._fake_quantize_learnable_per_tensor_affine(x, s, z, -4, 12, 0.5)
    (y * tapegrad.tensor(w)).sum().backward()
    x2 = tapegrad.tensor(xs, dtype=tapegrad.float64, requires_grad=True)
    s2 = tapegrad.tensor([0.1], dtype=tapegrad.float64, requires_grad=True)
    z2 = tapegrad.tensor([1.0], dtype=tapegrad.float64, requires_grad=True)
    v = x2 / s2
    q = tapegrad.clamp(v + (v.round() - v).detach() + z2, -4, 12)
    y2 = (q - z2) * s2
    (y2 * tapegrad.tensor(w, dtype=tapegrad.float64)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), y2.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), 0.5 * s2.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(z.grad.numpy(), 0.5 * z2.grad.numpy(), rtol=1e-5, atol=1e-7)
