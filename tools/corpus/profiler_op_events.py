"""The profiler recipe's facts that do not depend on timing: which ops a small model's forward
and backward show as top-level events, how many calls each, input shapes with record_shapes,
nesting under record_function, self time never above total time, the table's row order and row
limit, the Chrome trace, and nothing recorded outside the profiler."""
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x = torch.randn(3, 4)
target = torch.randn(3, 2)


def top_level(prof):
    counts = {}
    for e in prof.events():
        if e.cpu_parent is None:
            counts[e.name] = counts.get(e.name, 0) + 1
    return counts


# the forward: one event per layer call, the activation and the loss
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        out = model(x)
        loss = F.mse_loss(out, target)
events = prof.events()
block = [e for e in events if e.name == "model_inference"][0]
print("blocks at top:", sorted(top_level(prof)))
children = [c.name for c in block.cpu_children]
print("inside the block:", children.count("aten::linear"), "linear,",
      children.count("aten::relu"), "relu,", children.count("aten::mse_loss"), "mse_loss")
averages = {e.key: e for e in prof.key_averages()}
print("linear calls:", averages["aten::linear"].count, "relu calls:", averages["aten::relu"].count)
print("block total >= its self time:",
      averages["model_inference"].cpu_time_total >= averages["model_inference"].self_cpu_time_total)
print("block total >= each child's total:",
      all(block.cpu_time_total >= c.cpu_time_total for c in block.cpu_children))
shapes = sorted(str(e.input_shapes) for e in prof.key_averages(group_by_input_shape=True)
                if e.key == "aten::relu")
print("relu input shapes:", shapes)

# forward and backward: the engine's nodes as events
with profile() as prof:
    loss = (model(x) - target).pow(2).sum()
    loss.backward()
counts = top_level(prof)
for name in ["aten::linear", "aten::relu", "aten::sub", "aten::pow", "aten::sum",
             "autograd::engine::evaluate_function: SumBackward0",
             "autograd::engine::evaluate_function: PowBackward0",
             "autograd::engine::evaluate_function: SubBackward0",
             "autograd::engine::evaluate_function: AddmmBackward0",
             "autograd::engine::evaluate_function: ReluBackward0",
             "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]:
    print(f"{name}: {counts.get(name, 0)}")
node = [e for e in prof.events() if e.name == "autograd::engine::evaluate_function: ReluBackward0"][0]
print("the node inside its evaluate_function:", [c.name for c in node.cpu_children][:1])

# the table: rows sorted by what is asked, row_limit rows
table = prof.key_averages().table(sort_by="count", row_limit=3)
rows = table.splitlines()[3:6]
print("rows:", len(rows), "first has the most calls:", rows[0].split()[-1] == str(max(
    e.count for e in prof.key_averages())))
print("footer:", table.splitlines()[-1].split(":")[0])

# operators and methods
a = torch.randn(2, 3)
with profile() as prof:
    b = a + 1
    c = a * b
    d = a @ a.t()
    e = a.sum()
    f = torch.exp(a).mean(dim=0)
    g = a < 0
print("operators:", sorted(top_level(prof)))

# nothing is recorded once the profiler has exited, inside no_grad, and around an exception
before = len(prof.events())
y = a + a
print("after exit, events unchanged:", len(prof.events()) == before)
with torch.no_grad():
    with profile() as prof:
        z = torch.relu(a)
print("under no_grad:", sorted(top_level(prof)))
try:
    with profile() as prof:
        w = torch.tanh(a)
        raise ValueError("stop")
except ValueError as err:
    print("exception passed through:", err, sorted(top_level(prof)))

# the Chrome trace holds the events
with profile() as prof:
    torch.sigmoid(a)
path = os.path.join(tempfile.mkdtemp(), "trace.json")
prof.export_chrome_trace(path)
with open(path) as handle:
    trace = json.load(handle)
print("trace has aten::sigmoid:", any(e.get("name") == "aten::sigmoid" for e in trace["traceEvents"]))

# the legacy entry point
with torch.autograd.profiler.profile() as prof:
    with torch.autograd.profiler.record_function("step"):
        torch.matmul(a, a.t())
print("legacy:", [e.name for e in prof.function_events if e.cpu_parent is None],
      [c.name for c in prof.function_events[0].cpu_children][:1])
