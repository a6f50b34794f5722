"""interpolate's and grid_sample's fused float32 tap sums as single nodes (tapegrad/nn/_tap_sum.py):
PyTorch's forward bits, gradients, double backward, non-finite values and tapegrad.compile."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _core

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_threads_as_tapegrads():
    """PyTorch's separable bilinear kernel splits rows by thread, and its vector/scalar split
    (FMA or not) follows: its bits depend on its thread count, which other tests change.  The
    comparison runs PyTorch with the thread count tapegrad models."""
    before = torch.get_num_threads()
    torch.set_num_threads(tg.get_num_threads())
    yield
    torch.set_num_threads(before)

# (shape, size, mode): channels-last bilinear with whole vectors of channels, with a scalar
# remainder, without vectors; the separable bilinear kernel (H + W > 128); bicubic; linear;
# trilinear
CASES = [((2, 16, 9, 7), (13, 17), "bilinear"), ((2, 11, 9, 7), (13, 17), "bilinear"),
         ((1, 3, 8, 8), (16, 16), "bilinear"), ((1, 3, 20, 20), (70, 90), "bilinear"),
         ((1, 3, 8, 8), (16, 16), "bicubic"), ((2, 3, 9, 11), (4, 23), "bicubic"),
         ((2, 3, 10), (23,), "linear"), ((1, 2, 4, 5, 6), (7, 9, 11), "trilinear")]


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _both(fn_tg, fn_torch, arrays, grad_out_seed=1):
    """Forward and gradients of fn on float32 arrays, in tapegrad and in torch."""
    xs = [tg.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = fn_tg(*xs), fn_torch(*ts)
    g = _data(tuple(yt.shape), grad_out_seed)
    y.backward(tg.tensor(g))
    yt.backward(torch.tensor(g))
    return (y.detach().numpy(), [x.grad.numpy() for x in xs],
            yt.detach().numpy(), [t.grad.numpy() for t in ts])


@pytest.mark.parametrize("shape,size,mode", CASES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bits_and_gradients(shape, size, mode, align_corners):
    y, gx, yt, gt = _both(
        lambda x: F.interpolate(x, size=size, mode=mode, align_corners=align_corners),
        lambda x: torch.nn.functional.interpolate(x, size=size, mode=mode,
                                                  align_corners=align_corners),
        [_data(shape)])
    assert np.array_equal(y, yt)                                  # PyTorch's bits
    np.testing.assert_allclose(gx[0], gt[0], rtol=1e-5, atol=1e-6)


def test_interpolate_channels_last_and_scale_factor():
    a = _data((2, 12, 6, 5))
    x = tg.tensor(a).contiguous(memory_format=tg.channels_last).requires_grad_()
    t = torch.tensor(a).contiguous(memory_format=torch.channels_last).requires_grad_()
    y = F.interpolate(x, scale_factor=(2.5, 3.1), mode="bilinear", align_corners=False)
    yt = torch.nn.functional.interpolate(t, scale_factor=(2.5, 3.1), mode="bilinear",
                                         align_corners=False)
    assert np.array_equal(y.detach().numpy(), yt.detach().numpy())
    assert y.is_contiguous(memory_format=tg.channels_last)
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bits_and_gradients(padding_mode, align_corners):
    a = _data((2, 5, 7, 9))
    grid = (np.random.default_rng(2).random((2, 6, 5, 2)) * 2.4 - 1.2).astype(np.float32)
    y, (gx, gg), yt, (tx, tgr) = _both(
        lambda x, g: F.grid_sample(x, g, padding_mode=padding_mode, align_corners=align_corners),
        lambda x, g: torch.nn.functional.grid_sample(x, g, padding_mode=padding_mode,
                                                     align_corners=align_corners),
        [a, grid])
    assert np.array_equal(y, yt)
    np.testing.assert_allclose(gx, tx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gg, tgr, rtol=1e-4, atol=1e-5)


def _grad_of_grad(lib, fn, a, g, v):
    """d/d(grad_out) of <d fn/dx (grad_out), v>: the first derivative's own derivative."""
    x = lib.tensor(a, requires_grad=True)
    go = lib.tensor(g, requires_grad=True)
    (gx,) = lib.autograd.grad(fn(lib, x), x, go, create_graph=True)
    first = gx.detach().numpy().copy()
    (gx * lib.tensor(v)).sum().backward()
    return first, go.grad.numpy()


@pytest.mark.parametrize("shape,size,mode", [CASES[1], CASES[3], CASES[4], CASES[6]])
def test_interpolate_double_backward(shape, size, mode):
    def fn(lib, x):
        return lib.nn.functional.interpolate(x, size=size, mode=mode, align_corners=False)
    a = _data(shape)
    g = _data((shape[0], shape[1]) + size, 3)
    v = _data(shape, 4)
    first, second = _grad_of_grad(tg, fn, a, g, v)
    first_t, second_t = _grad_of_grad(torch, fn, a, g, v)
    np.testing.assert_allclose(first, first_t, rtol=1e-5, atol=1e-6)
    # the derivative of x.grad by grad_out is interpolate itself: PyTorch's forward bits
    np.testing.assert_allclose(second, second_t, rtol=1e-5, atol=1e-6)


def test_grid_sample_double_backward_matches_float64():
    """The float32 node's create_graph backward against the float64 composition (gradients of
    a gradient penalty by the input and by the grid)."""
    a = _data((1, 3, 5, 6))
    grid = (np.random.default_rng(5).random((1, 4, 4, 2)) * 1.8 - 0.9).astype(np.float32)

    def penalty_grads(dtype):
        x = tg.tensor(a.astype(dtype), requires_grad=True)
        gr = tg.tensor(grid.astype(dtype), requires_grad=True)
        y = F.grid_sample(x, gr, align_corners=False)
        gx, gg = tg.autograd.grad((y * y).sum(), (x, gr), create_graph=True)
        ((gx ** 2).sum() + (gg ** 2).sum()).backward()
        return x.grad.numpy(), gr.grad.numpy()
    for got, want in zip(penalty_grads(np.float32), penalty_grads(np.float64)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-4)


def test_float32_gradients_match_float64_composition():
    """The kernels' gradients against the float64 path (composed from ops, gradcheck-tested)."""
    for shape, size, mode in CASES[:5]:
        a = _data(shape)
        grads = []
        for dtype in (np.float32, np.float64):
            x = tg.tensor(a.astype(dtype), requires_grad=True)
            y = F.interpolate(x, size=size, mode=mode, align_corners=False)
            (y * tg.tensor(_data(tuple(y.shape), 7).astype(dtype))).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)


def test_gradcheck_float64_paths():
    x = tg.tensor(_data((1, 2, 4, 5)).astype(np.float64), requires_grad=True)
    g = tg.tensor(np.random.default_rng(6).random((1, 3, 3, 2)) * 1.6 - 0.8, requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda x: F.interpolate(x, size=(6, 7), mode="bilinear", align_corners=False), (x,))
    assert tg.autograd.gradgradcheck(
        lambda x, g: F.grid_sample(x, g, align_corners=False), (x, g))


def test_non_finite_values_stay_local():
    """An inf in the input reaches only the outputs whose taps read it (NaN where its weight is
    0, as PyTorch's); a NaN in the output gradient only the inputs under its taps."""
    a = _data((1, 8, 6, 6))
    a[0, 2, 3, 4] = np.inf
    for size, mode in [((9, 11), "bilinear"), ((80, 70), "bilinear"), ((9, 11), "bicubic")]:
        y = F.interpolate(tg.tensor(a), size=size, mode=mode, align_corners=False).numpy()
        yt = torch.nn.functional.interpolate(torch.tensor(a), size=size, mode=mode,
                                             align_corners=False).numpy()
        assert np.array_equal(y, yt, equal_nan=True)
        b = _data((1, 8, 6, 6))
        g = np.zeros((1, 8) + size, np.float32)
        g[0, 5, 4, 5] = np.nan
        x = tg.tensor(b, requires_grad=True)
        t = torch.tensor(b, requires_grad=True)
        F.interpolate(x, size=size, mode=mode, align_corners=False).backward(tg.tensor(g))
        torch.nn.functional.interpolate(t, size=size, mode=mode, align_corners=False).backward(
            torch.tensor(g))
        assert np.array_equal(np.isnan(x.grad.numpy()), np.isnan(t.grad.numpy()))


def test_compile_replays_interpolate_and_grid_sample():
    grid = tg.tensor((np.random.default_rng(8).random((2, 5, 4, 2)) * 2 - 1).astype(np.float32))

    def step(x):
        y = F.interpolate(x, size=(11, 13), mode="bilinear", align_corners=False)
        z = F.interpolate(x, size=(70, 90), mode="bicubic", align_corners=False)
        w = F.grid_sample(x, grid, align_corners=False)
        return y.sum() + (z * z).mean() + (w * w).sum()

    compiled = tg.compile(step)
    for seed in range(3):
        a = _data((2, 3, 6, 7), seed)
        x1 = tg.tensor(a, requires_grad=True)
        x2 = tg.tensor(a, requires_grad=True)
        out_c, out_e = compiled(x1), step(x2)
        out_c.backward()
        out_e.backward()
        assert out_c.item() == out_e.item()
        assert np.array_equal(x1.grad.numpy(), x2.grad.numpy())


def test_fused_multiply_add_broadcast_kernel():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    c = rng.standard_normal(a.shape).astype(np.float32)
    for shape in [(3, 4, 5, 6), (5, 6), (6,), (5, 1), (1, 4, 1, 1), (4, 5, 1), ()]:
        b = np.ascontiguousarray(rng.standard_normal(shape).astype(np.float32))
        want = np.empty_like(a)
        _core.fused_multiply_add(a, np.ascontiguousarray(np.broadcast_to(b, a.shape)), c, want)
        out = np.empty_like(a)
        assert _core.fused_multiply_add_broadcast(a, b, c, out) is out
        assert np.array_equal(out, want)
    # weights over two separate runs of dims, or another dtype: not taken
    assert _core.fused_multiply_add_broadcast(a, np.ones((4, 1, 6), np.float32), c,
                                              np.empty_like(a)) is None
    assert _core.fused_multiply_add_broadcast(a, np.ones(6), c, np.empty_like(a)) is None


def test_row_kernels_refuse_bad_operands():
    src = np.ones((2, 3, 4), np.float32)
    w = np.ones((2, 4), np.float32)
    acc = np.zeros((2, 2, 4), np.float32)
    assert _core.gathered_rows_fma(src, np.array([0, 3]), w, acc, True) is None   # row 3 of 3
    assert _core.gathered_rows_fma(src, np.array([0, 2], np.int32), w, acc, True) is None
    assert _core.gathered_rows_fma(src, np.array([0, 2]), w, acc, True) is acc
    assert np.array_equal(acc, np.ones((2, 2, 4)))
    grad = np.zeros_like(src)
    assert _core.scattered_rows_product(acc, np.array([1, 1]), w, grad) is grad
    assert np.array_equal(grad[:, 1], np.full((2, 4), 2.0)) and grad[:, [0, 2]].sum() == 0


def test_cached_taps_are_read_only():
    from tapegrad.nn._spatial_ops import _axis_taps
    taps = _axis_taps("bilinear", False, 7, 13, None, False, np.float32)
    again = _axis_taps("bilinear", False, 7, 13, None, False, np.float32)
    assert all(i is j and w is v for (i, w), (j, v) in zip(taps, again))
    for index, w in taps:
        with pytest.raises(ValueError):
            w[0] = 1
        with pytest.raises(ValueError):
            index[0] = 0
