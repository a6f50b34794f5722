"""torch.nn.grad (F.grad): a convolution's input and weight gradients from its output gradient,
and the small top-level names scripts use beside it (cfloat/cdouble, OutOfMemoryError,
GradScaler)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import gradcheck

CASES = [  # (dims, stride, padding, dilation, groups)
    (1, 1, 0, 1, 1), (1, 2, 1, 1, 2), (2, 1, 0, 1, 1), (2, 2, 1, 1, 1), (2, 1, 2, 2, 2),
    (2, (2, 1), (1, 0), (1, 2), 1), (3, 1, 1, 1, 1), (3, 2, 0, 1, 2)]


def _shapes(nd, stride, padding, dilation, groups, small=False):
    input_shape = (1, 2) + (5,) * nd if small else (2, 4) + (7,) * nd
    weight_shape = (2, input_shape[1] // groups) + (2,) * nd if small \
        else (6, 4 // groups) + (3,) * nd
    x = np.zeros(input_shape)
    out = getattr(F, f"conv{nd}d")(tg.tensor(x), tg.zeros(weight_shape, dtype=tg.float64), None,
                                   stride, padding, dilation, groups)
    return input_shape, weight_shape, tuple(out.shape)


@pytest.mark.parametrize("case", CASES)
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    nd, *args = case
    input_shape, weight_shape, output_shape = _shapes(nd, *args)
    rng = np.random.default_rng(nd)
    x, w, g = (rng.standard_normal(s) for s in (input_shape, weight_shape, output_shape))
    for name, first, size in (("input", w, input_shape), ("weight", x, weight_shape)):
        want = getattr(torch.nn.grad, f"conv{nd}d_{name}")
        got = getattr(tg.nn.grad, f"conv{nd}d_{name}")
        if name == "input":
            expected = want(size, torch.tensor(first), torch.tensor(g), *args).numpy()
            actual = got(size, tg.tensor(first), tg.tensor(g), *args).numpy()
        else:
            expected = want(torch.tensor(first), size, torch.tensor(g), *args).numpy()
            actual = got(tg.tensor(first), size, tg.tensor(g), *args).numpy()
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES[::2])
def test_differentiable_in_the_other_operands(case):
    nd, *args = case
    input_shape, weight_shape, output_shape = _shapes(nd, *args, small=True)
    gen = tg.Generator().manual_seed(nd)

    def leaf(shape):
        return tg.randn(shape, dtype=tg.float64, generator=gen).requires_grad_()

    w, g, x = leaf(weight_shape), leaf(output_shape), leaf(input_shape)
    grad = getattr(tg.nn.grad, f"conv{nd}d_input")
    assert gradcheck(lambda w, g: grad(input_shape, w, g, *args), (w, g))
    grad = getattr(tg.nn.grad, f"conv{nd}d_weight")
    assert gradcheck(lambda x, g: grad(x, weight_shape, g, *args), (x, g))
    assert not grad(x.detach(), weight_shape, g.detach(), *args).requires_grad


def test_is_also_functional_grad():
    assert F.grad is tg.nn.grad


@pytest.mark.parametrize("grad_shape, message", [
    ((2, 4, 3), "same number of dimensions, but got: 4 and 3"),
    ((2, 5, 3, 3), "tensor.size[1] == 4 but got: dimension 4 and tensor.size[1] = 5"),
    ((2, 4, 3, 2), "tensor.size[3] == 3 but got: dimension 4 and tensor.size[3] = 2"),
    # PyTorch does not check the batch size and computes from past the smaller tensor.
    ((3, 4, 3, 3), "tensor.size[0] == 2 but got: dimension 4 and tensor.size[0] = 3")])
def test_grad_output_shape_is_checked(grad_shape, message):
    w = tg.randn(4, 3, 3, 3, dtype=tg.float64)
    with pytest.raises(RuntimeError) as info:
        tg.nn.grad.conv2d_input((2, 3, 6, 6), w, tg.randn(grad_shape, dtype=tg.float64),
                                stride=2, padding=1)
    assert message in str(info.value)
    with pytest.raises(RuntimeError) as info:
        tg.nn.grad.conv2d_weight(tg.randn(2, 3, 6, 6, dtype=tg.float64), (4, 3, 3, 3),
                                 tg.randn(grad_shape, dtype=tg.float64), stride=2, padding=1)
    assert message in str(info.value)


def test_unbatched_size_is_refused_as_torch():
    with pytest.raises(RuntimeError, match=r"Expected 4-dimensional input for 4-dimensional "
                       r"weight \[4, 3, 3, 3\], but got 3-dimensional input of size \[3, 6, 6\]"):
        tg.nn.grad.conv2d_input((3, 6, 6), tg.randn(4, 3, 3, 3), tg.randn(2, 4, 4, 4))
    with pytest.raises(RuntimeError, match="integers for 'padding'"):
        tg.nn.grad.conv2d_input((2, 3, 6, 6), tg.randn(4, 3, 3, 3), tg.randn(2, 4, 6, 6),
                                padding="same")


def test_complex_conversion_methods():
    x = tg.tensor([1.5, -2.0], requires_grad=True)
    c = x.cfloat()
    assert c.dtype == tg.complex64 and c.cfloat() is c
    assert x.double().cdouble().dtype == tg.complex128
    np.testing.assert_array_equal(c.detach().numpy(), np.array([1.5, -2.0], dtype=np.complex64))
    (c * (2 - 3j)).real.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="complex32"):
        x.chalf()


def test_device_error_names():
    assert tg.OutOfMemoryError is tg.cuda.OutOfMemoryError
    assert issubclass(tg.OutOfMemoryError, RuntimeError)
    assert issubclass(tg.AcceleratorError, RuntimeError)
    assert tg.GradScaler is tg.amp.GradScaler
