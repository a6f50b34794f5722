"""Python state a compiled function sets: train()/eval() (tapegrad/_step_phases.py's MODE
phase: a replay re-runs the call, so the modules' flags after each call are eager's - a replayed
`model.eval()` used to leave the model in training mode) and the random generators' seed and
state (manual_seed, set_rng_state, fork_rng inside the function keep it eager: its draws follow
that state, which a replay skipped), and grad mode switched by a call (torch.set_grad_enabled
as a function: a replay left it as it was)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn


def _twins(seed=0):
    tg.manual_seed(seed)
    a = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2))
    b = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2))
    b.load_state_dict(a.state_dict())
    return a, b


def _flags(model):
    return [m.training for m in model.modules()]


def test_eval_inside_a_compiled_function_leaves_the_model_in_eval_mode():
    eager, compiled_model = _twins()
    x = tg.randn(5, 4)

    def evaluate(model):
        def run(x):
            model.eval()
            with tg.no_grad():
                return model(x)
        return run

    plain, compiled = evaluate(eager), tg.compile(evaluate(compiled_model))
    for _ in range(4):
        eager.train()
        compiled_model.train()
        expected, got = plain(x), compiled(x)
        assert _flags(compiled_model) == _flags(eager) == [False] * 5
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert compiled.stats["replays"] == 3, compiled.explain()
    assert "train()" in compiled.explain()


def test_train_then_eval_around_a_whole_step():
    eager, compiled_model = _twins(1)
    opts = [tg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, compiled_model)]
    x, y = tg.randn(8, 4), tg.randn(8, 2)

    def step(model, opt):
        def run(x, y):
            model.train()
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            model.eval()
            return loss
        return run

    plain, compiled = step(eager, opts[0]), tg.compile(step(compiled_model, opts[1]))
    for _ in range(4):
        tg.manual_seed(7)
        expected = plain(x, y)
        tg.manual_seed(7)
        got = compiled(x, y)
        assert got.item() == expected.item()
        assert _flags(compiled_model) == _flags(eager) == [False] * 5
        for p, q in zip(compiled_model.parameters(), eager.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        for p, q in zip(compiled_model.buffers(), eager.buffers()):
            np.testing.assert_array_equal(p.numpy(), q.numpy())
    # (the first call met a model in training mode, the next ones one in eval mode: a second
    # capture, then replays)
    assert compiled.stats["captures"] == 2 and compiled.stats["replays"] == 2, compiled.stats


def test_an_overridden_train_stays_eager():
    """A subclass's own train() (LoRA's merge on eval) would run only at capture: such a
    function is not replayed."""
    calls = []

    class Merging(nn.Linear):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    model = Merging(3, 2)
    x = tg.randn(2, 3)

    @tg.compile
    def run(x):
        model.eval()
        return model(x)

    for _ in range(3):
        run(x)
    assert calls == [False, False, False]
    assert run.stats["replays"] == 0, run.explain()
    assert "overrides" in run.explain()


@pytest.mark.parametrize("reset", ["manual_seed", "generator", "set_rng_state", "fork_rng"])
def test_a_function_that_reseeds_stays_eager(reset):
    """Each call draws what eager draws after the reset (a replay drew on from the stream)."""
    import tapegrad.nn.functional as F
    gen = tg.Generator().manual_seed(5)
    saved = tg.get_rng_state()

    def f(x):
        if reset == "manual_seed":
            tg.manual_seed(0)
        elif reset == "generator":
            gen.manual_seed(0)
        elif reset == "set_rng_state":
            tg.set_rng_state(saved)
        else:
            with tg.random.fork_rng():
                tg.manual_seed(1)
                x = x + tg.rand(3)
        return F.dropout(x, 0.5) + tg.rand(3, generator=gen if reset == "generator" else None)

    compiled = tg.compile(f)
    x = tg.ones(3)
    for i in range(3):
        tg.manual_seed(100 + i)
        expected = f(x)
        tg.manual_seed(100 + i)
        got = compiled(x)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert compiled.stats["replays"] == 0, compiled.explain()
    assert "random generator" in compiled.explain()


@pytest.mark.parametrize("switch", ["set_grad_enabled", "no_grad_enter"])
def test_a_function_that_leaves_grad_mode_switched_stays_eager(switch):
    x = tg.randn(3, requires_grad=True)

    def f(x):
        if switch == "set_grad_enabled":
            tg.set_grad_enabled(False)
        else:
            tg.no_grad().__enter__()
        return (x * 2).sum()

    compiled = tg.compile(f)
    try:
        for _ in range(3):
            tg.set_grad_enabled(True)
            out = compiled(x)
            assert not tg.is_grad_enabled()          # as eager leaves it
            assert not out.requires_grad
        assert compiled.stats["replays"] == 0, compiled.explain()
        assert "grad or inference mode" in compiled.explain()
    finally:
        tg.set_grad_enabled(True)


def test_a_with_block_inside_still_replays():
    """A no_grad block that ends inside the function changes no mode across the call."""
    x = tg.randn(3, requires_grad=True)

    @tg.compile
    def f(x):
        with tg.no_grad():
            scale = x.detach().abs().max()
        return (x * scale).sum()

    for _ in range(3):
        out = f(x)
        assert tg.is_grad_enabled() and out.requires_grad
    assert f.stats["replays"] == 2, f.explain()
