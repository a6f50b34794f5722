"""tapegrad.nn.functional: the functions PyTorch has under torch.nn.functional.

They are compiled ops (forward, VJP and registration live in src/tapegrad/ops_*.pxi); this module
exposes what those op families registered for this namespace.
"""
from .. import _core

globals().update(_core.NN_FUNCTIONS)
from .._torch_names import name_as_registered as _name_as_registered  # noqa: E402
_name_as_registered(_core.NN_FUNCTIONS)

# The compiled losses, accepting the legacy reduction='elementwise_mean' as PyTorch does.
from ._legacy_reduction import accepting_legacy_mean as _accepting_legacy_mean  # noqa: E402
for _name in ("nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
              "binary_cross_entropy", "binary_cross_entropy_with_logits"):
    globals()[_name] = _accepting_legacy_mean(_core.NN_FUNCTIONS[_name])
# Those of them PyTorch writes in Python read target.size() and input.size() first.
from ._sizes_first import sizes_read_first as _sizes_read_first  # noqa: E402
for _name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits"):
    globals()[_name] = _sizes_read_first(globals()[_name])
del _name



# F.tanh and F.sigmoid: PyTorch's are Python functions calling the method (deprecated there in
# favour of torch.tanh / torch.sigmoid), so a torch function mode or a subclass's override sees
# Tensor.tanh / Tensor.sigmoid (tapegrad.overrides._UNSEEN_BY_MODES lists these two).
# A real torch tensor (a library imported the real torch) is read as tapegrad's, as every entry
# reads it: its own method would run the real op and return a real tensor.
from .._real_torch import real_tensor_or_item as _real_tensor_or_item  # noqa: E402


def tanh(input):
    """tanh(input) -> Tensor: input.tanh() (use torch.tanh)."""
    if not isinstance(input, _core.TensorBase):
        input = _real_tensor_or_item(input)
    return input.tanh()


def sigmoid(input):
    """sigmoid(input) -> Tensor: input.sigmoid() (use torch.sigmoid)."""
    if not isinstance(input, _core.TensorBase):
        input = _real_tensor_or_item(input)
    return input.sigmoid()


# Attention (issue 17, part 3): composed from the compiled ops above.
from ._attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402

# Convolution, pooling, resampling, padding modes, channel dropout, batch norm: numpy-backed
# Python ops until the core has compiled window kernels.
from ._batch_norm import batch_norm  # noqa: E402
from ._group_norm import group_norm, instance_norm  # noqa: E402
from ._embedding_bag import embedding_bag  # noqa: E402
from ._conv_ops import (conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold,  # noqa: E402
                        unfold)
from ._pool_extra import (adaptive_max_pool1d_with_indices,  # noqa: E402
                          adaptive_max_pool2d_with_indices, lp_pool1d, lp_pool2d, lp_pool3d,
                          max_pool1d_with_indices, max_pool2d_with_indices)
from ._norm_extra import local_response_norm, rms_norm  # noqa: E402
from ._grid_sample import affine_grid, grid_sample  # noqa: E402
from ._ctc_loss import ctc_loss  # noqa: E402
from ._more_losses import (feature_alpha_dropout, multilabel_margin_loss,  # noqa: E402
                           triplet_margin_with_distance_loss)
from ._fractional_pool import (fractional_max_pool2d,  # noqa: E402
                               fractional_max_pool2d_with_indices, fractional_max_pool3d,
                               fractional_max_pool3d_with_indices)
from ._volumetric import (adaptive_avg_pool3d, adaptive_max_pool3d,  # noqa: E402
                          adaptive_max_pool3d_with_indices, avg_pool3d, conv3d, conv_transpose3d,
                          dropout3d, max_pool3d, max_pool3d_with_indices)
from ._pool_ops import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402
                        adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d,
                        max_unpool1d, max_unpool2d, max_unpool3d)
from ._spatial_ops import (dropout1d, dropout2d, interpolate, pad, upsample,  # noqa: E402
                           upsample_bilinear, upsample_nearest)

# Activations composed of differentiable ops (hardtanh ... glu, normalize).
from ._extra_activations import (celu, glu, hardshrink, hardsigmoid, hardswish,  # noqa: E402
                                 hardtanh, logsigmoid, mish, normalize, prelu, relu6, rrelu,
                                 selu, softmin, softshrink, softsign, tanhshrink, threshold)

# Losses and distances composed of differentiable ops (kl_div ... gaussian_nll_loss).
from ._extra_losses import (cosine_embedding_loss, cosine_similarity,  # noqa: E402
                            gaussian_nll_loss, hinge_embedding_loss, kl_div, margin_ranking_loss,
                            multi_margin_loss, multilabel_soft_margin_loss, pairwise_distance,
                            poisson_nll_loss, soft_margin_loss, triplet_margin_loss)

# Channel rearrangements and the bilinear form (reshape / permute / matmul composites).
from ._shuffle_ops import (bilinear, channel_shuffle, native_channel_shuffle,  # noqa: E402
                           pixel_shuffle, pixel_unshuffle)

from ._extra_activations import alpha_dropout, gumbel_softmax  # noqa: E402
from .._torch_functional import pdist  # noqa: E402,F401  (torch.pdist, also F.pdist)
from ._linear_cross_entropy import linear_cross_entropy  # noqa: E402,F401
from .._torch_functional import conv_tbc  # noqa: E402,F401  (F.conv_tbc is torch.conv_tbc)

# __torch_function__ helpers PyTorch's functional module imports and scripts reach through it
# (assigned, not from-imported: public names of this module, as in PyTorch's stubs).
from .. import overrides as _overrides  # noqa: E402
handle_torch_function = _overrides.handle_torch_function
has_torch_function = _overrides.has_torch_function
has_torch_function_unary = _overrides.has_torch_function_unary
has_torch_function_variadic = _overrides.has_torch_function_variadic

# The mode numbers of grid_sample's interpolation and padding arguments (ATen's enums).
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """AssertionError with ``message.format(arg_name)`` unless ``arg`` is an int or has two
    elements (a kernel size, stride or padding of a 2-d op)."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))

# inplace=True on a tensor in a graph: the compiled relu, leaky_relu, elu and silu record it
# themselves (through _graph_inplace.activation_in_graph, on that path only), the composed
# activations through its recording_inplace wrapper.

from ._inplace_activations import (celu_, elu_, hardtanh_, leaky_relu_, relu_,  # noqa: E402,F401
                                   rrelu_, selu_, threshold_)

from .._pickle_names import repoint as _repoint  # noqa: E402
_repoint(globals(), __name__)  # F.relu & co. pickle by name (torch.save of a whole model)

from .._public_calls import install as _install_public_calls  # noqa: E402
_install_public_calls(globals())  # the public functions' entry (the meta device dispatches there)

# A missing name is reported under PyTorch's module name (module 'torch...' has no attribute).
from .._torch_names import report_missing_names_as_torch as _report_missing_names_as_torch  # noqa: E402
_report_missing_names_as_torch(__name__)
