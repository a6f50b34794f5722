"""Inspired by huggingface/transformers generation/logits_process.py and the classic top_k_top_p_filtering: temperature, top-k, top-p (sort descending, cumsum of softmax, scatter back to vocab order), repetition penalty by gather / scatter, a processor list; multinomial draws reported by what does not depend on the stream."""
import torch
import torch.nn.functional as F


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"), min_tokens_to_keep=1):
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        if min_tokens_to_keep > 1:
            sorted_indices_to_remove[..., :min_tokens_to_keep] = 0
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


class RepetitionPenaltyLogitsProcessor:
    def __init__(self, penalty: float):
        if not isinstance(penalty, float) or not (penalty > 0):
            raise ValueError(f"`penalty` has to be a strictly positive float, but is {penalty}")
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        scores_processed = scores.scatter(1, input_ids, score)
        return scores_processed


class TemperatureLogitsWarper:
    def __init__(self, temperature):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k, filter_value=-float("Inf")):
        self.top_k = top_k
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.top_p = float(top_p)
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


class LogitsProcessorList(list):
    def __call__(self, input_ids, scores):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


vocab = 12
logits = torch.linspace(-2.0, 3.5, vocab).repeat(2, 1)
logits[1] = logits[1].flip(0)
print(logits)
f = top_k_top_p_filtering(logits.clone(), top_k=4)
print(f)
print(torch.isinf(f).sum(dim=-1))
g = top_k_top_p_filtering(logits.clone(), top_p=0.9)
print(g)
print((g > -float("inf")).sum(-1).tolist())
h = top_k_top_p_filtering(logits.clone(), top_k=6, top_p=0.8, min_tokens_to_keep=2)
print(F.softmax(h, dim=-1))

input_ids = torch.tensor([[0, 3, 3, 11], [1, 2, 5, 5]])
procs = LogitsProcessorList([
    RepetitionPenaltyLogitsProcessor(1.3),
    TemperatureLogitsWarper(0.7),
    TopKLogitsWarper(5),
    TopPLogitsWarper(0.85),
])
scores = procs(input_ids, logits.clone())
print(scores)
probs = F.softmax(scores, dim=-1)
print(probs.sum(-1))
print(probs.argmax(dim=-1), probs.max(dim=-1).values)
try:
    RepetitionPenaltyLogitsProcessor(2)
except ValueError as e:
    print("ValueError:", e)

torch.manual_seed(0)
samples = torch.multinomial(probs, num_samples=20, replacement=True)
print(samples.shape, samples.dtype, bool((probs.gather(1, samples) > 0).all()))
