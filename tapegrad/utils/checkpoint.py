"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory.

`checkpoint(fn, *args)` runs `fn` without recording (no intermediate activations are kept), and
when backward reaches its outputs it re-runs `fn` with recording on, from the same inputs and
the same random state (so dropout draws the same mask), and backpropagates through that
recomputation.  The gradients are those of the un-checkpointed call.

Both `use_reentrant` variants use this recomputation (a custom autograd Function whose backward
calls backward on the recomputed graph).  What differs, as in torch: with use_reentrant=True
(the default when the argument is omitted, after a warning) the outputs only require grad when
some tensor input does; with use_reentrant=False the parameters of `fn` when it is a Module (or a
bound method of one) are also inputs, so they get gradients even when no input requires grad.
A plain closure over parameters, with no input requiring grad, gets none (torch's non-reentrant
variant finds those through saved-tensor hooks, which tapegrad's tape does not have).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import warnings

from .. import get_rng_state, is_tensor, set_rng_state
from ..autograd import backward as _backward
from ..autograd.function import Function
from ..grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "CheckpointError",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "DefaultDeviceType"]

_PASS_USE_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
    "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
    "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
    "the two variants.")
_PASS_USE_REENTRANT_SEQUENTIAL = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
    "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
    "the two variants.")


class CheckpointError(RuntimeError):
    """Raised when a checkpointed region's recomputation does not match its first run."""


def check_backward_validity(inputs) -> None:
    """Warn when no tensor among `inputs` requires grad (the checkpoint's gradients would be None)."""
    if not any(inp.requires_grad for inp in inputs if is_tensor(inp)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def detach_variable(inputs: tuple) -> tuple:
    """The tuple with each tensor replaced by a detached copy keeping its requires_grad flag
    (other values pass through), the leaves a recomputation starts from."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if is_tensor(inp):
            copy = inp.detach()
            copy.requires_grad = inp.requires_grad
            inp = copy
        out.append(inp)
    return tuple(out)


def _tensors_in(value):
    if is_tensor(value):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


def get_device_states(*args) -> tuple[list, list]:
    """The accelerator device ids `args`' tensors live on and those devices' random states, for
    a recomputation to replay; CPU and meta tensors have none (the CPU state is saved apart)."""
    on_device = [t for t in _tensors_in(args) if t.device.type not in ("cpu", "meta")]
    ids = [t.get_device() for t in on_device]
    states = []
    if on_device:
        device_module = _device_module(on_device[0].device.type)
        states = [device_module.get_rng_state(i) for i in ids]
    return ids, states


def _device_module(device_type: str):
    return importlib.import_module(f"{__package__.rpartition('.')[0]}.{device_type}")


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the random states get_device_states saved, one per device id."""
    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    device_module = _device_module(device_type)
    for device, state in zip(devices, states):
        with device_module.device(device):
            device_module.set_rng_state(state)


def noop_context_fn():
    """checkpoint's default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class DefaultDeviceType:
    """The device type whose random states checkpointing saves when no tensor is on an
    accelerator: the current accelerator's, else "cpu" (the only one tapegrad has)."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            DefaultDeviceType._default_device_type = "cpu"
        return DefaultDeviceType._default_device_type


class CheckpointFunction(Function):
    """forward: run the function unrecorded; backward: re-run it recorded and backpropagate."""

    _torch_python_function = True     # (PyTorch's is Python too: its profiler shows it)

    @staticmethod
    def forward(ctx, run, preserve_rng_state, n_args, *inputs):
        ctx.run = run
        ctx.n_args = n_args
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        # The tensor inputs are saved for backward as PyTorch's CheckpointFunction saves them:
        # so a second backward without retain_graph raises, and so does a recomputation from an
        # input written in place since the forward (it would compute a silently wrong gradient).
        # Non-tensor arguments pass through as they are.
        ctx.tensor_positions = [i for i, v in enumerate(inputs) if is_tensor(v)]
        ctx.inputs = [None if is_tensor(v) else v for v in inputs]
        ctx.save_for_backward(*[inputs[i] for i in ctx.tensor_positions])
        # use_reentrant=False is no custom Function in PyTorch: an output that is (a view of) an
        # input is an ordinary view there, which in-place ops may write
        ctx._plain_output_views = getattr(run, "non_reentrant", False)
        with no_grad(), run.forward_context:
            outputs = run(*inputs[:n_args])
        if ctx._plain_output_views:
            # an input returned as it is stays that very tensor without the custom Function
            # (checkpoint() puts it back in place of the Function's output)
            as_tuple = outputs if isinstance(outputs, tuple) else (outputs,)
            run.returned_inputs = [(j, i) for j, out in enumerate(as_tuple) if is_tensor(out)
                                   for i, inp in enumerate(inputs[:n_args]) if out is inp]
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, saved in zip(ctx.tensor_positions, ctx.saved_tensors):
            inputs[i] = saved
        detached = detach_variable(tuple(inputs))
        current = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)
        try:
            with enable_grad(), ctx.run.recompute_context:
                outputs = ctx.run(*detached[:ctx.n_args])
        finally:
            set_rng_state(current)    # the recomputation must not advance the caller's stream
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if is_tensor(o) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [d.grad if is_tensor(d) and d.requires_grad else None for d in detached]
        return (None, None, None) + tuple(input_grads)


def _module_parameters(function):
    from ..nn import Module
    owner = function if isinstance(function, Module) else getattr(function, "__self__", None)
    if isinstance(owner, Module):
        return [p for p in owner.parameters() if p.requires_grad]
    return []


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its activations; backward recomputes them.

    Gradients equal those of calling ``function`` directly.  The global random state is saved
    before the call and restored for the recomputation (``preserve_rng_state=False`` skips it), so
    dropout inside draws the same mask twice.  Omitting ``use_reentrant`` warns (UserWarning) and
    uses ``True``, as torch 2.13 does; see the module docstring for the two variants' difference.
    Keyword arguments are only accepted with ``use_reentrant=False`` (ValueError otherwise).
    ``context_fn`` (use_reentrant=False) returns two context managers: the forward runs inside
    the first, the recomputation inside the second.  ``determinism_check`` and ``debug`` are
    accepted for signature parity.
    """
    if use_reentrant is None:
        warnings.warn(_PASS_USE_REENTRANT, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is None:
        context_fn = noop_context_fn
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
    elif determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if not is_grad_enabled():  # nothing to backpropagate through: just call it
        return function(*args, **kwargs)
    run = functools.partial((lambda *a: function(*a[:len(args)], **kwargs)) if kwargs
                            else function)
    run.forward_context, run.recompute_context = context_fn()
    if use_reentrant:
        check_backward_validity(args)
        return CheckpointFunction.apply(run, preserve_rng_state, len(args), *args)
    run.non_reentrant = True
    out = CheckpointFunction.apply(run, preserve_rng_state, len(args), *args,
                                   *_module_parameters(function))
    if run.returned_inputs:
        if not isinstance(out, tuple):
            return args[run.returned_inputs[0][1]]
        out = list(out)
        for j, i in run.returned_inputs:
            out[j] = args[i]
        out = tuple(out)
    return out


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequential model in ``segments`` chunks: each chunk but the last runs under
    :func:`checkpoint`, the last runs normally.  ``functions`` is an ``nn.Sequential`` or a list
    of modules / functions applied in order.  Omitting ``use_reentrant`` warns and uses True."""
    if use_reentrant is None:
        warnings.warn(_PASS_USE_REENTRANT_SEQUENTIAL, UserWarning, stacklevel=2)
        use_reentrant = True
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = Sequential(*functions[start:end + 1]) if all(_is_module(f) for f in functions[start:end + 1]) \
            else _Chain(functions[start:end + 1])
        input = checkpoint(chunk, input, use_reentrant=use_reentrant, **kwargs)
    for function in functions[end + 1:]:
        input = function(input)
    return input


def _is_module(value) -> bool:
    from ..nn import Module
    return isinstance(value, Module)


class _Chain:
    """Plain functions applied one after the other (a segment that is not all Modules)."""

    def __init__(self, functions):
        self.functions = functions

    def __call__(self, value):
        for function in self.functions:
            value = function(value)
        return value
