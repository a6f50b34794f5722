"""torch.nn.modules.padding's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in padding_shuffle."""
from .padding_shuffle import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d,
                              ReflectionPad1d, ReflectionPad2d, ReplicationPad1d,
                              ReplicationPad2d, ZeroPad1d, ZeroPad2d)

__all__ = ["CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d"]
