"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), timing (utils.benchmark), graph drawing
(utils.viz), activation checkpointing (utils.checkpoint), hook handles (utils.hooks), identity-keyed
weak dictionaries (utils.weak)."""
from . import benchmark, checkpoint, data, dlpack, hooks, viz, weak

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "hooks", "viz", "weak"]
