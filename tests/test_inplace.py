"""In-place ops: leaf rules, recorded writes on non-leaves, and version-counter safety."""
import numpy as np
import pytest

import tapegrad as tg

F64 = tg.float64


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    for write in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.fill_(3),
                  lambda: w.__iadd__(1), lambda: w.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation."):
            write()
    assert w.tolist() == [1.0, 2.0]


def test_sgd_update_idiom_under_no_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with tg.no_grad():
        w -= 0.1 * w.grad
        w[0] = 0.5
    assert w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 1.6], rtol=1e-6)


def test_inplace_on_plain_tensors_and_dtype_rules():
    t = tg.tensor([1, 2, 3])
    t += 1
    t.mul_(2)
    assert t.tolist() == [4, 6, 8] and t.dtype == tg.int64
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        t += 0.5
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the "
                                           "broadcast shape \\[2, 3\\]"):
        t.add_(tg.ones(2, 3, dtype=tg.int64))
    f = tg.zeros(2, 2)
    f[0] = tg.tensor([1.0, 2.0])
    f[1, 1] = 7
    f.copy_(f * 2)
    assert f.tolist() == [[2.0, 4.0], [0.0, 14.0]]
    f.zero_()
    assert f.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_recorded_inplace_on_non_leaf_gives_correct_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    y.mul_(x)                      # y = 2x * x
    y += 1
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_recorded_setitem_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    v = tg.tensor([10.0], dtype=F64, requires_grad=True)
    y = x * 3
    y[1] = v * v                  # overwritten element: no gradient to x there
    assert type(y.grad_fn).__name__ == "CopySlices"
    (y * tg.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 0.0, 9.0])
    np.testing.assert_allclose(v.grad.numpy(), [2 * 10.0 * 2.0])


def test_modifying_a_saved_value_raises_instead_of_a_wrong_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y                      # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                           "computation has been modified by an inplace "
                                           "operation"):
        z.sum().backward()


def test_modifying_a_saved_output_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()                    # saves its output
    with tg.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_modifying_a_leaf_through_detach_is_seen():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x                      # saves x
    x.detach().add_(1)             # shares x's storage and version counter
    assert x._version_value == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_unrelated_inplace_writes_do_not_disturb_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3                      # saves only the constant
    with tg.no_grad():
        x.mul_(10)                 # x's value is not needed by y's backward
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_setitem_shape_and_index_errors():
    t = tg.zeros(3)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        t[0:2] = tg.ones(3)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        t[5] = 1.0


def test_views_share_the_version_counter():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.exp()                    # saves its output
    v = y.reshape(-1)              # a view of y's storage
    row = y[0]                     # another view
    with tg.no_grad():
        v.mul_(2)
    assert y._version_value == v._version_value == row._version_value == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_through_a_view_of_a_tensor_requiring_grad_is_refused():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being "
                                           "used in an in-place operation."):
        x[:2].add_(1)
    y = x * 2
    with pytest.raises(RuntimeError, match="view of a tensor that requires grad"):
        y.t()[0].mul_(2) if False else y[1:].mul_(2)
    assert y.detach().tolist() == [2.0, 4.0, 6.0]
