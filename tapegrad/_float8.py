"""float8 tensors: PyTorch's five 8-bit float dtypes, as its CPU build has them.

PyTorch's CPU build stores float8 values and moves them (copies, views, indexing, cat, where),
converts them to and from the other dtypes, compares them for equality and computes almost
nothing else: most ops raise NotImplementedError ("add_stub" not implemented for
'Float8_e4m3fn'), and no dtype promotes with a float8 one.  So the design here is storage
first: a float8 tensor holds its bit patterns in a uint8 array, under a tensor class per dtype
(the class is the mark, as for bfloat16).  Why bits and not a float32 array of float8 values,
as bfloat16 does: every op PyTorch runs on float8 is either a move, which is exact on the bits
whatever it is, or a conversion, which decodes through a 256-entry table; bits make
element_size / nbytes / view(torch.uint8) true without special cases, and no op can compute on a
float8 tensor by mistake: an op this module does not list raises PyTorch's NotImplementedError
instead of running on the storage.

Rounding (`encode`): to nearest, ties to even, from float32 (float64 goes through float32 first,
as PyTorch's conversions do).  Beyond the largest finite value: e4m3fn saturates to +-448 (inf
too), e5m2 overflows to +-inf, the fnuz formats give their one NaN (0x80), which has no sign and
no negative zero.  e8m0fnu holds powers of two 2^-127..2^127 only (no sign, no zero: 0 and
negatives map by their exponent), rounding the float32 exponent up from a mantissa of one half
(from a float32 subnormal only above one half); inf and NaN become its NaN.
"""
from __future__ import annotations as _annotations

import numbers

import numpy as np

from . import _core, _meta
from ._public_calls import op_name
from ._call_arguments import tensors_in as _tensors_in
from ._format import tensor_repr
from .grad_mode import is_grad_enabled
from .tensor import Tensor

# name: (exponent bits, mantissa bits, bias, overflow rule)
_LAYOUTS = {"float8_e4m3fn": (4, 3, 7, "saturate"), "float8_e5m2": (5, 2, 15, "inf"),
            "float8_e4m3fnuz": (4, 3, 8, "nan"), "float8_e5m2fnuz": (5, 2, 16, "nan"),
            "float8_e8m0fnu": (8, 0, 127, "exponent")}
_F32 = np.dtype(np.float32)
_U8 = np.dtype(np.uint8)


class _Format:
    """One float8 format: its dtype, the value of each of its 256 codes, and the encoder."""

    def __init__(self, name: str):
        self.name = name
        self.dtype = getattr(_core, name)
        self.scalar_name = "Float8_" + name[len("float8_"):]
        self.exponent_bits, self.mantissa_bits, self.bias, self.overflow = _LAYOUTS[name]
        self.values = np.array([self._value_of(code) for code in range(256)], np.float32)
        finite = self.values[np.isfinite(self.values)]
        self.max = float(finite.max())
        # the non-negative finite values in code order (codes 0.. are increasing)
        self.positive = self.values[:int(np.argmax(self.values == self.max)) + 1] \
            if self.overflow != "exponent" else None

    def _value_of(self, code: int) -> float:
        e, m, bias = self.exponent_bits, self.mantissa_bits, self.bias
        if self.overflow == "exponent":
            return np.nan if code == 255 else 2.0 ** (code - bias)
        sign, exponent, mantissa = code >> 7, (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
        if self.overflow == "nan" and code == 0x80:
            return np.nan
        top = exponent == (1 << e) - 1
        if self.overflow == "inf" and top:
            return (-np.inf if sign else np.inf) if mantissa == 0 else np.nan
        if self.overflow == "saturate" and top and mantissa == (1 << m) - 1:
            return np.nan
        value = (mantissa / (1 << m) * 2.0 ** (1 - bias) if exponent == 0
                 else (1 + mantissa / (1 << m)) * 2.0 ** (exponent - bias))
        return -value if sign else value

    def decode(self, bits: np.ndarray) -> np.ndarray:
        """The float32 values of an array of codes."""
        return self.values[bits]

    def encode(self, a) -> np.ndarray:
        """The codes of the values `a` (any real array; through float32, module docstring)."""
        a = np.asarray(a, dtype=_F32)
        if self.overflow == "exponent":
            return self._encode_exponent(a)
        with np.errstate(invalid="ignore", over="ignore"):
            magnitude = np.abs(a).astype(np.float64)
            # the spacing of float8 values around each magnitude: 2^(exponent - mantissa bits),
            # the exponent held at the subnormal one below the normal range
            _, exponent = np.frexp(magnitude)
            exponent = np.maximum(exponent - 1, 1 - self.bias)
            quantum = np.ldexp(1.0, exponent - self.mantissa_bits)
            rounded = np.rint(magnitude / quantum) * quantum          # (rint: ties to even)
            over = rounded > self.max
            codes = np.searchsorted(self.positive, np.minimum(rounded, self.max)).astype(_U8)
        negative = np.signbit(a)
        if self.overflow == "nan":      # (no negative zero: -0 and tiny negatives give 0)
            codes = np.where(negative & (codes != 0), codes | 0x80, codes).astype(_U8)
            return np.where(np.isnan(a) | over, np.uint8(0x80), codes).astype(_U8)
        if self.overflow == "inf":
            codes = np.where(over, np.uint8(0x7C), codes)
        codes = np.where(negative, codes | 0x80, codes)
        return np.where(np.isnan(a), np.where(negative, np.uint8(0xFF), np.uint8(0x7F)),
                        codes).astype(_U8)

    def _encode_exponent(self, a: np.ndarray) -> np.ndarray:
        bits = a.view(np.uint32)
        exponent = ((bits >> 23) & 0xFF).astype(np.int32)
        mantissa = bits & 0x7FFFFF
        half, below = (mantissa & 0x400000) != 0, (mantissa & 0x3FFFFF) != 0
        up = half & (below | (exponent > 0))
        codes = exponent + up
        return np.where((exponent == 0xFF) | (codes > 0xFE), 0xFF, codes).astype(_U8)


_FORMATS = {name: _Format(name) for name in _LAYOUTS}
_FORMAT_OF_DTYPE = {f.dtype: f for f in _FORMATS.values()}


# -- the tensor classes -------------------------------------------------------------------------

def _dispatch_off() -> bool:
    return _core._subclass_dispatch_set_off(None)


class _Float8Behaviour:
    """What a float8 tensor answers itself; every op goes to `_torch_function`.  While an op
    runs (the dispatch off) the tensor is its uint8 storage to the code computing it."""

    __slots__ = ()
    _dtype_class = True
    _format: _Format

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _torch_function(func, args, {} if kwargs is None else kwargs)

    @property
    def dtype(self):
        return _core.uint8 if _dispatch_off() else self._format.dtype

    @property
    def itemsize(self) -> int:
        return 1

    @property
    def nbytes(self) -> int:
        return self._array.size


_CLASSES = {}
for _f in _FORMATS.values():
    _CLASSES[_f.dtype] = type(_f.scalar_name + "Tensor", (_Float8Behaviour, Tensor),
                              {"__slots__": (), "_format": _f,
                               "__doc__": f"A tensor of dtype torch.{_f.name} (its codes in "
                                          f"uint8 storage: tapegrad/_float8.py)."})


def is_float8(t) -> bool:
    return isinstance(t, _Float8Behaviour)


_PARAMETER_CLASSES = {}


def parameter(data, requires_grad: bool):
    """nn.Parameter(data) of a float8 tensor: a parameter of its own class per format (the class
    carries the dtype, as BFloat16Parameter does) sharing data's codes."""
    _refuse_gradient(requires_grad)
    fmt = data._format
    cls = _PARAMETER_CLASSES.get(fmt.dtype)
    if cls is None:
        from .nn.parameter import Parameter
        cls = _PARAMETER_CLASSES[fmt.dtype] = type(
            fmt.scalar_name + "Parameter", (_Float8Behaviour, Parameter),
            {"__slots__": (), "_format": fmt, "__module__": __name__,
             "__doc__": f"A parameter of dtype torch.{fmt.name}.",
             # (Parameter's own __repr__ would print the codes: its dtype's repr)
             "__repr__": _parameter_repr, "__str__": _parameter_repr})
    return _run(Tensor._make_subclass, (cls, data, False), {})


def _parameter_repr(self) -> str:
    return "Parameter containing:\n" + _repr(Tensor.__repr__, "__repr__", (self,), {})


# PyTorch records float8 tensors as any floating ones (x.to(float8) is ToCopyBackward0, a float8
# leaf may require grad).  Here a float8 tensor holds codes in uint8 storage, which the tape
# cannot carry a gradient through: an op that would record one is refused rather than run
# without its gradient (a gradient silently missing from every input behind the conversion).
_NO_GRADIENT = ("tapegrad: float8 tensors do not take part in autograd (their codes are uint8 "
                "storage the tape cannot differentiate); {what}. Convert under torch.no_grad() "
                "or from a detached tensor, or keep the differentiated values in a float dtype")


def _refuse_gradient(requires_grad, what="a float8 tensor cannot require grad") -> None:
    if requires_grad:
        raise NotImplementedError(_NO_GRADIENT.format(what=what))


def _marked(t, fmt: _Format):
    """uint8 tensor t (holding codes) as a float8 tensor of format fmt."""
    t.__class__ = _CLASSES[fmt.dtype]
    return t


def as_float8_codes(t, dtype):
    """uint8 tensor t, holding codes of float8 `dtype`, as a tensor of that dtype (in place: a
    loaded checkpoint's tensors keep sharing their storage)."""
    return _marked(t, _FORMAT_OF_DTYPE[dtype])


def _from_codes(codes: np.ndarray, fmt: _Format):
    """A new float8 tensor of format fmt holding `codes` (its shape kept, 0-d too)."""
    codes = np.asarray(codes, dtype=_U8)
    if not codes.flags.c_contiguous:
        codes = codes.copy()
    return _marked(_core.wrap_array(codes, False), fmt)


def _run(func, args: tuple, kwargs: dict):
    """func with the dispatch off: float8 tensors are their uint8 storage."""
    previous = _core._subclass_dispatch_set_off(True)
    try:
        return func(*args, **kwargs)
    finally:
        _core._subclass_dispatch_set_off(previous)


def _decoded(t):
    """A float8 tensor's values as a new float32 tensor (other tensors and numbers as given)."""
    if not is_float8(t):
        return t
    return _core.wrap_array(t._format.decode(t._array), False)


def _remark(result, fmt: _Format):
    """Results of a move on the storage: each uint8 tensor holds codes of format fmt."""
    if isinstance(result, (list, tuple)):
        items = [_remark(r, fmt) for r in result]
        return items if type(result) is list else tuple(items) if type(result) is tuple \
            else type(result)(items)
    if isinstance(result, _core.TensorBase) and result._array.dtype == _U8 and \
            not is_float8(result):
        return _marked(result, fmt)
    return result


# -- errors as PyTorch's ------------------------------------------------------------------------

def _promotion_error(a, b) -> RuntimeError:
    return RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                        f"{a} and {b}")


# PyTorch's ScalarType names of the dtypes an error may name beside a float8 one
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble", "uint16": "UInt16", "uint32": "UInt32",
                 "uint64": "UInt64"}


def _scalar_name(t) -> str:
    """PyTorch's ScalarType name of a tensor's dtype or of a dtype."""
    if is_float8(t):
        return t._format.scalar_name
    d = t if isinstance(t, _core.dtype) else t.dtype
    fmt = _FORMAT_OF_DTYPE.get(d)
    return fmt.scalar_name if fmt is not None else _SCALAR_NAMES.get(d.name, d.name)


def _check_one_dtype(tensors) -> _Format:
    """The float8 format of the op's tensors; PyTorch's promotion error when another dtype is
    among them (a float8 tensor with any other tensor, or another float8 format)."""
    first = tensors[0]
    for t in tensors[1:]:
        if type(t) is not type(first):
            raise _promotion_error(_scalar_name(first), _scalar_name(t))
    return first._format


# The CPU kernel PyTorch names when it refuses an op on float8 (what its dispatch macro is
# called); an op not listed is refused under its own name.
_KERNELS = {
    "add": "add_stub", "__add__": "add_stub", "__radd__": "add_stub", "add_": "add_stub",
    "sub": "add_stub", "__sub__": "add_stub", "__rsub__": "add_stub", "sub_": "add_stub",
    "rsub": "add_stub", "neg": "neg_cpu", "__neg__": "neg_cpu", "negative": "neg_cpu",
    "sum": "sum_cpu", "mean": "sum_cpu", "nansum": "sum_cpu", "max": "max_all",
    "min": "min_all", "amax": "max_values_cpu", "amin": "min_values_cpu",
    "aminmax": "aminmax_cpu", "argmax": "argmax_cpu", "argmin": "argmin_cpu",
    "lt": "lt_cpu", "__lt__": "lt_cpu", "less": "lt_cpu", "gt": "gt_cpu", "__gt__": "gt_cpu",
    "greater": "gt_cpu", "le": "le_cpu", "__le__": "le_cpu", "less_equal": "le_cpu",
    "ge": "ge_cpu", "__ge__": "ge_cpu", "greater_equal": "ge_cpu",
    "div": "div_cpu", "__truediv__": "div_cpu", "__rtruediv__": "div_cpu", "divide": "div_cpu",
    "true_divide": "div_cpu", "exp": "exp_vml_cpu", "log": "log_vml_cpu",
    "sqrt": "sqrt_vml_cpu", "rsqrt": "rsqrt_cpu", "sin": "sin_vml_cpu", "cos": "cos_vml_cpu",
    "tanh": "tanh_cpu", "sigmoid": "sigmoid_cpu", "clamp": "clamp_scalar_cpu",
    "clip": "clamp_scalar_cpu", "relu": "clamp_min_scalar_cpu",
    "clamp_min": "clamp_min_scalar_cpu", "clamp_max": "clamp_max_scalar_cpu",
    "sign": "sign_cpu", "flip": "flip_cpu", "sort": "sorting_kernel_method_name",
    "argsort": "sorting_kernel_method_name", "topk": "topk_cpu", "unique": "unique",
    "isinf": "isinf", "isfinite": "isfinite", "masked_fill": "masked_fill",
    "isposinf": "isposinf_cpu", "isneginf": "isneginf_cpu", "signbit": "signbit_cpu",
    "masked_fill_": "masked_fill", "tril": "tril", "triu": "triu", "maximum": "maximum_cpu",
    "minimum": "minimum_cpu", "gather": "gather_expanded_index",
    "scatter": "scatter_gather_tensor_cpu", "scatter_": "scatter_gather_tensor_cpu",
    "nonzero": "nonzero_count_cpu", "count_nonzero": "nonzero_count_cpu",
    "equal": "equal_notnan_cpu", "cumsum": "cumsum_cpu", "prod": "prod_cpu",
    "pow": "pow", "__pow__": "pow", "abs": "abs_cpu", "abs_": "abs_cpu",
    "arange": "arange_cpu", "linspace": "linspace_cpu", "logspace": "logspace_cpu",
    "rand": "check_uniform_bounds", "rand_like": "check_uniform_bounds",
    "uniform_": "check_uniform_bounds", "randn": "normal_kernel_cpu",
    "randn_like": "normal_kernel_cpu", "normal_": "normal_kernel_cpu",
    "normal": "normal_kernel_cpu", "randint": "random_update_from_to",
    "randint_like": "random_update_from_to", "randperm": "randperm_cpu",
    "_nonzero_method": "nonzero_count_cpu", "index_put_": "index_put", "allclose": "mul_cpu_reduced_float",
    "isclose": "mul_cpu_reduced_float", "bmm": "bmm", "mv": "addmv_impl_cpu",
    "addmm": "addmm_impl_cpu_", "baddbmm": "baddbmm_cpu",
}
# ops PyTorch refuses on a float8 tensor with a Python number (its reduced-float kernels)
_NUMBER_KERNELS = {"mul": "mul_cpu_reduced_float", "__mul__": "mul_cpu_reduced_float",
                   "__rmul__": "mul_cpu_reduced_float", "mul_": "mul_cpu_reduced_float",
                   "multiply": "mul_cpu_reduced_float"}


def _no_kernel(name: str, fmt: _Format) -> NotImplementedError:
    return NotImplementedError(f"\"{_KERNELS.get(name, name)}\" not implemented for "
                               f"'{fmt.scalar_name}'")


# -- the ops ------------------------------------------------------------------------------------

# Ops that only move values: exact on the codes, run on the uint8 storage, results re-marked.
_MOVES = frozenset((
    "clone", "contiguous", "reshape", "reshape_as", "view_as", "flatten", "unflatten",
    "ravel", "squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims", "permute",
    "movedim", "moveaxis", "expand", "expand_as", "broadcast_to", "repeat", "narrow", "select",
    "split", "tensor_split", "chunk", "unbind", "__getitem__", "index_select", "masked_select",
    "roll", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "diag",
    "detach", "detach_", "cpu", "T", "mT", "H", "mH", "unfold", "as_strided", "take",
    "__iter__", "squeeze_", "unsqueeze_", "t_", "transpose_", "index_put", "index_put_",
    "copy", "clone_", "diagonal", "where",
))
# What the storage answers as it is (shapes, layout, identity, autograd flags).
_METADATA = frozenset((
    "size", "dim", "ndim", "ndimension", "shape", "numel", "nelement", "stride",
    "storage_offset", "is_contiguous", "device", "is_leaf", "grad_fn", "data_ptr", "is_cuda",
    "is_cpu", "is_sparse", "is_quantized", "is_meta", "layout", "__len__", "__hash__",
    "requires_grad", "is_complex", "get_device", "names", "_version", "__bool__",
    "untyped_storage", "output_nr", "is_mkldnn", "is_nested", "is_set_to",
))
_CONVERSIONS = {"float": _core.float32, "double": _core.float64, "half": _core.float16,
                "int": _core.int32, "long": _core.int64, "short": _core.int16,
                "char": _core.int8, "byte": _core.uint8, "bool": _core.bool_,
                "cfloat": _core.complex64, "cdouble": _core.complex128}


def _target_dtype(name: str, args: tuple, kwargs: dict):
    """The dtype a conversion asks for (None: a `to` that changes only the device)."""
    if name in _CONVERSIONS:
        return _CONVERSIONS[name]
    if name == "bfloat16":
        return _core.__dict__.get("bfloat16")
    d = kwargs.get("dtype")
    if isinstance(d, _core.dtype):
        return d
    for a in args[1:]:
        if isinstance(a, _core.dtype):
            return a
        if isinstance(a, _core.TensorBase) and name in ("to", "type_as"):
            return a.dtype
    return None


def _convert(t, target):
    """t (a float8 tensor) as dtype `target`: decoded to float32, then converted as float32 is
    (float32 holds every float8 value exactly); to a float8 dtype, encoded again."""
    if target is None or target is t._format.dtype:
        return t
    fmt = _FORMAT_OF_DTYPE.get(target)
    values = t._format.decode(t._array)
    if fmt is not None:
        return _from_codes(fmt.encode(values), fmt)
    if t._format.overflow in ("nan", "exponent") and not target.is_floating_point and \
            not target.is_complex and target is not _core.bool_:
        # PyTorch converts the NaN of the fnuz formats and of e8m0fnu to integer 0 (the
        # NaN of e4m3fn and e5m2 goes through float, as float32's does)
        values = np.where(np.isnan(values), np.float32(0), values)
    return _core.wrap_array(values, False).to(target)


def _convert_call(func, name, args, kwargs):
    t = args[0]
    target = _target_dtype(name, args, kwargs)
    if name == "to" and target is None:
        return _run(func, args, kwargs)     # (a device move: the same tensor on the CPU)
    result = _convert(t, target)
    if result is t and kwargs.get("copy") is True:
        return _remark(_run(Tensor.clone, (t,), {}), t._format)
    return result


def _view(func, name, args, kwargs):
    """view(shape) moves; view(dtype) reinterprets the bits: to or from a float8 dtype the codes
    are the uint8 bytes, to any other dtype the storage's bytes as that dtype (as PyTorch)."""
    target = kwargs.get("dtype", args[1] if len(args) == 2 else None)
    source = args[0]
    if not isinstance(target, _core.dtype):
        return _remark(_run(func, args, kwargs), source._format)
    fmt = _FORMAT_OF_DTYPE.get(target)
    if fmt is None:
        return _run(func, (source, target), {})
    if is_float8(source):
        return _marked(_run(Tensor.view, (source, _core.uint8), {}), fmt)
    if source.element_size() != 1:
        # PyTorch reinterprets wider elements byte by byte (the last dimension grows)
        return _marked(_run(Tensor.view, (source, _core.uint8), {}), fmt)
    return _marked(_run(Tensor.view, (source, _core.uint8), {}) if source.dtype is not
                   _core.uint8 else _run(Tensor.view, (source, source.shape), {}), fmt)


def _equality(func, name, args, kwargs):
    """eq / ne: on the values (NaN unequal, zeros equal); a number is rounded to the tensor's
    format first, as PyTorch converts it."""
    a, b = args[0], args[1] if len(args) > 1 else kwargs.get("other")
    tensors = [x for x in (a, b) if isinstance(x, _core.TensorBase)]
    fmt = _check_one_dtype(tensors)
    if isinstance(b, numbers.Number):
        b = _from_codes(fmt.encode(np.float32(b)), fmt)
    if isinstance(a, numbers.Number):
        a = _from_codes(fmt.encode(np.float32(a)), fmt)
    op = Tensor.ne if name in ("ne", "__ne__", "not_equal") else Tensor.eq
    return op(_decoded(a), _decoded(b))


def _on_values(func, name, args, kwargs):
    """Ops PyTorch's CPU build runs on float8 values with no float8 result (isnan, any, all,
    tolist, item, the number conversions): on the decoded float32 values."""
    return func(*[_decoded(a) for a in args], **kwargs)


def _mul(func, name, args, kwargs):
    """float8 * float8 of one format: the float32 product (exact for 8-bit significands),
    rounded once to the format, as PyTorch's kernel computes it.  A number operand is
    PyTorch's NotImplementedError (its reduced-float kernel has no float8 form)."""
    tensors = _tensors_in(args, [])
    if any(isinstance(a, numbers.Number) for a in args[:2]) or len(tensors) < 2:
        raise NotImplementedError(f"\"{_NUMBER_KERNELS[name]}\" not implemented for "
                                  f"'{tensors[0]._format.scalar_name}'")
    fmt = _check_one_dtype(tensors)
    if name == "mul_":
        raise _no_kernel(name, fmt)
    product = Tensor.mul(_decoded(args[0]), _decoded(args[1]))
    return _from_codes(fmt.encode(product._array), fmt)


def _abs(func, name, args, kwargs):
    """|x| on the codes: the sign bit cleared (a fnuz format's NaN, 0x80, stays NaN); e8m0fnu,
    which has no sign, has no abs kernel in PyTorch."""
    t = args[0]
    fmt = t._format
    if fmt.overflow == "exponent":
        raise _no_kernel(name, fmt)
    codes = t._array
    cleared = _from_codes(np.where(codes == 0x80, codes, codes & 0x7F) if fmt.overflow == "nan"
                          else codes & 0x7F, fmt)
    if name == "abs_":
        _run(Tensor.copy_, (t, cleared), {})
        return t
    return cleared


# The formats whose inf / finiteness tests PyTorch's CPU build has (e5m2 has an inf;
# e8m0fnu's finiteness is its NaN test)
_INF_TESTS = {"isinf": ("inf",), "isfinite": ("inf", "exponent")}


def _inf_test(func, name, args, kwargs):
    fmt = args[0]._format
    if fmt.overflow not in _INF_TESTS[name]:
        raise _no_kernel(name, fmt)
    return _on_values(func, name, args, kwargs)


def _std_var(func, name, args, kwargs):
    raise RuntimeError(f"std_var_all: Unsupported dtype {args[0]._format.scalar_name}")


_PRODUCTS = frozenset(("matmul", "__matmul__", "__rmatmul__", "mm", "linear"))


def _product(func, name, args, kwargs):
    """matmul / mm / linear of float8 tensors of one format: PyTorch's CPU kernel accumulates
    in float32 and rounds the result once to the format (e8m0fnu has no such kernel)."""
    tensors = _tensors_in(kwargs.values(), _tensors_in(args, []))
    fmt = _check_one_dtype(tensors)
    if fmt.overflow == "exponent":
        raise _no_kernel("addmm", fmt)
    result = func(*[_decoded(a) for a in args], **{k: _decoded(v) for k, v in kwargs.items()})
    return _from_codes(fmt.encode(result._array), fmt)


def _like(func, name, args, kwargs):
    """zeros_like & co. of a float8 tensor: made in float32 and encoded, unless another dtype
    is asked for."""
    t = args[0]
    fmt = t._format
    if kwargs.get("dtype") is not None and kwargs["dtype"] is not fmt.dtype:
        return func(_decoded(t), *args[1:], **kwargs)
    kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
    result = func(_decoded(t), *args[1:], **kwargs)
    if name in ("full_like", "new_full"):
        _check_fill(args[1] if len(args) > 1 else kwargs.get("fill_value"), fmt,
                    result._array.size)
    return _from_codes(fmt.encode(result._array), fmt)


def _check_fill(fill, fmt: _Format, numel: int) -> None:
    """PyTorch's overflow check of a number filling a float8 tensor (full, fill_): a finite
    number must lie within the format's range, an infinite one needs a format with inf (e5m2);
    NaN passes.  A one-element tensor is filled by a conversion, unchecked, as PyTorch's."""
    if numel == 1 or not isinstance(fill, numbers.Real) or np.isnan(fill):
        return
    lowest = fmt.values[0] if fmt.overflow == "exponent" else -fmt.max
    fits = fmt.overflow == "inf" if np.isinf(fill) else lowest <= fill <= fmt.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type c10::{fmt.scalar_name} without "
                           f"overflow")


def _pad(func, name, args, kwargs):
    """F.pad of a float8 tensor: constant padding writes the fill value's code (a move
    otherwise).  0 has no e8m0fnu code: PyTorch's overflow error."""
    t = args[0]
    fmt = t._format
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
    if mode != "constant":
        return _remark(_run(func, args, kwargs), fmt)
    value = kwargs.get("value", args[3] if len(args) > 3 else None)
    value = 0.0 if value is None else value
    if fmt.overflow == "exponent" and value == 0:
        raise RuntimeError(f"value cannot be converted to type c10::{fmt.scalar_name} without "
                           f"overflow")
    code = int(fmt.encode(np.float32(value)))
    pad = kwargs.get("pad", args[1] if len(args) > 1 else None)
    return _remark(_run(func, (t, pad), {"mode": "constant", "value": code}), fmt)


def _write(func, name, args, kwargs):
    """copy_, fill_, zero_ and item assignment: the values written are encoded to the target's
    format (a float8 source of the same format is copied as codes)."""
    target = args[0]
    fmt = target._format
    if name == "zero_":
        value = 0.0
    elif name == "__setitem__":
        value = args[2]
    else:
        value = args[1] if len(args) > 1 else kwargs.get("value", kwargs.get("src"))
    if isinstance(value, _core.TensorBase):
        if not (is_float8(value) and value._format is fmt):
            value = _from_codes(fmt.encode(_decoded(value).to(_core.float32)._array), fmt)
    else:
        if name == "fill_":
            _check_fill(value, fmt, target._array.size)
        value = _from_codes(fmt.encode(np.float32(value)), fmt)
    if name == "__setitem__":
        _run(Tensor.__setitem__, (target, args[1], value), {})
    else:
        _run(Tensor.copy_, (target, value.expand_as(target) if value.dim() == 0 else value), {})
    return None if name == "__setitem__" else target


def _repr(func, name, args, kwargs):
    return tensor_repr(_Printed(args[0]))


class _Printed:
    """What tensor_repr reads of a float8 tensor: its values, dtype and autograd state."""

    def __init__(self, t):
        self._array = t._format.decode(t._array)
        self.dtype = t._format.dtype
        self.grad_fn = None
        self.requires_grad = False



def _numpy_refused(func, name, args, kwargs):
    raise TypeError(f"Got unsupported ScalarType {args[0]._format.scalar_name}")


def _constant(value):
    return lambda func, name, args, kwargs: value


def _type(func, name, args, kwargs):
    if len(args) == 1 and not kwargs:
        raise RuntimeError(f"Could not find type string for {args[0]._format.scalar_name}")
    return _convert_call(func, name, args, kwargs)


def _requires_grad(func, name, args, kwargs):
    _refuse_gradient(args[1] if len(args) > 1 else kwargs.get("requires_grad", True))
    return args[0]


_OWN = {"requires_grad_": _requires_grad, "__repr__": _repr, "__str__": _repr, "numpy": _numpy_refused,
        "__array__": _numpy_refused, "element_size": _constant(1), "itemsize": _constant(1),
        "is_floating_point": _constant(True), "view": _view,
        "eq": _equality, "__eq__": _equality, "ne": _equality, "__ne__": _equality,
        "not_equal": _equality, "mul": _mul, "__mul__": _mul, "__rmul__": _mul,
        "multiply": _mul, "mul_": _mul, "copy_": _write, "fill_": _write, "zero_": _write,
        "__setitem__": _write, "type": _type, "abs": _abs, "abs_": _abs, "absolute": _abs,
        "pad": _pad, "std": _std_var, "var": _std_var, "isfinite": _inf_test,
        "isinf": _inf_test}
_OWN.update(dict.fromkeys(_PRODUCTS, _product))
_OWN.update(dict.fromkeys(("zeros_like", "ones_like", "empty_like", "full_like", "new_zeros",
                           "new_ones", "new_empty", "new_full"), _like))
_OWN.update(dict.fromkeys(("isnan", "any", "all", "tolist", "item", "__float__", "__int__",
                           "__index__", "__format__", "__complex__"), _on_values))
_OWN.update(dict.fromkeys(tuple(_CONVERSIONS) + ("to", "type_as", "bfloat16"), _convert_call))


def _op_name(func) -> str:
    """The op's name; a property's (shape, T, ...) reaches __torch_function__ as its __get__."""
    name = op_name(func)
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        name = getattr(getattr(owner, "fget", None), "__name__", None) or \
            getattr(owner, "__name__", name)
    return name


def _torch_function(func, args: tuple, kwargs: dict):
    """An op with a float8 tensor among its arguments."""
    name = _op_name(func)
    own = _OWN.get(name)
    if own is not None:
        return own(func, name, args, kwargs)
    if name in _METADATA:
        return _run(func, args, kwargs)
    tensors = _tensors_in(kwargs.values(), _tensors_in(args, []))
    float8 = [t for t in tensors if is_float8(t)]
    if name in ("index_put", "index_put_") and float8[0]._format.overflow == "exponent":
        raise _no_kernel(name, float8[0]._format)       # (no e8m0fnu kernel in PyTorch)
    if name in _MOVES:
        # the moved tensors must be of one format (cat with a float32 part: promotion error);
        # where's condition and index tensors are not moved
        moved = [t for t in tensors if t._array.dtype != np.bool_ and
                 not (t._array.dtype.kind in "iu" and not is_float8(t))]
        fmt = _check_one_dtype(moved) if moved else float8[0]._format
        if name == "where":
            args = tuple(_from_codes(fmt.encode(np.float32(a)), fmt)
                         if isinstance(a, numbers.Number) else a for a in args)
        return _remark(_run(func, args, kwargs), fmt)
    if len({type(t) for t in tensors if t._array.dtype.kind in "fc" or is_float8(t)}) > 1:
        _check_one_dtype(tensors)
    raise _no_kernel(name, float8[0]._format)


# -- calls naming a float8 dtype with no float8 tensor (creation, x.to(float8), view) -----------

def _float8_dtype_in(args: tuple, kwargs: dict):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, _core.dtype) and v in _FORMAT_OF_DTYPE:
            return v
    return None


def _promote_types(func, args, kwargs):
    a, b = (list(args) + [kwargs.get("type1"), kwargs.get("type2")])[:2]
    if a is b:
        return a
    raise _promotion_error(_scalar_name(a), _scalar_name(b))


def _result_type(func, args, kwargs):
    a, b = (list(args) + [None, None])[:2]
    raise _promotion_error(_scalar_name(a), _scalar_name(b))


def dtype_call(entry, args: tuple, kwargs: dict):
    """A call with a float8 dtype among its arguments and no float8 tensor (overrides.py): a
    creation function or conversion computes in float32 and its result is encoded; an op
    PyTorch has no float8 kernel for is refused."""
    target = _float8_dtype_in(args, kwargs)
    fmt = _FORMAT_OF_DTYPE[target]
    name = getattr(entry, "__name__", "")
    if name == "promote_types":
        return _promote_types(entry, args, kwargs)
    if name == "can_cast":
        return _run(entry, tuple(_core.float32 if a is target else a for a in args), kwargs)
    if name == "view":
        return _view(entry, name, args, kwargs)
    if name in _KERNELS:
        raise _no_kernel(name, fmt)
    _refuse_gradient(kwargs.get("requires_grad") is True)
    swapped_args = tuple(_core.float32 if a is target else a for a in args)
    swapped_kwargs = {k: (_core.float32 if v is target else v) for k, v in kwargs.items()}
    result = _run(entry, swapped_args, swapped_kwargs)
    if isinstance(result, _core.TensorBase):
        _refuse_gradient(result.requires_grad and is_grad_enabled(),
                         f"the conversion to {target} of a tensor that requires grad would drop "
                         f"its gradient")
    if name == "full":
        _check_fill(args[1] if len(args) > 1 else kwargs.get("fill_value"), fmt,
                    result._array.size)
    if isinstance(result, _core.TensorBase) and result._array.dtype == _F32:
        return _from_codes(fmt.encode(result._array), fmt)
    return result


# Loading this module makes each float8 dtype dispatch: a call naming one reaches dtype_call
# (the factories written in Python too, tapegrad/_meta.py).
for _f in _FORMATS.values():
    _meta.routed_dtypes.add(_f.dtype)
    _core._set_dispatching_dtype(_f.dtype, __import__("tapegrad.overrides", fromlist=["x"])
                                 ._dispatch_subclass_call)
    globals()[_f.name] = _f.dtype


# -- torch._scaled_mm ---------------------------------------------------------------------------

_INVALID_SCALING = "Invalid scaling configuration."


def _scale_fits(scale, rows: int, cols: int, per_row: bool) -> bool:
    """A scale of one element (tensor-wise), or of one per row of mat1 (shape (M, 1)) / column
    of mat2 (shape (1, N)): PyTorch's CPU configurations."""
    if not isinstance(scale, _core.TensorBase):
        return False
    if scale._array.size == 1:
        return True
    return tuple(scale.shape) == ((rows, 1) if per_row else (1, cols))


def _scaled_mm(mat1, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
               use_fast_accum=False):
    """torch._scaled_mm on the CPU: (mat1 @ mat2) of two float8 matrices, each product scaled by
    scale_a * scale_b (tensor-wise, or row-wise for mat1 and column-wise for mat2), plus bias,
    as out_dtype (default mat1's dtype).  PyTorch's CPU kernel accumulates in float32, as here,
    and ignores scale_result and use_fast_accum; it has no derivative (no graph is recorded)."""
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(m, _core.TensorBase) or m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix")
    from .backends.cpu import _has_avx512_fp16
    # PyTorch takes its oneDNN float8 path on a CPU with AVX-512 FP16, which checks the operands
    # first and names them mat1/mat2; elsewhere (seen on an AMD EPYC with AVX-512) its reference
    # path checks the scaling first and names them mat_a/mat_b
    onednn = _has_avx512_fp16()
    if not is_float8(mat1) and not is_float8(mat2) and onednn:
        raise RuntimeError(f"Expected mat1 to be Float8 matrix got {_scalar_name(mat1)}")
    rows, cols = mat1.shape[0], mat2.shape[1]
    if not (is_float8(mat1) and is_float8(mat2)) or not (
            _scale_fits(scale_a, rows, cols, True) and _scale_fits(scale_b, rows, cols, False)):
        raise ValueError(_INVALID_SCALING)
    if mat1.shape[1] != mat2.shape[0]:
        a, b = ("mat1", "mat2") if onednn else ("mat_a", "mat_b")
        raise RuntimeError(f"{a} and {b} shapes cannot be multiplied ({rows}x{mat1.shape[1]} "
                           f"and {mat2.shape[0]}x{cols})")
    target = mat1.dtype if out_dtype is None else out_dtype
    for m in (mat1, mat2):
        if m._format.overflow == "nan":     # (the fnuz formats: no CPU kernel)
            raise RuntimeError(f"itensor_view_from_dense expects float/bfloat16/half/int8/fp8 "
                               f"tensor input{m._format.scalar_name}")
    if not (target.is_floating_point or target in _FORMAT_OF_DTYPE):
        raise RuntimeError(f"itensor_view_from_dense expects float/bfloat16/half/int8/fp8 "
                           f"tensor input{_scalar_name(target)}")
    from .grad_mode import no_grad
    with no_grad():
        product = (_decoded(mat1) @ _decoded(mat2)) * _decoded(scale_a).float() * \
            _decoded(scale_b).float()
        if bias is not None:
            product = product + bias.float()
        return product.to(target)
