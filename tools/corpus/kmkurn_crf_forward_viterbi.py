"""In the style of kmkurn/pytorch-crf (torchcrf.CRF and its brute-force tests) and of a beam
approximated "dynamic" CRF (hanztup/csc_cbert): a linear-chain CRF layer with start/end/transition
parameters, the numerator by advanced indexing over (seq_length, batch) with a byte/bool mask, the
partition function by the forward algorithm (broadcast score + transitions + emissions,
torch.logsumexp, torch.where on the mask), Viterbi decoding with max over the previous tag and
backtracking through the history of argmax indices, all checked against brute force over every
tag sequence (itertools.product); the negative log-likelihood trained a few Adam steps; then a
low-rank transition CRF over the top-k beam of the emissions (topk, gather, bmm, logsumexp,
in-place score updates, backtracking with gather).  Numbers only from numpy."""
import itertools
import math

import numpy as np
import torch
import torch.nn as nn


class CRF(nn.Module):
    def __init__(self, num_tags, batch_first=False):
        super().__init__()
        self.num_tags, self.batch_first = num_tags, batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        rng = np.random.RandomState(7)
        with torch.no_grad():
            for p in (self.start_transitions, self.end_transitions, self.transitions):
                p.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(np.float32)))

    def __repr__(self):
        return f'{self.__class__.__name__}(num_tags={self.num_tags})'

    def forward(self, emissions, tags, mask=None, reduction='sum'):
        if reduction not in ('none', 'sum', 'mean', 'token_mean'):
            raise ValueError(f'invalid reduction: {reduction}')
        if mask is None:
            mask = torch.ones_like(tags, dtype=torch.uint8)
        if self.batch_first:
            emissions, tags, mask = emissions.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
        llh = self._score(emissions, tags, mask) - self._normalizer(emissions, mask)
        if reduction == 'none':
            return llh
        if reduction == 'sum':
            return llh.sum()
        if reduction == 'mean':
            return llh.mean()
        return llh.sum() / mask.float().sum()

    def _score(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        mask = mask.float()
        score = self.start_transitions[tags[0]]
        score = score + emissions[0, torch.arange(batch_size), tags[0]]
        for i in range(1, seq_length):
            score = score + self.transitions[tags[i - 1], tags[i]] * mask[i]
            score = score + emissions[i, torch.arange(batch_size), tags[i]] * mask[i]
        seq_ends = mask.long().sum(dim=0) - 1
        last_tags = tags[seq_ends, torch.arange(batch_size)]
        return score + self.end_transitions[last_tags]

    def _normalizer(self, emissions, mask):
        score = self.start_transitions + emissions[0]
        for i in range(1, emissions.size(0)):
            nxt = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
            nxt = torch.logsumexp(nxt, dim=1)
            score = torch.where(mask[i].unsqueeze(1).bool(), nxt, score)
        return torch.logsumexp(score + self.end_transitions, dim=1)

    def decode(self, emissions, mask=None):
        if mask is None:
            mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)
        if self.batch_first:
            emissions, mask = emissions.transpose(0, 1), mask.transpose(0, 1)
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            nxt = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
            nxt, indices = nxt.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1).bool(), nxt, score)
            history.append(indices)
        score += self.end_transitions
        seq_ends = mask.long().sum(dim=0) - 1
        best_tags_list = []
        for idx in range(batch_size):
            _, best_last_tag = score[idx].max(dim=0)
            best_tags = [best_last_tag.item()]
            for hist in reversed(history[:seq_ends[idx]]):
                best_last_tag = hist[idx][best_tags[-1]]
                best_tags.append(best_last_tag.item())
            best_tags.reverse()
            best_tags_list.append(best_tags)
        return best_tags_list


def brute_force(crf, emission, length):
    """log Z, the best path and its score for one sequence (emission: seq x tags)."""
    scores = {}
    for tags in itertools.product(range(crf.num_tags), repeat=length):
        s = crf.start_transitions[tags[0]] + crf.end_transitions[tags[-1]]
        for a, b in zip(tags, tags[1:]):
            s = s + crf.transitions[a, b]
        for e, t in zip(emission, tags):
            s = s + e[t]
        scores[tags] = s.item()
    log_z = math.log(sum(math.exp(v) for v in scores.values()))
    best = max(scores, key=scores.get)
    return log_z, list(best), scores[best]


rng = np.random.RandomState(0)
seq_length, batch_size, num_tags = 4, 3, 3
emissions = torch.from_numpy(rng.randn(seq_length, batch_size, num_tags).astype(np.float32))
tags = torch.from_numpy(rng.randint(0, num_tags, (seq_length, batch_size)))
mask = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 0, 0]], dtype=torch.uint8)
crf = CRF(num_tags)
print(crf, [tuple(p.shape) for p in crf.parameters()])

llh = crf(emissions, tags, mask=mask, reduction='none')
print(llh, llh.grad_fn.name())
for r in ('sum', 'mean', 'token_mean'):
    print(r, crf(emissions, tags, mask=mask, reduction=r))
try:
    crf(emissions, tags, reduction='foo')
except ValueError as e:
    print('ValueError:', e)

lengths = mask.long().sum(0).tolist()
decoded = crf.decode(emissions, mask=mask)
for b in range(batch_size):
    log_z, best, best_score = brute_force(crf, emissions[:lengths[b], b], lengths[b])
    z = crf._normalizer(emissions[:, b:b + 1], mask[:, b:b + 1]).item()
    print(b, lengths[b], round(log_z, 4), round(z, 4), abs(log_z - z) < 1e-4, best, decoded[b])

bf = CRF(num_tags, batch_first=True)
print(bf.decode(emissions.transpose(0, 1)), bf(emissions.transpose(0, 1), tags.t()))

optimizer = torch.optim.Adam(crf.parameters(), lr=0.1)
for step in range(5):
    optimizer.zero_grad()
    loss = -crf(emissions, tags, mask=mask, reduction='mean')
    loss.backward()
    if step == 0:
        print(crf.transitions.grad, crf.start_transitions.grad, crf.end_transitions.grad)
    optimizer.step()
    print(step, round(loss.item(), 5))
print(crf.decode(emissions, mask), tags.t().tolist())

em = emissions.clone().requires_grad_()
crf(em, tags, mask=mask).backward()
print(em.grad[0], em.grad.abs().sum(-1))


# -- a low-rank transition CRF over the top-k beam of the emissions -------------------------------
class BeamCRF(nn.Module):
    def __init__(self, vocab, rank, beam):
        super().__init__()
        self.E1, self.E2 = nn.Embedding(vocab, rank), nn.Embedding(vocab, rank)
        self.rank, self.beam = rank, beam

    def score(self, emissions, targets, masks):
        scores = emissions.gather(2, targets[:, :, None])[:, :, 0]
        scores[:, 1:] += (self.E1(targets[:, :-1]) * self.E2(targets[:, 1:])).sum(2)
        return (scores * masks.type_as(scores)).sum(-1)

    def _beam(self, emissions):
        batch, seq = emissions.size()[:2]
        beam_scores, beam_targets = emissions.topk(self.beam, 2)
        trans = torch.bmm(self.E1(beam_targets[:, :-1]).view(-1, self.beam, self.rank),
                          self.E2(beam_targets[:, 1:]).view(-1, self.beam, self.rank).transpose(1, 2))
        return beam_scores, beam_targets, trans.view(batch, -1, self.beam, self.beam)

    def normalizer(self, emissions, masks):
        beam_scores, _, trans = self._beam(emissions)
        score = beam_scores[:, 0]
        for i in range(1, emissions.size(1)):
            nxt = torch.logsumexp(score[:, :, None] + trans[:, i - 1], dim=1) + beam_scores[:, i]
            score = torch.where(masks[:, i:i + 1], nxt, score)
        return torch.logsumexp(score, dim=1)

    def viterbi(self, emissions, masks):
        beam_scores, beam_targets, trans = self._beam(emissions)
        score = beam_scores[:, 0]
        dummy = torch.arange(self.beam).expand(*score.size()).contiguous()
        traj_tokens, traj_scores = [], []
        for i in range(1, emissions.size(1)):
            traj_scores.append(score)
            _score, _index = (score[:, :, None] + trans[:, i - 1]).max(dim=1)
            _score = _score + beam_scores[:, i]
            score = torch.where(masks[:, i:i + 1], _score, score)
            traj_tokens.append(torch.where(masks[:, i:i + 1], _index, dummy))
        best_score, best_index = score.max(dim=1)
        tokens, scores = [best_index[:, None]], [best_score[:, None]]
        for idx, scs in zip(reversed(traj_tokens), reversed(traj_scores)):
            tokens.append(idx.gather(1, tokens[-1]))
            scores.append(scs.gather(1, tokens[-2]))
        tokens.reverse()
        scores.reverse()
        tokens = beam_targets.gather(2, torch.cat(tokens, 1)[:, :, None])[:, :, 0]
        scores = torch.cat(scores, 1)
        scores[:, 1:] = scores[:, 1:] - scores[:, :-1]
        return scores, tokens


bc = BeamCRF(10, 3, 4)
with torch.no_grad():
    for p in bc.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)))
em2 = torch.from_numpy(rng.randn(2, 5, 10).astype(np.float32)).requires_grad_()
tg2 = torch.from_numpy(rng.randint(0, 10, (2, 5)))
m2 = torch.tensor([[True] * 5, [True, True, True, False, False]])
num, den = bc.score(em2, tg2, m2), bc.normalizer(em2, m2)
print(num, den)
(num - den).sum().backward()
print(em2.grad.abs().sum(-1), bc.E1.weight.grad.abs().sum(), bc.E2.weight.grad.abs().sum())
s, t = bc.viterbi(em2.detach(), m2)
print(s, t)
