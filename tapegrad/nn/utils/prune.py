"""torch.nn.utils.prune: zero out entries (or whole channels) of a parameter through a mask.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, stores the mask as the buffer
``<name>_mask`` and keeps ``module.<name> = <name>_mask * <name>_orig`` as a plain attribute,
recomputed by a forward pre-hook (the pruning method object itself) before every call; the
gradient reaches ``<name>_orig`` through the product, so pruned entries get zero gradient.
Pruning the same tensor again combines the masks in a ``PruningContainer``: the new method only
acts on what the earlier ones left.  ``remove`` makes the pruning permanent.
"""
from __future__ import annotations as _annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import tapegrad as _tg
from ...tensor import Tensor
from ._pre_hooks import remove_pre_hook
from .convert_parameters import parameters_to_vector
from ..._torch_names import object_repr as _object_repr

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of choosing a mask.  Subclasses set ``PRUNING_TYPE`` ("unstructured",
    "structured" with a ``dim`` attribute, or "global") and define ``compute_mask(t,
    default_mask)``, returning a mask that keeps the zeros of ``default_mask``."""
    __repr__ = _object_repr  # Python's default repr, under PyTorch's module path

    _tensor_name: str

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as ``t``) to apply, given the mask already in place."""

    def apply_mask(self, module) -> Tensor:
        """``<name>_mask * <name>_orig``: the pruned tensor, differentiable in the original."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, on top of any pruning already
        there; ``importance_scores`` (same shape) rank the entries instead of the values."""
        method = _compose_with_existing(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter "
                                     f"{name} of {module}, got {importance_scores.shape} vs "
                                     f"{orig.shape}")
        else:
            importance_scores = orig
        first_pruning = not isinstance(method, PruningContainer)
        if first_pruning:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _tg.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_pruning:                    # leave the module as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None) -> Tensor:
        """``t`` times this method's mask (computed from ``importance_scores`` if given)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        if default_mask is None:
            default_mask = _tg.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter again holding the pruned
        values (the same Parameter object as ``<name>_orig``), mask and original are dropped."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _compose_with_existing(cls, module, name, *args, **kwargs) -> BasePruningMethod:
    """The new method, or (when ``name`` is already pruned) the container holding the old
    method(s) and the new one; the old hook is taken off the module."""
    hooks = module._forward_pre_hooks
    existing = [(k, h) for k, h in hooks.items()
                if isinstance(h, BasePruningMethod) and h._tensor_name == name]
    if len(existing) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    for key, _ in existing:
        del hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not existing:
        return method
    old = existing[0][1]
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor: the last one acts on the entries (or
    channels) the mask still keeps."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask, computed on the part of ``t`` that ``default_mask`` keeps:
        the surviving entries (unstructured), the channels along ``dim`` with a surviving entry
        (structured), or everything (global)."""
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            kept = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     "the attribute `dim` defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            live_channels = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            kept = tuple(live_channels if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            kept = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        new_mask = default_mask.to(dtype=t.dtype)
        partial = method.compute_mask(t[kept], default_mask=default_mask[kept])
        new_mask[kept] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: sets up the ``_orig``/``_mask`` pair with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _PruneEntries(BasePruningMethod):
    """Unstructured pruning of ``amount`` entries (a fraction in [0, 1], or a count): the
    subclass says which (``_chosen``)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _chosen(self, t, n_prune: int) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        n_prune = _count_to_prune(self.amount, t.nelement())
        mask = default_mask.clone()
        if n_prune != 0:
            mask.view(-1)[self._chosen(t, n_prune)] = 0
        return mask


class RandomUnstructured(_PruneEntries):
    """Prunes ``amount`` entries (a fraction in [0, 1], or a count) chosen at random."""

    def _chosen(self, t, n_prune: int) -> Tensor:
        return _tg.topk(_tg.rand_like(t).view(-1), k=n_prune).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_PruneEntries):
    """Prunes the ``amount`` entries (fraction or count) of smallest absolute value."""

    def _chosen(self, t, n_prune: int) -> Tensor:
        return _tg.topk(_tg.abs(t).view(-1), k=n_prune, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _PruneChannels(BasePruningMethod):
    """Structured pruning of ``amount`` whole channels along ``dim``: the subclass says which
    channels stay (``_kept``: indices or a boolean mask over the channels)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _kept(self, t, n_channels: int, n_prune: int):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        n_channels = t.shape[self.dim]
        n_prune = _count_to_prune(self.amount, n_channels)
        if n_prune == 0:
            return default_mask
        dim = self.dim % t.dim()
        mask = _tg.zeros_like(t)
        mask[tuple(self._kept(t, n_channels, n_prune) if d == dim else slice(None)
                   for d in range(t.dim()))] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_PruneChannels):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    def _kept(self, t, n_channels: int, n_prune: int):
        prob = _tg.rand(n_channels)
        return prob > _tg.kthvalue(prob, k=n_prune).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_PruneChannels):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm (``n`` as in
    ``torch.norm``'s ``p``: an int, ``float('inf')``, ``'fro'`` ...)."""

    def __init__(self, amount, n, dim=-1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _kept(self, t, n_channels: int, n_prune: int):
        dim = self.dim % t.dim()
        norms = _tg.norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        return _tg.topk(norms, k=n_channels - n_prune, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Set up ``module.<name>`` for pruning without pruning anything (mask of ones)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (fraction or count) random entries of ``module.<name>``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` (fraction or count) entries of ``module.<name>`` of smallest absolute
    value (or smallest ``importance_scores``).

    Examples
    --------
    >>> m = tapegrad.nn.utils.prune.l1_unstructured(tapegrad.nn.Linear(4, 2), name="weight", amount=0.5)
    >>> [n for n, _ in m.named_buffers()]
    ['weight_mask']
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method`` (an
    unstructured method class, built with ``kwargs``) chooses among all their entries at once,
    so each tensor loses a different share."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    current_masks = parameters_to_vector([getattr(module, name + "_mask",
                                                  _tg.ones_like(getattr(module, name)))
                                          for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, current_masks)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` where ``mask`` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent (see ``BasePruningMethod.remove``)."""
    if remove_pre_hook(module,
                       lambda h: isinstance(h, BasePruningMethod) and h._tensor_name == name):
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can "
                     "be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or any submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if ((isinstance(amount, numbers.Integral) and amount < 0)
            or (not isinstance(amount, numbers.Integral)
                and (float(amount) > 1.0 or float(amount) < 0.0))):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _count_to_prune(amount, size: int) -> int:
    """How many of ``size`` entries/channels ``amount`` (a count or a fraction) prunes."""
    _validate_pruning_amount(amount, size)
    return _compute_nparams_toprune(amount, size)


# The two halves under PyTorch's private names (its own tests call them).
def _validate_pruning_amount(amount, tensor_size: int) -> None:
    """A count of units to prune may not exceed ``tensor_size`` (a fraction always fits)."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    """``amount`` as a number of units: a count as it is, a fraction of ``tensor_size`` rounded."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_structured_pruning(t) -> None:
    if len(t.shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {len(t.shape)} dims")


def _validate_pruning_dim(t, dim) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
