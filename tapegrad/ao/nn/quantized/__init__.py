"""torch.ao.nn.quantized: quantized modules (tapegrad: the dynamic ones, Quantize / DeQuantize and
the functional wrappers FloatFunctional / QFunctional)."""
from . import dynamic  # noqa: F401
from .modules import (DeQuantize, FloatFunctional, FXFloatFunctional,  # noqa: F401
                      QFunctional, Quantize)

__all__ = ["DeQuantize", "FloatFunctional", "FXFloatFunctional", "QFunctional", "Quantize"]
