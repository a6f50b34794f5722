"""Optimizers and learning-rate schedulers on a fixed quadratic: every printed value is deterministic."""
import torch
from torch import optim
from torch.optim import lr_scheduler


def run(opt_cls, steps=25, **kwargs):
    w = torch.tensor([1.5, -2.0, 0.5], requires_grad=True)
    target = torch.tensor([0.0, 1.0, -1.0])
    opt = opt_cls([w], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((w - target) ** 2 * torch.tensor([1.0, 3.0, 0.5])).sum()
        loss.backward()
        opt.step()
    return [round(v, 4) for v in w.tolist()], round(loss.item(), 4)


print('SGD', run(optim.SGD, lr=0.05))
print('SGD momentum', run(optim.SGD, lr=0.05, momentum=0.9))
print('SGD nesterov', run(optim.SGD, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01))
print('Adam', run(optim.Adam, lr=0.1))
print('Adam amsgrad', run(optim.Adam, lr=0.1, betas=(0.8, 0.99), amsgrad=True))
print('AdamW', run(optim.AdamW, lr=0.1, weight_decay=0.1))
print('RMSprop', run(optim.RMSprop, lr=0.01))
print('RMSprop momentum', run(optim.RMSprop, lr=0.01, momentum=0.5, centered=True))
print('Adagrad', run(optim.Adagrad, lr=0.5))
print('Adadelta', run(optim.Adadelta, lr=1.0))
print('Adamax', run(optim.Adamax, lr=0.1))
print('NAdam', run(optim.NAdam, lr=0.1))
print('RAdam', run(optim.RAdam, lr=0.1))


def lrs(make_scheduler, n=8, lr=0.1, metric=None):
    w = torch.zeros(1, requires_grad=True)
    opt = optim.SGD([w], lr=lr)
    sched = make_scheduler(opt)
    seen = []
    for epoch in range(n):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric[epoch])
        seen.append(round(opt.param_groups[0]['lr'], 6))
    return seen


print('StepLR', lrs(lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)))
print('MultiStepLR', lrs(lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5], gamma=0.1)))
print('ExponentialLR', lrs(lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9)))
print('CosineAnnealingLR', lrs(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=8)))
print('LambdaLR', lrs(lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch)))
print('LinearLR', lrs(lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4)))
print('OneCycleLR', lrs(lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10)))
print('ReduceLROnPlateau', lrs(lambda o: lr_scheduler.ReduceLROnPlateau(o, mode='min', factor=0.5, patience=1),
                               metric=[1.0, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8]))

w = torch.zeros(2, requires_grad=True)
opt = optim.SGD([w], lr=1.0)
sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
opt.step()
sched.step()
state = sched.state_dict()
print(sorted(k for k in state if not k.startswith('_')))
print(sched.get_last_lr(), state['last_epoch'])
opt.add_param_group({'params': [torch.zeros(3, requires_grad=True)], 'lr': 0.5})
print(len(opt.param_groups), opt.param_groups[1]['lr'], opt.param_groups[1]['momentum'])
