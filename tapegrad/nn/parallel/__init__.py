"""tapegrad.nn.parallel on a machine without accelerators.

With no GPU, PyTorch's DataParallel keeps an empty ``device_ids`` list and its forward calls the
wrapped module directly; ``data_parallel`` cannot pick a device type and raises.  tapegrad is
CPU only, so both behave like that; scripts that wrap a model "in case there are several
GPUs" (``nn.DataParallel(model)``, ``import torch.nn.parallel``) run unchanged.
DistributedDataParallel needs a process group: without one, constructing it raises PyTorch's
uninitialised-group error; with tapegrad's single-process group it wraps the module and its
gradient averaging over one rank leaves the gradients as they are.
"""
from __future__ import annotations as _annotations

from contextlib import contextmanager

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
    """Data parallelism across the processes of the default group.  tapegrad's group is one
    process, so the replicas are the module itself: forward is the module's, and the gradient
    all-reduce that averages over ranks divides a sum of one by one, which changes nothing."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, *args, **kwargs) -> None:
        from ... import distributed
        from ..modules.normalization import SyncBatchNorm
        distributed.distributed_c10d._default_group()     # raises without a process group
        if any(isinstance(m, SyncBatchNorm) for m in module.modules()):
            # PyTorch hands SyncBatchNorm its group only for accelerator modules; ours are CPU ones
            raise ValueError("SyncBatchNorm layers only work with GPU modules")
        super().__init__()
        self.module = module
        self.device_ids = None if not device_ids else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module on this rank's inputs."""
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce inside the block (gradient accumulation): over one rank
        the all-reduce is the identity, so only the flag PyTorch exposes changes."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
