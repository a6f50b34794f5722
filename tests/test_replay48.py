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


def test_a_subclass_calling_the_library_forward_reads_its_settings_again():
    """SILENT before: a script's subclass with its own forward is followed, but the settings
    its `super().forward(x)` reads in the library's code were not guarded."""
    torch = pytest.importorskip("torch")

    def leaky(base):
        class Leaky(base):
            def forward(self, x):
                return super().forward(x) * 2
        return Leaky(0.1)

    model, reference = leaky(nn.LeakyReLU), leaky(torch.nn.LeakyReLU)
    compiled = tg.compile(model)
    x = np.array([-1.5, 2.0, -0.25], dtype=np.float32)
    for slope in (0.1, 0.1, 0.5, 0.7):
        model.negative_slope = reference.negative_slope = slope
        assert compiled(tg.tensor(x)).tolist() == reference(torch.tensor(x)).tolist()


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


# -- library-wide settings set inside the function -------------------------------------------------

_SETTINGS = {
    # name: (set it, read it, put it back), each given the library module (tapegrad or torch)
    "default_dtype": (lambda t: t.set_default_dtype(t.float64),
                      lambda t: str(t.get_default_dtype()),
                      lambda t: t.set_default_dtype(t.float32)),
    "default_tensor_type": (lambda t: t.set_default_tensor_type(t.DoubleTensor),
                            lambda t: str(t.get_default_dtype()),
                            lambda t: t.set_default_dtype(t.float32)),
    "default_device": (lambda t: t.set_default_device("meta"),
                       lambda t: str(t.get_default_device()),
                       lambda t: t.set_default_device(None)),
    "printoptions": (lambda t: t.set_printoptions(precision=2),
                     lambda t: repr(t.tensor([1.23456])).replace("tensor", ""),
                     lambda t: t.set_printoptions(profile="default")),
    "num_threads": (lambda t: t.set_num_threads(1), lambda t: t.get_num_threads(),
                    lambda t: t.set_num_threads(2)),
    "deterministic": (lambda t: t.use_deterministic_algorithms(True),
                      lambda t: t.are_deterministic_algorithms_enabled(),
                      lambda t: t.use_deterministic_algorithms(False)),
    "debug_mode": (lambda t: t.set_deterministic_debug_mode("warn"),
                   lambda t: t.get_deterministic_debug_mode(),
                   lambda t: t.set_deterministic_debug_mode(0)),
    "anomaly": (lambda t: t.autograd.set_detect_anomaly(True), lambda t: t.is_anomaly_enabled(),
                lambda t: t.autograd.set_detect_anomaly(False)),
    "backends_flag": (lambda t: setattr(t.backends.cudnn, "benchmark", True),
                      lambda t: t.backends.cudnn.benchmark,
                      lambda t: setattr(t.backends.cudnn, "benchmark", False)),
    "matmul_precision": (lambda t: t.set_float32_matmul_precision("high"),
                         lambda t: t.get_float32_matmul_precision(),
                         lambda t: t.set_float32_matmul_precision("highest")),
    "warn_always": (lambda t: t.set_warn_always(True), lambda t: t.is_warn_always_enabled(),
                    lambda t: t.set_warn_always(False)),
    "autocast_dtype": (lambda t: t.set_autocast_dtype("cpu", t.float16),
                       lambda t: str(t.get_autocast_dtype("cpu")),
                       lambda t: t.set_autocast_dtype("cpu", t.bfloat16)),
    "sdp_flag": (lambda t: t.backends.cuda.enable_math_sdp(False),
                 lambda t: t.backends.cuda.math_sdp_enabled(),
                 lambda t: t.backends.cuda.enable_math_sdp(True)),
}


@pytest.mark.filterwarnings("ignore:torch.set_default_tensor_type:UserWarning")
@pytest.mark.parametrize("name", sorted(_SETTINGS))
def test_a_library_setting_set_inside_the_function(name):
    """SILENT before: a replay skipped the setter, so after each replayed call the setting was
    whatever the script had set in between (the default dtype float32 where eager and PyTorch
    leave float64).  The script here resets it after every call, as a loop that sets it for
    its own code would."""
    torch = pytest.importorskip("torch")
    set_it, read, put_back = _SETTINGS[name]
    threads = torch.get_num_threads(), tg.get_num_threads()

    def sequence(t, wrap):
        def f(x):
            set_it(t)
            return x * 2
        g = wrap(f)
        seen = []
        try:
            for i in range(4):
                out = g(t.ones(3) * i)
                seen.append((read(t), out.tolist()))
                put_back(t)
        finally:
            put_back(t)
        return seen, g

    try:
        expected, _ = sequence(torch, lambda f: f)
        eager, _ = sequence(tg, lambda f: f)
        compiled, g = sequence(tg, tg.compile)
    finally:
        torch.set_num_threads(threads[0])
        tg.set_num_threads(threads[1])
    assert compiled == eager == expected
    assert g.stats["replays"] == 0, g.explain()
    assert "library-wide setting" in g.explain()


# -- .grad assigned inside the function ------------------------------------------------------------

@pytest.mark.parametrize("where", ["before", "after_step"])
def test_grad_set_to_none_inside_a_step_is_a_phase(where):
    """SILENT before: a replay skipped `p.grad = None`, so its backward accumulated onto the
    previous call's gradient (an SGD step with twice, three times the gradient).  Now the
    clearing is a phase a replay runs again; the step matches PyTorch's."""
    torch = pytest.importorskip("torch")

    def make(t, model):
        opt = t.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            if where == "before":
                for p in model.parameters():
                    p.grad = None
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            if where == "after_step":
                for p in model.parameters():
                    p.grad = None
            return loss
        return step

    tg.manual_seed(0)
    model = nn.Linear(3, 2, dtype=tg.float64)
    twin = nn.Linear(3, 2, dtype=tg.float64)
    twin.load_state_dict(model.state_dict())
    reference = torch.nn.Linear(3, 2, dtype=torch.float64)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(model.weight.detach().numpy()))
        reference.bias.copy_(torch.tensor(model.bias.detach().numpy()))
    compiled, plain, expected = tg.compile(make(tg, model)), make(tg, twin), make(torch, reference)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
        got = compiled(tg.tensor(x), tg.tensor(y)).item()
        assert got == plain(tg.tensor(x), tg.tensor(y)).item()
        np.testing.assert_allclose(got, expected(torch.tensor(x), torch.tensor(y)).item(),
                                   rtol=1e-12)
        for a, b, c in zip(model.parameters(), twin.parameters(), reference.parameters()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
            np.testing.assert_allclose(a.detach().numpy(), c.detach().numpy(), rtol=1e-12)
            assert (a.grad is None) == (b.grad is None) == (c.grad is None)
    assert compiled.stats["replays"] == 3, compiled.explain()
    assert ".grad = None" in compiled.explain()


def test_grad_set_to_none_then_changed_outside():
    """The phase clears whatever .grad the script left between calls (eager's result)."""
    w = tg.ones(3, requires_grad=True)
    v = tg.ones(3, requires_grad=True)

    def make(w):
        def f(x):
            w.grad = None
            loss = (x * w).sum()
            loss.backward()
            return loss
        return f

    plain, compiled = make(v), tg.compile(make(w))
    for i in range(4):
        x = tg.full((3,), float(i + 1))
        plain(x)
        compiled(x)
        np.testing.assert_array_equal(w.grad.numpy(), v.grad.numpy())
        w.grad = tg.full((3,), 5.)
        v.grad = tg.full((3,), 5.)
    assert compiled.stats["replays"] == 3, compiled.explain()


def test_a_tensor_assigned_to_grad_keeps_the_function_eager():
    w = tg.ones(3, requires_grad=True)
    v = tg.ones(3, requires_grad=True)

    def make(w):
        def f(x):
            w.grad = tg.zeros(3)
            (x * w).sum().backward()
            return w.grad
        return f

    plain, compiled = make(v), tg.compile(make(w))
    for i in range(3):
        x = tg.full((3,), float(i + 1))
        np.testing.assert_array_equal(compiled(x).numpy(), plain(x).numpy())
        np.testing.assert_array_equal(w.grad.numpy(), [i + 1.] * 3)
    assert compiled.stats["replays"] == 0, compiled.explain()
    assert "assigns a tensor to a .grad" in compiled.explain()


# -- GradScaler's scale ----------------------------------------------------------------------------

def test_a_compiled_loss_scaled_by_a_gradscaler_follows_its_scale():
    """SILENT before: scale() multiplied by the scaler's Python float, which the capture baked
    in: the scale grew 4 -> 8 -> 16 while the replayed loss stayed scaled by 4, so step()
    unscaled by the new scale and SGD stepped with 1/2, 1/4, 1/8 of the gradient.  The scale is
    now a float32 tensor the scaler writes in place (PyTorch's is one too)."""
    torch = pytest.importorskip("torch")

    def run(t, compile_):
        t.manual_seed(0)
        w = t.tensor([1.0, -2.0, 0.5], requires_grad=True)
        opt = t.optim.SGD([w], lr=0.01)
        scaler = t.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)

        def scaled_loss(x):
            return scaler.scale((x * w).pow(2).sum())
        f = compile_(scaled_loss)
        seen = []
        for i in range(5):
            opt.zero_grad()
            loss = f(t.tensor([1.0, 2.0, 3.0]) * (i + 1))
            loss.backward()
            scaler.step(opt)
            scaler.update()
            seen.append((loss.item(), w.tolist(), scaler.get_scale()))
        return seen, f

    expected, _ = run(torch, lambda f: f)
    eager, _ = run(tg, lambda f: f)
    compiled, f = run(tg, tg.compile)
    assert compiled == eager == expected
    assert f.stats["replays"] == 4, f.explain()


def test_gradscaler_scale_promotes_as_pytorch():
    """The scale is a 0-dim float32 tensor in PyTorch: a 0-dim float16 loss comes out float32
    (it stayed float16 here, the scale being a Python number), a float16 batch stays float16."""
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).standard_normal(5).astype(np.float16)
    results = []
    for t in (torch, tg):
        scaler = t.amp.GradScaler("cpu", init_scale=3.0)
        x = t.tensor(values, requires_grad=True)
        results.append([(str(out.dtype), out.tolist())
                        for out in (scaler.scale(x.sum()), scaler.scale(x * 2),
                                    scaler.scale(x.double().sum()))])
    assert results[1] == results[0]


@pytest.mark.parametrize("clip", [False, True])
def test_a_whole_step_with_a_gradscaler_replays(clip):
    """scaler.scale(loss).backward(); [scaler.unscale_(opt); clip_grad_norm_(...)];
    scaler.step(opt); scaler.update() in one compiled step: unscale_, step and update are
    phases (it stayed eager: "ops after backward()").  An input that makes the gradients inf
    skips the optimizer's step and backs the scale off, as in PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((2, 3)).astype(np.float32)
    inputs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(6)]
    inputs[3][0, 0] = 3e38           # (an inf loss and gradient: the step is skipped)

    def run(t, compile_):
        model = t.nn.Linear(3, 2, bias=False)
        w = model.weight
        with t.no_grad():
            w.copy_(t.tensor(w0))
        opt = t.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
        scaler = t.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)

        def step(x):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            if clip:
                scaler.unscale_(opt)
                t.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            return loss
        f = compile_(step)
        seen = []
        for x in inputs:
            loss = f(t.tensor(x))
            seen.append((loss.item(), w.tolist(), scaler.get_scale()))
        return seen, f

    expected, _ = run(torch, lambda f: f)
    eager, _ = run(tg, lambda f: f)
    compiled, f = run(tg, tg.compile)
    assert compiled == eager
    scales = [s for _, _, s in expected]
    assert min(scales[4:]) < max(scales[:4])        # (the inf step backed the scale off)
    for (a, wa, sa), (b, wb, sb) in zip(compiled, expected):
        assert sa == sb
        np.testing.assert_allclose(a, b, rtol=1e-6)
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-6)
    assert f.stats["replays"] >= 4, f.explain()
    assert "GradScaler.step()" in f.explain() and "GradScaler.update()" in f.explain()


# -- globals the function rebinds -----------------------------------------------------------------

_last = None
_cache = None
_flag = False


def _keep_last(x):
    global _last
    y = (x * 2).exp()
    _last = y
    return y.sum()


def test_a_global_rebound_inside_the_function():
    """SILENT before: `global last; last = y` was done by the capture only, so after each
    replayed call the global still held the first call's tensor."""
    torch = pytest.importorskip("torch")
    global _last
    compiled = tg.compile(_keep_last)
    for i in range(4):
        x = np.array([0.5, -1.0, 0.25]) * i
        out = compiled(tg.tensor(x))
        expected = (torch.tensor(x) * 2).exp()
        np.testing.assert_allclose(_last.numpy(), expected.numpy(), rtol=1e-15)
        np.testing.assert_allclose(out.item(), expected.sum().item(), rtol=1e-15)
    assert compiled.stats["replays"] == 0, compiled.explain()
    assert "rebinds a global" in compiled.explain()
    _last = None


def _scale_from_cache(x):
    global _cache
    if _cache is None:              # (filled on first use, as a rotary table is)
        _cache = tg.linspace(0.0, 1.0, 3)
    return x * _cache


def _set_flag(x):
    global _flag
    _flag = True
    return x + 1


def test_a_global_cache_filled_once_still_replays_and_a_flag_set_inside_is_kept():
    global _cache, _flag
    compiled = tg.compile(_scale_from_cache)
    for i in range(4):
        x = tg.full((3,), float(i))
        np.testing.assert_array_equal(compiled(x).numpy(), _scale_from_cache(x).numpy())
    assert compiled.stats["replays"] >= 2, compiled.explain()
    _cache = None
    compiled = tg.compile(_set_flag)
    for i in range(5):
        compiled(tg.full((3,), float(i)))
        assert _flag is True            # as eager leaves it, the script resetting it between
        if i % 2:
            _flag = False
    _flag = False


def test_a_module_or_class_attribute_assigned_inside_the_function(tmp_path, monkeypatch):
    """SILENT before: a script's modules and classes were not watched, so `cfg.last = y` on an
    imported config module and `Config.last = y` were done by the capture only."""
    (tmp_path / "replay48_cfg.py").write_text("last = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import replay48_cfg as cfg

    class Config:
        last = None

    def to_module(x):
        cfg.last = x * 2
        return x.sum()

    def to_class(x):
        Config.last = x * 3
        return x.sum()

    for fn, read, factor in ((to_module, lambda: cfg.last, 2), (to_class, lambda: Config.last, 3)):
        compiled = tg.compile(fn)
        for i in range(4):
            compiled(tg.full((2,), float(i)))
            assert read().tolist() == [factor * i] * 2
        assert compiled.stats["replays"] == 0, compiled.explain()


# -- ops after backward(), gradients inside the call ---------------------------------------------

def test_autograd_grad_inside_stays_eager_with_its_reason():
    """A gradient penalty (autograd.grad with create_graph inside the call) runs eagerly at
    every call, equal to PyTorch's, and explain() names autograd.grad."""
    torch = pytest.importorskip("torch")

    def make(t):
        w = t.tensor([0.5, -1.0, 2.0], dtype=t.float64, requires_grad=True)

        def f(x):
            y = (x * w).tanh().sum()
            g, = t.autograd.grad(y, w, create_graph=True)
            return y + g.pow(2).sum()
        return f, w

    (f, w), (h, v) = make(tg), make(torch)
    compiled = tg.compile(f)
    for i in range(3):
        x = np.array([0.3, 0.1, -0.2]) * (i + 1)
        out, expected = compiled(tg.tensor(x)), h(torch.tensor(x))
        out.backward()
        expected.backward()
        np.testing.assert_allclose(out.item(), expected.item(), rtol=1e-14)
        np.testing.assert_allclose(w.grad.numpy(), v.grad.numpy(), rtol=1e-13)
    assert compiled.stats["replays"] == 0
    assert "autograd.grad" in compiled.explain()


def test_a_scheduler_attribute_set_inside_the_function():
    """SILENT before: `sched.last_epoch = 0` inside a compiled step (a schedule restarted at
    every call) was done by the capture only: the replays' sched.step() phases counted on from
    there (last_epoch 2, 3, 4 where eager and PyTorch keep 1)."""
    torch = pytest.importorskip("torch")

    def run(t, compile_):
        model = t.nn.Linear(3, 1)
        with t.no_grad():
            model.weight.copy_(t.tensor([[0.5, -0.25, 1.0]]))
            model.bias.zero_()
        opt = t.optim.SGD(model.parameters(), lr=0.1)
        sched = t.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def step(x):
            sched.last_epoch = 0
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            opt.step()
            sched.step()
            return loss
        f = compile_(step)
        seen = []
        for i in range(4):
            f(t.ones(2, 3) * (i + 1))
            seen.append((sched.last_epoch, opt.param_groups[0]["lr"],
                         model.weight.detach().tolist()))
        return seen, f

    expected, _ = run(torch, lambda f: f)
    compiled, f = run(tg, tg.compile)
    assert compiled == expected
    assert "learning-rate scheduler" in f.explain()
