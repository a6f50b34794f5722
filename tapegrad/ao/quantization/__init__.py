"""torch.ao.quantization, its float side: the observers that record a tensor's range and turn it
into a scale and zero point, and the FakeQuantize modules that quantise-dequantise in float
during quantisation-aware training (straight-through gradients, tapegrad's
fake_quantize_per_tensor_affine / per_channel_affine), and dynamic quantization
(quantize_dynamic: Linear layers with int8 weights, torch.ao.nn.quantized.dynamic.Linear).
Static quantization (prepare / convert with calibrated activations) is not provided."""
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
from .observer import PlaceholderObserver  # noqa: F401
from .qconfig import (  # noqa: F401
    QConfig,
    default_dynamic_qconfig,
    default_dynamic_quant_observer,
    default_placeholder_observer,
    float16_dynamic_qconfig,
    float_qparams_weight_only_qconfig,
    per_channel_dynamic_qconfig,
)
from .quantize import (  # noqa: F401
    convert,
    get_default_dynamic_quant_module_mappings,
    propagate_qconfig_,
    quantize_dynamic,
    swap_module,
)
from . import fake_quantize, observer, qconfig, quantize  # noqa: F401
