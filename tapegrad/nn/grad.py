"""tapegrad.nn.grad (also `F.grad`): a convolution's gradient with respect to its input or its
weight, given the gradient of its output, as torch.nn.grad has them.

Each is the backward of one convolution: the function records the convolution on a zero
stand-in for the operand whose gradient it returns (a convolution is linear in each operand, so
the stand-in's values do not matter) and differentiates it.  The result is differentiable in
the other operand and in `grad_output` (their graphs are kept when they require grad), as
PyTorch's ConvolutionBackwardBackward0."""
from .. import autograd as _autograd
from ..grad_mode import enable_grad as _enable_grad
from . import functional as _F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]

_CONVOLUTIONS = {1: _F.conv1d, 2: _F.conv2d, 3: _F.conv3d}


def _check_int_arguments(**arguments):
    for name, value in arguments.items():
        values = value if isinstance(value, (tuple, list)) else (value,)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise RuntimeError(f"torch.nn.grad takes integers for '{name}' (as "
                               f"aten::convolution_backward), but got {value!r}")


def _check_grad_output(grad_output, output_shape):
    """grad_output must have the convolution's output shape.  (PyTorch does not check the batch
    size there and reads past a smaller grad_output; here every dimension is checked.)"""
    if grad_output.dim() != len(output_shape):
        raise RuntimeError(f"Expected input and grad_output to have the same number of "
                           f"dimensions, but got: {len(output_shape)} and {grad_output.dim()}")
    for i, (want, got) in enumerate(zip(output_shape, grad_output.shape)):
        if want != got:
            raise RuntimeError(f"Expected a tensor of dimension {len(output_shape)} and "
                               f"tensor.size[{i}] == {want} but got: dimension "
                               f"{grad_output.dim()} and tensor.size[{i}] = {got}")


def _operand_grad(nd, input, weight, grad_output, which, stride, padding, dilation, groups):
    """d<conv(input, weight)>/d<operand `which`> applied to grad_output: `which` is 0 (input) or
    1 (weight), and that operand is a shape; the other is a tensor."""
    _check_int_arguments(stride=stride, padding=padding, dilation=dilation, groups=groups)
    operands = [input, weight]
    shapes = [tuple(o.shape) if which != i else tuple(o) for i, o in enumerate(operands)]
    input_shape, weight_shape = shapes
    if len(weight_shape) != nd + 2:
        raise RuntimeError(f"conv{nd}d takes a {nd + 2}-dimensional weight, but got weight of "
                           f"size {list(weight_shape)}")
    if len(input_shape) != len(weight_shape):
        raise RuntimeError(f"Expected {len(weight_shape)}-dimensional input for "
                           f"{len(weight_shape)}-dimensional weight {list(weight_shape)}, but "
                           f"got {len(input_shape)}-dimensional input of size "
                           f"{list(input_shape)} instead")
    other = operands[1 - which]
    shape = shapes[which]
    stand_in = other.new_zeros(shape).requires_grad_()
    operands[which] = stand_in
    with _enable_grad():
        output = _CONVOLUTIONS[nd](operands[0], operands[1], None, stride, padding, dilation,
                                   groups)
    _check_grad_output(grad_output, tuple(output.shape))
    keep_graph = other.requires_grad or grad_output.requires_grad
    return _autograd.grad(output, stand_in, grad_output, create_graph=keep_graph)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its input, of shape `input_size`."""
    return _operand_grad(1, input_size, weight, grad_output, 0, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its weight, of shape `weight_size`."""
    return _operand_grad(1, input, weight_size, grad_output, 1, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input, of shape `input_size`."""
    return _operand_grad(2, input_size, weight, grad_output, 0, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight, of shape `weight_size`."""
    return _operand_grad(2, input, weight_size, grad_output, 1, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its input, of shape `input_size`."""
    return _operand_grad(3, input_size, weight, grad_output, 0, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its weight, of shape `weight_size`."""
    return _operand_grad(3, input, weight_size, grad_output, 1, stride, padding, dilation, groups)
