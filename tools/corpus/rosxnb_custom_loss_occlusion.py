"""A course's CNN chapter (rosxnb/learn-pytorch, 08-CNNS/custom_loss_functions.py with the data of
08-CNNS/occlusion_cnn.py): noisy Gaussian blobs, some crossed by a bar, are "un-occluded" by a small
convolutional encoder-decoder (Conv2d+MaxPool down, ConvTranspose2d up) trained with Adam under
three hand-written loss modules: mean absolute error, mean squared error plus |mean(yHat)|, and a
negative Pearson correlation built from torch.mean/sum/std/numel.  The images come from numpy
(smaller and fewer than the course's 1000 of 91x91), the weights are drawn from numpy, and the
minibatches are fixed slices, so nothing printed follows the library's random stream; the plots
are left out."""
import numpy as np
import torch
import torch.nn as nn

IMG_SIZE = 31
N_SAMPLES = 64
EPOCHS = 6
BATCH = 16

rng = np.random.RandomState(0)


def make_images():
    """Blurred blobs (clean targets) and the same blobs with a horizontal or vertical bar."""
    axis = np.linspace(-4, 4, IMG_SIZE)
    xx, yy = np.meshgrid(axis, axis)
    widths = np.linspace(2, 20, N_SAMPLES)
    clean = np.zeros((N_SAMPLES, 1, IMG_SIZE, IMG_SIZE), dtype=np.float32)
    occluded = np.zeros_like(clean)
    for i in range(N_SAMPLES):
        centre = rng.randn(2) * 1.5
        blob = np.exp(-((xx - centre[0]) ** 2 + (yy - centre[1]) ** 2) / widths[i])
        blob = blob + rng.randn(IMG_SIZE, IMG_SIZE) / 5
        clean[i, 0] = blob
        start, thickness = rng.randint(2, 20), rng.randint(2, 6)
        if rng.randn() > 0:
            blob[start:start + thickness, :] = 1
        else:
            blob[:, start:start + thickness] = 1
        occluded[i, 0] = blob
    return torch.tensor(clean), torch.tensor(occluded)


class MyL1Loss(nn.Module):
    def forward(self, yHat, y):
        return torch.mean(torch.abs(yHat - y))


class MyL2AveLoss(nn.Module):
    def forward(self, yHat, y):
        return torch.mean((yHat - y) ** 2) + torch.abs(torch.mean(yHat))


class MyCorLoss(nn.Module):
    def forward(self, yHat, y):
        meanx, meany = torch.mean(yHat), torch.mean(y)
        num = torch.sum((yHat - meanx) * (y - meany))
        den = (torch.numel(y) - 1) * torch.std(yHat) * torch.std(y)
        return -num / den


class GausNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(4, 6, 3, 2), nn.ReLU(),
            nn.ConvTranspose2d(6, 1, 3, 2),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


def numpy_weights(net, seed):
    """Every parameter from numpy, scaled like PyTorch's default bound 1/sqrt(fan_in)."""
    wrng = np.random.RandomState(seed)
    with torch.no_grad():
        for name, p in net.named_parameters():
            fan_in = p.shape[1] * int(np.prod(p.shape[2:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(wrng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


images, images_occluded = make_images()
print("images:", tuple(images.shape), images.dtype)
print(f"bar pixels set to 1: {int((images_occluded == 1).sum())}")

net = GausNet()
print(net)
out = net(images_occluded[:2])
print("decoder output:", tuple(out.shape))  # 31 -> 15 -> 7 down, 7 -> 15 -> 31 up
print("encoder output:", tuple(net.enc(images_occluded[:2]).shape))

for lossfun in (MyL1Loss(), MyL2AveLoss(), MyCorLoss()):
    net = GausNet()
    numpy_weights(net, 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.001)
    losses = torch.zeros(EPOCHS)
    for epochi in range(EPOCHS):
        start = (epochi * BATCH) % N_SAMPLES
        X = images_occluded[start:start + BATCH]
        Y = images[start:start + BATCH]
        loss = lossfun(net(X), Y)
        losses[epochi] = loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(type(lossfun).__name__, "losses:", [round(v, 4) for v in losses.tolist()])
    with torch.no_grad():
        yHat = net(images_occluded[:BATCH])
        # The correlation loss ignores a shift of yHat, so the last bias's gradient is float
        # rounding noise that Adam scales up to full lr-sized steps: its mean is not printed.
        mean = "" if isinstance(lossfun, MyCorLoss) else f"output mean {yHat.mean().item():.4f}, "
        print(f"  eval loss {lossfun(yHat, images[:BATCH]).item():.4f}, {mean}std {yHat.std().item():.4f}")
    grad_norm = sum(p.grad.norm() ** 2 for p in net.parameters()).sqrt()
    print(f"  last gradient norm {grad_norm.item():.4f}")
