"""torch._logging: PyTorch's switches for its compiler's logs (set_logs, or TORCH_LOGS).

tapegrad's compiler is tapegrad.compile (capture, replay), which has no bytecode, AOT graphs or
generated kernels to show: set_logs checks its arguments as PyTorch's does and keeps them, and
of the logs it names, tapegrad writes the one it has the events for: ``recompiles`` (and
``recompiles_verbose``), a line to stderr when a compiled function compiles again, with the guard
failures that made it (tapegrad/_compile_stance.py models torch.compile's compilations), in
PyTorch's log format."""
from __future__ import annotations as _annotations

import logging
import os
import sys
import time

__all__ = ["set_logs", "DEFAULT_LOGGING", "getArtifactLogger", "warning_once"]

# The logs taking a level (PyTorch's "log" arguments); every other keyword is an artifact (bool).
_LEVEL_LOGS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d",
               "ddp", "fsdp", "dtensor", "onnx", "export")
_ARTIFACTS = (
    "bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
    "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards", "recompiles",
    "recompiles_verbose", "trace_source", "trace_call", "trace_bytecode", "output_code",
    "kernel_code", "schedule", "perf_hints", "pre_grad_graphs", "post_grad_graphs",
    "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion", "overlap", "cudagraphs",
    "sym_node", "compiled_autograd", "compiled_autograd_verbose", "cudagraph_static_inputs",
    "benchmarking", "autotuning", "incremental", "graph_region_expansion", "inductor_metrics",
    "hierarchical_compile", "compute_dependencies", "caching")
_VALID_LEVELS = (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG,
                 logging.NOTSET)

DEFAULT_LOGGING = {"dynamo": logging.INFO, "aot": logging.INFO, "inductor": logging.INFO,
                   "fsdp": logging.INFO, "ddp_graphs": True, "graph_breaks": True,
                   "guards": True, "recompiles": True, "dynamic": logging.INFO}

# What set_logs set last: level logs -> level, artifacts -> True, modules -> level.
_settings: dict = {}


def set_logs(*, modules=None, **settings) -> None:
    """Set the levels of PyTorch's compiler logs and turn its artifacts on (all off when called
    with nothing), as torch._logging.set_logs."""
    chosen = {}
    for name, value in settings.items():
        if name in _LEVEL_LOGS:
            if value is None:
                continue
            if value not in _VALID_LEVELS or isinstance(value, bool):
                raise ValueError(f"Unrecognized log level for log {name}: {value}, valid level "
                                 "values are: " + ",".join(str(v) for v in _VALID_LEVELS))
            chosen[name] = value
        elif name in _ARTIFACTS:
            if value:
                chosen[name] = True
        else:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    chosen.update(modules or {})
    _settings.clear()
    _settings.update(chosen)


def getArtifactLogger(module_qname: str, artifact_name: str) -> logging.Logger:
    """A logger for `artifact_name` under `module_qname` (shown when that artifact is on)."""
    logger = logging.getLogger(f"{module_qname}.__{artifact_name}")
    logger.disabled = artifact_name not in _ARTIFACTS
    return logger


_warned: set = set()


def warning_once(logger_obj, *args, **kwargs) -> None:
    """logger_obj.warning(*args, **kwargs), once per distinct arguments."""
    key = (id(logger_obj), args, tuple(sorted(kwargs.items())))
    if key not in _warned:
        _warned.add(key)
        logger_obj.warning(*args, **kwargs)


def _log_recompile(compile_id: str, text: str) -> None:
    """A recompile's lines on stderr, when set_logs(recompiles=True) asked for them, in PyTorch's
    log line format (level letter, date, time, pid, source, [compile id] [__artifact])."""
    if not (_settings.get("recompiles") or _settings.get("recompiles_verbose")):
        return
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e6):06d}"
    prefix = f"V{stamp} {os.getpid()} tapegrad/_compile_stance.py] [{compile_id}] [__recompiles] "
    sys.stderr.write("".join(prefix + line + "\n" for line in text.splitlines()))
