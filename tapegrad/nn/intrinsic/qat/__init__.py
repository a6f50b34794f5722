"""torch.nn.intrinsic.qat: the older name of torch.ao.nn.intrinsic.qat (the same objects)."""
from tapegrad.ao.nn.intrinsic.qat import *  # noqa: F401,F403
from tapegrad.ao.nn.intrinsic.qat import __all__  # noqa: F401
