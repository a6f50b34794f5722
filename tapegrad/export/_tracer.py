"""The tracer behind torch.export: tapegrad.fx's Tracer run on the example inputs.

Each Proxy also carries the value it stands for (`ValueProxy.value`), computed as the node is
recorded, so a forward may read shapes, dtypes and lengths (export specialises on them, as
PyTorch's does for static dims) while asking the truth of a tensor (`if x.sum() > 0`) is refused
with PyTorch's data-dependent error.  Calls are recorded at aten level (_lowering.py, _aten.py);
parameters and buffers are lifted to the first placeholders (p_<path>, b_<path>), as PyTorch
lifts them.
"""
from __future__ import annotations as _annotations

import inspect

from ..fx import Tracer
from ..fx.graph import _snake_case
from ..fx.node import _public_table, map_aggregate
from ..fx.proxy import Proxy
from . import _lowering
from ._aten import aten_op
from .graph_signature import (ConstantArgument, InputKind, InputSpec, OutputKind, OutputSpec,
                              TensorArgument)

__all__ = ["ValueProxy", "ExportTracer"]

# a tensor's metadata, which a forward may read while export traces it (the values are static)
_METADATA = frozenset(("shape", "dtype", "device", "ndim", "layout", "is_cuda", "requires_grad",
                       "size", "dim", "numel", "nelement", "stride", "is_contiguous",
                       "is_floating_point", "is_complex", "element_size"))


def _data_dependent(tracer):
    from ..fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    symbol = f"u{tracer.unbacked_count}"
    tracer.unbacked_count += 1
    return GuardOnDataDependentSymNode(
        f"Could not guard on data-dependent expression Eq({symbol}, 1) (unhinted: Eq({symbol}, 1)).  "
        "(Size-like symbols: none)\n\nconsider using data-dependent friendly APIs such as "
        "guard_or_false, guard_or_true and statically_known_true.\n\nThe error above occurred "
        "when calling torch.export.export. If you would like to view some more information "
        "about this error, and get a list of all other errors that may occur in your export "
        "call, you can replace your `export()` call with `draft_export()`.")


class ValueProxy(Proxy):
    """A Proxy that knows its value on the example inputs (`value`) and, when some dims are
    dynamic, on the same inputs with those dims at other sizes (`other`): a size that differs
    between the two is symbolic, and code that makes the two runs disagree has specialised it."""

    def __init__(self, node, tracer, value, other):
        super().__init__(node, tracer)
        self.value = value
        self.other = other

    def __repr__(self):
        return f"ValueProxy({self.node.name})"

    def __getattr__(self, k):
        if k in ("shape", "size") and self.value is not self.other and \
                tuple(self.value.shape) != tuple(self.other.shape):
            return self._symbolic_shape() if k == "shape" else self._symbolic_size
        if k in ("numel", "nelement") and self._dynamic():
            raise self.tracer.shape_spec.specialised_error()
        if k in _METADATA:
            return getattr(self.value, k)
        if k.startswith("__") or callable(getattr(self.value, k, None)):
            return super().__getattr__(k)          # a method: recorded when called
        # an attribute that is a tensor (x.T) is an op, recorded where the forward reads it
        return self.tracer.create_proxy("call_function", getattr, (self, k), {})

    def _symbolic_shape(self):
        """The shape with each dynamic dim an aten.sym_size.int node (made once per dim)."""
        from .. import ops
        sizes = []
        for d, (size, other) in enumerate(zip(self.value.shape, self.other.shape)):
            if size == other:
                sizes.append(size)
                continue
            sizes.append(self.tracer.sym_size(self, d, size, other))
        return tuple(sizes)

    def _symbolic_size(self, dim=None):
        shape = self._symbolic_shape()
        return shape if dim is None else shape[dim]

    # `h += 1` on a tensor the forward computed: the in-place add, as PyTorch records it
    def __iadd__(self, other):
        if not self._is_tensor():
            return NotImplemented         # a size: Python falls back to `add`
        return self.tracer.create_proxy("call_method", "add_", (self, other), {})

    def __isub__(self, other):
        if not self._is_tensor():
            return NotImplemented         # a size: Python falls back to `sub`
        return self.tracer.create_proxy("call_method", "sub_", (self, other), {})

    def __imul__(self, other):
        if not self._is_tensor():
            return NotImplemented         # a size: Python falls back to `mul`
        return self.tracer.create_proxy("call_method", "mul_", (self, other), {})

    def __itruediv__(self, other):
        if not self._is_tensor():
            return NotImplemented         # a size: Python falls back to `div`
        return self.tracer.create_proxy("call_method", "div_", (self, other), {})

    def _is_tensor(self) -> bool:
        from .. import Tensor
        return isinstance(self.value, Tensor)

    def _dynamic(self) -> bool:
        from .. import Tensor
        return isinstance(self.value, Tensor) and self.value is not self.other \
            and tuple(self.value.shape) != tuple(self.other.shape)

    def __len__(self):
        # Python wants an int: a dynamic first dim would be specialised
        if self._dynamic() and self.value.shape[0] != self.other.shape[0]:
            raise self.tracer.shape_spec.specialised_error()
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    guard = None         # (symbol, relation, bound) of a comparison of a dynamic size

    def _concrete(self, convert):
        if isinstance(self.value, (int, float, bool)):      # a size: static unless dynamic
            if self.value != self.other:
                raise self.tracer.shape_spec.specialised_error()
            if self.guard is not None:
                self.tracer.shape_spec.check_guard(*self.guard, bool(self.value))
            return convert(self.value)
        raise _data_dependent(self.tracer)

    def __bool__(self):
        return self._concrete(bool)

    def __int__(self):
        return self._concrete(int)

    def __index__(self):
        return self._concrete(int)

    def __float__(self):
        return self._concrete(float)

    def item(self):
        raise _data_dependent(self.tracer)

    tolist = item


class _nowhere:
    """No change of insertion point."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _value(a):
    return map_aggregate(a, lambda x: x.value if isinstance(x, ValueProxy) else x)


def _other(a):
    return map_aggregate(a, lambda x: x.other if isinstance(x, ValueProxy) else x)


def _has_tensor(args, kwargs):
    from .. import Tensor
    found = []
    map_aggregate((args, kwargs), lambda x: found.append(x) if isinstance(
        x.value if isinstance(x, ValueProxy) else x, Tensor) else None)
    return bool(found)


def _call_name(kind, target) -> str:
    """The name a call is lowered by: a method's name, an operator's, a function's public one."""
    if kind == "call_method":
        return target
    public = _public_table().get(id(target))
    if public is not None:
        return public
    return getattr(target, "__name__", repr(target))


class ExportTracer(Tracer):
    """Records `root`'s forward on example inputs as an aten-level Graph with lifted parameters."""

    def __init__(self, root, args, kwargs, shape_spec):
        super().__init__()
        self.example_args = tuple(args)
        self.example_kwargs = dict(kwargs or {})
        self.lifted = {}               # id(tensor) -> its placeholder's ValueProxy
        self.input_specs = []
        self.output_specs = []
        self.out_spec = None
        self.user_input_names = []
        self.unbacked_count = 0
        self.sym_sizes = {}            # (node, dim) -> its sym_size.int proxy
        self.parameter_nodes = set()
        self.symbol_origins = {}       # symbol -> (the input proxy, dim) that defines it
        self.shape_spec = shape_spec   # what dynamic_shapes said (dynamic_shapes.ShapeSpec)
        self.export_root = root
        from ._aten import aten_names
        aten_names()          # the kernels are looked up before the trace patches torch.*

    # -- inputs ----------------------------------------------------------------------------------
    def _placeholder(self, name, value, other=None, private=False):
        """A placeholder (its node may be renamed, `input` -> `input_1`; its target keeps the
        name).  `private`: trace on a copy, so in-place ops in the forward (a BatchNorm's
        running stats, an input's add_) leave the caller's tensors as they were."""
        from .. import Tensor
        if private and isinstance(value, Tensor):
            value = value.detach().clone()
            other = None if other is None else other.clone()
        node = self.graph.create_node("placeholder", name, name=name)
        node.meta["val"] = value
        proxy = ValueProxy(node, self, value, value if other is None else other)
        self._note_symbols(node, proxy)
        return proxy

    def _note_symbols(self, node, proxy):
        """node.meta["sym_shape"]: the symbolic size of each dim (or of an int), for printing."""
        from .. import Tensor
        if proxy.value is proxy.other:
            return
        expression = self.shape_spec.expression
        if isinstance(proxy.value, Tensor):
            node.meta["sym_shape"] = [str(a) if a == b else expression(a, b)
                                      for a, b in zip(proxy.value.shape, proxy.other.shape)]
        elif isinstance(proxy.value, int) and proxy.value != proxy.other:
            node.meta["sym_int"] = expression(proxy.value, proxy.other)

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        from .. import Tensor
        root = self.export_root
        buffers = dict(root.named_buffers())
        non_persistent = {name for name in buffers if name not in root.state_dict()}
        for name, param in root.named_parameters():
            node_name = "p_" + name.replace(".", "_")
            self.lifted[id(param)] = self._placeholder(node_name, param)
            self.parameter_nodes.add(self.lifted[id(param)].node)
            self.input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node_name), name))
        for name, buf in buffers.items():
            node_name = "b_" + name.replace(".", "_")
            self.lifted[id(buf)] = self._placeholder(node_name, buf, private=True)
            self.input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node_name), name,
                                              persistent=name not in non_persistent))
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())[1 if is_module else 0:]
        bound = inspect.Signature(params).bind(*self.example_args, **self.example_kwargs)
        args, kwargs = [], {}

        def user_input(name, value):
            if isinstance(value, Tensor):
                self.user_input_names.append(name)
                self.input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name), None))
                other = None
                if any(key[0] == name for key in self.shape_spec.dynamic):
                    import tapegrad
                    other = tapegrad.ones(self.shape_spec.other_shape(name, value.shape), dtype=value.dtype)
                proxy = self._placeholder(name, value, other, private=True)
                for (input_name, d), (symbol, _lower, _upper) in self.shape_spec.dynamic.items():
                    if input_name == name:
                        self.symbol_origins.setdefault(symbol, (proxy, d))
                return proxy
            if isinstance(value, (int, float, bool, str)) or value is None:
                # specialised, as PyTorch's export specialises a scalar input
                self.input_specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(name, value), None))
                self.user_input_names.append(name)
                self._placeholder(name, value)
                return value
            raise NotImplementedError(f"torch.export in tapegrad takes tensors and scalars as inputs, "
                                      f"not {type(value).__name__} (input {name!r})")

        for p in params:
            if p.name not in bound.arguments:
                continue
            value = bound.arguments[p.name]
            if p.kind is p.VAR_POSITIONAL:
                args.extend(user_input(f"{p.name}_{i}", v) for i, v in enumerate(value))
            elif p.kind is p.VAR_KEYWORD:
                kwargs.update({k: user_input(k, v) for k, v in value.items()})
            elif p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = user_input(p.name, value)
            else:
                args.append(user_input(p.name, value))
        return args, kwargs

    # -- parameters, buffers, constants -----------------------------------------------------------
    def getattr(self, attr, attr_val, parameter_proxy_cache):
        lifted = self.lifted.get(id(attr_val))
        return lifted if lifted is not None else attr_val

    def create_arg(self, a):
        from .. import Tensor
        if isinstance(a, Tensor):
            lifted = self.lifted.get(id(a))
            if lifted is None:
                lifted = self._lift_constant(a)
            return lifted.node
        return super().create_arg(a)

    def _lift_constant(self, tensor):
        """A tensor the forward made or holds outside the state dict: a constant input."""
        target = self.tensor_attrs.get(id(tensor))
        if target is None:
            target = f"lifted_tensor_{sum(s.kind is InputKind.CONSTANT_TENSOR for s in self.input_specs)}"
        name = "c_" + target.replace(".", "_")
        first_user = next((n for n in self.graph.nodes if n.op == "placeholder"
                           and n.name in self.user_input_names), None)
        with self.graph.inserting_before(first_user):
            proxy = self._placeholder(name, tensor)
        users = [i for i, s in enumerate(self.input_specs) if s.kind is InputKind.USER_INPUT]
        spec = InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(name), target)
        self.input_specs.insert(users[0] if users else len(self.input_specs), spec)
        self.lifted[id(tensor)] = proxy
        self.constants[target] = tensor
        return proxy

    # -- calls ------------------------------------------------------------------------------------
    def call_module(self, m, forward, args, kwargs):
        recorded = _lowering.module_forward(m)
        if recorded is None:
            return forward(*args, **kwargs)
        return recorded(m, *args, **kwargs)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        if kind not in ("call_function", "call_method"):
            raise NotImplementedError(f"torch.export in tapegrad records no {kind} nodes")
        call = _call_name(kind, target)
        if kind == "call_function" and getattr(target, "__module__", None) == "_operator" \
                and not _has_tensor(args, kwargs):
            # arithmetic on symbolic sizes (`x.size(0) * 2`): recorded as it is written
            result = self._record(target, target.__name__, args, kwargs)
            result.guard = self._guard_of(target, args)
            return result
        lowered = _lowering.lower(call, args, kwargs)
        if lowered is None:
            raise NotImplementedError(f"torch.export in tapegrad does not record {call} yet")
        in_place = (kind == "call_method" and call.endswith("_") and not call.startswith("_")) \
            or kwargs.get("inplace") is True
        target_proxy = args[0] if args else None
        if in_place:
            self._check_in_place(call, target_proxy)
        result = None
        for aten, overload, args, kwargs in lowered if isinstance(lowered, list) else [lowered]:
            args = tuple(result if a is _lowering.Previous else a for a in args)
            if in_place and aten_op(aten + "_", overload) is not None:
                aten += "_"                  # recorded as the in-place op (relu_, add_)
            result = self._record_lowered(aten, overload, args, kwargs)
        if in_place:
            # the mutated value's proxy now stands for the in-place node, so the forward's later
            # uses of it name that node, as in PyTorch's graph
            target_proxy.node, target_proxy.value, target_proxy.other = \
                result.node, result.value, result.other
            return target_proxy
        return result

    def sym_size(self, proxy, d, size, other):
        """A dynamic dim's size as a node: a size that is one symbol is read once, from the
        input that defines it, at the top of the graph (as PyTorch binds its symbols); any
        other from the tensor at hand."""
        from .. import ops
        symbol = self.shape_spec.expression(size, other)
        key = symbol if symbol in self.symbol_origins else (proxy.node, d)
        if key not in self.sym_sizes:
            source, dim = self.symbol_origins.get(symbol, (proxy, d))
            first_call = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
            with self.graph.inserting_before(first_call) if key == symbol and first_call is not None \
                    else _nowhere():
                self.sym_sizes[key] = self._record(ops.aten.sym_size.int, "sym_size_int_1", (source, dim), {})
        return self.sym_sizes[key]

    _RELATIONS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    _MIRROR = {">": "<", ">=": "<=", "<": ">", "<=": ">="}

    def _guard_of(self, target, args):
        """(symbol, relation, bound) of a comparison of a dynamic size with a constant."""
        relation = self._RELATIONS.get(target.__name__)
        if relation is None or len(args) != 2:
            return None
        left, right = args
        if not isinstance(left, ValueProxy):
            left, right, relation = right, left, self._MIRROR[relation]
        symbol = left.node.meta.get("sym_int") if isinstance(left, ValueProxy) else None
        if symbol not in self.shape_spec.sources or not isinstance(right, int):
            return None
        return symbol, relation, right

    def _check_in_place(self, call, proxy):
        """In-place ops are recorded as such (the module runs them on its own buffers and on its
        caller's inputs, as the eager forward does); one on a parameter is refused."""
        if not isinstance(proxy, ValueProxy) or proxy.node in self.parameter_nodes:
            raise NotImplementedError(f"torch.export in tapegrad does not record the in-place "
                                      f"{call} of a parameter")

    def _record_lowered(self, aten, overload, args, kwargs):
        if aten == "index_chain":
            return self._index(*args)
        if callable(aten):                       # operator.getitem on an op's list of results
            return self._record(aten, "getitem", args, kwargs)
        from .. import ops
        from ._aten import aten_op
        op = getattr(getattr(ops.aten, aten), overload)
        args, kwargs = aten_op(aten, overload).normalize(args, kwargs)
        return self._record(op, _snake_case(aten), args, kwargs)

    def _record(self, target, name, args, kwargs):
        import tapegrad
        with tapegrad.no_grad():
            value = target(*_value(args), **_value(kwargs))
            other = value
            if self.shape_spec.dynamic:
                try:
                    other = target(*_other(args), **_other(kwargs))
                except Exception as error:   # a size the forward fixed fails the other sizes
                    raise self.shape_spec.specialised_error() from error
        node = self.create_node("call_function", target, self.create_arg(args),
                                self.create_arg(kwargs), name)
        node.meta["val"] = value
        proxy = ValueProxy(node, self, value, other)
        self._note_symbols(node, proxy)
        if isinstance(value, (list, tuple)):
            # an op's list of results is taken apart at once, one getitem node each, as
            # PyTorch's export does: the forward holds a list of proxies
            import operator
            parts = [self._record(operator.getitem, "getitem", (proxy, i), {}) for i in range(len(value))]
            # (values, indices) of max(dim) is a named tuple, as its value is
            parts = type(value)(*parts) if hasattr(value, "_fields") else type(value)(parts)
            return parts
        return proxy

    def _index(self, value, index):
        """x[i, a:b, None, ...] as aten.select / aten.slice / aten.unsqueeze, dim by dim."""
        from .. import ops
        from ._aten import aten_op
        if any(i is Ellipsis for i in index):
            at = index.index(Ellipsis)
            explicit = sum(i is not None for i in index) - 1
            index = index[:at] + (slice(None),) * (value.value.dim() - explicit) + index[at + 1:]
        dim = 0
        for i in index:
            if i is None:
                value = self._record(ops.aten.unsqueeze.default, "unsqueeze", (value, dim), {})
                dim += 1
            elif isinstance(i, slice):
                if i == slice(None):
                    dim += 1
                    continue
                start = i.start
                end = 9223372036854775807 if i.stop is None else i.stop
                args, _ = aten_op("slice", "Tensor").normalize(
                    (value, dim, start, end, 1 if i.step is None else i.step), {})
                value = self._record(ops.aten.slice.Tensor, "slice", args, {})
                dim += 1
            elif isinstance(i, int) and not isinstance(i, bool):
                value = self._record(ops.aten.select.int, "select", (value, dim, i), {})
            else:
                raise NotImplementedError("torch.export in tapegrad records indexing by ints, "
                                          "slices, None and ... only")
        return value

    # -- outputs ----------------------------------------------------------------------------------
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        if kind == "output":
            from ..utils._pytree import tree_flatten
            leaves, self.out_spec = tree_flatten(args[0])
            for leaf in leaves:
                from ..fx import Node
                argument = TensorArgument(leaf.name) if isinstance(leaf, Node) else \
                    ConstantArgument("", leaf)
                self.output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, argument, None))
            args = (tuple(leaves),)
        return super().create_node(kind, target, args, kwargs, name, type_expr)

    def trace_export(self):
        self.constants = {}
        graph = self.trace(self.export_root)
        # sizes only the forward's Python looked at (`if x.size(0) > 1`) are not kept, as in
        # PyTorch's graph (an unused tensor op is)
        from .. import Tensor
        graph.eliminate_dead_code(lambda node: node.op != "call_function"
                                  or isinstance(node.meta.get("val"), (Tensor, list, tuple)))
        return graph
