"""E(n)-equivariant GNN layers (EGNN, Satorras et al.): edge MLPs, coordinate updates with
scatter_add_ segment means, rotation/translation equivariance checks, a short SGD fit."""
import torch
from torch import nn


def fixed_init_(module, scale=0.3):
    """Deterministic parameters (a fixed sine pattern), so the printout does not depend on the
    random stream."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_((torch.sin(torch.arange(p.numel(), dtype=p.dtype) * 0.7 + i) * scale).view_as(p))


def fixed_tensor(*shape, seed=0):
    n = 1
    for s in shape:
        n *= s
    return torch.sin(torch.arange(n, dtype=torch.float32) * 1.3 + seed).view(*shape) * 1.5

torch.manual_seed(1)

def unsorted_segment_sum(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    result = data.new_full(result_shape, 0)
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result.scatter_add_(0, segment_ids, data)
    return result

def unsorted_segment_mean(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result = data.new_full(result_shape, 0)
    count = data.new_full(result_shape, 0)
    result.scatter_add_(0, segment_ids, data)
    count.scatter_add_(0, segment_ids, torch.ones_like(data))
    return result / count.clamp(min=1)

class E_GCL(nn.Module):
    def __init__(self, nf, hidden, edges_in_d=0, act_fn=nn.SiLU(), tanh=False):
        super().__init__()
        self.edge_mlp = nn.Sequential(nn.Linear(2 * nf + 1 + edges_in_d, hidden), act_fn,
                                      nn.Linear(hidden, hidden), act_fn)
        self.node_mlp = nn.Sequential(nn.Linear(hidden + nf, hidden), act_fn, nn.Linear(hidden, nf))
        layer = nn.Linear(hidden, 1, bias=False)
        torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)
        coord_mlp = [nn.Linear(hidden, hidden), act_fn, layer]
        if tanh:
            coord_mlp.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_mlp)
        self.tanh = tanh

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff ** 2, 1).unsqueeze(1)
        return radial, coord_diff

    def forward(self, h, edge_index, coord):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)
        out = torch.cat([h[row], h[col], radial], dim=1)
        m = self.edge_mlp(out)
        trans = coord_diff * self.coord_mlp(m)
        agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
        coord = coord + agg
        agg_h = unsorted_segment_sum(m, row, num_segments=h.size(0))
        h = h + self.node_mlp(torch.cat([h, agg_h], dim=1))
        return h, coord

def get_edges(n):
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if i != j:
                rows.append(i); cols.append(j)
    return [torch.LongTensor(rows), torch.LongTensor(cols)]

n_nodes = 5
h = fixed_tensor(n_nodes, 8)
x = fixed_tensor(n_nodes, 3) + torch.tensor([[0.5, -0.3, 0.1]]) * torch.arange(n_nodes).view(-1, 1) ** 2
edges = get_edges(n_nodes)
layers = nn.ModuleList([E_GCL(8, 16) for _ in range(2)])
fixed_init_(layers, 0.05)

def run(h, x):
    for l in layers:
        h, x = l(h, edges, x)
    return h, x

# random rotation via QR
Q, R = torch.linalg.qr(torch.tensor([[0.3, -1.2, 0.5], [1.1, 0.4, -0.7], [-0.2, 0.9, 1.3]]))
Q = Q * torch.sign(torch.diagonal(R)).unsqueeze(0)
if torch.det(Q) < 0:
    Q[:, 0] = -Q[:, 0]
print("det Q:", round(torch.det(Q).item(), 5))
t = fixed_tensor(1, 3)
h1, x1 = run(h, x)
h2, x2 = run(h, x @ Q.T + t)
print("h invariant:", torch.allclose(h1, h2, atol=1e-4))
print("x equivariant:", torch.allclose(x1 @ Q.T + t, x2, atol=1e-4))
print(h1.shape, x1.shape, len(edges[0]))

params = list(layers.parameters())
opt = torch.optim.SGD(params, lr=1e-3)
target = fixed_tensor(n_nodes, 3)
for epoch in range(3):
    opt.zero_grad()
    _, xo = run(h, x)
    loss = ((xo - target) ** 2).mean()
    loss.backward()
    opt.step()
    print("epoch %d loss %.5f" % (epoch, loss.item()))
print(sum(p.numel() for p in params))
coord = torch.zeros(n_nodes, 3)
coord.index_add_(0, edges[0], torch.ones(len(edges[0]), 3))
print(coord)
