"""torch.ao: PyTorch's architecture-optimisation namespace; tapegrad provides its quantization
package's float side (observers, fake quantisation) for quantisation-aware training."""
from . import quantization  # noqa: F401
