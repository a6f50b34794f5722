"""torch.ao: PyTorch's architecture-optimisation namespace; tapegrad provides its quantization
package (observers, fake quantisation, dynamic quantization of Linear) and the quantized modules
of ao.nn that dynamic quantization swaps in."""
from . import nn, quantization  # noqa: F401
