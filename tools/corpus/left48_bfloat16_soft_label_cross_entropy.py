"""Mixup-style soft targets with a bfloat16 classifier head: cross_entropy with probability
targets, label smoothing and class weights, and the gradient of the logits."""
import torch
import torch.nn.functional as F

logits = (torch.linspace(-3.0, 3.0, 24).reshape(4, 6) * torch.tensor([1.0, -0.5, 2.0, 0.25]).reshape(4, 1)).bfloat16()
logits.requires_grad_()
hard = torch.tensor([0, 3, 5, 1])
other = torch.tensor([2, 2, 0, 4])
lam = 0.7
soft = lam * F.one_hot(hard, 6).float() + (1 - lam) * F.one_hot(other, 6).float()

for target in (soft.bfloat16(), soft):
    for kwargs in ({}, {"label_smoothing": 0.1}, {"weight": torch.linspace(0.5, 1.5, 6).bfloat16()},
                   {"reduction": "none"}, {"reduction": "sum", "label_smoothing": 0.2}):
        logits.grad = None
        loss = F.cross_entropy(logits, target, **kwargs)
        loss.sum().backward()
        print(target.dtype, sorted(kwargs), loss.dtype, loss.detach(), loss.grad_fn.name())
        print(logits.grad)
