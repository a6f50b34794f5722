"""torch.distributions.geometric: PyTorch's import path for Geometric
(``from torch.distributions.geometric import Geometric``)."""
from ._location_scale import Geometric

__all__ = ["Geometric"]
