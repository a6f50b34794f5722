"""pytorch/examples super_resolution: an ESPCN-style net ending in nn.PixelShuffle, orthogonal
init with calculate_gain, MSE on low/high resolution pairs made by avg pooling, PSNR via log10."""
from math import log10

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


print(round(init.calculate_gain('relu'), 6), init.calculate_gain('tanh'), init.calculate_gain('leaky_relu', 0.2))
ps = nn.PixelShuffle(2)
x = torch.arange(16.).view(1, 4, 2, 2)
print(ps(x))
print(nn.PixelUnshuffle(2)(ps(x)).equal(x), ps)

torch.manual_seed(123)
upscale_factor = 2
yy, xx = torch.meshgrid(torch.linspace(0, 3.14, 16), torch.linspace(0, 3.14, 16), indexing='ij')
phase = torch.rand(64, 1, 1, 1) * 6.28
targets = torch.sin(yy * 2 + phase) * torch.cos(xx * 3 - phase)
inputs = F.avg_pool2d(targets, upscale_factor)
print(inputs.shape, targets.shape)
training_data_loader = DataLoader(TensorDataset(inputs[:48], targets[:48]), batch_size=16, shuffle=True)
testing_data_loader = DataLoader(TensorDataset(inputs[48:], targets[48:]), batch_size=8, shuffle=False)

model = Net(upscale_factor=upscale_factor)
w = model.conv1.weight.view(16, -1)
print(torch.allclose(w @ w.t(), 2 * torch.eye(16), atol=1e-4))
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=0.01)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0], batch[1]
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
    return epoch_loss / len(training_data_loader)


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0], batch[1]
            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    return avg_psnr / len(testing_data_loader)


losses = [train(epoch) for epoch in range(1, 16)]
print(losses[-1] < losses[0], test() > 5)
print(model(inputs[:2]).shape)
print(10 * log10(1 / criterion(torch.zeros(4), torch.full((4,), 0.1)).item()))
