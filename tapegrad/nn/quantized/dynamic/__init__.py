"""torch.nn.quantized.dynamic: PyTorch's older name for torch.ao.nn.quantized.dynamic (the same
objects)."""
from tapegrad.ao.nn.quantized.dynamic import *  # noqa: F401,F403
from tapegrad.ao.nn.quantized.dynamic import __all__  # noqa: F401
