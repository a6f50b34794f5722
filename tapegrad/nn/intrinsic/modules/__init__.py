"""torch.nn.intrinsic.modules: the older name of torch.ao.nn.intrinsic's fused modules."""
from .fused import *  # noqa: F401,F403
from .fused import __all__  # noqa: F401
