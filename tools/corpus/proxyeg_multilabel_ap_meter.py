"""Multi-label evaluation as ML-GCN-style training scripts write it: torchnet's
AveragePrecisionMeter grows its score and target buffers with `scores.storage().resize_(n)`
and `scores.resize_(...)`, then per-class average precision by sorting, overall/per-class
precision, recall and F1 (OP/OR/OF1/CP/CR/CF1) in numpy and in torch, and top-k variants.

Written for tapegrad's proxy corpus (evaluation metrics domain); data from Python's seeded
`random`, which does not depend on the torch random stream.
"""
import math
import random
import numpy as np
import torch
random.seed(19)

class AveragePrecisionMeter(object):
    def __init__(self, difficult_examples=False):
        super(AveragePrecisionMeter, self).__init__()
        self.reset()
        self.difficult_examples = difficult_examples
    def reset(self):
        self.scores = torch.FloatTensor(torch.FloatStorage())
        self.targets = torch.LongTensor(torch.LongStorage())
    def add(self, output, target):
        if not torch.is_tensor(output):
            output = torch.from_numpy(output)
        if not torch.is_tensor(target):
            target = torch.from_numpy(target)
        if output.dim() == 1:
            output = output.view(-1, 1)
        else:
            assert output.dim() == 2
        if target.dim() == 1:
            target = target.view(-1, 1)
        if self.scores.numel() > 0:
            assert target.size(1) == self.targets.size(1)
        if self.scores.storage().size() < self.scores.numel() + output.numel():
            new_size = math.ceil(self.scores.storage().size() * 1.5)
            self.scores.storage().resize_(int(new_size + output.numel()))
            self.targets.storage().resize_(int(new_size + output.numel()))
        offset = self.scores.size(0) if self.scores.dim() > 0 else 0
        self.scores.resize_(offset + output.size(0), output.size(1))
        self.targets.resize_(offset + target.size(0), target.size(1))
        self.scores.narrow(0, offset, output.size(0)).copy_(output)
        self.targets.narrow(0, offset, target.size(0)).copy_(target)
    def value(self):
        if self.scores.numel() == 0:
            return 0
        ap = torch.zeros(self.scores.size(1))
        rg = torch.arange(1, self.scores.size(0)).float()
        for k in range(self.scores.size(1)):
            scores = self.scores[:, k]
            targets = self.targets[:, k]
            ap[k] = AveragePrecisionMeter.average_precision(scores, targets, self.difficult_examples)
        return ap
    @staticmethod
    def average_precision(output, target, difficult_examples=True):
        sorted, indices = torch.sort(output, dim=0, descending=True)
        pos_count = 0.
        total_count = 0.
        precision_at_i = 0.
        for i in indices:
            label = target[i]
            if difficult_examples and label == 0:
                continue
            if label == 1:
                pos_count += 1
            total_count += 1
            if label == 1:
                precision_at_i += pos_count / total_count
        precision_at_i /= pos_count
        return precision_at_i
    def overall(self):
        if self.scores.numel() == 0:
            return 0
        scores = self.scores.cpu().numpy()
        targets = self.targets.cpu().numpy()
        targets[targets == -1] = 0
        return self.evaluation(scores, targets)
    def overall_topk(self, k):
        targets = self.targets.cpu().numpy()
        targets[targets == -1] = 0
        n, c = self.scores.size()
        scores = np.zeros((n, c)) - 1
        index = self.scores.topk(k, 1, True, True)[1].cpu().numpy()
        tmp = self.scores.cpu().numpy()
        for i in range(n):
            for ind in index[i]:
                scores[i, ind] = 1 if tmp[i, ind] >= 0 else -1
        return self.evaluation(scores, targets)
    def evaluation(self, scores_, targets_):
        n, n_class = scores_.shape
        Nc, Np, Ng = np.zeros(n_class), np.zeros(n_class), np.zeros(n_class)
        for k in range(n_class):
            scores = scores_[:, k]
            targets = targets_[:, k]
            targets[targets == -1] = 0
            Ng[k] = np.sum(targets == 1)
            Np[k] = np.sum(scores >= 0)
            Nc[k] = np.sum(targets * (scores >= 0))
        Np[Np == 0] = 1
        OP = np.sum(Nc) / np.sum(Np)
        OR = np.sum(Nc) / np.sum(Ng)
        OF1 = (2 * OP * OR) / (OP + OR)
        CP = np.sum(Nc / Np) / n_class
        CR = np.sum(Nc / Ng) / n_class
        CF1 = (2 * CP * CR) / (CP + CR)
        return OP, OR, OF1, CP, CR, CF1

def evaluation_torch(scores_, targets_):
    n, n_class = scores_.shape
    Nc, Np, Ng = torch.zeros(n_class), torch.zeros(n_class), torch.zeros(n_class)
    for k in range(n_class):
        scores = scores_[:, k]
        targets = targets_[:, k]
        Ng[k] = torch.sum(targets == 1)
        Np[k] = torch.sum(scores >= 0)
        Nc[k] = torch.sum(targets * (scores >= 0))
    Np[Np == 0] = 1
    OP = torch.sum(Nc) / torch.sum(Np)
    OR = torch.sum(Nc) / torch.sum(Ng)
    OF1 = (2 * OP * OR) / (OP + OR)
    CP = torch.sum(Nc / Np) / n_class
    CR = torch.sum(Nc / Ng) / n_class
    CF1 = (2 * CP * CR) / (CP + CR)
    return OP, OR, OF1, CP, CR, CF1

meter = AveragePrecisionMeter(difficult_examples=True)
all_out, all_tgt = [], []
for batch in range(5):
    out = torch.tensor([[round(random.gauss(0, 1.5), 3) for _ in range(6)] for _ in range(7)])
    tgt = torch.tensor([[random.choice([-1, 1, 1, 0]) for _ in range(6)] for _ in range(7)])
    meter.add(out.data, tgt)
    all_out.append(out)
    all_tgt.append(tgt)
    print(batch, meter.scores.shape, meter.targets.shape, meter.scores.dtype)
ap = meter.value()
print(ap)
map_ = 100 * ap.mean()
print(f"mAP {map_:.3f}", map_)
OP, OR, OF1, CP, CR, CF1 = meter.overall()
print('OP: {OP:.4f}\tOR: {OR:.4f}\tOF1: {OF1:.4f}\tCP: {CP:.4f}\tCR: {CR:.4f}\tCF1: {CF1:.4f}'.format(OP=OP, OR=OR, OF1=OF1, CP=CP, CR=CR, CF1=CF1))
print([round(float(v), 4) for v in meter.overall_topk(3)])
S = torch.cat(all_out)
T = torch.cat(all_tgt)
T[T == -1] = 0
print([f"{v:.4f}" for v in evaluation_torch(S, T)])
print(torch.equal(S, meter.scores), meter.targets.sum(), T.sum())
meter.reset()
print(meter.scores.shape, meter.value())
