"""torch.distributions.beta: PyTorch's import path for Beta
(``from torch.distributions.beta import Beta``)."""
from ._gamma_family import Beta

__all__ = ["Beta"]
