"""torch._dynamo.config: the settings scripts assign before calling torch.compile.

Their values are PyTorch's defaults and are kept as set, so a script that reads a setting back
sees what it wrote; tapegrad's replay (tapegrad/replay.py) captures every distinct signature and
falls back to eager by itself, so none of them changes what it computes.  As in PyTorch, reading
or assigning a setting that does not exist raises AttributeError ("... does not exist"): a typo
in a script's settings is not silently ignored.
"""
from __future__ import annotations

import sys
import types

# name -> PyTorch's default (torch 2.13).
_DEFAULTS = {
    "suppress_errors": False,
    "verbose": False,
    "cache_size_limit": 8,
    "recompile_limit": 8,
    "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256,
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    "force_parameter_static_shapes": True,
    "optimize_ddp": True,
    "inline_inbuilt_nn_modules": True,
    "specialize_int": False,
    "specialize_float": False,
    "dynamic_shapes": True,
    "guard_nn_modules": True,
    "error_on_recompile": False,
    "skip_nnmodule_hook_guards": True,
    "compiled_autograd": False,
}


class _ConfigModule(types.ModuleType):
    """A module whose attributes are exactly the settings above."""

    def __getattr__(self, name):
        # Reached only for names the module does not hold.
        raise AttributeError(f"{self.__name__.replace('tapegrad', 'torch', 1)}.{name} does not exist")

    def __setattr__(self, name, value):
        if name not in _DEFAULTS and not name.startswith("__"):
            raise AttributeError(f"{self.__name__.replace('tapegrad', 'torch', 1)}.{name} does not exist")
        super().__setattr__(name, value)


globals().update(_DEFAULTS)
sys.modules[__name__].__class__ = _ConfigModule
