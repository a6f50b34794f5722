"""vmap with batching rules (tapegrad/_vmap.py): results against torch.func.vmap, against the
un-mapped op run on the batch (bitwise where the rule runs that very op), the function running
once, the op-level loop for ops without a rule, nesting and transforms inside vmap."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _torch_names, _vmap

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

RNG = np.random.default_rng(7)
A = RNG.standard_normal((4, 3, 5))          # a batch of 4 samples of shape (3, 5)
B = RNG.standard_normal((4, 5))
W = RNG.standard_normal((6, 5))
BIAS = RNG.standard_normal(6)
V = RNG.standard_normal(5)
T = np.array([2, 0, 1, 2])

# Expressions evaluated with lib = torch and lib = tapegrad; A, B, W, BIAS, V, T as float64
# (T int64) tensors, F the functional namespace, vmap lib.func.vmap.
SAME = [
    # elementwise, broadcasting against unbatched operands of any rank
    "vmap(lambda a: a.sin() * 2 + 1)(A)",
    "vmap(lambda a: lib.tanh(a) - a.exp().log1p())(A)",
    "vmap(lambda a, b: a * b)(A, B)",
    "vmap(lambda a, v: a + v, in_dims=(0, None))(A, V)",
    "vmap(lambda b: b + lib.ones(2, 1, 5, dtype=lib.float64))(B)",
    "vmap(lambda b: lib.maximum(b, V) + lib.where(b > 0, b, V))(B)",
    "vmap(lambda b: (b ** 2, 2 ** b, 1 - b, 1 / (b.abs() + 1)))(B)",
    "vmap(lambda a: (a > 0).float() + (a == a).double())(A)",
    "vmap(lambda b: F.relu(b, inplace=False) + F.gelu(b) + F.leaky_relu(b, 0.2) + F.silu(b))(B)",
    "vmap(lambda a: lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Softmax(-1))(a))(A)",
    # matmul, linear, dot
    "vmap(lambda a: a @ W.T)(A)",
    "vmap(lambda b: W @ b)(B)",
    "vmap(lambda b: b @ V)(B)",
    "vmap(lambda b, c: lib.dot(b, c))(B, B * 2)",
    "vmap(lambda a, b: a @ b)(A, B)",
    "vmap(lambda a: a.T @ a)(A)",
    "vmap(lambda a: lib.matmul(lib.ones(2, 7, 3, dtype=lib.float64), a))(A)",
    "vmap(lambda a: F.linear(a, W, BIAS))(A)",
    "vmap(lambda b: F.linear(b, W))(B)",
    # reductions and softmaxes over dims
    "vmap(lambda a: a.sum())(A)",
    "vmap(lambda a: (a.sum(0), a.sum(-1, keepdim=True), a.mean((0, 1))))(A)",
    "vmap(lambda a: (a.amax(1), a.max(1), a.argmax(), a.max()))(A)",
    "vmap(lambda a: (a.std(1), a.var(), a.logsumexp(0), a.prod(1)))(A)",
    "vmap(lambda a: (a.softmax(-1), F.log_softmax(a, dim=0), lib.softmax(a, 1)))(A)",
    "vmap(lambda a: (a.cumsum(1), lib.sum(a, dim=1), lib.mean(a)))(A)",
    "vmap(lambda b: b[0].sum(0))(B)",
    # shape ops
    "vmap(lambda a: (a.reshape(15), a.view(5, 3), a.reshape(-1, 5), a.flatten()))(A)",
    "vmap(lambda a: (a.transpose(0, 1), a.permute(1, 0), a.t(), a.T, a.movedim(0, 1)))(A)",
    "vmap(lambda a: (a.unsqueeze(0), a.unsqueeze(-1), a[None].squeeze(0), a.squeeze()))(A)",
    "vmap(lambda b: (b.expand(3, 5), b.unsqueeze(0).expand_as(lib.ones(2, 5))))(B)",
    "vmap(lambda a: (a[0], a[:, 1:3], a[..., -1], a[1, 2], a[None, :2]))(A)",
    "vmap(lambda a: a[lib.tensor([2, 0])])(A)",
    "vmap(lambda a: (a[[0, 2]], a[:, [4, 1]], a[lib.tensor([1, 0]), 3]))(A)",
    "vmap(lambda a: (a[lib.tensor([2, 1]), :, None], a[1, lib.tensor([0, 0, 4])]))(A)",
    "vmap(lambda b: (b.max(V), lib.max(b, V), b.min(V), lib.minimum(V, b)))(B)",
    "vmap(lambda a: (lib.stack([a, a * 2]), lib.stack([a, a], 2), lib.cat([a, a], 1)))(A)",
    "vmap(lambda a: lib.stack([a[0], V]))(A)",
    "vmap(lambda a: lib.cat([a, lib.zeros(1, 5, dtype=lib.float64)]))(A)",
    "vmap(lambda a: (a.select(1, 2), a.narrow(1, 1, 2), a.unbind(0), a.chunk(3, 1)))(A)",
    "vmap(lambda a: (lib.zeros_like(a), lib.ones_like(a) * a, a.new_zeros(2)))(A)",
    # losses
    "vmap(lambda b: F.mse_loss(b, V))(B)",
    "vmap(lambda b, c: (F.mse_loss(b, c, reduction='sum'), F.l1_loss(b, c)))(B, B * 0.5)",
    "vmap(lambda a, t: F.cross_entropy(a, t))(A[:, :, :3], lib.stack([T[:3]] * 4))",
    "vmap(lambda b, t: F.cross_entropy(b, t))(B, T)",
    # in_dims / out_dims
    "vmap(lambda a: a * 2, in_dims=1)(A)",
    "vmap(lambda a: a.sum(0), in_dims=2, out_dims=1)(A)",
    "vmap(lambda a, v: (a, v), in_dims=(0, None), out_dims=(1, None))(A, V)",
    "vmap(lambda d: d['x'] @ d['w'].T, in_dims=({'x': 0, 'w': None},))({'x': A, 'w': W})",
    "vmap(lambda b: lib.ones(2, dtype=lib.float64))(B)",
    "vmap(lambda a, v: (a.sum(0) * v, v), in_dims=(1, None), out_dims=(1, 0), "
    "chunk_size=2)(A, V)",
    "vmap(lambda b: b.exp(), chunk_size=3)(B)",
    # nesting and transforms inside vmap
    "vmap(vmap(lambda v: v.sin() @ V))(A)",
    "vmap(vmap(lambda x, y: x * y), in_dims=(0, None))(A, A[0])",
    "vmap(lambda a: vmap(lambda r: (r * a[0]).sum())(a))(A)",
    "vmap(lib.func.grad(lambda b: (b.sin() * V).sum()))(B)",
    "vmap(lib.func.grad(lambda w, b: (F.linear(b, w) ** 2).sum()), in_dims=(None, 0))(W, B)",
    "vmap(lib.func.jacrev(lambda b: F.linear(b, W, BIAS).tanh()))(B)",
    "vmap(lib.func.jacfwd(lambda b: F.linear(b, W, BIAS).tanh()))(B)",
    "vmap(lib.func.hessian(lambda b: b.sin().sum() * b.sum()))(B)",
    "vmap(lambda b: lib.func.jvp(lambda x: x.exp(), (b,), (V,)))(B)",
    "vmap(lambda c: lib.func.vjp(lambda x: x.sin() * 2, V)[1](c))(B)",
    "vmap(lib.func.grad(lib.func.grad(lambda x: x.sin() * x)))(B[:, 0])",
    "lib.func.jacrev(lambda b: vmap(lambda r: r.sin() @ V)(b))(B)",
    "lib.func.grad(lambda w: vmap(lambda b: (F.linear(b, w) ** 2).sum())(B).sum())(W)",
]

ERRORS = [
    "vmap(lambda a: a.item())(A)",
    "vmap(lambda a: float(a.sum()))(A)",
    "vmap(lambda a: a.sum() if a.sum() > 0 else a.sum())(A)",
    "vmap(lambda a: (a, a.sum()), out_dims=(0, None))(A)",
    "vmap(lambda a: a + lib.randn(5))(A)",
    "vmap(lambda a: a.sum(3))(A)",
    "vmap(lambda a: a[a > 0].sum())(A)",
    "vmap(lambda a: a, chunk_size=0)(A)",
]


def _env(lib):
    env = {"lib": lib, "F": lib.nn.functional, "vmap": lib.func.vmap}
    for name, value in (("A", A), ("B", B), ("W", W), ("BIAS", BIAS), ("V", V)):
        env[name] = lib.tensor(value, dtype=lib.float64)
    env["T"] = lib.tensor(T)
    return env


def _as_numpy(value):
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    return value.detach().numpy() if hasattr(value, "detach") else value


def _assert_same(ours, theirs, exact=False):
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b, exact)
        return
    assert np.shape(ours) == np.shape(theirs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    if exact:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.fixture
def no_whole_function_loop(monkeypatch):
    """Fail if vmap falls back to running the whole function per sample."""
    real = tg.func._vmap_by_loop

    def refuse(*args):
        if args[6] == "error":
            raise AssertionError("vmap ran the whole function per sample")
        return real(*args)
    monkeypatch.setattr(tg.func, "_vmap_by_loop", refuse)


# What runs per sample (no rule): advanced indices mixed with integers.
LOOPS = {"vmap(lambda a: (a[[0, 2]], a[:, [4, 1]], a[lib.tensor([1, 0]), 3]))(A)",
         "vmap(lambda a: (a[lib.tensor([2, 1]), :, None], a[1, lib.tensor([0, 0, 4])]))(A)"}


@pytest.mark.parametrize("expr", SAME)
def test_vmap_matches_torch(torch, expr, no_whole_function_loop, monkeypatch):
    if expr not in LOOPS:
        def refuse(fn, name, args, kwargs):
            raise AssertionError(f"{name} ran per sample")
        monkeypatch.setattr(_vmap, "_loop", refuse)
    ours = _as_numpy(eval(expr, _env(tg)))
    monkeypatch.undo()
    theirs = _as_numpy(eval(expr, _env(torch)))
    _assert_same(ours, theirs)
    assert not _vmap.active() and not _vmap._patched      # every level closed, classes restored
    assert type(tg.nn.functional) is _torch_names.TorchNamedModule  # its own class, restored


@pytest.mark.parametrize("expr", ERRORS)
def test_vmap_errors_match_torch(torch, expr):
    caught = []
    for lib in (tg, torch):
        with pytest.raises(Exception) as info:
            eval(expr, _env(lib))
        caught.append(info.value)
    ours, theirs = caught
    assert isinstance(ours, type(theirs)) or type(theirs) in type(ours).__mro__, \
        (type(ours), type(theirs), ours, theirs)
    assert not _vmap.active() and not _vmap._patched


@pytest.mark.parametrize("expr, unmapped", [
    ("vmap(lambda a: F.linear(a, W, BIAS))(A)", "F.linear(A, W, BIAS)"),
    ("vmap(lambda a: a.tanh() * 3 - a)(A)", "A.tanh() * 3 - A"),
    ("vmap(lambda b: b @ W.T)(B)", "B @ W.T"),
    ("vmap(lambda a: a.softmax(-1))(A)", "A.softmax(-1)"),
    ("vmap(lambda a: a.sum(1))(A)", "A.sum(2)"),
    ("vmap(lambda a: a.permute(1, 0).reshape(15))(A)", "A.permute(0, 2, 1).reshape(4, 15)"),
    ("vmap(lambda b: F.cross_entropy(b, T[0], reduction='none'))(B)",
     "F.cross_entropy(B, T[:1].expand(4), reduction='none')"),
])
def test_rules_equal_the_unmapped_op_on_the_batch_bitwise(expr, unmapped):
    env = _env(tg)
    np.testing.assert_array_equal(eval(expr, env).numpy(), eval(unmapped, env).numpy())


def test_function_runs_once_and_fallback_loops_per_sample(no_whole_function_loop):
    calls = []

    def f(a):
        calls.append(type(a).__name__)
        # cummax has no rule: it runs per sample; the rest runs once on the batch
        return a.cummax(1).values * 2 + lib_trace(a)

    def lib_trace(a):
        return a.diagonal().sum()
    x = tg.tensor(A)
    out = tg.func.vmap(f)(x)
    assert calls == ["BatchedTensor"]
    expected = np.maximum.accumulate(A, axis=2) * 2 + \
        np.trace(A[:, :, :3], axis1=1, axis2=2)[:, None, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_per_sample_gradients_match_a_loop_of_backward_passes():
    model = tg.nn.Sequential(tg.nn.Linear(5, 4), tg.nn.Tanh(), tg.nn.Linear(4, 3)).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, t = tg.tensor(B), tg.tensor(T[:4] % 3)

    def loss(p, xb, tb):
        out = tg.func.functional_call(model, p, (xb.unsqueeze(0),))
        return tg.nn.functional.cross_entropy(out, tb.unsqueeze(0))
    grads = tg.func.vmap(tg.func.grad(loss), in_dims=(None, 0, 0))(params, x, t)
    for i in range(4):
        model.zero_grad()
        loss(dict(model.named_parameters()), x[i], t[i]).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(grads[k][i].numpy(), p.grad.numpy(), rtol=1e-10,
                                       atol=1e-12)


def test_batch_jacobian_equals_jacobian_of_the_summed_batch_bitwise():
    # the jacobians tutorial's check: vmap(jacrev(f)) and jacrev(f(x).sum(0)).movedim(1, 0)
    # run the same ops on the same batch
    rng = np.random.default_rng(0)
    w = tg.tensor(rng.standard_normal((33, 31)), dtype=tg.float32)
    b = tg.tensor(rng.standard_normal(33), dtype=tg.float32)
    x = tg.tensor(rng.standard_normal((64, 31)), dtype=tg.float32)

    def predict(w, b, x):
        return tg.nn.functional.linear(x, w, b).tanh()
    per_sample = tg.func.vmap(tg.func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(
        w, b, x)
    summed = tg.func.jacrev(lambda w, b, x: predict(w, b, x).sum(0), argnums=2)(
        w, b, x).movedim(1, 0)
    np.testing.assert_array_equal(per_sample.numpy(), summed.numpy())


def test_randomness_modes(torch):
    for lib in (tg, torch):
        lib.manual_seed(0)
        x = lib.zeros(3, 4)
        same = lib.func.vmap(lambda a: a + lib.rand(4), randomness="same")(x)
        different = lib.func.vmap(lambda a: a + lib.rand(4), randomness="different")(x)
        assert bool((same[0] == same[1]).all()) and bool((same[1] == same[2]).all())
        assert not bool((different[0] == different[1]).all())


def test_unwrapped_function_falls_back_to_the_loop():
    # a public function captured before vmap, called by a nested helper: the whole function
    # runs per sample
    tanh = _vmap.original(tg.tanh)

    def f(a):
        return tanh(a) * 2
    np.testing.assert_allclose(tg.func.vmap(f)(tg.tensor(A)).numpy(), np.tanh(A) * 2,
                               rtol=1e-12)
    assert not _vmap.active()


def test_chunked_jacobians_equal_unchunked():
    x = tg.tensor(V)

    def f(v):
        return v.sin() * v.sum()
    full = tg.func.jacrev(f)(x)
    np.testing.assert_array_equal(tg.func.jacrev(f, chunk_size=2)(x).numpy(), full.numpy())
    with pytest.raises(ValueError, match="chunk_size"):
        tg.func.jacrev(f, chunk_size=0)


def test_vmaps_in_threads_keep_their_own_levels():
    import threading
    x = tg.tensor(A)
    expected = np.tanh(A).sum(2) * 2
    errors = []

    def work():
        try:
            for _ in range(20):
                out = tg.func.vmap(tg.func.vmap(lambda r: r.tanh().sum() * 2))(x)
                np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
        except Exception as exc:      # reported below, from the main thread
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert not _vmap.active() and not _vmap._patched
