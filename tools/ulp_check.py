"""Long-run accuracy check of the vecmath kernels: millions of points per kernel, dtype and level.

    python tools/ulp_check.py [--points 4000000] [--ops exp,sin] [--levels scalar,avx2] [--seed 1]
                              [--mpmath-points 200000]

Inputs as in tests/test_vecmath.py (uniform in the exponent over the whole range plus a dense
share over the ordinary range, and the edge cases), in chunks of 1M; the reference is numpy's long
double (64-bit significand on x86-64) -- or mpmath where long double is not wider than double or
numpy lacks the function (erf), which is slow (~60 us a point): those kernels get --mpmath-points.  Prints per kernel the maximum error in ulps, the share of results not correctly rounded,
and the worst input; exits 1 if a bound (1 ulp float32, 2 ulp float64) is exceeded.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vecmath_support as vs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--points", type=int, default=4_000_000)
    ap.add_argument("--ops", default=",".join(vs.KERNELS))
    ap.add_argument("--levels", default=None, help="default: every level this machine runs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpmath-points", type=int, default=200_000)
    args = ap.parse_args()

    vm = vs.load()
    levels = args.levels.split(",") if args.levels else vm.levels()
    rng = np.random.default_rng(args.seed)
    chunk = 1_000_000
    failed = False
    print(f"{'level':6s} {'op':8s} {'dtype':7s} {'points':>9s} {'max ulp':>8s} {'>0.5ulp':>9s}  worst x")
    for level in levels:
        vm.set_level(level)
        for name in args.ops.split(","):
            for dtype in (np.float32, np.float64):
                t0 = time.perf_counter()
                worst, worst_x, count, not_rounded = -1.0, None, 0, 0
                edges = vs.edge_inputs(name, dtype)
                wide = vs.LONGDOUBLE_IS_WIDE and name in vs.LONG_DOUBLE_KERNELS
                points = args.points if wide else min(args.points, args.mpmath_points)
                while count < points:
                    x = vs.random_inputs(name, dtype, min(chunk, points - count), rng)
                    if count == 0:
                        x = np.concatenate([edges, x])
                    err = vs.ulp_errors(vm(name, x), vs.reference(name, x))
                    i = int(np.argmax(err))
                    if err[i] > worst:
                        worst, worst_x = float(err[i]), x[i]
                    not_rounded += int(np.count_nonzero(err > 0.5))
                    count += x.size
                bad = worst > vs.ULP_BOUND[dtype]
                failed |= bad
                print(f"{level:6s} {name:8s} {np.dtype(dtype).name:7s} {count:9d} {worst:8.3f} "
                      f"{not_rounded / count:9.2e}  {worst_x!r}"
                      f"{'  EXCEEDS BOUND' if bad else ''}  ({time.perf_counter() - t0:.1f} s)",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
