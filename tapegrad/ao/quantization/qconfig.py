"""QConfig: how to observe (and so quantize) a module's activations and weights; the
dynamic-quantization defaults that quantize_dynamic applies."""
from __future__ import annotations

from collections import namedtuple

import tapegrad as torch

from .observer import (PerChannelMinMaxObserver, PlaceholderObserver,
                       default_per_channel_weight_observer, default_weight_observer)


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """The observer classes (or with_args partials) for a module's activation and weight; each
    is instantiated per module, so they must be classes, not instances."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, torch.nn.Module) or isinstance(weight, torch.nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=torch.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
default_placeholder_observer = PlaceholderObserver
float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=torch.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=torch.float16))
float_qparams_weight_only_qconfig = QConfig(
    activation=default_placeholder_observer,
    weight=PerChannelMinMaxObserver.with_args(dtype=torch.quint8,
                                              qscheme=torch.per_channel_affine_float_qparams))


# -- static (post-training) quantization ------------------------------------------------------
from .histogram_observer import HistogramObserver  # noqa: E402
from .observer import default_observer  # noqa: E402

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)

# Each backend's activation observer and weight observer (PyTorch's version-0 defaults): x86 and
# fbgemm reduce the activation range by a bit (their int8 kernels' accumulation headroom).
_BACKEND_QCONFIG_PARTS = {
    "fbgemm": (True, default_per_channel_weight_observer),
    "x86": (True, default_per_channel_weight_observer),
    "qnnpack": (False, default_weight_observer),
    "onednn": (False, default_per_channel_weight_observer),
}


def _check_backend(backend) -> None:
    supported = list(_BACKEND_QCONFIG_PARTS)
    if backend not in supported:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{supported}")


def get_default_qconfig(backend="x86", version=0):
    """The post-training static quantization qconfig of a backend: a histogram observer for
    activations, min/max (per channel, except qnnpack) for weights."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             "supported. Version number must be 0")
    reduce_range, weight = _BACKEND_QCONFIG_PARTS[backend]
    return QConfig(activation=HistogramObserver.with_args(reduce_range=reduce_range),
                   weight=weight)


# -- quantization-aware training --------------------------------------------------------------
from .fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize,  # noqa: E402
                            default_fake_quant, default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_weight_fake_quant)
from .observer import MovingAverageMinMaxObserver  # noqa: E402

default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

# Each backend's QAT activation reduce_range (None: not passed, onednn's) and whether its weights
# are fake-quantized per channel.
_BACKEND_QAT_PARTS = {"fbgemm": (True, True), "x86": (True, True), "qnnpack": (False, False),
                      "onednn": (None, True)}


def get_default_qat_qconfig(backend="x86", version=1):
    """The quantization-aware-training qconfig of a backend: moving-average min/max fake
    quantization of activations (fused observer + fake quant from version 1) and symmetric int8
    weights (per channel, except qnnpack)."""
    _check_backend(backend)
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not "
                             "supported. Version number must be 0 or 1")
    reduce_range, per_channel = _BACKEND_QAT_PARTS[backend]
    activation_kwargs = {"observer": MovingAverageMinMaxObserver, "quant_min": 0,
                         "quant_max": 255}
    if reduce_range is not None:
        activation_kwargs["reduce_range"] = reduce_range
    if version == 0:
        fake_quant = FakeQuantize
        weight = default_per_channel_weight_fake_quant if per_channel \
            else default_weight_fake_quant
    else:
        fake_quant = FusedMovingAvgObsFakeQuantize
        weight = default_fused_per_channel_wt_fake_quant if per_channel \
            else default_fused_wt_fake_quant
    return QConfig(activation=fake_quant.with_args(**activation_kwargs), weight=weight)
