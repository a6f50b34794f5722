"""torch.nn.modules.batchnorm's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. in torch.serialization.safe_globals); defined in normalization and
lazy."""
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]
