"""torch.ao.nn.quantized: quantized modules: the dynamic ones, the static Linear and Conv2d that
convert swaps in after calibration, Quantize / DeQuantize and the functional wrappers
FloatFunctional / QFunctional."""
from . import dynamic  # noqa: F401
from .modules import (DeQuantize, FloatFunctional, FXFloatFunctional,  # noqa: F401
                      QFunctional, Quantize)
from .static import Conv2d, Linear  # noqa: F401

__all__ = ["Conv2d", "DeQuantize", "FloatFunctional", "FXFloatFunctional", "Linear",
           "QFunctional", "Quantize"]
