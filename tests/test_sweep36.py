"""sweep36: PyTorch's hand-written lr-scheduler and swa_utils tests (test/optim/test_lrscheduler.py,
test/optim/test_swa_utils.py), cases found differing from torch, each compared with torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _lr(v):
    return float(v)


# -- SWALR: a tensor swa_lr is copied into the param groups, never aliased (SILENT) ---------------

def _swalr_tensor_swa_lr_run(lib):
    lr = lib.as_tensor(0.1)
    swa_lr = lib.as_tensor(0.05)
    opt = lib.optim.SGD([lib.nn.Parameter(lib.tensor([0.3]))], lr=lr)
    sched = lib.optim.swa_utils.SWALR(opt, swa_lr=swa_lr, anneal_epochs=4)
    seen = []
    for _ in range(3):
        swa_lr.mul_(0.5)        # the caller's tensor changes; the schedule's target must not
        opt.step()
        sched.step()
        g = opt.param_groups[0]
        seen.append((_lr(g["lr"]), _lr(g["swa_lr"])))
    return seen, opt.param_groups[0]["swa_lr"] is swa_lr


def test_swalr_tensor_swa_lr_not_aliased():
    got, aliased = _swalr_tensor_swa_lr_run(tg)
    want, want_aliased = _swalr_tensor_swa_lr_run(torch)
    assert aliased == want_aliased is False
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_swalr_per_group_tensor_swa_lrs_not_aliased():
    for lib in (tg, torch):
        a, b = lib.as_tensor(0.01), lib.as_tensor(0.02)
        opt = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.zeros(1))]},
                             {"params": [lib.nn.Parameter(lib.zeros(1))]}], lr=0.1)
        lib.optim.swa_utils.SWALR(opt, swa_lr=[a, b])
        assert opt.param_groups[0]["swa_lr"] is not a
        assert opt.param_groups[1]["swa_lr"] is not b
        a.fill_(7.0)
        assert float(opt.param_groups[0]["swa_lr"]) == pytest.approx(0.01)


# -- SWALR.get_lr() outside step() warns, like every other scheduler -------------------------------

def test_swalr_get_lr_outside_step_warns():
    for lib in (tg, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.01)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt.step()
            sched.step()            # inside step(): no warning


# -- EMA averaging functions reject a decay outside [0, 1] ----------------------------------------

@pytest.mark.parametrize("name", ["get_ema_avg_fn", "get_ema_multi_avg_fn"])
@pytest.mark.parametrize("decay", [-0.1, 1.5])
def test_ema_fns_reject_bad_decay(name, decay):
    with pytest.raises(ValueError, match="Invalid decay value"):
        getattr(torch.optim.swa_utils, name)(decay)
    with pytest.raises(ValueError, match="Invalid decay value"):
        getattr(tg.optim.swa_utils, name)(decay)

