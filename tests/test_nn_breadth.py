"""RMSNorm, LocalResponseNorm, LPPool, nn.Buffer and the max-pool ``*_with_indices`` spellings.

With torch: forward values and gradients (float64 and float32), reprs, state_dict keys, error
types and key phrases.  Without torch: hand-computed values and float64 central differences.
"""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.nn import functional as F


def parity(torch, fn_name, arrays, *args, tol=1e-10, **kwargs):
    """F.<fn_name>(*tensors, *args, **kwargs) in both libraries: value, dtype, every gradient
    (and the second output, e.g. indices, exactly)."""
    rng = np.random.default_rng(1)
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = getattr(F, fn_name)(*ours, *args, **kwargs)
    t = getattr(torch.nn.functional, fn_name)(*theirs, *args, **kwargs)
    if isinstance(t, tuple):
        np.testing.assert_array_equal(y[1].numpy(), t[1].numpy())
        y, t = y[0], t[0]
    assert str(y.dtype) == str(t.dtype)
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    w = rng.standard_normal(tuple(t.shape)).astype(arrays[0].dtype)
    (y * tg.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


X = np.random.default_rng(0).standard_normal((2, 5, 6, 7))


# -- rms_norm ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,eps,weighted", [((7,), None, True), ((6, 7), 1e-2, True),
                                                ((7,), 0.5, False)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rms_norm_matches_torch(torch, shape, eps, weighted, dtype):
    arrays = [X.astype(dtype)]
    if weighted:
        arrays.append(np.random.default_rng(2).standard_normal(shape).astype(dtype))
    tol = 1e-10 if dtype == np.float64 else 1e-5
    if weighted:
        ours = [tg.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        y = F.rms_norm(ours[0], shape, ours[1], eps)
        t = torch.nn.functional.rms_norm(theirs[0], shape, theirs[1], eps)
        np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
        y.sum().backward()
        t.sum().backward()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)
    else:
        parity(torch, "rms_norm", arrays, shape, None, eps, tol=tol)


def test_rms_norm_values_and_gradcheck(gradcheck):
    x = tg.tensor([[3.0, 4.0]])
    # mean of squares 12.5: each value over sqrt(12.5 + eps)
    np.testing.assert_allclose(F.rms_norm(x, [2], eps=0.0).numpy(),
                               [[3 / np.sqrt(12.5), 4 / np.sqrt(12.5)]], rtol=1e-6)
    assert F.rms_norm(tg.ones(2, 3, dtype=tg.float16), [3]).dtype == tg.float16
    gradcheck(lambda a, w: F.rms_norm(a, (6, 7), w, 1e-3), X[:1, :2], X[0, 0] + 2)


def test_rms_norm_errors_and_module(torch):
    x = tg.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*3\], but got input of "
                                           r"size\[2, 3, 4\]"):
        F.rms_norm(x, (3,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as "
                                           "normalized_shape"):
        F.rms_norm(x, (4,), tg.ones(3))
    for args, kwargs in (((4,), {}), (([3, 4],), {"eps": 1e-3, "elementwise_affine": False})):
        ours, theirs = nn.RMSNorm(*args, **kwargs), torch.nn.RMSNorm(*args, **kwargs)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
    m = nn.RMSNorm(4, dtype=tg.float64)
    assert m.weight.dtype == tg.float64
    np.testing.assert_allclose(m(tg.ones(2, 4, dtype=tg.float64)).detach().numpy(), np.ones((2, 4)),
                               rtol=1e-6)


# -- local_response_norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("rank", [3, 4, 5])
def test_local_response_norm_matches_torch(torch, size, rank):
    x = np.random.default_rng(size).standard_normal((2, 6, 3, 4, 2)[:rank])
    parity(torch, "local_response_norm", [x], size, 1e-2, 0.6, 2.0)


def test_local_response_norm_values_and_errors(gradcheck):
    x = tg.tensor([[[1.0], [2.0], [3.0]]])             # (N=1, C=3, L=1)
    out = F.local_response_norm(x, 3, alpha=3.0, beta=1.0, k=1.0).numpy().ravel()
    # window sums of squares 5, 14, 13 (zero channels outside); div = 1 + 3 / 3 * sum
    np.testing.assert_allclose(out, [1 / 6, 2 / 15, 3 / 14], rtol=1e-6)
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
        F.local_response_norm(tg.ones(2, 3), 2)
    gradcheck(lambda a: F.local_response_norm(a, 3, 0.5, 0.75, 1.0), X[:1, :, :2, :2])
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"


# -- lp_pool ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf"), float("-inf")])
def test_lp_pool_matches_torch(torch, p):
    xp = np.abs(X) + 0.1
    parity(torch, "lp_pool2d", [xp], p, 3, 2)
    parity(torch, "lp_pool2d", [xp], p, (2, 3), (1, 2), True)
    parity(torch, "lp_pool1d", [xp[0]], p, 3, None, True)
    parity(torch, "lp_pool3d", [xp[:, :, :4]], p, 2, (1, 2, 2), True)


def test_lp_pool_odd_power_negative_windows(torch):
    parity(torch, "lp_pool2d", [X], 3, 2)            # negative window sums give 0 (and grad 0)


def test_lp_pool_values_modules(torch, gradcheck):
    x = tg.tensor([[[3.0, 4.0, 1.0, 1.0]]])
    np.testing.assert_allclose(F.lp_pool1d(x, 2, 2).numpy(), [[[5.0, np.sqrt(2.0)]]], rtol=1e-6)
    gradcheck(lambda a: F.lp_pool2d(a, 2, 2), np.abs(X[:1, :2, :4, :4]) + 0.5)
    for ours, theirs in ((nn.LPPool2d(2, 3), torch.nn.LPPool2d(2, 3)),
                         (nn.LPPool3d(2, 3), torch.nn.LPPool3d(2, 3)),
                         (nn.LPPool1d(1.5, 3, 2, True), torch.nn.LPPool1d(1.5, 3, 2, True))):
        assert repr(ours) == repr(theirs)


# -- *_with_indices ---------------------------------------------------------------------------------

def test_with_indices_spellings(torch):
    parity(torch, "max_pool2d_with_indices", [X], 3, 2, 1)
    parity(torch, "max_pool1d_with_indices", [X[0]], 2)
    parity(torch, "adaptive_max_pool2d_with_indices", [X], (4, 3))
    parity(torch, "adaptive_max_pool1d_with_indices", [X[0]], 4)


def test_with_indices_without_torch():
    out, idx = F.max_pool1d_with_indices(tg.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
    assert out.tolist() == [[3.0, 2.0]] and idx.tolist() == [[1, 2]]


# -- nn.Buffer --------------------------------------------------------------------------------------

def test_buffer_registers_on_assignment(torch):
    for lib in (tg, torch):
        m = lib.nn.Module()
        m.b = lib.nn.Buffer(lib.zeros(3))
        m.c = lib.nn.Buffer(lib.ones(2), persistent=False)
        m.d = lib.zeros(1)                      # a plain tensor stays a plain attribute
        assert isinstance(m.b, lib.nn.Buffer) and not isinstance(lib.zeros(1), lib.nn.Buffer)
        assert type(m.b) is lib.Tensor
        assert list(m.state_dict()) == ["b"]
        assert [n for n, _ in m.named_buffers()] == ["b", "c"]
        with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'b'"):
            m.b = 3
        p = lib.nn.Buffer(lib.ones(2, requires_grad=True))
        assert p.requires_grad and p.is_leaf


def test_buffer_before_init_raises():
    class Early(nn.Module):
        def __init__(self):
            self.b = nn.Buffer(tg.zeros(1))
            super().__init__()
    with pytest.raises(AttributeError, match="cannot assign buffer before Module.__init__"):
        Early()


# -- fractional_max_pool2d --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_fractional_max_pool2d_matches_torch(torch, seed):
    rng = np.random.default_rng(seed)
    H, W = (int(v) for v in rng.integers(4, 12, 2))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    Ho, Wo = int(rng.integers(1, H - kh + 2)), int(rng.integers(1, W - kw + 2))
    dtype = (np.float32, np.float64)[seed % 2]
    x = (rng.integers(-3, 3, (2, 3, H, W)) if seed % 3 == 0
         else rng.standard_normal((2, 3, H, W))).astype(dtype)     # ties: the first maximum
    samples = rng.random((2, 3, 2)).astype(dtype)
    results = []
    for lib in (tg, torch):
        xt = lib.tensor(x, requires_grad=True)
        y, index = lib.nn.functional.fractional_max_pool2d(
            xt, (kh, kw), output_size=(Ho, Wo), return_indices=True,
            _random_samples=lib.tensor(samples))
        (y * lib.tensor(np.arange(y.numel(), dtype=dtype).reshape(tuple(y.shape)))).sum() \
            .backward()
        results.append((y.detach().numpy(), index.numpy(), xt.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_fractional_max_pool2d_module_and_errors(torch):
    pool = nn.FractionalMaxPool2d(2, output_ratio=0.5)
    assert repr(pool) == repr(torch.nn.FractionalMaxPool2d(2, output_ratio=0.5))
    assert pool(tg.randn(1, 2, 8, 8)).shape == (1, 2, 4, 4)
    out = F.fractional_max_pool2d(tg.arange(16.0).reshape(1, 4, 4), 2, output_size=1)
    assert out.tolist() == [[[15.0]]]            # one window: the bottom-right corner
    with pytest.raises(ValueError, match="requires specifying either an output_size"):
        F.fractional_max_pool2d(tg.randn(1, 1, 9, 9), 3)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 9"):
        F.fractional_max_pool2d(tg.randn(1, 1, 9, 9), 3, output_size=8)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(3, output_ratio=1.5)


# -- pdist, triplet_margin_with_distance_loss, multilabel_margin_loss, feature_alpha_dropout ---------

MULTILABEL = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0], [2, 2, -1, 3], [0, 1, 2, 3]])


def test_small_losses_match_torch(torch):
    x = X[0, 0, :5, :4].copy()
    for p in (1, 2, 3.5):
        parity(torch, "pdist", [x], p)
    a, b, c = X[0, :3, :4, :4]
    parity(torch, "triplet_margin_with_distance_loss", [a, b, c])
    parity(torch, "triplet_margin_with_distance_loss", [a, b, c], swap=True, margin=2.0,
           reduction="none")
    for reduction in ("mean", "sum", "none"):
        ours = tg.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        y = F.multilabel_margin_loss(ours, tg.tensor(MULTILABEL), reduction=reduction)
        t = torch.nn.functional.multilabel_margin_loss(theirs, torch.tensor(MULTILABEL),
                                                       reduction=reduction)
        np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=1e-12)
        y.sum().backward()
        t.sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    for spec in ("TripletMarginWithDistanceLoss()", "MultiLabelMarginLoss()",
                 "FeatureAlphaDropout(0.3)", "TripletMarginWithDistanceLoss(margin=2.0)"):
        assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        assert repr(nn.NLLLoss2d()) == "NLLLoss2d()"


def test_small_losses_without_torch(gradcheck):
    assert F.pdist(tg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist() == \
        pytest.approx([5.0, 1.0, np.sqrt(18.0)])
    # target class 0 of 3 against classes 1, 2: (max(0, 1 - (1 - 0)) + max(0, 1 - (1 - 2))) / 3
    loss = F.multilabel_margin_loss(tg.tensor([[1.0, 0.0, 2.0]]), tg.tensor([[0, -1, 2]]))
    assert loss.item() == pytest.approx(2.0 / 3.0)
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(tg.zeros(1, 3), tg.tensor([[5, -1, 0]]))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(tg.zeros(2, 3, 4))
    gradcheck(lambda a: F.pdist(a), X[0, 0, :4, :3])
    tg.manual_seed(0)
    dropped = F.feature_alpha_dropout(tg.ones(4, 6, 3, 3), 0.5, True).numpy().reshape(24, -1)
    assert all(len(set(row)) == 1 for row in dropped)           # one draw per channel
    assert F.feature_alpha_dropout(tg.ones(2, 3), 0.5, False).tolist() == [[1.0] * 3] * 2
