"""Forward hooks of nn.Module: the handles and the call path that runs them around forward()."""
from __future__ import annotations as _annotations

from collections import OrderedDict

from ...utils.hooks import RemovableHandle


# PyTorch's class lives in torch.utils.hooks (its repr names it there); so does this one
RemovableHandle.__module__ = "tapegrad.utils.hooks"


# -- hooks of every module (torch.nn.modules.module.register_module_*_hook) -----------------------
# PyTorch's tables, under its names: they run before each module's own hooks of the same kind.
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# Whether _global_backward_hooks are full ones (True), deprecated ones (False) or none yet.
_backward_kind = {"full": None}


def any_global_hook() -> bool:
    return bool(_global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks)


def global_backward_hooks(full: bool) -> list:
    """The global backward hooks of the kind asked for (full or deprecated)."""
    return list(_global_backward_hooks.values()) if _backward_kind["full"] is full else []


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """hook(module, args) before every module's forward (and its own pre-hooks)."""
    return add_hook(_global_forward_pre_hooks, hook, False, [])


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) after every module's forward (before its own hooks)."""
    return add_hook(_global_forward_hooks, hook, False,
                    [(_global_forward_hooks_with_kwargs, with_kwargs),
                     (_global_forward_hooks_always_called, always_call)])


def _register_global_backward(hook, full: bool) -> RemovableHandle:
    if _backward_kind["full"] is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _backward_kind["full"] = full
    return add_hook(_global_backward_hooks, hook, False, [])


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """hook(module, grad_input, grad_output) for every module, as register_full_backward_hook."""
    return _register_global_backward(hook, True)


def register_module_backward_hook(hook) -> RemovableHandle:
    """The deprecated form of register_module_full_backward_hook."""
    return _register_global_backward(hook, False)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """hook(module, grad_output) for every module, as register_full_backward_pre_hook."""
    return add_hook(_global_backward_pre_hooks, hook, False, [])


# -- registration hooks of every module (register_module_*_registration_hook) -----------------
# hook(module, name, value) when a parameter, buffer or submodule is registered (by its
# register_* method or by attribute assignment); a value it returns replaces the registered one.
_global_parameter_registration_hooks: OrderedDict = OrderedDict()
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """hook(module, name, param) -> None or a replacement, whenever a parameter (not None) is
    registered on any module."""
    return add_hook(_global_parameter_registration_hooks, hook, False, [])


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """hook(module, name, buffer) -> None or a replacement, whenever a buffer is registered on
    any module."""
    return add_hook(_global_buffer_registration_hooks, hook, False, [])


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """hook(module, name, submodule) -> None or a replacement, whenever a submodule is
    registered on any module."""
    return add_hook(_global_module_registration_hooks, hook, False, [])


def registered_value(hooks: OrderedDict, module, name: str, value):
    """value after the global registration hooks in `hooks` (each may replace it)."""
    for hook in list(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def add_hook(hooks: OrderedDict, hook, prepend: bool, flags: list) -> RemovableHandle:
    """Store hook under a fresh handle id; flags pairs a side table with whether this hook is
    in it (with_kwargs, always_call)."""
    handle = RemovableHandle(hooks, extra_dict=[table for table, _ in flags])
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for table, on in flags:
        if on:
            table[handle.id] = True
    return handle


def _either(own: dict, global_table: dict):
    return own if not global_table else {**own, **global_table}


def call_with_hooks(module, args: tuple, kwargs: dict):
    """Module.__call__ when hooks are registered: pre-hooks may replace the inputs, forward
    hooks may replace the output, always_call hooks run even when forward raises; backward
    hooks see the gradients through identities around the inputs and the output
    (_backward_hooks.py)."""
    d = module.__dict__
    pre_kw = d["_forward_pre_hooks_with_kwargs"]
    pre = [*_global_forward_pre_hooks.items(), *d["_forward_pre_hooks"].items()]
    post = [*_global_forward_hooks.items(), *d["_forward_hooks"].items()]
    post_kw = _either(d["_forward_hooks_with_kwargs"], _global_forward_hooks_with_kwargs)
    always = _either(d["_forward_hooks_always_called"], _global_forward_hooks_always_called)
    full, legacy_hooks = module._get_backward_hooks()
    legacy = bool(legacy_hooks)
    backward_hooked = bool(full or module._get_backward_pre_hooks())
    called = set()
    try:
        for hid, hook in pre:
            if hid in pre_kw:
                result = hook(module, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(module, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        if backward_hooked:
            from ._backward_hooks import wrap_inputs, wrap_outputs
            args, backward_call = wrap_inputs(module, args)
        output = module.forward(*args, **kwargs)
        for hid, hook in post:
            called.add(hid)
            if hid in post_kw:
                result = hook(module, args, kwargs, output)
            else:
                result = hook(module, args, output)
            if result is not None:
                output = result
        if backward_hooked:
            from ...tensor import Tensor
            if not isinstance(output, (Tensor, tuple)):
                import warnings
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(output)}",
                              UserWarning, stacklevel=3)
            output = wrap_outputs(backward_call, output)
        if legacy:
            hook_last_node(module, args, output)
        return output
    except Exception:
        # PyTorch runs the always_call hooks it has not run yet and re-raises forward's error.
        for hid, hook in post:
            if hid in always and hid not in called:
                try:
                    if hid in post_kw:
                        hook(module, args, kwargs, None)
                    else:
                        hook(module, args, None)
                except Exception:
                    pass
        raise


# -- Module.register_backward_hook (the deprecated, non-full form) --------------------------------
# PyTorch hangs these hooks on the grad_fn of the module's first output tensor, as node
# post-hooks: grad_input is what that one node computed for its own inputs.  It warns when that
# cannot be the module's inputs' gradients.

def hook_last_node(module, args: tuple, output) -> None:
    from ...tensor import Tensor
    var = output
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) \
            else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in module._get_backward_hooks()[1]:
        grad_fn.register_hook(_bound_to(module, hook))
    warn_non_full_backward_hook(args, output, grad_fn)


def _bound_to(module, hook):
    def call(grad_input, grad_output):
        return hook(module, grad_input, grad_output)
    call.__name__ = getattr(hook, "__name__", "hook")
    return call


_USE_FULL = " Please use register_full_backward_hook to get the documented behavior."
_DEPRECATED = " is deprecated and will be removed in future versions. This hook will be missing "


def warn_non_full_backward_hook(inputs, result, grad_fn) -> None:
    import warnings
    from ...tensor import Tensor

    def warn(message):
        warnings.warn(message, FutureWarning, stacklevel=4)

    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        warn("Using non-full backward hooks on a Module that does not return a single Tensor or "
             "a tuple of Tensors" + _DEPRECATED.replace("be missing ", "be missing some of the ")
             + "grad_output." + _USE_FULL)
        return
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        warn("Using non-full backward hooks on a Module that does not take as input a single "
             "Tensor or a tuple of Tensors" + _DEPRECATED.replace("be missing ",
                                                                  "be missing some of the ")
             + "grad_input." + _USE_FULL)
        return
    out_nodes = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and grad_fn not in out_nodes):
        warn("Using a non-full backward hook when outputs are nested in python data structure"
             + _DEPRECATED + "some grad_output.")
    elif len(out_nodes) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd "
             "Nodes" + _DEPRECATED + "some grad_output." + _USE_FULL)
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {n for n, _ in grad_fn.next_functions}:
        warn("Using a non-full backward hook when the forward contains multiple autograd Nodes"
             + _DEPRECATED + "some grad_input." + _USE_FULL)
