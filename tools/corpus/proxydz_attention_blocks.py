"""CNN attention modules as repositories write them from the papers: ShuffleNet channel_shuffle,
CBAM channel gate (avg/max/lp/logsumexp pools) and spatial gate, ECA (Conv1d over channels),
Coordinate attention (AdaptiveAvgPool2d((None, 1))), SKNet branch softmax, Res2Net split, GhostNet
slice, LeViT attention biases (torch.LongTensor index buffer, train() override caching ab)."""
import itertools
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from typing import List

rs = np.random.RandomState(0)
def t(*shape):
    return torch.from_numpy(rs.randn(*shape).astype(np.float32))
def init(m, s=0.3):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(t(*p.shape) * s)
    return m

def channel_shuffle(x, groups):
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    x = x.view(batchsize, -1, height, width)
    return x
x = torch.arange(8.).view(1, 8, 1, 1)
print(channel_shuffle(x, 2).flatten())
x1, x2 = x.chunk(2, dim=1)
print(x1.shape, x2.flatten())

class ChannelGate(nn.Module):
    def __init__(self, gate_channels, reduction_ratio=4, pool_types=['avg', 'max', 'lp', 'lse']):
        super().__init__()
        self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(gate_channels, gate_channels // reduction_ratio), nn.ReLU(),
                                 nn.Linear(gate_channels // reduction_ratio, gate_channels))
        self.pool_types = pool_types
    def forward(self, x):
        channel_att_sum = None
        for pool_type in self.pool_types:
            if pool_type == 'avg':
                pool = F.avg_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
            elif pool_type == 'max':
                pool = F.max_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
            elif pool_type == 'lp':
                pool = F.lp_pool2d(x, 2, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
            elif pool_type == 'lse':
                tensor_flatten = x.view(x.size(0), x.size(1), -1)
                s, _ = torch.max(tensor_flatten, dim=2, keepdim=True)
                pool = s + (tensor_flatten - s).exp().sum(dim=2, keepdim=True).log()
            att = self.mlp(pool)
            channel_att_sum = att if channel_att_sum is None else channel_att_sum + att
        scale = torch.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
        return x * scale

class SpatialGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.spatial = nn.Sequential(nn.Conv2d(2, 1, 7, padding=3, bias=False), nn.BatchNorm2d(1, eps=1e-5, momentum=0.01, affine=True))
    def forward(self, x):
        x_compress = torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)
        return x * torch.sigmoid(self.spatial(x_compress))

class eca_layer(nn.Module):
    def __init__(self, channel, k_size=3):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv = nn.Conv1d(1, 1, kernel_size=k_size, padding=(k_size - 1) // 2, bias=False)
        self.sigmoid = nn.Sigmoid()
    def forward(self, x):
        y = self.avg_pool(x)
        y = self.conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
        y = self.sigmoid(y)
        return x * y.expand_as(x)

class CoordAtt(nn.Module):
    def __init__(self, inp, oup, reduction=4):
        super().__init__()
        self.pool_h = nn.AdaptiveAvgPool2d((None, 1))
        self.pool_w = nn.AdaptiveAvgPool2d((1, None))
        mip = max(8, inp // reduction)
        self.conv1 = nn.Conv2d(inp, mip, kernel_size=1, stride=1, padding=0)
        self.bn1 = nn.BatchNorm2d(mip)
        self.act = nn.Hardswish()
        self.conv_h = nn.Conv2d(mip, oup, kernel_size=1, stride=1, padding=0)
        self.conv_w = nn.Conv2d(mip, oup, kernel_size=1, stride=1, padding=0)
    def forward(self, x):
        identity = x
        n, c, h, w = x.size()
        x_h = self.pool_h(x)
        x_w = self.pool_w(x).permute(0, 1, 3, 2)
        y = torch.cat([x_h, x_w], dim=2)
        y = self.act(self.bn1(self.conv1(y)))
        x_h, x_w = torch.split(y, [h, w], dim=2)
        x_w = x_w.permute(0, 1, 3, 2)
        a_h = self.conv_h(x_h).sigmoid()
        a_w = self.conv_w(x_w).sigmoid()
        return identity * a_w * a_h

class SKConv(nn.Module):
    def __init__(self, features, M=2, G=2, r=2, L=4):
        super().__init__()
        d = max(int(features / r), L)
        self.M = M
        self.features = features
        self.convs = nn.ModuleList([nn.Sequential(nn.Conv2d(features, features, 3, 1, padding=1 + i, dilation=1 + i, groups=G, bias=False),
                                                  nn.BatchNorm2d(features), nn.ReLU(inplace=True)) for i in range(M)])
        self.gap = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Sequential(nn.Conv2d(features, d, 1, bias=False), nn.BatchNorm2d(d), nn.ReLU(inplace=True))
        self.fcs = nn.ModuleList([nn.Conv2d(d, features, 1, 1) for _ in range(M)])
        self.softmax = nn.Softmax(dim=1)
    def forward(self, x):
        batch_size = x.shape[0]
        feats = [conv(x) for conv in self.convs]
        feats = torch.cat(feats, dim=1)
        feats = feats.view(batch_size, self.M, self.features, feats.shape[2], feats.shape[3])
        feats_U = torch.sum(feats, dim=1)
        feats_S = self.gap(feats_U)
        feats_Z = self.fc(feats_S)
        attention_vectors = [fc(feats_Z) for fc in self.fcs]
        attention_vectors = torch.cat(attention_vectors, dim=1)
        attention_vectors = attention_vectors.view(batch_size, self.M, self.features, 1, 1)
        attention_vectors = self.softmax(attention_vectors)
        return torch.sum(feats * attention_vectors, dim=1)

class Bottle2neckSplit(nn.Module):
    def __init__(self, width=2, scale=4):
        super().__init__()
        self.width, self.nums = width, scale - 1
        self.convs = nn.ModuleList([nn.Conv2d(width, width, 3, padding=1, bias=False) for _ in range(self.nums)])
    def forward(self, out):
        spx = torch.split(out, self.width, 1)
        for i in range(self.nums):
            sp = spx[i] if i == 0 else sp + spx[i]
            sp = F.relu(self.convs[i](sp))
            out_ = sp if i == 0 else torch.cat((out_, sp), 1)
        return torch.cat((out_, spx[self.nums]), 1)

class GhostModule(nn.Module):
    def __init__(self, inp, oup, kernel_size=1, ratio=2, dw_size=3, stride=1, relu=True):
        super().__init__()
        self.oup = oup
        init_channels = math.ceil(oup / ratio)
        new_channels = init_channels * (ratio - 1)
        self.primary_conv = nn.Sequential(nn.Conv2d(inp, init_channels, kernel_size, stride, kernel_size // 2, bias=False),
                                          nn.BatchNorm2d(init_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())
        self.cheap_operation = nn.Sequential(nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size // 2, groups=init_channels, bias=False),
                                             nn.BatchNorm2d(new_channels), nn.ReLU(inplace=True) if relu else nn.Sequential())
    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return out[:, :self.oup, :, :]

class LeViTAttention(nn.Module):
    def __init__(self, dim, key_dim, num_heads=2, attn_ratio=2, resolution=3):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.nh_kd = nh_kd = key_dim * num_heads
        self.d = int(attn_ratio * key_dim)
        self.dh = int(attn_ratio * key_dim) * num_heads
        h = self.dh + nh_kd * 2
        self.qkv = nn.Linear(dim, h)
        self.proj = nn.Sequential(nn.Hardswish(), nn.Linear(self.dh, dim))
        points = list(itertools.product(range(resolution), range(resolution)))
        N = len(points)
        attention_offsets = {}
        idxs = []
        for p1 in points:
            for p2 in points:
                offset = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                if offset not in attention_offsets:
                    attention_offsets[offset] = len(attention_offsets)
                idxs.append(attention_offsets[offset])
        self.attention_biases = torch.nn.Parameter(torch.zeros(num_heads, len(attention_offsets)))
        self.register_buffer('attention_bias_idxs', torch.LongTensor(idxs).view(N, N))

    @torch.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and hasattr(self, 'ab'):
            del self.ab
        else:
            self.ab = self.attention_biases[:, self.attention_bias_idxs]

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv.view(B, N, self.num_heads, -1).split([self.key_dim, self.key_dim, self.d], dim=3)
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 1, 3)
        v = v.permute(0, 2, 1, 3)
        attn = ((q @ k.transpose(-2, -1)) * self.scale + (self.attention_biases[:, self.attention_bias_idxs] if self.training else self.ab))
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.dh)
        return self.proj(x)

img = t(2, 8, 6, 6)
for mod in [ChannelGate(8), SpatialGate(), eca_layer(8), CoordAtt(8, 8), SKConv(8), Bottle2neckSplit(), GhostModule(8, 7)]:
    init(mod)
    mod.train()
    xin = img.clone().requires_grad_()
    out = mod(xin)
    out.square().mean().backward()
    print(type(mod).__name__, tuple(out.shape), round(out.sum().item(), 4), round(xin.grad.abs().sum().item(), 5))
lev = init(LeViTAttention(8, 4))
print(lev.attention_bias_idxs.dtype, lev.attention_bias_idxs[0], lev.attention_biases.shape)
tok = t(2, 9, 8)
lev.eval()
print(hasattr(lev, 'ab'), lev.ab.shape, lev.ab.requires_grad)
o_eval = lev(tok)
lev.train()
print(hasattr(lev, 'ab'))
o_train = lev(tok)
print(torch.allclose(o_eval, o_train), round(o_train.sum().item(), 4))
o_train.sum().backward()
print(np.round(lev.attention_biases.grad.numpy(), 4))
print(torch.LongTensor([1, 2]).dtype, torch.FloatTensor(2, 3).shape, torch.Tensor([1, 2]).dtype, torch.BoolTensor([True]).dtype, torch.IntTensor([[1]]).shape)
print(nn.AdaptiveAvgPool2d((None, 1)), nn.AdaptiveAvgPool2d((None, 1))(t(1, 2, 3, 5)).shape, F.adaptive_max_pool2d(t(1, 2, 3, 5), (2, None)).shape)
