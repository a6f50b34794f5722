"""CycleGAN generator and PatchGAN discriminator: reflect-padded convolutions, InstanceNorm
without affine, in-place ReLU/LeakyReLU, residual blocks, ConvTranspose2d with output_padding;
a least-squares adversarial loss and an L1 cycle loss backpropagated through both.

Source: aladdinpersson/Machine-Learning-Collection, ML/Pytorch/GANs/CycleGAN/generator_model.py
and discriminator_model.py.  Adapted: the two files concatenated; test() replaced by a driver at
32x32 with num_features 8, 2 residual blocks and discriminator features [8, 16, 32, 64]; every
parameter and the images are drawn with numpy (no torch random stream).
"""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(0)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, down=True, use_act=True, **kwargs):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, padding_mode="reflect", **kwargs)
            if down
            else nn.ConvTranspose2d(in_channels, out_channels, **kwargs),
            nn.InstanceNorm2d(out_channels),
            nn.ReLU(inplace=True) if use_act else nn.Identity()
        )

    def forward(self, x):
        return self.conv(x)

class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block = nn.Sequential(
            ConvBlock(channels, channels, kernel_size=3, padding=1),
            ConvBlock(channels, channels, use_act=False, kernel_size=3, padding=1),
        )

    def forward(self, x):
        return x + self.block(x)

class Generator(nn.Module):
    def __init__(self, img_channels, num_features = 64, num_residuals=9):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(img_channels, num_features, kernel_size=7, stride=1, padding=3, padding_mode="reflect"),
            nn.InstanceNorm2d(num_features),
            nn.ReLU(inplace=True),
        )
        self.down_blocks = nn.ModuleList(
            [
                ConvBlock(num_features, num_features*2, kernel_size=3, stride=2, padding=1),
                ConvBlock(num_features*2, num_features*4, kernel_size=3, stride=2, padding=1),
            ]
        )
        self.res_blocks = nn.Sequential(*[ResidualBlock(num_features*4) for _ in range(num_residuals)])
        self.up_blocks = nn.ModuleList(
            [
                ConvBlock(num_features*4, num_features*2, down=False, kernel_size=3, stride=2, padding=1, output_padding=1),
                ConvBlock(num_features*2, num_features*1, down=False, kernel_size=3, stride=2, padding=1, output_padding=1),
            ]
        )
        self.last = nn.Conv2d(num_features*1, img_channels, kernel_size=7, stride=1, padding=3, padding_mode="reflect")

    def forward(self, x):
        x = self.initial(x)
        for layer in self.down_blocks:
            x = layer(x)
        x = self.res_blocks(x)
        for layer in self.up_blocks:
            x = layer(x)
        return torch.tanh(self.last(x))

class Block(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, stride, 1, bias=True, padding_mode="reflect"),
            nn.InstanceNorm2d(out_channels),
            nn.LeakyReLU(0.2, inplace=True),
        )

    def forward(self, x):
        return self.conv(x)

class Discriminator(nn.Module):
    def __init__(self, in_channels=3, features=[64, 128, 256, 512]):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(in_channels, features[0], kernel_size=4, stride=2, padding=1, padding_mode="reflect",),
            nn.LeakyReLU(0.2, inplace=True),
        )
        layers = []
        in_channels = features[0]
        for feature in features[1:]:
            layers.append(Block(in_channels, feature, stride=1 if feature==features[-1] else 2))
            in_channels = feature
        layers.append(nn.Conv2d(in_channels, 1, kernel_size=4, stride=1, padding=1, padding_mode="reflect"))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        x = self.initial(x)
        return torch.sigmoid(self.model(x))

def numpy_init(model, scale):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor((rng.randn(*p.shape) * scale).astype(np.float32)))


gen = Generator(3, 8, num_residuals=2)
disc = Discriminator(in_channels=3, features=[8, 16, 32, 64])
numpy_init(gen, 0.1)
numpy_init(disc, 0.1)
x = torch.tensor(rng.rand(2, 3, 32, 32).astype(np.float32) * 2 - 1)
y = gen(x)
print(y.shape, round(y.mean().item(), 5), round(y.abs().max().item(), 5))
preds = disc(y)
print(preds.shape, [round(v, 5) for v in preds.flatten()[:6].tolist()])
mse, l1 = nn.MSELoss(), nn.L1Loss()
adv = mse(preds, torch.ones_like(preds))
cycle = l1(gen(y), x)
loss = adv + 10 * cycle
loss.backward()
print(f"adv {adv.item():.5f} cycle {cycle.item():.5f}")
for name, p in list(gen.named_parameters())[::4] + list(disc.named_parameters())[::3]:
    print(name, tuple(p.shape), round(p.grad.norm().item(), 5))
print(sum(p.numel() for p in gen.parameters()), sum(p.numel() for p in disc.parameters()))
