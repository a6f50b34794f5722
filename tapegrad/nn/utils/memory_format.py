"""nn.utils.convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format: lay the
weights of a model's convolutions out in a memory format (channels_last for NHWC kernels)."""
from __future__ import annotations as _annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert_weights(module, memory_format, kinds):
    """Give each module of `kinds` in `module`'s tree a weight laid out in `memory_format` (its
    values, Parameter and requires_grad unchanged); returns `module`."""
    if isinstance(module, kinds):
        weight = module.weight.detach().clone().contiguous(memory_format=memory_format)
        # (resize_ to the same size restrides in the format even where contiguous() found the
        # weight in it already: a 1x1 kernel's size-1 dims get the format's strides)
        module.weight.data = weight.resize_(weight.size(), memory_format=memory_format)
    for child in module.children():
        _convert_weights(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the ``memory_format`` of every ``nn.Conv2d`` / ``nn.ConvTranspose2d`` weight in
    ``module`` (recursively, ``module`` included); only the layout changes, not the values or
    the meaning of the dimensions.  Returns ``module``."""
    from ..modules.conv import Conv2d, ConvTranspose2d
    return _convert_weights(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """As convert_conv2d_weight_memory_format, for ``nn.Conv3d`` / ``nn.ConvTranspose3d``."""
    from ..modules.conv import Conv3d, ConvTranspose3d
    return _convert_weights(module, memory_format, (Conv3d, ConvTranspose3d))
