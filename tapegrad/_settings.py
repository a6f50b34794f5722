"""Global switches PyTorch scripts set at their top (issue 15): deterministic algorithms, the
float32 matmul precision, flush-denormal, warn-always, and the autocast state queries.

What each means for tapegrad:
- deterministic algorithms: every tapegrad kernel is deterministic already (numpy on the CPU,
  fixed reduction order), so the flags are stored and reported.  The one visible effect is
  PyTorch's: uninitialised memory (empty, empty_like, new_empty, resize_ growing a tensor, ...)
  is filled with NaN (the largest value for integers, True for bool) unless
  torch.utils.deterministic.fill_uninitialized_memory is False (tapegrad._uninitialised, which
  holds the deterministic flag: the factories read it without importing this module).
- float32 matmul precision: 'high' and 'medium' *allow* PyTorch to use TF32 / bfloat16 inside
  float32 matmuls; tapegrad always computes at 'highest', which every setting permits.  The
  setting is stored and reported, as PyTorch's.
- flush denormal: numpy offers no switch for the FPU's flush-to-zero mode, so
  set_flush_denormal reports False ("not supported"), which PyTorch's contract allows.
- autocast: the per-thread state of torch.autocast (enabled per device type, the dtype, the
  weight cache, the nesting depth).  The CPU's enabled flag is mirrored in the C flag the
  autocast-listed ops test (tapegrad/_autocast.py); the per-device dtypes default to PyTorch's
  (bfloat16 for the CPU, float16 for CUDA).
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import sys
import threading
import warnings

from . import _core
from ._uninitialised import flags as _fill_flags

_state = {"warn_only": False, "matmul_precision": "highest", "warn_always": False}
_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def _require_bool(value, message: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(message.format(type(value).__name__))


# -- deterministic algorithms --------------------------------------------------------------------

def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (with warn_only, nondeterministic ones would warn
    instead of raising).  tapegrad's kernels are all deterministic: this records the choice."""
    _require_bool(mode, "_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        "bool, not {}")
    _require_bool(warn_only, "_set_deterministic_algorithms(): argument 'warn_only' must be "
                             "bool, not {}")
    _core._capture_setting("deterministic mode (use_deterministic_algorithms)")
    _fill_flags["deterministic"] = mode
    _state["warn_only"] = warn_only if mode else False


def are_deterministic_algorithms_enabled() -> bool:
    """Whether use_deterministic_algorithms(True) is in effect."""
    return _fill_flags["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode is on with warn_only=True."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0 / 'default': off; 1 / 'warn': deterministic, warn only; 2 / 'error': deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {_type_name(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 when deterministic mode is off, 1 when it only warns, 2 when it is on."""
    if not _fill_flags["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


# -- float32 matmul precision, flush denormal, warn always ---------------------------------------

def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium' (others warn and change nothing, as PyTorch).  tapegrad
    computes float32 matmuls at full precision under every setting, which all three allow."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _core._capture_setting("the float32 matmul precision (set_float32_matmul_precision)")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The precision last set by set_float32_matmul_precision ('highest' by default)."""
    return _state["matmul_precision"]


def set_flush_denormal(mode) -> bool:
    """Whether flushing denormals to zero could be configured: False, tapegrad has no access
    to the FPU's flush-to-zero mode (numbers keep their denormals)."""
    _require_bool(mode, "set_flush_denormal(): argument 'mode' (position 1) must be bool, not "
                        "{}")
    return False


def set_warn_always(b):
    """Ask warnings PyTorch issues once to be issued every time (stored; tapegrad's warnings
    follow Python's warning filters)."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {_type_name(b)}")
    _core._capture_setting("warn-always (set_warn_always)")
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """Whether set_warn_always(True) is in effect."""
    return _state["warn_always"]


# -- autocast state ------------------------------------------------------------------------------

_autocast = threading.local()
_DEFAULT_AUTOCAST_DTYPES = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16",
                            "xpu": "bfloat16", "hpu": "bfloat16", "xla": "bfloat16",
                            "ipu": "float16", "mtia": "float16", "maia": "float16"}


def _device_type(device_type: str) -> str:
    from .amp import _DEVICE_TYPES
    if not isinstance(device_type, str):
        raise TypeError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {device_type}")
    return kind


def _table(name: str) -> dict:
    table = getattr(_autocast, name, None)
    if table is None:
        table = {}
        setattr(_autocast, name, table)
    return table


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for device_type in this thread."""
    return _table("enabled").get(_device_type(device_type), False)


def set_autocast_enabled(device_type, enabled=None):
    """Switch autocast for a device type in this thread (set_autocast_enabled(enabled) means
    CUDA).  The CPU's switch is also the C flag its autocast-listed ops test."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    kind = _device_type(device_type)
    _table("enabled")[kind] = bool(enabled)
    if kind == "cpu":
        was_on = _core._set_autocast_on(bool(enabled))
        if bool(enabled) != was_on:
            # A compiled function's replay would skip the casts (its capture baked in the dtypes
            # of the context it was made in): the calls leave the replay path while a thread
            # autocasts (src/tapegrad/replay.pxi), and a region entered during a capture makes
            # that function run eagerly (tapegrad/replay.py).
            _core._note_replay_skipping_context(1 if enabled else -1)
            replay = sys.modules.get("tapegrad.replay")
            if enabled and replay is not None:
                replay._replay_skipping_context_entered("an autocast region")


def get_autocast_dtype(device_type: str):
    """The dtype autocast would use on device_type (PyTorch's defaults unless set)."""
    kind = _device_type(device_type)
    dtype = _table("dtype").get(kind)
    return dtype if dtype is not None else getattr(_core, _DEFAULT_AUTOCAST_DTYPES.get(kind,
                                                                                       "float16"))


def set_autocast_dtype(device_type: str, dtype):
    """Set the dtype autocast would use on device_type."""
    if not isinstance(dtype, _core.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not "
                        f"{_type_name(dtype)}")
    _core._capture_setting("autocast's dtype (set_autocast_dtype)")
    _table("dtype")[_device_type(device_type)] = dtype


def _deprecated(old: str, new: str):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: is_autocast_enabled('cpu')."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """Deprecated: set_autocast_enabled('cpu', enabled)."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Deprecated: get_autocast_dtype('cpu')."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    """Deprecated: set_autocast_dtype('cpu', dtype)."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """Deprecated: get_autocast_dtype('cuda')."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """Deprecated: set_autocast_dtype('cuda', dtype)."""
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches its casts of weights (on by default)."""
    return _table("cache").get("enabled", True)


def set_autocast_cache_enabled(enabled):
    """Switch autocast's weight cache (tapegrad/_autocast.py)."""
    _require_bool(enabled, "set_autocast_cache_enabled(): argument 'enabled' (position 1) must "
                           "be bool, not {}")
    _core._capture_setting("autocast's cache (set_autocast_cache_enabled)")
    _table("cache")["enabled"] = enabled


def clear_autocast_cache():
    """Empty autocast's weight cache (the outermost autocast region's exit does)."""
    from ._autocast import clear_cache
    clear_cache()


def autocast_increment_nesting() -> int:
    """Count one more entered autocast region; returns the new depth."""
    depth = _table("nesting").get("depth", 0) + 1
    _table("nesting")["depth"] = depth
    return depth


def autocast_decrement_nesting() -> int:
    """Count one autocast region left; returns the new depth."""
    depth = _table("nesting").get("depth", 0) - 1
    _table("nesting")["depth"] = depth
    return depth
