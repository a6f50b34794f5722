"""The TorchScript executor's switches scripts set (torch.jit.fuser(...), set_fusion_strategy,
torch._C._jit_set_profiling_executor & co.): settings of how PyTorch runs a *scripted* graph,
which change no eager result.  tapegrad builds no graph (a scripted function runs its Python),
so each switch is the setting itself: it takes PyTorch's arguments, refuses what PyTorch's
refuses, answers what PyTorch's answers (its CPU defaults, then what was set), and affects
nothing, as PyTorch's affect nothing outside TorchScript."""
from __future__ import annotations as _annotations

import contextlib
import warnings

import numpy as np

# PyTorch's CPU build's initial settings
_state = {"can_fuse_on_cpu": False, "can_fuse_on_gpu": False, "texpr_fuser": True,
          "llga": False, "profiling_executor": True, "profiling_mode": True,
          "graph_executor_optimize": True, "num_profiled_runs": 1}
_fusion_strategy = [("STATIC", 2), ("DYNAMIC", 10)]


def _check(name: str, signature: str, value, kinds):
    """pybind11's refusal of an argument its caster cannot convert (_BOOL, _INT)."""
    if not isinstance(value, kinds):
        raise TypeError(f"{name}(): incompatible function arguments. The following argument "
                        f"types are supported:\n    1. {signature}\n\nInvoked with: {value!r}")
    return value


# (pybind11's bool caster converts None and numbers, as truth values; its int caster ints)
_BOOL = (bool, int, float, np.bool_, np.number, type(None))
_INT = (int, np.integer)


def _set_flag(key: str, name: str, value, returns_previous: bool):
    _check(name, "(arg0: bool) -> " + ("bool" if returns_previous else "None"), value, _BOOL)
    previous = _state[key]
    _state[key] = bool(value)
    return previous if returns_previous else None


def _jit_set_profiling_executor(value):
    return _set_flag("profiling_executor", "_jit_set_profiling_executor", value, True)


def _jit_set_profiling_mode(value):
    return _set_flag("profiling_mode", "_jit_set_profiling_mode", value, True)


def _jit_override_can_fuse_on_cpu(value):
    return _set_flag("can_fuse_on_cpu", "_jit_override_can_fuse_on_cpu", value, False)


def _jit_override_can_fuse_on_gpu(value):
    return _set_flag("can_fuse_on_gpu", "_jit_override_can_fuse_on_gpu", value, False)


def _jit_set_texpr_fuser_enabled(value):
    return _set_flag("texpr_fuser", "_jit_set_texpr_fuser_enabled", value, False)


def _jit_set_llga_enabled(value):
    return _set_flag("llga", "_jit_set_llga_enabled", value, True)


def _set_graph_executor_optimize(value):
    return _set_flag("graph_executor_optimize", "_set_graph_executor_optimize", value, False)


def _jit_can_fuse_on_cpu() -> bool:
    return _state["can_fuse_on_cpu"]


def _jit_can_fuse_on_gpu() -> bool:
    return False        # (a CPU build has no GPU fuser, whatever the override says)


def _jit_texpr_fuser_enabled() -> bool:
    return _state["texpr_fuser"]


def _jit_llga_enabled() -> bool:
    return _state["llga"]


def _get_graph_executor_optimize(new_settings=None) -> bool:
    """The setting; with `new_settings`, set it and return the previous one (PyTorch's)."""
    previous = _state["graph_executor_optimize"]
    if new_settings is not None:
        _check("_get_graph_executor_optimize",
               "(new_settings: bool | None = None) -> bool", new_settings, _BOOL)
        _state["graph_executor_optimize"] = bool(new_settings)
    return previous


def _jit_nvfuser_enabled():
    """nvFuser is gone from PyTorch: its switches are no-ops that answer None."""
    return None


def _jit_set_nvfuser_enabled(value):
    return None


def _jit_set_num_profiled_runs(runs):
    _check("_jit_set_num_profiled_runs",
           "(arg0: typing.SupportsInt | typing.SupportsIndex) -> int", runs, _INT)
    previous = _state["num_profiled_runs"]
    _state["num_profiled_runs"] = int(runs)
    return previous


def _jit_get_num_profiled_runs() -> int:
    return _state["num_profiled_runs"]


def _jit_set_fusion_strategy(strategy):
    """Set the executor's specialisations; returns the previous list."""
    global _fusion_strategy
    new = []
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
        new.append((kind, int(depth)))
    previous, _fusion_strategy = _fusion_strategy, new
    return previous


def _jit_set_bailout_depth(depth):
    """The deprecated form of a fusion strategy: [("STATIC", depth)]; returns the previous
    strategy's total depth."""
    _check("_jit_set_bailout_depth",
           "(arg0: typing.SupportsInt | typing.SupportsIndex) -> int", depth, _INT)
    previous = _jit_set_fusion_strategy([("STATIC", depth)])
    return sum(d for _, d in previous)


def _debug_set_autodiff_subgraph_inlining(value):
    _check("_debug_set_autodiff_subgraph_inlining", "(arg0: bool) -> None", value, _BOOL)
    return None


C_NAMES = ("_jit_set_profiling_executor", "_jit_set_profiling_mode",
           "_jit_override_can_fuse_on_cpu", "_jit_override_can_fuse_on_gpu",
           "_jit_set_texpr_fuser_enabled", "_jit_set_llga_enabled", "_set_graph_executor_optimize",
           "_jit_can_fuse_on_cpu", "_jit_can_fuse_on_gpu", "_jit_texpr_fuser_enabled",
           "_jit_llga_enabled", "_get_graph_executor_optimize", "_jit_nvfuser_enabled",
           "_jit_set_nvfuser_enabled", "_jit_set_num_profiled_runs", "_jit_get_num_profiled_runs",
           "_jit_set_fusion_strategy", "_jit_set_bailout_depth",
           "_debug_set_autodiff_subgraph_inlining")


# -- torch.jit's own -----------------------------------------------------------------------------

# each fuser's settings (PyTorch's torch.jit.fuser): (can fuse on cpu, on gpu, texpr, llga), and
# whether it turns the profiling executor and the executor's optimisation on for the duration
_FUSERS = {"fuser0": ((True, True, False, False), False),
           "fuser1": ((True, True, True, False), True),
           "fuser2": ((False, False, False, False), False),
           "fuser3": ((True, False, True, True), True),
           "none": ((False, False, False, False), False)}
_FUSER_KEYS = ("can_fuse_on_cpu", "can_fuse_on_gpu", "texpr_fuser", "llga")


@contextlib.contextmanager
def fuser(name):
    """Switch TorchScript's fuser for the duration ("fuser0" legacy, "fuser1" NNC, "fuser2"
    nvFuser, "fuser3" oneDNN Graph, "none"); the settings are put back after."""
    if name not in _FUSERS:
        raise Exception(f"unrecognized fuser option (name: {name})")  # (PyTorch's type)
    saved = dict(_state)
    settings, profiles = _FUSERS[name]
    _state.update(zip(_FUSER_KEYS, settings))
    if profiles:
        _state["profiling_executor"] = _state["graph_executor_optimize"] = True
    try:
        yield
    finally:
        for key in _FUSER_KEYS + (("profiling_executor", "graph_executor_optimize")
                                  if profiles else ()):
            _state[key] = saved[key]


def _deprecated(what: str) -> None:
    # (attributed to tapegrad, as PyTorch's to torch: hidden under the default filters)
    warnings.warn(f"`torch.jit.{what}` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning)


def set_fusion_strategy(strategy):
    """Set the specialisations of TorchScript's executor ([("STATIC", 2), ("DYNAMIC", 10)]);
    returns the previous list."""
    _deprecated("set_fusion_strategy")
    return _jit_set_fusion_strategy(strategy)


def enable_onednn_fusion(enabled: bool):
    """Turn TorchScript's oneDNN Graph fusion on or off."""
    _jit_set_llga_enabled(enabled)


def onednn_fusion_enabled() -> bool:
    return _jit_llga_enabled()
