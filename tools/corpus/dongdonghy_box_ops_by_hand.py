"""Detection helpers written by hand, as detection notebooks do without torchvision: pairwise
IoU by broadcasting, greedy NMS with sort / clamp / nonzero / index, per-class NMS by offsetting
boxes, anchor generation with meshgrid, SSD-style box encoding and decoding (log / exp),
anchor matching with max over IoU and index_put, and a training step of a tiny detection head
(smooth L1 on encoded boxes + sigmoid focal loss) with its gradients.

Inspired by dongdonghy/Detection-PyTorch-Notebook (chapter8/nms.py); the code is our own.
Everything random comes from numpy, so the output does not depend on torch's generator.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(11)


def area(b):
    return (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)


def pairwise_iou(a, b):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def greedy_nms(boxes, scores, thresh):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(int(i))
        if order.numel() == 1:
            break
        ious = pairwise_iou(boxes[i].unsqueeze(0), boxes[order[1:]]).squeeze(0)
        rest = (ious <= thresh).nonzero().flatten()
        order = order[rest + 1]
    return torch.tensor(keep, dtype=torch.long)


def batched_nms(boxes, scores, labels, thresh):
    offsets = labels.to(boxes) * (boxes.max() + 1)
    return greedy_nms(boxes + offsets[:, None], scores, thresh)


def make_anchors(fm_h, fm_w, stride, sizes, ratios):
    ys, xs = torch.meshgrid(torch.arange(fm_h, dtype=torch.float32),
                            torch.arange(fm_w, dtype=torch.float32), indexing="ij")
    centers = torch.stack([xs, ys], dim=-1).reshape(-1, 1, 2) * stride + stride / 2
    wh = torch.tensor([[s * math.sqrt(r), s / math.sqrt(r)] for s in sizes for r in ratios])
    return torch.cat([centers - wh / 2, centers + wh / 2], dim=-1).reshape(-1, 4)


def encode(gt, anchors, var=(0.1, 0.2)):
    a_c = (anchors[:, :2] + anchors[:, 2:]) / 2
    a_wh = anchors[:, 2:] - anchors[:, :2]
    g_c = (gt[:, :2] + gt[:, 2:]) / 2
    g_wh = gt[:, 2:] - gt[:, :2]
    return torch.cat([(g_c - a_c) / (var[0] * a_wh), torch.log(g_wh / a_wh) / var[1]], dim=1)


def decode(loc, anchors, var=(0.1, 0.2)):
    a_c = (anchors[:, :2] + anchors[:, 2:]) / 2
    a_wh = anchors[:, 2:] - anchors[:, :2]
    c = a_c + loc[:, :2] * var[0] * a_wh
    wh = a_wh * torch.exp(loc[:, 2:] * var[1])
    return torch.cat([c - wh / 2, c + wh / 2], dim=1)


def sigmoid_focal(logits, targets, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    a_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (a_t * (1 - p_t) ** gamma * ce).sum()


xy = torch.from_numpy(rs.uniform(0, 40, (12, 2)).astype(np.float32))
wh = torch.from_numpy(rs.uniform(6, 20, (12, 2)).astype(np.float32))
boxes = torch.cat([xy, xy + wh], dim=1)
scores = torch.from_numpy(rs.permutation(12).astype(np.float32) / 12)
labels = torch.from_numpy(rs.randint(0, 3, 12))

iou = pairwise_iou(boxes, boxes)
print("iou", iou.shape, iou.dtype, torch.allclose(iou, iou.t()), iou.diagonal().min().item())
print("iou row0", [round(v, 4) for v in iou[0].tolist()])
for t in (0.1, 0.3, 0.6):
    print("nms", t, greedy_nms(boxes, scores, t).tolist())
print("batched nms", batched_nms(boxes, scores, labels, 0.2).tolist())

anchors = make_anchors(4, 4, 12, sizes=(12, 24), ratios=(0.5, 1.0, 2.0))
print("anchors", anchors.shape, [round(v, 3) for v in anchors[7].tolist()])

gt = boxes[:3]
match_iou = pairwise_iou(anchors, gt)
best_iou, best_gt = match_iou.max(dim=1)
best_anchor = match_iou.argmax(dim=0)
best_gt.index_put_((best_anchor,), torch.arange(3))
best_iou.index_fill_(0, best_anchor, 2.0)
positive = best_iou >= 0.35
print("positives", int(positive.sum()), best_anchor.tolist(), best_gt[positive].tolist()[:10])

targets = encode(gt[best_gt], anchors)
back = decode(targets, anchors)
print("roundtrip", (back - gt[best_gt]).abs().max().item() < 1e-3)

head = nn.Conv2d(8, 6 * 5, kernel_size=3, padding=1)
with torch.no_grad():
    head.weight.copy_(torch.from_numpy(rs.normal(0, 0.05, tuple(head.weight.shape)).astype(np.float32)))
    head.bias.zero_()
feat = torch.from_numpy(rs.normal(0, 1, (1, 8, 4, 4)).astype(np.float32))
opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
cls_t = torch.zeros(anchors.shape[0], 1)
cls_t[positive] = 1.0
for step in range(3):
    out = head(feat).permute(0, 2, 3, 1).reshape(-1, 5)
    loc_p, cls_p = out[:, :4], out[:, 4:]
    loc_loss = F.smooth_l1_loss(loc_p[positive], targets[positive], beta=1 / 9, reduction="sum")
    cls_loss = sigmoid_focal(cls_p, cls_t)
    loss = (loc_loss + cls_loss) / positive.sum().clamp(min=1)
    opt.zero_grad()
    loss.backward()
    print("step", step, round(loc_loss.item(), 4), round(cls_loss.item(), 4),
          round(head.weight.grad.norm().item(), 4))
    opt.step()

with torch.no_grad():
    out = head(feat).permute(0, 2, 3, 1).reshape(-1, 5)
    dets = decode(out[:, :4], anchors)
    conf = out[:, 4].sigmoid()
    top = conf.topk(5)
    print("top conf", [round(v, 4) for v in top.values.tolist()], top.indices.tolist())
    kept = greedy_nms(dets[top.indices], top.values, 0.5)
    print("kept", kept.tolist(), dets[top.indices][kept].shape)
