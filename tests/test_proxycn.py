"""LLM fine-tuning and alignment pieces (proxy corpus cn): each test runs the same code under
PyTorch and tapegrad (the library module is the argument) and compares values and gradients.
The preference, RL and LoRA code is written as TRL, lit-gpt and nanoGPT write it."""
import math

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _run_both(fn, *arrays, dtype="float64"):
    """fn(lib, *leaves) -> (output, leaves) under both libraries, from the same numpy values."""
    results = []
    for lib in (torch, tg):
        leaves = [lib.tensor(np.asarray(a, dtype=dtype), requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        out.backward()
        results.append((out.detach().numpy(),
                        [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves]))
    (want, want_grads), (got, got_grads) = results
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for g, w in zip(got_grads, want_grads):
        assert (g is None) == (w is None)   # a leaf used only under no_grad gets no gradient
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _logits(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 2


def _batch_logps(lib, logits, labels):
    """TRL's get_batch_logps: shift, mask -100, log_softmax + gather, sum over the response."""
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[labels == -100] = 0
    per_token = lib.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    return (per_token * loss_mask).sum(-1)


_LABELS = [[-100, -100, 3, 1, 4, -100], [-100, 2, 2, 0, 1, 1],
           [-100, -100, -100, 4, 0, -100], [-100, 1, 3, 3, -100, -100]]


@pytest.mark.parametrize("loss_type", ["sigmoid", "ipo", "hinge", "robust"])
def test_dpo_losses_through_per_token_logps(loss_type):
    def dpo(lib, policy_logits, ref_logits):
        F = lib.nn.functional
        labels = lib.tensor(_LABELS)
        policy = _batch_logps(lib, policy_logits, labels)
        with lib.no_grad():
            ref = _batch_logps(lib, ref_logits, labels)
        logits = (policy[:2] - policy[2:]) - (ref[:2] - ref[2:])
        beta = 0.1
        if loss_type == "sigmoid":
            losses = -F.logsigmoid(beta * logits)
        elif loss_type == "ipo":
            losses = (logits - 1 / (2 * beta)) ** 2
        elif loss_type == "hinge":
            losses = lib.relu(1 - beta * logits)
        else:
            eps = 0.1
            losses = (-F.logsigmoid(beta * logits) * (1 - eps)
                      + F.logsigmoid(-beta * logits) * eps) / (1 - 2 * eps)
        return losses.mean()

    _run_both(dpo, _logits(4, 6, 5), _logits(4, 6, 5, seed=1))


def test_orpo_and_kto_losses():
    def orpo_kto(lib, policy_logits):
        F = lib.nn.functional
        labels = lib.tensor(_LABELS)
        n_tokens = (labels[:, 1:] != -100).sum(-1)
        avg = _batch_logps(lib, policy_logits, labels) / n_tokens
        chosen, rejected = avg[:2], avg[2:]
        log_odds = (chosen - rejected) - (lib.log1p(-lib.exp(chosen)) - lib.log1p(-lib.exp(rejected)))
        orpo = -0.1 * F.logsigmoid(log_odds).mean()
        kl = lib.zeros(1)
        kto = lib.cat((1 - F.sigmoid(0.1 * (chosen - kl)), 1 - F.sigmoid(0.1 * (kl - rejected))))
        return orpo + kto.mean()

    _run_both(orpo_kto, _logits(4, 6, 5, seed=2))


def test_grpo_clipped_loss_with_ratios_on_the_clip_edges():
    # ratios exactly 1 - eps_low, 1 + eps_high and inside/outside, advantages of both signs:
    # the min of the two surrogates picks the gradient-free branch only where PyTorch does.
    log_ratio = np.log([[0.8, 1.28, 1.0, 0.5, 1.5], [0.8, 1.28, 1.0, 0.5, 1.5]])
    advantages = np.array([1.0, -1.0])

    def grpo(lib, new_logps):
        old = lib.zeros(2, 5, dtype=lib.float64)
        coef_1 = lib.exp(new_logps + lib.tensor(log_ratio) - old)
        coef_2 = lib.clamp(coef_1, 1 - 0.2, 1 + 0.28)
        adv = lib.tensor(advantages).unsqueeze(1)
        per_token = -lib.min(coef_1 * adv, coef_2 * adv)
        ref = new_logps.detach() - 0.05
        per_token = per_token + 0.04 * (lib.exp(ref - new_logps) - (ref - new_logps) - 1)
        mask = lib.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])
        return ((per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean()

    _run_both(grpo, np.zeros((2, 5)))


def test_masked_whiten_and_gae():
    def gae(lib, values, rewards):
        mask = lib.tensor([[1.0, 1, 1, 0], [1, 1, 1, 1]], dtype=lib.float64)
        last, advs = 0, []
        for t in reversed(range(4)):
            nxt = values[:, t + 1] if t < 3 else 0.0
            delta = rewards[:, t] + nxt - values[:, t]
            last = delta + 0.95 * last
            advs.append(last)
        adv = lib.stack(advs[::-1]).transpose(0, 1)
        mean = (adv * mask).sum() / mask.sum()
        var = ((adv - mean) ** 2 * mask).sum() / mask.sum() * (mask.sum() / (mask.sum() - 1))
        return ((adv - mean) * lib.rsqrt(var + 1e-8) * mask).pow(2).sum()

    _run_both(gae, _logits(2, 4), _logits(2, 4, seed=3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_sequence_layout_with_ignore_index_and_smoothing(reduction):
    def ce(lib, logits):
        F = lib.nn.functional
        labels = lib.tensor([[0, 1, -100, 3], [4, -100, -100, 2]])
        weight = lib.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=lib.float64)
        a = F.cross_entropy(logits.transpose(1, 2), labels, label_smoothing=0.2,
                            reduction=reduction)
        b = F.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), weight=weight,
                            label_smoothing=0.1, reduction=reduction)
        return a.sum() + b.sum()

    _run_both(ce, _logits(2, 4, 5, seed=4))


def test_rotary_embedding_through_complex_views():
    def rope(lib, xq):
        freqs = 1.0 / (10000 ** (lib.arange(0, 8, 2)[:4].double() / 8))
        freqs = lib.outer(lib.arange(5, dtype=lib.float64), freqs)
        cis = lib.polar(lib.ones_like(freqs), freqs)
        xc = lib.view_as_complex(xq.reshape(*xq.shape[:-1], -1, 2))
        out = lib.view_as_real(xc * cis.view(1, 5, 1, 4)).flatten(3)
        return (out * lib.arange(out.numel(), dtype=lib.float64).view_as(out)).sum()

    _run_both(rope, _logits(2, 5, 3, 8, seed=5))


def test_checkpointed_swiglu_blocks_give_eager_gradients():
    rng = np.random.default_rng(6)
    weights = [rng.standard_normal(s) * 0.3 for s in [(12, 6), (12, 6), (6, 12)]]

    def swiglu(lib, x, w1, w3, w2):
        F = lib.nn.functional
        return F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)

    def loss(lib, use_checkpoint):
        from importlib import import_module
        checkpoint = import_module(lib.__name__ + ".utils.checkpoint").checkpoint
        leaves = [lib.tensor(w, requires_grad=True) for w in weights]
        x = lib.tensor(np.linspace(-1, 1, 18).reshape(3, 6), requires_grad=True)
        y = (checkpoint(swiglu, lib, x, *leaves, use_reentrant=False) if use_checkpoint
             else swiglu(lib, x, *leaves))
        y.pow(2).sum().backward()
        return [t.grad.numpy() for t in [x, *leaves]]

    want = loss(torch, False)
    for use_checkpoint in (False, True):
        for g, w in zip(loss(tg, use_checkpoint), want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_lora_merge_unmerge_round_trip_matches_unmerged_forward():
    def forward(lib):
        nn = lib.nn
        base = nn.Linear(6, 4).double()
        a = nn.Parameter(lib.empty(2, 6, dtype=lib.float64))
        b = nn.Parameter(lib.zeros(4, 2, dtype=lib.float64))
        nn.init.kaiming_uniform_(a, a=math.sqrt(5))
        assert float(a.abs().max()) <= 1 / math.sqrt(6)
        rng = np.random.default_rng(7)
        with lib.no_grad():
            for p in (base.weight, base.bias, a, b):
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
        base.weight.requires_grad_(False)
        x = lib.tensor(np.linspace(-1, 1, 12).reshape(2, 6))
        unmerged = base(x) + (x @ a.T @ b.T) * 2.0
        original = base.weight.detach().clone()
        base.weight.data += (b @ a).detach() * 2.0
        merged = base(x)
        base.weight.data -= (b @ a).detach() * 2.0
        return unmerged.detach().numpy(), merged.detach().numpy(), \
            (base.weight - original).abs().max().item()

    (want_u, want_m, _), (got_u, got_m, drift) = forward(torch), forward(tg)
    np.testing.assert_allclose(got_u, want_u, rtol=1e-12)
    np.testing.assert_allclose(got_m, want_m, rtol=1e-12)
    np.testing.assert_allclose(got_m, got_u, rtol=1e-12)
    assert drift < 1e-12


def test_top_p_filtering_and_cosine_warmup_schedule():
    logits = _logits(3, 11, seed=8).astype("float32")

    def top_p(lib):
        x = lib.tensor(logits)
        sorted_logits, sorted_idx = lib.sort(x, descending=True)
        cum = lib.cumsum(lib.softmax(sorted_logits, dim=-1), dim=-1)
        remove = cum > 0.7
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        x[remove.scatter(1, sorted_idx, remove)] = -float("inf")
        return x.numpy()

    np.testing.assert_array_equal(top_p(tg), top_p(torch))

    def lrs(lib):
        p = lib.nn.Parameter(lib.ones(1))
        opt = lib.optim.AdamW([{"params": [p], "weight_decay": 0.1}], lr=3e-4)

        def lr_lambda(step, warmup=3, total=10):
            if step < warmup:
                return step / max(1, warmup)
            progress = (step - warmup) / max(1, total - warmup)
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

        sched = lib.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
        out = []
        for _ in range(12):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out

    np.testing.assert_allclose(lrs(tg), lrs(torch), rtol=1e-15)
