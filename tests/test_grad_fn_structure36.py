"""The nodes behind pairwise_distance and triplet_margin_loss, walked through next_functions as
torchviz-style scripts do, are PyTorch's: its C++ adds eps and the margin as Scalars, whose
node is AddBackward1."""
import numpy as np
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _walk(fn):
    seen, names = set(), []

    def visit(node, depth):
        if node is None or node in seen:
            return
        seen.add(node)
        names.append("  " * depth + type(node).__name__)
        for nxt, _ in node.next_functions:
            visit(nxt, depth + 1)
    visit(fn, 0)
    return names


@pytest.mark.parametrize("case", ["pairwise", "triplet", "triplet_swap"])
def test_distance_losses_graph_matches_torch(case):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((4, 6)) for _ in range(3))
    graphs = []
    for m in (torch, tapegrad):
        x = m.tensor(a, requires_grad=True)
        y, z = m.tensor(b), m.tensor(c)
        if case == "pairwise":
            out = m.nn.functional.pairwise_distance(x, y).sum()
        else:
            out = m.nn.functional.triplet_margin_loss(x, y, z, swap=case == "triplet_swap")
        graphs.append(_walk(out.grad_fn))
    assert graphs[1] == graphs[0]
