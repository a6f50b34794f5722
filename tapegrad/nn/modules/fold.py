"""torch.nn.modules.fold's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in conv."""
from .conv import Fold, Unfold

__all__ = ["Fold", "Unfold"]
