"""60-minute blitz, part 3: a LeNet-style network, loss, backprop and a manual/optim update."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        c1 = F.relu(self.conv1(input))
        s2 = F.max_pool2d(c1, (2, 2))
        c3 = F.relu(self.conv2(s2))
        s4 = F.max_pool2d(c3, 2)
        s4 = torch.flatten(s4, 1)
        f5 = F.relu(self.fc1(s4))
        f6 = F.relu(self.fc2(f5))
        return self.fc3(f6)


net = Net()
print(net)

params = list(net.parameters())
print(len(params))
print(params[0].size())
print(sum(p.numel() for p in params))

input = torch.randn(1, 1, 32, 32)
out = net(input)
print(out.shape)

net.zero_grad()
out.backward(torch.randn(1, 10))
print("conv1.weight.grad shape:", net.conv1.weight.grad.shape)

output = net(input)
target = torch.randn(10)
target = target.view(1, -1)
criterion = nn.MSELoss()
loss = criterion(output, target)
print(type(loss.grad_fn).__name__)
print(type(loss.grad_fn.next_functions[0][0]).__name__)

net.zero_grad()
print("conv1.bias.grad before backward")
print(net.conv1.bias.grad)
loss.backward()
print("conv1.bias.grad after backward")
print(net.conv1.bias.grad.shape, bool(net.conv1.bias.grad.abs().sum() > 0))

learning_rate = 0.01
with torch.no_grad():
    for f in net.parameters():
        f.data.sub_(f.grad.data * learning_rate)

import torch.optim as optim

optimizer = optim.SGD(net.parameters(), lr=0.01)
first = None
for step in range(20):
    optimizer.zero_grad()
    output = net(input)
    loss = criterion(output, target)
    loss.backward()
    optimizer.step()
    first = loss.item() if first is None else first
print("loss decreased:", loss.item() < first)
