"""The removal step shared by the reparametrizations that work through a forward pre-hook
(weight_norm, spectral_norm, pruning): find the hook, let it undo what it installed, drop it."""

from __future__ import annotations as _annotations

from collections.abc import Callable


def remove_pre_hook(module, matches: Callable[[object], bool]) -> bool:
    """Remove the first forward pre-hook of ``module`` for which ``matches(hook)`` holds, after
    its ``remove(module)`` has restored the plain parameter; whether one was found."""
    hooks = module._forward_pre_hooks
    for key, hook in list(hooks.items()):
        if matches(hook):
            hook.remove(module)
            del hooks[key]
            return True
    return False
