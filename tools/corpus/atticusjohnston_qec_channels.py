"""Stabilizer codes as complex matrices in the style of atticusjohnston/quantum_error_correction
(utils.kron_multiple folds torch.kron from a 1-element tensor, error_codes.py builds Pauli errors and
stabilizers, finds syndromes from commutators, quantum_error_correction.py builds syndrome
projectors and the superoperator sum kron(conj(K), K), analysis.py takes eigvals / svdvals),
written afresh for this corpus.

Exercises: torch.kron of a 1-D seed with 2x2 complex64 matrices (promotion to complex128),
torch.stack of operators, commutator syndromes via matmul / abs / int().item(), projectors
(I + (-1)^s S) / 2, Kraus operators of a bit-flip channel whose probability requires grad
(complex outputs of real parameters, sqrt, kron, conj, .mH), trace / vdot fidelities, the
logical-error gradient checked against its closed form, the superoperator's spectrum by
torch.linalg.eigvals / svdvals / matrix_rank, and printing of complex tensors and grad_fn names.
"""
import itertools

import torch

torch.set_printoptions(precision=5)
I = torch.eye(2, dtype=torch.complex64)
X = torch.tensor([[0, 1], [1, 0]], dtype=torch.complex64)
Y = torch.tensor([[0, -1j], [1j, 0]], dtype=torch.complex64)
Z = torch.tensor([[1, 0], [0, -1]], dtype=torch.complex64)


def kron_all(*ops):
    out = torch.tensor([1], dtype=torch.complex128)
    for op in ops:
        out = torch.kron(out, op)
    return out


def on(op, k, n=3):
    return kron_all(*[op if j == k else I for j in range(n)])


n = 3
stabs = torch.stack([kron_all(Z, Z, I), kron_all(I, Z, Z)])
print("stabilizers", stabs.shape, stabs.dtype, stabs.diagonal(dim1=1, dim2=2).real)
print(kron_all(X).shape, kron_all().shape, kron_all(Y, Z)[1].abs(), kron_all(Y, Z)[1, 3])


def syndrome(err):
    bits = []
    for S in stabs:
        commute = (torch.abs(err @ S - S @ err).sum() < 1e-7).int().item()
        bits.append(0 if commute else 1)
    return tuple(bits)


errors = {f"{name}{k}": on(P, k) for name, P in (("X", X), ("Y", Y), ("Z", Z)) for k in range(n)}
table = {name: syndrome(E) for name, E in errors.items()}
print(table)
two = {f"X{i}X{j}": on(X, i) @ on(X, j) for i, j in itertools.combinations(range(n), 2)}
print({k: syndrome(v) for k, v in two.items()})


def projector(bits):
    P = torch.eye(2 ** n, dtype=torch.complex128)
    for b, S in zip(bits, stabs):
        P = P @ (0.5 * (torch.eye(2 ** n, dtype=torch.complex128) + (-1) ** b * S))
    return P


recovery = {(0, 0): on(I, 0), (1, 0): on(X, 0), (1, 1): on(X, 1), (0, 1): on(X, 2)}
projs = {s: projector(s) for s in recovery}
print("projector ranks", [int(torch.linalg.matrix_rank(P)) for P in projs.values()],
      torch.allclose(sum(projs.values()), torch.eye(8, dtype=torch.complex128)))
R_ops = [recovery[s] @ projs[s] for s in recovery]
print("recovery kraus sum is identity:",
      torch.allclose(sum(K.mH @ K for K in R_ops), torch.eye(8, dtype=torch.complex128)))

# encoded |0_L> = |000> (and |+_L>, which bit flips on all qubits leave alone) under a bit-flip
# channel on every qubit
plus = torch.zeros(8, dtype=torch.complex128)
plus[0] = plus[7] = 2 ** -0.5
psi = torch.zeros(8, dtype=torch.complex128)
psi[0] = 1
rho = torch.outer(psi, psi.conj())
p = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)


def channel_kraus(p):
    k0, k1 = torch.sqrt(1 - p), torch.sqrt(p)
    singles = [k0 * I.to(torch.complex128), k1 * X.to(torch.complex128)]
    return [kron_all(a, b, c) for a, b, c in itertools.product(singles, repeat=3)]


K = channel_kraus(p)
print(len(K), K[0].dtype, K[1].grad_fn.name(), f"{sum(torch.trace(k.mH @ k).real for k in K).item():.6f}")
noisy = sum(k @ rho @ k.mH for k in K)
fid_raw = torch.vdot(psi, noisy @ psi).real
corrected = sum(R @ noisy @ R.mH for R in R_ops)
fid = torch.vdot(psi, corrected @ psi).real
print(f"fidelity raw {fid_raw.item():.6f} corrected {fid.item():.6f}", fid)
(dF,) = torch.autograd.grad(fid, p, retain_graph=True)
pe = p.detach()
print(f"dF/dp {dF.item():.6f} closed form {(-6 * pe + 6 * pe ** 2).item():.6f}")
fid_raw.backward()
print(f"dF_raw/dp {p.grad.item():.6f}")
fid_plus = torch.vdot(plus, sum(R @ (sum(k @ torch.outer(plus, plus.conj()) @ k.mH for k in K)) @ R.mH
                                for R in R_ops) @ plus)
print(f"|+_L> fidelity {fid_plus.real.item():.6f} imag {abs(fid_plus.imag.item()):.1f}")

# superoperators: S = sum kron(conj(K), K) acts on column-stacked rho
def superop(ops):
    return sum(torch.kron(k.conj(), k) for k in ops)


with torch.no_grad():
    S_noise = superop(channel_kraus(torch.tensor(0.1, dtype=torch.float64)))
    S_rec = superop(R_ops)
vec = rho.T.reshape(-1)
out = (S_rec @ S_noise @ vec).reshape(8, 8).T
print("superop agrees:", torch.allclose(out, corrected.detach()), S_noise.shape)
ev = torch.linalg.eigvals(S_rec @ S_noise)
mags = ev.abs().sort(descending=True).values
print("eigen magnitudes", mags[:6], "rank", int(torch.linalg.matrix_rank(S_rec @ S_noise)))
sv = torch.linalg.svdvals(S_noise)
print("singular values", sv[:4], f"{sv.sum().item():.5f}")
print(torch.unique(torch.round(mags * 1e4) / 1e4, return_counts=True))
