"""tapegrad.cuda: the torch.cuda API of a PyTorch build without CUDA.

Scripts probe it (`torch.cuda.is_available()`), seed it (`torch.cuda.manual_seed_all(0)`) and tidy
it (`torch.cuda.empty_cache()`) whatever machine they run on, so those calls answer or do nothing
exactly as they do in PyTorch's CPU build; the calls that need a GPU raise its AssertionError, or
the AttributeError of its missing `torch._C` bindings where PyTorch calls one without initialising.
"""
from __future__ import annotations as _annotations

from .. import _legacy
from .._device import _NO_CUDA, check_device as _check_device
from . import amp  # noqa: F401  (torch.cuda.amp.GradScaler / autocast; also importable as a module)
from .._torch_names import object_repr as _object_repr


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (torch.OutOfMemoryError, also torch.cuda.OutOfMemoryError).
    Never raised here, where there is no device; scripts name it in `except` clauses."""


class AcceleratorError(RuntimeError):
    """An accelerator reported an error (torch.AcceleratorError); never raised here."""


def _no_cuda():
    raise AssertionError(_NO_CUDA)


# A few torch.cuda functions skip the lazy CUDA initialisation (and its AssertionError) and call a
# binding of torch._C directly; the CPU build lacks those bindings, so the call fails with the
# AttributeError Python raises for a missing module attribute.  Scripts see that error (and
# `except AttributeError` catches it), so it is reproduced word for word.
def _missing_binding(name: str):
    raise AttributeError(f"module 'torch._C' has no attribute '{name}'")


def _device_index(device, optional: bool = False):
    """The CUDA ordinal named by `device` (an int, 'cuda:i' or a torch.device), as torch.cuda's
    argument parsing reads it: a non-CUDA device is a ValueError, and so is a device without an
    index unless `optional` (then None: the current device, which the caller never reaches)."""
    from .._device import as_device
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str) or type(device).__name__ == "device":
        d = as_device(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        if d.index is not None:
            return d.index
        device = d
    if optional and (device is None or getattr(device, "type", None) == "cuda"):
        return None
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")


def is_available() -> bool:
    """Always False: tapegrad runs on the CPU only, as a PyTorch build without CUDA."""
    return False


# PyTorch's module flag, read directly by scripts that save CUDA random states only once CUDA
# is in use (reversible networks' `if torch.cuda._initialized:`).  Never set: no CUDA here.
_initialized = False


def is_initialized() -> bool:
    """Always False: there is no CUDA state to initialise."""
    return _initialized


def device_count() -> int:
    """Always 0: no CUDA devices."""
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Always False: no CUDA device supports bfloat16 here."""
    return False


def get_arch_list() -> list:
    """Always ``[]``: no CUDA architectures are compiled in."""
    return []


# Seeding the CUDA generators is a no-op without CUDA (PyTorch queues it for a lazy init that
# never comes); the seed must still be an integer.
def manual_seed(seed) -> None:
    """Accept a seed for the (absent) CUDA generator: a no-op, as in PyTorch without CUDA; ``seed``
    must still convert to an integer.
    """
    int(seed)


def manual_seed_all(seed) -> None:
    """Accept a seed for all (absent) CUDA generators: a no-op; ``seed`` must convert to an integer."""
    int(seed)


def seed() -> None:
    """No-op: there is no CUDA generator to reseed."""
    return None


def seed_all() -> None:
    """No-op: there are no CUDA generators to reseed."""
    return None


def empty_cache() -> None:
    """Releasing cached GPU memory: nothing is cached without CUDA."""
    return None


# Memory statistics of a device that was never used are zero.
def memory_allocated(device=None) -> int:
    """Always 0: no CUDA memory is ever allocated."""
    return 0


def max_memory_allocated(device=None) -> int:
    """Always 0: no CUDA memory is ever allocated."""
    return 0


def memory_reserved(device=None) -> int:
    """Always 0: no CUDA memory is ever reserved."""
    return 0


def max_memory_reserved(device=None) -> int:
    """Always 0: no CUDA memory is ever reserved."""
    return 0


# Everything below needs a CUDA device.
def init() -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def synchronize(device=None) -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled`` (there is no device
    to wait for).
    """
    _no_cuda()


def current_device() -> int:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def get_device_name(device=None) -> str:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def get_device_capability(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def get_device_properties(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def initial_seed() -> int:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled`` (use
    ``tapegrad.initial_seed()`` for the CPU generator).
    """
    _no_cuda()


def get_rng_state(device="cuda"):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled`` (use
    ``tapegrad.get_rng_state()`` for the CPU generator).
    """
    _no_cuda()


def get_rng_state_all():
    """The states of all CUDA generators: none without a CUDA device, so an empty list."""
    return []


def set_rng_state(new_state, device="cuda") -> None:
    """Does nothing, as PyTorch without CUDA: it copies the state (so a non-tensor raises its
    AttributeError) and defers the call until CUDA initializes, which never happens here (use
    ``tapegrad.set_rng_state()`` for the CPU generator)."""
    new_state.clone()


def set_rng_state_all(new_states) -> None:
    """Set each device's CUDA generator state, as ``set_rng_state`` (so nothing happens)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def mem_get_info(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def ipc_collect() -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def current_stream(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def set_device(device) -> None:
    """Selecting a CUDA device: a negative ordinal is ignored; any other raises the AttributeError of
    PyTorch's CPU build (its `torch._C._cuda_setDevice` binding is absent); a non-CUDA device or one
    without an index is a ValueError, as in PyTorch."""
    if _device_index(device) >= 0:
        _missing_binding("_cuda_setDevice")


# The memory-statistics resets and the allocator snapshot also go straight to absent bindings.
def reset_peak_memory_stats(device=None) -> None:
    """Raise the AttributeError of PyTorch's CPU build (no `_cuda_resetPeakMemoryStats`)."""
    _device_index(device, optional=True)
    _missing_binding("_cuda_resetPeakMemoryStats")


def reset_accumulated_memory_stats(device=None) -> None:
    """Raise the AttributeError of PyTorch's CPU build (no `_cuda_resetAccumulatedMemoryStats`)."""
    _device_index(device, optional=True)
    _missing_binding("_cuda_resetAccumulatedMemoryStats")


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (with PyTorch's FutureWarning)."""
    import warnings
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """Deprecated spelling of ``reset_peak_memory_stats`` (with PyTorch's FutureWarning)."""
    import warnings
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_snapshot(*args, **kwargs):
    """Raise the AttributeError of PyTorch's CPU build (no `_cuda_memorySnapshot`)."""
    _missing_binding("_cuda_memorySnapshot")


def memory_stats_as_nested_dict(device=None) -> dict:
    """The allocator's statistics: none before CUDA is initialised, which it never is here."""
    return {}


def memory_stats(device=None):
    """The allocator's statistics flattened into an OrderedDict: empty, as in PyTorch's CPU build."""
    import collections
    return collections.OrderedDict()


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """PyTorch formats the allocator's statistics and, with none recorded (its CPU build), fails
    looking up the first one with a KeyError; so does this (after the same device check)."""
    _device_index(device, optional=True)
    raise KeyError("allocated_bytes.all.current")


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved`` (with PyTorch's FutureWarning): always 0."""
    import warnings
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved`` (with PyTorch's FutureWarning): always 0."""
    import warnings
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
                  FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


def list_gpu_processes(device=None) -> str:
    """PyTorch's answer when the NVML bindings (pynvml) are absent, as they are here."""
    return "pynvml module not found, please install nvidia-ml-py"


def utilization(device=None) -> int:
    """GPU utilisation needs the NVML bindings: PyTorch's ModuleNotFoundError when they are absent."""
    raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be imported.")


class _CudaTypedTensorMeta(_legacy.TypedTensorMeta):
    """The metaclass of torch.cuda.FloatTensor & co.: old scripts name them (`Tensor =
    torch.cuda.FloatTensor if cuda else torch.FloatTensor`, isinstance checks); as in PyTorch's
    CPU build they exist, no tensor is one, and calling one raises TypeError."""

    is_cuda = True

    def __call__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with "
                        f"CUDA enabled.")

    def __instancecheck__(cls, obj) -> bool:
        return False


def _cuda_tensor_class(cpu_class) -> type:
    return _legacy.legacy_tensor_class(_CudaTypedTensorMeta, cpu_class.__name__, cpu_class.dtype,
                                       "tapegrad.cuda", f"The CUDA counterpart of "
                                       f"{cpu_class.__name__}: no CUDA here.")


FloatTensor = _cuda_tensor_class(_legacy.FloatTensor)
DoubleTensor = _cuda_tensor_class(_legacy.DoubleTensor)
HalfTensor = _cuda_tensor_class(_legacy.HalfTensor)
LongTensor = _cuda_tensor_class(_legacy.LongTensor)
IntTensor = _cuda_tensor_class(_legacy.IntTensor)
ShortTensor = _cuda_tensor_class(_legacy.ShortTensor)
CharTensor = _cuda_tensor_class(_legacy.CharTensor)
ByteTensor = _cuda_tensor_class(_legacy.ByteTensor)
BoolTensor = _cuda_tensor_class(_legacy.BoolTensor)


class device:
    """``with torch.cuda.device(i):`` selects a CUDA device: constructing one works, entering it
    raises PyTorch's RuntimeError (no CUDA here); ``device(-1)`` or None selects nothing."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, device) -> None:
        from .._device import as_device
        if device is None or (isinstance(device, int) and not isinstance(device, bool)):
            self.idx = -1 if device is None else device
        else:
            self.idx = as_device(device).index
            self.idx = -1 if self.idx is None else self.idx
        self.prev_idx = -1

    def __enter__(self):
        if self.idx != -1:
            raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc) -> bool:
        return False


class device_of(device):
    """``with torch.cuda.device_of(t):`` the device of tensor `t`: nothing to select for a CPU
    tensor."""

    def __init__(self, obj) -> None:
        super().__init__(-1)


class Stream:
    """A CUDA stream: raises PyTorch's RuntimeError (no CUDA here)."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    """A CUDA event (timing GPU work): raises PyTorch's RuntimeError (no CUDA here)."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class Event")


class StreamContext:
    """``with torch.cuda.stream(s):`` selects a CUDA stream for the block: without a CUDA device
    there is none to select, so entering and leaving do nothing, whatever `stream` is (PyTorch's
    CPU build, which records the stream and device index -1)."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, stream) -> None:
        self.stream = stream
        self.idx = -1
        self.src_prev_stream = self.dst_prev_stream = None

    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        return None


def stream(stream) -> StreamContext:
    """A context manager selecting `stream` (a no-op here: no CUDA device)."""
    return StreamContext(stream)


class CUDAGraph:
    """A captured CUDA graph: PyTorch's CPU build has only the dummy class, which refuses to be made."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class CUDAGraph")


class graph:
    """``with torch.cuda.graph(g):`` captures work into `g`; it makes a side stream first, so
    without CUDA it fails there, with PyTorch's RuntimeError."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global",
                 enable_annotations: bool = False, check_input_liveness: bool = False) -> None:
        Stream()


def is_current_stream_capturing() -> bool:
    """Asks an absent binding: the RuntimeError PyTorch's CPU build raises."""
    raise RuntimeError("Tried to instantiate dummy base class _cuda_isCurrentStreamCapturing")


def graph_pool_handle():
    """Asks an absent binding: the RuntimeError PyTorch's CPU build raises."""
    raise RuntimeError("Tried to instantiate dummy base class _graph_pool_handle")


def make_graphed_callables(callables, sample_args, *args, **kwargs):
    """Captures graphs, so PyTorch's CPU build fails making the first CUDAGraph."""
    CUDAGraph()


def default_stream(device=None):
    """Raise PyTorch's ``AssertionError: Torch not compiled with CUDA enabled``."""
    _no_cuda()


# A build without CUDA has no CUDA generators.
default_generators: tuple = ()


from . import random  # noqa: E402,F401  (torch.cuda.random, importable without its own import)
from . import graphs, memory, nvtx, streams  # noqa: E402,F401  (torch.cuda's submodules, likewise)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
