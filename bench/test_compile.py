"""tapegrad.compile: eager vs replay vs PyTorch eager, and the cost of the capturing call.

Workloads (one group each; kinds in the summary: total = tapegrad eager, replay = the compiled
call replayed, capture = the capturing call (a fresh tapegrad.compile each round), torch =
PyTorch eager):

  chain    300 elementwise ops (tapegrad.bench.chain, 30 cycles) at size 1, float64, forward +
           backward of sum-weighted output: the per-op overhead (issue target: replay <= 0.1 us
           per op, PyTorch eager ~6.5 us per op)
  mixed    300 ops mixing * + tanh sin sigmoid exp (50 cycles) at size 1 and 100,000, float64,
           forward + backward (issue targets: replay <= 0.1 us per op at size 1, <= 1/60 of
           PyTorch eager); at size 1,000,000 timed round-robin (test_mixed_chain_interleaved:
           issue target replay <= 0.5x PyTorch eager; the fused loops of src/tapegrad/fusion.pxi
           run the 300 steps as one loop over cache-sized blocks, the backward recomputing each
           block's values instead of reading back 1.6 GB saved by the forward: 0.39-0.48x on a
           loaded host where PyTorch took 1.0-1.25 s, the transcendental kernels (run twice)
           being most of the time: README); test_mixed_chain_split_interleaved times forward
           and backward apart against PyTorch's and the kernels per element in cache
  call     `x * 2` and its backward at size 1, eager against replayed, round-robin in thread CPU
           time (test_call_path_interleaved: issue target replay < eager)
  poly     the polynomial fit iteration of test_training.py (forward + backward compiled, the
           manual SGD update outside), 2,000 points, float32
  mlp      the MLP 784-256-10 SGD step of test_training.py (model + loss compiled, zero_grad and
           the optimizer step outside), batch 64, float32; numpy = the hand-written step
  whole    the whole training step (zero_grad, forward, loss, backward, SGD with momentum or
           Adam) in one compiled function, for LeNet-5, the LSTM, the transformer encoder and the
           MLP, against the same function eager and PyTorch's eager step, one thread, thread CPU
           time (test_whole_step_interleaved: issue target the CNN and LSTM steps <= 0.8x eager)

Each benchmark first checks that the replayed values and gradients equal the eager ones.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import bench as B

CHAIN_CYCLES = 30
CHAIN_GROUP = "compile: chain of 300 elementwise ops, size 1, float64"
POLY_GROUP = f"compile: poly fit iteration, {B.POLY_POINTS} points, float32"


def describe(benchmark, group, workload, kind, n_ops=None):
    benchmark.group = group
    benchmark.extra_info.update(kind=kind, workload=workload)
    if n_ops:
        benchmark.extra_info["n_ops"] = n_ops


def chain_fn(lib):
    return lambda x: B.chain(x, CHAIN_CYCLES, lib.tanh, lib.exp, lib.log)


def chain_step(lib, fn, x, g):
    y = fn(x)
    y.backward(g)
    x.grad = None
    return y


@pytest.mark.parametrize("kind", ["total", "replay", "capture"])
def test_chain(benchmark, kind):
    describe(benchmark, CHAIN_GROUP, "compile chain 300 x size 1", kind, 10 * CHAIN_CYCLES)
    x = tg.tensor([0.3], dtype=tg.float64, requires_grad=True)
    g = tg.ones(1, dtype=tg.float64)
    eager = chain_fn(tg)
    compiled = tg.compile(eager)
    ye = chain_step(tg, eager, x, g)
    chain_step(tg, compiled, x, g)
    y = compiled(x)
    y.backward(g)
    want = tg.tensor([0.3], dtype=tg.float64, requires_grad=True)
    eager(want).backward(g)
    assert np.array_equal(y.detach().numpy(), ye.detach().numpy())
    assert np.array_equal(x.grad.numpy(), want.grad.numpy())
    x.grad = None
    if kind == "total":
        benchmark(chain_step, tg, eager, x, g)
    elif kind == "replay":
        benchmark(chain_step, tg, compiled, x, g)
        assert compiled.stats["captures"] == 1
    else:
        benchmark(lambda: chain_step(tg, tg.compile(eager), x, g))


def test_chain_torch(benchmark, torch):
    describe(benchmark, CHAIN_GROUP, "compile chain 300 x size 1", "torch", 10 * CHAIN_CYCLES)
    x = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    g = torch.ones(1, dtype=torch.float64)
    benchmark(chain_step, torch, chain_fn(torch), x, g)


MIXED_CYCLES = 50


def mixed_chain(lib, x):
    """300 elementwise ops (50 cycles of * + tanh sin sigmoid exp): the ops an ordinary function
    mixes, not only the ones the first replay supported; values stay in (1, e)."""
    for _ in range(MIXED_CYCLES):
        x = lib.exp(lib.sigmoid(lib.sin(lib.tanh(x * 0.5 + 0.25))))
    return x


def mixed_group(size):
    return f"compile: chain of 300 ops * + tanh sin sigmoid exp, size {size}, float64"


@pytest.mark.parametrize("size", [1, 100_000])
@pytest.mark.parametrize("kind", ["total", "replay"])
def test_mixed_chain(benchmark, kind, size):
    describe(benchmark, mixed_group(size), f"compile mixed chain 300 x size {size}", kind,
             6 * MIXED_CYCLES)
    base = np.linspace(-1, 1, size)
    x = tg.tensor(base, requires_grad=True)
    g = tg.ones(size, dtype=tg.float64)
    eager = lambda x: mixed_chain(tg, x)
    compiled = tg.compile(eager)
    for _ in range(2):
        y = compiled(x)
        y.backward(g)
        grad = x.grad.numpy().copy()
        x.grad = None
    want = tg.tensor(base, requires_grad=True)
    ye = eager(want)
    ye.backward(g)
    assert np.array_equal(y.detach().numpy(), ye.detach().numpy())
    assert np.array_equal(grad, want.grad.numpy())
    assert compiled.stats["replays"] == 1, compiled.explain()
    benchmark(chain_step, tg, eager if kind == "total" else compiled, x, g)


@pytest.mark.parametrize("size", [1, 100_000])
def test_mixed_chain_torch(benchmark, torch, size):
    describe(benchmark, mixed_group(size), f"compile mixed chain 300 x size {size}", "torch",
             6 * MIXED_CYCLES)
    x = torch.tensor(np.linspace(-1, 1, size), requires_grad=True)
    g = torch.ones(size, dtype=torch.float64)
    benchmark(chain_step, torch, lambda x: mixed_chain(torch, x), x, g)


MIXED_BIG = 1_000_000
MIXED_BIG_ROUNDS = 5


def test_mixed_chain_interleaved(bench_report, benchmark_disabled):
    """The mixed chain at size 1,000,000: tapegrad eager, its replay (fused) and PyTorch eager
    (when installed) one call each in turn, round after round (tapegrad.bench.time_contenders),
    so the host's load hits all alike; one thread each (conftest pins torch's; tapegrad's here),
    each call timed in thread CPU time (on a host loaded several times over its cores, wall time
    counts the waits for a core: PyTorch's 300-op call measured 4.6 s of wall time for 1.0 s of
    its own CPU time).  The smoke run (--benchmark-disable) takes one round at size 20,000."""
    size = 20_000 if benchmark_disabled else MIXED_BIG
    threads = tg.get_num_threads()
    tg.set_num_threads(1)
    try:
        base = np.linspace(-1, 1, size)
        x = tg.tensor(base, requires_grad=True)
        g = tg.ones(size, dtype=tg.float64)
        compiled = tg.compile(lambda x: mixed_chain(tg, x))
        ways = {"tapegrad": B.Contender(lambda: (tg, lambda x: mixed_chain(tg, x), x, g),
                                        chain_step),
                "tapegrad replay": B.Contender(lambda: (tg, compiled, x, g), chain_step)}
        try:
            import torch
        except ImportError:         # pragma: no cover - depends on the machine
            torch = None
        if torch is not None:
            xt = torch.tensor(base, requires_grad=True)
            gt = torch.ones(size, dtype=torch.float64)
            ways["torch"] = B.Contender(lambda: (torch, lambda x: mixed_chain(torch, x), xt, gt),
                                        chain_step)
        med, rounds = B.time_contenders(ways, 1 if benchmark_disabled else MIXED_BIG_ROUNDS,
                                        budget=0.0, warmup=0 if benchmark_disabled else 1,
                                        clock=time.thread_time)
    finally:
        tg.set_num_threads(threads)
    assert "fused" in compiled.explain(), compiled.explain()
    bench_report(f"interleaved, {mixed_group(size)}, median of {rounds} rounds (thread CPU "
                 "time): "
                 + ", ".join(f"{k} {v * 1e3:,.0f} ms" for k, v in med.items()))
    line = f"    tapegrad replay / tapegrad = {med['tapegrad replay'] / med['tapegrad']:.3f}"
    if "torch" in med:
        line += f";  tapegrad replay / torch = {med['tapegrad replay'] / med['torch']:.3f}"
    bench_report(line)


FLOOR_KERNELS = ("tanh", "sin", "sigmoid", "exp", "cos")
FLOOR_ROUNDS = 7


def _kernel_ns(lib, name, x, reps):
    """Best of 5 of `reps` calls of lib.name(x), less as many of lib.neg(x) (the call and its
    result's allocation, the same for both), in ns per element (thread CPU time)."""
    def best(fn):
        t = float("inf")
        for _ in range(5):
            t0 = time.thread_time()
            for _ in range(reps):
                fn(x)
            t = min(t, (time.thread_time() - t0) / reps)
        return t
    return (best(getattr(lib, name)) - best(lib.neg)) / x.numel() * 1e9


def test_mixed_chain_split_interleaved(bench_report, benchmark_disabled):
    """Where the mixed chain's replay at 1e6 spends its time, against PyTorch's eager: forward
    and backward of each timed apart, round-robin (one thread, thread CPU time), and the float64
    kernels' cost per element in cache (32,768 elements) in each library.  The replay is
    compute-bound: its forward is the sum of its kernels (the block size, 1k-16k elements,
    changes nothing), its backward runs them again (the recomputing group; a sin's cos comes
    from a sincos) plus the VJPs, ~1.3x the forward, while PyTorch's eager runs them once and
    pays 300 passes over memory each way.  (Measured in fuse48: reading back values saved by the
    forward instead of recomputing them costs about as much, 415 vs 425 ms in one process.)  The
    kernel costs are each call's less a neg's of the same size (call, allocation and write
    pass): indicative only."""
    torch = pytest.importorskip("torch")
    size = 20_000 if benchmark_disabled else MIXED_BIG
    threads, t_threads = tg.get_num_threads(), torch.get_num_threads()
    tg.set_num_threads(1)
    torch.set_num_threads(1)
    try:
        base = np.linspace(-1, 1, size)
        compiled = tg.compile(lambda x: mixed_chain(tg, x))
        runs = {"tapegrad replay": (tg, compiled, tg.tensor(base, requires_grad=True),
                                    tg.ones(size, dtype=tg.float64)),
                "torch": (torch, lambda x: mixed_chain(torch, x),
                          torch.tensor(base, requires_grad=True),
                          torch.ones(size, dtype=torch.float64))}
        split = {k: ([], []) for k in runs}
        rounds = 1 if benchmark_disabled else FLOOR_ROUNDS
        for r in range(rounds + 1):                 # round 0: capture and warm-up, not counted
            for name, (lib, fn, x, g) in runs.items():
                t0 = time.thread_time()
                y = fn(x)
                t1 = time.thread_time()
                y.backward(g)
                t2 = time.thread_time()
                x.grad = None
                if r:
                    split[name][0].append(t1 - t0)
                    split[name][1].append(t2 - t1)
        n, reps = 32_768, 3 if benchmark_disabled else 200
        ns = {}
        for lib in (tg, torch):
            x = lib.linspace(-1, 1, n, dtype=lib.float64)
            ns[lib.__name__] = {k: _kernel_ns(lib, k, x, reps) for k in FLOOR_KERNELS}
    finally:
        tg.set_num_threads(threads)
        torch.set_num_threads(t_threads)
    assert "recomputing" in compiled.explain() or benchmark_disabled, compiled.explain()
    med = {k: (float(np.median(f)), float(np.median(b))) for k, (f, b) in split.items()}
    bench_report(f"interleaved, {mixed_group(size)}, forward + backward apart, median of "
                 f"{rounds} rounds (thread CPU time): " + ", ".join(
                     f"{k} {f * 1e3:,.0f} + {b * 1e3:,.0f} ms" for k, (f, b) in med.items()))
    for lib, costs in ns.items():
        bench_report(f"    {lib} float64 kernels in cache, ns per element: "
                     + ", ".join(f"{k} {v:.2f}" for k, v in costs.items()))
    (rf, rb), (tf, tb) = med["tapegrad replay"], med["torch"]
    bench_report(f"    replay forward / torch forward = {rf / tf:.3f}, replay backward / torch "
                 f"backward = {rb / tb:.3f}, replay backward / replay forward = {rb / rf:.3f};  "
                 f"replay / torch = {(rf + rb) / (tf + tb):.3f}")


def double(x):
    return x * 2


def double_step(fn, x):
    x.grad = None
    fn(x).backward()


CALL_LOOP = 2_000           # calls per timed sample: one call is ~2-3 us, below the clock's grain
CALL_ROUNDS = 60


def test_call_path_interleaved(bench_report, benchmark_disabled):
    """`x * 2` and its backward on a one-element tensor, eager against replayed (issue target:
    replay < eager: the fixed cost of a replayed call, its backward node and its gradient
    hand-off is at most that of one recorded op), round-robin in one process, each sample
    CALL_LOOP steps in thread CPU time."""
    x = tg.tensor([1.5], requires_grad=True)
    compiled = tg.compile(double)
    for fn in (double, compiled, double, compiled):
        double_step(fn, x)
    assert compiled.stats["replays"] == 1, compiled.explain()
    loop = 1 if benchmark_disabled else CALL_LOOP

    def steps(fn):
        for _ in range(loop):
            double_step(fn, x)

    ways = {"tapegrad": B.Contender(lambda: (double,), steps),
            "tapegrad replay": B.Contender(lambda: (compiled,), steps)}
    med, rounds = B.time_contenders(ways, 1 if benchmark_disabled else CALL_ROUNDS, budget=0.0,
                                    warmup=0 if benchmark_disabled else 2,
                                    clock=time.thread_time)
    assert x.grad.item() == 2.0
    bench_report(f"interleaved, x * 2 + backward, size 1, median of {rounds} x {loop} calls "
                 "(thread CPU time): "
                 + ", ".join(f"{k} {v / loop * 1e6:,.2f} us" for k, v in med.items()))
    bench_report(f"    tapegrad replay / tapegrad = "
                 f"{med['tapegrad replay'] / med['tapegrad']:.3f}")


def poly_iteration(lib, forward, params, x, y):
    loss = forward(params, x, y)
    loss.backward()
    B.lib_poly_update(lib, params)
    return loss


@pytest.mark.parametrize("kind", ["total", "replay", "capture"])
def test_poly(benchmark, kind):
    describe(benchmark, POLY_GROUP, "compile poly fit", kind)
    x, y, coeffs = B.poly_problem()
    tx, ty = tg.from_numpy(x), tg.from_numpy(y)
    compiled = tg.compile(B.lib_poly_forward)
    # the replayed iterations follow the eager ones exactly
    pe, pc = B.lib_poly_params(tg, coeffs), B.lib_poly_params(tg, coeffs)
    for _ in range(3):
        le = poly_iteration(tg, B.lib_poly_forward, pe, tx, ty)
        lc = poly_iteration(tg, compiled, pc, tx, ty)
        assert le.item() == lc.item()
        assert [p.item() for p in pe] == [p.item() for p in pc]
    assert compiled.stats["replays"] == 2
    params = B.lib_poly_params(tg, coeffs)
    if kind == "total":
        benchmark(poly_iteration, tg, B.lib_poly_forward, params, tx, ty)
    elif kind == "replay":
        benchmark(poly_iteration, tg, compiled, params, tx, ty)
    else:
        benchmark(lambda: poly_iteration(tg, tg.compile(B.lib_poly_forward), params, tx, ty))


def test_poly_torch(benchmark, torch):
    describe(benchmark, POLY_GROUP, "compile poly fit", "torch")
    x, y, coeffs = B.poly_problem()
    params = B.lib_poly_params(torch, coeffs)
    benchmark(poly_iteration, torch, B.lib_poly_forward, params, torch.from_numpy(x),
              torch.from_numpy(y))


MLP_GROUP = "compile: MLP 784-256-10 SGD step, batch 64, float32"


@pytest.mark.parametrize("kind", ["total", "replay", "numpy"])
def test_mlp(benchmark, kind):
    describe(benchmark, MLP_GROUP, "compile mlp step", kind)
    params, x, y = B.mlp_problem()
    if kind == "numpy":
        p = {k: v.copy() for k, v in params.items()}
        benchmark(B.numpy_mlp_step, p, x, y)
        return
    model, loss_fn, opt = B.lib_mlp(tg, params)
    forward = (lambda x, y: loss_fn(model(x), y))
    compiled = tg.compile(forward)
    tx, ty = tg.from_numpy(x), tg.from_numpy(y)
    fn = compiled if kind == "replay" else forward
    for _ in range(2):
        opt.zero_grad()
        fn(tx, ty).backward()
        opt.step()
    if kind == "replay":
        assert compiled.stats["replays"] == 1, compiled.explain()

    def step():
        opt.zero_grad()
        loss = fn(tx, ty)
        loss.backward()
        opt.step()
        return loss

    benchmark(step)


# -- the layer workloads of bench/test_layers.py, replayed ------------------------------------------

def _layer_workloads():
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "_bench_layers", os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_layers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WORKLOADS


def _layer_step(model, x, y, compiled):
    """bench/test_layers.py's training step, with the model and the loss in one tapegrad.compile'd
    call when `compiled` (zero_grad and the optimizer step stay outside, as in the MLP)."""
    opt = tg.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = tg.nn.CrossEntropyLoss()

    def forward(xs, ys):
        out = model(xs)
        return loss_fn(out.reshape(-1, out.shape[-1]), ys.reshape(-1))

    fn = tg.compile(forward) if compiled else forward

    def step(xs, ys):
        opt.zero_grad()
        loss = fn(xs, ys)
        loss.backward()
        opt.step()
        return loss

    return fn, B.Contender(lambda: (tg.from_numpy(x), tg.from_numpy(y)), step)


LAYER_ROUNDS = 25


@pytest.mark.parametrize("workload", ["lenet", "lstm", "encoder"])
def test_layers_replay_interleaved(workload, bench_report, benchmark_disabled):
    """The LeNet-5, LSTM and transformer-encoder steps, eager against replayed, round-robin in one process, each step
    timed in thread CPU time (the host's load does not count) (issue target: replay <= 0.8x
    eager); the replayed steps first follow the eager ones exactly."""
    label, build, data = _layer_workloads()[workload]
    x, y = data(np.random.default_rng(0))
    threads = tg.get_num_threads()
    tg.set_num_threads(1)
    try:
        tg.manual_seed(0)
        eager_model = build(tg)
        replay_model = build(tg)
        replay_model.load_state_dict(eager_model.state_dict())
        _, eager = _layer_step(eager_model, x, y, False)
        compiled, replay = _layer_step(replay_model, x, y, True)
        for _ in range(3):
            assert eager.run(*eager.setup()).item() == replay.run(*replay.setup()).item()
        assert compiled.stats["replays"] == 2, compiled.explain()
        med, rounds = B.time_contenders({"tapegrad": eager, "tapegrad replay": replay},
                                        1 if benchmark_disabled else LAYER_ROUNDS, budget=0.0,
                                        warmup=0 if benchmark_disabled else 2,
                                        clock=time.thread_time)
    finally:
        tg.set_num_threads(threads)
    bench_report(f"interleaved, {label}, median of {rounds} steps (thread CPU time): "
                 + ", ".join(f"{k} {v * 1e3:,.2f} ms" for k, v in med.items()))
    bench_report(f"    tapegrad replay / tapegrad = "
                 f"{med['tapegrad replay'] / med['tapegrad']:.3f}")


MLP_ROUNDS = 60


def test_mlp_replay_interleaved(bench_report, benchmark_disabled):
    """The MLP step (tapegrad.bench.mlp_contenders: model and loss compiled, zero_grad and SGD
    outside) against the hand-written numpy step and tapegrad eager, round-robin in blocks of 5
    calls, thread CPU time (issue target: replay <= 0.85x numpy)."""
    threads = tg.get_num_threads()
    tg.set_num_threads(1)
    try:
        ways = B.mlp_contenders({"tapegrad": tg}, compiled=True)
        med, rounds = B.time_contenders(ways, 1 if benchmark_disabled else MLP_ROUNDS,
                                        budget=0.0, warmup=0 if benchmark_disabled else 5,
                                        block=5, clock=time.thread_time)
    finally:
        tg.set_num_threads(threads)
    bench_report(f"interleaved, {MLP_GROUP}, median of {rounds} x 5 steps (thread CPU time): "
                 + ", ".join(f"{k} {v * 1e6:,.0f} us" for k, v in med.items()))
    bench_report(f"    tapegrad replay / numpy = {med['tapegrad replay'] / med['numpy']:.3f};  "
                 f"tapegrad replay / tapegrad = {med['tapegrad replay'] / med['tapegrad']:.3f}")


# -- the whole training step compiled (zero_grad, forward, loss, backward, optimizer step) ---------

def _whole_step_model(lib, workload, optimizer):
    """(model, loss_fn, optimizer, x, y) of a whole-step workload in `lib` (its own initial
    weights: the timings do not depend on them)."""
    if workload == "mlp":
        params, x, y = B.mlp_problem()
        model, loss_fn, _ = B.lib_mlp(lib, params)
    else:
        _, build, data = _layer_workloads()[workload]
        x, y = data(np.random.default_rng(0))
        lib.manual_seed(0)
        model = build(lib)
        loss_fn = lib.nn.CrossEntropyLoss()
    opt = (lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if optimizer == "sgd"
           else lib.optim.Adam(model.parameters(), lr=1e-3))
    return model, loss_fn, opt, lib.from_numpy(x), lib.from_numpy(y)


def _whole_step(model, loss_fn, opt):
    """A training step as a script writes it under torch.compile: everything in one function."""
    def step(xs, ys):
        opt.zero_grad()
        out = model(xs)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), ys.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step


WHOLE_STEP_ROUNDS = 25


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("workload", ["lenet", "lstm", "encoder", "mlp"])
def test_whole_step_interleaved(workload, optimizer, bench_report, benchmark_disabled):
    """The whole training step (zero_grad, forward, loss, backward, optimizer step) in one
    tapegrad.compile'd function against the same function eager, and PyTorch's eager step,
    round-robin in one process, one thread, thread CPU time (issue target: the CNN and LSTM
    steps replayed <= 0.8x eager).  The replayed steps first follow the eager ones exactly."""
    torch = pytest.importorskip("torch")
    t_threads, threads = torch.get_num_threads(), tg.get_num_threads()
    torch.set_num_threads(1)
    tg.set_num_threads(1)
    try:
        ways, compiled = {}, None
        for name in ("tapegrad", "tapegrad whole-step replay"):
            model, loss_fn, opt, xs, ys = _whole_step_model(tg, workload, optimizer)
            fn = _whole_step(model, loss_fn, opt)
            if name != "tapegrad":
                fn = compiled = tg.compile(fn)
            ways[name] = B.Contender(lambda xs=xs, ys=ys: (xs, ys), fn)
        losses = [[w.run(*w.setup()).item() for w in ways.values()] for _ in range(3)]
        assert all(a == b for a, b in losses), losses
        assert compiled.stats["replays"] == 2, compiled.explain()
        state = _whole_step_model(torch, workload, optimizer)
        ways["torch"] = B.Contender(lambda s=state: s[3:], _whole_step(*state[:3]))
        med, rounds = B.time_contenders(ways, 1 if benchmark_disabled else WHOLE_STEP_ROUNDS,
                                        budget=0.0, warmup=0 if benchmark_disabled else 2,
                                        clock=time.thread_time)
    finally:
        tg.set_num_threads(threads)
        torch.set_num_threads(t_threads)
    bench_report(f"interleaved, whole step ({optimizer}), {workload}, median of {rounds} steps "
                 "(thread CPU time): " + ", ".join(f"{k} {v * 1e3:,.2f} ms"
                                                   for k, v in med.items()))
    bench_report(f"    whole-step replay / tapegrad = "
                 f"{med['tapegrad whole-step replay'] / med['tapegrad']:.3f};  "
                 f"whole-step replay / torch = "
                 f"{med['tapegrad whole-step replay'] / med['torch']:.3f}")
