"""MC dropout (Gal & Ghahramani) with a heteroscedastic head (Kendall & Gal 2017), on synthetic data
with fixed weights: dropout kept on at test time (model.train(), F.dropout(training=True),
nn.Dropout2d on (N, C) features), T stacked passes, predictive mean, aleatoric and epistemic
variance, F.gaussian_nll_loss / nn.GaussianNLLLoss with full and eps, classification entropy and
mutual information (BALD), and the structure of the dropout masks (not their random values)."""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.simplefilter("ignore")   # dropout2d on 2-D input warns under PyTorch
torch.manual_seed(0)


class HeteroscedasticMCNet(nn.Module):
    def __init__(self, hidden=32, p=0.1):
        super().__init__()
        self.fc1 = nn.Linear(1, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout2d(p)        # channel dropout on (N, C): one draw per element
        self.mean_head = nn.Linear(hidden, 1)
        self.logvar_head = nn.Linear(hidden, 1)
        self.p = p

    def forward(self, x):
        h = F.dropout(F.relu(self.fc1(x)), p=self.p, training=True)
        h = self.drop(F.relu(self.fc2(h)))
        return self.mean_head(h), self.logvar_head(h)


def fill_(model, scale):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(scale * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + i).view_as(p))


model = HeteroscedasticMCNet()
fill_(model, 0.3)
print(model)
x = torch.linspace(-3, 3, 64).unsqueeze(1)
y = torch.sin(x) + 0.1 * x * torch.cos(5 * x)

# with p = 0 every pass is the same network: deterministic training and values
model.p, model.drop.p = 0.0, 0.0
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
crit = nn.GaussianNLLLoss(full=True, eps=1e-6)
for epoch in range(101):
    mu, logvar = model(x)
    loss = crit(mu, y, logvar.exp())
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 25 == 0:
        print(f"epoch {epoch:3d} gaussian nll {loss.item():.4f}")
with torch.no_grad():
    mu, logvar = model(x)
print("F.gaussian_nll_loss sum %.4f" % F.gaussian_nll_loss(mu, y, logvar.exp(), reduction="sum").item())
print("homoscedastic (N,) var %.4f" % F.gaussian_nll_loss(mu, y, torch.full((64,), 0.5)).item())
T = 50
with torch.no_grad():
    passes = [model(x) for _ in range(T)]
means = torch.stack([m for m, _ in passes])
print("p=0 epistemic var max:", means.var(0).max().item())

model.p, model.drop.p = 0.2, 0.2
model.train()
with torch.no_grad():
    passes = [model(x) for _ in range(T)]
means = torch.stack([m for m, _ in passes])          # T x N x 1
variances = torch.stack([lv.exp() for _, lv in passes])
print("stacked", means.shape, variances.shape)
pred_mean = means.mean(0)
epistemic = means.var(0, unbiased=False)
aleatoric = variances.mean(0)
total = epistemic + aleatoric
print("total >= aleatoric:", bool((total >= aleatoric).all()))
print("std == sqrt(var):", torch.allclose(means.std(0, unbiased=False), epistemic.sqrt(), atol=1e-6))

# the masks themselves: per element on (N, C), scaled by 1 / (1 - p)
h = torch.ones(256, 64)
m2d = model.drop(h)
print("Dropout2d mask values:", sorted(m2d.unique().tolist()))
print("Dropout2d on (N, C) varies within a row:", bool((m2d != m2d[:, :1]).any()))
print("Dropout2d on (N, C, H, W) constant per channel:",
      bool((nn.Dropout2d(0.5)(torch.ones(8, 16, 3, 3)).flatten(2).std(-1) == 0).all()))
try:
    model.drop(torch.ones(10))
except RuntimeError as e:
    print("RuntimeError:", e)
model.eval()
print("eval Dropout2d is identity:", torch.equal(model.drop(h), h))
try:
    F.gaussian_nll_loss(mu, y, torch.ones(64, 1, dtype=torch.int64))
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    F.gaussian_nll_loss(mu, y, -torch.ones(32))
except ValueError as e:
    print("ValueError:", e)

# classification: entropy and mutual information of T softmax passes
clf = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 3))
fill_(clf, 1.0)
xc = torch.arange(40, dtype=torch.float32).reshape(10, 4) / 20 - 1
clf.eval()
for m in clf.modules():
    if isinstance(m, nn.Dropout):
        m.train()
print([type(m).__name__ for m in clf.modules() if m.training])
with torch.no_grad():
    probs = torch.stack([F.softmax(clf(xc), dim=-1) for _ in range(T)])
mean_p = probs.mean(0)
entropy = -(mean_p * torch.log(mean_p + 1e-10)).sum(1)
expected = -(probs * torch.log(probs + 1e-10)).sum(-1).mean(0)
print("entropy <= log 3:", bool((entropy <= torch.log(torch.tensor(3.0)) + 1e-5).all()))
print("mutual information >= 0:", bool((entropy - expected >= -1e-6).all()))
clf.eval()
with torch.no_grad():
    p_det = clf(xc).softmax(-1)
print("deterministic entropy", torch.special.entr(p_det).sum(-1))
print("Categorical entropy agrees:", torch.allclose(torch.distributions.Categorical(probs=p_det).entropy(),
                                                     torch.special.entr(p_det).sum(-1), atol=1e-6))
