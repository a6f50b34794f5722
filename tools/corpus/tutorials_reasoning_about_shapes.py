"""pytorch/tutorials recipes_source/recipes/reasoning_about_shapes.py: meta-device tensors, a conv on
a huge meta input, forward hooks printing every layer's output shape (timings not printed)."""
import torch
import timeit
t = torch.rand(2, 3, 10, 10, device="meta")
conv = torch.nn.Conv2d(3, 5, 2, device="meta")
start = timeit.default_timer()
out = conv(t)
end = timeit.default_timer()
print(out)
t_large = torch.rand(2**10, 3, 2**16, 2**16, device="meta")
out = conv(t_large)
print(out)
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x

def fw_hook(module, input, output):
    print(f"Shape of output to {module} is {output.shape}.")

with torch.device("meta"):
    net = Net()
    inp = torch.randn((1024, 3, 32, 32))
for name, layer in net.named_modules():
    layer.register_forward_hook(fw_hook)
out = net(inp)
