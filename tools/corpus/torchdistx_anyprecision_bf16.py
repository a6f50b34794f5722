"""AnyPrecisionAdamW (torchdistx / torchtune): bfloat16 parameters and states with Kahan-compensated
updates, stochastic rounding to bfloat16 by bit manipulation, finfo, and fp32 master weights
stepping a bfloat16 model built from torch.linspace data."""
import torch
from torch.optim.optimizer import Optimizer


class AnyPrecisionAdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 use_kahan_summation=False, momentum_dtype=torch.bfloat16, variance_dtype=torch.bfloat16,
                 compensation_buffer_dtype=torch.bfloat16):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        use_kahan_summation=use_kahan_summation, momentum_dtype=momentum_dtype,
                        variance_dtype=variance_dtype, compensation_buffer_dtype=compensation_buffer_dtype)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            with torch.enable_grad():
                closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            weight_decay = group["weight_decay"]
            eps = group["eps"]
            use_kahan_summation = group["use_kahan_summation"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AnyPrecisionAdamW does not support sparse gradients")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, dtype=group["momentum_dtype"])
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=group["variance_dtype"])
                    if use_kahan_summation:
                        state["compensation"] = torch.zeros_like(p, dtype=group["compensation_buffer_dtype"])
                state["step"] += 1
                step = state["step"]
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                grad = p.grad
                if weight_decay:
                    p.data.mul_(1 - lr * weight_decay)
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                step_size = lr / bias_correction1
                denom_correction = (1 - beta2 ** step) ** 0.5
                centered_variance = (exp_avg_sq.sqrt() / denom_correction).add_(eps, alpha=1)
                if use_kahan_summation:
                    compensation = state["compensation"]
                    compensation.addcdiv_(exp_avg, centered_variance, value=-step_size)
                    temp_buffer = p.detach().clone()
                    p.data.add_(compensation)
                    compensation.add_(temp_buffer.sub_(p.data))
                else:
                    p.data.addcdiv_(exp_avg, centered_variance, value=-step_size)


def stochastic_round_to_bf16(x_fp32, generator=None):
    # add random bits below the bf16 mantissa, then truncate
    as_int = x_fp32.view(torch.int32)
    noise = torch.randint(0, 1 << 16, x_fp32.shape, dtype=torch.int32, generator=generator)
    rounded = (as_int + noise) & -65536
    return rounded.view(torch.float32).to(torch.bfloat16)


x32 = torch.tensor([1.0, 1.00390625, 3.14159, -2.71828, 1e-3, 65504.0])
print(x32.to(torch.bfloat16))
print(x32.to(torch.bfloat16).float() - x32)
print(x32.view(torch.int32))
print((x32.view(torch.int32) & -65536).view(torch.float32))
g = torch.Generator().manual_seed(0)
sr = stochastic_round_to_bf16(x32, g)
print(sr.dtype, ((sr.float() - x32).abs() <= x32.abs() * 2 ** -7).all().item())
print(torch.finfo(torch.bfloat16))
print(torch.finfo(torch.bfloat16).eps, torch.finfo(torch.float16).eps, torch.finfo(torch.float32).tiny)

# tiny updates vanish in bf16 without compensation
torch.manual_seed(0)
results = {}
for kahan in (False, True):
    w = torch.nn.Parameter(torch.full((4,), 10.0, dtype=torch.bfloat16))
    opt = AnyPrecisionAdamW([w], lr=1e-3, use_kahan_summation=kahan)
    for _ in range(20):
        opt.zero_grad()
        (w.float() * torch.tensor([1.0, 2.0, -1.0, 0.5])).sum().backward()
        opt.step()
    results[kahan] = w.detach().float()
    st = opt.state[w]
    print("kahan", kahan, w.dtype, w.detach(), {k: v.dtype for k, v in st.items()})
print(results[True] - 10.0)
print(opt.state[w]["compensation"])
print(opt.state[w]["step"], opt.state[w]["exp_avg_sq"])

# fp32 master weights: step in fp32, copy down to a bf16 model
model = torch.nn.Linear(4, 2).to(torch.bfloat16)
with torch.no_grad():
    model.weight.copy_(torch.linspace(-1, 1, 8).view(2, 4))
    model.bias.copy_(torch.tensor([0.25, -0.25]))
master = [p.detach().clone().float().requires_grad_(True) for p in model.parameters()]
opt = torch.optim.SGD(master, lr=0.1, momentum=0.9)
x = torch.linspace(-1, 1, 12, dtype=torch.bfloat16).view(3, 4)
for step in range(5):
    model.zero_grad()
    out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    for m, p in zip(master, model.parameters()):
        m.grad = p.grad.float()
    opt.step()
    with torch.no_grad():
        for m, p in zip(master, model.parameters()):
            p.copy_(m)
    print(step, out.dtype, f"{loss.item():.4f}")
print(model.weight, master[0].dtype)
print(model.bias.grad.dtype, master[1])
