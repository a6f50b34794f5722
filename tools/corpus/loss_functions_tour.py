"""The loss modules of torch.nn on fixed inputs, with their reductions, weights and options."""
import torch
import torch.nn as nn
import torch.nn.functional as F

pred = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]])
target = torch.tensor([[1.0, -1.0, 0.0], [0.0, 0.5, -0.5]])
for cls in (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss):
    print(cls.__name__, cls()(pred, target), cls(reduction='sum')(pred, target))
print(nn.MSELoss(reduction='none')(pred, target))
print(nn.SmoothL1Loss(beta=0.5)(pred, target), nn.HuberLoss(delta=0.5)(pred, target))

logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0], [1.0, 1.0, 1.0], [-2.0, 4.0, 0.0]])
labels = torch.tensor([0, 2, 1, 1])
print('CE', nn.CrossEntropyLoss()(logits, labels))
print('CE none', nn.CrossEntropyLoss(reduction='none')(logits, labels))
print('CE weight', nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))(logits, labels))
print('CE ignore_index', nn.CrossEntropyLoss(ignore_index=1)(logits, labels))
print('CE label_smoothing', nn.CrossEntropyLoss(label_smoothing=0.1)(logits, labels))
probs_target = torch.tensor([[0.7, 0.2, 0.1], [0.0, 0.0, 1.0], [0.3, 0.3, 0.4], [0.1, 0.8, 0.1]])
print('CE soft targets', nn.CrossEntropyLoss()(logits, probs_target))
seq_logits = logits.T.unsqueeze(0)
print('CE (N, C, d)', nn.CrossEntropyLoss()(seq_logits, labels.unsqueeze(0)))
print('NLL', nn.NLLLoss()(F.log_softmax(logits, dim=1), labels))
print('NLL sum', F.nll_loss(F.log_softmax(logits, dim=1), labels, reduction='sum'))

p = torch.tensor([0.9, 0.2, 0.6, 0.01])
t = torch.tensor([1.0, 0.0, 1.0, 0.0])
print('BCE', nn.BCELoss()(p, t), nn.BCELoss(weight=torch.tensor([1.0, 2.0, 1.0, 2.0]))(p, t))
z = torch.tensor([2.0, -1.0, 0.5, -4.0])
print('BCEWithLogits', nn.BCEWithLogitsLoss()(z, t))
print('BCEWithLogits pos_weight', nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))(z, t))
print('BCE saturates', F.binary_cross_entropy(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])))

log_q = F.log_softmax(torch.tensor([[1.0, 2.0, 3.0]]), dim=1)
p_target = torch.tensor([[0.2, 0.3, 0.5]])
print('KLDiv batchmean', nn.KLDivLoss(reduction='batchmean')(log_q, p_target))
print('KLDiv log_target', nn.KLDivLoss(reduction='sum', log_target=True)(log_q, p_target.log()))
print('PoissonNLL', nn.PoissonNLLLoss()(torch.tensor([0.5, 1.0]), torch.tensor([1.0, 2.0])))
print('GaussianNLL', nn.GaussianNLLLoss()(torch.tensor([0.5, 1.0]), torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.5])))

a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
b = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
print('CosineEmbedding', nn.CosineEmbeddingLoss()(a, b, torch.tensor([1, -1])))
print('MarginRanking', nn.MarginRankingLoss(margin=0.5)(torch.tensor([1.0, 2.0]), torch.tensor([1.5, 0.0]), torch.tensor([1.0, 1.0])))
print('HingeEmbedding', nn.HingeEmbeddingLoss()(torch.tensor([0.3, 2.0]), torch.tensor([1, -1])))
anchor = torch.tensor([[0.0, 0.0]])
positive = torch.tensor([[1.0, 0.0]])
negative = torch.tensor([[0.0, 0.5]])
print('TripletMargin', nn.TripletMarginLoss(margin=1.0)(anchor, positive, negative))
print('SoftMargin', nn.SoftMarginLoss()(torch.tensor([0.5, -2.0]), torch.tensor([1.0, -1.0])))
print('MultiLabelSoftMargin', nn.MultiLabelSoftMarginLoss()(logits[:2], torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])))
print('MultiMargin', nn.MultiMarginLoss()(logits, labels))
print(nn.CrossEntropyLoss(label_smoothing=0.2, reduction='sum'))

x = logits.clone().requires_grad_()
loss = F.cross_entropy(x, labels)
loss.backward()
print('CE grad', x.grad)
print('grad equals (softmax - onehot)/N', torch.allclose(x.grad, (F.softmax(logits, 1) - F.one_hot(labels, 3)) / 4))
try:
    nn.CrossEntropyLoss()(logits, torch.tensor([0, 3, 1, 1]))
except IndexError as e:
    print('target out of bounds: IndexError', 'out of bounds' in str(e))
try:
    nn.MSELoss()(torch.ones(2, 3), torch.ones(3, 2))
except RuntimeError as e:
    print('MSE shape mismatch: RuntimeError')
