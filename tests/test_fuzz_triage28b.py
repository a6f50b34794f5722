"""Regressions of the session-28 fuzz run of fuzz14 (fuzz13's open classes; programs 62678468-,
60667479-; surface 60792143-).

Each test compares with PyTorch (the `torch` fixture skips cleanly without it).
"""
import numpy as np
import pytest

import tapegrad as tg

_INF = float("inf")


# -- hardswish / logsigmoid with an infinite upstream gradient (fuzz13's open class) -----------------
# Composed of several ops, their gradients met the partial derivatives separately (inf - inf,
# inf * 0: NaN) where PyTorch's kernels give grad * f'(x), +-inf, or their mask's 0.  Both are now
# one node with PyTorch's backward, whose own derivatives are derivatives.yaml's.  (hardswish's
# gradient at a NaN input differs inside PyTorch itself: not compared here.)

_X = [-1.0, 2.0, -3.0, 0.0, -0.0, 25.0, -30.0, _INF, -_INF, 1e-8, 0.7, 3.0, -2.9, 40.0, -40.0,
      -1.5]
_UP = [_INF, -_INF, _INF, 1.0, -2.0, 0.5, _INF, 1.0, 1.0, -_INF, 0.0, _INF, float("nan"), _INF,
       -_INF, 1.0]


def _gradients(lib, name, dtype, inplace):
    dtype = getattr(lib, dtype)
    x = lib.tensor(_X, dtype=dtype, requires_grad=True)
    f = getattr(lib.nn.functional, name)
    y = f(x * 1, inplace=True) if inplace else f(x)
    g, = lib.autograd.grad(y, [x], lib.tensor(_UP, dtype=dtype), create_graph=True)
    w = lib.tensor(np.linspace(-1, 1, len(_X)), dtype=dtype)
    g2, = lib.autograd.grad((g * w).sum(), [x])
    leaf = x.detach().requires_grad_()
    f(leaf).backward(lib.tensor(_UP, dtype=dtype))
    return (type(y.grad_fn).__name__, type(g.grad_fn).__name__, y.detach().numpy(),
            g.detach().numpy(), g2.numpy(), leaf.grad.numpy())


@pytest.mark.parametrize("name, inplace", [("hardswish", False), ("hardswish", True),
                                           ("logsigmoid", False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_gradients_with_infinite_upstream_match_torch(torch, name, dtype, inplace):
    got = _gradients(tg, name, dtype, inplace)
    expected = _gradients(torch, name, dtype, inplace)
    assert got[:2] == expected[:2]
    for a, b in zip(got[2:6], expected[2:6]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)
        assert np.array_equal(np.isnan(a), np.isnan(b))


def test_hardswish_and_logsigmoid_repro_of_fuzz13(torch):
    for name, expected in [("hardswish", [_INF, -_INF, 0.0]), ("logsigmoid", [_INF, -_INF, _INF])]:
        for lib in (tg, torch):
            x = lib.tensor([-1., 2., -3.], requires_grad=True)
            getattr(lib.nn.functional, name)(x).backward(lib.tensor([_INF, -_INF, _INF]))
            assert x.grad.tolist() == expected


@pytest.mark.parametrize("name", ["hardswish", "logsigmoid"])
def test_activation_backward_after_writing_its_input_raises_as_torch(torch, name):
    # PyTorch's HardswishBackward0 and LogSigmoidBackward0 save self
    for lib in (tg, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        h = x * 2
        y = getattr(lib.nn.functional, name)(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("name", ["hardswish", "logsigmoid"])
def test_activation_float16_gradients_match_torch(torch, name):
    def run(lib):
        x = lib.tensor(_X[:-4], dtype=lib.float16, requires_grad=True)
        y = getattr(lib.nn.functional, name)(x)
        y.backward(lib.tensor(_UP[:-4], dtype=lib.float16))
        return y.dtype, y.detach().float().numpy(), x.grad.float().numpy()
    got, expected = run(tg), run(torch)
    assert str(got[0]) == str(expected[0])
    for a, b in zip(got[1:], expected[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)
        assert np.array_equal(np.isnan(a), np.isnan(b))


@pytest.mark.parametrize("name", ["hardswish", "logsigmoid"])
def test_activation_second_derivatives_match_finite_differences(name):
    x = tg.tensor([-3.5, -2.0, -0.4, 0.3, 1.7, 2.5, 4.0], dtype=tg.float64, requires_grad=True)
    up = tg.tensor([0.3, -1.2, 0.8, 2.0, -0.5, 1.1, 0.7], dtype=tg.float64, requires_grad=True)
    f = getattr(tg.nn.functional, name)
    assert tg.autograd.gradcheck(lambda t: f(t), (x,))
    assert tg.autograd.gradgradcheck(lambda t: f(t), (x,), (up,))


# -- complex z ** -2 (fuzz13's open class: (-3e200j) ** -2 was nan+nanj, PyTorch -0-0j) --------------
# PyTorch's kernel computes it as 1 / (z * z), a complex division; numpy's power divided its own
# way.  (Last bits of ordinary values differ inside PyTorch itself, between its vectorised body
# and its scalar tail: one-element tensors here, its scalar path.)

@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("value", [-3e200j, 3e200 - 1e100j, 1e-200 + 1e-200j, 0j,
                                   complex(-_INF, 0.7), 1 + 2j])
@pytest.mark.parametrize("exponent", [-2, -1])
def test_complex_negative_whole_power_of_one_element_matches_torch(torch, dtype, value, exponent):
    def run(lib):
        z = lib.tensor([value], dtype=getattr(lib, dtype), requires_grad=True)
        y = z ** exponent
        y.backward(lib.ones_like(y))
        return y.detach().numpy(), z.grad.numpy()
    got, expected = run(tg), run(torch)
    for a, b in zip(got, expected):
        if value == 1 + 2j:
            np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            assert np.array_equal(a.view(a.real.dtype), b.view(b.real.dtype), equal_nan=True), \
                (a, b)


# -- remainder / fmod: the gradient for `other` under create_graph (62683198) ----------------------
# PyTorch's -grad * floor(self / other) reads other through floor (zero derivatives), so the
# gradient requires grad even for a constant upstream gradient and a second grad is zeros; here
# the quotient was a constant, the gradient did not require grad and the second grad was None.

@pytest.mark.parametrize("op", ["remainder", "fmod"])
@pytest.mark.parametrize("self_value", [0, 2.0, [2.0, 3.0, 4.0]])
def test_remainder_other_gradient_requires_grad_under_create_graph_as_torch(torch, op, self_value):
    def run(lib):
        other = lib.tensor([1.5, -0.8, 0.0], dtype=lib.float64, requires_grad=True)
        self = lib.tensor(self_value) if self_value == 0 else lib.tensor(self_value,
                                                                          dtype=lib.float64)
        g, = lib.autograd.grad(getattr(lib, op)(self, other).sum(), [other], create_graph=True)
        g2, = lib.autograd.grad(g.sum(), [other], allow_unused=True)
        return g.requires_grad, g.detach().numpy(), None if g2 is None else g2.numpy()
    got, expected = run(tg), run(torch)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(np.signbit(got[1]), np.signbit(expected[1]))
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])
