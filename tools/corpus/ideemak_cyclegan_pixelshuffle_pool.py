"""A small CycleGAN in the style of ideemak/dl_proj and the CycleGAN image pools found beside it
(zhixiangshuijiaozzz/CycleGAN-PY, SadMemories/CycleGAN_pytorch) (written for this corpus, not a
copy): ResNet generators with ReflectionPad2d, InstanceNorm2d (affine and not) and residual blocks
that relu the normed sum, upsampling as ConvTranspose2d(stride 1) followed by PixelShuffle(2),
PatchGAN discriminators with LeakyReLU(inplace=True) and spectral_norm on the last conv, two
models and two optimizers held in dicts, Adam over itertools.chain of both generators, a
LambdaLR linear-decay schedule, image pools (torch.cat of unsqueeze(img.data, 0) and torch.stack
variants) that return a stored image with probability one half (python's random, seeded),
least-squares adversarial losses plus cycle and identity L1 terms, discriminators frozen with
requires_grad_(False) during the generator step, fake images detached (clone().detach()) for the
discriminator step, and a state_dict round trip.  Every tensor draw comes from a numpy
RandomState.
"""
import io
import itertools
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(7)
rng = np.random.RandomState(7)


class ResBlock(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.conv = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(f, f, 3), nn.InstanceNorm2d(f),
                                  nn.ReLU(True), nn.ReflectionPad2d(1), nn.Conv2d(f, f, 3))
        self.norm = nn.InstanceNorm2d(f, affine=True)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x) + x))


class Generator(nn.Module):
    def __init__(self, f=4, blocks=2):
        super().__init__()
        layers = [nn.ReflectionPad2d(3), nn.Conv2d(3, f, 7), nn.InstanceNorm2d(f), nn.ReLU(True),
                  nn.Conv2d(f, 2 * f, 3, 2, 1), nn.InstanceNorm2d(2 * f), nn.ReLU(True)]
        layers += [ResBlock(2 * f) for _ in range(blocks)]
        layers += [nn.ConvTranspose2d(2 * f, 4 * f, 3, 1, 1), nn.PixelShuffle(2),
                   nn.InstanceNorm2d(f), nn.ReLU(True),
                   nn.ReflectionPad2d(3), nn.Conv2d(f, 3, 7), nn.Tanh()]
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x)


class Discriminator(nn.Module):
    def __init__(self, ndf=4):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.InstanceNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.utils.spectral_norm(nn.Conv2d(ndf * 2, 1, 3, 1, 1)))

    def forward(self, x):
        return self.main(x)


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        self.images = []

    def query(self, images):
        if self.pool_size == 0:
            return images
        out = []
        for img in images:
            img = torch.unsqueeze(img.data, 0)
            if len(self.images) < self.pool_size:
                self.images.append(img)
                out.append(img)
            elif random.random() > 0.5:
                idx = random.randint(0, self.pool_size - 1)
                tmp = self.images[idx].clone()
                self.images[idx] = img
                out.append(tmp)
            else:
                out.append(img)
        return torch.cat(out, 0)


class StackPool(ImagePool):
    def query(self, images):
        out = []
        for image in images:
            if len(self.images) < self.pool_size:
                self.images.append(image)
                out.append(image)
            elif random.uniform(0.0, 1.0) > 0.5:
                index = random.randint(0, self.pool_size - 1)
                old = self.images[index].clone()
                self.images[index] = image
                out.append(old)
            else:
                out.append(image)
        return torch.stack(out, 0)


def numpy_init(module, scale=0.15):
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * scale))
        for name, b in module.named_buffers():
            if name.endswith("weight_u") or name.endswith("weight_v"):
                b.copy_(F.normalize(torch.tensor(rng.randn(*b.shape).astype(np.float32)), dim=0))
    return module


model = {"G_A2B": Generator(), "G_B2A": Generator(), "D_A": Discriminator(), "D_B": Discriminator()}
for m in model.values():
    numpy_init(m)
print(model["G_A2B"].model[10:14])
print(sum(p.numel() for p in model["G_A2B"].parameters()), sorted(model["D_A"].state_dict().keys()))

n_epochs, n_decay = 2, 2
opt_G = torch.optim.Adam(itertools.chain(model["G_A2B"].parameters(), model["G_B2A"].parameters()),
                         lr=2e-3, betas=(0.5, 0.999))
opt_D = {k: torch.optim.Adam(model[k].parameters(), lr=2e-3, betas=(0.5, 0.999))
         for k in ("D_A", "D_B")}
sched_G = torch.optim.lr_scheduler.LambdaLR(
    opt_G, lr_lambda=lambda e: 1.0 - max(0, e + 1 - n_epochs) / float(n_decay + 1))
pool_A, pool_B = ImagePool(3), StackPool(3)
mse, l1 = nn.MSELoss(), nn.L1Loss()


def set_requires_grad(nets, flag):
    for net in nets:
        for p in net.parameters():
            p.requires_grad_(flag)


for epoch in range(n_epochs + n_decay):
    for m in model.values():
        m.train()
    for i in range(2):
        A = torch.tensor(rng.rand(2, 3, 16, 16).astype(np.float32) * 2 - 1)
        B = torch.tensor(rng.rand(2, 3, 16, 16).astype(np.float32) * 2 - 1)
        # generators
        set_requires_grad([model["D_A"], model["D_B"]], False)
        opt_G.zero_grad()
        fake_B = model["G_A2B"](A)
        fake_A = model["G_B2A"](B)
        pred_B, pred_A = model["D_B"](fake_B), model["D_A"](fake_A)
        loss_gan = mse(pred_B, torch.ones_like(pred_B)) + mse(pred_A, torch.ones_like(pred_A))
        loss_cycle = l1(model["G_B2A"](fake_B), A) + l1(model["G_A2B"](fake_A), B)
        loss_idt = l1(model["G_A2B"](B), B) + l1(model["G_B2A"](A), A)
        loss_G = loss_gan + 10.0 * loss_cycle + 5.0 * loss_idt
        loss_G.backward()
        opt_G.step()
        d_grads_none = all(p.grad is None for p in model["D_A"].parameters())
        # discriminators, on pooled (detached) fakes
        set_requires_grad([model["D_A"], model["D_B"]], True)
        pooled_A = pool_A.query(fake_A)
        pooled_B = pool_B.query(fake_B.clone().detach())
        losses_D = []
        for key, real, fake in (("D_A", A, pooled_A), ("D_B", B, pooled_B)):
            opt_D[key].zero_grad()
            pr, pf = model[key](real), model[key](fake)
            loss_D = 0.5 * (mse(pr, torch.ones_like(pr)) + mse(pf, torch.zeros_like(pf)))
            loss_D.backward()
            opt_D[key].step()
            losses_D.append(loss_D.item())
        print("epoch {} it {} G {:.4f} (gan {:.4f} cyc {:.4f} idt {:.4f}) D_A {:.4f} D_B {:.4f}".format(
            epoch, i, loss_G.item(), loss_gan.item(), loss_cycle.item(), loss_idt.item(), *losses_D))
        print("   pooled", tuple(pooled_A.shape), pooled_A.requires_grad, tuple(pooled_B.shape),
              pooled_B.requires_grad, "D grads None:", d_grads_none)
    sched_G.step()
    print("lr", [round(x, 6) for x in sched_G.get_last_lr()])

buf = io.BytesIO()
torch.save({k: m.state_dict() for k, m in model.items()}, buf)
buf.seek(0)
ckpt = torch.load(buf)
G2 = Generator()
print(G2.load_state_dict(ckpt["G_A2B"]))
G2.eval()
model["G_A2B"].eval()
x = torch.tensor(rng.rand(1, 3, 16, 16).astype(np.float32) * 2 - 1)
with torch.no_grad():
    y1, y2 = model["G_A2B"](x), G2(x)
print(torch.equal(y1, y2), tuple(y1.shape), round(y1.abs().mean().item(), 5))
