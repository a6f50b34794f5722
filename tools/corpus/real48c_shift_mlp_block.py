"""A shift-MLP block (S2-MLP style) whose spatial shift writes slices of a channels-last view
from neighbouring slices of the same view, as research model zoos do; trained a few steps on a
fixed target.  The shift's overlapping copies smear values along the shift in PyTorch."""
import math

import torch
import torch.nn as nn


def shift(x):
    b, w, h, c = x.size()
    x[:, 1:, :, :c // 4] = x[:, :w - 1, :, :c // 4]
    x[:, :w - 1, :, c // 4:c // 2] = x[:, 1:, :, c // 4:c // 2]
    x[:, :, 1:, c // 2:c * 3 // 4] = x[:, :, :h - 1, c // 2:c * 3 // 4]
    x[:, :, :h - 1, 3 * c // 4:] = x[:, :, 1:, 3 * c // 4:]
    return x


class ShiftBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.fc_in = nn.Linear(c, 2 * c)
        self.fc_out = nn.Linear(2 * c, c)
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                n = p.numel()
                p.copy_(torch.sin(torch.arange(n, dtype=torch.float32) * (0.7 + i)).reshape(p.shape) * 0.3)

    def forward(self, x):                       # x: (b, c, w, h)
        y = self.fc_in(x.permute(0, 2, 3, 1))   # (b, w, h, 2c)
        shifted = shift(y[:, :, :, :self.c])    # a view of y, written in place
        y = torch.cat([shifted, y[:, :, :, self.c:]], dim=-1)
        return self.fc_out(torch.relu(y)).permute(0, 3, 1, 2)


x = torch.cos(torch.arange(2 * 8 * 5 * 4, dtype=torch.float32) * 0.37).reshape(2, 8, 5, 4)
target = torch.sin(torch.arange(2 * 8 * 5 * 4, dtype=torch.float32) * 0.11).reshape(2, 8, 5, 4)

# the shift alone, on known values: slices propagate along the shift
probe = torch.arange(1 * 4 * 3 * 8, dtype=torch.float32).reshape(1, 4, 3, 8)
shift(probe[:, :, :, :4])
print("shifted channel 0:", probe[0, :, :, 0].tolist())
print("shifted channel 2:", probe[0, :, :, 2].tolist())

block = ShiftBlock(8)
opt = torch.optim.SGD(block.parameters(), lr=0.05)
for step in range(4):
    opt.zero_grad()
    out = block(x)
    loss = ((out - target) ** 2).mean()
    loss.backward()
    opt.step()
    print(f"step {step}: loss {loss.item():.5f}")
print("grad norm fc_in:", round(block.fc_in.weight.grad.norm().item(), 4))
print("out shape:", tuple(out.shape), "finite:", bool(torch.isfinite(out).all()))
print("checksum:", round(out.detach().sum().item() + math.pi, 4))
