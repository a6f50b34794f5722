"""Differentiable geometry and rendering idioms (camera models, rotations, SDFs, rasterisation,
point clouds) checked against PyTorch: the differences the proxy corpus of that domain found."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")

_INPLACE = "modified by an inplace operation"


def _points(lib, rows):
    return lib.linspace(-1, 1, rows * 3, dtype=lib.float64).reshape(rows, 3).requires_grad_()


_DISTANCES = {
    "cdist p=2": lambda lib, x, y: lib.cdist(x, y),
    "cdist p=1": lambda lib, x, y: lib.cdist(x, y, p=1),
    "cdist p=inf": lambda lib, x, y: lib.cdist(x, y, p=float("inf")),
    "cdist mm path": lambda lib, x, y: lib.cdist(x, y, compute_mode="use_mm_for_euclid_dist"),
    "pdist": lambda lib, x, y: lib.nn.functional.pdist(x),
}


@pytest.mark.parametrize("name", list(_DISTANCES))
@pytest.mark.parametrize("changed", ["x", "y"])
def test_distance_input_changed_in_place_before_backward(name, changed):
    # cdist's / pdist's kernel node saves its inputs: an in-place change (an ICP loop updating
    # its points under no_grad) before backward raises in PyTorch; the composed ops here had
    # returned the gradient at the old points
    outcomes = []
    for lib in (torch, tg):
        x, y = _points(lib, 4), lib.eye(3, dtype=lib.float64, requires_grad=True)
        d = _DISTANCES[name](lib, x, y)
        with lib.no_grad():
            (x if changed == "x" else y).mul_(2)
        try:
            d.sum().backward()
            outcomes.append(("ok", x.grad.numpy().copy()))
        except RuntimeError as e:
            assert _INPLACE in str(e)
            outcomes.append(("raised", None))
    assert outcomes[0][0] == outcomes[1][0]
    if outcomes[0][0] == "ok":
        np.testing.assert_allclose(outcomes[1][1], outcomes[0][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(_DISTANCES))
def test_distance_gradients_unchanged_by_the_saved_inputs(name):
    grads = []
    for lib in (torch, tg):
        x, y = _points(lib, 5), lib.eye(3, dtype=lib.float64, requires_grad=True) * 0.5
        y.retain_grad()
        _DISTANCES[name](lib, x, y).pow(2).sum().backward()
        grads.append((x.grad.numpy(), None if y.grad is None else y.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12, atol=1e-12)
    if grads[0][1] is not None:
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12, atol=1e-12)
