"""torch.distributions.binomial: PyTorch's import path for Binomial
(``from torch.distributions.binomial import Binomial``)."""
from ._count_families import Binomial

__all__ = ["Binomial"]
