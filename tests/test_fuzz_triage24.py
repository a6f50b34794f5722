"""Regressions of the session-24 fuzz run (programs 60638969-, 62620000-; surface 60732265-) and
of the open seeds of session 23 it triaged (60634142, 60636537, 60637033, 60634821).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """('ok', value) or ('raises', exception type): what a program sees."""
    try:
        return "ok", fn()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return "raises", type(error)


# -- special.ndtri in its tails (60634821, SILENT) ------------------------------------------------
# ndtri(p) was sqrt(2) erfinv(2p - 1): 2p - 1 rounds to within an ulp of -1 for a tiny p, so
# every digit of p was lost (p = 2.7e-16 gave -7.84 where the quantile is -8.10; p = 1e-300 gave
# -48.1 for -37.0).  Its gradient recomputed erfinv of the same rounded 2p - 1.

_TAIL_P = np.concatenate([10.0 ** -np.arange(1.0, 308.0, 7.3), [5e-324, 2.7e-16, 0.01, 0.2],
                          1 - 10.0 ** -np.arange(1.0, 16.0, 1.5),
                          [0.0, 1.0, 0.25, 0.75, 0.5, -0.5, 1.5, np.nan]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ndtri_tails_match_torch(torch, dtype):
    p = _TAIL_P.astype(dtype)
    expected = torch.special.ndtri(torch.tensor(p)).numpy()
    got = tg.special.ndtri(tg.tensor(p)).numpy()
    assert got.dtype == expected.dtype
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite], expected[~finite])
    # (PyTorch's Cephes rational fits and tapegrad's Newton steps agree to a few ulps)
    ulps = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]))
    assert ulps.max() <= 8


def test_ndtri_gradients_match_torch(torch, gradcheck):
    p = np.array([1e-250, 3e-17, 0.01, 0.3, 0.5, 0.9, 1 - 1e-12])
    grads = []
    for L in (torch, tg):
        x = L.tensor(p, requires_grad=True)
        y = L.special.ndtri(x)
        g, = L.autograd.grad((y * L.tensor(np.linspace(-1, 2, 7))).sum(), x, create_graph=True)
        g2, = L.autograd.grad(g.sum(), x)
        grads.append((y.grad_fn.name(), g.detach().numpy(), g2.numpy()))
    assert grads[1][0] == grads[0][0] == "SpecialNdtriBackward0"
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
    np.testing.assert_allclose(grads[1][2], grads[0][2], rtol=1e-12)
    gradcheck(tg.special.ndtri, [0.003, 0.02, 0.4, 0.97], rtol=1e-6)
    x = tg.tensor([0.003, 0.02, 0.4, 0.97], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(tg.special.ndtri, (x,))


def test_ndtri_saves_its_result_and_refuses_half_and_complex(torch):
    for L in (torch, tg):
        x = L.tensor([0.2, 0.7], requires_grad=True)
        y = L.special.ndtri(x * 1)
        with L.no_grad():
            y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        with pytest.raises(NotImplementedError, match="\"ndtri_cpu\" not implemented for "
                                                      "'ComplexFloat'"):
            L.special.ndtri(L.tensor([0.3 + 0j]))
        with pytest.raises(NotImplementedError, match="'Half'"):
            L.special.ndtri(L.tensor([0.3], dtype=L.float16))
        assert L.special.ndtri(L.tensor([0, 1])).dtype == L.float32


# -- view_copy of a size is PyTorch's reshape (60634142) -------------------------------------------

@pytest.mark.parametrize("call", [
    lambda L, x: L.view_copy(x, (-1,)),
    lambda L, x: L.view_copy(x, [2, 6]),
    lambda L, x: L.view_copy(x, size=(6, 2)),
    lambda L, x: L.view_copy(x, (5,)),                     # RuntimeError: no such shape
    lambda L, x: L.view_copy(x, L.int32),
    lambda L, x: L.view_copy(x, dtype=L.int32),
    lambda L, x: L.view_copy(x, L.float64),                # RuntimeError: stride(-1) is 3
    lambda L, x: L.view_copy(x, 2, 6),                     # TypeError: one argument
    lambda L, x: L.view_copy(x),
])
def test_view_copy_of_a_transposed_tensor(torch, call):
    def run(L):
        x = L.arange(12.0).reshape(4, 3).mT
        return _outcome(lambda: call(L, x))
    expected, got = run(torch), run(tg)
    assert got[0] == expected[0]
    if expected[0] == "raises":
        assert got[1] is expected[1]
    else:
        assert got[1].is_contiguous()
        np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())


def test_view_copy_gradient_through_reshape(torch):
    grads = []
    for L in (torch, tg):
        x = L.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
        y = L.view_copy(x.mT, (2, 6))
        (y * L.tensor(np.arange(12.0).reshape(2, 6))).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


# -- linalg.multi_dot multiplies in PyTorch's order (60636537) -------------------------------------
# tapegrad multiplied left to right; PyTorch picks the cheapest order (for three matrices (AB)C
# unless A(BC) costs strictly less; a chain order for more).  Beyond rounding, the order decides
# which matrices a product saves: v1 @ (v6 @ v6) saves no v6 for v1's gradient, so a later write
# into v6 is no error in PyTorch, and was in tapegrad.

def _product_tree(fn, ids):
    """The parenthesisation of a multi_dot result, read from its graph."""
    name = fn.name()
    if name == "torch::autograd::AccumulateGrad":
        return ids[id(fn.variable)]
    if name == "ViewBackward0":
        return _product_tree(fn.next_functions[0][0], ids)
    assert name == "MmBackward0"
    return tuple(_product_tree(f, ids) for f, _ in fn.next_functions)


@pytest.mark.parametrize("dims", [(4, 3, 3, 3), (3, 3, 3, 4), (2, 2, 2, 2), (5, 1, 5, 1),
                                  (4, 3, 2, 5, 1), (1, 6, 2, 6, 3, 1), (3, 4, 5, 6, 7, 2, 3)])
def test_multi_dot_order(torch, dims):
    trees = []
    for L in (torch, tg):
        ts = [L.ones(dims[i], dims[i + 1], requires_grad=True) for i in range(len(dims) - 1)]
        r = L.linalg.multi_dot(ts)
        assert r._base is not None             # (a view of the last product, as PyTorch's)
        trees.append(_product_tree(r.grad_fn, {id(t): i for i, t in enumerate(ts)}))
    assert trees[1] == trees[0]


def test_multi_dot_write_after_forward(torch):
    def run(L):
        a = L.tensor(np.arange(12.0).reshape(4, 3) / 7, requires_grad=True)
        b = L.tensor(np.arange(9.0).reshape(3, 3) / 5)
        y = L.linalg.multi_dot([a, b, b])
        b[0] = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y.sum().backward()
        return a.grad.numpy(), y.detach().numpy()
    (tg_grad, tg_y), (t_grad, t_y) = run(tg), run(torch)
    np.testing.assert_allclose(tg_grad, t_grad, rtol=1e-6)
    np.testing.assert_allclose(tg_y, t_y, rtol=1e-6)


@pytest.mark.parametrize("shapes", [[(3,), (3, 4), (4,)], [(3,), (3, 2)], [(2, 3), (3,)],
                                    [(3,), (3,)], [(0, 2), (2, 3), (3, 0)]])
def test_multi_dot_vectors(torch, shapes):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in shapes]
    expected = torch.linalg.multi_dot([torch.tensor(a) for a in arrays])
    got = tg.linalg.multi_dot([tg.tensor(a) for a in arrays])
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


# -- cummax / cummin of an empty tensor take any dim (60637033) ------------------------------------

@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [5, -4, 100, 1])
def test_cumulative_extreme_of_empty_takes_any_dim(torch, name, dim):
    results = []
    for L in (torch, tg):
        x = L.zeros(3, 0, 2, requires_grad=True)
        values, indices = getattr(L, name)(x * 1, dim)
        values.sum().backward()
        results.append((tuple(values.shape), values.requires_grad, indices.dtype == L.int64,
                        tuple(x.grad.shape)))
    assert results[1] == results[0]
    # (a tensor with elements still checks its dim)
    for L in (torch, tg):
        with pytest.raises(IndexError, match="Dimension out of range"):
            getattr(L, name)(L.zeros(3, 1, 2), 5)


# -- which tensors a node saves, for 0-d and empty inputs (surface 60729782 and its siblings) -----
# cumprod of a 0-d or empty tensor, cummax/cummin of one, dist and linalg.vector_norm (ord 1 and
# beyond) took forms whose records keep nothing PyTorch's node saves (CumprodBackward0: self and
# result; CummaxBackward0: self; DistBackward0: both operands and the result;
# LinalgVectorNormBackward0: self and result), so a later write into one ran the backward
# PyTorch refuses.  mode gathered its values, whose record guards the input: ModeBackward0 saves
# only the indices, so a write into the input refused a backward PyTorch runs.

_SAVES = {
    "cumprod": lambda L, t: L.cumprod(t, 0),
    "cummax": lambda L, t: L.cummax(t, 0).values,
    "cummin": lambda L, t: L.cummin(t, 0).values,
    "norm1": lambda L, t: L.linalg.vector_norm(t, 1),
    "norm2": lambda L, t: L.linalg.vector_norm(t),
    "norm_inf": lambda L, t: L.linalg.vector_norm(t, float("inf")),
    "dist": lambda L, t: L.dist(t, t.detach() * 0),
    "mode": lambda L, t: L.mode(t, 0).values,
    "kthvalue": lambda L, t: L.kthvalue(t, 1, 0).values,
}


@pytest.mark.parametrize("shape", [(), (0,), (1,), (3,), (2, 3)])
@pytest.mark.parametrize("name", sorted(_SAVES))
@pytest.mark.parametrize("into", ["input", "output"])
def test_write_after_forward_refuses_backward_as_torch(torch, shape, name, into):
    def run(L):
        x = L.tensor(np.arange(float(np.prod(shape))).reshape(shape) + 1.5, requires_grad=True)
        y = x * 1
        outcome = _outcome(lambda: _SAVES[name](L, y))
        if outcome[0] == "raises":
            return outcome
        (y if into == "input" else outcome[1]).mul_(2.0)
        return _outcome(lambda: (outcome[1] * 0.5).sum().backward())
    expected, got = run(torch), run(tg)
    assert got[0] == expected[0]
    if expected[0] == "raises":
        assert got[1] is expected[1]


# -- index_copy / index_add into slices without elements (60641014) --------------------------------
# The slices the index names hold no elements (self (0, 3, 4) along -1): the key named no slice,
# and the source's (0, 3, 2) did not fit it (index_copy: a shape-mismatch RuntimeError;
# index_add: numpy's ValueError).  PyTorch writes nothing and gives source a gradient of its shape.

@pytest.mark.parametrize("name", ["index_copy", "index_add"])
@pytest.mark.parametrize("self_shape, source_shape, dim", [((0, 3, 4), (0, 3, 2), -1),
                                                           ((3, 0), (2, 0), 0),
                                                           ((2, 0, 3), (2, 0, 2), 2)])
def test_index_write_into_empty_slices(torch, name, self_shape, source_shape, dim):
    results = []
    for L in (torch, tg):
        x = L.zeros(self_shape, requires_grad=True)
        s = L.ones(source_shape, requires_grad=True)
        r = getattr(x * 1, name)(dim, L.tensor([0, 1][:source_shape[dim]]), s)
        r.sum().backward()
        results.append((tuple(r.shape), tuple(x.grad.shape), tuple(s.grad.shape)))
    assert results[1] == results[0]


# -- float16 where PyTorch's CPU kernel has no Half form (60640051 and siblings) -------------------
# multi_margin_loss, multilabel_margin_loss, pdist, cdist and local_response_norm beyond 3 dims
# (avg_pool3d) raise PyTorch's NotImplementedError; tapegrad computed them.  Found by running a
# hundred functional ops on float16 in both.

_HALF_CASES = {
    "multi_margin": lambda L, F: F.multi_margin_loss(L.ones(4, 3).half(), L.tensor([0, 1, 2, 0])),
    "multi_margin target range": lambda L, F: F.multi_margin_loss(L.ones(4, 3).half(),
                                                                  L.tensor([0, 1, 2, 4])),
    "multi_margin target size": lambda L, F: F.multi_margin_loss(L.ones(4, 3).half(),
                                                                 L.tensor([0, 1])),
    "multilabel_margin": lambda L, F: F.multilabel_margin_loss(L.ones(4, 3).half(),
                                                               L.tensor([[0, 1, -1]] * 4)),
    "multilabel_margin target range": lambda L, F: F.multilabel_margin_loss(
        L.ones(4, 3).half(), L.tensor([[0, 1, 5]] * 4)),
    "pdist": lambda L, F: F.pdist(L.ones(2, 3).half()),
    "pdist one row": lambda L, F: F.pdist(L.ones(1, 3).half()),
    "pdist no columns": lambda L, F: F.pdist(L.ones(2, 0).half()),
    "cdist": lambda L, F: L.cdist(L.ones(2, 3).half(), L.ones(1, 3).half()),
    "cdist empty": lambda L, F: L.cdist(L.ones(2, 3).half(), L.ones(0, 3).half()),
    "lrn 3d": lambda L, F: F.local_response_norm(L.ones(2, 3, 4).half(), 2),
    "lrn 4d": lambda L, F: F.local_response_norm(L.ones(2, 3, 4, 4).half(), 2),
    "lrn 4d empty": lambda L, F: F.local_response_norm(L.ones(2, 3, 4, 0).half(), 2),
}


@pytest.mark.parametrize("case", sorted(_HALF_CASES))
def test_half_without_cpu_kernel(torch, case):
    expected = _outcome(lambda: _HALF_CASES[case](torch, torch.nn.functional))
    got = _outcome(lambda: _HALF_CASES[case](tg, tg.nn.functional))
    assert got[0] == expected[0]
    if expected[0] == "raises":
        assert got[1] is expected[1]
    else:
        assert tuple(got[1].shape) == tuple(expected[1].shape)


# -- erfinv near +-1 (a sibling of ndtri's tails, SILENT) ------------------------------------------
# Newton steps on erf(x) - y stall where erf is flat to an ulp: erfinv(1 - 2^-53) gave 5.456 for
# 5.864 (7% off), and every y within ~1e-10 of +-1 lost digits.  The tails now solve
# erfc(|x|) = 1 - |y|, exact for |y| >= 0.5.

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_erfinv_near_one_matches_torch(torch, dtype):
    y = np.concatenate([1 - 10.0 ** -np.arange(0.5, 16.5, 0.5), -1 + 10.0 ** -np.arange(1, 16),
                        [1 - 2.0 ** -53, -1 + 2.0 ** -53, 0.5, -0.5, 0.3, 1.0, -1.0, 2.0]])
    y = y.astype(dtype)
    expected = torch.erfinv(torch.tensor(y)).numpy()
    got = tg.erfinv(tg.tensor(y)).numpy()
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite], expected[~finite])
    ulps = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]))
    assert ulps.max() <= 2
