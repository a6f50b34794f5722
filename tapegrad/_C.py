"""tapegrad._C: the few names of PyTorch's compiled module that model and training scripts call
directly (torch._C._get_tracing_state() in forward methods and distributions,
torch._C._set_grad_enabled, torch._C.Generator ...), each the tapegrad function that does that
job.  Not a copy of PyTorch's internals: a name not here is an AttributeError, as for any missing
attribute."""
from __future__ import annotations as _annotations

from . import _core
from ._core import is_grad_enabled
from ._foreach import group_by_device_and_dtype as _group_tensors_by_device_and_dtype
from ._random import Generator
from .autograd.variable import _EngineBase
from .linalg import LinAlgError as _LinAlgError
from .overrides import _disabled_torch_function_impl
from .overrides import _DisableTorchFunction as DisableTorchFunction
from .overrides import _DisableTorchFunctionSubclass as DisableTorchFunctionSubclass
from .overrides import _is_torch_function_mode_enabled, _len_torch_function_stack

__all__ = ["Generator", "is_grad_enabled", "_set_grad_enabled", "_get_tracing_state",
           "_LinAlgError", "_log_api_usage_once", "_disabled_torch_function_impl",
           "DisableTorchFunction", "DisableTorchFunctionSubclass", "_EngineBase", "_current_graph_task_id",
           "_is_torch_function_mode_enabled", "_len_torch_function_stack",
           "_group_tensors_by_device_and_dtype", "_get_privateuse1_backend_name"]


def _current_graph_task_id() -> int:
    """An id of the backward pass running on this thread (the same throughout the pass), or -1
    outside one."""
    current = _core._backward_pass()
    return -1 if current is None else id(current)


def _get_tracing_state():
    """PyTorch's TracingState while torch.jit.trace records a graph, else None.  tapegrad's
    jit.trace runs the function eagerly and records no graph, so there is never a state: code
    that asks takes its eager path, which is what tapegrad runs."""
    return None


def _set_grad_enabled(enabled):
    """Turn gradient recording on or off for this thread (what torch.set_grad_enabled does
    without a context); returns None, as PyTorch's."""
    _core.check_bool("set_grad_enabled", "enabled", enabled, 1)
    _core._set_grad_enabled(enabled)


def _get_privateuse1_backend_name() -> str:
    """The name of the out-of-tree device backend (PyTorch's default, none being registered)."""
    return "privateuseone"


def _log_api_usage_once(event):
    """PyTorch logs `event` to the usage logger a deployment may install; tapegrad has none, so
    only the argument is checked."""
    if not isinstance(event, str):
        raise TypeError("bad argument type for built-in operation")


# Public names of PyTorch's compiled module that torch re-exports at its top level, the very same
# objects (torch._C.device is torch.device).  Editors' auto-import writes `from torch._C import
# device` (dtype, Size, layout, ...), so these resolve to tapegrad's top-level object; the
# TorchScript IR types of torch._C's public namespace are not here (tapegrad has no IR).
_TOP_LEVEL = frozenset((
    "AcceleratorError", "Event", "OutOfMemoryError", "Size", "Stream", "autocast_decrement_nesting",
    "autocast_increment_nesting", "clear_autocast_cache", "default_generator", "device", "dtype",
    "finfo", "fork", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
    "get_default_dtype", "get_num_interop_threads", "get_num_threads", "has_lapack", "has_mkl",
    "has_openmp", "has_spectral", "iinfo", "init_num_threads", "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled", "is_autocast_cache_enabled", "is_autocast_cpu_enabled",
    "is_autocast_enabled", "is_inference_mode_enabled", "layout", "memory_format", "qscheme",
    "set_anomaly_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled",
    "set_autocast_gpu_dtype", "set_flush_denormal", "set_num_interop_threads", "set_num_threads",
    "wait"))


# torch._C's classes that tapegrad has under another home: the same role, so isinstance checks
# against them hold (torch.jit.ScriptFunction is torch._C.ScriptFunction, torch.jit.Error is
# torch._C.JITException, torch.futures.Future derives from torch._C.Future, torch.Tensor from
# torch._C.TensorBase).
_ELSEWHERE = {"ScriptFunction": ("jit", "ScriptFunction"), "JITException": ("jit", "Error"),
              "Future": ("futures", "Future"), "TensorBase": ("_core", "TensorBase")}

# TorchScript's IR and type classes.  Scripts import them by accident far more often than they
# use them: an editor completing `Node`, `Value`, `Type` or `NoneType` writes `from torch._C
# import Node`, and the script never touches it.  tapegrad builds no IR, so each is a class that
# imports, matches no object, and cannot be made: those PyTorch gives no constructor raise its
# TypeError, the others say the IR is missing.
_NO_CONSTRUCTOR = frozenset((
    "AliasDb", "AnyType", "ArgumentSpec", "Block", "BoolType", "Capsule", "Code",
    "CompleteArgumentSpec", "ComplexType", "ConcreteModuleType", "DeviceObjType", "ExecutionPlan",
    "FloatType", "Gradient", "GraphExecutorState", "IntType", "Node", "NoneType", "NumberType",
    "PyObjectType", "ScriptClass", "ScriptClassFunction", "ScriptDictIterator",
    "ScriptDictKeyIterator", "ScriptListIterator", "ScriptMethod", "ScriptObject",
    "ScriptObjectProperty", "StreamObjType", "StringType", "SymBoolType", "SymIntType",
    "TensorType", "TracingState", "Type", "Use", "Value"))
_IR_CLASSES = _NO_CONSTRUCTOR | frozenset((
    "Argument", "AwaitType", "ClassType", "CompilationUnit", "ConcreteModuleTypeBuilder",
    "DictType", "EnumType", "ErrorReport", "FileCheck", "FunctionSchema", "FutureType", "Graph",
    "InferredType", "InterfaceType", "ListType", "LiteScriptModule", "OptionalType", "RRefType",
    "ScriptDict", "ScriptList", "ScriptModule", "TupleType", "UnionType"))


def _ir_class(name):
    def __init__(self, *args, **kwargs):
        if name in _NO_CONSTRUCTOR:
            raise TypeError(f"torch._C.{name}: No constructor defined!")
        raise NotImplementedError(f"tapegrad builds no TorchScript IR: torch._C.{name} is not "
                                  "available")
    return type(name, (), {"__init__": __init__, "__module__": "torch",
                           "__doc__": f"TorchScript's {name}: importable, never constructed "
                                      "(tapegrad builds no IR)."})


def __getattr__(name):
    if name in _TOP_LEVEL:
        import tapegrad
        value = getattr(tapegrad, name)
    elif name in _ELSEWHERE:
        import importlib
        home, attr = _ELSEWHERE[name]
        value = getattr(importlib.import_module(f"tapegrad.{home}"), attr)
    elif name in _IR_CLASSES:
        value = _ir_class(name)
    else:
        return _internal(name)
    globals()[name] = value
    return value


def _internal(name):
    # torch._C._nn, _linalg, _special, _fft: the compiled homes of the nn.functional builtins
    # (F.linear is torch._C._nn.linear) and of torch.linalg / special / fft's functions
    # (torch._C._linalg.linalg_norm), which torch.fx's generated code names; built on first use
    # so that importing _C imports none of them.
    import types

    from .fx.node import F_BUILTINS, SUBMODULE_BUILTINS
    from .jit import _fuser
    if name in _fuser.C_NAMES:      # (TorchScript executor's switches: tapegrad/jit/_fuser.py)
        return getattr(_fuser, name)
    if name == "_nn":
        from .nn import functional
        module = types.ModuleType("torch._C._nn")
        for fn_name in F_BUILTINS["torch._C._nn"]:
            if hasattr(functional, fn_name):
                setattr(module, fn_name, getattr(functional, fn_name))
    elif name[1:] in SUBMODULE_BUILTINS:
        import importlib
        sub = name[1:]
        space = importlib.import_module(f"tapegrad.{sub}")
        module = types.ModuleType(f"torch._C.{name}")
        for fn_name, fn in vars(space).items():
            if not fn_name.startswith("_") and callable(fn) and not isinstance(fn, (type, types.ModuleType)):
                setattr(module, f"{sub}_{fn_name}", fn)
    else:
        raise AttributeError(f"module 'torch._C' has no attribute '{name}'")
    globals()[name] = module
    return module
