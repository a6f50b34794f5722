"""SimCLR's NT-Xent loss as public repos write it (sthalles/SimCLR's info_nce_loss, the UvA DL
tutorial's masked_fill + logsumexp version with argsort ranking accuracy, a CLIP-like symmetric
cross entropy with torch.arange labels), written for this corpus, not a copy: F.normalize,
torch.eye(dtype=torch.bool), roll, boolean-mask selection, topk, Adam steps.  Weights and
inputs are filled deterministically, so nothing depends on the RNG."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def det(*shape, phase=0.0, scale=1.0):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.731 + phase) * scale).reshape(shape)


def nt_xent(z1, z2, temperature=0.5):
    z = torch.cat([z1, z2], dim=0)
    z = F.normalize(z, dim=1)
    n = z.shape[0]
    sim = torch.matmul(z, z.T) / temperature
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(self_mask, -9e15)
    pos_mask = self_mask.roll(shifts=n // 2, dims=0)
    nll = -sim[pos_mask] + torch.logsumexp(sim, dim=-1)
    nll = nll.mean()
    comb_sim = torch.cat([sim[pos_mask][:, None], sim.masked_fill(pos_mask, -9e15)], dim=-1)
    sim_argsort = comb_sim.argsort(dim=-1, descending=True).argmin(dim=-1)
    acc_top1 = (sim_argsort == 0).float().mean()
    acc_top5 = (sim_argsort < 5).float().mean()
    mean_pos = 1 + sim_argsort.float().mean()
    return nll, acc_top1, acc_top5, mean_pos


def info_nce_loss(features, batch_size, n_views=2, temperature=0.07):
    labels = torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1)
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    logits = logits / temperature
    return logits, labels


class ProjectionHead(nn.Module):
    def __init__(self, in_dim=16, hidden=32, out_dim=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out_dim))

    def forward(self, x):
        return self.net(x)


head = ProjectionHead()
with torch.no_grad():
    for i, p in enumerate(head.parameters()):
        p.copy_(det(*p.shape, phase=i, scale=0.3))

B = 6
x1 = det(B, 16, phase=0.1)
x2 = x1 + 0.1 * det(B, 16, phase=2.0)
z1, z2 = head(x1), head(x2)
print("z shapes", z1.shape, z2.shape)
loss, top1, top5, mean_pos = nt_xent(z1, z2, temperature=0.5)
print(f"nt_xent loss {loss.item():.4f} top1 {top1.item():.3f} top5 {top5.item():.3f} mean_pos {mean_pos.item():.3f}")
loss.backward()
print("grad norms", [round(p.grad.norm().item(), 4) for p in head.parameters()])

logits, labels = info_nce_loss(torch.cat([z1, z2]).detach(), B)
print("logits", logits.shape, logits.dtype, "labels", labels.shape, labels.dtype)
ce = nn.CrossEntropyLoss()(logits, labels)
print("info_nce ce", round(ce.item(), 4))
_, pred = logits.topk(3, 1, True, True)
print("pred", pred[:4].tolist())

# the "cross entropy with arange labels" formulation (CLIP-like symmetric)
z1n, z2n = F.normalize(z1.detach(), dim=-1), F.normalize(z2.detach(), dim=-1)
logits12 = z1n @ z2n.t() / 0.1
targets = torch.arange(B, device=logits12.device)
sym = (F.cross_entropy(logits12, targets) + F.cross_entropy(logits12.t(), targets)) / 2
print("symmetric loss", f"{sym:.4f}")
print("diag sims", torch.diagonal(z1n @ z2n.T).round(decimals=3))
print("acc", (logits12.argmax(dim=1) == targets).float().mean().item())

# optimizer step with LARS-free Adam and weight decay
opt = torch.optim.Adam(head.parameters(), lr=1e-3, weight_decay=1e-6)
for step in range(3):
    opt.zero_grad(set_to_none=True)
    loss = nt_xent(head(x1), head(x2))[0]
    loss.backward()
    opt.step()
    print("step", step, "loss", round(loss.item(), 4))
