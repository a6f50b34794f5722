"""Regressions of the silent differences the session-11 fuzz campaigns left (issue 16), each
against PyTorch where it is installed (the `torch` fixture skips cleanly without it), with
float64 finite-difference checks where the gradient is new.
"""
import numpy as np
import pytest

import tapegrad as tg


def _as_np(t):
    return None if t is None else np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _same(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(_as_np(a), _as_np(b), rtol=rtol, atol=atol, equal_nan=True)


# -- cumprod's gradient through zeros (seed 58118466) ---------------------------------------------
# sqrt(|cumprod(x)|) where the running product is 0: the upstream gradient there is inf. The
# gradient was a chain of recorded products whose VJP met that inf with the structural zeros
# (0 * inf = NaN in the whole row); PyTorch's cumprod_backward takes the products that leave the
# zero out directly, and gives the finite values finite differences give.

_CUMPROD_ROWS = [
    [0.7, -1.3, 2.0, 0.5, 1.1],      # no zero
    [0.7, 0.0, 2.0, 0.5, 1.1],       # one zero
    [0.0, 0.0, 0.5, -0.5, 2.0],      # zeros first
    [1.5, 2.0, 0.0, 3.0, 0.0],       # two zeros apart
    [1.2, -0.4, 0.9, 2.0, 0.0],      # zero last
    [0.0, 0.0, 0.0, 0.0, 0.0],
]


def _cumprod_rows(L, dtype):
    return L.tensor(np.array(_CUMPROD_ROWS), dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_gradient_through_zeros_as_torch(torch, dim):
    weights = np.random.default_rng(5).standard_normal((6, 5))
    got = []
    for L in (torch, tg):
        x = _cumprod_rows(L, L.float64)
        loss = (x.cumprod(dim).abs().sqrt() * L.tensor(weights)).sum()
        loss.backward()
        got.append(x.grad)
    _same(got[1], got[0])


def test_cumprod_sqrt_abs_seed_58118466_finite_as_torch(torch):
    vals = np.array([0.0, 0.0, 0.5, -0.5, 0.0, 1.5, 1.0, 0.0]).reshape(2, 4)
    w = np.random.default_rng([307945602, 6]).standard_normal((2, 4))
    got = []
    for L in (torch, tg):
        v1 = L.tensor(vals, requires_grad=True)
        (v1.cumprod(-1).abs().sqrt() * L.tensor(w)).sum().backward()
        got.append(v1.grad)
    _same(got[1], got[0])
    assert np.isfinite(_as_np(got[1])[:, 1:]).all()


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("upstream", ["finite", "inf_at_zeros"])
def test_cumprod_second_derivative_as_torch(torch, dim, upstream):
    g = np.random.default_rng(7).standard_normal((6, 5))
    if upstream == "inf_at_zeros":
        g[np.cumprod(np.array(_CUMPROD_ROWS), dim) == 0] = np.inf
    got = []
    for L in (torch, tg):
        x = _cumprod_rows(L, L.float64)
        first, = L.autograd.grad(x.cumprod(dim), x, L.tensor(g), create_graph=True)
        second, = L.autograd.grad((first * L.tensor(g[::-1].copy())).sum(), x)
        got.append((first, second))
    _same(got[1][0], got[0][0])
    if upstream == "finite":     # (else the first derivative is already NaN in both)
        _same(got[1][1], got[0][1])


def test_cumprod_complex_gradients_as_torch(torch):
    vals = np.array([1 + 2j, 0j, 3 - 1j, 2j, 0j, 0.5 + 0.5j])
    got = []
    for L in (torch, tg):
        z = L.tensor(vals, requires_grad=True)
        first, = L.autograd.grad((z.cumprod(0).abs() ** 2).sum(), z, create_graph=True)
        second, = L.autograd.grad(first.abs().sum(), z)
        got.append((first, second))
    _same(got[1][0], got[0][0])
    _same(got[1][1], got[0][1])


@pytest.mark.parametrize("row", range(len(_CUMPROD_ROWS)))
def test_cumprod_gradcheck_and_gradgradcheck(row):
    # a polynomial: finite differences hold through the zeros too
    x = tg.tensor(np.array(_CUMPROD_ROWS[row]) + 0.0, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: t.cumprod(0), (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.cumprod(0), (x,))
    m = tg.tensor(np.array(_CUMPROD_ROWS)[:, :3], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: t.cumprod(0), (m,))


def test_cumprod_grad_fn_and_saved_values_as_torch(torch):
    for L in (torch, tg):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.cumprod(0)
        assert type(y.grad_fn).__name__ == "CumprodBackward0"
        y2 = y * 1
        y.mul_(2)                      # the node saved its result: the backward raises
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y2.sum().backward()


@pytest.mark.parametrize("vals", [[2.0, 0.0, 4.0], [0.0, 3.0, 0.0], [0.0, 0.0, 0.0],
                                  [1.5, -2.0, 0.5]])
def test_prod_gradients_with_zeros_as_torch(torch, vals):
    got = []
    for L in (torch, tg):
        x = L.tensor(vals, dtype=L.float64, requires_grad=True)
        first, = L.autograd.grad(x.prod(), x, create_graph=True)
        second, = L.autograd.grad((first * L.tensor([1.0, -2.0, 0.5], dtype=L.float64)).sum(),
                                  x)
        rows = L.tensor([vals, vals[::-1]], dtype=L.float64, requires_grad=True)
        by_row, = L.autograd.grad(rows.prod(1), rows, L.tensor([1.5, -1.0], dtype=L.float64))
        got.append((first, second, by_row))
    for a, b in zip(got[1], got[0]):
        _same(a, b)


# -- conj() keeps in step with its input (57301121) -----------------------------------------------
# PyTorch's conj() of a complex tensor is a lazy view: a write through either side reaches the
# other. tapegrad's was a materialised copy that silently kept its old values; it is now a mirror
# whose storage follows the input's through every in-place write, whose history is regenerated
# after a recorded write into the input, and into which a recorded write is refused (never lost).

def _conj_writes(L):
    out = []
    w = L.tensor([1 + 1j, 2 - 1j])
    v = w.conj()
    v[0] = 5 + 5j
    out.append(w.clone())
    w.mul_(2)
    out.append(v.clone())
    v.add_(1)
    out.append(w.clone())
    v[1:].mul_(1j)
    out.append(w.clone())
    w[0].copy_(L.tensor(3 - 4j))
    out.append(v.clone())
    vv = v.conj()
    vv.sub_(1)
    out.append((w.clone(), v.clone(), vv.clone()))
    out.append((v.is_conj(), v.resolve_conj().is_conj(), w.conj_physical().is_conj()))
    with L.no_grad():
        a = L.tensor([1.0, -2.0], requires_grad=True) * (1 + 2j)
        c = a.conj()
        c.mul_(2j)
        out.append(a.clone())
    return out


def test_conj_writes_reach_the_other_side_as_torch(torch):
    for mine, theirs in zip(_conj_writes(tg), _conj_writes(torch)):
        for a, b in zip(mine if isinstance(mine, tuple) else (mine,),
                        theirs if isinstance(theirs, tuple) else (theirs,)):
            if isinstance(b, bool):
                assert a == b
            else:
                _same(a, b)


def test_conj_after_a_recorded_write_into_its_input_as_torch(torch):
    got = []
    for L in (torch, tg):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([0.5, -1.5], requires_grad=True)
        z = a * (1 + 2j)
        c = z.conj()
        z.mul_(b)
        loss = (c * L.tensor([1 - 1j, 2 + 0.5j])).real.sum() + (z.abs() ** 2).sum()
        ga, gb = L.autograd.grad(loss, [a, b], create_graph=True)
        second = L.autograd.grad((ga * ga).sum() + gb.sum(), [a, b])
        got.append((c.detach().resolve_conj(), ga, gb) + second)
    for a, b in zip(got[1], got[0]):
        _same(a, b, rtol=1e-6)      # (float32)


def test_conj_gradcheck_through_a_write_into_its_input():
    a = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor([0.5, -1.5], dtype=tg.float64, requires_grad=True)

    def f(a, b):
        z = a * (1 + 2j)
        c = z.conj()
        z.mul_(b * 1j)
        return (c * (2 - 1j)).real + z.imag

    assert tg.autograd.gradcheck(f, (a, b))
    assert tg.autograd.gradgradcheck(f, (a, b))


def test_recorded_write_into_a_conj_is_refused_not_lost():
    # seed 57301121's write: PyTorch records it on the input (CopySlices); tapegrad refuses it
    v0 = tg.tensor(-0.5, dtype=tg.float64, requires_grad=True)
    v2 = tg.exp(1j * v0)
    v4 = v2.conj()
    before = v2.detach().clone()
    with pytest.raises(RuntimeError, match="conj"):
        v4.mul_(0.5 - 2j)
    _same(v2.detach(), before)


def test_conj_of_a_real_tensor_is_itself_and_costs_no_link(torch):
    for L in (torch, tg):
        r = L.tensor([1.0, 2.0])
        assert r.conj() is r
    assert not tg._core._is_conj_mirror(tg.tensor([1.0]).conj())
