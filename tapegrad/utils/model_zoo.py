"""tapegrad.utils.model_zoo: PyTorch's older name for the hub's checkpoint loader
(`model_zoo.load_url` is `hub.load_state_dict_from_url`, as in PyTorch)."""
from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
