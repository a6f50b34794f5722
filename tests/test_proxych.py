"""Language-model decoding idioms (proxych): each test runs the same decoding code on tapegrad and
on PyTorch (the oracle) and compares values, dtypes and gradients.  The code is written once and
takes the library as an argument, so the two runs cannot drift apart."""
import math

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def same(ours, theirs, atol=1e-6):
    """ours (tapegrad) equals theirs (PyTorch) in dtype, shape and values (inf/NaN where theirs)."""
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b, atol)
        return
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-6)


def logits_of(T, rows=3, vocab=11, dtype="float32"):
    n = rows * vocab
    return T.sin(T.arange(n, dtype=getattr(T, dtype)).view(rows, vocab) * 1.7) * 3


# -- sampling warpers ----------------------------------------------------------------------------

def top_k_top_p(T, logits, top_k, top_p):
    """transformers' top_k_top_p_filtering: threshold from topk, sort descending, cumsum of
    softmax, shift right, scatter the removal mask back to vocabulary order."""
    F = T.nn.functional
    logits = logits.clone()
    if top_k > 0:
        logits[logits < T.topk(logits, top_k)[0][..., -1, None]] = -float("inf")
    if top_p < 1.0:
        sorted_logits, sorted_indices = T.sort(logits, descending=True)
        cumulative = T.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        remove = cumulative > top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = 0
        logits[remove.scatter(1, sorted_indices, remove)] = -float("inf")
    return logits


@pytest.mark.parametrize("top_k, top_p", [(4, 1.0), (0, 0.9), (6, 0.7), (1, 0.5), (0, 0.0)])
def test_top_k_top_p_filtering(top_k, top_p):
    same(top_k_top_p(tg, logits_of(tg), top_k, top_p),
         top_k_top_p(torch, logits_of(torch), top_k, top_p))


def llama_top_p(T, probs, p):
    """Meta's sample_top_p before the draw: zero the tail in sorted order, renormalise in place."""
    probs_sort, probs_idx = T.sort(probs, dim=-1, descending=True)
    mask = T.cumsum(probs_sort, dim=-1) - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    return probs_sort, probs_idx


def test_llama_top_p_renormalises_the_nucleus():
    ours = llama_top_p(tg, logits_of(tg).softmax(-1), 0.8)
    same(ours, llama_top_p(torch, logits_of(torch).softmax(-1), 0.8))
    # draws (random streams differ) stay in the nucleus: back in vocabulary order, each drawn
    # token has nonzero nucleus probability
    picked = tg.gather(ours[1], -1, tg.multinomial(ours[0], 4, replacement=True))
    nucleus = tg.zeros_like(ours[0]).scatter(-1, ours[1], ours[0])
    assert bool((nucleus.gather(-1, picked) > 0).all())


def typical_and_min_p(T, scores):
    """transformers' TypicalLogitsWarper and MinPLogitsWarper on the same scores."""
    F = T.nn.functional
    normalized = F.log_softmax(scores, dim=-1)
    p = T.exp(normalized)
    ent = -(normalized * p).nansum(-1, keepdim=True)
    shifted = T.abs((-normalized) - ent)
    sorted_scores, sorted_indices = T.sort(shifted, descending=False)
    cumulative = scores.gather(-1, sorted_indices).softmax(dim=-1).cumsum(dim=-1)
    last_ind = (cumulative < 0.9).sum(dim=1)
    last_ind.clamp_(max=sorted_scores.shape[-1] - 1)
    remove = sorted_scores > sorted_scores.gather(1, last_ind.view(-1, 1))
    remove[..., :1] = 0
    typical = scores.masked_fill(remove.scatter(1, sorted_indices, remove), -float("inf"))
    probs = T.softmax(scores, dim=-1)
    tokens_to_remove = probs < 0.2 * probs.max(dim=-1, keepdim=True)[0]
    order = T.argsort(scores, descending=True, dim=-1)
    remove = T.gather(tokens_to_remove, dim=-1, index=order)
    remove[..., :1] = False
    min_p = scores.masked_fill(remove.scatter(1, order, remove), -float("inf"))
    return typical, min_p, ent


def test_typical_and_min_p_warpers():
    same(typical_and_min_p(tg, logits_of(tg)), typical_and_min_p(torch, logits_of(torch)))


# -- penalties -----------------------------------------------------------------------------------

def penalties(T, scores, input_ids):
    """Repetition penalty by gather / where / scatter; OpenAI-style frequency and presence
    penalties from scatter_add_ counts; banned tokens by advanced-index assignment."""
    score = T.gather(scores, 1, input_ids)
    score = T.where(score < 0, score * 1.3, score / 1.3)
    repetition = scores.scatter(1, input_ids, score)
    counts = T.zeros(scores.shape, dtype=T.long).scatter_add_(1, input_ids, T.ones_like(input_ids))
    frequency = scores - counts * 0.5 - (counts > 0).float() * 0.3
    banned = scores.clone()
    banned[:, T.tensor([2, 5])] = -float("inf")
    return repetition, counts, frequency, banned


def test_repetition_frequency_presence_and_banned_tokens():
    ids = [[0, 3, 3, 10], [1, 2, 5, 5], [7, 7, 7, 7]]
    same(penalties(tg, logits_of(tg), tg.tensor(ids)),
         penalties(torch, logits_of(torch), torch.tensor(ids)))


# -- beam search ---------------------------------------------------------------------------------

def beam_step(T, beam_scores, logits, num_beams, vocab):
    """One step of transformers' batched beam search: scores over num_beams * vocab, topk of
    2 * num_beams, beam index by floor division (both spellings), token by remainder."""
    F = T.nn.functional
    scores = F.log_softmax(logits, dim=-1) + beam_scores[:, None].expand(-1, vocab)
    scores = scores.view(-1, num_beams * vocab)
    top_scores, top_ids = T.topk(scores, 2 * num_beams, dim=1, largest=True, sorted=True)
    return top_scores, T.div(top_ids, vocab, rounding_mode="floor"), top_ids // vocab, top_ids % vocab


def test_beam_step_flattened_topk_div_and_remainder():
    def run(T):
        beam_scores = T.zeros((2, 3))
        beam_scores[:, 1:] = -1e9
        return beam_step(T, beam_scores.view(-1), logits_of(T, rows=6, vocab=7), 3, 7)
    same(run(tg), run(torch))


def test_kv_cache_reorder_and_incremental_attention_match_the_full_pass():
    def run(T):
        F = T.nn.functional
        x = T.sin(T.arange(2 * 2 * 5 * 4, dtype=T.float64).view(2, 2, 5, 4))
        full = F.scaled_dot_product_attention(x, x, x, is_causal=True)
        k_cache = v_cache = x[:, :, :0]
        steps = []
        for t in range(5):
            k_cache = T.cat([k_cache, x[:, :, t:t + 1]], dim=2)
            v_cache = T.cat([v_cache, x[:, :, t:t + 1]], dim=2)
            steps.append(F.scaled_dot_product_attention(x[:, :, t:t + 1], k_cache, v_cache))
        reordered = k_cache.index_select(0, T.tensor([1, 1]))
        return full, T.cat(steps, dim=2), reordered
    ours, theirs = run(tg), run(torch)
    same(ours, theirs, atol=1e-12)
    same(ours[1], theirs[0], atol=1e-12)


# -- perplexity ----------------------------------------------------------------------------------

@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_shifted_cross_entropy_with_ignore_index(weighted, smoothing, reduction):
    def run(T):
        F = T.nn.functional
        logits = (T.sin(T.arange(2 * 6 * 5, dtype=T.float64).view(2, 6, 5) * 0.9) * 2).requires_grad_()
        labels = T.tensor([[0, 4, 1, 2, 2, 3], [1, 3, 0, -100, -100, -100]])
        weight = T.tensor([0.5, 1.0, 2.0, 1.5, 0.1], dtype=T.float64) if weighted else None
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 5), labels[:, 1:].reshape(-1),
                               weight=weight, label_smoothing=smoothing, reduction=reduction)
        loss.sum().backward()
        return loss, logits.grad
    same(run(tg), run(torch), atol=1e-12)


def test_perplexity_of_all_ignored_targets_is_nan_as_pytorch():
    ours = tg.exp(tg.nn.functional.cross_entropy(tg.zeros(3, 4), tg.full((3,), -100)))
    theirs = torch.exp(torch.nn.functional.cross_entropy(torch.zeros(3, 4), torch.full((3,), -100)))
    same(ours, theirs)
    assert math.isnan(ours.item())


# -- masks ---------------------------------------------------------------------------------------

def test_left_padded_causal_mask_with_fully_masked_rows_forward_and_backward():
    def run(T):
        F = T.nn.functional
        q = T.sin(T.arange(24, dtype=T.float64).view(1, 2, 4, 3)).requires_grad_()
        pad = T.tensor([False, False, True, True])
        mask = T.tril(T.ones(4, 4, dtype=T.bool)) & pad[None, :]
        out = F.scaled_dot_product_attention(q, q * 0.5, q.cos(), attn_mask=mask)
        out.sum().backward()
        return out, q.grad
    same(run(tg), run(torch), atol=1e-12)


def test_finfo_min_causal_mask_with_cache_position():
    def run(T):
        min_dtype = T.finfo(T.float32).min
        attention_mask = T.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
        causal = T.triu(T.full((5, 7), fill_value=min_dtype), diagonal=1)
        causal *= T.arange(7) > T.arange(5).reshape(-1, 1)
        causal = causal[None, None].expand(2, 1, -1, -1).clone()
        padding = (causal[..., :5] + attention_mask[:, None, None, :]) == 0
        causal[..., :5] = causal[..., :5].masked_fill(padding, min_dtype)
        position_ids = attention_mask.cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        return causal, position_ids
    same(run(tg), run(torch))


# -- stopping and speculative acceptance ---------------------------------------------------------

def test_unfinished_sequences_and_eos_criteria():
    def run(T):
        input_ids = T.tensor([[1, 3, 2], [4, 5, 6], [7, 9, 0]])
        unfinished = T.ones(3, dtype=T.long)
        next_tokens = T.tensor([2, 9, 4])
        next_tokens = next_tokens * unfinished + 0 * (1 - unfinished)
        done = T.isin(next_tokens, T.tensor([2, 9]))
        unfinished = unfinished & ~done
        return next_tokens, done, unfinished, unfinished.max() == 0
    same(run(tg), run(torch))


def test_speculative_acceptance_and_residual():
    def run(T):
        F = T.nn.functional
        q = F.softmax(T.sin(T.arange(32, dtype=T.float32).view(4, 8) * 0.9) * 2, dim=-1)
        p = F.softmax(T.cos(T.arange(40, dtype=T.float32).view(5, 8) * 0.7) * 2, dim=-1)
        tokens = q.argmax(dim=-1)
        ratio = T.clamp(p[:-1].gather(-1, tokens[:, None])[:, 0] / q.gather(-1, tokens[:, None])[:, 0], max=1.0)
        accepted = T.tensor([0.05, 0.3, 0.9, 0.2]) < ratio
        n = T.cumprod(accepted.int(), dim=0).sum()
        residual = T.clamp(p[:-1] - q, min=0)
        return ratio, accepted, n, residual / residual.sum(-1, keepdim=True)
    same(run(tg), run(torch))


def test_masked_log_softmax_policy_gradient():
    def run(T):
        F = T.nn.functional
        logits = T.sin(T.arange(12, dtype=T.float64).view(2, 6) * 1.1).requires_grad_()
        mask = T.tensor([[False, True, False, False, True, False], [True] * 3 + [False] * 3])
        lp = F.log_softmax(logits.masked_fill(mask, float("-inf")), dim=-1)
        loss = -(lp.gather(1, T.tensor([[0], [5]])).squeeze(1) * T.tensor([1.0, -0.5], dtype=T.float64)).mean()
        loss.backward()
        return loss, logits.grad
    same(run(tg), run(torch), atol=1e-12)
