"""A pooling lesson in the style of pytorch-book chapter 4: average pooling of integer images
(torch.randint / torch.arange give int64 tensors), which PyTorch averages in integer arithmetic,
truncating toward zero; other integer dtypes are refused."""
import torch
import torch.nn as nn
import torch.nn.functional as F

image = torch.arange(16).view(1, 1, 4, 4) * 3 - 20
print(image)
pool = nn.AvgPool2d(2, 2)
print(pool(image), pool(image).dtype)
print(list(pool.parameters()))
print(nn.AvgPool2d(3, 1, padding=1)(image))
print(nn.AvgPool2d(3, 1, padding=1, count_include_pad=False)(image))
print(nn.AvgPool2d(3, 2, ceil_mode=True)(image))
print(F.avg_pool2d(image, 2, divisor_override=3))
print(F.avg_pool2d(image[0], 2))            # unbatched (C, H, W)

signal = torch.tensor([[[-5, 0, 1, 2, 7, -7]]])
print(nn.AvgPool1d(2)(signal), F.avg_pool1d(signal, 3, stride=1, padding=1))
volume = torch.arange(-8, 24).view(1, 1, 2, 4, 4)
print(nn.AvgPool3d((1, 2, 2))(volume))
print(F.avg_pool3d(volume, 2, divisor_override=5))

for dtype in (torch.int32, torch.uint8, torch.bool):
    try:
        F.avg_pool2d(image.to(dtype), 2)
    except NotImplementedError as e:
        print(type(e).__name__, e)
try:
    F.avg_pool3d(volume.to(torch.int16), 2)
except RuntimeError as e:
    print(type(e).__name__, e)
