"""tapegrad.compile: what a replay reuses from the previous one (replay.pxi).

A fresh output slot's array is written again only when nothing but the replay's buffer set holds
it (the tensor handed out for it died, with every view, numpy export and saved value made from
it).  Each test holds one of those references across later replays and checks that what it sees
is unchanged, and that values and gradients equal eager's; the reuse itself is checked where
nothing is held (the same data pointer).  Nodes are not reused: a pooled set keeping its last
node made a reference cycle (see test_dead_compiled_function_frees_without_the_collector)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import tapegrad as tg


def f(x):
    return x * 2 + 1


def _replayed(fn=f, dtype=tg.float64):
    compiled = tg.compile(fn)
    x = _inputs(0, dtype)
    compiled(x)
    compiled(x)
    return compiled


def _inputs(k, dtype=tg.float64):
    return tg.tensor([0.5 + k, -1.0 * k, 3.0 - k], dtype=dtype, requires_grad=True)


def test_output_is_reused_when_nothing_holds_it():
    compiled = _replayed()
    x = _inputs(0)
    ptr = compiled(x).data_ptr()
    assert compiled(x).data_ptr() == ptr
    assert compiled.stats["replays"] >= 3, compiled.explain()


@pytest.mark.parametrize("hold", ["tensor", "view", "numpy", "detached", "numpy_view"])
def test_held_output_is_never_written_again(hold):
    compiled = _replayed()
    y = compiled(_inputs(1))
    want = f(_inputs(1)).detach().numpy().copy()
    kept = {"tensor": lambda: y, "view": lambda: y[1:], "numpy": lambda: y.detach().numpy(),
            "detached": lambda: y.detach(), "numpy_view": lambda: y.detach().numpy()[::2]}[hold]()
    del y
    gc.collect()
    for k in range(2, 5):
        compiled(_inputs(k))
    got = kept.detach().numpy() if isinstance(kept, tg.Tensor) else kept
    wanted = {"view": want[1:], "numpy_view": want[::2]}.get(hold, want)
    assert np.array_equal(got, wanted)
    if isinstance(kept, tg.Tensor) and hold != "view":
        assert compiled(_inputs(5)).data_ptr() != kept.data_ptr()


def test_output_saved_by_a_later_op_is_not_written_again():
    compiled = _replayed()
    x = _inputs(1)
    y = compiled(x)
    z = (y * y).sum()           # saves y for its backward
    del y
    for k in range(2, 5):
        compiled(_inputs(k))
    z.backward()
    xe = _inputs(1)
    ye = f(xe)
    (ye * ye).sum().backward()
    assert np.array_equal(x.grad.numpy(), xe.grad.numpy())


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_graphs_kept_across_later_replays_backward_as_eager(dtype):
    """More live graphs than the pool keeps (4): each keeps its own buffers and node."""
    compiled = _replayed(dtype=dtype)
    xs = [_inputs(k, dtype) for k in range(7)]
    ys = [compiled(x) for x in xs]
    for k in reversed(range(len(xs))):
        x, y = xs[k], ys[k]
        y.backward(tg.ones_like(y) * 0.5)
        xe = _inputs(k, dtype)
        f(xe).backward(tg.ones_like(y) * 0.5)
        assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    assert compiled.stats["replays"] >= 7, compiled.explain()


def test_graph_dropped_without_backward_frees_its_node_and_buffers():
    compiled = _replayed()
    for k in range(6):
        compiled(_inputs(k))            # each graph dies unused
    x = _inputs(9)
    y = compiled(x)
    node = y.grad_fn
    y.backward(tg.ones_like(y))
    assert np.array_equal(x.grad.numpy(), np.full(3, 2.0))
    del y
    y2 = compiled(_inputs(3))
    assert y2.grad_fn is not node       # the old node is still held here: not reused


def test_held_grad_fn_keeps_its_node_and_graph():
    compiled = _replayed()
    x1, x2 = _inputs(1), _inputs(2)
    y1 = compiled(x1)
    node = y1.grad_fn
    y2 = compiled(x2)
    assert y2.grad_fn is not node
    y1.sum().backward()
    y2.sum().backward()
    assert np.array_equal(x1.grad.numpy(), np.full(3, 2.0))
    assert np.array_equal(x2.grad.numpy(), np.full(3, 2.0))


def test_freed_graph_never_touches_the_set_a_later_call_took():
    """A replayed call's record holds its buffer set itself (its grad_fn is made when read):
    after a backward frees the graph the set is free for the next call, and the first record's
    grad_fn read or death then must not release or show the later call's state."""
    compiled = _replayed(lambda x: (x * x).tanh())
    x1 = _inputs(1)
    y1 = compiled(x1)
    y1.sum().backward()                 # y1's graph freed: its set is free again
    x2 = _inputs(2)
    y2 = compiled(x2)                   # takes that set
    assert y1.grad_fn.name() == "CompiledFunctionBackward"
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y1.sum().backward()
    del y1                              # its record dies: y2's set stays taken
    y3 = compiled(_inputs(3))
    assert y3.data_ptr() != y2.data_ptr()
    y2.sum().backward()
    xe = _inputs(2)
    (xe * xe).tanh().sum().backward()
    assert np.array_equal(x2.grad.numpy(), xe.grad.numpy())


def test_grad_fn_read_before_and_after_backward():
    compiled = _replayed()
    for read_before in (True, False):
        x = _inputs(4)
        y = compiled(x)
        node = y.grad_fn if read_before else None
        y.backward(tg.ones_like(y))
        after = y.grad_fn
        assert after.name() == "CompiledFunctionBackward" and after is y.grad_fn
        assert node is None or after is node
        assert np.array_equal(x.grad.numpy(), np.full(3, 2.0))
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward(tg.ones_like(y))


def test_retained_graph_backwards_twice_after_later_replays():
    compiled = _replayed(lambda x: (x * x).tanh())
    x = _inputs(1)
    y = compiled(x)
    y.sum().backward(retain_graph=True)
    for k in range(2, 6):
        compiled(_inputs(k)).sum().backward()
    y.sum().backward()
    xe = _inputs(1)
    ye = (xe * xe).tanh()
    ye.sum().backward(retain_graph=True)
    ye.sum().backward()
    assert np.array_equal(x.grad.numpy(), xe.grad.numpy())
    assert np.array_equal(y.detach().numpy(), ye.detach().numpy())


def test_handed_out_gradient_is_never_written_again():
    compiled = _replayed()
    x = _inputs(1)
    compiled(x).sum().backward()
    g = x.grad
    x.grad = None
    for _ in range(3):
        compiled(x).backward(tg.full((3,), 3.0, dtype=tg.float64))
        x.grad = None
    assert np.array_equal(g.numpy(), np.full(3, 2.0))


def test_output_made_without_grad_is_never_written_again():
    compiled = _replayed()
    with tg.no_grad():
        compiled(_inputs(1))
        y = compiled(_inputs(1))
        for k in range(2, 5):
            compiled(_inputs(k))
    assert np.array_equal(y.numpy(), f(_inputs(1)).detach().numpy())


def test_dead_compiled_function_frees_without_the_collector():
    """A compiled function's buffers, and the inputs of its last call, are freed as soon as it
    and its graphs die, by reference counting alone (no cycle through its buffer pool)."""
    import weakref
    gc.collect()
    gc.disable()
    try:
        g = tg.compile(f)
        for _ in range(3):
            x = tg.randn(5, requires_grad=True)
            g(x).sum().backward()
        probe = tg.randn(5, requires_grad=True)
        g(probe)                            # a graph that dies without a backward
        seen = weakref.ref(probe)
        del probe, x, g
        assert seen() is None
    finally:
        gc.enable()
