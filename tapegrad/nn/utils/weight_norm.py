"""Weight normalization, the hook-based form (``torch.nn.utils.weight_norm``): the parameter
``name`` is replaced by ``name_g`` (magnitude) and ``name_v`` (direction), and a forward pre-hook
recomputes ``name = g * v / ||v||`` before every call.  PyTorch deprecates it in favour of
``nn.utils.parametrizations.weight_norm``; both are here, and both compute with
``_weight_norm``."""
from __future__ import annotations as _annotations

import warnings

import tapegrad as _tg
from ..._extra_functions import _torch_grad_fn_name
from ..._scatter_functions import _sum_to
from ...autograd.function import Function
from ...tensor import Tensor
from ..parameter import Parameter, UninitializedParameter
from ._pre_hooks import remove_pre_hook
from ..._torch_names import object_repr as _object_repr

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNormInterface(Function):
    """w = v * g / n with n = ||v|| over every dimension but ``dim`` (all when ``dim == -1``),
    as one node, so its grad_fn is PyTorch's WeightNormInterfaceBackward0.  Backward (recorded
    ops, so create_graph works), with s = sum of grad * v over the same dimensions:
    dg = s / n and dv = (g / n) grad - (g s / n^3) v."""

    @staticmethod
    def forward(ctx, v, g, dim):
        ctx.dim = dim
        ctx.save_for_backward(v, g)
        return v * (g / _tg.norm_except_dim(v, 2, dim))

    @staticmethod
    def backward(ctx, grad):
        v, g = ctx.saved_tensors
        # The norm is recomputed here (recorded) so that a create_graph backward sees it depend
        # on v.
        n = _tg.norm_except_dim(v, 2, ctx.dim)
        s = _sum_to(grad * v, n.shape)
        grad_v = (g / n) * grad - (g * s / n ** 3) * v if ctx.needs_input_grad[0] else None
        grad_g = _sum_to(s / n, g.shape) if ctx.needs_input_grad[1] else None
        return grad_v, grad_g, None


_torch_grad_fn_name(WeightNormInterface, "WeightNormInterfaceBackward0")


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``v * (g / ||v||)``, the norm taken over every dimension but ``dim`` (over all of them
    when ``dim == -1``), as PyTorch's ``torch._weight_norm``; differentiable in ``v`` and ``g``.
    PyTorch fuses only a first or last ``dim`` into one WeightNormInterfaceBackward0 node; the
    whole-tensor norm (-1) and a middle dim are recorded op by op (grad_fn MulBackward0)."""
    if dim == 0 or dim == v.dim() - 1:
        return WeightNormInterface.apply(v, g, dim)
    return v * (g / _tg.norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"),
                            self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(_tg.norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Split the parameter ``name`` of ``module`` into ``name_g`` (its norm over every dimension
    but ``dim``; over all of them when ``dim=None``) and ``name_v`` (its direction); a forward
    pre-hook recomputes ``name`` from them before each call.  Deprecated by PyTorch (a
    ``FutureWarning``) in favour of ``nn.utils.parametrizations.weight_norm``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     m = tapegrad.nn.utils.weight_norm(tapegrad.nn.Linear(20, 40), name="weight")
    >>> m.weight_g.size(), m.weight_v.size()
    (torch.Size([40, 1]), torch.Size([40, 20]))
    """
    # PyTorch raises this from inside its own weight_norm.py, not at the caller's line, so under
    # the default filter a model building many weight-normed layers prints it once per process.
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=1)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undo ``weight_norm``: ``name`` becomes one parameter again, holding the current value."""
    if not remove_pre_hook(module, lambda h: isinstance(h, WeightNorm) and h.name == name):
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    return module
