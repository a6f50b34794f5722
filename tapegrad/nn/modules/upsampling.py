"""torch.nn.modules.upsampling's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); Upsample is defined in pooling,
the two fixed-mode 2-D upsamplers older scripts use are here."""
from .pooling import Upsample

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode='nearest')`` for (N, C, H, W) input (PyTorch's older
    spelling, kept for scripts that use it)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode='bilinear', align_corners=True)`` for (N, C, H, W)
    input: the corners of input and output are aligned, unlike ``Upsample``'s default."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
