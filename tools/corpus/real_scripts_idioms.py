"""Idioms met in real tutorial scripts (d2l.ai chapters, minGPT, makemore lectures): printing a
model with a stack of identical blocks, a printing init applied layer by layer, die rolls counted
with Multinomial, activation histograms, and a trainer that samples batches forever."""
import torch
from torch import nn
from torch.distributions.multinomial import Multinomial
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return x + self.proj(self.norm(x))


class Stack(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.embed = nn.Embedding(7, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.heads = nn.ModuleList([nn.Linear(width, 7), nn.Linear(width, 7), nn.Linear(width, 3)])

    def forward(self, idx):
        h = self.embed(idx)
        for block in self.blocks:
            h = block(h)
        return self.heads[0](h)


model = Stack(8, 4)
print(model)


def announce(module):
    if isinstance(module, nn.Linear):
        print("init", type(module).__name__, tuple(module.weight.shape))
        nn.init.constant_(module.bias, 0.5)


model.apply(announce)
print(sum(float(m.bias.sum()) for m in model.modules() if isinstance(m, nn.Linear)))

# Rolling a fair die: the counts always add up to the number of rolls.
fair = torch.ones(6) / 6
rolls = Multinomial(1000, fair).sample()
print(rolls.shape, rolls.dtype, rolls.sum().item())
batch = Multinomial(10, fair).sample((500,))
print(batch.shape, bool((batch.sum(1) == 10).all()))
die = Multinomial(10, torch.tensor([0.2, 0.3, 0.5]))
print(die.log_prob(torch.tensor([2.0, 3.0, 5.0])))
print(die.mean, die.variance, die.entropy())
try:
    die.log_prob(torch.tensor([2.0, 3.0, 6.0]))
except ValueError as err:
    print("ValueError:", str(err).splitlines()[0][:60])

# Activation statistics with a histogram (100 bins unless told otherwise).
acts = torch.tanh(torch.linspace(-3, 3, 400))
hy, hx = torch.histogram(acts, density=True)
print(hy.shape, hx.shape, round(float((hy * (hx[1:] - hx[:-1])).sum()), 4))
print(acts.histogram(bins=4).hist)

# A trainer that samples with replacement "forever" and stops after a few steps.
data = TensorDataset(torch.arange(20).reshape(10, 2), torch.arange(10))
sampler = RandomSampler(data, replacement=True, num_samples=int(1e10))
loader = DataLoader(data, sampler=sampler, batch_size=4)
print(len(sampler))
for step, (x, y) in enumerate(loader):
    print(step, x.shape, y.shape, bool((x[:, 0] == 2 * y).all()))
    if step == 2:
        break
