"""torch.masked's MaskedTensor: a tensor whose elements are either specified (mask True) or
unspecified (mask False), with torch.masked.masked_tensor / as_masked_tensor to build one.

How it is built here.  A MaskedTensor holds a data tensor and a bool mask of the same shape; it is
a tensor-like object (not a tapegrad.Tensor, so no dense op can misread it), and the public
functions dispatch to it through __torch_function__ (tapegrad.overrides.dispatch_refused_call),
its methods through ``__getattr__``: both read the one table ``_HANDLERS``.  Every op runs
tapegrad's ordinary ops on the data and on the mask; gradients are the tape's gradients of the
data.  A MaskedTensor leaf (``requires_grad=True``) owns a data leaf and reports its gradient as
a MaskedTensor with the input's mask.

Masked-out entries never poison a gradient: the reductions replace them by the reduction's
identity through ``where`` (torch.masked's functions), and a binary op whose other operand is
differentiated sees the masked-out entries as 1 (so ``mt * b`` with a NaN under the mask gives
``b`` the gradient of the specified entries only, as PyTorch's masked gradients do).  The values
under the mask are unspecified, as PyTorch documents; only the specified ones are compared.

Sparse layouts: a MaskedTensor built from sparse COO / CSR data and mask (or converted with
to_sparse_coo / to_sparse_csr) computes on dense copies and hands back its data and mask in its
layout, keeping the stored positions of its mask.
"""
from __future__ import annotations

import functools
import warnings

from . import _masked_grad_masks as _grad_masks
from ._public_calls import op_name
from .tensor import Tensor

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]

_PROTOTYPE_WARNING = ("The PyTorch API of MaskedTensors is in prototype stage and will change in "
                      "the near future. Please open a Github issue for features requests and see "
                      "our documentation on the torch.masked module for further information about "
                      "the project.")
_REQUIRES_GRAD_WARNING = ("It is not recommended to create a MaskedTensor with a tensor that "
                          "requires_grad. To avoid this, you can use data.detach().clone()")
_SUPPORTED_DTYPES = ("float16", "float32", "float64", "bool", "int8", "int16", "int32", "int64")
_TYPE_NAME = "torch.masked.maskedtensor.core.MaskedTensor"


def _tg():
    import tapegrad
    return tapegrad


def is_masked_tensor(obj, /) -> bool:
    """True if ``obj`` is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


def _layout_name(t) -> str:
    return str(t.layout).rsplit(".", 1)[-1]


def _dense(t):
    return t.to_dense() if _layout_name(t) != "strided" else t


def _not_implemented(name: str):
    """PyTorch's answer to an op MaskedTensor has no rule for: a warning from its dispatcher,
    then the TypeError of a dispatch that every handler refused."""
    warnings.warn(f"{name} is not implemented in __torch_dispatch__ for MaskedTensor.\nIf you "
                  "would like this operator to be supported, please file an issue for a feature "
                  "request at https://github.com/pytorch/maskedtensor/issues with a minimal "
                  "reproducible code snippet.\nIn the case that the semantics for the operator "
                  "are not trivial, it would be appreciated to also include a proposal for the "
                  "semantics.", UserWarning, stacklevel=3)
    return TypeError(f"Multiple dispatch failed for 'torch._ops.aten.{name}.default'; all "
                     "__torch_dispatch__ handlers returned NotImplemented:\n\n  - tensor subclass "
                     f"<class '{_TYPE_NAME}'>\n\nFor more information, try re-running with "
                     "TORCH_LOGS=not_implemented")


class _MaskedTensorMeta(type):
    def __repr__(cls) -> str:
        return f"<class '{_TYPE_NAME}'>" if cls is MaskedTensor else super().__repr__()


class MaskedTensor(metaclass=_MaskedTensorMeta):
    """A tensor with a bool mask: True marks a specified element, False an unspecified one
    (printed ``--``, skipped by reductions, never given a gradient)."""

    __module__ = "tapegrad.masked"
    __slots__ = ("_masked_data", "_masked_mask", "_layout", "_stored", "_order", "_grad_rule",
                 "_grad_mask", "__weakref__")

    def __init__(self, data, mask, requires_grad=False):
        _check_members(data, mask)
        storage = _storage_of(mask)
        data, mask = _dense(data), _dense(mask)
        if storage[1] is not None:
            # data keeps the mask's stored entries only (PyTorch's sparse where with 0)
            data = _tg().where(storage[1], data, _tg().zeros((), dtype=data.dtype))
        _warn_construction(data)
        self._init(data.detach().clone(), mask.detach().clone(), storage)
        if requires_grad:
            if not self._masked_data.dtype.is_floating_point:
                # (PyTorch's wrapper-subclass constructor words it so)
                raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                                   "gradients")
            self._masked_data.requires_grad_(True)

    def _init(self, data, mask, storage=("strided", None), grad_rule=None):
        _validate(data, mask)
        self._masked_data, self._masked_mask = data, mask
        # sparse layouts: the layout and the positions it stores (dense bool), else None
        self._layout, self._stored = storage
        self._order = _grad_masks.next_order()
        # (the rule that gives its inputs' gradient masks: tapegrad/_masked_grad_masks.py)
        self._grad_rule = grad_rule if data.requires_grad else None
        self._grad_mask = None

    @classmethod
    def _wrap(cls, data, mask, storage=("strided", None), grad_rule=None):
        """An op's result: data keeps its graph (PyTorch warns on every MaskedTensor made)."""
        warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=3)
        self = object.__new__(cls)
        self._init(data, mask, storage, grad_rule)
        return self

    @property
    def _storage(self):
        return self._layout, self._stored

    # -- what it is ------------------------------------------------------------------------------
    shape = property(lambda self: self._masked_data.shape)
    dtype = property(lambda self: self._masked_data.dtype)
    device = property(lambda self: self._masked_data.device)
    ndim = property(lambda self: self._masked_data.dim())
    layout = property(lambda self: getattr(_tg(), self._layout))
    is_sparse = property(lambda self: self._layout != "strided")
    requires_grad = property(lambda self: self._masked_data.requires_grad)
    is_leaf = property(lambda self: self._masked_data.is_leaf)
    grad_fn = property(lambda self: self._masked_data.grad_fn)

    def size(self, dim=None):
        return self._masked_data.size() if dim is None else self._masked_data.size(dim)

    def dim(self) -> int:
        return self._masked_data.dim()

    def numel(self) -> int:
        return self._masked_data.numel()

    def __len__(self) -> int:
        return len(self._masked_data)

    def is_sparse_coo(self) -> bool:
        return self._layout == "sparse_coo"

    def is_sparse_csr(self) -> bool:
        return self._layout == "sparse_csr"

    # -- data and mask ---------------------------------------------------------------------------
    def get_data(self):
        """The data, in this tensor's layout (differentiable; its unspecified entries are
        arbitrary)."""
        return self._in_layout(self._masked_data)

    def get_mask(self):
        return self._in_layout(self._masked_mask)

    def to_tensor(self, value):
        """A plain tensor with the unspecified entries set to ``value``."""
        return self.get_data().masked_fill(~self.get_mask(), value)

    def _in_layout(self, dense):
        if self._layout == "strided":
            return dense
        stored = self._stored
        coo = _tg().sparse_coo_tensor(stored.nonzero().t(), dense[stored],
                                      tuple(dense.shape)).coalesce()
        return coo if self._layout == "sparse_coo" else coo.to_sparse_csr()

    # -- gradients -------------------------------------------------------------------------------
    @property
    def grad(self):
        g = self._masked_data.grad
        if g is None:
            return None
        mask = self._masked_mask if self._grad_mask is None else self._grad_mask
        return MaskedTensor._wrap(g, mask, self._storage)

    @grad.setter
    def grad(self, value):
        self._masked_data.grad = None if value is None else _data_of(value)
        self._grad_mask = value._masked_mask if is_masked_tensor(value) else None

    def requires_grad_(self, requires_grad=True):
        self._masked_data.requires_grad_(requires_grad)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        data_inputs = None if inputs is None else [_data_of(i) for i in inputs]
        self._masked_data.backward(_masked_data_of(gradient, self._masked_mask),
                                   retain_graph=retain_graph, create_graph=create_graph,
                                   inputs=data_inputs)
        record_grad_masks([self], [gradient])

    def detach(self):
        return MaskedTensor._wrap(self._masked_data.detach(), self._masked_mask, self._storage)

    def clone(self):
        return MaskedTensor._wrap(self._masked_data.clone(), self._masked_mask.clone(),
                                  self._storage, _grad_masks.same_mask(self))

    def item(self):
        return self._masked_data.item()

    def tolist(self):
        raise RuntimeError(".tolist() is not supported for tensor subclasses, got MaskedTensor")

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    # -- printing --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        data, mask = self._masked_data.detach(), self._masked_mask
        if data.dim() == 0:
            shown = _format_element(data.item()) if mask.item() else "--"
            return f"MaskedTensor({shown}, {mask.item()})"
        body = "\n".join("  " + line for line in _format_nested(data, mask).split("\n"))
        return "MaskedTensor(\n" + body + "\n)"

    __str__ = __repr__

    # -- dispatch --------------------------------------------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = op_name(func)
        handler = _HANDLERS.get(name)
        if handler is None:
            raise _not_implemented(name)
        return handler(*args, **(kwargs or {}))

    def __getattr__(self, name):
        # Tensor methods: the table's ops, PyTorch's missing-rule error for other Tensor methods
        handler = _HANDLERS.get(name)
        if handler is not None:
            return functools.partial(handler, self)
        if name in ("T", "mT", "H", "mH"):
            raise _not_implemented("permute")
        if not name.startswith("_") and callable(getattr(Tensor, name, None)):
            def unsupported(*args, **kwargs):
                raise _not_implemented(name.rstrip("_") if name.endswith("_") else name)
            return unsupported
        raise AttributeError(f"'MaskedTensor' object has no attribute '{name}'")

    def __getitem__(self, index):
        index = _data_of(index) if is_masked_tensor(index) else index
        return MaskedTensor._wrap(self._masked_data[index], self._masked_mask[index],
                                  grad_rule=_grad_masks.linear(lambda x: x[index], [self], [0],
                                                               [self]))

    __hash__ = object.__hash__      # (by identity: __eq__ is elementwise)

    def __bool__(self):
        return bool(self._masked_data)


# -- construction checks (PyTorch's order and messages) ---------------------------------------------

def _check_members(data, mask):
    if is_masked_tensor(data) or not _is_tensor(data):
        raise TypeError("data must be a Tensor")
    if is_masked_tensor(mask) or not _is_tensor(mask):
        raise TypeError("mask must be a Tensor")
    if _layout_name(data) != _layout_name(mask):
        raise TypeError("data and mask must have the same layout.")


def _warn_construction(data):
    warnings.warn(_PROTOTYPE_WARNING, UserWarning, stacklevel=4)
    if data.requires_grad:
        warnings.warn(_REQUIRES_GRAD_WARNING, UserWarning, stacklevel=4)


def _validate(data, mask):
    if mask.dtype != _tg().bool:
        raise TypeError("mask must have dtype bool.")
    if str(data.dtype).rsplit(".", 1)[-1] not in _SUPPORTED_DTYPES:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.dim() != mask.dim():
        raise ValueError("data.dim() must equal mask.dim()")
    if data.size() != mask.size():
        raise ValueError("data.size() must equal mask.size()")


def _storage_of(mask):
    """(layout name, stored positions as a dense bool tensor or None) of a mask."""
    layout = _layout_name(mask)
    if layout == "strided":
        return layout, None
    coo = (mask if layout == "sparse_coo" else mask.to_sparse_coo()).coalesce()
    stored = _tg().sparse_coo_tensor(coo.indices(), _tg().ones(coo.indices().shape[1],
                                                               dtype=_tg().bool),
                                     tuple(mask.shape)).to_dense()
    return layout, stored


def _is_tensor(obj) -> bool:
    return _tg().is_tensor(obj)


def masked_tensor(data, mask, requires_grad=False):
    """A MaskedTensor of a copy of ``data`` (cut from its graph: a new leaf, requiring grad when
    ``requires_grad``) and ``mask``."""
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """A MaskedTensor over ``data`` that stays in its graph: gradients flow back into ``data``."""
    _check_members(data, mask)
    storage = _storage_of(mask)
    dense_data, dense_mask = _dense(data), _dense(mask)
    _warn_construction(dense_data)
    self = object.__new__(MaskedTensor)
    self._init(dense_data.clone(), dense_mask.detach().clone(), storage,
               _grad_masks.same_mask(dense_data))
    return self


# -- autograd.grad / autograd.backward with MaskedTensors -------------------------------------------

def as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def among(*groups) -> bool:
    """Whether a MaskedTensor is among the (tensor or sequence) arguments."""
    return any(is_masked_tensor(x) for group in groups if group is not None
               for x in as_list(group))


def _gradient_for(output, gradient):
    if not is_masked_tensor(output):
        return _data_of(gradient)
    if gradient is None:
        return None
    return _masked_data_of(gradient, output._masked_mask)


def backward_arguments(tensors, grad_tensors, inputs):
    """autograd.backward's arguments with each MaskedTensor replaced by its data."""
    outputs = as_list(tensors)
    grads = [None] * len(outputs) if grad_tensors is None else as_list(grad_tensors)
    grads = [_gradient_for(o, g) for o, g in zip(outputs, grads)]
    inputs = None if inputs is None else [_data_of(i) for i in as_list(inputs)]
    return [_data_of(o) for o in outputs], grads, inputs


def _gradient_masks(outputs, gradients):
    """{id(leaf): (leaf, mask)}: the masks of the gradients that MaskedTensor outputs (with their
    MaskedTensor gradients, if given) send back to the leaves."""
    starts = []
    for out, g in zip(outputs, gradients):
        if is_masked_tensor(out) and out.requires_grad:
            starts.append((out, g._masked_mask if is_masked_tensor(g) else out._masked_mask))
    return _grad_masks.propagate(starts)


def record_grad_masks(outputs, gradients):
    """After a backward: each MaskedTensor leaf reached keeps its gradient's mask for .grad
    (OR-ed over backward calls, as its gradient accumulates)."""
    for leaf, mask in _gradient_masks(outputs, gradients).values():
        if is_masked_tensor(leaf) and leaf.requires_grad and leaf.is_leaf:
            leaf._grad_mask = mask if leaf._grad_mask is None else leaf._grad_mask | mask


def grad_through_data(grad, outputs, inputs, grad_outputs, retain_graph, create_graph,
                      allow_unused, materialize_grads):
    """autograd.grad (``grad``) on the MaskedTensors' data: a MaskedTensor input's gradient is a
    MaskedTensor with the mask its gradient arrived with (tapegrad/_masked_grad_masks.py)."""
    outs, grads, _ = backward_arguments(outputs, grad_outputs, None)
    ins = as_list(inputs)
    result = grad(outs, [_data_of(i) for i in ins], grads, retain_graph, create_graph,
                  allow_unused=allow_unused, materialize_grads=materialize_grads)
    outputs = as_list(outputs)
    masks = _gradient_masks(outputs, [None] * len(outputs) if grad_outputs is None
                            else as_list(grad_outputs))

    def wrapped(g, i):
        if g is None:
            return g
        if is_masked_tensor(i):
            return MaskedTensor._wrap(g, masks.get(id(i), (i, i._masked_mask))[1], i._storage)
        # a plain input that a MaskedTensor op took directly: PyTorch's gradient is masked
        return MaskedTensor._wrap(g, masks[id(i)][1]) if id(i) in masks else g
    return tuple(wrapped(g, i) for g, i in zip(result, ins))


# -- printing ----------------------------------------------------------------------------------------

def _format_element(value) -> str:
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _format_nested(data, mask) -> str:
    """PyTorch's layout: one row per innermost dim, specified entries in %8.4f (others as str),
    unspecified ones as ``--`` right-aligned to the width of a float entry."""
    if data.dim() == 1:
        shown = [_format_element(v) for v in data.tolist()]
        kept = mask.tolist()
        width = max(len(s) if k else 8 for s, k in zip(shown, kept))     # (empty: max() raises)
        return "[" + ", ".join(s if k else "--".rjust(width) for s, k in zip(shown, kept)) + "]"
    rows = [_format_nested(d, m) for d, m in zip(data, mask)]
    rows = ["\n".join("  " + line for line in row.split("\n")) for row in rows]
    return "[\n" + ",\n".join(rows) + "\n]"


# -- the ops -------------------------------------------------------------------------------------------

def _data_of(x):
    return x._masked_data if is_masked_tensor(x) else x


def _masked_data_of(x, mask):
    """x's data with its unspecified entries zeroed (a gradient handed to backward)."""
    if is_masked_tensor(x):
        return _tg().where(x._masked_mask, x._masked_data, _tg().zeros((), dtype=x.dtype))
    return x


def _masks_match(a, b) -> bool:
    if is_masked_tensor(a) and is_masked_tensor(b):
        if a._stored is not None and b._stored is not None:
            # PyTorch compares sparse masks by their stored values and indices
            na, nb = int(a._stored.sum()), int(b._stored.sum())
            if na != nb:
                raise RuntimeError(f"The size of tensor a ({na}) must match the size of tensor b "
                                   f"({nb}) at non-singleton dimension 0")
            if not bool(_tg().equal(a._stored, b._stored)):
                return False
        ma, mb = a._masked_mask, b._masked_mask
        return ma.dim() == mb.dim() and tuple(ma.shape) == tuple(mb.shape) and bool(
            _tg().equal(ma, mb))
    return True


def _differentiated(x) -> bool:
    """Whether x is an input of a gradient-mask rule: a MaskedTensor, or a plain tensor that
    requires grad."""
    return is_masked_tensor(x) or (_is_tensor(x) and x.requires_grad)


def _first_masked(args):
    return next(a for a in args if is_masked_tensor(a))


def _unary(name):
    def op(input, *args, **kwargs):
        if kwargs and name not in ("clamp", "clip"):
            raise ValueError("MaskedTensor unary ops require that len(kwargs) == 0. If you need "
                             "support for this, please open an issue on Github.")
        if any(_is_tensor(a) or is_masked_tensor(a) for a in args):
            raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
        data = getattr(_tg(), name)(input._masked_data, *args, **kwargs)
        return MaskedTensor._wrap(data, input._masked_mask, input._storage,
                                  _grad_masks.same_mask(input))
    op.__name__ = name
    return op


def _safe_operand(x, other):
    """x's data for a binary op: its unspecified entries read as 1 when the other operand is
    differentiated, so that no NaN or inf under the mask reaches the other's gradient."""
    if not is_masked_tensor(x):
        return x
    if getattr(other, "requires_grad", False) and not is_masked_tensor(other):
        return _tg().where(x._masked_mask, x._masked_data, _tg().ones((), dtype=x.dtype))
    return x._masked_data


def _binary(name):
    def op(input, other, *args, **kwargs):
        if kwargs:
            raise ValueError("len(kwargs) must equal 0")
        if any(_is_tensor(a) or is_masked_tensor(a) for a in args):
            raise TypeError("MaskedTensor binary ops do not support Tensor arguments aside from "
                            "the lhs and rhs")
        if not _masks_match(input, other):
            raise ValueError("Input masks must match. If you need support for this, please open "
                             "an issue on Github.")
        masked = _first_masked((input, other))
        data = getattr(_tg(), name)(_safe_operand(input, other), _safe_operand(other, input),
                                    *args)
        mask = masked._masked_mask.expand_as(data) if masked._layout == "strided" else \
            masked._masked_mask
        return MaskedTensor._wrap(data, mask, masked._storage, _grad_masks.same_mask(
            *(a for a in (input, other) if _differentiated(a))))
    op.__name__ = name
    return op


def _in_place(name):
    """op_: the in-place op on the data (tapegrad checks leaves and versions), the mask kept."""
    def op(input, *args, **kwargs):
        if name in _BINARY_NAMES:
            if kwargs:
                raise ValueError("len(kwargs) must equal 0")
            if not _masks_match(input, args[0]):
                raise ValueError("Input masks must match. If you need support for this, please "
                                 "open an issue on Github.")
        elif kwargs and name not in ("clamp", "clip"):
            raise ValueError("MaskedTensor unary ops require that len(kwargs) == 0. If you need "
                             "support for this, please open an issue on Github.")
        getattr(input._masked_data, name + "_")(*(_data_of(a) for a in args), **kwargs)
        return input
    op.__name__ = name + "_"
    return op


def _reflected(name):
    def op(self, other):
        return _HANDLERS[name](other, self)
    return op


def _reduction(name):
    """torch.masked's reduction on the data, specified where any element of the reduced slice
    is; a fully masked-out slice gives the reduction's identity, unspecified."""
    def op(input, dim=None, keepdim=False, dtype=None, **kwargs):
        if name == "norm":
            # torch.norm and Tensor.norm call the reduction with p=, which PyTorch's
            # MaskedTensor reduction wrapper does not take
            raise TypeError("_reduce_dim_args() got an unexpected keyword argument 'p'")
        if kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        tg = _tg()
        data, mask = input._masked_data, input._masked_mask
        if dim is None:
            result = _masked_reduce(name, data, mask, None, False, None)
            return MaskedTensor._wrap(result, mask.any(),
                                      grad_rule=_grad_masks.reduction(input, None, False))
        if input._layout != "strided":
            raise _not_implemented(name)
        result = _masked_reduce(name, data, mask, dim, keepdim, dtype)
        dims = [dim] if isinstance(dim, int) else list(dim)
        kept = mask
        for d in sorted((d % max(mask.dim(), 1) for d in dims), reverse=True):
            kept = tg.any(kept, dim=d, keepdim=keepdim)
        return MaskedTensor._wrap(result, kept,
                                  grad_rule=_grad_masks.reduction(input, dims, keepdim))
    op.__name__ = name
    return op


def _masked_reduce(name, data, mask, dim, keepdim, dtype):
    tg = _tg()
    if name == "all":
        filled = data.masked_fill(~mask, True)
        return filled.all() if dim is None else tg.all(filled, dim=dim, keepdim=keepdim)
    fn = getattr(tg.masked, name)
    if dim is None:
        result = fn(data, mask=mask)
    else:
        result = fn(data, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    if name in ("argmin", "argmax"):
        result = result.to(data.dtype)        # (PyTorch's wrapper keeps the input's dtype)
    return result


def _softmax_like(log):
    def op(input, dim, dtype=None, *args, **kwargs):
        if log:
            raise _not_implemented("_log_softmax")
        tg = _tg()
        data, mask = input._masked_data, input._masked_mask
        # unspecified entries read as the dtype's lowest finite value: exp(.) is 0 beside any
        # specified entry, and a fully masked-out slice stays finite (no NaN in any gradient)
        lowest = tg.finfo(data.dtype).min
        kept = tg.where(mask, data, tg.tensor(lowest, dtype=data.dtype))
        result = tg.where(mask, tg.softmax(kept, dim), tg.zeros((), dtype=data.dtype))
        return MaskedTensor._wrap(result, mask, input._storage, _grad_masks.same_mask(input))
    return op


def _where(condition, input, other):
    tg = _tg()
    if not _is_tensor(condition):
        raise ValueError("__torch_dispatch__, aten.where: expected args[0] to be a tensor")
    # a plain operand (tensor or number) is specified everywhere
    masks = [a._masked_mask if is_masked_tensor(a) else tg.ones((), dtype=tg.bool)
             for a in (input, other)]
    data = tg.where(condition, _data_of(input), _data_of(other))
    return MaskedTensor._wrap(data, tg.where(condition, *masks), grad_rule=_grad_masks.selection(
        condition, [a if _differentiated(a) else None for a in (input, other)]))


def _pass_through(name):
    """Views, indexing and joins: the same op on the data and on the mask."""
    def op(*args, **kwargs):
        def part(x, attr):
            if is_masked_tensor(x):
                if x._layout != "strided":
                    raise _not_implemented(name)
                return getattr(x, attr)
            if isinstance(x, (list, tuple)):
                return type(x)(part(a, attr) for a in x)
            return x
        fn = getattr(_tg(), name)
        data = fn(*part(args, "_masked_data"), **kwargs)
        mask = fn(*part(args, "_masked_mask"), **kwargs)
        flat = list(_flatten(args))
        parents = [a for a in flat if is_masked_tensor(a)]
        positions = [i for i, a in enumerate(flat) if is_masked_tensor(a)]

        def rule(pick=None):
            run = (lambda *a: fn(*a, **kwargs)) if pick is None else \
                (lambda *a: fn(*a, **kwargs)[pick])
            return _grad_masks.linear(run, parents, positions, args)
        if isinstance(data, (list, tuple)):
            return tuple(MaskedTensor._wrap(d, m, grad_rule=rule(i))
                         for i, (d, m) in enumerate(zip(data, mask)))
        return MaskedTensor._wrap(data, mask, grad_rule=rule())
    op.__name__ = name
    return op


def _flatten(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flatten(a)
        else:
            yield a


def _method(fn):
    """A Tensor method that is a view of the data and mask (reshape, view, expand...)."""
    def op(self, *args, **kwargs):
        if self._layout != "strided":
            raise _not_implemented(fn)
        return MaskedTensor._wrap(
            getattr(self._masked_data, fn)(*args, **kwargs),
            getattr(self._masked_mask, fn)(*args, **kwargs),
            grad_rule=_grad_masks.linear(lambda x: getattr(x, fn)(*args, **kwargs), [self],
                                         [0], [self]))
    op.__name__ = fn
    return op


def _to_layout(layout):
    def op(self, *args, **kwargs):
        # (from dense: PyTorch's to_sparse keeps the specified entries)
        stored = None if layout == "strided" else \
            self._masked_mask if self._stored is None else self._stored
        return MaskedTensor._wrap(self._masked_data, self._masked_mask, (layout, stored),
                                  _grad_masks.same_mask(self))
    return op


def _cast(method):
    def op(self, *args, **kwargs):
        return MaskedTensor._wrap(getattr(self._masked_data, method)(*args, **kwargs),
                                  self._masked_mask, self._storage, _grad_masks.same_mask(self))
    return op


def _contiguous(self, *args, **kwargs):
    return MaskedTensor._wrap(self._masked_data.contiguous(), self._masked_mask.contiguous(),
                              self._storage, _grad_masks.same_mask(self))


_UNARY_NAMES = (
    "abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin", "asinh",
    "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp", "clip",
    "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2",
    "expm1", "fix", "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "logit", "i0",
    "isnan", "nan_to_num", "neg", "negative", "positive", "rad2deg", "reciprocal", "round",
    "rsqrt", "sigmoid", "sign", "sgn", "signbit", "sin", "sinc", "sinh", "sqrt", "square", "tan",
    "tanh", "trunc")
_BINARY_NAMES = (
    "add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "div", "divide", "floor_divide", "fmod", "logaddexp", "logaddexp2",
    "mul", "multiply", "nextafter", "remainder", "sub", "subtract", "true_divide", "eq", "ne",
    "le", "ge", "greater", "greater_equal", "gt", "less_equal", "lt", "less", "maximum", "minimum",
    "fmax", "fmin", "not_equal")
_REDUCTION_NAMES = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "norm",
                    "var", "std")
_PASS_THROUGH_NAMES = ("select", "transpose", "split", "t", "cat", "concat", "concatenate",
                       "unsqueeze", "stack", "unfold")
_VIEW_METHODS = ("reshape", "view", "expand", "expand_as", "flatten", "reshape_as", "view_as")

_HANDLERS: dict = {}
_HANDLERS.update({name: _unary(name) for name in _UNARY_NAMES})
_HANDLERS.update({name: _binary(name) for name in _BINARY_NAMES})
_HANDLERS.update({name: _reduction(name) for name in _REDUCTION_NAMES})
# (PyTorch's in-place lists leave out the ops with no in-place form)
_HANDLERS.update({name + "_": _in_place(name) for name in _UNARY_NAMES + _BINARY_NAMES
                  if name not in ("angle", "positive", "signbit", "isnan", "logaddexp",
                                  "logaddexp2", "fmin", "minimum", "maximum", "fmax")})
_HANDLERS.update({name: _pass_through(name) for name in _PASS_THROUGH_NAMES})
_HANDLERS.update({name: _method(name) for name in _VIEW_METHODS})
_HANDLERS.update({name: _cast(name) for name in ("float", "double", "half", "to", "type")})
_HANDLERS.update(softmax=_softmax_like(False), log_softmax=_softmax_like(True), where=_where,
                 contiguous=_contiguous, to_dense=_to_layout("strided"),
                 to_sparse=_to_layout("sparse_coo"), to_sparse_coo=_to_layout("sparse_coo"),
                 to_sparse_csr=_to_layout("sparse_csr"))
# pow is unary in PyTorch's table (a scalar exponent); a tensor exponent is another Tensor argument
_HANDLERS["pow"] = _unary("pow")


def _operator(name):
    def op(self, other):
        return _HANDLERS[name](self, other)
    return op


def _refused_operator(name):
    """mt @ x, x - mt: PyTorch's dispatcher has no mm or rsub rule: it warns, and Python's
    operator protocol then raises its TypeError."""
    def op(self, other):
        _not_implemented(name)
        return NotImplemented
    return op


def _install_operators():
    """The arithmetic and comparison operators, through the same table (PyTorch's MaskedTensor
    has no reflected subtraction or power: `1 - mt` is a TypeError there too)."""
    forward = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
               "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
               "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
               "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
               "__ge__": "ge"}
    for dunder, name in forward.items():
        setattr(MaskedTensor, dunder, _operator(name))
    for dunder, name in {"__radd__": "add", "__rmul__": "mul"}.items():
        setattr(MaskedTensor, dunder, _reflected(name))
    for dunder, name in {"__matmul__": "mm", "__rsub__": "rsub"}.items():
        setattr(MaskedTensor, dunder, _refused_operator(name))
    # x / mt: PyTorch's Tensor.__rtruediv__ is reciprocal() * x
    MaskedTensor.__rtruediv__ = lambda self, other: _HANDLERS["mul"](
        _HANDLERS["reciprocal"](self), other)
    MaskedTensor.__neg__ = lambda self: _HANDLERS["neg"](self)
    MaskedTensor.__abs__ = lambda self: _HANDLERS["abs"](self)
    MaskedTensor.__invert__ = lambda self: _HANDLERS["bitwise_not"](self)


_install_operators()
