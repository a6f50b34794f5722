# Checkerboard Metropolis sweep on a small Ising lattice, in the style of physics tutorials:
# a nearest-neighbour kernel through conv2d(padding='same'), and spins flipped in place through
# a boolean mask applied to a strided view (view[mask] *= -1 must write back into the lattice).
# The acceptance draws come from a deterministic sequence so both libraries flip the same spins.
import torch
import torch.nn.functional as F

N = 10
phase = torch.arange(N * N, dtype=torch.float32).reshape(N, N)
# exact integer patterns (no sin/cos, whose last bits differ between libms)
lattice_a = torch.where(phase * 7 % 13 > 8, 1.0, -1.0)
lattice_b = torch.where(phase * 5 % 11 > 2, 1.0, -1.0)
spins = torch.stack([lattice_a, lattice_b]).unsqueeze(dim=1)
print(spins.shape, spins.dtype, spins.sum(axis=(1, 2, 3)))

kern = torch.tensor([[0., 1., 0.], [1., 0., 1.], [0., 1., 0.]]).unsqueeze(0).unsqueeze(0)

def energy_arr(s):
    return -s * F.conv2d(s, kern, padding='same')

BJs = (1 / torch.linspace(1, 3, 2)).reshape([-1, 1, 1, 1])
spin_hist, energy_hist = [], []
for t in range(24):
    i, j = t % 2, (t // 2) % 2
    dE = (-2 * energy_arr(spins))[:, :, i::2, j::2]
    u = ((torch.arange(dE.numel(), dtype=torch.float32) * (2 * t + 3) % 17) / 17).reshape(dE.shape)
    change = (dE >= 0) * (u < torch.exp(-BJs * dE)) + (dE < 0)
    spins[:, :, i::2, j::2][change] *= -1
    energy_hist.append(energy_arr(spins).sum(axis=(1, 2, 3)))
    spin_hist.append(spins.sum(axis=(1, 2, 3)) / N**2)

print(change.dtype, change.shape, int(change.sum()))
S, E = torch.vstack(spin_hist), torch.vstack(energy_hist)
print(S.shape, E.shape)
print(S[-4:])
print(E[-4:])
print(torch.mean(E[-10:], axis=0), torch.std(E[-10:], axis=0))
print(spins[0, 0, :3, :6])
