"""torch.distributions.poisson: PyTorch's import path for Poisson
(``from torch.distributions.poisson import Poisson``)."""
from ._count_families import Poisson

__all__ = ["Poisson"]
