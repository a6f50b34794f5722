"""Model EMA: torch.optim.swa_utils.AveragedModel with get_ema_multi_avg_fn, timm ModelEmaV2 and a
hand-written EMA with torch._foreach_mul_/_foreach_add_; update_bn."""
import copy
import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn, get_ema_avg_fn, SWALR, update_bn


def make():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (i + 1))
    return m


model = make()
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
ema2 = AveragedModel(model, avg_fn=get_ema_avg_fn(0.9), use_buffers=True)
print(type(ema).__name__, ema.n_averaged, ema.n_averaged.dtype)
print(list(ema.state_dict().keys())[:4])
print(len(ema.state_dict()))
x = torch.linspace(-1, 1, 2 * 3 * 6 * 6).reshape(2, 3, 6, 6)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
    ema2.update_parameters(model)
    print(step, round(loss.item(), 6), ema.n_averaged.item())
print("ema w0:", [round(v, 5) for v in ema.module[0].weight.flatten()[:4].tolist()])
print("ema2 w0:", [round(v, 5) for v in ema2.module[0].weight.flatten()[:4].tolist()])
print("ema2 buf:", [round(v, 5) for v in ema2.module[1].running_mean[:3].tolist()])
print("ema buf:", [round(v, 5) for v in ema.module[1].running_mean[:3].tolist()])
with torch.no_grad():
    print(ema(x).shape)


class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.9999):
        super(ModelEmaV2, self).__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)


class ModelEmaV3(nn.Module):
    def __init__(self, model, decay=0.99):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        ema_lerp_values, model_lerp_values = [], []
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.is_floating_point():
                ema_lerp_values.append(ema_v)
                model_lerp_values.append(model_v)
            else:
                ema_v.copy_(model_v)
        if hasattr(torch, '_foreach_lerp_'):
            torch._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - self.decay)
        else:
            torch._foreach_mul_(ema_lerp_values, scalar=self.decay)
            torch._foreach_add_(ema_lerp_values, model_lerp_values, alpha=1. - self.decay)


m2 = make()
e2 = ModelEmaV2(m2, decay=0.9)
e3 = ModelEmaV3(m2, decay=0.9)
with torch.no_grad():
    for p in m2.parameters():
        p.add_(1.0)
m2(x)
e2.update(m2)
e3.update(m2)
print("v2:", round(e2.module[5].bias[0].item(), 5), "v3:", round(e3.module[5].bias[0].item(), 5))
print("nbt:", e2.module[1].num_batches_tracked.item(), e3.module[1].num_batches_tracked.item())
params = [torch.ones(3), torch.full((2,), 2.0)]
torch._foreach_mul_(params, 0.5)
torch._foreach_add_(params, [torch.ones(3), torch.ones(2)], alpha=2)
print(params)
norms = torch._foreach_norm(params)
print(norms)
print(torch._foreach_add(params, 1.0))
sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2, anneal_strategy="cos")
for i in range(3):
    opt.step()
    sched.step()
    print("swa lr", [round(g["lr"], 5) for g in opt.param_groups])
loader = [(x, torch.zeros(2)) for _ in range(2)]
update_bn(loader, ema)
print("bn after update_bn:", [round(v, 4) for v in ema.module[1].running_mean[:3].tolist()], ema.module[1].momentum)
