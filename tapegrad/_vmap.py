"""vmap with batching rules: the mapped function runs once, on BatchedTensors.

A BatchedTensor stands for one sample of a batch: it holds ``value``, a tensor whose dim 0 is the
batch (or, under nested vmaps, a BatchedTensor of an outer level whose logical dim 0 is), and it
shows the function the sample's shape.  Its methods and dunders apply batching rules: the op
runs once on ``value`` with the sample's dims shifted past the batch dim (elementwise ops with
broadcasting, matmul/linear, reductions and softmaxes over given dims, reshape/view/transpose/
permute/expand, indexing, stacking), so a mapped function costs one call per op, and its results
are those of the un-mapped op run on the whole batch.

Module-level functions (``tapegrad.tanh``, ``F.linear``, ``tapegrad.stack``...) are compiled
functions that accept only tensors: while a vmap runs, the public namespaces (tapegrad,
tapegrad.nn.functional, tapegrad.linalg, tapegrad.special) are of a module class whose attribute
lookup returns dispatching wrappers, which call the original directly when no argument is
batched; their class is restored when the outermost vmap returns (no cost outside vmap).  A
function bound to another name before the vmap (``from tapegrad import tanh``) is not wrapped:
on a BatchedTensor it raises TypeError, and vmap then runs the whole function once per sample.

Fallback: an op without a rule (a method or a wrapped function) runs once per sample on the
slices of its batched arguments and its results are stacked; so every op is supported, those
without a rule at the speed of a loop.  A function of random numbers runs wholly as a loop
(``randomness='same'`` or ``'different'``: each call draws as PyTorch's semantics say), as do
data-dependent calls (``.item()``, ``bool(x)``, which raise as PyTorch's).
"""
from __future__ import annotations as _annotations

import functools
import math
import operator
import threading

from . import _core
from ._torch_names import TorchNamedModule as _TorchNamedModule

# The vmaps running in this thread, outermost first: [level id, batch size, how many function
# transforms (grad, vjp, jacrev...) were running when it started].
_local = threading.local()


def _running() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack
_lock = threading.Lock()
_patched: dict = {}       # namespace module -> its own class, while any vmap runs
_by_original: dict = {}   # id(original function) -> its dispatching wrapper
_users = 0


class DataDependentError(RuntimeError):
    """PyTorch's vmap refusal of an operation whose result depends on a batched tensor's data
    (.item(), a Python conversion, a boolean mask).  A transform that batches only for speed
    (jacfwd's columns, whose primals PyTorch does not batch) catches it and computes without the
    batch."""


# (a script printing type(e).__name__ sees PyTorch's class)
DataDependentError.__name__ = DataDependentError.__qualname__ = "RuntimeError"


class BatchedTensor:
    """One sample of a batch (see the module docstring).  ``value``'s dim 0 is the batch."""

    __slots__ = ("value", "level")

    def __init__(self, value, level):
        self.value = value
        self.level = level

    # -- what the function sees ------------------------------------------------------------------
    @property
    def shape(self):
        from .tensor import Size
        return Size(tuple(self.value.shape)[1:])

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self):
        return self.value.dim() - 1

    ndim = property(dim)

    def numel(self):
        return math.prod(self.shape)

    nelement = numel

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    dtype = property(lambda self: self.value.dtype)
    device = property(lambda self: self.value.device)
    requires_grad = property(lambda self: self.value.requires_grad)
    is_leaf = property(lambda self: self.value.is_leaf)
    grad_fn = property(lambda self: self.value.grad_fn)
    layout = property(lambda self: self.value.layout)
    is_cuda = property(lambda self: False)

    def is_floating_point(self):
        return self.value.is_floating_point()

    def is_complex(self):
        return self.value.is_complex()

    def requires_grad_(self, requires_grad=True):
        self.value.requires_grad_(requires_grad)
        return self

    def __repr__(self):
        return f"BatchedTensor(lvl={self.level}, bdim=0, value=\n{self.value!r}\n)"

    # -- data-dependent Python conversions: PyTorch's vmap refuses them -----------------------------
    # Three different refusals, as PyTorch words them: bool() is control flow; float()/int()/
    # __index__ go through .item(); tolist()/numpy()/np.asarray read the (absent) storage.
    def item(self, *args):
        raise DataDependentError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
            "calling .item() on a Tensor, please try to rewrite what you're doing with other "
            "operations. If error is occurring somewhere inside PyTorch internals, please file a "
            "bug report.")

    def _data_dependent(self, *args):
        raise DataDependentError(
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
            "flow. We don't support that yet, please file an issue at "
            "https://github.com/pytorch/pytorch/issues .")

    def _no_storage(self, *args, **kwargs):
        raise DataDependentError("Cannot access data pointer of Tensor that doesn't have storage")

    __bool__ = _data_dependent
    __float__ = __int__ = __index__ = item
    tolist = numpy = __array__ = _no_storage

    def __iter__(self):
        return iter(self.unbind(0))

    # -- anything without a rule: the loop ---------------------------------------------------------
    def __getattr__(self, name):
        attr = getattr(self.value, name)    # AttributeError as a tensor's, for unknown names
        if not callable(attr) and name.startswith("_"):
            # tapegrad's own code reading a tensor's internals (its array) was handed a batched
            # tensor (a module calling a kernel directly, not through the namespaces): a
            # TypeError naming BatchedTensor, on which vmap runs the function once per sample
            raise TypeError(f"vmap: Tensor.{name} read from a BatchedTensor")
        if not callable(attr):
            raise RuntimeError(f"vmap: the attribute Tensor.{name} of a batched tensor is not "
                               f"supported")
        def method(sample, *args, **kwargs):
            return getattr(sample, name)(*args, **kwargs)

        def per_sample(*args, **kwargs):
            return _loop(method, name, (self,) + args, kwargs)
        return per_sample


# -- levels and physical values ----------------------------------------------------------------------

def _is_batched(x) -> bool:
    return type(x) is BatchedTensor


def _top_level(items):
    top = None
    for x in items:
        if type(x) is BatchedTensor and (top is None or x.level > top):
            top = x.level
    return top


def _batch_size(level) -> int:
    for lvl, size, _ in _running():
        if lvl == level:
            return size
    raise RuntimeError("vmap: a BatchedTensor escaped the vmap that created it")


def _differentiated_inside(level) -> bool:
    """Whether a function transform (grad, vjp, jacrev...) started inside vmap ``level``: it
    differentiates each sample's op, as PyTorch's grad level sits below the batching rule there;
    otherwise a backward outside the vmap differentiates the batched op the rule ran."""
    from . import func
    for lvl, _, transforms_outside in _running():
        if lvl == level:
            return func._depth > transforms_outside
    return False


def _leaves(args, kwargs):
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            out.extend(a)
        else:
            out.append(a)
    return out


def _at(x, level):
    """x's tensor at ``level``: its value (dim 0 the batch) when x is batched at that level,
    else x itself (unbatched there: broadcasting or an explicit expand places it)."""
    return x.value if type(x) is BatchedTensor and x.level == level else x


def _same_kind(result, items):
    """A tuple like ``result`` (a namedtuple, a torch.return_types structseq, a tuple)."""
    if hasattr(type(result), "_make"):
        return type(result)._make(items)
    if type(result) is tuple:
        return tuple(items)
    return type(result)(items)


def _wrap(result, level):
    """Results of an op run on values at ``level`` as BatchedTensors (tuples elementwise)."""
    if isinstance(result, _core.TensorBase) or type(result) is BatchedTensor:
        return BatchedTensor(result, level)
    if isinstance(result, tuple):
        return _same_kind(result, [_wrap(r, level) for r in result])
    if isinstance(result, list):
        return [_wrap(r, level) for r in result]
    return result


def _expanded(x, level):
    """x's tensor at ``level`` with the batch dim present (unbatched x is expanded)."""
    if type(x) is BatchedTensor and x.level == level:
        return x.value
    if not (isinstance(x, _core.TensorBase) or type(x) is BatchedTensor):
        return x
    return x.unsqueeze(0).expand((_batch_size(level),) + tuple(x.shape))


def _ndim(x) -> int:
    return x.dim() if hasattr(x, "dim") else 0


def _pad_batched(v, rank):
    """v (dim 0 the batch) with size-1 dims after the batch up to ``rank`` sample dims, so that
    broadcasting against unbatched operands aligns the sample dims."""
    missing = rank - (v.dim() - 1)
    if missing <= 0:
        return v
    # one view, as PyTorch's batching rules pad (its gradient is then a ViewBackward0)
    shape = tuple(v.shape)
    return v.view(shape[:1] + (1,) * missing + shape[1:])


class UnbatchedWriteError(RuntimeError):
    """PyTorch's vmap refusal of an in-place write into a tensor that is not mapped over.  Its
    own class so that vmap never answers it by running the function once per sample (which would
    make the forbidden write once per sample, silently)."""


UnbatchedWriteError.__name__ = UnbatchedWriteError.__qualname__ = "RuntimeError"


def unbatched_write_error(name="inplace arithmetic"):
    """PyTorch's refusal of an in-place write into a tensor that is not mapped over (at the
    innermost level) of values that are: one tensor cannot hold every sample's result, and
    writing each sample in turn would leave only the last one."""
    return UnbatchedWriteError(
        f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` "
        f"in extra_args that has more elements than `self`. This happened due to `other` being "
        f"vmapped over but `self` not being vmapped over in a vmap. Please try to use "
        f"out-of-place operators instead of {name}.")


def _writes_unbatched(name, args, kwargs, level) -> bool:
    """Whether op ``name`` writes into a tensor not batched at ``level`` (its self, in place,
    or its out=)."""
    def unbatched(x):
        if isinstance(x, (tuple, list)):
            return any(unbatched(y) for y in x)
        return x is not None and not (type(x) is BatchedTensor and x.level == level)
    inplace = name.endswith("_") and not name.endswith("__") and args
    return bool((inplace and unbatched(args[0])) or unbatched(kwargs.get("out")))


def _dynamic_shape_op(name, args, kwargs):
    """The aten op PyTorch's vmap names when it refuses ``name``'s call on a batched tensor,
    whose result's shape depends on the sample's values (None: a shape of its own)."""
    if name == "nonzero" and kwargs.get("as_tuple"):
        return "aten::nonzero_numpy"
    if name == "where" and len(args) + len(kwargs) == 1:
        return "aten::where"            # (where(condition): nonzero's tuple)
    if name == "unique":
        return "aten::unique_dim" if kwargs.get("dim") is not None or len(args) > 4 else \
            "aten::_unique2"
    return {"nonzero": "aten::nonzero", "unique_consecutive": "aten::unique_consecutive"}.get(name)


def _refuse_dynamic_shape(name, args, kwargs):
    """PyTorch's vmap has no per-sample fallback for an op of data-dependent shape: refuse it as
    PyTorch does (the loop would stack samples of equal shape and return what PyTorch refuses;
    fuzz transforms 2313).  A DataDependentError, so jacfwd's columns still compute it."""
    op = _dynamic_shape_op(name, args, kwargs)
    if op == "aten::nonzero_numpy":
        raise DataDependentError("Batching rule not implemented for aten::nonzero_numpy. We could "
                                 "not generate a fallback.")
    if op is not None:
        raise DataDependentError(
            "vmap: We do not support batching operators that can output dynamic shape. "
            f"Attempted to vmap over {op}. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues if you need this feature.")


def _loop(fn, name, args, kwargs):
    """Run ``fn`` once per sample of the innermost batched level among args, stack results."""
    level = _top_level(_leaves(args, kwargs))
    size = _batch_size(level)
    if _writes_unbatched(name, args, kwargs, level):
        raise unbatched_write_error()
    _refuse_dynamic_shape(name, args, kwargs)

    def slice_at(x, i):
        if type(x) is BatchedTensor and x.level == level:
            return x.value.select(0, i)
        if isinstance(x, list):
            return [slice_at(y, i) for y in x]
        if isinstance(x, tuple) and not hasattr(x, "_fields"):
            return tuple(slice_at(y, i) for y in x)
        return x
    results = [fn(*[slice_at(a, i) for a in args], **{k: slice_at(v, i)
                                                       for k, v in kwargs.items()})
               for i in range(size)]
    if name.endswith("_") and not name.endswith("__") and args:
        return args[0]          # an in-place op: it wrote into the samples' views of args[0]
    return _stack_results(results, level, name)


def _stack_results(results, level, name):
    first = results[0]
    if isinstance(first, _core.TensorBase) or type(first) is BatchedTensor:
        return BatchedTensor(function("stack")(list(results)), level)
    if isinstance(first, (tuple, list)):
        columns = [_stack_results([r[k] for r in results], level, name) for k in range(len(first))]
        return columns if isinstance(first, list) else _same_kind(first, columns)
    if first is None or all(r == first for r in results[1:]):
        return first
    raise RuntimeError(f"vmap: {name} returned a Python value that differs between samples "
                       f"({type(first).__name__}); vmap can only map over tensor results")


# -- rules ---------------------------------------------------------------------------------------

def _dim_at(d, rank):
    """A sample dim as the value's dim (past the batch dim)."""
    if not -rank <= d < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {d})")
    return d % rank + 1


def _dims_at(dim, rank):
    if isinstance(dim, (tuple, list)):
        return tuple(_dim_at(d, rank) for d in dim)
    return _dim_at(dim, rank)


def _unary(name):
    """An op on one tensor (extra arguments scalars, or unbatched tensors that broadcast into
    the sample: anything else runs per sample)."""
    def rule(self, *args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if type(a) is BatchedTensor or (isinstance(a, _core.TensorBase) and
                                            a.dim() > self.dim()):
                return _loop(lambda x, *r, **k: getattr(x, name)(*r, **k), name,
                             (self,) + args, kwargs)
        out = getattr(self.value, name)(*args, **kwargs)
        if name.endswith("_") and out is self.value:
            return self
        return BatchedTensor(out, self.level)
    return rule


def _align(a, b):
    """(level, a's value, b's value) for an elementwise op at the innermost level of a and b:
    a batched operand's sample dims are padded after its batch dim to the result's rank, so
    that broadcasting with the unbatched operand aligns the sample dims."""
    level = _top_level((a, b))
    rank = max(_ndim(a), _ndim(b))
    va, vb = _at(a, level), _at(b, level)
    if _is_batched(a) and a.level == level:
        va = _pad_batched(va, rank)
    if _is_batched(b) and b.level == level:
        vb = _pad_batched(vb, rank)
    if _zero_dim_sample(a, level) or _zero_dim_sample(b, level):
        va, vb = _promoted(a, b, va, vb)
    return level, va, vb


def _zero_dim_sample(x, level) -> bool:
    return type(x) is BatchedTensor and x.level == level and x.value.dim() == 1


def _promoted(a, b, va, vb):
    """va, vb in the dtype PyTorch's type promotion gives the samples a and b.  A 0-d sample's
    value has a dim (the batch), so promotion on the values would rank it as dimensioned: with
    a 0-d tensor of another dtype it would win within its category (float32 sample * float64
    0-d: float32, where PyTorch gives float64), against a dimensioned one it would tie
    (float64 sample + float32 vector: float64, where PyTorch gives float32)."""
    if not all(isinstance(x, _core.TensorBase) or type(x) is BatchedTensor for x in (a, b)) or \
            a.dtype == b.dtype:
        return va, vb                   # (Python numbers promote as weakest either way)
    from . import result_type, zeros

    def proxy(x):
        return zeros(() if x.dim() == 0 else (1,) * x.dim(), dtype=x.dtype)
    dtype = result_type(proxy(a), proxy(b))
    return (va if va.dtype == dtype else va.to(dtype)), (vb if vb.dtype == dtype else
                                                         vb.to(dtype))


def _binary(name, reflected=False):
    """A binary method or dunder (``reflected``: self is the right operand, ``name`` the
    forward dunder)."""
    def rule(self, other, *args, **kwargs):
        a, b = (other, self) if reflected else (self, other)
        level, va, vb = _align(a, b)
        if name.endswith("_") and not name.startswith("__"):
            if not (_is_batched(a) and a.level == level):
                raise unbatched_write_error()
            getattr(va, name)(vb, *args, **kwargs)
            return a
        if type(va) is BatchedTensor or type(vb) is BatchedTensor:
            # an operand batched only at an outer level (nested vmaps): the op at that level,
            # through Python's operator protocol (which reaches the BatchedTensor's rule on
            # either side; the method of a plain tensor refuses a BatchedTensor) or the
            # namespace's dispatching function
            op = getattr(operator, name) if name.startswith("__") else function(name)
            out = op(va, vb, *args, **kwargs)
        elif reflected:
            out = getattr(vb, "__r" + name[2:])(va, *args, **kwargs)
        else:
            out = getattr(va, name)(vb, *args, **kwargs)
        if out is NotImplemented:
            return NotImplemented
        return BatchedTensor(out, level)
    return rule


# Ops over a dim that keep the sample's shape (a 0-d sample gets its shape back).
_KEEPS_SHAPE = {"softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cummax",
                "cummin"}
# Whole-sample reductions done over a tuple of dims (as PyTorch's batching rules do); the
# others flatten the sample first.
_TUPLE_DIMS = {"sum", "mean", "amax", "amin", "std", "var", "logsumexp", "nansum",
               "nanmean"}       # (prod takes one dim only: it flattens)
# Whole-sample max/min/median: PyTorch's batching rule takes the op over the flattened sample
# and keeps its values, so a backward outside the vmap sends the gradient to the one index the
# op picked; a transform inside the vmap differentiates the sample's max() or median(), which
# split it evenly among ties (max as amax does; median per sample).
_WHOLE_BY_INDEX = {"max", "min", "median", "nanmedian"}
_SPLIT_AMONG_TIES = {"max": "amax", "min": "amin"}


def _squeezed(result, dim):
    if isinstance(result, tuple):
        return _same_kind(result, [_squeezed(r, dim) for r in result])
    return result.squeeze(dim)


def _reduction(name, whole_default=True):
    """sum/mean/amax/softmax...: ``dim`` (positional or keyword) shifted past the batch; no dim
    reduces every sample dim (``whole_default``; else the op needs a dim: the loop)."""
    def rule(self, *args, **kwargs):
        if args and (isinstance(args[0], _core.TensorBase) or type(args[0]) is BatchedTensor):
            return _binary(name)(self, *args, **kwargs)       # max(a, b), min(a, b)
        args = list(args)
        rank = self.dim()
        key = next((k for k in ("dim", "axis") if k in kwargs), None)
        if key is not None:
            dim = kwargs.pop(key)
        elif args and isinstance(args[0], (int, tuple, list)) and not isinstance(args[0], bool):
            dim = args.pop(0)
        else:
            dim = None
        value = self.value
        ties_split = dim is None and name in _WHOLE_BY_INDEX and _differentiated_inside(
            self.level)
        if dim is None and (not whole_default or ties_split and name not in _SPLIT_AMONG_TIES):
            return _loop(lambda sample, *a, **k: getattr(sample, name)(*a, **k),
                         name, (self,) + tuple(args), kwargs)
        if rank == 0:
            # a 0-d sample: the op over a size-1 dim (PyTorch accepts dim 0 or -1 here)
            for d in (dim if isinstance(dim, (tuple, list)) else () if dim is None else (dim,)):
                _dim_at(d, 1)     # IndexError unless 0 or -1
            kwargs.pop("keepdim", None)
            if args and isinstance(args[0], bool):
                args.pop(0)
            out = getattr(value.unsqueeze(1), name)(1, *args, **kwargs)
            if dim is None and name in _WHOLE_BY_INDEX:
                out = out.values
            return _wrap(_squeezed(out, 1) if name in _KEEPS_SHAPE else out, self.level)
        if dim is None:
            if name in _TUPLE_DIMS:
                out = getattr(value, name)(tuple(range(1, rank + 1)), *args, **kwargs)
            else:
                whole = _SPLIT_AMONG_TIES[name] if ties_split else name
                out = getattr(value.flatten(1), whole)(1, *args, **kwargs)
                if whole in _WHOLE_BY_INDEX:
                    out = out.values
            return _wrap(out, self.level)
        return _wrap(getattr(value, name)(_dims_at(dim, rank), *args, **kwargs), self.level)
    return rule


def _view(name):
    def rule(self, *shape, **kwargs):
        if "size" in kwargs or "shape" in kwargs:
            shape = (kwargs.pop("size", None) or kwargs.pop("shape"),)
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if name == "view" and len(shape) == 1 and not isinstance(shape[0], int):
            return BatchedTensor(self.value.view(shape[0]), self.level)   # a dtype view
        batch = self.value.shape[0]
        return BatchedTensor(getattr(self.value, name)((batch,) + tuple(shape)), self.level)
    return rule


def _transpose(self, dim0, dim1):
    rank = self.dim()
    if rank == 0:
        return self
    return BatchedTensor(self.value.transpose(_dim_at(dim0, rank), _dim_at(dim1, rank)),
                         self.level)


def _permute(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    rank = self.dim()
    if len(dims) != rank:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {rank} is not equal to len(dims) = {len(dims)}")
    return BatchedTensor(self.value.permute((0,) + tuple(_dim_at(d, rank) for d in dims)),
                         self.level)


def _movedim(self, source, destination):
    rank = self.dim()
    return BatchedTensor(self.value.movedim(_dims_at(source, rank), _dims_at(destination, rank)),
                         self.level)


def _t(self):
    if self.dim() < 2:
        return self
    return _transpose(self, 0, 1)


def _unsqueeze(self, dim):
    return BatchedTensor(self.value.unsqueeze(_dim_at(dim, self.dim() + 1)), self.level)


def _squeeze(self, dim=None):
    """PyTorch's batching rules: squeeze() views the batch to the squeezed shape (its grad_fn
    is ViewBackward0); squeeze(dim) squeezes the physical dims as a tuple (SqueezeBackward2)."""
    rank = self.dim()
    if dim is None:
        kept = tuple(s for s in self.shape if s != 1)
        return BatchedTensor(self.value.view(self.value.shape[:1] + kept), self.level)
    if rank == 0:
        return self
    dims = _dims_at(dim, rank)
    return BatchedTensor(self.value.squeeze(dims if isinstance(dims, tuple) else (dims,)),
                         self.level)


def _flatten(self, start_dim=0, end_dim=-1):
    rank = self.dim()
    if rank == 0:
        return BatchedTensor(self.value.reshape(-1, 1), self.level)
    return BatchedTensor(self.value.flatten(_dim_at(start_dim, rank), _dim_at(end_dim, rank)),
                         self.level)


def _select(self, dim, index):
    return BatchedTensor(self.value.select(_dim_at(dim, self.dim()), index), self.level)


def _narrow(self, dim, start, length):
    return BatchedTensor(self.value.narrow(_dim_at(dim, self.dim()), start, length), self.level)


def _diagonal(self, offset=0, dim1=0, dim2=1):
    rank = self.dim()
    return BatchedTensor(self.value.diagonal(offset, _dim_at(dim1, rank), _dim_at(dim2, rank)),
                         self.level)


def _trace(self):
    """PyTorch's batching rule: the sum of the sample's diagonal (so its grad_fn is a sum's)."""
    if self.dim() != 2:
        return _loop(lambda x: x.trace(), "trace", (self,), {})   # trace's own error
    return _diagonal(self, 0, -2, -1).sum(-1)


def _unbind(self, dim=0):
    return tuple(_select(self, dim, i) for i in range(self.shape[dim]))


def _split(name):
    def rule(self, size_or_sections, dim=0):
        parts = getattr(self.value, name)(size_or_sections, _dim_at(dim, self.dim()))
        return tuple(BatchedTensor(p, self.level) for p in parts)
    return rule


def _expand(self, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    v = _pad_batched(self.value, len(sizes))
    return BatchedTensor(v.expand((v.shape[0],) + tuple(sizes)), self.level)


def _expand_as(self, other):
    return _expand(self, *other.shape)


def _view_as(self, other):
    return _view("view")(self, *other.shape)


def _reshape_as(self, other):
    return _view("reshape")(self, *other.shape)


def _to(self, *args, **kwargs):
    if any(_is_batched(a) or isinstance(a, _core.TensorBase) for a in args):
        other = args[0]
        return BatchedTensor(self.value.to(other.dtype), self.level)
    return BatchedTensor(self.value.to(*args, **kwargs), self.level)


def _new(name):
    """new_zeros/new_ones/new_full/new_empty/new_tensor: an unbatched tensor of the dtype."""
    def rule(self, *args, **kwargs):
        return getattr(self.value, name)(*args, **kwargs)
    return rule


def _type_as(self, other):
    return BatchedTensor(self.value.to(other.dtype), self.level)


def _is_basic_index(item) -> bool:
    return item is None or item is Ellipsis or isinstance(item, (int, slice))


def _key_items(index):
    """A key as its items (a list holding slices, None or tensors is a tuple of items, as in
    PyTorch's indexing; one of ints is one index tensor)."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and any(it is None or it is Ellipsis or
                                       isinstance(it, (slice, _core.TensorBase, BatchedTensor))
                                       for it in index):
        return tuple(index)
    return (index,)


def _batched_key(x, items, level):
    """The batching rule of x[items] at ``level`` (x and/or index tensors batched there): one
    advanced-indexing call on the values.  Returns (physical key, the indexed value, dims): the
    physical result's dims in the order ``dims`` (a permutation, None for the identity) are the
    batch dim then the sample's result dims, as PyTorch's per-sample indexing lays them out.

    Per sample, ints select, slices and None are basic, index tensors (and an unbatched bool
    mask, as its nonzero() columns) are advanced: their broadcast shape replaces them where they
    stand when they are adjacent (ints do not separate them), else it comes first.  On the
    values, a batched x gets an arange over the batch as one more advanced index at dim 0; an
    index tensor batched at ``level`` has its batch dim first, padded to the broadcast rank."""
    from . import arange, broadcast_shapes, tensor as _tensor
    x_batched = _is_batched(x) and x.level == level
    size = _batch_size(level)
    flat = []           # the sample's key, masks spread to their columns, lists as tensors
    for it in items:
        if _is_basic_index(it) and not isinstance(it, bool):
            flat.append(it)
            continue
        if isinstance(it, (list, tuple)):
            it = _tensor(it)
        if not (isinstance(it, _core.TensorBase) or _is_batched(it)):
            return None
        if it.dtype is _bool_dtype() or str(it.dtype) == "torch.uint8":
            if _is_batched(it):
                raise DataDependentError("vmap: We do not support batching operators that can "
                                         "support dynamic shape. Attempting to batch over "
                                         "indexing with a boolean mask.")
            if it.dim() == 0:
                return None
            flat.extend(it.nonzero().unbind(1))
            continue
        flat.append(it)
    rank = x.dim()
    consumed = sum(1 for it in flat if it is not None and it is not Ellipsis)
    if sum(1 for it in flat if it is Ellipsis) > 1 or consumed > rank:
        return None                 # (the per-sample call raises PyTorch's error)
    slots = []          # per sample result slot: "d" a dim, "a" an advanced index
    for it in flat:
        if it is Ellipsis:
            slots.extend("d" * (rank - consumed))
        elif it is None or isinstance(it, slice):
            slots.append("d")
        elif not isinstance(it, int):
            slots.append("a")
    advanced = [it for it in flat if not (_is_basic_index(it))]
    shape = tuple(broadcast_shapes(*[tuple(it.shape) for it in advanced]))
    r = len(shape)
    key = []
    for it in flat:
        if _is_batched(it) and it.level == level:
            it = _pad_batched(it.value, r)
        key.append(it)
    first = slots.index("a")
    adjacent = "".join(slots).strip("d").count("d") == 0
    k = slots[:first].count("d") if adjacent else 0
    if x_batched:
        key.insert(0, arange(size).view((size,) + (1,) * r))
        # the values' result: (batch, *shape, other dims); the sample's shape goes after k
        # other dims
        def order(n):
            return [0] + list(range(r + 1, r + 1 + k)) + list(range(1, r + 1)) + \
                list(range(r + 1 + k, n))
        return tuple(key), x.value, (order if k else None)

    # unbatched x: (k other dims, batch, *shape, other dims): the batch dim goes first
    def order(n):
        return [k] + list(range(k)) + list(range(k + 1, n))
    return tuple(key), x, (order if k else None)


def _inverse(dims):
    out = [0] * len(dims)
    for i, d in enumerate(dims):
        out[d] = i
    return out


def _getitem(self, index):
    items = _key_items(index)
    level = _top_level(items + (self,))
    if _is_batched(self) and level == self.level and all(_is_basic_index(it) for it in items):
        return BatchedTensor(self.value[(slice(None),) + items], self.level)
    rule = _batched_key(self, items, level)
    if rule is None:        # (python bools, malformed keys: PyTorch's own errors per sample)
        return _loop(_core.TensorBase.__getitem__, "__getitem__", (self, index), {})
    key, value, order = rule
    out = value[key]
    return BatchedTensor(out if order is None else out.permute(order(out.dim())), level)


def _index_plain(x, index):
    """x[index], x a plain tensor and an index item batched (the core asks the item's type)."""
    return _getitem(x, index)


def _bool_dtype():
    from . import bool as _bool
    return _bool


def _setitem(self, index, value):
    items = _key_items(index)
    level = _top_level(items + (self, value))
    if not (_is_batched(self) and self.level == level):
        raise _unbatched_setitem_error(items)
    if all(_is_basic_index(it) for it in items):
        where = (slice(None),) + items
        if _is_batched(value) and value.level == level:
            value = _pad_batched(value.value, self.value[where].dim() - 1)
        self.value[where] = value
        return
    rule = _batched_key(self, items, level)
    if rule is None:
        for i in range(self.value.shape[0]):
            sample = self.value.select(0, i)
            sample[index] = value.value.select(0, i) if _is_batched(value) and \
                value.level == level else value
        return
    key, target, order = rule
    from . import no_grad
    with no_grad():     # (only its shape: the sample's result shape, batch first)
        shape = tuple(target.detach()[key].shape)
    dims = None if order is None else order(len(shape))
    if dims is not None:
        shape = tuple(shape[d] for d in dims)
    if _is_batched(value) and value.level == level:
        v = _pad_batched(value.value, len(shape) - 1).expand(shape)
    elif isinstance(value, _core.TensorBase) or _is_batched(value):
        v = value.expand(shape[1:]).unsqueeze(0).expand(shape)
    else:
        target[key] = value
        return
    target[key] = v if dims is None else v.permute(_inverse(dims))


def _unbatched_setitem_error(items):
    """PyTorch's refusal of x[key] = v with x not batched where the key or v is: a basic key
    writes by copy_ (its 'inplace arithmetic' wording), an advanced one by index_put_."""
    basic = all(_is_basic_index(it) for it in items)
    return unbatched_write_error() if basic else unbatched_write_error("index_put_")


def _setitem_plain(x, index, value):
    raise _unbatched_setitem_error(_key_items(index))


def _matmul(a, b):
    level = _top_level((a, b))
    if level is None:
        # neither operand batched (the linear rule's x @ W.T when only the bias is): the plain
        # product; wrapping it as a sample of no level would hide its real shape
        return a @ b
    ra, rb = _ndim(a), _ndim(b)
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{ra}D and {rb}D")
    a_batched = _is_batched(a) and a.level == level
    b_batched = _is_batched(b) and b.level == level
    va, vb = _at(a, level), _at(b, level)
    if a_batched and not b_batched and rb <= 2:
        # (B, ..., k) @ (k[, m]): what the un-mapped op runs on the whole batch
        return BatchedTensor(va @ vb, level)
    a_vec, b_vec = ra == 1, rb == 1
    if a_vec:
        va = va.unsqueeze(-2)
    if b_vec:
        vb = vb.unsqueeze(-1)
    rank = max(ra, rb, 2)
    if a_batched:
        va = _pad_batched(va, rank)
    if b_batched:
        vb = _pad_batched(vb, rank)
    out = va @ vb
    if a_vec:
        out = out.squeeze(-2)
    if b_vec:
        out = out.squeeze(-1)
    return BatchedTensor(out, level)


def _rmatmul(self, other):
    return _matmul(other, self)


_UNARY = """abs absolute acos arccos acosh asin arcsin asinh atan arctan atanh ceil clamp clip
clone contiguous cos cosh deg2rad detach digamma double erf erfc erfinv exp exp2 expm1 fix float
floor frac half int lgamma log log10 log1p log2 logit long neg negative bool nan_to_num
rad2deg reciprocal relu round rsqrt sigmoid sign sgn sin sinc sinh sqrt square tan tanh trunc
positive cpu conj conj_physical resolve_conj resolve_neg angle __neg__ __pos__ __abs__ __invert__ abs_ clamp_ exp_ neg_ relu_
sigmoid_ tanh_ sqrt_ log_ zero_ fill_ clamp_min clamp_max masked_fill
pin_memory bfloat16 short byte char cfloat cdouble detach_ uniform_ normal_ tril triu
""".split()

_BINARY = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow
atan2 arctan2 maximum minimum fmax fmin eq ne lt le gt ge hypot logaddexp xlogy copysign
__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ __eq__ __ne__ __lt__ __le__
__gt__ __ge__ __and__ __or__ __xor__ logical_and logical_or logical_xor bitwise_and bitwise_or
add_ sub_ mul_ div_ copy_""".split()

_REFLECTED = {"__radd__": "__add__", "__rsub__": "__sub__", "__rmul__": "__mul__",
              "__rtruediv__": "__truediv__", "__rfloordiv__": "__floordiv__",
              "__rpow__": "__pow__", "__rmod__": "__mod__", "__rand__": "__and__",
              "__ror__": "__or__", "__rxor__": "__xor__"}

_REDUCTIONS = """sum mean prod amax amin std var logsumexp nansum nanmean all any
count_nonzero""".split()
_DIM_ONLY = """max min argmax argmin softmax log_softmax cumsum cumprod median nanmedian mode
logcumsumexp cummax cummin""".split()

for _name in _UNARY:
    setattr(BatchedTensor, _name, _unary(_name))
for _name in _BINARY:
    setattr(BatchedTensor, _name, _binary(_name))
for _name, _base in _REFLECTED.items():
    setattr(BatchedTensor, _name, _binary(_base, reflected=True))
for _name in _REDUCTIONS:
    setattr(BatchedTensor, _name, _reduction(_name))
for _name in _DIM_ONLY:
    setattr(BatchedTensor, _name, _reduction(_name, whole_default=_name in (
        "argmax", "argmin", *_WHOLE_BY_INDEX)))
for _name in ("reshape", "view"):
    setattr(BatchedTensor, _name, _view(_name))
for _name in ("split", "chunk", "tensor_split"):
    setattr(BatchedTensor, _name, _split(_name))
BatchedTensor.transpose = BatchedTensor.swapaxes = BatchedTensor.swapdims = _transpose
BatchedTensor.permute = _permute
BatchedTensor.movedim = BatchedTensor.moveaxis = _movedim
BatchedTensor.t = _t
BatchedTensor.T = property(lambda self: self.permute(*reversed(range(self.dim()))))
BatchedTensor.mT = property(lambda self: self.transpose(-2, -1))
# real / imag are elementwise views of the batch's value; mH / H conjugate-transpose the sample
BatchedTensor.real = property(lambda self: BatchedTensor(self.value.real, self.level))
BatchedTensor.imag = property(lambda self: BatchedTensor(self.value.imag, self.level))
BatchedTensor.mH = property(lambda self: self.conj().transpose(-2, -1))
BatchedTensor.H = property(lambda self: self.conj().T if self.dim() == 2 else
                           _loop(lambda x: x.H, "H", (self,), {}))
BatchedTensor.unsqueeze = _unsqueeze
BatchedTensor.squeeze = _squeeze
BatchedTensor.flatten = _flatten
BatchedTensor.select = _select
BatchedTensor.narrow = _narrow
BatchedTensor.unbind = _unbind
BatchedTensor.diagonal = _diagonal
BatchedTensor.trace = _trace
BatchedTensor.expand = _expand
BatchedTensor.expand_as = _expand_as
BatchedTensor.view_as = _view_as
BatchedTensor.reshape_as = _reshape_as
BatchedTensor.to = _to
for _name in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
    setattr(BatchedTensor, _name, _new(_name))
BatchedTensor.type_as = _type_as
BatchedTensor.__getitem__ = _getitem
BatchedTensor.__setitem__ = _setitem
# x[batched] and x[...] = batched on a plain tensor x: the core asks the index item's type
BatchedTensor._index_plain = staticmethod(_index_plain)
BatchedTensor._setitem_plain = staticmethod(_setitem_plain)
BatchedTensor.matmul = BatchedTensor.__matmul__ = _matmul
BatchedTensor.__rmatmul__ = _rmatmul


def _fixed_ranks(name, rank_a, rank_b):
    """dot/mv/mm/bmm: matmul of samples of exactly these ranks (PyTorch's batching rules'
    refusal otherwise; matmul of other ranks would compute another product silently)."""
    def rule(a, b):
        if (_ndim(a), _ndim(b)) != (rank_a, rank_b):
            if name == "dot":
                raise RuntimeError("Got wrong shapes for dot")
            raise RuntimeError(f"Shape mismatch: Got incorrect dims for {name}(a, b). a has dim "
                               f"{_ndim(a)}and b has dim {_ndim(b)}but expected them to have dim "
                               f"{rank_a} and dim {rank_b}")
        return _matmul(a, b)
    return rule


for _name, _ranks in (("dot", (1, 1)), ("mv", (2, 1)), ("mm", (2, 2)), ("bmm", (3, 3))):
    setattr(BatchedTensor, _name, _fixed_ranks(_name, *_ranks))
BatchedTensor.__hash__ = object.__hash__
# `t += batched` on a plain tensor t: the core asks this instead of rebinding t to t + batched
def _inplace_into_plain_error(self, other, is_add):
    """The refusal of ``self (op)= other`` for a plain self (ops_inplace.pxi asks for it): in
    PyTorch's words, add_'s (a shape mismatch) or binary arithmetic's."""
    from ._vmap_plain_writes import refusal
    return refusal("add_" if is_add else "mul_", self, (other,))


BatchedTensor._inplace_into_plain_error = staticmethod(_inplace_into_plain_error)


# -- module-level functions -----------------------------------------------------------------------

def _as_method(name):
    """``fn(x, *args)`` as ``x.name(*args)`` when x is batched (tapegrad.sum, F.softmax...)."""
    def rule(dispatch, args, kwargs):
        x = args[0] if args else kwargs.pop("input")
        if not _is_batched(x):
            return None
        return getattr(x, name)(*args[1:], **kwargs)
    return rule


def _binary_function(name):
    def rule(dispatch, args, kwargs):
        if len(args) < 2:
            return None
        level, va, vb = _align(args[0], args[1])
        return BatchedTensor(dispatch(va, vb, *args[2:], **kwargs), level)
    return rule


def _stack_rule(dispatch, args, kwargs):
    tensors = list(args[0] if args else kwargs.pop("tensors"))
    dim = args[1] if len(args) > 1 else kwargs.pop("dim", 0)
    level = _top_level(tensors)
    rank = _ndim(tensors[0])
    d = dim % (rank + 1) + 1
    return BatchedTensor(dispatch([_expanded(t, level) for t in tensors], d, **kwargs), level)


def _cat_rule(dispatch, args, kwargs):
    tensors = [t for t in (args[0] if args else kwargs.pop("tensors"))]
    dim = args[1] if len(args) > 1 else kwargs.pop("dim", 0)
    level = _top_level(tensors)
    rank = max(_ndim(t) for t in tensors)
    d = dim % rank + 1
    parts = [_expanded(t, level) for t in tensors if not (_ndim(t) == 1 and t.shape[0] == 0)]
    return BatchedTensor(dispatch(parts, d, **kwargs), level)


def _linear_rule(dispatch, args, kwargs):
    x = args[0] if args else kwargs.pop("input")
    weight = args[1] if len(args) > 1 else kwargs.pop("weight")
    bias = args[2] if len(args) > 2 else kwargs.pop("bias", None)
    if x.dim() == 0 or weight.dim() not in (1, 2):
        return None
    level = _top_level((x, weight, bias))
    if _is_batched(x) and x.level == level and not any(
            _is_batched(t) and t.level == level for t in (weight, bias)):
        # the un-mapped op on the whole batch
        return BatchedTensor(dispatch(x.value, weight, bias), level)
    # per-sample weights (vmap over models, or grad with respect to them): matmul with the
    # weight's transpose, plus the bias
    out = _matmul(x, weight.transpose(-1, -2) if weight.dim() == 2 else weight)
    return out if bias is None else out + bias


def _where_rule(dispatch, args, kwargs):
    if len(args) != 3 or kwargs:
        return None
    level = _top_level(args)
    rank = max(_ndim(a) for a in args)
    values = [_pad_batched(a.value, rank) if _is_batched(a) and a.level == level else a
              for a in args]
    return BatchedTensor(dispatch(*values), level)


def _like_rule(dispatch, args, kwargs):
    x = args[0] if args else kwargs.pop("input")
    if not _is_batched(x) or any(_is_batched(a) for a in args[1:]):
        return None
    return BatchedTensor(dispatch(x.value, *args[1:], **kwargs), x.level)


def _class_index_loss_rule(dispatch, args, kwargs):
    """cross_entropy / nll_loss with class-index targets, sample logits (C,) or (N, C), no class
    weights or label smoothing: one call on the batch with reduction='none', then reduced per
    sample as PyTorch's batching rule does (its nodes: the ignored targets masked by a where,
    the mean a sum divided by the count of targets not ignored)."""
    logits = args[0] if args else kwargs.pop("input")
    target = args[1] if len(args) > 1 else kwargs.pop("target")
    reduction = kwargs.pop("reduction", "mean")
    ignore_index = kwargs.pop("ignore_index", -100)
    for key, neutral in (("weight", None), ("size_average", None), ("reduce", None),
                         ("label_smoothing", 0.0)):
        if kwargs.get(key, neutral) == neutral:
            kwargs.pop(key, None)
    if len(args) > 2 or kwargs or reduction not in ("mean", "sum", "none") or \
            not isinstance(ignore_index, int) or not _is_tensor_like(target) or \
            target.dtype.is_floating_point or logits.dim() not in (1, 2) or \
            target.dim() != logits.dim() - 1:
        return None
    level = _top_level((logits, target))
    lv, tv = _expanded(logits, level), _expanded(target, level)
    size, n = lv.shape[0], (lv.shape[1] if logits.dim() == 2 else 1)
    per = dispatch(lv.reshape(size * n, lv.shape[-1]), tv.reshape(size * n),
                   reduction="none", ignore_index=ignore_index).reshape(size, n)
    kept = tv.reshape(size, n) != ignore_index
    if reduction == "none":
        per = per if logits.dim() == 2 else per.reshape(size)
        kept = kept if logits.dim() == 2 else kept.reshape(size)
        return BatchedTensor(function("where")(kept, per, 0.0), level)
    total = per.sum(1)
    if reduction == "sum":
        return BatchedTensor(total, level)
    return BatchedTensor(total / kept.sum(1), level)


def _is_tensor_like(x) -> bool:
    return isinstance(x, _core.TensorBase) or type(x) is BatchedTensor


def _attention_rule(dispatch, args, kwargs):
    """scaled_dot_product_attention: its leading dims are batch dims already, so the batch
    becomes one more of them (each operand padded to the others' rank, so that their sample
    dims stay aligned; a batched mask likewise, an unbatched one broadcasts from the right)."""
    args = list(args)
    operands = []
    for i, key in enumerate(("query", "key", "value")):
        operands.append(args[i] if len(args) > i else kwargs.pop(key, None))
    mask = args[3] if len(args) > 3 else kwargs.pop("attn_mask", None)
    if any(not _is_tensor_like(t) or t.dim() < 2 for t in operands):
        return None
    level = _top_level(operands + [mask])
    rank = max(t.dim() for t in operands)
    values = [_pad_batched(_expanded(t, level), rank) for t in operands]
    if type(mask) is BatchedTensor and mask.level == level:
        mask = _pad_batched(mask.value, rank)
    return BatchedTensor(dispatch(*values, mask, *args[4:], **kwargs), level)


def _pointwise_loss(name):
    def rule(dispatch, args, kwargs):
        a = args[0] if args else kwargs.pop("input")
        b = args[1] if len(args) > 1 else kwargs.pop("target")
        reduction = kwargs.pop("reduction", "mean")
        if len(args) > 2 or kwargs:
            return None
        level = _top_level((a, b))
        rank = max(_ndim(a), _ndim(b))
        va = _pad_batched(_expanded(a, level), rank)
        vb = _pad_batched(_expanded(b, level), rank)
        per = dispatch(va, vb, reduction="none")
        if reduction == "none":
            return BatchedTensor(per, level)
        dims = tuple(range(1, per.dim()))
        if not dims:
            return BatchedTensor(per, level)
        return BatchedTensor(per.sum(dims) if reduction == "sum" else per.mean(dims), level)
    return rule


def _is_tensor_rule(dispatch, args, kwargs):
    return True


def _running_stats_rule(stats_update_flag, position):
    """batch_norm / instance_norm: when the statistics are updated (training, use_input_stats)
    the running mean and var must be batched as the input is, or every sample would update
    the one shared pair in turn; PyTorch refuses that.  Otherwise the op runs per sample."""
    def rule(dispatch, args, kwargs):
        x = args[0] if args else kwargs.get("input")
        if not _is_batched(x) or (stats_update_flag == "use_input_stats"
                                  and math.prod(x.shape[2:]) <= 1):
            return None        # (instance_norm refuses a sample without spatial elements first)
        stats = [args[i] if len(args) > i else kwargs.get(key)
                 for i, key in ((1, "running_mean"), (2, "running_var"))]
        updates = args[position] if len(args) > position else kwargs.get(
            stats_update_flag, stats_update_flag == "use_input_stats")
        if (updates and stats_update_flag == "training"
                and math.prod(x.shape[:1] + x.shape[2:]) == 1):
            return None        # (batch_norm refuses a sample of one value per channel first)
        if updates and any(v is not None and not (type(v) is BatchedTensor
                                                  and v.level == x.level) for v in stats):
            raise RuntimeError(
                "Batch norm got a batched tensor as input while the running_mean or "
                "running_var, which will be updated in place, were not batched.\nIf you are "
                "using a module and do not need eval mode, please set `track_running_stats` to "
                "be False.If you are using a prebuilt module and do not need eval mode, please "
                "see the functorch website for resources on how to patch your module to work "
                "with vmap")
        return None
    return rule


# nn.functional activations that act elementwise (any extra arguments are scalars)
_ELEMENTWISE_F = set("""relu relu6 elu selu celu gelu silu mish leaky_relu hardtanh hardswish
hardsigmoid logsigmoid softplus softsign tanhshrink softshrink hardshrink threshold sigmoid
tanh""".split())

def _only_first_batched(args, kwargs) -> bool:
    return bool(args) and _is_batched(args[0]) and not any(
        _is_batched(a) for a in _leaves(args[1:], kwargs))


def _trailing_matrix_rule(dispatch, args, kwargs):
    """det/inv/slogdet/cholesky/eigh...: linalg ops act on a tensor's last two dims and take
    any leading dims as a batch, so a batched matrix sample is one call on the whole batch
    (PyTorch's batching rule; its grad_fn is the op's own, not a stack's)."""
    if not _only_first_batched(args, kwargs) or "dim" in kwargs or _ndim(args[0]) < 2:
        return None     # the loop: other batched operands, explicit dims, or the op's error
    return _wrap(dispatch(args[0].value, *args[1:], **kwargs), args[0].level)


def _bound(args, kwargs, names) -> dict:
    """The call's arguments by name: the positional ones under `names`, then the keywords."""
    bound = dict(zip(names, args))
    bound.update(kwargs)
    return bound


def _vector_norm_dims(x, dim):
    rank = x.dim()
    if dim is None:
        return tuple(range(1, rank + 1)) if rank else None
    return _dims_at(dim, rank)


def _vector_norm(x, ord, dim, keepdim, dtype):
    from . import linalg
    if x.dim() == 0:
        if dim not in (None, 0, -1, (0,), (-1,)):
            return None     # the loop: the op's IndexError
        # a 0-d sample's norm is over nothing but itself: over a size-1 dim of the value
        return BatchedTensor(linalg.vector_norm(x.value.unsqueeze(1), ord, 1, False,
                                                dtype=dtype), x.level)
    return BatchedTensor(linalg.vector_norm(x.value, ord, _vector_norm_dims(x, dim), keepdim,
                                            dtype=dtype), x.level)


def _vector_norm_rule(dispatch, args, kwargs):
    if not _only_first_batched(args, kwargs):
        return None
    bound = _bound(args, kwargs, ("input", "ord", "dim", "keepdim"))
    return _vector_norm(args[0], bound.get("ord", 2), bound.get("dim"),
                        bound.get("keepdim", False), bound.get("dtype"))


def _norm_rule(dispatch, args, kwargs):
    """torch.norm(x, p='fro') and linalg.norm(x, ord=None) share the name: both are a vector
    2-norm without an order, and a vector norm of a given order over one dim or a 1-d sample;
    matrix norms (an order over two dims) run per sample."""
    if not _only_first_batched(args, kwargs):
        return None
    bound = _bound(args, kwargs, ("input", "ord", "dim", "keepdim"))
    order = bound.get("ord", bound.get("p"))
    dim = bound.get("dim")
    if order not in (None, "fro") and not (isinstance(order, (int, float)) and
                                           (isinstance(dim, int) or (dim is None and _ndim(args[0]) <= 1))):
        return None
    if order == "fro" and dim is not None and not isinstance(dim, int) and len(dim) != 2:
        return None
    return _vector_norm(args[0], 2 if order in (None, "fro") else order, dim,
                        bound.get("keepdim", False), bound.get("dtype"))


def _outer_rule(dispatch, args, kwargs):
    """outer(a, b) of 1-d samples: a[:, None] * b[None, :], PyTorch's batching rule."""
    if len(args) != 2 or kwargs or _ndim(args[0]) != 1 or _ndim(args[1]) != 1:
        return None
    a, b = args
    return a.unsqueeze(-1) * b.unsqueeze(-2)


def _normalize_rule(dispatch, args, kwargs):
    """F.normalize(x, p, dim, eps) of one batched sample: x over its clamped p-norm (the op's
    own formula, so the grad_fn is a division's as in PyTorch)."""
    if not _only_first_batched(args, kwargs) or kwargs.get("out") is not None:
        return None
    bound = _bound(args, kwargs, ("input", "p", "dim", "eps"))
    x = args[0]
    if x.dim() == 0:
        return None
    norm = _vector_norm(x, bound.get("p", 2.0), bound.get("dim", 1), True, None)
    return x / norm.clamp_min(bound.get("eps", 1e-12)).expand_as(x)


# each op, and whether it is a Tensor method too (as in PyTorch)
_TRAILING_MATRIX_OPS = {"det": True, "inv": False, "inverse": True, "slogdet": True,
                        "logdet": True, "cholesky": True, "eigh": False, "eigvalsh": False,
                        "matrix_exp": True, "svdvals": False}

_FUNCTION_RULES = {
    "stack": _stack_rule, "cat": _cat_rule, "concat": _cat_rule, "concatenate": _cat_rule,
    "linear": _linear_rule, "matmul": lambda o, a, k: _matmul(a[0], a[1]),
    "mm": lambda o, a, k: BatchedTensor.mm(a[0], a[1]),
    "dot": lambda o, a, k: BatchedTensor.dot(a[0], a[1]),
    "mv": lambda o, a, k: BatchedTensor.mv(a[0], a[1]),
    "bmm": lambda o, a, k: BatchedTensor.bmm(a[0], a[1]),
    "scaled_dot_product_attention": _attention_rule,
    "cross_entropy": _class_index_loss_rule, "nll_loss": _class_index_loss_rule, "mse_loss": _pointwise_loss("mse_loss"),
    "l1_loss": _pointwise_loss("l1_loss"),
    "is_tensor": _is_tensor_rule, "where": _where_rule,
    # F.batch_norm(input, running_mean, running_var, weight, bias, training, ...) and
    # F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, ...)
    "batch_norm": _running_stats_rule("training", 5),
    "instance_norm": _running_stats_rule("use_input_stats", 5),
}
for _name in _TRAILING_MATRIX_OPS:
    _FUNCTION_RULES[_name] = _trailing_matrix_rule
_FUNCTION_RULES.update(vector_norm=_vector_norm_rule, norm=_norm_rule, outer=_outer_rule,
                       ger=_outer_rule, normalize=_normalize_rule)
for _name in ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"):
    _FUNCTION_RULES[_name] = _like_rule
def _elementwise_function(dispatch, args, kwargs):
    """An elementwise function (tapegrad.sin, F.relu(x, inplace=...), F.dropout...) of one
    batched tensor: the same function on its value."""
    x = args[0] if args else kwargs.pop("input", None)
    if not _is_batched(x) or any(_is_batched(a) or isinstance(a, _core.TensorBase)
                                 for a in _leaves(args[1:], kwargs)):
        return None
    return BatchedTensor(dispatch(x.value, *args[1:], **kwargs), x.level)


for _name in set(_REDUCTIONS + _DIM_ONLY):
    _FUNCTION_RULES[_name] = _as_method(_name)
for _name in ("transpose", "permute", "movedim", "moveaxis", "swapaxes", "unsqueeze",
              "squeeze", "flatten", "select", "narrow", "unbind", "reshape", "t", "split", "diagonal", "trace",
              "chunk", "tensor_split"):
    _FUNCTION_RULES[_name] = _as_method(_name)
for _name in set(_UNARY) | _ELEMENTWISE_F | {"dropout", "alpha_dropout", "feature_alpha_dropout"}:
    if not _name.startswith("__") and _name not in ("to", "masked_fill", "clamp", "clip",
                                                     "tril", "triu", "nan_to_num"):
        _FUNCTION_RULES[_name] = _elementwise_function
for _name in _BINARY:
    if not _name.startswith("__") and not _name.endswith("_"):
        _FUNCTION_RULES[_name] = _binary_function(_name)


def _dispatching(name, original):
    rule = _FUNCTION_RULES.get(name)

    @functools.wraps(original)
    def dispatch(*args, **kwargs):
        level = _top_level(_leaves(args, kwargs))
        if level is None:
            return original(*args, **kwargs)
        if kwargs.get("out") is not None:
            # PyTorch's vmap has no batching rule for any op's out= variant, and its fallback
            # refuses them (one out tensor cannot take the batch's results)
            raise RuntimeError(f"Batching rule not implemented for aten::{name}.out; the "
                               f"fallback path doesn't work on out= or view ops.")
        if _writes_unbatched(name, args, kwargs, level):
            raise unbatched_write_error()
        if rule is not None:
            # (the rule calls ``dispatch`` on the values: under nested vmaps they are batched
            # at the outer levels)
            out = rule(dispatch, args, dict(kwargs))
            if out is not None:
                return out
        return _loop(dispatch, name, args, kwargs)
    dispatch.__wrapped_for_vmap__ = original
    return dispatch


_SKIP = {"vmap", "compile", "is_grad_enabled", "set_grad_enabled", "manual_seed", "seed",
         "initial_seed", "get_rng_state", "set_rng_state", "save", "load", "no_grad",
         "enable_grad", "inference_mode", "set_printoptions", "set_default_dtype",
         "get_default_dtype", "typename", "is_storage", "from_numpy", "use_deterministic_algorithms"}


_namespace_modules: tuple = ()


def _namespaces():
    global _namespace_modules
    if not _namespace_modules:
        import tapegrad
        from tapegrad import linalg, special
        from tapegrad.nn import functional
        _namespace_modules = (tapegrad, functional, linalg, special)
    return _namespace_modules


_wrappers: dict = {}      # (module name, name) -> (original, its wrapper or None), made once


def _wrapper_for(module, name, obj):
    """The dispatching wrapper of a public function of a namespace, None for anything else."""
    import types
    known = _wrappers.get((module.__name__, name))
    if known is not None and known[0] is obj:
        return known[1]
    wrapper = None
    if not (name.startswith("_") or name in _SKIP or isinstance(obj, type)) and (
            isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, _core.WithOut)) or
            type(obj).__name__ == "cython_function_or_method"):   # (WithOut: out=, _out_arg.py)
        wrapper = _dispatching(name, obj)
        _by_original[id(obj)] = wrapper
    _wrappers[(module.__name__, name)] = (obj, wrapper)
    return wrapper


class _DispatchingModule(_TorchNamedModule):
    """The class of the public namespaces while a vmap runs: their functions are looked up as
    dispatching wrappers (one class swap per namespace at entry and exit, instead of rebinding
    hundreds of names)."""

    def __getattribute__(self, name):
        obj = super().__getattribute__(name)
        if name.startswith("_") or not callable(obj):
            return obj
        wrapper = _wrapper_for(self, name, obj)
        return obj if wrapper is None else wrapper


def _patch():
    for module in _namespaces():
        _patched[module] = module.__class__
        module.__class__ = _DispatchingModule
    from . import _vmap_isinstance
    _vmap_isinstance.install()


def _unpatch():
    for module, cls in _patched.items():
        module.__class__ = cls
    _patched.clear()
    from . import _vmap_isinstance
    _vmap_isinstance.uninstall()


def redirect(fn):
    """The dispatching wrapper of a public function (``vmap(tapegrad.dot)``), else fn.  Every
    transform calls its function through this: a public function handed over as an object
    (``jacfwd(tapegrad.sin)``) was taken before the namespaces were patched, and would meet
    BatchedTensors unwrapped.  A Tensor method taken from the class (``vmap(Tensor.acos_)``)
    is called as a method of its first argument, so a BatchedTensor applies its rule (the
    class's own function would refuse it, and the vmap would run as a loop: an in-place
    method would then not return its input itself, as PyTorch's does)."""
    wrapper = _by_original.get(id(fn))
    if wrapper is None:
        # (looked up by the name its namespace exports it under, its __qualname__: linalg.det's
        # __name__ is PyTorch's "linalg_det")
        name = getattr(fn, "__name__", None)
        names = {getattr(fn, "__qualname__", None), name}
        for module, exported in ((m, n) for m in _namespaces() for n in names
                                 if isinstance(n, str)):
            if vars(module).get(exported) is fn:
                wrapper = _wrapper_for(module, exported, fn)
                break
        else:
            if isinstance(name, str) and _tensor_method(name) is fn:
                wrapper = _method_caller(name)
    return wrapper or fn


def _tensor_method(name):
    from .tensor import Tensor
    for cls in Tensor.__mro__:
        if name in vars(cls):
            return vars(cls)[name]
    return None


def _method_caller(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


class _level:
    """A running vmap: its level on the stack, and the dispatching wrappers while any runs."""

    def __init__(self, size):
        self.size = size

    def __enter__(self):
        global _users
        with _lock:
            if _users == 0:
                _patch()
            _users += 1
        running = _running()
        self.id = (running[-1][0] + 1) if running else 1
        from .func import _depth as transforms_outside
        running.append([self.id, self.size, transforms_outside])
        _core._enter_transform(1)
        return self.id

    def __exit__(self, *exc):
        global _users
        _core._enter_transform(-1)
        _running().pop()
        with _lock:
            _users -= 1
            if _users == 0:
                _unpatch()
        return False


def original(fn):
    """The un-wrapped function of a dispatching wrapper (itself otherwise)."""
    return getattr(fn, "__wrapped_for_vmap__", fn)


# -- what the autodiff transforms of tapegrad.func need inside a vmap ------------------------------

_functions: dict = {}


def function(name):
    """tapegrad.<name> as a dispatching function (the original when nothing is batched)."""
    fn = _functions.get(name)
    if fn is None:
        import tapegrad
        fn = _functions[name] = _dispatching(name, original(getattr(tapegrad, name)))
    return fn


def active() -> bool:
    return bool(_running())


def _peel(x):
    """(tensor, [levels, outermost first]) of a BatchedTensor chain: the tensor's leading dims
    are those levels' batch dims, in that order."""
    levels = []
    while type(x) is BatchedTensor:
        levels.append(x.level)
        x = x.value
    return x, levels[::-1]


def at_all_levels(x, leaf):
    """x batched at every running vmap level (expanded where it is not), as a new leaf that
    requires grad (``leaf``) or a view connected to x's graph when x requires grad: a transform
    differentiating with respect to it then gets one gradient per sample, never their sum."""
    tensor, levels = _peel(x)
    for k, (level, size, _) in enumerate(_running()):
        if level not in levels:
            tensor = tensor.unsqueeze(k).expand(tuple(tensor.shape[:k]) + (size,) +
                                                tuple(tensor.shape[k:]))
            levels.insert(k, level)
    if leaf:
        tensor = tensor.view_as(tensor) if tensor.requires_grad else \
            tensor.detach().requires_grad_()
    for level in levels:
        tensor = BatchedTensor(tensor, level)
    return tensor


def grad(grad_fn, outputs, inputs, grad_outputs, **kwargs):
    """``grad_fn`` (autograd.grad) through BatchedTensors, one vmap level at a time from the
    innermost: a graph batched at the level is differentiated once on its values (the samples
    are independent rows of one graph); a graph built outside the level with batched
    cotangents is differentiated once per sample."""
    outputs, inputs = list(outputs), list(inputs)
    grad_outputs = list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    level = _top_level(outputs + inputs + grad_outputs)
    if level is None:
        return list(grad_fn(outputs, inputs, grad_outputs, **kwargs))
    if any(_is_batched(o) and o.level == level for o in outputs):
        if any(not (_is_batched(x) and x.level == level) for x in inputs):
            raise RuntimeError("vmap: differentiating a batched output with respect to an "
                               "unbatched input is not supported (the samples' gradients "
                               "would be summed); differentiate inside the transform")
        values, cotangents = [], []
        for o, g in zip(outputs, grad_outputs):
            if g is None:
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                g = function("ones_like")(o)
            values.append(_expanded(o, level))
            cotangents.append(_expanded(g, level))
        result = grad(grad_fn, values, [x.value for x in inputs], cotangents, **kwargs)
        return [None if r is None else BatchedTensor(r, level) for r in result]
    per_sample = []
    for i in range(_batch_size(level)):
        gos = [g.value.select(0, i) if _is_batched(g) and g.level == level else g
               for g in grad_outputs]
        per_sample.append(grad(grad_fn, outputs, inputs, gos, **kwargs))
    stack = function("stack")
    out = []
    for k in range(len(inputs)):
        column = [r[k] for r in per_sample]
        if all(c is None for c in column):
            out.append(None)
            continue
        zeros_like = function("zeros_like")
        column = [zeros_like(inputs[k]) if c is None else c for c in column]
        out.append(BatchedTensor(stack(column), level))
    return out


class VmapInfo(tuple):
    """What a Function's ``vmap`` staticmethod is told about the running vmap (PyTorch's
    VmapInfo): ``batch_size`` and ``randomness``."""

    __slots__ = ()

    def __new__(cls, batch_size, randomness):
        return tuple.__new__(cls, (batch_size, randomness))

    batch_size = property(lambda self: self[0])
    randomness = property(lambda self: self[1])

    def __repr__(self):
        return f"VmapInfo(batch_size={self[0]}, randomness='{self[1]}')"


def function_apply(cls, args, kwargs):
    """``cls.apply(*args)`` (a custom autograd.Function) when an argument is a BatchedTensor.

    The Function's forward/backward see whole tensors, never BatchedTensors: run on one, its
    forward would compute outside the tape and its gradient would be lost (zeros).  As in
    PyTorch: a ``vmap`` staticmethod gets the values at the innermost level with their in_dims
    and returns (outputs, out_dims); ``generate_vmap_rule = True`` applies the Function once per
    sample (each application recorded, so grad/jacrev under vmap see its backward); otherwise
    PyTorch's RuntimeError."""
    from .autograd.function import Function, _is_overridden, _LIBRARY, _NEEDS_SETUP_CONTEXT
    level = _top_level(_leaves(args, kwargs))
    if cls.__module__.partition(".")[0] == _LIBRARY:
        # one of tapegrad's own ops written as a Function (a convolution): its rule is PyTorch's
        # native batching rule, here one recorded application per sample
        return _loop(cls.apply, "apply", args, kwargs)
    if not _is_overridden(cls, "setup_context", Function.setup_context):
        raise RuntimeError(_NEEDS_SETUP_CONTEXT)
    has_rule = _is_overridden(cls, "vmap", Function.vmap)
    if getattr(cls, "generate_vmap_rule", False):
        if has_rule:
            raise RuntimeError(
                f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True "
                "and an overridden vmap staticmethod. Please set generate_vmap_rule=False or "
                "delete the overridden vmap staticmethod to avoid ambiguity. For more details, "
                "please see https://pytorch.org/docs/main/notes/extending.func.html")
        return _loop(cls.apply, "apply", args, kwargs)
    if not has_rule:
        raise RuntimeError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
            "override and implement the vmap staticmethod or set generate_vmap_rule=True. For "
            "more details, please see https://pytorch.org/docs/main/notes/extending.func.html")
    in_dims = tuple(0 if type(a) is BatchedTensor and a.level == level else None for a in args)
    info = VmapInfo(_batch_size(level), "error")
    outputs, out_dims = cls.vmap(info, in_dims, *[_at(a, level) for a in args], **kwargs)
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dims = (out_dims,) * len(outs) if isinstance(out_dims, int) or out_dims is None else \
        tuple(out_dims)
    if len(dims) != len(outs):
        raise RuntimeError(f"The vmap staticmethod of {cls.__name__} returned {len(outs)} "
                           f"outputs but {len(dims)} out_dims ({out_dims})")
    wrapped = tuple(o if d is None or not isinstance(o, _core.TensorBase) and
                    type(o) is not BatchedTensor else
                    BatchedTensor(o.movedim(d, 0) if d else o, level)
                    for o, d in zip(outs, dims))
    return wrapped[0] if single else wrapped


def _out_dim_error(out_dim, n):
    """PyTorch's error for an out_dim outside the n dims of an output with its batch dim."""
    return IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                      f"but got {out_dim})")


def unbatch(x, level, size, out_dim):
    """A function's output leaf at the end of the vmap ``level``: its batch dim moved to
    ``out_dim``; an output that does not vary over the batch is expanded there."""
    if _is_batched(x) and x.level == level:
        n = x.value.dim()
        if not -n <= out_dim < n:
            raise _out_dim_error(out_dim, n)
        return x.value.movedim(0, out_dim % n) if out_dim % n else x.value
    n = x.dim() + 1
    if not -n <= out_dim < n:
        raise _out_dim_error(out_dim, n)
    d = out_dim % n
    shape = tuple(x.shape)
    return x.unsqueeze(d).expand(shape[:d] + (size,) + shape[d:])


# -- methods that share the function rules above ---------------------------------------------------

def _method_from_rule(rule, name):
    def method(self, *args, **kwargs):
        out = rule(None, (self,) + args, dict(kwargs))
        if out is None:
            return _loop(lambda sample, *a, **k: getattr(sample, name)(*a, **k), name,
                         (self,) + args, kwargs)
        return out
    return method


def _method_trailing(name):
    def rule(dispatch, args, kwargs):
        return _trailing_matrix_rule(lambda v, *a, **k: getattr(v, name)(*a, **k), args, kwargs)
    return _method_from_rule(rule, name)


for _name, _is_method in _TRAILING_MATRIX_OPS.items():
    if _is_method:
        setattr(BatchedTensor, _name, _method_trailing(_name))
BatchedTensor.norm = _method_from_rule(_norm_rule, "norm")
BatchedTensor.outer = _method_from_rule(_outer_rule, "outer")
BatchedTensor.ger = _method_from_rule(_outer_rule, "ger")
