"""Issue 20's table: big-array speed against PyTorch, small-array speed against another build.

    python bench/large_tensors.py [--rounds 9] [--n 1000000] [--baseline DIR] [--skip unary,chain]

Three parts, each printed as medians and ratios (tapegrad / other; below 1 is faster):

* unary   every unary op (and pow with a general exponent) at n elements, float32 and float64,
          forward and backward (autograd.grad: the VJP alone), tapegrad against PyTorch, both on
          one thread; the two run interleaved round by round in this process and are timed by the
          calling thread's CPU time (a loaded machine takes wall-clock time away at random);
          ratios are given as the median of the per-round ratios and as the ratio of the minima;
* chain   the 300-op chain (`* c`, `+ c`, `tanh`, `* w`, `sin`, float64) at n elements, forward
          and backward, against PyTorch, with 1 thread each (CPU time) and with 2 threads each
          (wall-clock time: meaningful only when the machine has two idle cores);
* small   per-op CPU time at sizes 1-16 (the same unary ops and `x * c + x`, one call each) of
          this tree against the build in DIR (--baseline, e.g. a checkout of main built in place):
          each tree runs in its own worker process and the parent alternates them round by
          round, so both see the same load.

Not collected by pytest (no test_ prefix): run it by hand.  It is slow on purpose: a noisy shared
machine needs the rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

UNARY = ["exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "erf", "sqrt", "rsqrt",
         "pow"]
ACTIVATIONS = ["gelu", "silu", "softplus", "elu"]
DOMAIN = {"log": (1e-3, 100.0), "log1p": (-0.9, 100.0), "sqrt": (1e-3, 100.0),
          "rsqrt": (1e-3, 100.0), "pow": (1e-3, 10.0)}
POW_EXPONENT = 2.5      # a general exponent (PyTorch special-cases 2, 3, 0.5, -1, ...)
SMALL_SIZES = [1, 2, 4, 8, 16]


def op_of(lib, name):
    if name == "pow":
        return lambda x: lib.pow(x, POW_EXPONENT)
    if name in ACTIVATIONS:
        return getattr(lib.nn.functional, name)
    return getattr(lib, name)


def inputs(name, n, dtype, seed=0):
    lo, hi = DOMAIN.get(name, (-5.0, 5.0))
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)


def timed(fn, *args, clock=time.perf_counter):
    t0 = clock()
    fn(*args)
    return clock() - t0


def cpu_timed(fn, *args):
    """The calling thread's CPU time: on one thread each, what the op costs, unaffected by the time
    other processes of a loaded machine take the CPU away (wall-clock minima are not, when the
    load exceeds the cores)."""
    return timed(fn, *args, clock=time.thread_time)


def median_ratio(a, b):
    return float(np.median(np.asarray(a) / np.asarray(b)))


def ratios(a, b):
    """'median of per-round ratios / ratio of minima': the second is the steadier on a loaded
    machine, where a round's time only ever grows (a descheduled process loses whole slices)."""
    return f"{median_ratio(a, b):.2f} / {min(a) / min(b):.2f}"


def bench_unary(tg, torch, n, rounds, names):
    tg.set_num_threads(1)
    torch.set_num_threads(1)
    print(f"\n## Unary ops at n = {n:,}, 1 thread each: tapegrad / PyTorch (median of per-round "
          "ratios / ratio of minima; times: minima of the thread's CPU time).  fwd: the op on a tensor that does not "
          "require grad; bwd: autograd.grad of the op's output (its VJP alone)\n")
    print("| op | f32 fwd ms (tg / torch) | ratio | f64 fwd ms (tg / torch) | ratio "
          "| f32 bwd ms (tg / torch) | ratio | f64 bwd ms (tg / torch) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        fwd, bwd = [], []
        for dtype in (np.float32, np.float64):
            x = inputs(name, n, dtype)
            g = inputs("exp", n, dtype, seed=1)
            a, b = tg.tensor(x), torch.tensor(x)
            fa, fb = op_of(tg, name), op_of(torch, name)
            fa(a), fb(b)                                # warm-up
            ta, tb = [], []
            for _ in range(rounds):
                ta.append(cpu_timed(fa, a))
                tb.append(cpu_timed(fb, b))
            fwd += [f"{1e3 * min(ta):.2f} / {1e3 * min(tb):.2f}", ratios(ta, tb)]
            ga, gb = tg.tensor(g), torch.tensor(g)
            xa, xb = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            ya, yb = fa(xa), fb(xb)

            def grad_a():
                tg.autograd.grad(ya, xa, ga, retain_graph=True)

            def grad_b():
                torch.autograd.grad(yb, xb, gb, retain_graph=True)

            grad_a(), grad_b()
            ta, tb = [], []
            for _ in range(rounds):
                ta.append(cpu_timed(grad_a))
                tb.append(cpu_timed(grad_b))
            bwd += [f"{1e3 * min(ta):.2f} / {1e3 * min(tb):.2f}", ratios(ta, tb)]
        print(f"| {name} | " + " | ".join(fwd + bwd) + " |", flush=True)


def chain(lib, x, w, cycles=60, c=0.999, d=0.001):
    for _ in range(cycles):
        x = x * c
        x = x + d
        x = lib.tanh(x)
        x = x * w
        x = lib.sin(x)
    return x


def bench_chain(tg, torch, n, rounds):
    print(f"\n## 300-op chain (* c, + c, tanh, * w, sin), float64, n = {n:,}, forward + backward"
          "\n")
    print("| threads | tapegrad ms (min) | PyTorch ms (min) | ratio (median / of minima) |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(1)
    x0 = rng.uniform(-1, 1, n)
    w0 = rng.uniform(0.5, 1.5, n)
    for threads in (1, 2):
        tg.set_num_threads(threads)
        torch.set_num_threads(threads)

        def run(lib):
            x = lib.tensor(x0, requires_grad=True)
            w = lib.tensor(w0, requires_grad=True)
            chain(lib, x, w).sum().backward()

        run(tg), run(torch)
        # One thread each: the calling thread's CPU time (see cpu_timed); two: wall-clock time,
        # which is what the second thread buys (only meaningful on an otherwise idle machine).
        clock = cpu_timed if threads == 1 else timed
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(clock(run, tg))
            tb.append(clock(run, torch))
        print(f"| {threads} ({'CPU' if threads == 1 else 'wall'}) | {1e3 * min(ta):.0f} | "
              f"{1e3 * min(tb):.0f} | {ratios(ta, tb)} |", flush=True)


# -- small sizes: one worker process per tree --------------------------------------------------

SMALL_OPS = UNARY + ACTIVATIONS + ["mul_add"]
CALLS = 300         # per timing; each round keeps the best of REPEATS timings per case
REPEATS = 5


def worker():
    """Serve timing requests on stdin: one JSON line per round, answered with per-op us/call."""
    sys.path.insert(0, os.getcwd())
    import tapegrad as tg
    tg.set_num_threads(1)
    cases = []
    for name in SMALL_OPS:
        for size in SMALL_SIZES:
            for dtype in (np.float32, np.float64):
                x = tg.tensor(inputs(name, size, dtype))
                fn = (lambda t: t * 1.5 + t) if name == "mul_add" else op_of(tg, name)
                cases.append((f"{name} {size} {np.dtype(dtype).name}", fn, x))
    for fn_case in cases:
        fn_case[1](fn_case[2])
    for line in sys.stdin:
        if not line.strip():
            break
        out = {}
        for key, fn, x in cases:
            best = float("inf")
            for _ in range(REPEATS):
                t0 = time.thread_time()         # CPU time: robust to a loaded machine
                for _ in range(CALLS):
                    fn(x)
                best = min(best, time.thread_time() - t0)
            out[key] = best / CALLS * 1e6
        print(json.dumps(out), flush=True)


def start_worker(tree):
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], cwd=tree,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def bench_small(baseline, rounds):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = {"this": start_worker(here), "base": start_worker(os.path.abspath(baseline))}
    times = {"this": [], "base": []}
    for r in range(rounds):
        order = ("this", "base") if r % 2 == 0 else ("base", "this")
        for who in order:
            procs[who].stdin.write("go\n")
            procs[who].stdin.flush()
            times[who].append(json.loads(procs[who].stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"\n## Sizes 1-16: per-op time, this tree / {baseline} (ratio of the minima over "
          f"{rounds} alternated rounds, each the best of {REPEATS} x {CALLS} calls)\n")
    keys = list(times["this"][0])
    ratio = {k: min(t[k] for t in times["this"]) / min(t[k] for t in times["base"])
             for k in keys}
    print("| op | " + " | ".join(f"size {s}" for s in SMALL_SIZES) + " |")
    print("|---|" + "---|" * len(SMALL_SIZES))
    for name in SMALL_OPS:
        row = []
        for size in SMALL_SIZES:
            rs = [ratio[f"{name} {size} {dt}"] for dt in ("float32", "float64")]
            row.append(" / ".join(f"{v:.2f}" for v in rs))
        print(f"| {name} (f32 / f64) | " + " | ".join(row) + " |")
    allr = np.array(list(ratio.values()))
    base_us = np.median([min(t[k] for t in times["base"]) for k in keys])
    print(f"\nAll {len(allr)} cases: median ratio {np.median(allr):.3f}, geometric mean "
          f"{np.exp(np.mean(np.log(allr))):.3f}, max {allr.max():.2f} "
          f"(baseline median {base_us:.2f} us/call)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--baseline", help="a built tapegrad source tree to compare sizes 1-16 with")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: unary,chain,small")
    ap.add_argument("--ops", default=",".join(UNARY + ACTIVATIONS),
                    help="comma-separated unary ops to time (default: all)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker()
    skip = set(filter(None, args.skip.split(",")))
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import tapegrad as tg
    import torch
    torch.set_num_interop_threads(1)
    print(f"tapegrad {tg.__file__}; torch {torch.__version__}; {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}")
    if "unary" not in skip:
        bench_unary(tg, torch, args.n, args.rounds, args.ops.split(","))
    if "chain" not in skip:
        bench_chain(tg, torch, args.n, max(3, args.rounds // 3))
    if "small" not in skip and args.baseline:
        bench_small(args.baseline, args.rounds)


if __name__ == "__main__":
    main()
