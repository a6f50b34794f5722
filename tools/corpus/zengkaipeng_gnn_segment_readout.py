"""Hand-written message passing as in zengkaipeng/UAlign's MyGINConv and philhoel's sparse GNN
layer: a GIN layer (index_select messages, scatter_add_ into zeros(...).to(message), learnable
eps), a GCN layer over a torch.sparse_coo_tensor adjacency with symmetric degree normalisation
(bincount degrees, pow(-0.5) with inf masked, torch.sparse.mm) built inside
torch.sparse.check_sparse_tensor_invariants, a GAT layer with an edge softmax written with
scatter_reduce(amax) and index_add_, and a per-graph readout of a batch of two graphs with
torch.segment_reduce (sum, mean and max over node segments, offsets and lengths forms).  A few
Adam steps on a graph-classification loss; prints losses, shapes, grad norms and readouts."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.4):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.cos(torch.arange(p.numel(), dtype=p.dtype) * (0.53 + 0.07 * i)).reshape(p.shape) * scale)
    return module


class GIN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.LayerNorm(2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.eps = nn.Parameter(torch.Tensor([0]))

    def forward(self, x, edge_attr, edge_index):
        msg = torch.relu(torch.index_select(x, 0, edge_index[1]) + edge_attr)
        agg = torch.zeros(x.shape[0], x.shape[1]).to(msg)
        agg.scatter_add_(0, edge_index[0].unsqueeze(-1).repeat(1, x.shape[1]), msg)
        return self.mlp((1 + self.eps) * x + agg)


class SparseGCN(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.linear = nn.Linear(dim_in, dim_out)

    def forward(self, x, adj):
        return torch.sparse.mm(adj, self.linear(x))


class GAT(nn.Module):
    def __init__(self, dim_in, dim_out, slope=0.2):
        super().__init__()
        self.W = nn.Linear(dim_in, dim_out, bias=False)
        self.att = nn.Parameter(torch.empty(2 * dim_out))
        self.slope = slope

    def forward(self, x, edge_index):
        n = x.shape[0]
        h = self.W(x)
        src, dst = edge_index
        logits = F.leaky_relu(torch.cat([h[src], h[dst]], dim=-1) @ self.att, self.slope)
        top = torch.full((n,), -1e9).scatter_reduce(0, dst, logits, reduce="amax", include_self=True)
        w = torch.exp(logits - top[dst])
        denom = torch.zeros(n).index_add_(0, dst, w)
        alpha = w / denom[dst]
        return torch.zeros(n, h.shape[1]).index_add(0, dst, alpha.unsqueeze(-1) * h[src]), alpha


def normalized_adjacency(edge_index, n):
    loops = torch.arange(n).repeat(2, 1)
    ei = torch.cat([edge_index, loops], dim=1)
    deg = torch.bincount(ei[0], minlength=n).float()
    dinv = deg.pow(-0.5)
    dinv[torch.isinf(dinv)] = 0
    with torch.sparse.check_sparse_tensor_invariants():
        adj = torch.sparse_coo_tensor(ei, dinv[ei[0]] * dinv[ei[1]], (n, n))
    return adj.coalesce()


# two graphs in one batch: nodes 0-4 and 5-8
# (no two nodes of a graph share their in-neighbourhood: the max readout has no ties, where
# PyTorch's segment_reduce backward splits a positive gradient but not a negative one)
edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6, 6, 7, 8, 2, 3],
                           [1, 0, 2, 1, 4, 3, 6, 5, 7, 6, 7, 4, 0]])
num_nodes = 9
graph_sizes = torch.tensor([5, 4])
offsets = torch.cat([torch.zeros(1, dtype=torch.long), graph_sizes.cumsum(0)])
x = torch.sin(torch.arange(num_nodes * 6, dtype=torch.float32)).reshape(num_nodes, 6)
edge_attr = torch.linspace(-0.3, 0.3, edge_index.shape[1] * 6).reshape(-1, 6)
labels = torch.tensor([1, 0])

adj = normalized_adjacency(edge_index, num_nodes)
print("adjacency", adj.shape, adj._nnz(), adj.is_coalesced(), round(adj.values().sum().item(), 5))
print("checks enabled:", torch.sparse.check_sparse_tensor_invariants.is_enabled())

gin, gcn, gat = fill(GIN(6)), fill(SparseGCN(6, 5)), fill(GAT(5, 4))
head = fill(nn.Linear(12, 2))
params = [p for m in (gin, gcn, gat, head) for p in m.parameters()]
opt = torch.optim.Adam(params, lr=0.01)
for step in range(4):
    h = gin(x, edge_attr, edge_index)
    h = F.relu(gcn(h, adj))
    h, alpha = gat(h, edge_index)
    pooled = torch.cat([torch.segment_reduce(h, "sum", lengths=graph_sizes),
                        torch.segment_reduce(h, "mean", offsets=offsets),
                        torch.segment_reduce(h, "max", lengths=graph_sizes)], dim=1)
    loss = F.cross_entropy(head(pooled), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, f"loss {loss.item():.5f}", f"eps.grad {gin.eps.grad.item():.5f}",
          f"att.grad {gat.att.grad.norm().item():.5f}", pooled.shape)

# the edge softmax sums to one over each node's incoming edges
print(torch.zeros(num_nodes).index_add_(0, edge_index[1], alpha.detach()))
with torch.no_grad():
    readout = torch.segment_reduce(h, "min", lengths=graph_sizes, initial=0.0)
print(readout)
v = torch.tensor([1., 2., 3., 4., 5.], dtype=torch.float64, requires_grad=True)
seg = torch.segment_reduce(v, "prod", lengths=torch.tensor([2, 0, 3]))
print(seg, seg.grad_fn.name())
seg.sum().backward()
print(v.grad)
try:
    torch.segment_reduce(v, "sum", lengths=torch.tensor([2, 2]))
except RuntimeError as e:
    print("RuntimeError:", str(e)[:60])
