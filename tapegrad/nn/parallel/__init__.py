"""tapegrad.nn.parallel: DataParallel and data_parallel on a machine without accelerators.

With no GPU, PyTorch's DataParallel keeps an empty ``device_ids`` list and its forward calls the
wrapped module directly; ``data_parallel`` cannot pick a device type and raises.  tapegrad is
CPU only, so both behave like that; scripts that wrap a model "in case there are several
GPUs" (``nn.DataParallel(model)``, ``import torch.nn.parallel``) run unchanged.
"""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module``; on CPU its forward is the module's own (nothing is replicated).

    Parameters and state-dict keys are the module's, prefixed with ``module.`` as in PyTorch.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0) -> None:
        super().__init__()
        self.module = module
        # No accelerator: PyTorch keeps no devices and runs the module where its parameters are.
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module on the inputs (no scatter/gather without accelerators)."""
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """Functional DataParallel: needs an accelerator, so it raises ``RuntimeError`` as PyTorch
    does on a CPU-only machine ("device type could not be determined")."""
    raise RuntimeError("device type could not be determined")
