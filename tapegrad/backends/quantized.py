"""tapegrad.backends.quantized: the quantized engine setting (torch.backends.quantized.engine).

tapegrad's quantized kernels compute with the x86 engine's (FBGEMM's) arithmetic whatever the
setting; the setting is kept and validated as PyTorch does so that scripts which choose an engine
before quantizing run unchanged."""
from __future__ import annotations

import sys
import types

# PyTorch's CPU build order of supported_engines.
_SUPPORTED = ["qnnpack", "onednn", "x86", "fbgemm"]


class QuantizedEngine(types.ModuleType):
    """The module itself, with `engine` as a validated property (as PyTorch's)."""

    _engine = "x86"

    def __init__(self, module, name):
        super().__init__(name)
        self.__dict__.update({k: v for k, v in module.__dict__.items() if k != "__class__"})

    @property
    def engine(self) -> str:
        return self._engine

    @engine.setter
    def engine(self, value) -> None:
        if value not in _SUPPORTED:
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        type(self)._engine = value

    @property
    def supported_engines(self) -> list:
        return list(_SUPPORTED)


sys.modules[__name__] = QuantizedEngine(sys.modules[__name__], __name__)
