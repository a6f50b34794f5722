"""tapegrad: a small, fast, PyTorch-compatible reverse-mode autodiff library.

Operations on tensors that require grad are appended to a flat Wengert tape (compiled, in creation
order); backward() is one compiled reverse sweep over it.  `import tapegrad as torch` runs small
PyTorch autograd scripts unchanged.
"""
import sys as _sys

from . import _core, _lazy
from . import _modules  # noqa: F401  (the op families' extension modules, before any use of _core)
from ._core import (
    bool_ as bool,  # noqa: A001  (PyTorch's name)
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
    uint16,
    uint32,
    uint64,
    qint8,
    quint8,
    qint32,
    quint4x2,
    quint2x4,
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
from ._torch_names import name_as_registered as _name_as_registered  # noqa: E402
_name_as_registered(_core.TORCH_FUNCTIONS)

from .tensor import Size, Tensor
from ._layout import (layout, strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr,
                      sparse_bsc, jagged)
from ._device import device, set_default_device, get_default_device
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
from ._random import (
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
from ._dlpack import from_dlpack, to_dlpack
from . import _extra_ops
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
from . import _spectral
_spectral.register(globals(), Tensor)
from . import _more_creation, _more_tensor_ops
_more_creation.register(globals(), Tensor)
_more_tensor_ops.register(globals(), Tensor)
from . import _copy_variants
_copy_variants.register(globals())
from . import _native_ops
_native_ops.register(globals())
from . import _foreach
_foreach.register(globals())
from . import _fake_quantize
_fake_quantize.register(globals())
from . import _memory_format
_memory_format.register(globals(), Tensor)
from ._control_flow import cond, while_loop  # noqa: E402  (torch.cond / torch.while_loop)
from . import __future__  # noqa: F401  (torch.__future__'s switches, read by nn.Module)
from ._complex import complex, polar, view_as_real, view_as_complex  # noqa: A004


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
    if isinstance(obj, _core.TensorBase):
        return True
    # No sparse tensor exists before tapegrad._sparse_coo (lazy) is loaded: no import per call.
    sparse = _sys.modules.get(__name__ + "._sparse_coo")
    if sparse is not None and isinstance(obj, sparse.SparseTensor):
        return True
    quantized = _sys.modules.get(__name__ + "._quantized")    # (likewise)
    return quantized is not None and isinstance(obj, quantized.QuantizedTensor)


def _assert(condition, message):
    """Python's ``assert condition, message`` as a function: torchvision-style model and transform
    code calls ``torch._assert`` (a name tracing keeps) for its shape and type checks.  A tensor
    condition goes through ``bool()``, so a multi-element one raises as ``assert`` would."""
    assert condition, message


from ._checks import (_check_with, _check, _check_index, _check_value, _check_type,  # noqa: E402
                      _check_not_implemented, _check_tensor_all_with, _check_tensor_all)


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating-point one (float16, float32, float64)."""
    _extra_ops._check_tensor(input, "is_floating_point")
    return input._array.dtype.kind == "f"


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is a complex one (complex64, complex128). ``input`` must be a
    tensor (``TypeError`` otherwise).
    """
    _extra_ops._check_tensor(input, "is_complex")
    return input._array.dtype.kind == "c"


def is_distributed(input) -> bool:
    """Whether ``input`` is a distributed tensor of PyTorch's old THD backend: never, since that
    backend is gone (``False`` for every tensor, ``TypeError`` for anything else, as PyTorch)."""
    _extra_ops._check_tensor(input, "is_distributed")
    return False


# Loaded on first use (PEP 562, tapegrad/_lazy.py), keeping `import tapegrad` close to `import
# numpy`: the public submodules, and the names of modules nothing at import needs.  One entry per
# module, sorted: the module, then the names it provides here (a module whose name has no
# underscore or dot is itself tapegrad.<module>).  Tensor methods cannot be lazy: a module that
# attaches any stays eager above.  A name bound above wins over its entry here (the test
# tests/test_lazy_imports.py fails then).
_LAZY = _lazy.table({
    "_default_tensor_type": ("set_default_tensor_type",),
    "_lobpcg": ("lobpcg",),
    "_lowrank": ("svd_lowrank", "pca_lowrank"),
    "_legacy": ("FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
                "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"),
    # torch.ops: operators by namespace (torch.library's registry, and aten's names)
    "_ops": ("ops", "classes"),
    # torch.qscheme's values: the quantisation schemes torch.ao.quantization's observers take.
    "_qscheme": ("qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                 "per_channel_symmetric", "per_channel_affine_float_qparams"),
    # The global switches PyTorch scripts set at their top.
    "_settings": ("use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
                  "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
                  "get_deterministic_debug_mode", "set_float32_matmul_precision",
                  "get_float32_matmul_precision", "set_flush_denormal", "set_warn_always",
                  "is_warn_always_enabled", "is_autocast_enabled", "set_autocast_enabled",
                  "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cpu_enabled",
                  "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
                  "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_cache_enabled",
                  "set_autocast_cache_enabled", "clear_autocast_cache",
                  "autocast_increment_nesting", "autocast_decrement_nesting"),
    # Quantized tensors: integers plus qparams, a class of their own (issue quant35).
    "_quantized": ("quantize_per_tensor", "quantize_per_tensor_dynamic", "quantize_per_channel", "dequantize", "int_repr",
                   "q_scale", "q_zero_point", "q_per_channel_scales",
                   "q_per_channel_zero_points", "q_per_channel_axis", "quantized_max_pool1d",
                   "quantized_max_pool2d"),
    # Sparse COO tensors: a Python-level class over the recorded dense ops.
    "_sparse_coo": ("sparse_coo_tensor", "spmm", "hspmm", "hsmm", "dsmm"),
    # Sparse CSR, CSC, BSR and BSC tensors: SparseTensor with compressed indices.
    "_sparse_compressed": ("sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
                           "sparse_bsr_tensor", "sparse_bsc_tensor"),
    "_fork": ("fork", "wait"),       # (torch.jit.fork / wait: these, with a warning)
    "_install_info": ("get_file_path",),
    "_streams": ("Stream", "Event"),
    # torch.SymInt & co. for isinstance checks and hints; the sym_* utilities on plain numbers
    "_symbolic": ("SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_not", "sym_max",
                  "sym_min", "sym_ite", "sym_sum", "sym_sqrt"),
    "_threads": ("get_num_threads", "set_num_threads", "get_num_interop_threads",
                 "set_num_interop_threads", "init_num_threads"),
    "_type_info": ("finfo", "iinfo"),
    "accelerator": (),
    "amp": ("autocast", "GradScaler"),
    "ao": (),
    "autograd": (),
    "autograd.anomaly_mode": ("is_anomaly_enabled", "is_anomaly_check_nan_enabled"),
    "backends": (),
    "bench": (),
    "compiler": (),
    # einsum, addmm, baddbmm: composed from the compiled ops (issue 17).
    "contractions": ("addmm", "baddbmm", "einsum", "_int_mm", "_weight_int8pack_mm"),
    "cpu": ("get_device_module",),
    "cuda": ("OutOfMemoryError", "AcceleratorError"),
    "demo": (),
    "demo_chars": (),
    "distributed": (),
    "distributions": (),
    "examples": (),
    "export": (),       # torch.export: export, ExportedProgram, Dim (tapegrad/export)
    "fft": (),
    "func": ("vmap",),          # torch.func's transforms (torch.vmap is torch.func.vmap)
    "functional": (),
    "futures": (),
    "fx": (),           # torch.functional: einsum, split, norm, ... under their module
    "hub": (),
    "jit": (),
    "library": (),
    "linalg": (),
    "masked": (),
    "nested": (),       # torch.nested: nested tensors of the strided and jagged layouts
    "mps": (),
    "multiprocessing": (),
    "nn": (),
    "nn._embedding_bag_aten": ("embedding_bag",),   # torch.embedding_bag (weight first)
    "nn._extra_losses": ("cdist",),     # with the nn distances (composed of differentiable ops)
    # the kernels behind F.affine_grid and F.grid_sample, PyTorch's enum ints for the modes
    "nn._grid_sample": ("affine_grid_generator", "grid_sampler", "grid_sampler_2d",
                        "grid_sampler_3d"),
    "onnx": (),
    "optim": (),
    "overrides": (),
    "profiler": (),
    "quantization": (),
    "quasirandom": (),
    "replay": ("compile",),
    "serialization": ("save", "load"),
    "signal": (),
    "sparse": (),
    "special": (),
    # Tensor.storage() / untyped_storage() and PyTorch's storage classes.
    "storage": ("UntypedStorage", "TypedStorage", "Storage", "FloatStorage", "DoubleStorage",
                "HalfStorage", "LongStorage", "IntStorage", "ShortStorage", "CharStorage",
                "ByteStorage", "BoolStorage", "is_storage"),
    "testing": (),
    "types": (),
    "utils": (),
    "xpu": (),
})
# PyTorch also makes its private compiler modules attributes on first use: scripts write
# `@torch._dynamo.disable` or `torch._inductor.config.coordinate_descent_tuning = True` without
# importing them.
# torch.bfloat16: its first use loads the bfloat16 tensors (tapegrad/_bfloat16.py), so that a
# program that never names it pays nothing for their dispatch.
_LAZY["bfloat16"] = ("_bfloat16", "bfloat16")
# torch.float8_*: likewise, their first use loads the float8 tensors (tapegrad/_float8.py)
for _float8_name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                     "float8_e8m0fnu"):
    _LAZY[_float8_name] = ("_float8", _float8_name)
del _float8_name
_LAZY["_scaled_mm"] = ("_float8", "_scaled_mm")   # (its operands are float8 tensors)
# torch.DisableTorchFunction(Subclass): torch._C's guards, which PyTorch exports at the top too
_LAZY["DisableTorchFunction"] = ("_C", "DisableTorchFunction")
_LAZY["DisableTorchFunctionSubclass"] = ("_C", "DisableTorchFunctionSubclass")
_LAZY["_dynamo"] = ("_dynamo", None)
_LAZY["_inductor"] = ("_inductor", None)
_LAZY["_logging"] = ("_logging", None)
# torch._utils without an import (PyTorch imports it at start): checkpoint-loading code reads
# torch._utils._rebuild_tensor_v2 (geoopt's ManifoldTensor.__reduce_ex__, old-checkpoint patches)
_LAZY["_utils"] = ("_utils", None)
# and scripts call a few names of its compiled module as torch._C.<name> (tapegrad/_C.py)
_LAZY["_C"] = ("_C", None)
# and torch.__config__.show() / parallel_info() in environment cells
_LAZY["__config__"] = ("__config__", None)


# PyTorch's deprecated build flags: each warns and answers from the torch.backends function it
# names (torch/__init__.py's _deprecated_attrs); scripts pick their device with `torch.has_mps`.
_DEPRECATED_FLAGS = {"has_mps": ("mps", "is_built"), "has_cuda": ("cuda", "is_built"),
                     "has_cudnn": ("cudnn", "is_available"), "has_mkldnn": ("mkldnn", "is_available")}


def __getattr__(name):
    if name in _DEPRECATED_FLAGS:
        import importlib
        import warnings
        backend, function = _DEPRECATED_FLAGS[name]
        warnings.warn(f"'{name}' is deprecated, please use 'torch.backends.{backend}.{function}()'",
                      stacklevel=2)
        return getattr(importlib.import_module(f".backends.{backend}", __name__), function)()
    value = _lazy.load(globals(), _LAZY, name)
    # (the names the module brought along, addmm & co., get their entry and out= now: once per
    # module)
    _public_calls.install(globals(), _out_arg.OUT_FUNCTIONS)
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

# PyTorch's build flags that are plain attributes: tapegrad has LAPACK (numpy's) and spectral
# ops (tapegrad.fft), no OpenMP and no MKL (as torch.backends.openmp / mkl answer)
has_lapack = True
has_spectral = True
has_openmp = False
has_mkl = False

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

from ._pickle_names import repoint as _repoint  # noqa: E402
_repoint(globals(), __name__)  # tapegrad.abs & co. pickle by name

from . import _meta as _meta  # noqa: E402
_meta.install_factories()  # device='meta' on the creation functions

from . import _stdlib_attributes  # noqa: E402
_stdlib_attributes.install()  # urllib.request & co., which PyTorch's import loads, on first read
from . import _einops_backend  # noqa: E402
_einops_backend.install()  # einops' rearrange & co. on our tensors under `import tapegrad as torch`
from . import _matplotlib_arrays  # noqa: E402
_matplotlib_arrays.install()  # matplotlib takes our tensors as PyTorch's under `import tapegrad as torch`

# every public function behind the compiled entry where the meta device dispatches, with out=
# on those that take it in PyTorch: after the meta factories (which wrap the creation functions
# wherever the layers look them up); then the out= entries pickle by name as the others
from . import _out_arg, _public_calls  # noqa: E402
_public_calls.install(globals(), _out_arg.OUT_FUNCTIONS)
_public_calls.install_methods(Tensor)  # Tensor's methods: PyTorch's wording of their arg errors
from . import _autocast  # noqa: E402
_autocast.install(matmul)  # CPU autocast: the listed entries' calls under autocast, and x @ y's
_repoint(globals(), __name__)

# The attributes Python set for two internal modules imported above: torch has no torch.creation
# or torch.grad_mode, so neither does hasattr/dir here (`import tapegrad.creation` still works).
del creation, grad_mode  # noqa: F821

# `from tapegrad import *`: every public name, the lazy ones included (loading them then), and,
# as PyTorch's __all__, no submodules.  Computed last, so a name added above is in it.
__all__ = sorted({name for name, value in globals().items()
                  if not name.startswith("_") and not isinstance(value, type(_core))}
                 | {name for name, (_, attribute) in _LAZY.items() if attribute}
                 - {"ops", "classes"})  # (module objects, out of PyTorch's __all__)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from ._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
