"""torch.distributions.log_normal: PyTorch's import path for LogNormal
(``from torch.distributions.log_normal import LogNormal``)."""
from .transformed_distribution import LogNormal

__all__ = ["LogNormal"]
