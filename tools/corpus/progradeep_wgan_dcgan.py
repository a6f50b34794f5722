"""progradeep/gan-pytorch, WGAN/models/dcgan.py and WGAN/trainer.py: the DCGAN critic and generator
built layer by layer with Sequential.add_module, and the WGAN loop (weight clipping with clamp_,
critic steps with backward(one) / backward(mone), RMSprop).  The original names its layers with
dotted strings ('initial.{nz}-{cngf}.convt'), which PyTorch refuses with a KeyError: that refusal
is printed first, then the models are built with '_' where the names had '.'.  The images (a
torchvision dataset in the original) are replaced by fixed numpy arrays, the weights and noise
come from a fixed numpy stream, and the run is a few iterations, so the output is the same under
any seed.  Legacy `.data[0]` reads became `.item()`."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

rng = np.random.RandomState(0)


def numpy_normal(shape, mean=0.0, std=1.0):
    return torch.from_numpy(rng.normal(mean, std, shape).astype(np.float32))


class DCGAN_D(nn.Module):
    def __init__(self, isize, nz, nc, ndf, ngpu, n_extra_layers=0, sep="."):
        super(DCGAN_D, self).__init__()
        self.ngpu = ngpu
        assert isize % 16 == 0, "isize has to be a multiple of 16"
        main = nn.Sequential()
        main.add_module('initial{2}conv{2}{0}-{1}'.format(nc, ndf, sep),
                        nn.Conv2d(nc, ndf, 4, 2, 1, bias=False))
        main.add_module('initial{1}relu{1}{0}'.format(ndf, sep), nn.LeakyReLU(0.2, inplace=True))
        csize, cndf = isize / 2, ndf
        for t in range(n_extra_layers):
            main.add_module('extra-layers-{0}{2}{1}{2}conv'.format(t, cndf, sep),
                            nn.Conv2d(cndf, cndf, 3, 1, 1, bias=False))
            main.add_module('extra-layers-{0}{2}{1}{2}batchnorm'.format(t, cndf, sep),
                            nn.BatchNorm2d(cndf))
            main.add_module('extra-layers-{0}{2}{1}{2}relu'.format(t, cndf, sep),
                            nn.LeakyReLU(0.2, inplace=True))
        while csize > 4:
            in_feat, out_feat = cndf, cndf * 2
            main.add_module('pyramid{2}{0}-{1}{2}conv'.format(in_feat, out_feat, sep),
                            nn.Conv2d(in_feat, out_feat, 4, 2, 1, bias=False))
            main.add_module('pyramid{1}{0}{1}batchnorm'.format(out_feat, sep), nn.BatchNorm2d(out_feat))
            main.add_module('pyramid{1}{0}{1}relu'.format(out_feat, sep), nn.LeakyReLU(0.2, inplace=True))
            cndf = cndf * 2
            csize = csize / 2
        main.add_module('final{2}{0}-{1}{2}conv'.format(cndf, 1, sep), nn.Conv2d(cndf, 1, 4, 1, 0, bias=False))
        self.main = main

    def forward(self, input):
        output = self.main(input)
        output = output.mean(0)
        return output.view(1)


class DCGAN_G(nn.Module):
    def __init__(self, isize, nz, nc, ngf, ngpu, n_extra_layers=0, sep="."):
        super(DCGAN_G, self).__init__()
        self.ngpu = ngpu
        assert isize % 16 == 0, "isize has to be a multiple of 16"
        cngf, tisize = ngf // 2, 4
        while tisize != isize:
            cngf = cngf * 2
            tisize = tisize * 2
        main = nn.Sequential()
        main.add_module('initial{2}{0}-{1}{2}convt'.format(nz, cngf, sep),
                        nn.ConvTranspose2d(nz, cngf, 4, 1, 0, bias=False))
        main.add_module('initial{1}{0}{1}batchnorm'.format(cngf, sep), nn.BatchNorm2d(cngf))
        main.add_module('initial{1}{0}{1}relu'.format(cngf, sep), nn.ReLU(True))
        csize = 4
        while csize < isize // 2:
            main.add_module('pyramid{2}{0}-{1}{2}convt'.format(cngf, cngf // 2, sep),
                            nn.ConvTranspose2d(cngf, cngf // 2, 4, 2, 1, bias=False))
            main.add_module('pyramid{1}{0}{1}batchnorm'.format(cngf // 2, sep), nn.BatchNorm2d(cngf // 2))
            main.add_module('pyramid{1}{0}{1}relu'.format(cngf // 2, sep), nn.ReLU(True))
            cngf = cngf // 2
            csize = csize * 2
        main.add_module('final{2}{0}-{1}{2}convt'.format(cngf, nc, sep),
                        nn.ConvTranspose2d(cngf, nc, 4, 2, 1, bias=False))
        main.add_module('final{1}{0}{1}tanh'.format(nc, sep), nn.Tanh())
        self.main = main

    def forward(self, input):
        return self.main(input)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.copy_(numpy_normal(tuple(m.weight.shape), 0.0, 0.02))
    elif classname.find('BatchNorm') != -1:
        m.weight.data.copy_(numpy_normal(tuple(m.weight.shape), 1.0, 0.02))
        m.bias.data.fill_(0)


isize, nz, nc, ngf, ndf = 32, 16, 3, 8, 8
for build in (DCGAN_G, DCGAN_D):
    try:
        build(isize, nz, nc, ngf, 1)
    except KeyError as e:
        print(build.__name__, type(e).__name__, e)
try:
    nn.Sequential().add_module('', nn.ReLU())
except KeyError as e:
    print('empty name', type(e).__name__, e)

netG = DCGAN_G(isize, nz, nc, ngf, 1, sep='_')
netD = DCGAN_D(isize, nz, nc, ndf, 1, n_extra_layers=1, sep='_')
netG.apply(weights_init)
netD.apply(weights_init)
print(netG)
print([name for name, _ in netD.named_parameters()][:4])
print(sorted(netD.state_dict().keys())[-3:])

batch_size, n_batches = 8, 6
images = [torch.from_numpy(rng.uniform(-1, 1, (batch_size, nc, isize, isize)).astype(np.float32))
          for _ in range(n_batches)]
input = torch.FloatTensor(batch_size, 3, isize, isize)
noise = torch.FloatTensor(batch_size, nz, 1, 1)
one = torch.FloatTensor([1])
mone = one * -1
optimizerD = optim.RMSprop(netD.parameters(), lr=5e-5)
optimizerG = optim.RMSprop(netG.parameters(), lr=5e-5)
clamp_lower, clamp_upper, diters = -0.01, 0.01, 2

gen_iterations = 0
data_iter = iter(images)
i = 0
while i < len(images):
    for p in netD.parameters():
        p.requires_grad = True
    j = 0
    while j < diters and i < len(images):
        j += 1
        for p in netD.parameters():
            p.data.clamp_(clamp_lower, clamp_upper)
        real_cpu = next(data_iter)
        i += 1
        netD.zero_grad()
        input.resize_as_(real_cpu).copy_(real_cpu)
        errD_real = netD(input)
        errD_real.backward(one)
        noise.copy_(numpy_normal((batch_size, nz, 1, 1)))
        fake = netG(noise)
        errD_fake = netD(fake.detach())
        errD_fake.backward(mone)
        errD = errD_real - errD_fake
        optimizerD.step()
    for p in netD.parameters():
        p.requires_grad = False
    netG.zero_grad()
    noise.copy_(numpy_normal((batch_size, nz, 1, 1)))
    fake = netG(noise)
    errG = netD(fake)
    errG.backward(one)
    optimizerG.step()
    gen_iterations += 1
    print('[%d/%d][%d] Loss_D: %.4e Loss_G: %.4e Loss_D_real: %.4e Loss_D_fake %.4e'
          % (i, len(images), gen_iterations, errD.item(), errG.item(), errD_real.item(), errD_fake.item()))

for p in netD.parameters():
    p.data.clamp_(clamp_lower, clamp_upper)
print('max |critic weight| after clamping:', max(p.data.abs().max().item() for p in netD.parameters()))
print('critic grads kept while frozen:', all(p.grad is not None for p in netD.parameters()))
print(netD.main.pyramid_16_batchnorm.running_mean[:4], netD.main.pyramid_16_batchnorm.num_batches_tracked)
print(fake.shape, fake.dtype, round(fake.abs().max().item(), 4))
