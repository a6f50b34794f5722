"""ExportedProgram.run_decompositions: aten ops rewritten into the core aten ops PyTorch's default
table lowers them to.  Only aten.linear on 2-d inputs is decomposed (permute + addmm, or mm
without a bias), as PyTorch decomposes it; every other op is kept."""
from __future__ import annotations as _annotations

import copy

__all__ = ["decompose"]


def _linear(graph, node):
    from .. import ops
    x, weight, *rest = node.args
    bias = rest[0] if rest else None
    if x.meta["val"].dim() != 2:
        return None
    permute = graph.create_node("call_function", ops.aten.permute.default, (weight, [1, 0]), name="permute")
    permute.meta["val"] = weight.meta["val"].t()
    if bias is None:
        out = graph.create_node("call_function", ops.aten.mm.default, (x, permute), name="mm")
    else:
        out = graph.create_node("call_function", ops.aten.addmm.default, (bias, x, permute), name="addmm")
    out.meta["val"] = node.meta["val"]
    return out


_DECOMPOSITIONS = {"aten.linear.default": _linear}


def decompose(graph_module, decomp_table=None):
    from ..fx import GraphModule
    module = copy.deepcopy(graph_module)
    graph = module.graph
    for node in list(graph.nodes):
        rule = _DECOMPOSITIONS.get(str(node.target)) if node.op == "call_function" else None
        if rule is None:
            continue
        with graph.inserting_before(node):
            replacement = rule(graph, node)
        if replacement is not None:
            node.replace_all_uses_with(replacement)
            graph.erase_node(node)
    return GraphModule(module, graph, "GraphModule")
