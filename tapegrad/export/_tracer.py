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
from ..fx.node import _public_table, map_aggregate
from ..fx.proxy import Proxy
from . import _lowering
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
    """A Proxy that knows its value on the example inputs."""

    def __init__(self, node, tracer, value):
        super().__init__(node, tracer)
        self.value = value

    def __repr__(self):
        return f"ValueProxy({self.node.name})"

    def __getattr__(self, k):
        if k in _METADATA:
            return getattr(self.value, k)
        return super().__getattr__(k)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self.value)))

    def __bool__(self):
        raise _data_dependent(self.tracer)

    __int__ = __float__ = __index__ = __bool__

    def item(self):
        raise _data_dependent(self.tracer)

    tolist = item


def _value(a):
    return map_aggregate(a, lambda x: x.value if isinstance(x, ValueProxy) else x)


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

    def __init__(self, root, args, kwargs):
        super().__init__()
        self.example_args = tuple(args)
        self.example_kwargs = dict(kwargs or {})
        self.lifted = {}               # id(tensor) -> its placeholder's ValueProxy
        self.input_specs = []
        self.output_specs = []
        self.out_spec = None
        self.user_input_names = []
        self.unbacked_count = 0
        self.export_root = root
        from ._aten import aten_names
        aten_names()          # the kernels are looked up before the trace patches torch.*

    # -- inputs ----------------------------------------------------------------------------------
    def _placeholder(self, name, value):
        node = self.graph.placeholder(name)
        node.meta["val"] = value
        proxy = ValueProxy(node, self, value)
        return proxy

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        from .. import Tensor
        root = self.export_root
        buffers = dict(root.named_buffers())
        non_persistent = {name for name in buffers if name not in root.state_dict()}
        for name, param in root.named_parameters():
            node_name = "p_" + name.replace(".", "_")
            self.lifted[id(param)] = self._placeholder(node_name, param)
            self.input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node_name), name))
        for name, buf in buffers.items():
            node_name = "b_" + name.replace(".", "_")
            self.lifted[id(buf)] = self._placeholder(node_name, buf)
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
                return self._placeholder(name, value)
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
        lowered = _lowering.lower(call, args, kwargs)
        if lowered is None:
            raise NotImplementedError(f"torch.export in tapegrad does not record {call} yet")
        aten, overload, args, kwargs = lowered
        if aten == "index_chain":
            return self._index(*args)
        if callable(aten):                       # operator.getitem on an op's list of results
            return self._record(aten, "getitem", args, kwargs)
        from .. import ops
        op = getattr(getattr(ops.aten, aten), overload)
        from ._aten import aten_op
        args, kwargs = aten_op(aten, overload).normalize(args, kwargs)
        return self._record(op, aten, args, kwargs)

    def _record(self, target, name, args, kwargs):
        import tapegrad
        with tapegrad.no_grad():
            value = target(*_value(args), **_value(kwargs))
        node = self.create_node("call_function", target, self.create_arg(args),
                                self.create_arg(kwargs), name)
        node.meta["val"] = value
        return ValueProxy(node, self, value)

    def _index(self, value, index):
        """x[i, a:b, None, ...] as aten.select / aten.slice / aten.unsqueeze, dim by dim."""
        from .. import ops
        from ._aten import aten_op
        if any(i is Ellipsis for i in index):
            at = index.index(Ellipsis)
            rest = len(index) - at - 1
            explicit = sum(i is not None for i in index) - 1
            index = index[:at] + (slice(None),) * (value.value.dim() - explicit) + index[at + 1:]
            del rest
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
        return self.trace(self.export_root)
