"""CTR models over categorical fields in the style of QikaiXu/Recommender-System-Pytorch,
written small: a field-offset embedding that indexes a Parameter directly (weight[x] with
x + x.new_tensor(np offsets)), FM's square-of-sum minus sum-of-squares, pairwise interactions
gathered with Python index lists (x[:, i1] * x[:, i2]), a field-aware FM over torch.hstack'ed
per-field tables, AFM's attention (Linear -> Flatten -> Softmax) over the interactions, PNN's
outer product over the field sum, a cross network whose layers pass (x0, xk) tuples through
nn.Sequential, and BatchNorm MLP towers.  Each model trains a few SGD steps on fixed synthetic
clicks; prints losses, accuracies and output shapes."""
import numpy as np
import torch
import torch.nn as nn


def fill(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=p.dtype) * (0.37 + 0.11 * i)).reshape(p.shape) * scale)
    return module


class TableLookup(nn.Module):
    def __init__(self, rows, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros((rows, dim)))
        nn.init.xavier_uniform_(self.weight.data)

    def forward(self, x):
        return self.weight[x]


class FieldEmbedding(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        self.table = TableLookup(sum(field_dims), dim)
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)

    def forward(self, x):
        return self.table(x + x.new_tensor(self.offsets))


def pair_lists(n):
    i1, i2 = [], []
    for i in range(n):
        for j in range(i + 1, n):
            i1.append(i)
            i2.append(j)
    return i1, i2


def tower(sizes):
    layers = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
    layers.append(nn.Linear(sizes[-2], sizes[-1]))
    return nn.Sequential(*layers)


class FM(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        self.linear = FieldEmbedding(field_dims, 1)
        self.embed = FieldEmbedding(field_dims, dim)
        self.bias = nn.Parameter(torch.zeros((1,)))

    def forward(self, x):
        e = self.embed(x)
        square_of_sum = e.sum(dim=1).pow(2).sum(dim=1)
        sum_of_square = e.pow(2).sum(dim=1).sum(dim=1)
        out = self.linear(x).squeeze(-1).sum(dim=1) + self.bias + (square_of_sum - sum_of_square) / 2
        return torch.sigmoid(out).unsqueeze(-1)


class FFM(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        self.n = len(field_dims)
        self.linear = FieldEmbedding(field_dims, 1)
        self.tables = nn.ModuleList([FieldEmbedding(field_dims, dim) for _ in field_dims])

    def forward(self, x):
        e = torch.hstack([t(x) for t in self.tables])
        i1 = [j * self.n + i for i in range(self.n) for j in range(i + 1, self.n)]
        i2 = [i * self.n + j for i in range(self.n) for j in range(i + 1, self.n)]
        cross = torch.mul(e[:, i1], e[:, i2]).sum(dim=2).sum(dim=1, keepdim=True)
        return torch.sigmoid(self.linear(x).sum(dim=1) + cross)


class AFM(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        self.linear = FieldEmbedding(field_dims, 1)
        self.embed = FieldEmbedding(field_dims, dim)
        self.i1, self.i2 = pair_lists(len(field_dims))
        self.attention = nn.Sequential(nn.Linear(dim, 3), nn.ReLU(), nn.Linear(3, 1, bias=False),
                                       nn.Flatten(), nn.Softmax(dim=1))
        self.p = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        e = self.embed(x)
        inter = e[:, self.i1] * e[:, self.i2]
        att = self.attention(inter)
        pooled = inter.mul(att.unsqueeze(-1)).sum(dim=1).mul(self.p).sum(dim=1, keepdim=True)
        return torch.sigmoid(self.linear(x).sum(dim=1) + pooled)


class PNN(nn.Module):
    def __init__(self, field_dims, dim, outer):
        super().__init__()
        self.outer = outer
        self.embed = FieldEmbedding(field_dims, dim)
        n = len(field_dims)
        extra = dim * dim if outer else n * (n - 1) // 2
        self.i1, self.i2 = pair_lists(n)
        self.mlp = tower([n * dim + extra, 8, 1])

    def forward(self, x):
        e = self.embed(x)
        z = e.reshape(x.shape[0], -1)
        if self.outer:
            s = e.sum(dim=1)
            d = s.shape[1]
            p = torch.mul(s[:, [i for i in range(d) for _ in range(d)]], s[:, [j for _ in range(d) for j in range(d)]])
        else:
            p = (e[:, self.i1] * e[:, self.i2]).sum(dim=2)
        return torch.sigmoid(self.mlp(torch.cat([z, p], dim=1)))


class Cross(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.w = nn.Parameter(torch.zeros((width,)))
        self.b = nn.Parameter(torch.zeros((1,)))

    def forward(self, pair):
        x0, xk = pair
        return x0, x0.mul(xk.mul(self.w).sum(dim=1, keepdim=True)) + xk + self.b


class DCN(nn.Module):
    def __init__(self, field_dims, dim):
        super().__init__()
        width = len(field_dims) * dim
        self.embed = FieldEmbedding(field_dims, dim)
        self.cross = nn.Sequential(*[Cross(width) for _ in range(2)])
        self.deep = tower([width, 8, 6])
        self.fc = nn.Linear(width + 6, 1)

    def forward(self, x):
        h = self.embed(x).reshape(x.shape[0], -1)
        _, c = self.cross((h, h))
        return torch.sigmoid(self.fc(torch.hstack([c, self.deep(h)])))


rs = np.random.RandomState(7)
field_dims = [5, 4, 6, 3]
data = np.stack([rs.randint(0, d, size=48) for d in field_dims] + [rs.randint(0, 2, size=48)], axis=1)
X = torch.tensor(data[:, :-1], dtype=torch.long)
y = torch.tensor(data[:, -1], dtype=torch.float).unsqueeze(1)
print(X.dtype, X.shape, y.shape, x_offsets := FieldEmbedding(field_dims, 2).offsets.tolist())
models = [FM(field_dims, 4), FFM(field_dims, 3), AFM(field_dims, 4), PNN(field_dims, 3, outer=False),
          PNN(field_dims, 3, outer=True), DCN(field_dims, 3)]
for model in models:
    fill(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
    criterion = nn.BCELoss()
    for epoch in range(3):
        model.train()
        opt.zero_grad()
        pred = model(X)
        loss = criterion(pred, y)
        loss.backward()
        opt.step()
        print(type(model).__name__, epoch, round(loss.item(), 5))
    model.eval()
    with torch.no_grad():
        pred = model(X)
        acc = ((pred > 0.5).float() == y).float().mean().item()
        print("  eval", pred.shape, round(acc, 4), round(pred.mean().item(), 5))
print(models[2].attention, models[-1].cross[0].w.grad.shape)
