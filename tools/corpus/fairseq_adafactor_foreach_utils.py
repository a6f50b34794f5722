"""Adafactor as fairseq / HF transformers write it (factored second moments, relative step, RMS
clipping), the private helpers such copies import (torch.optim.optimizer._get_value,
_default_to_fused_or_foreach, the doc fragments, torch.utils._foreach_utils grouping), and the
built-in torch.optim.Adafactor."""
import math
import torch
from torch.optim.optimizer import (Optimizer, _use_grad_for_differentiable, _get_value,
                                   _default_to_fused_or_foreach, _get_scalar_dtype, _view_as_real,
                                   _capturable_doc, _differentiable_doc, _foreach_doc, _maximize_doc)
from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype


class Adafactor(Optimizer):
    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
        if lr is not None and relative_step:
            raise ValueError("Cannot combine manual `lr` and `relative_step=True` options")
        if warmup_init and not relative_step:
            raise ValueError("`warmup_init=True` requires `relative_step=True`")
        defaults = dict(lr=lr, eps=eps, clip_threshold=clip_threshold, decay_rate=decay_rate, beta1=beta1,
                        weight_decay=weight_decay, scale_parameter=scale_parameter, relative_step=relative_step,
                        warmup_init=warmup_init)
        super().__init__(params, defaults)

    @staticmethod
    def _get_lr(param_group, param_state):
        rel_step_sz = param_group["lr"]
        if param_group["relative_step"]:
            min_step = 1e-6 * param_state["step"] if param_group["warmup_init"] else 1e-2
            rel_step_sz = min(min_step, 1.0 / math.sqrt(param_state["step"]))
        param_scale = 1.0
        if param_group["scale_parameter"]:
            param_scale = max(param_group["eps"][1], param_state["RMS"])
        return param_scale * rel_step_sz

    @staticmethod
    def _get_options(param_group, param_shape):
        factored = len(param_shape) >= 2
        use_first_moment = param_group["beta1"] is not None
        return factored, use_first_moment

    @staticmethod
    def _rms(tensor):
        return tensor.norm(2) / (tensor.numel() ** 0.5)

    @staticmethod
    def _approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col):
        r_factor = (exp_avg_sq_row / exp_avg_sq_row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
        c_factor = exp_avg_sq_col.unsqueeze(-2).rsqrt()
        return torch.mul(r_factor, c_factor)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.dtype in {torch.float16, torch.bfloat16}:
                    grad = grad.float()
                if grad.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients.")
                state = self.state[p]
                grad_shape = grad.shape
                factored, use_first_moment = self._get_options(group, grad_shape)
                if len(state) == 0:
                    state["step"] = 0
                    if use_first_moment:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:
                        state["exp_avg_sq_row"] = torch.zeros(grad_shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(grad_shape[:-2] + grad_shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0
                p_data_fp32 = p
                if p.dtype in {torch.float16, torch.bfloat16}:
                    p_data_fp32 = p_data_fp32.float()
                state["step"] += 1
                state["RMS"] = self._rms(p_data_fp32)
                lr = self._get_lr(group, state)
                beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                update = (grad ** 2) + group["eps"][0]
                if factored:
                    exp_avg_sq_row = state["exp_avg_sq_row"]
                    exp_avg_sq_col = state["exp_avg_sq_col"]
                    exp_avg_sq_row.mul_(beta2t).add_(update.mean(dim=-1), alpha=(1.0 - beta2t))
                    exp_avg_sq_col.mul_(beta2t).add_(update.mean(dim=-2), alpha=(1.0 - beta2t))
                    update = self._approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col)
                    update.mul_(grad)
                else:
                    exp_avg_sq = state["exp_avg_sq"]
                    exp_avg_sq.mul_(beta2t).add_(update, alpha=(1.0 - beta2t))
                    update = exp_avg_sq.rsqrt().mul_(grad)
                update.div_((self._rms(update) / group["clip_threshold"]).clamp_(min=1.0))
                update.mul_(lr)
                if use_first_moment:
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(group["beta1"]).add_(update, alpha=(1 - group["beta1"]))
                    update = exp_avg
                if group["weight_decay"] != 0:
                    p_data_fp32.add_(p_data_fp32, alpha=(-group["weight_decay"] * lr))
                p_data_fp32.add_(-update)
                if p.dtype in {torch.float16, torch.bfloat16}:
                    p.copy_(p_data_fp32)
        return loss


print(_get_value(torch.tensor(3.5)), _get_value(2), _get_scalar_dtype())
print(_default_to_fused_or_foreach([torch.ones(2)], differentiable=False, use_fused=False))
print(type(_foreach_doc).__name__, "foreach" in _foreach_doc, "maximize" in _maximize_doc)
ts = [torch.ones(2), torch.ones(3, dtype=torch.float64), torch.zeros(1)]
grouped = _group_tensors_by_device_and_dtype([ts])
for (dev, dt), (lists, idx) in sorted(grouped.items(), key=lambda kv: str(kv[0][1])):
    print(dev, dt, [t.shape for t in lists[0]], idx)

model = torch.nn.Sequential(torch.nn.Embedding(7, 6), torch.nn.Linear(6, 5), torch.nn.LayerNorm(5))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel()).float() * 0.53 + i).view(p.shape) * 0.6 + (p.ndim == 1) * 0.5)
try:
    Adafactor(model.parameters(), lr=1e-3)
except ValueError as e:
    print("ValueError:", e)
opt = Adafactor(model.parameters(), beta1=0.9, weight_decay=0.01)
ids = torch.arange(14) % 7
tgt = torch.cos(torch.arange(70.0)).view(14, 5)
for step in range(1, 11):
    opt.zero_grad()
    loss = torch.nn.functional.smooth_l1_loss(model(ids), tgt)
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(step, f"{loss.item():.5f}")
st = opt.state[model[1].weight]
for k in sorted(st):
    v = st[k]
    print(k, tuple(v.shape) if torch.is_tensor(v) else v, v.dtype if torch.is_tensor(v) else type(v).__name__)
print(f"RMS {st['RMS'].item():.5f}")
print(model[2].weight)

# the built-in torch.optim.Adafactor on the same model
model2 = torch.nn.Linear(6, 4)
with torch.no_grad():
    model2.weight.copy_(torch.linspace(-1, 1, 24).view(4, 6))
    model2.bias.copy_(torch.tensor([0.1, -0.2, 0.3, -0.4]))
builtin = torch.optim.Adafactor(model2.parameters(), lr=0.05, weight_decay=0.1)
print(builtin)
for _ in range(5):
    builtin.zero_grad()
    model2(torch.ones(3, 6)).square().mean().backward()
    builtin.step()
print(model2.weight[0], model2.bias)
bs = builtin.state[model2.weight]
print({k: (tuple(v.shape), v.dtype) for k, v in bs.items()})
print({k: (tuple(v.shape), v.dtype) for k, v in builtin.state[model2.bias].items()})
try:
    torch.optim.Adafactor(model2.parameters(), lr=-1.0)
except ValueError as e:
    print("ValueError:", e)
try:
    torch.optim.Adafactor(model2.parameters(), beta2_decay=0.8)
except ValueError as e:
    print("ValueError:", e)
