"""perf47: grid_sample of a 4-d input (bilinear, nearest) runs as one node of C kernels
(src/tapegrad/grid_kernels.c).  Its values and both gradients must keep PyTorch's bits: the
kernels follow PyTorch's vectorised CPU kernel step by step (fused multiply-adds where its
build fuses, its chunks of 32-byte vectors for the order of the input gradient's sums)."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")
F = tg.nn.functional

MODES = ["bilinear", "nearest"]
PADDINGS = ["zeros", "border", "reflection"]


def _grids(rng, shape, dtype, kind):
    """Grid values of one kind: inside, out to 3x the range, snapped to quarter steps (pixel
    centres and edges exactly), or with inf/NaN/huge values scattered in."""
    if kind == "inside":
        g = rng.uniform(-1, 1, shape)
    elif kind == "outside":
        g = rng.uniform(-3, 3, shape)
    elif kind == "snapped":
        g = np.round(rng.uniform(-1.5, 1.5, shape) * 4) / 4
    else:
        g = rng.uniform(-1.2, 1.2, shape)
        flat = g.reshape(-1)
        k = rng.integers(0, flat.size, max(1, flat.size // 4))
        flat[k] = rng.choice([np.inf, -np.inf, np.nan, 1e10, -1e10, 1.0, -1.0], k.size)
    return g.astype(dtype)


def _both(x, g, gout, mode, padding, align_corners, backward=True, grid_view=None):
    """(tapegrad's, PyTorch's) (output, input gradient, grid gradient) as arrays."""
    res = []
    for lib, fn in ((tg, F.grid_sample), (torch, torch.nn.functional.grid_sample)):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        gt = lib.from_numpy(g.copy()).requires_grad_()
        grid = gt if grid_view is None else grid_view(gt)
        out = fn(xt, grid, mode=mode, padding_mode=padding, align_corners=align_corners)
        if backward:
            gi, gg = (lib.autograd.grad(out, (xt, gt), lib.from_numpy(gout.copy())))
            res.append((out.detach().numpy(), gi.numpy(), gg.numpy()))
        else:
            res.append((out.detach().numpy(),))
    return res


def _same_bits(mine, theirs):
    for a, b in zip(mine, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bits_match_torch(dtype, mode, padding, align_corners):
    rng = np.random.default_rng(47)
    for trial in range(24):
        n, c = rng.integers(1, 4, 2)
        h, w, ho, wo = rng.integers(1, 10, 4)
        x = rng.standard_normal((n, c, h, w)).astype(dtype)
        g = _grids(rng, (n, ho, wo, 2), dtype, ["inside", "outside", "snapped"][trial % 3])
        gout = rng.standard_normal((n, c, ho, wo)).astype(dtype)
        mine, theirs = _both(x, g, gout, mode, padding, align_corners)
        _same_bits(mine, theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_non_finite_grid_bits(dtype, mode, padding):
    # Forward everywhere; backward where PyTorch's is defined (its bilinear backward with border
    # or reflection padding reads outside the input for a coordinate the padding leaves NaN).
    rng = np.random.default_rng(4747)
    backward = mode == "nearest" or padding == "zeros"
    for trial in range(12):
        x = rng.standard_normal((2, 3, 5, 6)).astype(dtype)
        g = _grids(rng, (2, 4, 7, 2), dtype, "special")
        gout = rng.standard_normal((2, 3, 4, 7)).astype(dtype)
        for ac in (False, True):
            mine, theirs = _both(x, g, gout, mode, padding, ac, backward)
            _same_bits(mine, theirs)


@pytest.mark.parametrize("view", ["planar", "strided rows"])
def test_grid_sample_strided_grid_gradient_bits(view):
    # A grid read through a view: PyTorch walks it in chunks per output row (or over the flat
    # plane when each coordinate's plane is contiguous), and points of two chunks sharing a
    # pixel add their input gradients in that order.
    rng = np.random.default_rng(7)
    if view == "planar":    # a conv net's (N, 2, H, W) output, permuted
        g = rng.uniform(-1, 1, (2, 2, 9, 11)).astype(np.float32)
        grid_view = (lambda t: t.permute(0, 2, 3, 1))
        gout_shape = (2, 3, 9, 11)
    else:                   # every other column of a wider grid
        g = rng.uniform(-1, 1, (2, 9, 22, 2)).astype(np.float32)
        grid_view = (lambda t: t[:, :, ::2])
        gout_shape = (2, 3, 9, 11)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    gout = rng.standard_normal(gout_shape).astype(np.float32)
    mine, theirs = _both(x, g, gout, "bilinear", "zeros", False, grid_view=grid_view)
    _same_bits(mine, theirs)


def test_grid_sample_one_input_requiring_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 5, 5))
    g = rng.uniform(-1.2, 1.2, (2, 3, 4, 2))
    for which in (0, 1):
        res = []
        for lib, fn in ((tg, F.grid_sample), (torch, torch.nn.functional.grid_sample)):
            xt, gt = lib.from_numpy(x.copy()), lib.from_numpy(g.copy())
            (xt, gt)[which].requires_grad_()
            out = fn(xt, gt, align_corners=False)
            assert out.requires_grad and type(out.grad_fn).__name__ == "GridSampler2DBackward0"
            out.pow(2).sum().backward()
            res.append((xt, gt)[which].grad.numpy())
            assert (xt, gt)[1 - which].grad is None
        np.testing.assert_array_equal(*res)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_double_backward_matches_torch(mode, padding):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 2, 5, 4))
    g = rng.uniform(-1.1, 1.1, (1, 3, 3, 2))
    res = []
    for lib, fn in ((tg, F.grid_sample), (torch, torch.nn.functional.grid_sample)):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        gt = lib.from_numpy(g.copy()).requires_grad_()
        out = fn(xt, gt, mode=mode, padding_mode=padding, align_corners=True)
        gx, gg = lib.autograd.grad((out * out).sum(), (xt, gt), create_graph=True)
        second = lib.autograd.grad((gx * gx).sum() + gg.sum(), (xt, gt), allow_unused=True)
        res.append([gx.detach().numpy(), gg.detach().numpy()]
                   + [np.zeros(t.shape) if s is None else s.numpy()
                      for s, t in zip(second, (xt, gt))])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_gradcheck(padding, gradcheck):
    rng = np.random.default_rng(5)
    x = tg.from_numpy(rng.standard_normal((2, 2, 4, 5))).requires_grad_()
    # away from pixel edges and clip borders, where the bilinear gradient is not continuous
    g = tg.from_numpy(rng.uniform(-0.8, 0.8, (2, 3, 3, 2)) + 0.013).requires_grad_()
    assert tg.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, padding_mode=padding, align_corners=False), (x, g))


def test_grid_sample_saved_input_modified_raises():
    x = tg.randn(1, 1, 4, 4, requires_grad=True)
    y = x * 1.0
    out = F.grid_sample(y, tg.zeros(1, 2, 2, 2), align_corners=False)
    with tg.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_grid_sample_empty_and_tiny():
    for shape, gshape in (((0, 2, 3, 3), (0, 2, 2, 2)), ((1, 0, 3, 3), (1, 2, 2, 2)),
                          ((1, 2, 1, 1), (1, 3, 1, 2)), ((1, 2, 3, 3), (1, 0, 4, 2))):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32)
        g = rng.uniform(-1, 1, gshape).astype(np.float32)
        gout = np.ones(shape[:2] + gshape[1:3], np.float32)
        for pad in PADDINGS:
            mine, theirs = _both(x, g, gout, "bilinear", pad, True)
            _same_bits(mine, theirs)


# -- histogram: the bins found in one C pass (order_kernels.c) --------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histogram_bins_match_torch(dtype):
    rng = np.random.default_rng(470)
    for trial in range(120):
        n = int(rng.integers(0, 400))
        x = (rng.standard_normal(n) * rng.choice([1.0, 1e-3, 1e3])).astype(dtype)
        if trial % 5 == 0 and n:
            x[rng.integers(0, n, n // 5)] = rng.choice([np.nan, np.inf, -np.inf, 0.0])
        if trial % 6 == 1 and n:        # values exactly on edges
            x = (np.round(rng.uniform(-1, 1, n) * 8) / 8).astype(dtype)
        bins = int(rng.integers(1, 60))
        bounds = [None, (-1.0, 1.0), (0.0, 0.0), (-0.5, 2.0)][trial % 4]
        w = rng.random(n).astype(dtype) if trial % 3 == 0 else None
        kw = {} if bounds is None else {"range": bounds}
        res = []
        for lib in (tg, torch):
            try:
                res.append(lib.histogram(lib.from_numpy(x.copy()), bins=bins,
                                         weight=None if w is None else lib.from_numpy(w),
                                         density=trial % 7 == 0, **kw))
            except RuntimeError as e:
                res.append(type(e))
        if isinstance(res[1], type):
            assert res[0] is res[1]
            continue
        for a, b in zip(res[0], res[1]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_histogram_given_edges_and_histogramdd_match_torch():
    rng = np.random.default_rng(471)
    for trial in range(40):
        dtype = [np.float32, np.float64][trial % 2]
        x = rng.standard_normal((300, 2)).astype(dtype)
        x[::17, 0] = 0.5                # on an edge
        edges = np.sort(np.r_[rng.standard_normal(int(rng.integers(1, 12))), 0.5]).astype(dtype)
        a = tg.histogram(tg.from_numpy(x[:, 0].copy()), tg.from_numpy(edges))
        b = torch.histogram(torch.from_numpy(x[:, 0].copy()), torch.from_numpy(edges))
        np.testing.assert_array_equal(a.hist.numpy(), b.hist.numpy())
        a = tg.histogramdd(tg.from_numpy(x), bins=[3, 7])
        b = torch.histogramdd(torch.from_numpy(x), bins=[3, 7])
        np.testing.assert_array_equal(a.hist.numpy(), b.hist.numpy())
        for ea, eb in zip(a.bin_edges, b.bin_edges):
            np.testing.assert_array_equal(ea.numpy(), eb.numpy())


# -- diag_embed / diag of a vector: zeros with the diagonal written, one node -------------------

@pytest.mark.parametrize("shape, offset, dims", [((32, 64), 0, (-2, -1)), ((3, 4), 1, (0, 2)),
                                                 ((2, 3, 4), -2, (1, 0)), ((5,), 0, (-2, -1)),
                                                 ((0, 3), 1, (-2, -1)), ((2, 0), 0, (-2, -1))])
def test_diag_embed_values_and_gradients_match_torch(shape, offset, dims):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    res = []
    for lib in (tg, torch):
        x = lib.from_numpy(a.copy()).requires_grad_()
        out = lib.diag_embed(x, offset, *dims)
        w = lib.from_numpy(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        assert type(out.grad_fn).__name__ == "DiagEmbedBackward0"
        res.append((out.detach().numpy(), x.grad.numpy()))
    for m, t in zip(*res):
        np.testing.assert_array_equal(m, t)


def test_diag_embed_and_diag_double_backward(gradcheck):
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: tg.diag_embed(t, 1, 0, 2) ** 2, (x,))
    v = tg.randn(4, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: tg.diag(t, -1) ** 2, (v,))


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diag_of_vector_no_grad_matches_torch(k):
    for values in ([1, 2, 3], [1.5, -2.0], [True, False]):
        mine = tg.diag(tg.tensor(values), k)
        theirs = torch.diag(torch.tensor(values), k)
        assert str(mine.dtype) == str(theirs.dtype) and not mine.requires_grad
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    with tg.no_grad():
        assert not tg.diag(tg.ones(3, requires_grad=True), k).requires_grad


# -- Tensor.unfold without a gradient to record: no element key built ---------------------------

def test_unfold_without_grad_is_a_view_and_matches_torch():
    a = np.arange(40, dtype=np.float32).reshape(4, 10)
    for dim, size, step in ((1, 3, 2), (0, 2, 1), (1, 10, 3), (-1, 1, 4)):
        mine = tg.from_numpy(a.copy()).unfold(dim, size, step)
        theirs = torch.from_numpy(a.copy()).unfold(dim, size, step)
        assert mine.stride() == theirs.stride() and tuple(mine.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(mine.contiguous().numpy(), theirs.contiguous().numpy())
    x = tg.zeros(6)
    v = x.unfold(0, 3, 1)
    v[1, 2] = 5.0                       # writes reach the base
    assert x[3].item() == 5.0
    # the base given a history afterwards: the view follows it (its gradient, PyTorch's)
    w, tw = tg.arange(6.0, requires_grad=True), torch.arange(6.0, requires_grad=True)
    tx = torch.zeros(6)
    tv = tx.unfold(0, 3, 1)
    x.copy_(w * 2)
    tx.copy_(tw * 2)
    (v * tg.arange(12.0).reshape(4, 3)).sum().backward()
    (tv * torch.arange(12.0).reshape(4, 3)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


# -- scatter_add of vectors without a gradient: the compiled loop straight away ------------------

def test_vector_scatter_add_matches_torch():
    rng = np.random.default_rng(2)
    for trial in range(100):
        n, m = int(rng.integers(1, 20)), int(rng.integers(0, 60))
        z = rng.standard_normal(n).astype(np.float32)
        idx = rng.integers(0, n, m)
        src = rng.standard_normal(m + int(rng.integers(0, 3))).astype(np.float32)
        dim = [0, -1][trial % 2]
        mine = tg.scatter_add(tg.from_numpy(z), dim, tg.from_numpy(idx), tg.from_numpy(src))
        theirs = torch.scatter_add(torch.from_numpy(z), dim, torch.from_numpy(idx),
                                   torch.from_numpy(src))
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    for bad in ([0, 5], [-1, 0]):
        with pytest.raises(RuntimeError, match="out of bounds for dimension 0 with size 3"):
            tg.scatter_add(tg.zeros(3), 0, tg.tensor(bad), tg.ones(2))
    with pytest.raises(RuntimeError, match="no larger"):
        tg.scatter_add(tg.zeros(3), 0, tg.tensor([0, 1, 2]), tg.ones(2))


# -- grid_sample of a 5-d input: PyTorch's scalar kernel, point by point ------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d_bits_match_torch(dtype, mode, padding, align_corners):
    rng = np.random.default_rng(5047)
    for trial in range(16):
        n, c = rng.integers(1, 3), rng.integers(1, 4)
        d, h, w, do, ho, wo = rng.integers(1, 6, 6)
        x = rng.standard_normal((n, c, d, h, w)).astype(dtype)
        # (PyTorch's 3-d backward is defined for every grid value: inf and NaN included)
        kind = ["inside", "outside", "snapped", "special"][trial % 4]
        g = _grids(rng, (n, do, ho, wo, 3), dtype, kind)
        gout = rng.standard_normal((n, c, do, ho, wo)).astype(dtype)
        mine, theirs = _both(x, g, gout, mode, padding, align_corners)
        _same_bits(mine, theirs)


@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_3d_gradients_and_double_backward(padding, gradcheck):
    rng = np.random.default_rng(9)
    x = tg.from_numpy(rng.standard_normal((1, 2, 3, 4, 3))).requires_grad_()
    g = tg.from_numpy(rng.uniform(-0.8, 0.8, (1, 2, 2, 2, 3)) + 0.013).requires_grad_()
    fn = (lambda a, b: F.grid_sample(a, b, padding_mode=padding, align_corners=False))
    assert type(fn(x, g).grad_fn).__name__ == "GridSampler3DBackward0"
    assert tg.autograd.gradcheck(fn, (x, g))
    res = []
    for lib, sample in ((tg, F.grid_sample), (torch, torch.nn.functional.grid_sample)):
        xt = lib.from_numpy(x.detach().numpy().copy()).requires_grad_()
        gt = lib.from_numpy(g.detach().numpy().copy()).requires_grad_()
        out = sample(xt, gt, padding_mode=padding, align_corners=True)
        gx, gg = lib.autograd.grad((out * out).sum(), (xt, gt), create_graph=True)
        second = lib.autograd.grad((gx * gx).sum() + gg.sum(), (xt, gt))
        res.append([gx.detach().numpy(), gg.detach().numpy()] + [s.numpy() for s in second])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
