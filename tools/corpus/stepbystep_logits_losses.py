"""PyTorchStepByStep chapter 3 style: odds, log odds and sigmoid, BCELoss on probabilities and
BCEWithLogitsLoss on logits computed with numpy (float64) against float32 labels, which PyTorch
returns in the labels' dtype; pos_weight for an imbalanced batch, and the losses by hand."""
import numpy as np
import torch
import torch.nn as nn


def odds_ratio(prob):
    return prob / (1 - prob)


def log_odds_ratio(prob):
    return np.log(odds_ratio(prob))


p = .75
q = 1 - p
print(odds_ratio(p), odds_ratio(q))
print(log_odds_ratio(p), log_odds_ratio(q))
print(torch.sigmoid(torch.tensor(1.0986)), torch.sigmoid(torch.tensor(-1.0986)))

loss_fn = nn.BCELoss(reduction='mean')
print(loss_fn)
dummy_labels = torch.tensor([1.0, 0.0])
dummy_predictions = torch.tensor([.9, .2])
# RIGHT
right_loss = loss_fn(dummy_predictions, dummy_labels)
# WRONG
wrong_loss = loss_fn(dummy_labels, dummy_predictions)
print(right_loss, wrong_loss)

loss_fn_logits = nn.BCEWithLogitsLoss(reduction='mean')
print(loss_fn_logits)
logit1 = log_odds_ratio(.9)
logit2 = log_odds_ratio(.2)
dummy_logits = torch.tensor([logit1, logit2])
print(dummy_logits)
loss = loss_fn_logits(dummy_logits, dummy_labels)
print(loss, loss.dtype)
print(nn.BCEWithLogitsLoss(reduction='sum')(dummy_logits, dummy_labels))
print(nn.BCEWithLogitsLoss(reduction='none')(dummy_logits, dummy_labels.double()))

# imbalanced: one positive, three negatives
dummy_imb_labels = torch.tensor([1.0, 0.0, 0.0, 0.0])
dummy_imb_logits = torch.tensor([logit1, logit2, logit2, logit2])
n_neg = (dummy_imb_labels == 0).sum().float()
n_pos = (dummy_imb_labels == 1).sum().float()
pos_weight = (n_neg / n_pos).view(1,)
print(pos_weight)
loss_fn_imb = nn.BCEWithLogitsLoss(reduction='mean', pos_weight=pos_weight)
print(loss_fn_imb(dummy_imb_logits, dummy_imb_labels))
loss_fn_imb_sum = nn.BCEWithLogitsLoss(reduction='sum', pos_weight=pos_weight)
loss = loss_fn_imb_sum(dummy_imb_logits, dummy_imb_labels)
print(loss / (pos_weight * n_pos + n_neg))

# by hand, and the gradient of the float64 logits
logits = dummy_imb_logits.clone().requires_grad_()
manual = -(dummy_imb_labels * torch.log(torch.sigmoid(logits))
           + (1 - dummy_imb_labels) * torch.log(1 - torch.sigmoid(logits))).mean()
auto = nn.BCEWithLogitsLoss()(logits, dummy_imb_labels)
print(manual, auto)
auto.backward()
print(logits.grad)
