"""Regressions of the session-22 fuzz findings (programs 60620012-, 63011428-; surface 60708400-).

Each test asserts the right values without torch where it can and, where torch is installed,
compares with it (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- a product of no terms added to a bias keeps the bias exactly (60619507, 60619702) -------------
# PyTorch's addmm family returns beta * input itself when the inner dimension is empty (and
# addmm / addmv / addbmm when alpha is 0): a bias of -0.0 stays -0.0.  tapegrad added the
# empty product's +0.0, which turns -0.0 into +0.0.

def _empty_sum_cases(L):
    F = L.nn.functional
    b = L.tensor([-0.0, 1.0, -0.0], dtype=L.float64, requires_grad=True)
    x = L.zeros(4, 0, dtype=L.float64, requires_grad=True)
    w = L.zeros(3, 0, dtype=L.float64, requires_grad=True)
    ones = L.ones(4, 3, dtype=L.float64)
    return {
        "linear 2-D": lambda: F.linear(x, w, b),
        "linear 1-D": lambda: F.linear(x[0], w, b),
        "linear 3-D": lambda: F.linear(x.reshape(2, 2, 0), w, b),
        "linear 3-D strided": lambda: F.linear(x.reshape(2, 2, 0).transpose(0, 1), w, b),
        "nn.Linear": lambda: _linear_module(L, b),
        "addmm": lambda: L.addmm(b, x, w.t()),
        "addmm beta": lambda: L.addmm(b, x, w.t(), beta=0.5),
        "addmm alpha 0": lambda: L.addmm(b, ones, ones.t()[:, :3], alpha=0),
        "addmv": lambda: L.addmv(b, w, x[0]),
        "addmv alpha 0": lambda: L.addmv(b, ones.t(), ones[:, 0], alpha=0),
        "baddbmm": lambda: L.baddbmm(b, x.reshape(1, 4, 0), w.t().reshape(1, 0, 3), beta=2),
        "addbmm no batch": lambda: L.addbmm(b, L.zeros(0, 4, 2, dtype=L.float64),
                                           L.zeros(0, 2, 3, dtype=L.float64)),
        "addbmm alpha 0": lambda: L.addbmm(b, ones.reshape(1, 4, 3), ones.t().reshape(1, 3, 4)[:, :, :3],
                                           alpha=0),
        # beta 0 drops the input: zeros of either product, +0.0 (baddbmm and addr keep alpha 0's
        # product: +0.0 too)
        "addmm beta 0": lambda: L.addmm(b, x, w.t(), beta=0),
        "baddbmm alpha 0": lambda: L.baddbmm(b, ones.reshape(1, 4, 3), ones.t().reshape(1, 3, 4)[:, :, :3],
                                             alpha=0),
        "addr alpha 0": lambda: L.addr(b, ones[:, 0], ones[0], alpha=0),
    }


def _linear_module(L, b):
    layer = L.nn.Linear(0, 3, dtype=L.float64)
    with L.no_grad():
        layer.bias.copy_(b)
    return layer(L.zeros(4, 0, dtype=L.float64))


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")
@pytest.mark.parametrize("case", list(_empty_sum_cases(tg)))
def test_empty_product_keeps_the_bias_sign(case, torch):
    got = _empty_sum_cases(tg)[case]()
    want = _empty_sum_cases(torch)[case]()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(np.signbit(got.detach().numpy()),
                                  np.signbit(want.detach().numpy()))
    assert got.requires_grad == want.requires_grad


def test_empty_linear_keeps_negative_zero_without_torch():
    b = tg.tensor([-0.0, 2.0])
    out = tg.nn.functional.linear(tg.zeros(3, 0), tg.zeros(2, 0), b)
    assert np.signbit(out.numpy()[:, 0]).all() and (out.numpy()[:, 1] == 2.0).all()


def test_empty_linear_compiled_keeps_negative_zero():
    b = tg.tensor([-0.0, 2.0], requires_grad=True)
    w = tg.zeros(2, 0, requires_grad=True)
    step = tg.compile(lambda x: (tg.nn.functional.linear(x, w, b),))
    for _ in range(3):
        out = step(tg.zeros(3, 0))[0]
        assert np.signbit(out.detach().numpy()[:, 0]).all()
        out.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [9.0, 9.0])


# -- the SVD of a matrix with infinities has NaN values, no error (60620368) -----------------------
# PyTorch's LAPACK refuses a NaN (LinAlgError naming the matrix) but returns NaN singular values for
# infinities; numpy's svd refuses both, and tapegrad raised for both.

def test_svdvals_of_infinities_is_nan(torch):
    for make in (lambda L: L.full((6, 4), -float("inf")),
                 lambda L: L.tensor([[1.0, float("inf")], [2.0, 3.0]]),
                 lambda L: L.stack([L.full((3, 2), -float("inf")),
                                    L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])])):
        got, want = tg.linalg.svdvals(make(tg)), torch.linalg.svdvals(make(torch))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    U, S, Vh = tg.linalg.svd(make(tg), full_matrices=False)
    assert np.isnan(U.numpy()[0]).all() and np.isfinite(U.numpy()[1]).all()


def test_svd_of_a_nan_names_its_matrix(torch):
    def make(L):
        return L.stack([L.full((3, 2), -float("inf")),
                        L.tensor([[1.0, 2.0], [3.0, float("nan")], [5.0, 6.0]])])
    with pytest.raises(torch.linalg.LinAlgError) as want:
        torch.linalg.svdvals(make(torch))
    with pytest.raises(tg.linalg.LinAlgError) as got:
        tg.linalg.svdvals(make(tg))
    assert str(got.value) == str(want.value)


# -- which unary ops' results are saved for backward (60623752) ------------------------------------
# PyTorch's erfcx, ndtri, log_ndtr, i0e, i1, i1e and sgn nodes save their result: writing into it
# (here under no_grad, through a view) makes backward raise the in-place error; tapegrad
# recomputed from the input and ran.  asinh, acosh and atanh save only their input: tapegrad
# saved the result too and refused a backward PyTorch runs.

RESULT_WRITES = {
    "special.erfcx": lambda L, x: L.special.erfcx(x),
    "special.ndtri": lambda L, x: L.special.ndtri(x),
    "special.log_ndtr": lambda L, x: L.special.log_ndtr(x),
    "special.i0e": lambda L, x: L.special.i0e(x),
    "special.i1": lambda L, x: L.special.i1(x),
    "special.i1e": lambda L, x: L.special.i1e(x),
    "sgn": lambda L, x: L.sgn(x),
    "asinh": lambda L, x: L.asinh(x),
    "acosh": lambda L, x: L.acosh(x + 1),
    "atanh": lambda L, x: L.atanh(x),
    "tan": lambda L, x: L.tan(x),
}


def _write_into_result(L, op):
    x = L.tensor([[0.25, 0.5], [0.625, 0.75]], dtype=L.float64, requires_grad=True)
    y = RESULT_WRITES[op](L, x)
    with L.no_grad():
        y.select(0, -1).mul_(2.0)
    try:
        y.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return None
    return x.grad.numpy()


@pytest.mark.parametrize("op", list(RESULT_WRITES))
def test_write_into_a_saved_result(op, torch):
    want = _write_into_result(torch, op)
    got = _write_into_result(tg, op)
    if want is None:
        assert got is None, "tapegrad ran where PyTorch raises the in-place error"
    else:
        assert got is not None, "tapegrad raised where PyTorch runs"
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- which first gradients require grad (create_graph; 63007556, 60622975) -------------------------
# PyTorch's copysign gives `other` a constant zeros gradient: tapegrad kept other in the graph with
# a where whose backward tied the first gradient to the upstream one, so a second derivative
# existed where PyTorch's is none.  PyTorch's prelu gradients are one node of (grad, x, weight):
# both require grad when any does; tapegrad's lacked x (weight's) or weight (x's).

def _first_grads(L, op, wrt):
    x = L.tensor([0.3, -0.7, 1.2, -0.2, 0.0], dtype=L.float64, requires_grad="x" in wrt)
    a = L.tensor([-0.4], dtype=L.float64, requires_grad="a" in wrt)
    y = op(L, x, a)
    inputs = [t for t in (x, a) if t.requires_grad]
    return L.autograd.grad((y * L.arange(5.0, dtype=L.float64)).sum(), inputs, create_graph=True,
                           allow_unused=True)


FIRST_GRAD_OPS = {
    "copysign(x, a)": lambda L, x, a: L.copysign(x, a),
    "copysign(a, x)": lambda L, x, a: L.copysign(a, x),
    "copysign(l1 chain)": lambda L, x, a: L.nn.functional.l1_loss(
        L.copysign(L.tensor([1, -2, 3, 0, 5]), x), L.zeros(5, dtype=L.float64), reduction="none"),
    "prelu": lambda L, x, a: L.nn.functional.prelu(x, a),
}


@pytest.mark.parametrize("op", list(FIRST_GRAD_OPS))
@pytest.mark.parametrize("wrt", ["x", "a", "xa"])
def test_first_gradients_require_grad_as_torch(op, wrt, torch):
    if op == "copysign(l1 chain)" and wrt == "a":
        wrt = "xa"                  # (that loss does not depend on a alone)
    want = _first_grads(torch, FIRST_GRAD_OPS[op], wrt)
    got = _first_grads(tg, FIRST_GRAD_OPS[op], wrt)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
            assert g.requires_grad == w.requires_grad


def test_copysign_gradient_at_infinity_is_torch_s(torch):
    # PyTorch's self gradient is grad * result / self: NaN at +-inf (abs's sign gave +-1)
    def grads(L):
        x = L.tensor([float("inf"), -float("inf"), 0.0, -2.0], requires_grad=True)
        L.copysign(x, L.tensor([-1.0, 1.0, -1.0, -0.0])).sum().backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(grads(tg), grads(torch))


# -- triangular solves by substitution (60624567, silent) ------------------------------------------
# solve_triangular solved with numpy's LU (partial pivoting); a random triangle is exponentially
# ill-conditioned, and the pivoted LU of a lower triangle (the forward of a lower solve, the
# backward of an upper one) lost every digit where PyTorch's trsm keeps them (a 1031 x 1031 upper
# solve: B's gradient 1e16 instead of 1e32).  cholesky_solve solved with L L^T itself (the
# condition squared): it is two triangular solves now, as PyTorch's potrs.

def _ill_conditioned_triangle(n=200, seed=3):
    rng = np.random.default_rng(seed)
    return np.tril(rng.standard_normal((n, n))) * 0.3 + 0.5 * np.eye(n), rng.standard_normal((n, 3))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_of_an_ill_conditioned_triangle(upper, left, torch):
    a, b = _ill_conditioned_triangle()
    a = a.T.copy() if upper else a
    b = b if left else b.T.copy()

    def run(L):
        A, B = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        X = L.linalg.solve_triangular(A, B, upper=upper, left=left)
        (X * L.tensor(np.cos(np.arange(X.numel())).reshape(X.shape))).sum().backward()
        return X.detach().numpy(), B.grad.numpy()
    for got, want in zip(run(tg), run(torch)):
        assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def test_cholesky_solve_of_an_ill_conditioned_factor(torch):
    a, b = _ill_conditioned_triangle()
    got = tg.cholesky_solve(tg.tensor(b), tg.tensor(a)).numpy()
    want = torch.cholesky_solve(torch.tensor(b), torch.tensor(a)).numpy()
    assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def test_solve_triangular_checks_as_torch(torch):
    cases = [((3, 3), (3, 2), False, "float32", "float32"), ((3,), (3, 2), True, "float32", "float32"),
             ((3, 3), (3,), True, "float32", "float32"), ((2, 3), (2, 2), True, "float32", "float32"),
             ((3, 3), (2, 3), True, "float32", "float32"), ((3, 3), (3, 2), True, "int64", "int64")]
    for a, b, left, da, db in cases:
        errors = []
        for L in (torch, tg):
            with pytest.raises(Exception) as e:
                L.linalg.solve_triangular(L.ones(a, dtype=getattr(L, da)), L.ones(b, dtype=getattr(L, db)),
                                          upper=True, left=left)
            errors.append((type(e.value), str(e.value)))
        assert errors[0] == errors[1]
    for da, db in (("float32", "float64"), ("float64", "float32")):
        got = tg.linalg.solve_triangular(tg.eye(3, dtype=getattr(tg, da)), tg.ones(3, 2, dtype=getattr(tg, db)), upper=True)
        want = torch.linalg.solve_triangular(torch.eye(3, dtype=getattr(torch, da)), torch.ones(3, 2, dtype=getattr(torch, db)), upper=True)
        assert str(got.dtype) == str(want.dtype)
    # a zero on the diagonal: inf / NaN, no error
    got = tg.linalg.solve_triangular(tg.tensor([[1.0, 2.0], [0.0, 0.0]]), tg.ones(2, 1), upper=True)
    want = torch.linalg.solve_triangular(torch.tensor([[1.0, 2.0], [0.0, 0.0]]), torch.ones(2, 1), upper=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- results that are no views (63009249) ----------------------------------------------------------
# PyTorch's quantile, median / nanmedian / mode / kthvalue along a dim and roll without dims return
# tensors that are not views (they squeeze in place or copy); tapegrad's were views of an
# intermediate, so an in-place write with grad mode on into one taken under no_grad raised "A view
# was created in no_grad mode" where PyTorch runs.

NOT_VIEWS = {
    "quantile keepdim": lambda L, v: L.quantile(v, 0.5, dim=1, keepdim=True, interpolation="midpoint"),
    "quantile q tensor": lambda L, v: L.quantile(v, L.tensor([0.25, 0.5], dtype=L.float64), dim=1),
    "quantile all": lambda L, v: L.quantile(v, 0.5),
    "nanquantile": lambda L, v: L.nanquantile(v, 0.5, dim=0),
    "median dim": lambda L, v: L.median(v, 1)[0],
    "nanmedian dim": lambda L, v: L.nanmedian(v, 1)[0],
    "mode": lambda L, v: L.mode(v, 1)[0],
    "kthvalue": lambda L, v: L.kthvalue(v, 2, 1)[0],
    "roll flat": lambda L, v: v.roll(1),
}


@pytest.mark.parametrize("op", list(NOT_VIEWS))
def test_results_that_are_no_views(op, torch):
    def run(L):
        v = (L.arange(12.0, dtype=L.float64).reshape(3, 4) * 0.3 - 1.0).requires_grad_()
        floor = v.floor()
        with L.no_grad():
            r = NOT_VIEWS[op](L, floor)
        w = L.tensor(0.5, dtype=L.float64, requires_grad=True)
        r.mul_(w)
        r.sum().backward()
        return r._base is not None, r.detach().numpy(), w.grad.numpy()
    got, want = run(tg), run(torch)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2])


def test_copysign_then_a_no_grad_write(torch):
    # 63011679 (silent, from the copysign Function while it read its saved result without a
    # version check): copysign_ writes the result into its input, abs_ under no_grad rewrites it;
    # PyTorch raises the in-place error (its node saves the result), out of place and in place
    # alike, and so does tapegrad (session 28: the in-place form guards self's version, so the
    # saved result can be read again).
    def run(L, inplace):
        v0 = L.tensor([[1.62, -0.07], [0.51, 0.19]], requires_grad=True)
        v2 = v0 ** 2
        other = L.tensor([-0.0, -0.86])
        v2 = v2.copysign_(other) if inplace else L.copysign(v2, other)
        with L.no_grad():
            v2.abs_()
        (v2 * L.tensor([[1.0, -2.0], [3.0, 0.5]])).sum().backward()
        return v0.grad.numpy()
    for L in (torch, tg):
        for inplace in (False, True):
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                run(L, inplace)


# -- multi_margin_loss leaves NaN terms out (63015582) ---------------------------------------------
# PyTorch's kernel adds max(0, margin - x[y] + x[j]) only where it is > 0, so a NaN input gives no
# term (a NaN target score: a zero loss); tapegrad's relu kept the NaN.

@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_with_nan_inputs(p, torch):
    x = np.array([[0.1, np.nan, -0.3, 0.8, 0.2], [0.3, 0.2, 0.1, -0.4, 0.0],
                  [0.1, 0.2, np.nan, 0.1, 0.5]])

    def run(L):
        xx = L.tensor(x, requires_grad=True)
        loss = L.nn.functional.multi_margin_loss(xx, L.tensor([3, 1, 2]), p=p,
                                                 weight=L.tensor(np.arange(1.0, 6.0)),
                                                 reduction="none")
        loss.sum().backward()
        return loss.detach().numpy(), xx.grad.numpy()
    for got, want in zip(run(tg), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- unfold of an expanded tensor (60621067, 60622377) ---------------------------------------------
# unfold found each window element's input element from its storage position, which an expanded
# input shares between elements: it refused (NotImplementedError) where PyTorch runs.

UNFOLD_EXPANDED = {
    "expand": lambda x: x.expand(2, 3).unfold(-1, 2, 1),
    "expanded column, transposed": lambda x: x.reshape(3, 1).expand(3, 4).t().unfold(-1, 2, 1),
    "unfold of an unfold": lambda x: x[None].expand(2, 3).unfold(1, 2, 1).unfold(1, 1, 1),
    "unfold_copy": lambda x: x.expand(2, 3).unfold(1, 2, 1).clone(),
}


@pytest.mark.parametrize("case", list(UNFOLD_EXPANDED))
def test_unfold_of_an_expanded_tensor(case, torch):
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
        u = UNFOLD_EXPANDED[case](x)
        (u * L.arange(float(u.numel()), dtype=L.float64).reshape(u.shape)).sum().backward()
        return u.detach().numpy(), x.grad.numpy()
    for got, want in zip(run(tg), run(torch)):
        np.testing.assert_array_equal(got, want)
    e = tg.ones(3).expand(2, 3)
    np.testing.assert_array_equal(tg.unfold_copy(e, 1, 2, 1).numpy(),
                                  torch.unfold_copy(torch.ones(3).expand(2, 3), 1, 2, 1).numpy())


def test_entr_of_nan_is_nan(torch):
    # 60620763, 63012195, 63019691, 63019830: entr(NaN) was -inf (the "below 0" branch)
    vals = [float("-inf"), -1.0, -0.0, 0.0, 1e-30, 0.5, float("inf"), float("nan")]
    for dt in ("float32", "float64"):
        got = tg.special.entr(tg.tensor(vals, dtype=getattr(tg, dt))).numpy()
        want = torch.special.entr(torch.tensor(vals, dtype=getattr(torch, dt))).numpy()
        np.testing.assert_array_equal(got, want)


# -- hypot is C's hypot (63016766; silent overflow) ------------------------------------------------
# tapegrad composed sqrt(x^2 + y^2): float32 3e19 and 4e19 gave inf (PyTorch 5e19), and an infinite
# operand beside a NaN gave NaN (PyTorch inf).

def test_hypot_values_and_gradients(torch):
    a = [float("inf"), float("nan"), float("-inf"), 3.0, float("nan"), 3e19, 0.0, -2.0]
    b = [float("nan"), float("inf"), float("nan"), 4.0, 1.0, 4e19, 0.0, 1.5]
    for dt in ("float32", "float64"):
        def run(L):
            x = L.tensor(a, dtype=getattr(L, dt), requires_grad=True)
            y = L.tensor(b, dtype=getattr(L, dt), requires_grad=True)
            h = L.hypot(x, y)
            (h * L.arange(8.0).to(h.dtype)).sum().backward()
            in_place = L.tensor(a, dtype=getattr(L, dt)).hypot_(L.tensor(b, dtype=getattr(L, dt)))
            return h.detach().numpy(), x.grad.numpy(), y.grad.numpy(), in_place.numpy()
        for got, want in zip(run(tg), run(torch)):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_hypot_second_derivative(torch):
    def run(L):
        x = L.tensor([[3.0], [1.0]], dtype=L.float64, requires_grad=True)
        y = L.tensor([4.0, 0.5], dtype=L.float64, requires_grad=True)
        gx, gy = L.autograd.grad(L.hypot(x, y).sum(), [x, y], create_graph=True)
        return [g.numpy() for g in L.autograd.grad((gx * gx).sum() + gy.sum(), [x, y])]
    for got, want in zip(run(tg), run(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- adaptive pools to an empty size refuse backward (60706190, 60708564) --------------------------
# PyTorch's adaptive pools run forward to an output with an empty non-batch dim, but their backward
# refuses it (area interpolation to size 0 is one); tapegrad gave zeros.

EMPTY_POOLS = {
    "avg1d": lambda F, x: F.adaptive_avg_pool1d(x.reshape(2, 4, 3), 0),
    "avg1d unbatched": lambda F, x: F.adaptive_avg_pool1d(x.reshape(8, 3), 0),
    "avg2d": lambda F, x: F.adaptive_avg_pool2d(x.reshape(2, 4, 3, 1), (2, 0)),
    "avg2d unbatched": lambda F, x: F.adaptive_avg_pool2d(x.reshape(8, 3, 1), (0, 1)),
    "avg3d": lambda F, x: F.adaptive_avg_pool3d(x.reshape(2, 4, 3, 1, 1), (1, 0, 1)),
    "max1d": lambda F, x: F.adaptive_max_pool1d(x.reshape(2, 4, 3), 0),
    "max2d indices": lambda F, x: F.adaptive_max_pool2d(x.reshape(2, 4, 3, 1), (0, 1), True)[0],
    "max3d": lambda F, x: F.adaptive_max_pool3d(x.reshape(2, 4, 3, 1, 1), (0, 1, 1)),
    "area interpolate": lambda F, x: F.interpolate(x.reshape(2, 12, 1), scale_factor=0.5,
                                                   mode="area"),
}


@pytest.mark.parametrize("case", list(EMPTY_POOLS))
def test_adaptive_pool_to_an_empty_size(case, torch):
    messages = []
    for L in (torch, tg):
        x = L.ones(24, dtype=L.float64, requires_grad=True)
        y = EMPTY_POOLS[case](L.nn.functional, x)
        assert y.requires_grad
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        messages.append((tuple(y.shape), str(e.value)))
    assert messages[0] == messages[1]


def test_adaptive_pool_to_an_empty_batch_differentiates(torch):
    for L in (torch, tg):
        x = L.ones(0, 4, 3, 3, requires_grad=True)
        L.nn.functional.adaptive_avg_pool2d(x, (2, 2)).sum().backward()
        assert tuple(x.grad.shape) == (0, 4, 3, 3)


# -- fmod / remainder save their operands only for the divisor's gradient (60624546) ---------------
# PyTorch's Fmod/RemainderBackward1 read self and other only for other's gradient; tapegrad saved
# them always, so a write into the dividend after the op refused a backward PyTorch runs.

@pytest.mark.parametrize("op", ["fmod", "remainder"])
@pytest.mark.parametrize("other_requires_grad", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_fmod_write_into_the_dividend(op, other_requires_grad, create_graph, torch):
    def run(L):
        x = L.tensor([1.5, -2.5], dtype=L.float64, requires_grad=True)
        dividend = x * 2
        other = L.tensor([1.2, 0.7], dtype=L.float64, requires_grad=other_requires_grad)
        y = getattr(L, op)(dividend, other)
        with L.no_grad():
            dividend.mul_(3)
        try:
            (g,) = L.autograd.grad((y * L.tensor([1.0, -2.0], dtype=L.float64)).sum(), [x],
                                   create_graph=create_graph)
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e)
            return None
        return g.detach().numpy()
    got, want = run(tg), run(torch)
    assert (got is None) == (want is None)
    if want is not None:
        np.testing.assert_array_equal(got, want)
    # the scalar divisor: never saved
    for L in (torch, tg):
        x = L.tensor([1.5, -2.5], requires_grad=True)
        d = x * 2
        y = getattr(L, op)(d, 0.7)
        with L.no_grad():
            d.mul_(3)
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_einsum_diagonal_is_a_view(torch):
    # 60717960, 60719931: einsum's repeated subscript took the diagonal with index_select (a
    # copy): under no_grad PyTorch's result is a view of the input that requires grad
    for L in (torch, tg):
        x = L.tensor([[0.0, 1.0], [2.0, 3.0]], requires_grad=True)
        with L.no_grad():
            d = L.einsum("dd->d", x)
        assert d.requires_grad and d._base is not None
    got = tg.einsum("iji->ij", tg.arange(8.0).reshape(2, 2, 2)).numpy()
    want = torch.einsum("iji->ij", torch.arange(8.0).reshape(2, 2, 2)).numpy()
    np.testing.assert_array_equal(got, want)
