"""torch.fx tour that prints what symbolic tracing returns (types of the traced module, its graph
and nodes), walks the graph with an Interpreter subclass that counts calls, and compiles."""
import abc
import collections

import torch
import torch.fx as fx
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
traced = fx.symbolic_trace(net)

print(type(traced))
print(type(traced.graph), isinstance(traced, fx.GraphModule), isinstance(traced, nn.Module))
for node in traced.graph.nodes:
    print(f"{node.op:13s} {node.name:8s} {type(node).__name__}")
print(fx.Graph, fx.Node, fx.Tracer, fx.Interpreter)


class Counting(fx.Interpreter, abc.ABC):
    """Counts each node kind it runs (a user's subclass keeps its own printed name)."""

    def run_node(self, n):
        self.counts[n.op] += 1
        return super().run_node(n)


counter = Counting(traced)
counter.counts = collections.Counter()
x = torch.linspace(0, 1, 6).reshape(2, 3)
out = counter.run(x)
print(type(counter).__name__, dict(sorted(counter.counts.items())))
print(torch.allclose(out, net(x)), tuple(out.shape))

compiled = torch.compile(net)
print(type(compiled))
print(torch.allclose(compiled(x), net(x)), [k for k in compiled.state_dict()][:2])
