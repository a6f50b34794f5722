"""torch.export.save / load: an ExportedProgram in a file tapegrad reads back (tapegrad's own
format, not PyTorch's .pt2 archive).

The program is written as plain data (strings, numbers, lists, dicts) and tensors, through
tapegrad.save, so load reads it with the weights-only unpickler: nothing in the file can run code.
Nodes are records [op, name, target, args, kwargs, meta]; a node argument is {"node": name}; a
target is "aten.<name>.<overload>" or "operator.<name>".
"""
from __future__ import annotations as _annotations

import operator

__all__ = ["save", "load"]

_FORMAT = "tapegrad.export/1"


def _target_name(target):
    from .._ops import OpOverload
    if isinstance(target, OpOverload):
        return f"aten.{target._opname}.{target._overloadname}"
    if getattr(target, "__module__", None) == "_operator":
        return f"operator.{target.__name__}"
    raise NotImplementedError(f"torch.export.save: cannot save a call of {target!r}")


def _target(name):
    from .. import ops
    space, _, rest = name.partition(".")
    if space == "operator":
        return getattr(operator, rest)
    opname, _, overload = rest.partition(".")
    return getattr(getattr(ops.aten, opname), overload)


def _encode_arg(a):
    from ..fx import Node
    from ..fx.node import map_aggregate
    return map_aggregate(a, lambda x: {"node": x.name} if isinstance(x, Node) else x)


def _decode_arg(a, env):
    if isinstance(a, dict) and set(a) == {"node"}:
        return env[a["node"]]
    if isinstance(a, (list, tuple)):
        return type(a)(_decode_arg(x, env) for x in a)
    return a


def _encode_meta(node):
    from .. import Tensor
    value = node.meta.get("val")
    meta = {k: node.meta[k] for k in ("sym_shape", "sym_int") if k in node.meta}
    if isinstance(value, Tensor):
        meta["shape"] = list(value.shape)
        meta["dtype"] = str(value.dtype).removeprefix("torch.")
    elif isinstance(value, (int, float, bool)):
        meta["value"] = value
    elif isinstance(value, (list, tuple)):
        meta["length"] = len(value)
    return meta


def _decode_meta(meta):
    import tapegrad
    decoded = {k: meta[k] for k in ("sym_shape", "sym_int") if k in meta}
    if "shape" in meta:       # a value of the right shape and dtype, for printing and passes
        decoded["val"] = tapegrad.empty(meta["shape"], dtype=getattr(tapegrad, meta["dtype"]))
    elif "value" in meta:
        decoded["val"] = meta["value"]
    elif "length" in meta:
        decoded["val"] = [None] * meta["length"]
    return decoded


def save(ep, f):
    import tapegrad
    from ..utils._pytree import tree_unflatten
    nodes = []
    for node in ep.graph.nodes:
        target = node.target if node.op in ("placeholder", "output") else _target_name(node.target)
        nodes.append([node.op, node.name, target, _encode_arg(node.args), _encode_arg(node.kwargs),
                      _encode_meta(node)])
    signature = ep.graph_signature
    data = {
        "format": _FORMAT,
        "nodes": nodes,
        "inputs": [[s.kind.name, s.arg.name, _constant(s.arg), s.target, s.persistent]
                   for s in signature.input_specs],
        "outputs": [[s.kind.name, s.arg.name, _constant(s.arg), s.target]
                    for s in signature.output_specs],
        "state_dict": dict(ep.state_dict),
        "constants": dict(ep.constants),
        "range_constraints": {str(symbol): [r.lower, r.upper] for symbol, r in ep.range_constraints.items()},
        "in_names": list(ep._in_names),
        # the outputs' nest with None for each leaf (None is a pytree leaf)
        "out_structure": tree_unflatten([None] * ep._out_spec.num_leaves, ep._out_spec),
        "guards": [g.as_data() for g in ep._guards],
    }
    tapegrad.save(data, f)


def _constant(arg):
    from .graph_signature import ConstantArgument
    return [arg.value] if isinstance(arg, ConstantArgument) else None


def load(f):
    import tapegrad
    from ..fx import Graph, GraphModule
    from ..utils._pytree import tree_flatten
    from .exported_program import ExportedProgram, Guard
    from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec,
                                  OutputKind, OutputSpec, TensorArgument)
    data = tapegrad.load(f)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise RuntimeError("torch.export.load: the file is not an ExportedProgram saved by "
                           "tapegrad's torch.export.save")
    graph = Graph()
    env = {}
    for op, name, target, args, kwargs, meta in data["nodes"]:
        args, kwargs = _decode_arg(args, env), _decode_arg(kwargs, env)
        if op not in ("placeholder", "output"):
            target = _target(target)
        node = graph.create_node(op, target, tuple(args), dict(kwargs), name)
        node.meta.update(_decode_meta(meta))
        env[name] = node

    def argument(name, constant):
        return ConstantArgument(name, constant[0]) if constant is not None else TensorArgument(name)

    inputs = [InputSpec(InputKind[kind], argument(name, constant), target, persistent)
              for kind, name, constant, target, persistent in data["inputs"]]
    outputs = [OutputSpec(OutputKind[kind], argument(name, constant), target)
               for kind, name, constant, target in data["outputs"]]
    _leaves, out_spec = tree_flatten(data["out_structure"])
    from .dynamic_shapes import Symbol, ValueRanges
    ranges = {Symbol(symbol): ValueRanges(*bounds) for symbol, bounds in data["range_constraints"].items()}
    return ExportedProgram(GraphModule({}, graph, "GraphModule"), ExportGraphSignature(inputs, outputs),
                           data["state_dict"], data["constants"], ranges,
                           data["in_names"], out_spec, [Guard(*g) for g in data["guards"]], None)
