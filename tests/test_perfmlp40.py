"""Issue 19's MLP step replayed: the fixed costs around the replayed call (perfmlp40)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn  # noqa: F401  (registers nn's own dispatching subclasses)
from tapegrad import overrides, replay


# -- compiled calls look for dispatching subclass instances in C ---------------------------------

class Seen(tg.Tensor):
    """A subclass that keeps the __torch_function__ protocol and notes the calls it sees."""
    calls = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.fixture
def context_calls(monkeypatch):
    """The calls that took CompiledFunction._context_call (the Python detour)."""
    seen = []
    original = replay.CompiledFunction._context_call

    def counting(self, args, kwargs):
        seen.append(args)
        return original(self, args, kwargs)

    monkeypatch.setattr(replay.CompiledFunction, "_context_call", counting)
    return seen


def test_nn_imported_plain_calls_replay_without_the_python_detour(context_calls):
    # nn's UninitializedParameter / UninitializedBuffer dispatch: the set is not empty
    assert overrides._SUBCLASS_TYPES
    f = tg.compile(lambda a, b: (a * b).sum())
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([3.0, 4.0])
    for _ in range(3):
        f(x, y).backward()
    assert f.stats["replays"] == 2 and f.stats["eager"] == 0
    assert context_calls == []
    assert x.grad.tolist() == [9.0, 12.0]


@pytest.mark.parametrize("wrap", ["plain", "list", "tuple", "keyword"])
def test_an_argument_holding_a_dispatching_instance_still_runs_eagerly(context_calls, wrap):
    f = tg.compile(lambda a, b: (a[0] if isinstance(a, (list, tuple)) else a) + b)
    y = tg.tensor([1.0, 2.0])
    plain = tg.tensor([3.0, 4.0])
    for _ in range(2):                          # captured, then replayed
        f(plain, y)
    sub = tg.tensor([5.0, 6.0]).as_subclass(Seen)
    Seen.calls.clear()
    arg = {"plain": sub, "list": [sub], "tuple": (sub,), "keyword": sub}[wrap]
    out = f(arg, b=y) if wrap == "keyword" else f(arg, y)
    assert out.tolist() == [6.0, 8.0]
    assert len(context_calls) == 1             # only the call with the instance took the detour
    assert Seen.calls                          # the subclass saw the eager call's ops
    assert f.stats["eager"] == 1
    f(plain, y)                                 # and plain calls replay again
    assert len(context_calls) == 1


# -- SGD's plain update in one C call (optim/sgd.py, _core._add_scaled_grads) -------------------

def sgd_steps(lib, arrays, grads_per_step, **kw):
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    opt = lib.optim.SGD(params, lr=0.1, **kw)
    for grads in grads_per_step:
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad = None if g is None else lib.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plain_sgd_update_equals_the_general_path_and_torch(dtype, monkeypatch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    shapes = [(7, 5), (5,), (3, 1, 2), ()]
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    arrays[0][0, 0] = np.nan
    arrays[1][0] = -0.0
    steps = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(3)]
    steps[1][2] = None                                      # a parameter without a gradient
    fast = sgd_steps(tg, arrays, steps)
    theirs = sgd_steps(torch, arrays, steps)
    calls = []
    monkeypatch.setattr(tg._core, "_add_scaled_grads", lambda *a: calls.append(a) or False)
    general = sgd_steps(tg, arrays, steps)
    assert len(calls) == 3
    for f, g, t in zip(fast, general, theirs):
        assert f.dtype == dtype
        np.testing.assert_array_equal(bits(f), bits(g))
        np.testing.assert_array_equal(bits(f), bits(t))


def test_plain_sgd_update_bumps_versions():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()                   # saves w
    w.grad = tg.ones(2)
    tg.optim.SGD([w], lr=0.5).step()
    assert w.tolist() == [0.5, 1.5]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("odd", ["complex", "float16", "strided", "readonly", "sparse"])
def test_plain_sgd_update_leaves_other_groups_to_the_general_path(odd, monkeypatch):
    """A group with one parameter the C call does not take: it writes nothing (not even the
    plain parameter before it), and the general path updates the group as before."""
    plain = tg.tensor([1.0, 2.0], requires_grad=True)
    plain.grad = tg.tensor([1.0, 1.0])
    if odd == "complex":
        other = tg.tensor([1 + 1j, 2 - 1j], requires_grad=True)
        other.grad = tg.tensor([1 + 0j, 0 + 1j])
    elif odd == "float16":
        other = tg.tensor([1.0, 2.0], dtype=tg.float16, requires_grad=True)
        other.grad = tg.ones(2, dtype=tg.float16)
    elif odd == "strided":
        base = tg.zeros(2, 4)
        other = base[:, ::2].detach().requires_grad_()
        other.grad = tg.ones(2, 2)
    elif odd == "readonly":
        other = tg.tensor([1.0, 2.0], requires_grad=True)
        other.grad = tg.ones(2)
    else:
        other = tg.nn.Embedding(3, 2, sparse=True)
        other(tg.tensor([0, 2])).sum().backward()
        other = other.weight
    if odd == "readonly":
        other._array.flags.writeable = False
    with tg.no_grad():
        want = [(plain - 0.1 * plain.grad).numpy().copy()]
    opt = tg.optim.SGD([plain, other], lr=0.1)
    seen = []
    real = tg._core._add_scaled_grads
    monkeypatch.setattr(tg._core, "_add_scaled_grads",
                        lambda ps, a: seen.append(real(ps, a)) or seen[-1])
    before = plain.detach().numpy().copy()
    if odd == "readonly":
        with pytest.raises(ValueError):         # numpy's refusal, from the general path
            opt.step()
        np.testing.assert_array_equal(plain.detach().numpy(), want[0])
    else:
        opt.step()
        np.testing.assert_array_equal(plain.detach().numpy(), want[0])
    assert seen == [False] and not np.array_equal(before, plain.detach().numpy())


# -- cross_entropy as one replay step (ops_nn.pxi: replay_cross_entropy) -----------------------

F = tg.nn.functional


def ce_run(fn, logits, targets, w):
    """fn(logits @ w, target) and its backward per call: (losses, logits grads, w grads)."""
    W = tg.tensor(w, requires_grad=True)
    out = []
    for x, t in zip(logits, targets):
        X = tg.tensor(x, requires_grad=True)
        loss = fn(X, W, tg.tensor(t))
        loss.backward()
        out.append((loss.detach().numpy().copy(), X.grad.numpy().copy(), W.grad.numpy().copy()))
        W.grad = None
    return out


def ce_case(dtype, n, c, seed, ignore=()):
    rng = np.random.default_rng(seed)
    logits = [(rng.standard_normal((n, c)) * 4).astype(dtype) for _ in range(4)]
    logits[1][0, :] = 80                            # a row of equal large values
    targets = [rng.integers(0, c, n) for _ in range(4)]
    for i in ignore:
        targets[2][i] = -100
    return logits, targets, rng.standard_normal((c, c)).astype(dtype)


def assert_same_bits(got, want):
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(bits(a), bits(b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("n,c,ignore", [(64, 10, ()), (5, 3, (0, 4)), (1, 7, ()),
                                         (9, 1, ()), (4, 6, (0, 1, 2, 3))])
def test_compiled_cross_entropy_is_one_step_equal_to_eager(dtype, reduction, n, c, ignore):
    """Values and gradients (through a product before it) bit for bit over calls with changing
    inputs, ignored targets included (all of them: a mean of nothing, NaN)."""
    def fn(x, w, t):
        return F.cross_entropy(x @ w, t, reduction=reduction)

    logits, targets, w = ce_case(dtype, n, c, n * 100 + c, ignore)
    compiled = tg.compile(fn)
    got = ce_run(compiled, logits, targets, w)
    assert_same_bits(got, ce_run(fn, logits, targets, w))
    assert compiled.stats["replays"] == 3
    assert compiled.explain() == "replayed: 2 steps"        # the product, cross_entropy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_cross_entropy_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    logits, targets, w = ce_case(dtype, 16, 5, 7, ignore=(3,))
    compiled = tg.compile(lambda x, w, t: F.cross_entropy(x @ w, t))
    got = ce_run(compiled, logits, targets, w)
    for (loss, gx, gw), x, t in zip(got, logits, targets):
        X = torch.tensor(x, requires_grad=True)
        W = torch.tensor(w, requires_grad=True)
        L = torch.nn.functional.cross_entropy(X @ W, torch.tensor(t))
        L.backward()
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(loss, L.detach().numpy(), rtol=tol)
        np.testing.assert_allclose(gx, X.grad.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(gw, W.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", ["none", "weight", "probabilities", "1-d", "3-d",
                                  "smoothing", "int32 target"])
def test_cross_entropy_outside_the_one_step_replays_as_before(case):
    """Where the one step does not apply, the call replays as its records (or re-runs) and still
    equals eager bit for bit."""
    rng = np.random.default_rng(5)
    shapes = {"1-d": (6,), "3-d": (4, 6, 3)}
    shape = shapes.get(case, (4, 6))
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    if case == "probabilities":
        t = tg.tensor(rng.dirichlet(np.ones(6), 4).astype(np.float32))
    elif case == "1-d":
        t = tg.tensor(2)
    elif case == "3-d":
        t = tg.tensor(rng.integers(0, 6, (4, 3)))
    elif case == "int32 target":
        t = tg.tensor(rng.integers(0, 6, 4), dtype=tg.int32)
    else:
        t = tg.tensor(rng.integers(0, 6, 4))
    kw = {"none": dict(reduction="none"), "weight": dict(weight=tg.linspace(0.5, 2, 6)),
          "smoothing": dict(label_smoothing=0.1)}.get(case, {})

    def fn(x):
        return F.cross_entropy(x * 2, t, **kw).sum()

    compiled = tg.compile(fn)
    for x in xs:
        a = tg.tensor(x, requires_grad=True)
        b = tg.tensor(x, requires_grad=True)
        try:
            want = fn(b)
        except Exception as e:              # (torch refuses an int32 target: so must both)
            with pytest.raises(type(e)):
                compiled(a)
            return
        got = compiled(a)
        got.backward()
        want.backward()
        np.testing.assert_array_equal(bits(got.detach().numpy()), bits(want.detach().numpy()))
        np.testing.assert_array_equal(bits(a.grad.numpy()), bits(b.grad.numpy()))


def test_compiled_cross_entropy_refuses_a_target_out_of_bounds_as_eager():
    compiled = tg.compile(lambda x, t: F.cross_entropy(x, t))
    x = tg.randn(3, 4, requires_grad=True)
    for _ in range(2):
        compiled(x, tg.tensor([0, 1, 3])).backward()
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        compiled(x, tg.tensor([0, 4, 3]))
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(x, tg.tensor([0, 4, 3]))
    assert compiled.stats["replays"] >= 1


def test_functional_sgd_takes_its_own_gradients_not_p_grad():
    """SILENT before: the functional sgd() hands its gradients through _params_with_grad; the
    one-call update read p.grad (None, or a stale one) instead."""
    from tapegrad.optim.sgd import sgd
    p = tg.tensor([1.0, 2.0])
    p.grad = tg.tensor([100.0, 100.0])              # stale: not the step's gradient
    with tg.no_grad():
        sgd([p], [tg.tensor([1.0, -1.0])], [None], weight_decay=0.0, momentum=0.0, lr=0.5,
            dampening=0.0, nesterov=False, maximize=False)
    assert p.tolist() == [0.5, 2.5]
