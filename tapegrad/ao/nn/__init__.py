"""torch.ao.nn: the quantized counterparts of torch.nn's modules (tapegrad: the dynamically
quantized Linear that torch.ao.quantization.quantize_dynamic swaps in)."""
from . import quantized  # noqa: F401
