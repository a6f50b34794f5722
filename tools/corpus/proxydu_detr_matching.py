"""DETR's HungarianMatcher (softmax class cost, L1 cdist box cost, GIoU cost, solved with
scipy.optimize.linear_sum_assignment on the detached cost matrix) and the SetCriterion losses
built from its indices (weighted cross entropy with the no-object class, L1 and GIoU box losses
normalised by the number of boxes, cardinality error).

Written for the proxydu corpus (detection without torchvision ops), modelled on
facebookresearch/detr models/matcher.py and models/detr.py.
"""
import torch
import torch.nn as nn
from scipy.optimize import linear_sum_assignment

def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    return torch.stack([(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)], dim=-1)

def box_area(b):
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])

def giou(b1, b2):
    a1, a2 = box_area(b1), box_area(b2)
    lt = torch.max(b1[:, None, :2], b2[:, :2]); rb = torch.min(b1[:, None, 2:], b2[:, 2:])
    wh = (rb - lt).clamp(min=0); inter = wh[..., 0] * wh[..., 1]
    union = a1[:, None] + a2 - inter
    iou = inter / union
    lt = torch.min(b1[:, None, :2], b2[:, :2]); rb = torch.max(b1[:, None, 2:], b2[:, 2:])
    wh = (rb - lt).clamp(min=0); area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area

class HungarianMatcher(nn.Module):
    def __init__(self, cost_class=1, cost_bbox=5, cost_giou=2):
        super().__init__()
        self.cost_class, self.cost_bbox, self.cost_giou = cost_class, cost_bbox, cost_giou

    @torch.no_grad()
    def forward(self, outputs, targets):
        bs, num_queries = outputs["pred_logits"].shape[:2]
        out_prob = outputs["pred_logits"].flatten(0, 1).softmax(-1)
        out_bbox = outputs["pred_boxes"].flatten(0, 1)
        tgt_ids = torch.cat([v["labels"] for v in targets])
        tgt_bbox = torch.cat([v["boxes"] for v in targets])
        cost_class = -out_prob[:, tgt_ids]
        cost_bbox = torch.cdist(out_bbox, tgt_bbox, p=1)
        cost_giou = -giou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_bbox))
        C = self.cost_bbox * cost_bbox + self.cost_class * cost_class + self.cost_giou * cost_giou
        C = C.view(bs, num_queries, -1).cpu()
        sizes = [len(v["boxes"]) for v in targets]
        indices = [linear_sum_assignment(c[i]) for i, c in enumerate(C.split(sizes, -1))]
        return [(torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64)) for i, j in indices]

torch.manual_seed(0)
logits = torch.tensor([[[2.0, 0.1, -1.0, 0.0], [0.3, 1.5, 0.2, 0.0], [0.0, 0.0, 2.5, 0.1], [0.1, 0.1, 0.1, 3.0]],
                       [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]]], requires_grad=True)
boxes = torch.tensor([[[0.3, 0.3, 0.2, 0.2], [0.7, 0.7, 0.3, 0.2], [0.5, 0.5, 0.5, 0.5], [0.1, 0.9, 0.1, 0.1]],
                      [[0.2, 0.2, 0.1, 0.1], [0.6, 0.4, 0.2, 0.4], [0.8, 0.8, 0.2, 0.2], [0.5, 0.5, 0.9, 0.9]]], requires_grad=True)
targets = [{"labels": torch.tensor([1, 0]), "boxes": torch.tensor([[0.7, 0.7, 0.3, 0.25], [0.3, 0.3, 0.25, 0.2]])},
           {"labels": torch.tensor([2]), "boxes": torch.tensor([[0.8, 0.75, 0.2, 0.2]])}]
matcher = HungarianMatcher()
indices = matcher({"pred_logits": logits, "pred_boxes": boxes}, targets)
print(indices)
batch_idx = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(indices)])
src_idx = torch.cat([src for (src, _) in indices])
print(batch_idx, src_idx)
target_classes_o = torch.cat([t["labels"][J] for t, (_, J) in zip(targets, indices)])
target_classes = torch.full(logits.shape[:2], 3, dtype=torch.int64)
target_classes[(batch_idx, src_idx)] = target_classes_o
print(target_classes)
empty_weight = torch.ones(4); empty_weight[-1] = 0.1
loss_ce = nn.functional.cross_entropy(logits.transpose(1, 2), target_classes, empty_weight)
src_boxes = boxes[(batch_idx, src_idx)]
target_boxes = torch.cat([t["boxes"][i] for t, (_, i) in zip(targets, indices)], dim=0)
num_boxes = sum(len(t["labels"]) for t in targets)
num_boxes = torch.as_tensor([num_boxes], dtype=torch.float)
num_boxes = torch.clamp(num_boxes, min=1).item()
loss_bbox = nn.functional.l1_loss(src_boxes, target_boxes, reduction="none").sum() / num_boxes
loss_giou = (1 - torch.diag(giou(box_cxcywh_to_xyxy(src_boxes), box_cxcywh_to_xyxy(target_boxes)))).sum() / num_boxes
print("ce", round(loss_ce.item(), 5), "bbox", round(loss_bbox.item(), 5), "giou", round(loss_giou.item(), 5))
total = loss_ce + 5 * loss_bbox + 2 * loss_giou
total.backward()
print(logits.grad.abs().sum().item() > 0, boxes.grad[0])
# cardinality
tgt_lengths = torch.as_tensor([len(v["labels"]) for v in targets])
card_pred = (logits.argmax(-1) != logits.shape[-1] - 1).sum(1)
print(card_pred, nn.functional.l1_loss(card_pred.float(), tgt_lengths.float()))
# cost matrix with numpy
C = torch.cdist(boxes[0].detach(), targets[0]["boxes"])
r, c = linear_sum_assignment(C.numpy())
print(r, c, C[r, c].sum())
try:
    linear_sum_assignment(boxes[0] @ boxes[0].T)
except Exception as e:
    print(type(e).__name__)
print(torch.cdist(boxes[0].detach(), targets[0]["boxes"], p=2).shape)
print(torch.cdist(boxes.detach(), boxes.detach()).shape)
