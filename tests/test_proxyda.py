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


def _image(lib):
    return lib.linspace(-1, 1, 32, dtype=lib.float64).reshape(1, 2, 4, 4)


def _grid(lib):
    return lib.linspace(-0.9, 0.9, 18, dtype=lib.float64).reshape(1, 3, 3, 2)


def _volume(lib):
    return lib.linspace(-1, 1, 54, dtype=lib.float64).reshape(1, 2, 3, 3, 3)


def _grid3d(lib):
    return lib.linspace(-0.9, 0.9, 12, dtype=lib.float64).reshape(1, 1, 2, 2, 3)


def _rows(lib):
    return lib.linspace(-1, 1, 12, dtype=lib.float64).reshape(4, 3)


def _weights(lib):
    return lib.linspace(0.2, 0.8, 12, dtype=lib.float64).reshape(4, 3)


# op, the makers of its inputs: PyTorch's node for each saves inputs the composition here did
# not keep (lerp's input and end only when the weight requires grad)
_SAVING_OPS = {
    "grid_sample bilinear": (lambda lib, i, g: lib.nn.functional.grid_sample(
        i, g, align_corners=False), (_image, _grid)),
    "grid_sample nearest": (lambda lib, i, g: lib.nn.functional.grid_sample(
        i, g, mode="nearest", align_corners=False), (_image, _grid)),
    "grid_sample bicubic": (lambda lib, i, g: lib.nn.functional.grid_sample(
        i, g, mode="bicubic", padding_mode="border", align_corners=True), (_image, _grid)),
    "grid_sample 3d": (lambda lib, i, g: lib.nn.functional.grid_sample(
        i, g, padding_mode="reflection", align_corners=True), (_volume, _grid3d)),
    "dist": (lambda lib, a, b: lib.dist(a, b), (_rows, _weights)),
    "dist p=1": (lambda lib, a, b: lib.dist(a, b, 1), (_rows, _weights)),
    "lerp": (lambda lib, a, b, w: lib.lerp(a, b, w), (_rows, _weights, _weights)),
    "matrix_exp": (lambda lib, m: lib.matrix_exp(m + 2 * lib.eye(3, dtype=lib.float64)),
                   (lambda lib: lib.linspace(0, 0.8, 9, dtype=lib.float64).reshape(3, 3),)),
}


def _requires_grad_patterns(count):
    return [tuple(bool(mask >> k & 1) for k in range(count)) for mask in range(1, 2 ** count)]


@pytest.mark.parametrize("name", list(_SAVING_OPS))
def test_input_written_in_place_before_backward_raises_as_torch(name):
    fn, makers = _SAVING_OPS[name]
    for requires in _requires_grad_patterns(len(makers)):
        for written in range(len(makers)):
            outcomes = []
            for lib in (torch, tg):
                inputs = [make(lib).requires_grad_(r) for make, r in zip(makers, requires)]
                out = fn(lib, *inputs)
                with lib.no_grad():
                    inputs[written].add_(0.01)
                try:
                    out.sum().backward()
                    outcomes.append("computes")
                except RuntimeError as e:
                    assert _INPLACE in str(e)
                    outcomes.append("raises")
            assert outcomes[1] == outcomes[0], (requires, written)


@pytest.mark.parametrize("name", list(_SAVING_OPS))
def test_gradients_unchanged_by_the_version_guards(name):
    fn, makers = _SAVING_OPS[name]
    grads = []
    for lib in (torch, tg):
        inputs = [make(lib).requires_grad_() for make in makers]
        fn(lib, *inputs).pow(2).sum().backward()
        grads.append([x.grad.numpy() for x in inputs])
    for have, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12)


def test_lerp_half_weight_tensor_still_differentiable():
    got = []
    for lib in (torch, tg):
        a = lib.tensor([0.0, 1.0, 2.0], dtype=lib.float16, requires_grad=True)
        b = lib.tensor([4.0, 3.0, 2.5], dtype=lib.float16, requires_grad=True)
        w = lib.tensor([0.25, 0.5, 0.75], dtype=lib.float16, requires_grad=True)
        out = lib.lerp(a, b, w)
        out.sum().backward()
        got.append([t.numpy().astype(np.float64) for t in (out.detach(), a.grad, b.grad, w.grad)])
    for have, want in zip(*got):
        np.testing.assert_array_equal(have, want)


@pytest.mark.parametrize("written", ["input", "mask"])
def test_masked_select_input_written_before_backward_raises_as_torch(written):
    # MaskedSelectBackward0 saves self as well as the mask (pts.masked_select(valid) of points
    # moved in place afterwards)
    outcomes = []
    for lib in (torch, tg):
        x = lib.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        mask = lib.tensor([True, False, True])
        out = lib.masked_select(x, mask)
        with lib.no_grad():
            x.mul_(2) if written == "input" else mask.logical_not_()
        try:
            out.sum().backward()
            outcomes.append("computes")
        except RuntimeError as e:
            assert _INPLACE in str(e)
            outcomes.append("raises")
    assert outcomes[1] == outcomes[0] == "raises"


def test_soft_margin_loss_refuses_a_target_that_requires_grad():
    for lib in (torch, tg):
        target = lib.tensor([1.0, -1.0, 1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                               "'target'"):
            lib.nn.functional.soft_margin_loss(lib.zeros(3, requires_grad=True), target)
        with lib.no_grad():                     # (only when recording)
            loss = lib.nn.functional.soft_margin_loss(lib.zeros(3), target)
        assert abs(loss.item() - np.log(2.0)) < 1e-6
