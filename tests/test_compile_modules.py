"""tapegrad.compile of code that calls nn.Modules: a capture made in one training mode never
replays in the other, and module state written during forward (BatchNorm's batch counter) is
written at every call, as eager writes it (BatchNorm's batch counter)."""
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
    # the count advances at every call (state_dict holds it; momentum=None weighs batch k by 1/k)
    assert compiled[0] == eager[0] == 4
    for a, b in zip(eager[1:], compiled[1:]):
        assert tg.equal(a.detach(), b.detach())


def _outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return (type(exc).__name__, str(exc))


# -- torch.compile's calling conventions (`model = torch.compile(model)`) ----------------------
def _compile_outcomes(lib):
    net = lib.nn.Sequential(lib.nn.Linear(3, 2))
    out = []
    compiled = lib.compile(net, mode="reduce-overhead", fullgraph=True, dynamic=False)
    out.append(type(compiled).__name__)
    out.append(list(compiled.state_dict()))
    out.append([n for n, _ in compiled.named_parameters()])
    out.append(compiled._orig_mod is net)
    out.append(compiled.get_submodule("_orig_mod.0") is net[0])
    out.append(_outcome(lambda: compiled[0]))       # not a Sequential itself
    net.add_module("head", lib.nn.Identity())
    out.append(compiled.head is net.head)           # attribute reads reach the wrapped module
    compiled.eval()
    out.append((compiled.training, net.training, net[0].training))
    out.append(repr(compiled))
    out.append(lib.compile(net, disable=True) is net)
    for kwargs in ({"mode": "bogus"}, {"mode": "default", "options": {"x": 1}}):
        try:
            lib.compile(net, **kwargs)
            out.append("ok")
        except RuntimeError as exc:
            out.append(str(exc))
    return out


def test_torch_compile_conventions_match_torch(torch):
    # (its first torch.compile switches off torch.distributions' default argument validation:
    # conftest's torch_validates_distribution_args restores it after each test)
    expected = _compile_outcomes(torch)
    assert _compile_outcomes(tg) == expected


def test_compiled_module_trains_as_the_eager_module():
    def run(compiled):
        tg.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1))
        model = tg.compile(net) if compiled else net
        opt = tg.optim.SGD(model.parameters(), lr=0.1)
        x, y = tg.linspace(-1, 1, 32).reshape(8, 4), tg.linspace(0, 1, 8).reshape(8, 1)
        losses = []
        for step in range(4):
            tg.manual_seed(step)
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        return losses, model(x)

    (eager_losses, eager_eval), (losses, evaluated) = run(False), run(True)
    assert losses == eager_losses
    assert tg.equal(evaluated, eager_eval)


def test_compile_decorator_forms_accept_torch_settings():
    @tg.compile(mode="max-autotune", fullgraph=True)
    def double(x):
        return x * 2

    @tg.compile
    def triple(x):
        return x * 3

    assert double(tg.ones(2)).tolist() == [2.0, 2.0]
    assert triple(tg.ones(2)).tolist() == [3.0, 3.0]


def test_compiled_batchnorm_in_eval_still_replays():
    tg.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU()).eval()
    compiled = tg.compile(lambda x: net(x))
    x = tg.randn(8, 4)
    for i in range(3):
        assert tg.equal(compiled(x * (i + 1)), net(x * (i + 1)))
    assert compiled.stats["replays"] == 2, compiled.explain()
