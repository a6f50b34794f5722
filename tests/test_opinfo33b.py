"""Regression tests for differences found by tools/opinfo_sweep.py's reference-input and complex
runs (session 33), each case written out by hand."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


# -- Tensor methods called through the class ------------------------------------------------------

@pytest.mark.parametrize("name", ["add", "mul", "sub", "add_", "clamp_min"])
def test_tensor_method_through_class_refuses_a_self_that_is_no_tensor(name):
    # torch.Tensor.add(2.0, t) raises; tapegrad computed 2.0 + t (SILENT)
    for lib in (torch, tapegrad):
        t = lib.ones(2)
        with pytest.raises(TypeError, match="descriptor '%s' for 'torch._C.TensorBase' objects "
                                            "doesn't apply to a 'float' object" % name):
            getattr(lib.Tensor, name)(2.0, t)


def test_tensor_method_through_class_without_arguments():
    for lib in (torch, tapegrad):
        with pytest.raises(TypeError, match=r"unbound method TensorBase.add\(\) needs an argument"):
            lib.Tensor.add()


def test_tensor_method_through_class_on_a_tensor_still_works():
    t = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    out = tapegrad.Tensor.mul(t, 3.0)
    out.sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(t.grad.numpy(), [3.0, 3.0])


# -- more than 64 dims ------------------------------------------------------------------------------

def test_torch_refuses_65_dims_with_runtime_error():
    # what PyTorch says where it refuses them (its reductions): tapegrad's phrase and type
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        torch.ones([1] * 65).sum(-1)


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros([1] * 65),
    lambda lib: lib.ones(*([1] * 65)),
    lambda lib: lib.full([1] * 65, 2.0),
    lambda lib: lib.empty([1] * 65),
    lambda lib: lib.rand([1] * 65),
    lambda lib: lib.ones(1).new_zeros([1] * 65),
])
def test_factories_refuse_65_dims(make):
    # tapegrad's storage (numpy) holds at most 64 dims: numpy's ValueError leaked before
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        make(tapegrad)


@pytest.mark.parametrize("op", [
    lambda x: x.reshape([1] * 65),
    lambda x: x.view([1] * 65),
    lambda x: x.reshape([1] * 64).unsqueeze(0),
    lambda x: x.expand([1] * 65),
    lambda x: x.repeat([1] * 65),
])
def test_shape_ops_refuse_65_dims(op):
    x = tapegrad.ones(1)
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        op(x)


def test_64_dims_still_work():
    x = tapegrad.ones(1, requires_grad=True)
    y = x.reshape([1] * 63).unsqueeze(0)
    assert y.dim() == 64 and tapegrad.zeros([1] * 64).dim() == 64
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0])
