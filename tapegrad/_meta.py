"""The meta device: tensors with a shape, a dtype and autograd metadata but no data.

PyTorch scripts use `device='meta'` to build a model without allocating its weights (then
`load_state_dict(..., assign=True)` or `Module.to_empty`), and to learn the shapes a network
produces without computing them.  A meta tensor here is a `MetaTensor`: its `_array` is a
read-only zero-stride view of one zero (no memory whatever the shape), so every query of shape,
dtype, size and stride works unchanged; everything that computes goes through `dispatch`, which
never looks at values:

- shape rules for the ops whose cost grows with the size (elementwise ops: the result shape by
  broadcasting, the dtype and the grad_fn by running the op on one-element stand-ins; the
  convolutions);
- any other op runs on zero-stride stand-ins of the true shapes (exact: tapegrad's ops decide
  the result's shape from the input shapes), refused above STAND_IN_LIMIT elements;
- ops whose result shape or value depends on the data (nonzero, item, equal, ...) raise, as
  PyTorch's meta kernels do.

Where a meta tensor enters decides how it is seen, and CPU tensors pay nothing for it:
- its own methods, properties and operators: MetaTensor's (and `cpu + meta` reaches the meta
  operand's reflected operator first, Python's rule for a subclass);
- a CPU tensor's op handed a meta operand (`cpu.add(meta)`, `cpu += meta`, `cpu @ meta`), the
  compiled cat/stack and custom Functions (an RNN layer's fused sequence), which layers reach by
  internal names: the core tests its operands' types against the meta classes (two pointer
  compares) and calls `entered_cpu_op`;
- module-level functions (`torch.cat`, `F.conv2d`, ...), many of them Python code computing with
  numpy: every public function is, from import on, the compiled entry _core.WithOut
  (tapegrad/_public_calls.py), which sends a call with a meta argument here once the first meta
  tensor has told it the meta classes (one NULL compare per call before).  Names are never
  rebound; Tensor methods, operators and Module.__call__ are not wrapped.  Backward through meta
  tensors is not supported (PyTorch computes meta gradients): it raises NotImplementedError.
"""
from __future__ import annotations as _annotations

import functools
import inspect
import operator
import warnings

import numpy as np

from . import _core, _device, _factories
from ._format import _add_suffixes
from .tensor import Tensor
from ._public_calls import takes_parameter

# A stand-in run on inputs bigger than this many elements is refused (it would allocate and
# compute the result for real); ops that need more have a shape rule.
STAND_IN_LIMIT = 1 << 24

_NO_DATA = "Cannot copy out of meta tensor; no data!"

_ZEROS: dict = {}


def stand_in_array(shape, np_dtype) -> np.ndarray:
    """A read-only array of `shape` whose every element is the same zero: no memory per element."""
    np_dtype = np.dtype(np_dtype)
    zero = _ZEROS.get(np_dtype)
    if zero is None:
        zero = _ZEROS[np_dtype] = np.zeros((), np_dtype)
    return np.broadcast_to(zero, tuple(shape))


def is_meta_device(spec) -> bool:
    """Whether a `device=` argument (a device, a string such as 'meta' or 'meta:0') names meta."""
    if isinstance(spec, _device.device):
        return spec.type == "meta"
    return isinstance(spec, str) and spec.partition(":")[0] == "meta"


def default_is_meta() -> bool:
    """Whether the default device (set_default_device, `with torch.device('meta'):`) is meta."""
    d = _device._default
    return d is not None and d.type == "meta"


# -- grad_fn of meta results -------------------------------------------------------------------
class MetaNode:
    """The grad_fn of a meta tensor: names the backward op PyTorch would record (the repr shows
    it); it holds no saved values and cannot run."""

    __slots__ = ("next_functions",)

    def __init__(self, next_functions=()):
        self.next_functions = next_functions

    def name(self) -> str:
        """The backward op's name, e.g. ``ConvolutionBackward0``."""
        return type(self).__name__

    def __call__(self, *grads):
        raise NotImplementedError("tapegrad does not run backward through meta tensors")


@functools.lru_cache(maxsize=None)
def _node_class(name: str) -> type:
    return type(name, (MetaNode,), {"__slots__": (), "__module__": "builtins"})


# -- the tensor ----------------------------------------------------------------------------------
class MetaTensor(Tensor):
    """A tensor on the meta device: shape, dtype and requires_grad, no values."""

    __module__ = "tapegrad"
    is_meta = True
    is_cpu = False

    @property
    def device(self):
        """``device(type='meta')``."""
        return _META

    @property
    def grad_fn(self):
        """The backward node PyTorch would record for the op that made this tensor, or None."""
        return self.__dict__.get("_meta_grad_fn")

    @property
    def is_leaf(self) -> bool:
        """True unless an op on a tensor requiring grad made this tensor."""
        return self.__dict__.get("_meta_grad_fn") is None

    def __repr__(self) -> str:
        return meta_repr(self)

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def get_device(self) -> int:
        """-1, as PyTorch reports for a meta tensor."""
        return -1

    def stride(self, dim=None):
        """The strides of a contiguous tensor of this shape (the stand-in's zero strides are an
        implementation detail)."""
        strides, step = [], 1
        for n in reversed(self._array.shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
        return strides if dim is None else strides[dim]

    def is_contiguous(self, memory_format=None) -> bool:
        """True: a meta tensor is laid out as a contiguous one."""
        return True

    def item(self):
        """Raises: a meta tensor has no value."""
        if self._array.size != 1:
            raise RuntimeError(f"a Tensor with {self._array.size} elements cannot be converted "
                               f"to Scalar")
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        """Raises: a meta tensor has no values."""
        raise NotImplementedError(_NO_DATA)

    def numpy(self, *, force: bool = False):
        """Raises PyTorch's TypeError: a meta tensor has no values to give numpy."""
        raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy "
                        "the tensor to host memory first.")

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __float__(self):
        return self.item()

    __int__ = __index__ = __bool__ = __complex__ = __float__

    def cpu(self, *, memory_format=None):
        """Raises: there is no data to copy out."""
        raise NotImplementedError(_NO_DATA)

    def to(self, *args, **kwargs):
        """to(meta or no device, dtype): a meta tensor of the new dtype; any other device raises
        PyTorch's "Cannot copy out of meta tensor"."""
        from .tensor import as_dtype, parse_to
        device, dtype, _, copy = parse_to(args, kwargs)
        if args and isinstance(args[0], _core.TensorBase):
            device = args[0].device
        if device is not None and not is_meta_device(device):
            _device.check_device(device, "to")
            raise NotImplementedError(_NO_DATA)
        if dtype is None or as_dtype(dtype) == self.dtype:
            return meta_like(self) if copy else self
        return dispatch(Tensor.to, "to", (self, as_dtype(dtype)), {})

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Raises NotImplementedError: tapegrad does not compute gradients of meta tensors."""
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
        raise NotImplementedError("tapegrad does not run backward through meta tensors")

    def __reduce_ex__(self, protocol):
        return (make_meta, (tuple(self._array.shape), self._array.dtype.str, self.requires_grad,
                            None, _pickle_kind(self)))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a torch.nn.utils."
                               "weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        new = meta_like(self, requires_grad=self.requires_grad)
        memo[id(self)] = new
        return new


_META = _device.device("meta")

# type(t) prints as PyTorch's does for a tensor on any device (the class is never pickled by
# reference: __reduce_ex__ rebuilds through make_meta).
MetaTensor.__name__ = MetaTensor.__qualname__ = "Tensor"


def _pickle_kind(t) -> str:
    from .nn.parameter import Parameter
    return "parameter" if isinstance(t, Parameter) else "tensor"


def meta_repr(t) -> str:
    """PyTorch's repr of a meta tensor: `tensor(..., device='meta', size=(2, 3))` and suffixes."""
    suffixes = ["device='meta'", "size=" + str(tuple(t._array.shape))]
    if t.dtype != _core.get_default_dtype():
        suffixes.append("dtype=" + repr(t.dtype))
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes("tensor(...", suffixes, len("tensor("))


# -- making meta tensors ---------------------------------------------------------------------------
def make_meta(shape, np_dtype, requires_grad: bool = False, grad_fn_name=None,
              kind: str = "tensor") -> MetaTensor:
    """A meta tensor of `shape` and `np_dtype` (kind 'parameter': an nn.Parameter)."""
    cls = MetaTensor
    if kind == "parameter":
        cls = meta_parameter_class()
    t = _core.TensorBase.__new__(cls)
    t._array = stand_in_array(shape, np_dtype)
    if grad_fn_name is not None:
        t.__dict__["_meta_grad_fn"] = _node_class(grad_fn_name)()
    if requires_grad:
        t.requires_grad = True
    if not _registered:
        _register_with_core()
    return t


def meta_like(t, np_dtype=None, requires_grad: bool = False) -> MetaTensor:
    """A leaf meta tensor with t's shape (and dtype unless given)."""
    return make_meta(t._array.shape, t._array.dtype if np_dtype is None else np_dtype,
                     requires_grad)


def to_meta(t, dtype=None) -> MetaTensor:
    """t.to('meta'): a meta tensor with t's shape, its dtype (or `dtype`) and requires_grad; a
    recorded conversion when t requires grad, as PyTorch's ToCopyBackward0."""
    np_dtype = t._array.dtype if dtype is None else dtype.np_dtype
    grad = t.requires_grad and _core.is_grad_enabled() and np.dtype(np_dtype).kind in "fc"
    return make_meta(t._array.shape, np_dtype, grad, "ToCopyBackward0" if grad else None)


def become_meta(t) -> None:
    """Turn tensor t (a parameter or buffer of a module moved with Module.to('meta')) into a
    meta tensor in place: it keeps its identity, so optimizers and containers still hold it."""
    if not t.is_meta:
        t.__class__ = meta_parameter_class() if _pickle_kind(t) == "parameter" else MetaTensor
        t._array = stand_in_array(t._array.shape, t._array.dtype)
    if not _registered:
        _register_with_core()


def become_empty(t) -> None:
    """Module.to_empty(device='cpu'): give tensor t uninitialised CPU storage in place."""
    if t.is_meta:
        from .nn.parameter import Parameter
        t.__class__ = Parameter if isinstance(t, Parameter) else Tensor
    t._array = np.empty(t._array.shape, t._array.dtype)


@functools.lru_cache(maxsize=None)
def meta_parameter_class() -> type:
    """nn.Parameter on the meta device: a Parameter whose tensor behaviour is MetaTensor's."""
    from .nn.parameter import Parameter
    cls = type("Parameter", (Parameter, MetaTensor), {"__module__": "tapegrad.nn.parameter",
                                                      "__qualname__": "Parameter"})
    _register_with_core(cls)
    return cls


_registered = False


def _register_with_core(parameter_cls=None) -> None:
    """Tell the core the meta classes (first meta tensor, and the Parameter class once made), so
    that a CPU op handed a meta tensor calls entered_cpu_op.  Until then the core's checks compare
    with None."""
    global _registered
    _registered = True
    if parameter_cls is None and meta_parameter_class.cache_info().currsize:
        parameter_cls = meta_parameter_class()
    _META_CLASSES.update(c for c in (MetaTensor, parameter_cls) if c is not None)
    _core._set_meta_classes(MetaTensor, parameter_cls, entered_cpu_op)
    _core._set_public_call_meta(MetaTensor, parameter_cls, entered_cpu_op)   # (_public_calls.py)


# -- dispatch -------------------------------------------------------------------------------------
# Ops whose result's shape or value depends on the data: PyTorch's meta kernels refuse them.
_DATA_DEPENDENT = frozenset((
    "nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount",
    "histc", "histogram", "equal", "allclose", "tolist", "item", "nonzero_static", "where_1",
    "is_nonzero", "count_nonzero_", "repeat_interleave", "combinations", "searchsorted_"))

# Queries whose Python result depends only on shapes and dtypes.
_METADATA_RESULTS = frozenset((
    "numel", "nelement", "dim", "ndimension", "size", "stride", "element_size", "is_tensor",
    "is_floating_point", "is_complex", "is_signed", "is_contiguous", "is_inference",
    "is_same_size", "get_device", "is_storage", "type", "result_type", "can_cast",
    "promote_types", "broadcast_shapes", "is_conj", "is_neg", "data_ptr", "storage_offset"))

# Ops applied element by element (with broadcasting): result shape by broadcasting, dtype and
# grad_fn from the same op on one-element stand-ins.
_ELEMENTWISE = frozenset("""
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__
__rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __neg__ __pos__ __abs__ __invert__ __and__
__rand__ __or__ __ror__ __xor__ __rxor__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__
__lshift__ __rshift__
add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow
float_power atan2 arctan2 maximum minimum fmax fmin eq ne lt le gt ge greater less
greater_equal less_equal not_equal logical_and logical_or logical_xor logical_not
bitwise_and bitwise_or bitwise_xor bitwise_not hypot copysign xlogy lerp addcmul addcdiv
clamp clip clamp_min clamp_max where
relu relu6 leaky_relu elu selu celu gelu silu mish softplus softsign hardtanh hardswish
hardsigmoid sigmoid logsigmoid tanh tanhshrink softshrink hardshrink threshold
exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square abs absolute neg negative sign sgn
sin cos tan asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan erf erfc erfinv
floor ceil round trunc frac reciprocal isnan isinf isfinite isneginf isposinf nan_to_num
sinc logit deg2rad rad2deg signbit positive conj real imag angle heaviside
dropout alpha_dropout feature_alpha_dropout clone detach contiguous
float double half bfloat16 long int short char byte bool type_as
""".split())


class _Stand:
    """The stand-ins of one dispatch: meta tensors in the arguments swapped for plain tensors."""

    def __init__(self, size_of):
        self.size_of = size_of      # meta tensor -> the shape its stand-in gets
        self.largest = 0

    def swap(self, x):
        if isinstance(x, MetaTensor):
            shape = self.size_of(x)
            arr = stand_in_array(shape, x._array.dtype)
            self.largest = max(self.largest, arr.size)
            s = _core.wrap_array(arr)
            if x.requires_grad:
                s.requires_grad = True
            return s
        if isinstance(x, (list, tuple)) and any(isinstance(e, MetaTensor) for e in x):
            return type(x)(self.swap(e) for e in x)
        return x


def _metas(args, kwargs):
    for x in list(args) + list(kwargs.values()):
        if isinstance(x, MetaTensor):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from (e for e in x if isinstance(e, MetaTensor))


def has_meta(args, kwargs) -> bool:
    """Whether a meta tensor is among the arguments (or in a list/tuple argument)."""
    return next(_metas(args, kwargs), None) is not None


# Writes into a meta tensor that take a source on any device, as PyTorch's copies do: a model
# built on the meta device and then initialised by `w.copy_(cpu_values)` or `w[:] = ...`.
_WRITES_FROM_ANY_DEVICE = frozenset(("copy_", "__setitem__"))


def _check_same_device(name, args, kwargs) -> None:
    # PyTorch mixes a meta tensor only with 0-d CPU tensors (they act as scalars); an index is
    # data the op reads on the host, so a CPU index tensor is fine too.
    if name in ("__getitem__", "index_select", "gather", "take", "embedding"):
        return
    first = None
    if name.startswith("__r") and len(args) == 2:
        args = (args[1], args[0])       # a reflected operator: the left operand comes first
    for x in list(args) + list(kwargs.values()):
        items = x if isinstance(x, (list, tuple)) else (x,)
        for e in items:
            if not isinstance(e, _core.TensorBase) or (not e.is_meta and e._array.ndim == 0):
                continue
            if first is None:
                first = e.device
            elif e.device != first:
                raise RuntimeError(f"Tensor on device {e.device} is not on the expected device "
                                   f"{first}!")


def _to_meta_result(out, name):
    if isinstance(out, MetaTensor):
        return out
    if isinstance(out, _core.TensorBase):
        gf = out.grad_fn
        return make_meta(out._array.shape, out._array.dtype, out.requires_grad,
                         None if gf is None else type(gf).__name__)
    if isinstance(out, (tuple, list)):
        return _same_sequence(out, [_to_meta_result(o, name) for o in out])
    if out is None or isinstance(out, (str, _core.dtype, _device.device, tuple)):
        return out
    if name in _METADATA_RESULTS and isinstance(out, (bool, int, float)):
        return out
    raise NotImplementedError(f"Could not run '{name}' on meta tensors: its result depends on "
                              f"the tensor's values, which a meta tensor does not have")


def _data_dependent(name):
    return NotImplementedError(f"Could not run '{name}' with arguments from the 'Meta' backend: "
                               f"its result's shape or value depends on the data, which a meta "
                               f"tensor does not have")


def dispatch(fn, name: str, args: tuple, kwargs: dict):
    """Run op `fn` (named `name`) on arguments holding meta tensors; meta results."""
    if name in _DATA_DEPENDENT:
        raise _data_dependent(name)
    if not (name in _WRITES_FROM_ANY_DEVICE and isinstance(args[0], MetaTensor)):
        _check_same_device(name, args, kwargs)
    bare = name.strip("_")
    if name.endswith("_") and not name.startswith("__") or name.startswith("__i") and \
            name not in ("__invert__", "__index__", "__int__", "__iter__"):
        return _inplace(fn, name, args, kwargs)
    if name in _ELEMENTWISE or bare in _ELEMENTWISE:
        return _elementwise(fn, name, args, kwargs)
    rule = _SHAPE_RULES.get(name)
    if rule is not None:
        return rule(args, kwargs)
    if name == "__getitem__":
        _check_index(args[1])
    stand = _Stand(lambda m: m._array.shape)
    s_args = tuple(stand.swap(a) for a in args)
    s_kwargs = {k: stand.swap(v) for k, v in kwargs.items()}
    if stand.largest > STAND_IN_LIMIT:
        shapes = ", ".join(str(tuple(m.shape)) for m in _metas(args, kwargs))
        raise NotImplementedError(f"tapegrad: '{name}' on meta tensors of shapes {shapes}: no "
                                  f"shape rule, and running it on a stand-in of more than "
                                  f"{STAND_IN_LIMIT} elements would compute it for real")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # the stand-ins' zeros are no data: numeric warnings about them (log(0), 0/0) are not
        # the program's
        warnings.simplefilter("ignore", RuntimeWarning)
        return _to_meta_result(fn(*s_args, **s_kwargs), name)


def _check_index(index) -> None:
    items = index if isinstance(index, tuple) else (index,)
    for i in items:
        if isinstance(i, MetaTensor):
            # a CPU index has values to read; a meta one does not
            raise _data_dependent("index with a meta index tensor")


def _elementwise(fn, name, args, kwargs):
    metas = list(_metas(args, kwargs))
    shapes = [tuple(m._array.shape) for m in metas]
    shapes += [tuple(x._array.shape) for x in list(args) + list(kwargs.values())
               if isinstance(x, _core.TensorBase) and not isinstance(x, MetaTensor)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        # the op's own error (it names the sizes as PyTorch's does): run it on the true shapes
        # with one stand-in pair that cannot be large, since broadcasting already failed.
        stand = _Stand(lambda m: m._array.shape)
        fn(*(stand.swap(a) for a in args), **{k: stand.swap(v) for k, v in kwargs.items()})
        raise
    stand = _Stand(lambda m: (1,) * m._array.ndim)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)     # (zeros are no data: see dispatch)
        out = fn(*(stand.swap(a) for a in args), **{k: stand.swap(v) for k, v in kwargs.items()})
    if not isinstance(out, _core.TensorBase):
        return _to_meta_result(out, name)
    gf = out.grad_fn
    return make_meta(shape, out._array.dtype, out.requires_grad,
                     None if gf is None else type(gf).__name__)


def _inplace(fn, name, args, kwargs):
    self = args[0]
    if not isinstance(self, MetaTensor):
        raise RuntimeError(f"{name}: cannot write a meta tensor into a tensor on the cpu")
    shapes = [tuple(x._array.shape) for x in list(args[1:]) + list(kwargs.values())
              if isinstance(x, _core.TensorBase)]
    if shapes and name not in ("set_", "index_put_", "scatter_", "scatter_add_",
                               "index_add_", "index_copy_", "index_fill_", "masked_fill_",
                               "masked_scatter_", "put_", "resize_as_", "__setitem__"):
        if np.broadcast_shapes(tuple(self._array.shape), *shapes) != tuple(self._array.shape):
            wide = np.broadcast_shapes(self._array.shape, *shapes)
            if name == "copy_":     # PyTorch's copy_ prints both as lists on every device
                raise RuntimeError(f"output with shape {list(self._array.shape)} doesn't match "
                                   f"the broadcast shape {list(wide)}")
            # the wording of PyTorch's meta kernels (its CPU kernels print both as lists)
            raise RuntimeError(f"output with shape torch.Size({list(self._array.shape)}) doesn't "
                               f"match the broadcast shape {wide}")
    return None if name == "__setitem__" else self


# -- shape rules for ops whose cost grows with the size ------------------------------------------
def _requires_grad(*tensors) -> bool:
    return _core.is_grad_enabled() and any(isinstance(t, _core.TensorBase) and t.requires_grad
                                           for t in tensors)


def _conv_rule(nd):
    def rule(args, kwargs):
        names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        x, w, b = bound["input"], bound["weight"], bound.get("bias")
        stride = _tuple(bound.get("stride", 1), nd)
        dilation = _tuple(bound.get("dilation", 1), nd)
        groups = bound.get("groups", 1)
        padding = bound.get("padding", 0)
        xs, ws = tuple(x.shape), tuple(w.shape)
        batched = len(xs) == nd + 2
        if len(xs) not in (nd + 1, nd + 2) or len(ws) != nd + 2:
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"conv{nd}d, but got input of size: {list(xs)}")
        channels = xs[1] if batched else xs[0]
        if channels != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(ws)}, expected "
                               f"input{list(xs)} to have {ws[1] * groups} channels, but got "
                               f"{channels} channels instead")
        spatial = xs[-nd:]
        if padding == "same":
            out = spatial
        else:
            pad = (0,) * nd if padding == "valid" else _tuple(padding, nd)
            out = []
            for L, k, s, p, d in zip(spatial, ws[2:], stride, pad, dilation):
                n = (L + 2 * p - d * (k - 1) - 1) // s + 1
                if n <= 0:
                    raise RuntimeError(f"Calculated output size: ({L + 2 * p - d * (k - 1) - 1}"
                                       f" // {s} + 1). Output size is too small")
                out.append(n)
        shape = ((xs[0],) if batched else ()) + (ws[0],) + tuple(out)
        grad = _requires_grad(x, w, b)
        return make_meta(shape, np.result_type(x._array.dtype, w._array.dtype), grad,
                         "ConvolutionBackward0" if grad else None)
    return rule


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _as_strided_rule(args, kwargs):
    from ._strided import _int_list
    x = args[0]
    size = _int_list(args[1] if len(args) > 1 else kwargs["size"], "size")
    grad = _requires_grad(x)
    return make_meta(size, x._array.dtype, grad, "AsStridedBackward0" if grad else None)


_SHAPE_RULES = {"conv1d": _conv_rule(1), "conv2d": _conv_rule(2), "conv3d": _conv_rule(3),
                "as_strided": _as_strided_rule}


_META_CLASSES: set = set()          # MetaTensor and its Parameter class, once made


# -- CPU ops handed a meta tensor ----------------------------------------------------------------
# The core notices a meta operand of a CPU tensor's op (`cpu.add(meta)`, `cpu += meta`,
# `cpu @ meta`) or a meta input of a custom Function (an RNN layer's fused sequence) by two
# type-pointer compares, and calls entered_cpu_op: CPU tensors pay nothing for the meta device.

_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "div": operator.truediv, "pow": operator.pow, "matmul": operator.matmul}


def entered_cpu_op(name: str, args: tuple):
    """What a CPU op gives when a meta tensor reaches it: PyTorch's device error, or (the CPU
    tensors 0-d, acting as scalars) the meta result.  `name`: a binary op of `_BINARY`, 'inplace'
    (args: the CPU tensor written, the meta operand), 'call' (args: a function, its name, args
    and kwargs: from a public function's entry, or compiled cat/stack, which layers reach by internal
    names) or 'function' (args: a custom Function's ctx, its inputs and the forward's result,
    computed on the meta inputs' stand-ins)."""
    if name == "inplace":
        return dispatch(None, "__iadd__", args, {})
    if name == "call":      # a module-level function's dispatcher, or compiled cat/stack
        fn, fn_name, fn_args, fn_kwargs = args
        return dispatch(fn, fn_name, fn_args, fn_kwargs or {})
    if name == "function":
        ctx, inputs, result = args
        # (no device check: a layer's internals, e.g. an RNN's input projection computed by a
        # kernel that takes no dispatcher, may have run on a meta input's stand-in)
        grad = _requires_grad(*inputs)
        outs = result if isinstance(result, tuple) else (result,)
        metas = tuple(
            make_meta(o._array.shape, o._array.dtype, grad and o._array.dtype.kind in "fc",
                      type(ctx).__name__ if grad and o._array.dtype.kind in "fc" else None)
            if isinstance(o, _core.TensorBase) else o for o in outs)
        return metas if isinstance(result, tuple) else metas[0]
    return dispatch(_BINARY[name], name, args, {})


def _same_sequence(like, items: list):
    """`items` in a sequence of like's type: a namedtuple takes them as arguments, a
    return_types structure (max, topk, ...) and a tuple or list as one sequence."""
    if hasattr(like, "_fields") and not hasattr(type(like), "n_fields"):
        try:
            return type(like)(*items)
        except TypeError:
            pass
    return type(like)(items)


# -- Tensor methods -------------------------------------------------------------------------------
# Tensor attributes that only read metadata (or are MetaTensor's own): inherited as they are.
_KEEP = frozenset((
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride", "is_contiguous",
    "is_floating_point", "is_complex", "is_signed", "requires_grad_", "retain_grad",
    "register_hook", "get_device", "is_inference", "type", "data_ptr", "storage_offset",
    "is_pinned", "is_shared", "share_memory_", "pin_memory", "cuda", "dim_order",
    "__len__", "__iter__", "__reversed__", "__contains__", "__hash__", "__sizeof__",
    "__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__",
    "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__reduce__",
    "__setstate__", "__getstate__", "__class_getitem__", "__repr__", "__str__", "__format__",
    "__array_priority__", "__weakref__", "__dict__", "__module__", "__doc__",
    "__copy__", "__bool__", "__float__", "__int__", "__index__", "__complex__", "__array__",
    "__dlpack__", "__dlpack_device__", "__array_wrap__", "__array_function__",
    "__array_ufunc__", "__torch_function__", "__deepcopy__", "__reduce_ex__",
    "module_load"))     # (not an op: it composes copy_ / detach, which dispatch themselves)

# Tensor properties that are ops (their result is a tensor).
_PROPERTY_OPS = ("T", "mT", "H", "mH", "data", "real", "imag")


def _method(name, fn):
    def method(self, *args, **kwargs):
        return dispatch(fn, name, (self,) + args, kwargs)
    method.__name__ = name
    method.__doc__ = getattr(fn, "__doc__", None)
    return method


def _property(name, prop):
    def getter(self):
        if name == "data":
            return make_meta(self._array.shape, self._array.dtype)
        return dispatch(prop.fget, name, (self,), {})
    return property(getter, prop.fset, doc=prop.__doc__)


def _define_methods() -> None:
    for name in dir(Tensor):
        if name in _KEEP or name in MetaTensor.__dict__ or \
                (name.startswith("_") and not name.startswith("__")):
            continue
        attr = getattr(Tensor, name, None)
        static = Tensor.__dict__.get(name)
        if name in _PROPERTY_OPS:
            prop = next((k.__dict__[name] for k in Tensor.__mro__ if name in k.__dict__), None)
            if isinstance(prop, property):
                setattr(MetaTensor, name, _property(name, prop))
            continue
        if isinstance(static, (property, staticmethod, classmethod)) or not callable(attr) or \
                isinstance(attr, type):
            continue
        setattr(MetaTensor, name, _method(name, attr))


_define_methods()


# -- factories ------------------------------------------------------------------------------------
# tapegrad.compile's capture (capture.pxi's _capture_op_call) while one runs, else None: a CPU
# creation call is noted there, as the public functions' entry notes theirs (out_arg_call.h);
# set by tapegrad/replay.py, so that no name is rebound for a capture.
capture_route = [None]


def check_requires_grad_argument(fn, name: str, args: tuple, kwargs: dict) -> None:
    """A factory's requires_grad as PyTorch's parser takes it: a bool (zeros(2, requires_grad=1)
    is its TypeError, not a truth value).  PyTorch's factories known under several signatures
    (arange, rand, eye ...) say "invalid combination" instead."""
    from . import _overloads
    if name not in _overloads.FUNCTIONS:
        _core.check_bool(name, "requires_grad", kwargs["requires_grad"])
    elif type(kwargs["requires_grad"]) is not bool:
        from .tensor import invalid_arguments
        raise invalid_arguments(name, args, kwargs, f"\n * {inspect.signature(fn)}\n")


# The dtypes numpy lacks whose module is loaded (tapegrad/_bfloat16.py, tapegrad/_float8.py):
# factories given dtype= one of them go there.
routed_dtypes = set()
# [True] once tapegrad/_bfloat16.py is loaded (the optimizers and recurrent layers ask)
bfloat16_route = [False]


def factory(fn, name: str, kind: str):
    """Wrap creation function `fn` so that device='meta' (or a meta default device, or a meta
    input for *_like) makes a meta tensor without allocating.  `kind`: 'sizes' (fn(*size, ...)),
    'size' (fn(size, ...)), 'randint' (fn(low?, high, size, ...)), 'like' (fn(input, ...)), or
    'data' (anything else: computed on the CPU, then given to the meta device)."""
    reads_tensors = kind in ("like", "size")      # (an input, full's fill_value)
    takes_requires_grad = takes_parameter(fn, "requires_grad")
    from . import overrides
    from .overrides import _SUBCLASS_TYPES, _dispatch_subclass_call
    # The compiled fast path of the factory's common calls (tapegrad/_factories.pyx): the
    # result, or None for a call it leaves to the general path below.
    fast = _factories.FAST_PATHS.get(name)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # (this runs at every factory call: plain loops and type tests, no generators)
        if overrides._modes_in_all_threads and overrides._mode_stack():
            # (a torch function mode sees the factory's call first, as PyTorch's do: a mode
            # that sets a default dtype or device replaces it; the Python-level factories are
            # not behind the C entry that asks the modes)
            return overrides._dispatch_mode_call(wrapper, args, kwargs)
        if fast is not None:
            made = fast(args, kwargs)
            if made is not None:
                return made
        if kind == "like" and args and type(args[0]) in _SUBCLASS_TYPES \
                and not _core._subclass_dispatch_set_off(None):
            # (an input of a Tensor subclass: its __torch_function__, as the public entries do)
            return _dispatch_subclass_call(wrapper, args, kwargs)
        if kwargs and routed_dtypes and isinstance(kwargs.get("dtype"), _core.dtype) \
                and kwargs["dtype"] in routed_dtypes \
                and not _core._subclass_dispatch_set_off(None):
            # (dtype=torch.bfloat16 or a float8 dtype: made by its module, as the public
            # entries do)
            return _dispatch_subclass_call(wrapper, args, kwargs)
        if kwargs and takes_requires_grad and "requires_grad" in kwargs \
                and type(kwargs["requires_grad"]) is not bool:
            check_requires_grad_argument(fn, name, args, kwargs)
        if reads_tensors:
            for a in args:
                if isinstance(a, np.ndarray):
                    # PyTorch's parser refuses an ndarray for the input or a Number: the
                    # public functions' one verdict (their entry's, argument_error)
                    from ._public_calls import argument_error
                    refused = argument_error(fn, name, None, args, kwargs)
                    if refused is not None:
                        raise refused
                    break
        dev = kwargs.get("device")
        if dev is None:
            if kind == "like" and args and isinstance(args[0], MetaTensor):
                if "device" in kwargs:
                    kwargs = dict(kwargs)
                    del kwargs["device"]
                return _meta_factory(fn, kind, args, kwargs)
            if not default_is_meta():
                route = capture_route[0]
                return fn(*args, **kwargs) if route is None else route(fn, args, kwargs)
        elif not is_meta_device(dev):
            if kind == "like" and args and isinstance(args[0], MetaTensor):
                # a CPU tensor shaped like a meta one
                return fn(_core.wrap_array(np.empty(args[0].shape, args[0]._array.dtype)),
                          *args[1:], **kwargs)
            route = capture_route[0]
            return fn(*args, **kwargs) if route is None else route(fn, args, kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k != "device"}
        return _meta_factory(fn, kind, args, kwargs)
    wrapper.__meta_dispatch__ = fn
    return wrapper


def _meta_factory(fn, kind, args, kwargs):
    from .creation import _size_args
    rg = bool(kwargs.pop("requires_grad", False))
    kwargs["device"] = "cpu"        # the probes below run on the CPU even under a meta default
    if kind in ("sizes", "size", "randint"):
        if kind == "sizes":
            if "size" in kwargs:
                shape, probe = _size_args((kwargs.pop("size"),), fn.__name__), ()
            else:
                shape, probe = _size_args(args, fn.__name__), ()
            sample = fn(*(probe or (0,)), **kwargs)
        elif kind == "size":
            size = args[0] if args else kwargs.pop("size")
            shape = _size_args((size,), fn.__name__)
            sample = fn((0,), *args[1:], **kwargs)
        else:
            pos = list(args)
            if "size" in kwargs:
                shape = _size_args((kwargs.pop("size"),), fn.__name__)
            else:
                shape = _size_args((pos.pop(),), fn.__name__)
            sample = fn(*pos, (0,), **kwargs)
        np_dtype = sample._array.dtype
    elif kind == "like":
        src = args[0]
        with_dtype = kwargs.get("dtype")
        shape = tuple(src._array.shape)
        np_dtype = src._array.dtype if with_dtype is None else with_dtype.np_dtype
    else:
        sample = fn(*args, **kwargs)
        shape, np_dtype = sample._array.shape, sample._array.dtype
    if rg and np.dtype(np_dtype).kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return make_meta(shape, np_dtype, rg)


_FACTORIES = {
    "sizes": ("zeros", "ones", "empty", "rand", "randn"),
    "size": ("full",),
    "randint": ("randint",),
    "like": ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
             "randint_like"),
    "data": ("tensor", "as_tensor", "arange", "linspace", "logspace", "eye", "randperm",
             "empty_strided"),
}


def install_factories() -> None:
    """Wrap the creation functions wherever tapegrad and its layers look them up."""
    import tapegrad
    from . import _random, _uninitialised, creation
    _factories.configure(_device, _device.device, capture_route, _uninitialised.flags,
                         _random.default_generator)
    for kind, names in _FACTORIES.items():
        for name in names:
            fn = getattr(tapegrad, name, None)
            if fn is None or hasattr(fn, "__meta_dispatch__"):
                continue
            wrapped = factory(fn, name, kind)
            for mod in (tapegrad, creation, _random):
                if getattr(mod, name, None) is fn:
                    setattr(mod, name, wrapped)
