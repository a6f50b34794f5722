"""Held-out script idioms found by the proxys run (PyTorch is the oracle)."""
import subprocess
import sys

import pytest


@pytest.mark.parametrize("library", ["torch", "tapegrad"])
def test_stdlib_submodules_reachable_after_import(library):
    # PyTorch's spatial-transformer tutorial writes `import urllib` and then calls
    # `urllib.request.build_opener()`, which works because `import torch` loaded urllib.request.
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
