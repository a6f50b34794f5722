"""tapegrad: a small, fast, PyTorch-compatible reverse-mode autodiff library.

Operations on tensors that require grad are appended to a flat Wengert tape (compiled, in creation
order); backward() is one compiled reverse sweep over it.  `import tapegrad as torch` runs small
PyTorch autograd scripts unchanged.
"""
from . import _core
from . import _modules  # noqa: F401  (the op families' extension modules, before any use of _core)
from ._core import (
    bool_ as bool,  # noqa: A001  (PyTorch's name)
    bfloat16,
    complex32,
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    exp,
    log,
    tanh,
    relu,
    neg,
    add,
    sub,
    mul,
    div,
    pow,
    sum,
    mean,
    argmax,
    result_type,
    set_default_dtype,
    get_default_dtype,
)
# Functions the compiled op families register for the tapegrad.* namespace.
globals().update(_core.TORCH_FUNCTIONS)

from .tensor import Size, Tensor
from ._layout import layout, strided, sparse_coo
# Sparse COO tensors: a Python-level class over the recorded dense ops (tapegrad._sparse_coo).
from ._sparse_coo import SparseTensor as _SparseTensor, sparse_coo_tensor, spmm
from ._device import device, set_default_device, get_default_device
from ._legacy import (
    FloatTensor,
    DoubleTensor,
    HalfTensor,
    LongTensor,
    IntTensor,
    ShortTensor,
    CharTensor,
    ByteTensor,
    BoolTensor,
)
from .creation import (
    tensor,
    as_tensor,
    from_numpy,
    zeros,
    ones,
    full,
    empty,
    zeros_like,
    ones_like,
    full_like,
    empty_like,
    arange,
    logspace,
    manual_seed,
    randn,
    rand,
    linspace,
    eye,
    randint,
    randperm,
    normal,
)
from . import random
from .random import (
    Generator,
    default_generator,
    seed,
    initial_seed,
    get_rng_state,
    set_rng_state,
    multinomial,
    bernoulli,
    poisson,
    rand_like,
    randn_like,
    randint_like,
)
from ._default_tensor_type import set_default_tensor_type
from ._dlpack import from_dlpack
from . import _extra_ops
from ._type_info import finfo, iinfo
_extra_ops.register(globals(), Tensor)
from . import _scatter_ops
_scatter_ops.register(globals(), Tensor)
from . import _shift_ops
_shift_ops.register(globals(), Tensor)
from . import _linalg_aliases
_linalg_aliases.register(globals(), Tensor)
from . import _more_ops, _more_stats
_more_ops.register(globals(), Tensor)
_more_stats.register(globals(), Tensor)
from . import _tutorial_ops
_tutorial_ops.register(globals(), Tensor)
from . import _inplace_views
_inplace_views.register(Tensor)
from . import _special_functions
_special_functions.register(globals(), Tensor)
from . import _strided
_strided.register(globals(), Tensor)
from . import _torch_functional
_torch_functional.register(globals(), Tensor)
from . import _more_math
_more_math.register(globals(), Tensor)
from . import _more_creation, _more_tensor_ops
_more_creation.register(globals(), Tensor)
_more_tensor_ops.register(globals(), Tensor)
from . import _memory_format, _settings
_memory_format.register(globals(), Tensor)
_settings.register(globals())


def set_anomaly_enabled(enabled, check_nan=True):
    """Switch anomaly detection on or off (what torch.autograd.set_detect_anomaly calls)."""
    from .autograd.anomaly_mode import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled, inference_mode,
                        is_inference_mode_enabled, is_inference)
from . import _saved_attrs  # noqa: F401  (installs the grad_fn._saved_* reader in the core)


def is_tensor(obj) -> bool:
    """Whether obj is a tapegrad tensor, dense or sparse (a sparse COO tensor is not a
    ``tapegrad.Tensor`` instance, but PyTorch calls it a tensor)."""
    return isinstance(obj, (_core.TensorBase, _SparseTensor))


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating-point one (float16, float32, float64)."""
    _extra_ops._check_tensor(input, "is_floating_point")
    return input._array.dtype.kind == "f"


def is_complex(input) -> bool:
    """Always False for a tensor: tapegrad has no complex dtypes. ``input`` must be a tensor
    (``TypeError`` otherwise).
    """
    _extra_ops._check_tensor(input, "is_complex")
    return False


# einsum, addmm, baddbmm: composed from the compiled ops (issue 17).
from .contractions import addmm, baddbmm, einsum  # noqa: E402
# Submodules load on first use (PEP 562), keeping `import tapegrad` close to `import numpy`.
_LAZY_MODULES = ("nn", "optim", "utils", "autograd", "demo", "bench", "serialization",
                 "distributions", "cuda", "backends", "accelerator", "linalg",
                 "multiprocessing", "sparse", "special", "testing", "onnx", "amp", "distributed",
                 "jit", "profiler", "hub", "fft", "cpu")
_LAZY_ATTRS = {"save": "serialization", "load": "serialization", "compile": "replay",
               "autocast": "amp", "get_num_threads": "_threads", "set_num_threads": "_threads",
               "get_num_interop_threads": "_threads", "set_num_interop_threads": "_threads",
               "is_anomaly_enabled": "autograd.anomaly_mode",
               "is_anomaly_check_nan_enabled": "autograd.anomaly_mode",
               "get_device_module": "cpu"}


def __getattr__(name):
    import importlib
    if name in _LAZY_MODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _LAZY_ATTRS:
        value = getattr(importlib.import_module(f".{_LAZY_ATTRS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tapegrad' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES) | set(_LAZY_ATTRS))

half = float16
cfloat = complex64
cdouble = complex128
chalf = complex32
short = int16
float = float32  # noqa: A001
double = float64
int = int32  # noqa: A001
long = int64

from .version import __version__  # noqa: E402  (the one source: tapegrad/version.py)

# torch.cdist lives with the nn distances (composed of differentiable ops).
_LAZY_ATTRS.update(cdist="nn._extra_losses")
# torch.func's transforms (torch.vmap is torch.func.vmap).
_LAZY_MODULES += ("func",)
_LAZY_ATTRS.update(vmap="func")

from ._pickle_names import repoint as _repoint  # noqa: E402
_repoint(globals(), __name__)  # tapegrad.abs & co. pickle by name

from . import _meta as _meta  # noqa: E402
_meta.install_factories()  # device='meta' on the creation functions
