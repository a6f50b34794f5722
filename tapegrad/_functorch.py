"""The `functorch` package of the PyTorch wheel, for tapegrad: deprecated aliases of tapegrad.func
and functorch's own functional-module API.

PyTorch ships `functorch` as a second top-level package in the torch wheel (since 2.0 a thin
layer: each transform warns that it is deprecated and calls torch.func).  A script that swaps
torch for tapegrad swaps that package too: the corpus hook (tools/corpus_hook/sitecustomize.py)
maps `import functorch` to this module, as it maps `torch` to `tapegrad`.  It is private to
tapegrad (`tapegrad._functorch`, as PyTorch's implementation lives in `torch._functorch`): there
is no `torch.functorch`.

make_functional / make_functional_with_buffers return a callable module that runs the original
module with the parameters (and buffers) it is given, through ``func.functional_call``; PyTorch
keeps a stateless deep copy of the module, this one keeps the module itself (whose own tensors
functional_call restores after each call), so later changes to the module's structure show.
"""
from __future__ import annotations as _annotations

import functools
import warnings

from . import func as _func
from .nn import Module as _Module

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functionalize", "make_functional", "make_functional_with_buffers",
           "combine_state_for_ensemble", "FunctionalModule", "FunctionalModuleWithBuffers"]


def _warn_deprecated(name: str, replacement: str) -> None:
    warnings.warn(f"We've integrated functorch into PyTorch. As the final step of the "
                  f"integration, `functorch.{name}` is deprecated as of PyTorch 2.0 and will be "
                  f"deleted in a future version of PyTorch >= 2.3. Please use `{replacement}` "
                  f"instead; see the PyTorch 2.0 release notes and/or the `torch.func` migration "
                  f"guide for more details https://pytorch.org/docs/main/func.migrating.html",
                  FutureWarning, stacklevel=3)


def _alias(name: str, replacement: str | None = None):
    """``replacement``: the name PyTorch's warning points to (torch.func.<name> unless given)."""
    target = getattr(_func, name)
    replacement = replacement or f"torch.func.{name}"

    @functools.wraps(target)
    def deprecated(*args, **kwargs):
        _warn_deprecated(name, replacement)
        return target(*args, **kwargs)
    return deprecated


grad = _alias("grad")
grad_and_value = _alias("grad_and_value")
vjp = _alias("vjp")
jvp = _alias("jvp")
jacrev = _alias("jacrev")
jacfwd = _alias("jacfwd")
hessian = _alias("hessian")
# vmap is also top-level torch.vmap, and PyTorch's warning names that spelling.
vmap = _alias("vmap", "torch.vmap")


def functionalize(func, *, remove="mutations"):
    """``func`` itself: tapegrad runs mutations eagerly on real storage, so the functionalized
    function (same results, no in-place ops in its trace) computes the same values."""
    _warn_deprecated("functionalize", "torch.func.functionalize")
    return func


class FunctionalModule(_Module):
    """``func(params, *args, **kwargs)``: the module run with ``params`` (in
    ``named_parameters`` order) in place of its parameters."""

    def __init__(self, module, param_names):
        super().__init__()
        self.stateless_model = module
        self.param_names = tuple(param_names)

    def forward(self, params, *args, **kwargs):
        return _func.functional_call(self.stateless_model, dict(zip(self.param_names, params)),
                                     args, kwargs)


class FunctionalModuleWithBuffers(_Module):
    """``func(params, buffers, *args, **kwargs)``: the module run with ``params`` and
    ``buffers`` (in ``named_parameters`` / ``named_buffers`` order) in place of its own."""

    def __init__(self, module, param_names, buffer_names):
        super().__init__()
        self.stateless_model = module
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    def forward(self, params, buffers, *args, **kwargs):
        state = dict(zip(self.param_names, params))
        state.update(zip(self.buffer_names, buffers))
        return _func.functional_call(self.stateless_model, state, args, kwargs)


def _state(model, disable_autograd_tracking):
    names, params = zip(*model.named_parameters()) if any(True for _ in model.parameters()) \
        else ((), ())
    if disable_autograd_tracking:
        params = tuple(p.detach() for p in params)
    return names, tuple(params)


def make_functional(model, disable_autograd_tracking=False):
    """``(func, params)``: ``func(params, *args)`` runs ``model`` with ``params``."""
    _warn_deprecated("make_functional", "torch.func.functional_call")
    if any(True for _ in model.buffers()):
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    names, params = _state(model, disable_autograd_tracking)
    return FunctionalModule(model, names), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """``(func, params, buffers)``: ``func(params, buffers, *args)`` runs ``model`` with
    them."""
    _warn_deprecated("make_functional_with_buffers", "torch.func.functional_call")
    names, params = _state(model, disable_autograd_tracking)
    named_buffers = list(model.named_buffers())
    buffer_names = tuple(n for n, _ in named_buffers)
    buffers = tuple(b for _, b in named_buffers)
    return FunctionalModuleWithBuffers(model, names, buffer_names), params, buffers


def combine_state_for_ensemble(models):
    """``(func, params, buffers)`` for an ensemble of same-structured models: each parameter
    and buffer stacked over the models (dim 0), for ``vmap(func)(params, buffers, x)``."""
    _warn_deprecated("combine_state_for_ensemble", "torch.func.stack_module_state")
    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same "
                           "training/eval mode.")
    first = type(models[0])
    if any(type(m) is not first for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same "
                           "class.")
    from . import stack
    fmodel = FunctionalModuleWithBuffers(models[0], [n for n, _ in models[0].named_parameters()],
                                         [n for n, _ in models[0].named_buffers()])
    params = tuple(stack([p.detach() for p in group]) for group in
                   zip(*(tuple(m.parameters()) for m in models)))
    params = tuple(p.requires_grad_() for p in params)
    buffers = tuple(stack(list(group)) for group in zip(*(tuple(m.buffers()) for m in models)))
    return fmodel, params, buffers
