"""tapegrad.backends.cudnn: cuDNN is not available, but scripts set its flags
(`torch.backends.cudnn.deterministic = True`, `benchmark = False`) for reproducibility, so the
flags exist, remember what is set, and check the type as PyTorch does (a bool), with no effect on
tapegrad's computation (which is deterministic on the CPU)."""
from __future__ import annotations as _annotations

import sys
from contextlib import contextmanager

from ._flags import check_flags


def is_available() -> bool:
    """Always False: cuDNN is not available (its flags exist and are remembered, with no effect)."""
    return False


def version():
    """Always None: no cuDNN library is loaded."""
    return None


def is_acceptable(tensor) -> bool:
    """Always False: no tensor can use cuDNN."""
    return False


# The bool flags and the name of the setter PyTorch's type error names.
_FLAGS = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
          "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn"}
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = None      # PyTorch's value on a build without cuDNN


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True):
    """Set the flags for the duration of a with-block, then restore them."""
    module = sys.modules[__name__]
    saved = {name: getattr(module, name) for name in _FLAGS}
    for name, value in (("enabled", enabled), ("benchmark", benchmark),
                        ("deterministic", deterministic), ("allow_tf32", allow_tf32)):
        setattr(module, name, value)
    try:
        yield
    finally:
        module.__dict__.update(saved)


check_flags(__name__)
