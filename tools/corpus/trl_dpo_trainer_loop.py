"""A DPO training loop as TRL's DPOTrainer and the DPO paper's reference code write it, without
the library: a Dataset of (prompt, chosen, rejected) token ids, a collate_fn that concatenates
chosen and rejected with prompt tokens labelled -100, a frozen deepcopy reference model, per-token
log-probs by log_softmax + gather under a loss mask, the sigmoid DPO loss plus an RPO NLL term,
gradient accumulation, clip_grad_norm_, a LambdaLR warmup and the reward metrics TRL logs.
Weights are set deterministically so every printed value is seed-independent."""
import copy
import math
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

PAD, BOS, EOS = 0, 1, 2


class Block(nn.Module):
    def __init__(self, d, n_head=2):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = causal[None, None] & attention_mask[:, None, None, :].bool()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.o(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln_2(x))


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=24, d=16, n_layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Block(d) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h, attention_mask)
        return self.lm_head(self.norm(h))


class PreferenceDataset(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        prompt, chosen, rejected = self.rows[i]
        return {"prompt": prompt, "chosen": chosen, "rejected": rejected}


def build(prompt, completion):
    ids = [BOS] + prompt + completion + [EOS]
    labels = [-100] * (1 + len(prompt)) + completion + [EOS]
    return ids, labels


def collate(batch):
    seqs = []
    for key in ("chosen", "rejected"):
        for ex in batch:
            seqs.append(build(ex["prompt"], ex[key]))
    max_len = max(len(s[0]) for s in seqs)
    input_ids = torch.full((len(seqs), max_len), PAD, dtype=torch.long)
    labels = torch.full((len(seqs), max_len), -100, dtype=torch.long)
    attention_mask = torch.zeros((len(seqs), max_len), dtype=torch.long)
    for i, (ids, lab) in enumerate(seqs):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        labels[i, : len(lab)] = torch.tensor(lab)
        attention_mask[i, : len(ids)] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention_mask}


def concatenated_forward(model, batch):
    logits = model(batch["input_ids"], batch["attention_mask"])
    labels = batch["labels"][:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[~loss_mask] = 0
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    all_logps = (per_token_logps * loss_mask).sum(-1)
    n = all_logps.shape[0] // 2
    chosen_nll = F.cross_entropy(logits[:n].reshape(-1, logits.size(-1)), batch["labels"][:n, 1:].reshape(-1), ignore_index=-100)
    return all_logps[:n], all_logps[n:], chosen_nll


rows = [
    ([3, 4], [5, 6, 7], [8, 9]),
    ([3, 10], [11, 12], [13, 14, 15, 16]),
    ([17], [5, 6], [18]),
    ([19, 20, 21], [22], [23, 5]),
]
loader = DataLoader(PreferenceDataset(rows), batch_size=2, shuffle=False, collate_fn=collate)
first = next(iter(loader))
print({k: tuple(v.shape) for k, v in first.items()})
print(first["labels"])

policy = TinyCausalLM()
with torch.no_grad():
    for i, p in enumerate(policy.parameters()):
        if p.dim() > 1:
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (0.21 + 0.03 * i)).view_as(p) * 0.3)
        else:
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.5) * 0.1 + (1.0 if "weight" in str(i) else 0.0))
ref_model = copy.deepcopy(policy)
ref_model.eval()
ref_model.requires_grad_(False)
print("ref trainable:", sum(p.numel() for p in ref_model.parameters() if p.requires_grad))
print("policy trainable:", sum(p.numel() for p in policy.parameters() if p.requires_grad))

beta, rpo_alpha, grad_accum = 0.1, 0.5, 2
optimizer = torch.optim.AdamW(policy.parameters(), lr=5e-3, weight_decay=0.0)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 2))
metrics = defaultdict(list)
for epoch in range(2):
    for step, batch in enumerate(loader):
        policy_chosen_logps, policy_rejected_logps, nll = concatenated_forward(policy, batch)
        with torch.no_grad():
            ref_chosen_logps, ref_rejected_logps, _ = concatenated_forward(ref_model, batch)
        logits = (policy_chosen_logps - policy_rejected_logps) - (ref_chosen_logps - ref_rejected_logps)
        losses = -F.logsigmoid(beta * logits)
        loss = losses.mean() + rpo_alpha * nll
        (loss / grad_accum).backward()
        chosen_rewards = beta * (policy_chosen_logps - ref_chosen_logps).detach()
        rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps).detach()
        metrics["rewards/chosen"].append(chosen_rewards.mean().item())
        metrics["rewards/rejected"].append(rejected_rewards.mean().item())
        metrics["rewards/accuracies"].append((chosen_rewards > rejected_rewards).float().mean().item())
        metrics["rewards/margins"].append((chosen_rewards - rejected_rewards).mean().item())
        metrics["loss"].append(loss.item())
        if (step + 1) % grad_accum == 0:
            gn = torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            print(f"epoch {epoch} grad_norm {gn.item():.5f} lr {scheduler.get_last_lr()[0]:.2e}")
    print({k: round(sum(v[-2:]) / 2, 5) for k, v in metrics.items()})
drift = sum((p - q).pow(2).sum() for p, q in zip(policy.parameters(), ref_model.parameters()))
print("param drift", round(drift.item(), 6))
print("ref unchanged grads:", all(p.grad is None for p in ref_model.parameters()))
