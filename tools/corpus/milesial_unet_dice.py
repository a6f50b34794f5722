"""A U-Net segmentation step with CrossEntropy + Dice loss, after milesial/Pytorch-UNet
(unet/unet_parts.py, unet/unet_model.py, utils/dice_score.py, train.py's inner loop, evaluate.py).

Adapted: the U-Net is 3 levels deep with 8/16/32/64 channels (the repository's is 5 with 64-1024),
both up-sampling modes are built; data are 6 synthetic 24x24 images of discs with their masks
(numpy); weights come from numpy; 3 RMSprop steps as train.py takes them (gradient clipping,
GradScaler disabled and made with torch.amp instead of the deprecated torch.cuda.amp, channels_last input) and one Dice evaluation under inference_mode.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch import optim

class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()

        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class SmallUNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False):
        super(SmallUNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        self.inc = (DoubleConv(n_channels, 8))
        self.down1 = (Down(8, 16))
        self.down2 = (Down(16, 32))
        factor = 2 if bilinear else 1
        self.down3 = (Down(32, 64 // factor))
        self.up1 = (Up(64, 32 // factor, bilinear))
        self.up2 = (Up(32, 16 // factor, bilinear))
        self.up3 = (Up(16, 8, bilinear))
        self.outc = (OutConv(8, n_classes))

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x = self.up1(x4, x3)
        x = self.up2(x, x2)
        x = self.up3(x, x1)
        logits = self.outc(x)
        return logits


def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


rng = np.random.RandomState(0)
size = 24
yy, xx = np.mgrid[0:size, 0:size]
images, masks = [], []
for i in range(6):
    cy, cx, r = rng.randint(6, size - 6), rng.randint(6, size - 6), rng.randint(3, 6)
    m = ((yy - cy) ** 2 + (xx - cx) ** 2 < r * r).astype(np.int64)
    images.append(0.3 * rng.rand(3, size, size) + 0.7 * m[None] * np.array([0.9, 0.5, 0.2])[:, None, None])
    masks.append(m)
images = torch.from_numpy(np.stack(images).astype(np.float32))
true_masks_all = torch.from_numpy(np.stack(masks))


@torch.inference_mode()
def evaluate(net, batches):
    net.eval()
    dice_score = 0
    for image, mask_true in batches:
        mask_pred = net(image)
        mask_true = F.one_hot(mask_true, net.n_classes).permute(0, 3, 1, 2).float()
        mask_pred = F.one_hot(mask_pred.argmax(dim=1), net.n_classes).permute(0, 3, 1, 2).float()
        dice_score += multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)
    net.train()
    return dice_score / max(len(batches), 1)


for bilinear in (False, True):
    model = SmallUNet(n_channels=3, n_classes=2, bilinear=bilinear)
    model = model.to(memory_format=torch.channels_last)
    with torch.no_grad():
        for p in model.parameters():
            scale = 1 / np.sqrt(np.prod(p.shape[1:])) if p.dim() > 1 else 0.1
            p.copy_(torch.from_numpy((rng.randn(*p.shape) * scale).astype(np.float32)))
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9, foreach=True)
    grad_scaler = torch.amp.GradScaler("cpu", enabled=False)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    model.train()
    for step in range(3):
        sl = slice(2 * step, 2 * step + 2)
        imgs = images[sl].to(dtype=torch.float32, memory_format=torch.channels_last)
        true_masks = true_masks_all[sl].to(dtype=torch.long)
        masks_pred = model(imgs)
        loss = criterion(masks_pred, true_masks)
        loss += dice_loss(
            F.softmax(masks_pred, dim=1).float(),
            F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
            multiclass=True
        )
        optimizer.zero_grad(set_to_none=True)
        grad_scaler.scale(loss).backward()
        grad_scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        grad_scaler.step(optimizer)
        grad_scaler.update()
        print(bilinear, step, round(loss.item(), 4), round(norm.item(), 3))
    score = evaluate(model, [(images[:3], true_masks_all[:3]), (images[3:], true_masks_all[3:])])
    print("dice", round(float(score), 4), masks_pred.shape)
    print("dice of the masks with themselves", dice_coeff(true_masks_all.float(), true_masks_all.float(), reduce_batch_first=True).item())
