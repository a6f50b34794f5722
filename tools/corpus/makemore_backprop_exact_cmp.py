"""karpathy/nn-zero-to-hero lectures/makemore/makemore_part4_backprop.ipynb, exercises 1-2: the
manual backward pass through a BatchNorm MLP compared with autograd by cmp(), which prints whether
each hand-written gradient equals autograd's bit for bit (exact), approximately, and the max
difference.  Adapted: names.txt -> a short built-in word list; the torch.randn/randint initial
values -> a seeded numpy stream (so both libraries start from the same numbers); cmp() prints
maxdiff < 1e-7 rather than the last-bit-dependent maximum.  PyTorch's tanh
backward rounds 1 - h**2 once (a fused multiply-add), so 'hpreact' and everything below it print
exact: False under PyTorch."""
import random

import numpy as np
import torch
import torch.nn.functional as F

words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'charlotte', 'mia', 'amelia', 'harper',
         'evelyn', 'abigail', 'emily', 'elizabeth', 'mila', 'ella', 'avery', 'sofia', 'camila',
         'aria', 'scarlett', 'victoria', 'madison', 'luna', 'grace', 'chloe', 'penelope', 'layla']
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


random.seed(42)
random.shuffle(words)
Xtr, Ytr = build_dataset(words)
rng = np.random.default_rng(2147483647)


def randn(*shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def cmp(s, dt, t):
    ex = torch.all(dt == t.grad).item()
    app = torch.allclose(dt, t.grad)
    maxdiff = (dt - t.grad).abs().max().item()
    print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff < 1e-7: {maxdiff < 1e-7}')


n_embd, n_hidden = 10, 64
C = randn(vocab_size, n_embd)
W1 = randn(n_embd * block_size, n_hidden) * (5 / 3) / ((n_embd * block_size) ** 0.5)
b1 = randn(n_hidden) * 0.1
W2 = randn(n_hidden, vocab_size) * 0.1
b2 = randn(vocab_size) * 0.1
bngain = randn(1, n_hidden) * 0.1 + 1.0
bnbias = randn(1, n_hidden) * 0.1
parameters = [C, W1, b1, W2, b2, bngain, bnbias]
print(sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

batch_size = 32
n = batch_size
ix = torch.from_numpy(rng.integers(0, Xtr.shape[0], size=batch_size))
Xb, Yb = Xtr[ix], Ytr[ix]

emb = C[Xb]
embcat = emb.view(emb.shape[0], -1)
hprebn = embcat @ W1 + b1
bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
bndiff = hprebn - bnmeani
bndiff2 = bndiff ** 2
bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
bnvar_inv = (bnvar + 1e-5) ** -0.5
bnraw = bndiff * bnvar_inv
hpreact = bngain * bnraw + bnbias
h = torch.tanh(hpreact)
logits = h @ W2 + b2
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdims=True)
counts_sum_inv = counts_sum ** -1
probs = counts * counts_sum_inv
logprobs = probs.log()
loss = -logprobs[range(n), Yb].mean()
for p in parameters:
    p.grad = None
for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits, h,
          hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:
    t.retain_grad()
loss.backward()
print(loss)

dlogprobs = torch.zeros_like(logprobs)
dlogprobs[range(n), Yb] = -1.0 / n
dprobs = (1.0 / probs) * dlogprobs
dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
dcounts = counts_sum_inv * dprobs
dcounts_sum = (-counts_sum ** -2) * dcounts_sum_inv
dcounts += torch.ones_like(counts) * dcounts_sum
dnorm_logits = counts * dcounts
dlogits = dnorm_logits.clone()
dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
dh = dlogits @ W2.T
dW2 = h.T @ dlogits
db2 = dlogits.sum(0)
dhpreact = (1.0 - h ** 2) * dh
dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
dbnraw = bngain * dhpreact
dbnbias = dhpreact.sum(0, keepdim=True)
dbndiff = bnvar_inv * dbnraw
dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
dbndiff += (2 * bndiff) * dbndiff2
dhprebn = dbndiff.clone()
dbnmeani = (-dbndiff).sum(0)
dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
dembcat = dhprebn @ W1.T
dW1 = embcat.T @ dhprebn
db1 = dhprebn.sum(0)
demb = dembcat.view(emb.shape)
dC = torch.zeros_like(C)
for k in range(Xb.shape[0]):
    for j in range(Xb.shape[1]):
        ix = Xb[k, j]
        dC[ix] += demb[k, j]

for name, d, t in [('logprobs', dlogprobs, logprobs), ('probs', dprobs, probs),
                   ('counts_sum_inv', dcounts_sum_inv, counts_sum_inv), ('counts_sum', dcounts_sum, counts_sum),
                   ('counts', dcounts, counts), ('norm_logits', dnorm_logits, norm_logits),
                   ('logit_maxes', dlogit_maxes, logit_maxes), ('logits', dlogits, logits), ('h', dh, h),
                   ('W2', dW2, W2), ('b2', db2, b2), ('hpreact', dhpreact, hpreact), ('bngain', dbngain, bngain),
                   ('bnbias', dbnbias, bnbias), ('bnraw', dbnraw, bnraw), ('bnvar_inv', dbnvar_inv, bnvar_inv),
                   ('bnvar', dbnvar, bnvar), ('bndiff2', dbndiff2, bndiff2), ('bndiff', dbndiff, bndiff),
                   ('bnmeani', dbnmeani, bnmeani), ('hprebn', dhprebn, hprebn), ('embcat', dembcat, embcat),
                   ('W1', dW1, W1), ('b1', db1, b1), ('emb', demb, emb), ('C', dC, C)]:
    cmp(name, d, t)

# exercise 2: cross entropy backward in one go
loss_fast = F.cross_entropy(logits, Yb)
print(f'{loss_fast.item():.6f}', 'diff small:', abs((loss_fast - loss).item()) < 1e-6)
dlogits = F.softmax(logits, 1)
dlogits[range(n), Yb] -= 1
dlogits /= n
cmp('logits', dlogits, logits)
