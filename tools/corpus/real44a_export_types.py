"""Export walkthrough that prints the types of what torch.export hands back, as export tutorials
do: the ExportedProgram, its graph, signature and unlifted module, and a dynamic Dim."""
import torch
import torch.nn as nn


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model = TinyMLP().eval()
example = (torch.ones(3, 4),)
batch = torch.export.Dim("batch")
exported = torch.export.export(model, example, dynamic_shapes={"x": {0: batch}})

print("ExportedProgram type:", type(exported))
print("is ExportedProgram:", isinstance(exported, torch.export.ExportedProgram))
print("graph type:", type(exported.graph))
print("signature type:", type(exported.graph_signature))
print("Dim type:", type(batch))
print("user inputs:", exported.graph_signature.user_inputs)
print("parameters:", exported.graph_signature.parameters)

module = exported.module()
print("unlifted module is an nn.Module:", isinstance(module, nn.Module))
print("node kinds:", sorted({n.op for n in exported.graph.nodes}))
print("node class:", type(next(iter(exported.graph.nodes))))

for rows in (1, 5):
    x = torch.linspace(-1, 1, rows * 4).reshape(rows, 4)
    with torch.no_grad():
        eager, lowered = model(x), module(x)
    print(rows, tuple(lowered.shape), lowered.dtype, torch.allclose(eager, lowered, atol=1e-6))
