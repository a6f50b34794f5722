"""A replayed call's one differentiable output is linked into the tape as one record (its
OP_FUNCTION record is the output's own node, ops_function.pxi ONE_RECORD): everything a
backward can do through it equals eager - hooks, retain_grad, retain_graph, a second backward,
create_graph, further ops on the output - and several outputs keep one record each."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _f(x, w):
    return (x * w).tanh().sum() * 3.0


def _pair(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(5)
    w = rng.standard_normal(5)
    return (tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True),
            tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True))


def _replayed(fn):
    compiled = tg.compile(fn)
    x, w, _, _ = _pair(9)
    compiled(x, w)                      # the capture; later calls replay
    return compiled


def test_output_node_and_plain_backward():
    c = _replayed(_f)
    for seed in range(3):
        x, w, xe, we = _pair(seed)
        y = c(x, w)
        assert y.grad_fn.name() == "CompiledFunctionBackward" and y.grad_fn is y.grad_fn
        y.backward()
        _f(xe, we).backward()
        assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
        assert np.array_equal(w.grad.numpy(), we.grad.numpy())
    assert c.stats["replays"] == 3


def test_second_backward_raises_and_retain_graph_accumulates():
    c = _replayed(_f)
    x, w, xe, we = _pair(1)
    y = c(x, w)
    y.backward(retain_graph=True)
    y.backward()
    ye = _f(xe, we)
    ye.backward(retain_graph=True)
    ye.backward()
    assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_hook_and_retain_grad_on_the_output():
    c = _replayed(_f)
    x, w, xe, we = _pair(2)
    y, ye = c(x, w), _f(xe, we)
    for t in (y, ye):
        t.retain_grad()
        t.register_hook(lambda g: g * 2.0)
    (y * 5.0).backward()
    (ye * 5.0).backward()
    assert float(y.grad) == float(ye.grad) == 10.0      # (PyTorch: retain_grad sees hooks)
    assert np.array_equal(x.grad.numpy(), xe.grad.numpy())


def test_create_graph_through_the_one_record():
    c = _replayed(_f)
    x, w, xe, we = _pair(3)
    g, = tg.autograd.grad(c(x, w), x, create_graph=True)
    ge, = tg.autograd.grad(_f(xe, we), xe, create_graph=True)
    h, = tg.autograd.grad(g.sum(), w)
    he, = tg.autograd.grad(ge.sum(), we)
    assert np.array_equal(g.detach().numpy(), ge.detach().numpy())
    assert np.array_equal(h.numpy(), he.numpy())


def test_several_outputs_keep_a_record_each():
    def f(x, w):
        return (x * w).sum(), (x + w).tanh()

    c = _replayed(f)
    x, w, xe, we = _pair(4)
    a, b = c(x, w)
    ae, be = f(xe, we)
    (a * 2.0 + b.sum()).backward()
    (ae * 2.0 + be.sum()).backward()
    assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    assert a.grad_fn is b.grad_fn and a.grad_fn.name() == "CompiledFunctionBackward"


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_anomaly_mode_through_a_replay():
    c = _replayed(_f)
    x, w, xe, we = _pair(5)
    with tg.autograd.detect_anomaly():
        c(x, w).backward()
    _f(xe, we).backward()
    assert np.array_equal(w.grad.numpy(), we.grad.numpy())


def test_every_calling_convention_replays_as_eager():
    # A compiled function is called by vectorcall (no argument tuple or keyword dict on the way
    # to the replay); keywords, argument unpacking, partial and an explicit __call__ (tp_call)
    # reach the same plans and give eager's values and gradients.
    import functools
    from tapegrad.replay import CompiledFunction
    assert CompiledFunction.__flags__ & (1 << 11)           # Py_TPFLAGS_HAVE_VECTORCALL
    c = _replayed(_f)
    calls = [lambda x, w: c(x, w), lambda x, w: c(x, w=w), lambda x, w: c(w=w, x=x),
             lambda x, w: c(*(x, w)), lambda x, w: c(**{"x": x, "w": w}),
             lambda x, w: functools.partial(c, x)(w), lambda x, w: c.__call__(x, w),
             lambda x, w: type(c).__call__(c, x, w=w)]
    for seed, call in enumerate(calls):
        call(*_pair(seed)[:2])      # (keywords make another signature: captured once)
        x, w, xe, we = _pair(seed)
        y = call(x, w)
        assert y.grad_fn.name() == "CompiledFunctionBackward"
        ye = _f(xe, we)
        assert np.array_equal(y.detach().numpy(), ye.detach().numpy())
        y.backward()
        ye.backward()
        assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
        assert np.array_equal(w.grad.numpy(), we.grad.numpy())
    assert c.stats["captures"] == 3     # (x, w), (x, w=w), keywords only (in any order)
    with pytest.raises(TypeError, match="unexpected keyword argument 'v'"):
        c(x, v=w)


def test_create_graph_after_a_call_with_keywords():
    c = _replayed(_f)
    for seed in range(2):
        x, w, xe, we = _pair(seed + 20)
        g, = tg.autograd.grad(c(x, w=w), x, create_graph=True)
        ge, = tg.autograd.grad(_f(xe, w=we), xe, create_graph=True)
        h, = tg.autograd.grad(g.sum(), w)
        he, = tg.autograd.grad(ge.sum(), we)
        assert np.array_equal(g.detach().numpy(), ge.detach().numpy())
        assert np.array_equal(h.numpy(), he.numpy())


def test_one_output_without_grad_and_the_call_path_guard():
    c = _replayed(_f)
    x, w, xe, we = _pair(7)
    with tg.no_grad():
        y = c(x, w)
        ye = _f(xe, we)
    assert isinstance(y, tg.Tensor) and y.grad_fn is None and not y.requires_grad
    assert np.array_equal(y.numpy(), ye.numpy())

    class OwnCall(tg.replay.CompiledFunction):
        def __call__(self, *args, **kwargs):
            return "own"
    with pytest.raises(TypeError, match="does not take CompiledCall's call path"):
        tg._core._enable_vectorcall(OwnCall)
    assert OwnCall(_f)(x, w) == "own"
