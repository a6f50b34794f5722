"""Held-out script idioms found by the proxys run (PyTorch is the oracle)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("library", ["torch", "tapegrad"])
def test_stdlib_submodules_reachable_after_import(library):
    # PyTorch's spatial-transformer tutorial writes `import urllib` and then calls
    # `urllib.request.build_opener()`, which works because `import torch` loaded urllib.request
    # (tapegrad imports it on that first read: tapegrad/_stdlib_attributes.py).
    if library == "torch":
        pytest.importorskip("torch")
    code = (f"import {library}\n"
            "import urllib, importlib\n"
            "opener = urllib.request.build_opener()\n"
            "print(type(opener).__name__, callable(importlib.metadata.version))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["OpenerDirector", "True"]


def _identity_warp_theta_grad(lib, align_corners):
    import numpy as np
    image = lib.tensor(np.random.RandomState(0).rand(2, 1, 7, 6), dtype=lib.float32)
    theta = lib.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2, requires_grad=True)
    grid = lib.nn.functional.affine_grid(theta, (2, 1, 7, 6), align_corners=align_corners)
    out = lib.nn.functional.grid_sample(image, grid, align_corners=align_corners)
    (out * lib.arange(42.0).view(7, 6)).sum().backward()
    return grid.detach().numpy(), theta.grad.numpy()


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_rounds_as_pytorch_so_identity_warp_gradient_matches(align_corners):
    # An identity theta samples at the pixel centres, where bilinear's gradient with respect to
    # the grid depends on which side of the centre the coordinate rounds; PyTorch's base grid
    # has -0.24999999 where exact arithmetic gives -0.25, and the theta gradient of an
    # identity-initialised spatial transformer differed in sign (silently).
    import numpy as np
    import tapegrad
    torch = pytest.importorskip("torch")
    grid_t, grad_t = _identity_warp_theta_grad(torch, align_corners)
    grid_g, grad_g = _identity_warp_theta_grad(tapegrad, align_corners)
    np.testing.assert_array_equal(grid_g, grid_t)
    np.testing.assert_allclose(grad_g, grad_t, rtol=1e-5, atol=1e-4)


def _affine_grid_reused(lib):
    theta = lib.tensor([[[0.9, -0.3, 0.2], [0.4, 0.8, -0.1]]], dtype=lib.float64, requires_grad=True)
    image = lib.arange(20.0, dtype=lib.float64).view(1, 1, 4, 5)
    grid = lib.nn.functional.affine_grid(theta, (1, 1, 4, 5), align_corners=False)
    grads = []
    for padding in ("zeros", "border"):   # one grid, two backward passes, no retain_graph
        out = lib.nn.functional.grid_sample(image, grid, padding_mode=padding, align_corners=False)
        grads.append(lib.autograd.grad(out.pow(2).sum(), theta)[0].numpy())
    # create_graph through affine_grid: the theta gradient of a function of the grid alone
    g, = lib.autograd.grad(grid.pow(3).sum(), theta, create_graph=True)
    grads.append(lib.autograd.grad(g.sum(), theta)[0].numpy())
    return grads


def test_affine_grid_backpropagates_twice_without_retain_graph():
    # PyTorch's affine_grid saves no tensor, so a grid sampled several ways can be
    # backpropagated through once per sample; tapegrad raised "backward through the graph a
    # second time".
    import numpy as np
    import tapegrad
    torch = pytest.importorskip("torch")
    for got, want in zip(_affine_grid_reused(tapegrad), _affine_grid_reused(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
