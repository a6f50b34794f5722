"""set_default_tensor_type: PyTorch's deprecated way to set the default dtype, through a legacy
tensor type (torch.DoubleTensor, tapegrad._legacy's classes) or its name ('torch.DoubleTensor')."""
from __future__ import annotations as _annotations

from . import _core, _legacy

_DEPRECATION = ("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                "torch.set_default_dtype() and torch.set_default_device() as alternatives.")


def set_default_tensor_type(t) -> None:
    """Deprecated (as in PyTorch): set the default dtype from a legacy tensor type or its name."""
    # (once per process, as PyTorch's)
    _core.warn_once(_DEPRECATION, "torch/csrc/tensor/python_tensor.cpp:434")
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module not in ("torch", "tapegrad"):
            if module.endswith(".cuda"):
                raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.")
            raise ModuleNotFoundError(f"No module named '{module or t}'")
        found = getattr(_legacy, name, None)
        if not isinstance(found, _legacy.TypedTensorMeta):
            raise AttributeError(f"module '{module}' has no attribute '{name}'")
        t = found
    if not isinstance(t, _legacy.TypedTensorMeta):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _core.set_default_dtype(t.dtype)
