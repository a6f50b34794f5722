"""tapegrad.utils.data: datasets, samplers and the DataLoader, as torch.utils.data has them.

Batches load in the main process or in `num_workers` worker processes.  Shuffling draws from
tapegrad's seeded generator (or the tapegrad.Generator passed as `generator=`), so `tapegrad.manual_seed`
makes epochs repeatable; the orders differ from PyTorch's, whose random streams tapegrad does
not reproduce.
"""
from ._worker import get_worker_info
from .dataloader import DataLoader, default_collate, default_convert
from . import _utils  # torch.utils.data._utils.collate, reached as an attribute
from . import distributed  # torch.utils.data.distributed.DistributedSampler, reached as an attribute
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from ..._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
