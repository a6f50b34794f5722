"""Quantized tensors (torch.quantize_per_tensor / quantize_per_channel): integers plus the affine
map back to floats, ``x = (q - zero_point) * scale``.

A QuantizedTensor holds a numpy integer array (uint8 for quint8, int8 for qint8, int32 for
qint32) and its qparams: one scale and zero point (per_tensor_affine), or one per slice along
``axis`` (per_channel_affine).  It is not a ``tapegrad.Tensor`` for the reason SparseTensor is not
one (see _sparse_coo.py): the compiled core reads a Tensor's ndarray directly, so integers posing
as a Tensor would be silently misread as values by every op that does not know them.  As its own
class, arithmetic raises as it does in PyTorch (QuantizedCPU has no kernels for it) and the shape
ops PyTorch allows (view, reshape, transpose, select, indexing, clone) move the integers.

Rounding, checked bit for bit against PyTorch 2.13 on x86 (FBGEMM):
- per tensor, quint8 / qint8: ``rint(fma(x, 1/scale, zero_point))`` in float32 (FBGEMM's AVX2
  quantize uses a fused multiply-add);
- per tensor qint32, and per channel (every dtype): ``rint(zero_point + x * (1/scale))`` with the
  product rounded to float32 first (ATen's scalar quantize_val);
then clamped to the dtype's range; rint rounds half to even.  ``1/scale`` is taken in float32.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from . import _core
from ._public_calls import op_name
from ._device import CPU
from ._qscheme import per_channel_affine, per_tensor_affine
from ._torch_names import TorchTensorNamedClass

# quantized dtype name -> (numpy integer type of its values, PyTorch's ScalarType name)
_STORAGE = {"quint8": (np.uint8, "QUInt8"), "qint8": (np.int8, "QInt8"),
            "qint32": (np.int32, "QInt32")}

_DEPRECATION = ("torch.quantize_per_tensor, torch.quantize_per_channel and other quantized tensor "
                "creation functions that produce tensors with dtype torch.quint8, torch.qint8, "
                "and torch.qint32 are deprecated and will be removed in a future PyTorch release. "
                "Please see https://github.com/pytorch/pytorch/issues/184982 for more "
                "information.")
_warned = False


def _warn_deprecated() -> None:
    # PyTorch warns once per process (TORCH_WARN_ONCE)
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(_DEPRECATION, UserWarning, stacklevel=3)


def _not_implemented(op: str, backend: str = "QuantizedCPU"):
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{backend}' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build).")


# The overload a call of a QuantizedCPU-less op fails in, where it is not the op's own name:
# structured kernels (abs, exp, ...) dispatch their out= overload, a few ops another op's.
_STRUCTURED = ("abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
               "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh",
               "neg", "sign", "sgn", "signbit", "floor", "ceil", "round", "trunc", "frac",
               "reciprocal", "erf", "erfc", "erfinv", "digamma", "lgamma", "i0", "sinc",
               "nan_to_num", "argmax", "argmin", "amax", "amin", "aminmax", "tril", "triu",
               "logical_not", "bitwise_not", "clamp", "elu")
_MISSING_KERNEL = {**{name: name + ".out" for name in _STRUCTURED},
                   "square": "pow.Tensor_Scalar_out", "all": "all.all_out",
                   "any": "any.all_out", "deg2rad": "mul.out", "var": "var.correction",
                   "count_nonzero": "count_nonzero.dim_IntList", "unique": "_unique2",
                   "bernoulli": "bernoulli_.Tensor"}


def _missing_kernel(name: str):
    """The NotImplementedError of a call of `name` on a quantized tensor (PyTorch's dispatcher
    finds no QuantizedCPU kernel)."""
    return _not_implemented(_MISSING_KERNEL.get(name, name))


def _float_input(t, who="Quantize"):
    from .tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"quantize_per_tensor(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(t).__name__}")
    a = t.detach()._array
    if a.dtype != np.float32:
        raise RuntimeError(f"{who} only works on Float Tensor, got "
                           f"{_core.scalar_type_name_of(a.dtype)}")
    return a


def _storage_of(dtype):
    if not isinstance(dtype, _core.dtype) or dtype.name not in _STORAGE:
        name = _core.scalar_type_name_of(np.dtype(dtype.name)) if isinstance(
            dtype, _core.dtype) and dtype.name in np.sctypeDict else str(dtype)
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")
    return _STORAGE[dtype.name][0]


def _scalar(v, kind):
    from .tensor import Tensor
    if isinstance(v, Tensor):
        return kind(v.item())
    return kind(v)


def _saturated(v: np.ndarray, np_type) -> np.ndarray:
    """Integral float values clamped to np_type's range, then converted.  The clamp runs in
    float64: in float32, int32's max rounds up to 2**31, which overflows the conversion (a
    saturated qint32 would come out as its minimum)."""
    info = np.iinfo(np_type)
    return np.clip(np.asarray(v, np.float64), info.min, info.max).astype(np_type)


def _round_clamp(v: np.ndarray, np_type) -> np.ndarray:
    return _saturated(np.rint(v), np_type)


def _quantize_array(a: np.ndarray, scale: float, zero_point: int, dtype) -> np.ndarray:
    np_type = _storage_of(dtype)
    inv = np.float32(1.0) / np.float32(scale)
    if np_type is np.int32:
        v = np.float32(zero_point) + a * inv
    else:
        # a fused multiply-add: the float64 product of two float32 values is exact, one
        # rounding to float32 after adding the zero point
        v = (a.astype(np.float64) * np.float64(inv) + zero_point).astype(np.float32)
    return _round_clamp(v, np_type)


_SMALL_SCALE = np.float32(6.1e-5)   # FBGEMM: no scale in float16's subnormal range


def _choose_qparams(x_min, x_max, qmin: int, qmax: int, reduce_range: bool):
    """FBGEMM's ChooseQuantizationParams (affine, no sparsity preservation), as PyTorch's dynamic
    quantization picks qparams (quantized::linear_dynamic's input, quantize_per_tensor_dynamic):
    the scale (double, used in float32) and the integer zero point for values in
    [x_min, x_max] over qmin..qmax (halved by reduce_range)."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    x_min = np.float32(min(x_min, np.float32(0)))
    x_max = np.float32(max(x_max, np.float32(0)))
    scale = (float(x_max) - float(x_min)) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        # the range grows to the smallest scale's, in float32 as FBGEMM computes it
        old = np.float32(scale)
        scale = float(_SMALL_SCALE)
        if x_min == 0:
            x_max = np.float32(_SMALL_SCALE * np.float32(qmax - qmin))
        elif x_max == 0:
            x_min = np.float32(-_SMALL_SCALE * np.float32(qmax - qmin))
        else:
            grow = np.float32(_SMALL_SCALE / old)
            x_min, x_max = np.float32(x_min * grow), np.float32(x_max * grow)
    # the zero point from whichever end adds the smaller terms (the smaller rounding error)
    from_min, from_max = qmin - float(x_min) / scale, qmax - float(x_max) / scale
    err_min = abs(qmin) - abs(float(x_min) / scale)
    err_max = abs(qmax) - abs(float(x_max) / scale)
    zero_point = from_min if err_min < err_max else from_max
    zero_point = qmin if zero_point < qmin else qmax if zero_point > qmax else int(np.rint(zero_point))
    return scale, zero_point


def _check_zero_point(zero_point: int, np_type, who: str) -> None:
    info = np.iinfo(np_type)
    if zero_point > info.max:
        raise RuntimeError(f"{who} zero_point {zero_point} is above upper bound.")
    if zero_point < info.min:
        raise RuntimeError(f"{who} zero_point {zero_point} is below lower bound.")


def quantize_per_tensor(input, scale, zero_point, dtype):  # noqa: A002
    """Quantize a float32 tensor (or each tensor of a list, with a tensor of scales and one of
    zero points) to a per_tensor_affine quantized tensor of `dtype` (quint8, qint8, qint32)."""
    if isinstance(input, (list, tuple)):
        scales = scale.detach()._array.reshape(-1)
        zps = zero_point.detach()._array.reshape(-1)
        return tuple(quantize_per_tensor(t, float(s), int(z), dtype)
                     for t, s, z in zip(input, scales, zps))
    _warn_deprecated()
    a = _float_input(input)
    np_type = _storage_of(dtype)
    scale, zero_point = _scalar(scale, float), _scalar(zero_point, int)
    _check_zero_point(zero_point, np_type, "quantize_tensor_per_tensor_affine")
    return QuantizedTensor._make(_quantize_array(a, scale, zero_point, dtype), dtype,
                                 per_tensor_affine, scale, zero_point)


def quantize_per_tensor_dynamic(input, dtype, reduce_range):  # noqa: A002
    """Quantize a float32 tensor to quint8 or qint8 with a scale and zero point chosen from its
    range [min(x, 0), max(x, 0)] (reduce_range: one bit less, as x86 kernels need); float16
    gives a plain half tensor."""
    if not isinstance(dtype, _core.dtype) or dtype.name not in ("qint8", "quint8", "float16"):
        name = _STORAGE[dtype.name][1] if isinstance(dtype, _core.dtype) and dtype.name in _STORAGE \
            else _core.scalar_type_name_of(np.dtype(dtype.name)) if isinstance(dtype, _core.dtype) \
            else str(dtype)
        raise RuntimeError(f"dtype {name}not supported")
    if dtype.name == "float16":
        return input.contiguous().to(dtype)
    # (min and max first: an empty input fails there, as in PyTorch, before the dtype check)
    x_min, x_max = float(input.min()), float(input.max())
    _float_input(input)
    qmin, qmax = (-128, 127) if dtype.name == "qint8" else (0, 255)
    scale, zero_point = _choose_qparams(np.float32(x_min), np.float32(x_max), qmin, qmax,
                                       bool(reduce_range))
    return quantize_per_tensor(input, scale, zero_point, dtype)


def quantize_per_channel(input, scales, zero_points, axis, dtype):  # noqa: A002
    """Quantize a float32 tensor with one scale and zero point per slice along `axis`
    (per_channel_affine)."""
    _warn_deprecated()
    a = _float_input(input)
    np_type = _storage_of(dtype)
    axis = int(axis)
    if not 0 <= axis < a.ndim:
        raise RuntimeError("Channel axis out of range in per channel affine quantization. Got: "
                           f"{axis}Expected: [0, {a.ndim})")
    s = np.asarray(scales.detach()._array, dtype=np.float64).reshape(-1)
    z = np.asarray(zero_points.detach()._array, dtype=np.int64).reshape(-1)
    if s.size != a.shape[axis]:
        raise RuntimeError(f"length of scales must equal to channel, expected {a.shape[axis]} "
                           f"got, {s.size}")
    if z.size != a.shape[axis]:
        raise RuntimeError(f"length of zero_points must equal to channel expected "
                           f"{a.shape[axis]} got, {z.size}")
    for zp in z:
        _check_zero_point(int(zp), np_type, "quantize_tensor_per_channel_affine")
    shape = [1] * a.ndim
    shape[axis] = -1
    inv = (np.float32(1.0) / s.astype(np.float32)).reshape(shape)
    v = z.astype(np.float32).reshape(shape) + a * inv
    return QuantizedTensor._make(_round_clamp(v, np_type), dtype, per_channel_affine,
                                 s, z, axis)


def _rebuild(ints, dtype_name, scheme_name, scale, zero_point, axis):
    # (torch.save / pickle: the integers are an ndarray, saved beside the pickle)
    from ._qscheme import _qscheme_by_name
    return QuantizedTensor._make(ints, getattr(_core, dtype_name), _qscheme_by_name(scheme_name),
                                 scale, zero_point, axis)


class QuantizedTensor(metaclass=TorchTensorNamedClass):
    """A quantized tensor: integers (``int_repr()``) and the affine qparams that map them back to
    float32 (``dequantize()``)."""

    __module__ = "tapegrad"
    __slots__ = ("_ints", "_dtype", "_qscheme", "_scale", "_zero_point", "_axis", "__weakref__")
    is_quantized = True
    is_sparse = False
    is_cuda = False
    is_cpu = True
    is_meta = False
    requires_grad = False
    grad = None
    grad_fn = None
    is_leaf = True
    device = CPU

    @classmethod
    def _make(cls, ints, dtype, scheme, scale, zero_point, axis=None):
        self = object.__new__(cls)
        self._ints, self._dtype, self._qscheme = ints, dtype, scheme
        self._scale, self._zero_point, self._axis = scale, zero_point, axis
        return self

    def _like(self, ints, axis=None):
        return QuantizedTensor._make(ints, self._dtype, self._qscheme, self._scale,
                                     self._zero_point, axis if axis is not None else self._axis)

    def __reduce__(self):
        return (_rebuild, (self._ints, self._dtype.name, self._qscheme.name, self._scale,
                           self._zero_point, self._axis))

    # -- what it is ------------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        from .tensor import Size
        return Size(self._ints.shape)

    @property
    def ndim(self) -> int:
        return self._ints.ndim

    @property
    def layout(self):
        from ._layout import strided
        return strided

    def size(self, dim=None):
        return self.shape if dim is None else self._ints.shape[dim]

    def dim(self) -> int:
        return self._ints.ndim

    def numel(self) -> int:
        return int(self._ints.size)

    def __len__(self) -> int:
        if self._ints.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._ints.shape[0]

    def element_size(self) -> int:
        return self._ints.itemsize

    def stride(self, dim=None):
        if self._ints.size == 0:        # (numpy gives an empty array zero strides)
            st, step = [], 1
            for size in reversed(self._ints.shape):
                st.insert(0, step)
                step *= max(size, 1)
            st = tuple(st)
        else:
            st = tuple(s // self._ints.itemsize for s in self._ints.strides)
        return st if dim is None else st[dim]

    def is_contiguous(self, memory_format=None) -> bool:
        return bool(self._ints.flags.c_contiguous)

    def qscheme(self):
        return self._qscheme

    def q_scale(self) -> float:
        self._per_tensor_only()
        return self._scale

    def q_zero_point(self) -> int:
        self._per_tensor_only()
        return self._zero_point

    def _per_channel(self):
        if self._qscheme is not per_channel_affine:
            raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                               "quantizer->qscheme() == kPerChannelAffineFloatQParams to be "
                               "true, but got false.")

    def q_per_channel_scales(self):
        from .creation import tensor
        self._per_channel()
        return tensor(self._scale.copy())

    def q_per_channel_zero_points(self):
        from .creation import tensor
        self._per_channel()
        return tensor(self._zero_point.copy())

    def q_per_channel_axis(self) -> int:
        self._per_channel()
        return self._axis

    # -- back to plain tensors -------------------------------------------------------------------
    def int_repr(self):
        from .creation import tensor
        return tensor(np.array(self._ints, order="C", copy=True))

    def dequantize(self):
        from .creation import tensor
        # PyTorch multiplies by the scale in float32 per tensor, in float64 per channel
        if self._qscheme is per_tensor_affine:
            values = (self._ints.astype(np.float32) - np.float32(self._zero_point)) \
                * np.float32(self._scale)
        else:
            shape = [1] * self._ints.ndim
            shape[self._axis] = -1
            values = (self._ints.astype(np.float64) - self._zero_point.reshape(shape)) \
                * self._scale.reshape(shape)
        return tensor(values.astype(np.float32))

    def item(self) -> float:
        if self._ints.size != 1:
            raise RuntimeError(f"a Tensor with {self._ints.size} elements cannot be converted "
                               "to Scalar")
        return float(self.dequantize()._array.reshape(-1)[0])

    def __float__(self) -> float:
        return self.item()

    def __bool__(self) -> bool:
        return bool(self.item())

    # -- shape ops (they move the integers; qparams follow) ---------------------------------------
    def _uniform_only(self):
        if self._qscheme is not per_tensor_affine:
            raise RuntimeError("Setting strides is possible only on uniformly quantized tensor")

    def clone(self, memory_format=None):
        return self._like(self._ints.copy(),)

    def detach(self):
        return self._like(self._ints)

    def contiguous(self, memory_format=None):
        return self if self._ints.flags.c_contiguous else self._like(
            np.ascontiguousarray(self._ints))

    def _new_shape(self, shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if self._qscheme is not per_tensor_affine:
            self._check_channels_kept(shape)
        return shape

    def _check_channels_kept(self, shape) -> None:
        """A per-channel tensor keeps its axis and scales through view / reshape (as PyTorch's):
        the new shape must hold the channels at the same axis.  PyTorch raises (at the first
        use) when the axis is out of range or its size is not the channel count; tapegrad also
        when the dimensions before the axis regroup to a different count, which would silently
        give elements other channels' scales."""
        n = self._ints.size
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            shape = tuple(n // known if s == -1 and known else s for s in shape)
        if int(np.prod(shape)) != n:
            return                          # (numpy's reshape refuses it, with its message)
        axis, channels = self._axis, self._scale.size
        if axis >= len(shape):
            raise RuntimeError("Channel axis out of range in per channel affine dequantization. "
                               f"Got:{axis} Expected: [0, {len(shape)})")
        if shape[axis] != channels:
            raise RuntimeError(f"length of scales must equal to channel, expected "
                               f"{shape[axis]} got, {channels}")
        if int(np.prod(shape[:axis])) != int(np.prod(self._ints.shape[:axis])):
            raise RuntimeError("tapegrad: this view / reshape of a per-channel quantized tensor "
                               "regroups the dimensions before its channel axis, moving "
                               "elements to other channels' scales")

    def view(self, *shape):
        shape = self._new_shape(shape)
        try:
            ints = self._ints.view()
            ints.shape = shape
        except AttributeError:
            raise RuntimeError("view size is not compatible with input tensor's size and stride "
                               "(at least one dimension spans across two contiguous subspaces). "
                               "Use .reshape(...) instead.") from None
        except ValueError:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                               f"{self._ints.size}") from None
        return self._like(ints)

    def reshape(self, *shape):
        shape = self._new_shape(shape)
        try:
            return self._like(self._ints.reshape(shape))
        except ValueError:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                               f"{self._ints.size}") from None

    def flatten(self, start_dim=0, end_dim=-1):
        n = self._ints.ndim
        if n == 0:
            return self.reshape(1)
        s, e = start_dim % n, end_dim % n
        shape = self._ints.shape
        return self.reshape(shape[:s] + (-1,) + shape[e + 1:])

    def transpose(self, dim0, dim1):
        self._uniform_only()
        return self._like(np.swapaxes(self._ints, dim0, dim1))

    def t(self):
        if self._ints.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self._ints.ndim}D")
        return self.transpose(0, -1) if self._ints.ndim == 2 else self

    def permute(self, *dims):
        self._uniform_only()
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return self._like(np.transpose(self._ints, dims))

    def unsqueeze(self, dim):
        n = self._ints.ndim + 1
        d = dim % n
        axis = self._axis
        if axis is not None and d <= axis:
            axis += 1
        return self._like(np.expand_dims(self._ints, d), axis)

    def select(self, dim, index):
        n = self._ints.ndim
        if n == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = dim % n
        if not -self._ints.shape[d] <= index < self._ints.shape[d]:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{list(self._ints.shape)} at dimension {dim}")
        return self[(slice(None),) * d + (index,)]

    def _sub_qparams(self, key):
        """The qparams of self[key] (basic indexing: ints, slices, None, Ellipsis).  Per channel:
        indexing the channel axis keeps the selected channels' scales (one left: per tensor, as
        PyTorch's create_subtensor_quantizer does); the axis moves with the dimensions before it.
        (PyTorch lowers the axis on every select, also of a dimension after it, leaving the
        scales on the wrong dimension; tapegrad keeps them on the channels.)"""
        if self._qscheme is per_tensor_affine:
            return self._scale, self._zero_point, None
        if not isinstance(key, tuple):
            key = (key,)
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        expanded = []
        for k in key:
            if k is Ellipsis:
                expanded += [slice(None)] * (self._ints.ndim - n_real)
            else:
                expanded.append(k)
        scales, zps, axis = self._scale, self._zero_point, self._axis
        in_dim = out_dim = 0
        new_axis = None
        for k in expanded:
            if k is None:
                out_dim += 1
                continue
            if isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool):
                if in_dim == axis:
                    scales, zps = scales[int(k):int(k) + 1 or None], zps[int(k):int(k) + 1 or None]
                in_dim += 1
            elif isinstance(k, slice):
                if in_dim == axis:
                    scales, zps, new_axis = scales[k], zps[k], out_dim
                in_dim += 1
                out_dim += 1
            else:
                raise RuntimeError("tapegrad indexes a per-channel quantized tensor with "
                                   "integers, slices, None and Ellipsis only")
        if in_dim <= axis:          # the axis is after every indexed dimension
            new_axis = out_dim + axis - in_dim
        if scales.size == 1 or new_axis is None:
            return float(scales[0]), int(zps[0]), None
        return scales, zps, new_axis

    def __getitem__(self, key):
        from .tensor import Tensor
        if isinstance(key, Tensor):
            key = key._array
        elif isinstance(key, tuple):
            key = tuple(k._array if isinstance(k, Tensor) else k for k in key)
        elif isinstance(key, list):
            key = np.asarray(key)
        scale, zero_point, axis = self._sub_qparams(key)
        try:
            ints = self._ints[key]
        except IndexError as e:
            raise IndexError(str(e).replace(" axis ", " dimension ")) from None
        scheme = per_tensor_affine if axis is None else per_channel_affine
        return QuantizedTensor._make(ints, self._dtype, scheme, scale, zero_point, axis)

    def __setitem__(self, key, value):
        if self._qscheme is not per_tensor_affine:
            raise RuntimeError("assignment into a per-channel quantized tensor is not "
                               "supported by tapegrad")
        from .tensor import Tensor
        if isinstance(value, QuantizedTensor):
            value = value.dequantize()
        v = np.asarray(value._array if isinstance(value, Tensor) else value, dtype=np.float32)
        self._ints[key] = _quantize_array(v, self._scale, self._zero_point, self._dtype)

    @property
    def T(self):  # noqa: N802
        return self._like(self._ints) if self._ints.ndim < 2 else self.permute(
            *range(self._ints.ndim - 1, -1, -1))

    @property
    def mT(self):  # noqa: N802
        if self._ints.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self._ints.ndim}-D tensor.")
        return self.transpose(-2, -1)

    def squeeze(self, dim=None):
        shape = self._ints.shape
        n = len(shape)
        if dim is None:
            dims = [d for d in range(n) if shape[d] == 1]
        else:
            dims = [d % n for d in (dim if isinstance(dim, (tuple, list)) else (dim,))
                    if n and shape[d % n] == 1]
        axis = self._axis
        if axis is not None:
            if axis in dims:        # (one channel: its scale serves the whole tensor)
                return QuantizedTensor._make(np.squeeze(self._ints, tuple(dims)), self._dtype,
                                             per_tensor_affine, float(self._scale[0]),
                                             int(self._zero_point[0]))
            axis -= sum(1 for d in dims if d < axis)
        return self._like(np.squeeze(self._ints, tuple(dims)), axis)

    def narrow(self, dim, start, length):
        n = self._ints.ndim
        d = dim % n
        start = start % self._ints.shape[d] if start < 0 else start
        if start + length > self._ints.shape[d]:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                               f"({self._ints.shape[d]}).")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def split(self, split_size, dim=0):
        size = self._ints.shape[dim]
        if isinstance(split_size, int):
            sizes = [min(split_size, size - i) for i in range(0, size, split_size)] or [0]
        else:
            sizes = list(split_size)
        out, start = [], 0
        for length in sizes:
            out.append(self.narrow(dim, start, length))
            start += length
        return tuple(out)

    def chunk(self, chunks, dim=0):
        size = self._ints.shape[dim]
        return self.split(max(-(-size // chunks), 1), dim)

    def expand(self, *sizes):
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        self._uniform_only()        # (a broadcast view sets zero strides)
        lead = len(sizes) - self._ints.ndim
        shape = tuple(self._ints.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        return self._like(np.broadcast_to(self._ints, shape))

    def fill_(self, value):
        self._per_tensor_only()
        self._ints[...] = _quantize_array(np.asarray(value, np.float32), self._scale,
                                          self._zero_point, self._dtype)
        return self

    # -- ops PyTorch's QuantizedCPU backend has -------------------------------------------------
    def _quantize_bound(self, value) -> int:
        # (PyTorch's scalar quantize_val: rint(zero_point + value * (1/scale)), clamped)
        f32 = np.float32
        info = np.iinfo(self._ints.dtype)
        v = np.rint(f32(self._zero_point) + f32(value) * (f32(1) / f32(self._scale)))
        return int(min(max(v, info.min), info.max))

    def clamp(self, min=None, max=None):  # noqa: A002
        """The integers clamped between the bounds' quantized values."""
        self._per_tensor_only()
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        lo = None if min is None else self._quantize_bound(float(min))
        hi = None if max is None else self._quantize_bound(float(max))
        return self._like(np.clip(self._ints, lo, hi).astype(self._ints.dtype))

    def _extreme(self, np_reduce, dim=None, keepdim=False):
        self._per_tensor_only()
        if dim is None:
            if self._ints.size == 0:
                raise RuntimeError("max(): Expected reduction dim to be specified for "
                                   "input.numel() == 0. Specify the reduction dim with the "
                                   "'dim' argument.")
            return self._like(np.asarray(np_reduce(self._ints)))
        from .creation import tensor
        arg = np.argmax if np_reduce is np.max else np.argmin
        indices = np.asarray(arg(self._ints, axis=dim))
        values = np.asarray(np_reduce(self._ints, axis=dim))
        if keepdim:
            indices, values = np.expand_dims(indices, dim), np.expand_dims(values, dim)
        kind = _core.return_types.max if np_reduce is np.max else _core.return_types.min
        return kind((self._like(values), tensor(indices.astype(np.int64))))

    def max(self, dim=None, keepdim=False):
        return self._extreme(np.max, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return self._extreme(np.min, dim, keepdim)

    def _per_tensor_only(self):
        # (a TORCH_CHECK without a message: PyTorch appends its request for a better one)
        if self._qscheme is not per_tensor_affine:
            raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               "but got false.  (Could this error message be improved?  If so, "
                               "please report an enhancement request to PyTorch.)")

    def relu(self):
        """max(q, zero_point) on the integers: the quantized value of 0 is the zero point."""
        self._per_tensor_only()
        return self._like(np.maximum(self._ints, self._ints.dtype.type(self._zero_point)))

    def relu_(self):
        self._per_tensor_only()
        np.maximum(self._ints, self._ints.dtype.type(self._zero_point), out=self._ints)
        return self

    def equal(self, other) -> bool:
        """Same dtype, scheme, qparams, shape and integers (a float tensor: False)."""
        if not isinstance(other, QuantizedTensor):
            return False
        if (self._dtype is not other._dtype or self._qscheme is not other._qscheme
                or self._ints.shape != other._ints.shape or self._axis != other._axis):
            return False
        if not (np.array_equal(self._scale, other._scale)
                and np.array_equal(self._zero_point, other._zero_point)):
            return False
        return bool(np.array_equal(self._ints, other._ints))

    def _compare(op):
        # PyTorch compares quantized tensors by their dequantized values
        def method(self, other):
            from .tensor import Tensor
            if isinstance(other, QuantizedTensor):
                other = other.dequantize()
            elif not isinstance(other, (Tensor, numbers.Number, np.generic)):
                return NotImplemented
            return getattr(self.dequantize(), op)(other)
        method.__name__ = op
        return method

    eq = __eq__ = _compare("eq")
    ne = __ne__ = _compare("ne")
    lt = __lt__ = _compare("lt")
    le = __le__ = _compare("le")
    gt = __gt__ = _compare("gt")
    ge = __ge__ = _compare("ge")
    del _compare
    __hash__ = object.__hash__          # (by identity, as a Tensor's)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """The public functions' calls with a quantized tensor among their arguments (a
        refused call, tapegrad.overrides.dispatch_refused_call): the ops above, else PyTorch's
        missing-kernel error."""
        kwargs = kwargs or {}
        name = op_name(func)
        handler = _FUNCTIONS.get(name)
        if handler is None:
            raise _missing_kernel(name)
        return handler(*args, **kwargs)

    # -- printing --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        from . import _format
        a = self.dequantize()._array
        indent = len("tensor(")
        body = "[]" if a.size == 0 else _format._body(a, indent)
        suffixes = ["size=" + str(tuple(a.shape)), "dtype=" + repr(self._dtype),
                    "quantization_scheme=" + repr(self._qscheme)]
        if self._qscheme is per_tensor_affine:
            suffixes += [f"scale={self._scale!r}", f"zero_point={self._zero_point!r}"]
        else:
            suffixes += ["scale=" + repr(self.q_per_channel_scales()),
                         "zero_point=" + repr(self.q_per_channel_zero_points()),
                         f"axis={self._axis}"]
        return _format._add_suffixes("tensor(" + body, suffixes, indent)

    __str__ = __repr__

    # -- what PyTorch's QuantizedCPU backend has no kernel for ------------------------------------
    def _binary(op, reflected=False):
        def method(self, other):
            if isinstance(other, (bool, numbers.Integral, np.bool_, np.integer)):
                # PyTorch first allocates a result like self: quantized, which it cannot do
                raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                                   "https://github.com/pytorch/pytorch/issues/74540")
            if isinstance(other, (numbers.Real, np.floating)):
                # (a float scalar is wrapped as a default-dtype tensor, then promoted)
                raise _promotion_refused(self, "Float", reflected=False)
            if isinstance(other, QuantizedTensor):
                raise _not_implemented(op)
            other_dtype = getattr(other, "dtype", None)
            if isinstance(other_dtype, _core.dtype):
                raise _promotion_refused(self, _core.scalar_type_name_of(other._array.dtype),
                                         reflected)
            return NotImplemented
        method.__name__ = op
        return method

    __add__ = _binary("add.out")
    __radd__ = _binary("add.out", reflected=True)
    __sub__ = _binary("sub.out")
    __rsub__ = _binary("sub.out", reflected=True)
    __mul__ = _binary("mul.out")
    __rmul__ = _binary("mul.out", reflected=True)
    __truediv__ = _binary("div.out")
    __rtruediv__ = _binary("div.out", reflected=True)
    __matmul__ = _binary("mm.out")
    __rmatmul__ = _binary("mm.out", reflected=True)
    # (the methods and in-place forms fail alike: the result is allocated like self first)
    add = add_ = __iadd__ = __add__
    sub = sub_ = __isub__ = __sub__
    mul = mul_ = __imul__ = __mul__
    div = div_ = __itruediv__ = __truediv__
    del _binary

    def sum(self, *args, **kwargs):
        raise _not_implemented("sum.IntList_out")

    def __neg__(self):
        raise _not_implemented("neg.out")

    def numpy(self, *, force=False):
        raise TypeError(f"Got unsupported ScalarType {_STORAGE[self._dtype.name][1]}")

    def tolist(self):
        raise RuntimeError("load_scalar: invalid type")

    def __getattr__(self, name):
        """A Tensor method QuantizedCPU has no kernel for (abs, exp, argmax, add_, ...): PyTorch
        finds the method and its dispatch fails when it is called.  Other names are missing."""
        from .tensor import Tensor
        if name.startswith("_") or not callable(getattr(Tensor, name, None)):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")

        # (an in-place method fails in its out-of-place kernel: clamp_ in aten::clamp)
        kernel = name[:-1] if name.endswith("_") and callable(getattr(Tensor, name[:-1], None)) \
            else name

        def refused(*args, **kwargs):
            raise _missing_kernel(kernel)
        refused.__name__ = name
        return refused

    # -- dtype and device: a quantized tensor leaves its dtype only through dequantize() --------
    def _conversion_refused(self, *args, **kwargs):
        raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                           "torch.quint8")

    float = double = half = bfloat16 = _conversion_refused
    int = long = short = char = byte = bool = _conversion_refused

    def to(self, *args, **kwargs):
        """Itself when no other dtype is asked for (a device move to the CPU, or its own
        dtype)."""
        dtypes = [a for a in (*args, kwargs.get("dtype")) if isinstance(a, _core.dtype)]
        if any(d is not self._dtype for d in dtypes):
            self._conversion_refused()
        return self

    def cpu(self, memory_format=None):
        return self

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """No dtype: its type name (torch.quantized.QInt8Tensor); its own dtype: itself; any
        other: refused."""
        name = "torch.quantized." + _STORAGE[self._dtype.name][1] + "Tensor"
        if dtype is None:
            return name
        if dtype is self._dtype or dtype == name:
            return self
        self._conversion_refused()

    def requires_grad_(self, requires_grad=True):
        if requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return self

    # -- reductions, sorting and activations QuantizedCPU has ----------------------------------
    def mean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean keeps the qparams, so its integer is the rounded mean of the integers
        (PyTorch's requantized dequantized mean, equal to it; checked bit for bit)."""
        self._per_tensor_only()
        axes = None if dim is None or dim == () or dim == [] else (
            (dim,) if isinstance(dim, numbers.Integral) else tuple(dim))
        avg = np.rint(self._ints.astype(np.float64).mean(axis=axes, keepdims=keepdim))
        if dtype is None or dtype is self._dtype:
            return self._like(np.asarray(avg).astype(self._ints.dtype))
        values = (avg - self._zero_point) * np.float32(self._scale)
        return QuantizedTensor._make(
            _quantize_array(np.asarray(values, np.float32), self._scale, self._zero_point,
                            dtype), dtype, per_tensor_affine, self._scale, self._zero_point)

    def _sorted_indices(self, dim, descending):
        # (the affine map is increasing: the integers sort as the values; stable, as PyTorch's
        # CPU sort keeps equal values in order)
        keys = self._ints.astype(np.int64)
        return np.argsort(-keys if descending else keys, axis=dim, kind="stable")

    def sort(self, dim=-1, descending=False, stable=False):
        from .creation import tensor
        self._per_tensor_only()
        order = self._sorted_indices(dim, descending)
        values = np.take_along_axis(self._ints, order, axis=dim)
        return _core.return_types.sort((self._like(values), tensor(order.astype(np.int64))))

    def argsort(self, dim=-1, descending=False, stable=False):
        from .creation import tensor
        self._per_tensor_only()
        return tensor(self._sorted_indices(dim, descending).astype(np.int64))

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
        from .creation import tensor
        self._per_tensor_only()
        size = self._ints.shape[dim] if self._ints.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError("selected index k out of range")
        order = np.take(self._sorted_indices(dim, largest), np.arange(k), axis=dim)
        values = np.take_along_axis(self._ints, order, axis=dim)
        return _core.return_types.topk((self._like(values), tensor(order.astype(np.int64))))

    def _activation(self, f, qparams=None):
        """f of the dequantized values, quantized to `qparams` (default: the input's), as the
        x86 kernels do: bit for bit for quint8 and qint8.  (qint32's outputs, whose scale is
        2**-32, show the last bits of PyTorch's own float32 sigmoid / tanh in their integers:
        they can differ from PyTorch's there by a few units, well under a float32 ulp of the
        value.)"""
        self._per_tensor_only()
        values = f(_kernel_dequantize(self._ints, self._scale, self._zero_point))
        scale, zero_point = qparams or (self._scale, self._zero_point)
        return QuantizedTensor._make(_kernel_quantize(values, scale, zero_point,
                                                      self._ints.dtype.type),
                                     self._dtype, per_tensor_affine, scale, zero_point)

    def sigmoid(self):
        """Values in [0, 1], with the fixed qparams PyTorch gives its [0, 1] outputs."""
        return self._activation(_sigmoid, _UNIT_RANGE_QPARAMS[self._dtype.name])

    def tanh(self):
        """Values in [-1, 1], with the fixed qparams PyTorch gives its [-1, 1] outputs."""
        return self._activation(np.tanh, _SYMMETRIC_RANGE_QPARAMS[self._dtype.name])

    def hardsigmoid(self):
        return self._activation(_hardsigmoid, _UNIT_RANGE_QPARAMS[self._dtype.name])

    def leaky_relu(self, negative_slope=0.01):
        slope = np.float32(negative_slope)
        return self._activation(lambda v: np.where(v > 0, v, v * slope).astype(np.float32))


# The fixed output qparams of PyTorch's quantized sigmoid / hardsigmoid (values in [0, 1]) and
# tanh (values in [-1, 1]), by dtype: the range over all the integers, whatever the input's.
_UNIT_RANGE_QPARAMS = {"quint8": (1.0 / 256, 0), "qint8": (1.0 / 256, -128),
                       "qint32": (2.0 ** -32, 0)}
_SYMMETRIC_RANGE_QPARAMS = {"quint8": (2.0 / 256, 128), "qint8": (2.0 / 256, 0),
                            "qint32": (2.0 ** -31, 0)}


def _sigmoid(v):
    return np.float32(1) / (np.float32(1) + np.exp(-v))


def _hardsigmoid(v):
    return (np.clip(v + np.float32(3), 0, 6) / np.float32(6)).astype(np.float32)


def _kernel_block(np_type) -> int:
    # two AVX2 vectors: of 32 lanes for the 8-bit types, of 8 for int32
    return 16 if np.dtype(np_type) == np.int32 else 64


def _kernel_dequantize(ints, scale, zero_point):
    """The float32 values PyTorch's x86 elementwise kernels see (add, the activations): over the
    flat elements, blocks of 64 (16 for int32) through the AVX2 path, fma(q, s, -zp * s); the
    remainder through the scalar one, s * (q - zp)."""
    f32 = np.float32
    flat = ints.reshape(-1)
    nv = flat.size // _kernel_block(ints.dtype) * _kernel_block(ints.dtype)
    s = f32(scale)
    out = s * (flat.astype(f32) - f32(zero_point))
    # (a float64 product of float32 operands is exact: one rounding, as an fma's)
    out[:nv] = (flat[:nv].astype(np.float64) * s + f32(-f32(zero_point) * s)).astype(f32)
    return out.reshape(ints.shape)


def _kernel_quantize(values, scale, zero_point, np_type):
    """The integers PyTorch's x86 elementwise kernels (add, the activations) make of float32
    values: the AVX2 blocks (as _kernel_dequantize's) as rint(v * (1/scale)) + zero_point, the
    remainder (and qint32's blocks, quantized element by element) as
    rint(zero_point + v * (1/scale)); then saturated."""
    f32 = np.float32
    flat = values.reshape(-1)
    inv = f32(1) / f32(scale)
    q = np.rint(f32(zero_point) + flat * inv)
    if np.dtype(np_type) != np.int32:
        nv = flat.size // _kernel_block(np_type) * _kernel_block(np_type)
        q[:nv] = np.rint(flat[:nv] * inv) + zero_point
    return _saturated(q, np_type).reshape(values.shape)


def _promotion_refused(q, other_name: str, reflected: bool):
    names = (other_name, _STORAGE[q._dtype.name][1])
    return RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out "
                        "what the correct rules should be, offending types: "
                        f"{' '.join(names if reflected else names[::-1])}")


def _relu_function(input, inplace=False):  # noqa: A002
    return input.relu_() if inplace else input.relu()


def _dropout_function(input, p=0.5, training=True, inplace=False):  # noqa: A002
    if training and p > 0:
        raise _not_implemented("bernoulli_.float")
    return input


def _need_quantized(t):
    if not isinstance(t, QuantizedTensor):
        # (PyTorch asks the float tensor for its qscheme, which the CPU backend lacks)
        raise _not_implemented("qscheme", "CPU")
    return t


def _cat_requantized(tensors, dim, scale, zero_point):
    """quantized cat: the inputs' dequantized values, concatenated, quantized per tensor with
    (scale, zero_point) to the first input's dtype (PyTorch's quantized_cat_impl)."""
    from . import cat as float_cat
    tensors = [_need_quantized(t) for t in tensors]
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    dtype = tensors[0]._dtype
    if any(t._dtype is not dtype for t in tensors):
        raise RuntimeError("All dtypes must be the same.")
    if any(t._qscheme is not per_tensor_affine for t in tensors):
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    values = float_cat([t.dequantize() for t in tensors], dim)._array
    return QuantizedTensor._make(_quantize_array(values, scale, zero_point, dtype), dtype,
                                 per_tensor_affine, scale, zero_point)


def cat(tensors, dim=0, *, out=None):
    """torch.cat of quantized tensors: requantized with the first tensor's qparams."""
    if out is not None:
        raise _not_implemented("cat.out")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    first = _need_quantized(tensors[0])
    return _cat_requantized(tensors, dim, first._scale, first._zero_point)


def equal(input, other) -> bool:  # noqa: A002
    return input.equal(other) if isinstance(input, QuantizedTensor) else False


def _comparison(op):
    def function(input, other, *, out=None):  # noqa: A002
        if out is not None:
            raise _not_implemented(f"{op}.Tensor_out")
        if not isinstance(input, QuantizedTensor):
            from .creation import tensor as _tensor
            other = other.dequantize()
            return getattr(_tensor(input) if not hasattr(input, "_array") else input, op)(other)
        return getattr(input, op)(other)
    return function


def _binary_operands(a, b, what: str):
    _need_quantized(a)
    _need_quantized(b)
    # (PyTorch's checks, in its order: Add compares the schemes before the dtypes, Mul after)
    if a._qscheme is not per_tensor_affine:
        raise RuntimeError(f"Only per tensor quantization is supported in {what}.")
    same_scheme = f"Both inputs to {what} must have the same quantization scheme."
    if what == "Add" and b._qscheme is not a._qscheme:
        raise RuntimeError(same_scheme)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{what} operands should have same data type.")
    if b._qscheme is not a._qscheme:
        raise RuntimeError(same_scheme)
    from ._extra_ops import _broadcast_shapes
    _broadcast_shapes(a._ints.shape, b._ints.shape)
    shape = np.broadcast_shapes(a._ints.shape, b._ints.shape)
    return (np.broadcast_to(a._ints, shape).reshape(-1),
            np.broadcast_to(b._ints, shape).reshape(-1), shape)




def quantized_add(a, b, scale: float, zero_point: int, relu: bool = False):
    """quantized::add (add_relu): (a + b) requantized to (scale, zero_point), as PyTorch's x86
    kernel computes it, bit for bit (checked on 8-bit types): each operand dequantized as
    _kernel_dequantize, the float32 sum quantized as _kernel_quantize.  Broadcast operands take
    the kernels' split over the result's elements (PyTorch's TensorIterator may split them
    otherwise: a tie can then round the other way)."""
    x, y, shape = _binary_operands(a, b, "Add")
    np_type = _STORAGE[a._dtype.name][0]
    c = _kernel_dequantize(x, a._scale, a._zero_point) + _kernel_dequantize(y, b._scale,
                                                                            b._zero_point)
    if relu:
        np.maximum(c, np.float32(0), out=c)
    return QuantizedTensor._make(_kernel_quantize(c, scale, zero_point, np_type).reshape(shape),
                                 a._dtype, per_tensor_affine, float(scale), int(zero_point))


def quantized_mul(a, b, scale: float, zero_point: int, relu: bool = False):
    """quantized::mul (mul_relu): the integer product (a - za) * (b - zb) requantized by the
    float32 multiplier sa * sb / scale: zero_point + rint(product * multiplier), bit for bit
    with PyTorch's kernel."""
    x, y, shape = _binary_operands(a, b, "Mul")
    np_type = _STORAGE[a._dtype.name][0]
    f32 = np.float32
    multiplier = f32(f32(a._scale) * f32(b._scale)) * (f32(1) / f32(scale))
    product = (x.astype(np.int64) - a._zero_point) * (y.astype(np.int64) - b._zero_point)
    q = np.rint(product.astype(f32) * multiplier) + zero_point
    if relu:
        q = np.maximum(q, zero_point)
    return QuantizedTensor._make(_saturated(q, np_type).reshape(shape), a._dtype,
                                 per_tensor_affine, float(scale), int(zero_point))


def _scalar_operand(a, what: str):
    _need_quantized(a)
    if a._qscheme is not per_tensor_affine:
        raise RuntimeError(f"Only per tensor quantization is supported in {what}.")
    return _STORAGE[a._dtype.name][0]


def quantized_add_scalar(a, c, relu: bool = False):
    """quantized::add_scalar: a + c by moving the zero point by c_q = round(c / scale) (the
    integers unchanged); when the moved zero point leaves the dtype's range, the integers are
    requantized to the scale that keeps it at the range's end (PyTorch's rules)."""
    np_type = _scalar_operand(a, "Add")
    info = np.iinfo(np_type)
    q_min, q_max = int(info.min), int(info.max)
    s, z = float(a._scale), int(a._zero_point)
    c_q = int(np.rint(float(c) / s))
    if q_min <= z - c_q <= q_max:
        out = a._like(a._ints.copy())
        out._zero_point = z - c_q
        return out.relu_() if relu else out
    if q_min > z - c_q:
        s_new, z_new = (float(q_max) - (z - c_q)) / (float(q_max) - q_min) * s, q_min
    else:
        s_new, z_new = (float(z - c_q) - q_min) / (float(q_max) - q_min) * s, q_max
    f32 = np.float32
    multiplier = f32(s) * (f32(1) / f32(s_new))
    shifted = a._ints.astype(np.int64) - z + c_q
    q = np.rint(shifted.astype(f32) * multiplier) + z_new
    if relu:
        q = np.maximum(q, z_new)
    return QuantizedTensor._make(_saturated(q, np_type), a._dtype, per_tensor_affine, s_new,
                                 z_new)


def quantized_mul_scalar(a, c, relu: bool = False):
    """quantized::mul_scalar: a * c by rescaling (c > 0), a zero tensor of scale 1 (c == 0), or
    the integers mirrored in the dtype's range with scale |c| * scale (c < 0)."""
    np_type = _scalar_operand(a, "Mul")
    info = np.iinfo(np_type)
    q_min, q_max = int(info.min), int(info.max)
    c = float(c)
    if c > 0:
        out = a.relu() if relu else a._like(a._ints.copy())
        return QuantizedTensor._make(out._ints, a._dtype, per_tensor_affine,
                                     c * float(a._scale), int(a._zero_point))
    if c == 0:
        return QuantizedTensor._make(np.zeros_like(a._ints), a._dtype, per_tensor_affine,
                                     1.0, 0)
    z_new = q_max - (int(a._zero_point) - q_min)
    ints = (q_max + q_min - a._ints.astype(np.int64)).astype(np_type)
    if relu:
        ints = np.maximum(ints, np_type(z_new))
    return QuantizedTensor._make(ints, a._dtype, per_tensor_affine, abs(c) * float(a._scale),
                                 z_new)


# The public functions a quantized tensor answers (QuantizedTensor.__torch_function__), by name.
_FUNCTIONS = {
    "relu": _relu_function,
    "relu_": lambda input: input.relu_(),  # noqa: A002
    "cat": cat, "concat": cat, "concatenate": cat,
    "equal": equal,
    **{op: _comparison(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "stack": lambda tensors, dim=0, *, out=None: cat([t.unsqueeze(dim) for t in tensors], dim,
                                                      out=out),
    "clamp": lambda input, min=None, max=None, *, out=None: input.clamp(min, max),  # noqa: A002
    "hardtanh": lambda input, min_val=-1.0, max_val=1.0, inplace=False: input.clamp(  # noqa: A002
        min_val, max_val),
    "relu6": lambda input, inplace=False: input.clamp(0.0, 6.0),  # noqa: A002
    "max": lambda input, dim=None, keepdim=False: input.max(dim, keepdim),  # noqa: A002
    "min": lambda input, dim=None, keepdim=False: input.min(dim, keepdim),  # noqa: A002
    "dropout": _dropout_function,
    "squeeze": lambda input, dim=None: input.squeeze(dim),  # noqa: A002
    "narrow": lambda input, dim, start, length: input.narrow(dim, start, length),  # noqa: A002
    "split": lambda tensor, split_size_or_sections, dim=0: tensor.split(
        split_size_or_sections, dim),
    "chunk": lambda input, chunks, dim=0: input.chunk(chunks, dim),  # noqa: A002
    "flatten": lambda input, start_dim=0, end_dim=-1: input.flatten(start_dim, end_dim),  # noqa: A002
    "reshape": lambda input, shape: input.reshape(shape),  # noqa: A002
    "transpose": lambda input, dim0, dim1: input.transpose(dim0, dim1),  # noqa: A002
    "permute": lambda input, dims: input.permute(dims),  # noqa: A002
    "unsqueeze": lambda input, dim: input.unsqueeze(dim),  # noqa: A002
    "select": lambda input, dim, index: input.select(dim, index),  # noqa: A002
    "clone": lambda input, *, memory_format=None: input.clone(),  # noqa: A002
    "int_repr": lambda input: input.int_repr(),  # noqa: A002
    "dequantize": lambda input: input.dequantize(),  # noqa: A002
    "numel": lambda input: input.numel(),  # noqa: A002
    "avg_pool2d": lambda *args, **kwargs: _avg_pool2d(*args, **kwargs),
    "adaptive_avg_pool2d": lambda *args, **kwargs: _adaptive_avg_pool2d(*args, **kwargs),
    "interpolate": lambda *args, **kwargs: _interpolate(*args, **kwargs),
    "max_pool1d": lambda *args, **kwargs: _functional_max_pool("max_pool1d", *args, **kwargs),
    "max_pool2d": lambda *args, **kwargs: _functional_max_pool("max_pool2d", *args, **kwargs),
    "mean": lambda input, dim=None, keepdim=False, *, dtype=None, out=None: input.mean(  # noqa: A002
        dim, keepdim, dtype=dtype),
    "sort": lambda input, dim=-1, descending=False, stable=False, *, out=None: input.sort(  # noqa: A002
        dim, descending),
    "argsort": lambda input, dim=-1, descending=False, stable=False: input.argsort(  # noqa: A002
        dim, descending),
    "topk": lambda input, k, dim=-1, largest=True, sorted=True, *, out=None: input.topk(  # noqa: A002
        k, dim, largest),
    "sigmoid": lambda input, *, out=None: input.sigmoid(),  # noqa: A002
    "tanh": lambda input, *, out=None: input.tanh(),  # noqa: A002
    "hardsigmoid": lambda input, inplace=False: input.hardsigmoid(),  # noqa: A002
    "leaky_relu": lambda input, negative_slope=0.01, inplace=False: input.leaky_relu(  # noqa: A002
        negative_slope),
}


def _resampled(input, fn, rounded: bool):  # noqa: A002
    """A spatial op of a quantized (N, C, H, W) / (C, H, W) tensor that keeps its qparams: `fn`
    (the float op) of the integers' offsets from the zero point, in float64 (window sums and
    averages of 8-bit integers are exact there), plus the zero point, rounded half to even (so
    a tie rounds as PyTorch's kernels round: after the zero point is added) when `rounded`."""
    from .creation import tensor
    if not isinstance(input, QuantizedTensor):
        raise _not_implemented("quantized_pool", "CPU")
    input._per_tensor_only()
    offsets = tensor(input._ints.astype(np.float64) - input._zero_point)
    values = fn(offsets).numpy() + input._zero_point
    if rounded:
        values = np.rint(values)
    return input._like(_saturated(values, input._ints.dtype.type))


def _avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
                count_include_pad=True, divisor_override=None):
    """F.avg_pool2d of a quantized tensor: the window means of the integers (padding counts as
    the zero point), bit for bit with PyTorch's kernel."""
    import tapegrad.nn.functional as F
    return _resampled(input, lambda v: F.avg_pool2d(v, kernel_size, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override), True)


def _adaptive_avg_pool2d(input, output_size):  # noqa: A002
    import tapegrad.nn.functional as F
    return _resampled(input, lambda v: F.adaptive_avg_pool2d(v, output_size), True)


def _interpolate(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
                 align_corners=None, recompute_scale_factor=None, antialias=False):
    """F.interpolate of a quantized tensor, qparams kept.  nearest / nearest-exact move the
    integers (exact); bilinear weighs them in float64 and rounds, which can differ from
    PyTorch's float32 kernel by one at a rounding tie."""
    import tapegrad.nn.functional as F
    resized = _resampled(input, lambda v: F.interpolate(v, size, scale_factor, mode,
                                                        align_corners, recompute_scale_factor,
                                                        antialias), mode == "bilinear")
    # (arguments checked by the float op first, as PyTorch does before dispatching; a 3-d input
    # resizes one dim, and QuantizedCPU has no 1-d upsampling)
    if mode not in ("nearest", "nearest-exact", "bilinear") or input.dim() == 3:
        raise _missing_kernel(f"upsample_{mode.replace('-', '_')}{input.dim() - 2}d.out")
    return resized


def _functional_max_pool(pool_name: str, input, kernel_size, stride=None, padding=0,  # noqa: A002
                         dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool1d / F.max_pool2d of a quantized tensor (the quantized kernel; its indices
    variant has none)."""
    if return_indices:
        raise _missing_kernel(pool_name + "_with_indices.out")
    return _max_pooled(pool_name, input, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pooled(pool_name: str, input, kernel_size, stride, padding, dilation,  # noqa: A002
                ceil_mode):
    """Max pooling of a quantized tensor: the affine map back to floats is increasing, so the
    largest integer of each window is the quantized largest value, and the result keeps the
    input's qparams.  The float pool runs on the integers (exact in float64), so shapes and bad
    arguments behave as for a float tensor."""
    if not isinstance(input, QuantizedTensor):
        raise _not_implemented(f"quantized_{pool_name}", "CPU")
    import tapegrad.nn.functional as F
    from .creation import tensor
    values = tensor(input._ints.astype(np.float64))
    pooled = getattr(F, pool_name)(values, kernel_size, stride or None, padding, dilation,
                                   ceil_mode)
    return QuantizedTensor._make(pooled.numpy().astype(input._ints.dtype), input._dtype,
                                 input._qscheme, input._scale, input._zero_point, input._axis)


def quantized_max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                         ceil_mode=False):
    """torch.quantized_max_pool1d: F.max_pool1d of a quantized (N, C, L) or (C, L) tensor."""
    return _max_pooled("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode)


def quantized_max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                         ceil_mode=False):
    """torch.quantized_max_pool2d: F.max_pool2d of a quantized (N, C, H, W) or (C, H, W)
    tensor."""
    return _max_pooled("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)


def dequantize(tensor):
    """torch.dequantize: a quantized tensor's float32 values (each of a list's tensors)."""
    if isinstance(tensor, (list, tuple)):
        return tuple(dequantize(t) for t in tensor)
    return tensor.dequantize()


def _method_as_function(name):
    def function(input):  # noqa: A002
        return getattr(input, name)()
    function.__name__ = function.__qualname__ = name     # (its module-level name, as tensor.py's)
    function.__doc__ = f"torch.{name}(input): input.{name}() of a quantized tensor."
    return function


int_repr = _method_as_function("int_repr")
q_scale = _method_as_function("q_scale")
q_zero_point = _method_as_function("q_zero_point")
q_per_channel_scales = _method_as_function("q_per_channel_scales")
q_per_channel_zero_points = _method_as_function("q_per_channel_zero_points")
q_per_channel_axis = _method_as_function("q_per_channel_axis")
