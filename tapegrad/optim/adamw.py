"""torch.optim.adamw: AdamW and its functional form (the class lives with Adam, in adam.py)."""
from .adam import AdamW
from ._functional import adamw

__all__ = ["AdamW", "adamw"]
