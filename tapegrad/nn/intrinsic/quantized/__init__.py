"""torch.nn.intrinsic.quantized: the older name of torch.ao.nn.intrinsic.quantized (the same
objects)."""
from tapegrad.ao.nn.intrinsic.quantized import *  # noqa: F401,F403
from tapegrad.ao.nn.intrinsic.quantized import __all__  # noqa: F401
