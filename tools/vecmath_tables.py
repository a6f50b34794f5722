"""Derive the lookup tables of src/tapegrad/vecmath_impl.h with mpmath.

    python tools/vecmath_tables.py > src/tapegrad/vecmath_tables.h

Each table row is four doubles (one 32-byte load per lane; vecmath's vd_lookup4):
* VM_ERF_TABLE, float64 erf: at r = i / 128, i = 0 .. 768 (r up to 6, where erf rounds to 1),
  erf(r) and S(r) = 2/sqrt(pi) e^(-r^2), each as a double-double (hi, lo).  erf(r + d) is then
  erf(r) + S d Q(r, d) with Q a short series in d (|d| <= 1/256) whose coefficients follow from r
  by the Hermite recurrence: no exp, no division.
* VM_ERF_TABLE_F32, float32 erf (AVX2's 8-lane kernel): the same at r = i / 64 up to 4 (erf
  rounds to 1 in float from 3.92 on), as float pairs (erf hi, lo, S hi, lo): three series terms.
* VM_GELU_ERF_*, float32 gelu's erf (AVX2): |z| <= 4 cut into 8 intervals around k/2,
  k = round(2|z|) clamped to 7 (the last interval reaches 4, where float erf is 1), each with a
  polynomial in t = |z| - k/2, erf = c0h + (c0l + t (c1 + ... + t c7)), one column per
  coefficient so that a lane picks its interval's coefficient from a register (vpermps) instead
  of a table load.  Fitted by least squares on the absolute error at Chebyshev nodes, one
  coefficient at a time (each fit after rounding the ones before it to float, which it absorbs):
  absolute error below 2^-29 per interval, far under the half ulp of the result's rounding.
* VM_LOG_TABLE, the log of pow (vecmath_impl.h: pow_log): for the 128 slices of the mantissa range
  [sqrt(1/2), sqrt(2)) (7 bits after the offset by sqrt(1/2)'s bits), invc, a short number near
  1 / the slice's centre (a multiple of 2^-7 below 1, of 2^-8 above: m invc then has at most 61
  significant bits and |m invc - 1| < 2^-7, so r = m invc - 1 is exact in one FMA; exactly 1 for
  the slice holding 1, so that log stays relatively accurate next to 1), and log c = -log(invc)
  as hi + lo with hi on the grid of 2^-43, so that k ln2_hi + hi is exact for every exponent k;
  row = (invc, hi, lo, 0).  Checked here: r exact, and |r| small enough against hi in every slice
  that hi + r loses nothing to Fast2Sum (pow_log's error-free steps).
* VM_POW_EXP_TABLE, the exponential of pow: 2^(i/128), i = 0 .. 127, as a double s_i and its
  relative tail (2^(i/128) - s_i) / s_i, with s_i's bits stored less i << 45: adding k << 45 for
  k = 128 n + i puts 2^n in the exponent field; row = (tail, bits).
* VM_TANH_EXP_TAIL / VM_TANH_EXP_SBITS, float64 tanh's exponential: VM_POW_EXP_TABLE's columns
  for 2^(i/16), i = 0 .. 15 (bits less i << 48), sixteen entries a vector level keeps in registers
  (vd_lookup16) instead of loading a row per lane.
* VM_POW_LOG2_F32_TABLE, the log2 of float32 pow (vecmath_impl.h: pow_f32_core): for 32 slices of
  [sqrt(1/2), sqrt(2)) cut as the log table's, invc ~ 1 / the slice's centre (exactly 1 for the
  slice holding 1) and log2 c = -log2(invc); row = (invc, log2 c).  With it the polynomials
  VM_POW_LOG2_F32_Q, log2(1 + r) = r Q(r) over every slice's r (degree 4), and VM_POW_EXP2_F32_E,
  2^r = 1 + r E(r) for |r| <= 2^-8 (degree 2; 2^(i/128) from VM_POW_EXP_TABLE's s column).
  Printed with their errors: Q's relative to log2 of the slice's nearest point to 1 (where log2|x|
  is smallest and its relative error counts), E's relative to 2^r.
"""
from __future__ import annotations

import struct

import mpmath as mp

mp.mp.dps = 50

ERF_STEPS = 128          # grid points per unit of |x|
ERF_END = 6              # erf(x) rounds to 1 from 5.93 on
ERF_STEPS_F32 = 64
ERF_END_F32 = 4          # float erf rounds to 1 from 3.92 on
LOG_BITS = 7             # slices of the log table: 2^LOG_BITS
SQRT_HALF_BITS = 0x3FE6A09E667F3BCD


def dd(v):
    hi = float(v)
    return hi, float(v - mp.mpf(hi))


def bits_to_double(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def row(values) -> str:
    return "    " + ", ".join(float(v).hex() for v in values) + ","


def erf_rows():
    for i in range(ERF_STEPS * ERF_END + 1):
        r = mp.mpf(i) / ERF_STEPS
        yield (*dd(mp.erf(r)), *dd(2 / mp.sqrt(mp.pi) * mp.exp(-r * r)))


def fdd(v):
    import numpy as np

    hi = np.float32(float(v))
    return float(hi), float(np.float32(float(v - mp.mpf(float(hi)))))


def erf_rows_f32():
    for i in range(ERF_STEPS_F32 * ERF_END_F32 + 1):
        r = mp.mpf(i) / ERF_STEPS_F32
        yield (*fdd(mp.erf(r)), *fdd(2 / mp.sqrt(mp.pi) * mp.exp(-r * r)))


def gelu_erf_columns(degree=7, nodes=80):
    """Columns c0h, c0l, c1 .. c7 (8 intervals each): see VM_GELU_ERF_* above."""
    import numpy as np

    def f32(v):
        return float(np.float32(float(v)))

    rows = []
    for k in range(8):
        c = mp.mpf(k) / 2
        lo, hi = (mp.mpf(0), mp.mpf(0.25)) if k == 0 else (c - mp.mpf(0.25), c + (0.75 if k == 7 else 0.25))
        xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (j + mp.mpf(0.5)) / nodes)
              for j in range(nodes)]
        c0h, c0l = fdd(mp.erf(c))
        coef = []
        for j0 in range(1, degree + 1):
            a = mp.matrix([[(x - c) ** j for j in range(j0, degree + 1)] for x in xs])
            b = mp.matrix([mp.erf(x) - c0h - c0l - sum(cf * (x - c) ** (i + 1) for i, cf in enumerate(coef))
                           for x in xs])
            coef.append(f32(mp.lu_solve(a.T * a, a.T * b)[0]))
        rows.append([c0h, c0l] + coef)
    return [[r[i] for r in rows] for i in range(degree + 2)]


LOG_HI_GRID = mp.mpf(2) ** -43
EXP_BITS = 7             # 2^(i / 128)


def exponent(v) -> int:
    """floor(log2 |v|) of a nonzero double."""
    return int(mp.floor(mp.log(abs(mp.mpf(v)), 2)))


def log_rows():
    shift = 52 - LOG_BITS
    worst_r = mp.mpf(0)
    for j in range(1 << LOG_BITS):
        lo = mp.mpf(bits_to_double(SQRT_HALF_BITS + (j << shift)))
        hi = mp.mpf(bits_to_double(SQRT_HALF_BITS + ((j + 1) << shift) - 1))
        if lo <= 1 <= hi:
            candidates = [mp.mpf(1)]
        else:
            step = mp.mpf(2) ** (-7 if hi < 1 else -8)
            centre = 2 / (lo + hi)
            base = mp.floor(centre / step)
            candidates = [base * step, (base + 1) * step]
        best = None
        for invc in candidates:
            rmax = max(abs(lo * invc - 1), abs(hi * invc - 1))
            logc = -mp.log(invc)
            logc_hi = mp.nint(logc / LOG_HI_GRID) * LOG_HI_GRID
            if rmax >= mp.mpf(2) ** -7:
                continue                       # r = m invc - 1 would not be exact
            if logc_hi != 0 and rmax >= mp.mpf(2) ** (exponent(logc_hi) + 1):
                continue                       # k = 0: Fast2Sum of hi + r would not be exact
            if best is None or rmax < best[0]:
                best = (rmax, invc, logc_hi, logc - logc_hi)
        assert best is not None, f"slice {j}: no invc meets the conditions"
        worst_r = max(worst_r, best[0])
        yield (float(best[1]), float(best[2]), float(best[3]), 0.0)
    log_rows.worst_r = worst_r


def pow_exp_rows():
    for i in range(1 << EXP_BITS):
        v = mp.mpf(2) ** (mp.mpf(i) / (1 << EXP_BITS))
        s = float(v)
        tail = float((v - mp.mpf(s)) / mp.mpf(s))
        bits = struct.unpack("<Q", struct.pack("<d", s))[0] - (i << (52 - EXP_BITS))
        yield (tail, bits_to_double(bits))


TANH_EXP_BITS = 4        # float64 tanh's exponential: 2^(i/16), held in registers


def tanh_exp_columns():
    """(tails, bits) of 2^(i/16), i = 0 .. 15, as pow_exp_rows' columns (bits less i << 48)."""
    tails, bits = [], []
    for i in range(1 << TANH_EXP_BITS):
        v = mp.mpf(2) ** (mp.mpf(i) / (1 << TANH_EXP_BITS))
        s = float(v)
        tails.append(float((v - mp.mpf(s)) / mp.mpf(s)))
        b = struct.unpack("<Q", struct.pack("<d", s))[0] - (i << (52 - TANH_EXP_BITS))
        bits.append(bits_to_double(b))
    return tails, bits


LOG2_F32_BITS = 5        # slices of float32 pow's log2 table


def pow_log2_f32_rows():
    """(invc, log2 c) per slice, and the range of r = m invc - 1 over all slices."""
    shift = 52 - LOG2_F32_BITS
    rows, r_lo, r_hi, slices = [], mp.mpf(0), mp.mpf(0), []
    for j in range(1 << LOG2_F32_BITS):
        lo = mp.mpf(bits_to_double(SQRT_HALF_BITS + (j << shift)))
        hi = mp.mpf(bits_to_double(SQRT_HALF_BITS + ((j + 1) << shift) - 1))
        invc = mp.mpf(1) if lo <= 1 <= hi else mp.mpf(float(2 / (lo + hi)))
        rows.append((float(invc), float(-mp.log(invc, 2))))
        r_lo, r_hi = min(r_lo, lo * invc - 1), max(r_hi, hi * invc - 1)
        slices.append((lo, hi, invc))
    return rows, (r_lo, r_hi), slices


def pow_f32_polys():
    """Q (log2(1 + r) = r Q(r)) and E (2^r = 1 + r E(r)), highest degree first, with the errors
    the kernel sees: Q's relative to the smallest |log2 z| of each slice (the whole r of the slice
    of 1), E's relative to 2^r."""
    ln2 = mp.log(2)
    _, (r_lo, r_hi), slices = pow_log2_f32_rows()
    q = [mp.mpf(float(c)) for c in mp.chebyfit(
        lambda r: mp.log1p(r) / ln2 / r if r else 1 / ln2, [r_lo, r_hi], 5)]
    q_err = mp.mpf(0)
    for lo, hi, invc in slices:
        rs = [r for r in mp.linspace(lo * invc - 1, hi * invc - 1, 80) if r]
        errs = [abs(r * mp.polyval(q, r) - mp.log1p(r) / ln2) for r in rs]
        if invc == 1:
            q_err = max(q_err, max(e / abs(mp.log1p(r) / ln2) for e, r in zip(errs, rs)))
        else:
            q_err = max(q_err, max(errs) / min(abs(mp.log(lo, 2)), abs(mp.log(hi, 2))))
    bound = mp.mpf(2) ** -8 * (1 + mp.mpf(2) ** -20)
    e = [mp.mpf(float(c)) for c in mp.chebyfit(
        lambda r: (mp.mpf(2) ** r - 1) / r if r else ln2, [-bound, bound], 3)]
    e_err = max(abs(1 + r * mp.polyval(e, r) - mp.mpf(2) ** r) / mp.mpf(2) ** r
                for r in mp.linspace(-bound, bound, 201))
    return q, q_err, e, e_err


def main():
    print("/* Lookup tables of tapegrad's vectorised math kernels (vecmath_impl.h).\n"
          " * Generated by tools/vecmath_tables.py (mpmath): do not edit by hand, re-run the "
          "script. */\n#ifndef TAPEGRAD_VECMATH_TABLES_H\n#define TAPEGRAD_VECMATH_TABLES_H\n")
    print(f"#define VM_ERF_STEPS {ERF_STEPS}.0\n#define VM_ERF_END {ERF_END}.0")
    print(f"#define VM_ERF_STEPS_F32 {ERF_STEPS_F32}.0f\n#define VM_ERF_END_F32 {ERF_END_F32}.0f")
    print(f"#define VM_LOG_TABLE_BITS {LOG_BITS}\n")
    print("/* erf(i / 128) hi, lo; 2/sqrt(pi) e^(-(i/128)^2) hi, lo */")
    print("#define VM_ERF_TABLE { \\")
    for values in erf_rows():
        print(row(values) + " \\")
    print("}\n\n/* float: erf(i / 64) hi, lo; 2/sqrt(pi) e^(-(i/64)^2) hi, lo */")
    print("#define VM_ERF_TABLE_F32 { \\")
    for values in erf_rows_f32():
        print("    " + ", ".join(float(v).hex() + "f" for v in values) + ", \\")
    print("}\n\n/* float32 gelu's erf: per interval k (|z| near k / 2) c0h, c0l, c1 .. c7 */")
    for name, column in zip(["C0H", "C0L"] + [f"C{j}" for j in range(1, 8)], gelu_erf_columns()):
        print(f"#define VM_GELU_ERF_{name} {{ " + ", ".join(float(v).hex() + "f" for v in column) + " }")
    print(f"\n/* pow's log: invc, log c hi (on the 2^-43 grid), lo, 0 */\n#define VM_LOG_TABLE {{ \\")
    for values in log_rows():
        print(row(values) + " \\")
    print("}")
    print(f"/* |r| = |m invc - 1| < {float(log_rows.worst_r):.6g} in every slice */")
    ln2n = mp.log(2) / (1 << EXP_BITS)
    ln2n_hi = float(ln2n)
    print(f"\n#define VM_POW_EXP_BITS {EXP_BITS}")
    print(f"#define VM_POW_N_OVER_LN2 {float(1 / ln2n).hex()}")
    print(f"#define VM_POW_LN2N_HI {ln2n_hi.hex()}")
    print(f"#define VM_POW_LN2N_LO {float(ln2n - mp.mpf(ln2n_hi)).hex()}")
    print("/* pow's exp: (2^(i/128) - s) / s, bits(s) - (i << 45) as a double */")
    print("#define VM_POW_EXP_TABLE { \\")
    for values in pow_exp_rows():
        print(row(values) + " \\")
    print("}")
    ln2n = mp.log(2) / (1 << TANH_EXP_BITS)
    ln2n_hi = float(ln2n)
    tails, bits = tanh_exp_columns()
    print(f"\n#define VM_TANH_EXP_BITS {TANH_EXP_BITS}")
    print(f"#define VM_TANH_N_OVER_LN2 {float(1 / ln2n).hex()}")
    print(f"#define VM_TANH_LN2N_HI {ln2n_hi.hex()}")
    print(f"#define VM_TANH_LN2N_LO {float(ln2n - mp.mpf(ln2n_hi)).hex()}")
    print("/* float64 tanh's exp, one column each: (2^(i/16) - s) / s, bits(s) - (i << 48) */")
    print("#define VM_TANH_EXP_TAIL { " + ", ".join(float(v).hex() for v in tails) + " }")
    print("#define VM_TANH_EXP_SBITS { " + ", ".join(float(v).hex() for v in bits) + " }")
    rows, (r_lo, r_hi), _ = pow_log2_f32_rows()
    q, q_err, e, e_err = pow_f32_polys()
    print(f"\n#define VM_POW_LOG2_F32_BITS {LOG2_F32_BITS}")
    print("/* float32 pow's log2: invc, log2 c */\n#define VM_POW_LOG2_F32_TABLE { \\")
    for values in rows:
        print(row(values) + " \\")
    print("}")
    print(f"/* log2(1 + r) = r Q(r), r in [{float(r_lo):.6g}, {float(r_hi):.6g}], relative error "
          f"< 2^{float(mp.log(q_err, 2)):.1f}; highest degree first */")
    print("#define VM_POW_LOG2_F32_Q { " + ", ".join(float(c).hex() for c in q) + " }")
    print(f"/* 2^r = 1 + r E(r), |r| <= 2^-8, relative error < 2^{float(mp.log(e_err, 2)):.1f} */")
    print("#define VM_POW_EXP2_F32_E { " + ", ".join(float(c).hex() for c in e) + " }")
    print("\n#endif")

if __name__ == "__main__":
    main()
