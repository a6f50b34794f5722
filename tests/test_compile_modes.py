"""train()/eval() inside a compiled function (tapegrad/_step_phases.py's MODE phase): a replay
re-runs the call, so the modules' flags after each call are eager's (a replayed `model.eval()`
used to leave the model in training mode), and the values stay eager's."""
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
