"""torch.ao.nn: the quantized counterparts of torch.nn's modules (tapegrad: the dynamically
quantized Linear that torch.ao.quantization.quantize_dynamic swaps in) and the fused module
sequences of ao.nn.intrinsic that fuse_modules builds, and the fake-quantized training
modules of ao.nn.qat."""
from . import intrinsic, qat, quantized  # noqa: F401
