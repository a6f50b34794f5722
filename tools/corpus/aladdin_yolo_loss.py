"""YOLOv1 loss (IoU-selected boxes, sqrt of widths written in place into a product that needs
grad, four MSE terms) with three SGD steps on a linear head.

Source: aladdinpersson/Machine-Learning-Collection, ML/Pytorch/object_detection/YOLO/loss.py and
the midpoint branch of utils.intersection_over_union.  Adapted: comments trimmed; the driver is
new: predictions from a linear layer whose weights, inputs and targets are drawn with numpy
(deterministic, no torch random stream); the loss and gradient statistics are printed.
"""
import numpy as np
import torch
import torch.nn as nn


def intersection_over_union(boxes_preds, boxes_labels, box_format="midpoint"):
    if box_format == "midpoint":
        box1_x1 = boxes_preds[..., 0:1] - boxes_preds[..., 2:3] / 2
        box1_y1 = boxes_preds[..., 1:2] - boxes_preds[..., 3:4] / 2
        box1_x2 = boxes_preds[..., 0:1] + boxes_preds[..., 2:3] / 2
        box1_y2 = boxes_preds[..., 1:2] + boxes_preds[..., 3:4] / 2
        box2_x1 = boxes_labels[..., 0:1] - boxes_labels[..., 2:3] / 2
        box2_y1 = boxes_labels[..., 1:2] - boxes_labels[..., 3:4] / 2
        box2_x2 = boxes_labels[..., 0:1] + boxes_labels[..., 2:3] / 2
        box2_y2 = boxes_labels[..., 1:2] + boxes_labels[..., 3:4] / 2
    x1 = torch.max(box1_x1, box2_x1)
    y1 = torch.max(box1_y1, box2_y1)
    x2 = torch.min(box1_x2, box2_x2)
    y2 = torch.min(box1_y2, box2_y2)
    intersection = (x2 - x1).clamp(0) * (y2 - y1).clamp(0)
    box1_area = abs((box1_x2 - box1_x1) * (box1_y2 - box1_y1))
    box2_area = abs((box2_x2 - box2_x1) * (box2_y2 - box2_y1))
    return intersection / (box1_area + box2_area - intersection + 1e-6)


class YoloLoss(nn.Module):
    def __init__(self, S=7, B=2, C=20):
        super(YoloLoss, self).__init__()
        self.mse = nn.MSELoss(reduction="sum")
        self.S = S
        self.B = B
        self.C = C
        self.lambda_noobj = 0.5
        self.lambda_coord = 5

    def forward(self, predictions, target):
        predictions = predictions.reshape(-1, self.S, self.S, self.C + self.B * 5)
        iou_b1 = intersection_over_union(predictions[..., 21:25], target[..., 21:25])
        iou_b2 = intersection_over_union(predictions[..., 26:30], target[..., 21:25])
        ious = torch.cat([iou_b1.unsqueeze(0), iou_b2.unsqueeze(0)], dim=0)
        iou_maxes, bestbox = torch.max(ious, dim=0)
        exists_box = target[..., 20].unsqueeze(3)
        box_predictions = exists_box * (
            (
                bestbox * predictions[..., 26:30]
                + (1 - bestbox) * predictions[..., 21:25]
            )
        )
        box_targets = exists_box * target[..., 21:25]
        box_predictions[..., 2:4] = torch.sign(box_predictions[..., 2:4]) * torch.sqrt(
            torch.abs(box_predictions[..., 2:4] + 1e-6)
        )
        box_targets[..., 2:4] = torch.sqrt(box_targets[..., 2:4])
        box_loss = self.mse(
            torch.flatten(box_predictions, end_dim=-2),
            torch.flatten(box_targets, end_dim=-2),
        )
        pred_box = (
            bestbox * predictions[..., 25:26] + (1 - bestbox) * predictions[..., 20:21]
        )
        object_loss = self.mse(
            torch.flatten(exists_box * pred_box),
            torch.flatten(exists_box * target[..., 20:21] * iou_maxes),
        )
        no_object_loss = self.mse(
            torch.flatten((1 - exists_box) * predictions[..., 20:21], start_dim=1),
            torch.flatten((1 - exists_box) * target[..., 20:21], start_dim=1),
        )
        no_object_loss += self.mse(
            torch.flatten((1 - exists_box) * predictions[..., 25:26], start_dim=1),
            torch.flatten((1 - exists_box) * target[..., 20:21], start_dim=1)
        )
        class_loss = self.mse(
            torch.flatten(exists_box * predictions[..., :20], end_dim=-2,),
            torch.flatten(exists_box * target[..., :20], end_dim=-2,),
        )
        loss = (
            self.lambda_coord * box_loss
            + object_loss
            + self.lambda_noobj * no_object_loss
            + class_loss
        )
        return loss


rng = np.random.RandomState(0)
N, S, B, C = 2, 7, 2, 20
target = np.zeros((N, S, S, C + 5), dtype=np.float32)
obj = rng.rand(N, S, S) < 0.3
target[..., 20] = obj
target[..., 21:23] = rng.rand(N, S, S, 2)
target[..., 23:25] = 0.1 + rng.rand(N, S, S, 2)
cls = rng.randint(0, C, size=(N, S, S))
for n in range(N):
    for i in range(S):
        for j in range(S):
            target[n, i, j, cls[n, i, j]] = 1.0
target = torch.tensor(target)
feats = torch.tensor(rng.randn(N, 16).astype(np.float32))
fc = nn.Linear(16, S * S * (C + B * 5))
with torch.no_grad():
    fc.weight.copy_(torch.tensor(rng.randn(S * S * (C + B * 5), 16).astype(np.float32) * 0.1))
    fc.bias.copy_(torch.tensor(rng.rand(S * S * (C + B * 5)).astype(np.float32) * 0.5))
loss_fn = YoloLoss(S=S, B=B, C=C)
opt = torch.optim.SGD(fc.parameters(), lr=1e-4)
for it in range(3):
    preds = fc(feats)
    loss = loss_fn(preds, target)
    opt.zero_grad()
    loss.backward()
    print(f"iter {it} loss {loss.item():.5f} grad_w_sum {fc.weight.grad.sum().item():.5f} grad_b_norm {fc.bias.grad.norm().item():.5f}")
    opt.step()
