"""torch.utils.deterministic: `fill_uninitialized_memory`, whether uninitialised memory (empty,
new_empty, resize_ growing a tensor, ...) is filled with a known value (NaN, or the largest
integer) while torch.use_deterministic_algorithms(True) is in effect.  True by default."""
import sys
import types

from .._uninitialised import flags as _flags


class _Deterministic(types.ModuleType):
    # (a module attribute that checks what is assigned to it, as PyTorch's module does)
    @property
    def fill_uninitialized_memory(self) -> bool:
        """Whether to fill uninitialized memory with a known value when
        torch.use_deterministic_algorithms() is set to True."""
        return _flags["fill_uninitialized_memory"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode) -> None:
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _flags["fill_uninitialized_memory"] = mode


sys.modules[__name__].__class__ = _Deterministic
