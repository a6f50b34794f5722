"""torch.ao.nn.intrinsic.qat: the fused QAT modules (Linear / Conv2d + ReLU with fake-quantized
weights; defined beside their unfused forms in torch.ao.nn.qat)."""
from tapegrad.ao.nn.qat import ConvReLU2d, LinearReLU  # noqa: F401

__all__ = ["ConvReLU2d", "LinearReLU"]
