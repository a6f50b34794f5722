# Filtered ranking evaluation: MRR, MR, Hits@1/3/10 for tail and head prediction
import torch
from collections import defaultdict

n_ent, n_rel, dim = 25, 4, 6
ent = torch.sin(torch.arange(n_ent * dim, dtype=torch.float32) * 0.7).view(n_ent, dim)
rel = torch.cos(torch.arange(n_rel * dim, dtype=torch.float32) * 0.3).view(n_rel, dim)

train = torch.tensor([[i, i % n_rel, (2 * i + 1) % n_ent] for i in range(n_ent)])
test = torch.tensor([[i, (i + 1) % n_rel, (3 * i + 2) % n_ent] for i in range(0, n_ent, 2)])
all_triples = torch.cat([train, test])
print("train", tuple(train.shape), "test", tuple(test.shape))

known_tails = defaultdict(set)
known_heads = defaultdict(set)
for h, r, t in all_triples.tolist():
    known_tails[(h, r)].add(t)
    known_heads[(r, t)].add(h)


def score_tails(h, r):
    return -torch.cdist(ent[h] + rel[r], ent, p=1)


def score_heads(r, t):
    return -torch.cdist(ent[t] - rel[r], ent, p=1)


@torch.no_grad()
def evaluate(triples, batch_size=4):
    ranks = []
    for start in range(0, triples.shape[0], batch_size):
        batch = triples[start:start + batch_size]
        h, r, t = batch[:, 0], batch[:, 1], batch[:, 2]
        # tail prediction
        scores = score_tails(h, r)
        for i in range(batch.shape[0]):
            filt = [x for x in known_tails[(h[i].item(), r[i].item())] if x != t[i].item()]
            if filt:
                scores[i, torch.tensor(filt)] = float('-inf')
        target = scores[torch.arange(len(t)), t].unsqueeze(1)
        tail_ranks = (scores > target).sum(dim=1) + 1
        # head prediction with index_put_ on a mask
        scores_h = score_heads(r, t)
        mask = torch.zeros_like(scores_h, dtype=torch.bool)
        for i in range(batch.shape[0]):
            for x in known_heads[(r[i].item(), t[i].item())]:
                if x != h[i].item():
                    mask[i, x] = True
        scores_h.masked_fill_(mask, -float('inf'))
        order = torch.argsort(scores_h, dim=1, descending=True)
        head_ranks = (order == h.unsqueeze(1)).nonzero()[:, 1] + 1
        ranks.append(tail_ranks)
        ranks.append(head_ranks)
    ranks = torch.cat(ranks).float()
    return {
        'MR': ranks.mean().item(),
        'MRR': (1.0 / ranks).mean().item(),
        'Hits@1': (ranks <= 1).float().mean().item(),
        'Hits@3': (ranks <= 3).float().mean().item(),
        'Hits@10': (ranks <= 10).float().mean().item(),
    }, ranks


metrics, ranks = evaluate(test)
print(ranks.dtype, ranks.shape)
print(ranks)
for k, v in metrics.items():
    print(f"{k:>8s}: {v:.4f}")
print("| " + " | ".join(metrics) + " |")
print("| " + " | ".join(f"{v:.3f}" for v in metrics.values()) + " |")

# topk-based hits
scores = score_tails(test[:, 0], test[:, 1])
top = scores.topk(k=5, dim=1)
print(top.indices[:3])
print(top.values[:3])
hits5 = (top.indices == test[:, 2:3]).any(dim=1).float().mean()
print("hits@5 (raw)", hits5)
# double argsort gives rank of every entity
rank_of_all = scores.argsort(dim=1, descending=True).argsort(dim=1)
print(rank_of_all[torch.arange(len(test)), test[:, 2]] + 1)
# index_put_ filtering
filt = scores.clone()
rows = torch.tensor([0, 0, 1, 2])
cols = torch.tensor([1, 3, 5, 7])
filt.index_put_((rows, cols), torch.tensor(float('-inf')))
print(torch.isinf(filt).sum().item(), filt[0, :4])
