"""facebookresearch/mixup-cifar10 and clovaai/CutMix-PyTorch idioms: mixup_data / mixup_criterion,
rand_bbox and the CutMix paste into a batch, a PyramidNet basic block whose shortcut is zero-padded
with a legacy FloatTensor, the top-k error meter (the original correct[:k].view(-1), which current
PyTorch refuses for k > 1, and its reshape), AverageMeter, the 0.3-era loss.data[0] and
Variable(volatile=True), and a few SGD steps. Weights, data and random draws from numpy: both
libraries see the same."""
import warnings

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable

rng = np.random.RandomState(0)


def mixup_data(x, y, alpha=1.0):
    lam = rng.beta(alpha, alpha) if alpha > 0 else 1
    index = torch.from_numpy(rng.permutation(x.size()[0]))
    mixed_x = lam * x + (1 - lam) * x[index, :]
    return mixed_x, y, y[index], lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


def rand_bbox(size, lam):
    W, H = size[2], size[3]
    cut_rat = np.sqrt(1. - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx, cy = rng.randint(W), rng.randint(H)
    bbx1 = np.clip(cx - cut_w // 2, 0, W)
    bby1 = np.clip(cy - cut_h // 2, 0, H)
    bbx2 = np.clip(cx + cut_w // 2, 0, W)
    bby2 = np.clip(cy + cut_h // 2, 0, H)
    return bbx1, bby1, bbx2, bby2


class BasicBlock(nn.Module):
    outchannel_ratio = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.bn3(self.conv2(self.relu(self.bn2(self.conv1(self.bn1(x))))))
        if self.downsample is not None:
            shortcut = self.downsample(x)
            featuremap_size = shortcut.size()[2:4]
        else:
            shortcut = x
            featuremap_size = out.size()[2:4]
        batch_size, residual_channel, shortcut_channel = out.size()[0], out.size()[1], shortcut.size()[1]
        if residual_channel != shortcut_channel:
            padding = torch.autograd.Variable(torch.FloatTensor(batch_size, residual_channel - shortcut_channel, featuremap_size[0], featuremap_size[1]).fill_(0))
            out += torch.cat((shortcut, padding), 1)
        else:
            out += shortcut
        return out


class TinyPyramid(nn.Module):
    def __init__(self, num_classes=10):
        super(TinyPyramid, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = BasicBlock(8, 10)
        self.layer2 = BasicBlock(10, 12, stride=2, downsample=nn.AvgPool2d((2, 2), stride=(2, 2), ceil_mode=True))
        self.bn_final = nn.BatchNorm2d(12)
        self.relu_final = nn.ReLU(inplace=True)
        self.avgpool = nn.AvgPool2d(8)
        self.fc = nn.Linear(12, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.bn1(self.conv1(x))))
        x = self.avgpool(self.relu_final(self.bn_final(x)))
        return self.fc(x.view(x.size(0), -1))


class AverageMeter(object):
    def __init__(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def accuracy(output, target, topk=(1,), flatten=lambda t: t.reshape(-1)):
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        correct_k = flatten(correct[:k]).float().sum(0, keepdim=True)
        wrong_k = batch_size - correct_k
        res.append(wrong_k.mul_(100.0 / batch_size))
    return res


model = TinyPyramid()
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("weight") and p.dim() > 1:
            p.copy_(torch.from_numpy((rng.randn(*p.shape) / np.sqrt(p[0].numel())).astype(np.float32)))
        elif name == "fc.bias":
            p.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, size=p.shape).astype(np.float32)))
print(model.layer2)
print(sum(p.numel() for p in model.parameters()))

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
losses, top1, top5 = AverageMeter(), AverageMeter(), AverageMeter()
images = torch.from_numpy(rng.randn(6, 16, 3, 16, 16).astype(np.float32))
labels = torch.from_numpy(rng.randint(0, 10, size=(6, 16)))
for i in range(6):
    input, target = images[i].clone(), labels[i]
    if i % 2 == 0:
        lam = rng.beta(1.0, 1.0)
        rand_index = torch.from_numpy(rng.permutation(input.size()[0]))
        target_a, target_b = target, target[rand_index]
        bbx1, bby1, bbx2, bby2 = rand_bbox(input.size(), lam)
        input[:, :, bbx1:bbx2, bby1:bby2] = input[rand_index, :, bbx1:bbx2, bby1:bby2]
        lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (input.size()[-1] * input.size()[-2]))
        output = model(input)
        loss = criterion(output, target_a) * lam + criterion(output, target_b) * (1. - lam)
        print("cutmix box", (int(bbx1), int(bby1), int(bbx2), int(bby2)), round(float(lam), 4))
    else:
        inputs, targets_a, targets_b, lam = mixup_data(input, target, 1.0)
        inputs, targets_a, targets_b = map(Variable, (inputs, targets_a, targets_b))
        output = model(inputs)
        loss = mixup_criterion(criterion, output, targets_a, targets_b, lam)
        _, predicted = torch.max(output.data, 1)
        correct = (lam * predicted.eq(targets_a.data).cpu().sum().float()
                   + (1 - lam) * predicted.eq(targets_b.data).cpu().sum().float())
        print("mixup lam %.4f correct %.3f" % (lam, correct))
    err1, err5 = accuracy(output.data, target, topk=(1, 5))
    losses.update(loss.item(), input.size(0))
    top1.update(err1.item(), input.size(0))
    top5.update(err5.item(), input.size(0))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print('Loss {loss.val:.4f} ({loss.avg:.4f})\tTop 1-err {top1.val:.4f}\tTop 5-err {top5.val:.4f}'.format(loss=losses, top1=top1, top5=top5))

# the original meter and the 0.3-era idioms, as they fail on current PyTorch
for flatten in (lambda t: t.view(-1),):
    try:
        accuracy(output.data, target, topk=(1, 5), flatten=flatten)
    except RuntimeError as e:
        print("RuntimeError:", e)
print([float(e) for e in accuracy(output.data, target, topk=(1,), flatten=lambda t: t.view(-1))])
try:
    print(loss.data[0])
except IndexError as e:
    print("IndexError:", e)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    v = Variable(images[0], volatile=True)
print([str(w.message) for w in caught], v.requires_grad)
model.eval()
with torch.no_grad():
    print(model(images[0]).argmax(1).tolist())
