"""torch.distributions.exponential: PyTorch's import path for Exponential
(``from torch.distributions.exponential import Exponential``)."""
from ._location_scale import Exponential

__all__ = ["Exponential"]
