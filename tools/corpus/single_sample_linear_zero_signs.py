"""One sample through a small ReLU network, trained one SGD step at a time (online learning):
the first layer's weight gradient is an outer product of the upstream gradient and an input that
holds zeros, so its zero entries carry signs; an outer product written as a column @ a row, and
the signs printed with torch.signbit.  All weights are fixed, so nothing depends on the random
stream."""
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
with torch.no_grad():
    net[0].weight.copy_(torch.tensor([[0.5, -1.0, 0.25], [-0.75, 0.5, 1.0],
                                      [1.5, 0.25, -0.5], [0.0, -0.25, 0.75]]))
    net[0].bias.copy_(torch.tensor([0.1, -0.2, 0.3, 0.05]))
    net[2].weight.copy_(torch.tensor([[1.0, -0.5, 0.25, -1.0], [-0.25, 0.75, -1.5, 0.5]]))
    net[2].bias.zero_()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
samples = [([0.0, 1.0, -0.0], 0), ([2.0, 0.0, -1.0], 1), ([-0.0, -0.5, 0.0], 0)]
for step, (xs, label) in enumerate(samples):
    x = torch.tensor([xs])
    loss = nn.functional.cross_entropy(net(x), torch.tensor([label]))
    opt.zero_grad()
    loss.backward()
    g = net[0].weight.grad
    print(f"step {step} loss {loss.item():.6f}")
    print("weight.grad", g)
    print("negative zeros", (torch.signbit(g) & (g == 0)).int().tolist())
    opt.step()

col = torch.tensor([[-0.0], [0.0], [-2.0]])
row = torch.tensor([[0.0, -0.0, 1.5, -1.0]])
print(col @ row)
print(torch.signbit(col @ row).int().tolist(), torch.signbit(torch.mm(col, row).t()).int().tolist())
print(torch.signbit(torch.tensor([0.0, -0.0]) @ torch.tensor([[1.0], [-1.0]])).int().tolist())
