"""Idioms of older PyTorch tutorials met in session 13's held-out proxy (GunhoChoi's FastCampus
notebooks, sgrvinod's tutorials, keon's 3-min-pytorch), written afresh: legacy typed
constructors fed Python sequences (LongTensor(range(n))), a custom Function reading
ctx.saved_variables, reading .grad of a non-leaf, a label-smoothed cross-entropy over packed
padded sequences and a small GRU tagger trained a few Adam steps with clipped gradients.
Weights and batches come from numpy, so both libraries start equal."""
import collections
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function, Variable
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

warnings.simplefilter("ignore")          # (the deprecation warnings go to stderr in both)

lengths = torch.LongTensor(range(6, 3, -1))
print(lengths, lengths.dtype)
print(torch.FloatTensor(collections.deque([0.5, 1.5])), torch.Tensor(range(3)).sum())
print(torch.ByteTensor(bytearray(b"az")), torch.IntTensor(memoryview(b"\x01\x02")))
for bad in ({1: 2}, {1, 2}, (i for i in range(2)), b"xy"):
    try:
        torch.LongTensor(bad)
    except TypeError as e:
        print("TypeError:", e)


class Exp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_variables
        return grad_output * result


a = Variable(torch.Tensor([1, 2]), requires_grad=True)
out = Exp.apply(a)
print(out, out.grad_fn.__class__.__name__)
z = (out * 2).sum()
z.backward()
print(a.grad, z.grad, out.grad)

rng = np.random.RandomState(0)


def from_numpy_weights(module, scale=0.2):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))


def smoothed_ce(scores, targets, lens, eps=0.1):
    scores, _, _, _ = pack_padded_sequence(scores, lens, batch_first=True, enforce_sorted=False)
    targets, _, _, _ = pack_padded_sequence(targets, lens, batch_first=True, enforce_sorted=False)
    target_vector = torch.zeros_like(scores).scatter(dim=1, index=targets.unsqueeze(1), value=1.)
    target_vector = target_vector * (1. - eps) + eps / target_vector.size(1)
    return (-1 * target_vector * F.log_softmax(scores, dim=1)).sum(dim=1).mean()


class Tagger(nn.Module):
    def __init__(self, vocab, tags, emb=6, hidden=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, tags)

    def forward(self, words, lens):
        packed = pack_padded_sequence(self.emb(words), lens, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, out_lens = pad_packed_sequence(out, batch_first=True)
        return self.fc(out), out_lens


model = Tagger(vocab=20, tags=5)
from_numpy_weights(model)
words = torch.from_numpy(rng.randint(1, 20, size=(3, 6)).astype(np.int64))
tags = torch.from_numpy(rng.randint(0, 5, size=(3, 6)).astype(np.int64))
for i, n in enumerate(lengths.tolist()):
    words[i, n:] = 0
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
for step in range(5):
    scores, out_lens = model(words, lengths)
    loss = smoothed_ce(scores, tags[:, :scores.size(1)], lengths)
    optimizer.zero_grad()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step(loss.item() if step != 2 else 10.0)
    print(step, round(loss.item(), 4), round(norm.item(), 4), optimizer.param_groups[0]["lr"])
print(out_lens, scores.shape, scores.argmax(-1).tolist())
