"""A 3-D U-Net as wolny/pytorch-3dunet writes it (pytorch3dunet/unet3d/buildingblocks.py's
DoubleConv / Encoder / Decoder, model.py's UNet3D with encoders_features.insert(0, x)).

Adapted: three levels with 8/16/32 feature maps (the repository's default is 64..512), GroupNorm
with 4 groups in place of its configurable order string; the first decoder joins by nearest
interpolation, the second trilinearly; weights filled deterministically from sines; a synthetic
16^3 sphere in place of a volume; one cross-entropy step and an eval-mode softmax pass.
Printed: the parameter count and model size, shapes, the loss, gradient norms, memory footprint.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def init_det(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = p.numel()
            p.copy_(0.1 * torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + len(name)).view_as(p))


class DoubleConv(nn.Sequential):
    def __init__(self, in_ch, out_ch, encoder=True):
        super().__init__()
        mid = max(out_ch // 2, in_ch) if encoder else out_ch
        self.add_module("conv1", nn.Conv3d(in_ch, mid, kernel_size=3, padding=1, bias=False))
        self.add_module("gn1", nn.GroupNorm(num_groups=4, num_channels=mid))
        self.add_module("relu1", nn.ReLU(inplace=True))
        self.add_module("conv2", nn.Conv3d(mid, out_ch, kernel_size=3, padding=1, bias=False))
        self.add_module("gn2", nn.GroupNorm(num_groups=4, num_channels=out_ch))
        self.add_module("relu2", nn.ReLU(inplace=True))


class Encoder(nn.Module):
    def __init__(self, in_ch, out_ch, apply_pooling=True, pool_type="max"):
        super().__init__()
        if apply_pooling:
            self.pooling = nn.MaxPool3d(kernel_size=2) if pool_type == "max" else nn.AvgPool3d(kernel_size=2)
        else:
            self.pooling = None
        self.basic_module = DoubleConv(in_ch, out_ch)

    def forward(self, x):
        if self.pooling is not None:
            x = self.pooling(x)
        return self.basic_module(x)


class Decoder(nn.Module):
    def __init__(self, in_ch, out_ch, mode="nearest"):
        super().__init__()
        self.mode = mode
        self.basic_module = DoubleConv(in_ch, out_ch, encoder=False)

    def forward(self, encoder_features, x):
        output_size = encoder_features.size()[2:]
        x = F.interpolate(x, size=output_size, mode=self.mode)
        x = torch.cat((encoder_features, x), dim=1)
        return self.basic_module(x)


class UNet3D(nn.Module):
    def __init__(self, in_channels, out_channels, f_maps=(8, 16, 32), final_sigmoid=True):
        super().__init__()
        self.encoders = nn.ModuleList()
        for i, fm in enumerate(f_maps):
            self.encoders.append(Encoder(in_channels if i == 0 else f_maps[i - 1], fm, apply_pooling=i > 0))
        self.decoders = nn.ModuleList()
        rev = list(reversed(f_maps))
        for i in range(len(rev) - 1):
            self.decoders.append(Decoder(rev[i] + rev[i + 1], rev[i + 1], mode="trilinear" if i else "nearest"))
        self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)
        self.final_activation = nn.Sigmoid() if final_sigmoid else nn.Softmax(dim=1)

    def forward(self, x):
        encoders_features = []
        for encoder in self.encoders:
            x = encoder(x)
            encoders_features.insert(0, x)
        encoders_features = encoders_features[1:]
        for decoder, encoder_features in zip(self.decoders, encoders_features):
            x = decoder(encoder_features, x)
        x = self.final_conv(x)
        if not self.training:
            x = self.final_activation(x)
        return x


torch.manual_seed(0)
model = UNet3D(1, 2, final_sigmoid=False)
init_det(model)
print(model.encoders[1])
n_params = sum(p.numel() for p in model.parameters())
n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f"Number of parameters: {n_params}, trainable: {n_train}")
print(f"Model size: {n_params * 4 / 1024 ** 2:.3f} MB")

z, y, x_ = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16), indexing="ij")
vol = (x_ ** 2 + y ** 2 + z ** 2 < 0.5).float().unsqueeze(0).unsqueeze(0)
vol = torch.cat([vol, 1 - vol], 0)
print("input", vol.shape, vol.dtype, vol.mean().item())
model.train()
out = model(vol)
print("logits", tuple(out.shape), out.dtype)
target = (vol[:, 0] > 0.5).long()
loss = F.cross_entropy(out, target)
print(f"loss: {loss.item():.5f}")
loss.backward()
g = model.final_conv.weight.grad
print("final grad", g.shape, f"{g.norm().item():.5f}")
print("enc0 conv1 grad norm", round(model.encoders[0].basic_module.conv1.weight.grad.norm().item(), 5))
model.eval()
with torch.no_grad():
    prob = model(vol)
print("softmax sums", prob.sum(1).mean().item(), prob.shape)
print("argmax classes", prob.argmax(1).unique().tolist())
print("activation memory MB", round(out.element_size() * out.nelement() / 2 ** 20, 4))
