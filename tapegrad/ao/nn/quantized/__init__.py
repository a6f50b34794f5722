"""torch.ao.nn.quantized: quantized modules (tapegrad: the dynamic ones)."""
from . import dynamic  # noqa: F401
