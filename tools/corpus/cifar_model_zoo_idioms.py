"""kuangliu/pytorch-cifar idioms: a ShuffleNetV2 and an SE block as the repo writes them, built,
printed, run forward and backward on a batch; then the idioms scripts run over such models:
print(dir(model)), re-initialising every layer that has reset_parameters, Sequential repeats,
and choosing the attention backend. Every printed value is independent of the random stream."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


class ShuffleBlock(nn.Module):
    def __init__(self, groups=2):
        super(ShuffleBlock, self).__init__()
        self.groups = groups

    def forward(self, x):
        '''Channel shuffle: [N,C,H,W] -> [N,g,C/g,H,W] -> [N,C/g,g,H,w] -> [N,C,H,W]'''
        N, C, H, W = x.size()
        g = self.groups
        return x.view(N, g, C//g, H, W).permute(0, 2, 1, 3, 4).reshape(N, C, H, W)


class SplitBlock(nn.Module):
    def __init__(self, ratio):
        super(SplitBlock, self).__init__()
        self.ratio = ratio

    def forward(self, x):
        c = int(x.size(1) * self.ratio)
        return x[:, :c, :, :], x[:, c:, :, :]


class BasicBlock(nn.Module):
    def __init__(self, in_channels, split_ratio=0.5):
        super(BasicBlock, self).__init__()
        self.split = SplitBlock(split_ratio)
        in_channels = int(in_channels * split_ratio)
        self.conv1 = nn.Conv2d(in_channels, in_channels, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv2 = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1,
                               groups=in_channels, bias=False)
        self.bn2 = nn.BatchNorm2d(in_channels)
        self.conv3 = nn.Conv2d(in_channels, in_channels, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(in_channels)
        self.shuffle = ShuffleBlock()

    def forward(self, x):
        x1, x2 = self.split(x)
        out = F.relu(self.bn1(self.conv1(x2)))
        out = self.bn2(self.conv2(out))
        out = F.relu(self.bn3(self.conv3(out)))
        out = torch.cat([x1, out], 1)
        out = self.shuffle(out)
        return out


class SEBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super(SEBlock, self).__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes)
            )
        # SE layers
        self.fc1 = nn.Conv2d(planes, planes//16, kernel_size=1)  # Use nn.Conv2d instead of nn.Linear
        self.fc2 = nn.Conv2d(planes//16, planes, kernel_size=1)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        w = F.avg_pool2d(out, out.size(2))
        w = F.relu(self.fc1(w))
        w = F.sigmoid(self.fc2(w))
        out = out * w
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super(Net, self).__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32))
        self.blocks = nn.Sequential(BasicBlock(32), SEBlock(32, 64, stride=2))
        self.embed = nn.Embedding(10, 64, padding_idx=0)
        self.norm = nn.LayerNorm(64)
        self.linear = nn.Linear(64, num_classes)

    def forward(self, x):
        out = F.relu(self.stem(x))
        out = self.blocks(out)
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(self.norm(out))


torch.manual_seed(0)
net = Net()
print(net)
print(sum(p.numel() for p in net.parameters()), len(net.state_dict()))
print([n for n in dir(net) if not n.startswith('__')])

x = torch.randn(4, 3, 16, 16)
targets = torch.tensor([1, 0, 3, 9])
out = net(x)
loss = nn.CrossEntropyLoss()(out, targets)
loss.backward()
print(out.shape, out.dtype, loss.shape, loss.grad_fn.name())
print([name for name, p in net.named_parameters() if p.grad is None])
print(net.stem[1].num_batches_tracked, net.blocks[0].bn1.num_batches_tracked)

# re-initialise every layer that knows how, as training scripts do between runs
reset = []
for name, m in net.named_modules():
    if hasattr(m, 'reset_parameters'):
        m.reset_parameters()
        reset.append(f'{name}:{type(m).__name__}')
print(reset)
print(net.stem[1].num_batches_tracked, net.stem[1].running_var[:3], net.norm.weight[:3])
print(net.embed.weight[0].abs().sum(), net.blocks[1].bn2.weight.sum())

with torch.no_grad():
    net.norm.weight.mul_(3)
print(net.norm.weight.sum())
net.norm.reset_parameters()
print(net.norm.weight.sum())

# Sequential arithmetic: repeated blocks share their modules
head = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
deep = head * 3
print(len(deep), deep[0] is deep[2], len(list(deep.parameters())))
head += nn.Sequential(nn.Tanh())
print(head)
try:
    head * 0
except ValueError as e:
    print('ValueError', str(e).split(' for ')[0])

# attention backends
q = torch.ones(1, 2, 3, 4)
with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
    print(F.scaled_dot_product_attention(q, q, q).sum(), torch.backends.cuda.math_sdp_enabled())
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    try:
        F.scaled_dot_product_attention(q, q, q)
    except RuntimeError as e:
        print('RuntimeError', e)
print(torch.backends.cuda.math_sdp_enabled(), repr(SDPBackend.MATH))
