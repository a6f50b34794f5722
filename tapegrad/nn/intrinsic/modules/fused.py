"""torch.nn.intrinsic.modules.fused: the older path of torch.ao.nn.intrinsic.modules.fused (the
same classes)."""
from tapegrad.ao.nn.intrinsic.fused import (  # noqa: F401
    BNReLU2d, BNReLU3d, ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d,
    ConvReLU1d, ConvReLU2d, ConvReLU3d, LinearBn1d, LinearReLU,
)

__all__ = ["BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d",
           "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d",
           "LinearBn1d", "LinearReLU"]
