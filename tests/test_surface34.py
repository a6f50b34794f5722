"""Session 34 surface: names PyTorch 2.13 has that tapegrad lacked, checked against torch."""
import itertools
import warnings

import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _pair(arr, requires_grad=False, dtype="float64"):
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        a = a.astype(dtype)
    return (tapegrad.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


# ---------------------------------------------------------------- linear_cross_entropy

def _lce_case(rng, batched, out_features, probs, bias, weight):
    C, fin = 4, 3
    N = 5 if batched else None
    x = rng.standard_normal((N, fin) if batched else (fin,))
    W = rng.standard_normal((C, *out_features, fin))
    b = rng.standard_normal((C, *out_features)) if bias else None
    lead = (N,) if batched else ()
    if probs:
        t = rng.random((*lead, C, *out_features))
        t = t / t.sum(axis=len(lead), keepdims=True)
    else:
        t = rng.integers(0, C, size=(*lead, *out_features)).astype(np.int64)
        t.flat[0] = 2     # a class that ignore_index=2 drops
    w = rng.random(C) + 0.5 if weight else None
    return x, W, b, t, w


@pytest.mark.parametrize("batched,out_features,probs,bias,weight", [
    (b, of, p, bi, w) for b, of, p, bi, w in itertools.product(
        (True, False), ((), (2,)), (False, True), (False, True), (False, True))
    if b or not of])
def test_linear_cross_entropy_matches_torch(batched, out_features, probs, bias, weight):
    rng = np.random.default_rng(3)
    x, W, b, t, w = _lce_case(rng, batched, out_features, probs, bias, weight)
    for reduction, ignore_index, smoothing in itertools.product(
            ("mean", "sum", "none"), (None, 2) if not probs else (None,), (0.0, 0.3)):
        tx, px = _pair(x, True)
        tW, pW = _pair(W, True)
        tb, pb = _pair(b, True) if b is not None else (None, None)
        tt, pt = _pair(t)
        tw, pw = _pair(w) if w is not None else (None, None)
        kw = dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=smoothing)
        got = tapegrad.nn.functional.linear_cross_entropy(tx, tW, tt, linear_bias=tb,
                                                          weight=tw, **kw)
        want = torch.nn.functional.linear_cross_entropy(px, pW, pt, linear_bias=pb,
                                                        weight=pw, **kw)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype) == str(want.dtype)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        g = rng.standard_normal(tuple(want.shape))
        got.backward(tapegrad.tensor(g))
        want.backward(torch.tensor(g))
        for a, e in ((tx, px), (tW, pW), (tb, pb)):
            if a is not None:
                np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), rtol=1e-9,
                                           atol=1e-12)


def test_linear_cross_entropy_gradcheck():
    rng = np.random.default_rng(4)
    x = tapegrad.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    W = tapegrad.tensor(rng.standard_normal((4, 2, 2)), requires_grad=True)
    b = tapegrad.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    t = tapegrad.tensor(np.array([[0, 3], [1, 2], [2, 2]]))
    f = lambda x, W, b: tapegrad.nn.functional.linear_cross_entropy(  # noqa: E731
        x, W, t, linear_bias=b, ignore_index=2, label_smoothing=0.2)
    assert tapegrad.autograd.gradcheck(f, (x, W, b))


def test_linear_cross_entropy_options_same_values_and_fallback_warning():
    rng = np.random.default_rng(5)
    x, W, b, t, w = _lce_case(rng, True, (), False, True, True)
    for opts in ({}, dict(batch_chunk_size=2), dict(chunking_method="aspect_ratio:2"),
                 dict(acc_policy="accurate", chunking_method=None)):
        tx, px = _pair(x, True)
        tW, pW = _pair(W, True)
        tt, pt = _pair(t)
        got = tapegrad.nn.functional.linear_cross_entropy(
            tx, tW, tt, options=tapegrad.nn.LinearCrossEntropyOptions(**opts))
        want = torch.nn.functional.linear_cross_entropy(
            px, pW, pt, options=torch.nn.LinearCrossEntropyOptions(**opts))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
        got.backward()
        want.backward()
        np.testing.assert_allclose(tW.grad.numpy(), pW.grad.numpy(), rtol=1e-9)
    # Unsupported configurations fall back with PyTorch's warning.
    tx, px = _pair(x)
    tW, pW = _pair(W)
    tt, pt = _pair(t)
    for lib, a in ((tapegrad, (tx, tW, tt)), (torch, (px, pW, pt))):
        with pytest.warns(UserWarning, match="``options`` ignored"):
            lib.nn.functional.linear_cross_entropy(
                *a, label_smoothing=0.1, options=lib.nn.LinearCrossEntropyOptions())


@pytest.mark.parametrize("kw,exc,match", [
    (dict(acc_policy="fast"), ValueError, "invalid acc_policy"),
    (dict(chunking_method="aspect_ratio:0"), ValueError, "invalid chunking_method"),
    (dict(chunking_method="square"), ValueError, "invalid chunking_method"),
    (dict(batch_chunk_size=0), ValueError, "batch_chunk_size must be positive"),
    (dict(acc_dtype="int"), ValueError, "acc_dtype must be one of"),
])
def test_linear_cross_entropy_options_errors(kw, exc, match):
    for lib in (tapegrad, torch):
        with pytest.raises(exc, match=match):
            lib.nn.LinearCrossEntropyOptions(**kw)


def test_linear_cross_entropy_conflicting_chunk_options():
    x = np.ones((8, 3))
    W = np.ones((4, 3))
    t = np.zeros(8, dtype=np.int64)
    for lib in (tapegrad, torch):
        opts = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio")
        with pytest.raises(ValueError, match="give different chunk sizes"):
            lib.nn.functional.linear_cross_entropy(lib.tensor(x), lib.tensor(W), lib.tensor(t),
                                                   options=opts)


@pytest.mark.parametrize("xs,Ws,bs,ts,kw,match", [
    ((2, 3, 1), (4, 3), None, (2,), {}, "expected input with dimensionality 1 or 2"),
    ((2, 3), (3,), None, (2,), {}, "expected linear_weight with dimensionality at least 2"),
    ((2, 3), (4, 5), None, (2,), {}, "expected equal input and linear_weight last dimensions"),
    ((2, 3), (4, 3), (5,), (2,), {}, "expected linear_bias shape"),
    ((3,), (4, 2, 3), None, (2,), {}, "requires batched input"),
    ((2, 3), (4, 3), None, (2, 4), dict(ignore_index=1), "ignore_index cannot be specified"),
])
def test_linear_cross_entropy_errors(xs, Ws, bs, ts, kw, match):
    for lib in (tapegrad, torch):
        x, W = lib.ones(xs), lib.ones(Ws)
        b = lib.ones(bs) if bs is not None else None
        t = lib.ones(ts) / 4 if len(ts) == 2 else lib.zeros(ts, dtype=lib.long)
        with pytest.raises(RuntimeError, match=match):
            lib.nn.functional.linear_cross_entropy(x, W, t, linear_bias=b, **kw)


def test_linear_cross_entropy_loss_module():
    for kw in (dict(), dict(out_features=(3, 2), bias=True, reduction="sum", ignore_index=1,
                            label_smoothing=0.1)):
        tm = tapegrad.nn.LinearCrossEntropyLoss(5, 4, weight=tapegrad.arange(1.0, 5.0), **kw)
        pm = torch.nn.LinearCrossEntropyLoss(5, 4, weight=torch.arange(1.0, 5.0), **kw)
        assert repr(tm) == repr(pm)
        assert list(tm.state_dict()) == list(pm.state_dict())
        assert [tuple(v.shape) for v in tm.state_dict().values()] == \
            [tuple(v.shape) for v in pm.state_dict().values()]
        tm.load_state_dict({k: tapegrad.tensor(v.numpy()) for k, v in pm.state_dict().items()})
        rng = np.random.default_rng(6)
        x = rng.standard_normal((3, 5)).astype(np.float32)
        t = rng.integers(0, 4, size=(3, *kw.get("out_features", ()))).astype(np.int64)
        got, want = tm(tapegrad.tensor(x), tapegrad.tensor(t)), pm(torch.tensor(x),
                                                                   torch.tensor(t))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        got.backward()
        want.backward()
        np.testing.assert_allclose(tm.linear.weight.grad.numpy(),
                                   pm.linear.weight.grad.numpy(), rtol=1e-4, atol=1e-6)
    for lib in (tapegrad, torch):
        with pytest.raises(RuntimeError, match="expected weight shape to be"):
            lib.nn.LinearCrossEntropyLoss(5, 4, weight=lib.ones(3))
        with pytest.raises(RuntimeError, match="expected label_smoothing to be in range"):
            lib.nn.LinearCrossEntropyLoss(5, 4, label_smoothing=1.5)
