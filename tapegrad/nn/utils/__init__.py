"""nn.utils: gradient clipping; rnn (padding and packing of sequences)."""
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from . import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "rnn"]

from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: E402
__all__ += ["parameters_to_vector", "vector_to_parameters"]
