"""tapegrad.fft: the real-valued helpers of torch.fft; the transforms need complex tensors.

``fftfreq``/``rfftfreq`` (sample frequencies) and ``fftshift``/``ifftshift`` (a roll, so
differentiable) work as PyTorch's.  The transforms themselves (``fft``, ``rfft``, ``irfft``, ...)
produce or take complex tensors, which tapegrad does not have yet: they raise
``NotImplementedError`` naming the function, never a result in another form.
"""
from __future__ import annotations

import numpy as np

from . import _core
from ._device import check_device

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift", "fft", "ifft", "rfft", "irfft",
           "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft",
           "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


def _frequencies(fn: str, n, d, dtype, device, requires_grad, values: np.ndarray):
    from .creation import _np_dtype, _default_float
    check_device(device, fn)
    np_dtype = _np_dtype(dtype) or _default_float()
    if np.dtype(np_dtype).kind != "f":
        raise RuntimeError(f"{fn} requires a floating point or complex dtype")
    # PyTorch: arange in the result dtype, then one multiplication by 1 / (n * d) (inf for
    # n = 0: rfftfreq(0) is [nan], as PyTorch's)
    with np.errstate(all="ignore"):
        scale = np.float64(1.0) / (np.float64(n) * np.float64(d))
        arr = values.astype(np_dtype) * np.asarray(scale, dtype=np_dtype)
    t = _core.wrap_array(arr.astype(np_dtype, copy=False))
    if requires_grad:
        t.requires_grad = True
    return t


def _check_n(fn: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{fn}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return int(n)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``.

    Examples
    --------
    >>> tapegrad.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    n = _check_n("fftfreq", n)
    values = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, values)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """The sample frequencies of ``rfft`` of an ``n``-point signal: ``[0, 1, ..., n // 2] /
    (d * n)``.

    Examples
    --------
    >>> tapegrad.fft.rfftfreq(5)
    tensor([0.0000, 0.2000, 0.4000])
    """
    n = _check_n("rfftfreq", n)
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, np.arange(n // 2 + 1))


def _shift(input, dim, sign: int):
    from . import roll
    if not isinstance(input, _core.TensorBase):
        raise TypeError(f"fftshift(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dims = tuple(range(input.ndim)) if dim is None else \
        ((dim,) if isinstance(dim, int) else tuple(dim))
    if not dims:
        return input.clone()
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Reorder an FFT's output so that the zero frequency is in the middle: a roll by
    ``n // 2`` along ``dim`` (default every dim); differentiable."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``: a roll by ``-(n // 2)`` along ``dim`` (default every dim)."""
    return _shift(input, dim, -1)


def _needs_complex(name: str):
    def transform(input, *args, **kwargs):
        raise NotImplementedError(f"torch.fft.{name}: the Fourier transforms produce or take "
                                  f"complex tensors, and {_core.NO_COMPLEX}")
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"PyTorch's ``torch.fft.{name}``: raises NotImplementedError "
                         f"(tapegrad has no complex tensors yet).")
    return transform


fft = _needs_complex("fft")
ifft = _needs_complex("ifft")
rfft = _needs_complex("rfft")
irfft = _needs_complex("irfft")
fft2 = _needs_complex("fft2")
ifft2 = _needs_complex("ifft2")
rfft2 = _needs_complex("rfft2")
irfft2 = _needs_complex("irfft2")
fftn = _needs_complex("fftn")
ifftn = _needs_complex("ifftn")
rfftn = _needs_complex("rfftn")
irfftn = _needs_complex("irfftn")
hfft = _needs_complex("hfft")
ihfft = _needs_complex("ihfft")
hfft2 = _needs_complex("hfft2")
ihfft2 = _needs_complex("ihfft2")
hfftn = _needs_complex("hfftn")
ihfftn = _needs_complex("ihfftn")
