"""torch.linalg.matrix_exp as PyTorch computes it on the CPU, so that its values (and the signs of
its zeros: the rotation exp([[0, -pi/2], [pi/2, 0]]) prints 6.1e-17 there) agree.

PyTorch follows Bader, Blanes and Casas, "Computing the Matrix Exponential with an Optimized
Taylor Polynomial Approximation" (Mathematics 2019, 7, 1174): each matrix of the batch gets the
Taylor polynomial of degree 1, 2, 4, 8, 12 or 18 its 1-norm calls for (thresholds per
precision), each evaluated with the fewest matrix products the paper's factorisations allow;
beyond the last threshold the matrix is scaled by a power of two, the degree-18 polynomial taken
and the result squared back.  The coefficients and thresholds are the paper's.  Everything here
is recorded tapegrad ops (matmul, scalar products, sums, index_select, cat), so gradients of any
order follow.
"""
from __future__ import annotations

import numpy as np

from . import _core

# Upper 1-norm bounds of the degrees 1, 2, 4, 8, 12 and 18 (the last: the scaled norm).
_THETAS = {
    np.dtype(np.float32): (1.192092800768788e-07, 5.978858893805233e-04,
                           5.116619363445086e-02, 5.800524627688768e-01,
                           1.461661507209034e+00, 3.010066362817634e+00),
    np.dtype(np.float64): (2.220446049250313e-16, 2.580956802971767e-08,
                           3.397168839976962e-04, 4.991228871115323e-02,
                           2.996158913811580e-01, 1.090863719290036e+00),
}

# The degree-12 and degree-18 polynomials: row i gives B_i as a combination of
# (I, A, A^2, A^3) and (I, A, A^2, A^3, A^6) respectively.
_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
        (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
         0.01108844528519167989),
        (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
         0.00610700528898058230),
        (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
         -0.00675951846863086359))
_B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
         -8.92138498045729985177e-04, 0.),
        (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00,
         4.98289622525382669416e-01, -6.37898194594723280150e-04),
        (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05),
        (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05),
        (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
         -1.40086798182036094347e-05))


def _t8_coefficients(real: np.dtype) -> tuple:
    """The degree-8 factorisation's constants, rounded to the precision as PyTorch's constexpr
    values of its scalar type are (each computed in double from the rounded sqrt(177) and 2/3)."""
    r = real.type
    sqrt_177 = float(r(0.1330413469565007072504e+2))
    x3 = float(r(2. / 3.))
    return tuple(float(r(v)) for v in (
        x3 * ((1. + sqrt_177) / 88.), x3 * ((1. + sqrt_177) / 352.), x3,
        (-271. + 29. * sqrt_177) / (315. * x3), (-11. + 11. * sqrt_177) / (1260. * x3),
        (-99. + 11. * sqrt_177) / (5040. * x3), (89. - sqrt_177) / (5040. * x3),
        (857. - 58. * sqrt_177) / 630.))


def _combination(matrices, coefficients, real: np.dtype):
    """sum_j c_j * M_j accumulated from zero in order, each c_j in the precision (PyTorch's
    _compute_linear_combination: a zero start turns a -0 sum into +0 as there)."""
    from .creation import zeros_like
    out = zeros_like(matrices[0])
    for m, c in zip(matrices, coefficients):
        out = out + m * float(real.type(c))
    return out


def _powers(a, count: int):
    """The first `count` of I, A, A^2, A^3, A^6 (A^3 = A A^2, as PyTorch multiplies)."""
    from .creation import eye
    powers = [eye(a.shape[-1], dtype=a.dtype).expand(a.shape), a]
    if count > 2:
        powers.append(_core.matmul(a, a))
    if count > 3:
        powers.append(_core.matmul(a, powers[2]))
    if count > 4:
        powers.append(_core.matmul(powers[3], powers[3]))
    return powers[:count]


def _taylor_1(a, real):
    return _combination(_powers(a, 2), (1., 1.), real)


def _taylor_2(a, real):
    return _combination(_powers(a, 3), (1., 1., 0.5), real)


def _taylor_4(a, real):
    p = _powers(a, 3)
    tail = _core.matmul(p[2], _combination(p, (1 / 2.0, 1 / 6.0, 1 / 24.0), real))
    return _combination(p + [tail], (1., 1., 0., 1.), real)


def _taylor_8(a, real):
    x1, x2, x3, x4, x5, x6, x7, y2 = _t8_coefficients(real)
    p = _powers(a, 3)
    a4 = _core.matmul(p[2], _combination(p[1:3], (x1, x2), real))
    a8 = _core.matmul(_combination([p[2], a4], (x3, 1.), real),
                      _combination(p + [a4], (x4, x5, x6, x7), real))
    return _combination(p + [a4, a8], (1., 1., y2, 0., 1.), real)


def _taylor_12(a, real):
    p = _powers(a, 4)
    b = [_combination(p, row, real) for row in _B12]
    a6 = b[2] + _core.matmul(b[3], b[3])
    return b[0] + _core.matmul(b[1] + a6, a6)


def _taylor_18(a, real):
    p = _powers(a, 5)
    b = [_combination(p, row, real) for row in _B18]
    a9 = b[3] + _core.matmul(b[0], b[4])
    return b[1] + _core.matmul(b[2] + a9, a9)


_DEGREES = (_taylor_1, _taylor_2, _taylor_4, _taylor_8, _taylor_12)


def _scaled_taylor_18(a, norms: np.ndarray, theta, real):
    """exp of matrices past the last threshold: scaled by 2^-s, s = ceil(log2(norm / theta))
    (at least 0, computed in the precision), the degree-18 polynomial squared back s times."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.maximum(0, np.ceil(np.log2(norms / real.type(theta))))
    s = np.where(np.isfinite(s), s, 0).astype(np.int64)
    from ._extra_ops import _wrap
    # (dividing by a power of two is exact, as PyTorch's a / 2^s)
    m = _taylor_18(a / _wrap((2.0 ** s).astype(real)[:, None, None]), real)
    for k in range(1, int(s.max(initial=0)) + 1):
        # each matrix squared its own s times
        m = _core.where(_wrap((s >= k)[:, None, None]), _core.matmul(m, m), m)
    return m


def matrix_exp_3d(a):
    """exp of each matrix of the (batch, n, n) tensor a, n >= 2, as PyTorch's mexp."""
    A = a._array
    if A.dtype == np.float16:
        # (PyTorch's half-precision polynomial overflows into inf / nan; tapegrad gives the
        # exponential, computed in float32)
        return matrix_exp_3d(a.float()).to(a.dtype)
    real = np.dtype(np.float32) if A.dtype in (np.float32, np.complex64) else \
        np.dtype(np.float64)
    thetas = _THETAS[real]
    # (PyTorch's operator 1-norm: the largest column sum of |a|, in the precision)
    with np.errstate(invalid="ignore"):
        norms = np.abs(A).astype(real).sum(-2).max(-1)
    if a.shape[0] > 1:
        # PyTorch takes the scaled degree-18 polynomial for every matrix of a batch
        return _scaled_taylor_18(a, norms, thetas[-1], real)
    # one matrix: the lowest degree its norm allows; past the degree-12 bound, and for a NaN
    # norm no interval holds (its result is made NaN by the caller), the scaled degree 18
    norm = norms[0]
    for degree, lower, upper in zip(_DEGREES, (-1.0,) + thetas[:-2], thetas[:-1]):
        if real.type(lower) < norm <= real.type(upper) and norm < real.type(thetas[-2]):
            return degree(a, real)
    return _scaled_taylor_18(a, norms, thetas[-1], real)
