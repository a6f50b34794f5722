"""torch.utils.hooks: the handle a hook registration returns (its .remove() unregisters it)."""
from ..nn.modules._hooks import RemovableHandle

__all__ = ["RemovableHandle"]
