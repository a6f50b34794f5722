"""Survival analysis as the DeepSurv / pycox tutorials write it: a Cox partial likelihood over risk
sets sorted by time (a max-shifted exp-cumsum-log and torch.logcumsumexp), a DeepSurv MLP
(SELU, AlphaDropout) trained with Adam, Harrell's concordance index by a double loop and
vectorised, logcumsumexp values, gradients and infinities.  Data and weights come from a fixed
integer recurrence, so nothing depends on the random stream."""
import torch
import torch.nn as nn

def _lcg(n, seed):
    """n pseudo-random values in [-1, 1) from a fixed integer recurrence (the same under any
    library and any seed)."""
    out, s = [], (seed * 2654435761 + 12345) % 2**32
    for _ in range(n):
        s = (1103515245 * s + 12345) % 2**31
        out.append((s / 2**31) * 2 - 1)
    return out


def det_init(model, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.tensor(_lcg(p.numel(), i + 100)).mul(scale).view_as(p))


def det_randn(*shape, seed=0.):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor(_lcg(n, int(seed * 7) + 1)).mul(1.7).view(*shape)

torch.manual_seed(0)

def cox_ph_loss(log_h, durations, events, eps=1e-7):
    idx = durations.sort(descending=True)[1]
    events = events[idx]
    log_h = log_h[idx]
    gamma = log_h.max()
    log_cumsum_h = log_h.sub(gamma).exp().cumsum(0).add(eps).log().add(gamma)
    return - log_h.sub(log_cumsum_h).mul(events).sum().div(events.sum())

def cox_logcumsumexp(risk, t, e):
    order = torch.argsort(t, descending=True)
    risk, e = risk[order], e[order]
    lse = torch.logcumsumexp(risk, dim=0)
    return -torch.sum((risk - lse) * e) / e.sum()

class DeepSurv(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 16), nn.SELU(), nn.AlphaDropout(0.1), nn.Linear(16, 1, bias=False))
    def forward(self, x):
        return self.net(x)

n, d = 64, 5
X = det_randn(n, d)
beta = torch.tensor([0.5, -1.0, 0.0, 0.3, 0.8])
T = (det_randn(n, seed=1.).abs() + 0.05) / torch.exp(X @ beta)
C = (det_randn(n, seed=2.).abs() + 0.1) * 3
E = (T <= C).float()
time = torch.minimum(T, C)
print(E.dtype, time.shape, int(E.sum()))
model = DeepSurv(d)
det_init(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
for ep in range(30):
    model.eval()
    opt.zero_grad()
    out = model(X).squeeze(-1)
    loss = cox_ph_loss(out, time, E)
    loss2 = cox_logcumsumexp(out, time, E)
    loss.backward()
    opt.step()
    if ep % 10 == 0:
        print(ep, round(loss.item(), 4), round(loss2.item(), 4), abs(loss.item()-loss2.item()) < 1e-4)

def concordance_index(risk, t, e):
    n = len(t)
    conc, perm = 0.0, 0.0
    for i in range(n):
        if e[i] == 0: continue
        for j in range(n):
            if t[j] > t[i]:
                perm += 1
                if risk[i] > risk[j]: conc += 1
                elif risk[i] == risk[j]: conc += 0.5
    return conc / perm

model.eval()
with torch.no_grad():
    r = model(X).view(-1)
ci = concordance_index(r, time, E)
print("c-index", round(ci, 3), type(ci))
# vectorized version
ti = time.unsqueeze(1); tj = time.unsqueeze(0)
mask = (ti < tj) & (E.unsqueeze(1) == 1)
ri = r.unsqueeze(1); rj = r.unsqueeze(0)
conc = ((ri > rj).float() + 0.5 * (ri == rj).float()) * mask
print("vec c-index", round((conc.sum() / mask.sum()).item(), 3), mask.dtype, mask.sum())
print(torch.logcumsumexp(torch.tensor([1., 2., 3.]), 0))
x = torch.tensor([0.1, 0.5, -1.0], dtype=torch.float64, requires_grad=True)
torch.logcumsumexp(x, 0).sum().backward()
print(x.grad)
print(torch.logcumsumexp(torch.tensor([-float('inf'), 0., float('inf')]), 0))
print(torch.cumsum(torch.tensor([1, 2, 3]), 0).dtype, torch.cumsum(torch.tensor([True, False, True]), 0))
print(torch.flip(torch.cumsum(torch.flip(torch.arange(5.), [0]), 0), [0]))
