"""einsum, addmm, baddbmm: PyTorch parity of values and gradients, finite differences, errors."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _tg(t, requires_grad=False):
    return tg.tensor(t.detach().numpy().copy(), requires_grad=requires_grad)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("i,i->", [(4,), (4,)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("i,j->ij", [(2,), (4,)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ba", [(2, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("iij->ij", [(3, 3, 2)]),
    ("ijk,ikl,il->jl", [(2, 3, 4), (2, 4, 5), (2, 5)]),
    ("i,i", [(2,), (1,)]),
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("iji->j", [(2, 3, 2)]),
    ("ab,cd,bd->ac", [(2, 3), (4, 5), (3, 5)]),
    ("i...->...", [(2, 3, 4)]),
    ("a...b,b...->a", [(2, 3, 4), (4, 3)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,jk->...", [(2, 3), (3, 4)]),
    ("i,->i", [(3,), ()]),
    (",->", [(), ()]),
]


@pytest.fixture(autouse=True)
def _torch_single_thread():
    try:
        import torch
    except Exception:  # pragma: no cover - torch is optional
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES)
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
def test_einsum_parity(torch, equation, shapes, dtype_name):
    dt = getattr(torch, dtype_name)
    tol = 1e-12 if dtype_name == "float64" else 1e-5
    torch.manual_seed(0)
    ops = [torch.randn(s, dtype=dt, requires_grad=True) for s in shapes]
    gops = [_tg(o, True) for o in ops]
    r = torch.einsum(equation, *ops)
    g = tg.einsum(equation, *gops)
    assert tuple(g.shape) == tuple(r.shape) and g.dtype == getattr(tg, dtype_name)
    np.testing.assert_allclose(g.detach().numpy(), r.detach().numpy(), rtol=tol, atol=tol)
    w = torch.randn(r.shape, dtype=dt)
    (r * w).sum().backward()
    (g * _tg(w)).sum().backward()
    for o, p in zip(ops, gops):
        np.testing.assert_allclose(p.grad.numpy(), o.grad.numpy(), rtol=tol, atol=tol)


def test_einsum_call_forms(torch):
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    gx, gy = _tg(x), _tg(y)
    expected = torch.einsum("ij,jk->ik", x, y).numpy()
    for got in (tg.einsum("ij,jk->ik", [gx, gy]), tg.einsum(gx, [0, 1], gy, [1, 2], [0, 2]),
                tg.einsum(gx, [0, 1], gy, [1, 2])):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    ints = torch.einsum("ij,jk->ik", x.int(), y.int())
    gints = tg.einsum("ij,jk->ik", gx.int(), gy.int())
    assert gints.dtype == tg.int32
    np.testing.assert_array_equal(gints.numpy(), ints.numpy())


def test_einsum_values_without_torch():
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(tg.einsum("ii", a).numpy(), 5.0)
    np.testing.assert_array_equal(tg.einsum("ii->i", a).numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(tg.einsum("ij->ji", a).numpy(), [[1.0, 3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(tg.einsum("ij,jk->ik", a, a).numpy(), [[7, 10], [15, 22]])
    np.testing.assert_array_equal(tg.einsum("i,j->ij", a[0], a[1]).numpy(),
                                  [[3.0, 4.0], [6.0, 8.0]])


def test_einsum_second_order(torch):
    x = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    gx = _tg(x, True)
    (tgrad,) = torch.autograd.grad(torch.einsum("ij,jk,ki->", x, x, x), x, create_graph=True)
    (ggrad,) = tg.autograd.grad(tg.einsum("ij,jk,ki->", gx, gx, gx), gx, create_graph=True)
    np.testing.assert_allclose(ggrad.detach().numpy(), tgrad.detach().numpy(), rtol=1e-12)
    tgrad.pow(2).sum().backward()
    ggrad.pow(2).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), x.grad.numpy(), rtol=1e-12)


def test_einsum_finite_differences(gradcheck):
    rng = np.random.default_rng(0)
    gradcheck(lambda a, b: tg.einsum("bij,bjk->bik", a, b), rng.standard_normal((2, 2, 3)),
              rng.standard_normal((2, 3, 2)))
    gradcheck(lambda a: tg.einsum("iji->j", a) ** 2, rng.standard_normal((2, 3, 2)))
    gradcheck(lambda a, b: tg.einsum("...i,...i->...", a, b), rng.standard_normal((2, 3)),
              rng.standard_normal((3,)))


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 4), (3, 4)]),
    ("ijk,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk->ikk", [(2, 3), (3, 4)]),
    ("ij,jk->iz", [(2, 3), (3, 4)]),
    ("ij,kk->ik", [(2, 3), (3, 4)]),
    ("i1,jk->ik", [(2, 3), (3, 4)]),
    ("..ij,jk", [(2, 3), (3, 4)]),
    ("i...j...,jk", [(2, 3), (3, 4)]),
    ("ij->ij->", [(2, 3)]),
    ("i,i", [(2,), (3,)]),
    ("i->i", [()]),
    ("ij", [(3,)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_ERRORS)
def test_einsum_errors_match_torch(torch, equation, shapes):
    ops = [torch.randn(s) for s in shapes]
    with pytest.raises(Exception) as expected:
        torch.einsum(equation, *ops)
    with pytest.raises(type(expected.value)) as got:
        tg.einsum(equation, *[_tg(o) for o in ops])
    assert str(got.value) == str(expected.value)


def test_einsum_dtype_mismatch_matches_torch(torch):
    x, y = torch.randn(2, 3), torch.randn(3, 4).double()
    with pytest.raises(RuntimeError) as expected:
        torch.einsum("ij,jk->ik", x, y)
    with pytest.raises(RuntimeError) as got:
        tg.einsum("ij,jk->ik", _tg(x), _tg(y))
    assert str(got.value) == str(expected.value)


# -- addmm / baddbmm -------------------------------------------------------------------------------

@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (1, -1.5)])
@pytest.mark.parametrize("fn,shapes", [("addmm", [(4,), (2, 3), (3, 4)]),
                                       ("addmm", [(2, 1), (2, 3), (3, 4)]),
                                       ("baddbmm", [(2, 1, 4), (2, 2, 3), (2, 3, 4)]),
                                       ("baddbmm", [(4,), (2, 2, 3), (2, 3, 4)])])
def test_addmm_baddbmm_parity(torch, fn, shapes, beta, alpha):
    torch.manual_seed(0)
    ops = [torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    gops = [_tg(o, True) for o in ops]
    r = getattr(torch, fn)(*ops, beta=beta, alpha=alpha)
    g = getattr(tg, fn)(*gops, beta=beta, alpha=alpha)
    np.testing.assert_allclose(g.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    m = getattr(gops[0], fn)(*gops[1:], beta=beta, alpha=alpha)
    np.testing.assert_allclose(m.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    w = torch.randn(r.shape, dtype=torch.float64)
    (r * w).sum().backward()
    (g * _tg(w)).sum().backward()
    for o, p in zip(ops[1:], gops[1:]):
        np.testing.assert_allclose(p.grad.numpy(), o.grad.numpy(), rtol=1e-12)
    if beta != 0:
        np.testing.assert_allclose(gops[0].grad.numpy(), ops[0].grad.numpy(), rtol=1e-12)


def test_addmm_zero_beta_ignores_nan():
    out = tg.addmm(tg.full((4,), float("nan")), tg.ones(2, 3), tg.ones(3, 4), beta=0)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 4), 3.0, dtype=np.float32))


def test_addmm_baddbmm_finite_differences(gradcheck):
    rng = np.random.default_rng(0)
    gradcheck(lambda c, a, b: tg.addmm(c, a, b, beta=0.5, alpha=2.0),
              rng.standard_normal((3,)), rng.standard_normal((2, 4)), rng.standard_normal((4, 3)))
    gradcheck(lambda c, a, b: tg.baddbmm(c, a, b), rng.standard_normal((2, 1, 3)),
              rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 4, 3)))


def test_addmm_baddbmm_errors_match_torch(torch):
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    b1, b2 = torch.randn(5, 2, 3), torch.randn(5, 3, 4)
    cases = [
        ("addmm", (torch.randn(3), x, y)),
        ("addmm", (torch.randn(4), x[0], y)),
        ("addmm", (torch.randn(4), x, y[0])),
        ("addmm", (torch.randn(4), x, x)),
        ("addmm", (torch.randn(4).double(), x, y)),
        ("addmm", (torch.randn(2, 2, 4), x, y)),
        ("baddbmm", (torch.randn(4), b1[0], b2)),
        ("baddbmm", (torch.randn(4), b1, b2[:2])),
        ("baddbmm", (torch.randn(3), b1, b2)),
        ("baddbmm", (torch.randn(4), b1, b1)),
        ("addmm", (torch.randn(4), x.double(), y)),
        ("baddbmm", (torch.randn(4).double(), b1, b2)),
        ("baddbmm", (torch.randn(4), b1, b2.double())),
    ]
    for fn, args in cases:
        with pytest.raises(Exception) as expected:
            getattr(torch, fn)(*args)
        with pytest.raises(type(expected.value)) as got:
            getattr(tg, fn)(*[_tg(a) for a in args])
        assert str(got.value) == str(expected.value)
