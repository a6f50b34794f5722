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
