"""Hand-written sparsemax (sort / cumsum / threshold, a module and an autograd.Function with a
top-k variant), entmax-1.5 by sort and by bisection with a learnable alpha (needs_input_grad),
checked with gradcheck; softmax / sparsemax / entmax outputs and gradients on fixed logits."""
import torch
import torch.nn as nn
from torch.autograd import Function

class Sparsemax(nn.Module):
    def __init__(self, dim=None):
        super(Sparsemax, self).__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, input):
        input = input.transpose(0, self.dim)
        original_size = input.size()
        input = input.reshape(input.size(0), -1)
        input = input.transpose(0, 1)
        dim = 1
        number_of_logits = input.size(dim)
        input = input - torch.max(input, dim=dim, keepdim=True)[0].expand_as(input)
        zs = torch.sort(input=input, dim=dim, descending=True)[0]
        range = torch.arange(start=1, end=number_of_logits + 1, step=1, device=input.device, dtype=input.dtype).view(1, -1)
        range = range.expand_as(zs)
        bound = 1 + range * zs
        cumulative_sum_zs = torch.cumsum(zs, dim)
        is_gt = torch.gt(bound, cumulative_sum_zs).type(input.type())
        k = torch.max(is_gt * range, dim, keepdim=True)[0]
        zs_sparse = is_gt * zs
        taus = (torch.sum(zs_sparse, dim, keepdim=True) - 1) / k
        taus = taus.expand_as(input)
        self.output = torch.max(torch.zeros_like(input), input - taus)
        output = self.output
        output = output.transpose(0, 1)
        output = output.reshape(original_size)
        output = output.transpose(0, self.dim)
        return output

    def backward(self, grad_output):
        dim = 1
        nonzeros = torch.ne(self.output, 0)
        sum = torch.sum(grad_output * nonzeros, dim=dim) / torch.sum(nonzeros, dim=dim)
        self.grad_input = nonzeros * (grad_output - sum.expand_as(grad_output))
        return self.grad_input

def _make_ix_like(X, dim):
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)

def _roll_last(X, dim):
    if dim == -1:
        return X
    elif dim < 0:
        dim = X.dim() - dim
    perm = [i for i in range(X.dim()) if i != dim] + [dim]
    return X.permute(perm)

def _sparsemax_threshold_and_support(X, dim=-1, k=None):
    if k is None or k >= X.shape[dim]:
        topk, _ = torch.sort(X, dim=dim, descending=True)
    else:
        topk, _ = torch.topk(X, k=k, dim=dim)
    topk_cumsum = topk.cumsum(dim) - 1
    rhos = _make_ix_like(topk, dim)
    support = rhos * topk > topk_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = topk_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(X.dtype)
    return tau, support_size

class SparsemaxFunction(Function):
    @classmethod
    def forward(cls, ctx, X, dim=-1, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val
        tau, supp_size = _sparsemax_threshold_and_support(X, dim=dim, k=k)
        output = torch.clamp(X - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @classmethod
    def backward(cls, ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None, None

class Entmax15Function(Function):
    @staticmethod
    def forward(ctx, X, dim=0):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val
        X = X / 2
        tau_star, _ = Entmax15Function._threshold_and_support(X, dim)
        Y = torch.clamp(X - tau_star, min=0) ** 2
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, grad_output):
        Y, = ctx.saved_tensors
        gppr = Y.sqrt()
        dX = grad_output * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        return dX, None

    @staticmethod
    def _threshold_and_support(input, dim=0):
        Xsrt, _ = torch.sort(input, descending=True, dim=dim)
        rho = _make_ix_like(input, dim)
        mean = Xsrt.cumsum(dim) / rho
        mean_sq = (Xsrt ** 2).cumsum(dim) / rho
        ss = rho * (mean_sq - mean ** 2)
        delta = (1 - ss) / rho
        delta_nz = torch.clamp(delta, 0)
        tau = mean - torch.sqrt(delta_nz)
        support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
        tau_star = tau.gather(dim, support_size - 1)
        return tau_star, support_size

x = torch.tensor([[1.0, 1.3, 0.5, -1.0], [0.1, 0.2, 0.3, 0.4], [3.0, -2.0, 2.9, 0.0]], requires_grad=True)
sm = Sparsemax(dim=1)
y = sm(x)
print(y)
print(y.sum(1))
(y * torch.tensor([1., 2., 3., 4.])).sum().backward()
print(x.grad)

x2 = x.detach().double().requires_grad_()
y2 = SparsemaxFunction.apply(x2, -1)
print(y2)
print(torch.autograd.gradcheck(lambda t: SparsemaxFunction.apply(t, -1), (x2,)))
y3 = SparsemaxFunction.apply(x2, -1, 2)
print(y3)
e = Entmax15Function.apply(x2, 1)
print(e, e.sum(1))
print(torch.autograd.gradcheck(lambda t: Entmax15Function.apply(t, 1), (x2,)))
e0 = Entmax15Function.apply(x2.t().contiguous(), 0)
print(torch.allclose(e0.t(), e))
# 3d input along middle dim
x3 = torch.sin(torch.arange(24.)).view(2, 3, 4).double().requires_grad_()
print(SparsemaxFunction.apply(x3, 1).sum(1))
print(torch.autograd.gradcheck(lambda t: SparsemaxFunction.apply(t, 1), (x3,)))
print(torch.autograd.gradgradcheck(lambda t: torch.softmax(t, 1), (x3,)))


# --- entmax by bisection, alpha learned per head ---
class EntmaxBisectFunction(Function):
    @classmethod
    def _gp(cls, x, alpha):
        return x ** (alpha - 1)

    @classmethod
    def _gp_inv(cls, y, alpha):
        return y ** (1 / (alpha - 1))

    @classmethod
    def _p(cls, X, alpha):
        return cls._gp_inv(torch.clamp(X, min=0), alpha)

    @classmethod
    def forward(cls, ctx, X, alpha=1.5, dim=-1, n_iter=50, ensure_sum_one=True):
        if not isinstance(alpha, torch.Tensor):
            alpha = torch.tensor(alpha, dtype=X.dtype, device=X.device)
        alpha_shape = list(X.shape)
        alpha_shape[dim] = 1
        alpha = alpha.expand(*alpha_shape)
        ctx.alpha = alpha
        ctx.dim = dim
        d = X.shape[dim]
        X = X * (alpha - 1)
        max_val, _ = X.max(dim=dim, keepdim=True)
        tau_lo = max_val - cls._gp(1, alpha)
        tau_hi = max_val - cls._gp(1 / d, alpha)
        f_lo = cls._p(X - tau_lo, alpha).sum(dim) - 1
        dm = tau_hi - tau_lo
        for it in range(n_iter):
            dm /= 2
            tau_m = tau_lo + dm
            p_m = cls._p(X - tau_m, alpha)
            f_m = p_m.sum(dim) - 1
            mask = (f_m * f_lo >= 0).unsqueeze(dim)
            tau_lo = torch.where(mask, tau_m, tau_lo)
        if ensure_sum_one:
            p_m /= p_m.sum(dim=dim).unsqueeze(dim=dim)
        ctx.save_for_backward(p_m)
        return p_m

    @classmethod
    def backward(cls, ctx, dY):
        Y, = ctx.saved_tensors
        gppr = torch.where(Y > 0, Y ** (2 - ctx.alpha), Y.new_zeros(1))
        dX = dY * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        d_alpha = None
        if ctx.needs_input_grad[1]:
            S = torch.where(Y > 0, Y * torch.log(Y), Y.new_zeros(1))
            ent = S.sum(ctx.dim).unsqueeze(ctx.dim)
            Y_skewed = gppr / gppr.sum(ctx.dim).unsqueeze(ctx.dim)
            d_alpha = dY * (Y - Y_skewed) / ((ctx.alpha - 1) ** 2)
            d_alpha -= dY * (S - Y_skewed * ent) / (ctx.alpha - 1)
            d_alpha = d_alpha.sum(ctx.dim).unsqueeze(ctx.dim)
        return dX, d_alpha, None, None, None

def entmax_bisect(X, alpha=1.5, dim=-1, n_iter=50, ensure_sum_one=True):
    return EntmaxBisectFunction.apply(X, alpha, dim, n_iter, ensure_sum_one)

class EntmaxAlpha(nn.Module):
    def __init__(self, head_count, dim=-1):
        super().__init__()
        self.dim = dim
        self.alpha_chooser = nn.Parameter(torch.randn(head_count))
        self.alpha = None

    def forward(self, att_scores):
        batch_size, head_count, query_len, key_len = att_scores.size()
        expanded_alpha = self.alpha_chooser.unsqueeze(0).unsqueeze(-1).unsqueeze(-1)
        expanded_alpha = expanded_alpha.expand((batch_size, -1, query_len, 1))
        self.alpha = 1 + torch.sigmoid(expanded_alpha).clamp(min=1e-8, max=1)
        p_star = entmax_bisect(att_scores, self.alpha)
        return p_star

X = torch.tensor([[1.0, 0.5, -0.3, 2.0], [0.0, 0.1, 0.2, 0.3]], dtype=torch.float64, requires_grad=True)
for a in [1.25, 1.5, 2.0]:
    p = entmax_bisect(X, a)
    print(a, p, p.sum(-1))
alpha = torch.tensor([[1.3], [1.7]], dtype=torch.float64, requires_grad=True)
p = entmax_bisect(X, alpha)
(p * torch.arange(4.)).sum().backward()
print(X.grad, alpha.grad)
print(torch.autograd.gradcheck(lambda x, a: entmax_bisect(x, a, -1, 80), (X, alpha)))
mod = EntmaxAlpha(2)
with torch.no_grad():
    mod.alpha_chooser.copy_(torch.tensor([0.5, -1.0]))
scores = torch.sin(torch.arange(2 * 2 * 3 * 4, dtype=torch.float32)).view(2, 2, 3, 4)
out = mod(scores)
print(out.shape, out.sum(-1)[0])
print(mod.alpha.squeeze())
out[..., 0].sum().backward()
print(mod.alpha_chooser.grad)
