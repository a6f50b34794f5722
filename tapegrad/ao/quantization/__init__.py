"""torch.ao.quantization, its float side: the observers that record a tensor's range and turn it
into a scale and zero point, and the FakeQuantize modules that quantise-dequantise in float
during quantisation-aware training (straight-through gradients, tapegrad's
fake_quantize_per_tensor_affine / per_channel_affine), and dynamic quantization
(quantize_dynamic: Linear layers with int8 weights, torch.ao.nn.quantized.dynamic.Linear).
Static (post-training) quantization: QuantStub / DeQuantStub mark the quantized region,
fuse_modules folds conv/bn/relu runs, prepare attaches activation observers (HistogramObserver
under get_default_qconfig), and convert swaps Linear / Conv2d / LinearReLU / ConvReLU2d for
their quantized modules."""
from .fake_quantize import (  # noqa: F401
    FakeQuantize,
    FakeQuantizeBase,
    FusedMovingAvgObsFakeQuantize,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
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
from .fuse_modules import (  # noqa: F401
    fuse_conv_bn, fuse_conv_bn_relu, fuse_known_modules, fuse_linear_bn, fuse_modules,
    fuse_modules_qat, get_fuser_method,
)
from .histogram_observer import HistogramObserver, default_histogram_observer  # noqa: F401
from .observer import PlaceholderObserver  # noqa: F401
from .qconfig import (  # noqa: F401
    QConfig,
    default_per_channel_qconfig,
    default_qat_qconfig,
    default_qconfig,
    get_default_qat_qconfig,
    get_default_qconfig,
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
    get_default_qat_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
    prepare,
    prepare_qat,
    propagate_qconfig_,
    quantize_dynamic,
    swap_module,
)
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401
from . import fake_quantize, observer, qconfig, quantize, stubs  # noqa: F401,E402
