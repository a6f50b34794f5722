"""torch.utils.data.distributed: the module scripts import DistributedSampler from (as the
annotated transformer does, ``from torch.utils.data.distributed import DistributedSampler``).
The sampler itself lives with the other samplers."""
from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
