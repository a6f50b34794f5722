"""Lazy modules (nn.LazyLinear, nn.LazyConv1d/2d, nn.LazyBatchNorm1d/2d): the input size is left
open at construction and read from the first input, as d2l.ai's models are written.

A lazy module holds UninitializedParameter placeholders. Its first forward builds the module it
becomes (`cls_to_become`, e.g. Linear) with the size it read, takes that module's freshly
initialised parameters and buffers and its size attributes, and changes its own class to it, as
PyTorch does; hooks and submodule registrations on the lazy module stay where they are. The
parameters are drawn at that moment, so the random stream is consumed where PyTorch consumes it.
"""
from __future__ import annotations as _annotations

import warnings

from ... import random
from ...grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d,
                            InstanceNorm2d, InstanceNorm3d, _BatchNorm, _InstanceNorm)

def _without_drawing(build) -> None:
    """Run build() (a constructor with a placeholder size) and give back the random numbers its
    initialisation drew: a lazy module draws its parameters on first forward, not before."""
    state = random.get_rng_state()
    try:
        build()
    finally:
        random.set_rng_state(state)


class LazyModuleMixin:
    """Shared by the lazy modules: `_lazy_setup` replaces the size-dependent parameters and
    buffers with placeholders; the first call materialises them from the input."""

    cls_to_become: type | None = None
    _lazy_size_attr = ""        # the constructor argument read from the input ("in_features")
    _lazy_input_dim = 1         # which input dim holds it
    _size_read_after_load = False   # whether a forward after load_state_dict sets that size

    def _lazy_setup(self, args: tuple, kwargs: dict, placeholders) -> None:
        self._lazy_args = (args, kwargs)
        setattr(self, self._lazy_size_attr, 0)
        dtype = kwargs.get("dtype")
        for name in placeholders:
            if name in self._parameters and self._parameters[name] is not None:
                self._parameters[name] = UninitializedParameter(dtype=dtype)
            elif name in self._buffers and self._buffers[name] is not None:
                self._buffers[name] = UninitializedBuffer(dtype=dtype)
        self._lazy_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer is still a placeholder (no forward call yet)."""
        return any(is_lazy(t) for t in list(self._parameters.values()) + list(self._buffers.values()))

    def _materialize_from(self, state_dict, prefix: str) -> None:
        """Replace each placeholder that `state_dict` holds an entry for with an empty tensor of
        the saved shape (load_state_dict then copies the values in), as PyTorch's load hook;
        a saved placeholder leaves it a placeholder.
        The size attribute stays 0 and the class lazy until the first forward, as there."""
        for store in (self._parameters, self._buffers):
            for name, value in store.items():
                key = prefix + name
                if is_lazy(value) and key in state_dict and not is_lazy(state_dict[key]):
                    value.materialize(state_dict[key].shape)

    def initialize_parameters(self, input) -> None:
        """Build the real parameters and buffers for `input`'s size (called by the first forward)."""
        if not self.has_uninitialized_params():
            # Loaded from a state dict: the values stay; only LazyLinear (as PyTorch's) fills in
            # its size attribute from the input.
            if self._size_read_after_load and getattr(self, self._lazy_size_attr) == 0:
                setattr(self, self._lazy_size_attr, self._lazy_size(input))
            return
        args, kwargs = self._lazy_args
        # The placeholders carry the dtype a later .to()/.double() gave them; the real
        # parameters take it, as PyTorch's materialize() does.
        floating = [t for t in list(self._parameters.values()) + list(self._buffers.values())
                    if is_lazy(t) and t.dtype.is_floating_point]
        if floating:
            kwargs = {**kwargs, "dtype": floating[0].dtype}
        size = self._lazy_size(input)
        if size == 0:
            # PyTorch's lazy modules skip reset_parameters for a zero size: nothing to draw, and
            # no "zero-element tensors" warning from the initialisers
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Initializing zero-element tensors is a no-op")
                built = self.cls_to_become(size, *args, **kwargs)
        else:
            built = self.cls_to_become(size, *args, **kwargs)
        for store, made in ((self._parameters, built._parameters), (self._buffers, built._buffers)):
            for name, value in made.items():
                placeholder = store.get(name)
                if is_lazy(placeholder) and value is not None:
                    # the placeholder itself becomes the tensor (as PyTorch's materialize): an
                    # optimizer made before this first call then steps the real parameters
                    placeholder.materialize(value.shape, dtype=value.dtype)
                    with no_grad():
                        placeholder.copy_(value)
                else:
                    store[name] = value
        for key, value in built.__dict__.items():
            if not key.startswith("_") and key != "training":
                object.__setattr__(self, key, value)

    def _lazy_size(self, input) -> int:
        """The size attribute's value, read from the first input."""
        return input.shape[self._lazy_input_dim]

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        module._lazy_hook.remove()
        for key in ("_lazy_hook", "_lazy_args"):
            module.__dict__.pop(key, None)
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is read from the first input's last dim."""

    cls_to_become = Linear
    _lazy_size_attr = "in_features"
    _lazy_input_dim = -1
    _size_read_after_load = True

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        _without_drawing(lambda: Linear.__init__(self, 1, out_features, bias, device=device,
                                                 dtype=dtype))
        self._lazy_setup((out_features, bias), {"device": device, "dtype": dtype},
                         ("weight", "bias"))


def _conv_in_channels(module, input) -> int:
    """A lazy convolution's in_channels: dim 1 of a batched input, dim 0 of an unbatched one
    (one dim fewer), as PyTorch's _get_in_channels."""
    spatial = len(module.kernel_size)
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input "
                           f"to {type(module).__name__}, but got input of size: {input.shape}")
    return input.shape[1] if input.dim() == spatial + 2 else input.shape[0]


class _LazyConv(LazyModuleMixin):
    _lazy_size_attr = "in_channels"
    _lazy_size = _conv_in_channels

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None) -> None:
        args = (out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode)
        _without_drawing(lambda: self.cls_to_become.__init__(self, groups, *args, device=device,
                                                             dtype=dtype))
        self._lazy_setup(args, {"device": device, "dtype": dtype}, ("weight", "bias"))


class LazyConv1d(_LazyConv, Conv1d):
    """Conv1d whose in_channels is read from the first input's dim 1."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """Conv2d whose in_channels is read from the first input's dim 1."""

    cls_to_become = Conv2d


class _LazyConvTranspose(LazyModuleMixin):
    _lazy_size_attr = "in_channels"
    _lazy_size = _conv_in_channels

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None) -> None:
        args = (out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                dilation, padding_mode)
        # `groups` input channels: the smallest count every group divides.
        _without_drawing(lambda: self.cls_to_become.__init__(self, groups, *args, device=device,
                                                             dtype=dtype))
        self._lazy_setup(args, {"device": device, "dtype": dtype}, ("weight", "bias"))


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """ConvTranspose1d whose in_channels is read from the first input's dim 1."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """ConvTranspose2d whose in_channels is read from the first input's dim 1."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """ConvTranspose3d whose in_channels is read from the first input's dim 1."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin):
    """The lazy normalisation layers (batch and instance norms alike: PyTorch gives the lazy
    instance norms the batch norms' defaults, affine and tracking running statistics).  As in
    PyTorch, a lazy norm derives from the private base (_BatchNorm, _InstanceNorm), not from the
    class it becomes, so `isinstance(m, nn.BatchNorm2d)` is False until it is materialised; it
    takes that class's accepted ranks."""

    _lazy_size_attr = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True) -> None:
        args = (eps, momentum, affine, track_running_stats)
        kwargs = {"device": device, "dtype": dtype, "bias": bias}
        _without_drawing(lambda: self.cls_to_become.__init__(self, 1, *args, **kwargs))
        self._lazy_setup(args, kwargs, ("weight", "bias", "running_mean", "running_var"))


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d whose num_features is read from the first input's dim 1."""

    cls_to_become = BatchNorm1d
    _ranks = BatchNorm1d._ranks


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d whose num_features is read from the first input's dim 1."""

    cls_to_become = BatchNorm2d
    _ranks = BatchNorm2d._ranks


class LazyConv3d(_LazyConv, Conv3d):
    """Conv3d whose in_channels is read from the first input's dim 1."""

    cls_to_become = Conv3d


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d whose num_features is read from the first input's dim 1."""

    cls_to_become = BatchNorm3d
    _ranks = BatchNorm3d._ranks


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm1d whose num_features is read from the first input's dim 1."""

    cls_to_become = InstanceNorm1d
    _rank = InstanceNorm1d._rank


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm2d whose num_features is read from the first input's dim 1."""

    cls_to_become = InstanceNorm2d
    _rank = InstanceNorm2d._rank


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm3d whose num_features is read from the first input's dim 1."""

    cls_to_become = InstanceNorm3d
    _rank = InstanceNorm3d._rank


__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
