"""tapegrad.func: PyTorch's composable function transforms (torch.func) on the reverse-mode tape.

- grad, grad_and_value      gradient of a scalar function w.r.t. chosen arguments
- vjp                       output and a function computing vector-Jacobian products
- jvp                       Jacobian-vector product (forward mode by the double-backward trick)
- jacrev, jacfwd, hessian   full Jacobians (rows by vjp / columns by jvp) and Hessians
- functional_call           a module called with given parameters and buffers
- vmap                      a function mapped over a batch dimension

How they work here: each transform runs the function on fresh inputs that require grad and
differentiates with ``autograd.grad``.  A transform called inside another one (``grad(grad(f))``,
``hessian = jacfwd(jacrev(f))``) keeps its graph (create_graph), so the outer one differentiates
through it; at the outermost level results carry no graph.  jvp and jacfwd compute forward-mode
products with two reverse passes: for u a dummy cotangent, ``g(u) = J^T u`` is linear in u, and
the gradient of ``<g(u), v>`` with respect to u is ``J v``.

vmap runs the function once, on BatchedTensors whose ops apply batching rules (tapegrad/_vmap.py:
one op on the whole batch per op of the function, an op-level loop for ops without a rule); the
autodiff transforms above work on BatchedTensors too (a graph built on a batch is differentiated
once for all samples), so jacrev/jacfwd/hessian under vmap, and vmap of vjp/grad, run batched.
A function that draws random numbers with randomness='same' or 'different' runs as a loop over
the samples (each call draws as PyTorch's semantics say).
"""
from __future__ import annotations as _annotations

import collections.abc as _collections_abc
import contextlib as _contextlib
import functools as _functools

from . import _core, _transform_leaves, _vmap
from . import eye as _eye, zeros as _zeros
from .autograd import grad as _plain_grad
from .autograd import forward_ad as _forward_ad
from .autograd.forward_ad import tangent_pairing as _tangent_pairing
from .grad_mode import enable_grad as _enable_grad, is_grad_enabled as _is_grad_enabled
from ._random import default_generator as _default_generator
from .utils import _pytree
from ._rearrange import rearrange

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state", "vmap", "functionalize",
           "replace_all_batch_norm_modules_", "rearrange", "debug_unwrap"]

# How many transforms are running: inside one, results keep their graph for the outer one.
_depth = 0
# Whether the code that called the outermost running (or last run) transform records a graph:
# under its no_grad, PyTorch's results are plain even when they depend on parameters.
_caller_records = True


@_contextlib.contextmanager
def _transform_level():
    global _depth, _caller_records
    if _depth == 0:
        _caller_records = _is_grad_enabled()
    _depth += 1
    _core._enter_transform(1)
    try:
        with _enable_grad():
            yield
    finally:
        _depth -= 1
        _core._enter_transform(-1)


def _transforming() -> bool:
    """Whether a transform (grad, vjp, jacrev...) is running.  PyTorch's transforms always
    differentiate with grad mode on, so a backward formula that PyTorch picks by grad mode
    (linalg.det's at a singular matrix) takes its graph-mode branch inside one."""
    return _depth > 0


# Functions that take BatchedTensors as well as tensors (the originals when nothing is batched).
_zeros_like = _vmap.function("zeros_like")
_ones_like = _vmap.function("ones_like")
_stack = _vmap.function("stack")


def _autograd_grad(outputs, inputs, grad_outputs=None, **kwargs):
    """autograd.grad, through BatchedTensors inside a vmap."""
    if not _vmap.active():
        return _plain_grad(outputs, inputs, grad_outputs, **kwargs)
    return _vmap.grad(_plain_grad, outputs, inputs, grad_outputs, **kwargs)


def _is_tensor(x) -> bool:
    return isinstance(x, (_core.TensorBase, _vmap.BatchedTensor))


# -- pytrees: the nests of containers torch.utils._pytree defines ---------------------------------

def _flatten(tree):
    """(leaves, rebuild) of a pytree (tapegrad.utils._pytree: tuples, lists, dicts, named
    tuples ...; anything else is a leaf)."""
    leaves, spec = _pytree.tree_flatten(tree)
    return leaves, spec.unflatten


def _tracked(x):
    """x as a tensor this transform can differentiate with respect to: connected to x (so an
    outer transform still reaches it) when x is already in a graph, else a fresh leaf.  Inside
    a vmap it is batched at every level, so that its gradient is one per sample."""
    if _vmap.active():
        return _internal(_vmap.at_all_levels(x, leaf=True))
    if x.requires_grad:
        return x.view_as(x)
    return _internal(x.detach().requires_grad_())


def _internal(leaf):
    """A leaf this transform made (the tensor under any BatchedTensor wrappers is recorded)."""
    _transform_leaves.mark(_vmap._peel(leaf)[0])
    return leaf


def _reaches_outer_leaf(t) -> bool:
    return _transform_leaves.reaches_outer_leaf(_vmap._peel(t)[0])


def _outer(outputs) -> bool:
    """Whether the function's outputs depend on tensors of the caller's that require grad:
    then so may the derivatives computed from their graph (which holds nothing else of the
    caller's), and the results keep their graph; never when the caller runs under no_grad."""
    return _caller_records and any(_is_tensor(o) and o.requires_grad and _reaches_outer_leaf(o)
                                   for o in outputs)


def _finish(t, outer):
    """A result as the caller sees it: with its graph inside an enclosing transform, or at the
    outermost level when the function depends on tensors of the caller's that require grad
    (``outer``: PyTorch's transforms compose with autograd, so a MAML-style loss
    backpropagates through a gradient); plain otherwise."""
    if t is None or not _is_tensor(t):
        return t
    if _depth > 0 or not t.requires_grad or outer:
        return t
    return t.detach()


def _finished_aux(aux):
    """A transform's aux output as the caller sees it (each tensor _finish-ed on its own): cut
    off from the transform's own leaves, as PyTorch unwraps it, unless it depends on tensors of
    the caller's that require grad."""
    leaves, rebuild = _flatten(aux)
    return rebuild([_finish(x, _is_tensor(x) and _outer([x])) for x in leaves])


def _zero_filled_grad(outputs, inputs, grad_outputs=None, create_graph=True):
    grads = _autograd_grad(outputs, inputs, grad_outputs, retain_graph=True,
                           create_graph=create_graph, allow_unused=True)
    return [_zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _require_tensor_inputs(leaves) -> None:
    """PyTorch's refusal of a non-tensor among the inputs a transform differentiates."""
    for leaf in leaves:
        if not _is_tensor(leaf):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")


def _split_aux(result, api):
    """(output, aux) of a function called with has_aux=True: it must return a 2-tuple, and
    aux holds tensors only (as PyTorch checks; ``api`` names the transform in the message)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    for leaf in _flatten(result[1])[0]:
        if not _is_tensor(leaf):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return result


def _require_tensor_outputs(out_leaves, api) -> None:
    for o in out_leaves:
        if not _is_tensor(o):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


# -- grad ------------------------------------------------------------------------------------------

def _argnums_tuple(argnums, n_args, name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnum={a}, but only {n_args} positional inputs")
    nums = tuple(a % n_args for a in nums)
    if len(set(nums)) != len(nums):     # (one argument's gradient would be returned twice)
        raise RuntimeError(f"argnums elements must be unique, got {nums}")
    return nums


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient, value)`` of the scalar ``func`` with respect to its
    positional argument(s) ``argnums`` (an int, or a tuple giving a tuple of gradients); each
    argument may be a tensor or a nest of tuples/lists/dicts of tensors, and its gradient has the
    same structure.  ``has_aux=True``: func returns ``(output, aux)`` and the value is
    ``(output, aux)``."""
    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad")
        with _transform_level():
            args = list(args)
            flat = {}
            for a in nums:
                leaves, rebuild = _flatten(args[a])
                _require_tensor_inputs(leaves)
                leaves = [_tracked(leaf) for leaf in leaves]
                flat[a] = (leaves, rebuild)
                args[a] = rebuild(leaves)
            result = _vmap.redirect(func)(*args, **kwargs)
            if has_aux:
                output, aux = _split_aux(result, "grad_and_value(f)(*args)")
            else:
                output, aux = result, None
            if not _is_tensor(output):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   f"you wanted to use the vjp or jacrev APIs instead?")
            every = [leaf for a in nums for leaf in flat[a][0]]
            outer = _depth == 1 and _outer([output])
            if output.requires_grad:
                # (the gradient needs a graph inside another transform, or for the caller)
                grads = _zero_filled_grad([output], every, create_graph=_depth > 1 or outer)
            else:
                grads = [_zeros_like(leaf) for leaf in every]
        grads = [_finish(g, outer) for g in grads]
        per_arg, at = [], 0
        for a in nums:
            leaves, rebuild = flat[a]
            per_arg.append(rebuild(grads[at:at + len(leaves)]))
            at += len(leaves)
        gradient = tuple(per_arg) if isinstance(argnums, tuple) else per_arg[0]
        value = _finish(output, outer)
        if has_aux:
            return gradient, (value, _finished_aux(aux))
        return gradient, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of the scalar ``func`` with respect to argument(s) ``argnums`` as a function
    (``grad(f)(x)``); ``has_aux=True`` returns ``(gradient, aux)``.  Composable:
    ``grad(grad(f))`` is the second derivative."""
    both = grad_and_value(func, argnums, has_aux)

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapper


# -- vjp / jvp -------------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns the tuple of ``J^T v`` per
    primal (callable any number of times); with has_aux, ``(output, vjp_fn, aux)``."""
    with _transform_level():
        leaves, rebuild = _flatten(list(primals))
        _require_tensor_inputs(leaves)
        leaves = [_tracked(x) for x in leaves]
        result = _vmap.redirect(func)(*rebuild(leaves))
    if has_aux:
        result, aux = _split_aux(result, "vjp(f, *primals)")
    out_leaves, out_rebuild = _flatten(result)
    _require_tensor_outputs(out_leaves, "vjp(f, *primals)")
    _refuse_non_float_outputs(out_leaves)

    output_spec = _pytree.tree_structure(result)

    def vjp_fn(cotangents):
        cot_leaves, cotangent_spec = _pytree.tree_flatten(cotangents)
        if cotangent_spec != output_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{_pytree.treespec_pprint(cotangent_spec)}, primal output: "
                               f"{_pytree.treespec_pprint(output_spec)}")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{c.shape} and output[0] has a shape of {o.shape}.")
        with _transform_level():
            pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves) if o.requires_grad]
            if pairs:
                grads = _zero_filled_grad([p[0] for p in pairs], leaves, [p[1] for p in pairs],
                                          create_graph=_depth > 1 or outer)
            else:
                grads = [_zeros_like(x) for x in leaves]
        return tuple(rebuild([_finish(g, outer) for g in grads]))

    outer = _depth == 0 and _outer(out_leaves)
    output = out_rebuild([_finish(o, outer) for o in out_leaves])
    if has_aux:
        return output, vjp_fn, _finished_aux(aux)
    return output, vjp_fn


def _refuse_non_float_outputs(out_leaves) -> None:
    """PyTorch's refusal (vjp, jacrev) of an output with no cotangent space (an index tensor):
    its rows would be zeros of another dtype."""
    for o in out_leaves:
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                               f"complex Tensors, got Tensor with dtype {o.dtype}")


def _jvp_of(outputs, inputs, tangents):
    """J v for each output given the inputs (in the graph) and their tangents, by two reverse
    passes through a dummy cotangent u."""
    results = []
    for out in outputs:
        if not out.requires_grad:
            results.append(_zeros_like(out))
            continue
        u = _internal(_ones_like(out).requires_grad_())     # (see _forward_ad._tangent_of)
        gs = _autograd_grad([out], inputs, [u], retain_graph=True, create_graph=True,
                            allow_unused=True)
        total = None
        for g, t in zip(gs, tangents):
            if g is not None and g.requires_grad:
                term = _tangent_pairing(g, t)
                total = term if total is None else total + term
        if total is None:
            results.append(_zeros_like(out))
            continue
        (jv,) = _autograd_grad([total], [u], retain_graph=True, create_graph=True,
                               allow_unused=True)
        results.append(_zeros_like(out) if jv is None else jv)
    return results


def _rewrapped(tensor, levels):
    for level in levels:
        tensor = _vmap.BatchedTensor(tensor, level)
    return tensor


def _dual_of(x, tangent):
    """x (a tracked input) as a dual tensor of the open forward-AD level; inside a vmap, the
    tensor under x's BatchedTensors is made dual, with the tangent batched as x is."""
    if not _vmap.active():
        return _forward_ad.make_dual(x, tangent)
    value, levels = _vmap._peel(x)
    tangent_value, tangent_levels = _vmap._peel(_vmap.at_all_levels(tangent, leaf=False))
    assert tangent_levels == levels, (levels, tangent_levels)   # (x is at every level)
    return _rewrapped(_forward_ad.make_dual(value, tangent_value), levels)


def _dual_tangent(output):
    """An output's tangent in the open forward-AD level (zeros where it has none), batched as
    the output is."""
    if not _is_tensor(output):
        return None
    value, levels = _vmap._peel(output)
    tangent = _forward_ad.unpack_dual(value).tangent
    return _zeros_like(output) if tangent is None else _rewrapped(tangent, levels)


_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J v)`` for tangents v matching primals (both tuples); with has_aux,
    ``(output, jvp_out, aux)``."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. "
                           "it should be valid to call f(*primals).")
    leaves, rebuild = _flatten(list(primals))
    if not leaves:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to contain at least one "
                           "Tensor.")
    for p in leaves:
        if not _is_tensor(p):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to only contain "
                               f"Tensors, got {type(p)}")
    tangent_leaves, _ = _flatten(list(tangents))
    if len(tangent_leaves) != len(leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    for p, t in zip(leaves, tangent_leaves):
        for what, v in (("primal", p), ("tangent", t)):
            if not (v.dtype.is_floating_point or v.dtype.is_complex):
                raise ValueError(f"Expected {what} to be floating point or complex, but got: "
                                 f"{v.dtype}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size "
                               f"than that of the original Tensor, this is not supported. Tensor "
                               f"is of size {list(p.shape)} while the given forward gradient is "
                               f"of size {list(t.shape)}.")
    with _transform_level():
        leaves = [_tracked(x) for x in leaves]
        if _forward_ad._levels:
            # (forward_ad has one level at a time)
            result = _vmap.redirect(func)(*rebuild(leaves))
            if has_aux:
                result, aux = _split_aux(result, _JVP)
            out_leaves, out_rebuild = _flatten(result)
            _require_tensor_outputs(out_leaves, _JVP)
            jv = _jvp_of(out_leaves, leaves, tangent_leaves)
        else:
            # through dual tensors, so that a custom Function's jvp staticmethod gives its
            # outputs' tangents, as in PyTorch (J v from its backward would ignore it, and be
            # zero where that backward is not differentiable)
            with _forward_ad.dual_level():
                duals = [_dual_of(x, t) for x, t in zip(leaves, tangent_leaves)]
                result = _vmap.redirect(func)(*rebuild(duals))
                if has_aux:
                    result, aux = _split_aux(result, _JVP)
                out_leaves, out_rebuild = _flatten(result)
                _require_tensor_outputs(out_leaves, _JVP)
                jv = [_dual_tangent(o) for o in out_leaves]
    outer = _depth == 0 and _outer(out_leaves)
    output = out_rebuild([_aliased(_finish(o, outer)) for o in out_leaves])
    tangent_out = out_rebuild([_finish(j, outer) for j in jv])
    if has_aux:
        return output, tangent_out, _finished_aux(aux)
    return output, tangent_out


def _aliased(output):
    """jvp's primal output as PyTorch's unwrapping gives it to a caller whose graph it is on: an
    alias of the function's result (grad_fn AliasBackward0, the gradient passing through)."""
    if _depth > 0 or not _is_tensor(output) or not output.requires_grad:
        return output
    return _core._name_grad_fn(output.view_as(output), "AliasBackward0")


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``J v`` at ``primals`` for tangents
    shaped as the primals.  (PyTorch traces func once and replays the trace; here each call is a
    ``jvp``, the same values for a function without side effects.)"""
    output = _vmap.redirect(func)(*primals)
    primal_leaves, _ = _flatten(primals)

    def jvp_fn(*tangents):
        if _pytree.tree_structure(tangents) != _pytree.tree_structure(primals):
            raise RuntimeError("Expected the tangents to have the same argspec as the primals")
        for i, (p, t) in enumerate(zip(primal_leaves, _flatten(tangents)[0])):
            if not _is_tensor(t):
                raise RuntimeError(f"tangent:{i} is not a Tensor, but the corresponding primal "
                                   f"is")
            if t.shape != p.shape:
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree doesn't "
                                   f"match the shape {p.shape} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree doesn't "
                                   f"match the dtype {p.dtype} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` itself: PyTorch's functionalize rewrites mutations (and, with
    ``remove='mutations_and_views'``, views) into out-of-place ops for its graph capture, and
    copies the final values back into mutated inputs, so in eager mode the results and the
    inputs' final values are func's own."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n     remove='mutations': all inplace and out= operators will be "
            "removed from the program, and replaced with their out-of-place equivalents.\n     "
            "remove='mutations_and_views': In addition to the above, all aliasing operators "
            "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def debug_unwrap(tensor, *, recurse=True):
    """The tensor underneath vmap's per-sample view of ``tensor`` (batch dim first), for
    printing in a debugger; with ``recurse=False`` only the innermost vmap level is removed.
    A tensor outside any vmap is returned as it is.  (grad's inputs are plain tracked
    tensors here, with nothing to unwrap.)"""
    while _vmap._is_batched(tensor):
        tensor = tensor.value
        if not recurse:
            break
    return tensor


# -- Jacobians -------------------------------------------------------------------------------------

def _basis_stacks(tensors, dtype_of):
    """The standard basis of the tensors' joint space, stacked: one tensor per given tensor,
    of shape (total numel, *its shape), row k the k-th basis vector's part."""
    total = sum(t.numel() for t in tensors)
    stacks, at = [], 0
    for t in tensors:
        n = t.numel()
        part = _eye(total, dtype=dtype_of(t))[:, at:at + n] if total else \
            _zeros((0, 0), dtype=dtype_of(t))
        stacks.append(part.reshape((total,) + tuple(t.shape)))
        at += n
    return stacks, total


def _mapped_in_chunks(fn, stacks, total, chunk_size, randomness="error"):
    """vmap(fn)(*stacks) (each result leaf stacked on dim 0), ``chunk_size`` rows at a time."""
    if chunk_size is None or chunk_size >= total:
        return list(vmap(fn, randomness=randomness)(*stacks))
    parts = [vmap(fn, randomness=randomness)(*[s.narrow(0, at, min(chunk_size, total - at))
                                               for s in stacks])
             for at in range(0, total, chunk_size)]
    cat = _vmap.function("cat")
    return [cat([p[k] for p in parts]) for k in range(len(parts[0]))]


def _jacobian(func, argnums, has_aux, forward, chunk_size=None, randomness="error"):
    name = "jacfwd" if forward else "jacrev"
    api = _JVP if forward else "vjp(f, *primals)"   # (PyTorch's Jacobians run through these)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"{name}: `chunk_size` should be greater than 0.")

    @_functools.wraps(func)
    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), name)
        with _transform_level():
            args = list(args)
            per_arg = {}
            at = 0
            for a in nums:
                leaves, rebuild = _flatten(args[a])
                for i, x in enumerate(leaves, at):
                    if _is_tensor(x) and x.is_complex():   # (a Jacobian of real inputs only)
                        raise RuntimeError(f"{name}: Expected all inputs to be real but received "
                                           f"complex tensor at flattened input idx: {i}")
                at += len(leaves)
                if forward:
                    for x in leaves:
                        if _is_tensor(x) and not (x.is_floating_point() or x.is_complex()):
                            raise ValueError(f"Expected primal to be floating point or complex, "
                                             f"but got: {x.dtype}")
                else:
                    _require_tensor_inputs(leaves)
                leaves = [_tracked(x) for x in leaves]
                per_arg[a] = (leaves, rebuild)
                args[a] = rebuild(leaves)
            inputs = [leaf for a in nums for leaf in per_arg[a][0]]

            def outputs_at(new_inputs):
                call, at = list(args), 0
                for a in nums:
                    count = len(per_arg[a][0])
                    call[a] = per_arg[a][1](new_inputs[at:at + count])
                    at += count
                result = _vmap.redirect(func)(*call)
                return _split_aux(result, api) if has_aux else (result, None)

            # One evaluation: the outputs (and aux).  jacrev: vmap over the outputs' basis of
            # its vector-Jacobian product.  jacfwd: vmap over the inputs' basis of a
            # Jacobian-vector product, func evaluated again on inputs batched over the basis
            # (all columns in one batched evaluation and one pair of reverse sweeps).
            result, aux = outputs_at(inputs)
            out_leaves, out_rebuild = _flatten(result)
            _require_tensor_outputs(out_leaves, api)
            if not forward:
                _refuse_non_float_outputs(out_leaves)

            def evaluate():
                tracked = [_tracked(x) for x in inputs]
                return tracked, _flatten(outputs_at(tracked)[0])[0]

            # blocks[i][j]: d output i / d input j, shape out_i.shape + in_j.shape
            blocks = [[None] * len(inputs) for _ in out_leaves]
            if forward:
                stacks, total = _basis_stacks(inputs, lambda t: t.dtype)

                def columns(*tangents):
                    with _transform_level():
                        if _forward_ad._levels:      # (one level at a time)
                            tracked, outs = evaluate()
                            return tuple(_jvp_of(outs, tracked, list(tangents)))
                        # through dual tensors, as jvp (a custom Function's jvp staticmethod)
                        with _forward_ad.dual_level():
                            duals = [_dual_of(_tracked(x), t) for x, t in zip(inputs, tangents)]
                            outs = _flatten(outputs_at(duals)[0])[0]
                            return tuple(_dual_tangent(o) for o in outs)
                try:
                    cols = _mapped_in_chunks(columns, stacks, total, chunk_size, randomness) \
                        if total else [_zeros((0,) + tuple(o.shape), dtype=o.dtype)
                                       for o in out_leaves]
                except _vmap.DataDependentError:
                    # func reads its inputs' data (.item(), a mask): the batched evaluation
                    # batches the primals with the tangents, and vmap refuses; PyTorch batches
                    # only the tangents, so the Jacobian exists: one column at a time, unbatched
                    per_col = [columns(*[s[k] for s in stacks]) for k in range(total)]
                    cols = [_stack([c[i] for c in per_col]) for i in range(len(out_leaves))]
                at = 0
                for j, x in enumerate(inputs):
                    n = x.numel()
                    for i, o in enumerate(out_leaves):
                        part = cols[i].narrow(0, at, n).reshape((n, o.numel()))
                        # splitting each of the transposed dims is always a view: PyTorch
                        # unflattens with view(), so the block's grad_fn is ViewBackward0
                        blocks[i][j] = part.t().view(tuple(o.shape) + tuple(x.shape))
                    at += n
            else:
                stacks, total = _basis_stacks(out_leaves, lambda t: t.dtype)

                # Nested in another transform (hessian's jacfwd(jacrev)), every row is needed
                # with its graph: func is evaluated again on inputs batched over the basis and
                # swept once; at the top, rows are sweeps of the one evaluation's graph, as the
                # un-mapped vjp's (vmap(jacrev(f)) then equals jacrev of the summed batch).
                batched = _depth > 1
                create_graph = _depth > 1 or _outer(out_leaves)

                def rows(*cotangents):
                    with _transform_level():
                        if batched:
                            tracked, outs = evaluate()
                        else:
                            tracked, outs = inputs, out_leaves
                        pairs = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
                        if not pairs:
                            return tuple(_zeros_like(x) for x in tracked)
                        return tuple(_zero_filled_grad([p[0] for p in pairs], tracked,
                                                       [p[1] for p in pairs], create_graph))
                if not total:
                    grads = [_zeros((0,) + tuple(x.shape), dtype=x.dtype) for x in inputs]
                else:
                    grads = None
                    if batched:
                        try:
                            grads = _mapped_in_chunks(rows, stacks, total, chunk_size)
                        except _vmap.DataDependentError:
                            # func reads its inputs' data, which the batched evaluation batches
                            # (see jacfwd's columns): one row at a time, each its own evaluation
                            pass
                    if grads is None:
                        # vmap of rows over an unbatched graph is a sweep per row: run directly
                        per_row = [rows(*[s[k] for s in stacks]) for k in range(total)]
                        grads = [_stack([r[j] for r in per_row]) for j in range(len(inputs))]
                at = 0
                for i, o in enumerate(out_leaves):
                    m = o.numel()
                    for j, x in enumerate(inputs):
                        blocks[i][j] = grads[j].narrow(0, at, m).reshape(tuple(o.shape) +
                                                                         tuple(x.shape))
                    at += m
        outer = _depth == 0 and _outer(out_leaves)
        results = []
        for i in range(len(out_leaves)):
            per_input, at = [], 0
            for a in nums:
                leaves, rebuild = per_arg[a]
                per_input.append(rebuild([_finish(b, outer) for b in
                                          blocks[i][at:at + len(leaves)]]))
                at += len(leaves)
            results.append(tuple(per_input) if isinstance(argnums, tuple) else per_input[0])
        jac = out_rebuild(results)
        return (jac, _finished_aux(aux)) if has_aux else jac
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func with respect to argument(s) ``argnums`` by reverse mode: shape
    ``output.shape + input.shape`` (nested like the outputs, then like argnums).  func runs
    once; the rows are vmap of its vector-Jacobian product over the basis of the outputs (one
    reverse sweep of that graph per row; ``chunk_size`` is accepted, rows are never
    materialised together beyond the result)."""
    return _jacobian(func, argnums, has_aux, forward=False, chunk_size=chunk_size)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to argument(s) ``argnums`` by forward mode: all columns
    at once, vmap of a Jacobian-vector product over the basis of the inputs."""
    return _jacobian(func, argnums, has_aux, forward=True, randomness=randomness)


def hessian(func, argnums=0):
    """The Hessian of the scalar func: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- functional_call -------------------------------------------------------------------------------

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors
    of ``parameter_and_buffer_dicts`` (a dict of dotted names, or a sequence of dicts); the
    module's own tensors are restored afterwards.  Names not given keep the module's tensors
    (``strict=True`` requires exactly the module's names)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        replacements = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, _collections_abc.Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        replacements = {}
        repeated = []
        for d in parameter_and_buffer_dicts:
            repeated += [k for k in d if k in replacements and k not in repeated]
            replacements.update(d)
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if tie_weights:
        replacements = _untie(module, replacements)
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        unexpected = sorted(set(replacements) - expected)
        missing = sorted(expected - set(replacements))
        if unexpected or missing:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected)
                             + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError("\n".join(lines))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    saved = []
    try:
        for name, value in replacements.items():
            saved.append((name, _swap_tensor(module, name, value)))
        return module(*args, **(kwargs or {}))
    finally:
        restored = {name: _swap_tensor(module, name, old) for name, old in reversed(saved)}
        # As PyTorch, a tensor forward assigned in place of a given one (`self.buf = buf + x`)
        # is written back into the caller's dict (when one dict was given).
        if isinstance(parameter_and_buffer_dicts, dict):
            parameter_and_buffer_dicts.update({k: restored[k] for k in parameter_and_buffer_dicts
                                               if k in restored})


def _swap_tensor(module, name: str, value):
    """Put value under the dotted name (a parameter, a buffer, or any other attribute, such as a
    parametrized tensor, whose setter then runs: PyTorch's swap goes through setattr); return what
    was there (_MISSING when nothing: restoring _MISSING deletes the attribute)."""
    from .tensor import Tensor
    # (a BatchedTensor is a sample's tensor under vmap: the module then runs once on the whole
    # batch of parameters, as PyTorch's vmap over functional_call does)
    if value is not _MISSING and value is not None and \
            not isinstance(value, (Tensor, _vmap.BatchedTensor)):
        raise TypeError(f"{value} is not an instance of torch.Tensor")
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        try:
            owner = getattr(owner, part)
        except AttributeError:
            raise AttributeError(f"{owner._get_name()} has no attribute `{part}`") from None
    for store in (owner._parameters, owner._buffers):
        if leaf in store:
            old = store[leaf]
            if value is _MISSING:
                del store[leaf]
            else:
                store[leaf] = value
            return old
    old = getattr(owner, leaf) if hasattr(owner, leaf) else _MISSING
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{leaf}`: {old} is not an instance of torch.Tensor")
    if value is not _MISSING:
        setattr(owner, leaf, value)
    elif hasattr(owner, leaf):
        delattr(owner, leaf)
    return old


_MISSING = object()


def _untie(module, replacements: dict) -> dict:
    """replacements extended to every other name of a tensor the module holds under several names
    (tied weights: a value given for one name replaces them all, as PyTorch's tie_weights=True).
    Two different values for names of one tensor are ambiguous, and refused."""
    names_of = {}
    named = list(module.named_parameters(remove_duplicate=False)) + \
        list(module.named_buffers(remove_duplicate=False))
    for name, tensor in named:
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(replacements)
    for given in [n for n in replacements if n in tied]:
        group = tied[given]
        if len({id(replacements[n]) for n in group if n in replacements}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, "
                             "which are tied. Consider using tie_weights=False")
        for name in group:
            untied[name] = replacements[given]
    return untied


def stack_module_state(models):
    """Stack the parameters and buffers of ``models`` (same class, same train/eval mode) into two
    dicts of dotted names, each tensor with a new leading dimension of ``len(models)``: the input
    ``vmap(functional_call ...)`` needs to run an ensemble.  Stacked parameters are new leaves
    (detached from the models' own), so an optimizer can train the stack directly."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    first_type = type(models[0])
    if not all(type(m) is first_type for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """``root`` with every batch-norm module in it (root included) made to keep no running
    statistics: running_mean, running_var and num_batches_tracked set to None and
    track_running_stats to False, so each normalises with its batch's own statistics (what a
    vmap over a BatchNorm needs: one set of running statistics cannot take every sample's
    update).  In place; returns root."""
    from .nn.modules.normalization import _BatchNorm
    for module in root.modules():       # (modules() starts with root itself)
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def _stacked_leaf(tensors, name):
    from . import stack
    requires_grad = [t.requires_grad for t in tensors]
    if any(requires_grad) and not all(requires_grad):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    if all(requires_grad):
        result = result.detach().requires_grad_()
    return result


# -- vmap ------------------------------------------------------------------------------------------

def _func_name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _dims_per_leaf(dims, tree):
    """One dim per leaf of ``tree``: ``dims`` a pytree prefix of it (an int or None standing for
    a whole subtree), broadcast as PyTorch's vmap broadcasts in_dims and out_dims; None when it
    does not fit the tree or holds something other than ints and None."""
    per_leaf = _pytree._broadcast_to_and_flatten(dims, _pytree.tree_structure(tree))
    if per_leaf is None or any(d is not None and not isinstance(d, int) for d in per_leaf):
        return None
    return per_leaf


def _check_in_dims(func, in_dims, args):
    name = _func_name(func)
    if in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to "
                         f"be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if isinstance(in_dims, int):
        return [in_dims] * len(args)
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to "
                         f"be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         f"compatible with the structure of `inputs`. in_dims has structure "
                         f"{in_dims} but inputs has {len(args)} leaves.")
    return list(in_dims)


def _mapped_leaves(func, in_dims, args):
    """[(leaf, dim or None)] over all positional args' leaves, and how to rebuild the args."""
    name = _func_name(func)
    pairs, rebuilders = [], []
    for arg, dim in zip(args, _check_in_dims(func, in_dims, args)):
        leaves, rebuild = _flatten(arg)
        dims = _dims_per_leaf(dim, arg)
        if dims is None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                             f"not compatible with the structure of `inputs`.")
        for leaf, d in zip(leaves, dims):
            if d is None:
                pairs.append((leaf, None))
                continue
            if not _is_tensor(leaf):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                                 f"use None as the respective in_dim")
            if isinstance(d, bool):     # (PyTorch reads the mapped size with size(d))
                raise TypeError(f"size(): argument 'dim' (position 1) must be int, not bool")
            n = leaf.dim()
            if not -n <= d < n:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                                 f"for some input, but that input is a Tensor of dimensionality "
                                 f"{n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
            pairs.append((leaf, d % n))
        rebuilders.append((len(leaves), rebuild))
    return pairs, rebuilders


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int, or one entry per
    positional argument, None for arguments passed whole), its outputs stacked along
    ``out_dims`` (None: an output that does not vary, returned once).

    func runs once, on BatchedTensors: each op runs once on the whole batch by its batching
    rule, so the results equal the un-mapped ops run on the batch; an op without a rule runs
    once per sample (see tapegrad/_vmap.py).  ``randomness``: 'error' raises if func draws
    random numbers; 'different' (each sample draws its own) and 'same' (every sample gets the
    same draws) run func once per sample."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    name = _func_name(func)

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        pairs, rebuilders = _mapped_leaves(func, in_dims, args)
        sizes = [leaf.shape[d] for leaf, d in pairs if d is not None]
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one "
                             f"input must be a Tensor mapped over (in_dim not None); got "
                             f"in_dims={in_dims}")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        if chunk_size is not None and chunk_size < sizes[0]:
            return _vmap_in_chunks(func, name, pairs, rebuilders, sizes[0], in_dims, out_dims,
                                   randomness, chunk_size, kwargs)
        # func runs batched first in every randomness mode: PyTorch's refusals of data-dependent
        # calls (.item(), nonzero, boolean masks) hold in 'same' and 'different' too, and a
        # function that draws nothing gives the batched result.  One that draws random numbers
        # runs again, once per sample, from the generator state before the batched run.
        state = _default_generator.get_state()
        with _vmap._level(sizes[0]) as level:
            leaves = [leaf if d is None else
                      _vmap.BatchedTensor(leaf.movedim(d, 0) if d else leaf, level)
                      for leaf, d in pairs]
            try:
                result = _vmap.redirect(func)(*_rebuild_args(rebuilders, leaves), **kwargs)
            except (_vmap.DataDependentError, _vmap.UnbatchedWriteError):
                # (never answered by the per-sample loop: a write into a tensor not mapped
                # over would then happen once per sample, silently)
                _default_generator.set_state(state)
                raise
            except Exception as exc:
                if randomness == "error" and not (isinstance(exc, TypeError)
                                                  and "BatchedTensor" in str(exc)):
                    raise
                # A function the namespaces' wrappers do not reach (bound to another name
                # before vmap, a plain tensor's method) met a BatchedTensor, or a random op
                # without a batched form: run func once per sample instead, outside this level
                # (its samples are plain tensors) -- unless it writes batched values into a
                # tensor not mapped over, which the loop would do once per sample.
                _default_generator.set_state(state)
                _refuse_unbatched_writes(func, rebuilders, leaves, kwargs)
                _default_generator.set_state(state)
            else:
                if _same_state(state, _default_generator.get_state()):
                    return _unbatch_outputs(name, result, out_dims, level, sizes[0])
                _default_generator.set_state(state)
                if randomness == "error":
                    raise RuntimeError("vmap: called random operation while in randomness error "
                                       "mode. Please either use the 'same' or 'different' "
                                       "randomness flags on vmap or perform the randomness "
                                       "operation out of vmap")
        return _vmap_by_loop(func, name, pairs, rebuilders, sizes[0], out_dims, randomness, kwargs)
    return wrapper


def _refuse_unbatched_writes(func, rebuilders, leaves, kwargs):
    """Run func batched again with plain tensors' in-place methods guarded
    (tapegrad/_vmap_plain_writes.py): raises PyTorch's error if it writes a batched value into a
    tensor not mapped over; any other failure is left to the per-sample loop."""
    from . import _vmap_plain_writes
    with _vmap_plain_writes.guarded():
        try:
            _vmap.redirect(func)(*_rebuild_args(rebuilders, leaves), **kwargs)
        except _vmap.UnbatchedWriteError:
            raise
        except Exception:
            pass


def _rebuild_args(rebuilders, leaves):
    call_args, at = [], 0
    for count, rebuild in rebuilders:
        call_args.append(rebuild(leaves[at:at + count]))
        at += count
    return call_args


def _out_dims_per_leaf(name, out_dims, result):
    """One out_dim per leaf of the mapped function's result (a 1-tuple of out_dims also fits a
    single tensor, as in PyTorch)."""
    if not (out_dims is None or isinstance(out_dims, (int, tuple, list, dict))):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         f"None or a python collection of ints representing where in the "
                         f"outputs the vmapped dimension should appear.")
    if _is_tensor(result) and isinstance(out_dims, tuple) and len(out_dims) == 1:
        out_dims = out_dims[0]
    dims = _dims_per_leaf(out_dims, result)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`.")
    return dims


def _non_tensor_output(name, value, dim):
    """PyTorch's error for a mapped function's output that is not a tensor (with a hint about
    out_dims=None when that output was to be batched)."""
    hint = " Did you mean to set out_dims= to None for output?" if dim is not None else ""
    return ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                      f"type {type(value)}.{hint}")


def _unbatch_outputs(name, result, out_dims, level, size):
    leaves, rebuild = _flatten(result)
    dims = _out_dims_per_leaf(name, out_dims, result)
    out = []
    for leaf, dim in zip(leaves, dims):
        if not _is_tensor(leaf) and dim is not None:
            raise _non_tensor_output(name, leaf, dim)
        if dim is None:     # (any Python value may be returned whole, as in PyTorch)
            if isinstance(leaf, _vmap.BatchedTensor) and leaf.level == level:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 f"when out_dim is None")
            out.append(leaf)
            continue
        out.append(_vmap.unbatch(leaf, level, size, dim))
    return rebuild(out)


def _vmap_in_chunks(func, name, pairs, rebuilders, size, in_dims, out_dims, randomness,
                    chunk_size, kwargs):
    """vmap over ``chunk_size`` samples at a time, the chunks' outputs concatenated."""
    whole = vmap(func, in_dims, out_dims, randomness)
    state = _default_generator.get_state()
    per_chunk = []
    for start in range(0, size, chunk_size):
        if randomness == "same":
            _default_generator.set_state(state)
        n = min(chunk_size, size - start)
        leaves = [leaf if d is None else leaf.narrow(d, start, n) for leaf, d in pairs]
        per_chunk.append(whole(*_rebuild_args(rebuilders, leaves), **kwargs))
    dims = _out_dims_per_leaf(name, out_dims, per_chunk[0])
    per_chunk = [_flatten(chunk) for chunk in per_chunk]
    leaves0, rebuild = per_chunk[0]
    cat = _vmap.function("cat")
    out = [leaves0[k] if dim is None else
           cat([chunk[0][k] for chunk in per_chunk], dim % (leaves0[k].dim()))
           for k, dim in enumerate(dims)]
    return rebuild(out)


def _vmap_by_loop(func, name, pairs, rebuilders, size, out_dims, randomness, kwargs):
    """vmap as a loop over the samples (random functions: each call draws its own numbers,
    or, with randomness='same', the same ones)."""
    state = _default_generator.get_state()
    probe = _has_none(out_dims) and not any(leaf.requires_grad for leaf, d in pairs
                                            if d is not None)
    # func runs once per sample here, where PyTorch runs it once: a write into an input that is
    # not mapped over would happen once per sample (the last sample's values would win).
    shared = [leaf for leaf, d in pairs if d is None and _is_tensor(leaf)]
    versions = [_vmap._peel(leaf)[0]._version for leaf in shared]
    per_index = []
    for i in range(size):
        if randomness == "same":
            _default_generator.set_state(state)
        leaves = [leaf if d is None else
                  leaf.select(d, i).detach().requires_grad_() if probe else
                  leaf.select(d, i) for leaf, d in pairs]
        per_index.append(_vmap.redirect(func)(*_rebuild_args(rebuilders, leaves), **kwargs))
        if size > 1 and [_vmap._peel(leaf)[0]._version for leaf in shared] != versions:
            raise _vmap.unbatched_write_error()
    return _stack_outputs(name, per_index, out_dims, probe)


def _has_none(out_dims) -> bool:
    return out_dims is None or (isinstance(out_dims, (tuple, list))
                                and any(d is None for d in _flatten(list(out_dims))[0]))


def _same_state(a, b) -> bool:
    return bool((a._array == b._array).all())


def _stack_outputs(name, per_index, out_dims, probed):
    flat = [_flatten(r) for r in per_index]
    leaves0, rebuild = flat[0]
    dims = _out_dims_per_leaf(name, out_dims, per_index[0])
    stacked = []
    for k, dim in enumerate(dims):
        column = [f[0][k] for f in flat]
        if dim is None and not _is_tensor(column[0]):
            stacked.append(column[0])       # returned whole (the first sample's), as in PyTorch
            continue
        for value in column:
            if not _is_tensor(value):
                raise _non_tensor_output(name, value, dim)
        if probed:      # the private graph of the probe stays inside vmap
            batched = column[0].requires_grad
            column = [c.detach() for c in column]
        else:
            batched = False
        if dim is None:
            if batched or any(not bool((c == column[0]).all()) for c in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 f"when out_dim is None")
            stacked.append(column[0])
            continue
        n = column[0].dim() + 1
        if not -n <= dim < n:
            raise ValueError(f"vmap({name}, ...): out_dim={dim} is out of range for an output "
                             f"of dimensionality {n - 1}")
        stacked.append(_stack(column, dim % n))
    return rebuild(stacked)
