"""Regressions of session 18's differential fuzzing (tools/fuzz_surface.py's new `special2`,
`histogram` and addmm-family draws), against PyTorch where it is installed (the `torch` fixture
skips cleanly without it), with float64 finite-difference checks.
"""
import numpy as np
import pytest

import tapegrad as tg


def _np(t):
    return None if t is None else t.detach().numpy()


# -- special.xlog1py's gradient in its first argument where that argument is 0 (62600007, 62600033,
# 62600066, 62600094) --  SILENT: xlog1py was composed as where(x == 0, x * 0, x * log1p(y)), so
# the gradient in x was 0 wherever x was 0; d/dx x * log1p(y) = log1p(y) there too (PyTorch's
# formula, except 0 where x is 0 and y <= -1, as xlogy's at y <= 0).  And xlog1py(0, nan) is nan.

_A = [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, -0.5]
_Y = [0.5, 0.3, -0.2, 1.0, -1.0, -3.0, 0.25]


@pytest.mark.parametrize("create_graph", [False, True])
def test_xlog1py_gradients_at_zero_first_argument_as_torch(torch, create_graph):
    seen = []
    for L in (torch, tg):
        a = L.tensor(_A, dtype=L.float64, requires_grad=True)
        y = L.tensor(_Y, dtype=L.float64, requires_grad=True)
        out = L.special.xlog1py(a, y)
        ga, gy = L.autograd.grad((out * L.arange(1.0, 8.0, dtype=L.float64)).sum(), [a, y],
                                 create_graph=create_graph)
        second = None
        if create_graph:
            second = L.autograd.grad((ga * ga).sum() + gy.sum(), [a, y], allow_unused=True)
        seen.append((_np(out), _np(ga), _np(gy), [_np(s) for s in second] if second else None))
    (to, tga, tgy, ts), (o, ga, gy, s) = seen
    np.testing.assert_allclose(o, to, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(ga, tga, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(gy, tgy, rtol=1e-12, equal_nan=True)
    assert ga[0] == pytest.approx(np.log1p(0.5))          # the entry that was 0
    if create_graph:
        for x, t in zip(s, ts):
            assert (x is None) == (t is None)
            if t is not None:
                np.testing.assert_allclose(x, t, rtol=1e-12, equal_nan=True)


def test_xlog1py_gradient_matches_finite_differences(gradcheck):
    gradcheck(lambda a, y: tg.special.xlog1py(a, y), [0.0, 1.5, -2.0, 0.0], [0.5, 0.3, 2.0, -0.4])


def test_xlog1py_values_and_grad_fn_as_torch(torch):
    a, y = [0.0, 0.0, 1.0, 0.0], [float("nan"), -1.0, -1.0, float("inf")]
    t = torch.special.xlog1py(torch.tensor(a), torch.tensor(y))
    g = tg.special.xlog1py(tg.tensor(a), tg.tensor(y))
    np.testing.assert_array_equal(g.numpy(), t.numpy())
    assert g.dtype == tg.float32
    r = tg.special.xlog1py(tg.tensor([1.0], requires_grad=True), 0.5)
    assert type(r.grad_fn).__name__ == "SpecialXlog1PyBackward0"
    with pytest.raises(TypeError):
        tg.xlogy(tg.tensor([1.0]), tg.tensor([1.0]), "xlog1py")


# -- digamma's and trigamma's values at 0 and -inf (62600002) --  digamma(-0.0) is +inf in PyTorch
# (the sign of the pole from the left), and trigamma(-inf) is nan (no limit) where tapegrad had
# counted -inf as one of the poles (inf).

def test_digamma_trigamma_at_signed_zero_and_minus_inf_as_torch(torch):
    x = [-0.0, 0.0, float("-inf"), float("inf"), -2.0, 0.5]
    for n in (0, 1, 2, 3):
        t = torch.polygamma(n, torch.tensor(x, dtype=torch.float64)).numpy()
        g = tg.polygamma(n, tg.tensor(x, dtype=tg.float64)).numpy()
        keep = [0, 1, 2, 3, 5] if n == 1 else list(range(len(x)))  # (PyTorch's 6.6e32 at -2)
        np.testing.assert_allclose(g[keep], t[keep], rtol=1e-8, equal_nan=True)
    np.testing.assert_allclose(tg.digamma(tg.tensor(x)).numpy(), torch.digamma(torch.tensor(x)).numpy(),
                               rtol=1e-6, equal_nan=True)


# -- xlogy / xlog1py promote as PyTorch (62600359, 62600392) --  SILENT dtype: numpy's promotion
# made float32 with an int64 or a 0-d float64 operand float64; PyTorch's keeps float32 (a 0-d
# tensor does not widen a dimensioned one of its category).

@pytest.mark.parametrize("fn", ["xlogy", "special.xlog1py"])
def test_xlogy_family_promotion_as_torch(torch, fn):
    def call(L, a, b):
        f = L.xlogy if fn == "xlogy" else L.special.xlog1py
        return f(a, b)
    cases = [(lambda L: L.tensor(1.5, requires_grad=True), lambda L: L.tensor(2)),
             (lambda L: L.tensor([1.5, 0.0], requires_grad=True),
              lambda L: L.tensor(2.0, dtype=L.float64, requires_grad=True)),
             (lambda L: L.tensor([1, 2]), lambda L: L.tensor([0.5], dtype=L.float64)),
             (lambda L: 2, lambda L: L.tensor([1, 2]))]
    for ma, mb in cases:
        got = []
        for L in (torch, tg):
            a, b = ma(L), mb(L)
            out = call(L, a, b)
            grads = []
            if out.requires_grad:
                out.sum().backward()
                grads = [(t.grad.dtype, _np(t.grad)) for t in (a, b) if getattr(t, "requires_grad", False)]
            got.append((str(out.dtype).split(".")[-1], _np(out), grads))
        (td, tv, tgr), (d, v, gr) = got
        assert d == td
        np.testing.assert_allclose(v, tv, rtol=1e-6)
        assert [str(x[0]).split(".")[-1] for x in gr] == [str(x[0]).split(".")[-1] for x in tgr]
        for (_, x), (_, t) in zip(gr, tgr):
            np.testing.assert_allclose(x, t, rtol=1e-6)


# -- addmv and addbmm with alpha=0 ignore the product (62600446, 62600466) --  SILENT: PyTorch's
# addmv and addbmm (as its addmm) do not let NaN/inf of the matrices through a zero alpha;
# tapegrad's gave NaN.  baddbmm and addr do propagate them in PyTorch, and still do here.

def test_zero_alpha_drops_the_product_as_torch(torch):
    nan, inf = float("nan"), float("inf")
    m = [[nan, 1.0], [inf, 2.0]]
    v = [1.0, nan]
    calls = [lambda L: L.addmv(L.tensor([1.0]), L.tensor(m), L.tensor(v), beta=0.5, alpha=0),
             lambda L: L.addbmm(L.tensor([1.0]), L.tensor([m]), L.tensor([m]), beta=0.5, alpha=0),
             lambda L: L.addmm(L.tensor([1.0]), L.tensor(m), L.tensor(m), beta=0.5, alpha=0),
             lambda L: L.baddbmm(L.tensor([1.0]), L.tensor([m]), L.tensor([m]), beta=0.5, alpha=0),
             lambda L: L.addr(L.tensor([1.0]), L.tensor(v), L.tensor(v), beta=0.5, alpha=0)]
    for call in calls:
        np.testing.assert_array_equal(_np(call(tg)), _np(call(torch)))
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    mat = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    tg.addmv(x, mat, tg.tensor([1.0, 1.0]), alpha=0).sum().backward()
    np.testing.assert_array_equal(mat.grad.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(2))


# -- igamma / igammac at a = inf (62600354) --  P(inf, x) is 0 for finite x (Q 1), nan at x = inf,
# where tapegrad gave nan for finite x (and 1 at x = inf).

def test_igamma_at_infinite_a_as_torch(torch):
    inf = float("inf")
    a, x = [inf, inf, inf, 2.0, inf, 0.0, 1.5], [1.0, inf, 0.0, inf, 1e30, inf, 0.7]
    for name in ("igamma", "igammac"):
        t = getattr(torch, name)(torch.tensor(a, dtype=torch.float64), torch.tensor(x, dtype=torch.float64))
        g = getattr(tg, name)(tg.tensor(a, dtype=tg.float64), tg.tensor(x, dtype=tg.float64))
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, equal_nan=True)
