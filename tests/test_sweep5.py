"""Regressions found by the fifth argument-form sweep of nn.functional against PyTorch."""
import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _both(make):
    """Run `make(lib)` with PyTorch and with tapegrad; return the two results."""
    return make(torch), make(tg)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("x_shape, grid_shape", [((0, 3, 5, 6), (0, 4, 7, 2)),
                                                 ((2, 0, 5, 6), (2, 4, 7, 2)),
                                                 ((0, 2, 3, 4, 5), (0, 1, 2, 3, 3))])
def test_grid_sample_empty_batch_or_channels(mode, x_shape, grid_shape):
    if mode == "bicubic" and len(x_shape) == 5:
        pytest.skip("bicubic is 4-d only")

    def run(lib):
        x = lib.zeros(x_shape, requires_grad=True)
        y = lib.nn.functional.grid_sample(x, lib.zeros(grid_shape), mode=mode,
                                          align_corners=False)
        y.sum().backward()
        return tuple(y.shape), tuple(x.grad.shape)
    a, b = _both(run)
    assert a == b
