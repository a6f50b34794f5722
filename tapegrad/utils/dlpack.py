"""tapegrad.utils.dlpack: the capsule-level DLPack functions, as torch.utils.dlpack has them."""
from .._dlpack import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
