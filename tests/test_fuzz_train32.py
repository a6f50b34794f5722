"""Regressions found by tools/fuzz_train.py (session 32): training loops under tapegrad.compile.

Compile findings are checked against eager tapegrad (bit for bit) and eager PyTorch (values)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _ste(lib):
    class STE(lib.autograd.Function):
        # rounds forward; passes the gradient where |x| <= 1 (a straight-through estimator)
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.round(x * 4) / 4

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (x.abs() <= 1.0).to(g.dtype)
    return STE


def _grads(lib, fn, w, xs):
    """Per call: (output value, w's gradient) of fn(x) for each x in xs."""
    out = []
    for x in xs:
        w.grad = None
        y = fn(lib.tensor(x))
        y.backward()
        out.append((y.detach().numpy().copy(), w.grad.numpy().copy()))
    return out


XS = [np.array([[0.3, -0.6, 1.4], [0.1, 0.9, -0.2]]),
      np.array([[1.3, 0.6, -0.4], [-0.7, 0.05, 0.8]]),
      np.array([[-0.2, 0.35, 0.5], [1.1, -1.3, 0.45]])]
W = np.array([[0.5, -0.25, 1.0], [0.75, 0.2, -0.6], [0.1, 0.4, 0.3]])


def test_compile_runs_a_custom_function_backward():
    # SILENT: the capture noted the Function forward's own ops (run under no_grad) as the
    # outputs' makers, so from the second call on the replay differentiated round() (zero
    # gradient) instead of calling the Function's backward.
    def make(lib):
        STE = _ste(lib)
        w = lib.tensor(W, requires_grad=True)
        return w, (lambda x: (STE.apply(x @ w) * lib.tensor([1.0, 2.0, 3.0])).sum())
    w_t, f_t = make(torch)
    expect = _grads(torch, f_t, w_t, XS)
    w_e, f_e = make(tg)
    eager = _grads(tg, f_e, w_e, XS)
    w_c, f_c = make(tg)
    compiled = tg.compile(f_c)
    got = _grads(tg, compiled, w_c, XS)
    for (ye, ge), (yc, gc), (yt, gt) in zip(eager, got, expect):
        assert np.array_equal(ye, yc) and np.array_equal(ge, gc)
        np.testing.assert_allclose(gc, gt, rtol=1e-12)
        np.testing.assert_allclose(yc, yt, rtol=1e-12)
    assert "custom autograd.Function STE" in compiled.explain()


@pytest.mark.parametrize("dim", [0, 1, None])
def test_compile_weight_norm_gradients(dim):
    # SILENT (the same mechanism): weight_norm's WeightNormInterface Function, called from the
    # parametrization's Python, lost its backward in a replay (g's gradient None, v's wrong).
    tg.set_default_dtype(tg.float64)
    torch.set_default_dtype(torch.float64)
    try:
        res = {}
        for name, lib, comp in (("torch", torch, False), ("eager", tg, False),
                                ("compiled", tg, True)):
            lin = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2), dim=dim)
            with lib.no_grad():
                for k, (pname, q) in enumerate(lin.named_parameters()):
                    q.copy_(lib.tensor(np.linspace(-0.8, 0.9 + k, q.numel()).reshape(q.shape)))
            fn = (lambda x, lin=lin: (lin(x) ** 2).sum())
            if comp:
                fn = tg.compile(fn)
            calls = []
            for x in XS:
                lin.zero_grad(set_to_none=True)
                fn(lib.tensor(x)).backward()
                calls.append([None if q.grad is None else q.grad.numpy().copy()
                              for q in lin.parameters()])
            res[name] = calls
        for ce, cc, ct in zip(res["eager"], res["compiled"], res["torch"]):
            for ge, gc, gt in zip(ce, cc, ct):
                assert gc is not None and np.array_equal(ge, gc)
                np.testing.assert_allclose(gc, gt, rtol=1e-10)
    finally:
        tg.set_default_dtype(tg.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("tail", ["flatten", "view", "squeeze"])
def test_compile_max_pool1d_then_a_view(tail):
    # A max_pool1d (re-run whole) left a claim on its kernel step's indices output in the
    # capture; the freed tensor's address, reused by the next view op's result, made that
    # result look noted already: AssertionError "a captured step reads a tensor made after
    # it", or (as the function's output) a replay returning the capture's stale tensor.
    def make(lib):
        w = lib.tensor(np.arange(16.0).reshape(4, 4) / 10 - 0.7, requires_grad=True)
        def f(a):
            p = lib.nn.functional.max_pool1d((a @ w).unflatten(1, (1, 4)), 2)
            p = {"flatten": lambda t: t.flatten(1), "view": lambda t: t.view(2, 2),
                 "squeeze": lambda t: t.squeeze(1)}[tail](p)
            return (p * lib.tensor([1.0, -2.0])).sum()
        return w, f
    xs = [np.array([[0.3, -0.6, 1.4, 0.2], [0.1, 0.9, -0.2, 0.7]]) * (k + 1) for k in range(3)]
    w_t = torch.tensor(np.arange(16.0).reshape(4, 4) / 10 - 0.7, requires_grad=True)
    w_e, f_e = make(tg)
    w_c, f_c = make(tg)
    compiled = tg.compile(f_c)
    eager = _grads(tg, f_e, w_e, xs)
    got = _grads(tg, compiled, w_c, xs)
    for x, (ye, ge), (yc, gc) in zip(xs, eager, got):
        assert np.array_equal(ye, yc) and np.array_equal(ge, gc)
        w_t.grad = None
        yt = torch.nn.functional.max_pool1d((torch.tensor(x) @ w_t).unflatten(1, (1, 4)), 2)
        yt = (yt.flatten(1) * torch.tensor([1.0, -2.0], dtype=torch.float64)).sum()   # (any tail)
        yt.backward()
        np.testing.assert_allclose(yc, yt.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(gc, w_t.grad.numpy(), rtol=1e-12)
