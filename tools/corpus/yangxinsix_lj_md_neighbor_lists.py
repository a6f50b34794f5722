"""Lennard-Jones molecular dynamics in a periodic box, in the style of the TorchNeighborList of
Yangxinsix/curator (as adapted by torch-admp) and torch MD toys (written anew): wrapping with
remainder, minimum-image displacements with round and with floor(s + 0.5) through the box
inverse, cell lists from floor / cartesian_prod / sort / unique_consecutive, neighbour pairs
from cdist masks (fill_diagonal_, argwhere, triu_indices), forces as -autograd.grad of the
energy (inside no_grad with enable_grad), velocity Verlet with energy bookkeeping, forces by
index_add vs autograd, a Hessian-vector product with create_graph, and vmap(grad) per-pair
forces.  Seed-independent: positions come from a perturbed lattice."""
import torch
from torch.func import grad, vmap

torch.set_printoptions(precision=5, sci_mode=False)
dtype = torch.float64
L = 4.2
box = torch.eye(3, dtype=dtype) * L
n_side = 3
lattice = torch.cartesian_prod(*(torch.arange(n_side),) * 3).to(dtype) * (L / n_side)
jitter = 0.12 * torch.sin(torch.arange(lattice.numel(), dtype=dtype) * 1.618).reshape(lattice.shape)
pos0 = lattice + jitter - 0.3          # some atoms start outside [0, L)
N = pos0.shape[0]
rc = 2.0
print("atoms", N, "outside box", int(((pos0 < 0) | (pos0 >= L)).any(1).sum()))


def wrap(p):
    return torch.remainder(p, L)


def min_image(d):
    return d - L * torch.round(d / L)


def min_image_box(d, box):
    s = d @ torch.linalg.inv(box)
    return (s - torch.floor(s + 0.5)) @ box


w = wrap(pos0)
print("wrapped", bool(((w >= 0) & (w < L)).all()), w[0])
d = pos0[:, None] - pos0[None]
print("min image agree", torch.allclose(min_image(d), min_image_box(d.reshape(-1, 3), box).reshape(d.shape)))


def pair_list(p):
    dist = torch.cdist(p, p)
    mask = dist < rc
    mask.fill_diagonal_(False)
    return torch.argwhere(mask)


def pbc_pairs(p):
    r = min_image(p[:, None] - p[None]).norm(dim=-1)
    i, j = torch.triu_indices(N, N, offset=1)
    keep = r[i, j] < rc
    return i[keep], j[keep]


print("open-boundary pairs", pair_list(w).shape, "pbc pairs", pbc_pairs(w)[0].numel())


def cell_list_pairs(p):
    ncell = int(L // rc)
    cell = torch.floor(wrap(p) / (L / ncell)).long()
    cid = (cell[:, 0] * ncell + cell[:, 1]) * ncell + cell[:, 2]
    order = torch.sort(cid, stable=True)
    ids, counts = torch.unique_consecutive(order.values, return_counts=True)
    return ncell, ids.tolist(), counts.tolist(), order.indices[:6].tolist()


print("cells", cell_list_pairs(pos0))


def lj(r2):
    inv6 = (1.0 / r2) ** 3
    return 4.0 * (inv6 * inv6 - inv6)


def energy(p):
    i, j = torch.triu_indices(N, N, offset=1)
    rij = min_image(p[i] - p[j])
    r2 = (rij ** 2).sum(-1)
    e = torch.where(r2 < rc ** 2, lj(r2) - lj(torch.tensor(rc ** 2, dtype=dtype)), torch.zeros_like(r2))
    return e.sum()


def forces(p):
    with torch.enable_grad():
        p = p.detach().requires_grad_(True)
        e = energy(p)
        f, = torch.autograd.grad(e, p)
    return -f, e.detach()


def forces_by_hand(p):
    i, j = torch.triu_indices(N, N, offset=1)
    rij = min_image(p[i] - p[j])
    r2 = (rij ** 2).sum(-1)
    inv6 = (1.0 / r2) ** 3
    fmag = torch.where(r2 < rc ** 2, 24.0 * (2 * inv6 * inv6 - inv6) / r2, torch.zeros_like(r2))
    fij = fmag[:, None] * rij
    return torch.zeros_like(p).index_add(0, i, fij).index_add(0, j, -fij)


f_auto, e0 = forces(pos0)
print("E0", e0.item(), "F agree", torch.allclose(f_auto, forces_by_hand(pos0)), "net F", f_auto.sum(0).abs().max().item() < 1e-9)

x = pos0.clone()
v = 0.1 * torch.cos(torch.arange(3 * N, dtype=dtype)).reshape(N, 3)
v -= v.mean(0)
m, dt = 1.0, 0.002
with torch.no_grad():
    f, e = forces(x)
    for step in range(40):
        v += 0.5 * dt * f / m
        x = wrap(x + dt * v)
        f, e = forces(x)
        v += 0.5 * dt * f / m
        if step % 10 == 9:
            ke = 0.5 * m * (v ** 2).sum()
            print(f"step {step + 1}: E_pot={e.item():.6f} E_kin={ke.item():.6f} E_tot={(e + ke).item():.6f}")
print("flags", x.requires_grad, f.requires_grad, v.dtype, bool(((x >= 0) & (x < L)).all()))

# Hessian-vector product through the force (create_graph) and a normal-mode estimate
p = pos0.clone().requires_grad_(True)
g, = torch.autograd.grad(energy(p), p, create_graph=True)
vec = torch.zeros_like(p)
vec[0, 0] = 1.0
hv, = torch.autograd.grad((g * vec).sum(), p)
print("Hv row 0", hv[0], "symmetric part", hv.sum(0).abs().max().item() < 1e-8)


def pair_energy(rij):
    r2 = (min_image(rij) ** 2).sum()
    return lj(r2)


i, j = pbc_pairs(pos0)
fij = vmap(grad(pair_energy))(pos0[i] - pos0[j])
print("vmap(grad) pair forces", fij.shape, fij[:2])
F_pairs = torch.zeros_like(pos0).index_add(0, i, -fij).index_add(0, j, fij)
print("pair-sum vs autograd (no shift needed)", torch.allclose(F_pairs, f_auto))
