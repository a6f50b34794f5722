"""grad_fn._saved_* attributes: what a backward node saved, under PyTorch's attribute names.

The compiled core keeps, per record, the arrays its VJP reads and an op-specific payload (aux,
scalar); it does not keep PyTorch's argument names.  This module maps them back, op by op: each
entry pairs an example call that records the op (run once, to learn its opcode: several opcodes
share one PyTorch name, e.g. MulBackward0 for mul, dropout and outer, each with its own layout)
with the attributes PyTorch shows for that node and how each is read from the record.

Tensor attributes follow PyTorch's unpacking: a saved input is the input tensor itself while it
lives (so ``x is y.grad_fn._saved_self``), a saved output is a new tensor on the output's storage
whose grad_fn is the node, and any of them raises PyTorch's error once backward has freed the
graph or after an in-place write overwrote the value.  Non-tensor attributes stay readable.
Negative dims read back normalised (PyTorch shows the argument as given).
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math

import numpy as np

from . import _core

_INT64_MAX = 9223372036854775807


# -- how an attribute is read --------------------------------------------------------------------

class _Input:
    """Input `index` of the op (a tensor): the live input tensor, else the saved value in `slot`
    as a new tensor, else None (PyTorch's None for a value it did not need to save)."""

    tensor = True

    def __init__(self, index: int, slot: int | None):
        self.index, self.slot = index, slot

    def read(self, fn):
        unpacked = fn._unpacked(self.slot) if self.slot is not None else None
        if unpacked is not None:        # packed by a saved-tensor hook: what unpack gives
            return fn._as_saved_input(self.index, unpacked)
        saved = fn._slot_value(self.slot) if self.slot is not None else None
        if self.slot is not None and saved is None:
            return None
        live = fn._input_tensor(self.index, -1 if self.slot is None else self.slot)
        if live is not None:
            return live
        if saved is None:
            raise RuntimeError(f"{type(fn).__name__}: tapegrad did not keep this saved input "
                               "(its tensor was freed)")
        return _as_tensor(saved)


class _Result:
    """The op's output, as a saved result: a new tensor on its storage whose grad_fn is `fn`.
    `slot`: where the record saved it (None: read the live output); `reduced`: a reduction's
    saved value keeps the reduced dims, which the output drops unless keepdim."""

    tensor = True

    def __init__(self, slot: int | None, reduced: bool = False):
        self.slot, self.reduced = slot, reduced

    def read(self, fn):
        fn._check_saved()
        shape = None
        if self.reduced:
            shape, axes, keepdim = fn._aux[:3]
            if not keepdim:
                shape = tuple(n for i, n in enumerate(shape) if i not in axes)
            else:
                shape = None
        unpacked = fn._unpacked(self.slot) if self.slot is not None else None
        if unpacked is not None:        # packed by a saved-tensor hook: what unpack gives
            return unpacked if shape is None else unpacked.reshape(shape)
        t = fn._result_tensor(-1 if self.slot is None else self.slot, shape)
        if t is None:
            raise RuntimeError(f"{type(fn).__name__}: tapegrad did not keep the saved result "
                               "(the output tensor was freed)")
        return t


def _index_part(fn, part):
    """A part of a record's saved index key: a SavedIndex stands for the index tensor's array,
    kept (version-checked) in a saved slot (record.pxi's save_index)."""
    if isinstance(part, _core.SavedIndex):
        return fn._slot_value(part.slot)
    return part


class _Slot:
    """A saved value that is neither input nor output (indices, a mask) as a plain tensor;
    `shape_of(fn)`: the shape PyTorch gives it, when the record keeps another."""

    tensor = True

    def __init__(self, slot: int, shape_of=None):
        self.slot, self.shape_of = slot, shape_of

    def read(self, fn):
        value = fn._slot_value(self.slot)
        if value is None:
            return None
        t = _as_tensor(value)
        return t.reshape(self.shape_of(fn)) if self.shape_of is not None else t


class _Value:
    """A non-tensor attribute computed from the record's payload (readable after backward)."""

    tensor = False

    def __init__(self, read):
        self.read = read


def _as_tensor(value):
    arr = np.asarray(value)
    return _core.wrap_array(arr if arr.flags.writeable else arr.copy())


def _number(value):
    """A saved Python number or 0-d array as PyTorch shows a Scalar (int stays int)."""
    if isinstance(value, np.ndarray):
        value = value.item()
    return value


def _saved_number(slot):
    """A number operand (pow's exponent or base): the saved value, or once backward freed it,
    the record's scalar copy (integral values read back as int)."""
    def read(fn):
        if not fn._released:
            return _number(fn._slot_value(slot))
        value = fn._scalar
        return int(value) if float(value).is_integer() else value
    return _Value(read)


def _const(value):
    return _Value(lambda fn: value)


def _aux(i, convert=lambda v: v):
    """Item i of the record's payload (i None: the whole payload), converted."""
    return _Value(lambda fn: convert(fn._aux if i is None else fn._aux[i]))


def _dims(v):
    return tuple(int(d) for d in v)


def _numel(shape):
    return math.prod(shape)


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _swapped(perm):
    moved = [i for i, p in enumerate(perm) if p != i]
    return (moved[0], moved[1]) if moved else (0, 0)


def _kept_indices_shape(fn):
    shape, axis, keepdim = fn._aux[:3]
    if keepdim:
        return tuple(1 if i == axis else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i != axis)


_SELF0 = _Input(0, 0)
_REDUCE_ALL = {"_saved_self_sym_sizes": _aux(0, tuple)}
_REDUCE_DIM = {"_saved_dim": _aux(1, _dims), "_saved_keepdim": _aux(2, bool),
               "_saved_self_sym_sizes": _aux(0, tuple)}
_MM = {"_saved_self": _SELF0, "_saved_mat2": _Input(1, 1),
       "_saved_self_sym_sizes": _aux(0, tuple), "_saved_mat2_sym_sizes": _aux(1, tuple)}


# split's pieces: the dim is the position of the piece's slice in the record's key
_SPLIT_DIMS = {"_saved_dim": _Value(lambda fn: len(fn._aux[2]) - 2),
               "_saved_self_sym_sizes": _aux(0, tuple)}
_SPLIT = {**_SPLIT_DIMS, "_saved_split_size": _aux(3, int)}
_SPLIT_SIZES = {**_SPLIT_DIMS, "_saved_split_sizes": _aux(3, _dims)}
_ACTIVATION_BACKWARD = {"_saved_grad_output": _Input(0, 0), "_saved_output": _Input(1, 1)}


# -- the table: an example call that records the op, and its attributes ---------------------------
# Each example takes x, y: (2, 3) float64 tensors that require grad, m: (3, 4), v: (3,).

_EXAMPLES = [
    (lambda x, y, m, v: x + y, {"_saved_alpha": _const(1)}),
    (lambda x, y, m, v: x - y, {"_saved_alpha": _const(1)}),
    (lambda x, y, m, v: 2 - x, {"_saved_alpha": _const(1)}),
    (lambda x, y, m, v: x * y, {"_saved_self": _Input(0, 0), "_saved_other": _Input(1, 1)}),
    (lambda x, y, m, v: x / y, {"_saved_self": _Input(0, 0), "_saved_other": _Input(1, 1)}),
    (lambda x, y, m, v: x ** 2, {"_saved_self": _SELF0, "_saved_exponent": _saved_number(1)}),
    (lambda x, y, m, v: x ** y, {"_saved_self": _SELF0, "_saved_exponent": _Input(1, 1),
                                 "_saved_result": _Result(2)}),
    (lambda x, y, m, v: 2 ** x, {"_saved_self": _saved_number(0),
                                 "_saved_exponent": _Input(1, 1), "_saved_result": _Result(2)}),
    (lambda x, y, m, v: -x, {}),
    (lambda x, y, m, v: x.exp(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.log(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: x.tanh(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.relu(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.sigmoid(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.sqrt(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.rsqrt(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.reciprocal(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.expm1(), {"_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.abs(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: x.sin(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: x.cos(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: x.log1p(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: x.erf(), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: _F().silu(x), {"_saved_self": _SELF0}),
    (lambda x, y, m, v: _F().gelu(x), {
        "_saved_self": _SELF0,
        "_saved_approximate": _Value(lambda fn: "tanh" if fn._scalar else "none")}),
    (lambda x, y, m, v: _F().leaky_relu(x), {"_saved_self": _SELF0,
                                             "_saved_negative_slope": _Value(lambda fn: fn._scalar)}),
    (lambda x, y, m, v: x.clamp(-1, 1), {"_saved_self": _SELF0, "_saved_min": _aux(0),
                                         "_saved_max": _aux(1)}),
    (lambda x, y, m, v: x.clamp(min=0), {"_saved_self": _SELF0, "_saved_min": _aux(0)}),
    (lambda x, y, m, v: x.clamp(max=0), {"_saved_self": _SELF0, "_saved_max": _aux(1)}),
    (lambda x, y, m, v: x.sum(), _REDUCE_ALL),
    (lambda x, y, m, v: x.sum(1), _REDUCE_DIM),
    (lambda x, y, m, v: x.mean(), {**_REDUCE_ALL,
                                   "_saved_self_sym_numel": _aux(0, _numel)}),
    (lambda x, y, m, v: x.mean(1), {**_REDUCE_DIM,
                                    "_saved_self_sym_numel": _aux(0, _numel)}),
    (lambda x, y, m, v: x.max(), {"_saved_self": _Input(0, 0),
                                  "_saved_result": _Result(1, reduced=True)}),
    (lambda x, y, m, v: x.min(), {"_saved_self": _Input(0, 0),
                                  "_saved_result": _Result(1, reduced=True)}),
    (lambda x, y, m, v: x.amax(1), {"_saved_self": _Input(0, 0), "_saved_dim": _aux(1, _dims),
                                    "_saved_keepdim": _aux(2, bool),
                                    "_saved_result": _Result(1, reduced=True)}),
    (lambda x, y, m, v: x.amin(1), {"_saved_self": _Input(0, 0), "_saved_dim": _aux(1, _dims),
                                    "_saved_keepdim": _aux(2, bool),
                                    "_saved_result": _Result(1, reduced=True)}),
    (lambda x, y, m, v: x.max(1)[0], {"_saved_dim": _aux(1, int), "_saved_keepdim": _aux(2, bool),
                                      "_saved_self_sym_sizes": _aux(0, tuple),
                                      "_saved_indices": _Slot(0, _kept_indices_shape)}),
    (lambda x, y, m, v: x.min(1)[0], {"_saved_dim": _aux(1, int), "_saved_keepdim": _aux(2, bool),
                                      "_saved_self_sym_sizes": _aux(0, tuple),
                                      "_saved_indices": _Slot(0, _kept_indices_shape)}),
    (lambda x, y, m, v: x.logsumexp(1), {"_saved_self": _Input(0, 0), "_saved_dim": _aux(1, _dims),
                                         "_saved_keepdim": _aux(2, bool),
                                         "_saved_result": _Result(1, reduced=True)}),
    (lambda x, y, m, v: x @ m, _MM),
    (lambda x, y, m, v: x @ v, {"_saved_self": _SELF0, "_saved_vec": _Input(1, 1)}),
    (lambda x, y, m, v: v @ v, {"_saved_self": _SELF0, "_saved_tensor": _Input(1, 1)}),
    (lambda x, y, m, v: _bmm()(x[None], m[None]), {"_saved_self": _SELF0,
                                                   "_saved_mat2": _Input(1, 1)}),
    (lambda x, y, m, v: x.softmax(1), {"_saved_dim": _aux(0, int), "_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.log_softmax(1), {"_saved_dim": _aux(0, int),
                                           "_saved_result": _Result(0)}),
    (lambda x, y, m, v: x.view(6), {"_saved_self_sym_sizes": _aux(None, tuple)}),
    (lambda x, y, m, v: x.expand(4, 2, 3), {"_saved_self_sym_sizes": _aux(None, tuple)}),
    (lambda x, y, m, v: x.t(), {}),
    (lambda x, y, m, v: x.transpose(0, 1), {
        "_saved_dim0": _Value(lambda fn: _swapped(fn._aux)[0]),
        "_saved_dim1": _Value(lambda fn: _swapped(fn._aux)[1])}),
    (lambda x, y, m, v: x.permute(1, 0), {"_saved_dims": _Value(lambda fn: _inverse(fn._aux))}),
    (lambda x, y, m, v: x.unsqueeze(0), {"_saved_dim": _Value(lambda fn: int(fn._scalar))}),
    (lambda x, y, m, v: x[None].squeeze(0), {"_saved_dim": _Value(lambda fn: int(fn._scalar)),
                                             "_saved_self_sym_sizes": _aux(None, tuple)}),
    (lambda x, y, m, v: x[1], {"_saved_dim": _const(0),
                               "_saved_index": _Value(lambda fn: fn._aux[2][0]),
                               "_saved_self_sym_sizes": _aux(0, tuple)}),
    (lambda x, y, m, v: x[1:], {
        "_saved_dim": _const(0),
        "_saved_start": _Value(lambda fn: fn._aux[2][0].start or 0),
        "_saved_end": _Value(lambda fn: _INT64_MAX if fn._aux[2][0].stop is None
                             else fn._aux[2][0].stop),
        "_saved_step": _const(1),
        "_saved_self_sym_sizes": _aux(0, tuple)}),
    (lambda x, y, m, v: _cat()([x, y]), {"_saved_dim": _aux(0, int)}),
    # (the payload: (shape padded to the repeats' length, repeats, the input's shape))
    (lambda x, y, m, v: x.repeat(2, 1), {"_saved_repeats": _aux(1, _dims),
                                         "_saved_self_sym_sizes": _aux(2, tuple)}),
    (lambda x, y, m, v: x.tril(), {"_saved_diagonal": _Value(lambda fn: int(fn._scalar))}),
    (lambda x, y, m, v: x.triu(), {"_saved_diagonal": _Value(lambda fn: int(fn._scalar))}),
    # (the payload's key: the index array at the dim, then Ellipsis)
    (lambda x, y, m, v: x.index_select(1, _index()), {
        "_saved_dim": _Value(lambda fn: len(fn._aux[3]) - 2),
        "_saved_index": _Value(lambda fn: _as_tensor(_index_part(fn, fn._aux[3][-2]))),
        "_saved_self_sym_sizes": _aux(0, tuple)}),
    (lambda x, y, m, v: _stack()([x, y]), {"_saved_dim": _aux(0, int)}),
    (lambda x, y, m, v: _where()(x > 0, x, y), {"_saved_condition": _Slot(0)}),
    (lambda x, y, m, v: x.split(2, 1)[0], _SPLIT),
    (lambda x, y, m, v: x.unsafe_split(2, 1)[0], _SPLIT),
    (lambda x, y, m, v: x.split([1, 2], 1)[0], _SPLIT_SIZES),
    (lambda x, y, m, v: x.unsafe_split_with_sizes([1, 2], 1)[0], _SPLIT_SIZES),
    (lambda x, y, m, v: x.unbind(1)[0], {"_saved_dim": _Value(lambda fn: len(fn._aux[2]) - 2)}),
    (lambda x, y, m, v: _create_graph_gradient(x.tanh(), x), _ACTIVATION_BACKWARD),
    (lambda x, y, m, v: _create_graph_gradient(x.sigmoid(), x), _ACTIVATION_BACKWARD),
]


# The compiled complex ops (src/tapegrad/ops_complex.pxi) record opcodes of their own: the same
# examples on complex x, y.
_COMPLEX_EXAMPLES = [
    (lambda x, y, m, v: x * y, {"_saved_self": _Input(0, 0), "_saved_other": _Input(1, 1)}),
    (lambda x, y, m, v: x / y, {"_saved_self": _Input(0, 0), "_saved_other": _Input(1, 1)}),
    (lambda x, y, m, v: x.abs(), {"_saved_self": _SELF0}),
] + [(lambda x, y, m, v, name=name: getattr(x, name)(), {"_saved_result": _Result(0)})
     for name in ("exp", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "expm1")] + [
    (lambda x, y, m, v, name=name: getattr(x, name)(), {"_saved_self": _SELF0})
    for name in ("log", "sin", "cos", "log1p", "log10", "log2", "sinh", "cosh", "asin", "acos",
                 "atan")]


def _F():
    from .nn import functional
    return functional


def _create_graph_gradient(y, x):
    from .autograd import grad
    return grad(y.sum(), x, create_graph=True)[0]


def _cat():
    from . import cat
    return cat


def _bmm():
    from . import bmm
    return bmm


def _index():
    from . import tensor
    return tensor([2, 0])


def _stack():
    from . import stack
    return stack


def _where():
    from . import where
    return where


# opcode -> {attribute: reader}, learned from the examples on first use.
_BY_OPCODE: dict[int, dict] | None = None


def _learn_opcodes() -> dict[int, dict]:
    from .grad_mode import inference_mode
    table: dict[int, dict] = {}
    with inference_mode(False):        # grad mode on and inference mode off: the examples record
        # Fixed values (not random ones: reading an attribute must not advance the user's
        # random stream).
        x, y, m, v = (_core.wrap_array(np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape),
                                       True)
                      for shape in ((2, 3), (2, 3), (3, 4), (3,)))
        for example, attributes in _EXAMPLES:
            table.setdefault(example(x, y, m, v).grad_fn._opcode, attributes)
        xc, yc = (_core.wrap_array(t._array * (1 + 1j), True) for t in (x, y))
        for example, attributes in _COMPLEX_EXAMPLES:
            table.setdefault(example(xc, yc, m, v).grad_fn._opcode, attributes)
    return table


def _attributes_of(fn) -> dict:
    global _BY_OPCODE
    if _BY_OPCODE is None:
        _BY_OPCODE = _learn_opcodes()
    return _BY_OPCODE.get(fn._opcode, {})


def read_saved_attribute(fn, name):
    """grad_fn.<name> for a `_saved_*` / `_raw_saved_*` name (name None: the names fn has)."""
    attributes = _attributes_of(fn)
    if name is None:
        return list(attributes) + ["_raw" + n for n, r in attributes.items() if r.tensor]
    if name.startswith("_raw_saved_") and "_saved_" + name[len("_raw_saved_"):] in attributes:
        reader = attributes["_saved_" + name[len("_raw_saved_"):]]
        if reader.tensor:
            return SavedTensor(fn, reader)     # (readable after backward freed the value)
    reader = attributes.get(name)
    if reader is None:
        raise AttributeError(f"'{type(fn).__name__}' object has no attribute '{name}'")
    if reader.tensor:
        fn._check_saved()
    return reader.read(fn)


class SavedTensor:
    """grad_fn._raw_saved_*: a handle on a saved tensor (PyTorch's SavedTensor).  register_hooks
    gives that one value its own pack and unpack hooks (src/tapegrad/saved_hooks.pxi)."""

    def __init__(self, fn, reader):
        self._fn, self._reader = fn, reader

    def register_hooks(self, pack_hook, unpack_hook):
        """Call pack_hook(tensor) now and keep its result in place of the saved tensor;
        unpack_hook(packed) gives the tensor back whenever backward or _saved_* reads it."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and "
                            "unpack_hook must be callables, got "
                            f"{_type_name(pack_hook)} and {_type_name(unpack_hook)}")
        if self._fn._released:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved variables after calling "
                "backward.")
        slot = getattr(self._reader, "slot", None)
        if slot is None:
            raise RuntimeError(f"{type(self._fn).__name__}: tapegrad keeps no saved value for "
                               "this tensor (its VJP reads the live tensor): it cannot be packed")
        self._fn._pack_slot(slot, pack_hook, unpack_hook)

    def __repr__(self) -> str:
        return f"<tapegrad.autograd.SavedTensor object at {id(self):#x}>"


_core._set_saved_attribute_reader(read_saved_attribute)
