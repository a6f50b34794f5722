"""tapegrad.masked: torch.masked's reductions and normalisations over the elements a boolean
``mask`` keeps, for dense tensors.

Each op replaces the masked-out elements by the identity of its reduction (0 for sums, 1 for
products, -inf for maxima, +inf for minima, NaN for the median, which nanmedian skips) and
calls the ordinary op, so values, dtypes and gradients are those of the recorded ops underneath
(a masked-out element's gradient is zero through ``where``).  ``mask`` broadcasts to the input's
shape and is read as bool; ``mask=None`` keeps every element.  mean, var and std divide by the
number of kept elements, so a fully masked-out slice gives NaN, as PyTorch's does.

PyTorch's MaskedTensor class (torch.masked.MaskedTensor, masked_tensor, as_masked_tensor) lives in
tapegrad/_maskedtensor.py; its reductions call these functions on its data and mask.
"""
from __future__ import annotations

import math

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor",
           "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

# integer inputs a sum or product accumulates in int64 (PyTorch's rule for its reductions)
_WIDEN_TO_INT64 = ("bool", "uint8", "int8", "int16", "int32")


def _torch():
    import tapegrad
    return tapegrad


def _dtname(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _identity(kind, input, ord=2.0):
    """The value that leaves reduction ``kind`` unchanged, as a 0-d tensor of input's dtype
    (None where the reduction has none: mean, var, std)."""
    tg = _torch()
    dtype = input.dtype
    if kind in ("sum", "cumsum"):
        return tg.tensor(0, dtype=dtype)
    if kind in ("prod", "cumprod"):
        return tg.tensor(1, dtype=dtype)
    if kind == "norm":
        return tg.tensor(math.inf if ord == -math.inf else 0, dtype=dtype)
    if kind == "median":
        return tg.tensor(math.nan, dtype=dtype if dtype.is_floating_point else tg.float32)
    if kind in ("amax", "argmax", "logaddexp", "logsumexp", "amin", "argmin"):
        low = kind not in ("amin", "argmin")
        if dtype.is_floating_point or (dtype.is_complex and kind == "logsumexp"):
            return tg.tensor(-math.inf if low else math.inf, dtype=dtype)
        if dtype.is_signed or _dtname(dtype) == "uint8":
            info = tg.iinfo(dtype)
            return tg.tensor(info.min if low else info.max, dtype=dtype)
        raise NotImplementedError(f"identity of {kind} on {dtype} input")
    return None


def _dims(dim, ndim):
    """dim as a sorted tuple of non-negative dims (None and () mean all of them)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    seen = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in seen:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        seen.append(d % ndim)
    return tuple(sorted(seen))


def _input_mask(input, mask):
    """mask broadcast to input's shape, as bool."""
    tg = _torch()
    if tuple(mask.shape) != tuple(input.shape):
        if mask.dim() > input.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = tg.broadcast_to(mask, tuple(input.shape))
    return mask.to(dtype=tg.bool)


def _kept(kind, input, mask, ord=2.0):
    """input with its masked-out elements replaced by the identity of ``kind``."""
    if mask is None:
        return input
    return _torch().where(_input_mask(input, mask), input, _identity(kind, input, ord))


def _accumulating_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return _torch().int64 if _dtname(input.dtype) in _WIDEN_TO_INT64 else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the kept elements over ``dim`` (all dims when None)."""
    dtype = _accumulating_dtype(input, dtype)
    return _torch().sum(_kept("sum", input, mask), _dims(dim, input.dim()), bool(keepdim),
                        dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the kept elements over ``dim`` (all dims when None)."""
    dtype = _accumulating_dtype(input, dtype)
    out = _kept("prod", input, mask).to(dtype=dtype)
    for d in reversed(_dims(dim, input.dim())):
        out = out.prod(dim=d, keepdim=bool(keepdim))
    return out


def cumsum(input, dim, *, dtype=None, mask=None):
    """Cumulative sum along ``dim``, masked-out elements adding 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    return _torch().cumsum(_kept("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Cumulative product along ``dim``, masked-out elements multiplying by 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    return _torch().cumprod(_kept("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Maximum of the kept elements over ``dim`` (-inf, or the dtype's minimum, where none is
    kept)."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().amax(_kept("amax", input, mask), _dims(dim, input.dim()),
                         bool(keepdim)).to(dtype=dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Minimum of the kept elements over ``dim`` (+inf, or the dtype's maximum, where none is
    kept)."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().amin(_kept("amin", input, mask), _dims(dim, input.dim()),
                         bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the largest kept element along ``dim``; as PyTorch's, in ``dtype`` (input's
    dtype by default)."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().argmax(_kept("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the smallest kept element along ``dim``; as PyTorch's, in ``dtype`` (input's
    dtype by default)."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().argmin(_kept("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def _count(input, mask, dims, keepdim):
    """How many elements each slice keeps (int64)."""
    tg = _torch()
    if mask is None:
        return tg.sum(tg.ones(tuple(input.shape), dtype=tg.int64), dims, bool(keepdim))
    return tg.sum(_input_mask(input, mask), dims, bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the kept elements over ``dim``; NaN where a slice keeps none."""
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                         f"a floating point or complex dtype. Got: {dtype}")
    dims = _dims(dim, input.dim())
    total = sum(input, dims, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, mask, dims, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the kept elements along ``dim``; NaN where a slice keeps none (an error for
    integer input, whose result could not hold it)."""
    tg = _torch()
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=tg.float32)
    out = tg.nanmedian(_kept("median", input, mask), d, keepdim).values
    if is_float:
        return out
    if bool(tg.isnan(out).any()):
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype=dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp)) of the kept elements over ``dim`` (-inf where none is kept)."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().logsumexp(_kept("logsumexp", input, mask), _dims(dim, input.dim()),
                              keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """logaddexp of input and other, each with its masked-out elements read as -inf."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().logaddexp(_kept("logaddexp", input, input_mask),
                              _kept("logaddexp", other, other_mask)).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector ``ord``-norm of the kept elements over ``dim``."""
    dtype = input.dtype if dtype is None else dtype
    return _torch().linalg.vector_norm(_kept("norm", input, mask, ord), ord,
                                       _dims(dim, input.dim()), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    tg = _torch()
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    corr = 1.0 if unbiased is None else (1.0 if unbiased else 0.0)
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = tg.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else tg.float32
    dims = _dims(dim, input.dim())
    count = _count(input, mask, dims, True)
    centred = input - sum(input, dims, keepdim=True, dtype=dtype, mask=mask) / count
    total = sum(centred * centred.conj(), dims, keepdim=keepdim, dtype=compute, mask=mask)
    count = count.reshape(tuple(total.shape))
    if corr != 0:
        real = compute
        if compute.is_complex:
            real = tg.float64 if _dtname(compute) == "complex128" else tg.float32
        count = tg.clamp_min(count.to(real) - corr, 0)
    out = (total / count).to(dtype=dtype)
    return tg.sqrt(out) if take_sqrt else out


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Variance of the kept elements over ``dim`` (``correction`` 1 by default); NaN where a
    slice keeps none."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Standard deviation of the kept elements over ``dim`` (``correction`` 1 by default);
    NaN where a slice keeps none."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax along ``dim`` over the kept elements (masked-out ones get 0; NaN where a slice
    keeps none)."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    return _torch().nn.functional.softmax(_kept("amax", input, mask), d, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax along ``dim`` over the kept elements (masked-out ones get -inf)."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    return _torch().nn.functional.log_softmax(_kept("amax", input, mask), d, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmin along ``dim`` over the kept elements (masked-out ones get 0)."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.dim())[0]
    return _torch().nn.functional.softmin(_kept("amin", input, mask), d, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the ``ord``-norm of its kept elements along ``dim`` (at least ``eps``);
    masked-out elements give 0."""
    tg = _torch()
    dtype = input.dtype if dtype is None else dtype
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return tg.divide(_kept("sum", input, mask), tg.maximum(nrm, nrm.new_full([], eps)))


# (after the reductions: MaskedTensor's reductions call them)
from ._maskedtensor import (MaskedTensor, as_masked_tensor, is_masked_tensor,  # noqa: E402
                            masked_tensor)
