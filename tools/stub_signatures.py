"""The precise part of tapegrad's public stubs, read by tools/gen_public_stubs.py.

Everything not named here is stubbed from the live objects with `Any` types: add an entry when you
can vouch for it (check against the runtime; a wrong narrow type produces false errors in users'
code, which is worse than `Any`).  Text uses the stub aliases `_int`, `_float`, `_bool`, `_str`
(builtins: `bool`, `float` and `int` are dtypes in `tapegrad`) and `%Tensor%`, `%Size%`,
`%dtype%`, `%device%`, `%Parameter%`, `%Module%`, `%Generator%` for tapegrad's own classes.
"""

# Methods of Tensor whose result is one Tensor whatever the arguments (probed against the live
# class, reviewed by hand).  In-place methods (`name_`) return self and need no entry here.
TENSOR_RESULT_METHODS = set("""
T abs absolute acos acosh add addcdiv addcmul addmm all amax amin any arccos arccosh arcsin
arcsinh arctan arctan2 arctanh argmax argmin argsort asin asinh atan atan2 atanh baddbmm bernoulli
bincount bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm
bool broadcast_to byte ceil char cholesky clamp clamp_max clamp_min clip clone contiguous cos cosh
count_nonzero cpu cuda cumprod cumsum data det detach diag diff div divide dot double eq erf exp
expand expand_as expm1 fix flatten flip fliplr flipud float floor floor_divide fmod frac gather ge
greater greater_equal gt half histc index_add index_copy index_fill index_put index_select int
inverse isclose isfinite isinf isnan isneginf isposinf le lerp less less_equal log log10 log1p log2
log_softmax logaddexp logdet logical_and logical_not logical_or logical_xor logsumexp long lt mT
masked_fill masked_select matmul matrix_power maximum mean minimum mm moveaxis movedim mul
multinomial multiply mv nan_to_num nanmean nansum narrow ne neg negative new_empty new_full
new_ones new_tensor new_zeros norm not_equal outer permute pin_memory pinverse positive pow prod
ravel reciprocal relu remainder repeat reshape reshape_as roll rot90 round rsqrt scatter
scatter_add scatter_reduce select sgn short sigmoid sign signbit sin sinh softmax sqrt square
squeeze std sub subtract sum swapaxes swapdims t tan tanh tile to trace transpose tril triu
true_divide trunc type_as unflatten unsqueeze var view view_as where xlogy
""".split())

# Functions of these modules whose result is one Tensor (the ops above, the factories, the
# nn.functional ops that return no indices/weights tuple).
TENSOR_RESULT_MODULES = {"tapegrad", "tapegrad.nn.functional", "tapegrad.linalg"}
TENSOR_RESULT_FUNCTIONS = (TENSOR_RESULT_METHODS - {"T", "mT", "data", "cpu", "cuda", "to",
                                                    "type_as", "pin_memory"}) | set("""
abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_
ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ erf_ exp_ expm1_ fix_ floor_ log_ log10_ log1p_
log2_ nan_to_num_ neg_ negative_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinh_ sqrt_ square_
tan_ tanh_ trunc_ xlogy_ index_put_
arange as_tensor cat cdist column_stack concat concatenate dstack einsum empty empty_like eye
from_dlpack from_numpy full full_like ger hstack linspace logspace normal ones ones_like poisson
rand rand_like randint randint_like randn randn_like randperm row_stack scalar_tensor stack
tensor tril_indices triu_indices vstack zeros zeros_like dropout embedding layer_norm
adaptive_avg_pool1d adaptive_avg_pool2d alpha_dropout avg_pool1d avg_pool2d batch_norm bilinear
binary_cross_entropy binary_cross_entropy_with_logits celu channel_shuffle conv1d conv2d
conv_transpose1d conv_transpose2d cosine_embedding_loss cosine_similarity cross_entropy dropout1d
dropout2d elu embedding_bag fold gaussian_nll_loss gelu glu group_norm hardshrink hardsigmoid
hardswish hardtanh hinge_embedding_loss huber_loss instance_norm interpolate kl_div l1_loss
leaky_relu linear logsigmoid margin_ranking_loss max_unpool1d max_unpool2d mish mse_loss
multi_margin_loss multilabel_soft_margin_loss nll_loss normalize one_hot pad pairwise_distance
pixel_shuffle pixel_unshuffle poisson_nll_loss prelu relu6 rrelu scaled_dot_product_attention selu
silu smooth_l1_loss soft_margin_loss softmin softplus softshrink softsign tanhshrink threshold
triplet_margin_loss unfold
cross inv matrix_norm multi_dot pinv solve svdvals vector_norm eigvalsh matrix_rank
""".split())

# Modules without __all__ whose imports are their public API (the others' imports are private).
FACADE_MODULES = {"tapegrad.nn.functional"}

# Class bases the live class cannot tell precisely.
CLASS_BASES = {
    "tapegrad.Size": ["builtins.tuple[_int, ...]"],
}

# Types of properties and attributes (`module.Class.attr` or `module.name`).
ATTRIBUTE_TYPES = {
    "tapegrad.Tensor.shape": "%Size%",
    "tapegrad.Tensor.dtype": "%dtype%",
    "tapegrad.Tensor.device": "%device%",
    "tapegrad.Tensor.requires_grad": "_bool",
    "tapegrad.Tensor.grad": "%Tensor% | None",
    "tapegrad.Tensor.grad_fn": "Any",
    "tapegrad.Tensor.is_leaf": "_bool",
    "tapegrad.Tensor.retains_grad": "_bool",
    "tapegrad.Tensor.data": "%Tensor%",
    "tapegrad.Tensor.T": "%Tensor%",
    "tapegrad.Tensor.mT": "%Tensor%",
    "tapegrad.Tensor.ndim": "_int",
    "tapegrad.Tensor.itemsize": "_int",
    "tapegrad.Tensor.nbytes": "_int",
    "tapegrad.Tensor.is_cpu": "_bool",
    "tapegrad.Tensor.is_cuda": "_bool",
    "tapegrad.Tensor.is_meta": "_bool",
    "tapegrad.Tensor.is_mps": "_bool",
    "tapegrad.Tensor.is_xpu": "_bool",
    "tapegrad.Tensor.is_sparse": "_bool",
    "tapegrad.Tensor.is_quantized": "_bool",
    **{f"tapegrad.Tensor.{name}": "_bool" for name in (
        "is_nested", "is_sparse_csr", "is_mkldnn", "is_xla", "is_ipu", "is_vulkan", "is_mtia",
        "is_maia")},
    "tapegrad.nn.modules.module.Module.training": "_bool",
    "tapegrad.optim.optimizer.Optimizer.param_groups": "builtins.list[builtins.dict[_str, Any]]",
    "tapegrad.optim.optimizer.Optimizer.defaults": "builtins.dict[_str, Any]",
    "tapegrad.optim.optimizer.Optimizer.state": "Any",
    "tapegrad.nn.modules.linear.Linear.weight": "%Parameter%",
    "tapegrad.nn.modules.linear.Linear.in_features": "_int",
    "tapegrad.nn.modules.linear.Linear.out_features": "_int",
}

_BINARY = "(self, other: Any) -> %Tensor%: ..."
_UNARY = "(self) -> %Tensor%: ..."

# Full stub text of the most used names, keyed `module.name` or `module.Class.member`.
SIGNATURES = {
    # -- Tensor: shape and conversions ---------------------------------------------------------
    "tapegrad.Tensor.size": """
        @overload
        def size(self, dim: None = None) -> %Size%: ...
        @overload
        def size(self, dim: _int) -> _int: ...
    """,
    "tapegrad.Tensor.dim": "def dim(self) -> _int: ...",
    "tapegrad.Tensor.ndimension": "def ndimension(self) -> _int: ...",
    "tapegrad.Tensor.numel": "def numel(self) -> _int: ...",
    "tapegrad.Tensor.nelement": "def nelement(self) -> _int: ...",
    "tapegrad.Tensor.element_size": "def element_size(self) -> _int: ...",
    "tapegrad.Tensor.data_ptr": "def data_ptr(self) -> _int: ...",
    "tapegrad.Tensor.get_device": "def get_device(self) -> _int: ...",
    "tapegrad.Tensor.item": "def item(self) -> _float | _int | _bool: ...",
    "tapegrad.Tensor.tolist": "def tolist(self) -> Any: ...",
    "tapegrad.Tensor.numpy": "def numpy(self, *, force: _bool = False) -> numpy.typing.NDArray[Any]: ...",
    "tapegrad.Tensor.equal": "def equal(self, other: %Tensor%) -> _bool: ...",
    "tapegrad.Tensor.allclose": ("def allclose(self, other: %Tensor%, rtol: _float = ..., "
                                 "atol: _float = ..., equal_nan: _bool = ...) -> _bool: ..."),
    "tapegrad.Tensor.is_floating_point": "def is_floating_point(self) -> _bool: ...",
    "tapegrad.Tensor.is_complex": "def is_complex(self) -> _bool: ...",
    "tapegrad.Tensor.is_signed": "def is_signed(self) -> _bool: ...",
    "tapegrad.Tensor.is_contiguous": "def is_contiguous(self, memory_format: Any = ...) -> _bool: ...",
    "tapegrad.Tensor.is_pinned": "def is_pinned(self) -> _bool: ...",
    "tapegrad.Tensor.is_nonzero": "def is_nonzero(self) -> _bool: ...",
    "tapegrad.Tensor.is_same_size": "def is_same_size(self, other: %Tensor%) -> _bool: ...",
    "tapegrad.Tensor.chunk": "def chunk(self, chunks: _int, dim: _int = 0) -> builtins.tuple[%Tensor%, ...]: ...",
    "tapegrad.Tensor.split": ("def split(self, split_size: _int | Sequence[_int], dim: _int = 0)"
                              " -> builtins.tuple[%Tensor%, ...]: ..."),
    "tapegrad.Tensor.unbind": "def unbind(self, dim: _int = 0) -> builtins.tuple[%Tensor%, ...]: ...",
    "tapegrad.Tensor.backward": ("def backward(self, gradient: %Tensor% | None = None, "
                                 "retain_graph: _bool | None = None, create_graph: _bool = False, "
                                 "inputs: Any = None) -> None: ..."),
    "tapegrad.Tensor.retain_grad": "def retain_grad(self) -> None: ...",
    "tapegrad.Tensor.register_hook": "def register_hook(self, hook: Callable[[%Tensor%], %Tensor% | None]) -> Any: ...",
    "tapegrad.Tensor.type": """
        @overload
        def type(self, dtype: None = None, non_blocking: _bool = False, **kwargs: Any) -> _str: ...
        @overload
        def type(self, dtype: Any, non_blocking: _bool = False, **kwargs: Any) -> %Tensor%: ...
    """,
    "tapegrad.Tensor.max": """
        @overload
        def max(self) -> %Tensor%: ...
        @overload
        def max(self, other: %Tensor%) -> %Tensor%: ...
        @overload
        def max(self, dim: _int, keepdim: _bool = False) -> Any: ...
    """,
    "tapegrad.Tensor.min": """
        @overload
        def min(self) -> %Tensor%: ...
        @overload
        def min(self, other: %Tensor%) -> %Tensor%: ...
        @overload
        def min(self, dim: _int, keepdim: _bool = False) -> Any: ...
    """,
    "tapegrad.Tensor.__init__": "def __init__(self, *args: Any, **kwargs: Any) -> None: ...",
    "tapegrad.Tensor.__len__": "def __len__(self) -> _int: ...",
    "tapegrad.Tensor.__iter__": "def __iter__(self) -> Iterator[%Tensor%]: ...",
    "tapegrad.Tensor.__reversed__": "def __reversed__(self) -> %Tensor%: ...",
    "tapegrad.Tensor.__bool__": "def __bool__(self) -> _bool: ...",
    "tapegrad.Tensor.__float__": "def __float__(self) -> _float: ...",
    "tapegrad.Tensor.__int__": "def __int__(self) -> _int: ...",
    "tapegrad.Tensor.__index__": "def __index__(self) -> _int: ...",
    "tapegrad.Tensor.__complex__": "def __complex__(self) -> builtins.complex: ...",
    "tapegrad.Tensor.__hash__": "def __hash__(self) -> _int: ...",
    "tapegrad.Tensor.__contains__": "def __contains__(self, element: Any) -> _bool: ...",
    "tapegrad.Tensor.__getitem__": "def __getitem__(self, indices: Any) -> %Tensor%: ...",
    "tapegrad.Tensor.__setitem__": "def __setitem__(self, indices: Any, value: Any) -> None: ...",
    "tapegrad.Tensor.__delitem__": "def __delitem__(self, indices: Any) -> None: ...",
    "tapegrad.Tensor.__array__": "def __array__(self, dtype: Any = None, copy: _bool | None = None) -> numpy.typing.NDArray[Any]: ...",
    "tapegrad.Tensor.__deepcopy__": "def __deepcopy__(self, memo: Any) -> Self: ...",
    "tapegrad.Tensor.__format__": "def __format__(self, format_spec: _str) -> _str: ...",
    "tapegrad.Tensor.__repr__": "def __repr__(self) -> _str: ...",
    "tapegrad.Tensor.__str__": "def __str__(self) -> _str: ...",
    "tapegrad.Tensor.__dlpack__": "def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...",
    "tapegrad.Tensor.__dlpack_device__": "def __dlpack_device__(self) -> builtins.tuple[_int, _int]: ...",
    # Comparisons are elementwise: they return a bool Tensor, unlike object's (hence the ignore).
    "tapegrad.Tensor.__eq__": "def __eq__(self, other: Any) -> %Tensor%: ...  # type: ignore[override]",
    "tapegrad.Tensor.__ne__": "def __ne__(self, other: Any) -> %Tensor%: ...  # type: ignore[override]",
    "tapegrad.Size.numel": "def numel(self) -> _int: ...",
    "tapegrad.Size.__repr__": "def __repr__(self) -> _str: ...",
    "tapegrad.Size.__str__": "def __str__(self) -> _str: ...",
    # -- factories -------------------------------------------------------------------------------
    "tapegrad.tensor": ("def tensor(data: Any, dtype: Any = None, device: Any = None, "
                        "requires_grad: _bool = False, pin_memory: _bool = False) -> %Tensor%: ..."),
    "tapegrad.is_tensor": "def is_tensor(obj: Any) -> _bool: ...",
    "tapegrad.is_floating_point": "def is_floating_point(input: %Tensor%) -> _bool: ...",
    "tapegrad.is_complex": "def is_complex(input: %Tensor%) -> _bool: ...",
    "tapegrad.is_grad_enabled": "def is_grad_enabled() -> _bool: ...",
    "tapegrad.is_inference_mode_enabled": "def is_inference_mode_enabled() -> _bool: ...",
    "tapegrad.manual_seed": "def manual_seed(seed: _int) -> %Generator%: ...",
    "tapegrad.get_default_dtype": "def get_default_dtype() -> %dtype%: ...",
    "tapegrad.set_default_dtype": "def set_default_dtype(d: Any) -> None: ...",
    "tapegrad.equal": "def equal(input: %Tensor%, other: %Tensor%) -> _bool: ...",
    "tapegrad.allclose": ("def allclose(input: %Tensor%, other: %Tensor%, rtol: _float = ..., "
                          "atol: _float = ..., equal_nan: _bool = ...) -> _bool: ..."),
    "tapegrad.numel": "def numel(input: %Tensor%) -> _int: ...",
    "tapegrad.chunk": "def chunk(input: %Tensor%, chunks: _int, dim: _int = 0) -> builtins.tuple[%Tensor%, ...]: ...",
    "tapegrad.split": ("def split(tensor: %Tensor%, split_size_or_sections: _int | Sequence[_int], "
                       "dim: _int = 0) -> builtins.tuple[%Tensor%, ...]: ..."),
    "tapegrad.unbind": "def unbind(input: %Tensor%, dim: _int = 0) -> builtins.tuple[%Tensor%, ...]: ...",
    # -- nn.Module --------------------------------------------------------------------------------
    "tapegrad.nn.modules.module.Module.__call__": "def __call__(self, *args: Any, **kwargs: Any) -> Any: ...",
    "tapegrad.nn.modules.module.Module.forward": "def forward(self, *args: Any, **kwargs: Any) -> Any: ...",
    "tapegrad.nn.modules.module.Module.__getattr__": "def __getattr__(self, name: _str) -> Any: ...",
    "tapegrad.nn.modules.module.Module.__setattr__": "def __setattr__(self, name: _str, value: Any) -> None: ...",
    "tapegrad.nn.modules.module.Module.parameters": "def parameters(self, recurse: _bool = True) -> Iterator[%Parameter%]: ...",
    "tapegrad.nn.modules.module.Module.named_parameters": ("def named_parameters(self, prefix: _str = '', recurse: _bool = True, "
                                                           "remove_duplicate: _bool = True) -> Iterator[builtins.tuple[_str, %Parameter%]]: ..."),
    "tapegrad.nn.modules.module.Module.children": "def children(self) -> Iterator[%Module%]: ...",
    "tapegrad.nn.modules.module.Module.modules": "def modules(self) -> Iterator[%Module%]: ...",
    "tapegrad.nn.modules.module.Module.train": "def train(self, mode: _bool = True) -> Self: ...",
    "tapegrad.nn.modules.module.Module.eval": "def eval(self) -> Self: ...",
    "tapegrad.nn.modules.module.Module.to": "def to(self, *args: Any, **kwargs: Any) -> Self: ...",
    "tapegrad.nn.modules.module.Module.zero_grad": "def zero_grad(self, set_to_none: _bool = True) -> None: ...",
    "tapegrad.nn.modules.module.Module.state_dict": "def state_dict(self, *args: Any, destination: Any = None, prefix: _str = '', keep_vars: _bool = False) -> Any: ...",
    "tapegrad.nn.modules.module.Module.apply": "def apply(self, fn: Callable[[%Module%], None]) -> Self: ...",
    "tapegrad.nn.modules.module.Module.requires_grad_": "def requires_grad_(self, requires_grad: _bool = True) -> Self: ...",
    # -- optim ------------------------------------------------------------------------------------
    "tapegrad.optim.optimizer.Optimizer.zero_grad": "def zero_grad(self, set_to_none: _bool = True) -> None: ...",
    "tapegrad.optim.optimizer.Optimizer.step": "def step(self, closure: Callable[[], Any] | None = None) -> Any: ...",
    # -- grad mode: context managers and decorators --------------------------------------------
    "tapegrad.grad_mode.no_grad.__init__": "def __init__(self) -> None: ...",
    "tapegrad.grad_mode.enable_grad.__init__": "def __init__(self) -> None: ...",
}

# The guards share their context-manager and decorator protocol through private bases, which the
# stubs fold into each public class.
for _guard in ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode"):
    SIGNATURES[f"tapegrad.grad_mode.{_guard}.__enter__"] = "def __enter__(self) -> None: ..."
    SIGNATURES[f"tapegrad.grad_mode.{_guard}.__exit__"] = (
        "def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None: ...")
    SIGNATURES[f"tapegrad.grad_mode.{_guard}.__call__"] = "def __call__(self, func: _F) -> _F: ..."

for _op in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
            "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or",
            "ror", "xor", "rxor", "lshift", "rlshift", "rshift", "rrshift", "lt", "le", "gt", "ge",
            "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "iand",
            "ior", "ixor", "ilshift", "irshift"):
    SIGNATURES[f"tapegrad.Tensor.__{_op}__"] = f"def __{_op}__{_BINARY}"
for _op in ("neg", "pos", "abs", "invert"):
    SIGNATURES[f"tapegrad.Tensor.__{_op}__"] = f"def __{_op}__{_UNARY}"

# The legacy typed-tensor classes (FloatTensor, ...): calling one makes a Tensor, and isinstance
# holds for tensors of its dtype (a metaclass does both).
for _legacy in ("Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short"):
    CLASS_BASES[f"tapegrad.{_legacy}Tensor"] = ["%Tensor%"]
    SIGNATURES[f"tapegrad.{_legacy}Tensor.__new__"] = (
        "def __new__(cls, *args: Any, **kwargs: Any) -> %Tensor%: ...  # type: ignore[misc]")

# autograd.Variable(data, requires_grad=...) makes a Tensor; every tensor is a Variable.
CLASS_BASES["tapegrad.autograd.variable.Variable"] = ["%Tensor%"]
SIGNATURES["tapegrad.autograd.variable.Variable.__new__"] = (
    "def __new__(cls, data: %Tensor% | None = None, requires_grad: _bool = False, "
    "volatile: _bool = False) -> %Tensor%: ...  # type: ignore[misc]")
# torch.embedding_bag shares its name with the one-Tensor F.embedding_bag but returns four.
SIGNATURES["tapegrad.embedding_bag"] = (
    "def embedding_bag(weight: %Tensor%, indices: %Tensor%, offsets: %Tensor%, "
    "scale_grad_by_freq: _bool = ..., mode: _int = ..., sparse: _bool = ..., "
    "per_sample_weights: %Tensor% | None = ..., include_last_offset: _bool = ..., "
    "padding_idx: _int | None = ...) -> builtins.tuple[%Tensor%, %Tensor%, %Tensor%, %Tensor%]: ...")
