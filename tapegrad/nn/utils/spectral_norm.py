"""Spectral normalization, the hook-based form (``torch.nn.utils.spectral_norm``): the parameter
``name`` moves to ``name_orig``, buffers ``name_u``/``name_v`` hold the power method's singular
vector estimates, and a forward pre-hook sets ``name = name_orig / sigma`` before each call (one
more power iteration first, in training mode)."""
from __future__ import annotations as _annotations

import tapegrad as _tg
from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, UninitializedParameter
from ._pre_hooks import remove_pre_hook
from ..._torch_names import object_repr as _object_repr

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def check_power_iterations(n_power_iterations: int) -> None:
    if n_power_iterations <= 0:
        raise ValueError("Expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")


def weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix whose rows run along ``dim`` (the output dimension)."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape(weight.size(0), -1)


def power_step(matrix: Tensor, left: Tensor, right: Tensor, eps: float, left_first: bool) -> None:
    """One power-method iteration, updating the unit vectors ``left`` (rows) and ``right``
    (columns) in place.  The two spectral norms update in opposite orders, as PyTorch's do."""
    with no_grad():
        if left_first:
            left.copy_(F.normalize(_tg.mv(matrix, right), dim=0, eps=eps))
            right.copy_(F.normalize(_tg.mv(matrix.t(), left), dim=0, eps=eps))
        else:
            right.copy_(F.normalize(_tg.mv(matrix.t(), left), dim=0, eps=eps))
            left.copy_(F.normalize(_tg.mv(matrix, right), dim=0, eps=eps))


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig``."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        check_power_iterations(n_power_iterations)
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            for _ in range(self.n_power_iterations):
                power_step(matrix, u, v, self.eps, left_first=False)
            # The buffers change at the next iteration; the graph keeps these values.
            u, v = u.clone(), v.clone()
        sigma = _tg.dot(u, _tg.mv(matrix, v))
        return weight / sigma

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(_RecordVersion(fn))
        return fn


class _RecordVersion:
    """State-dict hook: records the layout version under metadata['spectral_norm'], as PyTorch's
    dicts carry it."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def _is_conv_transpose(module) -> bool:
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None):
    """Divide the parameter ``name`` by its largest singular value before every call (the weight
    reshaped to a matrix with rows along ``dim``: 0, or 1 for ConvTranspose layers), estimated by
    ``n_power_iterations`` of the power method per training-mode call.

    Examples
    --------
    >>> m = tapegrad.nn.utils.spectral_norm(tapegrad.nn.Linear(20, 40))
    >>> m.weight_u.size()
    torch.Size([40])
    """
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undo ``spectral_norm``: ``name`` becomes one parameter holding the normalized value."""
    if not remove_pre_hook(module, lambda h: isinstance(h, SpectralNorm) and h.name == name):
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    state_hooks = module.__dict__.get("_state_dict_hooks") or {}
    for key, hook in list(state_hooks.items()):
        if isinstance(hook, _RecordVersion) and hook.fn.name == name:
            del state_hooks[key]
    return module
