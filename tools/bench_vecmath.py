"""Time tapegrad's vecmath kernels against numpy and PyTorch (1 thread) in one process.

    python tools/bench_vecmath.py [--n 1000000] [--rounds 31] [--level avx2|scalar] [--ops exp,sin]

For each op and dtype, the contenders run interleaved round by round (so load changes on a shared
machine hit them alike).  The table gives medians and minima in ms, and the ratio ours / PyTorch as
the median of the per-round ratios (robust when other processes steal the CPU) and as the ratio of
the minima.  Two modes: "out" writes into a preallocated array (pure compute), "alloc" returns a
new array each call (what an eager op does: torch.exp(x), np.exp(x), ours into np.empty_like(x)).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vecmath_support as vs  # noqa: E402

# Inputs where each function does real work (and is defined).
DOMAINS = {"exp": (-20, 20), "log": (1e-3, 100), "log1p": (-0.9, 100), "expm1": (-20, 20),
           "sin": (-100, 100), "cos": (-100, 100), "tanh": (-10, 10), "sigmoid": (-20, 20),
           "erf": (-4, 4)}


def numpy_op(name):
    """numpy's version of the op (None for erf, which numpy lacks)."""
    if name == "erf":
        return None
    if name == "sigmoid":
        return lambda x, out: np.divide(1.0, np.add(1.0, np.exp(np.negative(x, out=out), out=out),
                                                    out=out), out=out)
    return lambda x, out: getattr(np, name)(x, out=out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--level", choices=list(vs.LEVELS), default=None)
    ap.add_argument("--ops", default=",".join(vs.KERNELS))
    args = ap.parse_args()

    vm = vs.load()
    if args.level:
        vm.set_level(args.level)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"vecmath level {vm.level()}, n = {args.n}, {args.rounds} rounds, torch "
          f"{torch.__version__ if torch else 'absent'} (1 thread), numpy {np.__version__}")
    header = (f"{'op':8s} {'dtype':7s} | out: {'ours':>6s} {'torch':>6s} {'ratio':>5s} "
              f"{'min':>6s} {'tmin':>6s} {'ratio':>5s} | alloc: {'ours':>6s} {'torch':>6s} "
              f"{'numpy':>6s} {'ratio':>5s} {'ratio of min':>12s}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for name in args.ops.split(","):
        for dtype in (np.float32, np.float64):
            lo, hi = DOMAINS[name]
            x = rng.uniform(lo, hi, args.n).astype(dtype)
            out = np.empty_like(x)
            np_out = np.empty_like(x)
            contenders = {
                "ours_out": lambda: vm(name, x, out),
                "ours": lambda: vm(name, x),
            }
            np_fn = numpy_op(name)
            if np_fn is not None:
                contenders["numpy"] = lambda: np_fn(x, None if name != "sigmoid" else np_out.copy())
            if torch is not None:
                tx = torch.from_numpy(x)
                tout = torch.empty_like(tx)
                tf = getattr(torch, name)
                contenders["torch_out"] = lambda: tf(tx, out=tout)
                contenders["torch"] = lambda: tf(tx)
            times = {k: [] for k in contenders}
            for _ in range(args.rounds):
                for k, f in contenders.items():
                    t0 = time.thread_time()
                    f()
                    times[k].append(time.thread_time() - t0)
            t = {k: np.array(v) * 1e3 for k, v in times.items()}
            med = {k: float(np.median(v)) for k, v in t.items()}
            med.setdefault("numpy", float("nan"))
            low = {k: float(v.min()) for k, v in t.items()}
            if torch is None:
                print(f"{name:8s} {np.dtype(dtype).name:7s} | out: {med['ours_out']:6.3f} | alloc: "
                      f"{med['ours']:6.3f} numpy {med['numpy']:6.3f}")
                continue
            r_out = float(np.median(t["ours_out"] / t["torch_out"]))
            r_alloc = float(np.median(t["ours"] / t["torch"]))
            print(f"{name:8s} {np.dtype(dtype).name:7s} | out: {med['ours_out']:6.3f} "
                  f"{med['torch_out']:6.3f} {r_out:5.2f} {low['ours_out']:6.3f} "
                  f"{low['torch_out']:6.3f} {low['ours_out'] / low['torch_out']:5.2f} | alloc: "
                  f"{med['ours']:6.3f} {med['torch']:6.3f} {med['numpy']:6.3f} {r_alloc:5.2f} "
                  f"{low['ours'] / low['torch']:12.2f}", flush=True)

if __name__ == "__main__":
    main()
