"""tapegrad.utils: data loading utilities (tapegrad.utils.data), as torch.utils has them."""
from . import data

__all__ = ["data"]
