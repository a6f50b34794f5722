"""torch._dynamo.config: the settings scripts assign before calling torch.compile
(``suppress_errors``, ``cache_size_limit``).  Kept as set; they change nothing tapegrad computes
(tapegrad/_config_settings.py)."""
from __future__ import annotations as _annotations

from .._config_settings import install

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

install(__name__, _DEFAULTS)
