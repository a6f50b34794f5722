"""torch.nn.intrinsic: PyTorch's older name for torch.ao.nn.intrinsic (the same fused module
classes, so isinstance checks and fuse_modules agree whichever name a script imports).  Only the
names PyTorch's old namespace lists (no LinearLeakyReLU, LinearTanh)."""
from .modules import *  # noqa: F401,F403
from .modules import __all__  # noqa: F401
from . import modules, qat, quantized  # noqa: F401,E402
