"""PyTorch's `torch._foreach_*` functions: one op applied to every tensor of a list.  PyTorch's
multi-tensor optimizers call them, and so do the EMA helpers of generative-model code
(`torch._foreach_lerp_(ema_params, params, 1 - decay)`, `torch._foreach_mul_(..., decay)`).

Each function is its per-tensor op mapped over the list, so values, dtypes, broadcasting, the
in-place rules (a leaf that requires grad is refused outside no_grad) and gradients are the
per-tensor op's.  What belongs to the family alone is checked here: the argument forms (a
scalar, a list of scalars, a list of tensors, one tensor), the lists' lengths, and the results
(a tuple of new tensors; an in-place variant hands back the list it was given).
"""
from __future__ import annotations as _annotations

import numbers

from . import _core
from ._core import type_name

TensorBase = _core.TensorBase


def _tensor_list(fn: str, tensors, *rest) -> list:
    """`tensors` as a list, with PyTorch's errors for what is not a non-empty tensor sequence."""
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, TensorBase)
                                                         for t in tensors):
        got = ", ".join(_kind(a) for a in (tensors,) + rest)
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got})")
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _kind(arg) -> str:
    """How PyTorch's argument parser names an argument's type in its messages."""
    return "Tensor" if isinstance(arg, TensorBase) else type_name(arg)


# The binary ops whose one tensor for all tensors is an overload of its own (PyTorch's
# _foreach_add.Tensor, mul.Tensor, div.Tensor)
_TENSOR_SCALAR = ("_foreach_add", "_foreach_mul", "_foreach_div")


def _per_tensor(fn: str, tensors: list, other, *args) -> list:
    """`other` spread over `tensors`: one item per tensor, whether given as a single scalar or
    tensor, a list of scalars, a list of tensors or (for the scalar-list overloads) a 1-d tensor
    of one value per tensor."""
    if isinstance(other, TensorBase) and other.dim() != 0:
        # one tensor for all is a scalar: add, mul and div have an overload of a 0-d tensor,
        # which checks it; the others parse a 0-d tensor as their Number, and nothing else
        if fn.rstrip("_") in _TENSOR_SCALAR:
            raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.dim()} "
                               f"dimensions and {other.numel()} elements.")
        got = ", ".join(_kind(a) for a in (tensors, other) + args)
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got})")
    if isinstance(other, (numbers.Number, TensorBase)):
        return [other] * len(tensors)
    if isinstance(other, (list, tuple)):
        if other and all(isinstance(o, TensorBase) for o in other):
            if len(other) != len(tensors):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                                   f"{len(tensors)} and {len(other)}")
            return list(other)
        if all(isinstance(o, numbers.Number) for o in other):
            if len(other) != len(tensors):
                raise RuntimeError("Tensor list must have same number of elements as scalar "
                                   "list.")
            return list(other)
    got = ", ".join(_kind(a) for a in (tensors, other) + args)
    raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got})")


def _paired(fn: str, tensors: list, others) -> list:
    """A second list of tensors, one per tensor of `tensors`."""
    others = _tensor_list(fn, others)
    if len(others) != len(tensors):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                           f"{len(tensors)} and {len(others)}")
    return others


def _scalars_from_tensor(values, count: int) -> list:
    """addcmul/addcdiv's `scalars` given as a tensor: PyTorch's packed scalars, a 1-d tensor of
    one value per tensor (a 0-d one is refused, not taken as one scalar for all)."""
    if isinstance(values, TensorBase):
        if values.dim() != 1:
            raise RuntimeError(f"Expected packed scalar Tensor to be of dimension 1. Got "
                               f"{values.dim()} instead.")
        if values.numel() != count:
            raise RuntimeError(f"Expected length of scalars to match input of length {count} "
                               f"but got {values.numel()} instead.")
        return values.tolist()
    return values


# The unary family: _foreach_<name>(tensors) and _foreach_<name>_(tensors).
_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


def _make_unary(name: str):
    def functional(self):
        tensors = _tensor_list(f"_foreach_{name}", self)
        return tuple([getattr(t, name)() for t in tensors])

    def in_place(self):
        for t in _tensor_list(f"_foreach_{name}_", self):
            getattr(t, name + "_")()
        return self

    return functional, in_place


def _maximum(t, other):
    # PyTorch's scalar overload is clamp_min: a Python number is not a tensor to compare with.
    return t.clamp_min(other) if not isinstance(other, TensorBase) else t.maximum(other)


def _minimum(t, other):
    return t.clamp_max(other) if not isinstance(other, TensorBase) else t.minimum(other)


def _maximum_(t, other):
    return t.clamp_min_(other) if not isinstance(other, TensorBase) else t.copy_(t.maximum(other))


def _minimum_(t, other):
    return t.clamp_max_(other) if not isinstance(other, TensorBase) else t.copy_(t.minimum(other))


# The binary family: name -> (out-of-place op, in-place op), each of (tensor, other item).
_BINARY = {
    "add": (lambda t, o, **k: t.add(o, **k), lambda t, o, **k: t.add_(o, **k)),
    "sub": (lambda t, o, **k: t.sub(o, **k), lambda t, o, **k: t.sub_(o, **k)),
    "mul": (lambda t, o: t.mul(o), lambda t, o: t.mul_(o)),
    "div": (lambda t, o: t.div(o), lambda t, o: t.div_(o)),
    "pow": (lambda t, o: t.pow(o), lambda t, o: t.pow_(o)),
    "clamp_min": (lambda t, o: t.clamp_min(o), lambda t, o: t.clamp_min_(o)),
    "clamp_max": (lambda t, o: t.clamp_max(o), lambda t, o: t.clamp_max_(o)),
    "maximum": (_maximum, _maximum_),
    "minimum": (_minimum, _minimum_),
}
_TAKES_ALPHA = ("add", "sub")


def _make_binary(name: str, op, op_):
    fn = f"_foreach_{name}"

    def functional(self, other, **kwargs):
        if name == "pow" and isinstance(self, numbers.Number):
            # _foreach_pow(scalar, exponents): the scalar raised to each tensor.
            from tapegrad import pow as torch_pow
            return tuple([torch_pow(self, e) for e in _tensor_list(fn, other, self)])
        tensors = _tensor_list(fn, self, other)
        others = _per_tensor(fn, tensors, other)
        return tuple([op(t, o, **kwargs) for t, o in zip(tensors, others)])

    def in_place(self, other, **kwargs):
        tensors = _tensor_list(fn + "_", self, other)
        for t, o in zip(tensors, _per_tensor(fn + "_", tensors, other)):
            op_(t, o, **kwargs)
        return self

    if name not in _TAKES_ALPHA:
        def functional_no_alpha(self, other):
            return functional(self, other)

        def in_place_no_alpha(self, other):
            return in_place(self, other)
        return functional_no_alpha, in_place_no_alpha

    def functional_alpha(self, other, *, alpha=1):
        return functional(self, other, alpha=alpha)

    def in_place_alpha(self, other, *, alpha=1):
        return in_place(self, other, alpha=alpha)
    return functional_alpha, in_place_alpha


def _make_pointwise(name: str):
    """addcmul / addcdiv: self + value * (tensor1 op tensor2), value a scalar, a list of
    scalars or a 1-d tensor of one value per tensor."""
    fn = f"_foreach_{name}"

    def functional(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(fn, self, tensor1, tensor2)
        firsts = _paired(fn, tensors, tensor1)
        seconds = _paired(fn, tensors, tensor2)
        values = _per_tensor(fn, tensors, _scalars_from_tensor(value, len(tensors)))
        return tuple([getattr(t, name)(a, b, value=v)
                         for t, a, b, v in zip(tensors, firsts, seconds, values)])

    def in_place(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(fn + "_", self, tensor1, tensor2)
        firsts = _paired(fn + "_", tensors, tensor1)
        seconds = _paired(fn + "_", tensors, tensor2)
        values = _per_tensor(fn + "_", tensors, _scalars_from_tensor(value, len(tensors)))
        for t, a, b, v in zip(tensors, firsts, seconds, values):
            getattr(t, name + "_")(a, b, value=v)
        return self

    return functional, in_place


def _foreach_lerp(self, tensors1, weight):
    tensors = _tensor_list("_foreach_lerp", self, tensors1, weight)
    ends = _paired("_foreach_lerp", tensors, tensors1)
    weights = _per_tensor("_foreach_lerp", tensors, weight)
    return tuple([t.lerp(e, w) for t, e, w in zip(tensors, ends, weights)])


def _foreach_lerp_(self, tensors1, weight):
    tensors = _tensor_list("_foreach_lerp_", self, tensors1, weight)
    ends = _paired("_foreach_lerp_", tensors, tensors1)
    for t, e, w in zip(tensors, ends, _per_tensor("_foreach_lerp_", tensors, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    from tapegrad.linalg import vector_norm
    return tuple([vector_norm(t, ord, dtype=dtype)
                     for t in _tensor_list("_foreach_norm", self)])


def _foreach_powsum(self, ord=2, dtype=None):
    """The sum of |x|**ord of each tensor (the norm before its root)."""
    return tuple([t.abs().pow(ord).sum(dtype=dtype)
                     for t in _tensor_list("_foreach_powsum", self)])


def _foreach_max(self):
    tensors = _tensor_list("_foreach_max", self)
    if any(t.numel() == 0 for t in tensors):
        raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over "
                           "zero elements is undefined.")
    return tuple([t.max() for t in tensors])


def _foreach_mm(self, mat2):
    tensors = _tensor_list("_foreach_mm", self, mat2)
    return tuple([t.mm(m) for t, m in zip(tensors, _paired("_foreach_mm", tensors, mat2))])


def _foreach_clone(self, *, memory_format=None):
    kwargs = {} if memory_format is None else {"memory_format": memory_format}
    return tuple([t.clone(**kwargs) for t in _tensor_list("_foreach_clone", self)])


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _tensor_list("_foreach_copy_", self, src)
    for t, s in zip(tensors, _paired("_foreach_copy_", tensors, src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self):
    for t in _tensor_list("_foreach_zero_", self):
        t.zero_()
    return self


def _all_functions() -> dict:
    functions = {}
    for name in _UNARY:
        functions[f"_foreach_{name}"], functions[f"_foreach_{name}_"] = _make_unary(name)
    for name, (op, op_) in _BINARY.items():
        functions[f"_foreach_{name}"], functions[f"_foreach_{name}_"] = _make_binary(name, op, op_)
    for name in ("addcmul", "addcdiv"):
        functions[f"_foreach_{name}"], functions[f"_foreach_{name}_"] = _make_pointwise(name)
    for function in (_foreach_lerp, _foreach_lerp_, _foreach_norm, _foreach_powsum, _foreach_max,
                     _foreach_mm, _foreach_clone, _foreach_copy_, _foreach_zero_):
        functions[function.__name__] = function
    for name, function in functions.items():
        function.__name__ = function.__qualname__ = name
    return functions


# ---- grouping tensor lists by device and dtype (torch.utils._foreach_utils) ----

def _get_foreach_kernels_supported_devices() -> list[str]:
    """The device types with foreach kernels beyond the CPU's reference loop."""
    return ["cuda", "xpu", "mtia", "privateuseone"]


def _get_fused_kernels_supported_devices() -> list[str]:
    """The device types with fused optimizer kernels."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _bad_nesting(condition: str) -> RuntimeError:
    # PyTorch's message for a violated TORCH_CHECK in its C++ grouping
    return RuntimeError(f"Expected {condition} to be true, but got false.  (Could this error message "
                        "be improved?  If so, please report an enhancement request to PyTorch.)")


def group_by_device_and_dtype(tensorlistlist, with_indices: bool):
    """torch._C._group_tensors_by_device_and_dtype: {(device, dtype): (lists, indices)}.

    The i-th tensors of all the lists go to the group of the i-th tensor of the first list (which
    must be defined); an empty list other than the first stays empty in every group.  The grouped
    lists hold the same tensor objects, so an in-place foreach op on a group updates the
    caller's tensors.  `indices` are the positions in the first list when with_indices, else []."""
    if not all(isinstance(t, (TensorBase, type(None))) for tensors in tensorlistlist for t in tensors):
        raise TypeError("_group_tensors_by_device_and_dtype(): incompatible function arguments. The "
                        "following argument types are supported:\n    1. (arg0: collections.abc.Sequence"
                        "[collections.abc.Sequence[torch.Tensor | None]], arg1: bool) -> dict[tuple[torch."
                        "device, torch.dtype], tuple[list[list[torch.Tensor | None]], list[int]]]")
    lists = [list(tensors) for tensors in tensorlistlist]
    if not lists:
        raise _bad_nesting("!nested_tensorlist.empty()")
    count = len(lists[0])
    if count == 0:
        raise _bad_nesting("!nested_tensorlist[0].empty()")
    if any(len(tensors) not in (count, 0) for tensors in lists):
        raise _bad_nesting("std::all_of( nested_tensorlist.cbegin(), nested_tensorlist.cend(), [&](const "
                           "auto& tensorlist) -> bool { return tensorlist.size() == num_tensors || "
                           "tensorlist.size() == 0; })")
    groups: dict = {}
    for i, first in enumerate(lists[0]):
        if first is None:
            raise RuntimeError("Tensors of the first list of nested Tensor lists are supposed to be "
                               f"defined but the {i}-th Tensor is not.")
        key = (first.device, first.dtype)
        if key not in groups:
            groups[key] = ([[] for _ in lists], [])
        grouped, indices = groups[key]
        for column, tensors in zip(grouped, lists):
            if tensors:
                column.append(tensors[i])
        if with_indices:
            indices.append(i)
    return groups


def register(namespace: dict) -> None:
    """Add the `_foreach_*` functions to `namespace` (existing names win)."""
    for name, function in _all_functions().items():
        namespace.setdefault(name, function)
