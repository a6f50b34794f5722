"""PCA and kernel methods as course notebooks write them with torch tensors: PCA by
torch.linalg.svd with explained-variance ratios (checked against eigh of torch.cov), a rank-k
reconstruction table, whitening; then kernel ridge regression with an RBF kernel from
torch.cdist solved by linalg.solve and cholesky_solve, its GP-style marginal likelihood tuned
with Adam on log hyperparameters, and kernel PCA on the double-centred Gram matrix.  Data from
numpy or linspace, and only sign-free quantities of singular/eigen vectors are printed, so
nothing depends on the RNG or the LAPACK build."""
import math

import torch
import numpy as np

rng = np.random.default_rng(0)
X = torch.from_numpy(rng.normal(size=(100, 5)) @ rng.normal(size=(5, 5))).float()
print(X.shape, X.dtype)

def pca(X, n_components=2):
    X_mean = X.mean(dim=0, keepdim=True)
    Xc = X - X_mean
    U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
    explained_variance = S ** 2 / (X.shape[0] - 1)
    ratio = explained_variance / explained_variance.sum()
    components = Vh[:n_components]
    return Xc @ components.T, explained_variance[:n_components], ratio[:n_components], components

Z, ev, evr, comp = pca(X, 3)
print("projected", Z.shape)
print("explained variance", ev)
print("explained variance ratio", evr)
print("cumulative", torch.cumsum(evr, dim=0))
print("abs comps", comp.abs().sum(1))
# compare with covariance eigendecomposition
cov = torch.cov(X.T)
evals, evecs = torch.linalg.eigh(cov)
evals = evals.flip(0)
print("eig", evals[:3])
print("close:", torch.allclose(evals[:3], ev, rtol=1e-4))
print(f"Var of Z: {Z.var(dim=0)}")
# svd via torch.svd (old API)
U, S, V = torch.svd(X - X.mean(0))
print(S.shape, V.shape, U.shape)
print(torch.allclose(S, torch.linalg.svdvals(X - X.mean(0))))
# reconstruct
Xc = X - X.mean(0)
U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
for k in range(1, 6):
    Xr = U[:, :k] @ torch.diag(S[:k]) @ Vh[:k]
    err = torch.norm(Xc - Xr) / torch.norm(Xc)
    print(k, "rel err %.4f" % err.item())
print(torch.linalg.matrix_rank(Xc), torch.linalg.matrix_rank(Xc[:, :3] @ torch.ones(3, 5)))
# whitening
W = Vh.T / S * (X.shape[0] - 1) ** 0.5
Zw = Xc @ W
print(torch.round(torch.cov(Zw.T), decimals=3))

# -- kernel ridge regression and kernel PCA
torch.set_default_dtype(torch.float64)
x = torch.linspace(-3, 3, 40).unsqueeze(1)
y = torch.sin(x).squeeze() + 0.1 * torch.cos(7 * x).squeeze()

def rbf_kernel(a, b, gamma=0.5):
    d2 = torch.cdist(a, b) ** 2
    return torch.exp(-gamma * d2)

class KernelRidge:
    def __init__(self, alpha=1e-2, gamma=0.5):
        self.alpha, self.gamma = alpha, gamma
    def fit(self, X, y):
        K = rbf_kernel(X, X, self.gamma)
        self.X = X
        self.dual_coef_ = torch.linalg.solve(K + self.alpha * torch.eye(len(X)), y)
        return self
    def predict(self, X):
        return rbf_kernel(X, self.X, self.gamma) @ self.dual_coef_

model = KernelRidge().fit(x, y)
xt = torch.linspace(-2.5, 2.5, 7).unsqueeze(1)
pred = model.predict(xt)
print(pred)
print("train mse", torch.mean((model.predict(x) - y) ** 2).item())
def r2_score(y_true, y_pred):
    ss_res = ((y_true - y_pred) ** 2).sum()
    ss_tot = ((y_true - y_true.mean()) ** 2).sum()
    return 1 - ss_res / ss_tot
print("R^2:", r2_score(y, model.predict(x)))
# cholesky solve
K = rbf_kernel(x, x) + 1e-2 * torch.eye(40)
L = torch.linalg.cholesky(K)
alpha = torch.cholesky_solve(y.unsqueeze(1), L)
print(torch.allclose(alpha.squeeze(), model.dual_coef_))
L2 = torch.cholesky(K)
print(torch.allclose(L, L2))
alpha2 = torch.linalg.solve_triangular(L.T, torch.linalg.solve_triangular(L, y.unsqueeze(1), upper=False), upper=True)
print((alpha2 - alpha).abs().max() < 1e-8)
logdet = 2 * torch.log(torch.diagonal(L)).sum()
print("logdet", logdet, torch.logdet(K), torch.linalg.slogdet(K))
# marginal likelihood gradient wrt log gamma
log_gamma = torch.tensor(math.log(0.5), requires_grad=True)
log_noise = torch.tensor(math.log(1e-2), requires_grad=True)
opt = torch.optim.Adam([log_gamma, log_noise], lr=0.05)
for i in range(30):
    opt.zero_grad()
    K = rbf_kernel(x, x, log_gamma.exp()) + log_noise.exp() * torch.eye(40)
    L = torch.linalg.cholesky(K)
    a = torch.cholesky_solve(y.unsqueeze(1), L)
    nll = 0.5 * (y.unsqueeze(1) * a).sum() + torch.log(torch.diagonal(L)).sum() + 20 * math.log(2 * math.pi)
    nll.backward()
    opt.step()
    if i % 10 == 0:
        print(i, round(nll.item(), 4), log_gamma.grad.item(), log_noise.grad.item())
print("gamma=%.4f noise=%.5f" % (log_gamma.exp().item(), log_noise.exp().item()))
# kernel pca
n = 40
K = rbf_kernel(x, x, 0.3)
one = torch.ones(n, n) / n
Kc = K - one @ K - K @ one + one @ K @ one
vals, vecs = torch.linalg.eigh(Kc)
vals, vecs = vals.flip(0), vecs.flip(1)
alphas = vecs[:, :2] / torch.sqrt(vals[:2])
proj = Kc @ alphas
print(vals[:4])
print(proj.shape, proj.abs().sum(0))
