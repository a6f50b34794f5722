"""tapegrad.utils.viz.graph: the recorded graph as DOT source, checked structurally (node labels,
edges) on the autograd tutorial's examples; PyTorch's grad_fn graph draws identically."""
import re
import sys

import pytest

import tapegrad
from tapegrad.utils.viz import graph

_NODE = re.compile(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)", fillcolor=(\w+)')
_EDGE = re.compile(r"^\s*(n\d+) -> (n\d+)( \[style=dashed\])?;$")


def parse(dot):
    """{node: (label lines, color)} and [(tail label, head label, dashed)] of graph()'s DOT."""
    assert dot.startswith("digraph tape {\n") and dot.endswith("}\n")
    nodes, edges = {}, []
    for line in dot.splitlines()[1:-1]:
        m = _NODE.match(line)
        if m:
            nodes[m.group(1)] = (tuple(m.group(2).replace('\\"', '"').split("\\n")), m.group(3))
            continue
        m = _EDGE.match(line)
        if m:
            edges.append((m.group(1), m.group(2), bool(m.group(3))))
    labels = {k: v[0] for k, v in nodes.items()}
    named_edges = sorted((labels[a][0], labels[b][0], dashed) for a, b, dashed in edges)
    return nodes, named_edges


def square_example(T):
    x = T.tensor([1.], requires_grad=True)
    y = x ** 2
    return graph(y, {"x": x, "y": y})


def retain_grad_example(T):
    x = T.tensor([1.], requires_grad=True)
    y = x ** 2
    y.retain_grad()
    z = 3 * y
    return graph(z, {"x": x, "y": y, "z": z})


def test_square_example():
    nodes, edges = parse(square_example(tapegrad))
    labels = sorted(v for v in nodes.values())
    assert labels == [(("PowBackward0", "(1,)"), "lightgrey"),
                      (("x", "(1,) float32", "AccumulateGrad"), "lightblue"),
                      (("y", "(1,) float32"), "darkolivegreen1")]
    assert edges == [("PowBackward0", "y", True), ("x", "PowBackward0", False)]


def test_retain_grad_example_marks_the_retained_tensor():
    nodes, edges = parse(retain_grad_example(tapegrad))
    by_name = {v[0][0]: v for v in nodes.values()}
    assert by_name["y"] == (("y", "(1,) float32", "retains_grad"), "lightgoldenrod1")
    assert by_name["z"] == (("z", "(1,) float32"), "darkolivegreen1")
    assert by_name["MulBackward0"][0] == ("MulBackward0", "(1,)")
    assert edges == [("MulBackward0", "z", True), ("PowBackward0", "MulBackward0", False),
                     ("PowBackward0", "y", True), ("x", "PowBackward0", False)]


def test_argmax_has_no_graph():
    x = tapegrad.tensor([1.], requires_grad=True)
    nodes, edges = parse(graph(x.argmax()))
    assert list(nodes.values()) == [(("output", "() int64", "requires_grad=False"),
                                     "darkolivegreen1")]
    assert edges == []


def test_three_ways_to_stop_gradients():
    x = tapegrad.tensor([1.], requires_grad=True)
    y = x ** 2
    x.requires_grad = False         # y was recorded before: its graph stays
    assert [v[0][0] for v in parse(graph(y))[0].values()] == ["PowBackward0", "output",
                                                             "(1,) float32"]
    x = tapegrad.tensor([1.], requires_grad=True)
    for stopped in (x.detach() ** 2, _under_no_grad(x)):
        nodes, edges = parse(graph(stopped))
        assert [v[0] for v in nodes.values()] == [("output", "(1,) float32",
                                                   "requires_grad=False")]
    nodes, _ = parse(graph(x, {"x": x}))
    assert list(nodes.values()) == [(("x", "(1,) float32", "leaf, requires_grad"),
                                     "darkolivegreen1")]


def _under_no_grad(x):
    with tapegrad.no_grad():
        return x ** 2


def two_roots_example(T):
    w = T.ones(3, 2, requires_grad=True)
    h = (w * w).sum(1)
    a, b = h.mean(), h.exp().sum()
    return graph([a, b], {"w": w, "h": h})


def test_shared_input_and_several_roots():
    nodes, edges = parse(two_roots_example(tapegrad))
    names = sorted(v[0][0] for v in nodes.values())
    assert names == ["ExpBackward0", "MeanBackward0", "MulBackward0", "SumBackward0",
                     "SumBackward1", "h", "output 0", "output 1", "w"]
    # each node is drawn once; w feeds the product twice (w * w), as next_functions says
    assert edges.count(("w", "MulBackward0", False)) == 2
    assert ("SumBackward1", "h", True) in edges


def test_deep_graph_needs_no_recursion():
    x = tapegrad.tensor(1., requires_grad=True)
    y = x
    for _ in range(sys.getrecursionlimit() + 100):
        y = y * 1.0
    nodes, edges = parse(graph(y))
    assert len(nodes) == sys.getrecursionlimit() + 100 + 2


def test_custom_function_node():
    class Double(tapegrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = tapegrad.ones(2, 3, requires_grad=True)
    nodes, _ = parse(graph(Double.apply(x)))
    labels = [v[0] for v in nodes.values()]
    # The custom node's next_functions lead the walk on to its input, as in PyTorch.
    assert ("DoubleBackward", "(2, 3)") in labels
    assert ("(2, 3) float32", "AccumulateGrad") in labels


def test_labels_are_escaped():
    x = tapegrad.tensor([1.], requires_grad=True)
    dot = graph(x * 2, {'a "quoted" \\ name': x})
    nodes, _ = parse(dot)
    assert ('a "quoted" \\\\ name', "(1,) float32", "AccumulateGrad") in [
        v[0] for v in nodes.values()]


def test_bad_arguments():
    with pytest.raises(TypeError, match="expects a Tensor or a sequence of Tensors"):
        graph([1.0])
    with pytest.raises(TypeError, match="named must be a mapping"):
        graph(tapegrad.ones(1), [tapegrad.ones(1)])


def test_render_without_graphviz_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)      # import graphviz -> ImportError
    with pytest.raises(ImportError, match="'graphviz' Python package"):
        graph(tapegrad.ones(1), format="svg")


@pytest.mark.parametrize("example", [square_example, retain_grad_example,
                                     two_roots_example])
def test_pytorch_graph_draws_the_same(torch, example):
    assert example(tapegrad) == example(torch)
