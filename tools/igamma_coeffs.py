"""Derive the coefficients of Temme's uniform asymptotic expansion of the incomplete gamma
functions (DLMF 8.12), exactly, in rational arithmetic:

    python tools/igamma_coeffs.py > tapegrad/_temme_coeffs.py

For large a and x near a, with lambda = x / a and eta = sign(lambda - 1) sqrt(2 (lambda - 1 -
ln lambda)) (DLMF 8.12.1),

    Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + R,    P(a, x) = erfc(-eta sqrt(a / 2)) / 2 - R,
    R ~ exp(-a eta^2 / 2) / sqrt(2 pi a) * sum_k c_k(eta) a^-k                (8.12.3-4)

with c_0 = 1 / (lambda - 1) - 1 / eta and c_k = c_{k-1}'(eta) / eta + (-1)^k gamma_k /
(lambda - 1) (8.12.8-10), gamma_k the coefficients of Stirling's series Gamma*(a) ~ sum_k
gamma_k a^-k (5.11.3-4).  Each c_k is analytic at eta = 0 (the poles cancel), so it is a power
series sum_n d[k][n] eta^n; this script computes d[k][n] for k, n < SIZE.  Steps, all on exact
power series with Fraction coefficients:
1. lambda - 1 = u as a series in eta: eta = u g(u) with g(u) = sqrt(2 (u - ln(1 + u)) / u^2)
   = sqrt(sum_m 2 (-1)^m u^m / (m + 2)); Lagrange inversion, [eta^n] u = [u^(n-1)] g^-n / n.
2. gamma_k from log Gamma*(a) ~ sum_m B_2m / (2m (2m - 1)) a^(1 - 2m), exponentiated.
3. The recurrence on Laurent series in eta (the 1/eta terms cancel exactly, checked).
"""
from __future__ import annotations

from fractions import Fraction

SIZE = 25                      # k < SIZE terms of the expansion, n < SIZE powers of eta
DEGREE = SIZE + 2 * SIZE + 2   # c_0's degree needed: each step of the recurrence takes two


def mul(p: list, q: list, n: int) -> list:
    """The product of two power series, truncated to n coefficients."""
    out = [Fraction(0)] * n
    for i, pi in enumerate(p[:n]):
        if pi:
            for j, qj in enumerate(q[:n - i]):
                out[i + j] += pi * qj
    return out


def reciprocal(p: list, n: int) -> list:
    """1 / p as a power series (p[0] != 0), n coefficients."""
    out = [Fraction(0)] * n
    out[0] = 1 / p[0]
    for i in range(1, n):
        out[i] = -sum(p[j] * out[i - j] for j in range(1, min(i, len(p) - 1) + 1)) / p[0]
    return out


def sqrt_series(p: list, n: int) -> list:
    """sqrt(p) as a power series (p[0] == 1), n coefficients: s^2 = p solved term by term."""
    s = [Fraction(0)] * n
    s[0] = Fraction(1)
    for i in range(1, n):
        s[i] = (p[i] - sum(s[j] * s[i - j] for j in range(1, i))) / 2
    return s


def lambda_minus_one(n: int) -> list:
    """u = lambda - 1 as a power series in eta (n coefficients, u[0] = 0)."""
    g = sqrt_series([Fraction(2 * (-1) ** m, m + 2) for m in range(n)], n)
    g_inv = reciprocal(g, n)
    u = [Fraction(0)] * n
    power = [Fraction(1)] + [Fraction(0)] * (n - 1)          # g^-k, built up k by k
    for k in range(1, n):
        power = mul(power, g_inv, n)
        u[k] = power[k - 1] / k
    return u


def bernoulli(count: int) -> list:
    """B_0 .. B_(count-1) (B_1 = -1/2)."""
    b = [Fraction(0)] * count
    for m in range(count):
        b[m] = Fraction(1) if m == 0 else -sum(
            Fraction(_binomial(m + 1, j)) * b[j] for j in range(m)) / (m + 1)
    return b


def _binomial(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out


def stirling_gammas(count: int) -> list:
    """gamma_0 .. gamma_(count-1) of Gamma*(a) ~ sum_k gamma_k a^-k, as a series in t = 1/a."""
    b = bernoulli(2 * count + 2)
    log_series = [Fraction(0)] * count          # log Gamma*(a) in powers of t
    for m in range(1, count):
        if 2 * m - 1 < count:
            log_series[2 * m - 1] = b[2 * m] / (2 * m * (2 * m - 1))
    # exp of a series without constant term: E' = L' E, term by term
    e = [Fraction(0)] * count
    e[0] = Fraction(1)
    for i in range(1, count):
        e[i] = sum(j * log_series[j] * e[i - j] for j in range(1, i + 1)) / i
    return e


def temme_coefficients() -> list:
    """d[k][n], k, n < SIZE: c_k(eta) = sum_n d[k][n] eta^n."""
    u = lambda_minus_one(DEGREE + 2)
    # 1 / (lambda - 1) = eta^-1 / (u / eta): a Laurent series, kept as (coefficient of eta^-1,
    # then the regular part) by storing the series of eta / u and shifting by one
    eta_over_u = reciprocal(u[1:], DEGREE + 1)
    inv_u = {n - 1: c for n, c in enumerate(eta_over_u)}        # powers -1 .. DEGREE - 1
    gammas = stirling_gammas(SIZE)
    c = {n: inv_u[n] for n in inv_u if n >= 0}                   # c_0 = 1/u - 1/eta
    exact_to = max(c)                          # c's coefficients are exact up to this power
    assert inv_u[-1] == 1
    rows = []
    for k in range(SIZE):
        if k > 0:
            nxt = {}
            for n, coef in c.items():              # c'(eta) / eta: eta^n -> n eta^(n-2)
                if n > 0:
                    nxt[n - 2] = nxt.get(n - 2, Fraction(0)) + n * coef
            sign_gamma = (-1) ** k * gammas[k]
            for n, coef in inv_u.items():
                nxt[n] = nxt.get(n, Fraction(0)) + sign_gamma * coef
            assert nxt.get(-1, 0) == 0, "the pole of c_k did not cancel"
            exact_to -= 2                          # the derivative lowers every power by two
            c = {n: v for n, v in nxt.items() if 0 <= n <= exact_to}
        rows.append([c[n] for n in range(SIZE)])
    return rows


def main() -> None:
    rows = temme_coefficients()
    print('"""Coefficients d[k][n] of Temme\'s uniform asymptotic expansion of the incomplete gamma')
    print("functions, c_k(eta) = sum_n d[k][n] eta^n (DLMF 8.12).  Generated by")
    print('tools/igamma_coeffs.py from the exact rational values; do not edit by hand."""')
    print()
    print("TEMME_D = (")
    for row in rows:
        print("    (" + ", ".join(repr(float(v)) for v in row) + "),")
    print(")")


if __name__ == "__main__":
    main()
