"""What each torch-level call export meets becomes at aten level: `lower(name, args, kwargs)`
gives (aten name, overload, args, kwargs) for a function, method or operator called with tensor
proxies, as PyTorch's export records it (torch.relu, F.relu, Tensor.relu and relu_ all
become aten.relu.default; `x + 1` aten.add.Tensor(x, 1); `x.view(2, 3)` aten.view.default(x, [2, 3])).

`MODULE_FORWARDS` holds tapegrad.nn's modules written as PyTorch's forward calls the functional
ops, so a model's layers record the aten ops PyTorch's do (nn.Linear: aten.linear.default).
"""
from __future__ import annotations as _annotations

import functools

__all__ = ["lower", "module_forward"]


def _sizes(size):
    """`view(2, 3)` and `view((2, 3))` both hold the list [2, 3]."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return list(size[0])
    return list(size)


def _unary(aten):
    def lowering(input, inplace=False):
        return aten, "default", (input,), {}
    return lowering


class Previous:
    """In a lowering to several ops, the result of the op before."""


def _binary(aten, reverse=None):
    """`a <op> b` with either side a tensor: the tensor first, as aten's Tensor overloads take it
    (a commutative op swaps, `1 - x` is rsub.Scalar, `2 / x` is reciprocal then mul)."""
    def lowering(input, other, *, alpha=1, rounding_mode=None):
        if rounding_mode is not None:          # torch.div(x, y, rounding_mode="floor")
            if not _is_tensor(input):
                raise NotImplementedError("torch.export in tapegrad records a rounding division "
                                          "with the tensor first only")
            return aten, "Tensor_mode", (input, other), {"rounding_mode": rounding_mode}
        if not _is_tensor(input):
            if reverse is None:
                return aten, "Tensor", (other, input), _alpha(alpha)
            if reverse == "reciprocal":
                return [("reciprocal", "default", (other,), {}),
                        ("mul", "Tensor", (Previous, input), {})]
            return reverse, "Scalar", (other, input), _alpha(alpha)
        return aten, "Tensor", (input, other), _alpha(alpha)
    return lowering


# a comparison with the tensor on the right is the mirrored one with it on the left
_MIRRORED = {"gt": "lt", "lt": "gt", "ge": "le", "le": "ge", "eq": "eq", "ne": "ne"}


def _compare(aten):
    def lowering(input, other):
        if not _is_tensor(input):
            return _compare(_MIRRORED[aten])(other, input)
        return aten, "Tensor" if _is_tensor(other) else "Scalar", (input, other), {}
    return lowering


def _alpha(alpha):
    return {} if alpha == 1 else {"alpha": alpha}


def _is_tensor(value) -> bool:
    from .. import Tensor
    from ._tracer import ValueProxy
    return isinstance(value, Tensor) or (isinstance(value, ValueProxy) and isinstance(value.value, Tensor))


def _softmax(aten):
    def lowering(input, dim=None, _stacklevel=3, dtype=None):
        return aten, "int", (input, dim), ({} if dtype is None else {"dtype": dtype})
    return lowering


def _reduction(aten):
    def lowering(input, dim=None, keepdim=False, *, dtype=None):
        if dim is None:
            if keepdim:
                raise NotImplementedError(f"torch.export in tapegrad records {aten}(keepdim=True) "
                                          "over given dims only")
            return aten, "default", (input,), ({} if dtype is None else {"dtype": dtype})
        dim = [dim] if isinstance(dim, int) else list(dim)
        return aten, "dim" if aten == "mean" else "dim_IntList", (input, dim, keepdim), \
            ({} if dtype is None else {"dtype": dtype})
    return lowering


def _extremum(aten):
    """max(x) is the reduction, max(x, dim) the (values, indices) pair."""
    def lowering(input, dim=None, keepdim=False):
        if dim is None:
            return aten, "default", (input,), {}
        if _is_tensor(dim):
            raise NotImplementedError(f"torch.export in tapegrad records {aten} of one tensor only")
        return aten, "dim", (input, dim, keepdim), {}
    return lowering


def _split(input, split_size_or_sections, dim=0):
    if not isinstance(split_size_or_sections, int):
        raise NotImplementedError("torch.export in tapegrad records split with one size only")
    return "split", "Tensor", (input, split_size_or_sections, dim), {}


def _getitem(value, index):
    """x[i] on a list an op returned stays operator.getitem; on a tensor it is a chain of
    aten.select / aten.slice / aten.unsqueeze, one per indexed dim."""
    import operator
    if not _is_tensor(value):
        return operator.getitem, None, (value, index), {}
    return "index_chain", None, (value, index if isinstance(index, tuple) else (index,)), {}


def _attribute(value, name):
    """`x.T` (the one tensor attribute export records as an op; metadata is read as values)."""
    if name == "T":
        return "numpy_T", "default", (value,), {}
    raise NotImplementedError(f"torch.export in tapegrad does not record Tensor.{name}")


def _embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
               scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        # max_norm renormalises the weight in place, outside the graph
        raise NotImplementedError("torch.export in tapegrad records embedding without max_norm only")
    return "embedding", "default", (weight, input, -1 if padding_idx is None else padding_idx,
                                     scale_grad_by_freq, sparse), {}


def _dropout(input, p=0.5, training=True, inplace=False):
    return "dropout", "default", (input, p, training), {}


@functools.lru_cache(maxsize=None)
def _table():
    table = {name: _unary(name) for name in
             ("relu", "sigmoid", "tanh", "silu", "exp", "log", "sqrt", "neg", "abs", "t",
              "reciprocal")}
    table.update({name: _compare(name) for name in _MIRRORED})
    table.update({
        "gelu": lambda input, approximate="none":
            ("gelu", "default", (input,), {} if approximate == "none" else {"approximate": approximate}),
        "linear": lambda input, weight, bias=None: ("linear", "default", (input, weight, bias), {}),
        "conv1d": lambda *a, **k: ("conv1d", "default", a, k),
        "conv2d": lambda *a, **k: ("conv2d", "default", a, k),
        "torch.batch_norm": lambda *a, **k: ("batch_norm", "default", a, k),
        "torch.nn.functional.batch_norm": lambda input, running_mean, running_var, weight=None,
        bias=None, training=False, momentum=0.1, eps=1e-5:
            ("batch_norm", "default", (input, weight, bias, running_mean, running_var, training,
                                       momentum, eps, False), {}),
        "max_pool2d": lambda input, kernel_size, stride=None, padding=0, dilation=1,
        ceil_mode=False, return_indices=False:
            ("max_pool2d_with_indices" if return_indices else "max_pool2d", "default",
             (input, kernel_size, stride or [], padding, dilation, ceil_mode), {}),
        "embedding": _embedding,
        "avg_pool2d": lambda input, kernel_size, stride=None, padding=0, ceil_mode=False,
        count_include_pad=True, divisor_override=None:
            ("avg_pool2d", "default", (input, kernel_size, stride or [], padding, ceil_mode,
                                       count_include_pad, divisor_override), {}),
        "adaptive_avg_pool2d": lambda input, output_size: ("adaptive_avg_pool2d", "default", (input, output_size), {}),
        "layer_norm": lambda input, normalized_shape, weight=None, bias=None, eps=1e-5:
            ("layer_norm", "default", (input, list(normalized_shape), weight, bias, eps), {}),
        "dropout": _dropout,
        "softmax": _softmax("softmax"),
        "log_softmax": _softmax("log_softmax"),
        "add": _binary("add"), "__add__": _binary("add"), "iadd": _binary("add"),
        "sub": _binary("sub", reverse="rsub"), "mul": _binary("mul"), "imul": _binary("mul"),
        "truediv": _binary("div", reverse="reciprocal"), "div": _binary("div", reverse="reciprocal"),
        "getattr": _attribute,
        "pow": lambda input, exponent: ("pow", "Tensor_Scalar", (input, exponent), {}),
        "matmul": lambda input, other: ("matmul", "default", (input, other), {}),
        "mm": lambda input, mat2: ("mm", "default", (input, mat2), {}),
        "bmm": lambda input, mat2: ("bmm", "default", (input, mat2), {}),
        "transpose": lambda input, dim0, dim1: ("transpose", "int", (input, dim0, dim1), {}),
        "permute": lambda input, *dims: ("permute", "default", (input, _sizes(dims)), {}),
        "view": lambda input, *size: ("view", "default", (input, _sizes(size)), {}),
        "reshape": lambda input, *shape: ("reshape", "default", (input, _sizes(shape)), {}),
        "expand": lambda input, *size: ("expand", "default", (input, _sizes(size)), {}),
        "flatten": lambda input, start_dim=0, end_dim=-1:
            ("flatten", "using_ints", (input, start_dim, end_dim), {}),
        "unsqueeze": lambda input, dim: ("unsqueeze", "default", (input, dim), {}),
        "squeeze": lambda input, dim: ("squeeze", "dim", (input, dim), {}),
        "contiguous": lambda input, memory_format=None: ("contiguous", "default", (input,), {}),
        "cat": lambda tensors, dim=0: ("cat", "default", (list(tensors), dim), {}),
        "stack": lambda tensors, dim=0: ("stack", "default", (list(tensors), dim), {}),
        "chunk": lambda input, chunks, dim=0: ("chunk", "default", (input, chunks, dim), {}),
        "split": _split,
        "sum": _reduction("sum"),
        "mean": _reduction("mean"),
        "getitem": _getitem,
        "max": _extremum("max"),
        "min": _extremum("min"),
        "argmax": lambda input, dim=None, keepdim=False: ("argmax", "default", (input, dim, keepdim), {}),
        "argmin": lambda input, dim=None, keepdim=False: ("argmin", "default", (input, dim, keepdim), {}),
    })
    for name in ("relu", "sigmoid", "tanh", "add", "sub", "mul", "div"):
        # in place: _tracer.py records the in-place twin
        table[name + "_"] = table[name]          # in-place spellings on a fresh value
    return table


def lower(name, args, kwargs):
    """(aten name, overload, args, kwargs) for the torch-level call `name` (its qualified name,
    `torch.nn.functional.batch_norm`, or its last part), or None."""
    lowering = _table().get(name) or _table().get(name.rpartition(".")[2])
    if lowering is None:
        return None
    return lowering(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def _module_forwards():
    from .. import nn
    from ..nn import functional as F

    def conv(fn):
        def forward(m, x):
            if m.padding_mode != "zeros" or isinstance(m.padding, str):
                raise NotImplementedError(f"torch.export in tapegrad records {type(m).__name__} with "
                                          "padding_mode='zeros' and numeric padding only")
            return fn(x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)
        return forward

    def batch_norm(m, x):
        # PyTorch's _BatchNorm.forward: in training the batch count and the running stats are
        # updated in place (the graph mutates the buffers, as PyTorch's does)
        training = m.training or m.running_mean is None
        if m.training and m.track_running_stats:
            if m.momentum is None:
                raise NotImplementedError("torch.export in tapegrad records BatchNorm with "
                                          "momentum=None (a cumulative average) in eval mode only")
            m.num_batches_tracked.add_(1)
        stats = (m.running_mean, m.running_var) if not m.training or m.track_running_stats else (None, None)
        return F.batch_norm(x, *stats, m.weight, m.bias, training,
                            m.momentum if m.momentum is not None else 0.0, m.eps)

    return {
        nn.Linear: lambda m, x: F.linear(x, m.weight, m.bias),
        nn.Conv1d: conv(F.conv1d),
        nn.Conv2d: conv(F.conv2d),
        nn.BatchNorm1d: batch_norm,
        nn.BatchNorm2d: batch_norm,
        nn.LayerNorm: lambda m, x: F.layer_norm(x, m.normalized_shape, m.weight, m.bias, m.eps),
        nn.ReLU: lambda m, x: F.relu(x, inplace=m.inplace),
        nn.Sigmoid: lambda m, x: x.sigmoid(),
        nn.Tanh: lambda m, x: x.tanh(),
        nn.GELU: lambda m, x: F.gelu(x, approximate=m.approximate),
        nn.SiLU: lambda m, x: F.silu(x),
        nn.Softmax: lambda m, x: F.softmax(x, m.dim),
        nn.LogSoftmax: lambda m, x: F.log_softmax(x, m.dim),
        nn.Dropout: lambda m, x: F.dropout(x, m.p, m.training, m.inplace),
        nn.Flatten: lambda m, x: x.flatten(m.start_dim, m.end_dim),
        nn.Identity: lambda m, x: x,
        nn.Embedding: lambda m, x: F.embedding(x, m.weight, m.padding_idx, m.max_norm, m.norm_type,
                                               m.scale_grad_by_freq, m.sparse),
        nn.MaxPool2d: lambda m, x: F.max_pool2d(x, m.kernel_size, m.stride, m.padding, m.dilation,
                                                 m.ceil_mode),
        nn.AvgPool2d: lambda m, x: F.avg_pool2d(x, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                                                 m.count_include_pad, m.divisor_override),
        nn.AdaptiveAvgPool2d: lambda m, x: F.adaptive_avg_pool2d(x, m.output_size),
    }


def module_forward(module):
    """The forward export records for a tapegrad.nn module (None: trace into its own forward)."""
    return _module_forwards().get(type(module))
