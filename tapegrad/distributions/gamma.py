"""torch.distributions.gamma: PyTorch's import path for Gamma
(``from torch.distributions.gamma import Gamma``)."""
from ._gamma_family import Gamma

__all__ = ["Gamma"]
