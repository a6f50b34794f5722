"""optim.swa_utils: AveragedModel (SWA running mean, EMA by avg_fn and multi_avg_fn, buffers),
SWALR's schedule and update_bn, against torch; hand values without torch."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.optim import swa_utils


def _train_and_average(lib, state, data):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    su = lib.optim.swa_utils
    averaged = [su.AveragedModel(model),
                su.AveragedModel(model, multi_avg_fn=su.get_ema_multi_avg_fn(0.9)),
                su.AveragedModel(model, avg_fn=su.get_ema_avg_fn(0.8), use_buffers=True)]
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    sched = su.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
    lrs = []
    for _ in range(4):
        for x, y in data:
            opt.zero_grad()
            ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
            opt.step()
        for a in averaged:
            a.update_parameters(model)
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    su.update_bn([(lib.tensor(x), lib.tensor(y)) for x, y in data], averaged[0])
    states = [{k: v.detach().numpy().copy() for k, v in a.state_dict().items()}
              for a in averaged]
    return lrs, states, repr(averaged[0])


def test_averaged_models_and_update_bn_match_torch(torch):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                              torch.nn.Linear(4, 1))
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    rng = np.random.default_rng(0)
    data = [(rng.standard_normal((8, 3)).astype(np.float32),
             rng.standard_normal((8, 1)).astype(np.float32)) for _ in range(3)]
    ours, theirs = _train_and_average(tg, state, data), _train_and_average(torch, state, data)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for mine, expected in zip(ours[1], theirs[1]):
        assert list(mine) == list(expected)
        for key in expected:
            np.testing.assert_allclose(mine[key], expected[key], rtol=1e-5, atol=1e-6)
    assert ours[2] == theirs[2]


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 5])
def test_swalr_schedule_matches_torch(torch, strategy, anneal_epochs):
    runs = []
    for lib in (tg, torch):
        p, q = lib.nn.Parameter(lib.zeros(1)), lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, [0.1, 0.2], anneal_epochs=anneal_epochs,
                                          anneal_strategy=strategy)
        lrs = []
        for _ in range(7):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        runs.append(lrs)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12)


def test_swa_running_mean_and_errors_without_torch():
    model = tg.nn.Linear(1, 1, bias=False)
    swa = swa_utils.AveragedModel(model)
    for value in (1.0, 2.0, 6.0):
        with tg.no_grad():
            model.weight.fill_(value)
        swa.update_parameters(model)
    assert swa.module.weight.item() == pytest.approx(3.0) and swa.n_averaged.item() == 3
    assert list(swa.state_dict()) == ["n_averaged", "module.weight"]
    assert swa(tg.ones(1, 1)).item() == pytest.approx(3.0)
    opt = tg.optim.SGD(model.parameters(), lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
    swa_utils.update_bn([tg.ones(2, 1)], model)           # no BatchNorm: nothing to do
