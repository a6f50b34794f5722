"""Regressions from fuzz27 (session 35): custom autograd.Functions returning None (PyTorch's
undefined gradient, which still runs the nodes upstream) in larger graphs, each case checked
against PyTorch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _fns(L):
    """Custom Functions of library L: Sq drops its second input's gradient, Split has three
    outputs and drops two inputs' gradients, Outer runs Split inside its backward."""

    class Sq(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x)
            return x * x + y

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g, None

    class Split(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_backward(a, b)
            return a * b, a + b, a.sin()

        @staticmethod
        def backward(ctx, g1, g2, g3):
            a, b = ctx.saved_tensors
            return g1 * b + g2 + g3 * a.cos(), None, None

    class Outer(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            with L.enable_grad():
                xx = x.detach().requires_grad_()
                y1, _, y3 = Split.apply(xx, xx * 3, 1)
                gx, = L.autograd.grad(y1.sum() + y3.sum(), xx)
            return g * 2 + gx

    return Sq, Split, Outer


def _np(t):
    return None if t is None else t.detach().numpy()


def _same(t, g):
    if t is None or g is None:
        assert t is None and g is None
        return
    assert str(g.dtype) == str(t.dtype) and tuple(g.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(g), _np(t), rtol=1e-12, atol=1e-12)


def _outcome(run, L, n=60):
    try:
        return ("ok", run(L))
    except RuntimeError as e:
        return ("RuntimeError", str(e)[:n])


BEFORE_NONE = {
    "mul by a scalar": lambda b: b * 2,
    "exp": lambda b: b.exp(),
    "sin": lambda b: b.sin(),
    "add a scalar (saves nothing)": lambda b: b + 1,
    "view (saves nothing)": lambda b: b.view(2),
}


@pytest.mark.parametrize("op", list(BEFORE_NONE))
def test_undefined_grad_through_freed_node(op):
    """A node whose saved values a backward freed raises when only a Function's None reaches
    it, as for a real gradient (PyTorch unpacks before it looks at the gradient); tapegrad
    passed the None on and returned."""
    def run(L):
        Sq, _, _ = _fns(L)
        a = L.tensor([1.0, 3.0], requires_grad=True)
        b = L.tensor([0.5, 0.5], requires_grad=True)
        bm = BEFORE_NONE[op](b)
        bm.sum().backward()
        Sq.apply(a, bm).sum().backward()
        return _np(a.grad).tolist(), _np(b.grad).tolist()
    t, g = _outcome(run, torch), _outcome(run, tapegrad)
    assert g == t


def test_undefined_grad_through_freed_node_create_graph_and_retain():
    def run(L):
        Sq, _, _ = _fns(L)
        a = L.tensor([1.0, 3.0], requires_grad=True)
        b = L.tensor([0.5, 0.5], requires_grad=True)
        out = []
        bm = b.exp()
        bm.sum().backward()
        out.append(_outcome(lambda L: L.autograd.grad(Sq.apply(a, bm).sum(), [a, b],
                                                      create_graph=True, allow_unused=True)[1],
                            L))
        bm = b.exp()
        bm.sum().backward(retain_graph=True)
        Sq.apply(a, bm).sum().backward()            # retained: runs (and frees it)
        out.append(_np(b.grad).tolist())
        out.append(_outcome(lambda L: Sq.apply(a, bm).sum().backward(), L))
        return out
    t, g = run(torch), run(tapegrad)
    assert g == t
    assert t[0][0] == "RuntimeError" and "a second time" in t[0][1]


def test_undefined_grad_checks_saved_versions():
    """A saved value written in place since raises under the undefined gradient too."""
    def run(L):
        Sq, _, _ = _fns(L)
        a = L.tensor([1.0, 3.0], requires_grad=True)
        b = L.tensor([0.5, 0.5], requires_grad=True)
        res = []
        bm = b.exp()
        bm.mul_(2)                                   # exp's saved result overwritten
        res.append(_outcome(lambda L: Sq.apply(a, bm).sum().backward(), L, None))
        c = b * 1
        s = c.sin()
        c.add_(1)                                    # sin's saved input overwritten
        res.append(_outcome(lambda L: Sq.apply(a, s).sum().backward(), L, None))
        return [(kind, "inplace operation" in msg if kind != "ok" else msg)
                for kind, msg in res]
    t, g = run(torch), run(tapegrad)
    assert g == t == [("RuntimeError", True)] * 2


def test_undefined_grad_runs_unpack_hook():
    def run(L):
        Sq, _, _ = _fns(L)
        a = L.tensor([1.0, 3.0])
        b = L.tensor([0.5, 0.5], requires_grad=True)
        calls = []

        def pack(t):
            calls.append("pack")
            return t

        def unpack(t):
            calls.append("unpack")
            return t
        with L.autograd.graph.saved_tensors_hooks(pack, unpack):
            s = b.sin()
        Sq.apply(a, s).sum().backward()
        return calls, b.grad
    t, g = run(torch), run(tapegrad)
    assert g[0] == t[0] == ["pack", "unpack"]
    assert t[1] is None and g[1] is None


# -- hand-made graphs with None-returning Functions (matched before this session's fixes; kept
#    as coverage of the undefined-gradient sweep) ----------------------------------------------

def test_several_outputs_some_unused_and_dropped_inputs():
    def run(L):
        _, Split, _ = _fns(L)
        a = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        b0 = L.tensor([1.5, 2.0, -0.5], dtype=L.float64, requires_grad=True)
        y1, y2, y3 = Split.apply(a, b0 * 2, 3)
        (y1 * 3).sum().backward()                    # y2, y3 unused: zeros reach backward
        r = [a.grad.clone(), b0.grad]
        a.grad = None
        y1, y2, y3 = Split.apply(a, b0.exp(), 3)
        (y2 ** 2).sum().backward()
        return r + [a.grad, b0.grad]
    t, g = run(torch), run(tapegrad)
    for x, y in zip(t, g):
        _same(x, y)


def test_function_inside_function_backward_create_graph():
    def run(L):
        _, _, Outer = _fns(L)
        x = L.tensor([0.3, 0.7], dtype=L.float64, requires_grad=True)
        gx, = L.autograd.grad(Outer.apply(x * x).sum(), x, create_graph=True)
        assert gx.requires_grad
        gx.sum().backward()
        return gx, x.grad
    t, g = run(torch), run(tapegrad)
    _same(t[0], g[0])
    _same(t[1], g[1])


def test_retain_graph_twice_with_hooks_on_intermediates():
    def run(L):
        _, Split, _ = _fns(L)
        a = L.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=L.float64, requires_grad=True)
        b = L.tensor([[0.5, 0.5], [2.0, 1.0]], dtype=L.float64, requires_grad=True)
        h = a.tanh()
        seen = []
        h.register_hook(lambda gr: seen.append(gr.clone()))
        bb = b * 1.0
        bb.register_hook(lambda gr: seen.append(gr))  # sees None: Split drops it
        bb.retain_grad()
        y1, y2, y3 = Split.apply(h, bb, 0)
        loss = y1.sum() + (y3 * y2).sum()
        loss.backward(retain_graph=True)
        first = a.grad.clone()
        loss.backward()
        return first, a.grad, b.grad, bb.grad, seen
    t, g = run(torch), run(tapegrad)
    for x, y in zip(t[:4], g[:4]):
        _same(x, y)
    assert len(t[4]) == len(g[4]) == 4
    for x, y in zip(t[4], g[4]):
        _same(x, y)


def test_all_none_function_then_grad_allow_unused():
    def run(L):
        class AllNone(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y, x - y

            @staticmethod
            def backward(ctx, g1, g2):
                return None, None
        x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
        p, q = AllNone.apply(x * 1, x * 2)
        r = [_outcome(lambda L: L.autograd.grad((p + q).sum(), x), L)[0]]
        p, q = AllNone.apply(x * 1, x * 2)
        r.append(L.autograd.grad((p + q).sum(), x, allow_unused=True)[0])
        p, q = AllNone.apply(x * 1, x * 2)
        r.append(L.autograd.grad((p + q).sum(), x, allow_unused=True, materialize_grads=True)[0])
        p, q = AllNone.apply(x * 1, x * 2)
        (p + q).sum().backward()
        r.append(x.grad)
        return r
    t, g = run(torch), run(tapegrad)
    assert t[0] == g[0] == "RuntimeError"
    for x, y in zip(t[1:], g[1:]):
        _same(x, y)


def test_compiled_step_with_none_returning_function():
    """tapegrad.compile of a step holding such a Function agrees with eager tapegrad bit for bit
    and with torch."""
    def run(L, compiled):
        _, Split, _ = _fns(L)
        w = L.tensor([0.1, -0.2, 0.3], dtype=L.float64, requires_grad=True)
        z = L.tensor([1.0, 1.0, 2.0], dtype=L.float64, requires_grad=True)

        def step(inp):
            y1, y2, y3 = Split.apply(inp * w, z, 1)
            return (y1 + y3).sum() + y2.mean()
        f = L.compile(step) if compiled else step
        out = []
        for i in range(3):
            w.grad = None
            loss = f(L.tensor([1.0, 2.0, 3.0], dtype=L.float64) * (i + 1))
            loss.backward()
            out.append((_np(loss).copy(), _np(w.grad).copy(), z.grad))
        return out
    t = run(torch, False)
    e, c = run(tapegrad, False), run(tapegrad, True)
    for (lt, wt, zt), (le, we, ze), (lc, wc, zc) in zip(t, e, c):
        assert zt is None and ze is None and zc is None
        assert np.array_equal(le, lc) and np.array_equal(we, wc)
        np.testing.assert_allclose(le, lt, rtol=1e-12)
        np.testing.assert_allclose(we, wt, rtol=1e-12)


def test_module_full_backward_hook_and_checkpoint_around_none_function():
    """A module's full backward hooks (their BackwardHookFunction materializes the dropped
    gradient as zeros) and checkpoint (both variants) around a Function returning None."""
    def run(L):
        class Gate(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, m):
                ctx.save_for_backward(m)
                return x * m, m.sum()

            @staticmethod
            def backward(ctx, g, gs):
                m, = ctx.saved_tensors
                return g * m, None

        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(3, 2, dtype=L.float64)
                with L.no_grad():
                    self.lin.weight.copy_(L.tensor([[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]]))
                    self.lin.bias.fill_(0.1)

            def forward(self, x, m):
                return Gate.apply(self.lin(x), m)[0]
        mod = M()
        log = []
        mod.register_full_backward_hook(
            lambda _m, gi, go: log.append([None if t is None else _np(t).copy() for t in gi]))
        x = L.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=L.float64, requires_grad=True)
        m = L.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=L.float64, requires_grad=True)
        (mod(x, m) ** 2).sum().backward()
        out = [x.grad.clone(), m.grad.clone(), mod.lin.weight.grad]

        def f(x, m):
            return Gate.apply(x.sin(), m)[0].exp()
        for reentrant in (False, True):
            x.grad = None
            m.grad = None
            y = L.utils.checkpoint.checkpoint(f, x[:, :2], m, use_reentrant=reentrant)
            y.sum().backward()
            out += [x.grad, m.grad]
        return out, log
    (t, tlog), (g, glog) = run(torch), run(tapegrad)
    for a, b in zip(t, g):
        _same(a, b)
    assert len(tlog) == len(glog) == 1
    for a, b in zip(tlog[0], glog[0]):
        np.testing.assert_allclose(b, a, rtol=1e-12)
