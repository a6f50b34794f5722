"""Split conformal prediction as the public tutorials write it: the finite-sample quantile level
ceil((n + 1)(1 - alpha)) / n, torch.quantile with each interpolation=, tensor q and dim=,
nanquantile, kthvalue (the order-statistic form), interval coverage and width in f-strings, a
classification set from softmax scores with a sort / cumsum / gather of the ranks.  Scores
come from sin(), so nothing is random."""
import torch
import math

torch.manual_seed(0)
n = 50
cal_scores = (torch.sin(torch.arange(n).float() * 1.7) + 1.0).abs()
alpha = 0.1
q_level = math.ceil((n + 1) * (1 - alpha)) / n
print("q_level", q_level)
qhat = torch.quantile(cal_scores, q_level, interpolation='higher')
print("qhat", qhat)
for interp in ['linear', 'lower', 'higher', 'midpoint', 'nearest']:
    print(interp, torch.quantile(cal_scores, 0.37, interpolation=interp).item())
print(torch.quantile(cal_scores, torch.tensor([0.1, 0.5, 0.9])))
print(cal_scores.quantile(0.5))
M = cal_scores.view(5, 10)
print(torch.quantile(M, 0.5, dim=1))
print(torch.quantile(M, torch.tensor([0.25, 0.75]), dim=1, keepdim=True).shape)
print(torch.nanquantile(torch.tensor([1., float('nan'), 3.]), 0.5))
k = math.ceil((n + 1) * (1 - alpha))
val, ind = torch.kthvalue(cal_scores, k)
print("kth", val, ind)
print(cal_scores.kthvalue(3, dim=0))
print(torch.kthvalue(M, 2, dim=1, keepdim=True))
preds = torch.linspace(0, 1, 8)
lower, upper = preds - qhat, preds + qhat
y_test = preds + 0.5 * torch.cos(torch.arange(8.))
covered = ((y_test >= lower) & (y_test <= upper)).float()
print("coverage", covered.mean())
print(f"coverage: {covered.mean():.3f}, width: {(upper - lower).mean():.3f}")
# classification APS
probs = torch.softmax(torch.sin(torch.arange(30.)).view(10, 3) * 3, dim=1)
labels = torch.arange(10) % 3
scores = 1 - probs[torch.arange(10), labels]
qh = torch.quantile(scores, 0.8, interpolation='higher')
sets = probs >= (1 - qh)
print(sets.sum(1))
print(sets.float().sum(1).mean())
srt, pi = probs.sort(dim=1, descending=True)
cs = srt.cumsum(dim=1)
print(cs.gather(1, pi.argsort(1)))
