"""Perlou/deep-learning-course (src/phase-3-pytorch-fundamentals/05-loss-functions.py): the loss
tour of a beginner course -- regression, classification, embedding and ranking losses -- here fed
from one numpy stream so every value and gradient is deterministic, and extended with the
siblings a learner meets next (margin, hinge, soft-margin, Poisson/Gaussian NLL, CTC,
label smoothing with class weights and ignore_index)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(0)
a, b, c = (rng.standard_normal((5, 8)).astype(np.float32) for _ in range(3))
y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0])
classes = torch.tensor([0, 3, 7, 1, 2])


def report(name, make_loss):
    x, z, w = (torch.tensor(v, requires_grad=True) for v in (a, b, c))
    loss = make_loss(x, z, w)
    loss.backward()
    grads = [0.0 if t.grad is None else round(t.grad.abs().sum().item(), 4) for t in (x, z, w)]
    print(f"{name:28s} {loss.item():.4f} {loss.dtype} grad|sum| {grads} {loss.grad_fn is not None}")


report("MSELoss", lambda x, z, w: nn.MSELoss()(x, z))
report("HuberLoss(0.5)", lambda x, z, w: nn.HuberLoss(delta=0.5)(x, z))
report("SmoothL1Loss(0.3)", lambda x, z, w: nn.SmoothL1Loss(beta=0.3)(x, z))
report("CrossEntropy soft+smooth", lambda x, z, w: nn.CrossEntropyLoss(label_smoothing=0.1)(x, F.softmax(z.detach(), 1)))
report("CrossEntropy weight+ignore", lambda x, z, w: nn.CrossEntropyLoss(
    label_smoothing=0.1, weight=torch.arange(1.0, 9.0), ignore_index=2)(x, classes))
report("NLLLoss", lambda x, z, w: nn.NLLLoss()(F.log_softmax(x, dim=1), classes))
report("BCEWithLogitsLoss", lambda x, z, w: nn.BCEWithLogitsLoss()(x, (z.detach() > 0).float()))
report("BCELoss", lambda x, z, w: nn.BCELoss()(torch.sigmoid(x), torch.sigmoid(z.detach())))
report("KLDiv batchmean", lambda x, z, w: nn.KLDivLoss(reduction="batchmean")(F.log_softmax(x, 1), F.softmax(z, 1)))
report("KLDiv log_target", lambda x, z, w: nn.KLDivLoss(reduction="batchmean", log_target=True)(
    F.log_softmax(x, 1), F.log_softmax(z, 1)))
report("CosineEmbeddingLoss(0.2)", lambda x, z, w: nn.CosineEmbeddingLoss(margin=0.2)(x, z, y))
report("TripletMarginLoss p2", lambda x, z, w: nn.TripletMarginLoss(margin=1.0, p=2)(x, z, w))
report("TripletMarginLoss p1 swap", lambda x, z, w: nn.TripletMarginLoss(margin=0.5, p=1, swap=True)(x, z, w))
report("triplet cosine distance", lambda x, z, w: F.triplet_margin_with_distance_loss(
    x, z, w, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v)))
report("MarginRankingLoss", lambda x, z, w: nn.MarginRankingLoss(margin=0.1)(x[:, 0], z[:, 0], y))
report("HingeEmbeddingLoss", lambda x, z, w: nn.HingeEmbeddingLoss(margin=1.0)(x[:, 0], y))
report("SoftMarginLoss", lambda x, z, w: nn.SoftMarginLoss()(x, torch.sign(z.detach())))
report("MultiLabelSoftMarginLoss", lambda x, z, w: nn.MultiLabelSoftMarginLoss()(x, (z.detach() > 0).float()))
report("MultiMarginLoss", lambda x, z, w: nn.MultiMarginLoss()(x, classes))
report("PoissonNLLLoss", lambda x, z, w: nn.PoissonNLLLoss()(x, z.detach().abs()))
report("GaussianNLLLoss", lambda x, z, w: nn.GaussianNLLLoss()(x, z.detach(), w.detach().abs() + 0.1))
report("CTCLoss", lambda x, z, w: nn.CTCLoss()(
    F.log_softmax(x.reshape(5, 1, 8), 2), torch.tensor([[1, 2]]), torch.tensor([5]), torch.tensor([2])))

# reduction='none' keeps one value per sample; the one-hot helper the tour builds targets with
per_sample = F.cross_entropy(torch.tensor(a), classes, reduction="none")
print(per_sample.shape, per_sample.dtype, [round(v, 4) for v in per_sample.tolist()])
print(F.one_hot(classes, num_classes=8).sum(0).tolist(), F.one_hot(classes).dtype)
try:
    nn.CrossEntropyLoss()(torch.tensor(a), torch.tensor([0, 3, 9, 1, 2]))
except IndexError as err:
    print("IndexError:", "out of bounds" in str(err))
try:
    nn.MSELoss()(torch.tensor(a), torch.tensor(b[:, :3]))
except RuntimeError as err:
    print("RuntimeError:", "must match the size" in str(err))
