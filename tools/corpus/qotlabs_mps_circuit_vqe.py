"""A matrix-product-state circuit simulator trained as a VQE, in the style of qotlabs/qtensor
(_mps.py keeps site tensors (r_left, 2, r_right), applies one-qubit gates with tensordot and
two-qubit gates by contracting neighbours, torch.linalg.svd and truncating the bond; test files
compare with the full tensor and with tensordot shapes), written afresh for this corpus.  The
truncated MPS runs without gradients; the variational energy is differentiated on the statevector.

Exercises: rotation gates built from parameters that require grad with torch.cos / torch.sin,
torch.polar, torch.complex and torch.stack of complex rows; complex128 tensordot / einsum /
permute / reshape to (2,)*n / movedim; two-qubit gate application with SVD truncation; backward
through torch.linalg.svdvals (half-chain entanglement entropy); QR left-canonicalisation checked with .mH; entanglement
entropy from singular values; <psi|H|psi> of a transverse-field Ising chain from the MPS against
the dense statevector built with torch.kron; Adam on the circuit angles; torch.func.hessian and
jacrev of a two-qubit energy (vmap through .real / .imag); measurement probabilities abs()**2.
"""
import math

import torch

torch.set_printoptions(precision=5)
cd = torch.complex128
n, chi = 6, 2
I2 = torch.eye(2, dtype=cd)
X = torch.tensor([[0, 1], [1, 0]], dtype=cd)
Z = torch.tensor([[1, 0], [0, -1]], dtype=cd)


def ry(t):
    c, s = torch.cos(t / 2), torch.sin(t / 2)
    return torch.complex(torch.stack([torch.stack([c, -s]), torch.stack([s, c])]),
                         torch.zeros(2, 2, dtype=t.dtype))


def rz(t):
    return torch.diag(torch.polar(torch.ones(2, dtype=t.dtype), torch.stack([-t / 2, t / 2])))


def cphase(t):
    ones = torch.ones(3, dtype=t.dtype)
    phases = torch.polar(torch.cat([ones, torch.ones(1, dtype=t.dtype)]),
                         torch.cat([torch.zeros(3, dtype=t.dtype), t.reshape(1)]))
    return torch.diag(phases).reshape(2, 2, 2, 2)


def zero_mps():
    site = torch.zeros(1, 2, 1, dtype=cd)
    site[0, 0, 0] = 1
    return [site.clone() for _ in range(n)]


def apply_1q(mps, g, k):
    mps[k] = torch.tensordot(g, mps[k], dims=([1], [1])).permute(1, 0, 2)


def apply_2q(mps, g4, k, keep=chi):
    a, b = mps[k], mps[k + 1]
    theta = torch.einsum("lsm,mtr->lstr", a, b)
    theta = torch.einsum("uvst,lstr->luvr", g4, theta)
    l, _, _, r = theta.shape
    U, S, Vh = torch.linalg.svd(theta.reshape(l * 2, 2 * r), full_matrices=False)
    k_keep = min(keep, S.shape[0])
    S = S[:k_keep] / torch.linalg.norm(S[:k_keep])
    mps[k] = U[:, :k_keep].reshape(l, 2, k_keep)
    mps[k + 1] = (S.to(cd)[:, None] * Vh[:k_keep]).reshape(k_keep, 2, r)
    return S


def circuit(params):
    mps = zero_mps()
    spectra = []
    for layer in range(params.shape[0]):
        for k in range(n):
            apply_1q(mps, rz(params[layer, k, 1]) @ ry(params[layer, k, 0]), k)
        for k in range(layer % 2, n - 1, 2):
            spectra.append(apply_2q(mps, cphase(params[layer, k, 2]), k))
    return mps, spectra


def to_dense(mps):
    psi = mps[0]
    for site in mps[1:]:
        psi = torch.tensordot(psi, site, dims=([-1], [0]))
    return psi.reshape([2] * n)


def local_expect(psi, op, k):
    opsi = torch.movedim(torch.tensordot(op, psi, dims=([1], [k])), 0, k)
    return torch.vdot(psi.reshape(-1), opsi.reshape(-1))


def tfim_energy(psi, J=1.0, h=0.8):
    e = 0
    for k in range(n - 1):
        zz = torch.movedim(torch.tensordot(torch.kron(Z, Z).reshape(2, 2, 2, 2), psi,
                                           dims=([2, 3], [k, k + 1])), (0, 1), (k, k + 1))
        e = e - J * torch.vdot(psi.reshape(-1), zz.reshape(-1))
    for k in range(n):
        e = e - h * local_expect(psi, X, k)
    return e.real / torch.vdot(psi.reshape(-1), psi.reshape(-1)).real


def dense_tfim(J=1.0, h=0.8):
    def op(o, k):
        out = torch.ones(1, 1, dtype=cd)
        for j in range(n):
            out = torch.kron(out, o if j == k else I2)
        return out
    H = sum(-J * op(Z, k) @ op(Z, k + 1) for k in range(n - 1)) - h * sum(op(X, k) for k in range(n))
    return H


def dense_circuit(params):
    """The same circuit on the statevector reshaped to (2,)*n (no truncation)."""
    psi = torch.zeros([2] * n, dtype=cd)
    psi[(0,) * n] = 1
    for layer in range(params.shape[0]):
        for k in range(n):
            g = rz(params[layer, k, 1]) @ ry(params[layer, k, 0])
            psi = torch.movedim(torch.tensordot(g, psi, dims=([1], [k])), 0, k)
        for k in range(layer % 2, n - 1, 2):
            psi = torch.movedim(torch.tensordot(cphase(params[layer, k, 2]), psi,
                                                dims=([2, 3], [k, k + 1])), (0, 1), (k, k + 1))
    return psi


k = torch.arange(3 * n * 3, dtype=torch.float64).reshape(3, n, 3)
params = torch.nn.Parameter(0.3 + 0.9 * torch.sin(1.7 * k) ** 2)
with torch.no_grad():
    mps, spectra = circuit(params)
print([tuple(t.shape) for t in mps], mps[0].dtype)
print("bond spectra", len(spectra), spectra[-1])
ent = [-(s ** 2 * torch.log(s ** 2)).sum().item() for s in spectra[-3:]]
print("entropies", [f"{e:.5f}" for e in ent])
psi_mps = to_dense(mps)
psi = dense_circuit(params)
print(psi.shape, f"norms {torch.linalg.norm(psi_mps).item():.6f} {torch.linalg.norm(psi).item():.6f}")
overlap = torch.vdot(psi_mps.reshape(-1), psi.reshape(-1)).abs() / torch.linalg.norm(psi_mps)
print(f"truncated-MPS fidelity {overlap.item() ** 2:.6f}")
H = dense_tfim()
print("H hermitian", torch.allclose(H, H.mH), H.shape, torch.linalg.eigvalsh(H)[:3])
e = tfim_energy(psi)
e_dense = torch.vdot(psi.reshape(-1), H @ psi.reshape(-1)).real
print(f"energy {e.item():.6f} dense {e_dense.item():.6f} mps {tfim_energy(psi_mps).item():.6f}",
      e.grad_fn.name())
e.backward()
g = params.grad.clone()
print("grad", g.shape, f"{g.norm().item():.5f}", g[0, :3])
with torch.no_grad():
    h = 1e-6
    d = torch.zeros_like(params)
    d[1, 2, 0] = h
    fd = (tfim_energy(dense_circuit(params + d)) - tfim_energy(dense_circuit(params - d))) / (2 * h)
print(f"fd {fd.item():.5f} autograd {g[1, 2, 0].item():.5f}")

# backward through the singular values: the half-chain entanglement entropy of the statevector
params.grad = None
s = torch.linalg.svdvals(dense_circuit(params).reshape(2 ** (n // 2), -1))
p2 = s ** 2
entropy = -(p2 * torch.log(p2)).sum()
entropy.backward()
print(f"half-chain entropy {entropy.item():.6f}", s[:3], f"grad norm {params.grad.norm().item():.5f}")

# QR left-canonical form of the MPS
A = [t.clone() for t in mps]
for j in range(n - 1):
    l, d2, r = A[j].shape
    Q, R = torch.linalg.qr(A[j].reshape(l * d2, r))
    A[j] = Q.reshape(l, d2, -1)
    A[j + 1] = torch.einsum("ab,bsc->asc", R, A[j + 1])
iso = [torch.allclose(torch.einsum("lsa,lsb->ab", t.conj(), t), torch.eye(t.shape[2], dtype=cd))
       for t in A[:-1]]
print("left-canonical", all(iso), f"norm {torch.linalg.norm(A[-1]).item():.6f}")

# VQE: a few Adam steps on the statevector circuit
opt = torch.optim.Adam([params], lr=0.05)
for step in range(12):
    opt.zero_grad()
    loss = tfim_energy(dense_circuit(params))
    loss.backward()
    opt.step()
    if step % 4 == 0:
        print(f"step {step} energy {loss.item():.6f}")
exact = torch.linalg.eigvalsh(H)[0]
print(f"exact ground energy {exact.item():.6f}")
probs = (dense_circuit(params).abs() ** 2).reshape(-1).detach()
print("probabilities", probs.shape, f"{probs.sum().item():.6f}", probs.topk(3).indices)

# second-order information of a two-qubit variational energy through torch.func
H2 = torch.kron(Z, Z) + 0.5 * (torch.kron(X, I2) + torch.kron(I2, X))


def energy2(t):
    psi0 = torch.zeros(4, dtype=cd)
    psi0[0] = 1
    U = torch.kron(ry(t[0]), ry(t[1]))
    phase = torch.polar(torch.ones(4, dtype=t.dtype), torch.stack([0 * t[2], t[2], t[2], 0 * t[2]]))
    psi2 = torch.diag(phase) @ U @ psi0
    return torch.vdot(psi2, H2 @ psi2).real + 0.1 * psi2.imag.sum()


t0 = torch.tensor([0.4, 1.1, 0.3], dtype=torch.float64)
print("grad", torch.func.grad(energy2)(t0))
print("jacrev", torch.func.jacrev(lambda t: torch.stack([energy2(t), energy2(2 * t)]))(t0))
print("hessian", torch.func.hessian(energy2)(t0))
