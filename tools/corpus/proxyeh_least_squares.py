# Polynomial regression as a course notebook solves it: normal equations, solve, lstsq with
# its drivers (residuals, rank, singular values), pinv, ridge, gradient descent, and an
# ill-conditioned Vandermonde design.
import torch
torch.manual_seed(42)
torch.set_printoptions(precision=4, sci_mode=False)
n = 100
x = torch.linspace(-1, 1, n)
X = torch.stack([torch.ones(n), x, x**2, x**3], 1)
true_w = torch.tensor([1.0, -2.0, 0.5, 3.0])
y = X @ true_w + 0.05 * torch.cos(17 * x)
w_ne = torch.inverse(X.T @ X) @ X.T @ y
print("normal equations:", w_ne)
w_solve = torch.linalg.solve(X.T @ X, X.T @ y)
print("solve:", w_solve)
w_ls = torch.linalg.lstsq(X, y.unsqueeze(1)).solution.squeeze(1)
print("lstsq:", w_ls)
w_pinv = torch.linalg.pinv(X) @ y
print("pinv:", w_pinv)
print(torch.allclose(w_ne, w_ls, atol=1e-4), torch.allclose(w_pinv, w_ls, atol=1e-4))
mse = torch.mean((X @ w_ls - y) ** 2)
print(f"mse {mse.item():.6f}")
# ridge
for lam in [0.0, 0.1, 1.0, 10.0]:
    w = torch.linalg.solve(X.T @ X + lam * torch.eye(4), X.T @ y)
    print(f"lambda={lam:5.1f} |w|={w.norm():.4f} mse={((X @ w - y)**2).mean():.5f}")
# gradient descent comparison
w = torch.zeros(4, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.2)
for step in range(500):
    opt.zero_grad()
    loss = ((X @ w - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        print(step, round(loss.item(), 5))
print("gd:", w.detach())
print(torch.dist(w.detach(), w_ls) < 0.1)
# high degree: ill-conditioned
Xh = torch.vander(x.double(), N=12, increasing=True)
print(f"cond(X^T X) = {torch.linalg.cond(Xh.T @ Xh).item():.2e}")
print(f"cond(X) = {torch.linalg.cond(Xh).item():.2e}")
r = torch.linalg.lstsq(Xh, y.double(), driver="gelsd")
print(r.rank, r.residuals, r.singular_values.shape)
rr = torch.linalg.lstsq(Xh, y.double().unsqueeze(-1), driver="gelsd")
print(rr.rank, rr.residuals)
rr = torch.linalg.lstsq(Xh, y.double().unsqueeze(-1), driver="gelsy")
print(rr.rank, rr.residuals, rr.singular_values)
rr = torch.linalg.lstsq(Xh, y.double().unsqueeze(-1))
print(rr.rank, rr.residuals, rr.singular_values)
# R^2
ss_res = ((y - X @ w_ls) ** 2).sum()
ss_tot = ((y - y.mean()) ** 2).sum()
print("R2:", round((1 - ss_res / ss_tot).item(), 6))
# rank deficient design
Xd = torch.cat([X, X[:, :1] * 2], 1)
for drv in ["gelsy", "gelsd", "gelss"]:
    r = torch.linalg.lstsq(Xd.double(), y.double().unsqueeze(1), driver=drv)
    print(drv, r.rank, r.residuals, r.solution.squeeze().round(decimals=4))
