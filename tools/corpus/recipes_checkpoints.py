"""PyTorch recipes: what is a state_dict, saving and loading a general checkpoint (model +
optimizer + epoch + loss), saving multiple models in one file, warmstarting a model with
strict=False and missing/unexpected keys, zeroing gradients, saving a whole model, io.BytesIO."""
import io
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


torch.manual_seed(0)
net = Net()
optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
print("Model's state_dict:")
for param_tensor in net.state_dict():
    print(param_tensor, "\t", net.state_dict()[param_tensor].size())
print("Optimizer's state_dict:")
for var_name in optimizer.state_dict():
    print(var_name, "\t", optimizer.state_dict()[var_name])

inputs = torch.randn(4, 3, 32, 32)
labels = torch.tensor([1, 0, 3, 9])
criterion = nn.CrossEntropyLoss()
for i in range(3):
    optimizer.zero_grad()
    loss = criterion(net(inputs), labels)
    loss.backward()
    optimizer.step()
print(sorted(optimizer.state_dict()['state'].keys())[:4], list(optimizer.state_dict()['state'][0].keys()))

tmp = tempfile.mkdtemp()
PATH = os.path.join(tmp, "model.pt")
EPOCH = 5
torch.save({
    'epoch': EPOCH,
    'model_state_dict': net.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'loss': loss,
}, PATH)
model = Net()
optimizer2 = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint['model_state_dict'])
optimizer2.load_state_dict(checkpoint['optimizer_state_dict'])
epoch = checkpoint['epoch']
loss2 = checkpoint['loss']
model.eval()
print(epoch, torch.equal(loss2, loss.detach()), loss2.requires_grad)
print(torch.equal(model(inputs), net(inputs)), torch.equal(optimizer2.state[model.fc3.weight]['momentum_buffer'],
                                                            optimizer.state[net.fc3.weight]['momentum_buffer']))

netA, netB = Net(), Net()
optimizerA = optim.SGD(netA.parameters(), lr=0.001, momentum=0.9)
optimizerB = optim.Adam(netB.parameters(), lr=0.001)
torch.save({'modelA_state_dict': netA.state_dict(), 'modelB_state_dict': netB.state_dict(),
            'optimizerA_state_dict': optimizerA.state_dict(), 'optimizerB_state_dict': optimizerB.state_dict()},
           PATH)
checkpoint = torch.load(PATH, weights_only=True)
modelA, modelB = Net(), Net()
print(modelA.load_state_dict(checkpoint['modelA_state_dict']), modelB.load_state_dict(checkpoint['modelB_state_dict']))
print(checkpoint['optimizerB_state_dict']['param_groups'][0]['betas'])


class NetB(nn.Module):
    def __init__(self):
        super(NetB, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.head = nn.Linear(84, 3)


torch.save(netA.state_dict(), PATH)
netB = NetB()
result = netB.load_state_dict(torch.load(PATH, weights_only=True), strict=False)
print(result.missing_keys, result.unexpected_keys)
print(torch.equal(netB.conv1.weight, netA.conv1.weight))
try:
    netB.load_state_dict(torch.load(PATH, weights_only=True))
except RuntimeError as e:
    print('RuntimeError', 'Missing key(s) in state_dict' in str(e), 'Unexpected key(s) in state_dict' in str(e))
bad = netA.state_dict()
bad['fc3.weight'] = torch.zeros(3, 84)
try:
    netA.load_state_dict(bad)
except RuntimeError as e:
    print('size mismatch' in str(e))

net.zero_grad()
print(all(p.grad is None for p in net.parameters()))
optimizer.zero_grad(set_to_none=False)
print(all(p.grad is None for p in net.parameters()))

torch.save(net, PATH)
whole = torch.load(PATH, weights_only=False)
print(type(whole).__name__, whole.fc3)
buffer = io.BytesIO()
torch.save(net.state_dict(), buffer)
buffer.seek(0)
sd = torch.load(buffer)
print(list(sd.keys())[:2], sd['fc3.bias'].shape, type(sd).__name__)
