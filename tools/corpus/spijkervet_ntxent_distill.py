"""Contrastive pre-training then distillation, in the style of Spijkervet/SimCLR's NT_Xent and
the common Hinton knowledge-distillation loss (written for this corpus, not a copy): a boolean
mask built with fill_diagonal_ and per-pair writes, nn.CosineSimilarity(dim=2) over a broadcast
(2N, 1, D) x (1, 2N, D) pair, torch.diag with positive and negative offsets, boolean-mask
selection reshaped to (2N, -1), CrossEntropyLoss(reduction="sum") divided in place, the
SimCLR-as-in-sthalles logits built from F.normalize and an eye mask, top-k accuracy; then a
student trained on a frozen teacher with KLDivLoss(reduction="batchmean") on temperature-scaled
log_softmax / softmax (and log_target=True), scaled by T*T and mixed with cross entropy; a
gradcheck of the distillation loss in float64.  Every random draw comes from one numpy RandomState.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rs = np.random.RandomState(11)


def tensor(*shape, scale=1.0):
    return torch.from_numpy((scale * rs.randn(*shape)).astype(np.float32))


class NTXent(nn.Module):
    def __init__(self, batch_size, temperature):
        super().__init__()
        self.batch_size, self.temperature = batch_size, temperature
        n = 2 * batch_size
        mask = torch.ones((n, n), dtype=bool).fill_diagonal_(0)
        for i in range(batch_size):
            mask[i, batch_size + i] = 0
            mask[batch_size + i, i] = 0
        self.mask = mask
        self.criterion = nn.CrossEntropyLoss(reduction="sum")
        self.similarity = nn.CosineSimilarity(dim=2)

    def forward(self, z_i, z_j):
        n = 2 * self.batch_size
        z = torch.cat((z_i, z_j), dim=0)
        sim = self.similarity(z.unsqueeze(1), z.unsqueeze(0)) / self.temperature
        pos = torch.cat((torch.diag(sim, self.batch_size), torch.diag(sim, -self.batch_size))).reshape(n, 1)
        neg = sim[self.mask].reshape(n, -1)
        logits = torch.cat((pos, neg), dim=1)
        loss = self.criterion(logits, torch.zeros(n).long())
        loss /= n
        return loss, logits


def info_nce_logits(features, batch_size, temperature):
    labels = torch.cat([torch.arange(batch_size) for _ in range(2)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    sim = features @ features.T
    eye = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~eye].view(labels.shape[0], -1)
    sim = sim[~eye].view(sim.shape[0], -1)
    positives = sim[labels.bool()].view(labels.shape[0], -1)
    negatives = sim[~labels.bool()].view(sim.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    return logits, torch.zeros(logits.shape[0], dtype=torch.long)


def topk_accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        _, pred = output.topk(max(topk), 1, True, True)
        correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / target.size(0))
                for k in topk]


def init(module, scale):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rs.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)))
    return module


encoder = init(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8)), 0.5)
projector = init(nn.Sequential(nn.Linear(8, 8, bias=False), nn.ReLU(), nn.Linear(8, 4, bias=False)), 0.5)
crit = NTXent(batch_size=5, temperature=0.5)
print("mask", crit.mask.dtype, crit.mask.sum().item(), crit.mask[0].int().tolist())
opt = torch.optim.Adam(list(encoder.parameters()) + list(projector.parameters()), lr=1e-2)
base = tensor(5, 10)
for step in range(4):
    x_i, x_j = base + tensor(5, 10, scale=0.3), base + tensor(5, 10, scale=0.3)
    z_i, z_j = projector(encoder(x_i)), projector(encoder(x_j))
    loss, logits = crit(z_i, z_j)
    logits2, labels2 = info_nce_logits(torch.cat([z_i, z_j]), 5, 0.5)
    ce = F.cross_entropy(logits2, labels2)
    top1, top3 = topk_accuracy(logits, torch.zeros(10, dtype=torch.long), topk=(1, 3))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step}: nt-xent {loss.item():.4f} info-nce {ce.item():.4f} "
          f"logits {tuple(logits.shape)} top1 {top1.item():.1f} top3 {top3.item():.1f}")
print("same loss both ways:", torch.allclose(loss, ce, atol=1e-5), loss.grad_fn.name())


def kd_loss(student, teacher, labels, T=4.0, alpha=0.7):
    soft = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(student / T, dim=1),
                                               F.softmax(teacher / T, dim=1))
    return soft * (alpha * T * T) + F.cross_entropy(student, labels) * (1.0 - alpha)


teacher = init(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)), 0.6).eval()
student = init(nn.Linear(8, 3), 0.3)
for p in teacher.parameters():
    p.requires_grad_(False)
sopt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9)
data = tensor(24, 8)
labels = teacher(data).argmax(1)
print("teacher labels", torch.bincount(labels, minlength=3).tolist())
for epoch in range(5):
    with torch.no_grad():
        t_out = teacher(data)
    s_out = student(data)
    loss = kd_loss(s_out, t_out, labels)
    as_logs = F.kl_div(F.log_softmax(s_out / 4.0, 1), F.log_softmax(t_out / 4.0, 1),
                       reduction="batchmean", log_target=True)
    sopt.zero_grad()
    loss.backward()
    sopt.step()
    agree = (s_out.argmax(1) == labels).float().mean().item()
    print(f"epoch {epoch}: kd {loss.item():.4f} kl(log_target) {as_logs.item():.5f} agreement {agree:.3f}")

x = torch.from_numpy(rs.randn(4, 3)).requires_grad_()
t64 = torch.from_numpy(rs.randn(4, 3))
y = torch.tensor([0, 2, 1, 1])
print("gradcheck", torch.autograd.gradcheck(lambda s: kd_loss(s, t64, y, T=2.0), (x,)))
