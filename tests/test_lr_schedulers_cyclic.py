"""OneCycleLR (and the other cyclic / composite schedulers): lr and momentum sequences against
torch step by step, hand-computed values, state_dict round trips and argument errors."""
from __future__ import annotations

import math
import warnings

import pytest

import tapegrad as tg
from tapegrad.optim.lr_scheduler import OneCycleLR


def _optimizer(lib, name="SGD", groups=2, **kwargs):
    params = [{"params": [lib.nn.Parameter(lib.zeros(1))]} for _ in range(groups)]
    return getattr(lib.optim, name)(params, lr=0.1, **kwargs)


def _trace(lib, make, steps, name="SGD", **kwargs):
    """Per step: last lrs and every group's lr, momentum and betas (or the error raised)."""
    opt = _optimizer(lib, name, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sched = make(lib.optim.lr_scheduler, opt)
        except Exception as e:  # noqa: BLE001 - comparing what each library raises
            return (type(e).__name__, str(e))
        out = []
        for _ in range(steps):
            opt.step()
            try:
                sched.step()
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
                break
            out.append((sched.get_last_lr(),
                        [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]))
    return out, sorted(sched.state_dict())


ONE_CYCLE = [
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=23,
                                                         pct_start=0.25, div_factor=10.0,
                                                         final_div_factor=100.0), 25),
    ("Adam", {}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=40, three_phase=True,
                                          anneal_strategy="linear"), 40),
    ("AdamW", {"betas": (0.8, 0.99)}, lambda L, o: L.OneCycleLR(
        o, max_lr=0.3, epochs=3, steps_per_epoch=7, base_momentum=[0.8, 0.7]), 21),
    ("SGD", {}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=9, cycle_momentum=False), 9),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=300), 300),
    # errors
    ("SGD", {}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=9), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=0), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=5,
                                                         pct_start=1), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=5,
                                                         anneal_strategy="exp"), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=[0.3], total_steps=5), 1),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.OneCycleLR(o, max_lr=0.3, epochs=2.0,
                                                         steps_per_epoch=3), 1),
]


@pytest.mark.parametrize("case", range(len(ONE_CYCLE)))
def test_one_cycle_matches_torch_exactly(torch, case):
    name, kwargs, make, steps = ONE_CYCLE[case]
    assert _trace(tg, make, steps, name, **kwargs) == _trace(torch, make, steps, name, **kwargs)


def test_one_cycle_values():
    opt = _optimizer(tg, momentum=0.9, groups=1)
    sched = OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.2, anneal_strategy="linear",
                       div_factor=4.0, final_div_factor=5.0)
    group = opt.param_groups[0]
    assert group["lr"] == 0.25 and group["momentum"] == 0.95     # the cycle's start
    lrs = []
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    # warm-up ends on step 1 (0.2 * 10 - 1), then a straight line down to 0.25 / 5 on step 9
    assert lrs[0] == 1.0 and group["momentum"] == pytest.approx(0.95)
    assert lrs == pytest.approx([1.0 + (0.05 - 1.0) * (k - 1) / 8 for k in range(1, 10)])
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total "
                                         "steps is 10"):
        for _ in range(2):
            opt.step()
            sched.step()


def test_one_cycle_cos_and_beta1():
    opt = tg.optim.Adam([tg.nn.Parameter(tg.zeros(1))], lr=0.1, betas=(0.9, 0.98))
    sched = OneCycleLR(opt, max_lr=2.0, total_steps=5, pct_start=0.5)
    assert opt.param_groups[0]["betas"] == (0.95, 0.98)
    opt.step()
    sched.step()
    pct = 1 / 1.5
    assert sched.get_last_lr()[0] == pytest.approx(2.0 + (0.08 - 2.0) / 2 * (math.cos(math.pi * pct) + 1))
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        OneCycleLR(tg.optim.Adagrad([tg.nn.Parameter(tg.zeros(1))]), max_lr=1.0, total_steps=3)


def test_one_cycle_state_dict_round_trip():
    def run(resume_at):
        opt = _optimizer(tg, momentum=0.9)
        sched = OneCycleLR(opt, max_lr=1.0, total_steps=20)
        lrs = []
        for k in range(20):
            if k == resume_at:
                state, opt_state = sched.state_dict(), opt.state_dict()
                opt = _optimizer(tg, momentum=0.9)
                opt.load_state_dict(opt_state)
                sched = OneCycleLR(opt, max_lr=1.0, total_steps=20)
                sched.load_state_dict(state)
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        return lrs
    assert run(resume_at=7) == run(resume_at=-1)


# -- CosineAnnealingWarmRestarts, SequentialLR, ChainedScheduler --------------------------------

COMPOSED = [
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda L, o: L.SequentialLR(o, [L.LinearLR(o, 0.1, total_iters=4), L.ExponentialLR(o, 0.9)],
                                milestones=[5]),
    lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, 0.5, total_iters=2), L.CosineAnnealingLR(o, 6),
                                    L.StepLR(o, 3, 0.5)], milestones=[3, 9]),
    lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, 0.5, total_iters=2)], milestones=[3]),
    lambda L, o: L.ChainedScheduler([L.ConstantLR(o, 0.5, total_iters=4), L.ExponentialLR(o, 0.9)]),
    lambda L, o: L.ChainedScheduler([L.LinearLR(o, 0.2, total_iters=5), L.MultiStepLR(o, [3, 7], 0.5)],
                                    optimizer=o),
    lambda L, o: L.ChainedScheduler([]),
    lambda L, o: L.ChainedScheduler([L.ReduceLROnPlateau(o)]),
]


@pytest.mark.parametrize("case", range(len(COMPOSED)))
def test_composed_and_restart_schedulers_match_torch(torch, case):
    make = COMPOSED[case]
    assert _trace(tg, make, 30) == _trace(torch, make, 30)


def test_warm_restarts_fractional_epochs_match_torch(torch):
    def run(lib):
        opt = _optimizer(lib, groups=1)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (0.5, 1.25, 3.0, 7.5, 9.0, 22.0, 2.0):
                opt.step()
                sched.step(epoch)
                out.append((sched.get_last_lr(), sched.T_i, sched.T_cur, sched.last_epoch))
        return out
    assert run(tg) == run(torch)


def test_warm_restarts_values_and_sequential_state_round_trip():
    opt = _optimizer(tg, groups=1)
    sched = tg.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    lrs = []
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    # periods of 2 then 4 epochs: restart to the initial lr at epochs 2 and 6
    assert lrs == pytest.approx([0.05, 0.1, 0.1 * (1 + math.cos(math.pi / 4)) / 2, 0.05,
                                 0.1 * (1 + math.cos(3 * math.pi / 4)) / 2, 0.1])
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)

    def build():
        opt = _optimizer(tg, groups=1)
        L = tg.optim.lr_scheduler
        return opt, L.SequentialLR(opt, [L.ConstantLR(opt, 0.5, total_iters=2),
                                         L.ExponentialLR(opt, 0.9)], milestones=[3])
    opt, seq = build()
    for _ in range(4):
        opt.step()
        seq.step()
    state = seq.state_dict()
    assert [type(s) for s in state["_schedulers"]] == [dict, dict]
    opt2, seq2 = build()
    seq2.load_state_dict(state)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    for _ in range(3):
        for o, s in ((opt, seq), (opt2, seq2)):
            o.step()
            s.step()
    assert seq2.get_last_lr() == seq.get_last_lr()


# -- CyclicLR -------------------------------------------------------------------------------------

CYCLIC = [
    ("SGD", {"momentum": 0.9}, lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4)),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=3,
                                                       step_size_down=5, mode="triangular2")),
    ("Adam", {}, lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range",
                                         gamma=0.95)),
    ("SGD", {}, lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, cycle_momentum=False,
                                        scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")),
    ("SGD", {}, lambda L, o: L.CyclicLR(o, 0.01, 0.1)),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.CyclicLR(o, 0.01, 0.1, mode="foo")),
    ("SGD", {"momentum": 0.9}, lambda L, o: L.CyclicLR(o, [0.01], 0.1)),
]


@pytest.mark.parametrize("case", range(len(CYCLIC)))
def test_cyclic_matches_torch(torch, case):
    name, kwargs, make = CYCLIC[case]
    assert _trace(tg, make, 40, name, **kwargs) == _trace(torch, make, 40, name, **kwargs)


def test_cyclic_triangle_values():
    opt = _optimizer(tg, groups=1, momentum=0.9)
    sched = tg.optim.lr_scheduler.CyclicLR(opt, 0.0, 1.0, step_size_up=2, step_size_down=2,
                                           mode="triangular2")
    lrs = [sched.get_last_lr()[0]]
    for _ in range(8):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0, 0.25, 0.5, 0.25, 0.0])
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9)
