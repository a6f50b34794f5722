"""torch.nn.modules.instancenorm's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in normalization and
lazy (the lazy ones are added by the package's __init__)."""
from .lazy import _LazyNormBase
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
