"""Regression tests of the proxyck pass (3-D medical imaging and video models: 3-D U-Nets,
grid_sample augmentation, sliding windows, Dice losses, video blocks), each against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _raised(fn):
    """(exception type name, message) of what fn raises, or None."""
    try:
        fn()
    except Exception as e:          # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)
    return None


# -- grid_sample's shape checks, in PyTorch's order ----------------------------------------------
# PyTorch checks the batch, then the grid's last size, then empty spatial dims, and only then
# the ranks ("expected 5D input and grid with same number of dimensions" for anything not 4-d).

_GRID_CASES = [
    ((2, 3, 4, 6, 5), (2, 1, 1, 3)), ((2, 3, 4, 6, 5), (2, 1, 1, 2)),
    ((2, 3, 6, 5), (2, 1, 1, 1, 3)), ((2, 3, 6, 5), (2, 1, 1, 1, 2)),
    ((2, 3, 6, 5), (3, 1, 1, 1, 2)), ((2, 3, 5), (2, 1, 1)), ((2, 3, 5), (2, 1)),
    ((2, 3, 4, 5, 6, 7), (2, 1, 1, 1, 1, 4)), ((2, 3, 4, 6, 5), (3, 1, 1, 3)),
    ((2, 3, 0, 5), (2, 1, 1, 2)), ((2, 3, 4, 6, 5), (2, 1, 1, 3, 1)),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("input_shape,grid_shape", _GRID_CASES)
def test_grid_sample_shape_errors_match(input_shape, grid_shape, mode):
    def run(T):
        return lambda: T.nn.functional.grid_sample(T.zeros(input_shape), T.zeros(grid_shape),
                                                   mode=mode, align_corners=False)
    expected = _raised(run(torch))
    assert expected is not None
    assert _raised(run(tapegrad)) == expected


# -- circular padding's node ---------------------------------------------------------------------

@pytest.mark.parametrize("pad", [(1,) * 6, (0,) * 6, (1, 2, 0, 1, 2, 0)])
def test_circular_pad_grad_fn_is_copyslices_and_grads_match(pad):
    x = np.sin(np.arange(2 * 2 * 3 * 4 * 3, dtype=np.float64)).reshape(2, 2, 3, 4, 3)

    def run(T):
        t = T.tensor(x, requires_grad=True)
        y = T.nn.functional.pad(t, pad, mode="circular")
        (y * T.arange(y.shape[-1], dtype=T.float64)).sum().backward()
        return y, t.grad

    (ey, eg), (gy, gg) = run(torch), run(tapegrad)
    assert type(gy.grad_fn).__name__ == type(ey.grad_fn).__name__ == "CopySlices"
    assert gy.grad_fn.name() == ey.grad_fn.name()
    np.testing.assert_allclose(gy.detach().numpy(), ey.detach().numpy())
    np.testing.assert_allclose(gg.numpy(), eg.numpy())


# -- index_select's gradient along any dim (the C scatter behind interpolate's backward) --------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_index_select_grad_along_each_dim_matches_torch(dim, dtype):
    x = np.cos(np.arange(3 * 4 * 5 * 6) * 0.7).reshape(3, 4, 5, 6).astype(dtype)
    size = x.shape[dim]
    index = np.array([size - 1, 0, 0, 1, size - 1, 2, 1], dtype=np.int64)   # repeats, unsorted

    def run(T):
        t = T.tensor(x, requires_grad=True)
        y = t.index_select(dim, T.tensor(index))
        w = T.tensor(np.sin(np.arange(y.numel()) * 1.3).reshape(tuple(y.shape)).astype(dtype))
        (y * w.transpose(0, -1).contiguous().transpose(0, -1)).sum().backward()  # strided w
        return t.grad.numpy()

    np.testing.assert_allclose(run(tapegrad), run(torch), rtol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("align_corners", [False, True])
def test_trilinear_upsampling_grad_matches_torch(align_corners):
    x = np.sin(np.arange(2 * 3 * 4 * 5 * 6) * 0.37).reshape(2, 3, 4, 5, 6)

    def run(T):
        t = T.tensor(x, requires_grad=True)
        y = T.nn.functional.interpolate(t, size=(7, 9, 13), mode="trilinear",
                                        align_corners=align_corners)
        (y * T.cos(T.arange(y.numel(), dtype=T.float64)).reshape(y.shape)).sum().backward()
        return y.detach().numpy(), t.grad.numpy()

    (ey, eg), (gy, gg) = run(torch), run(tapegrad)
    np.testing.assert_allclose(gy, ey, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gg, eg, rtol=1e-12, atol=1e-14)


def test_index_select_grad_int_and_inf_values():
    # a non-float gradient path is refused as before; inf in the upstream gradient stays local
    x = tapegrad.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x.index_select(1, tapegrad.tensor([2, 2, 0]))
    y.backward(tapegrad.tensor([[float("inf"), 1.0, 2.0]]))
    assert x.grad.tolist() == [[2.0, 0.0, float("inf")]]


# -- max_unpool's invalid index: PyTorch names the last one its scan met --------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_names_last_invalid_index(nd):
    idx = np.zeros((2, 3, 2, 2, 2), dtype=np.int64)
    idx[0, 0, 0, 0, 0], idx[0, 0, 1, 1, 1], idx[1, 2, 0, 0, 0] = 500, -4, 300
    idx[0, 0, 0, 0, 1] = 999
    key = (Ellipsis,) + (0,) * (3 - nd)

    def run(T):
        fn = getattr(T.nn.functional, f"max_unpool{nd}d")
        x = T.zeros((2, 3) + (2,) * nd)
        return _raised(lambda: fn(x, T.tensor(idx[key]), 2, output_size=(4,) * nd))

    with _one_thread():
        expected = run(torch)
    assert run(tapegrad) == expected


class _one_thread:
    """PyTorch's unpooling runs planes in parallel; which bad index it names then races."""
    def __enter__(self):
        self.n = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.n)
