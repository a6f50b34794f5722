"""Clustering and embeddings by hand, in the style of chengzegang/TorchSLAM's Lloyd k-means
(scatter_add_ + bincount centroid updates), the k-means++ seeding and cdist/argmin assignment
loops of public k-means snippets, spectral clustering scripts that take the smallest eigenpairs of
a normalized Laplacian with torch.lobpcg, and a t-SNE perplexity search, written afresh.

Exercises: broadcast squared distances, argmin/long/view, zero_ + scatter_add_ with a repeated
index, bincount(minlength) + type_as + in-place division, cdist + index_add_, torch.unique with
counts, k-means++ seeding by the largest D^2 (deterministic), torch.lobpcg (largest and smallest,
a given start block, batched, a sparse COO graph, and the eigenvalue gradient), kernel PCA on a
centered RBF Gram matrix (eigvalsh), and the t-SNE binary search for each point's precision.
Printed eigenvectors are reduced to sign-free quantities (LOBPCG's signs are arbitrary).
"""
import math

import numpy as np
import torch

torch.set_printoptions(precision=4)


def blobs(n_per, centers, spread, seed):
    rng = np.random.RandomState(seed)
    pts = [rng.randn(n_per, len(c)) * spread + np.asarray(c) for c in centers]
    order = rng.permutation(n_per * len(centers))
    return torch.from_numpy(np.concatenate(pts)[order].astype(np.float32))


def lloyd(x, k, iters):
    n, d = x.shape
    c = x[:k].clone()
    for _ in range(iters):
        d2 = ((x.view(n, 1, d) - c.view(1, k, d)) ** 2).sum(-1)
        labels = d2.argmin(dim=1).long().view(-1)
        c.zero_()
        c.scatter_add_(0, labels[:, None].repeat(1, d), x)
        counts = torch.bincount(labels, minlength=k).type_as(c).view(k, 1)
        c /= counts.clamp(min=1)
    return labels, c


def seed_plus_plus(x, k):
    chosen = [x[0]]
    for _ in range(1, k):
        d2 = torch.cdist(x, torch.stack(chosen)).min(dim=1).values ** 2
        chosen.append(x[torch.argmax(d2 / d2.sum())])
    return torch.stack(chosen)


def assign_update(x, c, iters):
    k = c.shape[0]
    for _ in range(iters):
        labels = torch.argmin(torch.cdist(x, c), dim=1)
        sums = torch.zeros_like(c).index_add_(0, labels, x)
        sizes = torch.zeros(k).index_add_(0, labels, torch.ones(x.shape[0]))
        c = sums / sizes.clamp(min=1).unsqueeze(1)
    return labels, c


x = blobs(30, [[0, 0], [6, 0], [0, 6], [6, 6]], 0.7, 0)
labels, cent = lloyd(x, 4, 10)
print("lloyd sizes", torch.bincount(labels), labels.dtype)
print("lloyd centroids sorted", cent[cent[:, 0].argsort()].round(decimals=2))
init = seed_plus_plus(x, 4)
labels2, cent2 = assign_update(x, init, 6)
print("k-means++ seeds", init.round(decimals=3))
values, counts = torch.unique(labels2, return_counts=True)
print("cdist k-means counts", values, counts)
inertia = ((x - cent2[labels2]) ** 2).sum()
print("inertia", round(inertia.item(), 3))

# spectral clustering on two rings: smallest eigenpairs of the symmetric normalized Laplacian
t = torch.linspace(0, 2 * math.pi, 41)[:-1]
rings = torch.cat([torch.stack([torch.cos(t), torch.sin(t)], 1),
                   3 * torch.stack([torch.cos(t), torch.sin(t)], 1)]).double()
W = torch.exp(-torch.cdist(rings, rings) ** 2 / (2 * 0.5 ** 2))
W.fill_diagonal_(0)
deg = W.sum(1)
d_inv_sqrt = deg.pow(-0.5)
L_sym = torch.eye(80, dtype=torch.float64) - d_inv_sqrt[:, None] * W * d_inv_sqrt[None, :]
start = torch.from_numpy(np.random.RandomState(1).randn(80, 3))
vals, vecs = torch.lobpcg(L_sym, k=3, X=start, largest=False, tol=1e-9)
print("smallest Laplacian eigenvalues", vals.abs().round(decimals=5), vecs.shape)
embedding = vecs[:, :2] * d_inv_sqrt[:, None]
gap = torch.cdist(embedding, embedding)
same = torch.cat([torch.zeros(40), torch.ones(40)]).long()
within = gap[same[:, None] == same[None, :]].max()
between = gap[same[:, None] != same[None, :]].min()
print("rings separated", bool(within < between))
full = torch.linalg.eigvalsh(L_sym)
print("eigvalsh agrees", torch.allclose(full[:3], vals, atol=1e-7))
top, _ = torch.lobpcg(L_sym, k=2, X=start[:, :2], largest=True, tol=1e-9)
print("largest", top.round(decimals=5), torch.allclose(top, full.flip(0)[:2]))

batch = torch.stack([L_sym, 2 * L_sym])
bvals, bvecs = torch.lobpcg(batch, k=2, X=start[:, :2].expand(2, 80, 2).contiguous(), tol=1e-9)
print("batched", bvals.round(decimals=4), bvecs.shape)

ring_edges = torch.tensor([[i, (i + 1) % 30] for i in range(30)] + [[i, (i + 7) % 30] for i in range(30)]).T
graph = torch.sparse_coo_tensor(ring_edges, torch.ones(60), (30, 30))
graph = ((graph + graph.t()) / 2).coalesce()
g_vals, _ = torch.lobpcg(graph, k=2, X=start[:30, :2].float(), niter=100)
print("sparse graph", g_vals.round(decimals=4), torch.sparse.sum(graph, dim=1).to_dense()[:4])

A = L_sym.clone().requires_grad_()
ev, _ = torch.lobpcg(A, k=2, X=start[:, :2], largest=True, tol=1e-10)
(ev[0] - ev[1]).backward()
print("eigen-gap gradient", ev.grad_fn.name(), A.grad.shape, round(A.grad.trace().item(), 6) + 0.0,
      bool((A.grad - A.grad.T).abs().max() < 1e-12))

# kernel PCA: the leading eigenvalues of the doubly centered Gram matrix
K = torch.exp(-torch.cdist(x, x) ** 2 / (2 * 3.0 ** 2))
ones = torch.full_like(K, 1.0 / K.shape[0])
Kc = K - ones @ K - K @ ones + ones @ K @ ones
print("kernel PCA eigenvalues", torch.linalg.eigvalsh(Kc).flip(0)[:3].round(decimals=3))

# t-SNE: per-point precision by binary search on the entropy of P_j|i
D = torch.cdist(x[:20].double(), x[:20].double()) ** 2
target = math.log(5.0)
betas = torch.ones(20, dtype=torch.float64)
for i in range(20):
    lo, hi = None, None
    others = torch.cat([D[i, :i], D[i, i + 1:]])
    for _ in range(60):
        p = torch.exp(-others * betas[i])
        s = p.sum()
        H = torch.log(s) + betas[i] * (others * p).sum() / s
        if abs(H.item() - target) < 1e-6:
            break
        if H > target:
            lo = betas[i].clone()
            betas[i] = betas[i] * 2 if hi is None else (betas[i] + hi) / 2
        else:
            hi = betas[i].clone()
            betas[i] = betas[i] / 2 if lo is None else (betas[i] + lo) / 2
print("t-SNE sigmas", torch.sqrt(1 / betas[:5]).round(decimals=4))
