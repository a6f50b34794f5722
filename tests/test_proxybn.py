"""Regression tests of the proxybn pass (classical image processing in plain PyTorch: filters,
warping with grid_sample, pyramids, histograms, style-transfer losses), each against torch."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(tapegrad)


def _np(t):
    return t.detach().numpy()


# -- grid_sample with non-finite grid coordinates ---------------------------------------------------
# A flow or homography divided by a zero homogeneous coordinate puts inf/NaN into the grid;
# PyTorch's border/reflection padding clips those to a pixel, so the warp stays finite.

_IMG = np.arange(5 * 7, dtype=np.float32).reshape(1, 1, 5, 7) * 0.25 - 3.0
_BAD_2D = np.array([[[[np.nan, 0.0], [0.0, np.nan], [np.nan, np.nan], [np.inf, 0.2],
                      [-np.inf, -0.3], [0.1, np.inf], [-0.4, -np.inf], [np.inf, np.inf],
                      [0.25, -0.5]]]], dtype=np.float32)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_nonfinite_grid_clips(padding_mode, mode, align_corners):
    def run(T):
        return T.nn.functional.grid_sample(T.tensor(_IMG), T.tensor(_BAD_2D), mode=mode,
                                           padding_mode=padding_mode,
                                           align_corners=align_corners)
    expected, got = _both(run)
    assert np.isfinite(_np(expected)).all()
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-6)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_2d_bicubic_nonfinite_grid(padding_mode):
    # bicubic keeps NaN for non-finite points (its cubic weights are NaN), and a huge finite
    # coordinate still clips (border) to the edge pixel
    grid = np.concatenate([_BAD_2D, np.array([[[[1e30, -1e30]]]], np.float32)], axis=2)

    def run(T):
        return T.nn.functional.grid_sample(T.tensor(_IMG), T.tensor(grid), mode="bicubic",
                                           padding_mode=padding_mode, align_corners=False)
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-5, equal_nan=True)


def test_grid_sample_2d_border_inf_grid_gradient():
    # an inf coordinate clipped by the border has zero gradient (no inf * 0 = NaN)
    grid = np.array([[[[np.inf, 0.1], [-np.inf, 0.2], [0.3, np.inf], [0.2, 0.3]]]], np.float32)
    img = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)

    def run(T):
        x = T.tensor(img, requires_grad=True)
        g = T.tensor(grid, requires_grad=True)
        y = T.nn.functional.grid_sample(x, g, padding_mode="border", align_corners=False)
        y.sum().backward()
        return y, x.grad, g.grad
    expected, got = _both(run)
    for e, r in zip(expected, got):
        assert np.isfinite(_np(r)).all()
        np.testing.assert_allclose(_np(r), _np(e), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d_nonfinite_grid(padding_mode, mode):
    # PyTorch's 3-d kernel sends a NaN to the far edge under border/reflection and reads
    # nothing for a non-finite point under zeros padding
    vol = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 1, 2, 3, 4)
    grid = np.array([[[[[np.nan, 0, 0], [np.inf, 0, 0], [-np.inf, 0, 0], [0, np.nan, 0],
                        [0, 0, np.nan], [np.nan] * 3, [0.1, -0.2, 0.3]]]]], np.float32)

    def run(T):
        return T.nn.functional.grid_sample(T.tensor(vol), T.tensor(grid), mode=mode,
                                           padding_mode=padding_mode, align_corners=False)
    expected, got = _both(run)
    assert np.isfinite(_np(expected)).all()
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-6)


def test_grid_sample_warp_with_zero_homogeneous_coordinate():
    # the realistic case: a perspective warp whose w row vanishes on one output column
    def run(T):
        h, w = 4, 5
        ys, xs = T.meshgrid(T.linspace(-1, 1, h), T.linspace(-1, 1, w), indexing="ij")
        pts = T.stack([xs, ys, T.ones_like(xs)], -1) @ T.tensor([[1.0, 0.0, 0.0],
                                                                   [0.0, 1.0, 0.0],
                                                                   [1.0, 0.0, 1.0]]).T
        grid = (pts[..., :2] / pts[..., 2:]).unsqueeze(0)
        return T.nn.functional.grid_sample(T.tensor(_IMG), grid, padding_mode="border",
                                           align_corners=True)
    expected, got = _both(run)
    assert np.isfinite(_np(expected)).all()
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-5)


# -- grid_sample of an input holding inf/NaN ----------------------------------------------------
# Taps outside the input are not read by PyTorch; they must not pick up an inf/NaN pixel
# (tapegrad reads a stand-in pixel for them and multiplied it by 0: inf * 0 = NaN everywhere).

@pytest.mark.parametrize("kw", [dict(), dict(mode="nearest"), dict(mode="bicubic"),
                                dict(padding_mode="border"), dict(padding_mode="reflection")])
def test_grid_sample_nonfinite_input_stays_local(kw):
    img = np.linspace(0, 1, 2 * 2 * 4 * 5, dtype=np.float32).reshape(2, 2, 4, 5)
    img[0, 0, 0, 0] = np.nan
    img[1, 1, 0, 0] = np.inf
    img[1, 0, 2, 3] = -np.inf
    grid = np.stack(np.meshgrid(np.linspace(-1.6, 1.4, 6), np.linspace(-1.3, 1.7, 5)), -1)
    grid = np.broadcast_to(grid[None], (2, 5, 6, 2)).astype(np.float32)

    def run(T):
        return T.nn.functional.grid_sample(T.tensor(img), T.tensor(grid.copy()),
                                           align_corners=False, **kw)
    expected, got = _both(run)
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-5, equal_nan=True)


def test_grid_sample_3d_nonfinite_input_stays_local():
    vol = np.linspace(0, 1, 2 * 3 * 4, dtype=np.float32).reshape(1, 1, 2, 3, 4)
    vol[0, 0, 0, 0, 0] = np.nan
    grid = np.array([[[[[1.5, 0.2, 0.1], [-0.3, 1.8, -0.2], [0.2, 0.3, 0.4]]]]], np.float32)

    def run(T):
        return T.nn.functional.grid_sample(T.tensor(vol), T.tensor(grid),
                                           align_corners=False)
    expected, got = _both(run)
    assert np.isfinite(_np(expected)).all()
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-5)


# -- kaiser_window's overloads ----------------------------------------------------------------

def test_kaiser_window_beta_needs_periodic():
    # PyTorch's overloads are (N), (N, periodic), (N, periodic, beta): beta alone is refused
    for T in (torch, tapegrad):
        with pytest.raises(TypeError, match=r"kaiser_window\(\) received an invalid combination "
                                            r"of arguments - got \(int, beta=float\)"):
            T.kaiser_window(6, beta=5.0)
    for kw in [dict(periodic=False, beta=5.0), dict(beta=3.0, periodic=True), dict()]:
        np.testing.assert_allclose(tapegrad.kaiser_window(7, **kw).numpy(),
                                   torch.kaiser_window(7, **kw).numpy(), rtol=1e-6)
    np.testing.assert_allclose(tapegrad.kaiser_window(6, True, 2.5).numpy(),
                               torch.kaiser_window(6, True, 2.5).numpy(), rtol=1e-6)
