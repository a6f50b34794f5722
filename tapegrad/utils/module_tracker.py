"""torch.utils.module_tracker: which modules are running, forward and backward.

``ModuleTracker`` keeps ``parents``, the set of the fully qualified names of the modules whose
forward is running ("Global" always in it); FlopCounterMode files each count under all of them.
As PyTorch's, it follows the backward too, with tensor hooks: a module enters when the gradient
of one of its outputs is computed and leaves when the gradients of all its inputs that require
grad are.  A module whose inputs need no gradient (the first layer) so stays in ``parents`` until
the backward ends, and the modules it shares that stretch with are counted under it too:
PyTorch's numbers, kept as they are.
"""
from __future__ import annotations as _annotations

import logging
import weakref

from .. import _core
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


def _grad_tensors(tree):
    """The distinct tensors in `tree` that require grad (a tensor passed twice counts once)."""
    leaves, _ = tree_flatten(tree)
    found = {}
    for leaf in leaves:
        if isinstance(leaf, _core.TensorBase) and leaf.requires_grad:
            found.setdefault(id(leaf), leaf)
    return list(found.values())


def _on_first_gradient(tensors, fn):
    """fn() once per backward pass, when the first of `tensors`' gradients is computed."""
    seen = {"pass": None}

    # (the hook holds no tensor: a tensor's hook holding it is a cycle through its record,
    # which the garbage collector cannot see)
    alone = weakref.ref(tensors[0]) if len(tensors) == 1 else None

    def hook(grad):
        current = _core._backward_pass()
        if seen["pass"] is current:
            return
        if alone is not None and _core._is_sole_backward_root(alone()):
            return
        seen["pass"] = current
        fn()
    return [t.register_hook(hook) for t in tensors]


def _on_all_gradients(tensors, fn):
    """fn() once per backward pass, when the gradients of all `tensors` are computed, or when
    the pass ends if it leaves some of them out (PyTorch's multi-grad hook fires as soon as the
    last of those the pass reaches is in; which those are, tapegrad's sweep does not say)."""
    state = {"pass": None, "pending": 0}

    def fire_once():
        if state["pending"]:
            state["pending"] = 0
            fn()

    count = len(tensors)

    def hook(grad):
        current = _core._backward_pass()
        if state["pass"] is not current:
            state["pass"], state["pending"] = current, count
            _core._queue_backward_callback(fire_once)
        if state["pending"]:
            state["pending"] -= 1
            if not state["pending"]:
                fn()
    return [t.register_hook(hook) for t in tensors]


# (A module whose one output is the tensor a backward starts from alone is not entered, as
# PyTorch's multi-grad hook over it never fires: its engine does not count that node among those
# it will execute.  So a model whose forward returns the loss is not entered by loss.backward():
# its backward FLOPs are filed under its submodules and Global, not under it.)
class ModuleTracker:
    """Context manager: ``parents`` is the set of the names of the modules running (their
    forward, or their backward), "Global" always among them; ``is_bw`` whether a backward is
    running.  A module first seen running is named by its class, the modules under it by their
    path from it ("GPT.blocks.0.attn")."""

    def __init__(self) -> None:
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()
        self._seen_modules = weakref.WeakSet()
        self._has_callback = False

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running on this thread."""
        return _core._backward_pass() is not None

    def _maybe_set_engine_callback(self) -> None:
        # the backward's end clears what it left in parents (the modules it entered and, having
        # no input that required grad, never left)
        if self._has_callback:
            return

        def reset() -> None:
            self.parents = {"Global"}
            self._has_callback = False
        _core._queue_backward_callback(reset)
        self._has_callback = True

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _get_append_fn(self, name, is_bw):
        def enter(*args) -> None:
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)
        return enter

    def _get_pop_fn(self, name, is_bw):
        def leave(*args) -> None:
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a "
                            "Module that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")
        return leave

    def _fw_pre_hook(self, mod, input) -> None:
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = _grad_tensors(input)
        # (backward: the module is left once its inputs' gradients are in.  The hooks' handles
        # are not kept: the tracker would then hold the tensors' records, through a cycle the
        # garbage collector cannot see, past the tensors' lives)
        if tensors:
            _on_all_gradients(tensors, self._get_pop_fn(name, True))

    def _fw_post_hook(self, mod, input, output) -> None:
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = _grad_tensors(output)
        if tensors:         # (backward: the module is entered with its outputs' gradients)
            _on_first_gradient(tensors, self._get_append_fn(name, True))

    def __enter__(self):
        from ..nn.modules import _hooks
        self._fw_pre_handle = _hooks.register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = _hooks.register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
