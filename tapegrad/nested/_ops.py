"""The ops of nested tensors: what each public function or Tensor method does with one.

Every call that reaches a NestedTensor's __torch_function__ lands in `call`, which finds the op by
its name.  Three kinds:

- elementwise ops (unary, binary with a scalar, a nested tensor of the same structure, or for the
  jagged layout a dense tensor broadcast over the regular dims) run once on the values;
- ops over regular dims (softmax, linear, layer_norm, transpose, reshape, sum, matmul, attention,
  ...) run once on a jagged tensor's values when the ragged dim is not involved, otherwise once
  per component (the strided layout always: its values are a flat buffer);
- everything else is refused as PyTorch refuses it: NotImplementedError naming the ATen op
  ("Could not run 'aten::exp' with arguments from the 'NestedTensorCPU' backend" for the strided
  layout, "aten.var.correction" for the jagged one).

The strided layout supports only the ops PyTorch's NestedTensorCPU kernels cover (measured against
PyTorch 2.13); the jagged layout the wider set of its NestedTensor subclass.
"""
from __future__ import annotations as _annotations

import numbers

from .. import _core
from .._public_calls import op_name
from .._layout import jagged, strided
from ..tensor import Size
from ._tensor import NestedTensor, dim_out_of_range

_T = _core.TORCH_FUNCTIONS

# -- which layout supports which elementwise op (PyTorch 2.13's kernels) ---------------------------

# unary ops and activations with a NestedTensorCPU kernel (both layouts)
_UNARY_BOTH = frozenset((
    "abs", "neg", "negative", "sin", "cos", "tanh", "sqrt", "relu", "gelu", "silu", "sgn",
    "logical_not", "isnan", "isinf", "softsign", "tanhshrink", "dropout", "clone", "detach",
    "to", "float", "double", "half", "bfloat16", "int", "long", "bool", "type_as", "zero_",
    "fill_", "ones_like", "zeros_like", "empty_like", "randn_like", "rand_like", "full_like",
    "alpha_dropout", "feature_alpha_dropout"))
# unary ops the jagged layout's subclass adds
_UNARY_JAGGED = frozenset((
    "tan", "exp", "log", "log1p", "expm1", "rsqrt", "sigmoid", "erf", "floor", "ceil", "round",
    "trunc", "sign", "reciprocal", "square", "exp2", "log2", "log10", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "atanh", "frac", "angle", "nan_to_num", "mish", "hardsigmoid",
    "softplus", "elu", "selu", "celu", "leaky_relu", "relu6", "hardtanh", "erfinv", "logit",
    "hardswish", "square"))
# binary ops: both layouts take a scalar or a nested tensor of the same structure
_BINARY_BOTH = frozenset(("add", "sub", "mul", "div", "true_divide", "multiply", "subtract",
                          "divide"))
# binary ops the strided layout takes with a scalar only
_BINARY_STRIDED_SCALAR = frozenset(("eq", "gt", "ge"))
_BINARY_JAGGED = frozenset((
    "pow", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "remainder",
    "fmod", "rsub", "rdiv", "logical_and", "logical_or", "masked_fill", "where", "float_power"))

# The ATen names (and overloads) PyTorch's refusals print where they are not the op's own name.
_ATEN_NAMES = {"square": "pow.Tensor_Scalar", "selu": "elu", "relu6": "hardtanh",
               "logsigmoid": "log_sigmoid_forward", "log_softmax": "_log_softmax",
               "rsub": "rsub.Scalar", "var": "var.correction", "std": "std.correction"}
_SCALAR_OVERLOADED = frozenset(("pow", "ne", "lt", "le", "gt", "ge", "remainder", "fmod", "eq"))


def _aten_name(name: str, args, kwargs) -> str:
    if name in _ATEN_NAMES:
        return _ATEN_NAMES[name]
    if name in _SCALAR_OVERLOADED:
        other = args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("exponent"))
        return name + (".Scalar" if name != "pow" else ".Tensor_Scalar") \
            if isinstance(other, numbers.Number) else name + (".Tensor" if name != "pow"
                                                              else ".Tensor_Tensor")
    if name in ("mean", "sum") and (len(args) > 1 or "dim" in kwargs):
        return name + ".dim_IntList" if name == "sum" else name + ".dim"
    return name


def unsupported(name: str, layout, args=(), kwargs=None):
    """PyTorch's refusal of an op it has no nested kernel for."""
    aten = _aten_name(name, args, kwargs or {})
    if layout is strided:
        return NotImplementedError(
            f"Could not run 'aten::{aten}' with arguments from the 'NestedTensorCPU' backend. "
            "This could be because the operator doesn't exist for this backend, or was omitted "
            "during the selective/custom build process (if using custom build).")
    return NotImplementedError(f"aten.{aten if '.' in aten else aten + '.default'}")


# -- dispatch -----------------------------------------------------------------------------------------

_HANDLERS: dict = {}


def handles(*names):
    """Register the decorated function as the nested version of the ops `names`."""
    def register(handler):
        for name in names:
            _HANDLERS[name] = handler
        return handler
    return register


def _first_nested(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, NestedTensor):
            return value
        if isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, NestedTensor):
                    return item
    return None


def call(func, args: tuple, kwargs: dict):
    """`func(*args, **kwargs)` with nested tensors among the arguments."""
    name = (op_name(func) or str(func))
    nt = _first_nested(args, kwargs)
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(func, args, kwargs)
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    if nt._layout is strided:
        if base in _UNARY_BOTH:
            return _elementwise(func, name, args, kwargs)
        if base in _BINARY_BOTH or base in _BINARY_STRIDED_SCALAR:
            return _strided_binary(func, name, base, args, kwargs)
    elif base in _UNARY_BOTH or base in _UNARY_JAGGED or base in _BINARY_BOTH \
            or base in _BINARY_JAGGED:
        return _elementwise(func, name, args, kwargs)
    raise unsupported(name, nt._layout, args, kwargs)


# -- elementwise ---------------------------------------------------------------------------------------

def _size_text(nt) -> str:
    return "(" + ", ".join(repr(s) for s in nt.jagged_size()) + ")"


def _same_structure(a, b) -> bool:
    if a._layout is not b._layout:
        return False
    if a._layout is strided:
        return a._sizes == b._sizes
    return a._number == b._number and a._ragged_idx == b._ragged_idx and \
        tuple(a._values.shape) == tuple(b._values.shape)


def _is_scalar(value) -> bool:
    return isinstance(value, numbers.Number) or (
        isinstance(value, _core.TensorBase) and value.dim() == 0)


def _strided_binary(func, name, base, args, kwargs):
    """A binary op of the strided layout: with a scalar (or a 0-dim tensor), or with a nested
    tensor of the same sizes; PyTorch's NestedTensorCPU kernels take nothing else."""
    nested = [a for a in args[:2] if isinstance(a, NestedTensor)]
    others = [a for a in args[:2] if not isinstance(a, NestedTensor)]
    if base in _BINARY_STRIDED_SCALAR:
        if len(nested) == 2:
            if base == "eq":
                raise RuntimeError("eq does not support nested tensor as other value.")
            raise unsupported(name, strided, args, kwargs)
        if not all(isinstance(o, numbers.Number) for o in others):
            if others and isinstance(others[0], _core.TensorBase) and others[0].dim() > 0:
                raise RuntimeError("Expected both self and other to be nested, but got a nested "
                                   "self and non-nested other")
            raise unsupported(name, strided, args, kwargs)
    elif others and isinstance(others[0], _core.TensorBase) and not _is_scalar(others[0]):
        raise RuntimeError("Expected both self and other to be nested, but got a nested self "
                           "and non-nested other" if isinstance(args[0], NestedTensor) else
                           "Expected both self and other to be nested, but got a non-nested "
                           "self and nested other")
    if len(nested) == 2 and nested[0]._sizes != nested[1]._sizes:
        raise RuntimeError(f"{base} does not support broadcasting when given a NestedTensor")
    return _elementwise(func, name, args, kwargs)


def _elementwise(func, name, args, kwargs):
    """An elementwise op: run once on the values of its nested arguments (of one structure)."""
    nt = _first_nested(args, kwargs)
    nested = [a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor)]
    for other in nested[1:]:
        if not _same_structure(nt, other):
            if nt._layout is strided or other._layout is strided:
                raise RuntimeError(f"{name} does not support broadcasting when given a "
                                   "NestedTensor")
            raise RuntimeError(f"cannot call binary pointwise function {name}.Tensor with inputs "
                               f"of shapes {_size_text(nt)} and {_size_text(other)}")
    dense = [a for a in args if isinstance(a, _core.TensorBase) and a.dim() > 0]
    if nt._layout is jagged and dense:
        if any(d.dim() >= nt.dim() for d in dense):
            return _jagged_with_batched_dense(func, nt, args, kwargs)
        _check_broadcast_misses_ragged(name, nt, dense)

    def unwrap(value):
        return value._values if isinstance(value, NestedTensor) else value
    result = func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    if name.endswith("_") and not name.endswith("__") and isinstance(args[0], NestedTensor):
        return args[0]      # (in place: the values were written)
    if result is nt._values:        # (an op that returned its input: to() of the same dtype)
        return nt
    return nt.with_values(result)


def _check_broadcast_misses_ragged(name, nt, dense) -> None:
    """A dense operand shorter than the nested tensor broadcasts over its trailing dims; one that
    reaches the ragged dim must have size 1 there (else it would pair with packed elements)."""
    packed_from_end = nt._values.dim() - (nt._ragged_idx - 1)
    for d in dense:
        if d.dim() >= packed_from_end and d.shape[d.dim() - packed_from_end] != 1:
            raise _shapes_error(name, nt, d)


def _shapes_error(name, nt, dense):
    return RuntimeError(f"cannot call binary pointwise function {name}.Tensor with inputs of "
                        f"shapes {Size._unchecked(nt.jagged_size())!r} and {dense.shape!r}")


def _jagged_with_batched_dense(func, nt, args, kwargs):
    """A jagged tensor with a dense operand of its dimension (B or 1 first, 1 at the ragged dim):
    component i pairs with the dense operand's row i."""
    batch = nt.batch_size()
    rows = {}
    for position, a in enumerate(args):
        if isinstance(a, _core.TensorBase) and not isinstance(a, NestedTensor) and a.dim() > 0:
            if a.dim() > nt.dim() or a.shape[0] not in (1, batch) or \
                    a.shape[nt._ragged_idx] != 1:
                raise _shapes_error((op_name(func) or "op"), nt, a)
            rows[position] = a
    parts = []
    for i, component in enumerate(nt.components()):
        call_args = [component if isinstance(a, NestedTensor) else
                     (a[i if a.shape[0] > 1 else 0] if p in rows else a)
                     for p, a in enumerate(args)]
        parts.append(func(*call_args, **kwargs))
    return nt.from_components(parts)


# -- dims ------------------------------------------------------------------------------------------------

def _dim(nt, dim) -> int:
    ndim = nt.dim()
    if not -ndim <= dim < ndim:
        raise dim_out_of_range(dim, ndim)
    return dim % ndim


def _per_component(nt, op, grad_fn_name=None, ragged_idx=None):
    return nt.from_components([op(c) for c in nt.components()], grad_fn_name, ragged_idx)


def _named(tensor, name):
    return _core._name_grad_fn(tensor, name)


def _arg(args, kwargs, position, name, default=None):
    if len(args) > position:
        return args[position]
    return kwargs.get(name, default)


@handles("softmax", "log_softmax")
def _softmax(func, args, kwargs):
    nt = args[0]
    name = op_name(func)
    dim = _arg(args, kwargs, 1, "dim")
    dtype = kwargs.get("dtype")
    if dim is None:
        dim = 0 if nt.dim() in (0, 1, 3) else 1
    dim = _dim(nt, dim)
    kernel = _T[name]

    def run(t, d):
        return kernel(t, d, dtype=dtype) if dtype is not None else kernel(t, d)
    if nt._layout is strided:
        if name == "log_softmax":
            raise unsupported(name, strided)
        if dim == 0:
            raise RuntimeError("Cannot apply softmax across nested dimension 0")
        return _per_component(nt, lambda c: run(c, dim - 1))
    if dim == 0:
        raise RuntimeError(f"{name}(): not supported when reducing across the batch dimension "
                           "for NestedTensor")
    if dim == nt._ragged_idx:
        return _per_component(nt, lambda c: run(c, dim - 1))
    return nt.with_values(run(nt._values, dim - 1))


@handles("linear")
def _linear(func, args, kwargs):
    nt, weight = args[0], _arg(args, kwargs, 1, "weight")
    bias = _arg(args, kwargs, 2, "bias")
    if not isinstance(nt, NestedTensor):
        raise unsupported("linear", _first_nested(args, kwargs)._layout)
    linear = _core.NN_FUNCTIONS["linear"]
    if nt._layout is strided:
        return _per_component(nt, lambda c: linear(c, weight, bias), "LinearBackward0")
    if nt._ragged_idx == nt.dim() - 1:
        raise RuntimeError("linear(): not supported for NestedTensor on dim=-1 (the ragged dim)")
    return nt.with_values(_named(linear(nt._values, weight, bias), "LinearBackward0"))


@handles("layer_norm")
def _layer_norm(func, args, kwargs):
    nt = args[0]
    shape = tuple(_arg(args, kwargs, 1, "normalized_shape"))
    weight, bias = _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias")
    eps = _arg(args, kwargs, 4, "eps", 1e-5)
    layer_norm = _core.NN_FUNCTIONS["layer_norm"]
    if nt._layout is strided:
        if weight is None or bias is None:
            raise ValueError("NestedTensor layer_norm requires weight and bias")
        return _per_component(nt, lambda c: layer_norm(c, shape, weight, bias, eps))
    if nt._ragged_idx >= nt.dim() - len(shape):
        raise RuntimeError("layer_norm(): not supported for NestedTensor objects with normalized "
                           "dims over the batch or ragged dims")
    return nt.with_values(layer_norm(nt._values, shape, weight, bias, eps))


@handles("transpose", "swapaxes", "swapdims")
def _transpose(func, args, kwargs):
    nt = args[0]
    d0, d1 = _dim(nt, _arg(args, kwargs, 1, "dim0")), _dim(nt, _arg(args, kwargs, 2, "dim1"))
    if nt._layout is strided:
        if 0 in (d0, d1):
            raise RuntimeError(f"Nested tensor dimension 0 cannot be transposed")
        return _per_component(nt, lambda c: c.transpose(d0 - 1, d1 - 1))
    if 0 in (d0, d1):
        raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
    ragged = {d0: d1, d1: d0}.get(nt._ragged_idx, nt._ragged_idx)
    return nt.with_values(nt._values.transpose(d0 - 1, d1 - 1), ragged)


def _shape_arg(args, kwargs):
    shape = args[1:] if len(args) > 1 else kwargs.get("shape", kwargs.get("size", ()))
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(shape)


@handles("reshape", "view")
def _reshape(func, args, kwargs):
    nt = args[0]
    name = op_name(func)
    shape = _shape_arg(args, kwargs)
    batch = nt.batch_size()
    if not shape or shape[0] not in (-1, batch):
        raise RuntimeError(f"{name}(): for nested tensors, the batch dimension must keep its "
                           f"size {batch}, but got shape {list(shape)}")
    if nt._layout is strided:
        inner = tuple(shape[1:])
        return _per_component(nt, lambda c: getattr(c, name)(inner))
    r = nt._ragged_idx
    from ._tensor import NestedInt
    size = nt.jagged_size()
    if len(shape) <= r or not (shape[r] == -1 or isinstance(shape[r], NestedInt)) or \
            tuple(shape[1:r]) != tuple(size[1:r]):
        raise RuntimeError(f"{name}(): only the dims after the ragged dim can change for a jagged "
                           f"nested tensor of size {_size_text(nt)}, but got {list(shape)}")
    packed = nt._values.shape[r - 1]
    values = getattr(nt._values, name)((*shape[1:r], packed, *shape[r + 1:]))
    return nt.with_values(values)


@handles("unflatten")
def _unflatten(func, args, kwargs):
    nt = args[0]
    dim = _dim(nt, _arg(args, kwargs, 1, "dim"))
    sizes = tuple(_arg(args, kwargs, 2, "sizes"))
    if nt._layout is strided:
        return _per_component(nt, lambda c: c.unflatten(dim - 1, sizes))
    if dim in (0, nt._ragged_idx):
        raise RuntimeError(f"unflatten(): not supported for NestedTensor on dim={dim}")
    ragged = nt._ragged_idx + (len(sizes) - 1 if dim < nt._ragged_idx else 0)
    return nt.with_values(nt._values.unflatten(dim - 1, sizes), ragged)


@handles("unsqueeze")
def _unsqueeze(func, args, kwargs):
    nt = args[0]
    dim = _arg(args, kwargs, 1, "dim")
    ndim = nt.dim() + 1
    if not -ndim <= dim < ndim:
        raise dim_out_of_range(dim, ndim)
    dim %= ndim
    if dim == 0:
        raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
    if nt._layout is strided:
        return _per_component(nt, lambda c: c.unsqueeze(dim - 1))
    ragged = nt._ragged_idx + (1 if dim <= nt._ragged_idx else 0)
    return nt.with_values(nt._values.unsqueeze(dim - 1), ragged)


def _reduce_dims(nt, dim):
    if isinstance(dim, (tuple, list)):
        return sorted({_dim(nt, d) for d in dim})
    return [_dim(nt, dim)]


@handles("sum", "mean")
def _sum_mean(func, args, kwargs):
    nt = args[0]
    name = op_name(func)
    dim = _arg(args, kwargs, 1, "dim")
    keepdim = bool(_arg(args, kwargs, 2, "keepdim", False))
    dtype = kwargs.get("dtype")
    extra = {} if dtype is None else {"dtype": dtype}
    reduce = _core.TORCH_FUNCTIONS[name]
    if nt._layout is strided:
        if name == "mean" and nt.requires_grad and _core.is_grad_enabled():
            # (PyTorch's autograd asks the sizes before the kernel is looked for)
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please "
                               "file an issue.")
        if name == "mean" or dim is None:
            raise unsupported(name, strided, args, kwargs)
        dims = _reduce_dims(nt, dim)
        if dims != [nt.dim() - 1]:
            raise RuntimeError("NestedTensor can only be reduced across the last dimension for "
                               f"now got dimension {dims[0]} instead.")
        if not keepdim:
            raise RuntimeError("NestedTensor always requires keepdim=True for now.")
        return _per_component(nt, lambda c: reduce(c, -1, keepdim=True, **extra))
    if dim is None:
        flat = _T["cat"]([c.reshape(-1) for c in nt.components()]) \
            if nt._lengths is not None else nt._values
        return _named(reduce(flat, **extra), f"{name.capitalize()}BackwardAutogradNestedTensor0")
    dims = _reduce_dims(nt, dim)
    r = nt._ragged_idx
    if 0 in dims and r not in dims:
        raise RuntimeError(f"{name}(): reducing along the batch dimension but not the ragged "
                           "dimension is not supported for nested tensors")
    if 0 in dims:       # the batch and ragged dims together: over the packed dim of the values
        inner = [d - 1 for d in dims if d != 0]
        out = reduce(_T["cat"](nt.components(), r - 1) if nt._lengths is not None
                     else nt._values, inner, keepdim=keepdim, **extra)
        return out.unsqueeze(0) if keepdim else out
    # (PyTorch's nodes: its nested sum's own, mean's the dense one)
    node = "SumBackwardAutogradNestedTensor1" if name == "sum" else "MeanBackward1"
    if r in dims:       # over the ragged dim: one row per component, a dense result
        inner = [d - 1 for d in dims]
        rows = [reduce(c, inner, keepdim=keepdim, **extra) for c in nt.components()]
        return _named(_T["stack"](rows), node)
    values = reduce(nt._values, [d - 1 for d in dims], keepdim=keepdim, **extra)
    ragged = r if keepdim else r - sum(1 for d in dims if d < r)
    return nt.with_values(_named(values, node), ragged)


@handles("matmul", "bmm")
def _matmul(func, args, kwargs):
    a, b = args[0], _arg(args, kwargs, 1, "other", _arg(args, kwargs, 1, "mat2"))
    name = op_name(func)
    matmul = _T["matmul"]
    if a._layout is strided if isinstance(a, NestedTensor) else b._layout is strided:
        if not (isinstance(a, NestedTensor) and isinstance(b, NestedTensor)):
            raise RuntimeError("Expected both to be nested, but got a nested self and non-nested "
                               "other" if isinstance(a, NestedTensor) else
                               "Expected both to be nested, but got a non-nested self and nested "
                               "other")
        if a.batch_size() != b.batch_size():
            raise RuntimeError(f"{name}(): Expected size for first dim of batch2 tensor to be: "
                               f"{a.batch_size()} but got: {b.batch_size()}.")
        parts = [matmul(x, y) for x, y in zip(a.components(), b.components())]
        return a.from_components(parts)
    if isinstance(a, NestedTensor) and not isinstance(b, NestedTensor) and b.dim() <= 2 \
            and a._ragged_idx < a.dim() - 1:
        return a.with_values(matmul(a._values, b))
    if isinstance(a, NestedTensor) and isinstance(b, NestedTensor) and \
            a._layout is b._layout and a._number == b._number and \
            a._ragged_idx == b._ragged_idx and a._ragged_idx < a.dim() - 2 and a.dim() == b.dim():
        return a.with_values(matmul(a._values, b._values))
    shape_a = _size_text(a) if isinstance(a, NestedTensor) else repr(a.shape)
    shape_b = f"torch.Size([{_size_text(b)[1:-1]}])" if isinstance(b, NestedTensor) \
        else repr(b.shape)
    raise RuntimeError(f"matmul(): not supported between inputs of shapes {shape_a} and "
                       f"{shape_b}")


@handles("scaled_dot_product_attention")
def _attention(func, args, kwargs):
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
             "enable_gqa")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    q, k, v = bound["query"], bound["key"], bound["value"]
    if not all(isinstance(t, NestedTensor) for t in (q, k, v)):
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must all be "
                           "nested tensors or all be dense")
    if bound.get("attn_mask") is not None:
        raise RuntimeError("scaled_dot_product_attention(): attn_mask is not supported with "
                           "nested tensors")
    if not (q.batch_size() == k.batch_size() == v.batch_size()):
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must have the "
                           "same batch size")
    if any(t._layout is jagged and not _packed_contiguous(t) for t in (q, k, v)):
        # (PyTorch's kernels read each of q, k, v as one buffer of its packed layout)
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    from . import _warn_prototype
    _warn_prototype()       # (PyTorch's math kernel goes through a strided nested tensor)
    from ..nn._attention import scaled_dot_product_attention as attend
    options = {key: bound[key] for key in ("dropout_p", "is_causal", "scale", "enable_gqa")
               if key in bound}
    parts = [attend(x, y, z, **options)
             for x, y, z in zip(q.components(), k.components(), v.components())]
    return q.from_components(parts)


@handles("max", "min", "amax", "amin")
def _extremum(func, args, kwargs):
    """The jagged layout's reductions over all elements (a dense 0-dim result); PyTorch refuses
    the strided layout's and any over dims."""
    nt = args[0]
    name = op_name(func)
    if nt._layout is strided or len(args) > 1 or kwargs:
        raise unsupported(name, nt._layout, args, kwargs)
    return getattr(_T["cat"]([c.reshape(-1) for c in nt.components()]), name)()


@handles("cat", "concat", "concatenate")
def _cat(func, args, kwargs):
    tensors = list(args[0])
    dim = _arg(args, kwargs, 1, "dim", 0)
    nt = _first_nested((tensors,), {})
    if not all(isinstance(t, NestedTensor) and t._layout is nt._layout for t in tensors):
        raise RuntimeError("cat(): expected all tensors to be nested tensors of one layout")
    dim = _dim(nt, dim)
    if nt._layout is strided:
        if dim != 0:
            raise unsupported("cat", strided)
        return nt.from_components([c for t in tensors for c in t.components()])
    if dim == 0 or dim == nt._ragged_idx or not all(_same_structure_but_dim(nt, t, dim)
                                                    for t in tensors):
        raise RuntimeError(f"cat(): not supported for NestedTensor on dim={dim}")
    return nt.with_values(_T["cat"]([t._values for t in tensors], dim - 1))


def _same_structure_but_dim(a, b, dim) -> bool:
    return a._number == b._number and a._ragged_idx == b._ragged_idx and \
        a._lengths is None and b._lengths is None and a.dim() == b.dim()


@handles("flatten")
def _flatten(func, args, kwargs):
    nt = args[0]
    start = _dim(nt, _arg(args, kwargs, 1, "start_dim", 0))
    end = _dim(nt, _arg(args, kwargs, 2, "end_dim", -1))
    if nt._layout is strided:
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please file "
                           "an issue.")
    if start == 0 or start <= nt._ragged_idx <= end:
        raise RuntimeError(f"flatten(): not supported for NestedTensor on dim={start}")
    ragged = nt._ragged_idx - (end - start if nt._ragged_idx > end else 0)
    return nt.with_values(nt._values.flatten(start - 1, end - 1), ragged)


def _packed_contiguous(nt) -> bool:
    """Whether the values, with the packed dim moved first, are contiguous (a jagged tensor
    transposed to (B, H, j, D) from a contiguous (B, j, H, D) one is)."""
    return nt._lengths is None and \
        nt._values.movedim(nt._ragged_idx - 1, 0).is_contiguous()


@handles("clone")
def _clone(func, args, kwargs):
    nt = args[0]
    if nt._layout is jagged and nt._lengths is not None:
        return _per_component(nt, lambda c: c.clone())
    return nt.with_values(nt._values.clone())


@handles("contiguous")
def _contiguous(func, args, kwargs):
    nt = args[0]
    if nt.is_contiguous():
        return nt
    if nt._lengths is not None:
        return _per_component(nt, lambda c: c.contiguous())
    return nt.with_values(nt._values.contiguous())


@handles("chunk", "split")
def _chunk(func, args, kwargs):
    nt = args[0]
    name = op_name(func)
    dim = _dim(nt, _arg(args, kwargs, 2, "dim", 0))
    count = args[1]
    if nt._layout is strided:
        if name == "split":
            raise unsupported("split.Tensor", strided)
        pieces = [c.chunk(count, dim - 1) for c in nt.components()]
        return tuple(nt.from_components([p[i] for p in pieces]) for i in range(len(pieces[0])))
    if dim in (0, nt._ragged_idx):
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim={dim}")
    return tuple(nt.with_values(part) for part in getattr(nt._values, name)(count, dim - 1))


@handles("narrow")
def _narrow(func, args, kwargs):
    nt, dim, start, length = args[0], _arg(args, kwargs, 1, "dim"), \
        _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
    if _dim(nt, dim) != 0:
        raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    if nt._layout is jagged:
        raise RuntimeError("narrow(): not supported for NestedTensor on dim=0")
    return nt.from_components(nt.components()[start:start + length])


@handles("__getitem__", "select")
def _getitem(func, args, kwargs):
    nt, index = args[0], args[1]
    if op_name(func) == "select":
        if _dim(nt, index) != 0:
            raise unsupported("select.int", nt._layout)
        index = args[2]
    if isinstance(index, numbers.Integral) and not isinstance(index, bool):
        batch = nt.batch_size()
        if not -batch <= index < batch:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {batch}")
        return nt.unbind()[index]
    if nt._layout is strided:
        raise unsupported("slice.Tensor", strided)
    raise RuntimeError("slice(): not supported for NestedTensor on dim=0")


@handles("unbind")
def _unbind(func, args, kwargs):
    return args[0].unbind(*args[1:], **kwargs)


@handles("size", "dim", "numel", "detach", "values", "offsets", "lengths", "requires_grad_",
         "retain_grad", "backward", "is_contiguous", "numpy", "tolist", "item", "stride")
def _own_method(func, args, kwargs):
    return getattr(NestedTensor, op_name(func))(*args, **kwargs)


@handles("to_padded_tensor")
def _to_padded(func, args, kwargs):
    return to_padded_tensor(*args, **kwargs)


# -- torch.nested's functions over these ops ---------------------------------------------------------

def to_padded_tensor(input, padding, output_size=None):
    """A dense tensor of `input`'s components, each padded with `padding` at the end of each dim
    to the largest size (or to `output_size`), stacked: differentiable (ToPaddedTensorBackward0)."""
    if not isinstance(input, NestedTensor):
        raise RuntimeError("to_padded_tensor(): expected a nested tensor input")
    if input._layout is jagged and input._lengths is not None:
        raise RuntimeError("to_padded_tensor(): not supported for nested tensors with holes")
    parts = input.components()
    ndim = input.dim()
    if parts:
        widest = [max(p.shape[d] for p in parts) for d in range(ndim - 1)]
    else:
        widest = [0] * (ndim - 1)
    if output_size is not None:
        output_size = tuple(output_size)
        if len(output_size) != ndim:
            raise RuntimeError("Length of output_size does not match NestedTensor dims. "
                               "Broadcasting is not supported.")
        target = list(output_size[1:])
        if input._layout is strided and any(t < w for t, w in zip(target, widest)):
            raise RuntimeError("Value in output_size is less than NestedTensor padded size. "
                               "Truncation is not supported.")
    else:
        target = widest
        if input._layout is jagged:
            # PyTorch pads the ragged dim to the cached max_seqlen, or without one to an upper
            # bound it knows without reading the offsets: the packed length
            axis = input._ragged_idx - 1
            known = input._max_seqlen
            target[axis] = max(target[axis], input._values.shape[axis] if known is None
                               else int(known))
    pad = _core.NN_FUNCTIONS["pad"]
    rows = []
    for part in parts:
        for d, size in enumerate(target):           # (jagged: a smaller size truncates)
            if part.shape[d] > size:
                part = part.narrow(d, 0, size)
        widths = []
        for d in reversed(range(len(target))):
            widths += [0, target[d] - part.shape[d]]
        rows.append(pad(part, widths, value=padding) if any(widths) else part)
    if not rows:
        from ..creation import empty
        return empty((0, *target), dtype=input.dtype)
    return _named(_T["stack"](rows), "ToPaddedTensorBackward0")

