"""Sharpness-aware minimisation as research code writes it: a SAM optimizer wrapping a base
optimizer class (its param_groups shared with the base), adaptive (ASAM) perturbations scaled by
|p|, first_step/second_step under @torch.no_grad(), step(closure) wrapping the closure in
torch.enable_grad(), p.data swapped back from the state; gradient centralisation and clipping
between the steps; the base optimizer driven by a warmup + cosine SequentialLR, then by
ReduceLROnPlateau; state_dict round trips of optimizer and schedulers."""
import torch
import torch.nn.functional as F


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        if rho < 0:
            raise ValueError(f"Invalid rho, should be non-negative: {rho}")
        super().__init__(params, dict(rho=rho, adaptive=adaptive, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    def _grad_norm(self):
        norms = [((p.abs() if g["adaptive"] else 1.0) * p.grad).norm(p=2)
                 for g in self.param_groups for p in g["params"] if p.grad is not None]
        return torch.norm(torch.stack(norms), p=2)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        scale_base = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (scale_base + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is not None, "SAM needs a closure"
        closure = torch.enable_grad()(closure)
        self.first_step(zero_grad=True)
        closure()
        self.second_step()

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.base_optimizer.param_groups = self.param_groups


def centralize(params):
    for p in params:
        if p.grad is not None and p.grad.dim() > 1:
            p.grad.sub_(p.grad.mean(dim=tuple(range(1, p.grad.dim())), keepdim=True))


def model_():
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for k, p in enumerate(m.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel()) * 1.1 + 2 * k).reshape(p.shape) * 0.6)
    return m


x = torch.linspace(-1.5, 1.5, 48).reshape(12, 4)
t = (torch.arange(12) * 7) % 3

for adaptive, base, kw in ((False, torch.optim.SGD, dict(lr=0.2, momentum=0.9, nesterov=True)),
                           (True, torch.optim.AdamW, dict(lr=0.02, weight_decay=0.05))):
    model = model_()
    opt = SAM(model.parameters(), base, rho=0.5 if adaptive else 0.05, adaptive=adaptive, **kw)
    base_opt = opt.base_optimizer
    warm = torch.optim.lr_scheduler.LinearLR(base_opt, start_factor=0.2, total_iters=3)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(base_opt, T_max=6, eta_min=1e-4)
    sched = torch.optim.lr_scheduler.SequentialLR(base_opt, [warm, cos], milestones=[3])
    print(type(base_opt).__name__, sorted(opt.param_groups[0]), opt.param_groups is base_opt.param_groups)
    for it in range(9):
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        centralize(model.parameters())
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.first_step(zero_grad=True)
        F.cross_entropy(model(x), t).backward()
        opt.second_step(zero_grad=True)
        sched.step()
        print(it, f"{loss.item():.6f}", f"{total.item():.6f}", f"{sched.get_last_lr()[0]:.6f}")
    sd, ssd = opt.state_dict(), sched.state_dict()
    print(sorted(sd["state"][0]), sorted(ssd), ssd["last_epoch"])
    opt2 = SAM(model.parameters(), base, adaptive=adaptive, **kw)
    opt2.load_state_dict(sd)
    print(opt2.base_optimizer.param_groups is opt2.param_groups,
          round(opt2.param_groups[0]["lr"], 6), sorted(opt2.base_optimizer.state[model[0].weight]))

# step(closure) with ReduceLROnPlateau on the base optimizer
model = model_()
opt = SAM(model.parameters(), torch.optim.SGD, rho=0.1, lr=0.5)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt.base_optimizer, factor=0.5, patience=1,
                                                     threshold=0.05)
for it in range(8):
    def closure():
        loss = F.cross_entropy(model(x), t)
        loss.backward()
        return loss
    loss = F.cross_entropy(model(x), t)
    loss.backward()
    opt.step(closure)
    opt.zero_grad()
    plateau.step(loss.item())
    print("plateau", it, f"{loss.item():.6f}", plateau.get_last_lr(), plateau.num_bad_epochs)
try:
    opt.step()
except AssertionError as e:
    print("AssertionError", e)
try:
    SAM(model.parameters(), torch.optim.SGD, rho=-1, lr=0.1)
except ValueError as e:
    print("ValueError", e)
