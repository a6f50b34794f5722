"""torch.nn.utils.parametrize: replace a parameter or buffer of a module by a function of other
tensors, recomputed (or cached) on every access.

How it works, as in PyTorch: the first parametrization of a module swaps the module's class for a
subclass ``Parametrized<Class>`` that carries one property per parametrized name; the property
calls ``module.parametrizations[name]`` (a ``ParametrizationList``), which holds the unparametrized
tensor(s) under ``original`` (or ``original0``, ``original1``, ... when the first
parametrization's ``right_inverse`` returns several) and runs the chain of parametrizations on
them.  Assigning to the property runs the chain's ``right_inverse`` backwards into the originals.
Removing the last parametrization restores the original class.
"""
from __future__ import annotations as _annotations

import collections.abc
import contextlib
import copy
import copyreg
import weakref

from ...grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

# Parametrized values computed inside a `cached()` block, by (id(module), tensor name):
# (weak reference to the module, value).
_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside this context each parametrized tensor is computed once, on first access, and the
    same tensor is returned on later accesses (useful when a weight is read several times in a
    forward pass, as in a recurrent layer).  Blocks nest; the cache empties when the outermost
    one exits."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _overwrite(dest: Tensor, src: Tensor) -> None:
    """Make `dest` hold `src`'s values and shape, keeping `dest` the same object (PyTorch's
    ``dest.set_(src)``): optimizers and hooks holding `dest` keep seeing the live tensor."""
    dest.data = src.detach()


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, and the unparametrized tensor(s) it is computed
    from: ``module.parametrizations[tensor_name]``.  Made by ``register_parametrization``; not meant
    to be built by hand."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        # The chain's right inverses, last parametrization first, give the stored tensor(s).
        with no_grad():
            new = original
            for parametrization in reversed(list(self)):
                if hasattr(parametrization, "right_inverse"):
                    try:
                        new = parametrization.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                                 f"dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            with no_grad():
                _overwrite(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the sequence "
                                     f"with type {type(part).__name__}.")
                # Each stored part is a parameter exactly when the original was one.
                part = part.detach()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(value).__name__}.")
            if value.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the "
                                 "tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {value.dtype}")
            if value.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the "
                                 "tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {value.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Store in the original tensor(s) what makes the chain produce ``value``: each
        parametrization's ``right_inverse``, last registered first."""
        with no_grad():
            for parametrization in reversed(self._chain()):
                if not hasattr(parametrization, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(parametrization).__name__} does "
                                       "not implement right_inverse.")
                value = parametrization.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError("`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                self._store("original", value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, part in enumerate(value):
                stored = getattr(self, f"original{i}")
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                     f"element {i} of type {type(part).__name__}.")
                if stored.dtype != part.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{part.dtype} while `original{i}` has dtype {stored.dtype}")
                self._store(f"original{i}", part)

    def _store(self, name: str, value: Tensor) -> None:
        """Write ``value`` into the original tensor ``name``: in place, or, when that tensor is
        itself parametrized (its value computed), through its own right_inverse - writing into
        the computed value would be lost."""
        if is_parametrized(self, name):
            setattr(self, name, value)
        else:
            _overwrite(getattr(self, name), value)

    def _chain(self) -> list:
        """The parametrizations, in order: the children under integer keys (a parametrization
        registered on this list's own original tensor adds a `parametrizations` child)."""
        chain = []
        while str(len(chain)) in self._modules:
            chain.append(self._modules[str(len(chain))])
        return chain

    def forward(self) -> Tensor:
        chain = self._chain()
        if self.is_tensor:
            value = chain[0](self.original)
        else:
            value = chain[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for parametrization in chain[1:]:
            value = parametrization(value)
        return value


def _copy_parametrized(self, memo):
    # A parametrized module deep-copies attribute by attribute (its class is made at run time,
    # so the default pickling route is closed; see _refuse_pickling).
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(type(self)):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _make_parametrized_class(module: Module) -> None:
    cls = type(module)
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _copy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _add_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        chain = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return chain()
        key = (id(self), tensor_name)
        entry = _cache.get(key)
        # (PyTorch keys by id alone, so a module made after another one died inside the block,
        # at the same address, would read the dead module's value: a weak reference tells them
        # apart)
        if entry is not None and entry[0]() is self:
            return entry[1]
        value = chain()
        _cache[key] = (weakref.ref(self), value)
        return value

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def _check_same_kind(got, expected: Tensor, tensor_name: str, what: str, returned: str) -> None:
    # The messages PyTorch gives when a parametrization added on top of another would change
    # the tensor's dtype or shape.
    if not isinstance(got, Tensor):
        if what == "parametrization":
            raise ValueError(f"A parametrization must return a tensor. Got {type(got).__name__}.")
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(got).__name__}")
    for attr in ("dtype", "shape"):
        if getattr(got, attr) != getattr(expected, attr):
            if what == "parametrization":
                raise ValueError(f"Registering a parametrization may not change the {attr} of "
                                 "the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.{attr}: {getattr(expected, attr)}\n"
                                 f"parametrization(module.{tensor_name}).{attr}: "
                                 f"{getattr(got, attr)}")
            raise ValueError(f"The tensor returned by parametrization.right_inverse must have "
                             f"the same {attr} as module.{tensor_name}, unless the `unsafe` flag "
                             f"is enabled.\nmodule.{tensor_name}.{attr}: "
                             f"{getattr(expected, attr)}\n{returned} {attr}: "
                             f"{getattr(got, attr)}")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to a stored tensor.

    The first parametrization of a name moves the parameter or buffer to
    ``module.parametrizations[tensor_name].original`` (or ``original0``, ``original1``, ...
    when ``parametrization.right_inverse`` returns several tensors, which then are the inputs of
    ``parametrization.forward``); later ones are applied on top, in registration order.
    If ``parametrization`` has a ``right_inverse``, the original is initialised with it and
    assigning to ``module.<tensor_name>`` calls it.  Unless ``unsafe=True``, a parametrization
    may not change the tensor's dtype or shape (``ValueError``).

    Examples
    --------
    >>> class Symmetric(tapegrad.nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).transpose(-1, -2)
    >>> m = tapegrad.nn.Linear(3, 3)
    >>> _ = tapegrad.nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
    >>> bool((m.weight == m.weight.T).all())
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            produced = parametrization(current)
            _check_same_kind(produced, current, tensor_name, "parametrization", "")
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverted = parametrization.right_inverse(produced)
                except NotImplementedError:
                    pass
                else:
                    _check_same_kind(inverted, current, tensor_name, "right_inverse", "returned")
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _make_parametrized_class(module)
            module.parametrizations = ModuleDict()
        _add_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on anything, when None)."""
    chains = getattr(module, "parametrizations", None)
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations of ``tensor_name``: it becomes a parameter (or buffer) again,
    holding the current parametrized value (``leave_parametrized=True``) or the stored original
    (``False``; only possible when the original is one tensor).  The module's class is restored
    when no parametrization is left."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                _overwrite(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered."""
    if is_parametrized(module):
        return type(module).__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give ``to_module`` the parametrizations of ``from_module`` (all, or those of
    ``tensor_name``) and their original tensors themselves (shared, not copied), registering
    parameters that ``to_module`` lacks."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        stored = (["original"] if source.is_tensor
                  else [f"original{i}" for i in range(source.ntensors)])
        # The two modules then share the original tensors (the same objects, as PyTorch's): a
        # step on one is seen by the other.
        for attr in stored:
            setattr(target, attr, getattr(source, attr))
    return to_module
