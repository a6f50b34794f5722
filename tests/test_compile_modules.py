"""tapegrad.compile of code that calls nn.Modules: a capture made in one training mode never
replays in the other, and module state written during forward (BatchNorm's batch counter) is
written at every call where forward reads it (BatchNorm's batch counter with momentum=None)."""
from __future__ import annotations

import pytest

import tapegrad as tg

nn = tg.nn


def _dropout_net():
    tg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))


def test_compiled_module_follows_eval_and_train():
    net = _dropout_net()
    compiled = tg.compile(net)
    x = tg.randn(8, 4)
    for _ in range(3):
        compiled(x)
    net.eval()
    for _ in range(2):              # eval is deterministic: each call equals the eager one
        assert tg.equal(compiled(x), net(x))
    net.train()
    outs = [compiled(x) for _ in range(2)]
    assert not tg.equal(outs[0], outs[1])       # dropout again, a fresh mask per call


def test_compiled_closure_over_a_module_follows_eval():
    net = _dropout_net()

    @tg.compile
    def total(x):
        return net(x).sum()

    x = tg.randn(8, 4)
    for _ in range(3):
        total(x)
    net.eval()
    assert total(x).item() == net(x).sum().item()


def test_compiled_bound_forward_follows_a_submodule_flag():
    net = _dropout_net()
    compiled = tg.compile(net.forward)
    x = tg.randn(8, 4)
    for _ in range(3):
        compiled(x)
    net[1].eval()                   # only the dropout layer switches
    assert tg.equal(compiled(x), net(x))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_compiled_batchnorm_matches_eager(momentum):
    def run(compiled):
        tg.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, momentum=momentum))
        f = tg.compile(net) if compiled else net
        x = tg.randn(8, 4)
        for i in range(4):
            y = f(x * (i + 1))
        bn = net[1]
        return bn.num_batches_tracked.item(), bn.running_mean, bn.running_var, y

    eager, compiled = run(False), run(True)
    if momentum is None:
        # the cumulative average weighs batch k by 1/k: the count must advance at every call
        assert compiled[0] == eager[0] == 4
    for a, b in zip(eager[1:], compiled[1:]):
        assert tg.equal(a.detach(), b.detach())
