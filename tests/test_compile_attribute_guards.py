"""tapegrad.compile guards what a function reaches through attributes, `self` and its defaults.

SILENT before: a capture bakes in the numbers it combined with tensors and holds the tensors and
submodules it ran, but the environment guard only followed names (closure cells, globals).  A
compiled model kept replaying its capture after `model.temp = 0.5`, after a global its forward
reads changed, after `model.fc = nn.Linear(...)` or a new Parameter in `model.fc.weight`; a
function kept `Config.lr`, `cfg.a`, `self.w` and `f.__defaults__` as they were at capture.  Each
case here changes one of those after a few replays and checks the compiled call against the
eager one (which is what torch.compile's guards give), and that the replay resumes afterwards.
"""
import sys
import types

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn


def _settle(compiled, *args):
    """Capture, then replay twice."""
    for _ in range(3):
        out = compiled(*args)
    return out


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a.detach()), np.asarray(b.detach()))


def _stats(compiled):
    return dict(getattr(compiled, "_compiled_call", compiled).stats)


SCALE = 2.0


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.temp = 1.5

    def forward(self, x):
        return self.fc(x).sum() * SCALE / self.temp


@pytest.fixture
def x():
    tg.manual_seed(0)
    return tg.randn(4, 3, requires_grad=True)


def test_module_forward_reads_a_global(x):
    global SCALE
    net = _Net()
    compiled = tg.compile(net)
    _settle(compiled, x)
    try:
        SCALE = 3.0
        _same(compiled(x), net(x))
    finally:
        SCALE = 2.0
    _same(compiled(x), net(x))


def test_module_attribute_number(x):
    net = _Net()
    compiled = tg.compile(net)
    _settle(compiled, x)
    net.temp = 0.5
    _same(compiled(x), net(x))
    before = _stats(compiled)["captures"]
    compiled(x), compiled(x)
    assert _stats(compiled)["captures"] == before      # replays again after one recapture


def test_submodule_and_parameter_rebound(x):
    net = _Net()
    compiled = tg.compile(net)
    _settle(compiled, x)
    net.fc = nn.Linear(3, 2)
    _same(compiled(x), net(x))
    net.fc.weight = nn.Parameter(tg.full((2, 3), 0.25))
    out, ref = compiled(x), net(x)
    _same(out, ref)
    out.backward()
    assert net.fc.weight.grad is not None             # the new Parameter gets the gradient


def test_module_converted_to_double(x):
    net = _Net()
    compiled = tg.compile(net)
    _settle(compiled, x)
    net.double()
    xd = x.detach().double()
    out = compiled(xd)
    assert out.dtype == tg.float64
    _same(out, net(xd))


def test_class_attribute_and_shadowing_instance_attribute(x):
    class Cfg:
        lr = 2.0

    def f(t):
        return (t * Cfg.lr).sum()

    compiled = tg.compile(f)
    _settle(compiled, x)
    Cfg.lr = 4.0
    _same(compiled(x), f(x))

    class Scaler:
        factor = 3.0

        def run(self, t):
            return (t * self.factor).sum()

    s = Scaler()
    compiled = tg.compile(s.run)
    _settle(compiled, x)
    s.factor = 5.0                                     # an instance attribute now shadows it
    _same(compiled(x), s.run(x))
    del s.factor
    Scaler.factor = 7.0
    _same(compiled(x), s.run(x))


def test_namespace_and_nested_attribute_subscript(x):
    cfg = types.SimpleNamespace(a=1.0, opt={"lr": 0.5})

    def g(t):
        return (t + cfg.a).sum() * cfg.opt["lr"]

    compiled = tg.compile(g)
    _settle(compiled, x)
    cfg.a = 10.0
    _same(compiled(x), g(x))
    cfg.opt["lr"] = 0.25
    _same(compiled(x), g(x))
    cfg.opt = {"lr": 2.0}
    _same(compiled(x), g(x))


def test_user_module_attribute(x, tmp_path, monkeypatch):
    (tmp_path / "tg_settings_mod.py").write_text("beta = 0.9\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tg_settings_mod as settings
    try:
        def h(t):
            return (t * settings.beta).sum()

        compiled = tg.compile(h)
        _settle(compiled, x)
        settings.beta = 0.5
        _same(compiled(x), h(x))
    finally:
        sys.modules.pop("tg_settings_mod", None)


def test_defaults_and_keyword_defaults(x):
    def f(t, s=2.0):
        return (t * s).sum()

    compiled = tg.compile(f)
    _settle(compiled, x)
    f.__defaults__ = (5.0,)
    _same(compiled(x), f(x))

    def k(t, *, s=2.0):
        return (t * s).sum()

    compiled = tg.compile(k)
    _settle(compiled, x)
    k.__kwdefaults__["s"] = 3.0
    _same(compiled(x), k(x))


def test_method_called_on_self_and_submodule_forward(x):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = 2.0

        def forward(self, t):
            return t * self.gain

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.bias = 1.0

        def shift(self, t):
            return t + self.bias

        def forward(self, t):
            return self.shift(self.block(t)).sum()

    net = Net()
    compiled = tg.compile(net)
    _settle(compiled, x)
    net.block.gain = -1.0                              # read by the submodule's own forward
    _same(compiled(x), net(x))
    net.bias = 4.0                                     # read by a method forward calls
    _same(compiled(x), net(x))


def test_global_model_inside_a_function(x):
    model = _Net()

    def loss(t):
        return model(t) * 2

    compiled = tg.compile(loss)
    _settle(compiled, x)
    model.temp = 3.0
    _same(compiled(x), loss(x))


def test_matches_torch_after_an_attribute_change():
    torch = pytest.importorskip("torch")

    def run(lib):
        net = lib.nn.Linear(3, 1)
        with lib.no_grad():                            # (the random streams differ)
            net.weight.copy_(lib.tensor([[0.5, -1.0, 0.25]]))
            net.bias.fill_(0.125)
        holder = types.SimpleNamespace(scale=2.0)

        def f(t):
            return (net(t) * holder.scale).sum()

        # (PyTorch's eager calls: torch.compile's guards give the same values, and running
        # dynamo here would patch torch.nn.Module for the tests that run after this one)
        compiled = f if lib is torch else lib.compile(f)
        t = lib.ones(2, 3)
        outs = [compiled(t).item() for _ in range(3)]
        holder.scale = -3.0
        outs += [compiled(t).item() for _ in range(2)]
        return outs

    assert run(tg) == pytest.approx(run(torch), rel=1e-6)


def test_module_passed_as_an_argument_eval_and_attributes(x):
    """SILENT: `train_step(model, batch)` compiled kept dropping out after model.eval() (the
    Module argument was keyed by identity, but nothing of its state was guarded)."""
    tg.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5))

    @tg.compile
    def step(model, t):
        return model(t).sum()

    _settle(step, net, x)
    net.eval()
    ref = net(x).sum()
    for _ in range(3):
        _same(step(net, x), ref)

    model = _Net()
    compiled = tg.compile(lambda m, t: m(t) * 2)
    _settle(compiled, model, x)
    model.temp = 0.25
    _same(compiled(model, x), model(x) * 2)
    model.fc = nn.Linear(3, 2)
    _same(compiled(model, x), model(x) * 2)


def test_plain_object_argument_attribute(x):
    class Holder:                                      # no __eq__: the signature holds it by id
        def __init__(self):
            self.k = 2.0

    holder = Holder()

    @tg.compile
    def f(h, t):
        return (t * h.k).sum()

    _settle(f, holder, x)
    holder.k = -1.0
    _same(f(holder, x), (x * -1.0).sum())


def test_python_and_numpy_random_draws_run_eagerly(x):
    """SILENT: a compiled step drawing from Python's or numpy's random numbers (mixup's
    `lam = np.random.beta(a, a)`, `if random.random() < p`, a Generator it reads) replayed the
    number or branch of its capture at every call."""
    import random

    @tg.compile
    def mixup(t):
        lam = np.random.beta(0.4, 0.4)
        return (t * lam).sum()

    np.random.seed(0)
    got = [mixup(x).item() for _ in range(4)]
    np.random.seed(0)
    want = [(x * np.random.beta(0.4, 0.4)).sum().item() for _ in range(4)]
    assert got == want
    assert "random" in mixup.explain()

    @tg.compile
    def branch(t):
        return t * 2 if random.random() < 0.5 else t * 3

    random.seed(1)
    got = [branch(x)[0, 0].item() for _ in range(8)]
    random.seed(1)
    want = [(x * 2 if random.random() < 0.5 else x * 3)[0, 0].item() for _ in range(8)]
    assert got == want

    rng = np.random.default_rng(0)

    @tg.compile
    def noisy(t):
        return (t * rng.normal()).sum()

    got = [noisy(x).item() for _ in range(3)]
    assert len(set(got)) == 3


def test_tapegrad_random_ops_still_replay(x):
    @tg.compile
    def f(t):
        return tg.nn.functional.dropout(t, 0.5).sum() + tg.rand(3).sum()

    for _ in range(4):
        f(x)
    assert f.stats["replays"] == 3


def test_python_side_effects_happen_at_every_call(x, capsys):
    """SILENT: a replay skipped the Python the function runs besides its ops: a compiled step
    that printed its loss printed once, `losses.append(...)` kept one entry, a call counter in a
    dict or on an object stayed at 1.  PyTorch (eager, and torch.compile) does them each call."""
    losses, counter = [], {"n": 0}

    class Tracker:
        calls = 0

    tracker = Tracker()

    @tg.compile
    def step(t):
        loss = (t * 2).sum()
        losses.append(loss.item())
        counter["n"] += 1
        tracker.calls += 1
        return loss

    for _ in range(4):
        step(x)
    assert len(losses) == 4 and counter["n"] == 4 and tracker.calls == 4
    assert "reads from outside" in step.explain()

    @tg.compile
    def loud(t):
        print("loss", round((t * 3).sum().item(), 3))
        return t.sum()

    capsys.readouterr()
    for _ in range(3):
        loud(x)
    assert capsys.readouterr().out.count("loss") == 3


def test_state_stored_on_self_in_forward(x):
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 3)
            self.last = None

        def forward(self, t):
            self.last = self.proj(t).softmax(-1)
            return self.last.sum()

    model = Attn()
    compiled = tg.compile(model)
    for _ in range(3):
        t = tg.randn(4, 3)
        compiled(t)
        _same(model.last, model.proj(t).softmax(-1))   # the attention of this call


def test_a_cache_filled_on_first_use_still_replays(x):
    """A rotary table or mask built on the first call changes state once: the second call
    captures again, finds nothing changed, and later calls replay."""
    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = None

        def forward(self, t):
            if self.table is None:
                self.table = tg.arange(3.0) * 0.5
            return (t * self.table).sum()

    model = Rotary()
    compiled = tg.compile(model)
    for _ in range(5):
        _same(compiled(x), (x * (tg.arange(3.0) * 0.5)).sum())
    stats = compiled._compiled_call.stats
    assert stats["captures"] == 2 and stats["replays"] == 3


def test_module_hooks_run_at_every_call():
    """SILENT: compile(model) replayed without running the model's hooks: a feature extractor's
    forward hook kept the first call's activation, a pre-hook counter stayed at 1, a hook
    registered after the capture never ran."""
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    acts, calls = {}, []
    net[0].register_forward_hook(lambda m, i, o: acts.__setitem__("l0", o))
    net[2].register_forward_pre_hook(lambda m, i: calls.append(1))
    compiled = tg.compile(net)
    for k in range(3):
        t = tg.randn(2, 3)
        compiled(t)
        _same(acts["l0"], net[0](t))
        assert len(calls) == k + 1

    plain = nn.Sequential(nn.Linear(3, 2))
    compiled = tg.compile(plain)
    t = tg.randn(2, 3)
    _settle(compiled, t)
    handle = plain[0].register_forward_hook(lambda m, i, o: o * 2)   # added after the capture
    _same(compiled(t), plain(t))
    np.testing.assert_allclose(np.asarray(compiled(t).detach()),
                               2 * np.asarray(plain[0].weight.detach() @ t.detach().T
                                              ).T + 2 * np.asarray(plain[0].bias.detach()),
                               rtol=1e-6)
    before = compiled._compiled_call.stats["replays"]
    compiled(t)
    assert compiled._compiled_call.stats["replays"] == before + 1   # a tensor-only hook replays
    handle.remove()
    _same(compiled(t), plain(t))
