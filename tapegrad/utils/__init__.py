"""tapegrad.utils: data loading utilities (tapegrad.utils.data), as torch.utils has them."""
from . import data, dlpack

__all__ = ["data", "dlpack"]
