"""The aten operators torch.export records: each one's schema (PyTorch's native_functions text,
with the fixed lengths of int lists kept, `int[2] stride`) and the tapegrad function that runs it.

An exported graph's call_function nodes target `torch.ops.aten.<name>.<overload>`; those
OpOverloads (tapegrad/_ops.py) run the kernel named here.  `normalize` puts a call's arguments in
the form PyTorch's export prints: positional in schema order, int lists expanded to their length,
trailing arguments left at their default dropped, keyword-only ones as keywords when not default.
"""
from __future__ import annotations as _annotations

import functools
import re

from .._op_schema import parse_schema

__all__ = ["AtenOp", "aten_op", "aten_names", "normalize"]


def _max_pool_kernel(pool):
    # aten's `stride=[]` means "the kernel size", F's None does
    def run(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return pool(x, kernel_size, list(stride) or None, padding, dilation, ceil_mode)
    return run


def _kernels():
    """Kernels whose tapegrad function differs from aten's in name or arguments."""
    import tapegrad
    from ..nn import functional as F
    return {
        "max_pool1d": _max_pool_kernel(F.max_pool1d),
        "max_pool2d": _max_pool_kernel(F.max_pool2d),
        "avg_pool2d": lambda x, k, s=(), p=0, c=False, i=True, d=None:
            F.avg_pool2d(x, k, list(s) or None, p, c, i, d),
        "view": lambda x, size: x.view(size),
        "reshape": lambda x, size: x.reshape(size),
        "expand": lambda x, size: x.expand(size),
        "flatten": lambda x, start_dim=0, end_dim=-1: tapegrad.flatten(x, start_dim, end_dim),
        "sum.dim_IntList": lambda x, dim, keepdim=False, dtype=None: x.sum(dim, keepdim, dtype=dtype),
        "mean.dim": lambda x, dim, keepdim=False, dtype=None: x.mean(dim, keepdim, dtype=dtype),
        "contiguous": lambda x, memory_format=None: x.contiguous(),
        "dropout": lambda x, p, train: F.dropout(x, p, train),
        "embedding": lambda weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False:
            F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse),
        "numpy_T": lambda x: x.T,
        "_native_batch_norm_legit_no_training": lambda x, w, b, mean, var, momentum, eps: (
            F.batch_norm(x, mean, var, w, b, False, momentum, eps), tapegrad.empty(0), tapegrad.empty(0)),
        "max_pool2d_with_indices": lambda x, k, s=(), p=0, d=1, c=False:
            F.max_pool2d(x, k, list(s) or None, p, d, c, return_indices=True),
        "split_with_sizes": lambda x, sizes, dim=0: tapegrad.split(x, list(sizes), dim),
        "clone": lambda x, memory_format=None: x.clone(),
        "sym_size.int": lambda x, dim: x.size(dim),
        "slice": lambda x, dim=0, start=None, end=None, step=1:
            x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)],
        "_softmax": lambda x, dim, half_to_float: tapegrad.softmax(x, dim),
        "_log_softmax": lambda x, dim, half_to_float: tapegrad.log_softmax(x, dim),
    }


# PyTorch 2.13's schemas of the ops export meets in tutorial models (native_functions.yaml)
_SCHEMAS = """
linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor
conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor
batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor
layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor
embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
dropout(Tensor input, float p, bool train) -> Tensor
max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> Tensor
max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor
avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
relu(Tensor self) -> Tensor
sigmoid(Tensor self) -> Tensor
tanh(Tensor self) -> Tensor
gelu(Tensor self, *, str approximate='none') -> Tensor
silu(Tensor self) -> Tensor
exp(Tensor self) -> Tensor
log(Tensor self) -> Tensor
sqrt(Tensor self) -> Tensor
neg(Tensor self) -> Tensor
abs(Tensor self) -> Tensor
softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
mul.Tensor(Tensor self, Tensor other) -> Tensor
div.Tensor(Tensor self, Tensor other) -> Tensor
div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor
reciprocal(Tensor self) -> Tensor
numpy_T(Tensor(a) self) -> Tensor(a)
gt.Scalar(Tensor self, Scalar other) -> Tensor
gt.Tensor(Tensor self, Tensor other) -> Tensor
lt.Scalar(Tensor self, Scalar other) -> Tensor
lt.Tensor(Tensor self, Tensor other) -> Tensor
ge.Scalar(Tensor self, Scalar other) -> Tensor
ge.Tensor(Tensor self, Tensor other) -> Tensor
le.Scalar(Tensor self, Scalar other) -> Tensor
le.Tensor(Tensor self, Tensor other) -> Tensor
eq.Scalar(Tensor self, Scalar other) -> Tensor
eq.Tensor(Tensor self, Tensor other) -> Tensor
ne.Scalar(Tensor self, Scalar other) -> Tensor
ne.Tensor(Tensor self, Tensor other) -> Tensor
pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
matmul(Tensor self, Tensor other) -> Tensor
mm(Tensor self, Tensor mat2) -> Tensor
bmm(Tensor self, Tensor mat2) -> Tensor
addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
t(Tensor self) -> Tensor
transpose.int(Tensor self, int dim0, int dim1) -> Tensor
permute(Tensor self, int[] dims) -> Tensor
view(Tensor self, SymInt[] size) -> Tensor
reshape(Tensor self, SymInt[] shape) -> Tensor
expand(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor
flatten.using_ints(Tensor self, int start_dim=0, int end_dim=-1) -> Tensor
unsqueeze(Tensor self, int dim) -> Tensor
squeeze.dim(Tensor self, int dim) -> Tensor
contiguous(Tensor self, *, MemoryFormat memory_format=0) -> Tensor
select.int(Tensor self, int dim, SymInt index) -> Tensor
slice.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
cat(Tensor[] tensors, int dim=0) -> Tensor
stack(Tensor[] tensors, int dim=0) -> Tensor
chunk(Tensor self, int chunks, int dim=0) -> Tensor[]
split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
sum.default(Tensor self, *, ScalarType? dtype=None) -> Tensor
sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
mean.default(Tensor self, *, ScalarType? dtype=None) -> Tensor
mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
sym_size.int(Tensor self, int dim) -> SymInt
max.default(Tensor self) -> Tensor
max.dim(Tensor self, int dim, bool keepdim=False) -> Tensor[]
min.default(Tensor self) -> Tensor
min.dim(Tensor self, int dim, bool keepdim=False) -> Tensor[]
argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor
_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> Tensor[]
max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor[]
split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]
clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
"""

# ops export records in place (x.relu_(), F.relu(x, inplace=True), h += 1) as PyTorch's does
_IN_PLACE = ("relu", "sigmoid", "tanh", "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor")

_LIST_LENGTH = re.compile(r"\[(\d+)\]")


class AtenOp:
    """One aten overload: its schema, the fixed lengths of its int-list arguments, its kernel."""

    def __init__(self, text: str, kernel):
        self.lengths = {}
        for piece in text[text.index("(") + 1:text.rindex(")")].split(","):
            match = _LIST_LENGTH.search(piece)
            if match:
                self.lengths[piece.split("=")[0].split()[-1]] = int(match.group(1))
        self.schema = parse_schema("aten::" + _LIST_LENGTH.sub("[]", text))
        self.name = self.schema.name.partition("::")[2]
        self.overload = self.schema.overload_name or "default"
        self.kernel = kernel

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def _expanded(self, arg, value):
        """`value` as aten holds the argument: an int given for an int[n] list repeated n times."""
        if arg.type.startswith(("int[", "SymInt[")) and isinstance(value, int) and not isinstance(value, bool):
            return [value] * self.lengths.get(arg.name, 1)
        if isinstance(value, tuple) and arg.type.rstrip("?").endswith("[]"):
            return list(value)
        return value

    def normalize(self, args, kwargs):
        """(args, kwargs) as export prints this op's call (see the module docstring)."""
        kwargs = dict(kwargs)
        positional = [a for a in self.schema.arguments if not a.kwarg_only]
        values = []
        for i, arg in enumerate(positional):
            if i < len(args):
                values.append(self._expanded(arg, args[i]))
            elif arg.name in kwargs:
                values.append(self._expanded(arg, kwargs.pop(arg.name)))
            elif arg.has_default:
                values.append(_DEFAULT)
            else:
                raise TypeError(f"aten.{self.name}.{self.overload}: missing argument '{arg.name}'")
        while values and (values[-1] is _DEFAULT
                          or _is_default(positional[len(values) - 1], values[-1], self)):
            values.pop()
        values = [positional[i].default if v is _DEFAULT else v for i, v in enumerate(values)]
        keyword = {a.name: kwargs.pop(a.name) for a in self.schema.arguments
                   if a.kwarg_only and a.name in kwargs and not _is_default(a, kwargs[a.name], self)}
        for name in [k for k in kwargs if not any(a.name == k for a in self.schema.arguments)]:
            raise TypeError(f"aten.{self.name}.{self.overload}: unexpected argument '{name}'")
        return tuple(values), keyword


_DEFAULT = object()


def _is_default(arg, value, op) -> bool:
    if not arg.has_default:
        return False
    default = op._expanded(arg, arg.default)
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:                     # a Tensor or a symbolic value is never a default
        return False


@functools.lru_cache(maxsize=None)
def _table():
    import tapegrad
    from ..nn import functional as F
    special = _kernels()
    table = {}
    lines = _SCHEMAS.strip().splitlines()
    for line in list(lines):
        if line[:line.index("(")] in _IN_PLACE:
            # relu_(Tensor self) -> Tensor: the in-place twin, run by Tensor.relu_
            name, _, rest = line.partition(".") if "." in line[:line.index("(")] else line.partition("(")
            twin = f"{name}_.{rest}" if "." in line[:line.index("(")] else f"{name}_({rest}"
            special[twin[:twin.index("(")]] = getattr(tapegrad.Tensor, name + "_")
            lines.append(twin)
    for line in lines:
        name_overload = line[:line.index("(")]
        name = name_overload.partition(".")[0]
        kernel = special.get(name_overload) or special.get(name)
        if kernel is None:
            kernel = next(getattr(space, name) for space in (tapegrad, F, tapegrad.Tensor)
                          if callable(getattr(space, name, None)))
        op = AtenOp(line, kernel)
        table[(op.name, op.overload)] = op
    return table


def aten_op(name: str, overload: str = "default"):
    """The AtenOp `aten.<name>.<overload>`, or None when export does not record it."""
    return _table().get((name, overload))


def aten_names():
    return {name for name, _overload in _table()}


def normalize(name: str, overload: str, args, kwargs):
    return aten_op(name, overload).normalize(args, kwargs)
