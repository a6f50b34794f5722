"""RLHF pieces as TRL's PPO and GRPO trainers write them: masked mean / var / whiten over
response masks, GAE over per-token rewards with a KL penalty, the clipped policy and value losses
with clip fractions, GRPO's group-normalised advantages, its two-sided clipped ratio and k3 KL
per token, and Schulman's k1/k2/k3 KL estimators.  All inputs are deterministic."""
import torch
import torch.nn.functional as F


def masked_mean(values, mask, axis=None):
    if axis is not None:
        return (values * mask).sum(axis=axis) / mask.sum(axis=axis)
    return (values * mask).sum() / mask.sum()


def masked_var(values, mask, unbiased=True):
    mean = masked_mean(values, mask)
    centered_values = values - mean
    variance = masked_mean(centered_values ** 2, mask)
    if unbiased:
        mask_sum = mask.sum()
        if mask_sum == 0:
            raise ValueError("The sum of the mask is zero.")
        bessel_correction = mask_sum / (mask_sum - 1)
        variance = variance * bessel_correction
    return variance


def masked_whiten(values, mask, shift_mean=True):
    mean, var = masked_mean(values, mask), masked_var(values, mask)
    whitened = (values - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened += mean
    return whitened


def compute_gae(rewards, values, mask, gamma=1.0, lam=0.95):
    lastgaelam = 0
    advantages_reversed = []
    gen_len = rewards.shape[-1]
    values = values * mask
    rewards = rewards * mask
    for t in reversed(range(gen_len)):
        nextvalues = values[:, t + 1] if t < gen_len - 1 else 0.0
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1]).transpose(0, 1)
    returns = advantages + values
    advantages = masked_whiten(advantages, mask)
    return advantages.detach(), returns


B, T = 3, 6
mask = torch.ones(B, T)
mask[0, 4:] = 0
mask[2, 5:] = 0
rewards = torch.zeros(B, T)
scores = torch.tensor([1.0, -0.5, 0.25])
last = mask.sum(1).long() - 1
rewards[torch.arange(B), last] += scores
logprobs = -torch.linspace(0.5, 2.0, B * T).view(B, T)
ref_logprobs = -torch.linspace(0.7, 1.6, B * T).view(B, T)
kl = logprobs - ref_logprobs
rewards = rewards - 0.05 * kl
print("rewards", rewards)
values = torch.linspace(-0.3, 0.4, B * T).view(B, T)
adv, ret = compute_gae(rewards, values, mask)
print("advantages", adv)
print("returns", ret)
print("masked mean of adv", round(masked_mean(adv, mask).item(), 5) + 0.0)
print("masked var", masked_var(adv, mask).item())

# PPO clipped objective
new_logprobs = (logprobs + 0.1 * torch.sin(torch.arange(B * T, dtype=torch.float32)).view(B, T)).requires_grad_()
ratio = torch.exp(new_logprobs - logprobs)
pg_losses = -adv * ratio
pg_losses2 = -adv * torch.clamp(ratio, 1.0 - 0.2, 1.0 + 0.2)
pg_loss = masked_mean(torch.max(pg_losses, pg_losses2), mask)
pg_clipfrac = masked_mean(torch.gt(pg_losses2, pg_losses).float(), mask)
approxkl = 0.5 * masked_mean((new_logprobs - logprobs) ** 2, mask)
vpred = values + 0.05
vpredclipped = torch.clip(vpred, values - 0.2, values + 0.2)
vf_losses1 = (vpred - ret) ** 2
vf_losses2 = (vpredclipped - ret) ** 2
vf_loss = 0.5 * masked_mean(torch.max(vf_losses1, vf_losses2), mask)
print(f"pg_loss {pg_loss.item():.6f} clipfrac {pg_clipfrac.item():.4f} approxkl {approxkl.item():.6f} vf_loss {vf_loss.item():.6f}")
pg_loss.backward()
print("grad", new_logprobs.grad)

# GRPO: group-relative advantages and k3 KL
num_generations = 4
rewards_g = torch.tensor([1.0, 0.0, 0.5, 0.5, 2.0, 2.0, 2.0, 2.0, -1.0, 0.0, 1.0, 3.0])
mean_grouped_rewards = rewards_g.view(-1, num_generations).mean(dim=1)
std_grouped_rewards = rewards_g.view(-1, num_generations).std(dim=1)
mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
std_grouped_rewards = std_grouped_rewards.repeat_interleave(num_generations, dim=0)
advantages = (rewards_g - mean_grouped_rewards) / (std_grouped_rewards + 1e-4)
print("grpo advantages", advantages)
is_std_zero = torch.isclose(std_grouped_rewards, torch.zeros_like(std_grouped_rewards))
print("std zero groups", is_std_zero.view(-1, num_generations)[:, 0].tolist())

N, L = 12, 5
completion_mask = (torch.arange(L).expand(N, L) < torch.tensor([5, 3, 4, 5, 2, 5, 5, 1, 4, 4, 3, 5]).unsqueeze(1)).int()
per_token_logps = -0.1 * torch.arange(N * L).view(N, L) / (N * L)
per_token_logps.requires_grad_(True)
ref_per_token_logps = per_token_logps.detach() - 0.02
per_token_kl = torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
old = per_token_logps.detach()
coef_1 = torch.exp(per_token_logps - old)
coef_2 = torch.clamp(coef_1, 1 - 0.2, 1 + 0.28)
per_token_loss1 = coef_1 * advantages.unsqueeze(1)
per_token_loss2 = coef_2 * advantages.unsqueeze(1)
per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
per_token_loss = per_token_loss + 0.04 * per_token_kl
loss = ((per_token_loss * completion_mask).sum(dim=1) / completion_mask.sum(dim=1).clamp(min=1.0)).mean()
print("grpo loss", round(loss.item(), 6))
mean_kl = (per_token_kl * completion_mask).sum() / completion_mask.sum()
print("mean kl", round(mean_kl.item(), 7))
loss.backward()
print("grad row sums", per_token_logps.grad.sum(1))
print(completion_mask.dtype, completion_mask.sum(1))

# KL estimators k1 k2 k3 (Schulman)
logr = ref_logprobs - logprobs
k1 = -logr
k2 = logr ** 2 / 2
k3 = (logr.exp() - 1) - logr
for name, k in [("k1", k1), ("k2", k2), ("k3", k3)]:
    print(name, masked_mean(k, mask).item())
try:
    masked_var(adv, torch.zeros_like(mask))
except ValueError as e:
    print("ValueError", e)
