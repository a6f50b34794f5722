"""torch.fx.subgraph_rewriter: replace every occurrence of a pattern in a GraphModule's graph by a
replacement (both functions or GraphModules, traced), as PyTorch's replace_pattern."""
from __future__ import annotations as _annotations

from typing import NamedTuple

from .graph_module import GraphModule
from .node import Node
from .passes.utils.matcher_utils import SubgraphMatcher

__all__ = ["Match", "ReplacedPatterns", "replace_pattern", "replace_pattern_with_filters"]


class Match(NamedTuple):
    anchor: Node
    nodes_map: dict


class ReplacedPatterns(NamedTuple):
    anchor: Node
    nodes_map: dict
    replacements: list


def _graph_of(fn_or_module):
    from ._symbolic_trace import symbolic_trace
    if isinstance(fn_or_module, GraphModule):
        return fn_or_module.graph
    return symbolic_trace(fn_or_module).graph


def replace_pattern(gm, pattern, replacement):
    """Replace each non-overlapping match of `pattern` in `gm`'s graph by `replacement`; the
    matches, as Match(anchor, nodes_map)."""
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map)
            for m in _replace_pattern(gm, pattern, replacement)]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None,
                                 ignore_literals=False, replacement_callback=None):
    """replace_pattern keeping only the matches every filter accepts
    (filter(match, original_graph, pattern_graph) -> bool)."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals,
                            replacement_callback)


def _replace_pattern(gm, pattern, replacement=None, match_filters=None, ignore_literals=False,
                     replacement_callback=None):
    original_graph = gm.graph
    pattern_graph = _graph_of(pattern)
    matcher = SubgraphMatcher(pattern_graph, match_output=False, match_placeholder=False,
                              remove_overlapping_matches=True, ignore_literals=ignore_literals)
    matches = [m for m in matcher.match(original_graph)
               if all(f(m, original_graph, pattern_graph) for f in (match_filters or []))]
    common_replacement_graph = None if replacement is None else _graph_of(replacement)

    replaced_by = {}         # a returning node already replaced -> its replacement
    results = []
    for match in matches:
        if replacement_callback is not None:
            replacement_graph = replacement_callback(match, original_graph, pattern_graph)
        elif common_replacement_graph is None:
            raise ValueError("Must provide either a replacement GraphModule or a replacement callback")
        else:
            replacement_graph = common_replacement_graph
        replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(match.placeholder_nodes) != len(replacement_placeholders):
            raise AssertionError("the pattern and the replacement take different numbers of inputs")
        # the replacement's inputs are what the pattern's inputs matched (or what replaced them)
        val_map = {}
        for rn, gn in zip(replacement_placeholders, match.placeholder_nodes):
            if isinstance(gn, Node):
                val_map[rn] = replaced_by.get(gn, gn)
                if gn is not val_map[rn]:
                    pn = next(k for k, v in match.nodes_map.items() if v is gn)
                    match.nodes_map[pn] = val_map[rn]
            else:
                val_map[rn] = gn
        # insert the copy before the first user of the match's outputs, so its uses stay after it
        users = {u for n in match.returning_nodes for u in n.users}
        first_user = next((n for n in original_graph.nodes if n in users), None)
        with original_graph.inserting_before(first_user):
            copied = original_graph.graph_copy(replacement_graph, val_map)
        copied = (copied,) if isinstance(copied, Node) else tuple(copied)
        replacements = [v for v in val_map.values() if v not in match.placeholder_nodes]
        if len(match.returning_nodes) != len(copied):
            raise AssertionError("the pattern and the replacement return different numbers of values")
        for gn, new in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(new)
            replaced_by[gn] = new
        for pn in reversed(pattern_graph.nodes):
            if pn.op not in ("placeholder", "output"):
                original_graph.erase_node(match.nodes_map[pn])
        results.append(ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map,
                                        replacements=replacements))
    gm.recompile()
    from ..nn import Module
    if isinstance(replacement, Module):
        _copy_replacement_attributes(gm, replacement)
    return results


def _copy_replacement_attributes(gm, replacement):
    """The submodules and attributes the replacement's get_attr / call_module nodes read,
    copied into gm where gm lacks them."""
    from .graph_module import _copy_attr
    for node in gm.graph.nodes:
        if node.op in ("call_module", "get_attr"):
            try:
                gm.get_submodule(node.target) if node.op == "call_module" else _lookup(gm, node.target)
            except AttributeError:
                _copy_attr(replacement, gm, node.target)


def _lookup(module, target):
    for atom in target.split("."):
        module = getattr(module, atom)
    return module
