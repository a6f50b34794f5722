"""Learning-rate schedulers as training loops drive them: per-epoch and per-batch, warmup, restarts, plateau."""
import torch
from torch import nn, optim
from torch.optim import lr_scheduler


def make_opt(lr=0.1, momentum=0.0):
    model = nn.Linear(2, 1)
    return optim.SGD(model.parameters(), lr=lr, momentum=momentum)


def trace(sched, opt, n):
    out = []
    for _ in range(n):
        opt.step()
        sched.step()
        out.append(round(sched.get_last_lr()[0], 6))
    return out


opt = make_opt()
sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
print('StepLR initial', sched.get_last_lr(), sched.last_epoch)
print('StepLR', trace(sched, opt, 6))
print(sorted(sched.state_dict()))

opt = make_opt()
print('CosineAnnealingLR eta_min', trace(lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.01), opt, 10))
opt = make_opt()
print('CosineAnnealingWarmRestarts', trace(lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2), opt, 10))
opt = make_opt(momentum=0.9)
sched = lr_scheduler.OneCycleLR(opt, max_lr=0.5, steps_per_epoch=4, epochs=3)
lrs, moms = [], []
for _ in range(12):
    opt.step()
    lrs.append(round(opt.param_groups[0]['lr'], 5))
    moms.append(round(opt.param_groups[0]['momentum'], 4))
    sched.step() if len(lrs) < 12 else None
print('OneCycleLR lr', lrs)
print('OneCycleLR momentum', moms)
opt = make_opt(momentum=0.9)
print('OneCycleLR linear three_phase', trace(lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy='linear', three_phase=True), opt, 9))
opt = make_opt()
print('LambdaLR warmup', trace(lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 4)), opt, 6))
opt = make_opt()
print('MultiplicativeLR', trace(lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5), opt, 4))
opt = make_opt()
print('PolynomialLR', trace(lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0), opt, 6))
opt = make_opt()
print('ConstantLR', trace(lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2), opt, 4))
opt = make_opt()
print('CyclicLR', trace(lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False), opt, 8))
opt = make_opt()
warm = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
print('SequentialLR', trace(lr_scheduler.SequentialLR(opt, schedulers=[warm, decay], milestones=[3]), opt, 7))
opt = make_opt()
chain = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
                                       lr_scheduler.ExponentialLR(opt, gamma=0.9)])
print('ChainedScheduler', trace(chain, opt, 5))

opt = make_opt()
plateau = lr_scheduler.ReduceLROnPlateau(opt, mode='max', factor=0.2, patience=1, threshold=0.01, min_lr=0.001)
accs = [0.5, 0.6, 0.605, 0.604, 0.61, 0.7, 0.7, 0.7, 0.7, 0.7]
seen = []
for acc in accs:
    opt.step()
    plateau.step(acc)
    seen.append(round(opt.param_groups[0]['lr'], 6))
print('ReduceLROnPlateau max', seen, plateau.num_bad_epochs, plateau.best)
opt = make_opt()
plateau = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, cooldown=2)
seen = []
for loss in [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]:
    plateau.step(loss)
    seen.append(opt.param_groups[0]['lr'])
print('ReduceLROnPlateau cooldown', seen, plateau.get_last_lr())

opt = make_opt()
sched = lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
trace(sched, opt, 2)
state = sched.state_dict()
opt2 = make_opt()
sched2 = lr_scheduler.MultiStepLR(opt2, milestones=[1, 3], gamma=0.5)
sched2.load_state_dict(state)
print('resumed', sched2.last_epoch, sched2.get_last_lr(), state['milestones'], state['gamma'])
opt = make_opt()
print('initial_lr recorded', 'initial_lr' in opt.param_groups[0], end=' ')
lr_scheduler.StepLR(opt, 1)
print('initial_lr' in opt.param_groups[0], opt.param_groups[0]['initial_lr'])
print(isinstance(sched, lr_scheduler.LRScheduler), isinstance(plateau, lr_scheduler.ReduceLROnPlateau))
