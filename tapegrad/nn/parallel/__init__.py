"""tapegrad.nn.parallel on a machine without accelerators.

With no GPU, PyTorch's DataParallel keeps an empty ``device_ids`` list and its forward calls the
wrapped module directly; ``data_parallel`` cannot pick a device type and raises.  tapegrad is
CPU only, so both behave like that; scripts that wrap a model "in case there are several
GPUs" (``nn.DataParallel(model)``, ``import torch.nn.parallel``) run unchanged.
DistributedDataParallel needs a process group, which tapegrad cannot create, so constructing
one raises PyTorch's uninitialised-group error.
"""
from __future__ import annotations as _annotations

from ..modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module``; on CPU its forward is the module's own (nothing is replicated).

    Its parameters appear under ``module.`` in ``state_dict()``, as PyTorch's do, so checkpoints
    saved from a wrapped model load into a wrapped model.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        # No accelerator: PyTorch keeps no devices and runs the module where its parameters are.
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module on the inputs (no scatter/gather without accelerators)."""
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """Functional DataParallel: needs an accelerator, so it raises ``RuntimeError`` as PyTorch
    does on a CPU-only machine ("device type could not be determined")."""
    raise RuntimeError("device type could not be determined")


class DistributedDataParallel(Module):
    """Data parallelism across processes: needs ``torch.distributed.init_process_group``, which
    this build has no backend for (``tapegrad.distributed.is_available()`` is False)."""

    def __init__(self, module, *args, **kwargs) -> None:
        from ... import distributed
        distributed._default_group()            # raises: no process group was initialised
        super().__init__()                      # not reached
        self.module = module

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module (never reached: construction raises without a process group)."""
        return self.module(*inputs, **kwargs)
