"""nn layers and losses, checked against PyTorch and against hand-written numpy references.

With torch importable, every layer and loss is run in both libraries with identical parameters
(tapegrad's, copied over through numpy) on the same inputs and the same upstream gradient, and
the outputs, the gradients w.r.t. every input and parameter, and the buffers must agree:
float64 to 1e-12 relative, float32 to 1e-5 relative (observed: a few float32 ulps; the two
libraries reduce sums in different orders).  Without torch, numpy references of the forward
formulas and central differences of the gradients check the same layers.

Also: Linear's default initialisation, nn.init statistics, Module repr / state_dict / loading a
PyTorch state dict, SGD + StepLR against PyTorch, and clip_grad_norm_ against PyTorch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn


@pytest.fixture
def torch(torch):
    """conftest's oracle, single-threaded (a second thread only adds contention here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


# -------------------------------------------------------------------------------------------------
# helpers
# -------------------------------------------------------------------------------------------------

RNG_SEED = 1234


def _np_dtype(dtype):
    return {"float32": np.float32, "float64": np.float64}[dtype]


def _tolerances(dtype):
    return dict(rtol=1e-12, atol_scale=1e-13) if dtype == "float64" else dict(rtol=1e-5,
                                                                              atol_scale=1e-6)


def assert_close(actual, expected, dtype, what=""):
    tol = _tolerances(dtype)
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=tol["rtol"], atol=tol["atol_scale"] * scale,
                               err_msg=what)


def _torch_state(torch, module):
    """tapegrad module's state dict as torch tensors (via numpy)."""
    return {k: torch.from_numpy(v.numpy().copy()) for k, v in module.state_dict().items()}


def _randomise_parameters(module, rng):
    """Give every floating parameter non-trivial values (LayerNorm/BatchNorm start at 1 and 0)."""
    with tg.no_grad():
        for _, p in module.named_parameters():
            p._array[...] = rng.uniform(-1.5, 1.5, p.shape).astype(p._array.dtype)


def _run(lib, module, inputs, needs_grad, upstream):
    tensors = [lib.tensor(a, requires_grad=g) for a, g in zip(inputs, needs_grad)]
    out = module(*tensors)
    out.backward(lib.tensor(upstream))
    grads = {f"input{i}": t.grad.numpy() for i, (t, g) in enumerate(zip(tensors, needs_grad))
             if g}
    for name, p in module.named_parameters():
        grads[name] = None if p.grad is None else p.grad.numpy()
    buffers = {k: v.numpy() for k, v in module.state_dict().items()}
    return out.detach().numpy(), grads, buffers


def compare_with_torch(torch, make, inputs, needs_grad, dtype, train=True, prepare=None):
    """Build the same layer in both libraries (tapegrad's random parameters copied into torch's),
    run forward and backward with one random upstream gradient, compare everything."""
    rng = np.random.default_rng(RNG_SEED)
    ours = make(tg.nn)
    if dtype == "float64":
        ours.double()
    _randomise_parameters(ours, rng)
    if prepare is not None:
        prepare(ours)
    initial = {k: v.numpy().copy() for k, v in ours.state_dict().items()}
    theirs = make(torch.nn)
    if dtype == "float64":
        theirs.double()
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in initial.items()})
    ours.train(train)
    theirs.train(train)
    # the upstream gradient needs the output's shape: a forward without grad first (it may
    # update BatchNorm's running statistics: restore them)
    with tg.no_grad():
        probe = ours(*[tg.tensor(a) for a in inputs])
    ours.load_state_dict(initial)
    upstream = rng.standard_normal(tuple(probe.shape)).astype(_np_dtype(dtype))
    out_o, grads_o, bufs_o = _run(tg, ours, inputs, needs_grad, upstream)
    out_t, grads_t, bufs_t = _run(torch, theirs, inputs, needs_grad, upstream)
    assert str(probe.dtype) == f"torch.{dtype}"
    assert_close(out_o, out_t, dtype, "forward")
    assert set(grads_o) == set(grads_t)
    for k in grads_t:
        if grads_t[k] is None:
            assert grads_o[k] is None, k
        else:
            assert grads_o[k] is not None, f"no gradient for {k}"
            assert_close(grads_o[k], grads_t[k], dtype, f"grad {k}")
    assert list(bufs_o) == list(bufs_t)
    for k in bufs_t:
        if bufs_t[k].dtype.kind == "i":
            assert bufs_o[k].dtype == bufs_t[k].dtype and (bufs_o[k] == bufs_t[k]).all(), k
        else:
            assert_close(bufs_o[k], bufs_t[k], dtype, f"buffer {k}")


def _x(shape=(5, 6), scale=2.0, dtype="float64", seed=0, specials=True):
    x = np.random.default_rng(seed).standard_normal(shape) * scale
    if specials and len(shape) == 2 and shape[1] >= 4:
        x[0, :4] = [0.0, -0.0, 25.0, -25.0]           # kinks and the softplus threshold
    return x.astype(_np_dtype(dtype))


# -------------------------------------------------------------------------------------------------
# layers vs torch
# -------------------------------------------------------------------------------------------------

LAYERS = [
    ("Linear", lambda nn: nn.Linear(6, 4), (5, 6)),
    ("Linear-nobias", lambda nn: nn.Linear(6, 4, bias=False), (5, 6)),
    ("Linear-3d-input", lambda nn: nn.Linear(6, 3), (2, 5, 6)),
    ("Linear-1d-input", lambda nn: nn.Linear(6, 3), (6,)),
    ("ReLU", lambda nn: nn.ReLU(), (5, 6)),
    ("Tanh", lambda nn: nn.Tanh(), (5, 6)),
    ("Sigmoid", lambda nn: nn.Sigmoid(), (5, 6)),
    ("GELU", lambda nn: nn.GELU(), (5, 6)),
    ("GELU-tanh", lambda nn: nn.GELU(approximate="tanh"), (5, 6)),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(), (5, 6)),
    ("LeakyReLU-0.2", lambda nn: nn.LeakyReLU(0.2), (5, 6)),
    ("SiLU", lambda nn: nn.SiLU(), (5, 6)),
    ("Softplus", lambda nn: nn.Softplus(), (5, 6)),
    ("Softplus-beta2-thr5", lambda nn: nn.Softplus(beta=2.0, threshold=5.0), (5, 6)),
    ("ELU", lambda nn: nn.ELU(), (5, 6)),
    ("ELU-alpha0.5", lambda nn: nn.ELU(alpha=0.5), (5, 6)),
    ("Softmax-dim1", lambda nn: nn.Softmax(dim=1), (5, 6)),
    ("Softmax-dim0", lambda nn: nn.Softmax(dim=0), (5, 6)),
    ("Softmax-3d", lambda nn: nn.Softmax(dim=-1), (2, 3, 4)),
    ("LogSoftmax-dim1", lambda nn: nn.LogSoftmax(dim=1), (5, 6)),
    ("LogSoftmax-dim0", lambda nn: nn.LogSoftmax(dim=0), (5, 6)),
    ("Dropout-p0-train", lambda nn: nn.Dropout(p=0.0), (5, 6)),
    ("Identity", lambda nn: nn.Identity(), (5, 6)),
    ("Flatten", lambda nn: nn.Flatten(), (2, 3, 4)),
    ("Flatten-0-1", lambda nn: nn.Flatten(0, 1), (2, 3, 4)),
    ("Unflatten", lambda nn: nn.Unflatten(1, (2, 3)), (5, 6)),
    ("Unflatten-neg", lambda nn: nn.Unflatten(-1, (2, -1)), (2, 3, 4)),
    ("LayerNorm", lambda nn: nn.LayerNorm(6), (5, 6)),
    ("LayerNorm-2d-shape", lambda nn: nn.LayerNorm((3, 4)), (2, 3, 4)),
    ("LayerNorm-no-affine", lambda nn: nn.LayerNorm(4, elementwise_affine=False), (2, 3, 4)),
    ("LayerNorm-no-bias", lambda nn: nn.LayerNorm(4, bias=False), (2, 3, 4)),
    ("LayerNorm-eps", lambda nn: nn.LayerNorm(6, eps=0.5), (5, 6)),
    ("BatchNorm1d-2d", lambda nn: nn.BatchNorm1d(6), (5, 6)),
    ("BatchNorm1d-3d", lambda nn: nn.BatchNorm1d(3), (4, 3, 5)),
    ("BatchNorm1d-no-affine", lambda nn: nn.BatchNorm1d(3, affine=False), (4, 3, 5)),
    ("BatchNorm1d-momentum-None", lambda nn: nn.BatchNorm1d(6, momentum=None), (5, 6)),
    ("BatchNorm1d-untracked", lambda nn: nn.BatchNorm1d(6, track_running_stats=False), (5, 6)),
    ("Sequential", lambda nn: nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(),
                                            nn.Linear(8, 3), nn.LogSoftmax(dim=1)), (5, 6)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(torch, name, make, shape, dtype):
    compare_with_torch(torch, make, [_x(shape, dtype=dtype)], [True], dtype)


def _set_running_stats(module):
    rng = np.random.default_rng(99)
    module.running_mean._array[...] = rng.standard_normal(module.num_features)
    module.running_var._array[...] = rng.uniform(0.5, 2.0, module.num_features)
    module.num_batches_tracked._array[...] = 7


EVAL_LAYERS = [
    ("Dropout-eval", lambda nn: nn.Dropout(p=0.5), (5, 6), None),
    ("BatchNorm1d-2d-eval", lambda nn: nn.BatchNorm1d(6), (5, 6), _set_running_stats),
    ("BatchNorm1d-3d-eval", lambda nn: nn.BatchNorm1d(3), (4, 3, 5), _set_running_stats),
    ("BatchNorm1d-untracked-eval", lambda nn: nn.BatchNorm1d(6, track_running_stats=False),
     (5, 6), None),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make,shape,prepare", EVAL_LAYERS, ids=[c[0] for c in EVAL_LAYERS])
def test_layer_in_eval_mode_matches_torch(torch, name, make, shape, prepare, dtype):
    compare_with_torch(torch, make, [_x(shape, dtype=dtype)], [True], dtype, train=False,
                       prepare=prepare)


EMBEDDINGS = [
    ("Embedding", lambda nn: nn.Embedding(5, 3)),
    ("Embedding-padding", lambda nn: nn.Embedding(5, 3, padding_idx=2)),
    ("Embedding-padding-negative", lambda nn: nn.Embedding(5, 3, padding_idx=-1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,make", EMBEDDINGS, ids=[c[0] for c in EMBEDDINGS])
def test_embedding_matches_torch(torch, name, make, dtype):
    idx = np.array([[0, 2, 2, 4], [1, 0, 4, 4]])
    compare_with_torch(torch, make, [idx], [False], dtype)


def test_embedding_padding_row_is_zero_and_gets_no_gradient(torch):
    for lib in (tg, torch):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(6, 4, padding_idx=-2)
        assert emb.padding_idx == 4
        assert (emb.weight.detach().numpy()[4] == 0).all()
        emb(lib.tensor([[4, 1, 4], [0, 4, 1]])).sum().backward()
        counts = emb.weight.grad.numpy()[:, 0].tolist()
        assert counts == [1.0, 2.0, 0.0, 0.0, 0.0, 0.0], lib.__name__


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5)], ids=["2d", "3d"])
def test_batchnorm_running_stats_over_batches_then_eval_match_torch(torch, momentum, shape):
    rng = np.random.default_rng(5)
    batches = [(rng.standard_normal(shape) * (i + 1) + i).astype(np.float32) for i in range(4)]
    x_eval = rng.standard_normal(shape).astype(np.float32)
    template = tg.nn.BatchNorm1d(3)
    _randomise_parameters(template, np.random.default_rng(0))
    results = []
    for lib in (tg, torch):
        bn = lib.nn.BatchNorm1d(3, momentum=momentum)
        bn.load_state_dict(_torch_state(torch, template) if lib is torch else
                           template.state_dict())
        for b in batches:
            bn(lib.tensor(b))
        stats = (bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                 bn.num_batches_tracked.item(), str(bn.num_batches_tracked.dtype))
        bn.eval()
        x = lib.tensor(x_eval, requires_grad=True)
        out = bn(x)
        out.backward(lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)
                                .reshape(tuple(out.shape))))
        results.append((stats, out.detach().numpy(), x.grad.numpy(), bn.weight.grad.numpy(),
                        bn.bias.grad.numpy()))
    (s_o, *rest_o), (s_t, *rest_t) = results
    assert s_o[2] == s_t[2] == 4 and s_o[3] == s_t[3] == "torch.int64"
    assert_close(s_o[0], s_t[0], "float32", "running_mean")
    assert_close(s_o[1], s_t[1], "float32", "running_var")
    for a, b in zip(rest_o, rest_t):
        assert_close(a, b, "float32")


# -------------------------------------------------------------------------------------------------
# losses vs torch
# -------------------------------------------------------------------------------------------------

def _loss_inputs(kind, dtype):
    """(inputs, needs_grad) for a loss: input first, then target."""
    rng = np.random.default_rng(11)
    dt = _np_dtype(dtype)
    x = _x((5, 4), dtype=dtype, specials=False)
    x[0, 0] = 0.0
    if kind == "regression":
        y = rng.standard_normal((5, 4)).astype(dt)
        y[0, 0] = 0.0                          # an exact zero difference (L1's kink)
        y[1, 1] = x[1, 1] + 0.5                # exactly at SmoothL1's beta=0.5 boundary
        return [x, y], [True, True]
    if kind == "classes":
        return [x, np.array([0, 3, 2, 2, 1])], [True, False]
    if kind == "classes-kdim":
        x3 = _x((3, 4, 5), dtype=dtype, specials=False)
        return [x3, rng.integers(0, 4, (3, 5))], [True, False]
    if kind == "classes-1d":
        return [x[1], np.array(3)], [True, False]
    if kind == "probabilities":
        p = rng.uniform(0.1, 1.0, (5, 4))
        return [x, (p / p.sum(1, keepdims=True)).astype(dt)], [True, True]
    if kind == "log-probabilities":
        logp = x - np.log(np.exp(x).sum(1, keepdims=True))
        return [logp.astype(dt), np.array([0, 3, 2, 2, 1])], [True, False]
    if kind == "binary":
        p = rng.uniform(0.02, 0.98, (5, 4)).astype(dt)
        t = rng.uniform(0.0, 1.0, (5, 4)).astype(dt)
        t[0, :2] = [0.0, 1.0]
        return [p, t], [True, True]
    if kind == "binary-extreme":
        p = rng.uniform(0.1, 0.9, (5, 4)).astype(dt)
        p[0, :4] = [0.0, 1.0, 0.0, 1.0]        # log clamped at -100, as PyTorch
        t = np.array(rng.uniform(0, 1, (5, 4)) > 0.5, dtype=dt)
        t[0, :4] = [0.0, 1.0, 1.0, 0.0]
        return [p, t], [True, False]
    if kind == "logits":
        t = rng.uniform(0.0, 1.0, (5, 4)).astype(dt)
        return [x, t], [True, True]
    if kind == "logits-extreme":
        t = rng.uniform(0.0, 1.0, (5, 4)).astype(dt)
        return [(x * 60).astype(dt), t], [True, True]
    raise AssertionError(kind)


W4 = np.array([0.5, 2.0, 1.0, 0.25])
PW4 = np.array([3.0, 0.5, 1.0, 2.0])

LOSSES = [
    ("MSELoss", lambda nn, r, w: nn.MSELoss(reduction=r), "regression"),
    ("L1Loss", lambda nn, r, w: nn.L1Loss(reduction=r), "regression"),
    ("SmoothL1Loss", lambda nn, r, w: nn.SmoothL1Loss(reduction=r), "regression"),
    ("SmoothL1Loss-beta0.5", lambda nn, r, w: nn.SmoothL1Loss(reduction=r, beta=0.5),
     "regression"),
    ("SmoothL1Loss-beta0", lambda nn, r, w: nn.SmoothL1Loss(reduction=r, beta=0.0), "regression"),
    ("CrossEntropyLoss", lambda nn, r, w: nn.CrossEntropyLoss(reduction=r), "classes"),
    ("CrossEntropyLoss-weight", lambda nn, r, w: nn.CrossEntropyLoss(weight=w(W4), reduction=r),
     "classes"),
    ("CrossEntropyLoss-ignore", lambda nn, r, w: nn.CrossEntropyLoss(ignore_index=2, reduction=r),
     "classes"),
    ("CrossEntropyLoss-smoothing", lambda nn, r, w: nn.CrossEntropyLoss(label_smoothing=0.2,
                                                                        reduction=r), "classes"),
    ("CrossEntropyLoss-weight-smoothing-ignore",
     lambda nn, r, w: nn.CrossEntropyLoss(weight=w(W4), ignore_index=1, label_smoothing=0.3,
                                          reduction=r), "classes"),
    ("CrossEntropyLoss-kdim", lambda nn, r, w: nn.CrossEntropyLoss(reduction=r), "classes-kdim"),
    ("CrossEntropyLoss-unbatched", lambda nn, r, w: nn.CrossEntropyLoss(reduction=r),
     "classes-1d"),
    ("CrossEntropyLoss-probabilities", lambda nn, r, w: nn.CrossEntropyLoss(reduction=r),
     "probabilities"),
    ("CrossEntropyLoss-probabilities-weight-smoothing",
     lambda nn, r, w: nn.CrossEntropyLoss(weight=w(W4), label_smoothing=0.1, reduction=r),
     "probabilities"),
    ("NLLLoss", lambda nn, r, w: nn.NLLLoss(reduction=r), "log-probabilities"),
    ("NLLLoss-weight-ignore", lambda nn, r, w: nn.NLLLoss(weight=w(W4), ignore_index=2,
                                                          reduction=r), "log-probabilities"),
    ("NLLLoss-kdim", lambda nn, r, w: nn.NLLLoss(reduction=r), "classes-kdim"),
    ("BCELoss", lambda nn, r, w: nn.BCELoss(reduction=r), "binary"),
    ("BCELoss-weight", lambda nn, r, w: nn.BCELoss(weight=w(W4), reduction=r), "binary"),
    ("BCELoss-extreme", lambda nn, r, w: nn.BCELoss(reduction=r), "binary-extreme"),
    ("BCEWithLogitsLoss", lambda nn, r, w: nn.BCEWithLogitsLoss(reduction=r), "logits"),
    ("BCEWithLogitsLoss-weight-pos_weight",
     lambda nn, r, w: nn.BCEWithLogitsLoss(weight=w(W4), pos_weight=w(PW4), reduction=r),
     "logits"),
    ("BCEWithLogitsLoss-extreme", lambda nn, r, w: nn.BCEWithLogitsLoss(pos_weight=w(PW4),
                                                                        reduction=r),
     "logits-extreme"),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,make,kind", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(torch, name, make, kind, reduction, dtype):
    inputs, needs_grad = _loss_inputs(kind, dtype)
    dt = _np_dtype(dtype)

    def factory(lib_nn):
        lib = tg if lib_nn is tg.nn else torch
        return make(lib_nn, reduction, lambda a: lib.tensor(a.astype(dt)))

    compare_with_torch(torch, factory, inputs, needs_grad, dtype)


BCE_EPSILON_REASON = (
    "compiled core (src/tapegrad/ops_nn.pxi, vjp_bce): PyTorch clamps BCE's gradient "
    "denominator (1 - x) x at its EPSILON, a C++ float 1e-12, i.e. 9.99999996e-13 also for "
    "float64; tapegrad clamps float64 at 1e-12 exactly, so where p(1-p) < 1e-12 (p = 0 or 1) the "
    "float64 gradient differs from PyTorch's by 4e-9 relative")


def test_bce_float64_gradient_at_the_clamp_equals_torchs():
    x = tg.tensor([0.0, 1.0], dtype=tg.float64, requires_grad=True)
    t = tg.tensor([1.0, 0.0], dtype=tg.float64)
    nn.functional.binary_cross_entropy(x, t, reduction="sum").backward()
    eps = float(np.float32(1e-12))             # PyTorch: -1000000003995.8029, 1000000003995.8029
    assert x.grad.tolist() == [-1 / eps, 1 / eps]


def test_loss_with_broadcast_target_warns_like_torch(torch):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([0.5, 1.0], np.float32)
    results = []
    for lib in (tg, torch):
        with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[2\]\)\) that "
                                             r"is different to the input size "
                                             r"\(torch.Size\(\[3, 2\]\)\)"):
            results.append(lib.nn.MSELoss()(lib.tensor(x), lib.tensor(y)).item())
    assert results[0] == results[1]


# -------------------------------------------------------------------------------------------------
# the same layers and losses without torch: numpy references and central differences
# -------------------------------------------------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf)(x)


_C = math.sqrt(2 / math.pi)

ACTIVATIONS = [
    ("ReLU", nn.ReLU(), lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
    ("Tanh", nn.Tanh(), np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    ("Sigmoid", nn.Sigmoid(), _sigmoid, lambda x: _sigmoid(x) * (1 - _sigmoid(x))),
    ("GELU", nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
     lambda x: (0.5 * (1 + _erf(x / math.sqrt(2)))
                + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi))),
    ("GELU-tanh", nn.GELU(approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(_C * (x + 0.044715 * x ** 3))),
     lambda x: (0.5 * (1 + np.tanh(_C * (x + 0.044715 * x ** 3)))
                + 0.5 * x * (1 - np.tanh(_C * (x + 0.044715 * x ** 3)) ** 2)
                * _C * (1 + 3 * 0.044715 * x ** 2))),
    ("LeakyReLU-0.2", nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x),
     lambda x: np.where(x > 0, 1.0, 0.2)),
    ("SiLU", nn.SiLU(), lambda x: x * _sigmoid(x),
     lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x)))),
    ("Softplus-beta2-thr5", nn.Softplus(beta=2.0, threshold=5.0),
     lambda x: np.where(2 * x > 5, x, np.log1p(np.exp(2 * x)) / 2),
     lambda x: np.where(2 * x > 5, 1.0, _sigmoid(2 * x))),
    ("ELU-alpha0.5", nn.ELU(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)),
     lambda x: np.where(x > 0, 1.0, 0.5 * np.exp(x))),
]


@pytest.mark.parametrize("name,module,f,df", ACTIVATIONS, ids=[c[0] for c in ACTIVATIONS])
def test_activation_by_formula(name, module, f, df):
    x_np = np.array([-30.0, -3.0, -1.0, -0.25, 0.0, 0.25, 1.0, 2.4, 2.6, 3.0, 30.0])
    x = tg.tensor(x_np, requires_grad=True)
    g_np = np.linspace(-1.0, 2.0, x_np.size)
    out = module(x)
    out.backward(tg.tensor(g_np))
    np.testing.assert_allclose(out.detach().numpy(), f(x_np), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), g_np * df(x_np), rtol=1e-12, atol=1e-15)


def test_softmax_and_log_softmax_by_formula(gradcheck):
    x_np = _x((4, 5), specials=False)
    e = np.exp(x_np - x_np.max(1, keepdims=True))
    s = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax(dim=1)(tg.tensor(x_np)).numpy(), s, rtol=1e-13)
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(tg.tensor(x_np)).numpy(), np.log(s),
                               rtol=1e-13)
    np.testing.assert_allclose(nn.Softmax(dim=0)(tg.tensor(x_np)).numpy().sum(0), 1.0)
    weights = np.random.default_rng(3).standard_normal((4, 5))
    gradcheck(lambda t: nn.Softmax(dim=1)(t) * tg.tensor(weights), x_np)
    gradcheck(lambda t: nn.LogSoftmax(dim=0)(t) * tg.tensor(weights), x_np)


def test_linear_by_hand():
    lin = nn.Linear(2, 3)
    with tg.no_grad():
        lin.weight._array[...] = [[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]]
        lin.bias._array[...] = [0.5, -1.0, 2.0]
    x = tg.tensor([[1.0, 1.0], [2.0, -1.0]], requires_grad=True)
    out = lin(x)
    assert out.tolist() == [[3.5, 6.0, 1.5], [0.5, 1.0, -0.5]]
    out.sum().backward()
    assert x.grad.tolist() == [[3.0, 6.5]] * 2                 # column sums of W
    assert lin.weight.grad.tolist() == [[3.0, 0.0]] * 3        # column sums of x
    assert lin.bias.grad.tolist() == [2.0, 2.0, 2.0]
    nobias = nn.Linear(2, 3, bias=False)
    assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]


def test_layernorm_and_batchnorm_by_formula(gradcheck):
    x_np = _x((6, 4), specials=False)
    ln = nn.LayerNorm(4).double()
    _randomise_parameters(ln, np.random.default_rng(0))
    w, b = ln.weight.detach().numpy(), ln.bias.detach().numpy()
    mu, var = x_np.mean(1, keepdims=True), x_np.var(1, keepdims=True)
    np.testing.assert_allclose(ln(tg.tensor(x_np)).detach().numpy(),
                               (x_np - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-12)
    gradcheck(lambda t: ln(t) * tg.tensor(np.arange(24.0).reshape(6, 4)), x_np)

    bn = nn.BatchNorm1d(4).double()
    _randomise_parameters(bn, np.random.default_rng(1))
    w, b = bn.weight.detach().numpy(), bn.bias.detach().numpy()
    mu, var = x_np.mean(0), x_np.var(0)
    out = bn(tg.tensor(x_np)).detach().numpy()
    np.testing.assert_allclose(out, (x_np - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mu, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x_np.var(0, ddof=1),
                               rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    gradcheck(lambda t: bn(t) * tg.tensor(np.arange(24.0).reshape(6, 4)), x_np)


def test_batchnorm_3d_running_stats_and_momentum_none_by_formula():
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((4, 3, 5)) * (i + 1) + i for i in range(3)]
    bn = nn.BatchNorm1d(3, momentum=None).double()
    for xb in batches:
        bn(tg.tensor(xb))
    means = [xb.mean((0, 2)) for xb in batches]
    variances = [xb.var((0, 2), ddof=1) for xb in batches]
    # momentum=None: the cumulative average of the batch statistics (the initial 0 and 1 count
    # with weight 0: the first update has factor 1/1)
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean(means, 0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean(variances, 0), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == tg.int64
    bn.eval()
    x = rng.standard_normal((2, 3, 5))
    out = bn(tg.tensor(x)).detach().numpy()
    expected = ((x - bn.running_mean.numpy()[:, None]) / np.sqrt(bn.running_var.numpy()[:, None]
                                                                  + 1e-5))
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3                  # eval does not count
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training,"
                                         r" got input size torch.Size\(\[1, 3\]\)"):
        bn.train()(tg.ones(1, 3))


def _log_softmax(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _reduce(values, reduction, denominator=None):
    if reduction == "none":
        return values
    if reduction == "sum":
        return values.sum()
    return values.sum() / (values.size if denominator is None else denominator)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses_by_formula(reduction, gradcheck):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4))
    y = rng.standard_normal((5, 4))
    d = x - y
    cls = np.array([0, 3, 2, 2, 1])
    p = rng.uniform(0.05, 0.95, (5, 4))
    t = rng.uniform(0, 1, (5, 4))
    w, pw = W4, PW4
    logp = _log_softmax(x)
    picked = logp[np.arange(5), cls]
    q = p / p.sum(1, keepdims=True)
    smooth = 0.2
    expected = {
        "MSELoss": (nn.MSELoss, {}, (x, y), _reduce(d ** 2, reduction)),
        "L1Loss": (nn.L1Loss, {}, (x, y), _reduce(np.abs(d), reduction)),
        "SmoothL1Loss": (nn.SmoothL1Loss, {"beta": 0.5}, (x, y),
                         _reduce(np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25),
                                 reduction)),
        "CrossEntropyLoss-weight": (nn.CrossEntropyLoss, {"weight": tg.tensor(w)}, (x, cls),
                                    _reduce(-w[cls] * picked, reduction, w[cls].sum())),
        "CrossEntropyLoss-ignore-smoothing": (
            nn.CrossEntropyLoss, {"ignore_index": 2, "label_smoothing": smooth}, (x, cls),
            _reduce(np.where(cls == 2, 0.0, (1 - smooth) * -picked
                             + smooth / 4 * -logp.sum(1)), reduction, (cls != 2).sum())),
        "CrossEntropyLoss-probabilities": (nn.CrossEntropyLoss, {}, (x, q),
                                           _reduce(-(q * logp).sum(1), reduction)),
        "NLLLoss-weight": (nn.NLLLoss, {"weight": tg.tensor(w)}, (logp, cls),
                           _reduce(-w[cls] * picked, reduction, w[cls].sum())),
        "BCELoss-weight": (nn.BCELoss, {"weight": tg.tensor(w)}, (p, t),
                           _reduce(-w * (t * np.log(p) + (1 - t) * np.log(1 - p)), reduction)),
        "BCEWithLogitsLoss-pos_weight": (
            nn.BCEWithLogitsLoss, {"pos_weight": tg.tensor(pw)}, (x, t),
            _reduce(-(pw * t * np.log(_sigmoid(x)) + (1 - t) * np.log(1 - _sigmoid(x))),
                    reduction)),
    }
    for name, (cls_, kwargs, (inp, target), value) in expected.items():
        loss = cls_(reduction=reduction, **kwargs)
        out = loss(tg.tensor(inp), tg.tensor(target))
        np.testing.assert_allclose(out.numpy(), value, rtol=1e-12, err_msg=name)
        gradcheck(lambda a: loss(a, tg.tensor(target)), inp)
        if target.dtype.kind == "f" and name != "CrossEntropyLoss-probabilities":
            gradcheck(lambda b: loss(tg.tensor(inp), b), target)


def test_bce_clamps_the_log_at_minus_100():
    p = tg.tensor([0.0, 1.0, 0.0, 1.0])
    t = tg.tensor([0.0, 1.0, 1.0, 0.0])
    assert nn.BCELoss(reduction="none")(p, t).tolist() == [0.0, 0.0, 100.0, 100.0]


# -------------------------------------------------------------------------------------------------
# Dropout
# -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.25, 0.5])
def test_dropout_train_zeroes_and_rescales_and_the_gradient_follows_the_mask(p):
    tg.manual_seed(0)
    drop = nn.Dropout(p)
    x = tg.ones(200, 500, requires_grad=True)
    out = drop(x)
    g = np.random.default_rng(0).standard_normal((200, 500)).astype(np.float32)
    out.backward(tg.tensor(g))
    o = out.detach().numpy()
    kept = o != 0
    assert set(np.unique(o).tolist()) == {0.0, np.float32(1 / (1 - p))}
    assert abs((~kept).mean() - p) < 0.01                      # 100,000 draws: sd 0.0016
    scale = np.float32(1) / np.float32(1 - p)    # PyTorch: grad * mask * (1 / (1 - p))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(kept, g * scale, 0.0))
    tg.manual_seed(0)
    assert (nn.Dropout(p)(tg.ones(200, 500)).numpy() == o).all()   # seeded: repeatable


def test_dropout_eval_p0_and_p1():
    x_np = _x((4, 6), dtype="float32")
    x = tg.tensor(x_np, requires_grad=True)
    drop = nn.Dropout(0.5).eval()
    out = drop(x)
    assert (out.detach().numpy() == x_np).all()
    out.sum().backward()
    assert (x.grad.numpy() == 1).all()
    assert (nn.Dropout(0.0)(tg.tensor(x_np)).numpy() == x_np).all()      # training, p=0
    x = tg.tensor(x_np, requires_grad=True)
    out = nn.Dropout(1.0)(x)
    out.sum().backward()
    assert (out.detach().numpy() == 0).all() and (x.grad.numpy() == 0).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got"
                                         " 1.5"):
        nn.Dropout(1.5)


def test_dropout_matches_torch_where_it_is_deterministic(torch):
    x_np = _x((4, 6), dtype="float32")
    for lib in (tg, torch):
        assert (lib.nn.Dropout(0.3).eval()(lib.tensor(x_np)).numpy() == x_np).all()
        assert (lib.nn.Dropout(0.0)(lib.tensor(x_np)).numpy() == x_np).all()
        assert (lib.nn.Dropout(1.0)(lib.tensor(x_np)).numpy() == 0).all()
    assert repr(tg.nn.Dropout(0.3)) == repr(torch.nn.Dropout(0.3))


# -------------------------------------------------------------------------------------------------
# initialisation
# -------------------------------------------------------------------------------------------------

def test_linear_default_init_is_kaiming_uniform_with_a_sqrt5():
    tg.manual_seed(0)
    lin = nn.Linear(256, 512)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    bound = 1 / math.sqrt(256)     # gain sqrt(2 / (1 + 5)) * sqrt(3 / fan_in) = 1 / sqrt(fan_in)
    assert w.dtype == np.float32 and w.shape == (512, 256)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.999 * bound
    assert abs(w.mean()) < 4 * bound / math.sqrt(3 * w.size)
    np.testing.assert_allclose(w.var(), bound ** 2 / 3, rtol=0.02)
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.9 * bound
    np.testing.assert_allclose(b.var(), bound ** 2 / 3, rtol=0.2)
    assert not (w == nn.Linear(256, 512).weight.detach().numpy()).all()
    tg.manual_seed(0)
    assert (nn.Linear(256, 512).weight.detach().numpy() == w).all()


def test_linear_default_init_bounds_match_torchs(torch):
    torch.manual_seed(0)
    for fan_in, fan_out in [(3, 1000), (64, 128), (1000, 20)]:
        ours, theirs = tg.nn.Linear(fan_in, fan_out), torch.nn.Linear(fan_in, fan_out)
        for name in ("weight", "bias"):
            a = getattr(ours, name).detach().numpy()
            b = getattr(theirs, name).detach().numpy()
            bound = 1 / math.sqrt(fan_in)
            assert np.abs(a).max() <= bound and np.abs(b).max() <= bound
            assert np.abs(a).max() > 0.5 * bound and np.abs(b).max() > 0.5 * bound


def _stats_ok(t, mean, std, lo=None, hi=None):
    a = t.detach().numpy().astype(np.float64).ravel()
    n = a.size
    assert abs(a.mean() - mean) < 5 * std / math.sqrt(n), (a.mean(), mean)
    np.testing.assert_allclose(a.std(), std, rtol=0.03)
    if lo is not None:
        assert a.min() >= lo and a.max() <= hi
        assert a.min() < lo + 0.01 * (hi - lo) and a.max() > hi - 0.01 * (hi - lo)


@pytest.mark.parametrize("shape", [(300, 400), (32, 16, 3, 3)], ids=["2d", "conv-like"])
def test_init_functions_have_the_expected_statistics(shape):
    tg.manual_seed(1)
    t = nn.Parameter(tg.empty(*shape))
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive

    assert nn.init.uniform_(t, -2.0, 3.0) is t
    _stats_ok(t, 0.5, 5 / math.sqrt(12), -2.0, 3.0)
    nn.init.normal_(t, 1.5, 0.25)
    _stats_ok(t, 1.5, 0.25)
    bound = 1.7 * math.sqrt(6 / (fan_in + fan_out))
    nn.init.xavier_uniform_(t, gain=1.7)
    _stats_ok(t, 0.0, bound / math.sqrt(3), -bound, bound)
    nn.init.xavier_normal_(t, gain=0.5)
    _stats_ok(t, 0.0, 0.5 * math.sqrt(2 / (fan_in + fan_out)))
    for a, mode, nonlinearity, fan in [(0, "fan_in", "relu", fan_in),
                                       (0.2, "fan_out", "leaky_relu", fan_out),
                                       (math.sqrt(5), "fan_in", "leaky_relu", fan_in),
                                       (0, "fan_out", "tanh", fan_out)]:
        gain = nn.init.calculate_gain(nonlinearity, a)
        nn.init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity)
        bound = gain * math.sqrt(3 / fan)
        _stats_ok(t, 0.0, bound / math.sqrt(3), -bound, bound)
        nn.init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity)
        _stats_ok(t, 0.0, gain / math.sqrt(fan))
    assert (nn.init.constant_(t, 0.3).detach().numpy() == np.float32(0.3)).all()
    assert (nn.init.zeros_(t).detach().numpy() == 0).all()
    assert (nn.init.ones_(t).detach().numpy() == 1).all()
    # in place, on a leaf that requires grad, without recording anything
    assert t.is_leaf and t.requires_grad and t.grad_fn is None and t.grad is None


@pytest.mark.parametrize("init,draw", [
    (lambda t: nn.init.uniform_(t, -0.5, 2.0), lambda g, shape: g.uniform(-0.5, 2.0, shape)),
    (lambda t: nn.init.normal_(t, 1.0, 3.0), lambda g, shape: g.normal(1.0, 3.0, shape))],
    ids=["uniform_", "normal_"])
def test_init_draws_in_chunks_the_values_of_one_whole_draw(init, draw):
    # The initialisers fill large tensors a chunk at a time (no float64 temporary of the whole
    # tensor); the values are those of one draw of the whole shape, rounded to float32.
    shape = (300, 400)                                  # several chunks, the last one partial
    tg.manual_seed(7)
    t = init(tg.empty(*shape))
    want = draw(np.random.default_rng(7), shape).astype(np.float32)
    assert np.array_equal(t.numpy(), want)
    tg.manual_seed(7)
    strided = tg.empty(400, 300).t()                    # not contiguous: one draw, as before
    init(strided)
    assert np.array_equal(strided.numpy(), want)


def test_init_edge_cases():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        lin = nn.Linear(0, 3)                              # fan_in 0: was a ZeroDivisionError
    assert lin.bias.tolist() == [0.0, 0.0, 0.0] and lin.weight.shape == (3, 0)
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.kaiming_normal_(tg.empty(0, 4))
    nn.init.kaiming_normal_(tg.empty(3, 4), mode="FAN_OUT")    # case-insensitive, as PyTorch
    with pytest.raises(ValueError, match=r"Mode fanin not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        nn.init.kaiming_uniform_(tg.empty(3, 4), mode="fanin")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with "
                                         "fewer than 2 dimensions"):
        nn.init.xavier_normal_(tg.empty(5))
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        nn.init.calculate_gain("foo")


def test_calculate_gain_matches_torch(torch):
    for name, param in [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
                        ("conv_transpose1d", None), ("conv_transpose2d", None),
                        ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                        ("leaky_relu", 1), ("leaky_relu", math.sqrt(5)), ("selu", None)]:
        assert tg.nn.init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)


def test_init_zero_element_warning_matches_torch(torch):
    for lib in (tg, torch):
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lin = lib.nn.Linear(0, 2)
        assert lin.bias.detach().numpy().tolist() == [0.0, 0.0]


# -------------------------------------------------------------------------------------------------
# Module: repr, state_dict, loading PyTorch's weights
# -------------------------------------------------------------------------------------------------

def make_model(torch):
    """A composite model written against the torch API (tapegrad or torch)."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 6, padding_idx=0)
            self.encoder = nn.Sequential(
                nn.Linear(6, 16), nn.BatchNorm1d(16), nn.GELU(approximate="tanh"),
                nn.Dropout(0.1), nn.Linear(16, 16, bias=False), nn.LayerNorm(16), nn.SiLU())
            self.heads = nn.ModuleDict({"cls": nn.Sequential(nn.Linear(16, 4),
                                                             nn.LogSoftmax(dim=1)),
                                        "reg": nn.Linear(16, 1)})
            self.extras = nn.ModuleList([nn.Flatten(), nn.Unflatten(1, (2, 8)), nn.Identity(),
                                         nn.Softplus(beta=2.0), nn.ELU(alpha=0.5),
                                         nn.LeakyReLU(0.2), nn.Tanh(), nn.Sigmoid(), nn.ReLU()])
            self.losses = nn.ModuleList([nn.CrossEntropyLoss(label_smoothing=0.1),
                                         nn.BCEWithLogitsLoss(), nn.SmoothL1Loss(beta=0.5)])

        def forward(self, idx):
            h = self.encoder(self.embed(idx).mean(dim=1))
            return self.heads["cls"](h), self.heads["reg"](h)

    return Net()


def test_module_repr_equals_torchs(torch):
    assert repr(make_model(tg)) == repr(make_model(torch))


def test_state_dict_keys_equal_torchs(torch):
    ours, theirs = make_model(tg), make_model(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype), k


@pytest.mark.parametrize("convert", ["numpy", "tensor"])
def test_load_state_dict_from_torch_via_numpy(torch, convert):
    torch.manual_seed(0)
    theirs = make_model(torch)
    idx = np.random.default_rng(0).integers(0, 10, (8, 5))
    theirs(torch.tensor(idx))                          # one training step of BatchNorm stats
    theirs.eval()
    sd = {k: v.numpy() for k, v in theirs.state_dict().items()}
    if convert == "tensor":
        sd = {k: tg.from_numpy(v) for k, v in sd.items()}
    ours = make_model(tg)
    result = ours.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    assert ours.encoder[1].num_batches_tracked.item() == 1
    ours.eval()
    with torch.no_grad():
        expected = [t.numpy() for t in theirs(torch.tensor(idx))]
    with tg.no_grad():
        actual = [t.numpy() for t in ours(tg.tensor(idx))]
    for a, b in zip(actual, expected):
        assert_close(a, b, "float32")
    for k, v in ours.state_dict().items():                  # copied, not shared with numpy's
        assert not np.shares_memory(v.numpy(), sd[k] if convert == "numpy" else sd[k].numpy())


# -------------------------------------------------------------------------------------------------
# optimizer + scheduler, gradient clipping
# -------------------------------------------------------------------------------------------------

def _sgd_steplr(lib, w0, b0, x_np, y_np):
    model = lib.nn.Linear(3, 2)
    model.load_state_dict({"weight": lib.from_numpy(w0.copy()), "bias": lib.from_numpy(b0.copy())})
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)
    lrs, weights = [], []
    for _ in range(10):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        lrs.append((opt.param_groups[0]["lr"], sched.get_last_lr()[0]))
        sched.step()
        weights.append(model.weight.detach().numpy().copy())
    return lrs, weights, sched.get_last_lr()


def _sgd_data():
    rng = np.random.default_rng(8)
    return (rng.standard_normal((2, 3)).astype(np.float32),
            rng.standard_normal(2).astype(np.float32),
            rng.standard_normal((16, 3)).astype(np.float32),
            rng.standard_normal((16, 2)).astype(np.float32))


def test_sgd_with_steplr_by_hand():
    lrs, weights, last = _sgd_steplr(tg, *_sgd_data())
    expected = [0.1] * 3 + [0.05] * 3 + [0.025] * 3 + [0.0125]
    assert [a for a, _ in lrs] == [b for _, b in lrs]
    np.testing.assert_allclose([a for a, _ in lrs], expected, rtol=1e-15)
    np.testing.assert_allclose(last, [0.0125], rtol=1e-15)     # epoch 10: 0.1 * 0.5 ** 3
    assert not np.allclose(weights[0], weights[-1])


def test_sgd_with_steplr_matches_torch(torch):
    data = _sgd_data()
    ours = _sgd_steplr(tg, *data)
    theirs = _sgd_steplr(torch, *data)
    assert ours[0] == theirs[0]                                     # identical lr sequences
    assert ours[2] == theirs[2]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _clip_case(lib, dtype, norm_type, max_norm, bad=None, seed=3):
    r = np.random.default_rng(seed)
    params = [lib.nn.Parameter(lib.zeros(*s, dtype=getattr(lib, dtype)))
              for s in [(3, 4), (5,), (2, 2, 2)]]
    for p in params:
        p.grad = lib.tensor(r.standard_normal(tuple(p.shape)).astype(dtype))
    if bad is not None:
        params[2].grad = lib.tensor(np.array([[[1, 2], [bad, 3]], [[0, 1], [2, 3]]], dtype))
    total = lib.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    return total.numpy(), str(total.dtype), [p.grad.numpy() for p in params]


CLIP_TOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("norm_type", [1, 2, 2.5, "inf", float("inf")], ids=str)
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
@pytest.mark.parametrize("bad", [None, float("nan"), float("inf")], ids=["finite", "nan", "inf"])
def test_clip_grad_norm_matches_torch(torch, dtype, norm_type, max_norm, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)         # numpy, building inf/nan grads
        ours = _clip_case(tg, dtype, norm_type, max_norm, bad)
        theirs = _clip_case(torch, dtype, norm_type, max_norm, bad)
    assert ours[1] == theirs[1] == f"torch.{dtype}"
    tol = CLIP_TOL[dtype]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=tol)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=0)


def test_clip_grad_norm_by_hand():
    a, b = nn.Parameter(tg.zeros(2)), nn.Parameter(tg.zeros(2))
    a.grad, b.grad = tg.tensor([3.0, 0.0]), tg.tensor([0.0, -4.0])
    assert nn.utils.clip_grad_norm_([a, b], 10.0).item() == 5.0
    assert a.grad.tolist() == [3.0, 0.0]                          # under max_norm: untouched
    assert nn.utils.clip_grad_norm_([a, b], 1.0, norm_type=1).item() == 7.0
    np.testing.assert_allclose(b.grad.numpy(), [0.0, -4 / (7 + 1e-6)], rtol=1e-6)
    a.grad, b.grad = tg.tensor([3.0, 0.0]), tg.tensor([0.0, -4.0])
    assert nn.utils.clip_grad_norm_([a, b], 1.0, norm_type="inf").item() == 4.0
    np.testing.assert_allclose(a.grad.numpy(), [0.75, 0.0], rtol=1e-6)
    assert nn.utils.clip_grad_norm_(nn.Parameter(tg.ones(2)), 1.0).item() == 0.0   # no grads
    # a non-finite norm: PyTorch scales by the NaN/0 coefficient anyway
    a.grad, b.grad = tg.tensor([float("nan"), 1.0]), tg.tensor([1.0, 2.0])
    assert math.isnan(nn.utils.clip_grad_norm_([b, a], 1.0, norm_type="inf").item())
    assert np.isnan(a.grad.numpy()).all() and np.isnan(b.grad.numpy()).all()
    a.grad, b.grad = tg.tensor([float("inf"), 1.0]), tg.tensor([1.0, 2.0])
    assert nn.utils.clip_grad_norm_([a, b], 1.0).item() == math.inf
    assert np.isnan(a.grad.numpy()[0]) and a.grad.numpy()[1] == 0 and b.grad.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    h = nn.Parameter(tg.zeros(1000, dtype=tg.float16))
    g = np.random.default_rng(1).standard_normal(1000).astype(np.float16)
    h.grad = tg.tensor(g)
    total = nn.utils.clip_grad_norm_([h], 1e4, norm_type=3)     # accumulated in float32
    assert total.dtype == tg.float16
    assert total.item() == np.float16(np.linalg.norm(g.astype(np.float32), 3))


def test_huber_loss_module(torch):
    import numpy as np
    x = np.array([[0.2, -1.5, 3.0], [0.0, 0.7, -0.1]])
    t = np.array([[0.0, 0.0, 1.0], [2.0, 0.5, 0.4]])
    for reduction in ("mean", "sum", "none"):
        for delta in (1.0, 0.5):
            ours_in = tg.tensor(x, requires_grad=True)
            theirs_in = torch.tensor(x, requires_grad=True)
            ours = tg.nn.HuberLoss(reduction, delta)(ours_in, tg.tensor(t))
            theirs = torch.nn.HuberLoss(reduction, delta)(theirs_in, torch.tensor(t))
            ours.sum().backward()
            theirs.sum().backward()
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), rtol=1e-12)
    assert repr(tg.nn.HuberLoss(delta=0.5)) == "HuberLoss()"
    assert tg.nn.HuberLoss(delta=2.0)(tg.tensor([3.0]), tg.tensor([0.0])).item() == 2.0 * (3.0 - 1.0)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=(5,)), dict(kernel_size=3, padding=(0, 0)),
                                    dict(kernel_size=3, padding="same"),
                                    dict(kernel_size=(3, 2), padding=(1, 0), dilation=(2, 1))])
def test_conv_repr_with_short_kernel_tuples_equals_torchs(torch, kwargs):
    # torch compares padding with (0,) * len(padding): a kernel_size=(5,) typo (DeepLizard's
    # lesson 17) prints no padding
    assert repr(tg.nn.Conv2d(1, 6, **kwargs)) == repr(torch.nn.Conv2d(1, 6, **kwargs))


@pytest.mark.parametrize("shape", [(3, 3), (3, 3, 1), (4, 3, 1, 1), (3, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradient_with_a_strided_weight(torch, shape, training):
    # PyTorch's CPU kernel misreads a non-contiguous weight when each channel holds one element
    # per sample (its gradcheck fails: fuzz seed 60607292); the right answer is PyTorch's with the
    # same weight values made contiguous, and tapegrad's strided and contiguous weights agree.
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal(shape)
    w0 = rng.standard_normal(2 * shape[1])
    g0 = rng.standard_normal(shape)

    def input_grad(T, strided):
        x = T.tensor(x0, requires_grad=True)
        wb = T.tensor(w0, requires_grad=True)
        w = wb[::2] if strided else wb[::2].contiguous()
        rm, rv = T.zeros(shape[1], dtype=T.float64), T.ones(shape[1], dtype=T.float64)
        y = T.nn.functional.batch_norm(x, rm, rv, w, None, training=training)
        y.backward(T.tensor(g0))
        return x.grad.numpy(), wb.grad.numpy()
    expected = input_grad(torch, strided=False)
    for strided in (True, False):
        for a, b in zip(input_grad(tg, strided), expected):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
