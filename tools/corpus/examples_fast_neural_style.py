"""pytorch/examples fast_neural_style: TransformerNet with ReflectionPad2d convolutions,
InstanceNorm2d(affine=True), residual blocks, UpsampleConvLayer with F.interpolate, gram matrices
of a frozen feature net, normalize_batch, content + style loss with Adam."""
import torch
import torch.nn.functional as F
from torch.optim import Adam


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super(TransformerNet, self).__init__()
        self.conv1 = ConvLayer(3, 8, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer(8, 16, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(16, affine=True)
        self.res1 = ResidualBlock(16)
        self.res2 = ResidualBlock(16)
        self.deconv1 = UpsampleConvLayer(16, 8, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(8, affine=True)
        self.deconv3 = ConvLayer(8, 3, kernel_size=9, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.deconv3(y)
        return y


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


print(torch.nn.ReflectionPad2d(1)(torch.arange(4.).view(1, 1, 2, 2)))
print(F.interpolate(torch.tensor([[[[1., 2.], [3., 4.]]]]), scale_factor=2, mode='nearest'))
print(gram_matrix(torch.ones(1, 2, 2, 2)))
print(normalize_batch(torch.full((1, 3, 1, 1), 255.)))

torch.manual_seed(42)
transformer = TransformerNet()
features = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())
for p in features.parameters():
    p.requires_grad = False
optimizer = Adam(transformer.parameters(), 1e-2)
mse_loss = torch.nn.MSELoss()
style = normalize_batch(torch.rand(1, 3, 16, 16) * 255).repeat(4, 1, 1, 1)
gram_style = gram_matrix(features(style))
content_weight, style_weight = 1e2, 1e6
history = []
for batch_id in range(12):
    x = torch.rand(4, 3, 16, 16) * 255
    optimizer.zero_grad()
    y = transformer(x)
    y = normalize_batch(y)
    x = normalize_batch(x)
    features_y = features(y)
    features_x = features(x)
    content_loss = content_weight * mse_loss(features_y, features_x)
    style_loss = style_weight * mse_loss(gram_matrix(features_y), gram_style[:len(x), :, :])
    total_loss = content_loss + style_loss
    total_loss.backward()
    optimizer.step()
    history.append(total_loss.item())
print(y.shape, gram_style.shape, history[-1] < history[0])
print(transformer.in1.weight.shape, transformer.in1.running_mean, transformer.in1.track_running_stats)
