"""The nested tensor object of torch.nested: a batch of tensors whose sizes differ in some dims.

One tensor on the autograd graph holds every element, as in PyTorch, so that gradients, leaves
and grad_fn are those of an ordinary tensor and no kernel is new:

- jagged layout: ``_values`` is the components concatenated along the ragged dim (the nested
  tensor's dim ``_ragged_idx``, the values' dim ``_ragged_idx - 1``), ``_offsets`` where each
  component starts there, ``_lengths`` (None, or each component's length when the values have
  holes: torch.nested.narrow);
- strided layout: ``_values`` is a 1-D buffer of the components' elements one after the other,
  ``_sizes`` their shapes.

Components are views of the values (``unbind``), so an op either runs once on the values (an
elementwise op, or one over regular dims of a jagged tensor) or once per component, the results
packed again (``from_components``).  The ops themselves are in _ops.py; this module is the object:
structure, construction, printing, autograd glue.

Not a subclass of tapegrad.Tensor (as the sparse tensors): a dense op that does not know nested
tensors refuses one with a TypeError, which makes the public entry dispatch it to
__torch_function__ (tapegrad.overrides), instead of misreading the values.
"""
from __future__ import annotations as _annotations

import itertools
import weakref

import numpy as np

from .. import _core
from .._layout import jagged, strided
from .._torch_names import TorchTensorNamedClass
from ..tensor import Size, Tensor


# -- nested ints: the symbolic size of a ragged dim -------------------------------------------------

class NestedInt:
    """The size of a jagged tensor's ragged dim, printed as PyTorch prints its nested ints (j1,
    j2, ...): one number per offsets tensor, in the order they were first seen, so that results
    sharing an input's offsets share its ragged size (and only those)."""

    __slots__ = ("number",)

    def __init__(self, number: int):
        self.number = number

    def __repr__(self) -> str:
        return f"j{self.number}"

    def __eq__(self, other):
        return isinstance(other, NestedInt) and other.number == self.number

    def __hash__(self):
        return hash(("j", self.number))


_next_number = itertools.count(1)
_numbers: dict = {}     # id(offsets) -> (weakref to the offsets, its nested int's number)


def nested_int_number(offsets) -> int:
    """The number of the nested int of `offsets` (a new one for offsets not seen before)."""
    known = _numbers.get(id(offsets))
    if known is not None and known[0]() is offsets:
        return known[1]
    number = next(_next_number)
    key = id(offsets)
    _numbers[key] = (weakref.ref(offsets, lambda _ref, key=key: _numbers.pop(key, None)), number)
    return number


# -- the object -------------------------------------------------------------------------------------

def _internal_sizes_error():
    return RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please file an "
                        "issue.")


def dim_out_of_range(dim, ndim: int):
    return IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                      f"{ndim - 1}], but got {dim})")


class NestedTensor(metaclass=TorchTensorNamedClass):
    """A nested tensor, as torch.nested.nested_tensor makes (see the module docstring)."""

    __module__ = "tapegrad"
    is_nested = True
    is_sparse = False
    is_quantized = False
    is_meta = False
    is_cuda = False
    is_cpu = True
    # numpy arrays on the left defer to the reflected operators, as for Tensor
    __array_priority__ = 1000

    # The fields (see the module docstring); strided ones leave the jagged ones None and back.
    _values = None
    _layout = strided
    _sizes = None
    _offsets = None
    _lengths = None
    _ragged_idx = 1
    _number = 0
    # The longest component's length when known (PyTorch caches it from the tensor list or
    # nested_tensor_from_jagged's max_seqlen, and keeps it through ops that keep the offsets);
    # to_padded_tensor pads a jagged tensor without it to the packed length, as PyTorch does.
    _max_seqlen = None

    @classmethod
    def strided_from_buffer(cls, buffer, sizes):
        nt = cls.__new__(cls)
        nt._values = buffer
        nt._sizes = tuple(tuple(s) for s in sizes)
        return nt

    @classmethod
    def jagged_from_values(cls, values, offsets, ragged_idx: int = 1, lengths=None, number=None,
                           max_seqlen=None):
        nt = cls.__new__(cls)
        nt._max_seqlen = max_seqlen
        nt._layout = jagged
        nt._values = values
        nt._offsets = offsets
        nt._lengths = lengths
        nt._ragged_idx = ragged_idx
        nt._number = nested_int_number(offsets) if number is None else number
        return nt

    def with_values(self, values, ragged_idx=None):
        """This tensor's structure over new values (the result of an op that keeps it)."""
        if self._layout is strided:
            return NestedTensor.strided_from_buffer(values, self._sizes)
        return NestedTensor.jagged_from_values(
            values, self._offsets, self._ragged_idx if ragged_idx is None else ragged_idx,
            self._lengths, self._number, self._max_seqlen)

    def from_components(self, components, grad_fn_name=None, ragged_idx=None):
        """A nested tensor of this one's layout and batch made of `components` (the results of an
        op run per component; they keep the ragged dim where this tensor has it, or at
        `ragged_idx`), its grad_fn named `grad_fn_name` (default: the components' node's)."""
        if grad_fn_name is None and components and components[0].grad_fn is not None:
            grad_fn_name = components[0].grad_fn.name()
        if self._layout is strided:
            if components:
                values = _core.TORCH_FUNCTIONS["cat"]([c.reshape(-1) for c in components])
            else:
                values = self._values.narrow(0, 0, 0)
            made = NestedTensor.strided_from_buffer(values, [tuple(c.shape) for c in components])
        else:
            ragged_idx = self._ragged_idx if ragged_idx is None else ragged_idx
            values = _core.TORCH_FUNCTIONS["cat"](list(components), ragged_idx - 1)
            lengths = [c.shape[ragged_idx - 1] for c in components]
            if lengths == self.component_lengths() and self._lengths is None:
                made = self.with_values(values, ragged_idx)
            else:       # (holes closed, or new lengths: new offsets, a new nested int)
                from ..creation import tensor
                made = NestedTensor.jagged_from_values(
                    values, tensor(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)),
                    ragged_idx)
        if grad_fn_name is not None:
            made._values = _core._name_grad_fn(made._values, grad_fn_name)
        return made

    # -- structure ----------------------------------------------------------------------------------

    def component_lengths(self) -> list:
        """Each component's length along the ragged dim (jagged layout)."""
        offsets = self._offsets._array
        if self._lengths is not None:
            return [int(n) for n in self._lengths._array]
        return [int(n) for n in np.diff(offsets)]

    def batch_size(self) -> int:
        if self._layout is strided:
            return len(self._sizes)
        return self._offsets.shape[0] - 1

    def components(self) -> list:
        """The components as views of the values (on the graph: their gradients reach them)."""
        values = self._values
        if self._layout is strided:
            parts, start = [], 0
            for shape in self._sizes:
                count = int(np.prod(shape, dtype=np.int64))
                parts.append(values.narrow(0, start, count).view(shape))
                start += count
            return parts
        starts = self._offsets._array
        axis = self._ragged_idx - 1
        return [values.narrow(axis, int(start), length)
                for start, length in zip(starts, self.component_lengths())]

    def dim(self) -> int:
        if self._layout is strided:
            return len(self._sizes[0]) + 1 if self._sizes else 1
        return self._values.dim() + 1

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self.dim()

    def jagged_size(self) -> tuple:
        """(B, ..., j<n>, ...): the jagged tensor's size, its ragged dim a nested int."""
        inner = list(self._values.shape)
        inner[self._ragged_idx - 1] = NestedInt(self._number)
        return (self.batch_size(), *inner)

    def size(self, dim=None):
        if dim is None:
            if self._layout is strided:
                raise _internal_sizes_error()
            return Size._unchecked(self.jagged_size())
        ndim = self.dim()
        if not -ndim <= dim < ndim:
            raise dim_out_of_range(dim, ndim)
        dim %= ndim
        if self._layout is jagged:
            return self.jagged_size()[dim]
        if dim == 0:
            return len(self._sizes)
        sizes = {shape[dim - 1] for shape in self._sizes}
        if len(sizes) != 1:
            raise RuntimeError(f"Given dimension {dim} is irregular and does not have a size.")
        return sizes.pop()

    @property
    def shape(self):
        return self.size()

    def stride(self, dim=None):
        if self._layout is strided:
            raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. Please "
                               "file an issue.")
        raise NotImplementedError("stride() of a jagged nested tensor is symbolic (PyTorch's "
                                  "SymInts); tapegrad does not model it")

    def numel(self) -> int:
        if self._layout is strided:
            return int(self._values.numel())
        return int(sum(c.numel() for c in self.components()))

    nelement = numel

    def __len__(self) -> int:
        if self._layout is strided:
            raise _internal_sizes_error()
        return self.batch_size()

    @property
    def layout(self):
        return self._layout

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self):
        return self._values.device

    # -- the jagged layout's parts ------------------------------------------------------------------

    def values(self):
        """The packed values (the strided layout's: its 1-D buffer), as a view on the graph
        (PyTorch's NestedGetValuesBackward0)."""
        alias = self._values.view(self._values.shape)
        return _core._name_grad_fn(alias, "NestedGetValuesBackward0")

    def offsets(self):
        return self._offsets

    def lengths(self):
        return self._lengths

    def unbind(self, dim: int = 0):
        if dim != 0:
            raise RuntimeError(f"unbind(): only supported for NestedTensor on dim=0; got dim={dim}"
                               if self._layout is jagged else
                               "NestedTensor can only be unbound along dimension 0 got dimension "
                               f"{dim} instead.")
        parts = self.components()
        if self._values.requires_grad and _core.is_grad_enabled():
            name = "UnbindBackwardAutogradNestedTensor0"
            parts = [_core._name_grad_fn(p.view(p.shape), name) for p in parts]
        return tuple(parts)

    def __iter__(self):
        if self._layout is strided:
            raise _internal_sizes_error()
        return iter(self.unbind())

    def is_contiguous(self, memory_format=None) -> bool:
        return self._lengths is None and self._values.is_contiguous()

    # -- autograd -----------------------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._values.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True):
        self._values.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._values.is_leaf

    @property
    def grad_fn(self):
        return self._values.grad_fn

    @property
    def grad(self):
        """The values' gradient in this tensor's structure (a nested tensor), as PyTorch's."""
        grad = self._values.grad
        return None if grad is None else self.with_values(grad)

    @grad.setter
    def grad(self, value) -> None:
        self._values.grad = None if value is None else value._values

    def retain_grad(self) -> None:
        self._values.retain_grad()

    @property
    def retains_grad(self) -> bool:
        return self._values.retains_grad

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if gradient is None:
            if not self.requires_grad:
                raise RuntimeError("element 0 of tensors does not require grad and does not have "
                                   "a grad_fn")
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not isinstance(gradient, NestedTensor):
            raise RuntimeError("The gradient of a nested tensor must be a nested tensor of its "
                               "structure")
        self._values.backward(gradient._values, retain_graph=retain_graph,
                              create_graph=create_graph, inputs=inputs)

    def detach(self):
        return self.with_values(self._values.detach())

    # -- printing -----------------------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._layout is jagged:
            return self._jagged_repr()
        shown = []
        for part in self.components():
            part = part.detach()
            if self.requires_grad:      # (PyTorch prints each component as requiring grad)
                part = part.requires_grad_(True)
            shown.append("  " + repr(part).replace("\n", "\n  "))
        suffix = ""
        if self.grad_fn is not None:
            suffix = f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            suffix = ", requires_grad=True"
        return "nested_tensor([\n" + ",\n".join(shown) + "\n]" + suffix + ")"

    def _jagged_repr(self) -> str:
        size = "(" + ", ".join(repr(s) for s in self.jagged_size()) + ")"
        grad = ""
        if self.grad_fn is not None:
            grad = f", grad_fn={self.grad_fn!r}"
        elif self.requires_grad:
            grad = ", requires_grad=True"
        return (f"NestedTensor(size={size}, offsets={self._offsets!r}{grad}, "
                f"contiguous={self.is_contiguous()})")

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def numpy(self, *args, **kwargs):
        if self._layout is jagged:
            raise RuntimeError(".numpy() is not supported for tensor subclasses.")
        raise _internal_sizes_error()

    def tolist(self):
        if self._layout is jagged:
            raise RuntimeError(".tolist() is not supported for tensor subclasses, got "
                               "NestedTensor")
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support strides. Please "
                           "file an issue.")

    def __bool__(self):
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def item(self):
        raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")

    # -- ops: everything else goes through __torch_function__ (_ops.py) -------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._ops import call
        return call(func, args, kwargs or {})

    def __getattr__(self, name: str):
        # Tensor's other methods, dispatched as PyTorch's methods are: supported by _ops or
        # refused in PyTorch's words
        if name.startswith("_") or not callable(getattr(Tensor, name, None)):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        method = getattr(Tensor, name)

        def bound(*args, **kwargs):
            return NestedTensor.__torch_function__(method, (NestedTensor,), (self, *args), kwargs)
        bound.__name__ = name
        return bound


def rsub(values, other):
    """other - values: the reflected subtraction's kernel, under the name PyTorch reports."""
    return other - values


def rdiv(values, other):
    """other / values: the reflected division's kernel."""
    return other / values


def _operator(method, reflected: bool = False):
    """A Python operator of nested tensors: `method` (Tensor's, or one of the reflected kernels
    above) dispatched with the nested tensor first, or second when `reflected`."""
    def operator(self, *others):
        args = (others[0], self) if reflected else (self, *others)
        return NestedTensor.__torch_function__(method, (NestedTensor,), args, {})
    return operator


for _name, _method, _reflected in (
        ("__add__", Tensor.add, False), ("__radd__", Tensor.add, True),
        ("__sub__", Tensor.sub, False), ("__rsub__", rsub, False),
        ("__mul__", Tensor.mul, False), ("__rmul__", Tensor.mul, True),
        ("__truediv__", Tensor.div, False), ("__rtruediv__", rdiv, False),
        ("__pow__", Tensor.pow, False), ("__matmul__", Tensor.matmul, False),
        ("__rmatmul__", Tensor.matmul, True), ("__neg__", Tensor.neg, False),
        ("__abs__", Tensor.abs, False), ("__eq__", Tensor.eq, False), ("__ne__", Tensor.ne, False),
        ("__lt__", Tensor.lt, False), ("__le__", Tensor.le, False), ("__gt__", Tensor.gt, False),
        ("__ge__", Tensor.ge, False), ("__iadd__", Tensor.add_, False),
        ("__isub__", Tensor.sub_, False), ("__imul__", Tensor.mul_, False),
        ("__itruediv__", Tensor.div_, False), ("__getitem__", Tensor.__getitem__, False)):
    setattr(NestedTensor, _name, _operator(_method, _reflected))
NestedTensor.__hash__ = object.__hash__
