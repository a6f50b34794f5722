# Episodic batch sampler + prototypes via unique / index_select / scatter_add (orobix style)
import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.modules import Module

torch.manual_seed(0)

class PrototypicalBatchSampler(object):
    def __init__(self, labels, classes_per_it, num_samples, iterations):
        super(PrototypicalBatchSampler, self).__init__()
        self.labels = labels
        self.classes_per_it = classes_per_it
        self.sample_per_class = num_samples
        self.iterations = iterations
        self.classes, self.counts = np.unique(self.labels, return_counts=True)
        self.classes = torch.LongTensor(self.classes)
        self.idxs = range(len(self.labels))
        self.indexes = np.empty((len(self.classes), max(self.counts)), dtype=int) * np.nan
        self.indexes = torch.Tensor(self.indexes)
        self.numel_per_class = torch.zeros_like(self.classes)
        for idx, label in enumerate(self.labels):
            label_idx = np.argwhere(self.classes == label).item()
            self.indexes[label_idx, np.where(np.isnan(self.indexes[label_idx]))[0][0]] = idx
            self.numel_per_class[label_idx] += 1

    def __iter__(self):
        spc = self.sample_per_class
        cpi = self.classes_per_it
        for it in range(self.iterations):
            batch_size = spc * cpi
            batch = torch.LongTensor(batch_size)
            c_idxs = torch.randperm(len(self.classes))[:cpi]
            for i, c in enumerate(self.classes[c_idxs]):
                s = slice(i * spc, (i + 1) * spc)
                label_idx = torch.arange(len(self.classes)).long()[self.classes == c].item()
                sample_idxs = torch.randperm(self.numel_per_class[label_idx])[:spc]
                batch[s] = self.indexes[label_idx][sample_idxs]
            batch = batch[torch.randperm(len(batch))]
            yield batch

    def __len__(self):
        return self.iterations

labels = np.repeat(np.arange(6), 5)
sampler = PrototypicalBatchSampler(labels, classes_per_it=3, num_samples=4, iterations=2)
print(len(sampler), sampler.classes, sampler.numel_per_class)
print(sampler.indexes.shape, sampler.indexes.dtype, sampler.indexes[2])
for batch in sampler:
    print(batch.shape, batch.dtype, sorted(set(labels[batch.numpy()] >= 0)))

def euclidean_dist(x, y):
    n = x.size(0); m = y.size(0); d = x.size(1)
    if d != y.size(1):
        raise Exception
    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)
    return torch.pow(x - y, 2).sum(2)

def prototypical_loss(input, target, n_support):
    target_cpu = target.to('cpu')
    input_cpu = input.to('cpu')
    def supp_idxs(c):
        return target_cpu.eq(c).nonzero()[:n_support].squeeze(1)
    classes = torch.unique(target_cpu)
    n_classes = len(classes)
    n_query = target_cpu.eq(classes[0].item()).sum().item() - n_support
    support_idxs = list(map(supp_idxs, classes))
    prototypes = torch.stack([input_cpu[idx_list].mean(0) for idx_list in support_idxs])
    query_idxs = torch.stack(list(map(lambda c: target_cpu.eq(c).nonzero()[n_support:], classes))).view(-1)
    query_samples = input.to('cpu')[query_idxs]
    dists = euclidean_dist(query_samples, prototypes)
    log_p_y = F.log_softmax(-dists, dim=1).view(n_classes, n_query, -1)
    target_inds = torch.arange(0, n_classes)
    target_inds = target_inds.view(n_classes, 1, 1)
    target_inds = target_inds.expand(n_classes, n_query, 1).long()
    loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
    _, y_hat = log_p_y.max(2)
    acc_val = y_hat.eq(target_inds.squeeze(2)).float().mean()
    return loss_val, acc_val

target = torch.tensor([2, 0, 1, 2, 0, 1, 1, 2, 0, 0, 1, 2])
emb = torch.stack([torch.sin(torch.arange(8.0) * (t + 1) + i * 0.01) for i, t in enumerate(target.tolist())]).requires_grad_()
loss, acc = prototypical_loss(emb, target, n_support=2)
loss.backward()
print(f"loss {loss.item():.4f} acc {acc.item():.4f} grad norm {emb.grad.norm():.4f}")

# class means via scatter_add / index_add / bincount
classes, inv, counts = torch.unique(target, return_inverse=True, return_counts=True)
print(classes, inv, counts)
sums = torch.zeros(len(classes), emb.size(1)).scatter_add(0, inv.unsqueeze(1).expand(-1, emb.size(1)), emb)
protos = sums / counts.unsqueeze(1).float()
protos2 = torch.zeros(len(classes), emb.size(1)).index_add_(0, inv, emb.detach()) / torch.bincount(inv).float()[:, None]
print(protos.grad_fn is not None, torch.allclose(protos, protos2))
sel = emb.index_select(0, torch.nonzero(target == 1, as_tuple=True)[0])
print(sel.shape, sel.mean(0)[:3])
d = torch.cdist(emb, protos)
print(d.shape, d.argmin(1), (d.argmin(1) == target).float().mean())
d.sum().backward()
print(emb.grad.abs().sum())
