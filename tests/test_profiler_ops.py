"""The profiler's per-op events (tapegrad/profiler.py, src/tapegrad/profiling.pxi): every public
call, Tensor method, operator and backward node is an event named as PyTorch's top-level op,
compared with torch's own profiler where torch is installed."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _core
from tapegrad.profiler import profile, record_function


def _top_level(prof):
    counts = {}
    for e in prof.events():
        if e.cpu_parent is None:
            counts[e.name] = counts.get(e.name, 0) + 1
    return counts


def _model_step(module, record_shapes=False):
    """A small model's forward and backward under module's profiler: (profiler, grads)."""
    module.manual_seed(0)
    model = module.nn.Sequential(module.nn.Linear(4, 8), module.nn.ReLU(),
                                 module.nn.Linear(8, 2))
    x = module.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    target = module.tensor(np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2))
    with module.profiler.profile(record_shapes=record_shapes) as prof:
        loss = module.nn.functional.mse_loss(model(x), target)
        loss.backward()
    return prof, [p.grad for p in model.parameters()]


def test_model_forward_backward_events_match_torch(torch):
    mine, _ = _model_step(tg)
    theirs, _ = _model_step(torch)
    a, b = _top_level(mine), _top_level(theirs)
    expected = ["aten::linear", "aten::relu", "aten::mse_loss", "aten::ones_like",
                "autograd::engine::evaluate_function: MseLossBackward0",
                "autograd::engine::evaluate_function: AddmmBackward0",
                "autograd::engine::evaluate_function: ReluBackward0",
                "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]
    for name in expected:
        assert a.get(name) == b.get(name), name
    assert a["aten::linear"] == 2 and a["autograd::engine::evaluate_function: "
                                        "torch::autograd::AccumulateGrad"] == 4
    shared = set(a) & set(b)
    assert {n: a[n] for n in shared} == {n: b[n] for n in shared}
    # each evaluate_function holds its node, named as the grad_fn
    for e in mine.events():
        if e.name.startswith("autograd::engine::evaluate_function: "):
            assert [c.name for c in e.cpu_children][:1] == [e.name.split(": ", 1)[1]]


def test_model_step_without_torch():
    prof, grads = _model_step(tg)
    counts = _top_level(prof)
    assert counts["aten::linear"] == 2 and counts["aten::relu"] == 1
    assert counts["autograd::engine::evaluate_function: AddmmBackward0"] == 2
    assert all(g is not None for g in grads)
    # the profiler changes no value: the same step unprofiled gives the same gradients
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 2))
    x = tg.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    target = tg.tensor(np.linspace(0, 1, 6, dtype=np.float32).reshape(3, 2))
    F.mse_loss(model(x), target).backward()
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_array_equal(p.grad.numpy(), g.numpy())


def _ops(module):
    a = module.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    with module.profiler.profile() as prof:
        b = a + 1
        c = 2 * b
        d = a @ a.t()
        e = a.sum()
        f = module.exp(a).mean(dim=0)
        g = a < 0
        h = -a
        i = a / 2
        j = a[0]
        k = a[:, 1:]
        m = module.nn.functional.softmax(a, dim=1)
        n = 1 - a
    return _top_level(prof)


def test_operator_and_method_event_names_match_torch(torch):
    assert _ops(tg) == _ops(torch)


def test_operator_event_names():
    assert _ops(tg) == {"aten::add": 1, "aten::mul": 1, "aten::t": 1, "aten::matmul": 1,
                        "aten::sum": 1, "aten::exp": 1, "aten::mean": 1, "aten::lt": 1,
                        "aten::neg": 1, "aten::div": 1, "aten::select": 1, "aten::slice": 1,
                        "aten::softmax": 1, "aten::rsub": 1}


def test_record_shapes_and_grouping(torch):
    for module in (tg, torch):
        x = module.ones(3, 4)
        with module.profiler.profile(record_shapes=True) as prof:
            module.matmul(x, x.t())
            module.relu(x)
            module.relu(x[:2])
        relu = [e for e in prof.events() if e.name == "aten::relu"]
        assert [e.input_shapes for e in relu] == [[[3, 4]], [[2, 4]]]
        grouped = {(e.key, str(e.input_shapes)): e.count
                   for e in prof.key_averages(group_by_input_shape=True)}
        assert grouped[("aten::relu", "[[3, 4]]")] == 1
        assert grouped[("aten::relu", "[[2, 4]]")] == 1
        assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    x = tg.ones(2)
    with profile() as prof:                 # without record_shapes: no shapes kept
        tg.relu(x)
    assert [e.input_shapes for e in prof.events()] == [[]]
    assert "Input Shapes" not in prof.key_averages().table()


def test_averages_not_grouped_by_shape_blank_the_shapes(torch):
    # A real script's table(record_shapes=True, key_averages()) has no Input Shapes column.
    for module in (tg, torch):
        with module.profiler.profile(record_shapes=True) as prof:
            module.nn.functional.linear(module.ones(3, 4), module.ones(2, 4), module.ones(2))
        averages = {e.key: e for e in prof.key_averages()}
        assert averages["aten::linear"].input_shapes == ""
        assert "Input Shapes" not in prof.key_averages().table()
        grouped = {e.key: e for e in prof.key_averages(group_by_input_shape=True)}
        assert grouped["aten::linear"].input_shapes == [[3, 4], [2, 4], [2]]


def test_ops_nest_under_record_function_and_times_are_consistent():
    x = tg.ones(64, 64)
    with profile() as prof:
        with record_function("outer"):
            y = tg.matmul(x, x)
            with record_function("inner"):
                z = tg.relu(y) + 1
    by_name = {e.name: e for e in prof.events()}
    outer, inner = by_name["outer"], by_name["inner"]
    assert [c.name for c in outer.cpu_children] == ["aten::matmul", "inner"]
    assert [c.name for c in inner.cpu_children] == ["aten::relu", "aten::add"]
    assert _top_level(prof) == {"outer": 1}
    for e in prof.events():
        assert e.cpu_time_total >= 0
        assert e.self_cpu_time_total == pytest.approx(
            e.cpu_time_total - sum(c.cpu_time_total for c in e.cpu_children))
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end <= e.time_range.end
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["outer"].cpu_time_total >= averages["inner"].cpu_time_total + \
        averages["aten::matmul"].cpu_time_total - 1e-6
    total = prof.key_averages().self_cpu_time_total
    assert total == pytest.approx(outer.cpu_time_total)


def test_table_rows_sorted_as_asked():
    x = tg.ones(8, 8)
    with profile() as prof:
        for _ in range(3):
            x.sum()
        for _ in range(2):
            tg.exp(x)
        tg.relu(x)
    lines = prof.key_averages().table(sort_by="count", row_limit=2).splitlines()
    assert [line.split()[0] for line in lines[3:5]] == ["aten::sum", "aten::exp"]
    assert [line.split()[-1] for line in lines[3:5]] == ["3", "2"]
    assert lines[5].startswith("---") and lines[-1].startswith("Self CPU time total: ")
    for key in ("cpu_time_total", "self_cpu_time_total"):
        table = prof.key_averages().table(sort_by=key, row_limit=10)
        names = [line.split()[0] for line in table.splitlines()[3:6]]
        values = {e.key: getattr(e, key) for e in prof.key_averages()}
        assert [values[n] for n in names] == sorted(values.values(), reverse=True)
    assert tg.profiler.EventList().table() == ""


def test_no_events_when_off():
    x = tg.ones(3)
    with profile() as prof:
        tg.exp(x)
    count = len(prof.events())
    tg.exp(x) + x
    x.sum().item()
    assert len(prof.events()) == count
    with record_function("outside"):
        tg.exp(x)
    assert len(prof.events()) == count
    with profile(enabled=False) as off:
        tg.exp(x)
    assert len(off.events()) == 0


def test_profiler_inside_no_grad_and_inference_mode():
    x = tg.ones(3, requires_grad=True)
    with tg.no_grad():
        with profile() as prof:
            y = tg.relu(x) * 2
    assert _top_level(prof) == {"aten::relu": 1, "aten::mul": 1}
    assert not y.requires_grad
    with tg.inference_mode():
        with profile() as prof:
            tg.tanh(x).sum()
    assert _top_level(prof) == {"aten::tanh": 1, "aten::sum": 1}


def test_exception_inside_the_block_and_inside_an_op(torch):
    for module in (tg, torch):
        x = module.ones(2, 3)
        with pytest.raises(ValueError, match="stop"):
            with module.profiler.profile() as prof:
                with module.profiler.record_function("blk"):
                    module.sigmoid(x)
                    raise ValueError("stop")
        names = [e.name for e in prof.events()]
        assert names[:2] == ["blk", "aten::sigmoid"]
        blk = prof.events()[0]
        assert blk.cpu_time_total >= 0
        # an op that raises is still one event, closed; the next one is not nested in it
        with module.profiler.profile() as prof:
            with pytest.raises(RuntimeError):
                module.matmul(x, x)
            module.exp(x)
        top = _top_level(prof)
        assert top["aten::matmul"] == 1 and top["aten::exp"] == 1
    # and the profiler is off afterwards: a later profile starts clean
    with profile() as prof:
        tg.exp(tg.ones(1))
    assert _top_level(prof) == {"aten::ones": 1, "aten::exp": 1}


def test_backward_nodes_of_create_graph_and_custom_function():
    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with profile() as prof:
        y = Square.apply(x).sum()
        (g,) = tg.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
    names = _top_level(prof)
    assert names["Square"] == 1         # the forward, labelled as PyTorch's
    assert [c.name for c in prof.events()[0].cpu_children] == ["aten::mul"]
    assert names["autograd::engine::evaluate_function: SquareBackward"] == 1
    assert names["autograd::engine::evaluate_function: SumBackward0"] >= 2
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_chrome_trace(tmp_path):
    x = tg.ones(3, 3)
    with profile(record_shapes=True) as prof:
        with record_function("blk"):
            tg.sigmoid(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    by_name = {e["name"]: e for e in events}
    assert by_name["blk"]["cat"] == "user_annotation"
    assert by_name["aten::sigmoid"]["cat"] == "cpu_op"
    assert by_name["aten::sigmoid"]["args"]["Input Dims"] == [[3, 3]]
    assert by_name["blk"]["dur"] >= by_name["aten::sigmoid"]["dur"]


def test_legacy_profiler_function_events(torch):
    for module in (tg, torch):
        x = module.ones(2, 2)
        with module.autograd.profiler.profile() as prof:
            module.exp(x)
        assert [e.name for e in prof.function_events] == ["aten::exp"]
        assert prof.key_averages()[0].key == "aten::exp"
        assert prof.key_averages()[0].count == 1


def _optimizer_labels(module):
    module.manual_seed(0)

    class Sub(module.optim.SGD):
        def step(self, closure=None):           # a subclass's step calling super().step()
            return super().step(closure)

    model = module.nn.Linear(3, 1)
    opt = Sub(model.parameters(), lr=0.1)
    model(module.ones(2, 3)).sum().backward()
    with module.profiler.profile() as prof:
        opt.zero_grad()
        model(module.ones(2, 3)).sum().backward()
        opt.step()
    top = _top_level(prof)
    return {k: v for k, v in top.items() if k.startswith("Optimizer.")}


def test_optimizer_step_and_zero_grad_labels_match_torch(torch):
    assert _optimizer_labels(tg) == _optimizer_labels(torch) == {
        "Optimizer.zero_grad#Sub.zero_grad": 1, "Optimizer.step#Sub.step": 1}


def _scheduled(module):
    x = module.ones(2)
    traces = []

    def ready(prof):
        traces.append([e.name for e in prof.events() if e.cpu_parent is None])

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (torch warns that cycles clear the events)
        sched = module.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
        with module.profiler.profile(schedule=sched, on_trace_ready=ready) as prof:
            for i in range(9):
                module.exp(x) if i % 2 else module.relu(x)
                prof.step()
        first = [(e.key, e.count) for e in prof.key_averages() if e.key != "aten::clamp_min"]
        with module.profiler.profile(schedule=module.profiler.schedule(wait=0, warmup=0, active=3),
                                     on_trace_ready=ready) as prof:
            for i in range(2):
                module.exp(x)
                prof.step()
    steps = [e for e in prof.events() if e.name == "ProfilerStep*"]
    inside = [c.name for c in steps[0].cpu_children]
    return traces, first, [(e.key, e.count) for e in prof.key_averages()], inside


def test_schedule_steps_and_trace_ready_match_torch(torch):
    mine = _scheduled(tg)
    assert mine == _scheduled(torch)[:3] + (mine[3],)
    assert mine[0] == [["ProfilerStep*"] * 2, ["ProfilerStep*"] * 2, ["ProfilerStep*"] * 3]
    assert mine[3] == ["aten::exp"]


def test_sort_by_device_and_memory_keys_and_trace_ready_at_exit(tmp_path):
    x = tg.ones(4)
    ready = []
    with profile(on_trace_ready=ready.append) as prof:     # no schedule: handed over at exit
        tg.exp(x)
        x.sum()
    assert ready == [prof]
    for key in ("cuda_time_total", "self_cuda_time_total", "self_cpu_memory_usage",
                "cpu_memory_usage", "xpu_time_total"):
        lines = prof.key_averages().table(sort_by=key, row_limit=-1).splitlines()
        assert sorted(line.split()[0] for line in lines[3:5]) == ["aten::exp", "aten::sum"]


def _grad_events(module):
    x = module.tensor([1.0, 2.0], requires_grad=True)
    w = module.tensor([1.0, 2.0], requires_grad=True)
    with module.profiler.profile() as prof:
        h = x * w
        y = h.exp().sum()
        module.autograd.grad(y, [x], retain_graph=True)
        module.autograd.grad(y, [h])
    return [(e.name, [c.name for c in e.cpu_children])
            for e in prof.events() if e.cpu_parent is None and "::engine::" in e.name]


def test_autograd_grad_captured_nodes_match_torch(torch):
    mine = _grad_events(tg)
    assert mine == _grad_events(torch)
    assert mine[3] == ("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", [])
    assert mine[-1] == ("autograd::engine::evaluate_function: MulBackward0", [])


def test_core_hooks_called_only_while_set():
    x = tg.ones(3, requires_grad=True)
    calls = []
    _core._set_profiler(lambda name, operands: calls.append((name, operands)) or None,
                        lambda token, result: None)
    try:
        y = tg.exp(x)
        z = (y + x).sum()
        z.backward()
    finally:
        _core._set_profiler(None, None)
    # (backward is a Tensor method's entry, which the core reports too; the profiler records
    # no event of its own for it: profiler._dispatch_only)
    assert [c[0] for c in calls] == ["exp", "add", "sum", "backward", "ones_like",
                                     "SumBackward0", "AddBackward0", "ExpBackward0",
                                     "torch::autograd::AccumulateGrad"]
    assert calls[1][1][0] is y and calls[1][1][1] is x      # the operands, as called
    assert calls[5][1] is None                               # a backward node
    tg.exp(x) + x
    x.sum()
    assert len(calls) == 9
    with profile():
        pass
    tg.exp(x)
    assert len(calls) == 9


def test_normalize_ops_and_graph_match_torch(torch):
    """F.normalize is Python in PyTorch: its events are its ops, clamp_min among them (tapegrad's
    called clamp(min=), which recorded ClampBackward1 where PyTorch has ClampMinBackward0)."""
    found = []
    for module in (tg, torch):
        x = module.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
        with module.profiler.profile() as prof:
            y = module.nn.functional.normalize(x)
        denominator = y.grad_fn.next_functions[1][0].next_functions[0][0]
        y.sum().backward()
        found.append((sorted(_top_level(prof)), type(denominator).__name__, x.grad.tolist()))
    assert found[0] == found[1]
    assert found[0][1] == "ClampMinBackward0"


def test_python_level_in_place_method_is_one_event(torch):
    for module in (tg, torch):
        x = module.tensor([0.5, 1.0])
        with module.profiler.profile(record_shapes=True) as prof:
            x.exp_()
        top = [e for e in prof.events() if e.cpu_parent is None]
        assert [e.name for e in top] == ["aten::exp_"]
        assert top[0].input_shapes == [[2]]
        np.testing.assert_allclose(x.numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


def test_detach_event_matches_torch(torch):
    found = []
    for module in (tg, torch):
        x = module.tensor([1.5], requires_grad=True)
        with module.profiler.profile() as prof:
            d = x.detach() * 2
        found.append(([e.name for e in prof.events() if e.cpu_parent is None], d.tolist()))
    assert found[0] == found[1] == (["aten::detach", "aten::mul"], [3.0])


def _flops_workload(module):
    conv = module.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    net = module.nn.Sequential(conv, module.nn.Flatten(), module.nn.Linear(64, 5))
    x = module.ones(2, 3, 8, 8)
    net(x)
    x @ x.transpose(-1, -2)                                     # a batched matmul
    x * x, x + x, x.mul(2.0)
    module.bmm(x[0], x[0]), module.mm(x[0, 0], x[0, 0])
    module.addmm(module.ones(5), module.ones(3, 4), module.ones(4, 5))
    module.baddbmm(module.ones(2, 3, 5), module.ones(2, 3, 4), module.ones(2, 4, 5))
    module.nn.functional.conv2d(module.ones(1, 4, 9, 9), module.ones(6, 2, 3, 3), None, 1, 2, 2, 2)
    module.nn.functional.linear(module.ones(3, 4), module.ones(5, 4))   # no bias: mm in torch
    module.matmul(module.ones(7, 4), module.ones(4, 3)), module.ones(2, 3, 4) @ module.ones(4, 5)
    module.matmul(module.ones(4, 3), module.ones(3))            # mv: not counted by either


def test_with_flops_counts_as_pytorch(torch):
    # A held-out script summed e.flops over key_averages() to report a model's FLOPs: 0 before.
    totals, by_op = [], []
    for module in (tg, torch):
        with module.profiler.profile(with_flops=True) as prof:
            _flops_workload(module)
        averages = prof.key_averages()
        totals.append((sum(e.flops for e in averages), averages.total_average().flops))
        by_op.append({e.key: e.flops for e in averages
                      if e.key in ("aten::conv2d", "aten::mul", "aten::add", "aten::baddbmm")})
    assert totals[0] == totals[1]
    assert by_op[0] == by_op[1]
    with tg.profiler.profile() as prof:                     # without with_flops: none counted
        _flops_workload(tg)
    assert all(e.flops == 0 for e in prof.events())
