"""torch.cuda.streams: the stream and event classes, the same objects as torch.cuda's."""
from . import Event, Stream  # noqa: F401
