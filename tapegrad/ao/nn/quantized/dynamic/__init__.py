"""torch.ao.nn.quantized.dynamic: modules whose weights are stored quantized and whose inputs are
quantized on the fly, per call (dynamic quantization)."""
from .linear import Linear  # noqa: F401
from .rnn import GRU, LSTM  # noqa: F401

__all__ = ["Linear", "LSTM", "GRU"]
