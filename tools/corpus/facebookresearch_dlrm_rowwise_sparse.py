"""A DLRM-style click model as facebookresearch/dlrm builds it, written small: numpy-sized
layers (np.int64 sizes from np.array layer specs, weights assigned through .data from numpy
draws), sparse=True EmbeddingBags fed (indices, offsets) per table with per-sample weights, the
pairwise dot interaction of dense and sparse features through bmm and a strictly-lower-triangular
index gather, a quotient-remainder embedding (indices split by // and remainder), a hand-written
row-wise sparse Adagrad that rebuilds its updates with grad.new(indices, values, size), adds a
sparse momentum into a dense buffer, reads it back with sparse_mask and edits _values() in place,
and a learned sparse weight matrix multiplied with torch.mm / @ / torch.sparse.mm (dense versus
pattern gradients).  Prints module reprs, losses, gradient layouts and a few parameter sums."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RowWiseSparseAdagrad(torch.optim.Optimizer):
    def __init__(self, params, lr=0.05, eps=1e-10):
        super().__init__(params, dict(lr=lr, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                grad = p.grad
                if grad.is_sparse:
                    if "momentum" not in state:
                        state["momentum"] = torch.zeros(p.shape[0])
                    grad = grad.coalesce()
                    idx, vals = grad._indices(), grad._values()
                    row_update = grad.new(idx, vals.pow(2).mean(dim=1), [p.shape[0]])
                    state["momentum"].add_(row_update)
                    std = state["momentum"].sparse_mask(row_update.coalesce())
                    std_vals = std._values().sqrt_().add_(group["eps"])
                    p.add_(grad.new(idx, vals / std_vals.view(-1, 1), grad.size()),
                           alpha=-group["lr"])
                else:
                    if "sum" not in state:
                        state["sum"] = torch.zeros_like(p)
                    state["sum"].addcmul_(grad, grad, value=1.0)
                    p.addcdiv_(grad, state["sum"].sqrt().add_(group["eps"]), value=-group["lr"])


class QuotientRemainderBag(nn.Module):
    def __init__(self, num_categories, dim, collisions):
        super().__init__()
        self.collisions = collisions
        rows = int(np.ceil(num_categories / collisions))
        self.q = nn.EmbeddingBag(rows, dim, mode="sum", sparse=True)
        self.r = nn.EmbeddingBag(collisions, dim, mode="sum", sparse=True)

    def forward(self, idx, offsets, per_sample_weights=None):
        q = self.q(torch.div(idx, self.collisions, rounding_mode="floor"), offsets,
                   per_sample_weights=per_sample_weights)
        r = self.r(torch.remainder(idx, self.collisions), offsets,
                   per_sample_weights=per_sample_weights)
        return q * r


class TinyDLRM(nn.Module):
    def __init__(self, table_sizes, dim, bottom, top, rs):
        super().__init__()
        self.tables = nn.ModuleList()
        for n in table_sizes:
            if n > 40:
                bag = QuotientRemainderBag(n, dim, 8)
            else:
                bag = nn.EmbeddingBag(n, dim, mode="sum", sparse=True)
            for p in bag.parameters():
                p.data = torch.tensor(rs.uniform(-np.sqrt(1 / n), np.sqrt(1 / n),
                                                 size=tuple(p.shape)).astype(np.float32))
            self.tables.append(bag)
        self.bottom = self.mlp(bottom, rs, sigmoid_last=False)
        self.top = self.mlp(top, rs, sigmoid_last=True)
        self.norm = nn.LayerNorm(bottom[-1])

    @staticmethod
    def mlp(sizes, rs, sigmoid_last):
        layers = []
        for i in range(sizes.size - 1):
            n, m = sizes[i], sizes[i + 1]
            lin = nn.Linear(int(n), int(m))
            lin.weight.data = torch.tensor(rs.normal(0, np.sqrt(2 / (m + n)), size=(m, n)).astype(np.float32))
            lin.bias.data = torch.tensor(rs.normal(0, np.sqrt(1 / m), size=m).astype(np.float32))
            layers += [lin, nn.Sigmoid() if (sigmoid_last and i == sizes.size - 2) else nn.ReLU()]
        return nn.Sequential(*layers)

    def forward(self, dense, offsets, indices, weights):
        x = self.norm(self.bottom(dense))
        ly = [t(i, o, per_sample_weights=w) for t, i, o, w in zip(self.tables, indices, offsets, weights)]
        T = torch.cat([x] + ly, dim=1).view(x.shape[0], -1, x.shape[1])
        Z = torch.bmm(T, T.transpose(1, 2))
        n = Z.shape[1]
        li = torch.tensor([i for i in range(n) for j in range(i)])
        lj = torch.tensor([j for i in range(n) for j in range(i)])
        return self.top(torch.cat([x, Z[:, li, lj]], dim=1))


rs = np.random.RandomState(2024)
table_sizes = np.array([6, 60, 9])
dim = 4
model = TinyDLRM(table_sizes, dim, np.array([3, 8, dim]),
                 np.array([dim + 6, 5, 1]), rs)
print(model.tables[0])
print(model.tables[1].q, model.norm)
print(nn.ZeroPad2d(np.int64(1)), nn.RMSNorm(np.int64(3)))

sparse_params = [p for t in model.tables for p in t.parameters()]
dense_params = list(model.bottom.parameters()) + list(model.top.parameters()) + list(model.norm.parameters())
sparse_opt = RowWiseSparseAdagrad(sparse_params, lr=0.1)
dense_opt = torch.optim.SGD(dense_params, lr=0.1)
loss_fn = nn.BCELoss()
for step in range(4):
    batch = 5
    dense = torch.tensor(rs.rand(batch, 3).astype(np.float32))
    offsets, indices, weights = [], [], []
    for k, n in enumerate(table_sizes):
        lens = rs.randint(1, 4, size=batch)
        offsets.append(torch.tensor(np.concatenate([[0], np.cumsum(lens)[:-1]])))
        indices.append(torch.tensor(rs.randint(0, n, size=lens.sum())))
        weights.append(torch.tensor(rs.uniform(0.5, 1.5, size=lens.sum()).astype(np.float32)) if k == 2 else None)
    target = torch.tensor(rs.randint(0, 2, size=(batch, 1)).astype(np.float32))
    prob = model(dense, offsets, indices, weights)
    loss = loss_fn(prob, target)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    g = model.tables[0].weight.grad
    print(step, round(loss.item(), 5), prob.shape, g.layout, g._nnz(), tuple(g.shape))
    sparse_opt.step()
    dense_opt.step()
    print("   momentum", sparse_opt.state[model.tables[0].weight]["momentum"].numpy().round(5).tolist())
print(round(sum(p.detach().double().sum().item() for p in model.parameters()), 4))

# the legacy constructor forms on a sparse tensor
g = model.tables[2].weight.grad.coalesce()
print(g.new(g._indices(), g._values() * 2, g.size()).to_dense().sum().item())
print(g.new(3, 2).shape, g.new().shape, g.new(g._indices(), g._values().double()).dtype)
try:
    g.new(g._indices().int(), g._values())
except RuntimeError as e:
    print("RuntimeError:", e)

# a learned sparse weight: torch.mm / @ give it a dense gradient, torch.sparse.mm one on its pattern
idx = torch.tensor([[0, 1, 1, 3, 2], [1, 0, 2, 3, 2]])
vals = torch.tensor([0.5, -1.0, 2.0, 0.25, 1.5])
x = torch.tensor(rs.randn(4, 3).astype(np.float32))
for name, product in [("mm", torch.mm), ("matmul", lambda a, b: a @ b), ("sparse.mm", torch.sparse.mm)]:
    W = torch.sparse_coo_tensor(idx, vals, (4, 4), requires_grad=True)
    product(W, x).pow(2).sum().backward()
    grad = W.grad
    print(name, grad.layout, grad.to_dense().numpy().round(4).tolist())
W = torch.sparse_coo_tensor(idx, vals, (4, 4), requires_grad=True)
(torch.sparse.mm(W, x).sum() + torch.mv(W, x[:, 0]).sum()).backward()
print("both", W.grad.layout, W.grad.numpy().round(4).tolist())
