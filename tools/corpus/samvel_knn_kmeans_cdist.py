"""k-nearest-neighbour classification and Lloyd's k-means in the style of
samvel-karapetyan/incontext_learning (a KNN baseline: cdist, topk(largest=False), torch.mode
majority vote) and of SeldonIO/alibi-detect (k-th neighbour distances picked with a numpy index
array).  The data sets have more than 25 rows, so PyTorch computes their p=2 distances through
its matrix-product path: the printed float32 distances, the non-zero diagonal of cdist(x, x) and
the grad_fn chain (ViewBackward0 over EuclideanDistBackward0) come from it.  Also a
differentiable soft k-means step whose centroids get gradients through cdist.  Data from numpy
so that nothing depends on the RNG."""
import numpy as np
import torch

rng = np.random.default_rng(11)
centres = np.array([[2.0, 2.0, 0.0], [-2.0, 1.0, 1.0], [0.0, -2.0, -1.0]])
labels = rng.integers(0, 3, 90)
x_train = torch.from_numpy((centres[labels] + rng.normal(scale=0.7, size=(90, 3))).astype(np.float32))
y_train = torch.from_numpy(labels)
x_test = torch.from_numpy((centres[[0, 1, 2, 0, 1]] + rng.normal(scale=0.7, size=(5, 3))).astype(np.float32))

# -- k-NN: distances, the k smallest, a majority vote
distances = torch.cdist(x_test, x_train)
print("distances", distances.shape, distances.dtype)
print(distances[:, :6])
for k in (1, 5, 9):
    vals, idx = distances.topk(k, dim=1, largest=False)
    votes, _ = torch.mode(y_train[idx], dim=1)
    print(k, votes.tolist(), vals[:, -1])
ks = np.array([1, 4, 7])
kth = torch.topk(distances, int(np.max(ks)), dim=1, largest=False).values[:, ks - 1]
print("k-th neighbour distances\n", kth)

# -- cdist of a set with itself: the product path leaves cancellation on the diagonal
self_d = torch.cdist(x_train[:30], x_train[:30])
print("diag max", self_d.diagonal().max() < 1e-2, "symmetric", torch.allclose(self_d, self_d.T))
print("small sets use the direct kernel:", torch.cdist(x_train[:5], x_train[:4]).diagonal())
print(torch.cdist(x_train[:5], x_train[:4], compute_mode="use_mm_for_euclid_dist").diagonal())

# -- Lloyd's k-means with argmin / scatter_add_ / bincount
c = x_train[:3].clone()
for it in range(6):
    cl = torch.cdist(x_train, c).argmin(dim=1)
    c.zero_()
    c.scatter_add_(0, cl[:, None].repeat(1, 3), x_train)
    counts = torch.bincount(cl, minlength=3).type_as(c).view(3, 1)
    c /= counts
    inertia = (x_train - c[cl]).pow(2).sum()
    print(it, counts.flatten().tolist(), round(inertia.item(), 3))
print(c)

# -- soft k-means: centroids learned by gradient descent through cdist
cent = torch.nn.Parameter(torch.from_numpy(rng.normal(size=(3, 3)).astype(np.float32)))
opt = torch.optim.SGD([cent], lr=0.05)
for step in range(5):
    d = torch.cdist(x_train, cent)
    w = torch.softmax(-d ** 2, dim=1)
    loss = (w * d ** 2).sum(1).mean()
    opt.zero_grad()
    loss.backward()
    if step == 0:
        print(type(d.grad_fn).__name__, type(d.grad_fn.next_functions[0][0]).__name__)
        print("grad", cent.grad)
    opt.step()
    print(step, round(loss.item(), 5))
print(cent.detach())

# -- batched distances broadcast over a leading dimension
batch = torch.from_numpy(rng.normal(size=(2, 30, 4)).astype(np.float64))
protos = torch.from_numpy(rng.normal(size=(3, 4)).astype(np.float64))
bd = torch.cdist(batch, protos)
print(bd.shape, bd.dtype, bd.sum(), bd.argmin(-1)[:, :8])
