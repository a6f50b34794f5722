"""The autograd side of a registered operator: the autograd.Function PyTorch generates for it
(`GeneratedBackwardFor_<ns>_<name>_<overload>`, its nodes printed with that name), running the
operator's kernel forward and its registered formula backward.

The Function sees tensors only as direct arguments, so a Tensor[] argument is passed flattened
(each tensor its own argument) and rebuilt for the kernel, the formula's gradient for it (a
list) flattened back; keyword-only arguments ride along outside (PyTorch passes them to
setup_context as `keyword_only_inputs` and takes no gradient for them).
"""
from __future__ import annotations as _annotations

from . import _core


def _generated_function(entry):
    if entry._generated is not None:
        return entry._generated
    from .autograd import Function

    def forward(ctx, *flat):
        spec, kernel, kwonly = flat[-1]
        args = _unflatten(flat[:-1], spec)
        result = kernel(*args, **kwonly)
        backward, setup_context = entry.autograd or (None, None)
        if setup_context is not None:
            if any(a.kwarg_only for a in entry.schema.arguments):
                setup_context(ctx=ctx, inputs=args, keyword_only_inputs=kwonly, output=result)
            else:
                setup_context(ctx=ctx, inputs=args, output=result)
        ctx._op_spec = spec
        ctx._op_returns_list = isinstance(result, list)
        return tuple(result) if isinstance(result, list) else result

    def backward(ctx, *grads):
        backward_fn = (entry.autograd or (None, None))[0]
        if backward_fn is None:
            raise RuntimeError(f"Trying to backward through {entry} but no autograd formula "
                               f"was registered. Please use register_autograd to add one.")
        spec = ctx._op_spec
        flat_needs = ctx.needs_input_grad
        ctx.needs_input_grad = tuple(_unflatten(flat_needs[:-1], spec))
        try:
            if ctx._op_returns_list:
                grads = (list(grads),)
            result = backward_fn(ctx, *grads)
        finally:
            ctx.needs_input_grad = flat_needs
        result = result if isinstance(result, tuple) else (result,)
        return (*_flatten_grads(result, spec), None)

    name = f"GeneratedBackwardFor_{entry.ns}_{entry.opname}_{entry.overload_name}"
    entry._generated = type(name, (Function,), {"forward": staticmethod(forward),
                                                 "backward": staticmethod(backward)})
    return entry._generated


def apply_generated(entry, kernel, args, kwonly):
    """The operator's call with recording: its Generated Function applied to the flattened
    arguments; a Tensor[] result comes back as a list."""
    flat, spec = _flatten(args)
    out = _generated_function(entry).apply(*flat, (spec, kernel, kwonly))
    returns = entry.schema.returns
    if len(returns) == 1 and returns[0].is_tensor_list:
        return list(out) if isinstance(out, tuple) else [out]
    return out


def _flatten(args):
    flat, spec = [], []
    for a in args:
        if isinstance(a, (list, tuple)) and a and all(isinstance(t, _core.TensorBase) for t in a):
            flat.extend(a)
            spec.append(len(a))
        else:
            flat.append(a)
            spec.append(None)
    return flat, spec


def _unflatten(flat, spec):
    out, i = [], 0
    for n in spec:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return tuple(out)


def _flatten_grads(grads, spec):
    if len(grads) != len(spec):
        raise RuntimeError(f"function backward returned an incorrect number of gradients "
                           f"(expected {len(spec)}, got {len(grads)})")
    flat = []
    for g, n in zip(grads, spec):
        if n is None:
            flat.append(g)
        else:
            flat.extend([None] * n if g is None else list(g))
    return flat
