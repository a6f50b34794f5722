"""eriklindernoren/PyTorch-GAN (implementations/gan/gan.py): the generator, discriminator and
training step, verbatim (legacy Variable, Tensor(...).fill_, imgs.type(Tensor), BatchNorm1d with
eps=0.8 passed positionally, in-place LeakyReLU).  Adapted for the corpus: MNIST is replaced by
a small numpy image set whose samples are transposed arrays (as a column-indexed numpy image
gives), collated by the DataLoader; smaller layers; weights from numpy; three batches."""
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

latent_dim, img_size, channels, batch_size = 16, 8, 1, 4
img_shape = (channels, img_size, img_size)
rng = np.random.RandomState(0)


class Images(torch.utils.data.Dataset):
    def __init__(self):
        self.data = (rng.rand(12, img_size, img_size) * 255).astype(np.uint8)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        a = self.data[i][:, ::-1].T[:, ::-1]              # a transposed view, as PIL -> numpy can give
        t = torch.from_numpy(a[None].astype(np.float32) / 255.0)
        return (t - 0.5) / 0.5, 0


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim, 32, normalize=False),
            *block(32, 64),
            nn.Linear(64, int(np.prod(img_shape))),
            nn.Tanh()
        )

    def forward(self, z):
        img = self.model(z)
        img = img.view(img.size(0), *img_shape)
        return img


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.model = nn.Sequential(
            nn.Linear(int(np.prod(img_shape)), 32),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, 16),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(16, 1),
            nn.Sigmoid(),
        )

    def forward(self, img):
        img_flat = img.view(img.size(0), -1)
        validity = self.model(img_flat)
        return validity


def numpy_weights(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return module


adversarial_loss = torch.nn.BCELoss()
generator = numpy_weights(Generator())
discriminator = numpy_weights(Discriminator())
dataloader = torch.utils.data.DataLoader(Images(), batch_size=batch_size, shuffle=False)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=0.0002, betas=(0.5, 0.999))
Tensor = torch.FloatTensor

for i, (imgs, _) in enumerate(dataloader):
    print(i, tuple(imgs.shape), imgs.is_contiguous(), imgs.stride())
    valid = Variable(Tensor(imgs.size(0), 1).fill_(1.0), requires_grad=False)
    fake = Variable(Tensor(imgs.size(0), 1).fill_(0.0), requires_grad=False)
    real_imgs = Variable(imgs.type(Tensor))

    optimizer_G.zero_grad()
    z = Variable(Tensor(rng.normal(0, 1, (imgs.shape[0], latent_dim))))
    gen_imgs = generator(z)
    g_loss = adversarial_loss(discriminator(gen_imgs), valid)
    g_loss.backward()
    optimizer_G.step()

    optimizer_D.zero_grad()
    real_loss = adversarial_loss(discriminator(real_imgs), valid)
    fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
    d_loss = (real_loss + fake_loss) / 2
    d_loss.backward()
    optimizer_D.step()
    print("[Batch %d/%d] [D loss: %f] [G loss: %f]" % (i, len(dataloader), d_loss.item(), g_loss.item()))

print(generator.model[3].running_mean[:4])
print(discriminator.model[0].weight.grad.abs().sum())
