"""What the session-30 proxy of public classic-ML / numerical-method scripts (k-NN and k-means
with cdist/topk, L-BFGS line searches written outside PyTorch, GMM EM, t-SNE by hand, Kalman
filters, Newton's method) touched that tapegrad did differently, each checked against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _pair(array, requires_grad=False):
    ours = tg.tensor(array, requires_grad=requires_grad)
    theirs = torch.tensor(array, requires_grad=requires_grad)
    return ours, theirs


# -- cdist's matrix-product path (p = 2, more than 25 rows or compute_mode='use_mm_...') ---------

def _rows(seed, shape, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def test_cdist_above_25_rows_rounds_like_pytorchs_matrix_product(torch_bits):
    """k-NN / k-means scripts print cdist of a data set against centroids: PyTorch computes
    those with |a|^2 - 2ab + |b|^2 once either side has more than 25 rows, so the float32
    values round its way (the diagonal of cdist(x, x) is not exactly 0 there)."""
    a, b = _rows(0, (40, 3)), _rows(1, (7, 3))
    ours = tg.cdist(tg.tensor(a), tg.tensor(b)).numpy()
    theirs = torch.cdist(torch.tensor(a), torch.tensor(b)).numpy()
    # the row-difference kernel gave about a third of these a different last bit (PyTorch's
    # product's own last bits depend on the CPU: see tests/conftest.py's TorchBits)
    assert (ours != theirs).sum() <= (4 if torch_bits.reproducible else 5 * ours.size // 10)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6 if torch_bits.reproducible else 1e-5)
    x = _rows(2, (30, 4))
    ours_diag = np.diag(tg.cdist(tg.tensor(x), tg.tensor(x)).numpy())
    theirs_diag = np.diag(torch.cdist(torch.tensor(x), torch.tensor(x)).numpy())
    assert (theirs_diag > 0).any()                 # (the product's cancellation, as printed)
    np.testing.assert_allclose(ours_diag, theirs_diag, atol=2e-3)
    assert (ours_diag > 0).sum() == (theirs_diag > 0).sum()


def test_cdist_matrix_product_path_graph_and_gradients():
    a, b = _rows(3, (30, 3)), _rows(4, (4, 3))
    oa, ta = _pair(a, True)
    ob, tb = _pair(b, True)
    od, td = tg.cdist(oa, ob), torch.cdist(ta, tb)
    assert type(od.grad_fn).__name__ == type(td.grad_fn).__name__ == "ViewBackward0"
    assert (type(od.grad_fn.next_functions[0][0]).__name__
            == type(td.grad_fn.next_functions[0][0]).__name__ == "EuclideanDistBackward0")
    w = np.arange(4, dtype=np.float32)
    (od * tg.tensor(w)).sum().backward()
    (td * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(oa.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ob.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)
    # at most 25 rows, or compute_mode refusing the product, keeps the distance kernel
    assert type(tg.cdist(oa[:25], ob).grad_fn).__name__ == "CdistBackward0"
    assert type(tg.cdist(oa, ob, compute_mode="donot_use_mm_for_euclid_dist").grad_fn).__name__ \
        == type(torch.cdist(ta, tb, compute_mode="donot_use_mm_for_euclid_dist").grad_fn).__name__


def test_cdist_forced_matrix_product_coincident_rows_zero_subgradient():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0]])
    ox, tx = _pair(x, True)
    od = tg.cdist(ox, ox, compute_mode="use_mm_for_euclid_dist")
    td = torch.cdist(tx, tx, compute_mode="use_mm_for_euclid_dist")
    np.testing.assert_array_equal(od.detach().numpy(), td.detach().numpy())
    assert type(od.grad_fn.next_functions[0][0]).__name__ == "EuclideanDistBackward0"
    od.sum().backward()
    td.sum().backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert np.isfinite(ox.grad.numpy()).all()


def test_cdist_matrix_product_path_broadcasts_batches():
    a, b = _rows(5, (2, 1, 27, 4), np.float64), _rows(6, (3, 5, 4), np.float64)
    ours = tg.cdist(tg.tensor(a, requires_grad=True), tg.tensor(b))
    theirs = torch.cdist(torch.tensor(a, requires_grad=True), torch.tensor(b))
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__ == "ViewBackward0"
    assert tuple(ours.shape) == tuple(theirs.shape) == (2, 3, 27, 5)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_cdist_matrix_product_path_takes_float16():
    """PyTorch's distance kernel refuses half precision; its matrix product does not."""
    a, b = _rows(7, (30, 3)).astype(np.float16), _rows(8, (3, 3)).astype(np.float16)
    ours = tg.cdist(tg.tensor(a), tg.tensor(b))
    theirs = torch.cdist(torch.tensor(a), torch.tensor(b))
    assert str(ours.dtype) == str(theirs.dtype) == "torch.float16"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(NotImplementedError, match="cdist"):
        torch.cdist(torch.tensor(a[:3]), torch.tensor(b))
    with pytest.raises(NotImplementedError, match="cdist"):
        tg.cdist(tg.tensor(a[:3]), tg.tensor(b))


def test_cdist_matrix_product_path_gradcheck():
    rng = np.random.default_rng(9)
    a = tg.tensor(rng.normal(size=(27, 3)), requires_grad=True)
    b = tg.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    assert type(tg.cdist(a, b).grad_fn.next_functions[0][0]).__name__ == "EuclideanDistBackward0"
    assert tg.autograd.gradcheck(lambda x, y: tg.cdist(x, y), (a, b))
    assert tg.autograd.gradgradcheck(lambda x, y: tg.cdist(x, y), (a, b))


# -- torch.optim.lbfgs._cubic_interpolate, imported by hand-written line searches ---------------

@pytest.mark.parametrize("args,bounds", [
    ((0.0, 1.0, -1.0, 1.0, 0.5, 0.5), None),
    ((0.0, 1.0, -1.0, 1.0, 2.0, -3.0), (1.01, 10.0)),       # no minimum: the bounds' midpoint
    ((2.0, 0.3, 0.4, 0.5, 0.9, -1.2), None),                # x1 > x2
    ((0.0, 1.0, -2.0, 1.0, 0.2, 0.1), (0.1, 0.4)),          # clipped to the upper bound
])
def test_lbfgs_cubic_interpolate_with_tensor_slopes(args, bounds):
    from tapegrad.optim.lbfgs import _cubic_interpolate as ours_fn
    from torch.optim.lbfgs import _cubic_interpolate as theirs_fn
    x1, f1, g1, x2, f2, g2 = args
    ours = ours_fn(x1, f1, tg.tensor(g1), x2, f2, tg.tensor(g2), bounds=bounds)
    theirs = theirs_fn(x1, f1, torch.tensor(g1), x2, f2, torch.tensor(g2), bounds=bounds)
    assert isinstance(ours, tg.Tensor) == isinstance(theirs, torch.Tensor)
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-6)


def _rosenbrock(v):
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


@pytest.mark.parametrize("start,t0", [((-1.2, 1.0), 1.0), ((0.5, -0.3), 0.01), ((2.0, 2.0), 5.0)])
def test_lbfgs_strong_wolfe_called_with_tensors(start, t0):
    """Hand-written optimisers call torch.optim.lbfgs._strong_wolfe with PyTorch's arguments:
    flat gradient tensors, an objective returning (float, tensor)."""
    from tapegrad.optim.lbfgs import _strong_wolfe as ours_fn
    from torch.optim.lbfgs import _strong_wolfe as theirs_fn

    def run(lib, fn):
        def obj(x, t, d):
            xt = (x + t * d).detach().requires_grad_()
            f = _rosenbrock(xt)
            g, = lib.autograd.grad(f, xt)
            return float(f.detach()), g
        x = lib.tensor(start, dtype=lib.float64)
        f, g = obj(x, 0.0, lib.zeros(2, dtype=lib.float64))
        d = -g
        return fn(obj, x, t0, d, f, g, g.dot(d))

    of, og, ot, oevals = run(tg, ours_fn)
    tf, tg_, tt, tevals = run(torch, theirs_fn)
    assert oevals == tevals
    assert isinstance(ot, tg.Tensor) == isinstance(tt, torch.Tensor)
    np.testing.assert_allclose(of, tf, rtol=1e-12)
    np.testing.assert_allclose(og.numpy(), tg_.numpy(), rtol=1e-10)
    np.testing.assert_allclose(float(ot), float(tt), rtol=1e-12)
