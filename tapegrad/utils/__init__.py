"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), timing (utils.benchmark), graph drawing
(utils.viz), activation checkpointing (utils.checkpoint)."""
from . import benchmark, checkpoint, data, dlpack, viz

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "viz"]
