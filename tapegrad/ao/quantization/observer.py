"""Observers: modules that watch the tensors passing through them (forward returns its input
unchanged), keep their running range in buffers (min_val / max_val, so a state_dict carries
them), and turn it into a quantisation scale and zero point (calculate_qparams).

The qparams arithmetic is PyTorch's, in float32 tensors, so a scale computed here equals the one
PyTorch computes bit for bit and fake quantisation rounds the same values the same way:
  affine:    scale = max(eps, (max(max_val, 0) - min(min_val, 0)) / (quant_max - quant_min))
             zero_point = clamp(quant_min - round(min(min_val, 0) / scale), quant_min, quant_max)
             (int32)
  symmetric: scale = max(eps, max(-min(min_val, 0), max(max_val, 0)) / ((quant_max - quant_min) / 2))
             zero_point = 0, or the middle of the range for quint8 (128 by default) (int64)
  per_channel_affine_float_qparams: scale = (max_val - min_val) / (quant_max - quant_min) where
             above eps else 1, zero_point = -min_val / scale (float)
A per-tensor result has shape [1], a per-channel one shape [channels].
"""
from __future__ import annotations as _annotations

import functools
import warnings
from abc import ABC, abstractmethod

import tapegrad as torch
from tapegrad import nn
from tapegrad._torch_names import torch_module_name

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "HistogramObserver", "default_histogram_observer",
           "calculate_qmin_qmax", "check_min_max_valid",
           "validate_qmin_qmax", "is_per_tensor", "is_per_channel"]


def _torch_named(value) -> str:
    if isinstance(value, type) and torch_module_name(value.__module__) != value.__module__:
        return f"<class '{torch_module_name(value.__module__)}.{value.__qualname__}'>"
    return repr(value)


class _PartialWrapper:
    """What Observer.with_args returns: a factory that makes the observer with those keyword
    arguments (qconfigs hold these, each module calling it for its own observer)."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for name, make in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: make()}
        return self.p(*args, **keywords)

    def __repr__(self):
        # functools.partial's repr, with our classes under PyTorch's names (`print(qconfig)`
        # in a tutorial shows <class 'torch.ao.quantization.observer.HistogramObserver'>)
        parts = [_torch_named(self.p.func), *map(repr, self.p.args),
                 *(f"{key}={_torch_named(value)}" for key, value in self.p.keywords.items())]
        return f"functools.partial({', '.join(parts)})" + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    result = _PartialWrapper(functools.partial(cls_or_self))
    return result.with_callable_args(**kwargs)


def is_per_tensor(qscheme) -> bool:
    return qscheme in (torch.per_tensor_affine, torch.per_tensor_symmetric)


def is_per_channel(qscheme) -> bool:
    return qscheme in (torch.per_channel_affine, torch.per_channel_affine_float_qparams,
                       torch.per_channel_symmetric)


def _is_symmetric(qscheme) -> bool:
    return qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric)


def _is_float_qparams(qscheme) -> bool:
    return qscheme == torch.per_channel_affine_float_qparams


def validate_qmin_qmax(quant_min: int, quant_max: int) -> None:
    """A user's range must contain 0 (zero must be exactly representable) and be non-empty."""
    if not quant_min <= 0 <= quant_max:
        raise AssertionError("Used-specified quantization range must include 0.")
    if quant_min >= quant_max:
        raise AssertionError(
            "qmin must be strictly less than qmax for user-specified quantization range.")


# The integer range of each dtype, and with reduce_range (one bit less, for x86 kernels that
# would overflow otherwise).
_DEFAULT_RANGES = {"qint8": ((-128, 127), (-64, 63)), "int8": ((-128, 127), (-64, 63)),
                   "quint8": ((0, 255), (0, 127)), "uint8": ((0, 255), (0, 127)),
                   "qint32": ((-2 ** 31, 2 ** 31 - 1),) * 2, "int32": ((-2 ** 31, 2 ** 31 - 1),) * 2,
                   "uint16": ((0, 2 ** 16 - 1),) * 2, "int16": ((-2 ** 15, 2 ** 15 - 1),) * 2}


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange: bool, dtype,
                        reduce_range: bool) -> tuple[int, int]:
    """The (quant_min, quant_max) an observer uses: the user's range (halved by reduce_range,
    as PyTorch halves it), else the dtype's; 4-bit dtypes default to (0, 15)."""
    if has_customized_qrange:
        length = quant_max - quant_min + 1
        if dtype in (torch.qint8, torch.int8) and not 0 < length <= 256:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=256).")
        if dtype in (torch.qint32, torch.int32) and not 0 < length <= 2 ** 32:
            raise AssertionError("quantization range should be positive and not exceed the "
                                 "maximum bit range (=4294967296).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    ranges = _DEFAULT_RANGES.get(dtype.name)
    if ranges is None:
        return 0, 15
    return ranges[1] if reduce_range else ranges[0]


def check_min_max_valid(min_val, max_val) -> bool:
    """False (with PyTorch's warning) for an observer that has seen nothing yet."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. "
                      "Returning default values.", stacklevel=3)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if min_val.item() == float("inf") and max_val.item() == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. "
                          "Returning default values.", stacklevel=3)
            return False
        if not min_val.item() <= max_val.item():
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif not bool(torch.all(min_val <= max_val)):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


def _take_saved_shapes(module, state_dict, prefix, names):
    """Resize the module's per-channel buffers `names` to their saved shapes before a state dict
    loads into them: a fresh module's are empty (one entry per channel once observed), and the
    copy that follows needs the saved channel count."""
    for name in names:
        key = prefix + name
        if key in state_dict:
            getattr(module, name).resize_(state_dict[key].shape)


class ObserverBase(ABC, nn.Module):
    """An observer: dtype is the quantized dtype its qparams are for."""

    def __init__(self, dtype, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


_SCHEMES = ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
            "per_channel_symmetric", "per_channel_affine_float_qparams")


class UniformQuantizationObserverBase(ObserverBase):
    """An observer of uniform (affine or symmetric) quantisation: its range checks and the
    scale / zero point of a min and max (_calculate_qparams)."""

    _version = 3
    eps: torch.Tensor

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic, **kwargs)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers."
                          "                     reduce_range will be deprecated in a future "
                          "release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", torch.tensor([eps]))
        if qscheme not in tuple(getattr(torch, name) for name in _SCHEMES):
            raise AssertionError(
                "Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                "quantization scheme")
        allowed = (torch.qint8, torch.quint8, torch.quint4x2, torch.qint32, torch.int8,
                   torch.uint8, torch.int16, torch.int32, torch.uint16)
        if dtype not in allowed:
            raise AssertionError(f"Default Observer only works for {allowed} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            validate_qmin_qmax(quant_min, quant_max)
        self.quant_min, self.quant_max = calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, self.dtype, self.reduce_range)

    def _calculate_qparams(self, min_val, max_val):
        """(scale, zero_point) of the range [min_val, max_val] (see the module docstring)."""
        if not check_min_max_valid(min_val, max_val):
            return torch.tensor([1.0]), torch.tensor([0])
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = torch.min(min_val, torch.zeros_like(min_val))
        max_val_pos = torch.max(max_val, torch.zeros_like(max_val))
        zero_point = torch.zeros(min_val_neg.size(), dtype=torch.int64)
        if _is_symmetric(self.qscheme):
            max_val_pos = torch.max(-min_val_neg, max_val_pos)
            scale = torch.max(max_val_pos / (float(quant_max - quant_min) / 2), self.eps)
            if self.dtype in (torch.quint8, torch.uint8):
                middle = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), middle)
            elif self.dtype == torch.uint16:
                zero_point = zero_point.new_full(zero_point.size(), 2 ** 15)
        elif _is_float_qparams(self.qscheme):
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = torch.where(scale > self.eps, scale, torch.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = torch.max((max_val_pos - min_val_neg) / float(quant_max - quant_min), self.eps)
            zero_point = quant_min - torch.round(min_val_neg / scale).to(torch.int)
            zero_point = torch.clamp(zero_point, quant_min, quant_max)
        # (a per-tensor result is a 1-element tensor, as a per-channel one has one per channel)
        if scale.dim() == 0:
            scale = torch.tensor([float(scale)], dtype=scale.dtype)
        if zero_point.dim() == 0:
            zero_point = torch.tensor([zero_point.item()], dtype=zero_point.dtype)
        return scale, zero_point

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class _RunningRange:
    """What the min/max observers share (per tensor and per channel): forward folds the input's
    range into min_val / max_val by the class's _current_range and _combine (per-channel buffers
    take their channel count at the first observation), and the qparams and repr of that range."""

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        min_val, max_val = self._combine(*self._current_range(x_orig))
        for buffer, value in ((self.min_val, min_val), (self.max_val, max_val)):
            if buffer.shape != value.shape:
                buffer.resize_(value.shape)
            buffer.copy_(value)
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MinMaxObserver(_RunningRange, UniformQuantizationObserverBase):
    """The running minimum and maximum of everything observed (per tensor)."""

    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        if not is_per_tensor(qscheme):
            raise NotImplementedError(
                "MinMaxObserver's qscheme only support torch.per_tensor_symmetric "
                "                    and torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))
        if (self.qscheme == torch.per_tensor_symmetric and self.reduce_range
                and self.dtype == torch.quint8):
            raise NotImplementedError("Cannot reduce range for symmetric "
                                      "                                       quantization for "
                                      "quint8")

    def _current_range(self, x):
        return torch.aminmax(x.detach().to(self.min_val.dtype))

    def _combine(self, min_cur, max_cur):
        return torch.min(min_cur, self.min_val), torch.max(max_cur, self.max_val)

    def reset_min_max_vals(self):
        self.min_val.copy_(torch.tensor(float("inf")))
        self.max_val.copy_(torch.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """An exponential moving average of each observed tensor's minimum and maximum (the first
    tensor sets them): min_val += averaging_constant * (min(x) - min_val)."""

    def __init__(self, averaging_constant=0.01, dtype=torch.quint8,
                 qscheme=torch.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        if not is_per_tensor(qscheme):
            raise NotImplementedError(
                "MovingAverageMinMaxObserver's qscheme only support "
                "                torch.per_tensor_symmetric and torch.per_tensor_affine. "
                f"                but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and self.averaging_constant != 1:
            raise NotImplementedError(
                "MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                f"averaging constant of {self.averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def _combine(self, min_cur, max_cur):
        if self.min_val.item() == float("inf") and self.max_val.item() == float("-inf"):
            return min_cur, max_cur
        c = self.averaging_constant
        return self.min_val + c * (min_cur - self.min_val), self.max_val + c * (max_cur - self.max_val)


class PerChannelMinMaxObserver(_RunningRange, UniformQuantizationObserverBase):
    """The running minimum and maximum of each slice along ch_axis (a weight's output channels):
    min_val / max_val start empty and take the channel count from the first tensor."""

    min_val: torch.Tensor
    max_val: torch.Tensor

    def __init__(self, ch_axis=0, dtype=torch.quint8, qscheme=torch.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        if not is_per_channel(qscheme):
            raise NotImplementedError(
                "PerChannelMinMaxObserver's qscheme only support "
                "                    torch.per_channel_symmetric, torch.per_channel_affine and "
                "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError(
                "PerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", torch.tensor([]))
        self.register_buffer("max_val", torch.tensor([]))
        if (self.qscheme == torch.per_channel_symmetric and self.reduce_range
                and self.dtype == torch.quint8):
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def _current_range(self, x):
        x = x.detach()
        order = list(range(x.dim()))
        order[self.ch_axis] = 0
        order[0] = self.ch_axis
        y = torch.flatten(x.permute(order).to(self.min_val.dtype), start_dim=1)
        return torch.aminmax(y, dim=1)

    def _combine(self, min_cur, max_cur):
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            return min_cur, max_cur
        return torch.min(min_cur, self.min_val), torch.max(max_cur, self.max_val)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        _take_saved_shapes(self, state_dict, prefix, ("min_val", "max_val"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_min_max_vals(self):
        self.min_val.resize_((0,))
        self.max_val.resize_((0,))


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """PerChannelMinMaxObserver with an exponential moving average per channel."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=torch.quint8,
                 qscheme=torch.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=torch.finfo(torch.float32).eps, is_dynamic=False, **kwargs):
        if not is_per_channel(qscheme):
            raise NotImplementedError(
                "MovingAveragePerChannelMinMaxObserver's qscheme only support "
                "                    torch.per_channel_symmetric, torch.per_channel_affine and "
                "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError(
                "MovingAveragePerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _combine(self, min_cur, max_cur):
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            return min_cur, max_cur
        c = self.averaging_constant
        return self.min_val + c * (min_cur - self.min_val), self.max_val + c * (max_cur - self.max_val)


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=torch.qint8,
                                                   qscheme=torch.per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric)


class PlaceholderObserver(ObserverBase):
    """An observer that records nothing: it carries the dtype (and, for dynamic quantization,
    is_dynamic=True) of a tensor whose qparams are chosen elsewhere, e.g. per call by a dynamic
    quantized kernel."""

    def __init__(self, dtype=torch.float32, custom_op_name: str = "", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme is None:
            qscheme = torch.per_tensor_affine
        if eps is None:
            eps = torch.finfo(torch.float32).eps
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme, self.eps = qscheme, eps
        self.custom_op = custom_op_name
        if compute_dtype:
            is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.")
            self.is_dynamic = is_dynamic

    def forward(self, x):
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


from .histogram_observer import HistogramObserver, default_histogram_observer  # noqa: E402,F401
