"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), timing (utils.benchmark), graph drawing
(utils.viz), activation checkpointing (utils.checkpoint), hook handles (utils.hooks)."""
from . import benchmark, checkpoint, data, dlpack, hooks, viz

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "hooks", "viz"]
