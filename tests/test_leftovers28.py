"""Silent leftovers of earlier sessions, closed in session 28.

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


# -- ctc_loss under create_graph (SILENT: a double backward gave ~0 where PyTorch raises) ---------
# PyTorch's _ctc_loss_backward has no derivative: the first gradient is in the graph, and
# differentiating it raises.  tapegrad's Function returned a constant, so a second pass through
# log_softmax gave a number (or, from a leaf, "does not require grad").

def _ctc_case(lib, reduction, through_log_softmax):
    values = np.random.RandomState(0).randn(6, 2, 4)
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    log_probs = x.log_softmax(2) if through_log_softmax else x
    loss = lib.nn.functional.ctc_loss(log_probs, lib.tensor([[1, 2], [3, 1]]),
                                      lib.tensor([6, 5]), lib.tensor([2, 2]), reduction=reduction)
    if reduction == "none":
        loss = loss.sum()
    g, = lib.autograd.grad(loss, x, create_graph=True)
    return x, g


@pytest.mark.parametrize("through_log_softmax", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_double_backward_raises_as_torch(torch, reduction, through_log_softmax):
    for lib in (torch, tg):
        x, g = _ctc_case(lib, reduction, through_log_softmax)
        assert g.requires_grad
        with pytest.raises(RuntimeError,
                           match="derivative for aten::_ctc_loss_backward is not implemented"):
            lib.autograd.grad((g * g).sum(), x)


def test_ctc_loss_first_gradient_unchanged_and_input_saved(torch):
    got = _ctc_case(tg, "mean", False)[1]
    ref = _ctc_case(torch, "mean", False)[1]
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    # PyTorch saves log_probs for the backward: a write before it is refused
    for lib in (torch, tg):
        lp = lib.randn(6, 2, 4).log_softmax(2).detach().requires_grad_()
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor([[1, 2], [3, 1]]), lib.tensor([6, 5]),
                                          lib.tensor([2, 2]))
        with lib.no_grad():
            lp.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


# -- float16 renorm and interpolate in float32 opmath (SILENT: NaN gradients, NaN / inf values) ----
# A float16 norm of small values underflows to 0 (renorm's gradient NaN) and of values beyond 256
# overflows; bicubic's negative taps times values near 65504 overflowed to inf, their sum NaN.
# PyTorch computes both in float32 and rounds once.

@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("values, maxnorm", [([[1e-4, 2e-4], [3e-5, 1e-3]], 1e-5),
                                             ([[300.0, 400.0], [0.0, 5.0]], 100.0),
                                             ([[0.0, 0.0], [1.0, 2.0]], 1e-5)])
def test_float16_renorm_matches_torch(torch, values, maxnorm, p):
    out = []
    for lib in (torch, tg):
        x = lib.tensor(values, dtype=lib.float16, requires_grad=True)
        y = lib.renorm(x, p, 0, maxnorm)
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float16)).sum().backward()
        assert y.dtype == lib.float16
        out.append((y.detach().numpy(), x.grad.numpy()))
    (ty, tgrad), (gy, ggrad) = out
    assert not np.isnan(ggrad).any()
    np.testing.assert_allclose(gy.astype(np.float64), ty.astype(np.float64), rtol=2e-3)
    np.testing.assert_allclose(ggrad.astype(np.float64), tgrad.astype(np.float64), rtol=4e-3,
                               atol=1e-7)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("values", [np.full((1, 1, 3, 3), 60000.0),
                                    [[[[60000.0, -60000.0, 60000.0], [0.0, 60000.0, -60000.0],
                                       [1.0, 2.0, 3.0]]]]], ids=["flat", "alternating"])
def test_float16_bicubic_near_the_float16_maximum_matches_torch(torch, values, align_corners):
    out = []
    for lib in (torch, tg):
        x = lib.tensor(values, dtype=lib.float16, requires_grad=True)
        y = lib.nn.functional.interpolate(x, scale_factor=2, mode="bicubic",
                                          align_corners=align_corners)
        y.sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    (ty, tgrad), (gy, ggrad) = out
    assert gy.dtype == np.float16
    np.testing.assert_array_equal(np.isnan(gy), np.isnan(ty))
    np.testing.assert_array_equal(np.isinf(gy), np.isinf(ty))
    # (within rounding of the operands: PyTorch rounds some of its steps in float16, and the
    # alternating taps cancel)
    finite = np.isfinite(ty)
    np.testing.assert_allclose(gy[finite].astype(np.float64), ty[finite].astype(np.float64),
                               rtol=2e-3, atol=1e-3 * 60000)
    np.testing.assert_allclose(ggrad.astype(np.float64), tgrad.astype(np.float64), rtol=2e-3)


@pytest.mark.parametrize("mode, shape", [("bilinear", (2, 3, 5, 7)), ("bicubic", (2, 3, 5, 7)),
                                         ("linear", (2, 3, 9)), ("trilinear", (1, 2, 3, 4, 5))])
def test_float16_interpolate_within_rounding_of_torch(torch, mode, shape):
    values = np.random.RandomState(1).randn(*shape).astype(np.float16)
    upstream = np.random.RandomState(2).randn(*shape[:2], *(int(n * 1.7) for n in shape[2:]))
    out = []
    for lib in (torch, tg):
        x = lib.tensor(values, requires_grad=True)
        y = lib.nn.functional.interpolate(x, scale_factor=1.7, mode=mode)
        y.backward(lib.tensor(upstream.astype(np.float16)))
        out.append((y.detach().numpy().astype(np.float64), x.grad.numpy().astype(np.float64)))
    (ty, tgrad), (gy, ggrad) = out
    # (to an ulp or two: PyTorch's bicubic, linear and trilinear forwards round some steps in
    # float16; before, tapegrad's float16 steps rounded every tap)
    np.testing.assert_allclose(gy, ty, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ggrad, tgrad, rtol=2e-3, atol=2e-3)


# -- multi_margin_loss with an infinite weight or margin (SILENT: NaN where PyTorch's are +-inf) ---
# A skipped term (j == y, or z <= 0) was 0 before the weight's product: 0 * inf is NaN in the loss,
# and its gradient through z * z or z * weight 0 * inf too.  PyTorch's kernel never forms them.

_INF = float("inf")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("p, margin, weight, values", [
    (1, 1.0, [1.0, _INF, 1.0], [[0.2, 1.0, 0.0]]),
    (2, 1.0, [1.0, _INF, 1.0], [[0.2, 1.0, 0.0], [3.0, -1.0, 0.5]]),
    (1, 1.0, [_INF, 2.0, 0.0], [[0.2, 1.0, 0.0], [-3.0, 1.0, 0.5]]),
    (2, _INF, None, [[0.2, 1.0, 0.0]]),
    (1, _INF, None, [[0.2, 1.0, 0.0]]),
    (2, 0.0, [0.5, 0.0, 2.0], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]),
], ids=str)
def test_multi_margin_loss_infinite_weight_or_margin_matches_torch(torch, p, margin, weight,
                                                                   values, reduction):
    out = []
    for lib in (torch, tg):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        w = None if weight is None else lib.tensor(weight, dtype=lib.float64)
        target = lib.tensor([1, 0][:len(values)])
        loss = lib.nn.functional.multi_margin_loss(x, target, p=p, margin=margin, weight=w,
                                                   reduction=reduction)
        loss.sum().backward()
        out.append((loss.detach().numpy(), x.grad.numpy()))
    (tl, tgrad), (gl, ggrad) = out
    np.testing.assert_allclose(gl, tl, rtol=1e-12, equal_nan=False)
    np.testing.assert_allclose(ggrad, tgrad, rtol=1e-12, equal_nan=False)


# -- the gradient layout contract (a leaf's .grad has the leaf's strides when the leaf is dense) --
# PyTorch's AccumulateGrad lays a leaf's first .grad out as the leaf when the leaf is
# non-overlapping and dense (a transposed or permuted tensor), row-major otherwise (an expand()ed
# or sliced one).  tapegrad's was always row-major, so `w.grad.view(-1)` worked where PyTorch's
# raises, and strides() differed.

def _leaves(lib):
    rs = np.random.RandomState(3)
    return {
        "contiguous": lambda: lib.tensor(rs.randn(4, 5), requires_grad=True),
        "transposed": lambda: lib.tensor(rs.randn(5, 4)).t().requires_grad_(),
        "permuted": lambda: lib.tensor(rs.randn(2, 3, 4)).permute(2, 0, 1).requires_grad_(),
        "expanded": lambda: lib.tensor(rs.randn(3, 1)).expand(3, 4).requires_grad_(),
        "sliced": lambda: lib.tensor(rs.randn(4, 6))[:, ::2].requires_grad_(),
        "sliced_transposed": lambda: lib.tensor(rs.randn(6, 4))[::2].t().requires_grad_(),
    }


def _uses(lib):
    F = lib.nn.functional

    def matrix(w):
        return w if w.dim() == 2 else w.flatten(1)

    return {
        "mul": lambda w: (w * 2).sum(),
        "sum": lambda w: w.sum(0).pow(2).sum(),
        "t_matmul": lambda w: (matrix(w).t() @ lib.ones(w.shape[0], 2, dtype=w.dtype)).sum(),
        "linear": lambda w: F.linear(lib.ones(3, matrix(w).shape[1], dtype=w.dtype),
                                     matrix(w)).sum(),
    }


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("use", ["mul", "sum", "t_matmul", "linear"])
@pytest.mark.parametrize("leaf", ["contiguous", "transposed", "permuted", "expanded", "sliced",
                                  "sliced_transposed"])
def test_leaf_grad_layout_follows_torch(torch, leaf, use, create_graph):
    out = []
    for lib in (torch, tg):
        w = _leaves(lib)[leaf]()
        _uses(lib)[use](w).backward(create_graph=create_graph)
        out.append((w.grad.stride(), w.grad.detach().numpy()))
    (t_strides, t_grad), (g_strides, g_grad) = out
    assert g_strides == t_strides
    np.testing.assert_allclose(g_grad, t_grad, rtol=1e-12)


def test_leaf_grad_layout_then_accumulates_in_place(torch):
    for lib in (torch, tg):
        w = lib.tensor(np.arange(20.0).reshape(5, 4)).t().requires_grad_()
        (w * 2).sum().backward()
        first = w.grad
        (w * w).sum().backward()
        assert w.grad is first and w.grad.stride() == (1, 4)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            w.grad.view(-1)
        np.testing.assert_array_equal(w.grad.numpy(), 2 + 2 * w.detach().numpy())


# -- complex var / std with no degrees of freedom over all elements (SILENT: the parts' masks) -----
# PyTorch's gradient is grad * where(z == mean(z), NaN, inf), real, cast to complex (imaginary 0).
# Composed of the parts' variances, each part compared its own values: inf + NaNj, NaN + NaNj.

_NAN = float("nan")


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("values, correction", [
    ([complex(_NAN, 1.0)], 1), ([1 + 2j], 1), ([1 + 2j, 3 + 4j], 2), ([complex(_INF, 0.0)], 1),
    ([complex(1.0, _NAN), 2 + 0j], 2), ([1 + 2j, 1 + 2j], 2), ([1 + 2j, 3 + 4j], 3),
    ([1 + 2j, 3 + 4j], 1)], ids=str)
def test_complex_var_std_without_degrees_of_freedom_match_torch(torch, values, correction, name,
                                                                create_graph):
    import warnings
    out = []
    for lib in (torch, tg):
        z = lib.tensor(values, dtype=lib.complex128, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = getattr(z, name)(correction=correction)
        g, = lib.autograd.grad(y * 0.7, z, create_graph=create_graph)
        out.append((y.detach().numpy(), g.detach().numpy(), type(y.grad_fn).__name__))
    (ty, tgrad, tname), (gy, ggrad, gname) = out
    np.testing.assert_allclose(gy, ty, rtol=1e-12, equal_nan=True)
    assert ggrad.dtype == tgrad.dtype
    np.testing.assert_allclose(ggrad, tgrad, rtol=1e-12, equal_nan=True)


# -- copysign's and hypot's gradients read the saved result (fuzz 62664062, 62671646) -------------
# PyTorch's formulas are grad * result / self (copysign) and grad * self / result (hypot): a
# create_graph gradient depends on the result's node, so a second pass reaches it, and a
# retained .grad of the result gets that pass's share (other gets copysign's zeros).  Formed from
# the inputs only, the second pass missed the node.  In place, the result is self: a later write
# into self under no_grad is refused at backward, as PyTorch's (tan_ and exp2_ had given a
# gradient; copysign_ and hypot_ would now read the written values).

def _second_pass_through(lib, op, make, in_place):
    F = lib.nn.functional
    x = lib.tensor([[1.625, 1.378], [-0.5, 0.25]])
    w = lib.tensor([[-1.126, 0.305], [0.7, -0.4]], requires_grad=True)
    b = lib.tensor([1.12, -0.3], requires_grad=True)
    other = lib.tensor([0.7, -0.0], requires_grad=True)
    if make == "linear_vector":         # (a view of the product, in PyTorch too)
        x = x[0]
    r = (x @ w.t()) + b if make == "matmul_add" else F.linear(x, w, b)
    if in_place:
        getattr(r, op + "_")(other)
        r.retain_grad()
    else:
        r = getattr(lib, op)(r, other)
        r.retain_grad()
    loss = (r * lib.tensor([[0.7, -1.1], [0.4, 2.0]])).sum()
    G = lib.autograd.grad(loss, [w, b, other], create_graph=True, allow_unused=True)
    S = sum((g * 1.3).sum() for g in G if g is not None and g.requires_grad)
    G2 = lib.autograd.grad(S, [w, b, other], allow_unused=True)
    return [r.grad] + list(G2)


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("make", ["linear", "linear_vector", "matmul_add"])
@pytest.mark.parametrize("op", ["copysign", "hypot"])
def test_second_pass_reaches_the_result_of_copysign_and_hypot(torch, op, make, in_place):
    want = _second_pass_through(torch, op, make, in_place)
    got = _second_pass_through(tg, op, make, in_place)
    for g, t in zip(got, want):
        assert (g is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["copysign_", "hypot_", "tan_", "exp2_"])
def test_write_after_an_in_place_op_that_saves_its_result_raises(torch, op):
    for lib in (torch, tg):
        x = lib.tensor([[0.62, -0.07], [0.51, 0.19]], requires_grad=True)
        y = x * 0.5
        getattr(y, op)(*([lib.tensor([-1.0, 2.0])] if op in ("copysign_", "hypot_") else []))
        with lib.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("op", ["tan_", "exp2_", "copysign_", "hypot_"])
def test_in_place_on_a_view_second_pass_reaches_the_view(torch, op):
    # F.linear of a vector is a view of its product (PyTorch's too): the in-place op is written
    # back, and its Function's saved result must become the view, as PyTorch's node saves it
    out = []
    for lib in (torch, tg):
        w = lib.tensor([[-1.126, 0.305], [0.7, -0.4]], requires_grad=True)
        b = lib.tensor([0.12, -0.3], requires_grad=True)
        r = lib.nn.functional.linear(lib.tensor([0.625, 0.378]), w, b)
        assert r._base is not None
        getattr(r, op)(*([lib.tensor([-1.0, 2.0])] if op in ("copysign_", "hypot_") else []))
        r.retain_grad()
        G = lib.autograd.grad((r * lib.tensor([0.7, -1.1])).sum(), [w, b], create_graph=True)
        lib.autograd.grad(sum((g * 1.3).sum() for g in G), [w, b])
        out.append(r.grad.numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


# -- x.data = other between forward and backward (SILENT: the old values were read) ---------------
# PyTorch's SavedVariable of an input holds the tensor itself, so set_data's new storage is what
# the backward reads; a saved output keeps its own alias of the old storage.

def _data_swapped(lib, case):
    t = lib.tensor
    if case == "saved_non_leaf_input":
        a = t([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 2
        y = (x * x).sum()
        x.data = t([10.0, 20.0, 30.0])
        y.backward()
        return [a.grad]
    if case == "saved_leaf_input":
        w = t([1.0, 2.0, 3.0], requires_grad=True)
        y = (w * w).sum()
        w.data = t([5.0, 5.0, 5.0])
        y.backward()
        return [w.grad]
    if case == "saved_output":
        w = t([1.0, 2.0, 3.0], requires_grad=True)
        y = w.exp()
        y.data = t([0.0, 0.0, 0.0])
        y.sum().backward()
        return [w.grad]
    if case == "matmul":
        w = t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = t([[1.0, 0.0], [2.0, 1.0]], requires_grad=True)
        y = (w @ b).sum()
        w.data = lib.zeros(2, 2)
        b.data = lib.ones(2, 2)
        y.backward()
        return [w.grad, b.grad]
    if case == "view_saved":
        w = t([1.0, 2.0, 3.0], requires_grad=True)
        v = w[1:]
        y = (v * v).sum()
        w.data = t([7.0, 7.0, 7.0])
        y.backward()
        return [w.grad]
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["saved_non_leaf_input", "saved_leaf_input", "saved_output",
                                  "matmul", "view_saved"])
def test_data_assignment_between_forward_and_backward_matches_torch(torch, case):
    want = _data_swapped(torch, case)
    got = _data_swapped(tg, case)
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)
