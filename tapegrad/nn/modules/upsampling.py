"""torch.nn.modules.upsampling's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in pooling."""
from .pooling import Upsample

__all__ = ["Upsample"]
