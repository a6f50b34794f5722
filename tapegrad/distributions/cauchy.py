"""torch.distributions.cauchy: PyTorch's import path for Cauchy
(``from torch.distributions.cauchy import Cauchy``)."""
from ._location_scale import Cauchy

__all__ = ["Cauchy"]
