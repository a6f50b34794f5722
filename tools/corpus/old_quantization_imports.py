# Old-style quantization imports (PyTorch <= 1.12 tutorials), still in scripts.
import torch
import torch.nn as nn
import torch.nn.intrinsic as nni
import torch.nn.intrinsic.qat as nniqat
import torch.nn.qat as nnqat
from torch.nn.intrinsic import ConvBnReLU2d, ConvReLU2d, LinearReLU
from torch.ao.quantization import fuse_modules

torch.manual_seed(0)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8, 4)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        x = self.relu(self.bn(self.conv(x)))
        x = x.mean((2, 3))
        return self.relu2(self.fc(x))


m = M().eval()
x = torch.randn(2, 3, 8, 8)
before = m(x)
f = fuse_modules(m, [["conv", "bn", "relu"], ["fc", "relu2"]])
after = f(x)
print(type(f.conv).__name__, isinstance(f.conv, nni.ConvReLU2d), isinstance(f.fc, LinearReLU))
print("fused equal:", torch.allclose(before, after, atol=1e-5))
print(nnqat.Linear.__name__, nniqat.LinearReLU.__name__, ConvBnReLU2d.__name__, ConvReLU2d is nni.ConvReLU2d)
print(isinstance(3, torch.SymInt), torch.sym_max(2, 3.5), torch.is_distributed(x))
fut = torch.futures.Future()
fut.set_result(5)
print(torch.futures.wait_all([fut]), torch.Stream())
