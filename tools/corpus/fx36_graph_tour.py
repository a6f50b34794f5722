"""torch.fx tour: trace a small MLP and a model with functional calls, print the graph, the
tabular view (or its hint when tabulate is missing), each node, the generated code, and shapes
from ShapeProp; a profiling Interpreter counts calls; control flow on a traced value is refused."""
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        self.scale = nn.Parameter(torch.tensor([1.0, 2.0, 0.5]))

    def forward(self, x):
        h = self.layers(x) * self.scale
        h = F.log_softmax(h, dim=-1)
        return h.max(dim=1).values + x.shape[1] - torch.cat([h, h], 1).mean()


model = MLP()
gm = torch.fx.symbolic_trace(model)
print(gm.graph)
try:
    gm.graph.print_tabular()
except ImportError as e:
    print("ImportError:", e)
for node in gm.graph.nodes:
    print(f"{node.op:14s} {node.name:12s} args={node.args} kwargs={node.kwargs} "
          f"users={[u.name for u in node.users]}")
print(gm.code)
print(gm)

x = torch.randn(5, 4)
print(torch.allclose(gm(x), model(x)))
ShapeProp(gm).propagate(x)
for node in gm.graph.nodes:
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        print(node.name, tuple(meta.shape), meta.dtype)


class Counter(torch.fx.Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.counts = {}

    def run_node(self, n):
        self.counts[n.op] = self.counts.get(n.op, 0) + 1
        return super().run_node(n)


counter = Counter(gm)
out = counter.run(x)
print(sorted(counter.counts.items()), out.shape)

xg = x.clone().requires_grad_()
gm(xg).sum().backward()
xr = x.clone().requires_grad_()
model(xr).sum().backward()
print(torch.allclose(xg.grad, xr.grad), xg.grad.abs().sum().item() > 0)


def branchy(x):
    if x.sum() > 0:
        return x
    return -x


try:
    torch.fx.symbolic_trace(branchy)
except Exception as e:
    print(type(e).__name__, e)
