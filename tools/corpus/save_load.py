"""Learn-the-basics 'Save and Load the Model' plus checkpoints: state_dict, whole modules, optimizers."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
tmp = tempfile.mkdtemp()


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


model = TinyNet()
optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
print("Model's state_dict:")
for param_tensor in model.state_dict():
    print(param_tensor, "\t", model.state_dict()[param_tensor].size())
print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])

x = torch.randn(16, 4)
for _ in range(3):
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()

path = os.path.join(tmp, "model_weights.pth")
torch.save(model.state_dict(), path)
model2 = TinyNet()
result = model2.load_state_dict(torch.load(path, weights_only=True))
print(result)
model.eval()
model2.eval()
print("same outputs:", torch.equal(model(x), model2(x)))
print("running_mean restored:", torch.equal(model.bn.running_mean, model2.bn.running_mean))
print(model2.bn.num_batches_tracked)

whole = os.path.join(tmp, "model.pth")
torch.save(model, whole)
model3 = torch.load(whole, weights_only=False)
print(type(model3).__name__, torch.equal(model3(x), model(x)))

ckpt = os.path.join(tmp, "checkpoint.tar")
torch.save({
    'epoch': 3,
    'model_state_dict': model.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'loss': 0.25,
}, ckpt)
model4 = TinyNet()
optimizer4 = optim.SGD(model4.parameters(), lr=0.5)
checkpoint = torch.load(ckpt, weights_only=True)
model4.load_state_dict(checkpoint['model_state_dict'])
optimizer4.load_state_dict(checkpoint['optimizer_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']
print(epoch, loss, optimizer4.param_groups[0]['lr'], optimizer4.param_groups[0]['momentum'])
print(len(optimizer4.state_dict()['state']))
model4.train()

t = torch.arange(6.).reshape(2, 3)
torch.save({'t': t, 'list': [t[0], 5]}, os.path.join(tmp, "misc.pt"))
back = torch.load(os.path.join(tmp, "misc.pt"))
print(back['t'], back['list'][1])

try:
    model2.load_state_dict({'fc1.weight': torch.zeros(8, 4)})
except RuntimeError as e:
    print("RuntimeError:", "Missing key(s)" in str(e))
res = model2.load_state_dict({'fc1.weight': torch.zeros(8, 4)}, strict=False)
print(sorted(res.missing_keys)[:2], res.unexpected_keys)
