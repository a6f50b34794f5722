"""Forward hooks of nn.Module: the handles and the call path that runs them around forward()."""
from __future__ import annotations

import itertools
from collections import OrderedDict


class RemovableHandle:
    """What Module.register_forward_(pre_)hook returns: .remove() unregisters the hook from
    every dict it was put in (the hook dict and its kwargs / always_call side tables)."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict, extra_dicts=()) -> None:
        self.id = next(RemovableHandle._next_id)
        self._dicts = (hooks_dict,) + tuple(extra_dicts)

    def remove(self) -> None:
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def add_hook(hooks: OrderedDict, hook, prepend: bool, flags: list) -> RemovableHandle:
    """Store hook under a fresh handle id; flags pairs a side table with whether this hook is
    in it (with_kwargs, always_call)."""
    handle = RemovableHandle(hooks, tuple(table for table, _ in flags))
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for table, on in flags:
        if on:
            table[handle.id] = True
    return handle


def call_with_hooks(module, args: tuple, kwargs: dict):
    """Module.__call__ when hooks are registered: pre-hooks may replace the inputs, forward
    hooks may replace the output, always_call hooks run even when forward raises; backward
    hooks see the gradients through identities around the inputs and the output
    (_backward_hooks.py)."""
    d = module.__dict__
    pre, pre_kw = d["_forward_pre_hooks"], d["_forward_pre_hooks_with_kwargs"]
    post, post_kw = d["_forward_hooks"], d["_forward_hooks_with_kwargs"]
    always = d["_forward_hooks_always_called"]
    backward_hooked = bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks"))
    called = set()
    try:
        for hid, hook in list(pre.items()):
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
        for hid, hook in list(post.items()):
            called.add(hid)
            if hid in post_kw:
                result = hook(module, args, kwargs, output)
            else:
                result = hook(module, args, output)
            if result is not None:
                output = result
        if backward_hooked:
            output = wrap_outputs(backward_call, output)
        return output
    except Exception:
        # PyTorch runs the always_call hooks it has not run yet and re-raises forward's error.
        for hid, hook in list(post.items()):
            if hid in always and hid not in called:
                try:
                    if hid in post_kw:
                        hook(module, args, kwargs, None)
                    else:
                        hook(module, args, None)
                except Exception:
                    pass
        raise
