"""nn.init: in-place parameter initialisers (no gradient is recorded), as PyTorch's."""
from __future__ import annotations as _annotations

import math
import warnings

import numpy as _np

from .. import _core
from ..grad_mode import no_grad as _no_grad
from ..overrides import handle_torch_function as _handle_torch_function
from ..overrides import has_torch_function_variadic as _has_torch_function_variadic
from .._random import _check_float_input, _check_uniform_bounds, _numpy_rng

# torch.nn.init's __all__: `from torch.nn.init import *` binds the initialisers only
__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye",
           "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal", "sparse"]


def _fill(tensor, values):
    if tensor.is_meta:
        return tensor       # a meta tensor has no values to set
    if not tensor._array.flags.writeable:
        # an expand()ed view (numpy marks it read-only): as PyTorch, one value is written into
        # elements that share memory, values per element are refused there
        from ..grad_mode import no_grad
        with _no_grad():
            return _core._overwrite_(tensor, values, "FillBackward2")
    tensor._array[...] = values
    _core._mark_written(tensor)
    return tensor


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table): 1 for linear/conv/sigmoid, 5/3 for
    tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (``param`` is the slope,
    default 0.01), 3/4 for selu.
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1                    # an int, as PyTorch's (scripts print it)
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if not isinstance(slope, (int, float)) or isinstance(slope, bool):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# Samples drawn per generator call.  Drawing a whole weight at once would make a float64
# temporary twice the size of a float32 weight (1.6 MB for a 784x256 layer), which sets the
# process's peak memory in a small training script.
_DRAW_CHUNK = 1 << 15


def _fill_drawn(tensor, draw):
    """Fill `tensor` with draw(n) samples a chunk at a time.  numpy's generators yield the same
    stream drawn chunk by chunk or all at once, so the values do not depend on the chunking."""
    arr = tensor._array
    if tensor.is_meta:
        return tensor       # nothing to fill, and no draws: PyTorch's meta init leaves the RNG be
    if not arr.flags.c_contiguous:
        return _fill(tensor, draw(arr.shape))
    flat = arr.reshape(-1)                              # a view: writes land in the tensor
    for start in range(0, flat.size, _DRAW_CHUNK):
        stop = min(start + _DRAW_CHUNK, flat.size)
        flat[start:stop] = draw(stop - start)
    _core._mark_written(tensor)
    return tensor


# PyTorch's initialisers fill through Tensor.uniform_ and normal_, whose kernels refuse
# non-float tensors ("normal_kernel_cpu" not implemented for 'Long') and bad bounds: so do these.
def _check_normal(tensor, std: float) -> None:
    if tensor._array.size:              # (the kernel, and its dtype check, skip empties)
        _check_float_input(tensor, "normal_kernel_cpu")
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")


# A tensor subclass with a __torch_function__ (a logging or metadata tensor, a lazy module's
# placeholder, which refuses) sees what PyTorch's initialisers show it: uniform_, normal_,
# constant_ and kaiming_uniform_ dispatch as themselves; zeros_ and ones_ call zero_ / fill_.

def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill ``tensor`` in place with draws from U(a, b), without recording; returns it."""
    if _has_torch_function_variadic(tensor):
        return _handle_torch_function(uniform_, (tensor,), tensor=tensor, a=a, b=b,
                                     generator=generator)
    if tensor.is_complex():             # both parts from U(a, b): Tensor.uniform_'s complex draw
        with _no_grad():
            return tensor.uniform_(a, b, generator=generator)
    _check_float_input(tensor, "check_uniform_bounds")
    _check_uniform_bounds(a, b, tensor._array.dtype)
    gen = _numpy_rng(generator, "uniform_")
    return _fill_drawn(tensor, lambda n: gen.uniform(a, b, n))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill ``tensor`` in place with draws from N(mean, std**2), without recording; returns it."""
    if _has_torch_function_variadic(tensor):
        return _handle_torch_function(normal_, (tensor,), tensor=tensor, mean=mean, std=std,
                                     generator=generator)
    if tensor.is_complex():             # Tensor.normal_'s complex draw (each part std/sqrt(2))
        with _no_grad():
            return tensor.normal_(mean, std, generator=generator)
    _check_normal(tensor, std)
    gen = _numpy_rng(generator, "normal_")
    return _fill_drawn(tensor, lambda n: gen.normal(mean, std, n))


def constant_(tensor, val: float):
    """Fill ``tensor`` in place with ``val``, without recording; returns it."""
    if _has_torch_function_variadic(tensor):
        return _handle_torch_function(constant_, (tensor,), tensor=tensor, val=val)
    if isinstance(val, _core.TensorBase):
        # PyTorch fills through fill_ under no_grad: a 0-dim tensor's value, even one that
        # requires grad (a learnable scale), is copied in; a dimensioned one is refused
        if val.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {val.dim()} dimensions.")
        val = val.detach()
    return _fill(tensor, val)


def zeros_(tensor):
    """Fill ``tensor`` in place with zeros, without recording; returns it."""
    if _has_torch_function_variadic(tensor):
        with _no_grad():
            return tensor.zero_()
    return _fill(tensor, 0)


def ones_(tensor):
    """Fill ``tensor`` in place with ones, without recording; returns it."""
    if _has_torch_function_variadic(tensor):
        with _no_grad():
            return tensor.fill_(1.0)
    return _fill(tensor, 1)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), in place.

    fan_in/fan_out are ``tensor.shape[1]``/``shape[0]`` times the receptive field (the product of
    the remaining dims); the tensor needs at least 2 dims.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out)), in place."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
    a), fan = fan_in (``mode='fan_in'``) or fan_out; in place. ``nn.Linear`` uses it with
    ``a=sqrt(5)``. A zero-element tensor warns and is returned unchanged, as PyTorch.
    """
    if _has_torch_function_variadic(tensor):
        return _handle_torch_function(kaiming_uniform_, (tensor,), tensor=tensor, a=a, mode=mode,
                                     nonlinearity=nonlinearity, generator=generator)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: N(0, std**2) with std = gain / sqrt(fan), gain and fan as
    ``kaiming_uniform_``; in place.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """Fill with a (semi-)orthogonal matrix: the Q of a Gaussian matrix's QR, signs fixed by R's
    diagonal so Q is uniformly distributed; dims after the first are flattened."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    if tensor._array.dtype.kind == "c":
        # (PyTorch draws a complex Gaussian and factors it; fixing Q's phases with R's
        # diagonal's sign is where it refuses)
        from .._complex import refuse
        refuse("sign", tensor)
    _check_normal(tensor, 1.0)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _numpy_rng(generator, "orthogonal_").normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = _np.linalg.qr(flat)
    q = q * _np.sign(_np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _normal_rejection(gen, n, mean, std, a, b):
    """N(mean, std^2) draws, the ones outside [a, b] drawn again: quick when most mass is inside."""
    values = gen.normal(mean, std, n)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = gen.normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return values


def _uniform_envelope_rejection(gen, n, mean, std, a, b):
    """U(a, b) proposals kept with probability pdf(x) / pdf(mode): terminates quickly however
    little normal mass [a, b] holds (redrawing normals would almost never land in a far tail)."""
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def rejected(x):
        # (a NaN mean makes every comparison False: all kept, as PyTorch's)
        return _np.log(gen.uniform(0.0, 1.0, x.size)) > -0.5 * ((x - mean) / std) ** 2 - log_peak

    values = gen.uniform(a, b, n)
    pending = rejected(values)
    while pending.any():
        proposals = gen.uniform(a, b, int(pending.sum()))
        values[pending] = proposals
        pending[pending] = rejected(proposals)
    return values


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None):
    """Fill from N(mean, std^2) restricted to [a, b], by rejection as PyTorch: normal draws
    redrawn when more than 0.3 of the mass lies in [a, b], else uniform proposals on [a, b]."""
    if tensor.is_meta:
        return tensor
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    # (a Python float division, so std == 0 raises ZeroDivisionError, as PyTorch's)
    inside = _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std)
    if tensor._array.dtype.kind == "c":
        # PyTorch samples a complex tensor, then its rejection test compares it: the branch
        # picks the comparison (result < a when above 0.3, else accept > pdf)
        kernel = "lt_cpu" if inside > 0.3 else "gt_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_core.scalar_type_name_of(tensor._array.dtype)}'")
    if inside > 0.3:
        _check_normal(tensor, 1.0)
        draw = _normal_rejection
    else:
        # (also taken for a negative std or a NaN mean: both make `inside` fail the test)
        _check_float_input(tensor, "check_uniform_bounds")
        _check_uniform_bounds(a, b, tensor._array.dtype)
        draw = _uniform_envelope_rejection
    gen = _numpy_rng(generator, "trunc_normal_")
    values = draw(gen, tensor.numel(), float(mean), float(std), float(a), float(b))
    return _fill(tensor, values.reshape(tensor.shape))


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal of a non-square one)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, _np.eye(*tensor.shape))


def dirac_(tensor, groups: int = 1):
    """Fill a 3-, 4- or 5-D (out, in, *kernel) tensor with the Dirac delta: each of the first
    ``min(out // groups, in)`` output channels of a group passes its input channel through the
    kernel's centre, so a convolution starts as the identity."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = _np.zeros(tuple(sizes), dtype=tensor._array.dtype)
    centre = tuple(k // 2 for k in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, values)


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fill a 2-D tensor with N(0, std**2) draws, then zero ``ceil(sparsity * rows)`` randomly
    chosen entries of every column (Martens' sparse initialisation)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    normal_(tensor, 0.0, std, generator)
    gen = _numpy_rng(generator, "sparse_")
    for col in range(cols):
        tensor._array[gen.permutation(rows)[:num_zeros], col] = 0
    _core._mark_written(tensor)
    return tensor


def _deprecated(new):
    """PyTorch keeps the old names without the trailing underscore: they warn and call the new."""
    old_name, new_name = new.__name__[:-1], new.__name__

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = (f"\n    {old_name}(...)\n\n    .. warning::\n        This method is now "
                               f"deprecated in favor of :func:`torch.nn.init.{new_name}`.\n\n"
                               f"    See :func:`~torch.nn.init.{new_name}` for details.")
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
