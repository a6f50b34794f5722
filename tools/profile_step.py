"""Where a training step of the bench workloads spends its time, eager or replayed, on this host.

    python tools/profile_step.py lenet replay            # perf samples of the steady-state loop
    python tools/profile_step.py lstm eager --seconds 20
    python tools/profile_step.py mlp numpy --callgrind --steps 20   # instructions per step
    python tools/profile_step.py lenet --apart --rounds 30   # replay / eager, one process each

Workloads: lenet, lstm, encoder (bench/test_layers.py, stepped by bench/test_compile.py's
_layer_step: model and loss in one tapegrad.compile'd call for `replay`, zero_grad and SGD
outside) and mlp (tapegrad.bench.mlp_contenders: `numpy` is the hand-written step).  One thread
everywhere.

A whole-process profile of a step is mostly the interpreter starting and importing (a LeNet run of
a few hundred steps was half parser and import time).  Here the step runs in a child process that
warms up first; only then is it sampled:

- perf (default): `perf record -p CHILD` for --seconds of the loop, then the shares per shared
  object and the top symbols.  Samples count only the child's CPU time, so a loaded host slows the
  run but barely moves the shares.
- --callgrind: the child runs under valgrind with instrumentation off, switches it on around
  --steps steps (callgrind_control), and the top functions are printed as instructions per step:
  exact and independent of load, but blind to memory stalls and page faults.
- --apart: no profiler; the two modes (eager and replay; for mlp numpy too) each in its own worker
  process, one step of each in turn round after round, thread CPU time per step, and the minor
  page faults per step.  bench/test_compile.py times both modes in one process (round-robin
  there too): a process that also holds the replay's buffers keeps the heap its eager steps free
  from being trimmed, and its eager step stops paying page faults that a script training eagerly
  pays at every step (LeNet: ~600 a step alone, ~4 beside a replay), so that ratio is the one
  against the better-placed eager.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import json
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ("lenet", "lstm", "encoder", "mlp")


def make_step(workload: str, mode: str):
    """The step function of `workload` run `mode`-wise (eager, replay; numpy for mlp)."""
    sys.path.insert(0, ROOT)
    import numpy as np
    import tapegrad as tg
    from tapegrad import bench as B
    tg.set_num_threads(1)
    if workload == "mlp":
        ways = B.mlp_contenders({"tapegrad": tg}, compiled=True)
        way = ways[{"numpy": "numpy", "eager": "tapegrad", "replay": "tapegrad replay"}[mode]]
        args = way.setup()
        return lambda: way.run(*args)
    if mode == "numpy":
        raise SystemExit(f"{workload} has no numpy step (only mlp has)")
    spec = importlib.util.spec_from_file_location(
        "_bench_compile", os.path.join(ROOT, "bench", "test_compile.py"))
    bench_compile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_compile)
    _, build, data = bench_compile._layer_workloads()[workload]
    x, y = data(np.random.default_rng(0))
    tg.manual_seed(0)
    _, way = bench_compile._layer_step(build(tg), x, y, mode == "replay")
    args = way.setup()
    return lambda: way.run(*args)


def child(workload: str, mode: str, steps: int) -> None:
    """Warm up, say "ready", then loop: `steps` steps with callgrind's instrumentation on around
    them (steps > 0), or until SIGINT; print the steps run and the CPU time per step."""
    sys.modules.setdefault("torch", None)       # (bench/test_layers.py imports torch if it can)
    step = make_step(workload, mode)
    for _ in range(4):
        step()
    print("ready", flush=True)
    n, t0 = 0, time.thread_time()
    if steps > 0:
        ctl = ["callgrind_control", "-i"]
        subprocess.run(ctl + ["on", str(os.getpid())], capture_output=True, check=True)
        for n in range(1, steps + 1):
            step()
        subprocess.run(ctl + ["off", str(os.getpid())], capture_output=True, check=True)
    else:
        try:
            while True:
                step()
                n += 1
        except KeyboardInterrupt:
            pass
    print(f"{n} steps, {(time.thread_time() - t0) / max(n, 1) * 1e3:.3f} ms CPU per step",
          flush=True)


def serve(workload: str, mode: str) -> None:
    """--apart's worker: warm up, then for each line on stdin run one step and answer its thread
    CPU time and minor page faults as JSON."""
    sys.modules.setdefault("torch", None)
    step = make_step(workload, mode)
    for _ in range(4):
        step()
    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.thread_time()
        step()
        t = time.thread_time() - t0
        print(json.dumps([t, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0]),
              flush=True)


def run_apart(args) -> None:
    modes = ["eager", "replay"] + (["numpy"] if args.workload == "mlp" else [])
    procs = {}
    for m in modes:
        args.mode = m
        procs[m] = spawn(args, serve=True)
    times = {m: [] for m in modes}
    faults = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            procs[m].stdin.write("go\n")
            procs[m].stdin.flush()
            t, f = json.loads(procs[m].stdout.readline())
            times[m].append(t)
            faults[m].append(f)
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"{args.workload}, one process per mode, {args.rounds} alternated rounds (thread CPU "
          "time per step, median; minor page faults per step, median):")
    for m in modes:
        print(f"  {m:7s} {statistics.median(times[m]) * 1e3:9.3f} ms  "
              f"{statistics.median(faults[m]):6.0f} faults")
    for base in [m for m in ("eager", "numpy") if m in modes]:
        r = [a / b for a, b in zip(times["replay"], times[base])]
        q = statistics.quantiles(r, n=4)
        print(f"  replay / {base}: ratio of medians "
              f"{statistics.median(times['replay']) / statistics.median(times[base]):.3f}; "
              f"per-round ratios median {statistics.median(r):.3f}, IQR {q[0]:.3f}-{q[2]:.3f}")


def spawn(args, prefix=(), serve=False):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = list(prefix) + [sys.executable, os.path.abspath(__file__),
                          "--serve" if serve else "--child", args.workload, args.mode,
                          "--steps", str(args.steps if args.callgrind else 0)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.PIPE if serve else None)
    for line in proc.stdout:
        if line.strip() == "ready":
            return proc
    raise SystemExit(f"the step process ended before it was ready (exit {proc.wait()})")


def run_perf(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        proc = spawn(args)
        try:
            subprocess.run(["perf", "record", "-q", "-F", "2000", "-p", str(proc.pid), "-o", data,
                            "--", "sleep", str(args.seconds)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            proc.send_signal(signal.SIGINT)
            print(proc.communicate()[0].strip())
        report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                 "--sort", "dso,sym", "-g", "none"], capture_output=True,
                                text=True, check=True).stdout
    rows = []
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*?)\s*$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3).split()[0]))
    by_dso: dict[str, float] = {}
    for share, dso, _ in rows:
        by_dso[dso] = by_dso.get(dso, 0.0) + share
    print(f"\nshares of the {args.workload} {args.mode} loop's CPU samples, by shared object:")
    for dso, share in sorted(by_dso.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {share:6.2f}%  {dso}")
    print("top symbols:")
    for share, dso, sym in rows[:args.top]:
        print(f"  {share:6.2f}%  {sym}  ({dso})")


def run_callgrind(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = spawn(args, ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no",
                            f"--callgrind-out-file={out}"])
        print(proc.communicate()[0].strip())
        text = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True,
                              check=True).stdout
    rows = re.findall(r"^\s*([\d,]+) \([\s\d.]+%\)\s+(\S.*?)\s*$", text, re.M)
    total = int(rows[0][0].replace(",", "")) if rows else 0
    print(f"\n{total / args.steps / 1e6:,.2f} M instructions per {args.workload} {args.mode} "
          "step; the top functions (M per step, share):")
    for count, where in rows[1:args.top + 1]:
        n = int(count.replace(",", ""))
        fn = where.split(":", 1)[-1].split(" [")[0]
        lib = os.path.basename(where.rsplit("[", 1)[-1].rstrip("]")) if "[" in where else ""
        print(f"  {n / args.steps / 1e6:8.3f}  {100 * n / total:5.1f}%  {fn}  ({lib})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workload", choices=WORKLOADS)
    p.add_argument("mode", nargs="?", default="replay", choices=("eager", "replay", "numpy"))
    p.add_argument("--seconds", type=float, default=10.0, help="perf: seconds sampled")
    p.add_argument("--callgrind", action="store_true", help="count instructions instead")
    p.add_argument("--steps", type=int, default=3, help="--callgrind: steps counted")
    p.add_argument("--top", type=int, default=20, help="rows printed")
    p.add_argument("--apart", action="store_true", help="time the modes in separate processes")
    p.add_argument("--rounds", type=int, default=30, help="--apart: rounds")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.workload, args.mode, args.steps)
    elif args.serve:
        serve(args.workload, args.mode)
    elif args.apart:
        run_apart(args)
    elif args.callgrind:
        run_callgrind(args)
    else:
        run_perf(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
