"""Time tapegrad's vecmath kernels against numpy and PyTorch (1 thread) in one process.

    python tools/bench_vecmath.py [--n 1000000] [--rounds 31] [--level avx2|scalar] [--ops exp,sin]

For each op and dtype, the contenders run interleaved round by round (so load changes on a shared
machine hit them alike) and the table gives the medians in ms and the ratio to PyTorch.  Two
modes: "out" writes into a preallocated array (pure compute), "alloc" returns a new array each call
(what an eager op does: torch.exp(x), np.exp(x), ours into np.empty_like(x)).
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
           "sin": (-100, 100), "cos": (-100, 100), "tanh": (-10, 10), "sigmoid": (-20, 20)}


def numpy_op(name):
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
    header = (f"{'op':8s} {'dtype':7s} | {'ours out':>8s} {'torch out':>9s} {'ratio':>6s} | "
              f"{'ours':>7s} {'torch':>7s} {'numpy':>7s} {'ratio':>6s}")
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
                "numpy": lambda: numpy_op(name)(x, None if name != "sigmoid" else np_out.copy()),
            }
            if torch is not None:
                tx = torch.from_numpy(x)
                tout = torch.empty_like(tx)
                tf = getattr(torch, name)
                contenders["torch_out"] = lambda: tf(tx, out=tout)
                contenders["torch"] = lambda: tf(tx)
            times = {k: [] for k in contenders}
            for _ in range(args.rounds):
                for k, f in contenders.items():
                    t0 = time.perf_counter()
                    f()
                    times[k].append(time.perf_counter() - t0)
            med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
            t_out = med.get("torch_out", float("nan"))
            t_alloc = med.get("torch", float("nan"))
            print(f"{name:8s} {np.dtype(dtype).name:7s} | {med['ours_out']:8.3f} {t_out:9.3f} "
                  f"{med['ours_out'] / t_out:6.2f} | {med['ours']:7.3f} {t_alloc:7.3f} "
                  f"{med['numpy']:7.3f} {med['ours'] / t_alloc:6.2f}")


if __name__ == "__main__":
    main()
