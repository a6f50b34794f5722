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


# -- convolution argument checks ------------------------------------------------------------------

@pytest.mark.parametrize("fn,kw", [
    ("conv2d", {"stride": [2]}),
    ("conv2d", {"padding": [1]}),
    ("conv2d", {"dilation": [2]}),
    ("conv_transpose2d", {"stride": [2]}),
    ("conv3d", {"stride": [2]}),
])
def test_conv_one_element_list_is_expanded(fn, kw):
    # PyTorch expands a one-element stride/padding/dilation list as it does an int; tapegrad
    # raised "expected stride to be a single integer value or a list of 2 values"
    nd = 3 if fn.endswith("3d") else 2
    x = np.arange(2 * 5 ** nd, dtype=np.float64).reshape((1, 2) + (5,) * nd) / 10
    w = np.linspace(-1, 1, 2 * 2 * 3 ** nd).reshape((2, 2) + (3,) * nd)
    outs, grads = [], []
    for lib in (torch, tapegrad):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        out = getattr(lib.nn.functional, fn)(xt, wt, **kw)
        out.sum().backward()
        outs.append(out.detach().numpy())
        grads.append((xt.grad.numpy(), wt.grad.numpy()))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,kw,msg", [
    ("conv2d", {"stride": [-1]}, "non-positive stride is not supported"),
    ("conv3d", {"stride": [-1]}, "non-positive stride is not supported"),
    ("conv2d", {"padding": [-1]}, "negative padding is not supported"),
    ("conv2d", {"dilation": [-1]}, "^dilation should be greater than zero$"),
    ("conv3d", {"dilation": -1}, "^dilation should be greater than zero$"),
    ("conv2d", {"dilation": 0}, r"dilation should be greater than zero, but got \[0, 0\]"),
    ("conv2d", {"stride": -1, "padding": -1}, "negative padding is not supported"),
    ("conv2d", {"stride": -1, "dilation": -1}, "non-positive stride is not supported"),
    ("conv2d", {"padding": -1, "groups": 0}, "non-positive groups is not supported"),
    ("conv_transpose2d", {"stride": 0, "groups": 0}, "non-positive groups is not supported"),
])
def test_conv_argument_checks_in_pytorch_order(fn, kw, msg):
    nd = 3 if fn.endswith("3d") else 2
    for lib in (torch, tapegrad):
        x = lib.ones((1, 1) + (4,) * nd)
        w = lib.ones((1, 1) + (2,) * nd)
        with pytest.raises(RuntimeError, match=msg):
            getattr(lib.nn.functional, fn)(x, w, **kw)


def test_conv_same_padding_with_weight_of_other_rank():
    msg = (r"Expected 3-dimensional input for 3-dimensional weight\[1, 2, 2\], but got "
           r"4-dimensional input of size \[1, 1, 4, 3\] instead")
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=msg):
            lib.nn.functional.conv2d(lib.ones(1, 1, 4, 3), lib.ones(1, 2, 2), padding="same")


# -- norms, losses, adaptive pools: check order and words ---------------------------------------

def test_rms_norm_empty_normalized_shape():
    msg = "Expected normalized_shape to be at least 1-dimensional"
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=msg):
            lib.nn.functional.rms_norm(lib.ones(1, 2, 3), [])


def test_norm_modules_with_empty_normalized_shape_have_a_0d_weight():
    # tapegrad's RMSNorm([]) / LayerNorm([]) called ones() without a size (TypeError)
    for cls in ("RMSNorm", "LayerNorm"):
        m, ref = getattr(tapegrad.nn, cls)([]), getattr(torch.nn, cls)([])
        assert tuple(m.weight.shape) == tuple(ref.weight.shape) == ()
        np.testing.assert_array_equal(m.weight.detach().numpy(), ref.weight.detach().numpy())


@pytest.mark.parametrize("target_shape,dtype,msg", [
    ((4,), "float32", r"inconsistent target size: \[4\] for input of size: \[5, 4\]"),
    ((), "float32", r"inconsistent target size: \[\] for input of size: \[5, 4\]"),
    ((5, 4), "float32", "expected scalar type Long but found Float"),
])
def test_multilabel_margin_loss_checks_target_size_before_dtype(target_shape, dtype, msg):
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=msg):
            lib.nn.functional.multilabel_margin_loss(
                lib.ones(5, 4), lib.zeros(target_shape, dtype=getattr(lib, dtype)))


@pytest.mark.parametrize("fn,shape,size,msg", [
    ("adaptive_avg_pool1d", (1, 2, 4), (2, 2),
     r"adaptive_avg_pool1d\(\) argument 'output_size' should contain one int \(got 2\)"),
    ("adaptive_max_pool1d", (1, 2, 4), (2, 2),
     r"adaptive_max_pool1d\(\) argument 'output_size' should contain one int \(got 2\)"),
    ("adaptive_max_pool1d", (1, 2, 4), -1,
     r"Trying to create tensor with negative dimension -1: \[1, 2, 1, -1\]"),
    ("adaptive_max_pool1d", (2, 4), -1,
     r"Trying to create tensor with negative dimension -1: \[2, 1, -1\]"),
    ("adaptive_avg_pool1d", (1, 2, 4), -1,
     r"elements of output_size must be greater than or equal to 0 but received \{1, -1\}"),
    ("adaptive_max_pool2d", (1, 2, 4, 4), (-1, 0),
     r"Trying to create tensor with negative dimension -1: \[1, 2, -1, 0\]"),
    ("adaptive_max_pool2d", (1, 2, 4, 4), (2, 2, 2),
     r"adaptive_max_pool2d\(\): internal error: output_size.size\(\) must be 2"),
    ("adaptive_avg_pool2d", (1, 2, 4, 4), (2, 2, 2), "adaptive_avg_pool2d: output_size must be 2"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), (-1, 0, 2),
     r"Trying to create tensor with negative dimension -1: \[1, 2, -1, 0, 2\]"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), (2, 2),
     r"adaptive_max_pool3d\(\): internal error: output_size.size\(\) must be 3"),
    ("adaptive_avg_pool3d", (1, 2, 4, 4, 4), (2, 2), "adaptive_avg_pool3d: output_size must be 3"),
])
def test_adaptive_pool_output_size_errors(fn, shape, size, msg):
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match=msg):
            getattr(lib.nn.functional, fn)(lib.ones(shape), size)


# -- remainder's gradient with respect to the divisor ---------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_remainder_divisor_gradient_uses_the_floor_quotient_of_the_forward(dtype):
    # -0.25 / -0.001 rounds to 250.0, but the floored quotient (the one remainder's value
    # -0.001 comes from, PyTorch's div(rounding_mode='floor')) is 249: tapegrad used
    # floor(a / b) and gave the divisor the gradient -250 (SILENT)
    a = [-0.25, 0.3, 1.0, 7.5, -3.0]
    b = [-0.001, 0.1, 0.1, -2.0, 0.7]
    res = []
    for lib in (torch, tapegrad):
        x = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.tensor(b, dtype=getattr(lib, dtype), requires_grad=True)
        out = lib.remainder(x, y)
        gx, gy = lib.autograd.grad(out.sum(), [x, y])
        res.append((out.detach().numpy(), gx.numpy(), gy.numpy()))
    for t, g in zip(res[0], res[1]):
        np.testing.assert_array_equal(g, t)


def test_remainder_divisor_second_order_gradient_uses_the_floor_quotient():
    # the graph-mode VJP (create_graph=True) computes the same quotient
    res = []
    for lib in (torch, tapegrad):
        x = lib.tensor([-0.25, 0.3, 1.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([-0.001, 0.1, 0.1], dtype=lib.float64, requires_grad=True)
        (gy,) = lib.autograd.grad(lib.remainder(x, y).sum(), [y], create_graph=True)
        res.append(gy.detach().numpy())
    np.testing.assert_array_equal(res[1], res[0])


def test_remainder_gradcheck():
    x = tapegrad.tensor([2.3, -1.7, 0.45], dtype=tapegrad.float64, requires_grad=True)
    y = tapegrad.tensor([0.7, 0.6, -0.2], dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(tapegrad.remainder, (x, y))
