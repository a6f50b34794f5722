"""tapegrad.fft: PyTorch's torch.fft, computed by numpy.fft.

The transforms (``fft``/``ifft``, ``rfft``/``irfft``, ``hfft``/``ihfft`` and their 2-D and N-D
forms) take ``n``/``s``, ``dim`` and ``norm`` as PyTorch's, produce or take complex tensors
(complex64 from float32, complex128 from float64) and are differentiable with PyTorch's backward
formulas (the onesided transforms' halving and doubling included).  ``fftfreq``/``rfftfreq``
(sample frequencies) and ``fftshift``/``ifftshift`` (a roll, so differentiable) work as
PyTorch's.  Values are numpy.fft's (pocketfft, as PyTorch's CPU build): equal to PyTorch's up to
rounding.
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import numpy as _np
from ._layout import sparse_factory_layout as _sparse_factory_layout

from . import _core
from ._device import check_device as _check_device
from ._extra_functions import _torch_grad_fn_name
from ._extra_ops import _check_tensor
from .autograd.function import Function as _Function

# torch.fft's __all__: hfft2/ihfft2/hfftn/ihfftn are attributes only (`from torch.fft import *`
# does not bind them)
__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift", "fft", "ifft", "rfft", "irfft",
           "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft",
           "ihfft"]


def _frequencies(fn: str, n, d, dtype, device, requires_grad, values: _np.ndarray):
    from .creation import _np_dtype, _default_float
    _check_device(device, fn)
    np_dtype = _np_dtype(dtype) or _default_float()
    if _np.dtype(np_dtype).kind == "c":      # (passes this check, then fails in arange)
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{_core.scalar_type_name_of(_np.dtype(np_dtype))}'")
    if _np.dtype(np_dtype).kind != "f":
        raise RuntimeError(f"{fn} requires a floating point or complex dtype")
    # PyTorch: arange in the result dtype, then one multiplication by 1 / (n * d) (inf for
    # n = 0: rfftfreq(0) is [nan], as PyTorch's)
    with _np.errstate(all="ignore"):
        scale = _np.float64(1.0) / (_np.float64(n) * _np.float64(d))
        arr = values.astype(np_dtype) * _np.asarray(scale, dtype=np_dtype)
    t = _core.wrap_array(arr.astype(np_dtype, copy=False))
    if requires_grad:
        t.requires_grad = True
    return t


def _check_n(fn: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)):
        raise TypeError(f"fft_{fn}(): argument 'n' (position 1) must be int, not {_type_name(n)}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return int(n)


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None,
            requires_grad: bool = False):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``.

    Examples
    --------
    >>> tapegrad.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    _sparse_factory_layout(layout, "fftfreq", "arange.start_out")
    n = _check_n("fftfreq", n)
    values = _np.concatenate([_np.arange((n + 1) // 2), _np.arange(-(n // 2), 0)])
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, values)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False):
    """The sample frequencies of ``rfft`` of an ``n``-point signal: ``[0, 1, ..., n // 2] /
    (d * n)``.

    Examples
    --------
    >>> tapegrad.fft.rfftfreq(5)
    tensor([0.0000, 0.2000, 0.4000])
    """
    _sparse_factory_layout(layout, "rfftfreq", "arange.start_out")
    n = _check_n("rfftfreq", n)
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, _np.arange(n // 2 + 1))


def _shift(input, dim, sign: int):
    from . import roll
    if not isinstance(input, _core.TensorBase):
        name = "fft_fftshift" if sign > 0 else "fft_ifftshift"
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    dims = tuple(range(input.ndim)) if dim is None else \
        _dims_arg("fftshift" if sign > 0 else "ifftshift", dim)
    if not dims:        # (a 0-d input, or dim=()): PyTorch's roll is given no shifts
        raise RuntimeError("`shifts` required")
    dims = tuple(_transform_dim(d, input.ndim) for d in dims)
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Reorder an FFT's output so that the zero frequency is in the middle: a roll by
    ``n // 2`` along ``dim`` (default every dim); differentiable."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``: a roll by ``-(n // 2)`` along ``dim`` (default every dim)."""
    return _shift(input, dim, -1)


# -- the transforms ---------------------------------------------------------------------------------
#
# Three kinds, each one linear map with its gradient (PyTorch's convention for complex values: the
# input gradient of a linear map A is A^H g, its real part for a real input):
#   c2c  y = s * DFT_d(P x)                    (fft, ifft, fftn, ...)
#   r2c  y = s * K DFT_d(P x), x real          (rfft; ihfft: the inverse direction)
#   c2r  y = s * C2R_d(P X), y real            (irfft; hfft: the forward direction)
# d is the direction (the exponent's sign), s the norm's scale, P the crop or zero-pad of the
# input to the signal sizes, K the onesided half (n // 2 + 1 entries) of the last dim.  The
# adjoint of DFT_d is the unscaled DFT of the other direction; of K, zero-filling the dropped half;
# of P, the zero-pad or crop back.  C2R's adjoint is K DFT of the other direction with the
# entries 1 .. n - (n // 2 + 1) doubled (they stand for two conjugate entries of the full
# spectrum), as PyTorch's fft_c2r_backward.

_NORMS = (None, "backward", "ortho", "forward")


def _scale(norm, forward: bool, n: int) -> float:
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / _np.sqrt(n) if n else 1.0
    scaled = forward if norm == "forward" else not forward
    return 1.0 / n if scaled and n else 1.0


def _scaled(norm, forward: bool, n: int, a):
    """a times the normalisation's real factor, part by part as PyTorch scales a complex tensor:
    numpy's complex product with (factor + 0j) made 0 * inf a NaN in the other part (an inf
    input's fft of length 1 came back inf+nanj; fuzz seed 65700815)."""
    factor = _scale(norm, forward, n)
    if factor == 1.0:
        return a
    if a.dtype.kind == "c":
        parts = _np.multiply(_np.ascontiguousarray(a).view(a.real.dtype), factor)
        return parts.astype(a.real.dtype, copy=False).view(a.dtype)
    return factor * a


def _unscaled(a, dims, forward: bool):
    """The unnormalised complex DFT of `a` over dims in the given direction."""
    if not dims:
        return a
    if forward:
        return _np.fft.fftn(a, axes=dims, norm="backward")
    return _np.fft.ifftn(a, axes=dims, norm="forward")


def _resize(a, dims, sizes):
    """a cropped or zero-padded to sizes along dims (P above, and its adjoint)."""
    for d, n in zip(dims, sizes):
        m = a.shape[d]
        if n < m:
            a = a[(slice(None),) * d + (slice(0, n),)]
        elif n > m:
            pad = [(0, 0)] * a.ndim
            pad[d] = (0, n - m)
            a = _np.pad(a, pad)
    return a


def _doubled(a, dim, n):
    """The c2r gradient's doubling of entries 1 .. n - (n // 2 + 1) along dim."""
    count = n - (n // 2 + 1)
    if count > 0:
        a = a.copy()
        a[(slice(None),) * dim + (slice(1, 1 + count),)] *= 2
    return a


def _halved(a, dim, n):
    """The entries 1 .. n - (n // 2 + 1) along dim halved (undoing irfft's doubling of them)."""
    count = n - (n // 2 + 1)
    if count > 0:
        a = a.copy()
        a[(slice(None),) * dim + (slice(1, 1 + count),)] *= 0.5
    return a


def _complex_dtype(real_dt):
    return _np.complex128 if real_dt == _np.float64 else _np.complex64


def _c2c(a, dims, sizes, forward, norm):
    n = int(_np.prod(sizes))
    return _scaled(norm, forward, n, _unscaled(_resize(a, dims, sizes), dims, forward))


def _r2c_full(a, dims, sizes, forward, norm):
    """fft / ifft of a real signal as PyTorch's: its r2c, with the other half of the spectrum
    filled in by conjugate symmetry.  Those entries are exact mirrors, where a complex transform
    of the signal leaves rounding residue (4e-16 where PyTorch prints 0.) and other signs of
    zero.  (PyTorch's n-D transforms of a real input are complex ones: those stay c2c.)"""
    return _hermitian_completed(_r2c(a, dims, sizes, forward, norm), dims, sizes[-1])


def _hermitian_completed(half, dims, n):
    """The full spectrum of a real signal from its onesided half along dims[-1] (n entries
    there in full): entry k > n // 2 is the conjugate of entry n - k at the negated indices
    (i -> -i mod size) of the other dims, as PyTorch's _fft_fill_with_conjugate_symmetry_."""
    last = dims[-1]
    count = n - (n // 2 + 1)
    if count == 0:
        return half
    mirror = half[(slice(None),) * last + (slice(count, 0, -1),)]   # entries n - k, k > n // 2
    for d in dims[:-1]:
        mirror = _np.roll(_np.flip(mirror, d), 1, d)
    return _np.concatenate([half, _np.conj(mirror)], axis=last)


def _r2c(a, dims, sizes, forward, norm):
    """The onesided transform of a real signal: numpy's rfft along the last dim (half the work
    of a full complex transform cut in half), then the forward complex DFT along the others.
    The inverse direction (ihfft) is the conjugate of the scaled forward transform, conjugated
    last as PyTorch's 1-D ihfft (so its zero imaginary parts are -0.0, as PyTorch prints them;
    a complex product by the scale would make them +0.0)."""
    a = _resize(a, dims, sizes)
    n = int(_np.prod(sizes))
    out = _scaled(norm, forward, n, _unscaled(_np.fft.rfft(a, axis=dims[-1]), dims[:-1], True))
    return out if forward else _np.conj(out)


def _c2r(a, dims, sizes, forward, norm):
    """sizes: the output's signal sizes (the last one the real length n)."""
    n = int(_np.prod(sizes))
    half = list(sizes[:-1]) + [sizes[-1] // 2 + 1]
    a = _resize(a, dims, half)
    if forward:         # hfft: C2R of the conjugate, i.e. the other direction's C2R
        a = _np.conj(a)
    out = _np.fft.irfftn(a, s=sizes, axes=dims, norm="forward")
    return _scaled(norm, forward, n, out)


class _Transform(_Function):
    """One FFT as one node: ctx.kind is c2c, r2c or c2r (the forward above, the VJP below)."""

    @staticmethod
    def forward(ctx, x, kind, dims, sizes, forward, norm, out_dtype):
        ctx.kind, ctx.dims, ctx.sizes, ctx.forward, ctx.norm = kind, dims, sizes, forward, norm
        ctx.in_shape, ctx.in_dtype, ctx.out_dtype = x._array.shape, x._array.dtype, out_dtype
        transform = {"c2c": _c2c, "r2c": _r2c, "c2r": _c2r, "r2c_full": _r2c_full}[kind]
        out = transform(x._array, dims, sizes, forward, norm)
        # (asarray with order "C": ascontiguousarray would make a 0-d result 1-d)
        return _core.wrap_array(_np.asarray(out, dtype=out_dtype, order="C"))

    @staticmethod
    def backward(ctx, g):
        if _core.is_grad_enabled():
            # create_graph=True: the VJP as a node of its own, whose VJP is this transform again
            return (_TransformAdjoint.apply(g, _transform_plan(ctx)),
                    None, None, None, None, None, None)
        return (_adjoint_of(g, _transform_plan(ctx)), None, None, None, None, None, None)


def _transform_plan(ctx):
    """What a transform's VJP needs to know of its forward (its ctx's fields)."""
    return (ctx.kind, ctx.dims, ctx.sizes, ctx.forward, ctx.norm, ctx.in_shape, ctx.in_dtype,
            ctx.out_dtype)


def _adjoint_of(g, plan):
    """The VJP of the transform `plan` describes at the output gradient g: its adjoint (the
    transpose of the real-linear map, which is PyTorch's complex convention), on arrays."""
    kind, dims, sizes, forward, norm, in_shape, in_dtype, _ = plan
    g = g._array
    back = not forward
    n = int(_np.prod(sizes))
    last = dims[-1]
    if kind == "c2r" and g.dtype.kind != "c":
        # K DFT_back of a real g is its rfft along the last dim (then the DFT along the others),
        # conjugated when back is the inverse direction
        half = _unscaled(_np.fft.rfft(g, axis=last), dims[:-1], True)
        half = _scale(norm, forward, n) * half      # (scaled before the conj: a complex
        grad = _doubled(half if back else _np.conj(half), last, sizes[-1])   # product's 0j is +0.0)
    elif kind == "c2r":
        grad = _scale(norm, forward, n) * _unscaled(g.astype(_complex_dtype(g.dtype)), dims,
                                                   back)
        grad = _doubled(grad[(slice(None),) * last + (slice(0, sizes[-1] // 2 + 1),)],
                        last, sizes[-1])
    elif kind == "r2c" and in_dtype.kind != "c":
        # the real part of DFT_back of the zero-filled half is an irfft of the half with its
        # entries 1 .. n - (n // 2 + 1) halved (irfft counts each with its mirrored conjugate),
        # conjugated first when back is the forward direction
        h = _unscaled(g, dims[:-1], back)
        h = _halved(_np.conj(h) if back else h, last, sizes[-1])
        grad = _scaled(norm, forward, n, _np.fft.irfft(h, n=sizes[-1], axis=last, norm="forward"))
    else:
        if kind == "r2c":                               # zero-fill the dropped half
            g = _resize(g, dims[-1:], sizes[-1:])
        grad = _scaled(norm, forward, n, _unscaled(g, dims, back))
    grad = _resize(grad, dims, [in_shape[d] for d in dims])
    if in_dtype.kind != "c":
        grad = grad.real
    return _core.wrap_array(_np.asarray(grad, dtype=in_dtype, order="C"))


class _TransformAdjoint(_Function):
    """A transform's VJP recorded as a node (backward with create_graph=True).  The VJP is
    linear in the gradient and is the transform's transpose, so its own VJP is the transform:
    higher derivatives chain through these two nodes."""

    @staticmethod
    def forward(ctx, g, plan):
        ctx.plan = plan
        return _adjoint_of(g, plan)

    @staticmethod
    def backward(ctx, h):
        kind, dims, sizes, forward, norm, _, _, out_dtype = ctx.plan
        # (the subclasses differ only in the name their node shows)
        return _Transform.apply(h, kind, dims, sizes, forward, norm, out_dtype), None


class _TransformR2C(_Transform):
    pass


class _TransformC2R(_Transform):
    pass


class _TransformConj(_Transform):
    pass


_torch_grad_fn_name(_Transform, "FftC2CBackward0")
_torch_grad_fn_name(_TransformR2C, "FftR2CBackward0")
_torch_grad_fn_name(_TransformC2R, "FftC2RBackward0")
_torch_grad_fn_name(_TransformConj, "ConjBackward0")


def _check_input(fn: str, input):
    _check_tensor(input, "fft_" + fn)
    if input._array.dtype == _np.float16:       # PyTorch's CPU transforms have no half kernels
        raise RuntimeError("Unsupported dtype Half")


_ONE_DIM_TRANSFORMS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _transform_dim(dim, ndim: int) -> int:
    """dim wrapped to the input's rank; PyTorch's transforms never wrap into a 0-d input."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _core.normalize_dim(dim, ndim)


def _dims_arg(fn: str, dim) -> tuple:
    """An n-D transform's dim argument (an int or a sequence of ints) as a tuple, with the
    TypeError of PyTorch's argument parser for anything else (a float, a bool)."""
    is_int = lambda d: hasattr(d, "__index__") and not isinstance(d, (bool, _np.bool_))  # noqa
    if is_int(dim):
        return (dim,)
    if isinstance(dim, (tuple, list)) and all(is_int(d) for d in dim):
        return tuple(dim)
    raise TypeError(f"fft_{fn}(): argument 'dim' must be tuple of ints, not {_type_name(dim)}")


def _check_some_axis(fn: str, dims) -> None:
    """A one-sided transform needs a last axis to halve (PyTorch names its n-D form)."""
    if not dims:
        raise RuntimeError(f"{fn.replace('2', 'n')} must transform at least one axis")


def _plan(fn: str, input, s, dim, default_dims):
    """The transform's dims (normalised, in order) and signal sizes (None entries: the input's
    size along that dim), as torch.fft's n / s and dim arguments give them."""
    ndim = input.ndim
    if fn in _ONE_DIM_TRANSFORMS and dim is not None and (
            isinstance(dim, (bool, _np.bool_)) or not hasattr(dim, "__index__")):
        raise TypeError(f"fft_{fn}(): argument 'dim' must be int, not {_type_name(dim)}")
    if dim is None:
        if s is not None:
            if len(s) > ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                                   f"{ndim} dimensions.")
            dims = tuple(range(ndim - len(s), ndim))
        else:
            dims = tuple(range(ndim)) if default_dims is None else default_dims
    else:
        dims = _dims_arg(fn, dim)
    dims = tuple(_transform_dim(d, ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    if s is None:
        sizes = [None] * len(dims)
    else:
        sizes = list(s)
        if len(sizes) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    for n in sizes:
        if n is not None and n != -1 and n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, [None if n == -1 else n for n in sizes]


def _real_input(fn: str, input):
    """The real operand of an r2c transform (integers: the default float dtype)."""
    a = input._array
    if a.dtype.kind == "c":
        # (PyTorch's words differ between the 1-D, the rfft2/rfftn and the ihfft2/ihfftn paths)
        dtype = _core.scalar_type_name_of(a.dtype)
        if fn in ("ihfft2", "ihfftn"):
            raise RuntimeError(f"Only supports floating-point dtypes, but found: {dtype}")
        if fn in ("rfft2", "rfftn"):
            raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {dtype}")
        raise RuntimeError(f"{fn} expects a real input tensor, but got {dtype}")
    if a.dtype.kind != "f":
        return input.to(_core.get_default_dtype())
    return input


def _complex_input(input):
    """The complex operand of a c2c / c2r transform: a real input keeps its precision."""
    a = input._array
    if a.dtype.kind == "c":
        return input, a.dtype
    if a.dtype.kind != "f":
        return input, _np.dtype(_complex_dtype(_core.get_default_dtype().np_dtype))
    if a.dtype == _np.float16:
        raise TypeError(_core.NO_COMPLEX32)
    return input, _np.dtype(_complex_dtype(a.dtype))


def _c2c_call(fn, input, s, dim, norm, forward, default_dims):
    _check_input(fn, input)
    dims, sizes = _plan(fn, input, s, dim, default_dims)
    sizes = _check_points([input.shape[d] if n is None else n for d, n in zip(dims, sizes)])
    _scale(norm, forward, 1)
    x, out_dt = _complex_input(input)
    # PyTorch's 1-D fft / ifft of a real signal is its r2c (FftR2CBackward0), the ifft's a
    # lazy conj() view of it as ihfft's (ConjBackward0, is_conj(): view_as_real and numpy()
    # refuse it); its 2-D / n-D transforms of a real signal are complex ones (FftC2CBackward0)
    one_dim_of_real = input._array.dtype.kind != "c" and fn in _ONE_DIM_TRANSFORMS
    conj_view = one_dim_of_real and not forward
    if one_dim_of_real:
        cls, kind = (_TransformConj if conj_view else _TransformR2C), "r2c_full"
    else:
        cls, kind = _Transform, "c2c"
    _core._complex_in_use()
    res = cls.apply(x, kind, dims, sizes, forward, norm, out_dt)
    if conj_view:
        res._conj_bit = True
    return res


def _r2c_call(fn, input, s, dim, norm, forward, default_dims):
    _check_input(fn, input)
    if fn in ("ihfft2", "ihfftn"):      # (PyTorch checks their dims before the input's dtype)
        _check_some_axis(fn, _plan(fn, input, s, dim, default_dims)[0])
    x = _real_input(fn, input)
    dims, sizes = _plan(fn, x, s, dim, default_dims)
    _check_some_axis(fn, dims)
    sizes = _check_points([x.shape[d] if n is None else n for d, n in zip(dims, sizes)])
    _scale(norm, forward, 1)
    _core._complex_in_use()
    # PyTorch's ihfft is the conjugate of an rfft for one dim: a lazy conj() view, so its node
    # is ConjBackward0 and it carries the conjugate bit (is_conj(); view_as_real and numpy()
    # refuse it, and its conj() has none: 65301814); ihfft2 / ihfftn are plain results
    conj_view = not forward and len(dims) == 1
    cls = _TransformR2C if forward else (_TransformConj if conj_view else _Transform)
    res = cls.apply(x, "r2c", dims, sizes, forward, norm, _complex_dtype(x._array.dtype))
    if conj_view:
        res._conj_bit = True
    return res


def _c2r_call(fn, input, s, dim, norm, forward, default_dims):
    _check_input(fn, input)
    dims, sizes = _plan(fn, input, s, dim, default_dims)
    _check_some_axis(fn, dims)
    sizes = [input.shape[d] if n is None else n for d, n in zip(dims, sizes[:-1])] + \
        [2 * (input.shape[dims[-1]] - 1) if sizes[-1] is None else sizes[-1]]
    _check_points(sizes)
    _scale(norm, forward, 1)
    x, cdt = _complex_input(input)
    _core._complex_in_use()
    return _TransformC2R.apply(x, "c2r", dims, sizes, forward, norm,
                               _np.float64 if cdt == _np.complex128 else _np.float32)


def _check_points(sizes):
    """The signal sizes a transform runs on, once the defaults (the input's sizes) are filled
    in: an empty dim transforms as an invalid size, as PyTorch's."""
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return sizes


def _one(n):
    """The 1-D transforms' n as a one-entry s (where -1 is not "the input's size", as it is in
    s: PyTorch refuses it)."""
    if n is not None and not isinstance(n, bool) and isinstance(n, (int, _np.integer)) and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return None if n is None else (n,)


def fft(input, n=None, dim=-1, norm=None):
    """The 1-D discrete Fourier transform along dim (n: crop or zero-pad to n points first; norm:
    "backward" (default, no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n))."""
    return _c2c_call("fft", input, _one(n), dim, norm, True, None)


def ifft(input, n=None, dim=-1, norm=None):
    """The inverse 1-D discrete Fourier transform along dim ("backward" norm: scaled by 1/n)."""
    return _c2c_call("ifft", input, _one(n), dim, norm, False, None)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D discrete Fourier transform over dim (the last two by default)."""
    return _c2c_call("fft2", input, s, dim, norm, True, None)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse 2-D discrete Fourier transform over dim."""
    return _c2c_call("ifft2", input, s, dim, norm, False, None)


def fftn(input, s=None, dim=None, norm=None):
    """The N-D discrete Fourier transform over dim (every dim, or the last len(s), by default)."""
    return _c2c_call("fftn", input, s, dim, norm, True, None)


def ifftn(input, s=None, dim=None, norm=None):
    """The inverse N-D discrete Fourier transform over dim."""
    return _c2c_call("ifftn", input, s, dim, norm, False, None)


def rfft(input, n=None, dim=-1, norm=None):
    """The 1-D Fourier transform of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _r2c_call("rfft", input, _one(n), dim, norm, True, None)


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of rfft: a real signal of n points (default 2 * (input.size(dim) - 1)) from
    its non-negative frequencies (the imaginary parts of the zero and Nyquist terms ignored)."""
    return _c2r_call("irfft", input, _one(n), dim, norm, False, None)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D Fourier transform of a real signal, onesided along the last dim."""
    return _r2c_call("rfft2", input, s, dim, norm, True, None)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of rfft2."""
    return _c2r_call("irfft2", input, s, dim, norm, False, None)


def rfftn(input, s=None, dim=None, norm=None):
    """The N-D Fourier transform of a real signal, onesided along the last of dim."""
    return _r2c_call("rfftn", input, s, dim, norm, True, None)


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn."""
    return _c2r_call("irfftn", input, s, dim, norm, False, None)


def hfft(input, n=None, dim=-1, norm=None):
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: a real
    spectrum of n points (default 2 * (input.size(dim) - 1))."""
    return _c2r_call("hfft", input, _one(n), dim, norm, True, None)


def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of hfft: the onesided inverse transform of a real signal."""
    return _r2c_call("ihfft", input, _one(n), dim, norm, False, None)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D hfft."""
    return _c2r_call("hfft2", input, s, dim, norm, True, None)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D ihfft."""
    return _r2c_call("ihfft2", input, s, dim, norm, False, None)


def hfftn(input, s=None, dim=None, norm=None):
    """The N-D hfft."""
    return _c2r_call("hfftn", input, s, dim, norm, True, None)


def ihfftn(input, s=None, dim=None, norm=None):
    """The N-D ihfft."""
    return _r2c_call("ihfftn", input, s, dim, norm, False, None)


from . import _out_arg  # noqa: E402
from ._public_calls import install as _install_public_calls  # noqa: E402
_install_public_calls(globals(), _out_arg.FFT_OUT_FUNCTIONS, "fft_")  # the public functions' entry (the meta device dispatches there)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from ._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
