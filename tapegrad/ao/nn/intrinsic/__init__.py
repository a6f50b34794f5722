"""torch.ao.nn.intrinsic: fused module sequences (Conv + ReLU, Linear + ReLU, Conv + BN (+ ReLU),
BN + ReLU, ...) that fuse_modules puts in place of the modules it fuses. In float they run their
parts in order; quantization treats each as one module (one observer at its output)."""
from .fused import (  # noqa: F401
    BNReLU2d, BNReLU3d, ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d,
    ConvReLU1d, ConvReLU2d, ConvReLU3d, LinearBn1d, LinearLeakyReLU, LinearReLU, LinearTanh,
    _FusedModule,
)

__all__ = ["BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d",
           "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d",
           "LinearBn1d", "LinearLeakyReLU", "LinearReLU", "LinearTanh"]

from . import qat, quantized  # noqa: E402,F401
