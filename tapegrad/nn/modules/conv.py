"""Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Unfold, Fold."""
from __future__ import annotations as _annotations

import math

from ... import creation
from ..._device import check_device
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

# PyTorch's errors print these sets themselves, whose order follows the string hashes
# (PYTHONHASHSEED) and, where hashes collide, the insertion order.  A set literal is compiled to
# a frozenset constant whose insertion order is fixed when the .pyc is written, so these are
# built from tuples in the order PyTorch's compiled constants insert them (measured against the
# installed PyTorch over many seeds: the padding modes' is not their source order), and our
# text equals PyTorch's under every seed.
_PADDING_MODES = set(("zeros", "reflect", "circular", "replicate"))
_PADDING_STRINGS = set(("same", "valid"))


def _ntuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


class _ConvNd(Module):
    """Shared state, init and repr of the convolution layers (PyTorch's _ConvNd)."""

    _nd: int = 2
    _transposed: bool = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None, output_padding=0) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, nd)
        self.dilation = _ntuple(dilation, nd)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for the non-'zeros' padding modes, last dimension first (PyTorch's
        # attribute: scripts that subclass a conv and rewrite _conv_forward read it)
        self._reversed_padding_repeated_twice = self._pad_amounts()
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(creation.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _pad_amounts(self):
        """(left, right) padding per spatial dimension, last dimension first, as F.pad takes it:
        a tuple for numeric padding, a list for the string forms (as PyTorch's); 'same' splits
        the total as the functional form does (extra on the right)."""
        if isinstance(self.padding, str):
            amounts = [0, 0] * self._nd
            if self.padding == "same":
                for i, (k, d) in enumerate(zip(reversed(self.kernel_size),
                                               reversed(self.dilation))):
                    total = d * (k - 1)
                    amounts[2 * i], amounts[2 * i + 1] = total // 2, total - total // 2
            return amounts
        return tuple(p for p in reversed(self.padding) for _ in range(2))

    def __setstate__(self, state) -> None:
        # A conv pickled before the attribute existed: derive it from its padding
        super().__setstate__(state)
        if "_reversed_padding_repeated_twice" not in self.__dict__:
            self._reversed_padding_repeated_twice = self._pad_amounts()

    def _explicit_padding(self, input):
        """Pad with padding_mode (non-'zeros') before a convolution with no padding of its own."""
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, " \
            f"stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = F.conv1d if self._nd == 1 else F.conv2d
        if self.padding_mode != "zeros":
            return fn(self._explicit_padding(input), weight, bias, self.stride, 0,
                      self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) input."""
    _nd = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) input."""
    _nd = 2


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size, stride=None, padding=None, kernel_size=None,
                        num_spatial_dims=None, dilation=None):
        """The output_padding that makes the output `output_size` (PyTorch's rule: any size in
        [min, min + stride - 1]).  Takes PyTorch's signature too (subclasses that override
        forward copy its call, passing the geometry): then a dilation left out is 1, as in
        PyTorch; called with the input and size alone, the module's own geometry is used."""
        if output_size is None:
            return self.output_padding
        if stride is None:
            stride, padding, kernel_size = self.stride, self.padding, self.kernel_size
            num_spatial_dims, dilation = self._nd, self.dilation
        nd = num_spatial_dims
        if dilation is None:
            dilation = (1,) * nd
        requested = output_size
        output_size = list(output_size)
        # The sizes may lead with the input's non-spatial dims (batch and channels, or channels
        # of an unbatched input): those of this input only (another length was cut silently).
        leading = 2 if input.dim() == nd + 2 else 1
        if len(output_size) == leading + nd:
            output_size = output_size[leading:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must "
                             f"have {nd} or {leading + nd} elements (got {len(output_size)})")
        spatial = type(input.shape)(input.shape[input.dim() - nd:])
        min_sizes = [(s - 1) * st - 2 * p + d * (k - 1) + 1 for s, st, p, d, k in
                     zip(spatial, stride, padding, dilation, kernel_size)]
        max_sizes = [m + st - 1 for m, st in zip(min_sizes, stride)]
        if any(not lo <= o <= hi for o, lo, hi in zip(output_size, min_sizes, max_sizes)):
            raise ValueError(f"requested an output size of {requested}, but valid sizes range "
                             f"from {min_sizes} to {max_sizes} (for an input of {spatial})")
        # (a list, as PyTorch returns)
        return [o - lo for o, lo in zip(output_size, min_sizes)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            # (the attribute set after construction: PyTorch refuses it here too, rather than
            # ignore it)
            raise ValueError(f"Only `zeros` padding mode is supported for "
                             f"{type(self).__name__}")
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over (N, C_in, L) input."""
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over (N, C_in, H, W) input."""
    _nd = 2


class Unfold(Module):
    """Sliding local blocks as columns (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding,
                                self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns summed back into an image (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation,
                              self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) input (``F.conv3d``)."""
    _nd = 3

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv3d(self._explicit_padding(input), weight, bias, self.stride, 0,
                            self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over (N, C_in, D, H, W) input (``F.conv_transpose3d``)."""
    _nd = 3
