"""Module backward hooks (register_full_backward_hook / register_full_backward_pre_hook).

As in PyTorch, a module call with backward hooks passes the tensors of its positional inputs
through one identity autograd.Function and the tensors of its output through another:

  * the output identity's backward receives the gradients w.r.t. the outputs (grad_output); the
    backward pre-hooks run there and may replace them;
  * the input identity's backward receives the gradients w.r.t. the inputs (grad_input), once
    everything inside the module has been differentiated; the full backward hooks run there,
    hook(module, grad_input, grad_output), and may return a replacement grad_input.

When no input requires grad there is no input identity: the hooks run from the output
identity's backward with grad_input all None, and may not replace it.
"""
from __future__ import annotations as _annotations

import warnings

from ... import _core
from ...autograd.function import Function
from ...grad_mode import is_grad_enabled
from ...tensor import Tensor


_OUTPUT_SIDE_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
    "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.")


def _needs_grad(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


class _HookCall:
    """The state one module call shares between its output and input identities."""

    def __init__(self, module, n_args: int) -> None:
        self.module = module
        self.n_args = n_args
        self.grad_positions = None      # which positional args went through the input identity
        self.grad_output = None
        # The hooks registered when the module was called run, as PyTorch's (one removed
        # before backward still runs for this call).
        self.hooks = module._get_backward_hooks()[0]
        self.pre_hooks = module._get_backward_pre_hooks()

    def run_pre_hooks(self, grad_output: tuple) -> tuple:
        for hook in self.pre_hooks:
            result = hook(self.module, grad_output)
            if result is None:
                continue
            # (a sequence, as PyTorch reads it: a tensor counts its rows)
            if len(result) != len(grad_output):
                raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(result)}, but expected "
                                   f"{len(grad_output)}")
            grad_output = tuple(result)
        return grad_output

    def run_hooks(self, grad_input: tuple, replaceable: bool) -> tuple:
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is None:
                continue
            if not replaceable:
                if any(r is not None for r in result):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
                continue
            if len(result) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(result)}, but expected {len(grad_input)}")
            grad_input = tuple(result)
        return grad_input


class BackwardHookFunction(Function):
    """Identity on the tensors it is given; its backward hands their gradients to `on_grads`
    (the module's hooks), whose result it returns in their place.  PyTorch hands the hooks
    zeros for an input whose gradient is missing and None for such an output: `materialize`."""

    _torch_python_function = True     # (PyTorch's is Python too: its profiler shows it)

    @staticmethod
    def forward(ctx, on_grads, materialize, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(materialize)
        # (a tensor that does not require grad passes as it came: its gradient is zeros)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors if len(tensors) > 1 else tensors[0]

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *ctx.on_grads(grads))


def wrap_inputs(module, args: tuple):
    """args with their tensors passed through the input identity when one of them requires
    grad (grad_input then holds zeros for those that do not, as PyTorch's), and the call's
    state (None when nothing records, so no hook can fire)."""
    if not is_grad_enabled():
        return args, None
    call = _HookCall(module, len(args))
    if not any(_needs_grad(a) for a in args):
        return args, call
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    call.grad_positions = positions

    def on_grads(grads):
        if call.grad_output is None:
            # The gradient reached the inputs without passing the outputs' identity (an output
            # in a dict, a double backward): PyTorch runs no hook then.
            return grads
        grad_input = [None] * call.n_args
        for i, g in zip(positions, grads):
            grad_input[i] = g
        grad_input = call.run_hooks(tuple(grad_input), replaceable=True)
        # (spent, as PyTorch's BackwardHook resets its grad_outputs: a later backward through
        # the input identity alone - the double backward of create_graph's gradients - runs no
        # hook; they ran again on the stale outputs and scaled it, fuzz 67401624)
        call.grad_output = None
        return tuple(grad_input[i] for i in positions)

    passed = BackwardHookFunction.apply(on_grads, True, *(args[i] for i in positions))
    passed = passed if isinstance(passed, tuple) else (passed,)
    new_args = list(args)
    for i, t in zip(positions, passed):
        new_args[i] = t
    return tuple(new_args), call


def wrap_outputs(call, output):
    """output with its tensors passed through the output identity (same structure)."""
    if call is None:
        return output
    single = isinstance(output, Tensor)
    items = [output] if single else list(output) if isinstance(output, (tuple, list)) else None
    if items is None:
        return output
    positions = [i for i, o in enumerate(items) if _needs_grad(o)]
    if not positions:
        return output

    n_items = len(items)

    def on_grads(grads):
        # (n_items, not items: the list comes to hold this Function's outputs, whose node holds
        # this closure in its ctx - a cycle through the tape that the collector cannot see, so
        # every hooked call's graph, buffers and all, stayed alive)
        grad_output = [None] * n_items
        for i, g in zip(positions, grads):
            grad_output[i] = g
        grad_output = call.run_pre_hooks(tuple(grad_output))
        call.grad_output = grad_output
        if call.grad_positions is None:     # no input identity will run: the hooks run here
            # (PyTorch warns whenever this side fires, with backward pre-hooks alone too, naming
            # the user's line that called backward)
            warnings.warn(_OUTPUT_SIDE_WARNING, UserWarning, stacklevel=_core.user_stacklevel())
            call.run_hooks((None,) * call.n_args, replaceable=False)
        return tuple(grad_output[i] for i in positions)

    passed = BackwardHookFunction.apply(on_grads, False, *(items[i] for i in positions))
    passed = passed if isinstance(passed, tuple) else (passed,)
    for i, t in zip(positions, passed):
        items[i] = t
    if single:
        return items[0]
    return type(output)(items) if not hasattr(output, "_fields") else type(output)(*items)
