"""PyTorch 2 training-script idioms around torch.compile: `model = torch.compile(model)`, the
optimizer built from the compiled model's parameters, eval()/train() switches between epochs
(dropout and batch-norm statistics must follow them), state_dict keys under `_orig_mod.`, and
loading them back into an uncompiled twin.  Weights and data are fixed, dropout is seeded per
step, so the printout does not depend on the random stream."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.0)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.linspace(-0.4, 0.4, p.numel()).reshape(p.shape) * (1 - 0.1 * i))

model = torch.compile(net, backend="eager")
print(type(model).__name__, model._orig_mod is net)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.linspace(-2, 2, 64).reshape(16, 4)
y = (x[:, :1] * 0.5 - x[:, 1:2] * 0.25).tanh()

for epoch in range(3):
    model.train()
    for step in range(4):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x[step * 4:(step + 1) * 4]), y[step * 4:(step + 1) * 4])
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val = nn.functional.mse_loss(model(x), y)
    print(f"epoch {epoch}: last train loss {loss.item():.5f}, eval loss {val.item():.5f}, "
          f"training={model.training}/{net.training}")

print(net.bn.running_mean)
print(net.bn.num_batches_tracked)
keys = list(model.state_dict())
print(keys[:3], len(keys))
twin = Net()
twin.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in model.state_dict().items()})
twin.eval()
with torch.no_grad():
    print(torch.allclose(twin(x), model(x)), twin(x[:2]))
