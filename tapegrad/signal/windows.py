"""torch.signal.windows: tapering windows of length M, as PyTorch computes them.

Each window is a function of an evenly spaced grid (``linspace`` in the requested dtype, so the
values round as PyTorch's do); ``sym=False`` gives the periodic window (one sample of a window one
longer), for spectral analysis.  With ``requires_grad=True`` the grid requires grad and the
window is computed from it, as in PyTorch.
"""
from __future__ import annotations as _annotations

import math
from collections.abc import Iterable

import tapegrad as _tg

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _check(name: str, M: int, dtype, layout):
    dtype = _tg.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not _tg.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_tg.float32, _tg.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype, requires_grad: bool, one_is_ones: bool = True):
    """The window of length 0 (empty) or, for most windows, 1 (a single 1); None otherwise."""
    if M == 0:
        return _tg.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1 and one_is_ones:
        return _tg.ones((1,), dtype=dtype, requires_grad=requires_grad)
    return None


def _grid(start, step, M: int, dtype, requires_grad: bool):
    """start, start + step, ..., start + (M - 1) step, as one linspace."""
    return _tg.linspace(start, start + (M - 1) * step, M, dtype=dtype,
                        requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:
    # The length the window's formula is written for: M - 1 for the symmetric window, M for the
    # periodic one (PyTorch keeps M - 1 for M == 1).
    return M if not sym and M > 1 else M - 1


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=_tg.strided, device=None, requires_grad: bool = False):
    """exp(-|n - center| / tau); ``center`` defaults to the middle (symmetric windows only)."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    if center is None:
        center = _span(M, sym) / 2.0
    k = _grid(-center / tau, 1 / tau, M, dtype, requires_grad)
    return _tg.exp(-_tg.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
           requires_grad: bool = False):
    """sin(pi (n + 1/2) / M) (the sine window)."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _tg.sin(_grid(0.5 * step, step, M, dtype, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=_tg.strided,
             device=None, requires_grad: bool = False):
    """exp(-(n - center)^2 / (2 std^2))."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    scale = 1 / (std * math.sqrt(2))
    k = _grid(-_span(M, sym) / 2.0 * scale, scale, M, dtype, requires_grad)
    return _tg.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=_tg.strided,
           device=None, requires_grad: bool = False):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, requires_grad)
    if trivial is not None:
        return trivial
    beta = _tg.tensor(beta, dtype=dtype)
    step = 2.0 * beta / (M if not sym else M - 1)
    # The last point may overshoot beta by a rounding error: clip it (sqrt of a negative).
    end = _tg.minimum(beta, -beta + (M - 1) * step)
    k = _tg.linspace(-beta, end, M, dtype=dtype, requires_grad=requires_grad)
    return _tg.i0(_tg.sqrt(beta * beta - _tg.pow(k, 2))) / _tg.i0(beta)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=_tg.strided,
                   device=None, requires_grad: bool = False):
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    dtype = _check("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _grid(0, 2 * math.pi / (M if not sym else M - 1), M, dtype, requires_grad)
    coefficients = _tg.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype,
                              requires_grad=requires_grad)
    order = _tg.arange(coefficients.shape[0], dtype=dtype, requires_grad=requires_grad)
    return (coefficients.unsqueeze(-1) * _tg.cos(order.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=_tg.strided, device=None, requires_grad: bool = False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
            requires_grad: bool = False):
    """The Hamming window: general_hamming with alpha = 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
         requires_grad: bool = False):
    """The Hann window: general_hamming with alpha = 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
             requires_grad: bool = False):
    """The Blackman window: general_cosine with a = (0.42, 0.5, 0.08)."""
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
            requires_grad: bool = False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=_tg.strided, device=None,
             requires_grad: bool = False):
    """The triangular window 1 - |2n / (M - 1) - 1|."""
    dtype = _check("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, requires_grad)
    if trivial is not None:
        return trivial
    return 1 - _tg.abs(_grid(-1, 2 / (M if not sym else M - 1), M, dtype, requires_grad))
