"""nn.utils: gradient clipping; rnn (padding and packing of sequences)."""
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from . import rnn

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "rnn"]

from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: E402
__all__ += ["parameters_to_vector", "vector_to_parameters"]

# Reparametrizations: the parametrize machinery, its ready-made parametrizations, and the older
# hook-based weight and spectral norms.
# (prune is not loaded here: torch.nn.utils has it only once a script imports
# torch.nn.utils.prune, and neither lists it in __all__)
from . import parametrize, parametrizations  # noqa: E402
from .weight_norm import weight_norm, remove_weight_norm  # noqa: E402
from .spectral_norm import spectral_norm, remove_spectral_norm  # noqa: E402
__all__ += ["parametrize", "parametrizations", "weight_norm", "remove_weight_norm",
            "spectral_norm", "remove_spectral_norm"]

# Folding eval-mode batch norms into the layer before them; the old functional_call.
from . import fusion, stateless  # noqa: E402
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: E402
                     fuse_linear_bn_weights)
__all__ += ["fusion", "stateless", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
            "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` with its parameters and buffers left uninitialised (built on
    the meta device, then given empty storage on ``device``), to be filled by the caller."""
    import inspect
    from ..modules.module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)

# Convolution weights laid out in a memory format (channels_last).
from .memory_format import (convert_conv2d_weight_memory_format,  # noqa: E402
                            convert_conv3d_weight_memory_format)
__all__ += ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
