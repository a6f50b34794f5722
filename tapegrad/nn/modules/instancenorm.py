"""torch.nn.modules.instancenorm's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in normalization."""
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
