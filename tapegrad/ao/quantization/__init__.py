"""torch.ao.quantization, its float side: the observers that record a tensor's range and turn it
into a scale and zero point, and the FakeQuantize modules that quantise-dequantise in float
during quantisation-aware training (straight-through gradients, tapegrad's
fake_quantize_per_tensor_affine / per_channel_affine).  Converting a model to quantized kernels
(prepare / convert, quantized tensors) is not provided: tapegrad has no quantized tensors."""
from .fake_quantize import (  # noqa: F401
    FakeQuantize,
    FakeQuantizeBase,
    default_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
)
from .observer import (  # noqa: F401
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    UniformQuantizationObserverBase,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)
from . import fake_quantize, observer  # noqa: F401
