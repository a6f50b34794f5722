"""simo-an/pytorch-tutorial 02-beginner/python_basics/tensor_intermediate.ipynb (code cells in order):
cat/stack, chunk/split, indexing and masks, nonzero, where/clamp, view vs the deprecated resize
vs reshape (writing through each changes the original: all three share its storage), resize_,
transpose/permute, unsqueeze/expand/squeeze, pow/sqrt/exp/log, max/median/clamp, and the
TypeError of torch.clamp() with no arguments (the notebook's last cell ends with it).

Adapted: the random tensors (torch.randint, torch.rand) replaced by fixed numpy draws of the same
shapes and ranges; a.resize_(2, 3) prints only the elements it keeps (the grown ones are
uninitialised memory); the broadcast cell moved before the failing clamp() cell.
"""
import warnings

import numpy as np
import torch

warnings.simplefilter('ignore')  # Tensor.resize's deprecation warning goes to stderr
rng = np.random.default_rng(7)

a = torch.Tensor([[1, 2], [3, 4]])
b = torch.Tensor([[5, 6], [7, 8]])

c1 = torch.cat([a, b], 0)
c2 = torch.cat([a, b], 1)

print(c1)
print(c2)

d1 = torch.stack([a, b], 0)
d2 = torch.stack([a, b], 1)
d3 = torch.stack([a, b], 2)

'''
1.
[[1, 2], [3, 4]] cat [[5, 6], [7, 8]] = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]
2.
[1, 2] cat [5, 6] = [[1, 2], [5, 6]]
[3, 4] cat [7, 8] = [[3, 4], [7, 8]]
=>
[[[1, 2], [5, 6]],[[3, 4], [7, 8]]]
3.
[[1, 5], [2, 6], [3, 7], [4, 8]]
'''
print(d1)
print(d2)
print(d3)

a = torch.Tensor([[1, 2, 3], [4, 5, 6]])

#TODO Review
e1 = a.chunk(2, 0)
e2 = a.chunk(2, 1)

f1 = a.split(2, 0)
f2 = a.split(2, 1)

print(e1)
print(e2)

print(f1)
print(f2)

a = torch.Tensor([[0, 1], [2, 3]])

print(a[1])
print(a[0, 1])

print(a > 0)
print(a[a > 0])
print(torch.masked_select(a, a > 0))

# 获取非0元素的坐标
print(torch.nonzero(a))

# where & clamp
full_one = torch.full_like(a, 1)
print(torch.where(a > 1, full_one, a))

g = a.clamp(1, 2)
print(g)

#### view, resize, reshape
a = torch.arange(1, 5)

# view
b1 = a.view(2, 2)
b2 = a.resize(4, 1) #deprecated
b3 = a.reshape(4, 1)

print(a)
print(b1)
print(b2)
print(b3)

b1[0, 0] = 6
print(a)
b2[0, 0] = 7
print(a)
b3[0, 0] = 8
print(a)

a.resize_(2, 3) # 直接改变a

print(a.shape, a.flatten()[:4])

### transpose, permute
a = torch.tensor([
    [[1, 2],[3, 4]],
    [[5, 6],[7, 8]]
])

print(a)
'''

[ [[1, 2], [3, 4]],
  [[5, 6], [7, 8]] ]
------T--------
[ [[1, 2], [5, 6]],
  [[3, 4], [7, 8]] ]
'''

# 按照不同的维度进行转置
b1 = torch.transpose(a, 0, 1)


print(a)
print(b1)

# 完成 [N, C, H, W] -> [N, H, W, C]
img_set = torch.Tensor(4, 3, 28, 24)
print(img_set.shape)
# transpose
img_set1 = img_set.transpose(1, 3).transpose(1, 2)
print(img_set1.shape)

img_set2 = img_set.permute(0, 2, 3, 1)
print(img_set2.shape)

# squeeze & unsequeeze
bias = torch.tensor([1, 2, 3])
img = torch.from_numpy(rng.integers(1, 4, (4, 3, 32, 32)))

bias = bias.unsqueeze(0).unsqueeze(2).unsqueeze(3)
bias = bias.expand(4, 3, 32, 32)
print(bias.shape)
print(img.shape)

img = img + bias
print(img.shape)

bias = torch.from_numpy(rng.integers(1, 4, (1, 4, 1, 1)))

print(bias.shape)
print(bias.squeeze().shape)
print(bias.squeeze(0).shape)
print(bias.squeeze(0).squeeze(1).shape)
print(bias.squeeze(0).squeeze(1).squeeze(1).shape)

# expand -1 表示维度不变
bias = torch.from_numpy(rng.integers(1, 4, (4,)))

print(bias, bias.shape)
bias = bias.expand(1, 4)
bias = bias.expand(2, 4)
bias = bias.expand(1, 2, 4)
print(bias, bias.shape)

# 降维
img = torch.from_numpy(rng.random((4, 28*28), dtype=np.float32))

x = torch.from_numpy(rng.random((4, 28*28), dtype=np.float32))
w = torch.from_numpy(rng.random((512, 28*28), dtype=np.float32))

# 从 784 -> 512
print(torch.matmul(x, w.t()).shape) # 4 * 512 二维亦可使用 mm

# power 求次方
a = torch.full([2, 2], 3)
print(a)
a = a.pow(2)
print(a)
a = a.sqrt()
print(a)
a = a**3
print(a)

# exp
a = torch.exp(torch.ones(2, 2))

print(a)

a = a.log() # 默认以 e 为底
print(a)

# floor ceil trunc: 整数 frac: 小数 round: 四舍五入

# clamp
grad = torch.from_numpy(rng.random((2, 3), dtype=np.float32)) * 15

print(grad.max())
print(grad.median())
print(grad.clamp(10))
print(grad)

a = torch.ones(3, 1, 2)
b = torch.ones(2, 1)

print(a.shape)
print(b.shape)

# 2, 1 => 1, 2, 1 => 3, 2, 1 => 3, 2, 2
# 3, 1, 2 => 3, 2, 2
# + => 3, 2, 2
print(torch.add(a, b).shape)

# the notebook's last cell calls clamp with no arguments: PyTorch's TypeError
try:
    torch.clamp()
except TypeError as e:
    print(type(e).__name__, "clamp" in str(e))
