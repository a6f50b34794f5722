"""Losses and distances composed of differentiable ops (kl_div, margin / embedding / triplet
losses, Poisson and Gaussian NLL, cosine_similarity, pairwise_distance, cdist): values and
gradients against PyTorch, finite differences, reprs and errors."""
from __future__ import annotations

import math
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5))
X2 = RNG.standard_normal((4, 5))
X3 = RNG.standard_normal((4, 5))
P = RNG.random((4, 5))
P0 = P.copy()
P0[0, 0] = 0.0
Y = np.array([1.0, -1.0, -1.0, 1.0])
Y5 = np.sign(RNG.standard_normal((4, 5)))
W = RNG.random(5)
T = np.array([0, 3, 4, 1])
COUNTS = RNG.poisson(2.0, (4, 5)).astype(np.float64)
VAR = RNG.random((4, 5)) + 0.1
VAR[0, 0] = 1e-9  # below eps: clamped in the forward, gradient kept


def _lib_args(M, fixed):
    return {k: (M.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in fixed.items()}


# name -> (function of (M, *differentiable inputs), differentiable arrays)
CASES = {
    "kl_none": (lambda M, a: M.nn.functional.kl_div(a, M.tensor(P0), reduction="none"), [X]),
    "kl_batchmean": (lambda M, a: M.nn.functional.kl_div(a, M.tensor(P), reduction="batchmean"),
                     [X]),
    "kl_sum_log_target": (lambda M, a, b: M.nn.functional.kl_div(a, b, reduction="sum",
                                                                 log_target=True), [X, X2]),
    "cosine_similarity": (lambda M, a, b: M.nn.functional.cosine_similarity(a, b), [X, X2]),
    "cosine_similarity_bcast": (lambda M, a, b: M.nn.functional.cosine_similarity(a, b, 0),
                                [X, X2[:1]]),
    "pairwise_distance": (lambda M, a, b: M.nn.functional.pairwise_distance(a, b), [X, X2]),
    "pairwise_distance_p1": (lambda M, a, b: M.nn.functional.pairwise_distance(
        a, b, 1.0, keepdim=True), [X, X2]),
    "cdist": (lambda M, a, b: M.cdist(a, b), [X, X2[:3]]),
    "cdist_p3_batched": (lambda M, a, b: M.cdist(a, b, 3.0), [X.reshape(2, 2, 5),
                                                              X2.reshape(2, 2, 5)]),
    "cdist_p1": (lambda M, a, b: M.cdist(a, b, 1.0), [X, X2[:3]]),
    "cosine_embedding_loss": (lambda M, a, b: M.nn.functional.cosine_embedding_loss(
        a, b, M.tensor(Y), 0.2, reduction="none"), [X, X2]),
    "margin_ranking_loss": (lambda M, a, b: M.nn.functional.margin_ranking_loss(
        a, b, M.tensor(Y), 0.3, reduction="none"), [X[:, 0], X2[:, 0]]),
    "hinge_embedding_loss": (lambda M, a: M.nn.functional.hinge_embedding_loss(
        a, M.tensor(Y5), reduction="none"), [X]),
    "soft_margin_loss": (lambda M, a: M.nn.functional.soft_margin_loss(a, M.tensor(Y5)), [X]),
    "multilabel_soft_margin_loss": (lambda M, a: M.nn.functional.multilabel_soft_margin_loss(
        a, M.tensor((Y5 > 0) * 1.0), M.tensor(W), reduction="none"), [X]),
    "multi_margin_loss_p1": (lambda M, a: M.nn.functional.multi_margin_loss(
        a, M.tensor(T), reduction="none"), [X]),
    "multi_margin_loss_p2_weight": (lambda M, a: M.nn.functional.multi_margin_loss(
        a, M.tensor(T), p=2, margin=0.7, weight=M.tensor(W)), [X]),
    "triplet_margin_loss": (lambda M, a, b, c: M.nn.functional.triplet_margin_loss(
        a, b, c, reduction="none"), [X, X2, X3]),
    "triplet_margin_loss_swap": (lambda M, a, b, c: M.nn.functional.triplet_margin_loss(
        a, b, c, margin=2.0, swap=True, reduction="sum"), [X, X2, X3]),
    "poisson_nll_loss": (lambda M, a: M.nn.functional.poisson_nll_loss(
        a, M.tensor(COUNTS), full=True, reduction="none"), [X]),
    "poisson_nll_loss_rate": (lambda M, a: M.nn.functional.poisson_nll_loss(
        a, M.tensor(COUNTS), log_input=False), [np.abs(X) + 0.1]),
    "gaussian_nll_loss": (lambda M, a, b, v: M.nn.functional.gaussian_nll_loss(
        a, b, v, full=True, reduction="none"), [X, X2, VAR]),
    "gaussian_nll_loss_shared_var": (lambda M, a, b, v: M.nn.functional.gaussian_nll_loss(
        a, b, v), [X, X2, VAR[:, 0]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_parity(torch, name):
    fn, arrays = CASES[name]
    a = [tg.tensor(np.ascontiguousarray(x), requires_grad=True) for x in arrays]
    b = [torch.tensor(np.ascontiguousarray(x), requires_grad=True) for x in arrays]
    ya, yb = fn(tg, *a), fn(torch, *b)
    assert tuple(ya.shape) == tuple(yb.shape) and str(ya.dtype) == str(yb.dtype)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ta, tb in zip(a, b):
        np.testing.assert_allclose(ta.grad.numpy(), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", sorted(CASES))
def test_finite_differences(gradcheck, name):
    fn, arrays = CASES[name]
    if name.startswith("gaussian"):  # the clamped variance has PyTorch's straight-through grad
        arrays = [arrays[0], arrays[1], np.abs(arrays[2]) + 0.5]
    gradcheck(lambda *t: fn(tg, *t), *[np.ascontiguousarray(x) for x in arrays], atol=1e-5,
              rtol=1e-4)


def test_kl_div_mean_warns_as_torch():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(tg.tensor(X), tg.tensor(P))


def test_values_without_torch():
    logq = tg.tensor([[math.log(0.25), math.log(0.75)]])
    p = tg.tensor([[0.5, 0.5]])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    np.testing.assert_allclose(F.kl_div(logq, p, reduction="batchmean").item(), expected,
                               rtol=1e-6)
    assert F.kl_div(logq, tg.tensor([[0.0, 1.0]]), reduction="sum").item() == pytest.approx(
        -math.log(0.75), rel=1e-6)
    a, b = tg.tensor([[3.0, 4.0]]), tg.tensor([[4.0, 3.0]])
    assert F.cosine_similarity(a, b).item() == pytest.approx(24 / 25, rel=1e-6)
    assert F.pairwise_distance(a, b, eps=0.0).item() == pytest.approx(math.sqrt(2), rel=1e-6)
    assert tg.cdist(tg.tensor([[0.0, 0.0]]), tg.tensor([[3.0, 4.0], [1.0, 0.0]])).tolist() == \
        [[5.0, 1.0]]
    assert F.margin_ranking_loss(tg.tensor([1.0, 2.0]), tg.tensor([2.0, 1.0]),
                                 tg.tensor([1.0, 1.0]), reduction="none").tolist() == [1.0, 0.0]
    assert F.hinge_embedding_loss(tg.tensor([0.3, 2.0]), tg.tensor([-1.0, 1.0]),
                                  reduction="none").tolist() == pytest.approx([0.7, 2.0])
    assert F.multi_margin_loss(tg.tensor([[0.1, 0.2, 0.4, 0.8]]), tg.tensor([3])).item() == \
        pytest.approx((0.3 + 0.4 + 0.6) / 4, rel=1e-6)
    assert F.soft_margin_loss(tg.tensor([0.0]), tg.tensor([1.0])).item() == pytest.approx(
        math.log(2), rel=1e-6)
    assert F.gaussian_nll_loss(tg.tensor([1.0]), tg.tensor([3.0]), tg.tensor([2.0])).item() == \
        pytest.approx(0.5 * (math.log(2) + 2), rel=1e-6)
    assert F.poisson_nll_loss(tg.tensor([0.0]), tg.tensor([2.0])).item() == pytest.approx(1.0)


@pytest.mark.parametrize("lib", ["tg", "torch"])
def test_errors(lib, request):
    M = tg if lib == "tg" else request.getfixturevalue("torch")
    Fn = M.nn.functional
    x = M.randn(3, 4)
    cases = [
        (ValueError, "bad is not a valid value for reduction",
         lambda: Fn.kl_div(x, x, reduction="bad")),
        (ValueError, "x is not a valid value for reduction",
         lambda: Fn.margin_ranking_loss(x, x, x, reduction="x")),
        (ValueError, "var is of incorrect size", lambda: Fn.gaussian_nll_loss(x, x, M.ones(2))),
        (ValueError, "var has negative entry", lambda: Fn.gaussian_nll_loss(x, x, -M.ones(3, 4))),
        (ValueError, "only p == 1 and p == 2 supported",
         lambda: Fn.multi_margin_loss(x, M.tensor([0, 1, 2]), p=3)),
        (RuntimeError, "X1 and X2 must have the same number of columns. X1: 4 X2: 5",
         lambda: M.cdist(x, M.randn(3, 5))),
    ]
    for exc, phrase, fn in cases:
        with pytest.raises(exc, match=phrase):
            fn()


MODULES = [("KLDivLoss", {"reduction": "batchmean"}, [X, P]),
           ("CosineEmbeddingLoss", {"margin": 0.1}, [X, X2, Y]),
           ("MarginRankingLoss", {"margin": 0.1}, [X[:, 0], X2[:, 0], Y]),
           ("HingeEmbeddingLoss", {}, [X, Y5]),
           ("SoftMarginLoss", {"reduction": "sum"}, [X, Y5]),
           ("MultiLabelSoftMarginLoss", {}, [X, (Y5 > 0) * 1.0]),
           ("MultiMarginLoss", {"p": 2}, [X, T]),
           ("TripletMarginLoss", {"swap": True}, [X, X2, X3]),
           ("PoissonNLLLoss", {"full": True}, [X, COUNTS]),
           ("GaussianNLLLoss", {"full": True}, [X, X2, VAR]),
           ("CosineSimilarity", {"dim": 0}, [X, X2]),
           ("PairwiseDistance", {"p": 1.0, "keepdim": True}, [X, X2])]


def test_modules_match_torch(torch):
    for name, kwargs, arrays in MODULES:
        mt, mp = getattr(tg.nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
        assert repr(mt) == repr(mp)
        ya = mt(*[tg.tensor(np.ascontiguousarray(a)) for a in arrays])
        yb = mp(*[torch.tensor(np.ascontiguousarray(a)) for a in arrays])
        np.testing.assert_allclose(ya.numpy(), yb.numpy(), rtol=1e-10)


def test_module_weight_buffer_and_constructor_errors():
    m = tg.nn.MultiLabelSoftMarginLoss(tg.ones(3))
    assert list(m.state_dict()) == ["weight"]
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        tg.nn.TripletMarginLoss(margin=0.0)
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert tg.nn.KLDivLoss(reduce=False).reduction == "none"
