"""Derive the constants of src/tapegrad/vecmath_impl.h with mpmath (run: python tools/vecmath_coeffs.py).

Prints C99 hexadecimal literals, so the C file holds exactly the doubles printed here:
* near-minimax polynomials (mpmath.chebyfit, Chebyshev interpolation) of the smallest degree whose
  approximation error is below the target, for the kernels' reduced arguments;
* the Cody-Waite splits of ln 2 and pi/2 (leading parts with trailing zero bits, so that n * part
  is exact for the reduction's range of n);
* 2/pi as 64-bit words for the Payne-Hanek reduction of huge sin/cos arguments.
The double-precision kernels target 2^-57 (below the 2^-53 of a double, leaving the ulp budget
to the evaluation's roundings); the float32 kernels evaluate in double and target 2^-36.
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 60


def hexd(v) -> str:
    return float(v).hex()


def to_float32(c) -> float:
    import numpy as np

    return float(np.float32(float(c)))


def fit(name, f, interval, target, weight, max_terms=24, rnd=float, suffix=""):
    """Fit f; the kernel multiplies the polynomial by at most `weight` relative to its result.
    rnd rounds the coefficients (to double, or to float for the native float32 kernels)."""
    target = target / weight
    for n in range(2, max_terms):
        poly, err = mp.chebyfit(f, interval, n, error=True)
        # Rounding the coefficients adds error too: measure it on a dense grid.
        rounded = [mp.mpf(rnd(c)) for c in poly]
        grid = mp.linspace(interval[0], interval[1], 400)
        rerr = max(abs(mp.polyval(rounded, t) - f(t)) for t in grid)
        if err < target and rerr < 4 * target:  # rounding the leading coefficient costs ~2^-55
            coeffs = ", ".join(hexd(c) + suffix for c in rounded)
            print(f"/* {name}: degree {n - 1} on [{mp.nstr(interval[0], 6)}, "
                  f"{mp.nstr(interval[1], 6)}], max error {mp.nstr(max(err, rerr), 3)} */")
            print(f"#define {name} {{ {coeffs} }}")
            return
    raise SystemExit(f"{name}: no fit below {target}")


def limit(g, series0):
    """g with its removable singularity at 0 filled in by the series' constant term."""
    return lambda t: series0 if abs(t) < mp.mpf(10) ** -40 else g(t)


LN2 = mp.log(2)
R_EXP = LN2 / 2
# exp(r) = 1 + r + r^2 P(r): P(r) = (e^r - 1 - r) / r^2
P_exp = limit(lambda r: (mp.exp(r) - 1 - r) / r ** 2, mp.mpf(1) / 2)
# log(1+f) = 2 atanh(s), s = f / (2 + f): 2 atanh(s) = 2s + s z Q(z), z = s^2
S_LOG = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
Q_log = limit(lambda z: (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 2) / z, mp.mpf(2) / 3)
# sin r = r + r z S(z), cos r = 1 - z/2 + z^2 C(z), z = r^2, |r| <= pi/4
Z_TRIG = (mp.pi / 4) ** 2
S_sin = limit(lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / z ** mp.mpf(1.5), -mp.mpf(1) / 6)
C_cos = limit(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2, mp.mpf(1) / 24)

for suffix, target in (("F64", mp.mpf(2) ** -57), ("F32", mp.mpf(2) ** -36)):
    # weights: r^2 / e^r for exp; z / 2 for log (s z Q against 2 s); z for sin; z^2 / cos r for cos
    # exp: 2^-55 for float64 (0.15 ulp; one multiply-add less on the hottest kernel)
    fit(f"VM_EXP_P_{suffix}", P_exp, [-R_EXP * 1.0001, R_EXP * 1.0001],
        target * 4 if suffix == "F64" else target, R_EXP ** 2 / mp.exp(-R_EXP))
    fit(f"VM_LOG_Q_{suffix}", Q_log, [0, S_LOG ** 2 * 1.0001], target, S_LOG ** 2 / 2)
    fit(f"VM_SIN_S_{suffix}", S_sin, [0, Z_TRIG * 1.0001], target, Z_TRIG)
    fit(f"VM_COS_C_{suffix}", C_cos, [0, Z_TRIG * 1.0001], target, Z_TRIG ** 2 / mp.cos(mp.pi / 4))

# Native float32 kernels (AVX2, 8 float lanes): coefficients rounded to float, target 2^-27.
T32 = mp.mpf(2) ** -27
fit("VM_EXP_P_F32N", P_exp, [-R_EXP * 1.0001, R_EXP * 1.0001], T32, R_EXP ** 2 / mp.exp(-R_EXP),
    rnd=to_float32, suffix="f")
# A shorter e^r for a factor that other roundings follow anyway (gelu's gradient, where e^(-x^2/2)
# is multiplied by x / sqrt(2 pi)): one degree less, ~2^-26.5 relative on e^r.
fit("VM_EXP_P4_F32N", P_exp, [-R_EXP * 1.0001, R_EXP * 1.0001], mp.mpf(2) ** -25,
    R_EXP ** 2 / mp.exp(-R_EXP), rnd=to_float32, suffix="f")
fit("VM_LOG_Q_F32N", Q_log, [0, S_LOG ** 2 * 1.0001], T32, S_LOG ** 2 / 2, rnd=to_float32,
    suffix="f")


# erf, float32 (evaluated in double): |x| < 1: erf x = x + x A(x^2); 1 <= |x|: erfc |x| =
# e^(-x^2) B(|x| - 2.5) with B a fit of erfcx = e^(x^2) erfc(x) around the interval's centre
# (centred: well-conditioned coefficients).  Degrees chosen so that the error weighted by e^(-x^2)
# (what reaches erf) is below 2^-30.  float64 erf uses a table instead (tools/vecmath_tables.py).
def fixed_fit(name, f, interval, n, rnd=float):
    poly, err = mp.chebyfit(f, interval, n, error=True)
    print(f"/* {name}: degree {n - 1} on [{mp.nstr(interval[0], 6)}, {mp.nstr(interval[1], 6)}], "
          f"max error {mp.nstr(err, 3)} */")
    print(f"#define {name} {{ {', '.join(hexd(rnd(c)) for c in poly)} }}")


A_erf = limit(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1, 2 / mp.sqrt(mp.pi) - 1)
erfcx = lambda x: mp.exp(x * x) * mp.erfc(x)  # noqa: E731
fixed_fit("VM_ERF_A_F32", A_erf, [0, 1], 8)
fixed_fit("VM_ERF_B_F32", lambda t: erfcx(t + mp.mpf(2.5)), [-1.5, 1.5], 13)       # [1, 4]


def split(v, bits):
    """v rounded to `bits` significant bits (the leading part of a Cody-Waite split)."""
    e = mp.floor(mp.log(abs(v), 2))
    scale = mp.mpf(2) ** (bits - 1 - e)
    return mp.nint(v * scale) / scale


ln2_hi = split(LN2, 42)            # n * ln2_hi exact for |n| < 2^11
ln2_lo = LN2 - ln2_hi
print(f"#define VM_LN2_HI {hexd(ln2_hi)}\n#define VM_LN2_LO {hexd(ln2_lo)}")
ln2_hi_f = split(LN2, 24)          # float exp uses FMA: x - n ln2_hi_f is exact anyway
print(f"#define VM_LN2_HI_F {hexd(ln2_hi_f)}f\n#define VM_LN2_LO_F {hexd(to_float32(LN2 - ln2_hi_f))}f")
ln2_hi16 = split(LN2, 16)          # float log: k * ln2_hi16 exact for |k| < 2^8
print(f"#define VM_LN2_HI16_F {hexd(ln2_hi16)}f\n"
      f"#define VM_LN2_LO16_F {hexd(to_float32(LN2 - ln2_hi16))}f")
print(f"#define VM_INV_LN2 {hexd(1 / LN2)}")
pio2 = mp.pi / 2
parts, rest = [], pio2
for _ in range(3):                 # n * part exact for |n| < 2^25
    p = split(rest, 28)
    parts.append(p)
    rest -= p
parts.append(rest)
for i, p in enumerate(parts, 1):
    print(f"#define VM_PIO2_{i} {hexd(p)}")
print(f"#define VM_TWO_OVER_PI {hexd(2 / mp.pi)}")
pio2_hi = mp.mpf(float(pio2))
print(f"#define VM_PIO2_HI {hexd(pio2_hi)}\n#define VM_PIO2_LO {hexd(pio2 - pio2_hi)}")

# 2/pi = sum_j W[j] 2^(-64 (j + 1)); 20 words reach bit 1280, past the 971 + 2 + 192 needed for
# the largest double.
mp.mp.dps = 500
frac = 2 / mp.pi
words = []
for _ in range(20):
    frac *= mp.mpf(2) ** 64
    w = int(mp.floor(frac))
    words.append(w)
    frac -= w
print("#define VM_TWO_OVER_PI_WORDS { \\")
for i in range(0, 20, 4):
    print("    " + ", ".join(f"UINT64_C(0x{w:016x})" for w in words[i:i + 4]) + ", \\")
print("}")
