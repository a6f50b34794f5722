"""Second-order methods by hand, after mariogeiger/hessian (a full Hessian assembled row by row
from torch.autograd.grad with create_graph, written into out[ai, ai:] with add_) and the
hand-written strong-Wolfe line searches that import torch.optim.lbfgs._cubic_interpolate:
Newton's method with torch.autograd.functional.jacobian/hessian and linalg.solve, a Newton root
finder for a 2x2 system, a backtracking line search built on _cubic_interpolate, and
torch.optim.LBFGS with line_search_fn='strong_wolfe' on a logistic regression.  float64
throughout, so the printed iterates agree to the last printed digit."""
import torch
from torch.optim.lbfgs import _cubic_interpolate

torch.set_default_dtype(torch.float64)


def flat_gradient(output, inputs, retain_graph=None, create_graph=False):
    grads = torch.autograd.grad(output, inputs, allow_unused=True, retain_graph=retain_graph,
                                create_graph=create_graph)
    grads = [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, inputs)]
    return torch.cat([g.contiguous().view(-1) for g in grads])


def full_hessian(output, inputs):
    n = sum(p.numel() for p in inputs)
    out = output.new_zeros(n, n)
    ai = 0
    for i, inp in enumerate(inputs):
        [grad] = torch.autograd.grad(output, inp, create_graph=True)
        grad = grad.contiguous().view(-1)
        for j in range(inp.numel()):
            if grad[j].requires_grad:
                row = flat_gradient(grad[j], inputs[i:], retain_graph=True)[j:]
            else:
                row = grad[j].new_zeros(sum(x.numel() for x in inputs[i:]) - j)
            out[ai, ai:].add_(row.type_as(out))
            if ai + 1 < n:
                out[ai + 1:, ai].add_(row[1:].type_as(out))
            ai += 1
    return out


a = torch.tensor([0.7, -1.3], requires_grad=True)
b = torch.tensor([[0.4]], requires_grad=True)
f = (a.sin() * b).sum() + (a ** 3).sum() + (a.prod() * b.squeeze()) ** 2
H = full_hessian(f, [a, b])
print(H)
print(torch.autograd.functional.hessian(lambda a_, b_: (a_.sin() * b_).sum() + (a_ ** 3).sum()
                                        + (a_.prod() * b_.squeeze()) ** 2, (a.detach(), b.detach()))[0][0])


def rosen(v):
    return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2


v = torch.tensor([-1.2, 1.0])
for it in range(5):
    g = torch.autograd.functional.jacobian(rosen, v)
    Hr = torch.autograd.functional.hessian(rosen, v)
    v = v - torch.linalg.solve(Hr, g)
    print("newton", it, [round(t, 6) for t in v.tolist()], f"{rosen(v).item():.4e}")


def system(z):
    return torch.stack([z[0] ** 2 + z[1] ** 2 - 4, z[0] * z[1] - 1])


z = torch.tensor([2.0, 0.3])
for it in range(6):
    J = torch.autograd.functional.jacobian(system, z)
    z = z - torch.linalg.solve(J, system(z))
print("root", z, system(z).abs().max() < 1e-12)


def cubic_backtracking(fun, x, d, t=1.0, c1=1e-4, max_ls=10):
    x = x.detach().requires_grad_()
    f0 = fun(x)
    g0, = torch.autograd.grad(f0, x)
    gtd0 = g0.dot(d)
    for ls in range(max_ls):
        xt = (x + t * d).detach().requires_grad_()
        ft = fun(xt)
        gt, = torch.autograd.grad(ft, xt)
        if ft <= f0 + c1 * t * gtd0:
            return t, ft.item(), ls
        t = _cubic_interpolate(0.0, f0.item(), gtd0, t, ft.item(), gt.dot(d), bounds=(0.01 * t, 0.9 * t))
        t = float(t)
    return t, ft.item(), max_ls


x = torch.tensor([-1.2, 1.0])
for it in range(5):
    xg = x.clone().requires_grad_()
    gx, = torch.autograd.grad(rosen(xg), xg)
    step, fval, n_ls = cubic_backtracking(rosen, x, -gx, t=1.0)
    x = x - step * gx
    print("gd+cubic", it, round(step, 8), round(fval, 6), n_ls)

X = torch.linspace(-2, 2, 40).view(20, 2).sin()
y = (X[:, 0] - 0.3 * X[:, 1] > 0).double()
w = torch.zeros(2, requires_grad=True)
bias = torch.zeros(1, requires_grad=True)
opt = torch.optim.LBFGS([w, bias], lr=1, max_iter=25, history_size=5, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(X @ w + bias, y) + 0.05 * w.pow(2).sum()
    loss.backward()
    return loss


for i in range(3):
    print("lbfgs", i, round(opt.step(closure).item(), 8))
state = opt.state[w]
print([round(t, 6) for t in w.tolist()], round(bias.item(), 6), state["func_evals"], state["n_iter"])
