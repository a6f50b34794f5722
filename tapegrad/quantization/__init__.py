"""torch.quantization: PyTorch's older name for torch.ao.quantization (the same objects)."""
from tapegrad.ao.quantization import *  # noqa: F401,F403
from tapegrad.ao.quantization import (  # noqa: F401
    FakeQuantize, FakeQuantizeBase, MinMaxObserver, MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver, ObserverBase, PerChannelMinMaxObserver,
    UniformQuantizationObserverBase, default_fake_quant, default_observer,
    default_per_channel_weight_fake_quant, default_per_channel_weight_observer,
    default_weight_fake_quant, default_weight_observer, disable_fake_quant, disable_observer,
    enable_fake_quant, enable_observer, fake_quantize, observer,
    PlaceholderObserver, QConfig, convert, default_dynamic_qconfig, default_dynamic_quant_observer,
    float_qparams_weight_only_qconfig, per_channel_dynamic_qconfig, propagate_qconfig_, qconfig,
    quantize, quantize_dynamic, swap_module,
    DeQuantStub, HistogramObserver, QuantStub, QuantWrapper, default_histogram_observer,
    default_per_channel_qconfig, default_qconfig, fuse_modules, fuse_modules_qat,
    get_default_qconfig, prepare, FusedMovingAvgObsFakeQuantize, default_qat_qconfig,
    get_default_qat_qconfig, prepare_qat,
)
