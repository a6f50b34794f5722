"""torch.distributions.dirichlet: PyTorch's import path for Dirichlet
(``from torch.distributions.dirichlet import Dirichlet``)."""
from .gamma_family import Dirichlet

__all__ = ["Dirichlet"]
