"""Regressions of the session-32 fuzz findings (fuzz20: compile-mode programs 62720000.., programs
60680000.. and 65030000.., surface 60815000..) and of earlier runs' leftovers (62710754,
60671885), each an explicit case compared with PyTorch (or, for compile, with eager tapegrad)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def arr(t):
    return t.detach().numpy()


# -- SILENT: a retained .grad is replaced, not added to in place (from 60671885) -----------------
# PyTorch's retains_grad hook sets a non-leaf's .grad to a row-major clone of its gradient, then
# to grad + g, a new tensor, at each later backward; tapegrad added into the old tensor, so a
# .grad read after one backward changed with the next (and after a create_graph pass the .grad
# kept requires_grad through a plain pass; its layout followed the tensor's).

def test_retained_grad_read_after_one_backward_keeps_its_value():
    def run(L):
        x = L.tensor([1., 2., -1.], requires_grad=True)
        y = x * 3
        y.retain_grad()
        (y * L.tensor([1., 2., 3.])).sum().backward(retain_graph=True)
        first = y.grad
        leaf_first = x.grad
        (y * L.tensor([0.5, -1., 4.])).sum().backward()
        return first, y.grad, first is y.grad, leaf_first is x.grad
    got, want = run(tg), run(torch)
    np.testing.assert_array_equal(arr(got[0]), arr(want[0]))       # [1, 2, 3], not the sum
    np.testing.assert_array_equal(arr(got[1]), arr(want[1]))
    assert got[2:] == want[2:] == (False, True)       # (a leaf's .grad is added to in place)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_retained_grad_after_create_graph_then_plain_pass():
    def run(L):
        x = L.tensor([1., 2.], requires_grad=True)
        y = x * 3
        y.retain_grad()
        (y ** 3).sum().backward(create_graph=True)
        after1 = (y.grad.requires_grad, type(y.grad.grad_fn).__name__)
        (y ** 2).sum().backward()
        return after1, (y.grad.requires_grad, y.grad.grad_fn), arr(y.grad), arr(x.grad)
    got, want = run(tg), run(torch)
    assert got[0] == want[0] == (True, "CloneBackward0")
    assert got[1] == want[1] == (False, None)
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])


def test_retained_grad_of_a_transposed_tensor_is_row_major():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        y = x.t() * 2
        y.retain_grad()
        (y * L.arange(6.).reshape(3, 2)).sum().backward()
        return y.is_contiguous(), y.grad.is_contiguous(), y.grad.stride(), arr(y.grad)
    got, want = run(tg), run(torch)
    assert got[:3] == want[:3] == (False, True, (2, 1))
    np.testing.assert_array_equal(got[3], want[3])


# -- SILENT: gather of a non-contiguous input with a negative index (fuzz 62720522) --------------
# Its copy loop's numpy route (taken for an expanded or transposed input) counted -1 from the
# end where PyTorch raises.

@pytest.mark.parametrize("make, dim, index", [
    (lambda L: L.tensor(0.5).expand(2), -1, [-1, -2]),
    (lambda L: L.tensor([[1., 2., 3.], [4., 5., 6.]]).t(), 0, [[-1, 0], [1, 0]]),
])
def test_gather_of_a_strided_input_refuses_a_negative_index(make, dim, index):
    with pytest.raises(RuntimeError) as want:
        torch.gather(make(torch), dim, torch.tensor(index))
    with pytest.raises(RuntimeError, match="is out of bounds for dimension") as got:
        tg.gather(make(tg), dim, tg.tensor(index))
    assert str(got.value) == str(want.value)


def test_gather_of_a_strided_input_in_range_still_gathers():
    def run(L):
        src = L.tensor([[1., 2., 3.], [4., 5., 6.]]).t()
        return L.gather(src, 0, L.tensor([[2, 0], [1, 0]])), L.gather(src, 1, L.tensor([[1], [0]]))
    for g, w in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(arr(g), arr(w))


# -- compiled vs eager: a re-run op's gradient into a slot that already has one (62720148) -------
# The replay's nested sweep of a re-run op summed the op's contributions to an input and added
# that subtotal to what the later steps had given it: (b + (c1 + c2)) where eager adds
# ((b + c1) + c2), last bits apart.  The nested sweep now starts from the slot's adjoint.

def _compiled_vs_eager(program, make_args, calls=6):
    compiled = tg.compile(program)
    rng = np.random.default_rng(5)
    for _ in range(calls):
        arrays = make_args(rng)
        weights = None
        results = []
        for f in (program, compiled):
            args = [tg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
            outs = f(*args)
            if weights is None:
                weights = [rng.standard_normal(o.shape).astype(arr(o).dtype) for o in outs]
            sum((o * tg.tensor(w)).sum() for o, w in zip(outs, weights)).backward()
            results.append([arr(o).tobytes() for o in outs]
                           + [None if a.grad is None else arr(a.grad).tobytes() for a in args])
        assert results[0] == results[1]
    return compiled


def test_compiled_cosine_embedding_loss_beside_another_use_of_its_input():
    F = tg.nn.functional

    def program(x1, x2, y):
        return F.cosine_embedding_loss(x1, x2, y, margin=0.2, reduction="none"), x1 * 1.0

    def make(rng):
        return (rng.standard_normal((4, 1)).astype("float32"),
                rng.standard_normal((4, 1)).astype("float32"),
                np.array([-1, 1, 1, 1], "int64"))
    compiled = _compiled_vs_eager(program, make)
    assert "cosine_embedding_loss" in compiled.explain()


def test_compiled_poisson_nll_loss_beside_a_mask_of_its_input():
    F = tg.nn.functional

    def program(x, t, m):
        return F.poisson_nll_loss(x, t, log_input=True, full=True, eps=0.01,
                                  reduction="none"), x[m]

    def make(rng):
        return (rng.standard_normal((3, 3)), np.abs(rng.standard_normal((3, 3))) + 0.2,
                np.array([[0, 0, 1], [1, 1, 1], [1, 0, 0]], bool))
    _compiled_vs_eager(program, make)


# -- huber / smooth_l1 second derivatives with an infinite upstream gradient (62710754) ---------
# PyTorch's double backward multiplies by the mask |d| < delta (inf * 0 = NaN outside it);
# tapegrad's first derivative was a where() (0 there).

@pytest.mark.parametrize("loss, kw", [("huber_loss", {"delta": 0.3}),
                                      ("smooth_l1_loss", {"beta": 0.3})])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_huber_second_derivative_under_an_infinite_gradient(loss, kw, reduction):
    def run(L):
        x = L.zeros(4)
        y = L.tensor([1., 0.1, 0.05, -2.], requires_grad=True)
        out = getattr(L.nn.functional, loss)(x, y, reduction=reduction, **kw)
        g, = L.autograd.grad(L.nn.functional.mse_loss(out, L.tensor(-float("inf"))), y,
                             create_graph=True)
        g2, = L.autograd.grad((g * L.tensor([1., 2., 3., 4.])).sum(), y)
        return arr(g), arr(g2)
    got, want = run(tg), run(torch)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])          # [nan, inf, inf, nan]
    assert np.isnan(got[1][[0, 3]]).all()


@pytest.mark.parametrize("loss, kw", [("huber_loss", {"delta": 0.7}),
                                      ("smooth_l1_loss", {"beta": 0.7})])
def test_huber_second_derivatives_finite(loss, kw):
    f = getattr(tg.nn.functional, loss)
    x = tg.tensor([0.5, -0.2, 3., 0.1, -1.5], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([1., 0.1, 0.2, -0.3, 0.9], dtype=tg.float64, requires_grad=True)
    w = tg.tensor([1., -2., 3., 0.5, 1.5], dtype=tg.float64)
    assert tg.autograd.gradgradcheck(lambda a, b: (f(a, b, reduction="none", **kw) * w).sum(),
                                     (x, y))

    def run(L):
        a = L.tensor(arr(x), requires_grad=True)
        b = L.tensor(arr(y), requires_grad=True)
        g = L.autograd.grad((getattr(L.nn.functional, loss)(a, b, reduction="mean", **kw)
                             * L.tensor(arr(w))).sum(), (a, b), create_graph=True)
        return [arr(t) for t in g] + [arr(t) for t in L.autograd.grad(
            sum((t * t * t).sum() for t in g), (a, b))]
    for g, w_ in zip(run(tg), run(torch)):
        np.testing.assert_allclose(g, w_, rtol=1e-12, atol=1e-15)


# -- cumprod's create_graph backward reads its saved result (60671885) ---------------------------
# PyTorch's CumprodBackward0 saves the result and its formula reads it, so a second derivative
# passes through the result: its retained .grad and hooks see that term.  tapegrad recomputed
# cumprod(x), which reached x but not the result.

def test_cumprod_second_derivative_reaches_the_result():
    def run(L):
        v0 = L.tensor([2.1, 0.76, -1.3], dtype=L.float64, requires_grad=True)
        v1 = v0.cumprod(-1)
        v1.retain_grad()
        seen = []
        v1.register_hook(lambda g: seen.append(arr(g).copy()))
        loss = (v1.sin() * L.tensor([0.3, -1.2, 0.7], dtype=L.float64)).sum()
        g, = L.autograd.grad(loss, [v0], create_graph=True)
        first = arr(v1.grad).copy()
        g2, = L.autograd.grad((g * L.tensor([1.5, -0.4, 0.9], dtype=L.float64)).sum(), [v0])
        return arr(g), arr(g2), first, arr(v1.grad), seen
    got, want = run(tg), run(torch)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    assert len(got[4]) == len(want[4]) == 2
    for g, w in zip(got[4], want[4]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_cumprod_gradgradcheck_with_and_without_zeros():
    for values in ([1.2, -0.7, 0.9, 2.0], [1.2, 0.0, 0.9, 2.0]):
        x = tg.tensor(values, dtype=tg.float64, requires_grad=True)
        assert tg.autograd.gradgradcheck(lambda a: a.cumprod(0), (x,))
    x = tg.tensor([[0.5, -1.1], [1.3, 0.8], [-0.6, 1.7]], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a: a.cumprod(0), (x,))
