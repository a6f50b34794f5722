"""torch.nn.qat: the older name of torch.ao.nn.qat, the quantization-aware training modules (the
same objects).  PyTorch's old namespace lists only the unfused layers: the fused ones are
torch.nn.intrinsic.qat's."""
from tapegrad.ao.nn.qat import Conv2d, Linear  # noqa: F401

__all__ = ["Conv2d", "Linear"]
