"""binary_op's short path (a float tensor of the plain Tensor class with a Python number, or two of
one dtype and shape) against its general path (binary_general), which a Parameter, another
layout or a promotion takes: the same bits forward and backward, and every check still made."""
import operator

import numpy as np
import pytest

import tapegrad as tg

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


def pair(dtype, n):
    rng = np.random.default_rng(n)
    x = rng.uniform(0.1, 3.0, n).astype(dtype)
    y = rng.uniform(0.1, 3.0, n).astype(dtype)
    return x, y


def run(op, make, x, y, number):
    """op's value and gradients with tensors made by `make` (the short or the general path)."""
    a = make(x)
    b = number if number is not None else make(y)
    out = op(a, b)
    rev = op(number, a) if number is not None else op(b, a)
    (out.sum() + rev.sum()).backward()
    grads = [a.grad.numpy().copy()] + ([] if number is not None else [b.grad.numpy().copy()])
    return out.detach().numpy(), rev.detach().numpy(), grads


def plain(v):
    return tg.tensor(v, requires_grad=True)


def parameter(v):                           # another tensor class: the general path
    return tg.nn.Parameter(tg.tensor(v))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 3, 16, 1000])
@pytest.mark.parametrize("number", [None, 1.5, 2, -0.75])
@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_short_and_general_paths_give_the_same_bits(op, number, n, dtype):
    x, y = pair(dtype, n)
    short = run(op, plain, x, y, number)
    general = run(op, parameter, x, y, number)
    for s, g in zip(short[:2], general[:2]):
        assert s.dtype == g.dtype
        np.testing.assert_array_equal(s, g)
    for s, g in zip(short[2], general[2]):
        np.testing.assert_array_equal(s, g)


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_a_transposed_operand_gives_the_values_of_its_contiguous_copy(op):
    x, y = pair("float64", 12)
    a, b = tg.tensor(x.reshape(3, 4)).t(), tg.tensor(y.reshape(4, 3))
    np.testing.assert_array_equal(op(a, b).numpy(), op(a.contiguous(), b).numpy())
    assert op(a, a).stride() == a.stride()         # TensorIterator's layout of the general path


def test_the_checks_of_the_general_path_still_run():
    torch = pytest.importorskip("torch")
    x = tg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
        x - True
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
        x - tg.tensor([True, False])
    with pytest.raises(RuntimeError, match="must match the size"):
        x + tg.tensor([1.0, 2.0, 3.0])
    assert (x * 2).dtype == tg.float32 and (tg.tensor([1, 2]) * 1.5).dtype == tg.float32
    assert (x.double() + x).dtype == tg.float64        # promotion of two float dtypes
    assert (tg.tensor([1, 2]) / 2).tolist() == torch.tensor([1, 2]).div(2).tolist()
    assert (x + 1j).dtype == tg.complex64
    with pytest.raises(RuntimeError, match="Tensor on device meta is not on the expected device"):
        x + tg.empty(2, device="meta")                  # the meta operand reaches meta_entry
    with pytest.raises(RuntimeError, match="Tensor on device meta is not on the expected device"):
        torch.tensor([1.0, 2.0]) + torch.empty(2, device="meta")
