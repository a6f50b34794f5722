"""Bad input raises PyTorch's exception types with messages that name what is wrong."""
import numpy as np
import pytest

import tapegrad as tg


def test_backward_of_non_scalar_needs_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_backward_gradient_shape_mismatch_names_both_shapes():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                                           r"torch.Size\(\[3\]\) and output\[0\] has a shape of "
                                           r"torch.Size\(\[2\]\)"):
        (x * 2).backward(tg.ones(3))


def test_second_backward_raises_unless_retain_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_requires_grad_on_non_leaf_and_int_tensors():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables. If you want"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can "
                                           "require gradients"):
        tg.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tg.tensor([1, 2]).requires_grad_()


def test_retain_grad_requires_grad():
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tg.tensor([1.0]).retain_grad()


def test_broadcast_mismatch_names_sizes_and_dim():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 0"):
        tg.tensor([1.0, 2.0]) + tg.tensor([1.0, 2.0, 3.0])


def test_numpy_refuses_when_requires_grad():
    x = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0]


def test_item_len_bool_on_wrong_sizes():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tg.tensor([1.0, 2.0]).item()
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tg.tensor(1.0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is "
                                           "ambiguous"):
        bool(tg.tensor([1.0, 2.0]))


def test_mean_of_integers_names_the_dtype():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype.*Got: Long"):
        tg.tensor([1, 2]).mean()


def test_dims_out_of_range():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        tg.ones(2, 3).sum(2)


def test_index_errors():
    x = tg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[tg.tensor([0.0])]


def test_failed_op_leaves_the_tape_consistent():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    live = tg._core.tape().live_records
    with pytest.raises(RuntimeError):
        x + tg.ones(3)
    assert tg._core.tape().live_records <= live + 1     # at most x's LEAF record
    y = (x * 3).sum()
    y.backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_setter_validates():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[3\\]'"):
        x.grad = tg.ones(3)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = np.ones(2)
    x.grad = tg.ones(2)
    x.grad = None
    assert x.grad is None


def test_integer_negative_power():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tg.tensor([2, 3]) ** -1
