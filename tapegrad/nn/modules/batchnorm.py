"""torch.nn.modules.batchnorm's names, where PyTorch keeps them (scripts and pickles refer to
classes by that path, e.g. `isinstance(m, nn.modules.batchnorm._BatchNorm)` in init code, or
torch.serialization.safe_globals); defined in normalization and lazy."""
from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyModuleMixin, _LazyNormBase
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, _BatchNorm,
                            _NormBase)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "SyncBatchNorm"]
