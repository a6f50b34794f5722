"""torch.signal: window functions (``tapegrad.signal.windows``)."""
from . import windows

__all__ = ["windows"]
