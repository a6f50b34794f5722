"""FakeQuantize: a module that, in quantisation-aware training, observes its input (updating
its observer and copying the observer's scale / zero point into its own buffers) and returns
the input quantised and dequantised in float, with the straight-through gradient of
torch.fake_quantize_per_tensor_affine / per_channel_affine.  Either step can be switched off
(disable_observer freezes the qparams, disable_fake_quant passes the input through)."""
from __future__ import annotations as _annotations

from abc import ABC, abstractmethod

import numpy as np

import tapegrad as torch
from tapegrad import nn

from .observer import (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                       _is_float_qparams, _take_saved_shapes, _with_args, _with_callable_args,
                       is_per_channel, is_per_tensor)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "default_fake_quant", "default_weight_fake_quant",
           "default_per_channel_weight_fake_quant", "disable_fake_quant", "disable_observer",
           "enable_fake_quant", "enable_observer", "FusedMovingAvgObsFakeQuantize",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant"]


class FakeQuantizeBase(ABC, nn.Module):
    """The switches every fake-quantize module has: uint8 flags in buffers (saved with the
    model, as PyTorch saves them)."""

    fake_quant_enabled: torch.Tensor
    observer_enabled: torch.Tensor

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs):
        constructor = _with_args(cls, **kwargs)
        constructor.__module__ = "torch.ao.quantization.fake_quantize"
        return constructor

    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    """Observer-driven fake quantisation (see the module docstring); observer is a class or a
    with_args factory, made with observer_kwargs (and quant_min / quant_max when both given)."""

    scale: torch.Tensor
    zero_point: torch.Tensor

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", torch.quint8)
            if hasattr(observer, "p"):      # a with_args factory carries its dtype
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            if torch.iinfo(dtype).min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > torch.iinfo(dtype).max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = (torch.float if _is_float_qparams(self.activation_post_process.qscheme)
                            else torch.int)
        self.register_buffer("scale", torch.tensor([1.0], dtype=torch.float))
        self.register_buffer("zero_point", torch.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if not (is_per_channel(self.qscheme) or is_per_tensor(self.qscheme)):
            raise AssertionError("Only per channel and per tensor quantization are supported in "
                                 "fake quantize got qscheme: " + str(self.qscheme))
        self.is_per_channel = is_per_channel(self.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        if self.observer_enabled[0] == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            if self.scale.shape != scale.shape:
                self.scale.resize_(scale.shape)
                self.zero_point.resize_(zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if self.fake_quant_enabled[0] == 1:
            if self.is_per_channel:
                X = torch.fake_quantize_per_channel_affine(
                    X, self.scale, self.zero_point, self.ch_axis,
                    self.activation_post_process.quant_min, self.activation_post_process.quant_max)
            else:
                X = torch.fake_quantize_per_tensor_affine(
                    X, self.scale, self.zero_point,
                    self.activation_post_process.quant_min, self.activation_post_process.quant_max)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"dtype={self.dtype}, qscheme={self.qscheme}, ch_axis={self.ch_axis}, "
                f"scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        _take_saved_shapes(self, state_dict, prefix, ("scale", "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8,
    qscheme=torch.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, reduce_range=False, ch_axis=0)


# For model.apply(...): switch every fake-quantize module of a model.
def disable_fake_quant(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()


# -- the fused observer + fake quantize of PyTorch's default QAT qconfigs ----------------------
_SMALL_SCALE = 6.1e-5     # ATen's smallest scale (float16's smallest normal)


def _aten_choose_qparams(min_val: float, max_val: float, qmin: int, qmax: int,
                         preserve_sparsity: bool) -> tuple[float, int]:
    """ATen's ChooseQuantizationParams, which the fused kernel uses (not the observers'
    formula): min/max are float32, the scale a double rounded to float32; a symmetric range
    keeps zero exact by widening the smaller side to the larger one's step."""
    f32 = np.float32
    lo, hi = f32(min_val), f32(max_val)
    if lo < 0 < hi and preserve_sparsity:
        symmetric_qmin = -((qmax - qmin) // 2 + 1)
        symmetric_qmax = (qmax - qmin) // 2
        max_scale = max(abs(float(lo) / symmetric_qmin), abs(float(hi) / symmetric_qmax))
        lo, hi = f32(max_scale * symmetric_qmin), f32(max_scale * symmetric_qmax)
    lo, hi = min(lo, f32(0)), max(hi, f32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    if f32(scale) == 0 or np.isinf(f32(1) / f32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        original, scale = scale, _SMALL_SCALE
        if lo == 0:
            hi = f32(_SMALL_SCALE * (qmax - qmin))
        elif hi == 0:
            lo = f32(-_SMALL_SCALE * (qmax - qmin))
        else:
            amplifier = f32(_SMALL_SCALE / original)
            lo, hi = lo * amplifier, hi * amplifier
    scale = float(f32(scale))
    from_min = qmin - float(lo) / scale
    from_max = qmax - float(hi) / scale
    from_min_error = abs(qmin) - abs(float(lo) / scale)
    from_max_error = abs(qmax) - abs(float(hi) / scale)
    initial = from_min if from_min_error < from_max_error else from_max
    if lo < 0 < hi and preserve_sparsity:
        initial = (qmin + qmax) / 2
    zero_point = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return scale, zero_point


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """FakeQuantize with a moving-average min/max observer in one step (PyTorch's
    fused_moving_avg_obs_fake_quant): the running range is the observer's, the qparams used for
    fake quantization are ATen's choose_qparams of it (calculate_qparams stays the observer's,
    as PyTorch's: that is what convert uses)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError(
                "Fused observer+fake_quant module only works with MovingAverageMinMaxObserver")
        # (int64 flags here, as PyTorch's fused module registers them)
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.long))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.long))
        self.is_symmetric_quant = self.activation_post_process.qscheme in (
            torch.per_tensor_symmetric, torch.per_channel_symmetric)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self):
        observer = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={observer.quant_min}, quant_max={observer.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={observer.reduce_range}")

    def _update_qparams(self) -> None:
        observer = self.activation_post_process
        pairs = [_aten_choose_qparams(lo, hi, observer.quant_min, observer.quant_max,
                                      self.is_symmetric_quant)
                 for lo, hi in zip(observer.min_val.reshape(-1).tolist(),
                                   observer.max_val.reshape(-1).tolist())]
        scale = torch.tensor([s for s, _ in pairs], dtype=torch.float)
        zero_point = torch.tensor([z for _, z in pairs], dtype=self.zero_point.dtype)
        if self.scale.shape != scale.shape:
            self.scale.resize_(scale.shape)
            self.zero_point.resize_(zero_point.shape)
        self.scale.copy_(scale)
        self.zero_point.copy_(zero_point)

    def forward(self, X):
        observer = self.activation_post_process
        if self.observer_enabled[0] == 1:
            observer(X.detach())
            self._update_qparams()
        if self.fake_quant_enabled[0] == 1:
            if self.is_per_channel:
                X = torch.fake_quantize_per_channel_affine(
                    X, self.scale, self.zero_point, self.ch_axis, observer.quant_min,
                    observer.quant_max)
            else:
                X = torch.fake_quantize_per_tensor_affine(
                    X, self.scale, self.zero_point, observer.quant_min, observer.quant_max)
        return X


default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
