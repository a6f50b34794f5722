"""A conditional neural process as the public CNP tutorials write it: an MLP encoder over
concatenated (x, y) context pairs with a mean aggregation, a decoder returning an Independent
Normal with a 0.1 + 0.9 * softplus scale, a log_prob NLL over the targets, a few Adam steps and
the distribution's batch/event shapes and repr.  Context points are every third target (no
randperm) and all weights are set from sin(), so nothing depends on the random stream."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, Independent

torch.manual_seed(0)

class DeterministicEncoder(nn.Module):
    def __init__(self, x_dim, y_dim, h_dim, r_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(x_dim + y_dim, h_dim), nn.ReLU(inplace=True),
                                 nn.Linear(h_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, r_dim))
    def forward(self, x, y):
        xy = torch.cat([x, y], dim=-1)
        r_i = self.net(xy)
        return r_i.mean(dim=1)

class Decoder(nn.Module):
    def __init__(self, x_dim, r_dim, h_dim, y_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(x_dim + r_dim, h_dim), nn.ReLU(), nn.Linear(h_dim, 2 * y_dim))
    def forward(self, x, r):
        n = x.size(1)
        r = r.unsqueeze(1).repeat(1, n, 1)
        h = self.net(torch.cat((x, r), dim=2))
        mu, log_sigma = torch.split(h, 1, dim=-1)
        sigma = 0.1 + 0.9 * F.softplus(log_sigma)
        dist = Independent(Normal(loc=mu, scale=sigma), 1)
        return dist, mu, sigma

class CNP(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = DeterministicEncoder(1, 1, 16, 8)
        self.decoder = Decoder(1, 8, 16, 1)
    def forward(self, xc, yc, xt, yt=None):
        r = self.encoder(xc, yc)
        dist, mu, sigma = self.decoder(xt, r)
        if yt is not None:
            log_p = dist.log_prob(yt)
            loss = -log_p.mean()
            return mu, sigma, log_p, loss
        return mu, sigma

model = CNP()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(0.1 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) + i).reshape(p.shape))

B, N = 4, 20
x = torch.linspace(-2, 2, N).unsqueeze(0).repeat(B, 1).unsqueeze(-1)
y = torch.sin(x * (torch.arange(B).float().view(B, 1, 1) + 1))
idx = torch.arange(0, N, 3)
xc, yc = x[:, idx], y[:, idx]
print("context", xc.shape, yc.shape)
mu, sigma, log_p, loss = model(xc, yc, x, y)
print(mu.shape, sigma.shape, log_p.shape)
print("loss", loss)
print(f"loss={loss.item():.4f}")
loss.backward()
g = model.encoder.net[0].weight.grad
print("grad norm", g.norm())
print(model.decoder.net[2].bias.grad)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    opt.zero_grad()
    _, _, _, loss = model(xc, yc, x, y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f}")
d = Independent(Normal(mu, sigma), 1)
print(d.batch_shape, d.event_shape)
print(d)
print(d.mean.shape, d.stddev.shape)
