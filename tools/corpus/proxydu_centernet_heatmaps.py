"""CenterNet targets and decoding: gaussian_radius, gaussian heatmaps drawn with torch.max(...,
out=...), the penalty-reduced focal loss, 3x3 max_pool2d peak extraction, top-k over flattened
class maps and _transpose_and_gather_feat.

Written for the proxydu corpus (detection without torchvision ops), modelled on
xingyizhou/CenterNet's utils (image.py, decode.py, losses.py); heatmaps and logits are
deterministic.
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

def gaussian_radius(det_size, min_overlap=0.7):
    height, width = det_size
    a1 = 1
    b1 = (height + width)
    c1 = width * height * (1 - min_overlap) / (1 + min_overlap)
    sq1 = math.sqrt(b1 ** 2 - 4 * a1 * c1)
    r1 = (b1 + sq1) / 2
    a2 = 4
    b2 = 2 * (height + width)
    c2 = (1 - min_overlap) * width * height
    sq2 = math.sqrt(b2 ** 2 - 4 * a2 * c2)
    r2 = (b2 + sq2) / 2
    a3 = 4 * min_overlap
    b3 = -2 * min_overlap * (height + width)
    c3 = (min_overlap - 1) * width * height
    sq3 = math.sqrt(b3 ** 2 - 4 * a3 * c3)
    r3 = (b3 + sq3) / 2
    return min(r1, r2, r3)

def gaussian2d(radius, sigma):
    m = torch.arange(-radius, radius + 1, dtype=torch.float32)
    y, x = torch.meshgrid(m, m, indexing="ij")
    h = torch.exp(-(x * x + y * y) / (2 * sigma * sigma))
    h[h < torch.finfo(h.dtype).eps * h.max()] = 0
    return h

def draw_gaussian(heatmap, center, radius):
    diameter = 2 * radius + 1
    gaussian = gaussian2d(radius, sigma=diameter / 6)
    x, y = int(center[0]), int(center[1])
    height, width = heatmap.shape[0:2]
    left, right = min(x, radius), min(width - x, radius + 1)
    top, bottom = min(y, radius), min(height - y, radius + 1)
    masked_heatmap = heatmap[y - top:y + bottom, x - left:x + right]
    masked_gaussian = gaussian[radius - top:radius + bottom, radius - left:radius + right]
    torch.max(masked_heatmap, masked_gaussian, out=masked_heatmap)
    return heatmap

def _nms(heat, kernel=3):
    pad = (kernel - 1) // 2
    hmax = F.max_pool2d(heat, (kernel, kernel), stride=1, padding=pad)
    keep = (hmax == heat).float()
    return heat * keep

def _topk(scores, K=5):
    batch, cat, height, width = scores.size()
    topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)
    topk_inds = topk_inds % (height * width)
    topk_ys = (topk_inds / width).int().float()
    topk_xs = (topk_inds % width).int().float()
    topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
    topk_clses = (topk_ind / K).int()
    topk_inds = topk_inds.view(batch, -1, 1).gather(1, topk_ind.unsqueeze(2)).view(batch, K)
    topk_ys = topk_ys.view(batch, -1, 1).gather(1, topk_ind.unsqueeze(2)).view(batch, K)
    topk_xs = topk_xs.view(batch, -1, 1).gather(1, topk_ind.unsqueeze(2)).view(batch, K)
    return topk_score, topk_inds, topk_clses, topk_ys, topk_xs

def _gather_feat(feat, ind):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    return feat.gather(1, ind)

def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    return _gather_feat(feat, ind)

def focal_neg_loss(pred, gt):
    pos_inds = gt.eq(1).float()
    neg_inds = gt.lt(1).float()
    neg_weights = torch.pow(1 - gt, 4)
    pred = pred.clamp(1e-4, 1 - 1e-4)
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds
    num_pos = pos_inds.float().sum()
    pos_loss = pos_loss.sum()
    neg_loss = neg_loss.sum()
    if num_pos == 0:
        return -neg_loss
    return -(pos_loss + neg_loss) / num_pos

r = gaussian_radius((math.ceil(12.3), math.ceil(20.7)))
print(round(r, 6), max(0, int(r)))
hm = torch.zeros(2, 3, 16, 16)
draw_gaussian(hm[0, 1], (5, 7), 2)
draw_gaussian(hm[0, 1], (6, 7), 2)
draw_gaussian(hm[1, 0], (0, 15), 3)
draw_gaussian(hm[1, 2], (10, 3), 1)
print(hm.sum(), hm.max(), (hm == 1).sum())
print(hm[0, 1, 5:10, 3:9])
logits = torch.linspace(-4, 4, 2 * 3 * 16 * 16).view(2, 3, 16, 16).sin() * 3
logits.requires_grad_(True)
pred = logits.sigmoid()
loss = focal_neg_loss(pred, hm)
print("hm loss", round(loss.item(), 5))
loss.backward()
print(logits.grad.abs().sum() > 0, logits.grad.shape)
heat = _nms(hm)
scores, inds, clses, ys, xs = _topk(heat, K=4)
print(scores, inds, clses, ys, xs, sep="\n")
wh = torch.arange(2 * 2 * 16 * 16, dtype=torch.float32).view(2, 2, 16, 16)
print(_transpose_and_gather_feat(wh, inds))
reg_mask = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.uint8)
mask = reg_mask.unsqueeze(2).expand(2, 4, 2).float()
pred_wh = _transpose_and_gather_feat(wh, inds)
l1 = F.l1_loss(pred_wh * mask, torch.ones_like(pred_wh) * mask, reduction="sum") / (mask.sum() + 1e-4)
print(l1)
print(np.round(hm[0, 1].numpy().max(), 4), hm.dtype)
