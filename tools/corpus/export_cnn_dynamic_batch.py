"""torch.export of a small CNN with a dynamic batch: Dim ranges, the symbolic shapes and
sym_size nodes export records, running the exported module at other batch sizes, Dim.AUTO,
range violations, and the core-aten program run_decompositions gives."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export

torch.manual_seed(0)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        h = self.pool(F.relu(self.bn1(self.conv1(x))))
        h = F.relu(self.conv2(h))
        h = h.view(h.size(0), -1)
        h = self.drop(F.relu(self.fc1(h)))
        logits = self.fc2(h)
        return logits.log_softmax(dim=1), logits.max(dim=1).values


model = SmallCNN().eval()
# give the batch norm some statistics
with torch.no_grad():
    model.bn1.running_mean.uniform_(-0.1, 0.1)
    model.bn1.running_var.uniform_(0.9, 1.1)

batch = Dim("batch", min=2, max=128)
x = torch.randn(4, 1, 16, 16)
ep = export(model, (x,), dynamic_shapes={"x": {0: batch}})
print(ep.graph_module.code)
print(ep.graph_signature)
print("range constraints:", ep.range_constraints)
for node in ep.graph.nodes:
    if node.op == "call_function":
        print(f"{node.name:>24}  {node.target}")

exported = ep.module()
for n in (2, 3, 17, 128):
    inp = torch.randn(n, 1, 16, 16)
    got, want = exported(inp), model(inp)
    print(n, tuple(got[0].shape), torch.allclose(got[0], want[0], atol=1e-6),
          torch.allclose(got[1], want[1], atol=1e-6))

for bad in (torch.randn(129, 1, 16, 16), torch.randn(4, 1, 15, 16)):
    try:
        exported(bad)
    except Exception as e:
        print(type(e).__name__ + ":", e)

# an example outside the declared range
try:
    export(model, (torch.randn(200, 1, 16, 16),), dynamic_shapes={"x": {0: batch}})
except Exception as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])

# a batch of 1 is specialised, so it cannot be dynamic
try:
    export(model, (torch.randn(1, 1, 16, 16),), dynamic_shapes={"x": {0: batch}})
except Exception as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])


class Pair(nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b], dim=0).sum(dim=1), a * b


ep_auto = export(Pair(), (torch.randn(3, 5), torch.randn(3, 5)),
                 dynamic_shapes={"a": {0: Dim.AUTO}, "b": {0: Dim.AUTO}})
print(ep_auto.graph_module.code)
print("auto range constraints:", ep_auto.range_constraints)
out = ep_auto.module()(torch.ones(6, 5), torch.ones(6, 5))
print(tuple(out[0].shape), tuple(out[1].shape))

decomposed = ep.run_decompositions()
print(decomposed.graph_module.code)
inp = torch.randn(5, 1, 16, 16)
print("decomposed matches:", torch.allclose(decomposed.module()(inp)[0], model(inp)[0], atol=1e-6))
