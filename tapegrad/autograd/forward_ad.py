"""tapegrad.autograd.forward_ad: forward-mode AD (dual tensors) as PyTorch spells it.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        jvp = forward_ad.unpack_dual(y).tangent

tapegrad has no tangent propagation per op; a dual tensor is a tensor recorded on the reverse
tape, and ``unpack_dual`` computes the tangent of a result when asked, by the double-backward
trick: for a dummy cotangent u, ``g(u) = J^T u`` is linear in u, so the gradient of
``sum_i <g_i(u), tangent_i>`` with respect to u is ``J tangent`` (two reverse passes per
unpack).  Values equal PyTorch's forward-mode results; differences: a dual tensor (and what is
computed from it) has ``requires_grad=True`` (it lives on the reverse tape), and ops without a
twice-differentiable backward give no tangent.  A tangent that depends on tensors of the
caller's that require grad (through a primal or a tangent) is differentiable, as PyTorch's
(forward-over-reverse).

Custom ``autograd.Function``s with a ``jvp`` staticmethod: as in PyTorch, ``apply`` calls ``jvp``
once, eagerly, with the tangents of the Function's inputs (None for an input without one), and
the outputs become tangent sources of the level, like ``make_dual``'s results.  So that the
unpacking sweeps do not also reach the inputs through the Function's reverse record (which would
count the inputs' tangents twice, or call a ``backward`` the Function may not have), that record
passes no gradient to its inputs while an unpack sweep runs (``_unpacking``).  A Function without
``jvp`` applied to inputs with tangents raises PyTorch's NotImplementedError.
"""
from __future__ import annotations as _annotations

import contextlib
import sys
from collections import namedtuple

from .. import _core, _transform_leaves
from ..creation import ones_like as _ones_like, zeros_like as _zeros_like
from ..grad_mode import enable_grad

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

# The open levels (PyTorch allows one at a time on CPU), each a list of tangent sources
# (dual, tangent, dual's version when it became a source: _check_unwritten).
_levels: list = []
# How many unpack sweeps are running (custom Functions with a jvp cut their inputs off then).
_unpacking = 0
# How many Function jvp staticmethods are running (Functions they apply get no tangents).
_computing_jvp = 0
# A serial number per opened level, parallel to _levels.
_serials: list = []
_next_serial = 0


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """A dual tensor's primal value and its tangent (None when it has none)."""

    __slots__ = ()


def enter_dual_level() -> int:
    """Open a forward-AD level and return its index (use ``dual_level()`` as a context)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    global _next_serial
    _levels.append([])
    _next_serial += 1
    _serials.append(_next_serial)
    return len(_levels) - 1


def exit_dual_level(*, level=None) -> None:
    """Close the current level: its dual tensors lose their tangents."""
    if not _levels and level is None:
        raise RuntimeError("Dual level must be a positive number.")    # (PyTorch's level -1)
    if not _levels or (level is not None and level != len(_levels) - 1):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _levels.pop()
    _serials.pop()


class dual_level(contextlib.ContextDecorator):
    """Context manager (and decorator) within which dual tensors carry tangents."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def make_dual(tensor, tangent, *, level=None):
    """A tensor with ``tensor``'s values whose tangent is ``tangent`` (same shape), for the
    current level; results computed from it have tangents ``unpack_dual`` returns."""
    if not _levels or level == -1:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if level is not None and level != len(_levels) - 1:
        raise RuntimeError("Invalid level given to _make_dual")
    if not isinstance(tensor, _core.TensorBase) or not isinstance(tangent, _core.TensorBase):
        from .._vmap import BatchedTensor
        if isinstance(tensor, BatchedTensor) or isinstance(tangent, BatchedTensor):
            # (inside a vmap: PyTorch's vmap has no rule for it either; gradcheck's batched
            # forward check makes its dual outside the vmap)
            raise RuntimeError("Batching rule not implemented for aten::_make_dual; the fallback "
                               "path doesn't work on out= or view ops.")
        raise TypeError("make_dual(): expected tensor and tangent to be Tensors")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    inexact = tensor.is_floating_point() or tensor.is_complex()
    if not (inexact and (tangent.is_floating_point() or tangent.is_complex())):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}" if not inexact else
                         f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if _has_tangent(tensor):
        # (PyTorch would have to replace the tangent the tensor already carries)
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {len(_levels) - 1} is not supported.")
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else \
            _transform_leaves.mark(tensor.detach().requires_grad_())
    _levels[-1].append((dual, tangent, dual._version))  # the object: unpack_dual hands it back
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: its values, and its tangent with respect to the
    level's dual tensors (None when it depends on none of them)."""
    if _levels and level is not None and level != -1 and level != len(_levels) - 1:
        raise RuntimeError("Invalid level given to _fw_primal")
    if not _levels or level == -1 or not isinstance(tensor, _core.TensorBase):
        return UnpackedDualTensor(tensor, None)
    duals = _levels[-1]
    _check_unwritten(duals)
    for dual, tangent, _ in reversed(duals):   # (the latest: an input a Function wrote in place)
        if dual is tensor:
            return UnpackedDualTensor(_primal(tensor), tangent)
    if not tensor.requires_grad or not duals:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_primal(tensor), _tangent_of(tensor, duals))


def _has_tangent(tensor) -> bool:
    """Whether ``tensor`` carries a tangent of the open level: it is a tangent source, or its
    graph reaches one (only a tensor on the tape can: the reverse sweep's unused inputs say)."""
    duals = _levels[-1]
    if not tensor.requires_grad or not duals:
        return False
    if any(dual is tensor for dual, _, _ in duals):
        return True
    global _unpacking
    from . import grad as _grad
    _unpacking += 1     # (as an unpack sweep: Functions with a jvp pass nothing to their inputs)
    try:
        with enable_grad():
            probe = tensor.view_as(tensor)  # (a tensor of the caller's may be a leaf itself)
            grads = _grad([probe], [d for d, _, _ in duals], [_ones_like(tensor)],
                          retain_graph=True, allow_unused=True)
    finally:
        _unpacking -= 1
    return any(g is not None for g in grads)


def _check_unwritten(duals) -> None:
    """Refuse to unpack once a tangent source was written in place after it became one.  Its
    tangent is the sweeps' gradient with respect to the source's record, and a recorded write
    moves the tensor onto a new record (a write under no_grad records nothing): the tangents
    from that tensor, and of results computed from it before the write, would silently be
    wrong.  (PyTorch propagates the tangent through the write; an input a Function wrote in
    place has a later entry, taken after the write.)"""
    latest = {}
    for entry in duals:
        latest[id(entry[0])] = entry
    for dual, _, version in latest.values():
        if dual._version != version:
            raise RuntimeError(
                "tapegrad: a dual tensor (or its primal) was modified by an in-place operation "
                "after make_dual; forward AD in tapegrad cannot follow that write and its "
                "tangents would be wrong. Use the out-of-place form (d = d * 2), or write "
                "before make_dual.")


def _primal(tensor):
    """A dual tensor's primal: cut off from the leaves this module made (it requires grad only
    to be on the tape), but differentiable, as in PyTorch, when it is computed from a tensor of
    the caller's that requires grad; detached there, a loss built from the primal would
    silently miss that tensor's gradient."""
    if _transform_leaves.reaches_outer_leaf(tensor):
        return tensor.view_as(tensor)
    return tensor.detach()


def tangent_pairing(g, tangent):
    """The real number whose gradient in the dummy cotangent u is J tangent, for g = J^T u as
    the reverse pass gives it: sum(g * tangent), and for complex values Re sum(g conj(tangent)).
    (PyTorch's reverse pass gives conj(ds/dz) u + ds/dconj(z) conj(u); the gradient of that
    real part in u, under the same convention, is ds/dz t + ds/dconj(z) conj(t): the JVP.)"""
    if g.is_complex() or tangent.is_complex():
        return (g * tangent.conj()).real.sum()
    return (g * tangent).sum()


def _tangent_of(tensor, duals):
    """J tangent for ``tensor`` with respect to the level's tangent sources (None when it
    depends on none of them), by two reverse passes through a dummy cotangent u."""
    global _unpacking
    from . import grad as _grad
    inputs = [d for d, _, _ in duals]
    _unpacking += 1
    try:
        with enable_grad():
            # (J^T u is linear in u, so any u gives the same J tangent; ones rather than
            # zeros, where a backward's own derivative in its cotangent can be singular:
            # logcumsumexp's works with log|u|, NaN at u = 0)
            u = _transform_leaves.mark(_ones_like(tensor).requires_grad_())
            grads = _grad([tensor], inputs, [u], retain_graph=True, create_graph=True,
                          allow_unused=True)
            total = None
            for g, (_, tangent, _) in zip(grads, duals):
                if g is not None and g.requires_grad:
                    term = tangent_pairing(g, tangent)
                    total = term if total is None else total + term
            if total is None:
                return _zeros_like(tensor) if any(g is not None for g in grads) else None
            (jv,) = _grad([total], [u], retain_graph=True, allow_unused=True,
                          create_graph=_keeps_graph(total))
    finally:
        _unpacking -= 1
    return jv if jv is not None else _zeros_like(tensor)


def _keeps_graph(tangent) -> bool:
    """Whether a tangent computed from ``tangent``'s graph must stay differentiable: as
    PyTorch's, when it depends on tensors of the caller's that require grad (through a primal's
    graph or the tangents), and inside a torch.func transform (func.jvp itself, or a grad/jacrev
    around it, whose inputs are leaves of the transform's own)."""
    func = sys.modules.get("tapegrad.func")
    return (func is not None and func._depth > 0) or \
        _transform_leaves.reaches_outer_leaf(tangent)


# -- custom autograd.Function jvp ------------------------------------------------------------------

def _is_native_op(cls) -> bool:
    """Whether a Function is one tapegrad implements a native PyTorch op with (not the user's,
    nor one PyTorch itself writes in Python, which has no jvp there either)."""
    from .function import _LIBRARY
    return (cls.__module__.partition(".")[0] == _LIBRARY
            and not getattr(cls, "_torch_python_function", False))


def _input_tangents(cls, args):
    """Called by ``Function.apply`` while a level is open, before forward runs: the tangents of
    its tensor arguments (None where none), or None when ``_function_jvp`` has nothing to do.
    Before forward, because a forward that writes an input in place (mark_dirty) rebases that
    input onto the Function's own record, whose backward would then give its tangent."""
    if _computing_jvp:
        # applied inside another Function's jvp: the tensors there (its tangents, its saved
        # primals) are plain values, as in PyTorch, not dual tensors of the level
        return None
    from .function import Function, _is_overridden
    if not _is_overridden(cls, "jvp", Function.jvp) and _is_native_op(cls):
        # one of tapegrad's ops written as a Function (cumsum, nansum...): PyTorch's op has a
        # forward derivative, here the double-backward trick through its recorded backward (no
        # tangent asked for: that would sweep again through the backwards calling this)
        return None
    tangents = [unpack_dual(a).tangent if isinstance(a, _core.TensorBase) and a.requires_grad
                else None for a in args]
    return None if all(t is None for t in tangents) else tangents


def _function_jvp(cls, ctx, args, tangents, out) -> None:
    """Called by ``Function.apply`` after forward with the ``_input_tangents``: the outputs'
    tangents from the Function's ``jvp``, registered as tangent sources."""
    global _computing_jvp
    from .function import Function, _is_overridden
    has_jvp = _is_overridden(cls, "jvp", Function.jvp)
    if getattr(ctx, "materialize_grads", True):
        # PyTorch gives a float input without a tangent zeros (None after
        # ctx.set_materialize_grads(False), and for other arguments)
        tangents = [_zeros_like(a) if t is None and isinstance(a, _core.TensorBase) and
                    (a.is_floating_point() or a.is_complex()) else t
                    for a, t in zip(args, tangents)]
    if not has_jvp:
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")
    from ..grad_mode import no_grad
    # inside jvp, ctx.saved_tensors are only what forward gave save_for_forward: nothing when
    # it saved for backward only (PyTorch's: `x, = ctx.saved_tensors` then fails in jvp)
    saved = getattr(ctx, "saved_for_forward", None)
    ctx._forward_saved = tuple(saved) if saved is not None else ()
    _computing_jvp += 1
    try:
        # (one of tapegrad's ops, made of recorded ops: its tangent stays differentiable, for
        # forward-over-reverse and jacrev(jacfwd(f)), as PyTorch's native forward derivative)
        with enable_grad() if _is_native_op(cls) else no_grad():
            result = cls.jvp(ctx, *tangents)
    finally:
        _computing_jvp -= 1
        ctx._forward_saved = None
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(outs):
        raise RuntimeError(f"{cls.__name__}.jvp returned an incorrect number of tangents "
                           f"(expected {len(outs)}, got {len(results)})")
    level = _levels[-1]
    # only that level's unpack sweeps stop at this record (its serial: a reference to the level
    # would make a cycle ctx -> level -> output -> record -> ctx through the tape)
    ctx._tangent_source = _serials[-1]
    for o, t in zip(outs, results):
        if t is None or not isinstance(o, _core.TensorBase):
            continue
        if tuple(t.shape) != tuple(o.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                               f"that of the original Tensor, this is not supported. Tensor is "
                               f"of size {list(o.shape)} while the given forward gradient is of "
                               f"size {list(t.shape)}.")
        if t.requires_grad and not _keeps_graph(t):
            t = t.detach()              # (a native op's jvp ran recorded: see above)
        level.append((o, t, o._version))
