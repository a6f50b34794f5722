"""Sparse COO tensors (torch.sparse_coo_tensor) built on tapegrad's dense, recorded ops.

A SparseTensor holds an int64 index tensor (sparse_dim x nnz), a values tensor (nnz x dense dims)
and a size.  Every computation on it is written with the dense ops the tape already records
(index_select, mul, index_add), so gradients reach the values -- and through them whatever the
values were computed from -- with no new op in the compiled core.

Why SparseTensor is not a subclass of Tensor: a Tensor *is* its dense ndarray to the compiled
core, which reads ``_array`` directly in every op.  A sparse tensor posing as a Tensor would be
silently misread by any op that does not know it (``dense + sparse`` broadcasting the values
against the dense operand).  As its own class, an op that does not know it raises TypeError, and
the ops that do (``dense + sparse``, ``dense @ sparse`` through the reflected dunders,
``tapegrad.spmm``, ``tapegrad.sparse.mm``) give PyTorch's results.  The price:
``isinstance(s, tapegrad.Tensor)`` is False (``tapegrad.is_tensor(s)`` is True, as in PyTorch).

Gradients: a leaf sparse tensor (``requires_grad=True``) keeps a leaf values tensor; its ``.grad``
is a coalesced sparse tensor on its own (coalesced) pattern, as PyTorch gives for torch.sparse.mm,
to_dense and torch.sparse.sum.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numbers
import warnings
import weakref

import numpy as np

from . import _core
from ._device import CPU, check_device
from ._layout import sparse_coo, sparse_bsr, sparse_bsc
from ._torch_names import TorchTensorNamedClass


def _np_dtype(t) -> np.dtype:
    return t._array.dtype


def _scalar_name(t) -> str:
    return _core.scalar_type_name_of(_np_dtype(t))


def _as_index_tensor(indices):
    from .creation import tensor
    if isinstance(indices, _core.TensorBase):
        arr = indices.detach()._array
    else:
        arr = np.asarray(indices)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"sparse_coo_tensor(): indices must be an integer tensor, got {arr.dtype}")
    return tensor(np.asarray(arr, dtype=np.int64))


def _as_values_tensor(values, dtype):
    from .creation import tensor
    if isinstance(values, _core.TensorBase):
        return values if dtype is None or values.dtype == dtype else values.to(dtype)
    return tensor(values, dtype=dtype)


def _check_index_bounds(idx: np.ndarray, sparse_shape: tuple) -> None:
    """PyTorch checks these only with check_invariants=True; an out-of-range index would make any
    later op read or write outside the dense extent, so tapegrad always checks."""
    if idx.shape[1] == 0:
        return
    lo, hi = idx.min(axis=1), idx.max(axis=1)
    for d in range(idx.shape[0]):
        if lo[d] < 0:
            raise RuntimeError(f"found negative index {int(lo[d])} for dim {d}")
        if hi[d] >= sparse_shape[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{sparse_shape[d]} but found index {int(hi[d])}")


def zeros_like_sparse(s, dtype=None, requires_grad: bool = False):
    """A sparse tensor of ``s``'s size with no entries (PyTorch's zeros_like of a sparse tensor,
    and its zero_()): ``s``'s dtype unless ``dtype`` is given."""
    from .creation import zeros
    if s.layout is not sparse_coo:
        from ._sparse_compressed import empty_compressed
        return empty_compressed(s._size, s.layout, dtype or s.dtype, requires_grad, "zeros_like",
                                s._cidx.dtype)
    sparse_dim = s.sparse_dim()
    return _sparse_coo_tensor(zeros((sparse_dim, 0), dtype=_core.int64),
                              zeros((0,) + tuple(s.shape[sparse_dim:]), dtype=dtype or s.dtype),
                              s.shape, requires_grad=requires_grad)


def _is_size(obj) -> bool:
    """Whether ``obj`` is a shape (a torch.Size or a sequence of ints), not index data."""
    return isinstance(obj, (tuple, list)) and all(
        isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in obj)


# torch.sparse.check_sparse_tensor_invariants' global flag.  tapegrad checks the indices whatever
# its value (see _check_index_bounds); the flag is kept for is_enabled() and for the warning below.
_invariant_checks = {"enabled": False, "explicit": False, "warned": False}


def set_invariant_checks(enabled: bool) -> None:
    _invariant_checks["enabled"] = bool(enabled)
    _invariant_checks["explicit"] = True


def _warn_if_invariant_checks_implicit() -> None:
    """PyTorch warns once per process (TORCH_WARN_ONCE) when torch.sparse_coo_tensor is called
    without check_invariants while the global flag has never been set explicitly (by
    check_sparse_tensor_invariants.enable/disable or its context manager): the script sees the
    same UserWarning on the same line under tapegrad.  Internal constructions (legacy
    constructors, unpickling, sparse gradients) build through _sparse_coo_tensor and stay silent,
    as they do in PyTorch."""
    if not _invariant_checks["explicit"] and not _invariant_checks["warned"]:
        _invariant_checks["warned"] = True
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. "
                      "SEGFAULT) will occur when operating on a sparse tensor which violates the "
                      "invariants, but checks incur performance overhead. To silence this "
                      "warning, explicitly opt in or out. See "
                      "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance. ",
                      UserWarning, stacklevel=3)


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None):
    """A sparse tensor in COO format: element ``values[k]`` sits at ``indices[:, k]``.

    ``indices`` is an integer tensor of shape ``(sparse_dim, nnz)``; ``values`` has shape
    ``(nnz, *dense_dims)``; ``size`` (inferred from the largest index when omitted) has
    ``sparse_dim + len(dense_dims)`` entries.  Duplicate indices are allowed and sum (see
    ``coalesce``).  Indices are always checked against ``size`` (PyTorch only checks them with
    ``check_invariants=True``).  When ``values`` requires grad, gradients flow to it through
    every sparse op; ``requires_grad=True`` makes the sparse tensor a leaf whose ``.grad`` is
    sparse.

    Examples
    --------
    >>> s = tapegrad.sparse_coo_tensor([[0, 1], [1, 0]], [3., 4.], (2, 2))
    >>> s.to_dense()
    tensor([[0., 3.],
            [4., 0.]])
    """
    if check_invariants is None:
        _warn_if_invariant_checks_implicit()
    return _sparse_coo_tensor(indices, values, size, dtype=dtype, device=device,
                              pin_memory=pin_memory, requires_grad=requires_grad,
                              is_coalesced=is_coalesced)


def _sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                       pin_memory: bool = False, requires_grad: bool = False,
                       check_invariants=None, is_coalesced=None):
    """sparse_coo_tensor without its warning: the builder tapegrad's own constructions use
    (``check_invariants`` is accepted and needs nothing: the indices are always checked)."""
    check_device(device, "sparse_coo_tensor")
    if pin_memory:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if indices is None and values is None and size is not None:
        indices, size = size, None      # sparse_coo_tensor(size=(m, n)): the size-only form
    if values is None and size is None and _is_size(indices):
        # sparse_coo_tensor(size): an empty tensor of that size, every dimension sparse
        from .creation import zeros
        size = tuple(int(n) for n in indices)
        indices = zeros((len(size), 0), dtype=_core.int64)
        values = zeros((0,), dtype=_core.get_default_dtype() if dtype is None else dtype)
    if values is None:
        raise TypeError("sparse_coo_tensor() missing required argument 'values' (pos 2)")
    idx = _as_index_tensor(indices)
    vals = _as_values_tensor(values, dtype)
    if vals.dim() == 0:
        vals = vals.reshape(1)      # PyTorch reads a 0-d values tensor as one value
    # PyTorch checks the length of the size before the shape of the indices.
    if size is not None and idx.dim() >= 1 and len(size) != idx.shape[0] + vals.dim() - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                           f"len(size) = {len(size)}, sparse_dim = {idx.shape[0]}, "
                           f"dense_dim = {vals.dim() - 1}")
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sparse_dim, nnz = idx.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals.shape[0]}")
    dense_shape = tuple(vals.shape[1:])
    if size is None:
        sparse_shape = tuple(int(m) + 1 for m in idx._array.max(axis=1)) if nnz else \
            (0,) * sparse_dim
        _check_index_bounds(idx._array, (np.iinfo(np.int64).max,) * sparse_dim)
        size = sparse_shape + dense_shape
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sparse_dim + len(dense_shape):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sparse_dim}, "
                               f"dense_dim = {len(dense_shape)}")
        if any(s < 0 for s in size):
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{min(size)}: {list(size)}")
        if size[sparse_dim:] != dense_shape:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, "
                               f"got {[nnz, *dense_shape]}")
        _check_index_bounds(idx._array, size[:sparse_dim])
    leaf = not vals.requires_grad
    if requires_grad:
        if _np_dtype(vals).kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        vals = vals.detach().requires_grad_(True)
        leaf = True
    coalesced = nnz <= 1 or bool(is_coalesced)
    grad_fn_name = None if leaf else "SparseCooTensorWithDimsAndTensorsBackward0"
    return SparseTensor._make(idx, vals, size, coalesced, leaf, grad_fn_name)



def _to_dense_through_twin():
    from .autograd import Function

    class ToDenseThroughTwin(Function):
        """to_dense of a sparse tensor with a dense twin: the given dense values forward, the
        gradient (masked to the tensor's pattern unless mask is None) to the twin."""

        @staticmethod
        def forward(ctx, twin, dense, mask):
            ctx.mask = mask
            return dense.clone()

        @staticmethod
        def backward(ctx, grad):
            mask = ctx.mask
            return (grad if mask is None else grad.where(mask, grad.new_zeros(()))), None, None
    return ToDenseThroughTwin


class _LazyFunction:
    """A Function class built on first use (tapegrad.autograd imports this module)."""

    def __init__(self, build):
        self._build, self._made = build, None

    def apply(self, *args):
        if self._made is None:
            self._made = self._build()
        return self._made.apply(*args)


_ToDenseThroughTwin = _LazyFunction(_to_dense_through_twin)

class SparseTensor(metaclass=TorchTensorNamedClass):
    """A sparse COO tensor, as ``torch.sparse_coo_tensor`` makes (layout ``torch.sparse_coo``).

    Not a subclass of ``tapegrad.Tensor`` (see the module docstring): dense ops that do not know
    sparse tensors raise TypeError instead of misreading them.
    """

    __module__ = "tapegrad"
    layout = sparse_coo
    is_sparse = True
    is_sparse_csr = False
    is_cuda = False
    is_cpu = True
    is_quantized = False
    is_meta = False
    _backend = "SparseCPU"      # (PyTorch's dispatch key, in its refusals)
    # A dense tensor on the graph equal to this one, for a tensor made from a dense tensor that
    # requires grad (to_sparse) and the results of the ops PyTorch differentiates as dense ones
    # on it (see _dense_twin); None otherwise.
    _twin = None
    # whether the twin is computed from a leaf's stand-in (_dense_grad_stand_in), which hands a
    # leaf the dense gradient of a product: to_dense's gradient goes to such a leaf sparse, by
    # the values
    _twin_reaches_leaf = False
    # numpy arrays on the left defer to the reflected operators, as for Tensor.
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        """``SparseTensor(indices, values, size)``: the same as ``tapegrad.sparse_coo_tensor``."""
        made = _sparse_coo_tensor(*args, **kwargs)
        self.__dict__.update(made.__dict__)
        if self._leaf and self._vals.requires_grad:
            self._track_grad()      # the hook made registered follows `made`, not self

    @classmethod
    def _make(cls, indices, values, size, coalesced, leaf, grad_fn_name):
        s = cls.__new__(cls)
        s._idx = indices
        s._vals = values
        s._size = tuple(size)
        s._coalesced = coalesced
        s._leaf = leaf
        s._grad_fn_name = None
        s._grad = None
        if leaf and values.requires_grad:
            s._track_grad()
        elif grad_fn_name is not None:
            s._rename_grad_fn(grad_fn_name)
        return s

    def _rename_grad_fn(self, name: str) -> None:
        """Show ``name`` as this fresh result's grad_fn, in its repr and as its ``grad_fn``
        object (the values' node).  The values get a node of their own (a view) first: they
        may be an input's values, whose node must keep its name.  Called only before the
        result is handed out."""
        if self._leaf or not self._vals.requires_grad:
            return
        self._grad_fn_name = name
        self._vals = _core._name_grad_fn(self._vals.view(self._vals.shape), name)

    def _track_grad(self) -> None:
        """Fold each backward's gradient of the leaf values into this tensor's one sparse
        ``.grad`` object, in place, as PyTorch's AccumulateGrad adds into a sparse grad: a script
        holding ``s.grad`` sees later backwards and ``zero_grad(set_to_none=False)``.  The hook
        holds this tensor weakly (the tape must not keep it alive)."""
        owner = weakref.ref(self)

        def fold(_values):
            live = owner()
            if live is not None and live._vals is _values:
                live._fold_grad()
        self._vals.register_post_accumulate_grad_hook(fold)

    def _fold_grad(self) -> None:
        """Move the values' dense gradient into the sparse ``.grad`` (on this tensor's
        coalesced pattern), adding in place to a gradient already there."""
        dense = self._vals.grad
        if dense is None:
            return
        self._vals.grad = None
        contribution = self._grad_from_values(dense.detach())
        if self._grad is None:
            self._grad = contribution
        elif not isinstance(self._grad, SparseTensor):
            self._grad.add_(contribution)       # a dense .grad (see _dense_grad_stand_in)
        else:
            self._grad._replace_contents(self._grad._add_sparse(contribution, 1))

    def _dense_twin(self):
        """The dense tensor through which the ops PyTorch differentiates as dense ones (sum,
        torch.mm / matmul / ``@`` / mv / addmm / bmm, and through t / transpose, scalar
        products, negation, sparse + sparse, coalesce and layout conversions) take their
        gradient: PyTorch's gradient of a sparse operand there is the full dense one, which
        ToSparseBackward hands unmasked to a dense origin (``d.to_sparse().sum()`` gives d a
        gradient of ones everywhere) and AccumulateGrad to a leaf.  A tensor made from a dense
        one has its twin (a copy of that dense tensor, on its graph), a leaf its stand-in;
        None for a tensor built from values (PyTorch's constructor masks the gradient to the
        values: the values' path gives the same) or when nothing records."""
        if not _core.is_grad_enabled():
            return None
        if self._twin is not None:
            return self._twin
        return self._dense_grad_stand_in()

    def _carry_twin(self, result, fn, other=None):
        """``result`` (an op's sparse result on self, and ``other`` when given) with the twin
        ``fn(self's twin[, other's twin])``, when either operand has one (an operand without one
        takes part through its values: its dense form)."""
        a = self._dense_twin()
        b = None if other is None else other._dense_twin()
        if a is None and b is None:
            return result
        if result is NotImplemented or not isinstance(result, SparseTensor):
            return result
        result._twin_reaches_leaf = any(
            t is not None and (t is not x._twin or x._twin_reaches_leaf)
            for t, x in ((a, self), (b, other)))
        if other is None:
            twin = fn(a)
        else:
            twin = fn(self.to_dense() if a is None else a, other.to_dense() if b is None else b)
        result._twin = twin
        return result

    def _dense_grad_stand_in(self):
        """A dense leaf equal to this tensor whose gradient goes into this tensor's ``.grad``,
        for the products PyTorch differentiates as dense ones (torch.mm, matmul, ``@``, mv,
        spmm, dsmm, torch.addmm, bmm): there a leaf sparse operand gets the full dense gradient
        (``grad_out @ mat2.T``), not one masked to its pattern as torch.sparse.mm gives.  None
        unless this is a leaf that requires grad and grad mode is on (a non-leaf's values get
        the masked gradient either way)."""
        if not (self._leaf and self._vals.requires_grad and _core.is_grad_enabled()):
            return None
        stand_in = self.to_dense().detach().requires_grad_(True)
        owner = weakref.ref(self)

        def hand_over(_leaf):
            # The hook (kept by the tape's leaf record) holds the stand-in: a leaf's gradient
            # is accumulated only while its Python tensor lives (as _sparse_embedding's).
            live = owner()
            if live is not None and stand_in.grad is not None:
                live._add_dense_grad(stand_in.grad.detach())
            stand_in.grad = None
        stand_in.register_post_accumulate_grad_hook(hand_over)
        return stand_in

    def _add_dense_grad(self, grad) -> None:
        """Accumulate a dense gradient into ``.grad`` as PyTorch's AccumulateGrad does: it
        becomes the gradient, or is added to one already there (a sparse one turns dense)."""
        self._fold_grad()
        if self._grad is None:
            self._grad = grad
        elif isinstance(self._grad, SparseTensor):
            self._grad = grad + self._grad
        else:
            self._grad.add_(grad)

    def _grad_from_values(self, values_grad):
        """The sparse gradient of this tensor, given the gradient of its stored values: on the
        coalesced pattern (as PyTorch gives it), each entry the gradient of the first stored
        value at that position (duplicates' values all carry the position's gradient)."""
        from .creation import tensor
        unique, first, _ = self._coalesce_plan()
        return SparseTensor._make(self._unravel(unique), values_grad[tensor(first.astype(np.int64))],
                                  self._size, True, True, None)

    def _replace_contents(self, other) -> None:
        """Make this object hold ``other``'s entries (an in-place op's result)."""
        self._idx, self._vals, self._size = other._idx, other._vals, other._size
        self._coalesced, self._leaf, self._grad_fn_name = (other._coalesced, other._leaf,
                                                           other._grad_fn_name)
        self._twin = other._twin        # (a stale twin would give sum / mm the old values)
        self._twin_reaches_leaf = other._twin_reaches_leaf
        if self._leaf and self._vals.requires_grad:
            self._track_grad()

    def _check_inplace(self) -> None:
        if self._leaf and self._vals.requires_grad and _core.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")

    def zero_(self):
        """Remove every entry, in place (the size and dtype kept; PyTorch's zero_ of a sparse
        tensor, which ``zero_grad(set_to_none=False)`` calls on a sparse gradient)."""
        self._check_inplace()
        emptied = zeros_like_sparse(self, requires_grad=self._leaf and self._vals.requires_grad)
        grad = self._grad
        self._replace_contents(emptied)
        self._grad = grad
        return self

    def add_(self, other, *, alpha=1):
        """``self += alpha * other`` in place for a sparse ``other``."""
        self._check_inplace()
        if not isinstance(other, SparseTensor):
            return self.__add__(other)
        return self._in_place(self._add_sparse(other, alpha))

    def __iadd__(self, other):
        return self.add_(other)

    def _in_place(self, result):
        """Make this object hold ``result`` (an out-of-place op's result on self), keeping
        its sparse ``.grad``: the in-place form of an op (callers check ``_check_inplace``
        before computing ``result``)."""
        grad = self._grad
        self._replace_contents(result)
        self._grad = grad
        return self

    def copy_(self, src, non_blocking: bool = False):
        """Take ``src``'s entries and size in place, in this tensor's dtype (PyTorch's sparse
        copy_, which load_state_dict calls on a sparse buffer).  Dense and sparse do not mix;
        the size may grow but not shrink while this tensor holds entries (PyTorch's resize
        rule)."""
        if not isinstance(src, SparseTensor) or src.layout is not sparse_coo:
            src_type = src.type() if hasattr(src, "type") else type(src).__name__
            raise RuntimeError("copy_() between dense and sparse Tensors is not implemented! "
                               f"Found self type = {self.type()} and src type = {src_type}")
        self._check_inplace()
        if len(src._size) != len(self._size) or src.sparse_dim() != self.sparse_dim():
            raise RuntimeError(f"copy_: expected a sparse tensor with {self.sparse_dim()} sparse "
                               f"and {self.dense_dim()} dense dimensions, got "
                               f"{src.sparse_dim()} and {src.dense_dim()}")
        if self._nnz() > 0 and any(new < old for new, old in zip(src._size, self._size)):
            raise RuntimeError(f"shrinking the size of sparse dimensions (from "
                               f"{list(self._size)} to {list(src._size)}) on a non-empty sparse "
                               f"tensor is not supported.")
        values = src._vals.detach()
        if values.dtype != self._vals.dtype:
            values = values.to(self._vals.dtype)
        values = values.clone()
        if self._leaf and self._vals.requires_grad:
            values.requires_grad_()         # (a leaf parameter stays one, as under no_grad)
        copied = SparseTensor._make(src._idx.clone(), values, src._size,
                                    src._coalesced, True, None)
        return self._in_place(copied)

    def mul_(self, other):
        """Multiply the values by a number or a 0-d tensor, in place."""
        self._check_inplace()
        return self._in_place(self.mul(other))

    def div_(self, other):
        """Divide the values by a number or a 0-d tensor, in place."""
        self._check_inplace()
        return self._in_place(self.div(other))

    __imul__ = mul_
    __itruediv__ = div_

    def _append(self, other) -> None:
        """Append ``other``'s entries after this tensor's, in place (uncoalesced): how PyTorch's
        AccumulateGrad adds a sparse gradient into a sparse .grad."""
        cat = _core.cat
        self._idx = cat([self._idx, other._idx.to(self._idx.dtype)], 1)
        self._vals = cat([self._vals.detach(), other._vals.detach().to(self.dtype)], 0)
        self._coalesced = self._idx.shape[1] <= 1
        self._twin = None

    def _add_into_dense(self, dense, sign: int):
        """``dense += sign * self`` in place, for the core's in-place add (``add_``, ``sub_``,
        ``+=``, ``-=``) with a sparse operand: each entry added into its row in order, as
        PyTorch's add_(dense, sparse).  Recorded through ``to_dense`` when a gradient flows."""
        if tuple(dense.shape) != self._size:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self "
                               f"has size {list(dense.shape)} while other has size "
                               f"{list(self._size)} (FYI: dense-sparse addition does not "
                               f"currently support broadcasting)")
        if _core.is_grad_enabled() and (dense.requires_grad or self.requires_grad):
            dense_other = self.to_dense()
            return dense.add_(dense_other) if sign > 0 else dense.sub_(dense_other)
        target = dense._array
        values = self._vals._array
        # PyTorch's promotion: a higher category (bool < integer < float < complex) decides
        if "buifc".index(values.dtype.kind.replace("u", "i")) > \
                "buifc".index(target.dtype.kind.replace("u", "i")):
            raise RuntimeError(f"Can't convert result type "
                               f"{_core.scalar_type_name_of(values.dtype)} "
                               f"to output {_core.scalar_type_name_of(target.dtype)} in add "
                               f"operation")
        values = values.astype(target.dtype, copy=False)
        if sign < 0:
            values = -values
        with _core.IeeeResults():   # (inf + -inf is nan, silently)
            np.add.at(target, tuple(self._idx._array), values)
        _core._mark_written(dense)
        return dense

    def new(self, *args, device=None):
        """PyTorch's legacy ``Tensor.new`` on a sparse tensor: ``new(indices, values[, size])``
        a sparse COO tensor of those (the values' own dtype), ``new(*sizes)`` and ``new()`` an
        empty one of this dtype (dlrm's row-wise sparse Adagrad builds its updates so)."""
        from ._sparse_legacy import legacy_sparse_new
        return legacy_sparse_new(self.dtype, args, device, "SparseTensor.new", warn=False)

    def _derived(self, indices, values, size=None, coalesced=None, grad_fn_name=None):
        """A result of an op on self: a leaf only when nothing requires grad."""
        requires = values.requires_grad
        return SparseTensor._make(indices, values, self._size if size is None else size,
                                  self._coalesced if coalesced is None else coalesced,
                                  not requires, grad_fn_name if requires else None)

    # -- structure ------------------------------------------------------------------------------
    @property
    def shape(self):
        """The dense shape as a ``torch.Size``."""
        from .tensor import Size
        return Size(self._size)

    def size(self, dim: int | None = None):
        """The dense shape, or the size of dimension ``dim``."""
        if dim is None:
            return self.shape
        return self._size[_core.normalize_dim(dim, len(self._size))]

    def dim(self) -> int:
        """The number of dimensions (sparse plus dense)."""
        return len(self._size)

    @property
    def ndim(self) -> int:
        """The number of dimensions, as ``dim()``."""
        return len(self._size)

    def numel(self) -> int:
        """The number of elements of the dense tensor this one represents."""
        return int(np.prod(self._size, dtype=np.int64))

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def sparse_dim(self) -> int:
        """The number of sparse dimensions (rows of the index tensor)."""
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        """The number of dense dimensions (trailing dimensions of each value)."""
        return self._vals.dim() - 1

    def _nnz(self) -> int:
        """The number of stored entries (duplicates counted until ``coalesce``)."""
        return self._idx.shape[1]

    @property
    def dtype(self):
        """The dtype of the values."""
        return self._vals.dtype

    @property
    def device(self):
        """Always the CPU."""
        return CPU

    def get_device(self) -> int:
        """-1, PyTorch's index for a CPU tensor."""
        return -1

    def is_floating_point(self) -> bool:
        """Whether the values are floating point."""
        return _np_dtype(self._vals).kind == "f"

    def element_size(self) -> int:
        """The size of one value element in bytes."""
        return _np_dtype(self._vals).itemsize

    def is_coalesced(self) -> bool:
        """Whether the tensor is known coalesced: made by ``coalesce()``, with fewer than two
        entries, or declared with ``is_coalesced=True`` (sorted unique indices are not detected,
        as in PyTorch)."""
        return self._coalesced

    def _indices(self):
        """The index tensor (sparse_dim x nnz, int64) as stored, duplicates included."""
        return self._idx

    def _values(self):
        """The values as stored, detached from the graph (as PyTorch's ``_values()``)."""
        return self._vals.detach()

    def indices(self):
        """The index tensor of a coalesced tensor (``RuntimeError`` if not coalesced)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self):
        """The values of a coalesced tensor, differentiable (``RuntimeError`` if not coalesced)."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        if not self._vals.requires_grad:
            return self._vals
        return _core._name_grad_fn(self._vals.view(self._vals.shape), "ValuesBackward0")

    def _coalesce_plan(self):
        """(sorted unique linear index, inverse map, first occurrence) of the sparse indices."""
        linear = self._linear_index()
        return np.unique(linear, return_index=True, return_inverse=True)

    def _linear_index(self) -> np.ndarray:
        """Each entry's row-major position among the sparse dimensions (all 0 when there are
        none: every entry then sits at the one position and they all sum)."""
        sparse_shape = self._size[:self.sparse_dim()]
        if not sparse_shape:
            return np.zeros(self._nnz(), dtype=np.int64)
        return np.ravel_multi_index(tuple(self._idx._array), sparse_shape)

    def _unravel(self, linear: np.ndarray):
        from .creation import tensor
        sparse_shape = self._size[:self.sparse_dim()]
        if not sparse_shape:
            return tensor(np.zeros((0, len(linear)), dtype=np.int64))
        rows = np.unravel_index(linear, sparse_shape)
        return tensor(np.stack(rows).reshape(len(sparse_shape), -1).astype(np.int64))

    def coalesce(self):
        """The same tensor with indices sorted and duplicates summed (self when already
        coalesced); differentiable in the values.

        Examples
        --------
        >>> s = tapegrad.sparse_coo_tensor([[1, 0, 1]], [1., 2., 3.])
        >>> s.coalesce().values()
        tensor([2., 4.])
        """
        if self._coalesced:
            return self
        from .creation import tensor, zeros
        unique, _, inverse = self._coalesce_plan()
        summed = zeros((len(unique),) + tuple(self._vals.shape[1:]), dtype=self.dtype)
        summed = summed.index_add(0, tensor(inverse.astype(np.int64)), self._vals)
        return self._carry_twin(self._derived(self._unravel(unique), summed, coalesced=True,
                                              grad_fn_name="CoalesceBackward0"), lambda t: t)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor this one represents (duplicates summed); differentiable in the
        values.  PyTorch refuses a ``dtype`` here (convert the sparse tensor first)."""
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        from .creation import tensor, zeros
        sd = self.sparse_dim()
        sparse_shape = self._size[:sd]
        flat = zeros((int(np.prod(sparse_shape, dtype=np.int64)),) + self._size[sd:],
                     dtype=self.dtype)
        linear = self._linear_index().astype(np.int64)
        if self._twin is not None and not self._twin_reaches_leaf and \
                _core.is_grad_enabled():
            # PyTorch's gradient here is grad.sparse_mask(self) (all of grad with
            # masked_grad=False), which the ops below hand back unmasked to a dense origin: it
            # reaches the origin through the twin.  Through the values it was masked by the
            # origin's own pattern: d.to_sparse() - e lost d's gradient where only e stores an
            # entry (SILENT, fuzz formats seed 4030).
            dense = flat.index_add(0, tensor(linear), self._vals.detach()).view(self._size)
            mask = None
            if masked_grad is None or masked_grad:
                pattern = np.zeros(len(flat), dtype=bool)
                pattern[linear] = True
                mask = tensor(pattern.reshape(sparse_shape + (1,) * self.dense_dim()))
            return _core._name_grad_fn(_ToDenseThroughTwin.apply(self._twin, dense, mask),
                                       "ToDenseBackward0")
        # also with no stored entries: the result must stay on the graph of the values (PyTorch's
        # to_dense of an empty sparse tensor requires grad, and its values' .grad is zeros)
        flat = flat.index_add(0, tensor(linear), self._vals)
        # a fresh node even when flat already has the shape, so it can carry PyTorch's name
        return _core._name_grad_fn(flat.view(self._size), "ToDenseBackward0")

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """Self: already sparse COO (a different ``sparse_dim`` is not supported)."""
        if layout is not None and layout is not sparse_coo:
            from ._sparse_compressed import to_compressed
            return to_compressed(self, layout, dense_dim, blocksize)
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               f"argument !=self.sparse_dim() is not supported")
        return self

    to_sparse_coo = to_sparse

    def to_sparse_csr(self, dense_dim=None):
        """The CSR form of a COO tensor with two sparse dimensions; differentiable."""
        from ._sparse_compressed import to_compressed
        from ._layout import sparse_csr
        return to_compressed(self, sparse_csr, dense_dim)

    def to_sparse_csc(self, dense_dim=None):
        """The CSC form of a COO tensor with two sparse dimensions; differentiable."""
        from ._sparse_compressed import to_compressed
        from ._layout import sparse_csc
        return to_compressed(self, sparse_csc, dense_dim)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        """The BSR form (blocks of shape ``blocksize``) of a 2-D COO tensor; differentiable."""
        from ._sparse_compressed import to_compressed
        from ._layout import sparse_bsr
        return to_compressed(self, sparse_bsr, dense_dim, blocksize)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        """The BSC form (blocks of shape ``blocksize``) of a 2-D COO tensor; differentiable."""
        from ._sparse_compressed import to_compressed
        from ._layout import sparse_bsc
        return to_compressed(self, sparse_bsc, dense_dim, blocksize)

    def t(self):
        """The transpose of a 2-D (or 1-D) sparse tensor with no dense dimensions."""
        if self.sparse_dim() > 2 or self.dense_dim() > 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} dense "
                               f"dimensions")
        if self.sparse_dim() < 2:
            return self
        result = self.transpose(0, 1)
        result._rename_grad_fn("TBackward0")
        return result

    @property
    def T(self):
        """The transpose of a 2-D sparse tensor, as ``t()``."""
        return self.t()

    def transpose(self, dim0: int, dim1: int):
        """Swap two sparse dimensions (swaps rows of the index tensor; values unchanged)."""
        from .creation import tensor
        n = self.dim()
        d0, d1 = _core.normalize_dim(dim0, n), _core.normalize_dim(dim1, n)
        sd = self.sparse_dim()
        if (d0 < sd) != (d1 < sd):
            raise RuntimeError("transpose(): cannot transpose a sparse dimension with a dense "
                               "dimension")
        if d0 >= sd:
            raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got "
                               f"sparse_dim: {sd}, d0: {d0}, d1: {d1}")
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        return self._carry_twin(
            self._derived(tensor(self._idx._array[order]), self._vals, tuple(size),
                          coalesced=False if d0 != d1 else None,
                          grad_fn_name="TransposeBackward0"), lambda t: t.transpose(d0, d1))

    # -- autograd -------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to the values."""
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True):
        """Make a leaf sparse tensor require grad (its ``.grad`` will be sparse)."""
        if not self._leaf:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. "
                                   "If you want to use a computed variable in a subgraph that "
                                   "doesn't require differentiation use "
                                   "var_no_grad = var.detach().")
            return self
        if requires_grad and _np_dtype(self._vals).kind != "f":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self._vals.requires_grad != requires_grad:
            # A fresh leaf sharing the memory: the caller's values tensor keeps its own flag.
            self._vals = self._vals.detach().requires_grad_(requires_grad)
            if requires_grad:
                self._track_grad()
        return self

    @property
    def is_leaf(self) -> bool:
        """True unless the values come from an op that requires grad."""
        return self._leaf

    @property
    def grad_fn(self):
        """The recorded op that produced the values (None for a leaf).  PyTorch names it after
        the sparse op; here it is the dense op the sparse one was built from."""
        return None if self._leaf else self._vals.grad_fn

    @property
    def grad(self):
        """A leaf's gradient: a sparse tensor, first on this tensor's (coalesced) pattern; later
        backwards add into the same object."""
        if not self._leaf:
            return None
        self._fold_grad()       # a gradient accumulated where no hook ran (none expected)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        """A sparse gradient of this tensor's size and dtype (PyTorch's checks and messages);
        backward() then adds to it."""
        if value is not None:
            from .tensor import Tensor
            from .creation import zeros
            if not isinstance(value, (Tensor, SparseTensor)):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if not isinstance(value, SparseTensor):
                raise RuntimeError("attempting to assign a gradient to a tensor that has data of "
                                   "a different type")
            # The dense setter's dtype and size checks, on a stand-in of the gradient's dtype
            # and size that allocates nothing (an expanded zero-dim tensor).
            zeros((), dtype=self.dtype).expand(self._size).grad = \
                zeros((), dtype=value.dtype).expand(value.shape)
        self._vals.grad = None
        self._grad = value

    @property
    def data(self):
        """The same indices and values outside the graph (PyTorch's .data of a sparse tensor)."""
        return self.detach()

    def detach(self):
        """The same indices and values, cut from the graph (sharing memory)."""
        return SparseTensor._make(self._idx, self._vals.detach(), self._size, self._coalesced,
                                  True, None)

    def clone(self):
        """A copy of the indices and values (differentiable in the values)."""
        return self._derived(self._idx.clone(), self._vals.clone(), grad_fn_name="CloneBackward0")

    # -- conversions ----------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``: self when nothing changes, else
        a sparse tensor with converted values."""
        from .tensor import parse_to, as_dtype
        device, dtype, _, copy = parse_to(args, kwargs)
        check_device(device, "to")
        if dtype is None or as_dtype(dtype) == self.dtype:
            return self.clone() if copy else self
        return self._derived(self._idx, self._vals.to(as_dtype(dtype)),
                             grad_fn_name="ToCopyBackward0")

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """The type name (``'torch.sparse.FloatTensor'``), or self converted to ``dtype``: a
        dtype, a tensor type (``torch.DoubleTensor``, ``torch.sparse.DoubleTensor``) or its name
        (the sparse tensor stays sparse, as PyTorch's)."""
        if dtype is None:
            return f"torch.sparse.{_scalar_name(self._vals)}Tensor"
        from ._legacy import LegacyTensorClassMeta
        if getattr(dtype, "is_cuda", False) is True or (
                isinstance(dtype, str) and dtype.startswith("torch.cuda.")):
            raise RuntimeError("Cannot initialize CUDA without ATen_cuda library. tapegrad runs "
                               "on the CPU only.")
        if isinstance(dtype, LegacyTensorClassMeta):
            dtype = dtype.dtype
        elif isinstance(dtype, str):
            # the dense type of that name gives the dtype (and the core's refusal of others)
            from .creation import empty
            dense_name = dtype.replace("torch.sparse.", "torch.", 1)
            dtype = _core.TENSOR_METHODS["type"](empty(0), dense_name).dtype
        return self.to(dtype)

    def float(self):
        """Values converted to float32."""
        return self.to(_core.float32)

    def double(self):
        """Values converted to float64."""
        return self.to(_core.float64)

    def half(self):
        """Values converted to float16."""
        return self.to(_core.float16)

    def long(self):
        """Values converted to int64."""
        return self.to(_core.int64)

    def int(self):
        """Values converted to int32."""
        return self.to(_core.int32)

    def bool(self):
        """Values converted to bool."""
        return self.to(_core.bool_)

    def cpu(self):
        """Self: tapegrad runs on the CPU."""
        return self

    def cuda(self, device=None, non_blocking: bool = False):
        """Raises as a PyTorch build without CUDA does."""
        check_device("cuda", "cuda")

    def numpy(self, *, force: bool = False):
        """Raises ``TypeError`` as PyTorch does: convert with ``to_dense()`` first."""
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def item(self):
        """The value of a one-element sparse tensor."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
        return self.to_dense().item()

    # -- arithmetic -----------------------------------------------------------------------------
    def _scaled(self, other, op, grad_fn_name):
        if isinstance(other, SparseTensor) or not (
                isinstance(other, numbers.Number) or
                (isinstance(other, _core.TensorBase) and other.dim() == 0)):
            return NotImplemented
        return self._carry_twin(
            self._derived(self._idx, op(self._vals, other), grad_fn_name=grad_fn_name),
            lambda t: op(t, other))

    def _times_sparse(self, other):
        """sparse * sparse of one shape, PyTorch's intersection product: the result keeps the
        pattern of one operand (the "source": the uncoalesced one when exactly one is
        coalesced, else the one with fewer entries, ``other`` on a tie; an empty operand
        always), each source entry
        times the other's coalesced value at its index, 0 where the other has none (such
        entries stay stored, unless both operands are coalesced)."""
        if self._size != other._size or self.sparse_dim() != other.sparse_dim():
            raise RuntimeError("sparse_binary_op_intersection_cpu(): expects sparse inputs with "
                               "equal dimensionality, number of sparse dimensions, and shape "
                               "of sparse dimensions")
        from .creation import tensor
        if not other._nnz() or not self._nnz():
            source, probe = (other, self) if not other._nnz() else (self, other)
        elif self._coalesced != other._coalesced:
            source, probe = (other, self) if self._coalesced else (self, other)
        else:
            source, probe = (other, self) if self._nnz() >= other._nnz() else (self, other)
        probe = probe.coalesce()
        sparse_shape = self._size[:self.sparse_dim()]
        source_keys = np.ravel_multi_index(tuple(source._idx._array), sparse_shape) \
            if source._nnz() else np.zeros(0, dtype=np.int64)
        probe_keys = np.ravel_multi_index(tuple(probe._idx._array), sparse_shape) \
            if probe._nnz() else np.zeros(0, dtype=np.int64)
        # probe's keys are sorted (coalesced): a binary search finds each source entry's match
        at = np.minimum(np.searchsorted(probe_keys, source_keys), max(len(probe_keys) - 1, 0))
        found = (probe_keys[at] == source_keys) if len(probe_keys) else \
            np.zeros(len(source_keys), dtype=bool)
        if len(probe_keys):
            matched = probe._vals.index_select(0, tensor(at.astype(np.int64)))
        else:
            matched = probe._vals.new_zeros((len(source_keys),) + tuple(probe._vals.shape[1:]))
        found_t = tensor(found).reshape((-1,) + (1,) * (matched.dim() - 1))
        values = source._vals * matched.where(found_t, matched.new_zeros(()))
        indices = source._idx
        if source._coalesced:
            # both operands coalesced: PyTorch keeps only the common indices
            keep = tensor(np.flatnonzero(found).astype(np.int64))
            indices, values = indices.index_select(1, keep), values.index_select(0, keep)
        return source._derived(indices, values, grad_fn_name="MulBackward0")

    def _times(self, other):
        """sparse * number / 0-d tensor, or sparse * a dense tensor of the same shape: the
        stored entries times the dense elements at their indices (a sparse result on self's
        pattern, duplicates kept, as PyTorch's; a dense operand broadcasting to self's shape is
        expanded first); sparse * sparse: ``_times_sparse``."""
        if isinstance(other, SparseTensor):
            return self._times_sparse(other)
        if isinstance(other, _core.TensorBase) and other.dim() > 0 and \
                tuple(other.shape) != self._size and other.dim() <= len(self._size) and all(
                    o in (1, s) for o, s in zip(reversed(other.shape), reversed(self._size))):
            other = other.expand(self._size)     # PyTorch broadcasts the dense operand
        if isinstance(other, _core.TensorBase) and other.dim() > 0 and \
                tuple(other.shape) == self._size:
            at_entries = other[tuple(self._idx[d] for d in range(self.sparse_dim()))]
            return self._derived(self._idx, self._vals * at_entries, grad_fn_name="MulBackward0")
        return self._scaled(other, lambda v, o: v * o, "MulBackward0")

    def __mul__(self, other):
        return self._times(other)

    __rmul__ = __mul__

    def mul(self, other):
        """Multiply the values by a number or a 0-d tensor, or elementwise by a dense tensor of
        the same shape (a sparse result)."""
        return self._checked(self._times(other), "mul", other)

    # -- zero-preserving elementwise functions: applied to the coalesced values --------------
    def _map_values(self, fn, grad_fn_name):
        source = self.coalesce()
        return source._derived(source._idx, fn(source._vals), coalesced=True,
                               grad_fn_name=grad_fn_name)

    def pow(self, exponent):
        """The stored entries to a number's power (coalesced first); a zeroth power, which
        would fill the unstored zeros with ones, is refused as in PyTorch."""
        if not isinstance(exponent, numbers.Number) or isinstance(exponent, bool):
            raise NotImplementedError(f"tapegrad: pow(sparse, {type(exponent).__name__}) is only "
                                      f"supported with a number exponent")
        if exponent == 0:
            raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would "
                               "make the result tensor dense")
        return self._map_values(lambda v: v.pow(exponent), "PowBackward0")

    __pow__ = pow

    def __truediv__(self, other):
        return self._scaled(other, lambda v, o: v / o, "DivBackward0")

    def div(self, other):
        """Divide the values by a number or a 0-d tensor."""
        return self._checked(self._scaled(other, lambda v, o: v / o, "DivBackward0"), "div",
                             other)

    def __floordiv__(self, other):
        if isinstance(other, SparseTensor) or (isinstance(other, _core.TensorBase) and
                                               other.dim() != 0):
            raise RuntimeError(f"Sparse floor division requires a scalar or zero-dim dense "
                               f"tensor divisor (got shape {list(other.shape)} for divisor)")
        # floor is not linear: duplicates are summed first (PyTorch coalesces too)
        return self.coalesce()._scaled(other, lambda v, o: v // o, "DivBackward0")

    def floor_divide(self, other):
        """Floor-divide the values (of the coalesced tensor) by a number or a 0-d tensor."""
        return self._checked(self.__floordiv__(other), "floor_divide", other)

    def __neg__(self):
        return self._carry_twin(self._derived(self._idx, -self._vals, grad_fn_name="NegBackward0"),
                                lambda t: -t)

    def neg(self):
        """Negate the values."""
        return -self

    def _checked(self, result, name, other):
        if result is NotImplemented:
            raise NotImplementedError(f"tapegrad: {name}(sparse, {type(other).__name__}) is only "
                                      f"supported with a number or a 0-d tensor")
        return result

    def __add__(self, other):
        if isinstance(other, SparseTensor):
            return self._add_sparse(other, 1)
        if isinstance(other, (_core.TensorBase, numbers.Number)):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return NotImplemented

    def __sub__(self, other):
        if isinstance(other, SparseTensor):
            return self._add_sparse(other, -1, "SubBackward0")
        if isinstance(other, (_core.TensorBase, numbers.Number)):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return NotImplemented

    def add(self, other, *, alpha=1):
        """``self + alpha * other`` for a sparse ``other`` (sparse result); a dense ``other``
        raises as in PyTorch (write ``dense + sparse``)."""
        if isinstance(other, SparseTensor):
            return self._add_sparse(other, alpha)
        return self.__add__(other)

    # -- picking along a sparse dimension ---------------------------------------------------
    def index_select(self, dim, index):
        """The slices at ``index`` along the sparse dimension ``dim``: for each position j of
        ``index``, the entries whose index there is ``index[j]`` (in stored order), moved to j;
        an uncoalesced result, as PyTorch's.  Differentiable in the values."""
        from .creation import tensor
        d = _core.normalize_dim(dim, self.dim())
        picks = (index.detach()._array if isinstance(index, _core.TensorBase)
                 else np.asarray(index))
        if picks.dtype.kind not in "iu" or picks.ndim > 1:
            raise IndexError("index_select() argument index must be 1-D strided (non-sparse) "
                             "long-tensor.")
        picks = picks.reshape(-1).astype(np.int64)
        bad = picks[(picks < -self._size[d]) | (picks >= self._size[d])]
        if bad.size:
            raise IndexError(f"index_select(): index contains {int(bad[0])} that is out of "
                             f"range for tensor of size {list(self._size)} at dimension {d}")
        picks = np.where(picks < 0, picks + self._size[d], picks)
        if d >= self.sparse_dim():      # a dense dimension: pick within every stored value
            size = self._size[:d] + (len(picks),) + self._size[d + 1:]
            values = self._vals.index_select(d - self.sparse_dim() + 1, tensor(picks))
            return self._derived(self._idx, values, size, grad_fn_name="IndexSelectBackward0")
        # (position in index, entry) pairs, ordered by position then stored order
        positions, entries = np.nonzero(picks[:, None] == self._idx._array[d][None, :])
        idx = self._idx._array[:, entries].copy()
        idx[d] = positions
        values = self._vals.index_select(0, tensor(entries.astype(np.int64)))
        size = self._size[:d] + (len(picks),) + self._size[d + 1:]
        return self._derived(tensor(idx), values, size, coalesced=len(entries) <= 1,
                             grad_fn_name="IndexSelectBackward0")

    def select(self, dim, index):
        """The slice at ``index`` along the sparse dimension ``dim`` (that dimension removed):
        the entries whose index there is ``index``, in stored order, uncoalesced."""
        from .creation import tensor
        d = _core.normalize_dim(dim, self.dim())
        n = self._size[d]
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{list(self._size)} at dimension {d}")
        if d >= self.sparse_dim():
            raise NotImplementedError("tapegrad: select of a sparse tensor along a dense "
                                      "dimension is not supported")
        entries = np.flatnonzero(self._idx._array[d] == index % n)
        idx = np.delete(self._idx._array[:, entries], d, axis=0)
        values = self._vals.index_select(0, tensor(entries.astype(np.int64)))
        return self._derived(tensor(idx.astype(np.int64)), values,
                             self._size[:d] + self._size[d + 1:], coalesced=len(entries) <= 1,
                             grad_fn_name="SelectBackward0")

    def narrow_copy(self, dim, start, length):
        """The entries with ``start <= index < start + length`` along ``dim`` (a sparse
        dimension: their indices shifted by ``start``, stored order kept; a dense one: every
        value narrowed).  Differentiable in the values."""
        from .creation import tensor
        n = self.dim()
        if not 0 <= dim < n:        # PyTorch's sparse narrow_copy takes no negative dim
            raise RuntimeError(f"Dimension {dim} out of range. Expecting 0 <= dim < {n}.")
        d = dim
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if not (0 <= start and start + length <= self._size[d]):
            raise RuntimeError(f"Invalid range to narrow. range(start, start+length) must be a "
                               f"subset of range(0, {self._size[d]}).")
        size = self._size[:d] + (length,) + self._size[d + 1:]
        sd = self.sparse_dim()
        if d >= sd:
            values = self._vals.narrow(d - sd + 1, start, length)
            return self._derived(self._idx, values.clone(), size,
                                 grad_fn_name="NarrowCopyBackward0")
        along = self._idx._array[d]
        entries = np.flatnonzero((along >= start) & (along < start + length))
        idx = self._idx._array[:, entries].copy()
        idx[d] -= start
        values = self._vals.index_select(0, tensor(entries.astype(np.int64)))
        return self._derived(tensor(idx), values, size, grad_fn_name="NarrowCopyBackward0")

    def is_same_size(self, other) -> bool:
        """Whether ``other`` has the same shape."""
        return tuple(self._size) == tuple(other.shape)

    def __getitem__(self, key):
        # PyTorch's sparse tensors take an integer index (select) and nothing else
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            if not -self._size[0] <= key < self._size[0]:
                raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                                 f"{self._size[0]}")
            return self.select(0, int(key))
        raise NotImplementedError("Could not run 'aten::index.Tensor' with arguments from the "
                                  "'SparseCPU' backend (tapegrad supports only a subset of "
                                  "operations on sparse tensors)")

    def sub(self, other, *, alpha=1):
        """``self - alpha * other`` for a sparse ``other`` (sparse result); a dense ``other``
        raises as in PyTorch."""
        if isinstance(other, SparseTensor):
            return self._add_sparse(other, -alpha, "SubBackward0")
        return self.__sub__(other)

    def _add_sparse(self, other, alpha, grad_fn_name="AddBackward0"):
        """Sparse + sparse as PyTorch forms it: one pass merging the two entry lists in their
        stored order, taking the smaller index first and summing entries whose indices are equal
        (so coalesced inputs give a coalesced result, and other inputs keep their order)."""
        from .creation import tensor, zeros
        if self._size != other._size:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self "
                               f"has size {list(self._size)} while other has size "
                               f"{list(other._size)}")
        sparse_shape = self._size[:self.sparse_dim()]
        keys_a = np.ravel_multi_index(tuple(self._idx._array), sparse_shape).tolist()
        keys_b = np.ravel_multi_index(tuple(other._idx._array), sparse_shape).tolist()
        pos_a, pos_b, merged = [], [], []
        i = j = 0
        while i < len(keys_a) or j < len(keys_b):
            take_a = j == len(keys_b) or (i < len(keys_a) and keys_a[i] <= keys_b[j])
            take_b = i == len(keys_a) or (j < len(keys_b) and keys_b[j] <= keys_a[i])
            if take_a:
                pos_a.append(len(merged))
                i += 1
            if take_b:
                pos_b.append(len(merged))
                j += 1
            merged.append(keys_a[i - 1] if take_a else keys_b[j - 1])
        dense_shape = tuple(self._vals.shape[1:])
        # PyTorch promotes the two dtypes (int32 + float32 is float32, float16 + float32 too);
        # tapegrad kept self's dtype: fractions dropped and float16 overflowing silently
        from . import result_type
        dtype = result_type(self._vals, other._vals)
        if isinstance(alpha, float) and not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError("For integral input tensors, argument alpha must not be a "
                               "floating point number.")
        scaled = other._vals.to(dtype)
        scaled = scaled if alpha == 1 else scaled * alpha
        vals = zeros((len(merged),) + dense_shape, dtype=dtype)
        vals = vals.index_add(0, tensor(pos_a, dtype=_core.int64), self._vals.to(dtype))
        vals = vals.index_add(0, tensor(pos_b, dtype=_core.int64), scaled)
        result = self._derived(self._unravel(np.asarray(merged, dtype=np.int64)), vals,
                               coalesced=self._coalesced and other._coalesced,
                               grad_fn_name=grad_fn_name)
        return self._carry_twin(result, lambda a, b: a.to(dtype) + (
            b.to(dtype) if alpha == 1 else b.to(dtype) * alpha), other)

    def _dense_for_grad(self):
        """This tensor as a dense operand of an op PyTorch differentiates densely (dense +
        sparse): its twin, else its dense form (the values' masked path)."""
        twin = self._dense_twin()
        return self.to_dense() if twin is None else twin

    def __radd__(self, other):
        if isinstance(other, _core.TensorBase):
            return other + self._dense_for_grad()
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, _core.TensorBase):
            return other - self._dense_for_grad()
        return NotImplemented

    def __matmul__(self, other):
        return _sparse_product("matmul", self, other)

    def __rmatmul__(self, other):
        return _sparse_product("matmul", other, self)

    def mm(self, mat2):
        """Matrix product with a dense (or sparse) 2-D tensor (``torch.mm``)."""
        return sparse_mm(self, mat2)

    def matmul(self, other):
        """``self @ other``: a matrix product, or a matrix-vector one for a 1-D ``other``."""
        return _sparse_product("matmul", self, other)

    def hspmm(self, mat2):
        """``tapegrad.hspmm(self, mat2)``."""
        return hspmm(self, mat2)

    hsmm = hspmm

    def dsmm(self, mat2):
        """``tapegrad.dsmm(self, mat2)``: the dense product ``self @ mat2``."""
        return sparse_mm(self, mat2)

    def bmm(self, mat2):
        """Batched ``self[k] @ mat2[k]`` for a 3-D sparse ``self`` (three sparse dimensions) and
        a dense ``mat2`` of shape (batch, m, p): a dense (batch, n, p) result.  Each stored
        entry (k, r, c, v) adds v * mat2[k, c] to row r of batch k.  Differentiable in both."""
        from .creation import tensor, zeros
        if isinstance(mat2, SparseTensor):
            raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
        if self.sparse_dim() != 3:
            raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 3 sparse dims, but has "
                               f"{self.sparse_dim()}")
        if self.dense_dim() != 0:
            raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 0 dense dims, but has "
                               f"{self.dense_dim()}")
        if mat2.dim() != 3:
            raise RuntimeError(f"bmm_sparse: Tensor 'mat2' must have 3 dims, but has "
                               f"{mat2.dim()}")
        batch, n, m = self._size
        if mat2.shape[0] != batch:
            raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
        if mat2.shape[1] != m:
            raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
        if mat2.dtype != self.dtype:
            raise RuntimeError(f"expected scalar type {_scalar_name(self._vals)} but found "
                               f"{_scalar_name(mat2)}")
        stand_in = self._dense_twin()
        if stand_in is not None:
            return _core._name_grad_fn(stand_in.bmm(mat2), "BmmBackward0")
        k, r, c = self._idx._array
        p = mat2.shape[2]
        sources = mat2.reshape(batch * m, p).index_select(0, tensor(k * m + c))
        out = zeros((batch * n, p), dtype=self.dtype).index_add(
            0, tensor(k * n + r), sources * self._vals.unsqueeze(1))
        return _core._name_grad_fn(out.view(batch, n, p), "BmmBackward0")

    def mv(self, vec):
        """Matrix-vector product with a dense 1-D tensor (a dense 1-D result)."""
        return _core._name_grad_fn(sparse_mm(self, vec.unsqueeze(1)).squeeze(1), "MvBackward0")

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        """The sum of all elements (a dense 0-d tensor), or over ``dim`` as
        ``tapegrad.sparse.sum`` (``keepdim`` is not supported)."""
        if keepdim:
            raise NotImplementedError("tapegrad: sum(keepdim=True) of a sparse tensor is not "
                                      "supported")
        twin = self._dense_twin() if dim is None else None
        if twin is not None:        # (torch.sparse.sum's gradient is the masked one)
            return twin.sum(dtype=dtype)
        return sparse_sum(self, dim, dtype)

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None):
        """The p-norm of the stored entries once coalesced (a dense 0-d tensor): the unstored
        zeros add nothing to a positive-order norm, and PyTorch reads only the stored entries
        for the others too.  Only full reductions, as PyTorch's norm_sparse."""
        if dtype is not None and p == "fro":
            # (PyTorch's Python-level norm refuses this before reaching the sparse kernel)
            raise ValueError("dtype argument is not supported in frobenius norm")
        if keepdim:
            raise RuntimeError("norm_sparse currently does not support keepdim=True")
        if dim is not None:
            ndim = len(self._size)
            dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
            # dims out of range are not an IndexError here: they just miss the full set
            if sorted(d % ndim for d in dims if -ndim <= d < ndim) != list(range(ndim)):
                raise RuntimeError("norm_sparse currently only supports full reductions, so "
                                   "'dim' must either be empty or contain all dimensions of "
                                   "the input")
        if dtype is not None:
            raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
        return _core._name_grad_fn(self.coalesce()._vals.norm(p), "NormBackward1")

    def t_(self):
        """Transpose a 2-D sparse tensor in place (swaps the rows of its index tensor)."""
        return self._take_layout(self.t())

    def transpose_(self, dim0: int, dim1: int):
        """Swap two sparse dimensions in place."""
        return self._take_layout(self.transpose(dim0, dim1))

    def _take_layout(self, transposed):
        """Adopt ``transposed``'s indices and size (the values, and so the graph, unchanged)."""
        self._idx, self._size, self._coalesced = (transposed._idx, transposed._size,
                                                  transposed._coalesced)
        return self

    def _repr_suffixes(self):
        """The trailing ``grad_fn=<...>`` / ``requires_grad=True`` of every sparse layout's repr."""
        if self._grad_fn_name is not None:
            return [f"grad_fn=<{self._grad_fn_name}>"]
        return ["requires_grad=True"] if self.requires_grad else []

    def __repr__(self) -> str:
        from ._format import sparse_coo_repr
        return sparse_coo_repr(self._idx, self._vals.detach(), self._size, self._repr_suffixes())

    __str__ = __repr__

    def __getattr__(self, name):
        # A dense Tensor method this class does not implement: PyTorch raises NotImplementedError
        # when such an op is called on a sparse tensor; so does tapegrad (at the call).
        from .tensor import Tensor
        if not name.startswith("__") and hasattr(Tensor, name):
            message = (f"Could not run 'aten::{name}' with arguments from the "
                       f"'{self._backend}' backend "
                       f"(tapegrad supports only a subset of operations on sparse tensors)")
            if not callable(getattr(Tensor, name)):
                # a property (T, real, ...): raise at the access, not hand back a function
                raise NotImplementedError(message)

            def unsupported(*args, **kwargs):
                raise NotImplementedError(message)
            return unsupported
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    # -- comparisons: PyTorch has no sparse kernels for them and raises; object's defaults gave
    # a silent identity answer (``s == s2`` False, ``s < s2`` TypeError) ----------------------
    def _refuse_comparison(self, other, op):
        if not isinstance(other, (SparseTensor, _core.TensorBase, numbers.Number)):
            return NotImplemented
        overload = "Scalar" if isinstance(other, numbers.Number) else "Tensor"
        raise NotImplementedError(f"Could not run 'aten::{op}.{overload}' with arguments from "
                                  f"the 'SparseCPU' backend (tapegrad supports only a subset of "
                                  f"operations on sparse tensors)")

    def __eq__(self, other):
        return self._refuse_comparison(other, "eq")

    def __ne__(self, other):
        return self._refuse_comparison(other, "ne")

    def __lt__(self, other):
        return self._refuse_comparison(other, "lt")

    def __le__(self, other):
        return self._refuse_comparison(other, "le")

    def __gt__(self, other):
        return self._refuse_comparison(other, "gt")

    def __ge__(self, other):
        return self._refuse_comparison(other, "ge")

    __hash__ = object.__hash__      # hashable by identity, as every tensor

    def __reduce__(self):
        return (_rebuild_sparse, (self._idx.detach(), self._vals.detach(), self._size,
                                  self._coalesced, self.requires_grad and self._leaf))


# -- zero-preserving elementwise functions (f(0) == 0): PyTorch runs them on a sparse tensor's
# coalesced values, so the result keeps the pattern.  One entry per function: its name, the
# grad_fn PyTorch shows, and the aliases that share it.  (exp, cos, sigmoid and the like map 0
# elsewhere: PyTorch has no sparse kernel for them, and neither do we.)
_ZERO_PRESERVING = (
    ("abs", "AbsBackward0", ("absolute",)),
    ("sqrt", "SqrtBackward0", ()),
    ("square", "PowBackward0", ()),
    ("relu", "ReluBackward0", ()),
    ("tanh", "TanhBackward0", ()),
    ("sin", "SinBackward0", ()),
    ("tan", "TanBackward0", ()),
    ("sinh", "SinhBackward0", ()),
    ("asin", "AsinBackward0", ("arcsin",)),
    ("atan", "AtanBackward0", ("arctan",)),
    ("asinh", "AsinhBackward0", ("arcsinh",)),
    ("atanh", "AtanhBackward0", ("arctanh",)),
    ("log1p", "Log1PBackward0", ()),
    ("expm1", "Expm1Backward0", ()),
    ("erf", "ErfBackward0", ()),
    ("erfinv", "ErfinvBackward0", ()),
    ("sign", "SignBackward0", ()),
    ("sgn", "SgnBackward0", ()),
    ("floor", "FloorBackward0", ()),
    ("ceil", "CeilBackward0", ()),
    ("round", "RoundBackward0", ()),
    ("trunc", "TruncBackward0", ("fix",)),
    ("frac", "FracBackward0", ()),
    ("deg2rad", "Deg2RadBackward0", ()),
    ("rad2deg", "Rad2DegBackward0", ()),
    ("nan_to_num", "NanToNumBackward0", ()),
    # predicates: boolean results, no gradient
    ("isnan", None, ()),
    ("isinf", None, ()),
    ("isposinf", None, ()),
    ("isneginf", None, ()),
    ("signbit", None, ()),
)


def _zero_preserving_method(name: str, grad_fn_name):
    def method(self, *args, **kwargs):
        return self._map_values(lambda v: getattr(v, name)(*args, **kwargs), grad_fn_name)
    method.__name__ = name
    method.__doc__ = f"{name} of the stored entries (coalesced first; f(0) == 0 keeps the pattern)."
    return method


for _name, _grad_fn_name, _aliases in _ZERO_PRESERVING:
    for _public in (_name,) + _aliases:
        setattr(SparseTensor, _public, _zero_preserving_method(_name, _grad_fn_name))
del _name, _grad_fn_name, _aliases, _public


def sparse_cat(tensors, dim=0, *, stack: bool = False):
    """``torch.cat`` (``stack``: ``torch.stack``) of sparse COO tensors along a sparse dimension:
    each tensor's indices along ``dim`` shifted past the ones before it (stack: a new leading
    index row holding the tensor's position), the values concatenated in order, promoted to
    one dtype; an uncoalesced result, as PyTorch's.  Differentiable in the values."""
    from . import result_type
    from .creation import tensor
    tensors = list(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, SparseTensor):
            raise RuntimeError(f"Concatenating sparse tensors, but a dense tensor was found at "
                               f"position {k}.")
    first = tensors[0]
    for t in tensors[1:]:
        if t.sparse_dim() != first.sparse_dim() or t.dense_dim() != first.dense_dim():
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(first._size)}, sparse_dim = {t.sparse_dim()}, "
                               f"dense_dim = {t.dense_dim()}")
    n = first.dim() + (1 if stack else 0)
    d = _core.normalize_dim(dim, n)
    if d >= first.sparse_dim() + (1 if stack else 0):
        raise NotImplementedError("tapegrad: cat of sparse tensors along a dense dimension is "
                                  "not supported")
    for t in tensors[1:]:
        same = t._size == first._size if stack else \
            t._size[:d] + t._size[d + 1:] == first._size[:d] + first._size[d + 1:]
        if not same:
            raise RuntimeError(f"{'stack' if stack else 'cat'}: sparse tensors must have the "
                               f"same sizes except in dimension {d}, got {list(first._size)} "
                               f"and {list(t._size)}")
    dtype = first.dtype
    for t in tensors[1:]:
        dtype = result_type(tensor([], dtype=dtype), t._vals)
    parts, offset = [], 0
    for k, t in enumerate(tensors):
        idx = t._idx._array
        if stack:
            idx = np.insert(idx, d, k, axis=0)
        else:
            idx = idx.copy()
            idx[d] += offset
            offset += t._size[d]
        parts.append(idx)
    size = (first._size[:d] + (len(tensors),) + first._size[d:]) if stack else \
        first._size[:d] + (offset,) + first._size[d + 1:]
    values = _core.cat([t._vals.to(dtype) for t in tensors], 0)
    indices = tensor(np.concatenate(parts, axis=1).astype(np.int64))
    requires = values.requires_grad
    return SparseTensor._make(indices, values, size, False, not requires,
                              ("StackBackward0" if stack else "CatBackward0") if requires else None)


def public_call_on_sparse(name: str, args: tuple, kwargs: dict):
    """A public function's call (``torch.add(s, t)``, ``torch.t(s)``, ``torch.sum(s)``) with a
    sparse tensor among its first two arguments, which the dense function refused with a
    TypeError: ``(outcome,)`` of the sparse tensor's method of that name (the sparse tensor
    first, as PyTorch's function dispatches to it), ``dense + sparse``'s for add/sub/mul with a
    dense first operand; PyTorch's NotImplementedError for an op sparse tensors lack."""
    first = args[0]
    if name in ("cat", "concat", "concatenate", "stack") and isinstance(first, (list, tuple)):
        if not first or not isinstance(first[0], SparseTensor):
            return None                 # a dense first tensor: the dense function's refusal
        dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
        return (sparse_cat(first, dim, stack=name == "stack"),)
    if isinstance(first, SparseTensor):
        method = getattr(SparseTensor, name, None)
        if callable(method) and not name.startswith("_"):
            return (method(*args, **kwargs),)
    elif name == "bmm" and len(args) > 1 and isinstance(args[1], SparseTensor):
        raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
    elif name == "copy_" and len(args) > 1 and isinstance(args[1], SparseTensor):
        raise RuntimeError("copy_() between dense and sparse Tensors is not implemented! Found "
                           f"self type = {first.type()} and src type = {args[1].type()}")
    elif name in ("add", "sub", "mul") and isinstance(first, _core.TensorBase) and \
            len(args) == 2 and set(kwargs) <= {"alpha"}:
        other = args[1]
        alpha = kwargs.get("alpha", 1)
        if name == "mul":
            return (other * first,)
        scaled = other if alpha == 1 else other * alpha
        return (first + scaled if name == "add" else first + (-scaled),)
    raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                              f"'SparseCPU' backend (tapegrad supports only a subset of "
                              f"operations on sparse tensors)")


def _rebuild_sparse(indices, values, size, coalesced, requires_grad):
    """Inverse of SparseTensor.__reduce__."""
    return _sparse_coo_tensor(indices, values, size, requires_grad=requires_grad,
                              is_coalesced=coalesced)


def _check_2d_dense(dense, sparse_rows: int):
    if dense.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if dense.dim() > 2:
        raise RuntimeError(f"sparse.mm: expected a 2-D dense matrix, got a {dense.dim()}-D "
                           f"tensor of shape {list(dense.shape)}")


def _sparse_product(name: str, a, b):
    """torch.mm / torch.matmul / torch.mv with a sparse COO operand (the compiled ops call this
    when an operand is not a dense tensor); NotImplemented when neither is sparse."""
    sa, sb = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not (sa or sb):
        return NotImplemented
    if name == "matmul" and (sa != sb) and (a if sa else b).dim() == 1 and \
            isinstance(b if sa else a, _core.TensorBase) and (b if sa else a).dim() == 2:
        # a sparse vector with a dense matrix: PyTorch's matmul multiplies it as a dense one
        # (vector @ matrix through a row, matrix @ vector as mv), the gradient dense too
        if sa:
            return _core._name_grad_fn(a._dense_for_grad().unsqueeze(0).mm(b).squeeze(0),
                                       "SqueezeBackward4")
        return _core._name_grad_fn(a.mv(b._dense_for_grad()), "MvBackward0")
    if name == "mv" or (name == "matmul" and sa and not sb and b.dim() == 1):
        if not sa:
            raise TypeError(f"mv(): argument 'input' (position 1) must be Tensor, not "
                            f"{_type_name(a)}")
        return a.mv(b)
    if name == "matmul" and sb and not sa and a.dim() == 1:
        # vector @ sparse matrix: PyTorch multiplies the row [1, n] and squeezes it back
        return _core._name_grad_fn(sparse_mm(a.unsqueeze(0), b).squeeze(0), "SqueezeBackward4")
    return sparse_mm(a, b)


def sparse_mm(mat1, mat2, grad_fn_name: str = "MmBackward0", masked_grad: bool = False):
    """``mat1 @ mat2`` where either may be sparse COO (2-D, no dense dimensions).

    sparse @ dense and dense @ sparse give a dense result, sparse @ sparse a sparse one, dense
    @ dense the ordinary product.  Differentiable in both operands (the sparse operand's
    gradient reaches its values).  The result's grad_fn shows as ``grad_fn_name``: torch.mm,
    ``@`` and torch.spmm record MmBackward0, torch.sparse.mm its own nodes (see
    ``sparse_mm_public``).  A leaf sparse operand that requires grad gets a dense ``.grad``
    unless ``masked_grad`` (torch.sparse.mm's and torch.sparse.addmm's gradient, on the
    operand's pattern)."""
    s1, s2 = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if not s1 and not s2:
        return mat1.mm(mat2)
    if (s1 and not s2 and mat1.layout is sparse_bsc) or (s2 and not s1 and
                                                          mat2.layout is sparse_bsr):
        # PyTorch has no CPU kernel for these (BSR @ dense and dense @ BSC it computes)
        operands = "SparseBsc @ Strided" if s1 else "Strided @ SparseBsr"
        raise RuntimeError(f"addmm: computation on CPU is not implemented for Strided + "
                           f"{operands}")
    if s1 and not s2 and mat1.layout is sparse_bsr and len(set(mat1._blocksize)) != 1:
        raise RuntimeError("MKL Sparse doesn't support matrices with non-square blocks.")
    if not s1:
        # dense @ sparse = (sparse^T @ dense^T)^T
        if mat1.dim() != 2:
            raise RuntimeError(f"sparse.mm: expected a 2-D dense matrix, got a {mat1.dim()}-D "
                               f"tensor of shape {list(mat1.shape)}")
        stand_in = None if masked_grad else mat2._dense_twin()
        if stand_in is not None:
            return _core._name_grad_fn(mat1.mm(stand_in), grad_fn_name)
        return _core._name_grad_fn(sparse_mm(mat2.t(), mat1.t(), masked_grad=True).t(),
                                   grad_fn_name)
    if s2:
        product = to_sparse(sparse_mm(mat1, mat2.to_dense()))
        product._rename_grad_fn(grad_fn_name)
        return product
    if not isinstance(mat2, _core.TensorBase):
        raise TypeError(f"mm(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{_type_name(mat2)}")
    if mat1.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        raise RuntimeError(f"sparse.mm: expected a 2-D sparse matrix with no dense dimensions, "
                           f"got {mat1.sparse_dim()} sparse and {mat1.dense_dim()} dense "
                           f"dimensions")
    _check_2d_dense(mat2, mat1._size[0])
    if mat1.layout is not sparse_coo and mat2.shape[0] != mat1._size[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1._size[0]}x"
                           f"{mat1._size[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    if mat2.shape[0] != mat1._size[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1._size[1]}, "
                           f"got {mat2.shape[0]}")
    if mat2.dtype != mat1.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(mat1._vals)} but found "
                           f"{_scalar_name(mat2)}")
    stand_in = None if masked_grad else mat1._dense_twin()
    if stand_in is not None:
        return _core._name_grad_fn(stand_in.mm(mat2), grad_fn_name)
    from .creation import zeros
    rows, cols = mat1._idx[0], mat1._idx[1]
    # Each stored entry (r, c, v) adds v * mat2[c] to row r of the result.
    contributions = mat2.index_select(0, cols) * mat1._vals.unsqueeze(1)
    out = zeros((mat1._size[0], mat2.shape[1]), dtype=mat1.dtype)
    return _core._name_grad_fn(out.index_add(0, rows, contributions), grad_fn_name)


def sparse_mm_public(mat1, mat2):
    """``torch.sparse.mm``: as ``sparse_mm``, its result's grad_fn named as PyTorch records it
    (SparseAddmmBackward0 for sparse @ dense, SparseSparseMatmulBackward0 for sparse @ sparse,
    the final transpose's TransposeBackward0 for dense @ sparse)."""
    s1, s2 = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    dims = [x.dim() for x in (mat1, mat2) if isinstance(x, _core.TensorBase)]
    if any(n != 2 for n in dims):
        if not (s1 or s2):      # (PyTorch's dense path reads the operands' dim -2)
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                             "got -2)")
        if s1 and mat1.layout is not sparse_coo and mat2.dim() != 2:
            raise RuntimeError(f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    if s1 and s2:
        return sparse_mm(mat1, mat2, "SparseSparseMatmulBackward0", masked_grad=True)
    if s2:
        return sparse_mm(mat1, mat2, "TransposeBackward0", masked_grad=True)
    return sparse_mm(mat1, mat2, "SparseAddmmBackward0", masked_grad=True)


def dsmm(input, mat2):
    """``torch.dsmm``: the dense product of a sparse COO matrix and a dense one."""
    if not isinstance(input, SparseTensor):
        raise NotImplementedError("Could not run 'aten::dsmm' with arguments from the 'CPU' "
                                  "backend.")
    return sparse_mm(input, mat2)


def spmm(input, mat2):
    """``torch.spmm``: the product of a sparse (or dense) matrix and a dense one, as
    ``tapegrad.sparse.mm``."""
    return sparse_mm(input, mat2)


def hspmm(mat1, mat2):
    """``torch.hspmm``: ``mat1 @ mat2`` for a sparse COO ``mat1`` and a dense ``mat2``, as a
    hybrid sparse tensor (one sparse dimension, one dense): the product's rows where ``mat1``
    stores an entry, in ascending order.  Differentiable in both operands (PyTorch records no
    derivative for it)."""
    from .creation import tensor
    if not isinstance(mat1, SparseTensor):
        raise NotImplementedError("Could not run 'aten::hspmm' with arguments from the 'CPU' "
                                  "backend.")
    if isinstance(mat2, _core.TensorBase) and mat2.dim() != 2:
        raise RuntimeError(f"hspmm: Argument #3: matrices expected, got {mat2.dim()}D tensor")
    if isinstance(mat2, _core.TensorBase) and mat1.dim() == 2 and \
            mat2.shape[0] != mat1._size[1]:
        raise RuntimeError(f"hspmm: Argument #3: Expected dim 0 size {mat1._size[1]}, got "
                           f"{mat2.shape[0]}")
    product = sparse_mm(mat1, mat2, masked_grad=True)
    rows = np.unique(mat1._idx._array[0]).astype(np.int64)
    values = product.index_select(0, tensor(rows))
    return SparseTensor._make(tensor(rows.reshape(1, -1)), values, tuple(product.shape),
                              len(rows) <= 1, not values.requires_grad,
                              "HspmmBackward0" if values.requires_grad else None)


hsmm = hspmm


def sparse_sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: the sum of a sparse tensor's elements, over all dimensions (a dense
    0-d tensor) or over ``dim`` (an int or a sequence): reducing every sparse dimension gives a
    dense tensor, otherwise a coalesced sparse tensor."""
    if not isinstance(input, SparseTensor) or input.layout is not sparse_coo:
        # (compressed layouts too: PyTorch's sparse.sum coalesces, a COO-only op)
        layout = input.layout if isinstance(input, SparseTensor) else None
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got "
                           f"{'Strided' if layout is None else _layout_name(layout)}")
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return vals.sum()
    dims = [dim] if isinstance(dim, int) else list(dim)
    n = input.dim()
    normalized = [_core.normalize_dim(d, n) for d in dims]
    for k, d in enumerate(normalized):
        if d in normalized[:k]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    dims = sorted(set(normalized))
    sd = input.sparse_dim()
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(tuple(dense_dims))
    kept_sparse = [d for d in range(sd) if d not in dims]
    if not kept_sparse:
        return vals.sum(0)
    from .creation import tensor
    size = tuple(input._size[d] for d in range(n) if d not in dims)
    reduced = SparseTensor._make(tensor(input._idx._array[kept_sparse]), vals, size, False,
                                 not vals.requires_grad, None)
    result = reduced.coalesce()
    result._rename_grad_fn("SparseSumBackward0")
    return result


def sparse_addmm(input, mat1, mat2, beta=1, alpha=1, grad_fn_name="SparseAddmmBackward0",
                 masked_grad: bool = True):
    """``torch.sparse.addmm`` (and ``torch.addmm`` with a sparse ``mat1``, whose result shows
    ``grad_fn_name`` AddmmBackward0): ``beta * input + alpha * (mat1 @ mat2)`` for a sparse COO
    ``mat1`` and dense ``input`` and ``mat2``; a dense result.  As PyTorch's, ``input`` must have
    mat1's dtype (no promotion), ``beta=0`` ignores input's values (NaN included), and only
    sparse @ dense is accepted.  A leaf ``mat1`` gets the gradient on its pattern
    (``masked_grad``, torch.sparse.addmm's) or a dense one (torch.addmm's)."""
    s1, s2 = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if not s1 and not s2:
        return input.addmm(mat1, mat2, beta=beta, alpha=alpha)
    if not s1 or s2:
        raise RuntimeError(f"addmm_sparse_dense: expected either 'mat1' to have sparse layout "
                           f"and 'mat2' to have strided layout, got 'mat1' with layout "
                           f"{'Sparse' if s1 else 'Strided'} and 'mat2' with layout Sparse")
    if isinstance(input, _core.TensorBase) and input.dtype != mat1.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(mat1._vals)} but found "
                           f"{_scalar_name(input)}")
    product = sparse_mm(mat1, mat2, masked_grad=masked_grad)
    # a factor of 1 is left out, so the default call adds exactly as input + mat1 @ mat2
    scaled_product = product if alpha == 1 else product * alpha
    if beta == 0:
        # input still sets the broadcast shape and gets a zero gradient, but its values (even
        # NaN) do not count: the dense addmm's zeroing
        from .contractions import _zeroed
        scaled_input = _zeroed(input)
    else:
        scaled_input = input if beta == 1 else input * beta
    return _core._name_grad_fn(scaled_input + scaled_product, grad_fn_name)


def sparse_softmax(input, dim, dtype=None, *, log: bool = False):
    """``torch.sparse.softmax`` / ``torch.sparse.log_softmax``: the (log-)softmax of a sparse COO
    tensor's stored values along ``dim``, unstored entries counting as -inf (they stay
    unstored).  The input is coalesced first; the result has its pattern.  Differentiable in
    the values (each group's max is subtracted as a constant, which leaves the gradient
    unchanged)."""
    from .creation import tensor, zeros
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(f"Could not run 'aten::_sparse_{'log_' if log else ''}softmax' "
                                  f"with arguments from the 'CPU' backend.")
    d = _core.normalize_dim(dim, input.dim())
    source = input.coalesce()
    vals = source._vals if dtype is None else source._vals.to(dtype)
    if not vals.is_floating_point():
        raise NotImplementedError(f"\"{'log_' if log else ''}softmax\" not implemented for "
                                  f"'{_scalar_name(vals)}'")
    sd = source.sparse_dim()
    if d >= sd:            # a dense dimension: each stored entry's own values
        out = vals.log_softmax(d - sd + 1) if log else vals.softmax(d - sd + 1)
    else:
        # Entries sharing every sparse index but the one along dim form one softmax group.
        others = np.delete(source._idx._array, d, axis=0)
        if others.shape[0]:
            _, group_of = np.unique(others, axis=1, return_inverse=True)
        else:
            group_of = np.zeros(others.shape[1], dtype=np.int64)
        group_of = group_of.reshape(-1).astype(np.int64)
        n_groups = int(group_of.max()) + 1 if group_of.size else 0
        group_max = np.full((n_groups,) + tuple(vals.shape[1:]), -np.inf, dtype=vals._array.dtype)
        np.maximum.at(group_max, group_of, vals._array)
        groups = tensor(group_of)
        shifted = vals - tensor(group_max[group_of])
        exp = shifted.exp()
        totals = zeros((n_groups,) + tuple(vals.shape[1:]), dtype=vals.dtype).index_add(0, groups, exp)
        if log:
            out = shifted - totals.log().index_select(0, groups)
        else:
            out = exp / totals.index_select(0, groups)
    name = "SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0"
    return SparseTensor._make(source._idx, out, source._size, True, not out.requires_grad,
                              name if out.requires_grad else None)


def sparse_mask(dense, mask):
    """``Tensor.sparse_mask``: a sparse tensor on ``mask``'s pattern (its duplicates and
    coalesced flag kept, its values ignored) holding ``dense``'s elements at those indices, in
    dense's dtype.  Differentiable in ``dense``."""
    if not isinstance(mask, SparseTensor):
        raise NotImplementedError("Could not run 'aten::sparse_mask' with arguments from the "
                                  "'CPU' backend.")
    if tuple(dense.shape) != mask._size:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(dense.shape)} but mask has size {list(mask._size)}")
    at_entries = dense[tuple(mask._idx[d] for d in range(mask.sparse_dim()))]
    requires = at_entries.requires_grad
    return SparseTensor._make(mask._idx, at_entries, mask._size, mask._coalesced, not requires,
                              "SparseMaskBackward0" if requires else None)


def to_sparse(dense, sparse_dim=None):
    """``Tensor.to_sparse``: the coalesced sparse COO form of a dense tensor, storing its
    non-zero elements (the first ``sparse_dim`` dimensions sparse, default all; a dense row
    is stored when any of its elements is non-zero).  Differentiable."""
    from .creation import tensor
    n = dense.dim()
    sd = n if sparse_dim is None else int(sparse_dim)
    if n == 0 and sd == 0:
        # a scalar: one entry at the empty index unless it is zero
        keep = np.arange(int(dense._array != 0), dtype=np.int64)
        values = dense.reshape(1)[tensor(keep)]
        requires = values.requires_grad
        return SparseTensor._make(tensor(np.zeros((0, len(keep)), dtype=np.int64)), values, (),
                                  True, not requires, "ToSparseBackward1" if requires else None)
    if not 0 < sd <= n:
        raise RuntimeError(f"sparse_dim argument must be in [1, {n}] range, but got {sd}")
    arr = dense._array
    mask = arr != 0
    if sd < n:
        mask = mask.any(axis=tuple(range(sd, n)))
    where = np.nonzero(mask)
    idx = tensor(np.stack(where).reshape(sd, -1).astype(np.int64))
    values = dense[tuple(tensor(w.astype(np.int64)) for w in where)]
    requires = values.requires_grad
    result = SparseTensor._make(idx, values, tuple(dense.shape), True, not requires,
                                "ToSparseBackward1" if requires else None)
    if requires:
        # the dense-gradient path to `dense` (see _dense_twin); a copy, so a later in-place
        # write to `dense` does not reach this tensor's products
        result._twin = dense.clone()
    return result


_core._set_sparse_product(_sparse_product)


def grad_inputs_through_values(inputs):
    """autograd.grad with sparse COO ``inputs``: each is differentiated through its stored
    values (their own recorded node, so only the uses through this sparse tensor count).
    Returns the inputs with those values in place of the sparse tensors and a function that
    turns the values' gradients back into sparse ones (None stays None); None when no input is
    sparse."""
    seq = [inputs] if isinstance(inputs, (SparseTensor, _core.TensorBase)) else list(inputs)
    if not any(isinstance(x, SparseTensor) for x in seq):
        return None
    for x in seq:
        if isinstance(x, SparseTensor) and not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    replaced = [x._vals if isinstance(x, SparseTensor) else x for x in seq]

    def rebuild(grads, materialize: bool):
        out = []
        for x, g in zip(seq, grads):
            if g is not None:
                out.append(x._grad_from_values(g) if isinstance(x, SparseTensor) else g)
            elif not materialize:
                out.append(None)
            else:
                out.append(zeros_like_sparse(x) if isinstance(x, SparseTensor)
                           else x.new_zeros(x.shape))
        return tuple(out)
    return replaced, rebuild


def spdiags(diagonals, offsets, shape, layout=None):
    """``torch.sparse.spdiags``: a 2-D sparse matrix with row ``d`` of ``diagonals`` along
    diagonal ``offsets[d]`` (0 main, > 0 above, < 0 below).  As in PyTorch (and scipy), entry
    ``(i, j)`` of a diagonal takes ``diagonals[d, j]``: the value is picked by its column, so a
    diagonal above the main one skips the first values of its row.  Entries listed diagonal by
    diagonal (an uncoalesced COO result); ``layout`` sparse_csr / sparse_csc converts it.
    PyTorch has no derivative for it: the result requires grad, differentiating raises."""
    from ._layout import sparse_csc, sparse_csr
    from ._more_math import without_derivative
    from .creation import tensor
    from .tensor import Tensor
    for name, arg in (("diagonals", diagonals), ("offsets", offsets)):
        if not isinstance(arg, Tensor):
            raise TypeError(f"_spdiags(): argument '{name}' (position "
                            f"{1 if name == 'diagonals' else 2}) must be Tensor, not "
                            f"{_type_name(arg)}")
    if layout is not None and layout not in (sparse_coo, sparse_csr, sparse_csc):
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, "
                           f"got {_layout_name(layout)}")
    shape = tuple(int(n) for n in shape)
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if diagonals.dim() > 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    if offsets.dim() > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if offsets.dtype != _core.int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got "
                           f"{_core.scalar_type_name_of(offsets._array.dtype)}")
    diag_rows = diagonals.reshape(1, -1) if diagonals.dim() < 2 else diagonals
    offs = offsets._array.reshape(-1).tolist()
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    if diag_rows.shape[0] != len(offs):
        raise RuntimeError(f"Number of diagonals ({diag_rows.shape[0]}) does not match the "
                           f"number of offsets ({len(offs)})")
    rows, cols = shape
    width = diag_rows.shape[1]
    row_idx, col_idx, source = [], [], []
    for d, k in enumerate(offs):
        # columns j with 0 <= j - k < rows, j < cols, and j a column of `diagonals`
        j = np.arange(max(k, 0), min(cols, rows + k, width), dtype=np.int64)
        row_idx.append(j - k)
        col_idx.append(j)
        source.append(d * width + j)
    flat_source = np.concatenate(source) if source else np.zeros(0, np.int64)
    picked = diag_rows.detach().reshape(-1)[tensor(flat_source)]
    values = without_derivative((diagonals,), picked,
                                "derivative for aten::_spdiags is not implemented", RuntimeError)
    indices = tensor(np.stack([np.concatenate(row_idx) if row_idx else np.zeros(0, np.int64),
                               np.concatenate(col_idx) if col_idx else np.zeros(0, np.int64)]))
    requires = values.requires_grad
    result = SparseTensor._make(indices, values, shape, len(flat_source) <= 1, not requires,
                                "NotImplemented" if requires else None)
    if layout is sparse_csr or layout is sparse_csc:
        from ._sparse_compressed import to_compressed
        return to_compressed(result, layout)
    return result


def _layout_name(layout) -> str:
    # PyTorch's C++ name of a layout in its messages (torch.strided is "Strided")
    text = str(layout).rsplit(".", 1)[-1]
    return "".join(part.capitalize() for part in text.split("_"))
