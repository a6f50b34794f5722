"""What the session-33 proxy over adversarial and image-to-image scripts (GANs, WGAN-GP, style
transfer, super-resolution, CycleGAN/pix2pix blocks) found tapegrad doing differently from
PyTorch, each checked against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(exception type name, message) of fn(), or ('ok', result)."""
    try:
        return "ok", fn()
    except Exception as e:      # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)


# -- interpolate(mode='lanczos', antialias=True): PyTorch 2.13's Lanczos-3 resampling (PIL's -----
# -- Image.LANCZOS), the usual way to make low-resolution inputs for super-resolution -------------

_IMAGE = np.random.default_rng(33).random((2, 3, 13, 11))


@pytest.mark.parametrize("size", [(4, 5), (6, 11), (13, 3), (26, 20), (7, 7), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lanczos_values_match_torch(torch, size, dtype):
    def run(lib):
        x = lib.tensor(_IMAGE, dtype=getattr(lib, dtype))
        y = lib.nn.functional.interpolate(x, size=size, mode="lanczos", antialias=True)
        return str(y.dtype), tuple(y.shape), y.numpy()
    got, want = run(tg), run(torch)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-6 if dtype == "float32" else 1e-13)


@pytest.mark.parametrize("scale", [0.5, 0.3, 2.0, (1.5, 0.7)])
@pytest.mark.parametrize("recompute", [None, True])
def test_lanczos_scale_factor_matches_torch(torch, scale, recompute):
    def run(lib):
        x = lib.tensor(_IMAGE)
        return lib.nn.functional.interpolate(x, scale_factor=scale, mode="lanczos",
                                             antialias=True,
                                             recompute_scale_factor=recompute).numpy()
    got, want = run(tg), run(torch)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("size", [(5, 4), (17, 7), (30, 31), (9, 15)])
def test_lanczos_uint8_matches_torch_exactly(torch, size):
    img = (np.random.default_rng(5).random((1, 3, 17, 15)) * 255).astype(np.uint8)

    def run(lib):
        y = lib.nn.functional.interpolate(lib.tensor(img), size=size, mode="lanczos",
                                          antialias=True)
        return str(y.dtype), y.numpy()
    got, want = run(tg), run(torch)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_lanczos_gradient_and_grad_fn_match_torch(torch):
    def run(lib):
        x = lib.tensor(_IMAGE, requires_grad=True)
        y = lib.nn.functional.interpolate(x, size=(5, 7), mode="lanczos", antialias=True)
        (y ** 2).sum().backward()
        return type(y.grad_fn).__name__, x.grad.numpy()
    got, want = run(tg), run(torch)
    assert got[0] == want[0] == "UpsampleLanczos2DAaBackward0"
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-13)


def test_lanczos_gradient_is_finite_differences(gradcheck):
    rng = np.random.default_rng(7)
    for size in [(3, 4), (9, 2)]:
        gradcheck(lambda x: tg.nn.functional.interpolate(x, size=size, mode="lanczos",
                                                         antialias=True) ** 2,
                  rng.standard_normal((1, 2, 6, 5)))


def _lanczos_errors(lib):
    F = lib.nn.functional
    x = lib.ones(1, 1, 6, 6)
    calls = [lambda: F.interpolate(x, size=3, mode="lanczos"),
             lambda: F.interpolate(x, size=3, mode="lanczos", antialias=True, align_corners=True),
             lambda: tuple(F.interpolate(x, size=3, mode="lanczos", antialias=True,
                                         align_corners=False).shape),
             lambda: F.interpolate(lib.ones(1, 2, 4), size=2, mode="lanczos"),
             lambda: F.interpolate(lib.ones(1, 2, 4), size=2, mode="lanczos", antialias=True),
             lambda: F.interpolate(lib.ones(1, 1, 2, 3, 4), size=2, mode="lanczos"),
             lambda: F.interpolate(lib.ones(1, 0, 4, 4), size=2, mode="lanczos", antialias=True),
             lambda: repr(lib.nn.Upsample(scale_factor=0.5, mode="lanczos"))]
    return [_outcome(c) for c in calls]


def test_lanczos_errors_match_torch(torch):
    assert _lanczos_errors(tg) == _lanczos_errors(torch)


# -- the antialiased kernels' dtypes: PyTorch computes their windows in float32/float64 or uint8 --
# -- only, and only when an axis changes size (float16 was resampled silently, int64 refused -----
# -- with the plain kernel's message even when nothing was resampled) -----------------------------

def _antialias_dtypes(lib):
    out = []
    for dtype in ["float16", "int64", "int32", "bool"]:
        x = lib.ones(1, 1, 6, 6, dtype=getattr(lib, dtype))
        for mode in ["bilinear", "bicubic", "lanczos"]:
            for size in [(6, 6), (6, 3), (12, 12)]:
                out.append(_outcome(lambda: str(lib.nn.functional.interpolate(
                    x, size=size, mode=mode, antialias=True).dtype)))
    return out


def test_antialias_dtypes_match_torch(torch):
    assert _antialias_dtypes(tg) == _antialias_dtypes(torch)
