"""WGAN-GP: a DCGAN critic (InstanceNorm, LeakyReLU) and generator (ConvTranspose, BatchNorm),
the gradient penalty through torch.autograd.grad(create_graph=True) (a double backward through
convolutions and instance norm), critic steps with backward(retain_graph=True) and Adam, then the
generator step through the same `fake`.

Source: aladdinpersson/Machine-Learning-Collection, ML/Pytorch/GANs/4. WGAN-GP/model.py and
train.py (+ utils.gradient_penalty).  Adapted: MNIST, tensorboard and make_grid left out; batch 2,
features 4, two critic iterations, two batches; every parameter, the images, the noise and the
penalty's mixing weights are drawn with numpy (no torch random stream): `torch.rand` in
gradient_penalty became a numpy draw.  Losses, the penalty and gradient norms are printed.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.RandomState(0)


def from_numpy_normal(*shape, scale=1.0):
    return torch.tensor((rng.randn(*shape) * scale).astype(np.float32))


class Discriminator(nn.Module):
    def __init__(self, channels_img, features_d):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(
            nn.Conv2d(channels_img, features_d, kernel_size=4, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            self._block(features_d, features_d * 2, 4, 2, 1),
            self._block(features_d * 2, features_d * 4, 4, 2, 1),
            self._block(features_d * 4, features_d * 8, 4, 2, 1),
            nn.Conv2d(features_d * 8, 1, kernel_size=4, stride=2, padding=0),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False,),
            nn.InstanceNorm2d(out_channels, affine=True),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.disc(x)


class Generator(nn.Module):
    def __init__(self, channels_noise, channels_img, features_g):
        super(Generator, self).__init__()
        self.net = nn.Sequential(
            self._block(channels_noise, features_g * 16, 4, 1, 0),
            self._block(features_g * 16, features_g * 8, 4, 2, 1),
            self._block(features_g * 8, features_g * 4, 4, 2, 1),
            self._block(features_g * 4, features_g * 2, 4, 2, 1),
            nn.ConvTranspose2d(features_g * 2, channels_img, kernel_size=4, stride=2, padding=1),
            nn.Tanh(),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, bias=False,),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.net(x)


def initialize_weights(model):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.BatchNorm2d)):
            nn.init.normal_(m.weight.data, 0.0, 0.02)


def gradient_penalty(critic, real, fake, device="cpu"):
    BATCH_SIZE, C, H, W = real.shape
    alpha = torch.tensor(rng.rand(BATCH_SIZE, 1, 1, 1).astype(np.float32)).repeat(1, C, H, W).to(device)
    interpolated_images = real * alpha + fake * (1 - alpha)
    mixed_scores = critic(interpolated_images)
    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        retain_graph=True,
    )[0]
    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    gradient_penalty = torch.mean((gradient_norm - 1) ** 2)
    return gradient_penalty


device = "cpu"
LEARNING_RATE = 1e-4
BATCH_SIZE = 2
CHANNELS_IMG = 1
Z_DIM = 16
FEATURES_CRITIC = 4
FEATURES_GEN = 4
CRITIC_ITERATIONS = 2
LAMBDA_GP = 10

gen = Generator(Z_DIM, CHANNELS_IMG, FEATURES_GEN).to(device)
critic = Discriminator(CHANNELS_IMG, FEATURES_CRITIC).to(device)
with torch.no_grad():
    for p in list(gen.parameters()) + list(critic.parameters()):
        p.copy_(from_numpy_normal(*p.shape, scale=0.2) + (1.0 if p.dim() == 1 and p.shape[0] > 1 else 0.0))
opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
opt_critic = optim.Adam(critic.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
gen.train()
critic.train()

for batch_idx in range(2):
    real = torch.tanh(from_numpy_normal(BATCH_SIZE, CHANNELS_IMG, 64, 64))
    cur_batch_size = real.shape[0]
    for _ in range(CRITIC_ITERATIONS):
        noise = from_numpy_normal(cur_batch_size, Z_DIM, 1, 1)
        fake = gen(noise)
        critic_real = critic(real).reshape(-1)
        critic_fake = critic(fake).reshape(-1)
        gp = gradient_penalty(critic, real, fake, device=device)
        loss_critic = (
            -(torch.mean(critic_real) - torch.mean(critic_fake)) + LAMBDA_GP * gp
        )
        critic.zero_grad()
        loss_critic.backward(retain_graph=True)
        print(f"gp {gp.item():.5f} critic grad norms",
              [round(p.grad.norm().item(), 4) for p in list(critic.parameters())[:4]])
        opt_critic.step()
    gen_fake = critic(fake).reshape(-1)
    loss_gen = -torch.mean(gen_fake)
    gen.zero_grad()
    loss_gen.backward()
    print(f"gen grad norms", [round(p.grad.norm().item(), 4) for p in list(gen.parameters())[:4]])
    opt_gen.step()
    print(f"Batch {batch_idx} Loss D: {loss_critic:.4f}, loss G: {loss_gen:.4f}")
with torch.no_grad():
    gen.eval()
    out = gen(from_numpy_normal(3, Z_DIM, 1, 1))
    print(out.shape, round(out.mean().item(), 4), round(out.std().item(), 4))
