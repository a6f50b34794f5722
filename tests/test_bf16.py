"""bfloat16 tensors (tapegrad/_bfloat16.py) against PyTorch's CPU bfloat16: values bit for bit
for elementwise ops, within one bfloat16 ulp for reductions and matmuls, dtypes by PyTorch's
promotion, reprs, conversions, modules, optimizers and checkpoints."""
import io
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

# (PyTorch's vectorised loops and their scalar tails round some ops differently; 64 * 64
# elements keep every element in the vectorised loop)
SHAPE = (64, 64)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    b = rng.standard_normal(SHAPE).astype(np.float32)
    return a, b


def _bits(t):
    return t.detach().float().numpy().view(np.uint32)


def _assert_same(theirs, ours, ulps=0, atol=0.0):
    """Bit for bit, or within `ulps` bfloat16 ulps (or `atol`) of PyTorch's."""
    assert str(ours.dtype) == str(theirs.dtype)
    if ulps == 0:
        np.testing.assert_array_equal(_bits(ours), _bits(theirs))
    else:
        # bfloat16 bits as integers: the distance in ulps (same-sign values)
        t = _bits(theirs).astype(np.int64) >> 16
        o = _bits(ours).astype(np.int64) >> 16
        near = np.abs(theirs.detach().float().numpy() - ours.detach().float()._array) <= atol
        assert (near | (np.abs(t - o) <= ulps)).all()


UNARY = ["exp", "log", "tanh", "sigmoid", "relu", "sqrt", "abs", "sin", "cos", "neg",
         "reciprocal", "rsqrt", "log1p", "expm1", "erf", "square", "sign", "floor", "ceil",
         "round", "trunc", "atan", "asinh", "log2", "exp2"]
POSITIVE = {"log", "sqrt", "rsqrt", "log1p", "log2"}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_are_bit_identical(name):
    a, _ = _inputs()
    if name in POSITIVE:
        a = np.abs(a) + 0.01
    theirs = getattr(torch, name)(torch.tensor(a).bfloat16())
    ours = getattr(tg, name)(tg.tensor(a).bfloat16())
    _assert_same(theirs, ours)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "pow",
                                  "atan2", "fmod", "remainder"])
def test_binary_ops_are_bit_identical(name):
    a, b = _inputs(1)
    if name == "pow":
        a, b = np.abs(a), np.abs(b)
    theirs = getattr(torch, name)(torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16())
    ours = getattr(tg, name)(tg.tensor(a).bfloat16(), tg.tensor(b).bfloat16())
    _assert_same(theirs, ours)


@pytest.mark.parametrize("expr", [
    lambda x, y: x + 0.1, lambda x, y: x - 0.37, lambda x, y: 1 - x, lambda x, y: x * 1.1,
    lambda x, y: x / 3.3, lambda x, y: x + y * 2, lambda x, y: x.add(y, alpha=0.3),
    lambda x, y: x.sub(y, alpha=1.7), lambda x, y: x + 257, lambda x, y: (x ** 2).clamp(0.5, 2),
    lambda x, y: torch_or_tg(x).where(x > 0.1, x, y),
    # SILENT before: these computed with the number itself, PyTorch with it cast to bfloat16
    # (x > 0.2 is False for x = bfloat16(0.2)), or as its Python composition of rounded ops
    lambda x, y: x > 0.2, lambda x, y: x == 0.2, lambda x, y: x.le(0.3),
    lambda x, y: x.abs() ** 0.3, lambda x, y: 0.3 ** x, lambda x, y: x.fmod(0.3),
    lambda x, y: x.remainder(0.3), lambda x, y: 0.3 / x,
    lambda x, y: torch_or_tg(x).nn.functional.softsign(x),
    lambda x, y: torch_or_tg(x).nn.functional.tanhshrink(x),
])
def test_scalar_operands_round_as_pytorch(expr):
    # add and sub cast their numbers (other, alpha) to bfloat16 first; mul and div do not
    a, b = _inputs(2)
    theirs = expr(torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16())
    ours = expr(tg.tensor(a).bfloat16(), tg.tensor(b).bfloat16())
    _assert_same(theirs, ours)


def torch_or_tg(x):
    return torch if isinstance(x, torch.Tensor) else tg


@pytest.mark.parametrize("name", ["silu", "softplus", "elu", "leaky_relu", "hardtanh", "mish",
                                  "logsigmoid", "relu6", "hardswish", "hardsigmoid", "selu",
                                  "celu"])
def test_activations_are_bit_identical(name):
    a, _ = _inputs(3)
    theirs = getattr(torch.nn.functional, name)(torch.tensor(a).bfloat16())
    ours = getattr(tg.nn.functional, name)(tg.tensor(a).bfloat16())
    _assert_same(theirs, ours)


@pytest.mark.parametrize("fn", [
    lambda lib, x, y: x.sum(), lambda lib, x, y: x.mean(1), lambda lib, x, y: x.sum(0),
    lambda lib, x, y: x @ y.T, lambda lib, x, y: lib.nn.functional.softmax(x, -1),
    lambda lib, x, y: lib.nn.functional.log_softmax(x, -1),
    lambda lib, x, y: lib.nn.functional.layer_norm(x, (64,)),
    lambda lib, x, y: lib.nn.functional.mse_loss(x, y),
    lambda lib, x, y: lib.nn.functional.cross_entropy(x, lib.arange(64)),
    lambda lib, x, y: lib.nn.functional.linear(x, y, y[0]),
    lambda lib, x, y: x.max(1).values, lambda lib, x, y: x.var(),
])
def test_reductions_and_matmuls_within_one_ulp(fn):
    a, b = _inputs(4)
    theirs = fn(torch, torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16())
    ours = fn(tg, tg.tensor(a).bfloat16(), tg.tensor(b).bfloat16())
    # (PyTorch's bfloat16 log_softmax loses a few ulps where its result is near 0, at each
    # row's maximum: there this one is the correctly rounded value, within 0.004 of it)
    _assert_same(theirs, ours, ulps=1, atol=0.004)


def test_views_indexing_and_in_place_ops_stay_bfloat16():
    a, b = _inputs(5)
    for lib in (torch, tg):
        x, y = lib.tensor(a).bfloat16(), lib.tensor(b).bfloat16()
        x.add_(y, alpha=0.3)
        x.mul_(1.1)
        x[0] = 0.123
        x[1:3] += 0.01
        x.clamp_(-2, 2)
        out = lib.cat([x.T.reshape(-1)[:100], x[2:4, ::3].flatten(), lib.stack([x[5], y[5]])[1]])
        if lib is torch:
            theirs = (x, out)
        else:
            ours = (x, out)
    for t, o in zip(theirs, ours):
        _assert_same(t, o)


PROMOTION_OPERANDS = [
    lambda lib: lib.ones(2, dtype=lib.bfloat16), lambda lib: lib.tensor(1.0, dtype=lib.bfloat16),
    lambda lib: lib.ones(2), lambda lib: lib.tensor(1.0), lambda lib: lib.ones(2, dtype=lib.float16),
    lambda lib: lib.ones(2, dtype=lib.float64), lambda lib: lib.ones(2, dtype=lib.int64),
    lambda lib: lib.tensor(2), lambda lib: lib.ones(2, dtype=lib.bool), lambda lib: 1.5,
    lambda lib: 3,
]


@pytest.mark.parametrize("i", range(len(PROMOTION_OPERANDS)))
@pytest.mark.parametrize("j", range(2))
def test_promotion_matches_result_type(i, j):
    make_a, make_b = PROMOTION_OPERANDS[j], PROMOTION_OPERANDS[i]
    want = torch.result_type(make_a(torch), make_b(torch))
    assert str(tg.result_type(make_a(tg), make_b(tg))) == str(want)
    assert str((make_a(tg) + make_b(tg)).dtype) == str(want)
    assert str((make_b(tg) * make_a(tg)).dtype) == str(want)
    assert (make_a(tg) < make_b(tg)).dtype is tg.bool


def test_promote_types():
    for other in ("bfloat16", "float16", "float32", "float64", "int32", "bool", "complex64"):
        want = torch.promote_types(torch.bfloat16, getattr(torch, other))
        assert str(tg.promote_types(tg.bfloat16, getattr(tg, other))) == str(want)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([0.1, 1 / 3, 100.7], dtype=lib.bfloat16),
    lambda lib: lib.zeros(2, 3, dtype=lib.bfloat16),
    lambda lib: lib.ones(2, requires_grad=True, dtype=lib.bfloat16) * 2,
    lambda lib: lib.nn.Parameter(lib.tensor([1.5, -2.25], dtype=lib.bfloat16)),
    lambda lib: lib.tensor(3.14159, dtype=lib.bfloat16),
    lambda lib: lib.arange(0, 1, 0.1, dtype=lib.bfloat16),
    lambda lib: lib.full((2,), 0.1, dtype=lib.bfloat16),
])
def test_reprs_match_torch(make):
    assert repr(make(tg)) == repr(make(torch))
    assert str(make(tg)) == str(make(torch))


def test_conversions_and_queries():
    for lib in (torch, tg):
        x = lib.tensor([0.1, -2.5, 1e5], dtype=lib.bfloat16)
        got = (str(x.dtype), x.element_size(), x.itemsize, x.nbytes, x.is_floating_point(),
               x.type(), x.tolist(), x[0].item(), float(x[1]), str(x.float().dtype),
               str(x.double().dtype), str(x.half().dtype), str(x.to(lib.float32).dtype),
               str(x.bfloat16().dtype), x.bfloat16() is x, x.to(lib.bfloat16) is x,
               str(lib.ones(2).bfloat16().dtype), str(lib.ones(2).type(lib.bfloat16).dtype),
               str(lib.zeros_like(x).dtype), str(x.new_zeros(3).dtype),
               str(lib.zeros_like(x, dtype=lib.float32).dtype), str(x.sum(dtype=lib.float32).dtype),
               str(x.argmax().dtype), lib.finfo(x.dtype).eps)
        if lib is torch:
            theirs = got
        else:
            ours = got
    assert ours == theirs
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        tg.ones(2, dtype=tg.bfloat16).numpy()
    for make in (lambda lib: lib.rand(3, dtype=lib.bfloat16),
                 lambda lib: lib.randn(3, dtype=lib.bfloat16),
                 lambda lib: lib.empty(3, dtype=lib.bfloat16),
                 lambda lib: lib.linspace(0, 1, 5, dtype=lib.bfloat16)):
        t = make(tg)
        assert t.dtype is tg.bfloat16 and not (t._array.view(np.uint32) & 0xFFFF).any()


def test_a_conversion_is_a_copy_with_pytorchs_grad_fn():
    x = tg.ones(3, requires_grad=True)
    b = x.to(tg.bfloat16)
    assert b.dtype is tg.bfloat16 and b.grad_fn.name() == "ToCopyBackward0"
    b[0] = 5              # the float32 source is not written
    assert x.tolist() == [1.0, 1.0, 1.0]
    y = tg.ones(3, dtype=tg.bfloat16, requires_grad=True)
    f = y.float()
    assert f.dtype is tg.float32 and f.grad_fn.name() == "ToCopyBackward0"
    (f * 0.1).sum().backward()
    assert y.grad.dtype is tg.bfloat16 and y.grad.tolist() == [0.10009765625] * 3


def test_mixed_matmul_is_refused_as_pytorch():
    x = tg.ones(2, 3, dtype=tg.bfloat16)
    with pytest.raises(RuntimeError, match=r"expected m1 and m2 to have the same dtype, but "
                                           r"got: c10::BFloat16 != float"):
        x @ tg.ones(3, 3)
    with pytest.raises(NotImplementedError, match="not implemented for 'BFloat16'"):
        tg.tril_indices(3, 3, dtype=tg.bfloat16)


def _train(lib, optimizer, steps=20):
    rng = np.random.default_rng(0)
    X = lib.tensor(rng.standard_normal((32, 8)).astype(np.float32)).to(lib.bfloat16)
    Y = lib.tensor(rng.integers(0, 3, 32))
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 3))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    model = model.to(lib.bfloat16)
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_mlp_trains_in_bfloat16_as_pytorch(optimizer):
    theirs, their_losses = _train(torch, optimizer)
    ours, our_losses = _train(tg, optimizer)
    # PyTorch rounds each backward op's result to bfloat16; the sweep rounds the leaves' grads
    np.testing.assert_allclose(our_losses, their_losses, rtol=0.05)
    assert our_losses[-1] < our_losses[0] * 0.85
    for p in ours.parameters():
        assert p.dtype is tg.bfloat16 and p.grad.dtype is tg.bfloat16
        assert isinstance(p, tg.nn.Parameter)
        # SILENT before: the optimizer's numpy update left float32 values under bfloat16
        assert not (p._array.view(np.uint32) & 0xFFFF).any()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        # (Adam's steps are ~lr whatever the gradient's size: where a gradient is near zero its
        # last bits can flip a step's sign, so single weights may differ by a few lr)
        diff = np.abs(p.detach().float()._array - q.detach().float().numpy())
        assert np.median(diff) < 0.01 and diff.max() < 0.25


def test_modules_convert_in_place_and_back():
    m = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4))
    weight = m[0].weight
    m.to(tg.bfloat16)
    assert m[0].weight is weight and weight.dtype is tg.bfloat16
    assert m[1].running_mean.dtype is tg.bfloat16
    out = m(tg.randn(5, 3).bfloat16())
    assert out.dtype is tg.bfloat16
    m.float()
    assert weight.dtype is tg.float32 and type(weight) is tg.nn.Parameter
    conv = tg.nn.Conv2d(2, 3, 3).bfloat16()
    assert conv(tg.randn(1, 2, 5, 5).bfloat16()).dtype is tg.bfloat16
    p = tg.nn.Parameter(tg.ones(2))
    p.data = tg.ones(2, dtype=tg.bfloat16)
    assert p.dtype is tg.bfloat16


def test_checkpoints_round_trip_with_pytorch(tmp_path):
    x = tg.tensor([0.1, -3.0, 1e5], dtype=tg.bfloat16)
    model = tg.nn.Linear(2, 2).bfloat16()
    buf = io.BytesIO()
    tg.save({"x": x, "sd": model.state_dict()}, buf)
    buf.seek(0)
    theirs = torch.load(buf)
    assert theirs["x"].dtype == torch.bfloat16 and theirs["x"].tolist() == x.tolist()
    assert theirs["sd"]["weight"].dtype == torch.bfloat16
    buf.seek(0)
    back = tg.load(buf)
    assert back["x"].dtype is tg.bfloat16 and back["x"].tolist() == x.tolist()
    path = tmp_path / "t.pt"
    torch.save({"w": torch.tensor([1.5, 0.1], dtype=torch.bfloat16)}, path)
    w = tg.load(path)["w"]
    assert w.dtype is tg.bfloat16 and w.tolist() == [1.5, 0.10009765625]


def test_a_program_without_bfloat16_does_not_load_it():
    code = ("import sys, tapegrad as t; x = t.ones(3, requires_grad=True); (x * 2).sum()"
            ".backward(); t.zeros(2, dtype=t.float32); print('tapegrad._bfloat16' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN", "LSTMCell"])
def test_recurrent_layers_give_bfloat16(layer):
    # SILENT before: their fused steps, reached by internal names, returned float32
    for lib in (torch, tg):
        m = getattr(lib.nn, layer)(3, 4).bfloat16()
        x = lib.ones(5, 3).bfloat16() * 0.5
        out = m(x)
        first = out[0]
        assert str(first.dtype) == "torch.bfloat16"
        if lib is tg:
            first.float().sum().backward()
            assert m.weight_ih_l0.grad.dtype is tg.bfloat16 if layer != "LSTMCell" else \
                m.weight_ih.grad.dtype is tg.bfloat16
