"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), graph drawing
(utils.viz), activation checkpointing (utils.checkpoint)."""
from . import checkpoint, data, dlpack, viz

__all__ = ["checkpoint", "data", "dlpack", "viz"]
