"""Inspired by huggingface/transformers beam_search (BeamHypotheses, BeamSearchScorer): batched beams with repeat_interleave, log_softmax scores over num_beams * vocab, topk, torch.div(rounding_mode="floor") and % vocab, length penalty, early finishing, and the torch.finfo(dtype).min attention-mask idiom."""
import torch
import torch.nn.functional as F

V, EOS, PAD = 9, 2, 0
batch_size, num_beams, max_length = 2, 3, 7
table = torch.sin(torch.arange(V * V, dtype=torch.float32).view(V, V) * 1.31) * 3
table[:, EOS] -= 1.0


class BeamHypotheses:
    def __init__(self, num_beams, length_penalty, early_stopping):
        self.length_penalty = length_penalty
        self.early_stopping = early_stopping
        self.num_beams = num_beams
        self.beams = []
        self.worst_score = 1e9

    def __len__(self):
        return len(self.beams)

    def add(self, hyp, sum_logprobs):
        score = sum_logprobs / (hyp.shape[-1] ** self.length_penalty)
        if len(self) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp))
            if len(self) > self.num_beams:
                sorted_next_scores = sorted([(s, idx) for idx, (s, _) in enumerate(self.beams)])
                del self.beams[sorted_next_scores[0][1]]
                self.worst_score = sorted_next_scores[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs, cur_len):
        if len(self) < self.num_beams:
            return False
        if self.early_stopping:
            return True
        cur_score = best_sum_logprobs / cur_len ** self.length_penalty
        return self.worst_score >= cur_score


input_ids = torch.tensor([[1, 3], [1, 5]]).repeat_interleave(num_beams, dim=0)
print(input_ids.shape, input_ids[:4].tolist())
beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float)
beam_scores[:, 1:] = -1e9
beam_scores = beam_scores.view((batch_size * num_beams,))
hyps = [BeamHypotheses(num_beams, 1.0, False) for _ in range(batch_size)]
done = [False] * batch_size
cur_len = input_ids.shape[-1]
while cur_len < max_length:
    next_token_logits = table[input_ids[:, -1]]
    next_token_scores = F.log_softmax(next_token_logits, dim=-1)
    next_token_scores = next_token_scores + beam_scores[:, None].expand_as(next_token_scores)
    next_token_scores = next_token_scores.view(batch_size, num_beams * V)
    next_token_scores, next_tokens = torch.topk(next_token_scores, 2 * num_beams, dim=1, largest=True, sorted=True)
    next_indices = torch.div(next_tokens, V, rounding_mode="floor")
    next_tokens = next_tokens % V
    next_beam_scores = torch.zeros((batch_size, num_beams), dtype=next_token_scores.dtype)
    next_beam_tokens = torch.zeros((batch_size, num_beams), dtype=next_tokens.dtype)
    next_beam_indices = torch.zeros((batch_size, num_beams), dtype=next_indices.dtype)
    for batch_idx in range(batch_size):
        if done[batch_idx]:
            next_beam_tokens[batch_idx, :] = PAD
            continue
        beam_idx = 0
        for beam_token_rank, (next_token, next_score, next_index) in enumerate(
            zip(next_tokens[batch_idx], next_token_scores[batch_idx], next_indices[batch_idx])
        ):
            batch_beam_idx = batch_idx * num_beams + next_index
            if next_token.item() == EOS:
                if beam_token_rank >= num_beams:
                    continue
                hyps[batch_idx].add(input_ids[batch_beam_idx].clone(), next_score.item())
            else:
                next_beam_scores[batch_idx, beam_idx] = next_score
                next_beam_tokens[batch_idx, beam_idx] = next_token
                next_beam_indices[batch_idx, beam_idx] = batch_beam_idx
                beam_idx += 1
            if beam_idx == num_beams:
                break
        done[batch_idx] = done[batch_idx] or hyps[batch_idx].is_done(next_token_scores[batch_idx].max().item(), cur_len)
    beam_scores = next_beam_scores.view(-1)
    beam_next_tokens = next_beam_tokens.view(-1)
    beam_idx = next_beam_indices.view(-1)
    input_ids = torch.cat([input_ids[beam_idx, :], beam_next_tokens.unsqueeze(-1)], dim=-1)
    cur_len += 1
    print(cur_len, beam_next_tokens.tolist(), beam_idx.tolist(), [f"{s:.3f}" for s in beam_scores.tolist()], done)
    if all(done):
        break
for batch_idx in range(batch_size):
    for beam_id in range(num_beams):
        bi = batch_idx * num_beams + beam_id
        hyps[batch_idx].add(input_ids[bi], beam_scores[bi].item())
best = []
best_scores = torch.zeros(batch_size, dtype=torch.float32)
for i, h in enumerate(hyps):
    sorted_hyps = sorted(h.beams, key=lambda x: x[0])
    s, hyp = sorted_hyps.pop()
    best.append(hyp)
    best_scores[i] = s
print(best_scores)
sent_lengths = torch.tensor([len(h) for h in best])
decoded = torch.full((batch_size, sent_lengths.max().item()), PAD, dtype=torch.long)
for i, hypo in enumerate(best):
    decoded[i, : sent_lengths[i]] = hypo
    if sent_lengths[i] < decoded.shape[-1]:
        decoded[i, sent_lengths[i]] = EOS
print(decoded, sent_lengths)

# the finfo-min masking idiom
mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
dtype = torch.float32
ext = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
print(ext.shape, ext[1, 0, 0], torch.finfo(dtype).min, torch.finfo(torch.float16).min, torch.finfo(torch.bfloat16).eps)
sc = torch.zeros(2, 1, 1, 3) + ext
print(sc.softmax(-1))
hs = torch.zeros(2, 3, dtype=torch.float16).masked_fill(mask == 0, torch.finfo(torch.float16).min)
print(hs, hs.softmax(-1), hs.float().softmax(-1).dtype)
inv = mask.new_ones(mask.shape) - mask
print(inv, torch.iinfo(torch.long).max, torch.iinfo(torch.int32).min)
