import torch
inf = float('inf')

W = torch.tensor([
    [0, 3, inf, 7, inf],
    [8, 0, 2, inf, inf],
    [5, inf, 0, 1, inf],
    [2, inf, inf, 0, 4],
    [inf, inf, inf, inf, 0],
])
print(W)
n = W.shape[0]

# Floyd-Warshall
D = W.clone()
for k in range(n):
    D = torch.minimum(D, D[:, k].unsqueeze(1) + D[k, :].unsqueeze(0))
print("floyd", D)

# min-plus matrix product
def min_plus(A, B):
    return torch.min(A.unsqueeze(2) + B.unsqueeze(0), dim=1).values

D2 = W.clone()
steps = 0
while True:
    Dn = min_plus(D2, D2)
    steps += 1
    if torch.equal(Dn, D2):
        break
    D2 = Dn
print("min-plus squaring steps", steps, torch.equal(D2, D))
vals, arg = torch.min(W.unsqueeze(2) + W.unsqueeze(0), dim=1)
print(arg)
print(torch.isinf(D).sum(), torch.isfinite(D).all(dim=1))

# BFS on unweighted adjacency via boolean frontier
A = torch.isfinite(W) & (W > 0)
print(A.int())
dist = torch.full((n,), -1, dtype=torch.long)
frontier = torch.zeros(n, dtype=torch.bool)
frontier[0] = True
visited = frontier.clone()
dist[0] = 0
level = 0
while frontier.any():
    level += 1
    nxt = (frontier.float() @ A.float()) > 0
    nxt = nxt & ~visited
    dist[nxt] = level
    visited |= nxt
    frontier = nxt
print("bfs", dist)
print(visited.nonzero().flatten().tolist())

# Bellman-Ford on edge list
idx = torch.isfinite(W) & (W != 0)
src, dst = idx.nonzero(as_tuple=True)
w = W[src, dst]
print(src, dst, w)
d = torch.full((n,), inf)
d[0] = 0
for _ in range(n - 1):
    cand = d[src] + w
    d = d.scatter_reduce(0, dst, cand, reduce="amin", include_self=True)
print("bellman-ford", d)
print(torch.allclose(d, D[0]))
print(D.masked_fill(torch.isinf(D), -1).to(torch.int64))
# path reconstruction with a predecessor matrix
nxt = torch.where(torch.isfinite(W), torch.arange(n).expand(n, n), torch.full((n, n), -1))
D3 = W.clone()
for k in range(n):
    via = D3[:, [k]] + D3[[k], :]
    better = via < D3
    D3 = torch.where(better, via, D3)
    nxt = torch.where(better, nxt[:, k:k+1].expand(n, n), nxt)
def path(u, v):
    if nxt[u, v] < 0:
        return []
    p = [u]
    while u != v:
        u = nxt[u, v].item()
        p.append(u)
    return p
print(path(1, 4), path(4, 0), path(0, 2))
