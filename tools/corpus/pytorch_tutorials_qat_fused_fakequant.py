import torch
import torch.nn as nn
from torch.ao.quantization import get_default_qat_qconfig, prepare_qat, convert, QuantStub, DeQuantStub
import torch.ao.quantization as tq
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.fc1 = nn.Linear(4, 8)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(8, 2)
        self.dequant = DeQuantStub()
    def forward(self, x):
        return self.dequant(self.fc2(self.relu(self.fc1(self.quant(x)))))
net = Net()
with torch.no_grad():
    for i, p in enumerate(net.parameters()):
        p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) + i).reshape(p.shape) * 0.5)
net.train()
net.qconfig = get_default_qat_qconfig('fbgemm')
tq.fuse_modules(net, [['fc1', 'relu']], inplace=True)
print(net)
qat = prepare_qat(net)
print(qat)
opt = torch.optim.SGD(qat.parameters(), lr=0.01)
x = torch.linspace(-1, 1, 16).reshape(4, 4)
for step in range(3):
    opt.zero_grad()
    loss = qat(x).pow(2).mean()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 4))
qat.eval()
qm = convert(qat)
print(qm)
print(qm(x))
