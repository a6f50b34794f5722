"""Drop-in submodules scripts import from torch: testing.assert_close / make_tensor,
utils.checkpoint, jit, profiler, hub (issue 15).  Each is compared with torch when it is
importable and checked against literal values without it."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.testing import assert_close, make_tensor


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# ---------------------------------------------------------------------------- testing.assert_close
def test_assert_close_report_literal():
    kind, text = _message(lambda: assert_close(tg.tensor([1., 2., 3.]), tg.tensor([1., 2.5, 3.])))
    assert kind is AssertionError
    assert text == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                    "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                    "Greatest relative difference: 0.20000000298023224 at index (1,) "
                    "(up to 1.3e-06 allowed)")
    assert_close(tg.tensor([1., 2.]), tg.tensor([1., 2. + 1e-6]))      # within float32 defaults
    assert_close(tg.tensor([float("nan")]), tg.tensor([float("nan")]), equal_nan=True)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(tg.tensor([1.]), tg.tensor([1.]), rtol=1e-3)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(tg.tensor([1.]), tg.tensor([2.]), msg="custom")


_CASES = [
    (lambda m: m.tensor([[1., 2.], [3., 4.]]), lambda m: m.tensor([[1., 2.5], [3., 5.]]), {}),
    (lambda m: m.tensor([1., 2., 3.]), lambda m: m.tensor([1., 2., 3.], dtype=m.float64), {}),
    (lambda m: m.tensor([1., 2., 3.]), lambda m: m.tensor([1., 2.]), {}),
    (lambda m: m.tensor([1, 2, 3]), lambda m: m.tensor([1, 4, 3]), {}),
    (lambda m: m.tensor([True, False]), lambda m: m.tensor([True, True]), {}),
    (lambda m: m.tensor([0., 1.]), lambda m: m.tensor([0., 2.]), {}),
    (lambda m: m.tensor([1., 1.]), lambda m: m.tensor([0., 2.]), {}),
    (lambda m: m.tensor([float("nan")]), lambda m: m.tensor([float("nan")]), {}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1., 2.1]), dict(atol=0.01, rtol=0)),
    (lambda m: m.tensor([1., 2.], dtype=m.float16), lambda m: m.tensor([1., 2.1], dtype=m.float16), {}),
    (lambda m: m.tensor([1., 2.]), lambda m: m.tensor([1, 2]), dict(check_dtype=False)),
    (lambda m: m.tensor(1.), lambda m: m.tensor(2.), {}),
    (lambda m: m.tensor(1.), lambda m: 1.0, {}),
    (lambda m: 1.0, lambda m: 1.1, {}),
    (lambda m: 1, lambda m: 2, {}),
    (lambda m: 1.0, lambda m: 1, {}),
    (lambda m: [m.tensor(1.), m.tensor(2.)], lambda m: (m.tensor(1.), m.tensor(3.)), {}),
    (lambda m: {"a": m.tensor(1.)}, lambda m: {"a": m.tensor(2.)}, {}),
    (lambda m: {"a": m.tensor(1.)}, lambda m: {"b": m.tensor(1.)}, {}),
    (lambda m: [1, 2], lambda m: [1, 2, 3], {}),
    (lambda m: m.zeros(2, 3, 4), lambda m: m.arange(24.).reshape(2, 3, 4) * 1e-3, {}),
    (lambda m: m.ones(2, 2), lambda m: m.ones(2, 2).t(), dict(check_stride=True)),
]


@pytest.mark.parametrize("make_actual, make_expected, options", _CASES)
def test_assert_close_matches_torch(torch, make_actual, make_expected, options):
    def outcome(module):
        try:
            module.testing.assert_close(make_actual(module), make_expected(module), **options)
            return None
        except Exception as error:  # noqa: BLE001 - the type is part of what is compared
            return type(error), str(error).replace("tapegrad.Tensor", "torch.Tensor")
    assert outcome(tg) == outcome(torch)


def test_make_tensor_ranges_and_errors(torch):
    x = make_tensor(3, 4, dtype=tg.float32, device="cpu", low=5, high=6)
    assert x.shape == (3, 4) and x.dtype == tg.float32
    assert ((x >= 5) & (x < 6)).all()
    ints = make_tensor((50,), dtype=tg.int64, device="cpu", exclude_zero=True)
    assert ints.dtype == tg.int64 and (ints != 0).all() and (ints >= -9).all() and (ints < 10).all()
    assert (make_tensor((20,), dtype=tg.uint8, device="cpu") >= 0).all()
    grad = make_tensor(2, 3, dtype=tg.float64, device="cpu", requires_grad=True, noncontiguous=True)
    assert grad.requires_grad and grad.is_leaf and not grad.is_contiguous()
    for kwargs in (dict(low=7, high=6), dict(low=float("nan"), high=6)):
        messages = []
        for module in (tg, torch):
            with pytest.raises(ValueError) as info:
                module.testing.make_tensor(2, dtype=module.float32, device="cpu", **kwargs)
            messages.append(str(info.value))
        assert messages[0] == messages[1]
    for module in (tg, torch):
        with pytest.raises(ValueError, match="requires_grad=True. is not supported"):
            module.testing.make_tensor(2, dtype=module.int32, device="cpu", requires_grad=True)


# ---------------------------------------------------------------------------- utils.checkpoint
def _dropout_net(module):
    module.manual_seed(0)
    return module.nn.Sequential(module.nn.Linear(4, 8), module.nn.Tanh(), module.nn.Dropout(0.5),
                                module.nn.Linear(8, 3))


def _grads(module, net, x, run):
    module.manual_seed(1)
    out = run(net, x)
    out.pow(2).sum().backward()
    grads = [p.grad.clone() for p in net.parameters()] + [x.grad.clone()]
    net.zero_grad()
    x.grad = None
    return out.detach(), grads


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_equal_plain_backward_with_dropout(use_reentrant):
    from tapegrad.utils.checkpoint import checkpoint, checkpoint_sequential
    net = _dropout_net(tg)
    x = tg.randn(5, 4, requires_grad=True)
    plain_out, plain = _grads(tg, net, x, lambda n, v: n(v))
    for run in (lambda n, v: checkpoint(n, v, use_reentrant=use_reentrant),
                lambda n, v: checkpoint_sequential(n, 2, v, use_reentrant=use_reentrant)):
        out, grads = _grads(tg, net, x, run)
        assert_close(out, plain_out)
        assert_close(grads, plain)          # same dropout mask in the recomputation


def test_checkpoint_warnings_and_errors_match_torch(torch):
    for module in (tg, torch):
        from_module = module.utils.checkpoint
        x = module.randn(3, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
            y = from_module.checkpoint(module.sin, x)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            out = from_module.checkpoint(module.sin, module.randn(3), use_reentrant=True)
        assert not out.requires_grad
        with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
            from_module.checkpoint(module.sin, x, use_reentrant=True, foo=1)
        with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant parameter"):
            from_module.checkpoint_sequential([module.nn.Linear(2, 2)], 1, module.randn(1, 2))


def test_checkpoint_non_reentrant_module_params_get_grads_like_torch(torch):
    results = []
    for module in (tg, torch):
        module.manual_seed(0)
        net = module.nn.Linear(3, 2)
        with module.no_grad():
            net.weight.copy_(module.tensor([[1., 2., 3.], [-1., 0.5, 2.]]))
            net.bias.fill_(0.5)
        x = module.tensor([[0.1, 0.2, 0.3]])
        module.utils.checkpoint.checkpoint(net, x, use_reentrant=False).tanh().sum().backward()
        results.append(net.weight.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


# ---------------------------------------------------------------------------- jit
class _Net(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tg.nn.Linear(3, 2)
        self.drop = tg.nn.Dropout(0.5)

    @tg.jit.ignore
    def helper(self, x):
        return x * 2

    @tg.jit.export
    def forward(self, x):
        return self.helper(self.drop(self.fc(x)))


def test_jit_script_and_trace_run_the_same_module(tmp_path):
    net = _Net()
    x = tg.randn(4, 3)
    scripted = tg.jit.script(net)
    traced = tg.jit.trace(net, x)
    for wrapped, name in ((scripted, "RecursiveScriptModule"), (traced, "TopLevelTracedModule")):
        assert type(wrapped).__name__ == name
        assert isinstance(wrapped, tg.jit.ScriptModule) and isinstance(wrapped, tg.nn.Module)
        assert not isinstance(wrapped, _Net)                  # as in torch
        assert wrapped.fc.weight is net.fc.weight
        assert list(wrapped.state_dict()) == ["fc.weight", "fc.bias"]
        wrapped.eval()
        assert_close(wrapped(x), net.eval()(x))
        with pytest.raises(NotImplementedError, match="no TorchScript IR"):
            wrapped.graph
        with pytest.raises(NotImplementedError, match="no TorchScript IR"):
            wrapped.code
    net.fc.weight.grad = None
    scripted(x).sum().backward()
    assert net.fc.weight.grad is not None                   # shared parameters get the gradient
    path = tmp_path / "net.pt"
    tg.jit.save(scripted, path)
    loaded = tg.jit.load(path)
    assert type(loaded).__name__ == "RecursiveScriptModule"
    assert_close(loaded(x), net(x))
    tg.save({"not": "jit"}, tmp_path / "other.pt")
    with pytest.raises(RuntimeError, match="tapegrad.jit.save"):
        tg.jit.load(tmp_path / "other.pt")


def test_jit_functions_and_helpers(torch):
    def double(v):
        return v * 2

    seen = []

    def tracing_probe(v):
        seen.append(tg.jit.is_tracing())
        return v + 1

    scripted = tg.jit.script(double)
    assert_close(scripted(tg.tensor([1., 2.])), tg.tensor([2., 4.]))
    assert scripted.name == "double"
    with pytest.raises(NotImplementedError, match="no TorchScript IR"):
        scripted.graph
    traced = tg.jit.trace(tracing_probe, tg.tensor(1.))
    assert seen == [True] and not tg.jit.is_tracing()
    assert_close(traced(tg.tensor(2.)), tg.tensor(3.))
    assert tg.jit.is_scripting() is torch.jit.is_scripting() is False
    assert tg.jit.Final is torch.jit.Final
    assert tg.jit.annotate(list, [1]) == torch.jit.annotate(list, [1]) == [1]
    with pytest.warns(DeprecationWarning, match="jit.fork` is deprecated"):   # (as PyTorch's)
        assert tg.jit.fork(double, tg.tensor(1.)).wait().item() == 2.0
    unused = tg.jit.unused(double)
    assert unused is double and tg.jit.ignore(drop=True)(double) is double


# ---------------------------------------------------------------------------- profiler
def _table_skeleton(text):
    """Each line's length and its words with numbers blanked: torch's layout, not its timings."""
    return [(len(line) if not line.startswith("Self CPU time total") else None,
             re.sub(r"[\d.]+(%|us|ms|s)?", "#", line).split()) for line in text.split("\n")]


def test_profiler_times_nested_record_function_blocks():
    import time
    from tapegrad.profiler import ProfilerActivity, profile, record_function

    @record_function("decorated")
    def nap():
        time.sleep(0.001)

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("outer"):
            nap()
            nap()
            with record_function("inner"):
                # well above the two 1 ms naps, so the self-time order holds on a loaded machine
                time.sleep(0.05)
    with record_function("outside"):       # no active profiler: nothing recorded
        pass
    averages = {e.key: e for e in prof.key_averages()}
    assert list(averages) == ["outer", "decorated", "inner"]
    assert averages["decorated"].count == 2
    outer = averages["outer"]
    assert outer.cpu_time_total >= 12000            # microseconds: both naps and the inner block
    inner_total = averages["decorated"].cpu_time_total + averages["inner"].cpu_time_total
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - inner_total)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert [line.split()[0] for line in lines[3:5]] == ["inner", "decorated"]
    assert lines[-1].startswith("Self CPU time total: ")
    # the legacy profiler records the same way; it only prints as its events (PyTorch's two
    # classes differ there too)
    assert issubclass(tg.autograd.profiler.profile, profile)


def test_profiler_table_layout_matches_torch(torch):
    tables = []
    for module in (tg, torch):
        with module.autograd.profiler.profile() as prof:
            with module.autograd.profiler.record_function("blk"):
                pass
        tables.append(_table_skeleton(prof.key_averages().table()))
    assert tables[0] == tables[1]


def test_profiler_schedule_matches_torch(torch):
    mine = tg.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    theirs = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [mine(i).name for i in range(12)] == [theirs(i).name for i in range(12)]


# ---------------------------------------------------------------------------- hub, tensorboard
_HUBCONF = ("dependencies = []\n"
            "def tiny(width=2):\n"
            "    '''A tiny model.'''\n"
            "    import {module}\n"
            "    return {module}.nn.Linear(width, 1)\n")


def test_hub_local_load_and_dirs_like_torch(torch, tmp_path, monkeypatch):
    for module in (tg, torch):
        repo = tmp_path / module.__name__
        repo.mkdir()
        (repo / "hubconf.py").write_text(_HUBCONF.format(module=module.__name__))
        model = module.hub.load(str(repo), "tiny", source="local", width=3)
        assert isinstance(model, module.nn.Linear) and model.in_features == 3
        with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
            module.hub.load(str(repo), "nope", source="local")
        with pytest.raises(ValueError, match='Unknown source: "bad"'):
            module.hub.load("a/b", "m", source="bad")
        with pytest.raises(FileNotFoundError):
            module.hub.load(str(tmp_path / "missing"), "m", source="local")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert tg.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "home" / "hub")
    with pytest.raises(RuntimeError, match="network access"):
        tg.hub.load("pytorch/vision", "resnet18")


def test_hub_set_dir_and_cached_state_dict(tmp_path):
    previous = tg.hub._hub_dir
    try:
        tg.hub.set_dir(str(tmp_path))
        assert tg.hub.get_dir() == str(tmp_path)
        (tmp_path / "checkpoints").mkdir()
        tg.save({"w": tg.ones(2)}, tmp_path / "checkpoints" / "w.pth")
        state = tg.hub.load_state_dict_from_url("https://example.com/w.pth")
        assert_close(state["w"], tg.ones(2))
        with pytest.raises(RuntimeError, match="network access"):
            tg.hub.load_state_dict_from_url("https://example.com/other.pth")
    finally:
        tg.hub._hub_dir = previous


def test_tensorboard_import_fails_like_torch(torch):
    import importlib.util
    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("the tensorboard package is installed")
    errors = []
    for name in ("tapegrad.utils.tensorboard", "torch.utils.tensorboard"):
        with pytest.raises(ModuleNotFoundError) as info:
            importlib.import_module(name)
        errors.append(str(info.value))
    assert errors[0] == errors[1] == "No module named 'tensorboard'"
