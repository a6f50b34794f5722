"""torch.distributions.laplace: PyTorch's import path for Laplace
(``from torch.distributions.laplace import Laplace``)."""
from ._location_scale import Laplace

__all__ = ["Laplace"]
