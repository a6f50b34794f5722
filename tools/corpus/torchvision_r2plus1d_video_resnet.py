"""(2+1)D video ResNet blocks as torchvision writes them (torchvision/models/video/resnet.py:
Conv2Plus1D with its midplanes formula, BasicBlock, R2Plus1dStem, VideoResNet._make_layer with
get_downsample_stride, the kaiming / constant init loop).

Adapted: one block per layer, two layers with 16/32 planes and a 12-channel stem (the
repository's r2plus1d_18 has four layers of two blocks, 64..512 planes); conv weights then
refilled from cosines so printed values do not depend on the random stream; a synthetic
2x3x8x32x32 clip; one label-smoothed cross-entropy step.
"""
import torch
import torch.nn as nn


class Conv2Plus1D(nn.Sequential):
    def __init__(self, in_planes, out_planes, midplanes, stride=1, padding=1):
        super().__init__(
            nn.Conv3d(in_planes, midplanes, kernel_size=(1, 3, 3), stride=(1, stride, stride),
                      padding=(0, padding, padding), bias=False),
            nn.BatchNorm3d(midplanes),
            nn.ReLU(inplace=True),
            nn.Conv3d(midplanes, out_planes, kernel_size=(3, 1, 1), stride=(stride, 1, 1),
                      padding=(padding, 0, 0), bias=False),
        )

    @staticmethod
    def get_downsample_stride(stride):
        return stride, stride, stride


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
        midplanes = (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)
        super().__init__()
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, midplanes, stride), nn.BatchNorm3d(planes), nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.conv2(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out


class R2Plus1dStem(nn.Sequential):
    def __init__(self):
        super().__init__(
            nn.Conv3d(3, 12, kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
            nn.BatchNorm3d(12),
            nn.ReLU(inplace=True),
            nn.Conv3d(12, 16, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0), bias=False),
            nn.BatchNorm3d(16),
            nn.ReLU(inplace=True),
        )


class VideoResNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.inplanes = 16
        self.stem = R2Plus1dStem()
        self.layer1 = self._make_layer(Conv2Plus1D, 16, 1)
        self.layer2 = self._make_layer(Conv2Plus1D, 32, 1, stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(32, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, conv_builder, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            ds_stride = conv_builder.get_downsample_stride(stride)
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, planes, kernel_size=1, stride=ds_stride, bias=False),
                nn.BatchNorm3d(planes))
        layers = [BasicBlock(self.inplanes, planes, conv_builder, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes, conv_builder))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.stem(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


torch.manual_seed(0)
model = VideoResNet()
total = sum(p.numel() for p in model.parameters())
print("params", total, "buffers", sum(b.numel() for b in model.buffers()))
for name, m in model.named_children():
    print(f"{name:8s} {sum(p.numel() for p in m.parameters()):7d}")
print(model.layer2[0].conv1[0])
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        if p.dim() > 1:
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (0.3 + 0.01 * i)).view_as(p) * 0.1)
clip = torch.linspace(-1, 1, 2 * 3 * 8 * 32 * 32).view(2, 3, 8, 32, 32)  # B, C, T, H, W
video = clip.permute(0, 2, 1, 3, 4)  # B,T,C,H,W as loaded
print("video (B,T,C,H,W)", video.shape, "-> model", video.permute(0, 2, 1, 3, 4).shape)
model.eval()
with torch.no_grad():
    feats = model.stem(clip)
    print("stem", feats.shape)
    f1 = model.layer1(feats)
    f2 = model.layer2(f1)
    print("layer1", f1.shape, "layer2", f2.shape)
    logits = model(clip)
print("logits", logits.shape, logits.softmax(-1).sum(-1))
model.train()
out = model(clip)
loss = nn.CrossEntropyLoss(label_smoothing=0.1)(out, torch.tensor([1, 3]))
loss.backward()
print(f"train loss {loss.item():.5f}", model.fc.weight.grad.shape)
print("stem bn running_var", model.stem[1].running_var[:4])
