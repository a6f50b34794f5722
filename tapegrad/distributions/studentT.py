"""torch.distributions.studentT: PyTorch's import path for StudentT
(``from torch.distributions.studentT import StudentT``)."""
from ._gamma_family import StudentT

__all__ = ["StudentT"]
