"""nn.Module: parameters, buffers and submodules registered by attribute assignment."""
from __future__ import annotations as _annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator, TypeVar

import warnings

import numpy as np

from ... import _core, _step_phases
from ..._device import as_device, check_device, is_device_like
from ...grad_mode import no_grad
from ..._more_creation import typename
from ...tensor import Tensor, as_dtype, parse_to
from ..parameter import _UNINITIALIZED_MESSAGE, Buffer, Parameter, is_lazy
from . import _hooks
from ._hooks import (RemovableHandle, add_hook, call_with_hooks,  # noqa: F401 (PyTorch's names)
                     _global_backward_hooks, _global_backward_pre_hooks, _global_forward_hooks,
                     _global_forward_hooks_always_called, _global_forward_hooks_with_kwargs,
                     _global_forward_pre_hooks, register_module_backward_hook,
                     register_module_forward_hook, register_module_forward_pre_hook,
                     register_module_full_backward_hook, register_module_full_backward_pre_hook,
                     register_module_buffer_registration_hook,
                     register_module_module_registration_hook,
                     register_module_parameter_registration_hook)
from ._hooks import (_global_buffer_registration_hooks, _global_module_registration_hooks,
                     _global_parameter_registration_hooks, registered_value)

# The type a self-returning method (train, to, apply, ...) hands back: the caller's own subclass.
# PyTorch's module defines it too, and editors' auto-imports bring it into scripts.
T = TypeVar("T", bound="Module")


# A module's own attributes in the order PyTorch's __init__ creates them, so that vars(module) and
# module.__dict__ print as PyTorch's do: the backward hook tables and the backward-hook kind
# first, then the forward and state-dict tables, the child modules last.
_BACKWARD_HOOK_TABLES = ("_backward_pre_hooks", "_backward_hooks")
_LATER_HOOK_TABLES = ("_forward_hooks", "_forward_hooks_with_kwargs",
                      "_forward_hooks_always_called", "_forward_pre_hooks",
                      "_forward_pre_hooks_with_kwargs", "_state_dict_hooks",
                      "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                      "_load_state_dict_post_hooks")
_HOOK_TABLES = _BACKWARD_HOOK_TABLES + _LATER_HOOK_TABLES

# The key suffix under which get_extra_state()'s value is saved (PyTorch's name).
_EXTRA_STATE_KEY = "_extra_state"

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeys(IncompatibleKeys):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _is_any_tensor(value) -> bool:
    """Whether a buffer may hold ``value``: any tensor, sparse ones too (a GCN registers its
    sparse adjacency as a buffer).  A sparse COO tensor is no ``Tensor`` instance (see
    tapegrad/_sparse_coo.py), hence ``tapegrad.is_tensor``."""
    from ... import is_tensor
    return is_tensor(value)


def _type_arg_np_dtype(dst_type) -> np.dtype:
    """The numpy dtype Module.type(dst_type) converts to: a dtype, a tensor type class
    (FloatTensor) or its name ('torch.FloatTensor')."""
    from ... import _legacy
    if isinstance(dst_type, str):
        cls = getattr(_legacy, dst_type.rpartition(".")[2], None)
        if dst_type.rpartition(".")[0] in ("torch", "tapegrad") and \
                isinstance(cls, _legacy.TypedTensorMeta):
            return cls.dtype.np_dtype
        raise ValueError(f"invalid type: '{dst_type}'")
    if isinstance(dst_type, _legacy.TypedTensorMeta):
        return dst_type.dtype.np_dtype
    if isinstance(dst_type, _core.dtype):
        return dst_type.np_dtype
    raise ValueError(f"invalid type: '{getattr(dst_type, '__name__', dst_type)}'")


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _set_training(module, mode: bool):
    """Module.train's work: the flag on the module, then each child's own train(), as PyTorch
    (a subclass that overrides it - LoRA's merge on eval, a frozen BatchNorm kept in eval - runs
    its override from model.eval()); returns the module."""
    module.training = mode
    for child in module.children():
        child.train(mode)
    return module


def _zero_grads(module, set_to_none: bool) -> None:
    """Module.zero_grad's work (a function, not a method: dir(Module) lists PyTorch's names)."""
    from ...optim.optimizer import reset_grads
    reset_grads(module.parameters(), set_to_none)


class Module:
    """Base class of all layers: subclasses assign parameters and submodules in __init__ and
    define forward(); calling the module calls forward."""

    # The layout version of this class's state_dict entries (PyTorch's Module._version); a class
    # whose layout changed raises it and upgrades older dicts in _upgrade_state_dict.
    _version: int = 1

    # PyTorch's class attributes, which scripts and libraries read: whether nn.Module.__init__
    # also calls super().__init__ (a mixin's), whether loading prints source-change patches,
    # and the type variable of state_dict's `destination`.
    call_super_init: bool = False
    dump_patches: bool = False
    T_destination = TypeVar("T_destination", bound=dict[str, Any])
    # Module.compile() sets an instance's own: the compiled call __call__ runs instead
    _compiled_call_impl: Callable[..., Any] | None = None

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        # Plain dicts, as PyTorch 2's (tutorials print `net._modules`, `net._parameters`); the
        # hook tables below stay OrderedDicts, as PyTorch's (a prepended hook moves to the front).
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        for table in _BACKWARD_HOOK_TABLES:
            object.__setattr__(self, table, OrderedDict())
        # None until a backward hook is registered: True for full hooks, False for the
        # deprecated register_backward_hook (one kind per module, as PyTorch)
        object.__setattr__(self, "_is_full_backward_hook", None)
        for table in _LATER_HOOK_TABLES:
            object.__setattr__(self, table, OrderedDict())
        object.__setattr__(self, "_modules", {})

    def forward(self, *args, **kwargs):
        """The computation of the layer: override it in every subclass.

        Call the module (``module(x)``) rather than ``forward`` directly: ``__call__`` runs the forward
        pre-hooks and hooks around it. The base implementation raises ``NotImplementedError``.
        """
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def _wrapped_call_impl(self, *args, **kwargs):
        """module(...): the compiled call when Module.compile() set one, else _call_impl."""
        compiled = self.__dict__.get("_compiled_call_impl")     # set by Module.compile()
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    __call__ = _wrapped_call_impl

    def _call_impl(self, *args, **kwargs):
        """A call of the module as it would run uncompiled: its hooks around ``forward``."""
        d = self.__dict__
        if (d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks") or _hooks.any_global_hook()):
            return call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def __getstate__(self):
        # A compiled call holds a capture of this very object: copies and pickles leave it out,
        # as PyTorch's do (a copy runs uncompiled until compiled again).
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state) -> None:
        # A module pickled by an older layout: the tables it lacked start empty, and the
        # non-persistent buffer names move to PyTorch's attribute name.
        self.__dict__.update(state)
        d = self.__dict__
        if "_non_persistent_buffers" in d:
            d["_non_persistent_buffers_set"] = d.pop("_non_persistent_buffers")
        d.setdefault("_non_persistent_buffers_set", set())
        for table in _HOOK_TABLES:
            d.setdefault(table, OrderedDict())
        d.setdefault("_is_full_backward_hook", None)

    def _slow_forward(self, *args, **kwargs):
        """forward() as PyTorch runs it under the JIT tracer (tapegrad has no tracer: forward
        itself, without the module's hooks)."""
        return self.forward(*args, **kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with ``tapegrad.compile`` (PyTorch's
        ``Module.compile``): later ``module(x)`` calls capture once and replay; parameters,
        ``state_dict`` keys and the module object itself are unchanged.  The arguments are
        ``tapegrad.compile``'s."""
        from ...replay import compile as compile_call
        # A bound method: the capture guards this module's (and its submodules') training flags.
        object.__setattr__(self, "_compiled_call_impl", compile_call(self._call_impl, *args,
                                                                     **kwargs))

    # -- forward hooks ------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) -> None or new args (a non-tuple is wrapped in one); with
        with_kwargs, hook(module, args, kwargs) -> None or (new_args, new_kwargs)."""
        return add_hook(_hook_table(self, "_forward_pre_hooks"), hook, prepend,
                        [(_hook_table(self, "_forward_pre_hooks_with_kwargs"), with_kwargs)])

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) (or (module, args, kwargs, output) with with_kwargs)
        -> None or a replacement output."""
        return add_hook(_hook_table(self, "_forward_hooks"), hook, prepend,
                        [(_hook_table(self, "_forward_hooks_with_kwargs"), with_kwargs),
                         (_hook_table(self, "_forward_hooks_always_called"), always_call)])

    def _get_backward_hooks(self):
        """(full backward hooks, non-full ones): this module's _backward_hooks, as the kind
        registered decides."""
        hooks = list(self.__dict__.get("_backward_hooks", {}).values())
        full, legacy = _hooks.global_backward_hooks(True), _hooks.global_backward_hooks(False)
        if self.__dict__.get("_is_full_backward_hook") is False:
            return full, legacy + hooks
        return full + hooks, legacy

    def _get_backward_pre_hooks(self):
        """The full backward pre-hooks of this module (the global ones first), in call order."""
        return list(_hooks._global_backward_pre_hooks.values()) + \
            list(self.__dict__.get("_backward_pre_hooks", {}).values())

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn) -> None:
        """PyTorch's FutureWarning when a deprecated backward hook cannot see the module's
        own gradients (nn/modules/_hooks.py)."""
        from ._hooks import warn_non_full_backward_hook
        warn_non_full_backward_hook(inputs, result, grad_fn)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """The deprecated form of register_full_backward_hook: hook(module, grad_input,
        grad_output) is a post-hook on the grad_fn of the module's (first) output, so
        grad_input holds the gradients of that last operation's inputs (not necessarily the
        module's), as PyTorch's; it warns when those differ."""
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", False)
        return add_hook(_hook_table(self, "_backward_hooks"), hook, False, [])

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or a replacement grad_output, called when the
        gradients w.r.t. the module's outputs are known."""
        return add_hook(_hook_table(self, "_backward_pre_hooks"), hook, prepend, [])

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or a replacement grad_input, called when
        the gradients w.r.t. the module's positional inputs are computed (grad_input holds None
        for inputs that are not tensors requiring grad)."""
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", True)
        return add_hook(_hook_table(self, "_backward_hooks"), hook, prepend, [])

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            # Plain attributes may be set before super().__init__() (old tutorials do); only
            # what needs the registries is refused, with PyTorch's messages.
            if isinstance(value, Parameter):
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            if isinstance(value, Module):
                raise AttributeError("cannot assign module before Module.__init__() call")
            if isinstance(value, Buffer):
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            # As in PyTorch, assignment goes through register_parameter's checks once the name is
            # cleared elsewhere: what still holds it is a method or property (a parametrized
            # tensor's), which the parameter would hide, and a dotted name is refused.
            _discard(self, name, keep=params)
            _check_registration_name(self, "parameter", name, "_parameters")
            if _global_parameter_registration_hooks:
                value = registered_value(_global_parameter_registration_hooks, self, name, value)
            params[name] = value
        elif name in params:
            # before the module case, as PyTorch: a module does not replace a parameter
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            _discard(self, name, keep=modules)
            if _global_module_registration_hooks:
                value = registered_value(_global_module_registration_hooks, self, name, value)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            if _global_module_registration_hooks:
                value = registered_value(_global_module_registration_hooks, self, name, value)
            modules[name] = value
        elif isinstance(value, Buffer):
            # nn.Buffer registers itself, with the persistence it was made with.
            _register_assigned_buffer(self, name, value, value.persistent)
        elif name in buffers:
            if value is not None and not _is_any_tensor(value):
                raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if _global_buffer_registration_hooks:
                value = registered_value(_global_buffer_registration_hooks, self, name, value)
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)


    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` as the parameter ``name`` (same as assigning a Parameter attribute).

        Parameters
        ----------
        name : str
            The attribute name; it replaces a parameter, buffer or submodule of that name.
        param : Parameter or None
            ``None`` registers the name without a value (it is skipped by ``parameters()`` and
            ``state_dict()``). Anything else but a Parameter raises ``TypeError``.

        Examples
        --------
        >>> m = tapegrad.nn.Module()
        >>> m.register_parameter("scale", tapegrad.nn.Parameter(tapegrad.ones(3)))
        >>> [name for name, _ in m.named_parameters()]
        ['scale']
        """
        _check_registration_name(self, "parameter", name, "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        _discard(self, name, keep=self._parameters)
        if param is not None and _global_parameter_registration_hooks:
            param = registered_value(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register a tensor that is part of the module's state but is not a parameter (running means).

        Buffers are returned by ``buffers()``, moved and cast with the module and saved in
        ``state_dict()`` unless ``persistent=False``.

        Parameters
        ----------
        name : str
            Must be non-empty and contain no ``"."`` (``KeyError``).
        tensor : Tensor or None
            The value; ``None`` registers the name without a value.
        persistent : bool, default True
            Whether ``state_dict()`` includes the buffer.

        Examples
        --------
        >>> m = tapegrad.nn.Module()
        >>> m.register_buffer("count", tapegrad.zeros(()))
        >>> list(m.state_dict())
        ['count']
        """
        _check_registration_name(self, "buffer", name, "_buffers")
        if tensor is not None and not _is_any_tensor(tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        _discard(self, name, keep=self._buffers)
        if _global_buffer_registration_hooks:
            tensor = registered_value(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Register ``module`` as the submodule ``name`` (same as assigning it as an attribute).

        ``None`` registers the name without a module; anything but a Module raises ``TypeError``.
        ``register_module`` is the same method.
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        _check_registration_name(self, "module", name, "_modules")
        _discard(self, name, keep=self._modules)
        if _global_module_registration_hooks:
            module = registered_value(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Iterate over ``(dotted name, module)`` for this module (name ``prefix``) and every submodule,
        depth first in registration order.

        A module reachable twice is yielded once unless ``remove_duplicate=False``. Deep nestings are
        walked with an explicit stack (no recursion limit).

        Examples
        --------
        >>> net = tapegrad.nn.Sequential(tapegrad.nn.Linear(2, 2), tapegrad.nn.ReLU())
        >>> [name for name, _ in net.named_modules()]
        ['', '0', '1']
        """
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:                                  # explicit stack: no recursion limit
            name, module = stack.pop()
            if remove_duplicate:
                if id(module) in memo:
                    continue
                memo.add(id(module))
            yield name, module
            children = [(f"{name}.{n}" if name else n, m) for n, m in module._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def get_submodule(self, target: str) -> "Module":
        """The submodule at a dotted path ("" is self)."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target`` (``"1.0"``, ``"encoder.fc"``), replacing
        what is there.  Every module on the way must exist; the last name may be new unless
        ``strict=True``.  Raises as PyTorch: ValueError for an empty target or a non-Module,
        AttributeError for a missing or non-Module step."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, name = target.split(".")
        parent = self
        for item in path:
            if not hasattr(parent, item):
                raise AttributeError(f"{parent._get_name()} has no attribute `{item}`")
            parent = getattr(parent, item)
            if not isinstance(parent, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)


    def get_parameter(self, target: str) -> Parameter:
        """The Parameter at a dotted path such as ``"encoder.0.weight"``.

        Raises ``AttributeError`` (with PyTorch's phrases) when a step of the path does not exist or the
        last one is not a Parameter.
        """
        mod, name = _get_leaf(self, target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn.running_mean"``; ``AttributeError`` if it is not a
        registered buffer.
        """
        mod, name = _get_leaf(self, target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def modules(self) -> Iterator["Module"]:
        """Iterate over this module and all its submodules (each once), as ``named_modules()`` without
        the names.
        """
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Iterate over ``(name, module)`` of the direct submodules (not their children), each once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """Iterate over the direct submodules, as ``named_children()`` without the names."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        # PyTorch's private signature: get_members_fn(module) -> iterable of (name, value).
        # Meta-learning libraries (torchmeta's MetaModule) subclass Module and call it with a
        # lambda; tapegrad's own callers pass the name of the member dict instead.
        if isinstance(get_members_fn, str):
            store = get_members_fn
            get_members_fn = lambda module: getattr(module, store).items()
        seen = set()
        mods = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse
                else [(prefix, self)])
        for mod_prefix, module in mods:
            for name, value in get_members_fn(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterate over ``(dotted name, Parameter)`` of this module and, with ``recurse=True``, of every
        submodule; a Parameter shared by two modules is yielded once (under each of its names
        with ``remove_duplicate=False``).

        Examples
        --------
        >>> lin = tapegrad.nn.Linear(3, 2)
        >>> [(n, tuple(p.shape)) for n, p in lin.named_parameters()]
        [('weight', (2, 3)), ('bias', (2,))]
        """
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Iterate over the module's Parameters (and, with ``recurse=True``, its submodules'), each
        once: what an optimizer is given.

        Examples
        --------
        >>> model = tapegrad.nn.Linear(3, 2)
        >>> opt = tapegrad.optim.SGD(model.parameters(), lr=0.1)
        >>> sum(p.numel() for p in model.parameters())
        8
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterate over ``(dotted name, buffer)`` of this module and, with ``recurse=True``, of every
        submodule (non-persistent buffers included); a shared buffer once unless
        ``remove_duplicate=False``.
        """
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Iterate over the module's buffers (and, with ``recurse=True``, its submodules'), each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def share_memory(self: T) -> T:
        """Move every parameter, buffer and gradient into shared memory (Hogwild training)."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self

    # -- modes and grads ----------------------------------------------------------------------
    def train(self: T, mode: bool = True) -> T:
        """Set training mode (``mode=True``) or evaluation mode on this module and every submodule.

        Dropout and batch normalisation behave differently in the two modes. ``mode`` must be a bool
        (``ValueError`` otherwise). Returns the module.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        if _step_phases.noting is not None:     # inside a compiled function: a replay re-runs it
            return _step_phases.note(_step_phases.MODE, _set_training, self, (mode,), {},
                                     Module.train)
        return _set_training(self, mode)

    def eval(self: T) -> T:
        """Set evaluation mode on this module and every submodule (``train(False)``); returns the module."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Set ``requires_grad`` on every parameter (to freeze a part of a model); returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None`` (default, as PyTorch 2) or, with
        ``set_to_none=False``, to zeros in place.
        """
        if _step_phases.noting is not None:     # a compiled whole step captures its phases
            return _step_phases.note(_step_phases.ZERO_GRAD, _zero_grads, self, (),
                                     {"set_to_none": set_to_none}, Module.zero_grad)
        _zero_grads(self, set_to_none)

    def apply(self: T, fn: Callable[["Module"], None]) -> T:
        """Call ``fn(m)`` on every submodule, children before parents, then on this module; returns the
        module. The usual way to run a custom initialisation.

        Examples
        --------
        >>> def init(m):
        ...     if isinstance(m, tapegrad.nn.Linear):
        ...         tapegrad.nn.init.zeros_(m.bias)
        >>> net = tapegrad.nn.Sequential(tapegrad.nn.Linear(2, 2)).apply(init)
        >>> net[0].bias.tolist()
        [0.0, 0.0]
        """
        # Post-order as PyTorch: each child's subtree in registration order, then the parent (so
        # an init that prints or draws random numbers visits layers first to last).  A module
        # registered under two parents is visited under each, as PyTorch's recursion does.
        # Through each child's own apply(), so a subclass's override runs, as PyTorch's.
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- dtype and device ---------------------------------------------------------------------



    def to(self: T, *args, **kwargs) -> T:
        """Module.to(device), to(dtype), to(device, dtype), to(tensor), each with an optional
        memory_format=: floating parameters and buffers converted in place to the dtype, 4-D and
        5-D ones to the memory format; the CPU is the only device."""
        if "copy" in kwargs:
            # PyTorch's module argument parser has no copy= (Tensor.to has)
            raise RuntimeError(".to() does not accept copy argument")
        device, dtype, _, _ = parse_to(args, kwargs)
        _check_move(self, device, "to")
        if device is not None and as_device(device).type == "meta":
            from ..._meta import become_meta
            for t in _tensors(self):
                become_meta(t)
        memory_format = kwargs.get("memory_format")
        if dtype is not None:
            _module_to_dtype(self, dtype)
        if memory_format is not None:
            # as PyTorch's: 4-D and 5-D parameters, grads and buffers take the layout (a 5-D
            # one asked for channels_last raises, as Tensor.to does); the Parameter objects stay
            self._apply(lambda t: t.to(memory_format=memory_format) if t.dim() in (4, 5) else t)
        return self

    def type(self: T, dst_type) -> T:
        """Convert every parameter and buffer (integer ones too) to dst_type: a dtype or a
        tensor type (FloatTensor, 'torch.DoubleTensor')."""
        np_dt = _type_arg_np_dtype(dst_type)
        if np_dt.kind != "f" and any(p.requires_grad for p in self.parameters()):
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        return _cast(self, np_dt, kinds=None)

    def float(self: T) -> T:
        """Cast every floating-point parameter and buffer to float32, in place; returns the module."""
        return _cast(self, np.float32)

    def double(self: T) -> T:
        """Cast every floating-point parameter and buffer to float64, in place; returns the module."""
        return _cast(self, np.float64)

    def half(self: T) -> T:
        """Cast every floating-point parameter and buffer to float16, in place; returns the module."""
        return _cast(self, np.float16)

    def bfloat16(self: T) -> T:
        """Cast every floating-point parameter and buffer to bfloat16, in place; returns the module."""
        return _cast(self, _core.bfloat16)

    def _apply(self, fn: Callable, recurse: bool = True) -> "Module":
        """Replace each parameter's and grad's value by ``fn(tensor)`` (under no_grad; the
        Parameter and grad objects are kept, as PyTorch's default ``param.data = fn(param)``) and each
        buffer by ``fn(buffer)``, children first.  The hook that ``to()``/``float()`` run in
        PyTorch, which custom modules override and scripts call directly."""
        if recurse:
            for child in self.children():
                child._apply(fn)
        from ... import __future__ as future
        from ...utils import swap_tensors
        swap = future.get_swap_module_params_on_conversion()
        overwrite = future.get_overwrite_module_params_on_conversion()
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                applied = fn(param)
            param_grad = param.grad
            if swap:
                # torch.__future__: the Parameter object takes the converted content, so a
                # subclass's own conversion result (and its type) is what the module holds
                try:
                    param.grad = None
                    swap_tensors(param, Parameter(applied, requires_grad=param.requires_grad))
                except Exception as e:
                    param.grad = param_grad
                    raise RuntimeError(f"_apply(): Couldn't swap {self._get_name()}.{key}") from e
                out_param = param
            elif overwrite:
                out_param = self._parameters[key] = Parameter(applied, param.requires_grad)
            else:
                param.data = applied
                out_param = param
            if param_grad is not None:
                with no_grad():
                    grad_applied = fn(param_grad)
                if swap:
                    grad_applied.requires_grad_(param_grad.requires_grad)
                    try:
                        swap_tensors(param_grad, grad_applied)
                    except Exception as e:
                        raise RuntimeError(
                            f"_apply(): Couldn't swap {self._get_name()}.{key}.grad") from e
                    out_param.grad = param_grad
                elif out_param is param:
                    # (the grad object is kept too, as PyTorch's param.grad.data = ...: a
                    # reference a script holds to it sees the converted values)
                    param.grad.data = grad_applied
                else:
                    out_param.grad = grad_applied.requires_grad_(param_grad.requires_grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to_empty(self: T, *, device, recurse: bool = True) -> T:
        """Give every parameter and buffer uninitialised storage on ``device`` (in place: each
        keeps its identity); the way to materialise a module built on the meta device."""
        from ..._meta import become_empty, become_meta, is_meta_device
        check_device(device, "to_empty", allow_meta=True)
        tensors = _tensors(self) if recurse else (
            t for store in (self._parameters, self._buffers) for t in store.values()
            if t is not None)
        for t in tensors:
            if is_meta_device(device):
                become_meta(t)
            else:
                become_empty(t)
        return self

    def cpu(self: T) -> T:
        """Return the module: its tensors are always on the CPU."""
        return self

    def cuda(self: T, device=None) -> T:
        """Raises as a PyTorch build without CUDA does (when there is a tensor to move)."""
        if next(_tensors(self), None) is not None:
            if isinstance(device, int) and not isinstance(device, bool):
                check_device(device, "cuda")
            check_device("cuda", "cuda")
        return self

    def xpu(self, device=None) -> "Module":
        """Raises as a PyTorch build without XPU does (when there is a tensor to move)."""
        if next(_tensors(self), None) is not None:
            raise AssertionError("Torch not compiled with XPU enabled")
        return self

    def ipu(self, device=None) -> "Module":
        """Raises as a PyTorch build without IPU support does (when there is a tensor to move)."""
        if next(_tensors(self), None) is not None:
            raise RuntimeError("PyTorch is not linked with support for ipu devices")
        return self

    def mtia(self, device=None) -> "Module":
        """Raises as a PyTorch build without MTIA does (when there is a tensor to move)."""
        if next(_tensors(self), None) is not None:
            raise AssertionError("Torch not compiled with MTIA enabled")
        return self

    # -- state --------------------------------------------------------------------------------
    # state_dict() and load_state_dict() walk the module tree and hand each module its own part:
    # _save_to_state_dict / _load_from_state_dict are the per-module override points (as in
    # PyTorch), get_extra_state / set_extra_state add non-tensor state under "_extra_state",
    # and the four hook tables below run around them.  The tables are created on first use
    # (_hook_table), so a module without such hooks pays nothing at construction.

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers, saved under ``<prefix>_extra_state``.

        Override it together with ``set_extra_state``; the entry is written only when a subclass
        overrides this method (any picklable value).
        """
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Restores what ``get_extra_state`` returned; load_state_dict calls it with the
        ``<prefix>_extra_state`` entry when a subclass overrides it."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before this module's entries are saved."""
        return add_hook(_hook_table(self, "_state_dict_pre_hooks"), hook, False, [])

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module and its
        children are saved; it may edit ``state_dict`` in place and must return None."""
        return add_hook(_hook_table(self, "_state_dict_hooks"), hook, False,
                        [(_hook_table(self, "_state_dict_hooks_public"), True)])

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """The older private form of the post-hook: a non-None return replaces the dict."""
        hooks, public = _hook_table(self, "_state_dict_hooks"), _hook_table(self, "_state_dict_hooks_public")
        if any(hooks.get(hid) is hook for hid in public):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via register_state_dict_post_hook")
        return add_hook(_hook_table(self, "_state_dict_hooks"), hook, False,
                        [(_hook_table(self, "_state_dict_hooks_public"), False)])

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module's entries are loaded; it may edit
        ``state_dict`` (this module's part) in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """The private form: without ``with_module`` the hook is called without the module."""
        return add_hook(_hook_table(self, "_load_state_dict_pre_hooks"), hook, False,
                        [(_hook_table(self, "_load_state_dict_pre_hooks_with_module"), with_module)])

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after this module and its children are
        loaded; it may edit ``incompatible_keys.missing_keys`` / ``.unexpected_keys`` in place
        (a strict load raises on what is left) and must return None."""
        return add_hook(_hook_table(self, "_load_state_dict_post_hooks"), hook, False, [])

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """The module's state: an ordered dict of dotted names to parameters and persistent buffers.

        Values are detached from the graph unless ``keep_vars=True``; they share storage with the
        module. The dict carries each module's layout version (``_metadata``), so that
        ``load_state_dict`` can upgrade a dict saved by an older layout. ``prefix`` is prepended to
        every key; ``destination`` is filled instead of a new dict. A module shared under two
        names appears under both, as in PyTorch.

        Examples
        --------
        >>> list(tapegrad.nn.Linear(3, 2).state_dict())
        ['weight', 'bias']
        """
        if args:
            # PyTorch still reads (destination, prefix, keep_vars) positionally, with a warning
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        # Each module's layout version travels with the dict (as PyTorch's _metadata), so a
        # later load can tell a dict written before a layout change from a current one.
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        d = self.__dict__
        for hook in list((d.get("_state_dict_pre_hooks") or {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                                 keep_vars=keep_vars)
        public = d.get("_state_dict_hooks_public") or {}
        for hid, hook in list((d.get("_state_dict_hooks") or {}).items()):
            result = hook(self, destination, prefix, local_metadata)
            if result is None:
                continue
            if hid in public:
                raise RuntimeError("state_dict post-hook must return None")
            destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Writes this module's own parameters, persistent buffers and extra state (not its
        children's) into ``destination`` under ``prefix``; override to change what is saved."""
        # A lazy module's placeholder is saved as itself, as PyTorch's: it refuses detach(), and
        # a detached copy would be a plain shape-(0,) tensor a reader could take for the values.
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict`` into the module's tensors (in place).

        Each module loads its own entries through ``_load_from_state_dict`` (children get the
        entries under their prefix), with the load pre- and post-hooks around it.

        Parameters
        ----------
        state_dict : mapping
            Dotted names to tensors (or arrays) of the same shapes; a shape mismatch raises
            ``RuntimeError`` naming both shapes, after all keys are checked.
        strict : bool, default True
            Missing or unexpected keys raise ``RuntimeError``; with ``False`` they are only reported.
        assign : bool, default False
            False: values are copied into the existing tensors (their dtype is kept; into a meta
            tensor, a no-op with PyTorch's warning).  True: the checkpoint's tensors become the
            module's (parameters wrapped as ``Parameter`` keeping ``requires_grad``), the way to
            fill a module built on the meta device.

        Returns
        -------
        namedtuple (missing_keys, unexpected_keys)

        Examples
        --------
        >>> a, b = tapegrad.nn.Linear(3, 2), tapegrad.nn.Linear(3, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        # A private copy: upgrades and pre-hooks may edit it, never the caller's dict.
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        # An explicit stack instead of recursion; post-hooks run when a module's subtree is done
        # (the order PyTorch's recursive load gives).
        stack = [(self, state_dict, "", False)]
        while stack:
            module, local, prefix, done = stack.pop()
            if done:
                keys = _IncompatibleKeys(missing, unexpected)
                for hook in list((module.__dict__.get("_load_state_dict_post_hooks") or {}).values()):
                    if hook(module, keys) is not None:
                        raise AssertionError(
                            "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                            "expected to return new values, if incompatible_keys need to be "
                            "modified, it should be done inplace.")
                continue
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local, prefix, local_metadata, True, missing, unexpected,
                                         errors)
            stack.append((module, None, prefix, True))
            # Each child gets the entries under its prefix, split off in one pass over this
            # module's entries (not one pass per child).
            parts = {name: {} for name, child in module._modules.items() if child is not None}
            for k, v in local.items():
                if k.startswith(prefix):
                    head, dot, _ = k[len(prefix):].partition(".")
                    if dot and head in parts:
                        parts[head][k] = v
            for name in reversed(list(parts)):
                stack.append((module._modules[name], parts[name], f"{prefix}{name}.", False))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Loads this module's own entries (keys ``prefix + name``) from ``state_dict``; the
        override point for a module whose saved layout differs from its attributes.

        Appends to ``missing_keys`` / ``unexpected_keys`` (when ``strict``) and ``error_msgs``
        rather than raising, so that load_state_dict reports every problem at once.
        ``local_metadata`` holds the saved ``version`` of this module's layout, and
        ``assign_to_params_buffers`` for ``load_state_dict(assign=True)``.
        """
        if hasattr(self, "_materialize_from"):         # a lazy module takes the saved shapes
            self._materialize_from(state_dict, prefix)
        d = self.__dict__
        with_module = d.get("_load_state_dict_pre_hooks_with_module") or {}
        for hid, hook in list((d.get("_load_state_dict_pre_hooks") or {}).items()):
            args = (state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                    error_msgs)
            hook(self, *args) if hid in with_module else hook(*args)
        local = {name: t for name, t in self._parameters.items() if t is not None}
        local.update((name, t) for name, t in self._buffers.items()
                     if t is not None and name not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not isinstance(target, _core.TensorBase) or (
                    not isinstance(src, (_core.TensorBase, np.ndarray)) and _is_any_tensor(src)):
                # a sparse buffer or checkpoint entry: copied by the sparse tensor's own copy_
                # (there is no dense array to compare shapes or write into)
                _load_sparse(self, name, key, target, src, assign, error_msgs)
                continue
            if not isinstance(src, (_core.TensorBase, np.ndarray)):
                # PyTorch copies only tensors (a list or a number would be a silent guess of
                # dtype; numpy arrays stay accepted, a documented convenience)
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(src)}")
                continue
            if is_lazy(src):
                # a lazy module's placeholder has no values: it fills another placeholder (as a
                # no-op) but not an initialised tensor, which PyTorch refuses outright
                if is_lazy(target):
                    continue
                raise RuntimeError(_UNINITIALIZED_MESSAGE)
            src_arr = src._array if isinstance(src, _core.TensorBase) else src
            if target._array.ndim == 0 and src_arr.ndim == 1:
                # a scalar saved as a 1-element vector by old PyTorch versions (0.3)
                src, src_arr = src[0], src_arr[0]
            if src_arr.shape != target._array.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"torch.Size({list(src_arr.shape)}) from checkpoint, the shape "
                                  f"in current model is torch.Size({list(target._array.shape)}).")
                continue
            if target.is_meta and not assign:
                if not getattr(src, "is_meta", False):
                    warnings.warn(f"for {name}: copying from a non-meta parameter in the "
                                  f"checkpoint to a meta parameter in the current model, which "
                                  f"is a no-op. (Did you mean to pass `assign=True` to assign "
                                  f"items in the state dictionary to their corresponding key in "
                                  f"the module instead of copying them in place?)",
                                  UserWarning, stacklevel=3)
                if not _swap_on():         # (swapped in: module_load's copy into meta is a no-op)
                    continue
            try:
                if _swap_on():
                    with no_grad():
                        _swap_loaded(target, src, assign)
                elif assign:
                    _assign_loaded(self, name, target, src)
                else:
                    # copy_ (as PyTorch's): casts as a copy does and bumps the version, so a
                    # graph that saved the old value refuses to backward through it
                    if not isinstance(src, _core.TensorBase):
                        src = _core.wrap_array(np.asarray(src_arr))
                    with no_grad():
                        target.copy_(src)
            except Exception as ex:     # collected with the other problems, as PyTorch's
                action = "swapping" if _swap_on() else "copying"
                error_msgs.append(
                    f'While {action} the parameter named "{key}", whose dimensions in the model '
                    f"are torch.Size({list(target._array.shape)}) and whose dimensions in the "
                    f"checkpoint are torch.Size({list(src_arr.shape)}), an exception occurred "
                    f": {ex.args}.")
        extra_key = prefix + _EXTRA_STATE_KEY
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    # a dotted name must lead to a child module; a plain one to a local tensor
                    if (head not in self._modules) if dot else (head not in local):
                        unexpected_keys.append(key)



    # -- repr ---------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The layer's settings shown inside its repr, e.g. ``in_features=4, out_features=2, bias=True``.

        Override it to add a line to ``repr(module)``; the base returns ``""``.
        """
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = []
        for name, m in self._modules.items():
            child_lines.append(f"({name}): " + _addindent(repr(m), 2))
        lines = lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra.split("\n")) == 1 and not child_lines:
                main += extra
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def _replicate_for_data_parallel(self) -> "Module":
        """A shallow replica for DataParallel: its own (empty) parameter table and copies of the
        buffer and child tables, everything else shared with this module; marked _is_replica."""
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = {}
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        replica._is_replica = True
        return replica

    def __dir__(self):
        # Names that are not attribute names (a Sequential's "0", "1") are left out, as PyTorch
        # does: dir() lists what `module.<name>` can reach.
        names = set(list(super().__dir__()) + list(self._parameters) + list(self._buffers)
                    + list(self._modules))
        return sorted(n for n in names if not n[:1].isdigit())


# Module's private helpers live outside the class: dir(module) lists what PyTorch's does.
def _hook_table(module, name: str) -> OrderedDict:
    # Modules unpickled from an older layout lack the tables: create them on first use.
    if name not in module.__dict__:
        object.__setattr__(module, name, OrderedDict())
    return module.__dict__[name]


def _check_registration_name(module, kind: str, name, store: str) -> None:
    """PyTorch's checks on the name given to register_parameter, register_buffer and add_module.

    A dotted name would be split as a path by named_parameters()/state_dict() keys and
    get_submodule(), an empty one makes a key equal to its parent's prefix, and a name another
    attribute already holds would be shadowed by (or shadow) it: PyTorch refuses all three, so a
    script that builds names by formatting (`"conv.{0}".format(i)`) fails where it would there.
    `store` is the registry the name goes into; replacing an entry of the same kind is allowed.
    (Attribute assignment, `m.x = Parameter(...)`, is not checked: it replaces what was there.)
    """
    if store not in module.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    # add_module checks for a taken name before the name's form; the other two after.
    taken = hasattr(module, name) and name not in module.__dict__[store]
    if kind == "module" and taken:
        raise KeyError(f"attribute '{name}' already exists")
    if "." in name:
        got = f", got: {name}" if kind == "module" else ""
        raise KeyError(f'{kind} name can\'t contain "."{got}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if taken:
        raise KeyError(f"attribute '{name}' already exists")


def _register_assigned_buffer(module: "Module", name: str, value, persistent: bool) -> None:
    """Register a buffer assigned as an attribute.  A subclass may override register_buffer
    without the `persistent` argument (scripts written for old PyTorch do): as PyTorch does, call
    it with two arguments then, which can only make a persistent buffer."""
    register = module.register_buffer
    if getattr(register, "__func__", None) is not Module.register_buffer:
        import inspect
        if "persistent" not in inspect.signature(register).parameters:
            if not persistent:
                raise RuntimeError("Registering a non-persistent buffer on a Module subclass that "
                                   "implements register_buffer() without the persistent argument "
                                   "is not allowed.")
            register(name, value)
            return
    register(name, value, persistent)


def _discard(module, name: str, keep: dict | None = None) -> None:
    # `keep` is the store about to receive `name`: replacing an entry there keeps its
    # position, so a replaced layer prints and iterates where it was (as in PyTorch).
    for store in (module.__dict__, module._parameters, module._buffers, module._modules):
        if store is not keep:
            store.pop(name, None)
    module._non_persistent_buffers_set.discard(name)


def _get_leaf(module, target: str):
    # The owning module and the attribute a dotted path ends in (get_parameter/get_buffer).
    module_path, _, name = target.rpartition(".")
    mod = module.get_submodule(module_path)
    if not hasattr(mod, name):
        raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
    return mod, name


def _tensors(module):
    """Every parameter and buffer of every submodule (a shared one once)."""
    seen = set()
    for m in module.modules():
        for store in (m._parameters, m._buffers):
            for t in store.values():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    yield t


_COMPLEX_MODULE_WARNING = (
    "Complex modules are a new feature under active development whose design may change, and "
    "some modules might not work as expected when using complex tensors as parameters or "
    "buffers. Please file an issue at https://github.com/pytorch/pytorch/issues/new?template="
    "bug-report.yml if a complex module does not work as expected.")


def _cast(module, np_dtype, kinds: str | None = "f") -> "Module":
    """Convert parameters and buffers whose numpy kind is in `kinds` (all when None) in place:
    each keeps its identity (optimizers hold them), as PyTorch's conversions do; so do grads."""
    # (bfloat16 is no numpy dtype: its tensors are float32 ones of their own class, which
    # tapegrad/_bfloat16.py's cast_in_place converts to and from, grads too)
    bfloat16 = np_dtype is _core.bfloat16
    if not bfloat16:
        np_dtype = np.dtype(np_dtype)
    from ... import __future__ as future
    _cast_sparse_buffers(module, _core.bfloat16 if bfloat16 else
                         _core._dtype_by_name(np_dtype.name), kinds)
    if (future.get_swap_module_params_on_conversion()
            or future.get_overwrite_module_params_on_conversion()
            or any(type(m)._apply is not Module._apply for m in module.modules())):
        # torch.__future__'s switches: the conversion makes new tensors, which _apply swaps
        # into the old objects or puts in their place, as PyTorch's conversions then do.  A
        # module overriding _apply (to convert a plain tensor attribute, a cache) is converted
        # through it too, as PyTorch's float()/half()/to(dtype) all are.
        def convert(t):
            if not isinstance(t, _core.TensorBase):
                return t                # (a sparse buffer: converted above)
            arr = t._array
            if kinds is not None and arr.dtype.kind not in kinds:
                return t
            if bfloat16 or _bfloat16_tensor(t):
                return t.to(_core.bfloat16 if bfloat16 else _core._dtype_by_name(np_dtype.name))
            if arr.dtype.kind == "c" and np_dtype.kind != "c":
                _core.warn_complex_discard()
                arr = arr.real
            return _core.wrap_array(arr.astype(np_dtype))
        return module._apply(convert)
    for t in _tensors(module):
        if not isinstance(t, _core.TensorBase):
            continue                    # (a sparse buffer: converted above)
        if kinds is not None and t._array.dtype.kind not in kinds:
            continue
        if bfloat16 or _bfloat16_tensor(t):
            from ..._bfloat16 import cast_in_place
            if t._array.dtype.kind == "c":
                _core.warn_complex_discard()
                t._array = t._array.real
            cast_in_place(t, np_dtype)
            continue
        arr = t._array
        if arr.dtype.kind == "c" and np_dtype.kind != "c":
            _core.warn_complex_discard()
            arr = arr.real
        if arr.dtype != np_dtype or arr is not t._array:
            # through the data setter, as PyTorch's param.data = fn(param): the graphs recorded
            # before keep their gradient accumulator and its dtype (_core's split_accumulator)
            t.data = _core.wrap_array(arr.astype(np_dtype, copy=False))
        if t.is_leaf and t.grad is not None:
            # (the grad object itself converted, as PyTorch's param.grad.data = ...: a
            # reference a script holds to it stays the parameter's grad)
            grad = t.grad._array
            t.grad.data = _core.wrap_array((grad.real if np_dtype.kind != "c" else grad)
                                           .astype(np_dtype))
    return module


def _cast_sparse_buffers(module, dtype, kinds: str | None) -> None:
    """_cast for sparse buffers: each is replaced by its converted copy, as PyTorch's _apply
    replaces every buffer (a sparse tensor has no array to convert in place)."""
    for m in module.modules():
        for name, buf in m._buffers.items():
            if buf is None or isinstance(buf, _core.TensorBase):
                continue
            if kinds is None or buf._vals._array.dtype.kind in kinds:
                m._buffers[name] = buf.to(dtype)


def _bfloat16_tensor(t) -> bool:
    """Whether t is a bfloat16 tensor (a float32 array under a class of its own)."""
    return t._array.dtype.kind == "f" and t.dtype is _core.bfloat16


def _check_move(module, device, fn: str) -> None:
    """A device string must parse; an unavailable device raises only when there is a tensor
    to move (PyTorch's ReLU().cuda() succeeds on a machine without CUDA)."""
    if device is None:
        return
    if is_device_like(device) and not isinstance(device, int):
        as_device(device)
    if next(_tensors(module), None) is not None:
        check_device(device, fn, allow_meta=True)


def _swap_on() -> bool:
    """torch.__future__.get_swap_module_params_on_conversion()."""
    from ... import __future__ as future
    return future.get_swap_module_params_on_conversion()


def _swap_loaded(target, src, assign: bool) -> None:
    """load_state_dict under torch.__future__'s swap switch: target.module_load(src) (a
    subclass's override decides the value) is swapped into the module's tensor object."""
    from ...utils import swap_tensors
    if not isinstance(src, _core.TensorBase):
        src = _core.wrap_array(src)
    new = target.module_load(src, assign=assign)
    if new is src or new is target:
        raise RuntimeError("module_load returned one of self or other, please .detach() the "
                           "result if returning one of the inputs in module_load")
    if isinstance(target, Parameter):
        if isinstance(new, Parameter):
            new.requires_grad_(target.requires_grad)
        else:
            new = Parameter(new, requires_grad=target.requires_grad)
    swap_tensors(target, new)


def _assign_loaded(module, name: str, target, src) -> None:
    """load_state_dict(assign=True): the checkpoint's tensor itself becomes this module's
    parameter or buffer `name` (its storage and dtype; a parameter keeps the old
    requires_grad)."""
    if not isinstance(src, _core.TensorBase):
        src = _core.wrap_array(src)
    if name in module._parameters:
        if isinstance(src, Parameter):
            src.requires_grad_(target.requires_grad)
        else:
            src = Parameter(src, requires_grad=target.requires_grad)
        module._parameters[name] = src
    else:
        module._buffers[name] = src


def _load_sparse(module, name: str, key: str, target, src, assign: bool,
                 error_msgs: list) -> None:
    """load_state_dict for an entry where the module's tensor or the checkpoint's is sparse:
    PyTorch's checks in its order (a tensor, then the shape), then copy_ into the target, whose
    own copy_ refuses a dense/sparse mix; the problems collected with the others."""
    if not _is_any_tensor(src):
        error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                          f"Tensor-like object from checkpoint but received {type(src)}")
        return
    src_shape, target_shape = list(src.shape), list(target.shape)
    if src_shape != target_shape:
        error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                          f"torch.Size({src_shape}) from checkpoint, the shape in current model "
                          f"is torch.Size({target_shape}).")
        return
    if assign and name in module._buffers:
        module._buffers[name] = src
        return
    try:
        with no_grad():
            target.copy_(src)
    except Exception as ex:
        error_msgs.append(
            f'While copying the parameter named "{key}", whose dimensions in the model are '
            f"torch.Size({target_shape}) and whose dimensions in the checkpoint are "
            f"torch.Size({src_shape}), an exception occurred : {ex.args}.")


def _module_to_dtype(module, dtype):
    """Module.to's dtype conversion, in place."""
    dt = as_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got "
                        f"desired dtype={dt}")
    if dt.is_complex:
        warnings.warn(_COMPLEX_MODULE_WARNING, UserWarning, stacklevel=3)
    # as PyTorch's: floating and complex tensors take the dtype (complex to real drops the
    # imaginary part), integer and bool ones keep theirs
    _cast(module, dt if dt is _core.bfloat16 else dt.np_dtype, kinds="fc")
