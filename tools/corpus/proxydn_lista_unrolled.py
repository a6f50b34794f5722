# LISTA (Gregor & LeCun): ISTA unrolled into layers with learned W, S and per-layer thresholds,
# initialised from a column-normalised dictionary and trained end to end with Adam.
import torch
import torch.nn as nn
import torch.nn.functional as F

class LISTA(nn.Module):
    def __init__(self, m, n, n_layers=5, lam=0.1):
        super().__init__()
        self.W1 = nn.Linear(m, n, bias=False)
        self.S = nn.Linear(n, n, bias=False)
        self.theta = nn.Parameter(torch.full((n_layers,), lam))
        self.n_layers = n_layers
        with torch.no_grad():
            D = torch.sin(torch.arange(m * n, dtype=torch.float32).view(m, n))
            D = F.normalize(D, dim=0)
            L = torch.linalg.svdvals(D)[0] ** 2
            self.W1.weight.copy_(D.t() / L)
            self.S.weight.copy_(torch.eye(n) - D.t() @ D / L)

    def forward(self, y):
        z = F.softshrink(self.W1(y), self.theta[0].item())
        for k in range(1, self.n_layers):
            u = self.W1(y) + self.S(z)
            z = torch.sign(u) * F.relu(u.abs() - self.theta[k])
        return z

torch.manual_seed(0)
model = LISTA(16, 32)
print(model)
print(sum(p.numel() for p in model.parameters()))
for name, p in model.named_parameters():
    print(name, tuple(p.shape), p.requires_grad)
y = torch.cos(torch.arange(4 * 16, dtype=torch.float32).view(4, 16) * 0.3)
z_target = torch.zeros(4, 32)
z_target[:, 5] = 1.0
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(30):
    opt.zero_grad()
    z = model(y)
    loss = F.mse_loss(z, z_target)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(loss.item(), 5), model.theta.grad.shape)
print(model.theta.detach())
print(z.shape, z.dtype)
