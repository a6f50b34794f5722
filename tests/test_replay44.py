"""tapegrad.compile of functions and modules returning nested values: an LSTM's `out, (h, c)`,
torch.return_types, named tuples, dicts of tensors (HuggingFace-style forwards), a tensor
returned twice.  Each replays (no eager call after the capture), returns the structure eager
returns, with values and gradients equal to eager bit for bit over calls with changing inputs,
and eager itself agrees with PyTorch."""
import collections

import numpy as np
import pytest

import tapegrad as tg

Pair = collections.namedtuple("Pair", "first second")


def leaves(value):
    """The tensors and Nones of a return value, in order, with its containers' shape."""
    if isinstance(value, dict):
        return [(type(value), tuple(value))] + [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (tuple, list)):
        return [(type(value), len(value))] + [x for v in value for x in leaves(v)]
    return [value]


def assert_same_structure(ours, eager):
    a, b = leaves(ours), leaves(eager)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(y, tg.Tensor):
            assert isinstance(x, tg.Tensor) and x.dtype == y.dtype and x.shape == y.shape
            assert x.requires_grad == y.requires_grad
            np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy(), strict=True)
        else:
            assert x == y


def tensors(value):
    return [x for x in leaves(value) if isinstance(x, tg.Tensor)]


def loss_of(value):
    """A loss over every tensor of the value that takes a gradient (weighted by position, so
    each output's gradient differs)."""
    total = None
    for i, t in enumerate(tensors(value)):
        if t.requires_grad and t.is_floating_point():
            term = (t * (i + 1.5)).sin().sum()
            total = term if total is None else total + term
    return total


def run_calls(fn, make_inputs, params=(), calls=4):
    """fn compiled and eager over `calls` calls on fresh inputs: return values, identities
    between returned tensors and gradients (of the inputs and of `params`) equal bit for bit;
    the compiled function replays every call after its capture."""
    compiled = tg.compile(fn)
    inner = getattr(compiled, "_compiled_call", compiled)
    for call in range(calls):
        inputs = make_inputs(call)
        grads = []
        results = []
        for f in (compiled, fn):
            xs = [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]
            for p in params:
                p.grad = None
            out = f(*xs)
            loss = loss_of(out)
            if loss is not None:
                loss.backward()
            results.append(out)
            grads.append([None if t.grad is None else t.grad.numpy().copy()
                          for t in list(xs) + list(params)])
        assert_same_structure(*results)
        # a tensor returned twice is one tensor, as in eager
        assert [[x is y for y in tensors(results[0])] for x in tensors(results[0])] == \
            [[x is y for y in tensors(results[1])] for x in tensors(results[1])]
        for ours, eager in zip(*grads):
            if eager is None:
                assert ours is None
            else:
                np.testing.assert_array_equal(ours, eager, strict=True)
    assert inner.stats["captures"] == 1 and inner.stats["eager"] == 0, inner.explain()
    assert inner.stats["replays"] == calls - 1
    assert inner.explain().startswith("replayed")
    return compiled


def randn(rng, shape, dtype, requires_grad=True):
    return tg.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=requires_grad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_module_compiled_directly_replays(cls, dtype, with_state, batch_first):
    torch = pytest.importorskip("torch")
    tg.manual_seed(3)
    rnn = getattr(tg.nn, cls)(4, 6, num_layers=2, batch_first=batch_first)
    if dtype == np.float64:
        rnn.double()
    rng = np.random.default_rng(1)

    def inputs(call):
        x = randn(rng, (2, 5, 4) if batch_first else (5, 2, 4), dtype)
        if not with_state:
            return [x]
        h = randn(rng, (2, 2, 6), dtype)
        return [x, (h, randn(rng, (2, 2, 6), dtype))] if cls == "LSTM" else [x, h]

    compiled = tg.compile(rnn)
    inner = compiled._compiled_call
    for call in range(4):
        args = inputs(call)
        flat = [args[0]] + (list(args[1]) if len(args) > 1 and cls == "LSTM" else args[1:])
        results, grads = [], []
        for f in (compiled, rnn):
            leaves_ = [a.detach().clone().requires_grad_() for a in flat]
            call_args = [leaves_[0]] + ([tuple(leaves_[1:])] if cls == "LSTM" and with_state
                                         else leaves_[1:])
            rnn.zero_grad()
            out = f(*call_args)
            loss_of(out).backward()
            results.append(out)
            grads.append([t.grad.numpy().copy() for t in leaves_ + list(rnn.parameters())])
        assert_same_structure(*results)
        assert type(results[0][1]) is type(results[1][1])
        for ours, eager in zip(*grads):
            np.testing.assert_array_equal(ours, eager, strict=True)
    assert inner.stats == {"captures": 1, "replays": 3, "eager": 0, "guard_failures": 0}, \
        inner.explain()

    # eager (so the replay) computes what PyTorch computes
    ref = getattr(torch.nn, cls)(4, 6, num_layers=2, batch_first=batch_first).to(
        torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        for p, q in zip(ref.parameters(), rnn.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    args = inputs(0)
    torch_args = [torch.from_numpy(args[0].detach().numpy())] + (
        [tuple(torch.from_numpy(t.detach().numpy()) for t in args[1])] if cls == "LSTM"
        and with_state else [torch.from_numpy(t.detach().numpy()) for t in args[1:]])
    ours, theirs = compiled(*args), ref(*torch_args)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0].detach().numpy(), **tol)
    for a, b in zip(tensors(ours[1]), [theirs[1]] if cls == "GRU" else list(theirs[1])):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    assert inner.stats["replays"] == 4


def _nested(x, w):
    h = (x @ w).tanh()
    return h, [h.sum(0), (None, (x * h.sum(1, keepdim=True)).exp())]


def _named(x, w):
    h = x @ w
    return Pair(h.sigmoid(), Pair(h, None))


def _return_types(x, w):
    h = x @ w
    top = h.max(1)
    return top, h.sort(0, descending=True), tg.topk(h, 2)


def _dict(x, w):
    h = x @ w
    return {"logits": h, "hidden_states": (x, h.relu()), "attentions": None,
            "loss": h.square().mean()}


def _ordered(x, w):
    h = x @ w
    return collections.OrderedDict(last=h.softmax(-1), pooled=h.mean(0))


def _twice(x, w):
    h = (x * w.sum()).exp()
    return h, (h, x), {"again": h}


def _input_and_param(x, w):
    return (x, (w, x.cos()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [_nested, _named, _return_types, _dict, _ordered, _twice,
                                _input_and_param], ids=lambda f: f.__name__.strip("_"))
def test_nested_return_values_replay_as_eager(fn, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    w = randn(rng, (4, 5) if fn is not _twice else (4,), dtype)
    run_calls(lambda x: fn(x, w), lambda call: [randn(rng, (3, 4), dtype)], params=[w])
    # the structure and values are PyTorch's
    x = randn(rng, (3, 4), dtype)
    ours = tg.compile(fn)(x, w)
    globals_ = {"tg": torch, "collections": collections, "Pair": Pair}
    theirs = types_of(fn, globals_)(torch.from_numpy(x.detach().numpy()),
                                    torch.from_numpy(w.detach().numpy()))
    a, b = leaves(ours), leaves(theirs)
    assert len(a) == len(b)
    for p, q in zip(a, b):
        if isinstance(q, torch.Tensor):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6,
                                       atol=1e-7)
        elif isinstance(q, tuple) and len(q) == 2 and isinstance(q[0], type):
            assert p[0].__name__ == q[0].__name__ and p[1] == q[1]
        else:
            assert p == q


def types_of(fn, namespace):
    """fn with its globals replaced (the same code run on PyTorch)."""
    import types
    return types.FunctionType(fn.__code__, {**fn.__globals__, **namespace}, fn.__name__)


def test_tensor_returned_twice_is_one_tensor():
    """`return h, h` gives the same tensor twice (PyTorch's `a is b`), replayed or not; an
    in-place write through one is seen through the other and the gradients of both sum."""
    pytest.importorskip("torch")

    def f(x):
        h = x.exp()
        return h, h

    compiled = tg.compile(f)
    for _ in range(3):
        x = tg.tensor([0.0, 1.0, 2.0], requires_grad=True)
        a, b = compiled(x)
        assert a is b
        (a.sum() + 2 * b.sum()).backward()
        xe = x.detach().requires_grad_()
        ae, be = f(xe)
        (ae.sum() + 2 * be.sum()).backward()
        np.testing.assert_array_equal(x.grad.numpy(), xe.grad.numpy())
    assert compiled.stats["replays"] == 2


def test_create_graph_through_a_nested_return_value():
    """The create_graph backward re-runs the call and finds the Program's outputs in its nested
    return value: second derivatives equal eager's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w = randn(rng, (4, 5), np.float64)
    def f(x, w):
        h = x @ w
        return {"logits": h, "hidden_states": (x, h.relu()), "attentions": None}

    compiled = tg.compile(f)
    for call in range(3):
        x = randn(rng, (3, 4), np.float64)
        results = []
        for fn in (compiled, f):
            xs = x.detach().clone().requires_grad_()
            out = fn(xs, w)
            loss = out["logits"].sin().sum() + out["hidden_states"][1].square().sum()
            g, = tg.autograd.grad(loss, xs, create_graph=True)
            gg, = tg.autograd.grad(g.square().sum(), xs)
            results.append((g.detach().numpy(), gg.numpy()))
        for ours, eager in zip(*results):
            np.testing.assert_array_equal(ours, eager, strict=True)
    assert compiled.stats["replays"] == 2
    # eager's second derivative is PyTorch's
    xt = torch.from_numpy(x.detach().numpy()).requires_grad_()
    wt = torch.from_numpy(w.detach().numpy())
    out = types_of(f, {"tg": torch})(xt, wt)
    loss = out["logits"].sin().sum() + out["hidden_states"][1].square().sum()
    g, = torch.autograd.grad(loss, xt, create_graph=True)
    gg, = torch.autograd.grad(g.square().sum(), xt)
    np.testing.assert_allclose(results[1][1], gg.numpy(), rtol=1e-10, atol=1e-12)


class _Output(dict):
    pass


def test_other_containers_run_eagerly_and_say_why():
    """A container the replay cannot rebuild (a dict subclass of the user's) keeps the call
    eager: correct values, and explain() names the type."""
    torch = pytest.importorskip("torch")

    def f(x):
        return _Output(y=x.exp())

    compiled = tg.compile(f)
    for _ in range(2):
        x = tg.tensor([0.5, -1.0])
        out = compiled(x)
        assert type(out) is _Output
        np.testing.assert_allclose(out["y"].numpy(), torch.tensor([0.5, -1.0]).exp().numpy(),
                                   rtol=1e-6)
    assert "_Output" in compiled.explain() and compiled.stats["eager"] == 1


def test_gru_batch_first_keeps_its_in_place_transpose_outside_compile():
    """Eager, a batch-first GRU's output is still transposed in place (PyTorch's grad_fn
    TransposeBackward1); compiled, its replay gives the same values and gradients."""
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    gru = tg.nn.GRU(3, 4, batch_first=True)
    ref = torch.nn.GRU(3, 4, batch_first=True)
    with torch.no_grad():
        for p, q in zip(ref.parameters(), gru.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    x = tg.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 4, 3))
    ours, theirs = gru(x)[0], ref(torch.from_numpy(x.numpy()))[0]
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "TransposeBackward1"
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_in_place_write_through_a_tensor_returned_twice_reaches_both():
    """SILENT before: `a, b = f(x)` with f returning h twice gave two tensors over one buffer;
    a.mul_(2) doubled b's values but not b's history, so b's gradient was PyTorch's halved."""
    torch = pytest.importorskip("torch")

    def f(x):
        h = x * 3
        return h, h

    compiled = tg.compile(f)
    xt = torch.tensor([0.0, 1.0], requires_grad=True)
    at, bt = f(xt)
    at.mul_(2)
    bt.sum().backward()
    for _ in range(3):
        x = tg.tensor([0.0, 1.0], requires_grad=True)
        a, b = compiled(x)
        a.mul_(2)
        b.sum().backward()
        assert b.tolist() == bt.tolist() and x.grad.tolist() == xt.grad.tolist()
    assert compiled.stats["replays"] == 2


def _view_and_base(x):
    h = x * 3
    return h, h.view(-1)


def _detached_twin(x):
    h = x * 3
    return {"h": h, "frozen": h.detach()}


@pytest.mark.parametrize("fn", [_view_and_base, _detached_twin], ids=lambda f: f.__name__)
def test_returned_tensors_sharing_memory_stay_one_storage(fn):
    """SILENT before: returning a tensor and a view (or detach()) of it, the replay handed them
    out on separate buffers: a write through one no longer showed in the other, and the view's
    gradient missed the base's in-place op.  Such a call now runs eagerly (explain() says why),
    as PyTorch computes it."""
    torch = pytest.importorskip("torch")

    def use(out, lib):
        a, b = (out if isinstance(out, tuple) else (out["h"], out["frozen"]))
        if fn is _view_and_base:
            a.mul_(2)
            b.sum().backward()
        else:
            with lib.no_grad():
                a.mul_(2)
        return b.detach().tolist()

    xt = torch.tensor([0.0, 1.0], requires_grad=True)
    expected = use(types_of(fn, {})(xt), torch)
    compiled = tg.compile(fn)
    for _ in range(3):
        x = tg.tensor([0.0, 1.0], requires_grad=True)
        assert use(compiled(x), tg) == expected
        if fn is _view_and_base:
            assert x.grad.tolist() == xt.grad.tolist()
    assert "share memory" in compiled.explain()


def test_disjoint_views_of_one_tensor_still_replay():
    pytest.importorskip("torch")

    def f(x):
        return (x * 3).chunk(2, -1)

    run_calls(f, lambda call: [tg.tensor(np.arange(6.0).reshape(3, 2) + call,
                                         requires_grad=True)])
