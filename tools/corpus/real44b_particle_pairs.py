# Elastic collisions of particles in a box, vectorised over all pairs as GPU-physics tutorials do:
# torch.combinations for the pair list, torch.diff along the last dim, pair selection by a
# boolean mask, velocities exchanged with a tuple assignment through advanced indices, and
# wall reflections written through masked indexing.
import torch

n = 24
k = torch.arange(n, dtype=torch.float32)
# Starting state from exact rational arithmetic: sin/cos differ in the last bit between libms,
# and the collision dynamics amplify any such difference.
r = torch.stack([(k * 7 % 23) / 23 * 0.9 + 0.05, (k * 11 % 19) / 19 * 0.9 + 0.05])
v = torch.zeros((2, n))
v[0][r[0] > 0.5] = -500
v[0][r[0] <= 0.5] = 500
v[1] = (k % 5 - 2) * 100

ids_pairs = torch.combinations(torch.arange(n), 2)
print(ids_pairs.shape, ids_pairs.dtype, ids_pairs[:3])

def dist2(r, ip):
    dx = torch.diff(torch.stack([r[0][ip[:, 0]], r[0][ip[:, 1]]]).T).squeeze()
    dy = torch.diff(torch.stack([r[1][ip[:, 0]], r[1][ip[:, 1]]]).T).squeeze()
    return dx**2 + dy**2

def new_v(v1, v2, r1, r2):
    a = v1 - torch.sum((v1 - v2) * (r1 - r2), axis=0) / torch.sum((r1 - r2)**2, axis=0) * (r1 - r2)
    b = v2 - torch.sum((v1 - v2) * (r1 - r2), axis=0) / torch.sum((r2 - r1)**2, axis=0) * (r2 - r1)
    return a, b

ts, dt, radius = 150, 8e-5, 0.03
rs = torch.zeros((ts, 2, n))
rs[0] = r
collisions = 0
energy0 = torch.sum(v**2)
for step in range(1, ts):
    ic = ids_pairs[dist2(r, ids_pairs) < (2 * radius)**2]
    collisions += len(ic)
    v[:, ic[:, 0]], v[:, ic[:, 1]] = new_v(v[:, ic[:, 0]], v[:, ic[:, 1]], r[:, ic[:, 0]], r[:, ic[:, 1]])
    v[0, r[0] > 1] = -torch.abs(v[0, r[0] > 1])
    v[0, r[0] < 0] = torch.abs(v[0, r[0] < 0])
    v[1, r[1] > 1] = -torch.abs(v[1, r[1] > 1])
    v[1, r[1] < 0] = torch.abs(v[1, r[1] < 0])
    r = r + v * dt
    rs[step] = r

print('collisions', collisions)
print(rs[-1][:, :5])
speeds = torch.sqrt(torch.sum(v**2, axis=0))
print(speeds[:6], speeds.dtype)
print(torch.diff(torch.arange(10.).reshape(2, 5), axis=1), torch.diff(torch.arange(6), n=2))
print(torch.combinations(torch.tensor([1., 2., 3.]), 3), torch.combinations(torch.tensor([1., 2.]), 2, with_replacement=True))
