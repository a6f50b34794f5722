"""ExportedProgram.run_decompositions: the aten ops export records rewritten into the core aten
ops PyTorch's default decomposition table lowers them to (aten.linear -> permute + addmm,
aten.conv2d -> convolution, aten.batch_norm in eval -> _native_batch_norm_legit_no_training,
...).  An op with no rule here is kept, as PyTorch keeps a core op.

A rule takes the node's arguments (nodes, whose meta["val"] holds the example values) and
returns the replacement as a list of steps (aten name, overload, args, kwargs); `Previous` in a
step's args is the step before; a step "getitem" takes an item of the step before.
"""
from __future__ import annotations as _annotations

import copy

from ._lowering import Previous

__all__ = ["decompose"]


def _val(node):
    return node.meta["val"]


def _linear(x, weight, bias=None):
    if _val(x).dim() != 2:
        return None
    permute = ("permute", "default", (weight, [1, 0]), {})
    if bias is None:
        return [permute, ("mm", "default", (x, Previous), {})]
    return [permute, ("addmm", "default", (bias, x, Previous), {})]


def _convolution(size):
    def rule(x, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
        def expand(v):
            v = list(v)
            return v * size if len(v) == 1 else v
        return [("convolution", "default", (x, weight, bias, expand(stride), expand(padding),
                                             expand(dilation), False, [0] * size, groups), {})]
    return rule


def _batch_norm(x, weight, bias, mean, var, training, momentum, eps, cudnn_enabled):
    if training:
        return None
    return [("_native_batch_norm_legit_no_training", "default", (x, weight, bias, mean, var, momentum, eps), {}),
            ("getitem", None, (Previous, 0), {})]


def _max_pool2d(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return [("max_pool2d_with_indices", "default", (x, kernel_size, stride, padding, dilation, ceil_mode), {}),
            ("getitem", None, (Previous, 0), {})]


def _as_view(x, *unused, out=None):
    return [("view", "default", (x, list(_val(out).shape)), {})]


def _reshape(x, shape):
    return [("view", "default", (x, shape), {})]


def _dropout(x, p, train):
    if train:
        return None
    return [("clone", "default", (x,), {})]


def _softmax(aten):
    def rule(x, dim, dtype=None):
        return None if dtype is not None else [(aten, "default", (x, dim, False), {})]
    return rule


def _matmul(x, other):
    if _val(x).dim() == 2 and _val(other).dim() == 2:
        return [("mm", "default", (x, other), {})]
    return None


def _transpose(x, dim0, dim1):
    dims = list(range(_val(x).dim()))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return [("permute", "default", (x, dims), {})]


def _chunk(x, chunks, dim=0, out=None):
    return [("split_with_sizes", "default", (x, [p.shape[dim] for p in _val(out)], dim), {})]


_RULES = {
    "aten.linear.default": _linear,
    "aten.conv1d.default": _convolution(1),
    "aten.conv2d.default": _convolution(2),
    "aten.batch_norm.default": _batch_norm,
    "aten.max_pool2d.default": _max_pool2d,
    "aten.flatten.using_ints": _as_view,
    "aten.reshape.default": _reshape,
    "aten.dropout.default": _dropout,
    "aten.softmax.int": _softmax("_softmax"),
    "aten.log_softmax.int": _softmax("_log_softmax"),
    "aten.matmul.default": _matmul,
    "aten.t.default": lambda x: [("permute", "default", (x, [1, 0]), {})],
    "aten.transpose.int": _transpose,
    "aten.chunk.default": _chunk,
}
_NEEDS_OUTPUT = (_as_view, _chunk)       # rules that read the node's own value


def _steps(rule, node):
    if rule in _NEEDS_OUTPUT:
        return rule(*node.args, **node.kwargs, out=node)
    return rule(*node.args, **node.kwargs)


def _emit(graph, steps):
    """Nodes for the steps (before the current insertion point); the last one."""
    import operator

    from .. import ops
    from ._aten import aten_op
    from ..fx.graph import _snake_case
    previous = None
    for aten, overload, args, kwargs in steps:
        args = tuple(previous if a is Previous else a for a in args)
        values = [a.meta["val"] if hasattr(a, "meta") else a for a in args]
        if aten == "getitem":
            node = graph.create_node("call_function", operator.getitem, args, {}, name="getitem")
            node.meta["val"] = values[0][values[1]]
        else:
            op = aten_op(aten, overload)
            args, kwargs = op.normalize(args, kwargs)
            target = getattr(getattr(ops.aten, aten), overload)
            node = graph.create_node("call_function", target, args, kwargs, name=_snake_case(aten))
            import tapegrad
            with tapegrad.no_grad():
                node.meta["val"] = op(*[a.meta["val"] if hasattr(a, "meta") else a for a in args],
                                      **kwargs)
        previous = node
    return previous


def _functional_twin(node):
    """relu_ -> relu when nothing but this op reads the value it overwrites (so no view or later
    reader could see the difference); an input's or buffer's mutation stays in place."""
    from .._ops import OpOverload
    from ._aten import aten_op
    target = node.target
    if not isinstance(target, OpOverload) or not target._opname.endswith("_"):
        return None
    mutated = node.args[0]
    if mutated.op == "placeholder" or len(mutated.users) != 1:
        return None
    name = target._opname[:-1]
    if aten_op(name, target._overloadname) is None:
        return None
    return [(name, target._overloadname, node.args, node.kwargs)]


def decompose(graph_module, decomp_table=None):
    """A copy of `graph_module` with each op that has a rule decomposed."""
    from ..fx import GraphModule
    module = copy.deepcopy(graph_module)
    graph = module.graph
    for node in list(graph.nodes):
        rule = _RULES.get(str(node.target).removeprefix("torch.ops.")) if node.op == "call_function" else None
        steps = _functional_twin(node) if rule is None and node.op == "call_function" else \
            None if rule is None else _steps(rule, node)
        if steps is None:
            continue
        with graph.inserting_before(node):
            replacement = _emit(graph, steps)
        for key in ("sym_shape",):
            if key in node.meta:
                replacement.meta[key] = node.meta[key]
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
    # results of several-result ops nobody reads go (PyTorch's retrace keeps only those used)
    import operator
    graph.eliminate_dead_code(lambda n: not (n.op == "call_function" and n.target is operator.getitem))
    return GraphModule(module, _renamed(graph), "GraphModule")


def _renamed(graph):
    """The graph with its calls named afresh in order, as PyTorch's retrace names them: each op
    by its name, and every result of an op returning several taking a getitem name (used or
    not), so the counters run as in PyTorch's decomposed program."""
    import operator

    from ..fx import Graph
    from ..fx.graph import _snake_case
    renamed = Graph()
    env = {}
    reserved = {}             # a tuple-returning node -> the getitem names of its results
    for node in graph.nodes:
        if node.op != "call_function":
            name = node.name
        elif node.target is operator.getitem and node.args[0] in reserved:
            name = reserved[node.args[0]][node.args[1]]
        elif getattr(node.target, "_opname", None) in (None, "sym_size"):
            name = node.name
        else:
            name = _snake_case(node.target._opname)
        taken = node.op == "call_function" and node.target is operator.getitem and node.args[0] in reserved
        new = renamed.create_node(node.op, node.target, _map(node.args, env), _map(node.kwargs, env),
                                  "_reserved" if taken else name)
        if taken:
            new.name = name               # the name reserved for this result
        new.meta = dict(node.meta)
        env[node] = new
        if node.op == "call_function" and isinstance(node.meta.get("val"), (list, tuple)):
            reserved[node] = [renamed._graph_namespace.create_name("getitem", None)
                              for _ in node.meta["val"]]
    return renamed


def _map(args, env):
    from ..fx.node import map_arg
    return map_arg(args, lambda n: env[n])
