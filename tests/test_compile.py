"""tapegrad.compile: a captured call replayed in C equals the eager call, values and gradients,
bit for bit; every guard sends a call that would differ back to eager capture."""
import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def same(a, b):
    """Bitwise equality of two tensors/arrays (NaNs in the same places count as equal)."""
    a = a.detach().numpy() if isinstance(a, tg.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, tg.Tensor) else np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


# Functions of (x, w): x data, w a parameter (both shaped by the case), covering every op the
# replay supports, Python-scalar operands on either side and one-element broadcasts.
OPS = {
    "add sub": lambda x, w: (x + w) - (w - 2.0) + (1.5 - x) + w.sum(),
    "mul div": lambda x, w: (x * w) / (w * w + 1.0) + 2.0 / (w + 3.0) - w / 4.0,
    "rsub rdiv": lambda x, w: (1.0 - w) * (3.0 / (w + 2.0)),
    "pow": lambda x, w: (w + 2.0) ** 2 + (w + 2.0) ** 3 + (w + 2.0) ** 0.5 + (w + 2.0) ** -1,
    "neg exp log": lambda x, w: -(w.exp() + (w * w + 1.0).log()),
    "tanh relu": lambda x, w: (w * x).tanh() + (w - 0.1).relu(),
    "sum mean": lambda x, w: (w * x).sum() + (w * w).mean() * x,
    "reductions with dims": lambda x, w: (w * x).sum(0, keepdim=True) + (w * w).mean(-1).sum(),
    "one-element broadcast": lambda x, w: w.sum() * x + x * w.mean() - w.sum() / (x + 3.0),
    "reuse": lambda x, w: (lambda h: h * h + h.tanh() * h)(w * x + w),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 50)])
@pytest.mark.parametrize("name", OPS)
def test_replay_equals_eager_values_and_gradients(name, shape, dtype):
    fn = OPS[name]
    rng = np.random.default_rng(0)
    compiled = tg.compile(fn)
    w_c = tg.tensor(rng.uniform(0.2, 1.0, shape).astype(dtype), requires_grad=True)
    w_e = tg.tensor(w_c.detach().numpy().copy(), requires_grad=True)
    for it in range(4):
        x = tg.tensor(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        out_c = compiled(x, w_c)
        out_e = fn(x, w_e)
        assert same(out_c, out_e), (it, out_c, out_e)
        seed = tg.tensor(rng.uniform(-1, 1, tuple(out_e.shape)).astype(out_e.numpy().dtype)
                         if out_e.requires_grad is False else
                         rng.uniform(-1, 1, tuple(out_e.shape)).astype(dtype))
        out_c.backward(seed)
        out_e.backward(seed)
        assert same(w_c.grad, w_e.grad), (it, w_c.grad, w_e.grad)
    # later calls replayed (the first captured), and gradients accumulated as eager ones do
    assert compiled.stats["captures"] == 1 and compiled.stats["replays"] == 3, compiled.explain()


def test_pow_exponents_eager_computes_by_numpy_replay_as_eager_does():
    # small: the C kernels (SK_BINARY); large: pow re-run whole (eager's numpy derivative)
    fn = lambda x: (x ** 1.5 + x ** 4 + x ** 0).sum()
    for size in (3, 100):
        f = tg.compile(fn)
        x = tg.tensor(np.linspace(0.5, 2, size), requires_grad=True)
        f(x)
        y = f(x)
        y.backward()
        xe = tg.tensor(np.linspace(0.5, 2, size), requires_grad=True)
        fn(xe).backward()
        assert same(y, fn(xe)) and same(x.grad, xe.grad)
        assert f.explain().startswith("replayed"), f.explain()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 16, 100])
def test_chain_replay_equals_eager(size, dtype):
    from tapegrad.bench import chain
    fn = tg.compile(lambda x: chain(x, 5, tg.tanh, tg.exp, tg.log))
    for it in range(3):
        base = np.linspace(-1, 1, size).astype(dtype) * (it + 1) / 3
        xc = tg.tensor(base, requires_grad=True)
        xe = tg.tensor(base, requires_grad=True)
        yc = fn(xc)
        ye = chain(xe, 5, tg.tanh, tg.exp, tg.log)
        assert same(yc, ye)
        g = tg.tensor(np.cos(np.arange(size)).astype(dtype))
        yc.backward(g)
        ye.backward(g)
        assert same(xc.grad, xe.grad)
    assert "replayed: 50 steps" in fn.explain()


def test_training_loop_with_an_optimizer_matches_eager():
    """A compiled loss in a loop with SGD (momentum) stepping between calls: parameters are read
    in place, so no recapture; the trajectory equals the eager one bit for bit."""
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, 64).astype(np.float32) for _ in range(8)]
    ys = [np.sin(3 * x) for x in xs]

    def run(compiled):
        a = tg.tensor(0.1, requires_grad=True)
        b = tg.tensor(-0.2, requires_grad=True)
        c = tg.tensor(0.3, requires_grad=True)

        def loss_fn(x, y):
            pred = a + b * x + c * x ** 3
            return ((pred - y) ** 2).mean()

        f = tg.compile(loss_fn) if compiled else loss_fn
        opt = tg.optim.SGD([a, b, c], lr=0.1, momentum=0.9)
        losses = []
        for step in range(40):
            x, y = xs[step % 8], ys[step % 8]
            opt.zero_grad()
            loss = f(tg.from_numpy(x), tg.from_numpy(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in (a, b, c)], f

    losses_c, params_c, f = run(True)
    losses_e, params_e, _ = run(False)
    assert losses_c == losses_e
    assert all(np.array_equal(p, q) for p, q in zip(params_c, params_e))
    assert losses_c[len(losses_c) - 1] < losses_c[0]
    assert f.stats["captures"] == 1 and f.stats["replays"] == 39


def test_accumulation_retain_graph_and_backward_twice():
    w = tg.tensor([0.5, 1.5], requires_grad=True)
    f = tg.compile(lambda x: (w * x).exp().sum())
    x = tg.tensor([1.0, 2.0])
    f(x).backward()                         # capture (eager)
    w.grad = None
    loss = f(x)                             # replay
    loss.backward(retain_graph=True)
    first = w.grad.clone()
    loss.backward()                         # kept graph: accumulates
    assert same(w.grad, first * 2)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_two_live_replays_keep_their_own_buffers():
    w = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    f = tg.compile(lambda x: (w * x).tanh().sum())
    f(tg.ones(3))
    xs = [tg.tensor([1.0, 2.0, 3.0]), tg.tensor([-3.0, 0.5, 0.25])]
    losses = [f(x) for x in xs]             # two graphs alive at once
    grads = []
    for loss in reversed(losses):
        w.grad = None
        loss.backward()
        grads.append(w.grad.clone())
    for x, g in zip(reversed(xs), grads):
        w.grad = None
        (w * x).tanh().sum().backward()
        assert same(g, w.grad)


def test_no_grad_call_has_its_own_capture_and_records_nothing():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    f = tg.compile(lambda x: (w * x).exp())
    x = tg.tensor([0.5, 0.25])
    with tg.no_grad():
        f(x)
        y = f(x)
    assert not y.requires_grad and y.grad_fn is None
    z = f(x)
    assert z.requires_grad
    assert f.stats["captures"] == 2 and f.stats["replays"] == 1


def test_outputs_several_non_differentiable_and_an_input_passed_through():
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    def fn(x):
        return [w * x, x * 2.0, x, None]

    f = tg.compile(fn)
    x = tg.tensor([3.0, 4.0])
    f(x)
    a, b, c, d = f(x)
    assert a.requires_grad and not b.requires_grad and c is x and d is None
    assert a.grad_fn.name() == "CompiledFunctionBackward"
    a.sum().backward()
    assert same(w.grad, x)


def test_ops_that_reach_no_output_are_dropped():
    f = tg.compile(lambda x: ((x * 2.0).exp(), (x + 1.0).tanh())[0])
    x = tg.tensor([1.0], requires_grad=True)
    f(x)
    assert f.explain() == "replayed: 2 steps"


# -- guards ----------------------------------------------------------------------------------

def branching(x, w):
    s = (w * x).sum()
    if s.item() > 0:                        # a Python decision on a tensor value
        return s * 2.0
    return -s


def test_value_guard_recaptures_when_a_decision_changes():
    w = tg.tensor([1.0, 1.0], requires_grad=True)
    f = tg.compile(branching)
    pos, neg = tg.tensor([1.0, 2.0]), tg.tensor([-1.0, -2.0])
    assert f(pos, w).item() == 6.0
    assert f(pos, w).item() == 6.0          # replayed
    assert f(neg, w).item() == 3.0          # guard failed: eager again, right branch
    assert f.stats["guard_failures"] == 1 and f.stats["captures"] == 2
    w.grad = None
    f(neg, w).backward()
    assert same(w.grad, tg.tensor([1.0, 2.0]))


def test_bool_guard():
    f = tg.compile(lambda x: x * 2.0 if bool((x * 1.0).sum()) else x * 3.0)
    f(tg.tensor([1.0]))
    assert f(tg.tensor([1.0])).item() == 2.0
    assert f(tg.tensor([0.0])).item() == 0.0
    assert f.stats["guard_failures"] == 1


def test_guard_failure_can_raise():
    w = tg.tensor([1.0, 1.0], requires_grad=True)
    f = tg.compile(branching, on_guard_failure="raise")
    f(tg.tensor([1.0, 2.0]), w)
    with pytest.raises(tg.replay.GuardFailure, match="guard failed"):
        f(tg.tensor([-1.0, -2.0]), w)


def test_signature_guards_shape_dtype_requires_grad_and_aliasing():
    f = tg.compile(lambda a, b: a * b + a)
    a, b = tg.ones(3), tg.ones(3)
    f(a, b)
    f(tg.ones(4), tg.ones(4))
    f(tg.ones(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64))
    f(tg.ones(3, requires_grad=True), b)
    r = f(a, a)                             # the same tensor twice: another capture
    assert same(r, tg.full((3,), 2.0))
    assert f.stats["captures"] == 5 and f.stats["replays"] == 0
    f(tg.ones(3), tg.ones(3))
    assert f.stats["replays"] == 1


def test_each_signature_change_after_a_replay_leaves_the_replayed_plan():
    """The C call path matches a call against the signature of the plan it replayed last, in
    place: a call differing from that one in any part of the signature must not replay it."""
    def fn(a, b, c=1.0):
        return (a * b) / c + a * c
    f = tg.compile(fn)
    a = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tg.tensor([4.0, 5.0, 6.0])
    base = (a, b, 0.0)
    calls = [
        ((tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]), 0.0), {}),     # shape
        ((a.double(), b.double(), 0.0), {}),                            # dtype
        ((a.detach(), b, 0.0), {}),                                     # requires_grad
        ((a, a, 0.0), {}),                                              # aliasing
        ((a, tg.tensor([[4.0, 0.0], [5.0, 0.0], [6.0, 0.0]])[:, 0], 0.0), {}),  # contiguity
        ((a, b, 2.0), {}),                                              # a number's value
        ((a, b, -0.0), {}),                                             # its sign
        ((a, b), {"c": 0.0}),                                           # a keyword
        ((a, b), {}),                                                   # a default
    ]
    for args, kwargs in calls:
        for _ in range(2):
            f(*base)                        # replayed: the shortcut now holds this plan
            f(*base)
            got, want = f(*args, **kwargs), fn(*args, **kwargs)
            assert same(got, want), (args, kwargs)
            assert got.requires_grad == want.requires_grad
            if not want.requires_grad:
                continue
            got.sum().backward()
            g = a.grad.clone()
            a.grad = None
            want.sum().backward()
            assert same(g, a.grad), (args, kwargs)
            a.grad = None
    with tg.no_grad():                      # grad mode
        y = f(*base)
    assert not y.requires_grad and same(y, fn(*base).detach())
    assert f.stats["guard_failures"] == 0
    g = tg.compile(lambda x, c: x * c)
    n = tg.tensor([1, 2, 3])
    g(n, 2)
    g(n, 2)
    assert same(g(n, 2.0), n * 2.0)                 # a number's type: 2 == 2.0, another dtype


def test_replayed_output_the_backward_does_not_read_is_not_copied_and_writable():
    """An output no step's backward reads is handed out as the program's own buffer (no copy):
    writing into it before backward changes no gradient, as in eager."""
    w = tg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    fn = lambda x: (w * 3.0, (w * x).sum())
    f = tg.compile(fn)
    for i in range(3):
        x = tg.tensor([1.0, 2.0, 3.0]) * (i + 1)
        outs = [f(x), fn(x)]
        grads = []
        for y, s in outs:
            y.mul_(10.0)
            (y.sum() + s).backward()
            grads.append(w.grad)
            w.grad = None
        assert same(outs[0][0], outs[1][0]) and same(grads[0], grads[1])
    assert f.stats["replays"] == 2


def test_closure_tensor_guard():
    w = tg.ones(3, requires_grad=True)
    holder = {"w": w}
    f = tg.compile(lambda x: holder["w"] * x)
    f(tg.ones(3))
    with tg.no_grad():
        w.mul_(2.0)                         # read in place: no recapture, new value used
    assert same(f(tg.ones(3)), tg.full((3,), 2.0))
    w.requires_grad_(False)                 # requires_grad changed: recapture
    y = f(tg.ones(3))
    assert not y.requires_grad
    assert f.stats["guard_failures"] == 1


SCALE = 2.0


def test_closure_and_global_numbers_are_guarded():
    """A number read by name is baked into the capture: changing it must not replay stale."""
    lr = 0.5
    f = tg.compile(lambda x: x * lr)
    x = tg.tensor([3.0, 4.0])
    assert same(f(x), x * 0.5) and same(f(x), x * 0.5)
    lr = 2.0                                # the closure cell now holds another number
    assert same(f(x), x * 2.0)
    assert f.stats["guard_failures"] == 1

    global SCALE
    g = tg.compile(lambda x: x * SCALE)
    g(x)
    g(x)
    try:
        SCALE = 3.0
        assert same(g(x), x * 3.0)
    finally:
        SCALE = 2.0
    assert same(g(x), x * 2.0)


def test_signed_zero_in_the_closure_is_guarded():
    c = 0.0
    f = tg.compile(lambda x: x / c)
    one = tg.tensor([1.0])
    assert f(one).item() == float("inf") and f(one).item() == float("inf")
    c = -0.0
    assert f(one).item() == float("-inf")


def test_signed_zero_arguments_have_their_own_signature():
    f = tg.compile(lambda x, c: x / c)
    one = tg.tensor([1.0])
    assert f(one, 0.0).item() == float("inf") and f(one, 0.0).item() == float("inf")
    assert f(one, -0.0).item() == float("-inf")
    assert f(one, -0.0).item() == float("-inf")


def test_closure_rebound_to_another_tensor_is_detected():
    w = tg.ones(2, requires_grad=True)
    f = tg.compile(lambda x: (w * x).sum())
    x = tg.tensor([1.0, 2.0])
    f(x)
    f(x)
    w = tg.full((2,), 10.0, requires_grad=True)     # same shape and dtype: only identity differs
    out = f(x)
    assert out.item() == 30.0
    out.backward()
    assert same(w.grad, x)


def test_random_ops_replay_with_fresh_draws_from_the_eager_stream():
    fn = lambda x: x * tg.rand(3)
    f = tg.compile(fn)
    x = tg.ones(3)
    tg.manual_seed(7)
    draws = [f(x) for _ in range(3)]
    assert not same(draws[0], draws[1])
    assert f.explain().startswith("replayed"), f.explain()
    tg.manual_seed(7)                       # the same generator stream eager draws from
    assert all(same(d, fn(x)) for d in draws)
    drop = lambda x: F.dropout(x * 2.0, 0.5, training=True)
    g = tg.compile(drop)
    w = tg.ones(100, requires_grad=True)
    tg.manual_seed(3)
    outs = []
    for _ in range(3):
        out = g(w)
        out.backward(tg.arange(100.0))
        outs.append((out.detach().numpy().copy(), w.grad.numpy().copy()))
        w.grad = None
    assert g.stats["replays"] == 2, g.explain()
    assert not np.array_equal(outs[0][0], outs[1][0])
    tg.manual_seed(3)
    for value, grad in outs:
        out = drop(w)
        out.backward(tg.arange(100.0))
        assert np.array_equal(out.detach().numpy(), value) and np.array_equal(w.grad.numpy(), grad)
        w.grad = None


def test_inplace_write_inside_the_function_runs_eagerly():
    def fn(x):
        y = x * 2.0
        y += 1.0
        return y

    f = tg.compile(fn)
    x = tg.tensor([1.0])
    f(x)
    assert same(f(tg.tensor([2.0])), tg.tensor([5.0]))
    assert "in-place" in f.explain()


def test_inplace_change_of_a_saved_input_before_backward_raises():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    f = tg.compile(lambda x: (w * x).sum())
    x = tg.tensor([3.0, 4.0])
    f(x)
    loss = f(x)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_numpy_read_and_unsupported_ops_run_eagerly():
    f = tg.compile(lambda x: x * float(x.numpy().sum()))
    f(tg.ones(2))
    assert "numpy()" in f.explain()
    m = tg.compile(lambda a, b: (a * 1.0).add_(b).sum())     # an in-place write: eager
    a = tg.ones(2, 2, requires_grad=True)
    m(a, tg.ones(2, 2))
    m(a, tg.ones(2, 2)).backward()
    assert same(a.grad, tg.full((2, 2), 1.0))
    assert m.explain().startswith("eager:") and m.stats["eager"] == 1


def test_create_graph_through_a_replay():
    # A program of C steps: the call runs again eagerly and its backward is recorded, so
    # second derivatives equal eager ones.
    w = tg.tensor([1.5, -0.5], requires_grad=True)
    fn = lambda x: ((w * x).tanh() * w + x.exp() * w * w).sum()
    f = tg.compile(fn)
    x = tg.tensor([0.3, 0.7])
    f(x)
    y = f(x)
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    (g_c,) = tg.autograd.grad(y, w, create_graph=True)
    (h_c,) = tg.autograd.grad(g_c.sum(), w)
    (g_e,) = tg.autograd.grad(fn(x), w, create_graph=True)
    (h_e,) = tg.autograd.grad(g_e.sum(), w)
    assert same(g_c, g_e) and same(h_c, h_e)
    # a program that draws from a generator= argument says it cannot
    gen = tg.Generator().manual_seed(3)
    v = tg.compile(lambda x: (w * x * tg.rand(2, generator=gen)).tanh().sum())
    v(x)
    with pytest.raises(RuntimeError, match="create_graph=True through a tapegrad.compile"):
        tg.autograd.grad(v(x), w, create_graph=True)


@pytest.mark.parametrize("case", ["view", "dropout", "softmax", "linear", "loss"])
def test_create_graph_through_a_replay_that_reruns_ops(case):
    # Programs with re-run ops (views, layers, random draws from the global stream): the call
    # runs again eagerly with the replay's random draws, so first and second derivatives and
    # the global stream afterwards equal eager's.
    import tapegrad.nn.functional as F
    w = tg.tensor([1.5, -0.5, 0.25, 2.0], requires_grad=True)
    fn = {
        "view": lambda x: ((w * x).reshape(2, 2).tanh() * w.reshape(2, 2)).sum(),
        "dropout": lambda x: (F.dropout(w * x, 0.5, training=True).tanh() * w).sum(),
        "softmax": lambda x: (F.softmax(w * x, dim=0) * w).sum(),
        "linear": lambda x: F.linear((w * x).reshape(1, 4), w.reshape(1, 4) * 2.0).tanh().sum(),
        # the call's result is a re-run op's own (handed out sharing its version counter)
        "loss": lambda x: F.mse_loss((w * x).tanh(), x * w),
    }[case]
    f = tg.compile(fn)
    x = tg.tensor([0.3, 0.7, -0.2, 0.1])
    f(x)                                                # the capture
    results = []
    for run in (f, fn):
        tg.manual_seed(1)
        y = run(x)
        (g,) = tg.autograd.grad(y, w, create_graph=True)
        (h,) = tg.autograd.grad(g.sum(), w)
        results.append((y.detach(), g.detach(), h, tg.rand(1)))
    assert f.stats["replays"] == 1, f.explain()
    for a, b in zip(*results):
        assert same(a, b)


def test_decorator_forms_and_bad_arguments():
    @tg.compile
    def f(x):
        return x * 2.0

    @tg.compile(on_guard_failure="raise")
    def g(x):
        return x + 1.0

    assert f.__name__ == "f" and same(f(tg.ones(1)), tg.full((1,), 2.0))
    assert same(g(tg.ones(1)), tg.full((1,), 2.0))
    with pytest.raises(TypeError, match="expects a callable"):
        tg.compile(3)
    with pytest.raises(ValueError, match="on_guard_failure"):
        tg.compile(lambda x: x, on_guard_failure="ignore")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_replayed_sums_equal_numpys_at_every_size(dtype):
    """The replay sums in C in numpy's pairwise order: equal to the eager (numpy) sums and to
    their gradients' one-element reductions, below and above numpy's block sizes."""
    rng = np.random.default_rng(5)
    for n in list(range(1, 140)) + [255, 256, 257, 1000, 2000, 8191, 8192, 8193, 20000]:
        base = rng.standard_normal(n).astype(dtype) * 10.0 ** rng.integers(-3, 4, n)
        w = tg.tensor(base[:1].copy(), requires_grad=True)
        fn = lambda x: ((x * w).sum() + (x * x).mean() + w * x).sum()
        f = tg.compile(fn)
        x = tg.tensor(base)
        f(x)
        y = f(x)
        y.backward()
        we = tg.tensor(base[:1].copy(), requires_grad=True)
        ye = ((x * we).sum() + (x * x).mean() + we * x).sum()
        ye.backward()
        assert same(y, ye) and same(w.grad, we.grad), n
        assert f.explain().startswith("replayed")


# -- ops re-run whole (matmul, linear, softmax, losses): their own records, swept in the replay --

def test_mlp_training_with_modules_matches_eager():
    from tapegrad import bench as B
    params, x, y = B.mlp_problem()
    x, y = x[:16], y[:16]

    def run(compiled):
        model, loss_fn, opt = B.lib_mlp(tg, params)
        f = (lambda x, y: loss_fn(model(x), y))
        f = tg.compile(f) if compiled else f
        tx, ty = tg.from_numpy(x), tg.from_numpy(y)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            loss = f(tx, ty)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in model.parameters()], f

    lc, pc, f = run(True)
    le, pe, _ = run(False)
    assert lc == le and all(np.array_equal(a, b) for a, b in zip(pc, pe))
    # linear, relu, linear, then cross_entropy (its log_softmax and nll as one step): each its
    # op's replay step (OP_REPLAY), none an eager op re-run on tensors
    assert f.explain() == "replayed: 4 steps" and f.stats["replays"] == 3
    (plan,) = f._plans.values()
    assert plan.program.calls() == []


NATIVE = {
    "linear, relu, linear, cross_entropy": lambda x, w, b, t: F.cross_entropy(
        F.linear(F.linear(x, w, b).relu(), w[:, :3] * 1.0), t),
    "linear without bias, N-d input": lambda x, w, b, t: F.linear(
        x.reshape(2, 2, 4), w).tanh().sum(),
    "linear of a transposed input": lambda x, w, b, t: F.linear(x.t().t() * 1.0, w, b).sum(),
    "cross_entropy sum, ignore_index": lambda x, w, b, t: F.cross_entropy(
        x @ w.t(), t, ignore_index=1, reduction="sum"),
    "cross_entropy none": lambda x, w, b, t: (F.cross_entropy(F.linear(x, w, b), t,
                                                              reduction="none") ** 2).sum(),
    "log_softmax, nll_loss": lambda x, w, b, t: F.nll_loss(F.log_softmax(F.linear(x, w, b), 1),
                                                           t),
    "softmax over dim 0": lambda x, w, b, t: (F.softmax(x @ w.t(), 0) * 2.0).sum(),
    # a strided input: nll_loss re-run whole (its replay step takes contiguous rows)
    "nll_loss of a transposed input": lambda x, w, b, t: F.nll_loss((w @ x.t()).t(), t),
}
NATIVE_OPS = ("linear", "cross_entropy", "log_softmax", "softmax", "nll_loss")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NATIVE)
def test_native_replay_steps_equal_eager(name, dtype):
    # linear, log_softmax and nll replay through their registered replay steps: their forward on
    # the slots' arrays and their own VJP, bit for bit eager's, without re-running them on tensors
    fn = NATIVE[name]
    rng = np.random.default_rng(5)
    f = tg.compile(fn)
    wv, bv = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal(3).astype(dtype)
    wc, bc = tg.tensor(wv, requires_grad=True), tg.tensor(bv, requires_grad=True)
    we, be = tg.tensor(wv, requires_grad=True), tg.tensor(bv, requires_grad=True)
    for _ in range(3):
        xv = rng.standard_normal((4, 4)).astype(dtype)
        t = tg.tensor(rng.integers(0, 3, 4))
        xc, xe = tg.tensor(xv, requires_grad=True), tg.tensor(xv, requires_grad=True)
        yc, ye = f(xc, wc, bc, t), fn(xe, we, be, t)
        assert same(yc, ye)
        yc.backward()
        ye.backward()
        assert same(xc.grad, xe.grad) and same(wc.grad, we.grad)
        assert (bc.grad is None) == (be.grad is None)
        assert bc.grad is None or same(bc.grad, be.grad)
    assert f.stats["replays"] == 2, f.explain()
    (plan,) = f._plans.values()
    rerun = [getattr(c[0], "__name__", "") for c in plan.program.calls()]
    assert [n for n in rerun if n in NATIVE_OPS] == (["nll_loss"] if name.startswith("nll_loss")
                                                     else []), rerun
    with tg.no_grad():
        assert same(f(xc, wc, bc, t), fn(xe, we, be, t))


def test_native_replay_step_checks_saved_operands_and_targets():
    w = tg.ones(3, 4, requires_grad=True)
    f = tg.compile(lambda x, t: F.cross_entropy(F.linear(x, w), t))
    x, t = tg.ones(2, 4), tg.tensor([0, 2])
    f(x, t)
    loss = f(x, t)
    x.mul_(2.0)                 # linear saved x for w's gradient: eager raises too
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        f(x, tg.tensor([0, 3]))
    loss = f(x, tg.tensor([1, 0]))
    loss.backward()
    assert f.stats["replays"] >= 2


TARGETS = tg.tensor([0, 2, 1])
CLASS_WEIGHTS = tg.tensor([1.0, 2.0, 0.5], dtype=tg.float64)
RERUN = {
    "matmul": lambda x, w: ((x @ w).tanh() * 2.0).sum(),
    "linear no bias": lambda x, w: F.linear(x, w * 1.0).sum(),
    "softmax": lambda x, w: (F.softmax(x @ w, dim=1) * x.sum()).sum(),
    "log_softmax": lambda x, w: (F.log_softmax(x * w.sum(), dim=0) ** 2).mean(),
    "cross_entropy kwargs": lambda x, w: F.cross_entropy(x @ w, TARGETS, label_smoothing=0.1),
    # two records (log_softmax, nll): the replay runs their VJPs itself, without a nested sweep
    "cross_entropy": lambda x, w: F.cross_entropy(x @ w, TARGETS),
    "cross_entropy weighted, ignore_index": lambda x, w: F.cross_entropy(
        (x @ w).tanh(), TARGETS, weight=CLASS_WEIGHTS, ignore_index=1, reduction="sum"),
    "mse_loss": lambda x, w: F.mse_loss(x @ w, x @ w * 0.5 + 1.0, reduction="sum"),
    # the first gradient a slot gets from a re-run op is adopted, not copied; a second one must
    # not be added into the adopted array
    "weight in two layers": lambda x, w: ((F.linear(x, w) * 2.0).sum()
                                          + F.linear(x * 0.5, w, w.sum(0) * 1.0).tanh().sum()),
    "re-run result used twice": lambda x, w: (lambda h: (h * h).sum() + (h @ w).sum())(x @ w),
}


@pytest.mark.parametrize("name", RERUN)
def test_rerun_ops_equal_eager(name):
    fn = RERUN[name]
    rng = np.random.default_rng(7)
    f = tg.compile(fn)
    wc = tg.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    we = tg.tensor(wc.detach().numpy().copy(), requires_grad=True)
    for _ in range(3):
        x = tg.tensor(rng.standard_normal((3, 3)))
        yc, ye = f(x, wc), fn(x, we)
        assert same(yc, ye)
        yc.backward()
        ye.backward()
        assert same(wc.grad, we.grad)
    assert f.explain().startswith("replayed") and f.stats["replays"] == 2


MATMUL_PROGRAMS = {
    "x @ x": lambda x, w: ((x @ x) * w).sum(),
    "chain of products": lambda x, w: ((x @ w).tanh() @ (w @ x)).sum(),
    "product with a bias row": lambda x, w: ((x @ w + w.sum(0)) ** 2).mean(),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MATMUL_PROGRAMS)
def test_replayed_matrix_products_equal_eager_for_both_operands(name, dtype):
    # Two matrices multiply as a replay step of their own (SK_MATMUL): eager's product and
    # matmul_grad_a / matmul_grad_b, so values and both gradients are eager's bits.
    fn = MATMUL_PROGRAMS[name]
    rng = np.random.default_rng(23)
    f = tg.compile(fn)
    for _ in range(3):
        xv = rng.standard_normal((4, 4)).astype(dtype)
        wv = rng.standard_normal((4, 4)).astype(dtype)
        xc, wc = tg.tensor(xv, requires_grad=True), tg.tensor(wv, requires_grad=True)
        xe, we = tg.tensor(xv, requires_grad=True), tg.tensor(wv, requires_grad=True)
        yc, ye = f(xc, wc), fn(xe, we)
        assert same(yc, ye)
        yc.backward()
        ye.backward()
        assert same(xc.grad, xe.grad) and same(wc.grad, we.grad)
    assert f.explain().startswith("replayed") and f.stats["replays"] == 2
    with tg.no_grad():
        assert same(f(xc, wc), fn(xe, we))


def test_rerun_op_sees_inplace_writes_to_its_inputs_before_backward():
    w = tg.ones(3, 3, requires_grad=True)
    f = tg.compile(lambda x: (x @ w).sum())
    x = tg.ones(2, 3)
    f(x)
    loss = f(x)
    x.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    loss = f(x)
    loss.backward(retain_graph=True)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_ops_math_and_tril_replay_as_whole_ops():
    """The ops replayed by re-running them whole (capture_call) must not re-enter the capture."""
    def f(x, w):
        return (tg.log10(x).tril() * w % 0.7 + tg.atan2(x, w) + tg.floor(x * 3) * x.sinh()
                + tg.fmod(x, w).triu(1) + x.round(decimals=1) * w).sum()

    cf = tg.compile(f)
    rng = np.random.default_rng(0)
    for _ in range(3):
        a, b = rng.uniform(0.5, 1.5, (3, 3)), rng.uniform(0.5, 1.5, (3, 3))
        x, w = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
        y = cf(x, w)
        y.backward()
        x2, w2 = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
        f(x2, w2).backward()
        assert y.item() == f(tg.tensor(a), tg.tensor(b)).item()
        np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())
        np.testing.assert_array_equal(w.grad.numpy(), w2.grad.numpy())


def test_value_dependent_shapes_recapture_instead_of_replaying_stale_shapes():
    fn = lambda x, w: (w.masked_select(x > 0.5) * 2.0).sum() + w[x > 0.3].sum()
    f = tg.compile(fn)
    rng = np.random.default_rng(5)
    for it in range(4):
        x = tg.tensor(rng.uniform(0, 1, 20))
        wc = tg.tensor(rng.uniform(0, 1, 20), requires_grad=True)
        we = tg.tensor(wc.detach().numpy().copy(), requires_grad=True)
        out_c, out_e = f(x, wc), fn(x, we)
        out_c.backward()
        out_e.backward()
        assert same(out_c, out_e) and same(wc.grad, we.grad)
    assert f.stats["guard_failures"] >= 1 and f.stats["replays"] + f.stats["captures"] == 4
    x = tg.tensor(np.full(20, 0.9))
    f(x, wc)
    assert f(x, wc).grad_fn.name() == "CompiledFunctionBackward"    # same mask: replayed


def test_explain_lists_every_reason_a_call_runs_eagerly():
    cat = tg._core.TORCH_FUNCTIONS["cat"]         # an op reached other than by its public name
    f = tg.compile(lambda x: cat([x.clone().add_(1.0), x]).sum())
    f(tg.ones(2, requires_grad=True))
    reasons = f.explain()
    assert reasons.startswith("eager:")
    assert "in-place write" in reasons and "CatBackward0" in reasons, reasons


def test_routes_exist_only_during_a_capture():
    before = (tg.sin, tg.Tensor.reshape, F.layer_norm, tg.Tensor.__getitem__)
    f = tg.compile(lambda x: F.layer_norm(x.reshape(2, 2)[0:1], (2,)))
    f(tg.ones(4))
    assert (tg.sin, tg.Tensor.reshape, F.layer_norm, tg.Tensor.__getitem__) == before
    assert "__wrapped__" not in vars(tg.Tensor).get("reshape", tg.Tensor.reshape).__dict__ \
        if hasattr(tg.Tensor.reshape, "__dict__") else True


def _layer_case(make, shape, calls=3, replayed=True):
    """A layer stack compiled vs its eager twin (same init): loss, parameter grads, buffers.
    replayed=False: a stack that runs eagerly (explain() names an in-place write), and equals
    eager all the same.  (Batch norm in training replays: its batch counter's add_ is performed
    again by the replay, tests/test_compile_buffers.py.)"""
    tg.manual_seed(0)
    compiled_model = make()
    tg.manual_seed(0)
    eager_model = make()
    first = lambda o: o[0] if isinstance(o, tuple) else o
    f = tg.compile(lambda x: first(compiled_model(x)).sum())
    rng = np.random.default_rng(0)
    for it in range(calls):
        x = tg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
        tg.manual_seed(it)
        a = f(x)
        a.backward()
        tg.manual_seed(it)
        b = first(eager_model(x)).sum()
        grad_c = x.grad
        x.grad = None
        b.backward()
        assert same(a, b) and same(grad_c, x.grad), it
        for p, q in zip(compiled_model.parameters(), eager_model.parameters()):
            assert same(p.grad, q.grad)
            p.grad = q.grad = None
        for (name, u), (_, v) in zip(compiled_model.named_buffers(),
                                     eager_model.named_buffers()):
            assert same(u, v), name
    if replayed:
        assert f.stats["replays"] == calls - 1, f.explain()
    else:
        assert f.stats["replays"] == 0 and "in-place write" in f.explain(), f.explain()


def test_layers_replay_as_eager():
    nn = tg.nn
    _layer_case(lambda: nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Flatten(), nn.Linear(36, 5)), (2, 2, 8, 8))
    _layer_case(lambda: nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Dropout(0.3),
                                      nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2)), (4, 6))
    _layer_case(lambda: nn.LSTM(3, 5, batch_first=True), (2, 4, 3))


def test_reductions_of_views_keep_eager_summation_order():
    rng = np.random.default_rng(3)
    fn = lambda x: x.t().sum() + (x.t() * 1.0).sum() + x[:, ::2].mean()
    f = tg.compile(fn)
    for _ in range(3):
        x = tg.tensor(rng.standard_normal((7, 333)).astype(np.float32), requires_grad=True)
        assert same(f(x), fn(x))
    assert f.stats["replays"] == 2


def test_ops_given_numpy_data_run_eagerly():
    # Library-style code reading a tensor's array (unseen by the capture) and handing the
    # derived data to an op: re-running that op would replay the data of the capturing call.
    def fn(x):
        doubled = x._array * 2.0
        return x + tg.from_numpy(doubled)
    f = tg.compile(fn)
    for v in (1.0, 2.0, 3.0):
        x = tg.full((3,), v)
        assert same(f(x), fn(x))
    assert "given a numpy array" in f.explain()


@pytest.mark.parametrize("body", [lambda b, w: (b * w).exp(),
                                  lambda b, w: F.layer_norm(b * w, (3,)).tanh()],
                         ids=["c-steps", "re-run-step"])
def test_inplace_write_into_a_replayed_output_the_backward_reads_raises(body):
    """The backward reads exp's / tanh's output: a write into the returned tensor before backward
    raises PyTorch's error on every call, replays included (they used to compute silently from
    their own copy, or, before that, from the overwritten values)."""
    w = tg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    compiled = tg.compile(lambda b: body(b, w))
    for i in range(3):
        b = tg.tensor([1.0, 2.0, 3.0]) * (i + 1)
        y = compiled(b)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            tg.autograd.grad(y.sum(), w)
    assert compiled.stats["replays"] == 2


def test_signature_tells_aliased_arguments_apart_beyond_sixteen_tensors():
    # The signature records which arguments are the same tensor (a linear search for the first
    # sixteen, a dict beyond): f(*xs) with xs[18] is xs[1] captures apart from distinct tensors.
    f = tg.compile(lambda *xs: sum(x * float(i) for i, x in enumerate(xs)))
    distinct = [tg.ones(3, requires_grad=True) for _ in range(20)]
    aliased = list(distinct)
    aliased[18] = aliased[1]
    aliased[19] = aliased[17]
    for xs in (distinct, aliased, distinct, aliased):
        for x in distinct:
            x.grad = None
        f(*xs).sum().backward()
        want = [tg.zeros(3) for _ in range(20)]
        for i, x in enumerate(xs):
            want[[id(d) for d in distinct].index(id(x))] += float(i)
        for x, w in zip(distinct, want):
            assert same(x.grad if x.grad is not None else tg.zeros(3), w)
    assert f.stats["captures"] == 2 and f.stats["replays"] == 2


def test_a_hook_registered_inside_the_call_runs_at_every_call():
    # Found by the fuzzer: replays skipped a hook the compiled function registers on a tensor it
    # makes, so the second call's gradient silently lacked the hook's effect.
    def f(x):
        y = x * 3.0
        y.register_hook(lambda g: g * 2.0)
        return (y * y).sum()

    cf = tg.compile(f)
    for step in range(3):
        x = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64, requires_grad=True)
        cf(x).backward()
        # d/dx sum((3x)^2) = 18x, doubled by the hook on y
        np.testing.assert_allclose(x.grad.numpy(), 36.0 * x.detach().numpy())
    assert "register_hook" in cf.explain()


def test_a_hook_on_a_leaf_registered_outside_runs_on_replays():
    seen = []
    w = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    w.register_hook(lambda g: seen.append(g.clone()) or g * 10.0)
    cf = tg.compile(lambda x: (x * w).sum())
    for step in range(3):
        w.grad = None
        cf(tg.tensor([3.0, 4.0], dtype=tg.float64)).backward()
        np.testing.assert_allclose(w.grad.numpy(), [30.0, 40.0])
    assert len(seen) == 3


def test_a_rerun_ops_returned_result_is_handed_out_uncopied_and_version_checked():
    """A re-run op's result is handed out as the op's own array, sharing the version counter of
    the op's result tensor: a write into it before backward is no error where eager's is none
    (the LSTM's record keeps its own copy of its outputs, as PyTorch's layer saves its own) and
    changes nothing where eager's backward does not read it (a linear layer's output)."""
    tg.manual_seed(0)
    lstm = tg.nn.LSTM(3, 4)
    compiled = tg.compile(lambda x: lstm(x)[0])
    for i in range(3):
        y = compiled(tg.randn(5, 2, 3))
        y.mul_(2)
        y.sum().backward()
    lin = tg.nn.Linear(3, 4)
    fn = lambda x: lin(x)           # noqa: E731
    compiled_lin = tg.compile(fn)
    for i in range(3):
        x = tg.randn(5, 3)
        grads = []
        for f in (fn, compiled_lin):
            lin.zero_grad()
            y = f(x)
            y.mul_(2)
            y.sum().backward()
            grads.append(lin.weight.grad)
        assert same(grads[0], grads[1])
    assert compiled.stats["replays"] == 2 and compiled_lin.stats["replays"] == 2


@pytest.mark.parametrize("native", [False, True])
def test_replayed_call_under_anomaly_detection(native):
    # anomaly mode links a replay's outputs through the general custom-Function path; its
    # outputs came back as a tuple where the call path reads a list (a crash)
    w = tg.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    t = tg.tensor([0, 2])
    fn = ((lambda x: F.cross_entropy(F.linear(x, w), t)) if native
          else (lambda x: (x * w[:2] * 2.0).sum()))
    f = tg.compile(fn)
    x = tg.ones(2, 4, dtype=tg.float64)
    f(x)
    with pytest.warns(UserWarning, match="Anomaly Detection"):
        with tg.autograd.detect_anomaly():
            out = f(x)
            out.backward()
    g = w.grad.clone()
    w.grad = None
    fn(x).backward()
    assert same(out, fn(x)) and same(g, w.grad)
    assert f.stats["replays"] == 1


def test_ops_with_a_registered_replay_step_and_explain_names_the_others():
    names = tg._core.op_names()
    for name in ("AddmmBackward0", "SoftmaxBackward0", "LogSoftmaxBackward0", "NllLossBackward0"):
        assert tg._core.op_replayed_natively(names.index(name)), name
    assert not tg._core.op_replayed_natively(names.index("MulBackward0"))   # a C step instead
    w = tg.ones(3, 4, requires_grad=True)
    f = tg.compile(lambda x, t: F.cross_entropy(F.linear(x, w).cumsum(1), t))
    x, t = tg.ones(2, 4), tg.tensor([0, 2])
    f(x, t)
    f(x, t)
    # (linear, cumsum, cross_entropy: its log_softmax and nll_loss one step)
    assert f.explain() == "replayed: 3 steps; ops re-run on tensors: cumsum", f.explain()
