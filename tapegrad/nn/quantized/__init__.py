"""torch.nn.quantized: PyTorch's older name for torch.ao.nn.quantized (the same objects)."""
from tapegrad.ao.nn.quantized import *  # noqa: F401,F403
from tapegrad.ao.nn.quantized import __all__  # noqa: F401
from . import dynamic  # noqa: F401
