"""torch.export tutorial, the basics: export a module, read its graph, signature and state,
run ExportedProgram.module(), see the guards and the errors export gives, save and load."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export

torch.manual_seed(0)


class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(100, 10)

    def forward(self, x, y):
        return F.relu(self.lin(x + y), inplace=True)


mod = MyModule()
example_args = (torch.randn(8, 100), torch.randn(8, 100))
ep = export(mod, example_args)
print(type(ep).__name__)
print(ep.graph_module.code)
print(ep.graph)
print(ep.graph_signature)
print("user inputs:", ep.graph_signature.user_inputs)
print("parameters:", ep.graph_signature.parameters)
print("user outputs:", ep.graph_signature.user_outputs)
print("state_dict:", {k: tuple(v.shape) for k, v in ep.state_dict.items()})
print("range constraints:", ep.range_constraints)
targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
print("call_function targets:", targets)

x, y = torch.randn(8, 100), torch.randn(8, 100)
out = ep.module()(x, y)
print("module() matches eager:", torch.allclose(out, mod(x, y)), tuple(out.shape))

# the exported module is specialised to the example's shapes
try:
    ep.module()(torch.randn(3, 100), torch.randn(3, 100))
except Exception as e:
    print(type(e).__name__ + ":", e)


# a branch on a tensor's value cannot be exported
class Bad(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.sin()
        return x.cos()


try:
    export(Bad(), (torch.randn(3, 3),))
except Exception as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])


# control flow on shapes is fine: the shape is a constant of the export
class ShapeBranch(nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x * 2
        return x + 1


ep_shape = export(ShapeBranch(), (torch.randn(4, 2),))
print(ep_shape.graph_module.code)

# dynamic batch
batch = Dim("batch", min=2, max=64)
ep_dyn = export(mod, example_args, dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
print(ep_dyn.graph_module.code)
print("range constraints:", ep_dyn.range_constraints)
for n in (2, 5, 64):
    a, b = torch.randn(n, 100), torch.randn(n, 100)
    print(n, torch.allclose(ep_dyn.module()(a, b), mod(a, b)))
try:
    ep_dyn.module()(torch.randn(65, 100), torch.randn(65, 100))
except Exception as e:
    print(type(e).__name__ + ":", e)

# a dynamic dim the code fixes
try:
    export(ShapeBranch(), (torch.randn(4, 2),), dynamic_shapes={"x": {0: Dim("n")}})
    print("exported")
except Exception as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])

# save and load
path = os.path.join(tempfile.mkdtemp(), "mymodule.pt2")
torch.export.save(ep, path)
loaded = torch.export.load(path)
print("loaded matches:", torch.allclose(loaded.module()(x, y), mod(x, y)))
print(loaded.graph_signature.user_inputs, loaded.graph_signature.user_outputs)

print(ep.run_decompositions().graph_module.code)
