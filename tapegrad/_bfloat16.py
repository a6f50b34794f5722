"""bfloat16 tensors: PyTorch's CPU bfloat16 on numpy, which has no bfloat16 type.

PyTorch computes a bfloat16 op in float32 and rounds its result to bfloat16 (to nearest, ties
to even; NaN stays NaN); reductions and matmuls accumulate in float32 and round once.  So a
bfloat16 tensor here is a float32 array whose every value is a bfloat16 value, held by a tensor
of class `BFloat16Tensor` (`BFloat16Parameter` for a parameter): the class is the mark, the
array is the storage.  Every op on such a tensor reaches `_torch_function` through the
__torch_function__ protocol the core already has for Tensor subclasses (out_arg_call.h finds
them among the arguments of every public function and Tensor method), which runs the op on the
float32 storage with the dispatch off and decides each result's dtype as PyTorch would:

- a result that is an input (an in-place op, `x.contiguous()`) or a view of one has that input's
  dtype; a bfloat16 input an op may have written (in-place ops, `out=`, item assignment) is
  rounded again;
- a new result of an explicit dtype (`dtype=`, `.to(dtype)`, `.float()`) has that dtype;
- any other new float32 result is bfloat16 when PyTorch's promotion of the floating inputs
  gives bfloat16 (bfloat16 with bfloat16 or with integers; with float16 or float32 it is
  float32), and is then rounded in place and marked.

`dtype=torch.bfloat16` with no bfloat16 tensor among the arguments (torch.zeros, x.to) reaches
`dtype_call` the same way: the core sends calls holding torch.bfloat16 itself to the handler
once this module is loaded, which happens on the first use of `tapegrad.bfloat16` (a lazy
name): a program that never names bfloat16 pays nothing.  Gradients: the sweep rounds each
contribution to a bfloat16 tensor's gradient and each sum of them (ops_function.pxi), as
PyTorch's bfloat16 backward kernels and engine do; ops whose PyTorch backward formula is
several bfloat16 ops are recorded with that formula (_BACKWARD_FORMULAS).
"""
from __future__ import annotations as _annotations

import inspect
import warnings

import numpy as np

from . import _core, _meta
from ._public_calls import op_name
from ._call_arguments import tensors_in as _tensors_in
from ._format import tensor_repr
from .nn.parameter import Parameter
from .tensor import Tensor

bfloat16 = _core.bfloat16

_F32 = np.dtype(np.float32)
_LOW_BITS = np.uint32(0xFFFF)
_NAN_F32 = np.float32(np.nan)        # 0x7FC00000, PyTorch's bfloat16 NaN (0x7FC0) widened


# -- values ------------------------------------------------------------------------------------

def round_to_bfloat16(a) -> np.ndarray:
    """Values rounded to the nearest bfloat16 (ties to even), as a new float32 array; NaN becomes
    PyTorch's NaN.  float64 goes through float32 first, as PyTorch's conversion does."""
    a = np.asarray(a, dtype=_F32)
    bits = a.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
               & np.uint32(0xFFFF0000)).view(_F32)
    return np.where(np.isnan(a), _NAN_F32, rounded)


def _round_in_place(a: np.ndarray) -> None:
    """Round float32 array `a` to bfloat16 values where it holds others (it is not written when
    it already holds only bfloat16 values: views of broadcast values are read-only)."""
    if a.size and (a.view(np.uint32) & _LOW_BITS).any():
        if not a.flags.writeable:
            # an expand() that stretches nothing, which the op wrote through an alias (numpy
            # marks every broadcast view read-only; an overlapping one the op itself refused):
            # rounded through a writable alias too (x.expand(-1, -1).rad2deg_() raised
            # ValueError, fuzz 66900317)
            a = a.view()
            a.flags.writeable = True
        a[...] = round_to_bfloat16(a)


# -- the tensor classes -------------------------------------------------------------------------

_GRAD = _core.TensorBase.grad


def _dispatch_off() -> bool:
    return _core._subclass_dispatch_set_off(None)


class _BFloat16Behaviour:
    """What a bfloat16 tensor answers itself; every op goes to `_torch_function`.  While an op
    runs (the dispatch off) the tensor is its float32 storage to the code computing it."""

    __slots__ = ()
    _dtype_class = True         # (a dtype, not a user's subclass: torch function modes' `types`
                                # leave it out, as PyTorch's have no bfloat16 class to list)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _torch_function(func, args, {} if kwargs is None else kwargs)

    @property
    def dtype(self):
        return _F32_DTYPE if _dispatch_off() else bfloat16

    @property
    def itemsize(self) -> int:
        return self._array.itemsize if _dispatch_off() else 2

    @property
    def nbytes(self) -> int:
        return self._array.nbytes if _dispatch_off() else 2 * self._array.size

    @property
    def grad(self):
        """The accumulated gradient as bfloat16 (the sweep adds in float32: rounded here)."""
        g = _GRAD.__get__(self)
        if g is not None and g._array.dtype == _F32:
            _round_in_place(g._array)
            if not isinstance(g, _BFloat16Behaviour):
                g.__class__ = BFloat16Tensor
        return g

    @grad.setter
    def grad(self, value):
        _GRAD.__set__(self, value)

    @grad.deleter
    def grad(self):
        _GRAD.__delete__(self)


_F32_DTYPE = _core.float32


class BFloat16Tensor(_BFloat16Behaviour, Tensor):
    """A tensor of dtype torch.bfloat16 (module docstring)."""


class BFloat16Parameter(_BFloat16Behaviour, Parameter):
    """An nn.Parameter of dtype torch.bfloat16."""


def is_bfloat16(t) -> bool:
    return isinstance(t, _BFloat16Behaviour)


def mark(t, as_bfloat16: bool = True) -> None:
    """Give tensor t (its values already bfloat16 ones) the class of its dtype, keeping whether
    it is a Parameter; as_bfloat16 False: back to float32."""
    parameter = isinstance(t, Parameter)
    if as_bfloat16:
        t.__class__ = BFloat16Parameter if parameter else BFloat16Tensor
        _core.mark_bfloat16_gradient(t)     # (a result's gradient arrives rounded: the core)
    else:
        t.__class__ = Parameter if parameter else Tensor


def cast_in_place(t, target) -> None:
    """Convert tensor t in place to `target` (bfloat16, or a numpy dtype): Module.to/half/float/
    bfloat16 keep each parameter's identity, as PyTorch's do.  Its grad follows."""
    if target is bfloat16:
        t._array = round_to_bfloat16(t._array)
        mark(t)
    else:
        t._array = t._array.astype(target, copy=False)
        if is_bfloat16(t):
            mark(t, False)
    grad = _GRAD.__get__(t)
    if grad is not None:
        cast_in_place(grad, target)


def round_tensors_in_place(tensors) -> None:
    """Round the storage of bfloat16 tensors written outside their ops (an optimizer's numpy
    update)."""
    for t in tensors:
        _round_in_place(t._array)


def as_bfloat16_gradient(g):
    """The gradient of a bfloat16 output as a custom Function's backward receives it: rounded
    and of dtype bfloat16 (the sweep's adjoints are float32); None and other dtypes
    pass."""
    if g is None or g._array.dtype != _F32 or is_bfloat16(g):
        return g
    if g.requires_grad and _core.is_grad_enabled():
        return g.to(bfloat16)                           # (create_graph: a recorded cast)
    rounded = _run(Tensor.clone, (g,), {})
    _round_in_place(rounded._array)
    mark(rounded)
    return rounded


def _sync_data_class(t, value) -> None:
    """`t.data = value`: t takes value's dtype, so its class follows (the core's data setter).
    While an op runs on the storage (the dispatch off), a float32 value is a bfloat16 tensor's
    storage in a new layout (unsqueeze_, t_, transpose_ swap it in): t stays bfloat16."""
    if is_bfloat16(t) and _dispatch_off() and value._array.dtype == _F32:
        return
    if is_bfloat16(value) != is_bfloat16(t):
        mark(t, is_bfloat16(value))


# -- the ops ------------------------------------------------------------------------------------

# Tensor methods that convert to the dtype their name says (their result is a new tensor unless
# the dtype does not change).
_CAST_METHODS = {"float": _core.float32, "double": _core.float64, "half": _core.float16,
                 "bfloat16": bfloat16, "int": _core.int32, "long": _core.int64,
                 "short": _core.int16, "char": _core.int8, "byte": _core.uint8,
                 "bool": _core.bool_, "cfloat": _core.complex64, "cdouble": _core.complex128}

_OTHER_DTYPE = object()     # a conversion to a dtype given other than as a dtype (a type string)

# Ops that PyTorch refuses for operands of different floating dtypes (no promotion).
# (addmm, addmv, baddbmm and addbmm, and their in-place forms, check their operands' dtypes
# themselves, in PyTorch's words: contractions._dtype_key)
_SAME_DTYPE_OPS = frozenset(("matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "mv", "dot",
                             "linear", "inner", "bilinear", "vdot", "cross", "tensordot",
                             "einsum", "prelu", "nll_loss", "histc", "heaviside",
                             "heaviside_", "multi_dot", "chain_matmul", "vecdot",
                             "embedding_bag", "grid_sample", "conv_tbc"))
# ... of which only the first two floating operands must agree (conv_tbc's bias may differ)
_SAME_DTYPE_PAIR = frozenset(("conv_tbc",))
# PyTorch's words for the ops above whose check is not matmul's ({a}, {b}: the first two floating
# dtypes that differ, ScalarType names; {ca}, {cb}: their C++ names; {c0}, {c1}, {c2}: the C++
# names of the floating operands in order).  (Before this table, vdot, cross, tensordot, einsum,
# prelu, nll_loss's weight and histc's out ran on the float32 storage: fuzz 67101963's siblings.)
_SAME_DTYPE_WORDS = {
    "dot": "dot : expected both vectors to have same dtype, but found {a} and {b}",
    "vdot": "dot : expected both vectors to have same dtype, but found {a} and {b}",
    "cross": "expected scalar type {a} but found {b}",
    "einsum": "expected scalar type {a} but found {b}",
    "nll_loss": "expected scalar type {a} but found {b}",
    "tensordot": "both inputs should have same dtype",
    "heaviside": "heaviside is not yet implemented for tensors with different dtypes.",
    "heaviside_": "heaviside is not yet implemented for tensors with different dtypes.",
    "prelu": "prelu: Type promoting not supported. Got {a} and {b}",
    "bilinear": "All tensors must have the same dtype, got input1: {c0}, input2: {c1}, "
                "weight: {c2}",
    "histc": "torch.histogram: input tensor and hist tensor should have the same dtype, but "
             "got input {ca} and hist {cb}",
    "multi_dot": "multi_dot(): all tensors must have be the same dtype but tensor 0 is {ca} "
                 "and tensor {ib} {cb}",
    "chain_matmul": "multi_dot(): all tensors must have be the same dtype but tensor 0 is {ca} "
                    "and tensor {ib} {cb}",
    "vecdot": "linalg.vecdot: Expected x and y to have the same dtype, but found x of type {a} "
              "and y of type {b} instead",
    "embedding_bag": "Expected tensor for argument #1 'weight' to have the same type as tensor "
                     "for argument #1 'per_sample_weights'; but type {ta} does not equal {tb} "
                     "(while checking arguments for embedding_bag)",
    "grid_sample": "expected scalar type {a} but found {b}",
    "conv_tbc": "self and mat2 must have the same dtype, but got {a} and {b}",
}
_CONV_OPS = frozenset(("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                       "conv_transpose3d"))

# PyTorch's C++ names of the floating dtypes, in its messages
_C_NAMES = {"bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
            "float16": "c10::Half"}
_SCALAR_NAMES = {"bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
                 "float16": "Half"}


def _dtype_name(t) -> str:
    return "bfloat16" if is_bfloat16(t) else t._array.dtype.name


def _float_dtypes(tensors) -> list:
    return [_dtype_name(t) for t in tensors if t._array.dtype.kind == "f"]


def _promotes_to_bfloat16(tensors) -> bool:
    """Whether PyTorch's promotion of these inputs' floating dtypes gives bfloat16: tensors with
    dimensions decide, zero-dim ones only when there are none (a category rule: any floating
    dtype among them ends it)."""
    with_dims = _float_dtypes([t for t in tensors if t._array.ndim])
    names = with_dims or _float_dtypes([t for t in tensors if not t._array.ndim])
    return bool(names) and all(n == "bfloat16" for n in names)


def _refuse_mixed(name: str, tensors) -> None:
    """PyTorch's refusal of a matmul or convolution with operands of two floating dtypes."""
    names = _float_dtypes(tensors)
    if name in _SAME_DTYPE_PAIR:
        names = names[:2]
    if len(set(names)) < 2:
        return
    ib = next(i for i, n in enumerate(names) if n != names[0])
    a, b = names[0], names[ib]
    if name in _CONV_OPS:
        _refuse_mixed_convolution(name, names)
    words = _SAME_DTYPE_WORDS.get(name)
    if words is not None:
        c = [_C_NAMES.get(n, n) for n in names] + ["", "", ""]
        raise RuntimeError(words.format(a=_SCALAR_NAMES.get(a, a), b=_SCALAR_NAMES.get(b, b),
                                        ca=c[0], cb=_C_NAMES.get(b, b), c0=c[0], c1=c[1],
                                        c2=c[2], ib=ib, ta=_tensor_type(a), tb=_tensor_type(b)))
    raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                       f"{_C_NAMES.get(a, a)} != {_C_NAMES.get(b, b)}")


def _tensor_type(name: str) -> str:
    """PyTorch's legacy type name of a CPU tensor of floating dtype `name`, in its messages."""
    return "CPUBFloat16Type" if name == "bfloat16" else f"torch.{_SCALAR_NAMES.get(name, name)}Tensor"


def _refuse_mixed_convolution(name: str, names: list) -> None:
    """PyTorch's refusal of a convolution with input, weight (and bias) of two floating dtypes,
    in the words of the check that meets it first: the bias's dtype, then the weight's (in
    the oneDNN words for a bfloat16 input, the native kernel's for another)."""
    input, weight = names[0], names[1]
    bias = names[2] if len(names) > 2 else None
    if bias is not None and bias != input and not name.startswith("conv_transpose"):
        raise RuntimeError(f"Input type ({_C_NAMES.get(input, input)}) and bias type "
                           f"({_C_NAMES.get(bias, bias)}) should be the same")
    other, what = (weight, "weight") if weight != input else (bias, "bias")
    if input == "bfloat16":
        tensor_type = f"torch.{_SCALAR_NAMES.get(other, other)}Tensor"
        raise RuntimeError(f"Input type (CPUBFloat16Type) and {what} type ({tensor_type}) "
                           f"should be the same or input should be a MKLDNN tensor and "
                           f"{what} is a dense tensor")
    raise RuntimeError(f"expected scalar type {_SCALAR_NAMES.get(input, input)} but found "
                       f"{_SCALAR_NAMES.get(other, other)}")


# Ops that refuse a source tensor of another dtype than self's, bfloat16 on one side: name ->
# the checks, in PyTorch's order, as (the source's position, its keyword, PyTorch's message with
# the dtypes' names).  The core refuses the other mixes by the storage's dtype, which a bfloat16
# tensor shares with float32, so it neither tells bfloat16 from float32 nor names it.  The
# methods among them reach this module for a bfloat16 source too (_public_calls'
# _WRITES_FROM_SOURCE, and TensorBase.__setitem__'s dispatch on its value).
_INDEX_PUT = ("Index put requires the source and destination dtypes match, got {self} for "
              "the destination and {source} for the source.")
_PUT = ("put_(): self and source expected to have the same dtype, but got self.dtype = {self} "
        "and source.dtype = {source}")
_MASKED_SCATTER = ("masked_scatter: expected self and source to have same dtypes but got"
                   "{self} and {source}")
_SCATTER = "scatter(): Expected self.dtype to be equal to src.dtype"
_INDEX_COPY = ("index_copy_(): self and source expected to have the same dtype, but got (self) "
               "{self} and (source) {source}")
_INDEX_ADD = "index_add_(): self ({self}) and source ({source}) must have the same scalar type"
_INDEX_REDUCE = ("index_reduce_(): self ({self}) and source ({source}) must have the same "
                 "scalar type")
_CLOSE = "{self} did not match {source}"
# lerp names the C++ types; its weight may be a zero-dim tensor of any dtype
_LERP_END = "expected dtype {self_c} for `end` but got dtype {source_c}"
_LERP_WEIGHT = "expected dtype {self_c} for `weight` but got dtype {source_c}"
_SAME_DTYPE_SOURCE = {
    "index_put_": ((2, "values", _INDEX_PUT),), "index_put": ((2, "values", _INDEX_PUT),),
    "__setitem__": ((2, "value", _INDEX_PUT),),
    "put_": ((2, "source", _PUT),), "put": ((2, "source", _PUT),),
    "masked_scatter_": ((2, "source", _MASKED_SCATTER),),
    "masked_scatter": ((2, "source", _MASKED_SCATTER),),
    "_masked_scatter_": ((2, "source", _MASKED_SCATTER),),
    "index_copy_": ((3, "source", _INDEX_COPY),), "index_copy": ((3, "source", _INDEX_COPY),),
    "index_add_": ((3, "source", _INDEX_ADD),), "index_add": ((3, "source", _INDEX_ADD),),
    "index_reduce_": ((3, "source", _INDEX_REDUCE),),
    "index_reduce": ((3, "source", _INDEX_REDUCE),),
    "isclose": ((1, "other", _CLOSE),), "allclose": ((1, "other", _CLOSE),),
    "lerp": ((1, "end", _LERP_END), (2, "weight", _LERP_WEIGHT)),
}
_SAME_DTYPE_SOURCE.update(
    {name: ((3, "src", _SCATTER),) for name in (
        "scatter_", "scatter", "scatter_add_", "scatter_add", "scatter_reduce_",
        "scatter_reduce")},
    lerp_=_SAME_DTYPE_SOURCE["lerp"])

# Ops whose result has self's dtype whatever the source's (PyTorch casts the source in; conv_tbc
# its bias)
_SELF_DTYPE_RESULT = frozenset(("diagonal_scatter", "slice_scatter", "select_scatter",
                                "as_strided_scatter", "conv_tbc"))


def _advanced_write(key, value) -> bool:
    """Whether `self[key] = value` is PyTorch's index_put (an index tensor or list), not a
    copy into a view or, for one boolean mask and a one-element value, a masked_fill."""
    parts = key if isinstance(key, tuple) else (key,)
    indices = [k for k in parts if isinstance(k, list) or
               isinstance(k, _core.TensorBase) and k._array.ndim]
    if not indices:
        return False
    return not (len(parts) == 1 and isinstance(key, _core.TensorBase) and
                key._array.dtype == np.bool_ and value._array.size == 1)


def _scalar_name(t) -> str:
    return "BFloat16" if is_bfloat16(t) else _core.scalar_type_name_of(t._array.dtype)


def _refuse_other_source(name: str, args: tuple, kwargs: dict) -> None:
    """PyTorch's refusal of a source whose dtype is not self's, one of the two bfloat16."""
    target = args[0] if args else kwargs.get("input", kwargs.get("self"))
    if not isinstance(target, _core.TensorBase):
        return
    for position, keyword, message in _SAME_DTYPE_SOURCE[name]:
        source = args[position] if len(args) > position else kwargs.get(keyword)
        if not isinstance(source, _core.TensorBase) or \
                is_bfloat16(source) == is_bfloat16(target) or \
                keyword == "weight" and not source._array.ndim:
            continue
        if name == "__setitem__" and not _advanced_write(args[1], source):
            return
        if message is _INDEX_PUT and name.startswith("index_put") and _is_masked_fill(
                target, args[1] if len(args) > 1 else kwargs.get("indices"), source, args,
                kwargs):
            return
        self_name, source_name = _dtype_name(target), _dtype_name(source)
        raise RuntimeError(message.format(
            self=_scalar_name(target), source=_scalar_name(source),
            self_c=_C_NAMES.get(self_name, self_name),
            source_c=_C_NAMES.get(source_name, source_name)))


def _is_masked_fill(target, indices, values, args, kwargs) -> bool:
    """index_put_ with one mask and a one-element value is PyTorch's masked_fill_, which casts
    the value (_scatter_ops._is_masked_fill)."""
    from ._scatter_ops import _is_masked_fill as masked_fill
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    try:
        return masked_fill(target, indices, values, accumulate)
    except RuntimeError:
        return False        # (the op's own refusal follows)


def _requested_dtype(name: str, args: tuple, kwargs: dict):
    """The dtype the call asks its result to have (dtype=, .to(dtype), .float(), .type_as(t)), or
    None when the op's own rule decides."""
    d = kwargs.get("dtype")
    if isinstance(d, _core.dtype):
        return d
    cast = _CAST_METHODS.get(name)
    if cast is not None:
        return cast
    if name in ("to", "type", "type_as"):
        for a in args[1:]:
            if isinstance(a, _core.dtype):
                return a
            if isinstance(a, _core.TensorBase):
                return bfloat16 if is_bfloat16(a) else _OTHER_DTYPE
            if a is not None and name == "type":
                return bfloat16 if "BFloat16" in str(getattr(a, "__name__", a)) else _OTHER_DTYPE
        return None
    for a in args:
        if isinstance(a, _core.dtype):
            return a
    return None


def _storage_args(values):
    """The call's arguments as the float32 ops take them: torch.bfloat16 becomes float32 (the
    storage's dtype); tensors stay (with the dispatch off they are their storage)."""
    if isinstance(values, tuple):
        return tuple(_core.float32 if v is bfloat16 else v for v in values)
    return {k: (_core.float32 if v is bfloat16 else v) for k, v in values.items()}


# Ops whose number operands (other, alpha, exponent) PyTorch casts to the op's dtype, bfloat16,
# before it computes in float32: `x > 0.2` compares with 0.2001953125.  (mul and div, clamp and
# the activations' parameters keep the number as it is.)
_NUMBERS_CAST_OPS = frozenset((
    "add", "add_", "sub", "sub_", "rsub", "__rsub__", "subtract", "subtract_", "pow", "pow_",
    "__pow__", "__rpow__", "fmod", "fmod_", "remainder", "remainder_", "gt", "lt", "ge", "le", "eq", "ne", "gt_", "lt_", "ge_", "le_", "eq_", "ne_",
    "greater", "less", "greater_equal", "less_equal", "not_equal", "__gt__", "__lt__",
    "__ge__", "__le__", "__eq__", "__ne__",
    # (hardshrink's kernel compares with lambd as bfloat16: hardshrink(bf16 -0.3, 0.3) is 0;
    # softshrink's compares in float32, with lambd as given; fuzz 66903180)
    "hardshrink"))


def _bfloat16_number(v):
    """A number operand as PyTorch's add / sub / pow / comparisons take it beside bfloat16
    tensors: cast to bfloat16; so is a 0-d tensor of another floating dtype (their
    TensorIterator casts it to the common dtype: a recorded conversion when it requires grad)."""
    if type(v) is float or type(v) is int:
        with np.errstate(over="ignore"):        # (past float32's range: inf, silently)
            return float(round_to_bfloat16(np.float32(v)))
    if _is_other_zero_d(v):
        return v.to(bfloat16)
    return v


def _numbers_cast(args: tuple, kwargs: dict):
    return (tuple(_bfloat16_number(a) for a in args),
            {k: (_bfloat16_number(v) if k in ("other", "alpha", "exponent", "lambd") else v)
             for k, v in kwargs.items()})


def _writes_inputs(name: str, kwargs: dict) -> bool:
    return name.endswith("_") or name in ("__setitem__", "backward") or "out" in kwargs


# -- ops recorded as autograd Functions of our own ------------------------------------------------
# Where the core's node for an op would not give PyTorch's bfloat16 gradient (a conversion, a
# backward formula of several bfloat16 ops, log_softmax's kernel), the op is recorded as a
# Function named as PyTorch's node: one class per key, made on first use.

_RECORDED: dict = {}


def _recorded(key, node: str, forward, backward):
    """The Function class for `key`: forward(ctx, *args) and backward(ctx, grad) as given."""
    made = _RECORDED.get(key)
    if made is None:
        from .autograd import Function
        made = type(node, (Function,), {"forward": staticmethod(forward),
                                        "backward": staticmethod(backward)})
        # (its backward runs no user code: no hook can see the order leaves are delivered in,
        # so the sweep need not replay PyTorch's ready queue for it, ready_order.pxi)
        made._backward_is_kernels = True
        _RECORDED[key] = made
    return made


def _apply_recorded(function, node: str, *args):
    """function.apply(*args) on the float32 storage (the dispatch off), its node named `node`."""
    previous = _core._subclass_dispatch_set_off(True)
    try:
        result = function.apply(*args)
    finally:
        _core._subclass_dispatch_set_off(previous)
    return _core._name_grad_fn(result, node)


def _cast_forward(ctx, t):
    return _run(Tensor.clone, (t,), {})


def _cast_backward(ctx, grad):
    """PyTorch's gradient on either side of a float32 <-> bfloat16 conversion is a bfloat16 one
    (computed by bfloat16 ops above a float32 -> bfloat16 cast, cast to bfloat16 below a
    bfloat16 -> float32 one), so a float32 weight autocast casts gets bfloat16-valued
    gradients, as PyTorch's."""
    rounded = _run(Tensor.clone, (grad,), {})
    _round_in_place(rounded._array)
    return rounded


def _copy(t):
    """A new tensor with t's values, recorded as PyTorch's dtype conversion (ToCopyBackward0)."""
    if not (t.requires_grad and _core.is_grad_enabled()):
        return _run(Tensor.clone, (t,), {})
    return _apply_recorded(_recorded("cast", "ToCopyBackward0", _cast_forward, _cast_backward),
                           "ToCopyBackward0", t)


def gradients_for(inputs, grads):
    """autograd.grad's results with PyTorch's dtypes: the gradient of a bfloat16 input, which the
    sweep computed in float32, as a bfloat16 tensor (rounded)."""
    if isinstance(grads, dict):
        return {k: _bfloat16_gradient(g) if is_bfloat16(inputs[k]) else g
                for k, g in grads.items()}
    inputs = (inputs,) if isinstance(inputs, _core.TensorBase) else tuple(inputs)
    return type(grads)(_bfloat16_gradient(g) if is_bfloat16(x) else g
                       for x, g in zip(inputs, grads))


def _bfloat16_gradient(g):
    if g is None or is_bfloat16(g) or g._array.dtype != _F32:
        return g
    # a copy, never g itself rounded: the sweep may hand back a tensor it was given (a
    # grad_outputs entry, kept by reference); on a graph (create_graph) the copy is recorded as
    # PyTorch's conversion
    g = _copy(g)
    _round_in_place(g._array)
    mark(g)
    return g


def _shares_storage(r, t) -> bool:
    a, b = r._array, t._array
    if a.size == 0 or b.size == 0:
        # numpy says empty arrays share nothing: a view of an empty bfloat16 tensor (expand_as,
        # reshape) came back float32 (fuzz seed 65700738); its numpy base tells instead
        return _numpy_root(a) is _numpy_root(b)
    return np.may_share_memory(a, b)


def _numpy_root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _result(r, to_bfloat16: bool, requested, inputs: list):
    """One result of the op, with PyTorch's dtype (module docstring)."""
    if isinstance(r, (list, tuple)):
        items = [_result(x, to_bfloat16, requested, inputs) for x in r]
        if type(r) is list:
            return items
        if type(r) is tuple:
            return tuple(items)
        try:
            return type(r)(items)
        except TypeError:
            return type(r)(*items)
    if not isinstance(r, _core.TensorBase):
        return r
    converting = requested is not None
    for t in inputs:
        if r is t or (type(r) is not type(t) and _shares_storage(r, t)):
            if converting and (requested is bfloat16) != is_bfloat16(t) and \
                    r._array.dtype == _F32 and t._array.dtype == _F32:
                r = _copy(r)            # a conversion the float32 storage made a no-op
                break
            if r is t:
                return r
            if is_bfloat16(t) and r._array.dtype == _F32 and not is_bfloat16(r):
                mark(r)                 # a view of a bfloat16 tensor
            return r
    if r._array.dtype == _F32 and to_bfloat16 and not is_bfloat16(r):
        _round_in_place(r._array)
        mark(r)
    return r


def _run(func, args: tuple, kwargs: dict):
    """func on the float32 storage: the dispatch off, torch.bfloat16 read as float32.  An error
    naming the storage's ScalarType ("not implemented for 'Float'") names BFloat16."""
    previous = _core._subclass_dispatch_set_off(True)
    try:
        return func(*_storage_args(args), **_storage_args(kwargs))
    except (RuntimeError, NotImplementedError, TypeError) as e:
        if "'Float'" in str(e) and len(e.args) == 1 and not any(
                isinstance(t, _core.TensorBase) and not is_bfloat16(t) and
                t._array.dtype == _F32 for t in _tensors_in(kwargs.values(),
                                                             _tensors_in(args, []))):
            raise type(e)(str(e).replace("'Float'", "'BFloat16'")) from None
        raise
    finally:
        _core._subclass_dispatch_set_off(previous)


def _torch_function(func, args: tuple, kwargs: dict):
    """An op with a bfloat16 tensor (or torch.bfloat16) among its arguments."""
    if _core._saved_hooks_active() is None:        # (nothing to pack on this thread)
        return _handled(func, args, kwargs)
    return _packed_around(_tensors_in(kwargs.values(), _tensors_in(args, [])), _handled, func,
                          args, kwargs)


def _packed_around(inputs: list, handler, *args):
    """handler(*args), an op computed on the float32 storage, with the values saved for
    backward under saved-tensor hooks packed before and after it, with the dispatch on: the
    core defers packing while the dispatch is off (saved_hooks.pxi), so pack receives these
    tensors as bfloat16 ones, rounded and marked, as PyTorch's pack receives them; a saved
    input that needs no grad (`inputs`: the op's tensors) as that input itself."""
    _core._flush_saved_packs()
    result = handler(*args)

    def saved_as(t):
        # (a value saved on a bfloat16 input's storage -- linear's weight.t() -- is a view of
        # it, bfloat16 in PyTorch; a new tensor here would say float32)
        if any(is_bfloat16(k) and _shares_storage(t, k) for k in inputs):
            mark(t)
    _core._flush_saved_packs(inputs, saved_as)
    return result


def _handled(func, args: tuple, kwargs: dict):
    policy = getattr(func, "_autocast_policy", 0)
    if policy and _core._set_autocast_on(None):
        # autocast casts first, as PyTorch's dispatcher does whatever the inputs' dtype (a
        # bfloat16 activation meeting a float32 layer's weight); the cast call comes back here
        from ._autocast import autocast_call
        return autocast_call(func, policy, args, kwargs)
    name = op_name(func)
    if kwargs.get("out") is not None:
        # (before the ops' own handlers and the mixed-operand check, which would take out for
        # an operand: PyTorch checks mm's out dtype first)
        _refuse_inexact_out(func, name, args, kwargs,
                            _tensors_in(kwargs.values(), _tensors_in(args, [])), kwargs["out"])
    own = _OWN.get(name)
    if own is not None:
        return own(func, args, kwargs)
    return _computed(func, name, args, kwargs)


def _computed(func, name: str, args: tuple, kwargs: dict):
    inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
    if name in _SAME_DTYPE_OPS or name in _CONV_OPS:
        _refuse_mixed(name, _dtype_operands(func, name, args, kwargs, inputs))
    if name in _SAME_DTYPE_SOURCE:
        _refuse_other_source(name, args, kwargs)
    requested = _requested_dtype(name, args, kwargs)
    if requested is not None:
        to_bfloat16 = requested is bfloat16
    elif name in _SELF_DTYPE_RESULT:
        to_bfloat16 = is_bfloat16(args[0] if args else kwargs.get("input"))
    else:
        to_bfloat16 = _promotes_to_bfloat16(inputs)
    out = kwargs.get("out")
    # PyTorch computes an elementwise op in its inputs' dtype, bfloat16, and casts the result
    # into a wider out= (a reduction accumulates in out's dtype: not rounded)
    into_wider_out = not to_bfloat16 and isinstance(out, _core.TensorBase) and \
        name in _meta._ELEMENTWISE and out._array.dtype.kind == "f" and not is_bfloat16(out) \
        and _promotes_to_bfloat16([t for t in inputs if t is not out])
    if (to_bfloat16 or into_wider_out) and name in _NUMBERS_CAST_OPS:
        args, kwargs = _numbers_cast(args, kwargs)
    try:
        result = _run(func, args, kwargs)
    except RuntimeError as error:
        raise _as_bfloat16_cast_error(error, name, inputs) from None
    if _writes_inputs(name, kwargs):
        for t in inputs:
            if is_bfloat16(t):
                _round_in_place(t._array)
    if into_wider_out:
        out._array[...] = round_to_bfloat16(out._array)
    return _result(result, to_bfloat16, requested, inputs)


def _as_bfloat16_cast_error(error: RuntimeError, name: str, inputs) -> RuntimeError:
    """An in-place op's refusal to cast its result into an integer or bool self, worded with the
    result type PyTorch names: a bfloat16 operand promotes to bfloat16, which the float32
    storage computed as Float (int_t.add_(bf16), atan2_, ...: "result type BFloat16 can't be
    cast to the desired output type Long")."""
    if name.endswith("_") and str(error).startswith("result type Float can't be cast") \
            and _promotes_to_bfloat16(inputs):
        return RuntimeError(str(error).replace("Float", "BFloat16", 1))
    return error


def _refuse_inexact_out(func, name: str, args: tuple, kwargs: dict, inputs, out) -> None:
    """PyTorch's refusal of an out= of bfloat16 for a float32 result, or of float32 for a
    bfloat16 one, by the ops that cast into no other dtype (_out_arg.EXACT_OUT_DTYPE, in their
    words): on the float32 storage the core's check sees one dtype (torch.abs(bfloat16, out=
    float32) ran, fuzz 66900050; torch.gather, sort, amax, tril ... too)."""
    from ._out_arg import NONDIFFERENTIABLE_OUT
    if "linalg" in (getattr(func, "__module__", None) or ""):
        name = "linalg_" + name
    rule = _core._exact_out_rule(name, tuple(args), kwargs)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    values = outs[0] if outs else None
    if rule is None or name in NONDIFFERENTIABLE_OUT or not isinstance(values, _core.TensorBase) \
            or values._array.dtype != np.float32:
        return
    operands = [t for t in inputs if not any(t is o for o in outs)]
    first = next((t for t in operands if t._array.dtype != np.bool_), None)   # (where's mask)
    if first is None or first._array.dtype.kind != "f":
        return
    result_bfloat16 = _promotes_to_bfloat16(operands)
    if is_bfloat16(values) == result_bfloat16 or (
            not result_bfloat16 and any(t._array.dtype.kind == "f" and
                                        t._array.dtype != np.float32 for t in operands)):
        return          # (a float64 or float16 result: the core's own check names it)
    result, got = ("bfloat16", "float32") if result_bfloat16 else ("float32", "bfloat16")
    if isinstance(rule, tuple) and len(rule) != len(outs):
        return          # (max(x, y, out=o): the single-result overloads cast, as the core's)
    message = rule[0] if isinstance(rule, tuple) else rule
    raise RuntimeError(message.format(name=name, out=_SCALAR_NAMES[got],
                                      result=_SCALAR_NAMES[result], out_c=_C_NAMES[got],
                                      result_c=_C_NAMES[result]))


def module_call(call, parameters, args: tuple, kwargs: dict):
    """A module's call that reaches its ops by internal names (the recurrent layers), with
    bfloat16 parameters: run on the storage as an op, its parameters counted among its inputs."""
    inputs = _tensors_in(kwargs.values(), _tensors_in(args, [p for p in parameters
                                                             if p is not None]))
    return _packed_around(inputs, lambda: _result(_run(call, args, kwargs),
                                                  _promotes_to_bfloat16(inputs), None, inputs))


def dtype_call(entry, args: tuple, kwargs: dict):
    """A call with torch.bfloat16 among its arguments and no bfloat16 tensor (overrides.py)."""
    return _torch_function(entry, args, kwargs)


# What a bfloat16 tensor answers without computing: name -> fn(func, args, kwargs).
def _numpy_refused(func, args, kwargs):
    raise TypeError("Got unsupported ScalarType BFloat16")


def _repr(func, args, kwargs):
    return tensor_repr(args[0])


def _format(func, args, kwargs):
    """format(t, spec), f"{t}", as PyTorch's Tensor.__format__: a 0-d bfloat16 tensor formats as
    its Python number (a parameter, as any subclass, takes only the empty spec); any other is
    its str, dtype shown (run on the float32 storage it would print without it)."""
    t = args[0]
    spec = args[1] if len(args) > 1 else kwargs.get("format_spec", "")
    if t._array.ndim == 0 and not isinstance(t, Parameter):
        return t.item().__format__(spec)
    return object.__format__(t, spec)


def _element_size(func, args, kwargs):
    return 2


def _type(func, args, kwargs):
    if len(args) == 1 and not kwargs:
        return "torch.BFloat16Tensor"       # t.type(): the type's name
    return _computed(func, "type", args, kwargs)


def _result_type(func, args, kwargs):
    """torch.result_type with bfloat16 operands: float32 on the storage, bfloat16 when the
    floating tensors promote to it (Python numbers never raise a floating tensor's dtype)."""
    d = _run(func, args, kwargs)
    if d is _core.float32 and _promotes_to_bfloat16(_tensors_in(args, [])):
        return bfloat16
    return d


def _promote_types(func, args, kwargs):
    """torch.promote_types with bfloat16: bfloat16 with itself or an integer or bool dtype;
    with another floating or complex dtype as float32 is (float16 and float32 give float32)."""
    a, b = (list(args) + [kwargs.get("type1"), kwargs.get("type2")])[:2] if len(args) < 2 \
        else args[:2]
    other = b if a is bfloat16 else a
    if other is bfloat16 or (isinstance(other, _core.dtype) and
                             not (other.is_floating_point or other.is_complex)):
        return bfloat16
    return _run(func, args, kwargs)


def _norm(func, args, kwargs):
    """A normalisation (layer_norm, group_norm, batch_norm, instance_norm and the native_ forms
    of the first three): PyTorch's CPU kernels take a bfloat16 input with float32 weight and
    bias (its "mixed dtype" form, a bfloat16 activation meeting a float32 LayerNorm under
    autocast) and compute in float32, the result rounded once to the input's dtype; any other
    mix of the two raises."""
    name = op_name(func)
    try:
        bound = inspect.signature(func).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return _computed(func, name, args, kwargs)          # (the op's own argument errors)
    input = bound.get("input")
    parameters = [p for p in (bound.get("weight"), bound.get("bias"))
                  if isinstance(p, _core.TensorBase)]
    if not isinstance(input, _core.TensorBase) or not input.is_floating_point() or \
            not is_bfloat16(input) and not any(is_bfloat16(p) for p in parameters):
        return _computed(func, name, args, kwargs)
    # The running statistics join the rule after weight and bias, as in the kernels' check of
    # a float16 input (a float32 bias with bfloat16 running statistics is refused, and so is
    # the reverse; float32 statistics alone are the mixed form): fuzz session 48, they ran
    parameters += [p for p in (bound.get("running_mean"), bound.get("running_var"))
                   if isinstance(p, _core.TensorBase)]
    if name == "batch_norm" and input.numel() == 0:
        # ATen's batch_norm returns an empty input (times weight[0], plus bias[0]) before its
        # kernel, so no mix of dtypes is refused, and the result has the input's dtype (fuzz
        # 67301043, 67302150, 67304294: a float64 BatchNorm2d on an empty bfloat16 batch
        # raised here)
        return _result(_run(func, args, kwargs), is_bfloat16(input), None, [input])
    # the kernels' rule (nn/_norm_dtypes.py) on the dtypes as PyTorch names them (the float32
    # storage of a bfloat16 parameter read as float32: a float64 input met "all inputs must
    # share same datatype", a float32 weight with a bfloat16 bias ran)
    kind, names = _scalar_name(input), [_scalar_name(p) for p in parameters]
    same = all(n == kind for n in names)
    if not same and names[0] == kind:
        raise RuntimeError(f"expected scalar type {kind} but found "
                           f"{next(n for n in names if n != kind)}")
    if not same and any(n != "Float" for n in names):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    # (the result's dtype is the input's either way)
    result = _run(func, args, kwargs)
    if name.startswith("native_"):
        # (output, statistics...): the statistics of the mixed form are float32, as PyTorch's
        # kernel keeps them in its accumulation type (all float32 was a silent dtype change of
        # the output)
        result = (_result(result[0], True, None, [input]),
                  *(_result(t, same, None, [input]) for t in result[1:]))
    else:
        result = _result(result, is_bfloat16(input), None, [input])
    for statistic in (bound.get("running_mean"), bound.get("running_var")):
        if is_bfloat16(statistic):
            _round_in_place(statistic._array)       # (updated in training)
    return result


_FUSED_MISMATCH = "rms_norm: mismatch dtype, cannot dispatch to fused implementation"


def _rms_norm(func, args, kwargs):
    """rms_norm with a bfloat16 input or weight.  PyTorch composes it on the CPU (no kernel of
    its own, so no dtype rule of the normalisations): the input cast to float32, the weight, of
    any dtype, multiplied in by promotion, the result cast to the input's dtype.  A bfloat16
    input goes through one recorded cast, so its gradient is the float32 one rounded once (the
    composition's several uses of it rounded each contribution); a float32 / bfloat16 pair is
    told it missed the fused kernel, as PyTorch warns."""
    bound = _bound(func, args, kwargs)
    input = None if bound is None else bound.get("input")
    if not isinstance(input, _core.TensorBase) or input._array.dtype != _F32:
        return _computed(func, op_name(func), args, kwargs)     # (the op's own errors)
    weight = bound.get("weight")
    if isinstance(weight, _core.TensorBase) and weight._array.dtype == _F32 and \
            is_bfloat16(weight) != is_bfloat16(input) and _FUSED_MISMATCH not in _core.WARNED_ONCE:
        # (PyTorch's TORCH_WARN_ONCE: one warning per process for either pair, so the record
        # is keyed by the site, not by the message)
        _core.WARNED_ONCE.add(_FUSED_MISMATCH)
        names = ("c10::BFloat16", "float") if is_bfloat16(input) else ("float", "c10::BFloat16")
        warnings.warn(f"Mismatch dtype between input and weight: input dtype = {names[0]}, "
                      f"weight dtype = {names[1]}, Cannot dispatch to fused implementation.",
                      UserWarning, stacklevel=3)
    if not is_bfloat16(input):
        return _run(func, args, kwargs)     # (a float32 result: the weight's values are exact)
    bound["input"] = input.float()
    return _result(_run(func, (), bound), True, None, [])


def _input_dtype_loss(func, args, kwargs):
    """binary_cross_entropy, huber_loss and soft_margin_loss with a bfloat16 operand: PyTorch's
    kernels give the input's dtype whatever the target's (and bce's weight's), not the
    promotion (a bfloat16 input with a float32 target gave a float32 loss); bce refuses a
    target of another dtype, naming bfloat16 (the float32 storage hid the mismatch)."""
    bound = _bound(func, args, kwargs)
    input = None if bound is None else bound.get("input")
    target = None if bound is None else bound.get("target")
    if not isinstance(input, _core.TensorBase) or not isinstance(target, _core.TensorBase):
        return _computed(func, op_name(func), args, kwargs)     # (the op's own errors)
    if op_name(func) == "binary_cross_entropy" and (
            is_bfloat16(input) != is_bfloat16(target) or
            input._array.dtype != target._array.dtype):
        raise RuntimeError(f"Found dtype {_scalar_name(target)} but expected "
                           f"{_scalar_name(input)}")
    return _result(_run(func, args, kwargs), is_bfloat16(input), None, [])


def _bound(func, args, kwargs):
    """The call's arguments by name, or None when they do not fit (the op raises its error)."""
    try:
        return inspect.signature(func).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None


def _log_softmax(func, args, kwargs):
    """log_softmax of a bfloat16 tensor as PyTorch's CPU kernel computes it: in float32, but
    along the last dimension with its sum of exponentials and that sum's log held in bfloat16
    (x - max - bf16(log(bf16(sum exp(x - max))))), the result rounded once: printed
    log-probabilities and cross-entropy losses then agree to the last bfloat16 bit."""
    bound = _bound(func, args, kwargs)
    x = None if bound is None else bound.get("input")
    dim = None if bound is None else bound.get("dim")
    if not is_bfloat16(x) or type(dim) is not int or bound.get("dtype") is not None or \
            bound.get("out") is not None or bound.get("axis") is not None or not x._array.size:
        return _computed(func, op_name(func), args, kwargs)
    if x.requires_grad and _core.is_grad_enabled():
        function = _recorded("log_softmax", "LogSoftmaxBackward0", _log_softmax_forward,
                             _log_softmax_backward)
        return _apply_recorded(function, "LogSoftmaxBackward0", x, dim)
    return _log_softmax_value(x, dim)


def _log_softmax_value(x, dim):
    """The bfloat16 log_softmax of x along dim (called where nothing records: x needs no
    grad, or inside the Function's forward)."""
    # PyTorch's kernel along the last dimension holds the sum of exponentials and its log in
    # bfloat16; along any other dimension it computes in float32 throughout (rounding there as
    # along the last one put results 3 bfloat16 ulp off, fuzz seed 66300099)
    along_last = x.dim() == 0 or dim % x.dim() == x.dim() - 1
    previous = _core._subclass_dispatch_set_off(True)
    try:
        shifted = x - x.amax(dim, keepdim=True)
        total = shifted.exp().sum(dim, keepdim=True)
        if along_last:
            _round_in_place(total._array)
            total = total.log()
            _round_in_place(total._array)
        else:
            total = total.log()
        result = shifted - total
    finally:
        _core._subclass_dispatch_set_off(previous)
    _round_in_place(result._array)
    mark(result)
    return result


def _log_softmax_forward(ctx, x, dim):
    y = _log_softmax_value(x, dim)
    ctx.save_for_backward(y)
    ctx.dim = dim
    return y


def _log_softmax_backward(ctx, grad):
    """PyTorch's bfloat16 kernel: grad - exp(output) * sum(grad), in float32 from the rounded
    output, rounded once."""
    y, = ctx.saved_tensors
    previous = _core._subclass_dispatch_set_off(True)
    try:
        g = grad - y.exp() * grad.sum(ctx.dim, keepdim=True)
    finally:
        _core._subclass_dispatch_set_off(previous)
    return as_bfloat16_gradient(g), None


def _cross_entropy(func, args, kwargs):
    """cross_entropy of bfloat16 logits with class targets: PyTorch's nll_loss of its
    log_softmax (module docstring of _log_softmax)."""
    bound = _bound(func, args, kwargs)
    if bound is not None and is_bfloat16(bound.get("target")) and \
            isinstance(bound.get("input"), _core.TensorBase) and \
            bound["target"].dim() != bound["input"].dim():
        return _class_target_loss(func, args, kwargs)       # (same shape: probabilities)
    if bound is not None and isinstance(bound.get("target"), _core.TensorBase) and \
            bound["target"]._array.dtype.kind in "iu" and bound.get("weight") is not None:
        # class targets meet nll_loss's check of the weight against the log-probabilities
        # (probability targets multiply by the weight: no check)
        _refuse_mixed("nll_loss", [bound.get("input"), bound["weight"]])
    if _probability_targets(bound):
        return _cross_entropy_probabilities(**bound)
    if bound is None or not is_bfloat16(bound.get("input")) or \
            bound.get("label_smoothing", 0.0) != 0.0 or \
            not isinstance(bound.get("target"), _core.TensorBase) or \
            bound["target"]._array.dtype.kind not in "iu" or bound["input"].dim() < 1:
        return _computed(func, op_name(func), args, kwargs)
    from .nn import functional as F
    x = bound.pop("input")
    bound.pop("label_smoothing", None)
    return F.nll_loss(F.log_softmax(x, 1 if x.dim() > 1 else 0), **bound)


def _probability_targets(bound) -> bool:
    """Whether a cross_entropy call with a bfloat16 operand has probability targets (floating,
    of the input's shape) and nothing else that _computed's checks must see first."""
    if bound is None:
        return False
    x, target = bound.get("input"), bound.get("target")
    weight = bound.get("weight")
    tensor = _core.TensorBase
    return (isinstance(x, tensor) and isinstance(target, tensor)
            and (is_bfloat16(x) or is_bfloat16(target))
            and x._array.dtype.kind == "f" and target._array.dtype.kind == "f"
            and x.dim() >= 1 and tuple(x.shape) == tuple(target.shape) and x._array.size
            and (weight is None or isinstance(weight, tensor) and weight.dim() == 1
                 and weight.shape[0] == x.shape[0 if x.dim() == 1 else 1])
            and bound.get("size_average") is None and bound.get("reduce") is None
            and bound.get("reduction", "mean") in ("mean", "sum", "none")
            and 0.0 <= bound.get("label_smoothing", 0.0) <= 1.0)


def _cross_entropy_probabilities(input, target, weight=None, reduction="mean",
                                 label_smoothing=0.0, **_):
    """cross_entropy with probability targets as PyTorch's composite computes it (its
    cross_entropy_loss_prob_target): log_softmax, the smoothed target, their product (times the
    weight), summed; each step an op that rounds to bfloat16 as PyTorch's does, so the loss and
    its gradient agree to the last bit (computed whole in float32 and rounded once they were a
    bfloat16 ulp off)."""
    from .nn import functional as F
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    log_probabilities = F.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    product = log_probabilities * target
    if weight is not None:
        shape = [1] * input.dim()
        shape[class_dim] = weight.shape[0]
        product = product * weight.view(shape)
    if reduction == "none":
        return -product.sum(class_dim)
    if reduction == "sum":
        return -product.sum()
    # (divided by an integer count, as ATen's: its div by a Scalar, DivBackward1)
    return _core._name_grad_fn(-product.sum() / (input.numel() // n_classes), "DivBackward1")


def _attention_projections(func, args, kwargs):
    """multi_head_attention_forward with a bfloat16 operand.  PyTorch's is a composition whose
    linear projections refuse operands of two floating dtypes (a bfloat16 query meeting a
    float32 layer); computed whole on the float32 storage it met no such check and returned
    float32 (fuzz 67302167).  So its projections' checks first, in its order: q, k, v by
    their weights and biases, then the attention output (the query's dtype) by out_proj."""
    bound = _bound(func, args, kwargs)
    if bound is not None:
        tensor = _core.TensorBase
        if bound.get("use_separate_proj_weight"):
            weights = [bound.get(n) for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight")]
        else:
            weights = [bound.get("in_proj_weight")] * 3
        bias = bound.get("in_proj_bias")
        for x, w in zip((bound.get("query"), bound.get("key"), bound.get("value")), weights):
            operands = [t for t in (x, w, bias) if isinstance(t, tensor)]
            _refuse_mixed("linear", operands)
        _refuse_mixed("linear", [t for t in (bound.get("query"), bound.get("out_proj_weight"),
                                             bound.get("out_proj_bias")) if isinstance(t, tensor)])
    return _computed(func, op_name(func), args, kwargs)


def _bce_with_logits(func, args, kwargs):
    """binary_cross_entropy_with_logits with a bfloat16 operand: ATen's formula step by step,
    its in-place steps keeping their destination's dtype, so the loss has the target's dtype
    (it is built on 1 - target) and the bfloat16 steps round where PyTorch's do:

        log_sigmoid = logsigmoid(input)                  [.mul_((pos_weight - 1) * target + 1)]
        loss = (1 - target).mul_(input).sub_(log_sigmoid)           [.mul_(weight)], reduced

    Computed on the float32 storage and rounded once, the loss of a float32 input with a
    bfloat16 target was float32 (and rounded differently), fuzz seed 66300093."""
    bound = _bound(func, args, kwargs)
    if bound is None:
        return _computed(func, op_name(func), args, kwargs)
    from .grad_mode import no_grad
    from .nn import functional as F
    from .nn._reduction import legacy_get_string
    with no_grad():
        _run(func, args, kwargs)            # PyTorch's argument errors, on the storage
    x, target = bound["input"], bound["target"]
    weight, pos_weight = bound.get("weight"), bound.get("pos_weight")
    reduction = bound.get("reduction", "mean")
    if bound.get("size_average") is not None or bound.get("reduce") is not None:
        reduction = legacy_get_string(bound.get("size_average"), bound.get("reduce"), False)
    log_sigmoid = F.logsigmoid(x)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        log_sigmoid = (log_sigmoid * log_weight).to(log_sigmoid.dtype)
    loss = ((1 - target) * x).to(target.dtype)
    loss = (loss - log_sigmoid).to(target.dtype)
    if weight is not None:
        loss = (loss * weight).to(target.dtype)
    if reduction in ("mean", "elementwise_mean"):
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


_BFLOAT16_MAX = float(np.array(0x7F7F0000, dtype=np.uint32).view(_F32))     # 3.3895e+38


def _nan_to_num(func, args, kwargs):
    """nan_to_num of a bfloat16 tensor: infinities become bfloat16's largest finite values
    (the float32 storage's would round back to infinity)."""
    if not args or not is_bfloat16(args[0]) or len(args) > 4:
        return _computed(func, op_name(func), args, kwargs)
    given = dict(zip(("nan", "posinf", "neginf"), args[1:]), **kwargs)
    if given.get("posinf") is None:
        given["posinf"] = _BFLOAT16_MAX
    if given.get("neginf") is None:
        given["neginf"] = -_BFLOAT16_MAX
    return _computed(func, op_name(func), args[:1], given)


def _close(func, args, kwargs):
    """isclose / allclose: PyTorch computes |a - b| and atol + |rtol * b| with bfloat16 ops, each
    result rounded to bfloat16 (which can move an element across the tolerance)."""
    from ._extra_ops import close_elements
    name = op_name(func)
    _refuse_other_source(name, args, kwargs)        # "BFloat16 did not match Float"
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    values = bound.arguments
    close = _run(close_elements, (name, values["input"], values["other"], values["rtol"],
                                  values["atol"], values["equal_nan"], round_to_bfloat16), {})
    return bool(close._array.all()) if name == "allclose" else close


def _attention(func, args, kwargs):
    """scaled_dot_product_attention: its result has the query's dtype whatever its mask's (a
    float32 additive mask on bfloat16 operands is PyTorch's usual case), and it refuses
    operands of two dtypes, or a bfloat16 mask on other operands, as PyTorch does."""
    bound = _bound(func, args, kwargs)
    operands = None if bound is None else [bound.get(n) for n in ("query", "key", "value")]
    if operands is None or not all(isinstance(t, _core.TensorBase) for t in operands):
        return _computed(func, op_name(func), args, kwargs)
    q, k, v = operands
    c = [_C_NAMES.get(_dtype_name(t), _dtype_name(t)) for t in operands]
    if len(set(c)) > 1:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {c[0]} key.dtype: {c[1]} and value.dtype: {c[2]} "
                           f"instead.")
    mask = bound.get("attn_mask")
    if is_bfloat16(mask) and not is_bfloat16(q):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: c10::BFloat16 and  query.dtype: "
                           f"{c[0]} instead.")
    return _result(_run(func, args, kwargs), is_bfloat16(q), None, operands)


def _spaced(func, args, kwargs):
    """torch.linspace / logspace(..., dtype=torch.bfloat16): PyTorch's kernels compute in
    bfloat16 arithmetic, each operation rounded (creation._sixteen_bit_linspace and
    _narrow_float_logspace), not in float32 rounded once: the float32 result, checked and made
    as any factory's, gets those values."""
    name = op_name(func)
    result = _computed(func, name, args, kwargs)
    if is_bfloat16(result) and result._array.size > 1 and "out" not in kwargs \
            and result._array.flags.writeable:     # (a meta tensor: no values)
        from .creation import _range_endpoints, _narrow_float_logspace, _sixteen_bit_linspace
        bound = inspect.signature(func).bind(*args, **kwargs).arguments
        start, end = _range_endpoints(name, bound["start"], bound["end"])
        steps = result._array.size
        result._array[...] = (
            _sixteen_bit_linspace(start, end, steps, round_to_bfloat16) if name == "linspace" else
            _narrow_float_logspace(start, end, steps, bound.get("base", 10.0), round_to_bfloat16))
    return result


def _already(func, args, kwargs):
    return args[0]                          # t.bfloat16() of a bfloat16 tensor: t itself


# PyTorch's ops that are Python compositions of other ops, each result rounded to bfloat16: run
# as the same compositions here (tapegrad computes them in one kernel).
_COMPOSED = {
    "__rtruediv__": lambda x, other: x.reciprocal() * other,        # torch._tensor's __rdiv__
    "__rdiv__": lambda x, other: x.reciprocal() * other,
    "softsign": lambda x: x / (x.abs() + 1),                         # torch.nn.functional's
    "tanhshrink": lambda x: x - x.tanh(),
    # (PyTorch's CPU logit kernel rounds x / (1 - x) to bfloat16 before its log)
    "logit": lambda x, eps=None: _logit_ratio(x if eps is None else x.clamp(eps, 1 - eps)).log(),
}


def _logit_ratio(x):
    return x / (1 - x)


def _composed(func, args, kwargs):
    name = op_name(func)
    # (keywords other than out= are the composition's: logit's eps)
    if "out" in kwargs or not args or not is_bfloat16(args[0]) or not all(
            is_bfloat16(a) or not isinstance(a, _core.TensorBase)
            for a in (*args, *kwargs.values())):
        return _computed(func, name, args, kwargs)
    try:
        return _COMPOSED[name](*args, **kwargs)
    except TypeError:                   # a keyword the composition has not: the op's error
        return _computed(func, name, args, kwargs)


def _log_product(func, args, kwargs):
    """xlogy, special.xlog1py and special.entr with a bfloat16 result: PyTorch's CPU kernels
    take the logarithm through c10's bfloat16 overload, which rounds it to bfloat16 before the
    product (x * bf16(log y)), so a product rounded once from float32 was a bfloat16 ulp off in
    one value of four.  The values are rewritten in the result the op made (its graph and
    gradients stay the core's)."""
    name = op_name(func)
    y = _computed(func, name, args, kwargs)
    bound = _bound(func, args, kwargs)
    if not is_bfloat16(y) or bound is None or bound.get("out") is not None:
        return y
    values = [bound.get(k) for k in (("input",) if name == "entr" else ("input", "other"))]
    # (a number operand enters the kernel as a bfloat16 value, as the tensors' storage is)
    a, b = (round_to_bfloat16(v._array if isinstance(v, _core.TensorBase) else v)
            for v in (values * 2)[:2])
    if name == "entr":
        a = -a
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = round_to_bfloat16((np.log1p if name == "xlog1py" else np.log)(b))
        product = round_to_bfloat16(a * logs)
    if name == "entr":          # (nan stays, 0 at 0, -inf below: the kernel's own branches)
        special = np.where(b > 0, product, np.where(b == 0, _F32.type(0), -np.inf))
        product = np.where(np.isnan(b), b, special)
    else:                       # (nan where other is, else 0 where input is 0)
        product = np.where(np.isnan(b), _NAN_F32, np.where(a == 0, _F32.type(0), product))
    y._array[...] = np.broadcast_to(product, y._array.shape)
    return y


def _logsumexp(func, args, kwargs):
    """logsumexp of a bfloat16 tensor as PyTorch's: a composition of bfloat16 ops (ATen's
    logsumexp_out_impl: amax, its infinities replaced by 0, x - max, exp, sum, log, + max), each
    result rounded to bfloat16, and its backward grad * exp(x - result), each op rounded.
    Computed in float32 and rounded once, the result was a bfloat16 ulp off in one case of six
    (logsumexp([0, 1.5]): 1.7031 where PyTorch gives 1.6953), and with it a Categorical's
    normalised logits and entropy.  Recorded as LogsumexpBackward0 with that formula."""
    bound = _bound(func, args, kwargs)
    x = None if bound is None else bound.get("input", bound.get("self"))
    dim = None if bound is None else bound.get("dim", bound.get("axis"))
    dims = (dim,) if isinstance(dim, int) else tuple(dim) if isinstance(dim, (tuple, list)) \
        else ()
    if not is_bfloat16(x) or bound.get("out") is not None or not x._array.size or \
            x._array.ndim == 0 or not dims or not all(isinstance(d, int) for d in dims):
        return _computed(func, op_name(func), args, kwargs)
    nd = x._array.ndim
    if not all(-nd <= d < nd for d in dims) or len({d % nd for d in dims}) != len(dims):
        # (the core's logsumexp raises PyTorch's errors for these; wrapped here, dim 3 of a
        # 3-d tensor reduced dim 0 and a repeated dim was reduced once: fuzz 67202272, 67203131)
        return _computed(func, op_name(func), args, kwargs)
    axes = tuple(sorted(d % nd for d in dims))
    keepdim = bool(bound.get("keepdim", bound.get("keepdims")) or False)
    if _core.is_grad_enabled() and x.requires_grad:
        function = _recorded("logsumexp", "LogsumexpBackward0", _logsumexp_forward,
                             _logsumexp_backward)
        return _apply_recorded(function, "LogsumexpBackward0", func, x, axes, keepdim)
    return _logsumexp_value(func, x, axes, keepdim)


def _logsumexp_value(func, x, axes, keepdim):
    y = _computed(func, "logsumexp", (x, axes, keepdim), {})
    a = x._array
    with np.errstate(over="ignore", invalid="ignore"):
        top = np.amax(a, axis=axes, keepdims=True)
        top = np.where(np.isinf(top), _F32.type(0), top)
        terms = round_to_bfloat16(np.exp(round_to_bfloat16(a - top)))
        total = round_to_bfloat16(terms.sum(axis=axes, keepdims=True, dtype=_F32))
        with np.errstate(divide="ignore"):
            value = round_to_bfloat16(round_to_bfloat16(np.log(total)) + top)
    y._array[...] = value.reshape(y._array.shape)
    return y


def _logsumexp_forward(ctx, op, x, axes, keepdim):
    y = _logsumexp_value(op, x, axes, keepdim)
    ctx.save_for_backward(x, y)
    ctx.axes, ctx.keepdim = axes, keepdim
    return y


def _logsumexp_backward(ctx, grad):
    x, y = ctx.saved_tensors
    if not ctx.keepdim:
        for d in ctx.axes:          # (ascending: each lands where the reduced dim was)
            grad, y = grad.unsqueeze(d), y.unsqueeze(d)
    return None, grad * (x - y).exp(), None, None


def _cross(func, args, kwargs):
    """cross / linalg.cross of two bfloat16 tensors as PyTorch's CPU kernel computes it: each
    component a[i] * b[j] - a[j] * b[i] in c10::BFloat16 arithmetic, so both products and their
    difference are rounded to bfloat16; its backward is cross(other, grad) and cross(grad,
    input), computed alike.  Rounded once from float32, a third of the components were off,
    by up to half their value where the products cancel (a Gram-Schmidt frame's third axis).
    Other calls (mixed dtypes, out=) are the core's."""
    name = op_name(func)
    bound = _bound(func, args, kwargs)
    a, b = (None, None) if bound is None else (bound.get("input"), bound.get("other"))
    if not (isinstance(a, _core.TensorBase) and isinstance(b, _core.TensorBase)):
        return _computed(func, name, args, kwargs)
    if is_bfloat16(a) != is_bfloat16(b) and a._array.dtype != np.bool_:
        # PyTorch's kernel takes one dtype (no promotion); on the float32 storage a bfloat16
        # operand would pass as float32 beside a float32 one.  (A bool input: the core's
        # "not implemented for 'Bool'", which PyTorch checks first.)
        raise RuntimeError(f"expected scalar type {_scalar_name(a)} but found {_scalar_name(b)}")
    if bound.get("out") is not None or not is_bfloat16(a):
        return _computed(func, name, args, kwargs)
    if _core.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        function = _recorded("cross", "LinalgCrossBackward0", _cross_forward, _cross_backward)
        return _apply_recorded(function, "LinalgCrossBackward0", func, args, kwargs, a, b)
    return _cross_value(func, args, kwargs, a, b)[0]


def _cross_value(func, args, kwargs, a, b):
    """The core's result (shape checks, default-dim warning, dtype) with PyTorch's bfloat16
    values written into it; and the dim it crossed along."""
    y = _computed(func, op_name(func), args, kwargs)
    default = inspect.signature(func).parameters["dim"].default       # (None or -1)
    dim = _bound(func, args, kwargs).get("dim", default)
    # (torch.cross without dim: the first dimension of size 3, as the core took it)
    dim = y.shape.index(3) if dim is None else dim % y.dim()
    first, second = (np.moveaxis(np.broadcast_to(t._array, y.shape), dim, -1) for t in (a, b))
    i, j = [1, 2, 0], [2, 0, 1]
    with np.errstate(over="ignore", invalid="ignore"):
        value = round_to_bfloat16(round_to_bfloat16(first[..., i] * second[..., j]) -
                                  round_to_bfloat16(first[..., j] * second[..., i]))
    y._array[...] = np.moveaxis(value, -1, dim)
    return y, dim


def _cross_forward(ctx, op, args, kwargs, a, b):
    y, ctx.dim = _cross_value(op, args, kwargs, a, b)
    ctx.save_for_backward(a, b)
    return y


def _cross_backward(ctx, grad):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    from . import linalg
    ga = linalg.cross(b.expand_as(grad), grad, dim=ctx.dim) if need[3] else None
    gb = linalg.cross(grad, a.expand_as(grad), dim=ctx.dim) if need[4] else None
    return None, None, None, _summed_to(ga, a), _summed_to(gb, b)


def _mse_loss(func, args, kwargs):
    """mse_loss of two bfloat16 tensors of one shape as PyTorch's CPU kernels compute it.  The
    forward rounds the difference before squaring it (bf16(bf16(a - b) ** 2)) and the
    reduction sums in float32 and rounds once; the backward is alpha * (a - b) * grad with
    alpha = bf16(2 / n) (2 for a sum), each product rounded.  Computed in float32 and rounded
    once, one loss element in four and the mean's gradients were a bfloat16 ulp or more off (a
    VQ-VAE's commitment loss in bfloat16).  Other calls (legacy size_average / reduce,
    broadcasting, mixed dtypes) are the core's."""
    bound = _bound(func, args, kwargs)
    input = None if bound is None else bound.get("input")
    target = None if bound is None else bound.get("target")
    reduction = None if bound is None else bound.get("reduction", "mean")
    if not (is_bfloat16(input) and is_bfloat16(target)) or input.shape != target.shape or \
            reduction not in ("mean", "sum", "none") or any(
                bound.get(k) is not None for k in ("size_average", "reduce", "weight")):
        return _computed(func, op_name(func), args, kwargs)
    if _core.is_grad_enabled() and (input.requires_grad or target.requires_grad):
        function = _recorded("mse_loss", "MseLossBackward0", _mse_forward, _mse_backward)
        return _apply_recorded(function, "MseLossBackward0", func, input, target, reduction)
    return _mse_value(func, input, target, reduction)


def _mse_value(func, input, target, reduction):
    y = _computed(func, "mse_loss", (input, target), {"reduction": reduction})
    with np.errstate(over="ignore", invalid="ignore"):
        squares = round_to_bfloat16(np.square(round_to_bfloat16(
            np.subtract(input._array, target._array))))
        if reduction == "none":
            value = squares
        else:
            total = squares.sum(dtype=_F32)
            value = round_to_bfloat16(total / squares.size if reduction == "mean" else total)
    y._array[...] = np.broadcast_to(value, y._array.shape)
    return y


def _mse_forward(ctx, op, input, target, reduction):
    ctx.save_for_backward(input, target)
    ctx.reduction = reduction
    return _mse_value(op, input, target, reduction)


def _mse_backward(ctx, grad):
    input, target = ctx.saved_tensors
    norm = 2.0 / input.numel() if ctx.reduction == "mean" else 2.0
    alpha = float(round_to_bfloat16(np.float32(norm)))
    need = ctx.needs_input_grad
    g_input = (alpha * (input - target)) * grad if need[1] else None
    g_target = (alpha * (target - input)) * grad if need[2] else None
    return None, g_input, g_target, None


# -- ops PyTorch computes as several bfloat16 ops ----------------------------------------------------
# The core's VJPs compute in float32 and the sweep rounds what they return.  Where PyTorch's
# backward formula (derivatives.yaml) is one kernel that is the same; where it is several ops,
# each of PyTorch's rounds its bfloat16 result (sin's `grad * self.cos()` rounds cos(x) first).
# These ops are recorded as a Function whose backward runs the formula on bfloat16 tensors,
# named as PyTorch's node.  Each entry: (node name, saves the result (else the input),
# formula(grad, saved, *numbers) for the one tensor input, forward(op, x, *numbers) or None
# for the op itself).

def _pow_forward(op, x, exponent):
    """x ** exponent as PyTorch's CPU kernel computes it in bfloat16: exponents 3 and -2 as
    x * x * x and 1 / (x * x), each product rounded (the others round once)."""
    y = _computed(op, op_name(op), (x, exponent), {})
    if exponent in (3, -2) and y is not x:
        v = x._array
        square = round_to_bfloat16(v * v)
        y._array[...] = round_to_bfloat16(square * v if exponent == 3 else 1 / square)
    return y


def _rsqrt_forward(op, x):
    """rsqrt as PyTorch's CPU kernel computes it in bfloat16: its vectorised loop rounds
    1 / sqrt(x) once, but the elements after the last whole vector (the first ones when there
    are fewer than a vector's 32 (AVX-512) or 16 bfloat16 values) go through its scalar loop,
    whose bfloat16 sqrt is rounded before the division."""
    y = _computed(op, "rsqrt", (x,), {})
    v = x._array
    if y is x or not v.flags.c_contiguous:      # (another iteration order: left rounded once)
        return y
    from .backends.cpu import get_cpu_capability
    width = 32 if get_cpu_capability() == "AVX512" else 16
    tail = (v.size // width) * width
    if tail < v.size:
        flat = y._array.reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            flat[tail:] = round_to_bfloat16(
                1 / round_to_bfloat16(np.sqrt(v.reshape(-1)[tail:])))
    return y


def _pow_backward(grad, x, exponent):
    """PyTorch's pow_backward: zeros for exponent 0, else grad * (exponent * x.pow(exponent - 1))."""
    if exponent == 0:
        return x.new_zeros(x.shape)
    return grad * (exponent * x.pow(exponent - 1))


_BACKWARD_FORMULAS = {
    "sin": ("SinBackward0", False, lambda g, x: g * x.cos(), None),
    "cos": ("CosBackward0", False, lambda g, x: g * -x.sin(), None),
    "tan": ("TanBackward0", True, lambda g, y: g * (1 + y.pow(2)), None),
    "sinh": ("SinhBackward0", False, lambda g, x: g * x.cosh(), None),
    "cosh": ("CoshBackward0", False, lambda g, x: g * x.sinh(), None),
    "rsqrt": ("RsqrtBackward0", True, lambda g, y: -0.5 * g * y.pow(3), _rsqrt_forward),
    "reciprocal": ("ReciprocalBackward0", True, lambda g, y: -g * (y * y), None),
    "log1p": ("Log1PBackward0", False, lambda g, x: g / (x + 1), None),
    "expm1": ("Expm1Backward0", True, lambda g, y: g * (y + 1), None),
    "atan": ("AtanBackward0", False, lambda g, x: g / (x * x + 1), None),
    "pow": ("PowBackward0", False, _pow_backward, _pow_forward),
    "__pow__": ("PowBackward0", False, _pow_backward, _pow_forward),
}

def _formula_function(name: str):
    """The Function recording bfloat16 op `name` with PyTorch's backward formula."""
    node, saves_result, formula, compute = _BACKWARD_FORMULAS[name]

    def forward(ctx, op, x, *numbers):
        y = compute(op, x, *numbers) if compute is not None else \
            _computed(op, name, (x, *numbers), {})
        ctx.save_for_backward(y if saves_result else x)
        ctx.numbers = numbers
        return y

    def backward(ctx, grad):
        saved, = ctx.saved_tensors
        return (None, formula(grad, saved, *ctx.numbers)) + (None,) * len(ctx.numbers)
    return _recorded(name, node, forward, backward)


# Products and quotients of two bfloat16 tensors of different shapes, or of a bfloat16 tensor
# and a 0-d tensor of another floating dtype (a learnt scale or temperature): PyTorch rounds the
# full-size gradient (grad * other) before its engine sums it to the input's shape (and casts it
# to the 0-d tensor's dtype); the core's VJP sums the float32 products.  (Same shapes: one
# rounding either way, the core's VJP serves.)
_BINARY_FORMULAS = {
    "mul": ("MulBackward0", lambda g, a, b, need: (g * b if need[1] else None,
                                                   g * a if need[2] else None)),
    "div": ("DivBackward0", lambda g, a, b, need: (g / b if need[1] else None,
                                                   -g * ((a / b) / b) if need[2] else None)),
}
_BINARY_NAMES = {"mul": "mul", "__mul__": "mul", "__rmul__": "mul", "multiply": "mul",
                 "div": "div", "__truediv__": "div", "divide": "div", "true_divide": "div"}


def _binary_formula_function(kind: str):
    """The Function recording bfloat16 mul / div with PyTorch's backward formula."""
    node, formula = _BINARY_FORMULAS[kind]

    def forward(ctx, op, a, b):
        ctx.save_for_backward(a, b)
        return _computed(op, op_name(op), (a, b), {})

    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = formula(grad, a, b, ctx.needs_input_grad)
        return None, _summed_to(ga, a), _summed_to(gb, b)
    return _recorded(("binary", kind), node, forward, backward)


def _summed_to(g, like):
    """An operand's gradient: summed to its shape (in bfloat16), in its dtype."""
    if g is None:
        return None
    g = g.sum_to_size(like.shape)
    return g if is_bfloat16(like) else g.to(like.dtype)


def _is_other_zero_d(t) -> bool:
    """Whether t is a 0-d tensor of a floating dtype other than bfloat16."""
    return isinstance(t, _core.TensorBase) and t._array.ndim == 0 and \
        t._array.dtype.kind == "f" and not is_bfloat16(t)


def _broadcast_operands(args) -> bool:
    """Two operands _BINARY_FORMULAS takes: bfloat16 tensors of different shapes, or one with
    dimensions beside a 0-d tensor of another floating dtype (the result is bfloat16)."""
    a, b = args
    if not (isinstance(a, _core.TensorBase) and isinstance(b, _core.TensorBase)) or \
            a.shape == b.shape:
        return False
    if is_bfloat16(a) and is_bfloat16(b):
        return True
    other, wide = (b, a) if is_bfloat16(a) else (a, b)
    return wide.dim() > 0 and _is_other_zero_d(other)


def _binary_with_formula(func, args, kwargs):
    """mul / div of bfloat16 operands that broadcast (_broadcast_operands), one requiring grad:
    recorded with PyTorch's formula (_BINARY_FORMULAS); anything else as any op."""
    name = op_name(func)
    if len(args) == 2 and _is_other_zero_d(args[0]) and is_bfloat16(args[1]) and \
            args[1].dim() > 0:
        # (PyTorch's kernels take a 0-d second operand's value as it is, but cast a first one
        # to the common dtype, bfloat16, as any operand)
        args = (args[0].to(bfloat16), args[1])
    if kwargs or len(args) != 2 or not _broadcast_operands(args) or \
            not _core.is_grad_enabled() or \
            not (args[0].requires_grad or args[1].requires_grad):
        return _computed(func, name, args, kwargs)
    kind = _BINARY_NAMES[name]
    return _apply_recorded(_binary_formula_function(kind), _BINARY_FORMULAS[kind][0], func,
                           *args)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _with_formula(func, args, kwargs):
    """An op of _BACKWARD_FORMULAS on one bfloat16 tensor (and numbers): computed as PyTorch's,
    recorded with PyTorch's formula when the tensor requires grad; with other arguments, as any
    op."""
    name = op_name(func)
    node, _, _, compute = _BACKWARD_FORMULAS[name]
    if kwargs or not args or not is_bfloat16(args[0]) or \
            not all(_is_number(a) for a in args[1:]):
        return _computed(func, name, args, kwargs)
    if not (args[0].requires_grad and _core.is_grad_enabled()):
        return compute(func, *args) if compute is not None else _computed(func, name, args, {})
    return _apply_recorded(_formula_function(name), node, func, *args)


def _dtype_as_value(func, args, kwargs):
    """A function that takes torch.bfloat16 as a value to keep or compare, not as the dtype of
    its tensors (set_autocast_dtype(..., torch.bfloat16) stored float32): called as it is."""
    previous = _core._subclass_dispatch_set_off(True)
    try:
        return func(*args, **kwargs)
    finally:
        _core._subclass_dispatch_set_off(previous)


# Public functions whose dtype arguments are values, not their results' dtype.
_DTYPE_AS_VALUE = ("set_autocast_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype")

# Ops PyTorch's CPU build has no bfloat16 kernel for: their errors (tapegrad's float32 storage
# would compute them).  name -> (exception class, message)
_LOW_PRECISION = "{}: Low precision dtypes not supported. Got BFloat16"
_NO_KERNEL = "\"{}\" not implemented for 'BFloat16'"
_FLOAT_DOUBLE_ONLY = "This function doesn't handle types other than float and double"
_NO_BFLOAT16_KERNEL = {
    **dict.fromkeys(("inv", "inv_ex", "inverse", "tensorinv"),
                    (RuntimeError, _LOW_PRECISION.format("linalg.inv"))),
    "logdet": (RuntimeError, _LOW_PRECISION.format("logdet")),
    "slogdet": (RuntimeError, _LOW_PRECISION.format("linalg.slogdet")),
    **dict.fromkeys(("det", "solve", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "tensorsolve"),
                    (NotImplementedError, _NO_KERNEL.format("lu_cpu"))),
    **dict.fromkeys(("cholesky", "cholesky_ex"),
                    (NotImplementedError, _NO_KERNEL.format("cholesky_cpu"))),
    "cholesky_inverse": (NotImplementedError, _NO_KERNEL.format("cholesky_inverse_out_cpu")),
    "cholesky_solve": (NotImplementedError, _NO_KERNEL.format("cholesky_solve_cpu")),
    "lu_solve": (NotImplementedError, _NO_KERNEL.format("linalg.lu_solve_cpu")),
    **dict.fromkeys(("qr", "geqrf"), (NotImplementedError, _NO_KERNEL.format("geqrf_cpu"))),
    **dict.fromkeys(("svd", "svdvals"),
                    (NotImplementedError, _NO_KERNEL.format("linalg_svd_cpu"))),
    **dict.fromkeys(("eigh", "eigvalsh"),
                    (NotImplementedError, _NO_KERNEL.format("linalg_eigh_cpu"))),
    "eig": (NotImplementedError, _NO_KERNEL.format("linalg_eig_out_cpu")),
    **dict.fromkeys(("solve_triangular", "triangular_solve"),
                    (NotImplementedError, _NO_KERNEL.format("triangular_solve_cpu"))),
    "cdist": (NotImplementedError, _NO_KERNEL.format("cdist")),
    "log_ndtr": (NotImplementedError, _NO_KERNEL.format("log_ndtr_cpu")),
    **dict.fromkeys(("lstsq", "matrix_rank"), (RuntimeError, _FLOAT_DOUBLE_ONLY)),
    "multi_margin_loss": (NotImplementedError, _NO_KERNEL.format("multi_margin_loss_cpu_kernel")),
    "multilabel_margin_loss": (NotImplementedError,
                               _NO_KERNEL.format("multilabel_margin_loss_forward_out_frame")),
    "ctc_loss": (NotImplementedError, _NO_KERNEL.format("ctc_loss_cpu")),
    "avg_pool3d": (NotImplementedError, _NO_KERNEL.format("avg_pool3d_out_frame")),
    "pdist": (NotImplementedError, _NO_KERNEL.format("pdist")),
    **dict.fromkeys(("histogram", "histogramdd"),
                    (NotImplementedError, _NO_KERNEL.format("histogramdd"))),
    **dict.fromkeys(("quantile", "nanquantile"),
                    (RuntimeError, "quantile() input tensor must be either float or double dtype")),
    **dict.fromkeys(("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
                     "ifftn", "rfftn", "irfftn", "hfft", "ihfft"),
                    (RuntimeError, "Unsupported dtype BFloat16")),
    "stft": (RuntimeError, "MKL FFT doesn't support tensors of type: BFloat16"),
    **{name: (NotImplementedError, _NO_KERNEL.format(f"{name}_cpu")) for name in (
        "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "erfcx", "ndtri", "zeta",
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
        "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
        "laguerre_polynomial_l", "legendre_polynomial_p", "modified_bessel_i0",
        "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
        "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0")},
    "cond": (NotImplementedError, _NO_KERNEL.format("linalg_svd_cpu")),    # (linalg.cond's)
    "eigvals": (NotImplementedError, _NO_KERNEL.format("linalg_eig_out_cpu")),
    **dict.fromkeys(("ldl_factor", "ldl_factor_ex"),
                    (NotImplementedError, _NO_KERNEL.format("ldl_factor_kernel_cpu"))),
    "vander": (RuntimeError, "linalg.vander supports floating point, complex, and integer "
                             "tensors, but got BFloat16"),
    **dict.fromkeys(("pinv", "pinverse"), (
        RuntimeError, "linalg.pinv(BFloat16{{{shape}}}): expected a tensor with 2 or more "
                      "dimensions of float, double, cfloat or cdouble types")),
    "view_as_complex": (RuntimeError, "view_as_complex is only supported for half, float and "
                                      "double tensors, but got a tensor of scalar type: BFloat16"),
}


# (those whose kernel PyTorch does not reach for empty inputs: they run)
_RUN_WHEN_EMPTY = frozenset(("det", "solve", "solve_ex", "lu_factor", "lu_factor_ex", "lu",
                             "cholesky", "cholesky_ex", "svd", "svdvals", "eigh", "eigvalsh",
                             "cdist"))


# Names of _NO_BFLOAT16_KERNEL that only torch.linalg's function of that name refuses
_LINALG_NAMES = frozenset(("cond", "vander"))


# (binary elementwise ops of _NO_BFLOAT16_KERNEL: PyTorch picks their kernel by the promoted
# dtype, so a float32 or float64 operand beside a bfloat16 one computes in that dtype)
_PROMOTED_KERNEL = frozenset((
    "zeta", "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"))


def _no_kernel(func, args, kwargs):
    inputs = _tensors_in(kwargs.values(), _tensors_in(args, []))
    tensors = [t for t in inputs if is_bfloat16(t)]
    if not tensors or (op_name(func) in _RUN_WHEN_EMPTY and not any(t._array.size
                                                                     for t in tensors)):
        return _computed(func, op_name(func), args, kwargs)
    if op_name(func) in _PROMOTED_KERNEL and not _promotes_to_bfloat16(inputs):
        # (the bfloat16 operand's storage holds its values exactly: computed in the promoted
        # dtype as PyTorch's conversion would; fuzz 67101079)
        return _computed(func, op_name(func), args, kwargs)
    if op_name(func) in _LINALG_NAMES and not getattr(func, "__module__", "").endswith("linalg"):
        # (torch.cond, control flow; torch.vander, which PyTorch computes in bfloat16 by
        # cumprod: fuzz 67100148)
        return _computed(func, op_name(func), args, kwargs)
    _refuse_mixed_solve(op_name(func), args, kwargs)
    if op_name(func) not in _DTYPE_CHECKED_FIRST:
        _check_arguments_on_storage(func, args, kwargs)
    error, message = _NO_BFLOAT16_KERNEL[op_name(func)]
    raise error(message.format(shape=list(tensors[0].shape)))


def _matrix_norm(func, args, kwargs):
    """The matrix norms PyTorch computes from singular values (ord 2, -2, 'nuc': its SVD has
    no bfloat16 kernel) refuse a bfloat16 matrix in linalg.matrix_norm's words, whichever entry
    reaches them (torch.nuclear_norm, torch.norm(p='nuc'), linalg.norm of a matrix); the
    float32 storage computed them (fuzz 66700122, 67100049)."""
    name = op_name(func)
    A = args[0] if args else kwargs.get("A", kwargs.get("input"))
    linalg = getattr(func, "__module__", "").endswith("linalg")
    if name == "nuclear_norm":
        svd = True
    else:
        default = "fro" if name == "matrix_norm" or not linalg else None
        ord = args[1] if len(args) > 1 else kwargs.get("ord", kwargs.get("p", default))
        dim = args[2] if len(args) > 2 else kwargs.get("dim")
        matrix = name == "matrix_norm" or not linalg or (
            isinstance(dim, (tuple, list)) and len(dim) == 2) or (
            dim is None and isinstance(A, _core.TensorBase) and A.dim() == 2)
        svd = matrix and (ord == "nuc" or (linalg and ord in (2, -2)))
    if svd and is_bfloat16(A):             # (dtype= too: PyTorch checks A's dtype first)
        raise RuntimeError(_LOW_PRECISION.format("linalg.matrix_norm"))
    return _computed(func, name, args, kwargs)


def _cdist(func, args, kwargs):
    """cdist with a bfloat16 operand.  PyTorch picks its kernel by x1's dtype and reads x2 as
    that dtype: an empty result skips the kernel (x1's dtype, whatever x2's), a bfloat16 x1
    has no kernel, and a bfloat16 x2 under another kernel is refused by it (tapegrad's float32
    storage would compute, or name Float for bfloat16: fuzz seed 66400102)."""
    names = ("x1", "x2")
    operands = list(args[:2]) + [kwargs[n] for n in names[len(args):] if n in kwargs]
    if len(operands) < 2 or not all(isinstance(t, Tensor) for t in operands):
        return _no_kernel(func, args, kwargs)
    x1, x2 = operands
    x2_as_x1 = x2.to(x1.dtype)      # (a recorded cast: x2's gradient comes back in its dtype)
    args = (x1, x2_as_x1) + tuple(args[2:])
    kwargs = {k: v for k, v in kwargs.items() if k not in names}
    if x1.numel() == 0 or x2.numel() == 0:     # (either empty: no kernel runs)
        return _computed(func, op_name(func), args, kwargs) if is_bfloat16(x1) \
            else func(*args, **kwargs)
    if is_bfloat16(x1):
        return _no_kernel(func, args, kwargs)
    func(*args, **kwargs)                      # (the argument checks PyTorch makes first)
    raise RuntimeError(f"expected scalar type {_SCALAR_NAMES.get(_dtype_name(x1), _dtype_name(x1))}"
                       f" but found BFloat16")


# The ops of _NO_BFLOAT16_KERNEL whose dtype PyTorch checks before their other arguments.
_DTYPE_CHECKED_FIRST = frozenset(("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2",
                                  "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft", "ihfft",
                                  "quantile", "nanquantile", "ctc_loss"))


def _check_arguments_on_storage(func, args, kwargs) -> None:
    """The errors of the other ops' argument checks, which PyTorch makes before its dtype
    dispatch finds no bfloat16 kernel (a 3-D multilabel_margin_loss input, a non-square A: fuzz
    seed 66200096): the op run on the storage raises them.  A failure of the computation itself
    (a singular A) PyTorch never reaches, nor the warnings of a run it never makes."""
    import warnings
    from .grad_mode import no_grad
    from .linalg import LinAlgError
    try:
        with no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _computed(func, op_name(func), args, kwargs)
    except LinAlgError:
        pass


# The solves PyTorch refuses for operands of two dtypes before it looks for a kernel (the
# storage of a bfloat16 tensor is float32, so the run on it sees no mismatch: fuzz seed
# 66200385): the message's prefix and the names of the two operands, in argument order.
_SOLVE_OPERANDS = {
    "solve": ("linalg.solve: ", "A", "B", ""), "solve_ex": ("linalg.solve: ", "A", "B", ""),
    "lu_solve": ("linalg.lu_solve: ", "LU", "B", ""),
    "cholesky_solve": ("", "b", "A", "."), "triangular_solve": ("", "b", "A", "."),
}


def _refuse_mixed_solve(name: str, args, kwargs) -> None:
    words = _SOLVE_OPERANDS.get(name)
    if words is None:
        return
    floating = [t for t in _tensors_in(args, []) + _tensors_in(kwargs.values(), [])
                if t._array.dtype.kind == "f"][:2]
    if len(floating) < 2 or is_bfloat16(floating[0]) == is_bfloat16(floating[1]) and \
            floating[0]._array.dtype == floating[1]._array.dtype:
        return
    prefix, first, second, end = words
    a, b = (_SCALAR_NAMES.get(_dtype_name(t), _dtype_name(t)) for t in floating)
    raise RuntimeError(f"{prefix}Expected {first} and {second} to have the same dtype, but found "
                       f"{first} of type {a} and {second} of type {b} instead{end}")


def _complex_parts(func, args, kwargs):
    """torch.complex / torch.polar: half, float or double parts only."""
    parts = _tensors_in(kwargs.values(), _tensors_in(args, []))[:2]
    if len(parts) == 2 and any(is_bfloat16(t) for t in parts):
        a, b = (_SCALAR_NAMES.get(_dtype_name(t), _dtype_name(t)) for t in parts)
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a} and {b}")
    return _computed(func, op_name(func), args, kwargs)


def _bincount(func, args, kwargs):
    """PyTorch counts bfloat16 weights in float64: a float64 result.  A bfloat16 input is no
    index tensor: refused in its dtype's name (widened with the weights, the refusal named
    Double)."""
    bound = _bound(func, args, kwargs)
    if bound is not None and is_bfloat16(bound.get("input")):
        raise NotImplementedError(_NO_KERNEL.format("bincount_cpu"))

    def widened(a):
        return a.double() if is_bfloat16(a) else a
    return _run(func, tuple(widened(a) for a in args),
                {k: widened(v) for k, v in kwargs.items()})


def _dtype_operands(func, name: str, args: tuple, kwargs: dict, inputs: list) -> list:
    """The tensors a same-dtype op compares: all its tensor inputs, but nll_loss's class target
    (PyTorch compares its weight with its input; a floating target is refused as a target, after
    the shape checks)."""
    if name != "nll_loss":
        return inputs
    bound = _bound(func, args, kwargs)
    target = None if bound is None else bound.get("target")
    return [t for t in inputs if t is not target]


def _class_target_loss(func, args, kwargs):
    """nll_loss (and cross_entropy, through _cross_entropy) with a bfloat16 class target: refused
    in its own dtype's name, after the loss's shape checks (the core sees the float32 storage
    and would name it Float)."""
    bound = _bound(func, args, kwargs)
    if bound is None or not is_bfloat16(bound.get("target")):
        return _computed(func, op_name(func), args, kwargs)
    operands = _dtype_operands(func, "nll_loss", args, kwargs,
                                       _tensors_in(kwargs.values(), _tensors_in(args, [])))
    if op_name(func) == "nll_loss":
        _refuse_mixed("nll_loss", operands)
    try:
        return _run(func, args, kwargs)
    except RuntimeError as error:
        if str(error).startswith("expected target dtype to be Long or Byte, but got "):
            raise RuntimeError("expected target dtype to be Long or Byte, but got "
                               "BFloat16") from None
        raise


# Python compositions of tapegrad ops that are PyTorch's compositions of ATen ops too, step for
# step (CompositeImplicitAutograd): run with the dispatch on, each step rounds its bfloat16
# result as PyTorch's does.  Run on the float32 storage and rounded once at the end, the last
# step's saved result was rounded after its record saved it: pairwise_distance(p=inf)'s norm then
# matched no element of |x1 - x2 + eps| and its gradient was zero (fuzz seed 65604069).
_PYTORCH_COMPOSITIONS = ("pairwise_distance", "cosine_similarity", "matrix_power", "kl_div",
                         "normalize", "triplet_margin_loss", "cosine_embedding_loss",
                         "poisson_nll_loss", "gaussian_nll_loss", "dist", "trapezoid",
                         "cumulative_trapezoid", "triplet_margin_with_distance_loss")


def _composition(func, args, kwargs):
    plain = getattr(func, "__wrapped__", None)
    if plain is None:           # (an entry that would dispatch to us again: on the storage)
        return _computed(func, op_name(func), args, kwargs)
    return plain(*args, **kwargs)


def _prod_values(y, x, dim) -> None:
    """y's values (a bfloat16 prod of x over dim, None: all) as PyTorch's: it rounds every
    partial product, in its loop's order (tapegrad/_half_product.py); the float32 storage's
    product, rounded once, was up to several bfloat16 ulps away (fuzz 67000840).  The saved
    result is y's array, so the gradient reads these values too."""
    if x._array.ndim == 0:
        return
    from ._half_product import half_product
    values = x._array if is_bfloat16(x) else round_to_bfloat16(x._array)
    axis = None if dim is None else int(dim) % values.ndim
    y._array[...] = half_product(values, axis, round_to_bfloat16).reshape(y._array.shape)


def _prod_forward(ctx, op, x, *rest):
    y = _computed(op, "prod", (x, *rest), {})
    _prod_values(y, x, rest[0] if rest else None)
    ctx.save_for_backward(x, y)
    ctx.rest = rest
    return y


def _prod_backward(ctx, grad):
    """PyTorch's prod_backward in bfloat16 ops (the core's VJP computed in float32 and rounded
    once): without zeros grad * (result / input); with zeros the products of the other elements
    from exclusive cumulative products (for all elements, zeros when two or more are zero and
    no graph is made)."""
    x, y = ctx.saved_tensors
    rest = ctx.rest
    dim = rest[0] if rest else None
    if dim is not None and not (len(rest) > 1 and rest[1]):
        grad, y = grad.unsqueeze(dim), y.unsqueeze(dim)
    zeros = int((x._array == 0).sum())
    if not zeros:
        g = grad * (y / x)
    elif dim is None and zeros > 1 and not _core.is_grad_enabled():
        g = x.new_zeros(x.shape)
    elif dim is None:
        g = _prod_others(grad.reshape(1), x.reshape(-1), 0).reshape(x.shape)
    else:
        g = _prod_others(grad, x, dim)
    return (None, g) + (None,) * len(rest)


def _prod_others(grad, x, dim):
    """grad times the product of the other elements along dim (PyTorch's
    prod_safe_zeros_backward): exclusive cumulative products from both ends."""
    from . import cat
    n = x.shape[dim]
    ones = x.new_ones(x.shape[:dim % x.dim()] + (1,) + x.shape[dim % x.dim() + 1:])
    before = cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    after = cat([ones, x.narrow(dim, 1, n - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return grad * (before * after)


def _prod(func, args, kwargs):
    """prod with a bfloat16 result (_prod_values), recorded with PyTorch's backward formula
    (_prod_backward) when its input requires grad."""
    if args and set(kwargs) <= {"dim", "keepdim"} and "dim" in kwargs and len(args) == 1:
        # (x.prod(dim=1, keepdim=True): the formula's arguments are positional)
        args, kwargs = (args[0], kwargs["dim"], kwargs.get("keepdim", False)), {}
    x = args[0] if args else kwargs.get("input")
    plain_call = not kwargs and isinstance(x, _core.TensorBase) and is_bfloat16(x) and \
        all(isinstance(a, (int, bool)) for a in args[1:3]) and len(args) <= 3
    if plain_call and x.requires_grad and _core.is_grad_enabled() and x._array.ndim and \
            x._array.size:
        node = "ProdBackward1" if len(args) > 1 else "ProdBackward0"
        function = _recorded("prod", node, _prod_forward, _prod_backward)
        return _apply_recorded(function, node, func, *args)
    y = _computed(func, "prod", args, kwargs)
    if isinstance(y, _core.TensorBase) and is_bfloat16(y) and isinstance(x, _core.TensorBase):
        _prod_values(y, x, args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis")))
    return y


def _local_response_norm(func, args, kwargs):
    """PyTorch averages the squares of an input of more than 3 dims with avg_pool3d, which has
    no bfloat16 CPU kernel (the float32 storage would compute it)."""
    input = args[0] if args else kwargs.get("input")
    if is_bfloat16(input) and input.dim() > 3 and input.numel():
        raise NotImplementedError(_NO_KERNEL.format("avg_pool3d_out_frame"))
    return _computed(func, op_name(func), args, kwargs)


def _sweep(func, args, kwargs):
    """Tensor.backward / autograd.backward / autograd.grad of bfloat16 tensors: the plain entry
    (not the dispatching one) called with the dispatch on, so the tensor hooks and custom
    Functions the sweep runs see bfloat16 tensors and compute in bfloat16, as PyTorch's."""
    return getattr(func, "__wrapped__", func)(*args, **kwargs)


_OWN = {"result_type": _result_type, "promote_types": _promote_types, "bfloat16": _already,
        "numpy": _numpy_refused, "__array__": _numpy_refused, "__repr__": _repr,
        "__str__": _repr, "__format__": _format, "element_size": _element_size,
        "type": _type}
_OWN.update(dict.fromkeys(_COMPOSED, _composed))
_OWN.update(log_softmax=_log_softmax, cross_entropy=_cross_entropy, nan_to_num=_nan_to_num,
            binary_cross_entropy_with_logits=_bce_with_logits,
            nan_to_num_=_nan_to_num, scaled_dot_product_attention=_attention,
            isclose=_close, allclose=_close,
            linspace=_spaced, logspace=_spaced)
_OWN.update(dict.fromkeys(("layer_norm", "group_norm", "batch_norm", "instance_norm",
                           "native_layer_norm", "native_group_norm", "native_batch_norm"),
                          _norm), rms_norm=_rms_norm)
_OWN.update(dict.fromkeys(("binary_cross_entropy", "huber_loss", "soft_margin_loss"),
                          _input_dtype_loss))
_OWN.update(dict.fromkeys(("xlogy", "xlog1py", "entr"), _log_product))
_OWN.update(logsumexp=_logsumexp, mse_loss=_mse_loss, cross=_cross,
            multi_head_attention_forward=_attention_projections)
_OWN.update(dict.fromkeys(_DTYPE_AS_VALUE, _dtype_as_value))
_OWN.update(dict.fromkeys(_NO_BFLOAT16_KERNEL, _no_kernel))
_OWN.update(dict.fromkeys(("complex", "polar"), _complex_parts))
_OWN.update(backward=_sweep, local_response_norm=_local_response_norm, cdist=_cdist,
            prod=_prod)
_OWN.update(dict.fromkeys(("matrix_norm", "nuclear_norm", "norm"), _matrix_norm))
_OWN.update(dict.fromkeys(_PYTORCH_COMPOSITIONS, _composition), bincount=_bincount,
            nll_loss=_class_target_loss)
_OWN.update(dict.fromkeys(_BACKWARD_FORMULAS, _with_formula))
_OWN.update(dict.fromkeys(_BINARY_NAMES, _binary_with_formula))


# Loading this module turns the dispatch of torch.bfloat16 itself on, the core's data
# setter tells us of `t.data = value` (the class follows the dtype), and the sweeps round the
# gradients reaching bfloat16 results with our rounding (ops_function.pxi).
_core._set_dispatching_dtype(bfloat16, __import__("tapegrad.overrides", fromlist=["x"])
                             ._dispatch_subclass_call)
_core._set_data_class_hook(_sync_data_class)
_meta.routed_dtypes.add(bfloat16)
_meta.bfloat16_route[0] = True
_core._set_bfloat16_gradient_rounding(round_to_bfloat16, _bfloat16_gradient,
                                      (BFloat16Tensor, BFloat16Parameter))
