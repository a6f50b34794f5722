"""Split conformal prediction as in Angelopoulos & Bates' gentle introduction, on deterministic
synthetic predictions: regression with absolute residual scores and classification with LAC
scores (torch.quantile(interpolation='higher') at the finite-sample level, coverage, set sizes,
bincount histograms, the quantile's errors), then APS and RAPS scores with sort / argsort /
cumsum / gather, prediction sets scattered back to class order, conditional coverage by size."""

import torch

# deterministic "model" predictions
n_cal, n_test = 500, 200
idx = torch.arange(n_cal + n_test, dtype=torch.float32)
x = (idx * 0.618) % 1.0 * 4 - 2
noise = torch.sin(idx * 12.9898) * 0.5
y = 2 * x + noise
y_hat = 2 * x + 0.1
cal_scores = (y[:n_cal] - y_hat[:n_cal]).abs()
alpha = 0.1
q_level = torch.ceil(torch.tensor((n_cal + 1) * (1 - alpha))) / n_cal
print("q_level", q_level.item())
qhat = torch.quantile(cal_scores, q_level, interpolation="higher")
print("qhat %.5f" % qhat.item())
for interp in ["linear", "lower", "higher", "midpoint", "nearest"]:
    print(interp, round(torch.quantile(cal_scores, 0.9, interpolation=interp).item(), 5))
lo, hi = y_hat[n_cal:] - qhat, y_hat[n_cal:] + qhat
covered = ((y[n_cal:] >= lo) & (y[n_cal:] <= hi)).float()
print(f"coverage: {covered.mean():.3f}, width: {(hi - lo).mean():.4f}")
# classification
K = 5
logits = torch.stack([torch.cos(idx * (k + 1) * 0.31) * (k + 1) for k in range(K)], dim=1)
labels = (idx.long() * 7) % K
probs = torch.softmax(logits, dim=1)
cal_probs, cal_labels = probs[:n_cal], labels[:n_cal]
scores = 1 - cal_probs[torch.arange(n_cal), cal_labels]
qhat = torch.quantile(scores, q_level.item(), interpolation="higher")
print("cls qhat %.5f" % qhat)
prediction_sets = probs[n_cal:] >= (1 - qhat)
set_sizes = prediction_sets.sum(dim=1)
print("set size mean", set_sizes.float().mean().item(), set_sizes.dtype)
print("size histogram", torch.bincount(set_sizes, minlength=K + 1).tolist())
cov = prediction_sets[torch.arange(n_test), labels[n_cal:]].float().mean()
print("empirical coverage %.3f" % cov)
print(torch.quantile(scores, torch.tensor([0.1, 0.5, 0.9]), interpolation="higher"))
print(torch.quantile(probs[:4], 0.5, dim=1, keepdim=True))
print(torch.nanquantile(torch.tensor([1.0, float("nan"), 3.0]), 0.5))
try:
    torch.quantile(scores, 1.5)
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.quantile(scores, 0.5, interpolation="upper")
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    torch.quantile(scores.long(), 0.5)
except RuntimeError as e:
    print("RuntimeError:", e)


# ---- APS / RAPS (Romano et al. 2020; Angelopoulos et al. 2021) ----

n, K = 300, 6
i = torch.arange(n * K, dtype=torch.float32).view(n, K)
logits = torch.sin(i * 0.731) * 3 + torch.cos(i * 0.117)
labels = (torch.arange(n) * 5 + 1) % K
T = 1.3
probs = torch.softmax(logits / T, dim=-1)
sorted_probs, pi = probs.sort(dim=1, descending=True)
cumsum = sorted_probs.cumsum(dim=1)
print(sorted_probs.shape, pi.dtype, torch.allclose(cumsum[:, -1], torch.ones(n)))
ranks = pi.argsort(dim=1)
label_rank = ranks.gather(1, labels.unsqueeze(1)).squeeze(1)
print("rank of labels", torch.bincount(label_rank, minlength=K).tolist())
u = (torch.arange(n).float() * 0.37) % 1  # fixed "random" tie-breaking
aps_scores = cumsum.gather(1, label_rank[:, None]).squeeze(1) - u * sorted_probs.gather(1, label_rank[:, None]).squeeze(1)
print("APS score range %.4f %.4f" % (aps_scores.min(), aps_scores.max()))
lam_reg, k_reg = 0.01, 2
reg_vec = torch.tensor(k_reg * [0.0] + (K - k_reg) * [lam_reg])[None, :]
reg_sorted = sorted_probs + reg_vec
raps_scores = reg_sorted.cumsum(dim=1).gather(1, label_rank[:, None]).squeeze(1) - u * reg_sorted.gather(1, label_rank[:, None]).squeeze(1)
alpha = 0.1
n_cal = 200
qhat = torch.quantile(raps_scores[:n_cal], min(1.0, (n_cal + 1) * (1 - alpha) / n_cal), interpolation="higher")
print("RAPS qhat %.5f" % qhat)
val_sorted = reg_sorted[n_cal:]
val_cumsum = val_sorted.cumsum(-1)
indicators = (val_cumsum - u[n_cal:, None] * val_sorted) <= qhat
indicators[:, 0] = True  # never empty
pred_sets = torch.zeros_like(indicators).scatter(1, pi[n_cal:], indicators)
print(pred_sets.dtype, pred_sets.shape)
sizes = pred_sets.sum(1)
cov = pred_sets[torch.arange(n - n_cal), labels[n_cal:]].float().mean()
print(f"RAPS coverage {cov.item():.3f} mean size {sizes.float().mean().item():.3f}")
print("first sets:", [torch.nonzero(s).flatten().tolist() for s in pred_sets[:4]])
print("where:", [torch.where(s)[0].tolist() for s in pred_sets[:2]])
# conditional coverage by set size
for s in sizes.unique():
    m = sizes == s
    print(f"size {s.item()}: count {m.sum().item()}, cov {pred_sets[m][torch.arange(int(m.sum())), labels[n_cal:][m]].float().mean().item():.3f}")
print(torch.take_along_dim(probs, pi, dim=1).equal(sorted_probs))
print(torch.searchsorted(cumsum[:3].contiguous(), torch.tensor([[0.5], [0.9], [0.99]])))
