"""torch.nn.modules.padding's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in padding_shuffle."""
from .padding_shuffle import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,
                              ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d,
                              ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                              ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d, _CircularPadNd,
                              _ConstantPadNd, _ReflectionPadNd, _ReplicationPadNd)

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]
