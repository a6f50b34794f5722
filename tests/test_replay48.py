"""replay48: library state a compiled function's body sets or reads, which a replay would skip
or have baked in (issue 19's "Left in compile"): each test runs the function eagerly and
compiled over several calls, changing the state between calls as a script would, and compares
values and the state after each call (and, where the values are deterministic, with PyTorch's)."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as nn


def _pair(make):
    """make() -> (function, state): an eager and a compiled instance, built from one seed."""
    tg.manual_seed(0)
    eager = make()
    tg.manual_seed(0)
    compiled_fn, compiled_state = make()
    return eager, (tg.compile(compiled_fn), compiled_state)


# -- a library layer's settings -------------------------------------------------------------------

def test_a_layer_setting_changed_between_calls_is_read_again():
    """SILENT before: a library layer's forward is not followed by the environment guard, so
    `model[1].negative_slope = 0.5` between calls replayed the old slope."""
    torch = pytest.importorskip("torch")
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.1))
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LeakyReLU(0.1))
    with torch.no_grad():
        reference[0].weight.copy_(torch.tensor(model[0].weight.detach().numpy()))
        reference[0].bias.copy_(torch.tensor(model[0].bias.detach().numpy()))
    compiled = tg.compile(model)
    x = np.linspace(-3, 1, 6, dtype=np.float32).reshape(2, 3)
    for slope in (0.1, 0.1, 0.5, 0.9, 0.9):
        model[1].negative_slope = slope
        reference[1].negative_slope = slope
        got = compiled(tg.tensor(x))
        np.testing.assert_allclose(got.detach().numpy(),
                                   reference(torch.tensor(x)).detach().numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got.detach().numpy(), model(tg.tensor(x)).detach().numpy())


def test_a_dropout_rate_changed_between_calls_is_read_again():
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5))
    compiled = tg.compile(model)
    x = tg.ones(4, 3)
    for p in (0.5, 0.5, 0.1, 0.9):
        model[1].p = p
        tg.manual_seed(3)
        expected = model(x)
        tg.manual_seed(3)
        got = compiled(x)
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())


def _model():
    return nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))


@pytest.mark.parametrize("write", ["training", "root_training", "p", "momentum",
                                   "register_buffer"])
def test_a_layer_attribute_set_inside_the_function(write):
    """SILENT before: library layers were not watched, so a replay skipped `dropout.p *= 0.5`,
    `bn.momentum += 0.1`, `model[1].training = False` (the flag stayed True after the call)
    and register_buffer inside the function."""

    def make():
        model = _model()

        def f(x):
            if write == "training":
                model[1].training = False
            elif write == "root_training":
                model.training = False
            elif write == "p":
                model[1].p = model[1].p * 0.5
            elif write == "momentum":
                model[2].momentum = model[2].momentum + 0.1
            else:
                model[0].register_buffer("last", x.clone())
            return model(x)
        return f, model

    (plain, model), (compiled, compiled_model) = _pair(make)
    for i in range(4):
        x = tg.arange(6.).reshape(2, 3) * (i + 1)
        tg.manual_seed(i)
        expected = plain(x)
        tg.manual_seed(i)
        got = compiled(x)
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
        for a, b in zip(model.modules(), compiled_model.modules()):
            assert a.training == b.training
            assert getattr(a, "p", None) == getattr(b, "p", None)
            assert getattr(a, "momentum", None) == getattr(b, "momentum", None)
        for a, b in zip(model.buffers(), compiled_model.buffers()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        for m in (model, compiled_model):   # what a script's loop does between calls
            m[1].training = m.training = True
    assert compiled.stats["replays"] == 0, compiled.explain()
    assert "object it reads at every call" in compiled.explain()


def test_an_idempotent_layer_write_then_a_change_outside():
    """`model[1].p = 0.2` at every call replays once the capture changes nothing; a rate set
    outside afterwards fails the guard (the call captures again: the write is eager's)."""
    def make():
        model = _model()

        def f(x):
            model[1].p = 0.2
            return model(x)
        return f, model

    (plain, model), (compiled, compiled_model) = _pair(make)
    x = tg.arange(6.).reshape(2, 3)
    for i in range(6):
        if i == 4:
            model[1].p = compiled_model[1].p = 0.7
        tg.manual_seed(i)
        expected = plain(x)
        tg.manual_seed(i)
        got = compiled(x)
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
        assert compiled_model[1].p == model[1].p == 0.2
    assert compiled.stats["replays"] >= 2, compiled.explain()


def test_a_scheduler_and_eval_inside_still_replay():
    """The phases' own writes (a scheduler's lr in the param groups, eval()'s flags) are not
    the function's: a whole step with them still replays."""
    model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.3))
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    sched = tg.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    x, y = tg.randn(4, 3), tg.randn(4, 2)

    @tg.compile
    def step(x, y):
        model.train()
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        model.eval()
        return loss

    for _ in range(4):
        step(x, y)
    assert step.stats["replays"] >= 2, step.explain()
    assert opt.param_groups[0]["lr"] == 0.1 * 0.5 ** 4


def test_a_param_group_write_inside_the_function():
    """SILENT before: `group["lr"] = 0.01` inside a compiled step was skipped by the replays
    (the param group dicts were not watched), so a learning rate set outside between calls was
    the one the replayed step used."""
    def make():
        model = nn.Linear(3, 1)
        opt = tg.optim.SGD(model.parameters(), lr=0.1)

        def f(x):
            for group in opt.param_groups:
                group["lr"] = 0.01
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            return loss
        return f, (model, opt)

    (plain, (model, opt)), (compiled, (compiled_model, compiled_opt)) = _pair(make)
    for i in range(4):
        x = tg.ones(2, 3) * (i + 1)
        np.testing.assert_array_equal(compiled(x).detach().numpy(), plain(x).detach().numpy())
        np.testing.assert_array_equal(compiled_model.weight.detach().numpy(),
                                      model.weight.detach().numpy())
        assert compiled_opt.param_groups[0]["lr"] == opt.param_groups[0]["lr"] == 0.01
        opt.param_groups[0]["lr"] = compiled_opt.param_groups[0]["lr"] = 0.1
    assert compiled.stats["replays"] == 0, compiled.explain()
