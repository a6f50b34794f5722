"""Long-run accuracy check of the vecmath kernels: millions of points per kernel, dtype and level.

    python tools/ulp_check.py [--points 4000000] [--ops exp,sin] [--levels scalar,avx2] [--seed 1]
                              [--mpmath-points 200000]

Inputs as in tests/test_vecmath.py (uniform in the exponent over the whole range plus a dense
share over the ordinary range, and the edge cases), in chunks of 1M; the reference is numpy's long
double (64-bit significand on x86-64) -- or mpmath where long double is not wider than double or
numpy lacks the function (erf), which is slow (~60 us a point): those kernels get --mpmath-points.  Prints per kernel the maximum error in ulps, the share of results not correctly rounded,
and the worst input; exits 1 if a bound (1 ulp float32, 2 ulp float64) is exceeded.
`--ops pow` (not in the default list) checks x ** y for the exponents of POW_EXPONENTS, the points
shared among them, x of both signs over the whole exponent range (y rounded to the dtype).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vecmath_support as vs  # noqa: E402


# Exponents for --ops pow: fractional, odd and even integers, tiny and large (x near 1 matters).
POW_EXPONENTS = [2.5, -2.5, 0.1, -0.7, 1.5, 7.0, -3.0, 1 / 3, 1e-5, 17.3, -97.1, 123.456, 1e4, -3e5]


def pow_case(vm, dtype, n, rng, k):
    """(x, y, result, reference) for the k-th chunk of the pow check."""
    y = float(dtype(POW_EXPONENTS[k % len(POW_EXPONENTS)]))
    x = vs.random_inputs("sin", dtype, n, rng)
    if k < len(POW_EXPONENTS):
        x = np.concatenate([vs.edge_inputs("sin", dtype), x])
    return x, y, vm.pow(x, y), vs.pow_reference(x, y)


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
                wide = vs.LONGDOUBLE_IS_WIDE and (name in vs.LONG_DOUBLE_KERNELS or name == "pow")
                points = args.points if wide else min(args.points, args.mpmath_points)
                k = 0
                while count < points:
                    n = min(chunk, points - count)
                    if name == "pow":
                        x, y, got, ref = pow_case(vm, dtype, min(n, 200_000), rng, k)
                    else:
                        x = vs.random_inputs(name, dtype, n, rng)
                        if count == 0:
                            x = np.concatenate([vs.edge_inputs(name, dtype), x])
                        got, ref = vm(name, x), vs.reference(name, x)
                    k += 1
                    err = vs.ulp_errors(got, ref)
                    i = int(np.argmax(err))
                    if err[i] > worst:
                        worst, worst_x = float(err[i]), (x[i] if name != "pow" else (x[i], y))
                    not_rounded += int(np.count_nonzero(err > 0.5))
                    count += x.size
                bad = worst > vs.ulp_bound(name, dtype)
                failed |= bad
                print(f"{level:6s} {name:8s} {np.dtype(dtype).name:7s} {count:9d} {worst:8.3f} "
                      f"{not_rounded / count:9.2e}  {worst_x!r}"
                      f"{'  EXCEEDS BOUND' if bad else ''}  ({time.perf_counter() - t0:.1f} s)",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
