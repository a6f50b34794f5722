"""F.affine_grid and F.grid_sample: every mode x padding mode x align_corners in 2-d (and the
trilinear/nearest 3-d ones) against torch for values and the gradients of input and grid; hand
values, central differences and errors without torch."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn import functional as F


def sample(lib, x, g, **kwargs):
    xt = lib.tensor(x, requires_grad=True)
    gt = lib.tensor(g, requires_grad=True)
    y = lib.nn.functional.grid_sample(xt, gt, **kwargs)
    w = lib.tensor(np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(x.dtype))
    (y * w).sum().backward()
    return y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()


CASES = [c for c in itertools.product((2, 3), ("bilinear", "nearest", "bicubic"),
                                      ("zeros", "border", "reflection"), (False, True))
         if not (c[0] == 3 and c[1] == "bicubic")]


@pytest.mark.parametrize("nd,mode,padding_mode,align_corners", CASES)
def test_grid_sample_matches_torch(torch, nd, mode, padding_mode, align_corners):
    rng = np.random.default_rng(nd * 7 + len(mode) + len(padding_mode))
    x = rng.standard_normal((2, 3) + (3, 4, 5)[-nd:])
    g = rng.uniform(-2.5, 2.5, (2,) + (4, 3, 6)[-nd:] + (nd,))
    kwargs = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    for ours, theirs in zip(sample(tg, x, g, **kwargs), sample(torch, x, g, **kwargs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_on_pixel_centres_and_edges(torch, mode, padding_mode):
    """Coordinates exactly on pixels and on the [-1, 1] edges (where floor, clip and reflection
    switch), float32."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    theta = np.tile(np.eye(2, 3), (2, 1, 1))
    theta[1] *= 1.5
    for align_corners in (False, True):
        g = torch.nn.functional.affine_grid(torch.tensor(theta), (2, 3, 4, 5),
                                            align_corners=align_corners).numpy()
        edges = [np.full((2, 4, 1, 2), v) for v in (1.0, -1.0, 0.5)]
        g = np.concatenate([g] + edges, 2).astype(np.float32)
        kwargs = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        for ours, theirs in zip(sample(tg, x, g, **kwargs), sample(torch, x, g, **kwargs)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 1, 4), (2, 1, 2, 3, 4)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(torch, size, align_corners):
    nd = len(size) - 2
    theta = np.random.default_rng(1).standard_normal((2, nd, nd + 1))
    ours, theirs = tg.tensor(theta, requires_grad=True), torch.tensor(theta, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the unit-size align_corners warning
        y = F.affine_grid(ours, size, align_corners=align_corners)
        t = torch.nn.functional.affine_grid(theirs, size, align_corners=align_corners)
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    (y ** 2).sum().backward()
    (t ** 2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


def test_identity_transform_reproduces_the_input():
    x = tg.arange(12.0).reshape(1, 1, 3, 4)
    for align_corners in (False, True):
        grid = F.affine_grid(tg.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 3, 4),
                             align_corners=align_corners)
        for mode in ("bilinear", "nearest", "bicubic"):
            out = F.grid_sample(x, grid, mode=mode, align_corners=align_corners)
            np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-5)


def test_bilinear_hand_value_and_gradcheck(gradcheck):
    x = tg.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    # the centre of a 2x2 image (align_corners=True: (0, 0) is halfway between all four)
    out = F.grid_sample(x, tg.tensor([[[[0.0, 0.0]]]]), align_corners=True)
    assert out.item() == pytest.approx(1.5)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 3, 4))
    g = rng.uniform(-1.1, 1.1, (1, 2, 3, 2))
    for padding_mode in ("zeros", "border", "reflection"):
        gradcheck(lambda a, b: F.grid_sample(a, b, padding_mode=padding_mode,
                                             align_corners=False), x, g)
    gradcheck(lambda a, b: F.grid_sample(a, b, mode="bicubic", align_corners=True), x, g)


def test_nearest_gives_the_grid_a_zero_gradient():
    grid = tg.zeros(1, 2, 2, 2, requires_grad=True)
    F.grid_sample(tg.ones(1, 1, 3, 3), grid, mode="nearest", align_corners=False).sum().backward()
    assert grid.grad is not None and not grid.grad.numpy().any()


def test_second_derivative_through_grid_sample():
    x = tg.randn(1, 1, 3, 3, dtype=tg.float64)
    grid = tg.rand(1, 2, 2, 2, dtype=tg.float64, requires_grad=True)
    y = F.grid_sample(x, grid * 2 - 1, align_corners=False).pow(2).sum()
    (g,) = tg.autograd.grad(y, grid, create_graph=True)
    g.sum().backward()
    assert grid.grad is not None


def test_errors_and_warning(torch):
    x, grid = tg.randn(2, 3, 4, 5), tg.zeros(2, 4, 5, 2)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.affine_grid(tg.zeros(2, 2, 3), (2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, grid, mode="foo", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or "):
        F.grid_sample(x, grid, padding_mode="foo", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, grid[:1], align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, grid[..., :1], align_corners=False)
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        F.grid_sample(x.int(), grid, align_corners=False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(x, grid.double(), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(tg.zeros(2, 2, 3), (2, 3, 4), align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(tg.zeros(2, 3, 3), (2, 3, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(tg.zeros(2, 2, 3, dtype=tg.int32), (2, 3, 4, 5), align_corners=False)
