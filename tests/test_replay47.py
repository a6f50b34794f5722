"""Issue 19, the whole training step under tapegrad.compile (replay47): zero_grad(), the
forward, backward() and an optimizer's step() in one compiled function.  The forward replays in
C; backward() and the optimizer's calls run after it as phases (tapegrad/_step_phases.py), the
optimizer's own update.  Compiled equals eager bit for bit over several calls (losses,
parameters, gradients, optimizer state), both follow PyTorch, and every way the step could go
stale (a changed lr, a new parameter, set_to_none switched, gradients touched outside, a
rebound optimizer) either re-captures, runs eagerly, or is read at each call."""
import numpy as np
import pytest

import tapegrad as tg

STEPS = 4


def _torch():
    return pytest.importorskip("torch")


def _bits(t):
    return None if t is None else np.array(t.detach().numpy(), copy=True)


def _same_bits(a, b):
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _state(opt):
    """The optimizer's state as arrays and numbers, parameter by parameter, key by key."""
    out = []
    for group in opt.param_groups:
        for p in group["params"]:
            for key, value in sorted(opt.state.get(p, {}).items()):
                out.append((key, _bits(value) if hasattr(value, "detach") else value))
    return out


def _snapshot(loss, model, opt):
    return {"loss": _bits(loss),
            "params": [_bits(p) for p in model.parameters()],
            "grads": [_bits(p.grad) for p in model.parameters()],
            "state": _state(opt)}


def _assert_same(eager, compiled):
    assert len(eager) == len(compiled)
    for i, (e, c) in enumerate(zip(eager, compiled)):
        assert _same_bits(e["loss"], c["loss"]), f"call {i}: loss"
        for j, (a, b) in enumerate(zip(e["params"], c["params"])):
            assert _same_bits(a, b), f"call {i}: parameter {j}"
        for j, (a, b) in enumerate(zip(e["grads"], c["grads"])):
            assert _same_bits(a, b), f"call {i}: grad {j}"
        assert len(e["state"]) == len(c["state"])
        for (k1, a), (k2, b) in zip(e["state"], c["state"]):
            assert k1 == k2
            assert _same_bits(a, b) if isinstance(a, np.ndarray) else a == b, f"call {i}: {k1}"


def _assert_close(reference, ours, dtype):
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (2e-5, 1e-6)
    for r, o in zip(reference, ours):
        np.testing.assert_allclose(o["loss"], r["loss"], rtol=rtol, atol=atol)
        for a, b in zip(r["params"] + r["grads"], o["params"] + o["grads"]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def _model(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1))
    m = m.to(getattr(lib, dtype))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape))))
    return m


def _data(lib, dtype, i):
    rng = np.random.default_rng(100 + i)
    return (lib.tensor(rng.standard_normal((16, 4)), dtype=getattr(lib, dtype)),
            lib.tensor(rng.standard_normal((16, 1)), dtype=getattr(lib, dtype)))


def _train(lib, dtype, make_opt, compiled=False, set_to_none=True, zero=True,
           between=None, steps=STEPS):
    """Snapshots after each call of a whole step; `between(i, model, opt)` runs before call i."""
    m = _model(lib, dtype)
    opt = make_opt(lib, m)

    def step(x, y):
        if zero:
            opt.zero_grad(set_to_none=set_to_none)
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    f = lib.compile(step) if compiled else step
    out = []
    for i in range(steps):
        if between is not None:
            between(i, m, opt)
        x, y = _data(lib, dtype, i)
        out.append(_snapshot(f(x, y), m, opt))
    return out, f


OPTIMIZERS = {
    "sgd": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1),
    "sgd-momentum": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                                                 dampening=0.1, weight_decay=0.01),
    "sgd-nesterov-max": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.8,
                                                     nesterov=True, maximize=True),
    "adam": lambda lib, m: lib.optim.Adam(m.parameters(), lr=0.01),
    "adam-amsgrad": lambda lib, m: lib.optim.Adam(m.parameters(), lr=0.01, amsgrad=True,
                                                  weight_decay=0.1),
    "adamw-amsgrad": lambda lib, m: lib.optim.AdamW(m.parameters(), lr=0.01, amsgrad=True),
    "rmsprop": lambda lib, m: lib.optim.RMSprop(m.parameters(), lr=0.01),
    "rmsprop-centered": lambda lib, m: lib.optim.RMSprop(m.parameters(), lr=0.01, momentum=0.5,
                                                         centered=True, weight_decay=0.01),
    "adagrad": lambda lib, m: lib.optim.Adagrad(m.parameters(), lr=0.1, lr_decay=0.01),
    "groups": lambda lib, m: lib.optim.SGD(
        [{"params": m[0].parameters(), "lr": 0.2}, {"params": m[2].parameters()}],
        lr=0.05, momentum=0.9),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_whole_step_replays_bit_for_bit(name, dtype):
    torch = _torch()
    eager, _ = _train(tg, dtype, OPTIMIZERS[name])
    compiled, f = _train(tg, dtype, OPTIMIZERS[name], compiled=True)
    _assert_same(eager, compiled)
    assert f.stats["replays"] == STEPS - 1, f.explain()
    assert "then " in f.explain() and "backward()" in f.explain(), f.explain()
    reference, _ = _train(torch, dtype, OPTIMIZERS[name])
    _assert_close(reference, compiled, dtype)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_none_or_zeros_and_accumulation(set_to_none):
    """A parameter the forward does not use keeps the .grad zero_grad leaves it: None, or
    zeros (the same tensor); without zero_grad the gradients add up over calls."""
    torch = _torch()

    def run(lib, compiled, zero):
        m = _model(lib, "float32")
        unused = lib.nn.Parameter(lib.ones(3))
        unused.grad = lib.ones(3)
        held = unused.grad
        opt = lib.optim.SGD(list(m.parameters()) + [unused], lr=0.1, momentum=0.5)

        def step(x, y):
            if zero:
                opt.zero_grad(set_to_none=set_to_none)
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(STEPS):
            out.append(_snapshot(f(*_data(lib, "float32", i)), m, opt))
            out[-1]["unused"] = _bits(unused.grad)
            out[-1]["held"] = unused.grad is held
        return out, f

    for zero in (True, False):
        eager, _ = run(tg, False, zero)
        compiled, f = run(tg, True, zero)
        _assert_same(eager, compiled)
        assert [c["unused"] is None for c in compiled] == [e["unused"] is None for e in eager]
        assert [c["held"] for c in compiled] == [e["held"] for e in eager]
        assert all(_same_bits(e["unused"], c["unused"]) for e, c in zip(eager, compiled))
        assert f.stats["replays"] == STEPS - 1
        reference, _ = run(torch, False, zero)
        _assert_close(reference, compiled, "float32")
        assert [r["unused"] is None for r in reference] == [c["unused"] is None
                                                             for c in compiled]


def test_lr_scheduler_between_calls_is_honoured():
    """The optimizer's step reads lr from its groups at each call (a scheduler's change)."""
    torch = _torch()

    def run(lib, compiled):
        sched = []

        def between(i, m, opt):
            if not sched:
                sched.append(lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5))
            elif i:
                sched[0].step()
        return _train(lib, "float64", OPTIMIZERS["adam"], compiled=compiled, between=between)

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert f.stats["replays"] == STEPS - 1
    _assert_close(run(torch, False)[0], compiled, "float64")
    # a changed lr really changes the update: the same run without the scheduler differs
    plain, _ = _train(tg, "float64", OPTIMIZERS["adam"], compiled=True)
    assert not _same_bits(plain[-1]["params"][0], compiled[-1]["params"][0])


def test_param_group_added_between_calls():
    """A parameter added to the optimizer between calls is updated from the next call on."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        scale = lib.nn.Parameter(lib.tensor([1.5]))
        opt = lib.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) * scale - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(STEPS):
            if i == 2:
                opt.add_param_group({"params": [scale], "lr": 0.3})
            out.append(_snapshot(f(*_data(lib, "float32", i)), m, opt))
            out[-1]["scale"] = _bits(scale)
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert [c["scale"].tolist() for c in compiled] == [e["scale"].tolist() for e in eager]
    assert compiled[1]["scale"].tolist() == [1.5] and compiled[3]["scale"].tolist() != [1.5]
    reference, _ = run(torch, False)
    np.testing.assert_allclose(compiled[-1]["scale"], reference[-1]["scale"], rtol=1e-5)


def test_set_to_none_switched_recaptures():
    """zero_grad's set_to_none read from the closure: switching it is a new capture (the
    phase would otherwise keep the captured value: None where eager now leaves zeros)."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        unused = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD(list(m.parameters()) + [unused], lr=0.1)
        flag = True

        def step(x, y):
            opt.zero_grad(set_to_none=flag)
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        seen = []
        for i in range(6):
            if i == 3:
                flag = False
            unused.grad = lib.full((2,), 2.0)
            f(*_data(lib, "float32", i))
            seen.append(None if unused.grad is None else unused.grad.tolist())
        return seen, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    assert compiled == eager == run(torch, False)[0]
    assert compiled == [None] * 3 + [[0.0, 0.0]] * 3
    assert f.stats["captures"] == 2 and f.stats["replays"] == 4


def test_grads_touched_outside():
    """Without zero_grad the step adds to whatever .grad holds: a gradient scaled, replaced or
    dropped between calls is what the replayed backward accumulates into, as eager."""
    torch = _torch()

    def between(i, m, opt):
        w = m[0].weight
        if i == 1:
            w.grad.mul_(3)
        elif i == 2:
            w.grad = None
        elif i == 3:
            m[2].bias.grad = m[2].bias.grad.clone() + 1

    eager, _ = _train(tg, "float64", OPTIMIZERS["sgd-momentum"], zero=False, between=between)
    compiled, f = _train(tg, "float64", OPTIMIZERS["sgd-momentum"], compiled=True, zero=False,
                         between=between)
    _assert_same(eager, compiled)
    assert f.stats["replays"] == STEPS - 1
    reference, _ = _train(torch, "float64", OPTIMIZERS["sgd-momentum"], zero=False,
                          between=between)
    _assert_close(reference, compiled, "float64")


def test_rebound_optimizer_recaptures():
    """Another optimizer bound to the name the step reads is a new capture, not the old one's
    phases."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        box = {"opt": lib.optim.SGD(m.parameters(), lr=0.1)}
        opt = box["opt"]

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(STEPS):
            if i == 2:
                opt = lib.optim.Adam(m.parameters(), lr=0.01)
            out.append(_snapshot(f(*_data(lib, "float32", i)), m, opt))
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert f.stats["captures"] == 2, f.stats
    _assert_close(run(torch, False)[0], compiled, "float32")


def _step_variant(lib, kind):
    m = _model(lib, "float32")
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    if kind == "zero-override":
        class Quiet(lib.optim.SGD):
            def zero_grad(self, set_to_none=True):
                super().zero_grad(set_to_none)
                for g in self.param_groups:
                    g["lr"] *= 0.5
        opt = Quiet(m.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        if kind == "grad-op":
            with lib.no_grad():
                m[0].weight.grad.mul_(m[0].weight.grad.abs().max())
        opt.step()
        if kind == "after":
            return loss, m[0].weight.sum()
        return loss
    return m, opt, step


@pytest.mark.parametrize("kind,reason", [
    ("grad-op", "after backward()"), ("after", "after backward()"),
    ("zero-override", "overrides the library's")])
def test_steps_a_replay_cannot_follow_stay_eager(kind, reason):
    """Ops after backward() (on a gradient, a parameter read after the step), an optimizer
    subclass's own zero_grad around the library's (its code would be skipped): the function
    runs eagerly (explain() says why) with eager's results."""
    torch = _torch()

    def run(lib, compiled):
        m, opt, step = _step_variant(lib, kind)
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(3):
            r = f(*_data(lib, "float32", i))
            out.append(_snapshot(r[0] if isinstance(r, tuple) else r, m, opt))
            out[-1]["lr"] = opt.param_groups[0]["lr"]
            if isinstance(r, tuple):
                out[-1]["after"] = _bits(r[1])
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert [e["lr"] for e in eager] == [c["lr"] for c in compiled]
    if kind == "after":
        assert all(_same_bits(e["after"], c["after"]) for e, c in zip(eager, compiled))
    assert f.stats["replays"] == 0 and reason in f.explain(), f.explain()
    _assert_close(run(torch, False)[0], compiled, "float32")


def test_optimizer_subclass_step_replays_whole():
    """A script's optimizer subclass with its own step (calling super().step()): the phase is
    its whole step, its own code included, at every replay."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float64")

        class Counting(lib.optim.SGD):
            calls = 0

            def step(self, closure=None):
                type(self).calls += 1
                for g in self.param_groups:
                    g["lr"] = 0.1 / type(self).calls
                return super().step(closure)
        opt = Counting(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = [_snapshot(f(*_data(lib, "float64", i)), m, opt) for i in range(STEPS)]
        return out, f, Counting.calls

    eager, _, e_calls = run(tg, False)
    compiled, f, c_calls = run(tg, True)
    _assert_same(eager, compiled)
    assert e_calls == c_calls == STEPS
    assert f.stats["replays"] == STEPS - 1, f.explain()
    _assert_close(run(torch, False)[0], compiled, "float64")


def test_forward_reading_a_grad_stays_eager():
    """SILENT without the check: zero_grad(set_to_none=False) before a forward that reads a
    .grad - eager's forward reads the zeros; a replay, whose phases come after its forward,
    would read the previous call's gradient."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        p = m[0].bias
        p.grad = lib.ones_like(p)

        def step(x, y):
            opt.zero_grad(set_to_none=False)
            loss = ((m(x) - y) ** 2).mean() + (p * p.grad).sum()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        return [_snapshot(f(*_data(lib, "float32", i)), m, opt) for i in range(3)], f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert f.stats["replays"] == 0 and "reads a .grad" in f.explain(), f.explain()
    _assert_close(run(torch, False)[0], compiled, "float32")


@pytest.mark.parametrize("where", ["global", "closure"])
def test_rebound_module_recaptures(where):
    """SILENT before: a name rebound to another Module between calls replayed the old module's
    parameters (a Module read by name was not guarded); now a new capture."""
    torch = _torch()

    def run(lib, compiled):
        models = [_model(lib, "float32", seed) for seed in (1, 2)]
        ns = {"model": models[0]}
        if where == "global":
            fn = eval("lambda x: model(x).sum()", ns)
        else:
            model = models[0]

            def fn(x):
                return model(x).sum()
        f = lib.compile(fn) if compiled else fn
        x = _data(lib, "float32", 0)[0]
        out = [_bits(f(x)), _bits(f(x))]
        if where == "global":
            ns["model"] = models[1]
        else:
            model = models[1]   # noqa: F841 (read by fn through its closure)
        out.append(_bits(f(x)))
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    assert all(_same_bits(a, b) for a, b in zip(eager, compiled))
    assert not _same_bits(compiled[1], compiled[2])
    assert f.stats["captures"] == 2
    np.testing.assert_allclose(compiled[2], run(torch, False)[0][2], rtol=1e-5)


def test_module_zero_grad_and_step_order_after():
    """model.zero_grad() after the step (the other common order) and a step that returns
    nothing replay too."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float64")
        opt = lib.optim.RMSprop(m.parameters(), lr=0.01)
        losses = []

        def step(x, y):
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            m.zero_grad()
        f = lib.compile(step) if compiled else step
        for i in range(STEPS):
            assert f(*_data(lib, "float64", i)) is None
            losses.append([_bits(p) for p in m.parameters()] + [p.grad for p in m.parameters()])
        return losses, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    for e, c in zip(eager, compiled):
        assert all(_same_bits(a, b) for a, b in zip(e, c))
    assert f.stats["replays"] == STEPS - 1, f.explain()
    for r, c in zip(run(torch, False)[0], compiled):
        for a, b in zip(r, c):
            if a is not None:
                np.testing.assert_allclose(b, a, rtol=1e-10)


def test_attribute_name_is_not_a_global_read():
    """`opt.step()` reads the attribute `step`, not a global `step` (a script's loop counter):
    the counter changing at every call no longer sends the whole step back to capture."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        ns = {"opt": lib.optim.Adam(m.parameters(), lr=0.01), "m": m, "step": 0}
        exec("def wstep(x, y):\n"
             "    opt.zero_grad()\n"
             "    loss = ((m(x) - y) ** 2).mean()\n"
             "    loss.backward()\n"
             "    opt.step()\n"
             "    return loss\n", ns)
        f = lib.compile(ns["wstep"]) if compiled else ns["wstep"]
        out = []
        for i in range(STEPS):
            ns["step"] = i
            out.append(_snapshot(f(*_data(lib, "float32", i)), m, ns["opt"]))
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert f.stats["captures"] == 1 and f.stats["replays"] == STEPS - 1, f.stats
    _assert_close(run(torch, False)[0], compiled, "float32")


def test_global_read_still_guarded():
    """A number the function does read as a global is still guarded."""
    ns = {"scale": 2.0}
    exec("def fn(x):\n    return (x * scale).sum()\n", ns)
    f = tg.compile(ns["fn"])
    x = tg.ones(3)
    assert f(x).item() == f(x).item() == 6.0
    ns["scale"] = 3.0
    assert f(x).item() == 9.0 == _torch().ones(3).mul(3.0).sum().item()


SCHEDULERS = {
    "step": lambda S, opt: S.StepLR(opt, step_size=1, gamma=0.5),
    "sequential": lambda S, opt: S.SequentialLR(
        opt, [S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, gamma=0.9)],
        milestones=[2]),
    "onecycle": lambda S, opt: S.OneCycleLR(opt, max_lr=0.1, total_steps=10),
    "warm-restarts": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=2),
    "plateau": lambda S, opt: S.ReduceLROnPlateau(opt, patience=0, factor=0.5),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_step_inside_the_step(name):
    """SILENT without its phase: a scheduler's step() inside the compiled step changes the
    optimizer's learning rates (Python state), which a replay skipped.  It is a phase now; a
    ReduceLROnPlateau given loss.item() reads a value after backward(): eager."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float64")
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        sched = SCHEDULERS[name](lib.optim.lr_scheduler, opt)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            if name == "plateau":
                sched.step(loss.item())
            else:
                sched.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(6):
            out.append(_snapshot(f(*_data(lib, "float64", i % 2)), m, opt))
            out[-1]["lr"] = opt.param_groups[0]["lr"]
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    assert [c["lr"] for c in compiled] == [e["lr"] for e in eager]
    reference, _ = run(torch, False)
    np.testing.assert_allclose([c["lr"] for c in compiled], [r["lr"] for r in reference],
                               rtol=1e-12)
    _assert_close(reference, compiled, "float64")
    if name == "plateau":
        assert f.stats["replays"] == 0 and "after backward()" in f.explain()
    else:
        assert f.stats["replays"] == 5, f.explain()
        assert f.explain().endswith(f"SGD.step(), {type(SCHEDULERS[name](tg.optim.lr_scheduler, tg.optim.SGD([tg.zeros(1, requires_grad=True)], lr=0.1))).__name__}.step()")


@pytest.mark.parametrize("clip", ["norm", "value", "norm-list", "norm-returned"])
def test_gradient_clipping_inside_the_step(clip):
    """clip_grad_norm_ / clip_grad_value_ of model.parameters() between backward() and step()
    are phases (the library's clipping of the gradients, at each replay); clipping a list the
    function builds (which a replay could not see change) or returning the total norm: eager."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float32")
        opt = lib.optim.Adam(m.parameters(), lr=0.01)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            total = None
            if clip == "value":
                lib.nn.utils.clip_grad_value_(m.parameters(), 0.05)
            elif clip == "norm-list":
                lib.nn.utils.clip_grad_norm_([m[0].weight, m[2].weight], 0.1)
            else:
                total = lib.nn.utils.clip_grad_norm_(m.parameters(), 0.1)
            opt.step()
            return (loss, total) if clip == "norm-returned" else loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(STEPS):
            r = f(*_data(lib, "float32", i))
            out.append(_snapshot(r[0] if isinstance(r, tuple) else r, m, opt))
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    if clip in ("norm", "value"):
        assert f.stats["replays"] == STEPS - 1, f.explain()
        assert f"clip_grad_{clip}_()" in f.explain()
    else:
        assert f.stats["replays"] == 0, f.explain()
    _assert_close(run(torch, False)[0], compiled, "float32")


@pytest.mark.parametrize("retain", [False, True])
def test_returned_loss_after_inner_backward(retain):
    """The loss a whole step returns has had its backward: a second backward outside raises
    PyTorch's error, or (retain_graph=True inside) accumulates again, as eager."""
    torch = _torch()

    def run(lib, compiled):
        m = _model(lib, "float64")
        opt = lib.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward(retain_graph=retain)
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(3):
            loss = f(*_data(lib, "float64", i))
            try:
                loss.backward()
                out.append(_bits(m[0].weight.grad))
            except RuntimeError as e:
                out.append(str(e)[:60])
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    reference, _ = run(torch, False)
    assert f.stats["replays"] == 2
    for e, c, r in zip(eager, compiled, reference):
        if isinstance(r, str):
            assert e == c == r and "second time" in r
        else:
            assert _same_bits(e, c)
            np.testing.assert_allclose(c, r, rtol=1e-12)


def test_batchnorm_model_whole_step():
    """A model with BatchNorm (its op updates the running statistics, num_batches_tracked is
    written after the replayed forward): the whole step replays, buffers included, bit for bit."""
    torch = _torch()

    def run(lib, compiled):
        rng = np.random.default_rng(3)
        m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.BatchNorm1d(8), lib.nn.ReLU(),
                              lib.nn.Linear(8, 1))
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=lib.float32))
        # (SGD: an adaptive optimizer turns the rounding noise of the bias before the norm,
        # whose gradient is zero, into full steps that differ from PyTorch's)
        opt = lib.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        f = lib.compile(step) if compiled else step
        out = []
        for i in range(STEPS):
            out.append(_snapshot(f(*_data(lib, "float32", i)), m, opt))
            out[-1]["buffers"] = [_bits(b) for b in m.buffers()]
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    _assert_same(eager, compiled)
    for e, c in zip(eager, compiled):
        assert all(_same_bits(a, b) for a, b in zip(e["buffers"], c["buffers"]))
    assert f.stats["replays"] == STEPS - 1, f.explain()
    reference, _ = run(torch, False)
    _assert_close(reference, compiled, "float32")
    for r, c in zip(reference, compiled):
        for a, b in zip(r["buffers"], c["buffers"]):
            np.testing.assert_allclose(b, a, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["library-function", "partial", "callable-object"])
def test_rebound_callable_recaptures(kind):
    """SILENT before: a global holding what the function calls - a library function, a
    functools.partial, an object with __call__ - rebound between calls replayed the old one."""
    import functools
    torch = _torch()

    class Scale:
        def __init__(self, s):
            self.s = s

        def __call__(self, x):
            return x * self.s

    def make(lib, second):
        if kind == "library-function":
            return lib.sigmoid if second else lib.tanh
        if kind == "partial":
            return functools.partial(lib.nn.functional.leaky_relu,
                                     negative_slope=0.5 if second else 0.1)
        return Scale(3.0 if second else 2.0)

    def run(lib, compiled):
        ns = {"act": make(lib, False)}
        fn = eval("lambda x: act(x).sum()", ns)
        f = lib.compile(fn) if compiled else fn
        x = lib.tensor([-1.0, 0.5, 2.0])
        out = [f(x).item(), f(x).item()]
        ns["act"] = make(lib, True)
        out += [f(x).item(), f(x).item()]
        return out, f

    eager, _ = run(tg, False)
    compiled, f = run(tg, True)
    assert compiled == eager
    assert compiled[1] != compiled[2]
    assert f.stats["captures"] == 2 and f.stats["replays"] == 2
    np.testing.assert_allclose(compiled, run(torch, False)[0], rtol=1e-6)
