"""torch.ao.nn.intrinsic.quantized: the quantized fused modules convert puts in place of
ao.nn.intrinsic's float ones (the ReLU applied to the integers: clamped from the zero point)."""
from tapegrad.ao.nn.quantized.static import ConvReLU2d, LinearReLU  # noqa: F401

__all__ = ["ConvReLU2d", "LinearReLU"]
