"""nn.utils: gradient clipping; rnn (padding and packing of sequences)."""
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from . import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "rnn"]

from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: E402
__all__ += ["parameters_to_vector", "vector_to_parameters"]

# Reparametrizations: the parametrize machinery, its ready-made parametrizations, and the older
# hook-based weight and spectral norms.
from . import parametrize, parametrizations, prune  # noqa: E402
from .weight_norm import weight_norm, remove_weight_norm  # noqa: E402
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: E402
__all__ += ["parametrize", "parametrizations", "prune", "weight_norm", "remove_weight_norm",
            "spectral_norm", "remove_spectral_norm"]
