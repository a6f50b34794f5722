"""tapegrad.utils: data loading (utils.data), DLPack exchange (utils.dlpack), graph drawing (utils.viz)."""
from . import data, dlpack, viz

__all__ = ["data", "dlpack", "viz"]
