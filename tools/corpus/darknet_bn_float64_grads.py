"""Gradients through a small Darknet-style backbone (bias-free Conv2d, BatchNorm2d in training
mode, LeakyReLU(0.1), MaxPool2d) and a YOLO-style detection head whose loss takes
sign(w) * sqrt(|w| + 1e-6) of predicted widths, in float64 with a batch of 2: the small-batch
batch-norm backward and the steep square root make float32 results differ between libraries
by percents, while float64 pins them. Also: a convolution bias placed before batch norm gets a
gradient that is zero up to rounding, and eval mode uses the running statistics.

Idea from rsk15035032/Pytorch-tutorial (Object_detection/YOLOv1, read, not copied); the
architecture is shrunk and the weights, inputs and targets are drawn with numpy.
"""
import numpy as np
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(3)


class Block(nn.Module):
    def __init__(self, cin, cout, k, s, p, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, p, bias=bias)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.LeakyReLU(0.1)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


S, B, C = 2, 2, 3
net = nn.Sequential(
    Block(3, 8, 3, 2, 1, bias=True), nn.MaxPool2d(2, 2),
    Block(8, 16, 3, 1, 1), Block(16, 8, 1, 1, 0), Block(8, 16, 3, 1, 1), nn.MaxPool2d(2, 2),
    Block(16, 16, 3, 2, 1), nn.Flatten(), nn.Linear(16 * S * S, 32), nn.LeakyReLU(0.1),
    nn.Linear(32, S * S * (C + B * 5)))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.tensor(rng.normal(0, 0.4, tuple(p.shape))))
x = torch.tensor(rng.normal(size=(2, 3, 32, 32)))
target = torch.tensor(rng.random((2, S, S, C + B * 5)))
target[..., C] = torch.tensor((rng.random((2, S, S)) > 0.5).astype(np.float64))


def head_loss(pred, target):
    pred = pred.reshape(-1, S, S, C + B * 5)
    exists = target[..., C:C + 1]
    box = exists * pred[..., C + 1:C + 5]
    tbox = exists * target[..., C + 1:C + 5]
    wh = torch.sign(box[..., 2:4]) * torch.sqrt(torch.abs(box[..., 2:4] + 1e-6))
    twh = torch.sqrt(tbox[..., 2:4])
    box_loss = ((box[..., :2] - tbox[..., :2]) ** 2).sum() + ((wh - twh) ** 2).sum()
    obj = ((exists * pred[..., C:C + 1] - exists * target[..., C:C + 1]) ** 2).sum()
    noobj = (((1 - exists) * pred[..., C:C + 1]) ** 2).sum()
    cls = ((exists * pred[..., :C] - exists * target[..., :C]) ** 2).sum()
    return 5 * box_loss + obj + 0.5 * noobj + cls


out = net(x)
loss = head_loss(out, target)
loss.backward()
print("out", tuple(out.shape), "%.10e" % out.abs().sum().item())
print("loss %.10e" % loss.item())
for name, p in net.named_parameters():
    if name == "0.conv.bias":
        print(name, "zero up to rounding:", p.grad.abs().max().item() < 1e-9)
    else:
        print(name, tuple(p.shape), "%.8e" % p.grad.norm().item())
print("running", "%.10e" % net[0].bn.running_mean.sum().item(), "%.10e" % net[2].bn.running_var.sum().item())
net.eval()
with torch.no_grad():
    out_eval = net(x)
print("eval %.10e" % out_eval.abs().sum().item(), out_eval.dtype)
