"""Regression tests of the proxy task "proxybq" (small vision models, self-supervised learning):
PyTorch's adaptive average pools to size 1 are one mean over the pooled dims, taken before
any check of the input's rank, and its 1-d adaptive pools check the rank first."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(shape, seed=0):
    x = np.random.RandomState(seed).randn(*shape)
    return (tapegrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True))


@pytest.mark.parametrize("shape, call", [
    ((3, 4), lambda F, x: F.adaptive_avg_pool2d(x, 1)),
    ((2, 3, 4, 5, 6), lambda F, x: F.adaptive_avg_pool2d(x, 1)),
    ((2, 3, 4, 5, 6), lambda F, x: F.adaptive_avg_pool2d(x, (1, 1))),
    ((2, 3, 1, 5), lambda F, x: F.adaptive_avg_pool2d(x, (None, 1))),
    ((3, 4, 5), lambda F, x: F.adaptive_avg_pool3d(x, 1)),
    ((1, 2, 3, 4, 5, 6), lambda F, x: F.adaptive_avg_pool3d(x, (1, 1, 1))),
    ((4, 6), lambda F, x: F.adaptive_avg_pool1d(x, 1)),
])
def test_global_adaptive_average_any_rank(shape, call):
    # A 2-d global pool of a (C, L) map or of a 5-d stack pools its last two dims in PyTorch.
    tx, rx = _both(shape)
    t, r = call(tapegrad.nn.functional, tx), call(torch.nn.functional, rx)
    assert tuple(t.shape) == tuple(r.shape)
    assert t.grad_fn.name() == r.grad_fn.name()
    np.testing.assert_allclose(t.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    w = np.random.RandomState(1).randn(*r.shape)
    (t * tapegrad.tensor(w)).sum().backward()
    (r * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-12)


def test_global_adaptive_average_modules_and_gradcheck():
    tx, rx = _both((4, 6))
    t = tapegrad.nn.AdaptiveAvgPool2d(1)(tx)
    r = torch.nn.AdaptiveAvgPool2d(1)(rx)
    np.testing.assert_allclose(t.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    assert tuple(tapegrad.nn.AdaptiveAvgPool3d(1)(tapegrad.zeros(4, 6, 2)).shape) == (1, 1, 1)
    assert tapegrad.autograd.gradcheck(lambda a: tapegrad.nn.functional.adaptive_avg_pool2d(a, 1),
                                       (tx,))


def test_global_adaptive_average_of_empty_window_is_nan():
    t = tapegrad.nn.functional.adaptive_avg_pool2d(tapegrad.zeros(2, 3, 0, 4), 1)
    r = torch.nn.functional.adaptive_avg_pool2d(torch.zeros(2, 3, 0, 4), 1)
    assert tuple(t.shape) == tuple(r.shape) == (2, 3, 1, 1)
    assert np.isnan(t.numpy()).all() and r.isnan().all()
    t = tapegrad.nn.functional.adaptive_avg_pool1d(tapegrad.zeros(2, 3, 0), 1)
    assert tuple(t.shape) == (2, 3, 1) and np.isnan(t.numpy()).all()
    t = tapegrad.nn.functional.adaptive_avg_pool3d(tapegrad.zeros(2, 0, 3, 4, 5), 1)
    assert tuple(t.shape) == (2, 0, 1, 1, 1)


@pytest.mark.parametrize("lib_call, error, phrase", [
    (lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(3), 1), IndexError,
     "Dimension out of range"),
    (lambda m: m.nn.functional.adaptive_avg_pool3d(m.zeros(3, 4), 1), IndexError,
     "Dimension out of range"),
    (lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(3, 4, dtype=m.long), 1),
     RuntimeError, "could not infer output dtype"),
    (lambda m: m.nn.functional.adaptive_avg_pool1d(m.zeros(3), 1), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor"),
    (lambda m: m.nn.functional.adaptive_avg_pool1d(m.zeros(2, 3, 4, 5), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    (lambda m: m.nn.functional.adaptive_max_pool1d(m.zeros(3), 1), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor"),
    (lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(3, 4), 2), RuntimeError,
     "Expected 3D or 4D tensor"),
    (lambda m: m.nn.functional.adaptive_avg_pool2d(m.zeros(3, 4), (1, 1)), ValueError,
     "Input dimension should be at least 3"),
])
def test_adaptive_pool_errors(lib_call, error, phrase):
    for lib in (torch, tapegrad):
        with pytest.raises(error, match=phrase):
            lib_call(lib)
