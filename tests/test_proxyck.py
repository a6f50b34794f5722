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
