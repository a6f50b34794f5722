"""Per-op speed of two or more builds of tapegrad, measured so that a loaded machine cancels out.

    python tools/compare_builds.py DIR_A DIR_B [DIR_C ...] [--rounds 150] [--calls 20]
                                   [--suite families|small]

Each DIR holds a `tapegrad/` package with its compiled modules (a `git archive` of a commit plus
the `.so` files of its build).  Timing each build in its own process, one after the other, does
not work on a shared machine: the same build measured against itself varied from 0.5x to 1.75x.
Here every build runs at once as a server process, and the driver hands each op's timed slices
to the builds in turn (the order rotated every round), so all builds see the same machine state
within milliseconds.  A slice is `--calls` calls timed in the server's thread CPU time; per op
and build the figure is the lower quartile of its slices (interference only adds time).

The first DIR is the reference.  The table gives each other build's ratio to it per op, with the
ratios of the first and second half of the rounds in parentheses: halves that disagree mean the
figure is noise.  Pass the reference twice (two copies of it) to see the resolution: the A/A
ratios of one such run were within 0.95-1.04.  The ops are small tensors (overhead-bound, the
glue code a compiler flag can change) across the op families: core arithmetic, unary, reduce,
shape, in-place, linalg, nn, a compiled (replayed) call and a create_graph double backward.
`--suite small` times instead single unary ops and activations at sizes 1, 4 and 16 (float32 and
float64, forward alone and forward + backward), where a Python wrapper or a per-call setup of the
vectorised kernels shows as a ratio.  `--suite replay` times issue 19's compiled (replayed)
workloads of bench/test_compile.py: a module's optimisation level (setup.py) is checked there.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def benchmarks():
    """The per-op benchmarks, each a callable doing one forward (and backward) pass."""
    import numpy as np

    import tapegrad as tg
    import tapegrad.nn.functional as F

    rng = np.random.default_rng(0)

    def leaf(*shape):
        return tg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    a, b, w = leaf(8, 8), leaf(8, 8), leaf(8, 8)
    logits, target = leaf(4, 10), tg.tensor([1, 2, 3, 4])
    m3 = leaf(2, 4, 8)

    def backward_of(f):
        def run():
            f().sum().backward()
        return run

    def nograd_forward():
        with tg.no_grad():
            a * b + a

    def inplace_chain():
        y = a * 1.0
        y.add_(b)
        y.mul_(b)
        y.clamp_(-1, 1)
        y.sum().backward()

    step = tg.compile(lambda x, y: ((x * y).sin() + x).exp().sum())

    def replayed():
        step(a, b).backward()

    def double_backward():
        (g,) = tg.autograd.grad((a * a * b).sin().sum(), a, create_graph=True)
        g.sum().backward()

    return {
        "core.add_mul": backward_of(lambda: a * b + a),
        "core.nograd_forward": nograd_forward,
        "unary.exp_sin_tanh": backward_of(lambda: a.exp().sin().tanh()),
        "unary.relu_sigmoid": backward_of(lambda: a.relu().sigmoid()),
        "reduce.sum_mean_dim": backward_of(lambda: a.sum(0) + a.mean(1)),
        "reduce.max_var": backward_of(lambda: a.max(1)[0] + a.var(0)),
        "shape.view_t_permute": backward_of(lambda: a.view(4, 16).t().reshape(8, 8).permute(1, 0)),
        "shape.cat_stack_index": backward_of(
            lambda: tg.cat([a, b], 0)[3:9] + tg.stack([a, b]).sum(0)[1:7]),
        "inplace.add_mul_clamp": inplace_chain,
        "linalg.matmul_mm": backward_of(lambda: (a @ b).mm(w)),
        "linalg.bmm": backward_of(lambda: tg.bmm(m3, m3.transpose(1, 2))),
        "nn.cross_entropy": backward_of(
            lambda: F.cross_entropy(logits, target) + F.log_softmax(logits, 1).mean()),
        "nn.layer_norm_mse": backward_of(lambda: F.mse_loss(F.layer_norm(a, (8,)), b)),
        "nn.linear_gelu": backward_of(lambda: F.gelu(F.linear(a, w))),
        "replay.compiled_call": replayed,
        "graph_vjp.double_backward": double_backward,
    }


# ops of the small suite: (name, forward of a tensor), each present in every build compared
SMALL_OPS = {
    "exp": lambda tg, F, x: x.exp(), "log": lambda tg, F, x: x.abs().log(),
    "tanh": lambda tg, F, x: x.tanh(), "sigmoid": lambda tg, F, x: x.sigmoid(),
    "sqrt": lambda tg, F, x: tg.sqrt(x), "rsqrt": lambda tg, F, x: tg.rsqrt(x),
    "sin": lambda tg, F, x: x.sin(), "erf": lambda tg, F, x: tg.erf(x),
    "relu": lambda tg, F, x: F.relu(x), "leaky_relu": lambda tg, F, x: F.leaky_relu(x),
    "elu": lambda tg, F, x: F.elu(x), "silu": lambda tg, F, x: F.silu(x),
    "gelu": lambda tg, F, x: F.gelu(x), "softplus": lambda tg, F, x: F.softplus(x),
    "mul": lambda tg, F, x: x * x,
}


def small_benchmarks():
    """Each SMALL_OPS op at sizes 1, 4, 16, float32/float64, forward ('f') and forward +
    backward ('fb').  sqrt/rsqrt/log get positive inputs (|x| + 0.5) so no NaN path is timed."""
    import numpy as np

    import tapegrad as tg
    import tapegrad.nn.functional as F

    rng = np.random.default_rng(0)
    out = {}
    for name, op in SMALL_OPS.items():
        for dt in ("float32", "float64"):
            for n in (1, 4, 16):
                v = rng.standard_normal(n).astype(dt)
                if name in ("sqrt", "rsqrt"):
                    v = np.abs(v) + 0.5
                x = tg.tensor(v)
                xg = tg.tensor(v, requires_grad=True)

                def fwd(op=op, x=x):
                    op(tg, F, x)

                def fwd_bwd(op=op, x=xg):
                    op(tg, F, x).sum().backward()
                tag = f"{name}.{dt[5:]}.{n}"
                out[tag + ".f"] = fwd
                out[tag + ".fb"] = fwd_bwd
    return out


def replay_benchmarks():
    """The replayed (tapegrad.compile) workloads of bench/test_compile.py, issue 19's: the chain
    of 300 elementwise ops at size 1 (per-op overhead of the replay), the mixed chain of 300 ops
    at sizes 1 and 10,000 (the fused loops), and the compiled MLP SGD step (batch 64)."""
    import numpy as np

    import tapegrad as tg
    from tapegrad import bench as B

    def mixed(x):
        for _ in range(50):
            x = tg.exp(tg.sigmoid(tg.sin(tg.tanh(x * 0.5 + 0.25))))
        return x

    def stepper(fn, size):
        x = tg.tensor(np.linspace(-1, 1, size), requires_grad=True)
        g = tg.ones(size, dtype=tg.float64)
        compiled = tg.compile(fn)

        def run():
            compiled(x).backward(g)
            x.grad = None
        return run

    params, x, y = B.mlp_problem()
    model, loss_fn, opt = B.lib_mlp(tg, params)
    forward = tg.compile(lambda xb, yb: loss_fn(model(xb), yb))
    xb, yb = tg.tensor(x), tg.tensor(y)
    return {
        "replay.chain_300_size1": stepper(lambda x: B.chain(x, 30, tg.tanh, tg.exp, tg.log), 1),
        "replay.mixed_300_size1": stepper(mixed, 1),
        "replay.mixed_300_size1e4": stepper(mixed, 10_000),
        "replay.mlp_step": lambda: B.compiled_mlp_step(forward, opt, xb, yb),
    }


SUITES = {"families": benchmarks, "small": small_benchmarks, "replay": replay_benchmarks}


def serve(expected_dir, suite="families"):
    """Server mode: answers each stdin line `op calls` with the thread CPU seconds per call."""
    import tapegrad
    if not os.path.abspath(tapegrad.__file__).startswith(os.path.abspath(expected_dir)):
        raise SystemExit(f"compare_builds: imported {tapegrad.__file__}, not {expected_dir}")
    ops = SUITES[suite]()
    for f in ops.values():
        for _ in range(30):
            f()
    print(" ".join(ops), flush=True)
    for line in sys.stdin:
        name, calls = line.split()
        f, calls = ops[name], int(calls)
        start = time.thread_time()
        for _ in range(calls):
            f()
        print((time.thread_time() - start) / calls, flush=True)


def lower_quartile(values):
    return statistics.quantiles(values, n=4)[0]


def compare(dirs, rounds, calls, suite="families"):
    """Runs the lockstep measurement and prints the ratio table."""
    servers = []
    for d in dirs:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(d), OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", TAPEGRAD_NUM_THREADS="1")
        servers.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", d,
                                         "--suite", suite],
                                        env=env, cwd=d, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True))
    ops = [s.stdout.readline().split() for s in servers][0]
    times = [{op: [] for op in ops} for _ in dirs]
    started, load = time.time(), os.getloadavg()[0]
    for r in range(rounds):
        order = [(r + i) % len(dirs) for i in range(len(dirs))]
        for op in ops:
            for i in order:
                servers[i].stdin.write(f"{op} {calls}\n")
                servers[i].stdin.flush()
                times[i][op].append(float(servers[i].stdout.readline()))
    for s in servers:
        s.stdin.close()
        s.wait()
    half = rounds // 2
    print(f"{rounds} rounds x {calls} calls in {time.time() - started:.0f} s, "
          f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; ratio to {dirs[0]} "
          "(first half, second half)")
    print(f"{'op':28s}" + "".join(f"{os.path.basename(os.path.normpath(d)):>24s}"
                                  for d in dirs[1:]))
    for op in ops:
        ref = times[0][op]
        cells = []
        for t in times[1:]:
            x = t[op]
            cells.append(f"{lower_quartile(x) / lower_quartile(ref):.3f} "
                         f"({lower_quartile(x[:half]) / lower_quartile(ref[:half]):.2f},"
                         f"{lower_quartile(x[half:]) / lower_quartile(ref[half:]):.2f})")
        print(f"{op:28s}" + "".join(f"{c:>24s}" for c in cells))
    medians = [statistics.median(lower_quartile(t[op]) / lower_quartile(times[0][op])
                                 for op in ops) for t in times[1:]]
    print(f"{'median ratio':28s}" + "".join(f"{m:>24.3f}" for m in medians))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", help="directories each holding a built tapegrad/")
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--calls", type=int, default=20, help="calls per timed slice")
    parser.add_argument("--suite", choices=sorted(SUITES), default="families",
                        help="families: small tensors across the op families; small: unary ops "
                             "and activations at sizes 1-16")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.dirs[0], args.suite)
    elif len(args.dirs) < 2 or args.rounds < 4:
        parser.error("give at least two build directories and four rounds")
    else:
        compare(args.dirs, args.rounds, args.calls, args.suite)


if __name__ == "__main__":
    main()
