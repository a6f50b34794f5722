"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory.

`checkpoint(fn, *args)` keeps none of `fn`'s intermediate activations; when backward needs them
it re-runs `fn` from the same inputs and the same random state (so dropout draws the same mask).
The gradients are those of the un-checkpointed call.  The two variants are PyTorch's:

- use_reentrant=True (the default when the argument is omitted, after a warning): a custom
  autograd Function runs `fn` without recording; its backward re-runs `fn` recorded and calls
  backward on that graph.  Its outputs require grad only when some tensor input does.
- use_reentrant=False: `fn` runs recorded, under saved-tensor hooks that keep only a handle of
  each value its operations save; the first unpack during a backward re-runs `fn` and answers the
  handles with the values it saved, in order (_Recomputation).  The graph is the ordinary one,
  so closures over parameters, nested inputs and outputs, create_graph and inputs returned as
  they are behave as without checkpointing.
"""
from __future__ import annotations as _annotations

import contextlib
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
        with no_grad():
            return run(*inputs[:n_args])

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
            with enable_grad():
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
    if use_reentrant:
        run = (lambda *a: function(*a[:len(args)], **kwargs)) if kwargs else function
        check_backward_validity(args)
        return CheckpointFunction.apply(run, preserve_rng_state, len(args), *args)
    return _Recomputation(function, args, kwargs, preserve_rng_state, context_fn,
                          determinism_check).run()


class _Handle:
    """What the graph keeps of a value saved inside a non-reentrant checkpoint: its place in the
    order the region's operations saved values (the value itself is dropped)."""

    __slots__ = ("index", "__weakref__")

    def __init__(self, index):
        self.index = index


class _Recomputation:
    """checkpoint(use_reentrant=False) as PyTorch builds it: the function runs with grad on, so
    its operations are recorded as usual (outputs, closures over parameters, nested structures
    all take part in the graph), but under saved-tensor hooks whose pack keeps only a _Handle.
    The first unpack during a backward re-runs the function from the same inputs and random
    state under hooks that collect what it saves, in the same order, and each handle is answered
    with its recomputed value."""

    def __init__(self, function, args, kwargs, preserve_rng_state, context_fn,
                 determinism_check):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng_state = get_rng_state() if preserve_rng_state else None
        self.context_fn = context_fn
        self.determinism_check = determinism_check
        # the tensor inputs and their versions: a recomputation from an input written since
        # would give other values (PyTorch's frame saves them for backward, version-checked)
        self.inputs = [(t, t._version) for t in _tensors_in((args, kwargs))]
        self.metadata = []          # (shape, dtype) of each value saved in the forward
        self.recomputed = None

    def run(self):
        forward_context, self.recompute_context = self.context_fn()
        from ..autograd.graph import saved_tensors_hooks
        with saved_tensors_hooks(self._pack, self._unpack), forward_context:
            return self.function(*self.args, **self.kwargs)

    def _pack(self, tensor):
        self.metadata.append((tuple(tensor.shape), tensor.dtype))
        return _Handle(len(self.metadata) - 1)

    def _unpack(self, handle):
        if self.recomputed is None:
            self._recompute()
        if handle.index >= len(self.recomputed):
            raise CheckpointError(
                "torch.utils.checkpoint: trying to unpack a value saved during the forward pass "
                "that the recomputation did not save: the checkpointed function took another "
                "path when it was run again")
        return self.recomputed[handle.index]

    def _recompute(self):
        from .. import _core
        from ..autograd.graph import saved_tensors_hooks
        for t, version in self.inputs:
            if t._version != version:
                raise _core.modified_in_place_error(t._array, _core._grad_fn_name_of(t),
                                                    t._version, version)
        recomputed = []

        def collect(tensor):
            # (detached, the recomputed graph is dropped; with its requires_grad, which a
            # custom Function's backward sees on its saved tensors, as a nested reentrant
            # checkpoint's does)
            value = tensor.detach()
            value.requires_grad = tensor.requires_grad
            recomputed.append(value)

        detached = detach_variable(tuple(self.args))
        current = get_rng_state()
        if self.rng_state is not None:
            set_rng_state(self.rng_state)
        try:
            with enable_grad(), saved_tensors_hooks(collect, lambda _: None), \
                    self.recompute_context:
                # (held to the end of the block: pack runs for the last operations' values as
                # the hooks' context exits, while their records live, as in the forward)
                outputs = self.function(*detached, **self.kwargs)   # noqa: F841
        finally:
            set_rng_state(current)    # the recomputation must not advance the caller's stream
        if self.determinism_check != "none":
            for i, ((shape, dtype), t) in enumerate(zip(self.metadata, recomputed)):
                if tuple(t.shape) != shape or t.dtype != dtype:
                    raise CheckpointError(
                        "torch.utils.checkpoint: Recomputed values for the following tensors "
                        "have different metadata than during the forward pass.\n"
                        f"tensor at position {i}:\nsaved metadata: {{'shape': "
                        f"torch.Size({list(shape)}), 'dtype': {dtype}}}\nrecomputed metadata: "
                        f"{{'shape': torch.Size({list(t.shape)}), 'dtype': {t.dtype}}}\n")
        self.recomputed = recomputed


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
