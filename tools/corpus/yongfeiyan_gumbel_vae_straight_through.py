"""A categorical VAE with a Gumbel-softmax latent, in the style of YongfeiYan/Gumbel_Softmax_VAE
(written for this corpus, not a copy): Gumbel noise -log(-log(U + eps) + eps) from a given
uniform draw, a hard one-hot built with max(dim=-1) + zeros_like(...).scatter_(1, ind, 1), the
straight-through trick (y_hard - y).detach() + y, the legacy size_average=False argument of
F.binary_cross_entropy (with its deprecation warning), a KL term against the uniform prior,
temperature annealing with numpy's np.maximum (a numpy float64 temperature divides the logits),
decoding from numpy one-hot codes, F.gumbel_softmax(hard=True) structure and gradient flow, and
OneHotCategoricalStraightThrough / RelaxedOneHotCategorical shapes.  Every random draw comes
from one numpy RandomState.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim

rs = np.random.RandomState(11)
latent_dim, categorical_dim, pixels = 4, 5, 36


def uniform(*shape):
    return torch.from_numpy(rs.rand(*shape).astype(np.float32))


def gumbel_noise(shape, eps=1e-20):
    u = uniform(*shape)
    return -torch.log(-torch.log(u + eps) + eps)


def st_gumbel(logits, temperature):
    y = F.softmax((logits + gumbel_noise(logits.shape)) / temperature, dim=-1)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    return ((y_hard - y).detach() + y).view(-1, latent_dim * categorical_dim)


class CatVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(pixels, 24), nn.ReLU(), nn.Linear(24, latent_dim * categorical_dim))
        self.dec = nn.Sequential(nn.Linear(latent_dim * categorical_dim, 24), nn.ReLU(),
                                 nn.Linear(24, pixels), nn.Sigmoid())
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.from_numpy((0.3 * rs.randn(*p.shape)).astype(np.float32)))

    def forward(self, x, temp):
        q = self.enc(x.view(-1, pixels))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        z = st_gumbel(q_y, temp)
        return self.dec(z), F.softmax(q_y, dim=-1).reshape(*q.size()), z


def loss_function(recon, x, qy):
    bce = F.binary_cross_entropy(recon, x.view(-1, pixels), size_average=False) / x.shape[0]
    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    kld = torch.sum(qy * log_ratio, dim=-1).mean()
    return bce + kld


model = CatVAE()
opt = optim.Adam(model.parameters(), lr=5e-3)
data = torch.from_numpy((rs.rand(24, 1, 6, 6) > 0.6).astype(np.float32))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, torch.zeros(24)), batch_size=8)
temp, temp_min, anneal = 1.0, 0.5, 0.3
for epoch in range(2):
    total = 0.0
    for i, (x, _) in enumerate(loader):
        opt.zero_grad()
        recon, qy, z = model(x, temp)
        loss = loss_function(recon, x, qy)
        loss.backward()
        total += loss.item() * len(x)
        opt.step()
        temp = np.maximum(temp * np.exp(-anneal * (i + 1)), temp_min)
        print(f"epoch {epoch} batch {i} loss {loss.item():.4f} temp {float(temp):.4f}")
    print(f"====> epoch {epoch} average {total / len(loader.dataset):.4f}", type(temp).__name__)
print("codes one-hot per group:", z.view(-1, latent_dim, categorical_dim).sum(-1).unique().tolist())
print("z requires grad:", z.requires_grad, z.grad_fn is not None)

# decode from numpy one-hot codes
m = 3 * latent_dim
np_y = np.zeros((m, categorical_dim), dtype=np.float32)
np_y[range(m), rs.choice(categorical_dim, m)] = 1
sample = torch.from_numpy(np_y.reshape(m // latent_dim, latent_dim * categorical_dim))
with torch.no_grad():
    img = model.dec(sample).view(-1, 1, 6, 6)
print("decoded:", tuple(img.shape), round(img.mean().item(), 4))

# straight-through gradient equals the soft sample's gradient
logits = torch.from_numpy(rs.randn(3, categorical_dim)).requires_grad_()
noise = gumbel_noise((3, categorical_dim)).double()
soft = F.softmax((logits + noise) / 0.7, dim=-1)
hard = F.one_hot(soft.argmax(-1), categorical_dim).to(soft.dtype)
st = (hard - soft).detach() + soft
weights = torch.arange(categorical_dim, dtype=torch.float64)
(st * weights).sum().backward(retain_graph=True)
g_st = logits.grad.clone()
logits.grad = None
(soft * weights).sum().backward()
print("ST grad == soft grad:", torch.allclose(g_st, logits.grad), st.dtype)

# F.gumbel_softmax structure (its noise is library-internal: print only structure)
lg = torch.from_numpy(rs.randn(4, 6).astype(np.float32)).requires_grad_()
y_hard = F.gumbel_softmax(lg, tau=0.5, hard=True)
print("hard rows sum:", y_hard.sum(-1).tolist(), "values:", sorted(y_hard.unique().tolist()))
(y_hard * torch.arange(6.0)).sum().backward()
print("grad flows:", lg.grad.shape, bool(lg.grad.abs().sum() > 0))
y_soft = F.gumbel_softmax(lg, tau=2.0, dim=0)
print("soft cols sum to 1:", torch.allclose(y_soft.sum(0), torch.ones(6)))

d = torch.distributions.OneHotCategoricalStraightThrough(logits=lg)
s = d.rsample((2,))
print("OneHotCategoricalStraightThrough:", tuple(s.shape), s.sum(-1).tolist()[0], s.requires_grad)
r = torch.distributions.RelaxedOneHotCategorical(torch.tensor(0.5), logits=lg.detach())
rs_ = r.rsample()
print("Relaxed:", tuple(rs_.shape), torch.allclose(rs_.sum(-1), torch.ones(4)), tuple(r.log_prob(rs_).shape))
