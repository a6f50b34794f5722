"""Custom differentiable operations: tapegrad.autograd.Function, as torch.autograd.Function.

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad

    y = Square.apply(x)

`apply` runs `forward` without recording, then links its outputs into the tape with one record for
the call (whose backward is this class's `backward`) and one small record per differentiable
output (see src/tapegrad/ops_function.pxi).  The ctx is the outputs' grad_fn, an instance of
`<Name>Backward`, as in PyTorch.  The sweep calls `_backward` below (the one place the compiled
sweep calls Python for a built-in mechanism): it materialises missing output gradients, calls the
user's backward and checks what it returns as PyTorch's engine does.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import functools
import inspect
from collections import OrderedDict
import sys
import warnings
import weakref

import numpy as np

from .. import _core
from .._profiling import recording_profiler
from ..grad_mode import no_grad
from .._torch_names import TorchNamedClass as _TorchNamedClass
from .._torch_names import object_repr as _object_repr

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]

_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


# PyTorch's error for a saved value written in place since (the sweeps' too)
_modified_in_place_error = _core.modified_in_place_error


class _SavedOutput:
    """A saved output of the Function itself.  Holding the output tensor would make a cycle
    through the tape (output -> its record -> the Function record -> ctx -> output) that nothing
    could collect, so the ctx keeps a weak reference and a graph-free alias of its storage."""

    __slots__ = ("ref", "alias", "index", "cls")

    def __init__(self, out, index):
        self.ref = weakref.ref(out)
        self.alias = out.detach()
        self.index = index
        # a bfloat16 output (float32 storage marked by its class: tapegrad/_bfloat16.py) comes
        # back as one, or the formula in backward computes unrounded float32 with float32's
        # dtype; a user's Tensor subclass comes back a plain tensor, as PyTorch's
        self.cls = type(out) if getattr(type(out), "_dtype_class", False) else None
        if self.cls is not None and type(self.alias) is not self.cls:
            self.alias.__class__ = self.cls

    def get(self, ctx):
        out = self.ref()
        if out is not None:
            return out
        # Dead: during backward, revive it from its record (it then has its grad_fn again).
        nodes = ctx.__dict__.get("_output_nodes")
        if nodes is not None and nodes[self.index] >= 0:
            out = _core._resurrect(nodes[self.index], self.alias)
            if self.cls is not None and type(out) is not self.cls:
                out.__class__ = self.cls
            self.ref = weakref.ref(out)
            return out
        if nodes is not None and _core.is_grad_enabled():
            # A backward with create_graph=True reads a saved output that died without receiving a
            # gradient (an output the loss did not use): its record is gone, and the plain alias
            # would carry no graph, so a second derivative would silently miss its terms.  As
            # PyTorch rebuilds it from the Function node, the graph sweep passes this Function's
            # record after the output records' indices, and the output comes back as a new
            # output of that record.
            n_out = len(ctx._output_meta)
            if len(nodes) > n_out and nodes[n_out] >= 0:
                out = _core._revive_function_output(nodes[n_out], self.index, self.alias)
                if self.cls is not None and type(out) is not self.cls:
                    out.__class__ = self.cls
                self.ref = weakref.ref(out)
                return out
            raise RuntimeError(
                f"{type(ctx).__name__}: backward with create_graph=True needs saved output "
                f"{self.index} of the Function, which is no longer referenced and received no "
                "gradient, so its graph is gone (tapegrad cannot rebuild it yet). Keep a "
                "reference to that output until the backward has run.")
        return self.alias


class FunctionCtx:
    """The context a Function's forward and backward share (PyTorch's FunctionCtx)."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read them back with ctx.saved_tensors."""
        # (checked by apply once forward returns, and only when the call is recorded: PyTorch
        # lets a Function run on plain numbers, or without grad, whatever it saves)
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare input tensors that forward modified in place (and returns)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Declare outputs that get no gradient (they do not require grad)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool):
        """Whether backward receives zeros (True, default) or None for outputs that got no
        gradient."""
        self.materialize_grads = bool(value)

    mark_shared_storage = None

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward (each checked against in-place changes); inside
        ``jvp``, those given to save_for_forward."""
        for_jvp = self.__dict__.get("_forward_saved")
        if for_jvp is not None:
            return for_jvp
        saved = self.__dict__.get("_saved")
        if saved is None:
            if self.__dict__.get("_released"):
                raise RuntimeError(_BACKWARD_TWICE)
            return tuple(self.__dict__.get("to_save", ()))
        out = []
        for entry in saved:
            if entry is None:
                out.append(None)
                continue
            holder, version, expected = entry
            if version is None:         # a sparse COO tensor: kept as saved, unversioned
                out.append(holder)
                continue
            if isinstance(holder, _HookPacked):
                t = holder.unpack()
                if _core._version_of(t) is not version:
                    # the hook made a copy: no write can reach it; under create_graph (grad
                    # mode on in the backward) it must still lead back to the saved tensor
                    out.append(holder.on_graph(t, self) if _core.is_grad_enabled() else t)
                    continue
                if _core.is_grad_enabled() and not t.requires_grad:
                    # the hook gave back the saved tensor itself, which has left its place in
                    # the graph since: an in-place op's out-of-place result whose record self
                    # then adopted (_shift_ops._become_result; exp2_ under identity hooks or
                    # save_on_cpu lost its second derivative's terms through the result, fuzz
                    # 60661550).  (on_graph leaves a tensor that never had a place as it is.)
                    t = holder.on_graph(t, self)
            else:
                t = holder.get(self) if isinstance(holder, _SavedOutput) else holder
            if version.value != expected:
                # (PyTorch names the node a saved output came from, this one, whatever wrote
                # it since: "output 0 of F", not of the CopySlices of a setitem)
                name = self.name() if isinstance(holder, _SavedOutput) else \
                    _core._grad_fn_name_of(t)
                raise _modified_in_place_error(t._array, name, version.value, expected)
            out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning,
                      stacklevel=2)
        return self.saved_tensors


class BackwardCFunction(FunctionCtx, metaclass=_TorchNamedClass):
    """Base of the `<Name>Backward` classes: a custom Function's ctx, which is also its outputs'
    grad_fn (PyTorch: `y.grad_fn.some_attribute` reads what forward stored on ctx).  Like Tensor,
    the classes and their instances print under PyTorch's module name
    (`<torch.autograd.function.MyFnBackward object at 0x...>`), as a tutorial printing
    `y.grad_fn` shows under PyTorch."""

    _forward_cls: type

    def name(self) -> str:
        return type(self).__name__

    def apply(self, *grads):
        """Call the Function's backward directly (torch: grad_fn.apply)."""
        return self._forward_cls.backward(self, *grads)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> None or new grad_inputs, after this node's backward
        (grad_inputs: one entry per tensor argument of forward, None where no gradient flows;
        grad_outputs: one per output, None where none arrived).  Module.register_backward_hook
        hangs its hooks here when a module's last op is a Function (a convolution)."""
        return self._add_node_hook("_node_post_hooks", fn, "register_hook")

    def register_prehook(self, fn):
        """fn(grad_outputs) -> None or new grad_outputs, before this node's backward runs."""
        return self._add_node_hook("_node_pre_hooks", fn, "register_prehook")

    def _add_node_hook(self, table: str, fn, name: str):
        from ..utils.hooks import RemovableHandle
        # A replay would run the recorded steps without this Python: a compiled call that
        # registers one runs eagerly instead (as for a built-in op's node).
        _core._capture_unsupported(f"it registers a hook on a grad_fn inside the call ({name})")
        hooks = self.__dict__.get(table)
        if hooks is None:               # (an OrderedDict: the handle refers to it weakly)
            hooks = self.__dict__[table] = OrderedDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    @property
    def next_functions(self):
        """((node, output index), ...) per tensor argument of forward: the grad_fn (or the
        AccumulateGrad node of a leaf) its gradient flows to, None where none flows."""
        return self.__dict__.get("_next_functions", ())

    @property
    def metadata(self) -> dict:
        """A dict for the user's own annotations of this node (PyTorch's Node.metadata)."""
        return self.__dict__.setdefault("_metadata", {})

    def __repr__(self):
        cls = type(self)
        if cls.__dict__.get("_builtin_node") or cls.__qualname__[-1].isdigit():
            # a built-in op's node (CumsumBackward0, StackBackward0 of a GRU layer,
            # NotImplemented) prints as PyTorch's C++ nodes do, without a module; a user
            # Function's is `<Name>Backward`
            return f"<{cls.__qualname__} object at {id(self):#x}>"
        return _object_repr(self)


class FunctionMeta(_TorchNamedClass):
    """Creates each Function's `<Name>Backward` ctx class."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = "tapegrad.autograd.function"
        backward_cls.__qualname__ = name + "Backward"
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


_LIBRARY = __package__.partition(".")[0]


def _shows_in_profiler(cls) -> bool:
    """Whether PyTorch's profiler would show an event named after this Function while its forward
    runs: yes for a Python autograd.Function, the user's or one PyTorch itself writes in Python
    (the classes tapegrad mirrors set _torch_python_function: BackwardHookFunction,
    CheckpointFunction); no for the Functions tapegrad implements native ops with (F.conv2d's
    _Conv, linalg.inv's _Inverse, torch.lgamma's Lgamma ...): PyTorch's op is native there, and
    the public call's own event (aten::conv2d) is the one it shows."""
    return (cls.__module__.partition(".")[0] != _LIBRARY
            or getattr(cls, "_torch_python_function", False))


def _is_overridden(cls, name, base_fn) -> bool:
    fn = getattr(cls, name, None)
    return getattr(fn, "__func__", fn) is not base_fn


class Function(metaclass=FunctionMeta):
    """Base class of custom differentiable operations: subclass it with static `forward(ctx,
    *args)` and `backward(ctx, *grad_outputs)` (or `forward(*args)` plus `setup_context(ctx,
    inputs, output)`), then call `YourFunction.apply(*args)`."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    # Whether forward takes ctx (classic style) or setup_context is used.
    @staticmethod
    def forward(*args, **kwargs):
        """Compute the outputs from the inputs (static; no recording inside).

        Either ``forward(ctx, *args)`` saving what backward needs on ``ctx``
        (``ctx.save_for_backward(...)``), or ``forward(*args)`` together with ``setup_context``.
        """
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Store on ``ctx`` what backward needs, given ``inputs`` and ``output`` (static); used when
        ``forward`` does not take ``ctx``.
        """
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The vector-Jacobian product (static): given ``ctx`` and one gradient per output, return one
        gradient per input of ``forward`` (``None`` for inputs that need none).

        Examples
        --------
        >>> class Square(tapegrad.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         x, = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = tapegrad.tensor([3.], requires_grad=True)
        >>> Square.apply(x).backward()
        >>> x.grad
        tensor([6.])
        """
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The Jacobian-vector product (static): given ``ctx`` and one tangent per input of
        ``forward`` (None for inputs without one), return one tangent per output.  Called once
        by ``apply`` under ``forward_ad.dual_level`` when an input has a tangent; inside it,
        ``ctx.saved_tensors`` are the tensors given to ``ctx.save_for_forward``.  The base
        raises ``NotImplementedError`` as PyTorch's does when a Function lacks it.
        """
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def vmap(info, in_dims, *args):
        """The batching rule (static) used when vmap meets this Function: given ``info``
        (batch_size, randomness), one in_dim per argument (None: not batched) and the
        arguments with their batch dims, return (outputs, out_dims).  Alternatively set
        ``generate_vmap_rule = True`` to apply the Function once per sample."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    generate_vmap_rule = False

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward (without recording) and link its outputs into the tape."""
        from ..tensor import Tensor
        new_style = _is_overridden(cls, "setup_context", Function.setup_context)
        if new_style:
            args, kwargs = _with_defaults(cls, args, kwargs)
        else:
            func = sys.modules.get("tapegrad.func")
            if func is not None and func._depth > 0 and \
                    cls.__module__.partition(".")[0] != _LIBRARY:
                raise RuntimeError(_NEEDS_SETUP_CONTEXT)
        vmap = sys.modules.get("tapegrad._vmap")
        if vmap is not None and vmap.active() and any(type(a) is vmap.BatchedTensor
                                                      for a in args):
            return vmap.function_apply(cls, args, kwargs)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.materialize_grads = True
        forward_args = args if new_style else (ctx, *args)
        forward_ad = sys.modules.get("tapegrad.autograd.forward_ad")
        tangents = forward_ad._input_tangents(cls, args) if forward_ad is not None and \
            forward_ad._levels else None
        profiler = recording_profiler()
        with no_grad():
            # (a `with` costs ~0.5 us a call: only while one records)
            if profiler is None or not _shows_in_profiler(cls):
                result = cls.forward(*forward_args, **kwargs)
            else:                       # PyTorch's profiler shows the forward under cls's name
                with profiler.record_function(cls.__name__):
                    result = cls.forward(*forward_args, **kwargs)
        if new_style:
            cls.setup_context(ctx, args, result)
        dirty = tuple(getattr(ctx, "dirty_tensors", ()) or ())
        non_diff = tuple(getattr(ctx, "non_differentiable", ()) or ())
        _refuse_non_tensor_marks(dirty, non_diff)
        outs = result if isinstance(result, tuple) else (result,)
        if any(not any(d is o for o in outs) for d in dirty):
            # (recorded anyway, the tensor written in place would keep a stale history)
            raise RuntimeError("Some elements marked as dirty during the forward method were not "
                               "returned as output. The inputs that are modified inplace must all "
                               "be outputs of the Function.")
        recording = _core.is_grad_enabled() and any(ctx.needs_input_grad)
        if recording:
            _refuse_saved_non_tensors(ctx)
        out = _core._function_record(ctx, args, result, dirty, non_diff)
        if recording and _core._capturing_ops() and not issubclass(cls, KernelFunction):
            # Under tapegrad.compile the capture saw forward's own ops (run under no_grad) make
            # the outputs: a replay would differentiate those ops instead of calling backward.
            # A KernelFunction is noted as its own replay step (KernelFunction.apply); inside a
            # library op (depth > 0) the op is re-run whole, Function and all.
            _core._capture_unsupported(f"it calls the custom autograd.Function {cls.__name__} "
                                       "(its backward is Python a replay does not run)")
        _finish_saved(ctx, result, out, args)
        if tangents is not None:
            forward_ad._function_jvp(cls, ctx, args, tangents, out)  # eagerly, as PyTorch
        return out


# PyTorch's refusal of a Function whose forward takes ctx inside a torch.func transform (its
# forward could not be run on the transform's inputs apart from recording it)
_NEEDS_SETUP_CONTEXT = (
    "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
    "jacrev, ...), it must override the setup_context staticmethod. For more details, "
    "please see https://pytorch.org/docs/main/notes/extending.func.html")


def _with_defaults(cls, args, kwargs):
    """(args, kwargs) of a setup_context-style Function's call with forward's defaults filled
    in, as PyTorch binds them: setup_context's ``inputs`` and a vmap staticmethod's arguments
    include the defaulted ones.  (The signature is read once per class.)"""
    signature = cls.__dict__.get("_forward_signature")
    if signature is None:
        signature = inspect.signature(cls.forward)
        if not any(p.default is not p.empty for p in signature.parameters.values()):
            signature = False           # nothing to fill in: calls pass through as they are
        cls._forward_signature = signature
    if signature is False:
        return args, kwargs
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _refuse_non_tensor_marks(dirty, non_diff) -> None:
    """PyTorch's RuntimeError for mark_dirty / mark_non_differentiable given something other
    than a tensor (None included), raised whether or not the call is recorded."""
    from .. import is_tensor
    for i, d in enumerate(dirty):
        if not is_tensor(d):
            raise RuntimeError("mark_dirty can only accept variables, but argument "
                               f"{i} is of type {_type_name(d)}")
    for n in non_diff:
        if not is_tensor(n):
            raise RuntimeError("mark_non_differentiable only accepts variable arguments, but got "
                               f"{_type_name(n)}")


def _refuse_saved_non_tensors(ctx) -> None:
    """PyTorch's TypeError for a recorded Function that gave save_for_backward something other
    than a tensor or None."""
    from .. import is_tensor
    for i, t in enumerate(ctx.__dict__.get("to_save") or ()):
        if t is not None and not is_tensor(t):      # dense or sparse
            raise TypeError("save_for_backward can only save variables, but argument "
                            f"{i} is of type {type(t).__name__}")


def _finish_saved(ctx, result, out, args=()) -> None:
    """Turn ctx.to_save into version-checked entries (PyTorch saves after forward returns)."""
    to_save = ctx.__dict__.pop("to_save", None)
    if to_save is None:
        ctx._saved = ()
        return
    outs = result if isinstance(result, tuple) else (result,)
    finals = out if isinstance(out, tuple) else (out,)
    hooks = _core._saved_hooks_active()     # (pack, unpack) of torch.autograd.graph's hooks
    if hooks is not None and not any(getattr(f, "requires_grad", False) for f in finals):
        hooks = None                        # nothing recorded: nothing saved for backward
    saved = []
    for t in to_save:
        if t is None:
            saved.append(None)
            continue
        if not isinstance(t, _core.TensorBase):
            # A sparse COO tensor (pyGAT's SpecialSpmmFunction saves the one its forward built):
            # its values are its own tensor; no in-place op of tapegrad's writes a sparse tensor.
            saved.append((t, None, None))
            continue
        holder = anchor = t
        # (where t is among the Function's inputs or outputs: the place in the graph of a
        # hook's copy if t dies before the backward, _HookPacked.on_graph)
        place = next((("input", j) for j, a in enumerate(args) if a is t), None)
        for j, (o, f) in enumerate(zip(outs, finals)):
            # (an input the forward returned as it is, not marked dirty, stays saved as the
            # input: its output is another tensor, a view, as PyTorch's saved variable is)
            if t is o and f is not None and f.requires_grad and (place is None or f is t):
                holder = _SavedOutput(f, j)
                anchor = f
                place = ("output", j)
                break
        version = _core._version_of(t)
        if hooks is not None:
            holder = _HookPacked(t, *hooks, anchor=anchor, place=place)
        saved.append((holder, version, version.value))
    ctx._saved = tuple(saved)


def _saved_result_becomes(result, written):
    """After ``written.<op>_()`` was computed out of place as `result`, an output of a Function,
    and written back into `written` (a view, which cannot adopt the record): PyTorch's node saves
    the view as its result, so the Function's saved `result` is `written` from now on (a
    create_graph backward reads it through the view's history, and a second pass reaches the
    view's retained .grad), guarded by the view's version."""
    ctx = result.grad_fn
    saved = None if ctx is None else ctx.__dict__.get("_saved")
    if not saved:
        return
    entries = list(saved)
    for k, entry in enumerate(entries):
        if entry is not None and isinstance(entry[0], _SavedOutput) and entry[0].ref() is result:
            version = _core._version_of(written)
            entries[k] = (_SavedOutput(written, entry[0].index), version, version.value)
    ctx._saved = tuple(entries)


class _HookPacked:
    """A tensor saved by a Function under saved-tensor hooks (torch.autograd.graph): pack's
    result, given back through unpack each time ctx.saved_tensors is read."""

    def __init__(self, t, pack, unpack, anchor=None, place=None):
        self.packed = _core._pack_with_hook(pack, t)
        self._unpack = unpack
        # where the saved tensor sits in the graph (the input, or the Function's output), weakly:
        # a hook that copies exists to free the original; once it died, its place among the
        # Function record's inputs or outputs leads to its record
        in_graph = anchor is not None and anchor.requires_grad
        self._anchor = weakref.ref(anchor) if in_graph else None
        self._place = place if in_graph else None

    def unpack(self):
        return _core._unpack_with_hook(self._unpack, self.packed)

    def on_graph(self, copy, ctx):
        """The hook's copy as PyTorch's unpacked saved variable: on the saved tensor's place in
        the graph (its node), so a create_graph backward through it still differentiates back
        to the saved tensor's history.  When that tensor has died, its record still lives (the
        Function's record holds its inputs' records; a dead output's comes back from the
        Function's), as PyTorch's SavedVariable keeps the grad_fn, not the tensor."""
        anchor = self._anchor() if self._anchor is not None else None
        if anchor is not None and anchor.requires_grad:
            return _core._on_node_of(anchor, copy)
        # (the saved tensor died, or left its place: an output whose record an in-place op's
        # self adopted, then that record's output now)
        nodes = ctx.__dict__.get("_output_nodes")
        n_out = len(ctx._output_meta)
        if self._place is None or nodes is None or len(nodes) <= n_out or nodes[n_out] < 0:
            return copy
        kind, j = self._place
        if kind == "input":
            return _core._on_input_node_of(nodes[n_out], j, copy)
        if nodes[j] >= 0:                   # the output died or moved; its record lives on
            out = _core._resurrect(nodes[j], copy)
            return copy if out is copy else _core._on_node_of(out, copy)
        return _core._revive_function_output(nodes[n_out], j, copy)


def tied_to_saved(gradient, saved, node=None, derivative="zeros"):
    """gradient's values, in the graph of `saved` (a tensor of its shape the backward read), its
    grad_fn named `node` when given.  derivative "zeros": a where whose condition never selects
    `saved` (a second derivative gives `saved` zeros); "none": a link through which no gradient
    flows (PyTorch's node has no formula for it: `saved` gets none).  gradient itself when it
    already requires grad, or `saved` does not, or the shapes differ."""
    if (gradient is None or gradient.requires_grad or saved is None or not saved.requires_grad
            or tuple(gradient.shape) != tuple(saved.shape)):
        return gradient
    if derivative == "zeros":
        from .. import where, zeros
        tied = where(zeros(tuple(gradient.shape), dtype=bool), saved, gradient)
    else:
        tied = _LinkedWithoutGradient.apply(gradient, saved)
    return tied if node is None else _core._name_grad_fn(tied, node)


def fresh_alias(t):
    """t as a node of its own (a view of it): a backward that re-runs a composite from the
    tensors it was given (a KernelFunction's graph_backward, a compiled call's create_graph
    re-run) and asks autograd.grad for the gradient by each of them must take them through
    their aliases, or a tensor another one depends on (k = f(q), h0 = f(x), the same tensor in
    two places) gets the paths through the other as well, which the sweep then adds again."""
    return t.view_as(t)


def linked_to_node(gradient, saved, node):
    """gradient, as an output of a backward node that reads the tensors `saved`: linked (no
    derivative through the link) to the first of them that requires grad, when gradient itself
    does not (PyTorch: a node's outputs require grad when any of its inputs does)."""
    if gradient is None or gradient.requires_grad:
        return gradient
    for s in saved:
        if s is not None and s.requires_grad:
            return _core._name_grad_fn(_LinkedWithoutGradient.apply(gradient, s), node)
    return gradient


class _LinkedWithoutGradient(Function):
    """gradient's values (its array, shared) as a node that also reads `saved` but passes it no
    gradient."""

    @staticmethod
    def forward(ctx, gradient, saved):
        return _core.wrap_array(gradient._array)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class GatedAlias(Function):
    """t's values as a node of its own whose backward passes the gradient on to t only while
    gate[0] is true.  A compiled call's create_graph re-run (replay.pxi) reads its argument
    tensors through these and closes the gate while it asks for the gradients by its inputs:
    a view (fresh_alias) would still let a parameter the call reads directly collect the paths
    through an argument computed from it (f(x, w.sum()) with f reading w), which the sweep then
    adds again; once the gate is open the gradients' own graph reaches t's history as usual."""

    @staticmethod
    def forward(ctx, t, gate):
        ctx.gate = gate
        return _core.wrap_array(t._array)

    @staticmethod
    def backward(ctx, grad):
        return (grad if ctx.gate[0] else None), None


class KernelFunction(Function):
    """A Function whose numeric work is two array-level kernels, which tapegrad.compile replays
    directly on its buffers (src/tapegrad/ops_function.pxi, OP_KERNEL): the library's layers
    (convolutions, pooling, recurrent layers) are built on it.  A subclass defines

        kernel_forward(*args) -> (outputs, state)
            forward's positional arguments with each tensor's ndarray in its place; outputs: an
            ndarray or a tuple of ndarrays (the Function's outputs), state: what the backward
            kernel needs (arrays, shapes, ...);
        kernel_backward(state, needs, grads) -> one gradient (ndarray or None) per argument
            needs: needs_input_grad; grads: one ndarray (or None: no gradient) per output;
        saved_args: the positions of the tensor arguments the backward reads (saved for
            backward: version-checked as any saved tensor, and given to graph_backward);
        saved_outputs: the positions of the outputs PyTorch's node saves (given to
            graph_backward after the arguments: a create_graph gradient through one reaches
            the output's own history, its hooks and retained .grad, as PyTorch's);
        graph_backward(ctx, saved, *grads) -> the create_graph backward, in differentiable ops
            (saved: ctx.saved_tensors; ctx.params: the positional arguments, None for tensors);
        relu_fused: optionally, a class with the same two kernels taking relu's input in place of
            the first argument (computing the Function of relu(x) and relu's gradient, bit for bit
            as the two ops would): a replay folds a relu whose output only this Function reads
            into its step (src/tapegrad/replay.pxi, _fuse_relu_kernels).  Such a class may in
            turn have input_fused, {producer Function: fused class}: kernels taking the
            producer's arguments followed by its own after the first, computing both steps bit
            for bit (relu + max pooling after a convolution); a replay folds the producer's step
            into it when nothing else reads the producer's output (_fuse_kernel_inputs).

    forward and backward (without create_graph) call the kernels, so eager and replayed results
    are the same calls on the same arrays: bit for bit equal.  A replay runs the kernels alone:
    code around the call that decides on tensor values (not shapes, dtypes or arguments) must
    not sit inside the same library op, or the replay would keep the capture's decision."""

    saved_args = ()
    saved_outputs = ()
    relu_fused = None
    # What a create_graph gradient that does not depend on its own saved input gets from it:
    # None (left as it is), "zeros" or "none" (see tied_to_saved), as PyTorch's double backward.
    saved_input_derivative = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Its backward runs only the library's kernels (no user code) unless a subclass
        # overrides it: the sweep need not replay PyTorch's delivery order for such a node
        # (src/tapegrad/ready_order.pxi, runs_python).
        cls._backward_is_kernels = cls.backward is KernelFunction.backward

    @classmethod
    def apply(cls, *args):
        out = Function.apply.__func__(cls, *args)
        if _core._capturing_ops():
            _note_kernel_call(cls, args, out)
        return out

    @staticmethod
    def forward(ctx, *args):
        from ..tensor import Tensor
        cls = ctx._forward_cls
        ctx.set_materialize_grads(False)
        arrays = [a._array if isinstance(a, Tensor) else a for a in args]
        outs, state = cls.kernel_forward(*arrays)
        if _core._saved_hooks_active() is not None:
            state = _state_apart(state, arrays + list(outs if isinstance(outs, tuple) else (outs,)))
        ctx.kernel_state = state
        ctx.params = tuple(None if isinstance(a, Tensor) else a for a in args)
        wrap = _core.wrap_array
        res = tuple(wrap(o) for o in outs) if isinstance(outs, tuple) else wrap(outs)
        res_t = res if isinstance(res, tuple) else (res,)
        ctx.save_for_backward(*[args[j] for j in cls.saved_args],
                              *[res_t[k] for k in cls.saved_outputs])
        return res

    @staticmethod
    def backward(ctx, *grads):
        cls = ctx._forward_cls
        saved = ctx.saved_tensors       # (checks the versions of what the backward reads)
        if _core.is_grad_enabled():     # create_graph
            # graph_backward gets a fresh alias of each saved tensor that requires grad: one that
            # re-runs a composite and asks autograd.grad for the gradients by its inputs must
            # get each input's direct gradient only, not the paths through another input that
            # depends on it (attention's q, k, v all the same h, or k = f(q); an RNN's h0 = f(x))
            grad_saved = tuple(fresh_alias(t) if t is not None and t.requires_grad else t
                               for t in saved)
            res = cls.graph_backward(ctx, grad_saved, *grads)
            if cls.saved_input_derivative is None:
                return res
            # PyTorch's backward node reads the saved inputs, so each input's gradient requires
            # grad when that input does, even where its formula does not depend on it (a
            # convolution's input gradient with a constant weight): a penalty on it
            # backpropagates, where it would raise "does not require grad"
            single = not isinstance(res, tuple)
            res = (res,) if single else res
            node = type(ctx).__name__.removesuffix("0") + "Backward0"   # PyTorch's name
            res = tuple(tied_to_saved(r, saved[cls.saved_args.index(j)], node,
                                      cls.saved_input_derivative)
                        if j in cls.saved_args else r for j, r in enumerate(res))
            # ... and since that node is one node, every gradient it returns requires grad when
            # any saved input does, the ones of arguments it did not save too (a convolution's
            # bias gradient, a sum of the output gradient), with no derivative through the link
            res = tuple(linked_to_node(r, saved, node) for r in res)
            return res[0] if single else res
        state = ctx.__dict__.get("kernel_state")
        if state is None:
            raise RuntimeError(_BACKWARD_TWICE)
        res = cls.kernel_backward(state, ctx.needs_input_grad,
                                  [None if g is None else g._array for g in grads])
        wrap = _core.wrap_array
        return tuple(None if r is None else wrap(r) for r in res)

    @staticmethod
    def graph_backward(ctx, saved, *grads):
        raise NotImplementedError(f"{type(ctx).__name__} does not support create_graph=True")


def _state_apart(state, arrays):
    """A kernel state under saved-tensor hooks: its arrays that may share memory with the call's
    argument or output arrays copied.  The backward kernel reads the state, not the unpacked
    saved tensors, so a write into an argument or output after the forward (under no_grad),
    which PyTorch's hooked copies do not see, would otherwise reach the gradient silently
    (convolutions, attention, recurrent layers); under hooks PyTorch checks no version either."""
    if isinstance(state, np.ndarray):
        if any(isinstance(a, np.ndarray) and np.may_share_memory(state, a) for a in arrays):
            return state.copy()
        return state
    if type(state) in (tuple, list):
        return type(state)(_state_apart(s, arrays) for s in state)
    if type(state) is dict:
        return {k: _state_apart(v, arrays) for k, v in state.items()}
    return state


def _note_kernel_call(cls, args, out):
    """A KernelFunction call under a capture: one replay step (_core._capture_kernel), with what
    its backward reads: the tensors at saved_args."""
    from ..tensor import Tensor
    tensors = [j for j, a in enumerate(args) if isinstance(a, Tensor)]
    n_out = len(out) if isinstance(out, tuple) else 1
    saved = tuple(j in cls.saved_args for j in tensors) + tuple(k in cls.saved_outputs
                                                                for k in range(n_out))
    _core._capture_kernel(cls, args, out, saved)


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class _DelayedError(Function):
    """Passes a once-differentiable backward's results through; differentiating them raises.
    Without it they would not require grad, and a second derivative would silently miss them."""

    @staticmethod
    def forward(ctx, *grads):
        return tuple(g.clone() for g in grads)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)


def once_differentiable(fn):
    """Decorator for a backward that is not itself differentiable: it runs without recording,
    and when it runs for create_graph its results raise if differentiated (as PyTorch's)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        from ..tensor import Tensor
        if not (_core.is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad
                                                for a in args)):
            return outputs
        single = not isinstance(outputs, tuple)
        results = list((outputs,) if single else outputs)
        # (the float tensors among the results go through the error node as leaves that require
        # grad, so its outputs have a history; anything else passes through)
        where = [k for k, r in enumerate(results)
                 if isinstance(r, Tensor) and r.dtype.is_floating_point]
        if not where:
            return outputs
        wrapped = _DelayedError.apply(*(results[k].detach().requires_grad_() for k in where))
        for k, w in zip(where, wrapped if isinstance(wrapped, tuple) else (wrapped,)):
            results[k] = w
        return results[0] if single else tuple(results)

    return wrapper


# -- called by the compiled sweep ------------------------------------------------------------------

def _backward(ctx, grads, create_graph=False):
    """Run ctx's Function backward on `grads` (one gradient or None per forward output, then the
    output records' indices); return one gradient or None per forward positional argument,
    checked as PyTorch's engine does.  Gradients are ndarrays, or tensors with create_graph
    (then backward runs in grad mode and what it returns keeps its graph)."""
    from ..tensor import Tensor
    wrap = _core.wrap_array
    cls = ctx._forward_cls
    name = type(ctx).__name__
    source = ctx.__dict__.get("_tangent_source")
    if source is not None:
        forward_ad = sys.modules["tapegrad.autograd.forward_ad"]
        if forward_ad._unpacking and forward_ad._serials and forward_ad._serials[-1] == source:
            # Its outputs carry tangents from its jvp: an unpack sweep stops here.
            return (None,) * len(ctx._input_meta)
    n_out = len(ctx._output_meta)
    grad_outputs = []
    for g, meta in zip(grads[:n_out], ctx._output_meta):
        if meta is None:
            grad_outputs.append(None)
        elif g is not None:
            if create_graph:
                if tuple(g.shape) != meta[0]:
                    g = g.expand(meta[0])
                grad_outputs.append(g)
                continue
            if g.shape != meta[0]:
                full = np.empty(meta[0], dtype=meta[1])
                full[...] = g
                g = full
            grad_outputs.append(wrap(g))
        elif ctx.materialize_grads:
            grad_outputs.append(wrap(np.zeros(meta[0], dtype=meta[1])))
        else:
            grad_outputs.append(None)
    pre_hooks = ctx.__dict__.get("_node_pre_hooks")
    post_hooks = ctx.__dict__.get("_node_post_hooks")
    if pre_hooks or post_hooks:
        # what the node's hooks see: the gradients that arrived (None where none did)
        arrived = tuple(None if g is None or meta is None else grad_outputs[j]
                        for j, (g, meta) in enumerate(zip(grads[:n_out], ctx._output_meta)))
        if pre_hooks:
            arrived = _run_node_hooks(pre_hooks, (arrived,))
            grad_outputs = [g if g is not None or meta is None or not ctx.materialize_grads
                            else wrap(np.zeros(meta[0], dtype=meta[1]))
                            for g, meta in zip(arrived, ctx._output_meta)]
    bfloat16_outputs = ctx.__dict__.get("_bfloat16_outputs")
    if bfloat16_outputs:
        from .._bfloat16 import as_bfloat16_gradient
        for j in bfloat16_outputs:
            grad_outputs[j] = as_bfloat16_gradient(grad_outputs[j])
    ctx._output_nodes = grads[n_out:]
    try:
        result = cls.backward(ctx, *grad_outputs)
    finally:
        ctx._output_nodes = None
    if not isinstance(result, tuple):
        result = (result,)
    n = len(ctx._input_meta)
    if len(result) != n:
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        else:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
    out = []
    bfloat16_inputs = ctx.__dict__.get("_bfloat16_inputs") or ()
    if bfloat16_inputs:
        from .._bfloat16 import round_to_bfloat16
    needs = getattr(ctx, "needs_input_grad", None) or (True,) * n
    for i, (g, meta) in enumerate(zip(result, ctx._input_meta)):
        if meta is None:
            if g is not None:
                raise RuntimeError(f"function {name} returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was "
                                   "not a Variable")
            out.append(None)
            continue
        if g is None:
            out.append(None)
            continue
        if not isinstance(g, Tensor):
            raise RuntimeError(f"expected Variable or None (got {_type_name(g)})")
        if not needs[i]:
            # PyTorch's engine drops a gradient for an input that did not require grad without
            # checking its shape or dtype (a neural-ODE adjoint returns one for its time grid).
            out.append(None)
            continue
        shape, dtype = meta
        gshape = tuple(g._array.shape)
        if gshape != shape:
            try:
                expandable = np.broadcast_shapes(shape, gshape) == gshape
            except ValueError:
                expandable = False
            if not expandable:
                raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - "
                                   f"got {list(gshape)} but expected shape compatible with "
                                   f"{list(shape)}")
            if create_graph:
                lead = len(gshape) - len(shape)
                dims = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(shape)
                                                  if s == 1 and gshape[lead + d] != 1)
                g = g.sum(dims, keepdim=True).reshape(shape)
            else:
                g = wrap(_core._sum_to(g._array, shape))
        if g._array.dtype != dtype:
            # A complex gradient of a real input keeps its real part, as PyTorch's engine does
            # (numpy's complex-to-real cast would warn and PyTorch's is silent).
            if g._array.dtype.kind == "c" and np.dtype(dtype).kind != "c":
                g = g.real if create_graph else wrap(g._array.real)
            if g._array.dtype != dtype:
                g = g.to(_core.np_dtype_to_dtype(dtype)) if create_graph else wrap(
                    g._array.astype(dtype))
        if i in bfloat16_inputs and g.dtype is not _core.bfloat16:
            g = g.to(_core.bfloat16) if create_graph else wrap(round_to_bfloat16(g._array))
        elif create_graph and i not in bfloat16_inputs and g.dtype is _core.bfloat16:
            # a bfloat16 gradient (float32 storage, so the check above saw one dtype) of an
            # input of another dtype: PyTorch's engine casts it to the input's (group norm's
            # create_graph weight gradient from a bfloat16 activation was bfloat16, fuzz
            # 67302431); without a graph it is the array, already of the input's dtype
            g = g.to(_core.np_dtype_to_dtype(dtype))
        out.append(g if create_graph else g._array)
    if post_hooks:
        out = _post_hooked(post_hooks, out, arrived, ctx._input_meta, create_graph)
    return tuple(out)


def _run_node_hooks(hooks, args: tuple) -> tuple:
    """Call each of a node's hooks fn(*args) in turn; a hook may return None or a replacement
    for args[0] (one tensor or None per entry), which the next hook then sees (checked by the
    core's node_hook_result, as a built-in op's node hooks are)."""
    current = tuple(args[0])
    for fn in list(hooks.values()):
        current = _core.node_hook_result(fn, fn(current, *args[1:]), current)
    return current


def _post_hooked(hooks, out: list, grad_outputs: tuple, input_meta: tuple, create_graph: bool):
    """The per-argument gradients `out` (ndarrays, or tensors with create_graph) after the
    node's post-hooks: they see and may replace one entry per tensor argument."""
    wrap = _core.wrap_array
    slots = [i for i, meta in enumerate(input_meta) if meta is not None]
    grad_inputs = tuple(None if out[i] is None else (out[i] if create_graph else wrap(out[i]))
                        for i in slots)
    grad_inputs = _run_node_hooks(hooks, (grad_inputs, grad_outputs))
    out = list(out)
    for i, g in zip(slots, grad_inputs):
        out[i] = None if g is None else (g if create_graph else g._array)
    return out


def _release(ctx):
    """The graph was freed (backward without retain_graph): drop the saved tensors."""
    ctx._saved = None
    ctx._released = True
    ctx.__dict__.pop("kernel_state", None)     # (a KernelFunction's arrays)


_core._set_function_runtime(_backward, _release)
