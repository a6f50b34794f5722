"""The `*_copy` functions PyTorch has at top level (view_copy, permute_copy, ..., unbind_copy):
each is its view op followed by a contiguous copy, so one generic definition serves them all.
The gradient is the view's gradient (the copy passes it through); a tuple-returning view
(unbind, split) gives a tuple of copies.  `out=` writes through the shared out-argument path.
"""
from __future__ import annotations as _annotations

from . import _core
from ._out_arg import compute_then_write


def _slice(input, dim=0, start=None, end=None, step=1):
    """Tensor.slice's view: input[..., start:end:step, ...] along dim."""
    index = [slice(None)] * input.dim()
    index[dim] = slice(start, end, step)
    return input[tuple(index)]


# name -> the view it copies, as a function of (input, *args, **kwargs)
_VIEWS = {
    "view_copy": lambda input, *a, **k: _view_or_reshape(input, *a, **k),
    "permute_copy": lambda input, *a, **k: input.permute(*a, **k),
    "transpose_copy": lambda input, *a, **k: input.transpose(*a, **k),
    "t_copy": lambda input, *a, **k: input.t(*a, **k),
    "expand_copy": lambda input, *a, **k: input.expand(*a, **k),
    "squeeze_copy": lambda input, *a, **k: input.squeeze(*a, **k),
    "unsqueeze_copy": lambda input, *a, **k: input.unsqueeze(*a, **k),
    "select_copy": lambda input, *a, **k: input.select(*a, **k),
    "slice_copy": _slice,
    "diagonal_copy": lambda input, *a, **k: input.diagonal(*a, **k),
    "detach_copy": lambda input: _detached(input),
    "alias_copy": lambda input: input.view(tuple(input.shape)),
    "unbind_copy": lambda input, *a, **k: input.unbind(*a, **k),
    "split_copy": lambda input, *a, **k: input.split(*a, **k),
    "split_with_sizes_copy": lambda input, *a, **k: input.split_with_sizes(*a, **k),
    "unfold_copy": lambda input, *a, **k: input.unfold(*a, **k),
    "as_strided_copy": lambda input, *a, **k: input.as_strided(*a, **k),
    "view_as_real_copy": lambda input: _view_as("view_as_real", input),
    "view_as_complex_copy": lambda input: _view_as("view_as_complex", input),
}


_VIEW_COPY_SIGNATURES = ("\n * (Tensor input, torch.dtype dtype, *, Tensor out = None)"
                         "\n * (Tensor input, tuple of ints size, *, Tensor out = None)\n")


def _view_or_reshape(input, *args, **kwargs):
    """view_copy's view: a dtype is reinterpreted as Tensor.view does, but a size is PyTorch's
    reshape (its view_copy kernel falls back to reshape when the strides admit no view, so a
    transposed input flattens where Tensor.view raises).  One argument, as PyTorch's two
    overloads take."""
    given = list(args) + list(kwargs.values())
    if len(given) != 1 or not set(kwargs) <= {"size", "dtype"}:
        from .tensor import invalid_arguments
        raise invalid_arguments("view_copy", (input,) + args, kwargs, _VIEW_COPY_SIGNATURES)
    if isinstance(given[0], _core.dtype):
        return input.view(given[0])
    return input.reshape(given[0])


def _detached(input):
    # PyTorch has no derivative formula for detach_copy: its result requires grad when input
    # does, and differentiating it raises (a plain detach would silently give no gradient)
    from ._more_math import without_derivative
    return without_derivative((input,), input.detach()._array,
                              "derivative for aten::detach_copy is not implemented", RuntimeError)


def _view_as(name, input):
    import tapegrad
    if name == "view_as_complex" and input.requires_grad and _core.is_grad_enabled():
        # (PyTorch's copy variant has no complex-output derivative, unlike the view)
        raise RuntimeError("view_as_complex_copy does not support automatic differentiation "
                           "for outputs with complex dtype.")
    return getattr(tapegrad, name)(input)


def _copy(t, node_name):
    from ._memory_format import contiguous_format
    return _core._name_grad_fn(t.clone(memory_format=contiguous_format), node_name)


def _node_name(name: str) -> str:
    """The grad_fn PyTorch names a copy variant's output: its view's node with `_copy` added
    (permute_copy: PermuteBackward0_copy, view_as_real_copy: ViewAsRealBackward0_copy)."""
    view = name[:-len("_copy")]
    return "".join(part.capitalize() for part in view.split("_")) + "Backward0_copy"


def _make(name: str, view):
    # (detach_copy has no derivative: PyTorch's node for it is its NotImplemented one)
    node_name = ("torch::autograd::NotImplemented" if name == "detach_copy"
                 else _node_name(name))

    def copy_variant(input, *args, out=None, **kwargs):
        if not isinstance(input, _core.TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")

        def compute():
            result = view(input, *args, **kwargs)
            if isinstance(result, (tuple, list)):
                return tuple(_copy(r, node_name) for r in result)
            return _copy(result, node_name)
        if out is not None:
            return compute_then_write(name, out, (input,), compute)
        return compute()
    copy_variant.__name__ = copy_variant.__qualname__ = name
    copy_variant.__doc__ = f"{name[:-5]} of input, copied into a new contiguous tensor."
    return copy_variant


def register(namespace: dict) -> None:
    """Add the `*_copy` functions to `namespace` (existing names win)."""
    for name, view in _VIEWS.items():
        namespace.setdefault(name, _make(name, view))
