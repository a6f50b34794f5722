"""torch.nn.modules.flatten's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in linear."""
from .linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
