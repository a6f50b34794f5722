"""torch.fx.passes.utils.matcher_utils: find the places where a pattern Graph occurs in a Graph.

A match maps each pattern node to a graph node, starting from the pattern's outputs (the
anchors) and following arguments backwards; the pattern's placeholders match any node (or
literal). A match counts only if nothing outside it uses its inner nodes, and overlapping
matches keep the first, as PyTorch's SubgraphMatcher."""
from __future__ import annotations as _annotations

import copy
import itertools
from dataclasses import dataclass, field

from ...node import Node

__all__ = ["InternalMatch", "SubgraphMatcher"]


@dataclass
class InternalMatch:
    anchors: list
    nodes_map: dict = field(default_factory=dict)
    placeholder_nodes: list = field(default_factory=list)
    returning_nodes: list = field(default_factory=list)
    name_node_map: dict = field(default_factory=dict)

    def __copy__(self):
        return InternalMatch(anchors=self.anchors, nodes_map=self.nodes_map.copy(),
                             placeholder_nodes=self.placeholder_nodes.copy(),
                             returning_nodes=self.returning_nodes.copy())


class SubgraphMatcher:
    def __init__(self, pattern, match_output=False, match_placeholder=False,
                 remove_overlapping_matches=True, ignore_literals=False):
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        if not pattern.nodes:
            raise ValueError("SubgraphMatcher cannot be initialized with an empty pattern")
        for node in pattern.nodes:
            if node.op != "output" and not node.users:
                raise AssertionError("SubgraphMatcher cannot be initialized with an pattern with dead code")
        self.pattern_placeholder_nodes = [n for n in pattern.nodes if n.op == "placeholder"]
        output_node = next(iter(reversed(pattern.nodes)))
        self.pattern_returning_nodes = list(output_node.all_input_nodes)
        if match_output:
            self.pattern_anchors = [output_node]
        else:
            # a returning node used by another returning node is reached from that one
            self.pattern_anchors = [n for n in output_node.all_input_nodes if len(n.users) == 1]

    def _match_attributes(self, pn, gn):
        pn_value = _attribute(pn.graph.owning_module, pn.target)
        gn_value = _attribute(gn.graph.owning_module, gn.target)
        return type(pn_value) is type(gn_value)

    def _nodes_are_equal(self, pn, gn):
        if not self.match_placeholder and pn.op == "placeholder":
            return True              # a pattern input matches whatever computes the value
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return self._match_attributes(pn, gn)
        return pn.target == gn.target

    def _is_contained(self, nodes_map):
        """Whether no node outside the match uses the match's inner nodes."""
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn.op == "output" or pn in self.pattern_returning_nodes:
                continue
            for user in gn.users:
                if user not in lookup:
                    return False
        return True

    def _remove_overlapping_matches(self, matches):
        non_overlapping = []
        nodes_matched = set()
        for match in matches:
            found_overlap = False
            for pn, gn in match.nodes_map.items():
                if pn.op not in ("placeholder", "output") and gn in nodes_matched:
                    found_overlap = True
                    break
            if not found_overlap:
                non_overlapping.append(match)
                for pn, gn in match.nodes_map.items():
                    if pn.op not in ("placeholder", "output"):
                        nodes_matched.add(gn)
        return non_overlapping

    def _match_literals(self, pn, gn, match):
        if isinstance(pn, Node) and not isinstance(gn, Node):
            if pn.op == "placeholder":
                if pn in match.nodes_map:
                    return match.nodes_map[pn] == gn
                match.nodes_map[pn] = gn
                return True
            return False
        if not isinstance(pn, Node) and isinstance(gn, Node):
            return False
        return type(gn) is type(pn) and gn == pn

    def _match_nodes(self, pn, gn, match):
        if pn in match.nodes_map:
            return match.nodes_map[pn] == gn
        if gn in match.nodes_map.values():
            return False             # one graph node serves one pattern node
        if not self._nodes_are_equal(pn, gn):
            return False
        saved = copy.copy(match)
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":
            return True

        def match_args(args1, args2):
            if len(args1) != len(args2):
                return False
            for a1, a2 in zip(args1, args2):
                if isinstance(a1, Node) and isinstance(a2, Node):
                    matched = self._match_nodes(a1, a2, match)
                elif isinstance(a1, (list, tuple)) and isinstance(a2, (list, tuple)):
                    matched = match_args(a1, a2)
                else:
                    matched = self._match_literals(a1, a2, match) or self.ignore_literals
                if not matched:
                    return False
            return True

        pn_args, gn_args = list(pn.args), list(gn.args)
        found = pn.kwargs.keys() == gn.kwargs.keys()
        if found:
            pn_args += [pn.kwargs[k] for k in pn.kwargs]
            gn_args += [gn.kwargs[k] for k in pn.kwargs]
        found = found and match_args(pn_args, gn_args)
        if not found:
            match.nodes_map.clear()
            match.nodes_map.update(saved.nodes_map)
            return False
        return True

    def match(self, graph):
        """The InternalMatches of the pattern in `graph`, in the graph's node order."""
        candidates = {anchor: [n for n in graph.nodes if self._nodes_are_equal(anchor, n)]
                      for anchor in self.pattern_anchors}
        matches = []
        for combination in itertools.product(*candidates.values()):
            match = InternalMatch(anchors=self.pattern_anchors)
            if all(self._match_nodes(pn, gn, match)
                   for pn, gn in zip(self.pattern_anchors, combination)):
                match.placeholder_nodes = [match.nodes_map[pn] for pn in self.pattern_placeholder_nodes]
                match.returning_nodes = [match.nodes_map[pn] for pn in self.pattern_returning_nodes]
                matches.append(match)
        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        if self.remove_overlapping_matches:
            matches = self._remove_overlapping_matches(matches)
        return matches


def _attribute(module, target):
    value = module
    for atom in target.split("."):
        value = getattr(value, atom)
    return value
