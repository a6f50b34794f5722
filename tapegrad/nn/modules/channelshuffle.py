"""torch.nn.modules.channelshuffle's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in padding_shuffle."""
from .padding_shuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
