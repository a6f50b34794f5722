"""torch.nn.parallel on a CPU-only build: DataParallel runs the wrapped module in this process
(PyTorch does the same when there is no GPU); DistributedDataParallel needs a process group,
which tapegrad cannot create, so constructing one raises PyTorch's uninitialised-group error."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """Wraps ``module``; with no GPUs (always, here) ``forward`` calls it directly.

    Its parameters appear under ``module.`` in ``state_dict()``, as PyTorch's do, so checkpoints
    saved from a wrapped model load into a wrapped model.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Data parallelism across processes: needs ``torch.distributed.init_process_group``, which
    this build has no backend for (``tapegrad.distributed.is_available()`` is False)."""

    def __init__(self, module, *args, **kwargs) -> None:
        from ... import distributed
        distributed._default_group()            # raises: no process group was initialised
        super().__init__()                      # not reached
        self.module = module

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
