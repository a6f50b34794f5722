"""Graph and ragged-batch pooling as message-passing code writes it: node features summed and
averaged into their neighbours with scatter_add / index_add_ (degree from a scatter_add of
ones), per-graph readout with segment_reduce over a ragged batch, scatter_reduce 'amax' pooling,
feature binning with bucketize / searchsorted, a robust median with kthvalue over tied ratings,
and a running best loss with cummax; a gradient through the pooled readout.

Written for perf46 (the ops it times in bench/test_ops_slow.py) in the style of GNN tutorials'
hand-written layers; deterministic data (no RNG), so the printout is fixed.
"""
import torch

num_nodes, dim = 7, 3
edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5, 6, 6],
                           [1, 0, 2, 1, 4, 3, 5, 4, 5, 0]])
x = torch.sin(torch.arange(num_nodes * dim, dtype=torch.float32).reshape(num_nodes, dim))
x.requires_grad_(True)

src, dst = edge_index
messages = x[src] * 0.5
agg = torch.zeros(num_nodes, dim).scatter_add(0, dst.unsqueeze(1).expand(-1, dim), messages)
deg = torch.zeros(num_nodes).scatter_add_(0, dst, torch.ones(dst.numel()))
mean_agg = agg / deg.clamp(min=1).unsqueeze(1)
print("degree", deg)
print("mean aggregation", mean_agg.detach())

summed = torch.zeros(num_nodes, dim).index_add(0, dst, messages, alpha=2.0)
print("index_add equals 4x mean*deg:", torch.allclose(summed, 2 * agg))

batch_lengths = torch.tensor([3, 4])
readout = torch.segment_reduce(mean_agg, "mean", lengths=batch_lengths)
maxout = torch.segment_reduce(mean_agg, "max", lengths=batch_lengths)
print("graph readout (mean)", readout.detach())
print("graph readout (max)", maxout.detach())

pooled = torch.full((2, dim), float("-inf")).scatter_reduce(
    0, torch.tensor([0, 0, 0, 1, 1, 1, 1]).unsqueeze(1).expand(-1, dim), x, "amax",
    include_self=False)
print("scatter_reduce amax", pooled.detach())

loss = (readout ** 2).sum() + maxout.sum() + pooled.sum()
loss.backward()
print("loss", round(loss.item(), 5))
print("grad of x", x.grad)

ages = torch.tensor([3.0, 17.0, 18.0, 25.0, 40.0, 64.0, 65.0, 90.0])
edges = torch.tensor([0.0, 18.0, 30.0, 65.0])
print("bucketize", torch.bucketize(ages, edges), torch.bucketize(ages, edges, right=True))
print("searchsorted", torch.searchsorted(edges, ages, side="right"))

ratings = torch.tensor([[4, 4, 5, 3, 4, 2, 4], [1, 1, 1, 2, 2, 5, 1]])
median = torch.kthvalue(ratings, 4, dim=1)
print("median rating", median.values, "at", median.indices)

losses = torch.tensor([2.5, 2.0, 2.2, 1.7, 1.7, 1.9, 1.2])
best, when = torch.cummin(losses, 0)
print("best so far", best, "at epoch", when)
peak, at = torch.cummax(-losses, 0)
print("cummax", peak, at)
