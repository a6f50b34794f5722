"""PyTorch's recipe "How to use TensorBoard with PyTorch": a linear regression y = -5x + 1 trained
with SGD, the loss logged each epoch with writer.add_scalar("Loss/train", loss, epoch), then
writer.flush() and close().  Adapted: a fixed noise pattern instead of torch.randn and fixed
initial weights (nothing depends on the random stream), the log in a temporary directory,
add_scalars / add_histogram / add_text beside it, and what TensorBoard's EventAccumulator reads
back printed instead of launching TensorBoard."""
import os
import shutil
import tempfile

import torch
from torch.utils.tensorboard import SummaryWriter
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

log_dir = tempfile.mkdtemp(prefix="tb_recipe_")
writer = SummaryWriter(log_dir)

x = torch.arange(-5, 5, 0.1).view(-1, 1)
noise = 0.1 * torch.sin(torch.arange(100.0) * 1.7).view(-1, 1)
y = -5 * x + 1 + noise

model = torch.nn.Linear(1, 1)
with torch.no_grad():
    model.weight.fill_(0.5)
    model.bias.fill_(-0.25)
criterion = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)


def train_model(iterations):
    for epoch in range(iterations):
        y1 = model(x)
        loss = criterion(y1, y)
        writer.add_scalar("Loss/train", loss, epoch)
        writer.add_scalars("Params", {"weight": model.weight.item(), "bias": model.bias.item()},
                           epoch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    writer.add_histogram("weight_grad", model.weight.grad, iterations)


train_model(10)
writer.add_text("summary", f"final loss {criterion(model(x), y).item():.4f}", 10)
writer.flush()
writer.close()

accumulator = EventAccumulator(log_dir)
accumulator.Reload()
tags = accumulator.Tags()
print("scalar tags:", tags["scalars"])
print("histogram tags:", tags["histograms"])
print("tensor tags:", tags["tensors"])
for event in accumulator.Scalars("Loss/train"):
    print(f"step {event.step}: loss {event.value:.5f}")
histogram = accumulator.Histograms("weight_grad")[0]
print("histogram step", histogram.step, "num", histogram.histogram_value.num,
      "min", round(histogram.histogram_value.min, 4))
text = accumulator.Tensors("summary/text_summary")[0]
print("text:", text.tensor_proto.string_val[0].decode())
runs = [name for name in os.listdir(log_dir) if os.path.isdir(os.path.join(log_dir, name))]
for run in sorted(runs):
    run_reader = EventAccumulator(os.path.join(log_dir, run))
    run_reader.Reload()
    values = [f"{e.value:.4f}" for e in run_reader.Scalars("Params")]
    print(run, "->", values[0], values[-1], len(values), "steps")
shutil.rmtree(log_dir)
