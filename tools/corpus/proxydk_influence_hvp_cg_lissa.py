import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(3, 1)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[0.5, -0.3, 0.8]]))
    model.bias.fill_(0.1)
X = torch.stack([torch.sin(torch.arange(20.) * (k + 1) * 0.3) for k in range(3)], 1)
y = (X.sum(1, keepdim=True) > 0).float()
params = [p for p in model.parameters() if p.requires_grad]

def loss_fn():
    return F.binary_cross_entropy_with_logits(model(X), y)

def hvp(loss, params, v):
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * vv).sum() for g, vv in zip(grads, v))
    return torch.autograd.grad(dot, params)

v = [torch.ones_like(p) for p in params]
Hv = hvp(loss_fn(), params, v)
print([h.shape for h in Hv])
print(Hv)

def flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])

# explicit hessian
grads = torch.autograd.grad(loss_fn(), params, create_graph=True)
g = flat(grads)
H = torch.stack([flat(torch.autograd.grad(g[i], params, retain_graph=True)) for i in range(g.numel())])
print(H.shape)
print(H)
print(torch.allclose(H, H.T, atol=1e-6))
eig = torch.linalg.eigvalsh(H)
print(eig)
# influence of training point on test loss
damp = 0.01
Hd = H + damp * torch.eye(4)
x_test = torch.tensor([[0.3, 0.2, -0.1]])
y_test = torch.tensor([[1.0]])
test_grad = flat(torch.autograd.grad(F.binary_cross_entropy_with_logits(model(x_test), y_test), params))
s_test = torch.linalg.solve(Hd, test_grad)
infl = []
for i in range(5):
    gi = flat(torch.autograd.grad(F.binary_cross_entropy_with_logits(model(X[i:i+1]), y[i:i+1]), params))
    infl.append(-(gi @ s_test).item())
print([round(v, 5) for v in infl])

# conjugate gradients
def cg(Av, b, iters=10, tol=1e-10):
    x = torch.zeros_like(b)
    r = b.clone(); p = r.clone(); rs = r @ r
    for k in range(iters):
        Ap = Av(p)
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        if rs_new.sqrt() < tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, k

def Av(vec):
    vs = []
    off = 0
    for p in params:
        vs.append(vec[off:off + p.numel()].view_as(p)); off += p.numel()
    return flat(hvp(loss_fn(), params, vs)) + damp * vec
x_cg, its = cg(Av, test_grad)
print(its, torch.allclose(x_cg, s_test, atol=1e-4))

# LiSSA
def lissa(v, scale=10.0, depth=200):
    est = v.clone()
    for _ in range(depth):
        est = v + (1 - damp) * est - Av(est) / scale
    return est / scale
est = lissa(test_grad)
print((est - s_test).norm() < 1e-2)
