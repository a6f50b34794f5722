"""Skip-gram word2vec with negative sampling, the classic way: two nn.Embedding(sparse=True)
tables (center and context words), a logsigmoid loss over one positive and K sampled negative
pairs per center word, and optim.SparseAdam on the sparse gradients; then the same model a few
steps with plain SGD on the sparse gradients, and nearest neighbours by cosine similarity.

Written for the corpus (no outside source).  Deterministic: the corpus text is fixed, the
weights and the negative samples come from one numpy stream.  Also printed: the sparse
gradient itself (indices, nnz, coalesced rows) and the refusals of Adam and of clipping.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

rs = np.random.RandomState(0)

text = """the quick brown fox jumps over the lazy dog the dog sleeps in the sun
the fox runs into the forest the brown dog chases the quick fox a lazy cat sleeps
in the warm sun the cat and the dog are friends the fox is quick and brown""".split()
vocab = sorted(set(text))
word_to_ix = {w: i for i, w in enumerate(vocab)}
ids = [word_to_ix[w] for w in text]
print(len(vocab), "words,", len(ids), "tokens")

WINDOW, NEGATIVES, DIM = 2, 4, 12
pairs = [(ids[i], ids[j]) for i in range(len(ids))
         for j in range(max(0, i - WINDOW), min(len(ids), i + WINDOW + 1)) if j != i]
print(len(pairs), "pairs; first", pairs[:4])

# unigram^0.75 noise distribution, as word2vec
counts = np.bincount(ids, minlength=len(vocab)).astype(np.float64)
noise = counts ** 0.75
noise /= noise.sum()


class SkipGram(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.center = nn.Embedding(vocab_size, dim, sparse=True)
        self.context = nn.Embedding(vocab_size, dim, sparse=True)

    def forward(self, center, context, negatives):
        vc = self.center(center)                                   # (B, D)
        pos = (vc * self.context(context)).sum(1)                  # (B,)
        neg = torch.bmm(self.context(negatives), vc.unsqueeze(2)).squeeze(2)   # (B, K)
        return -(F.logsigmoid(pos) + F.logsigmoid(-neg).sum(1)).mean()


model = SkipGram(len(vocab), DIM)
with torch.no_grad():
    model.center.weight.copy_(torch.tensor(rs.uniform(-0.5, 0.5, (len(vocab), DIM)) / DIM,
                                           dtype=torch.float32))
    model.context.weight.copy_(torch.tensor(rs.uniform(-0.1, 0.1, (len(vocab), DIM)),
                                            dtype=torch.float32))
print(model)

BATCH = 16
batches = []
for step in range(30):
    chosen = rs.randint(0, len(pairs), BATCH)
    center = torch.tensor([pairs[k][0] for k in chosen])
    context = torch.tensor([pairs[k][1] for k in chosen])
    negatives = torch.tensor(rs.choice(len(vocab), (BATCH, NEGATIVES), p=noise))
    batches.append((center, context, negatives))

# the sparse gradient of one batch
loss = model(*batches[0])
loss.backward()
g = model.center.weight.grad
print("loss", round(loss.item(), 6))
print("grad", g.layout, g.is_sparse, tuple(g.shape), g._nnz(), g.is_coalesced())
print("indices", g._indices().tolist())
gc = g.coalesce()
print("coalesced", gc._nnz(), gc.is_coalesced(), gc._indices().tolist())
print("row sums", [round(v, 6) for v in gc._values().sum(1).tolist()])
print("dense equal", torch.allclose(g.to_dense(), gc.to_dense()))
# (two lookups of the context table in one backward: the entries PyTorch keeps apart or merges
# depend on its gradients' memory layout, so only the coalesced gradient is printed)
cg = model.context.weight.grad.coalesce()
print("context rows", cg._nnz(), round(cg._values().abs().sum().item(), 6))

# optimizers without a sparse form refuse it, as does clipping
try:
    optim.Adam(model.parameters(), lr=0.01).step()
except RuntimeError as e:
    print("Adam:", e)
try:
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
except NotImplementedError as e:
    print("clip_grad_norm_:", str(e).split(" with arguments")[0])

opt = optim.SparseAdam(model.parameters(), lr=0.05)
for epoch in range(3):
    total = 0.0
    for center, context, negatives in batches:
        opt.zero_grad()
        loss = model(center, context, negatives)
        loss.backward()
        opt.step()
        total += loss.item()
    print("SparseAdam epoch", epoch, "mean loss", round(total / len(batches), 6))

# a few SGD steps with momentum on the same sparse gradients
sgd = optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
for center, context, negatives in batches[:8]:
    sgd.zero_grad(set_to_none=False)
    loss = model(center, context, negatives)
    loss.backward()
    sgd.step()
print("SGD loss", round(loss.item(), 6))
print("momentum nnz", sgd.state[model.center.weight]["momentum_buffer"].coalesce()._nnz())

with torch.no_grad():
    emb = F.normalize(model.center.weight, dim=1)
    sims = emb @ emb.t()
for word in ["fox", "dog", "sun"]:
    row = sims[word_to_ix[word]].clone()
    row[word_to_ix[word]] = -2
    best = torch.topk(row, 3).indices.tolist()
    print(word, "->", [vocab[i] for i in best], [round(v, 4) for v in row[best].tolist()])
print("weight checksum", round(model.center.weight.sum().item(), 5),
      round(model.context.weight.sum().item(), 5))
