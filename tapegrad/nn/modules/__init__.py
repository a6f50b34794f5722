"""The nn layers."""
# torch.nn.modules.utils._pair / consume_prefix_in_state_dict_if_present, reached as attributes
from . import utils  # noqa: F401
from .module import Module
from .container import ModuleDict, ModuleList, Sequential
from .linear import Flatten, Identity, Linear, Unflatten
from .activation import (ELU, GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus,
                         Tanh)
from .dropout import Dropout
from .sparse import Embedding, EmbeddingBag
from .normalization import BatchNorm1d, LayerNorm
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss,
                   NLLLoss, SmoothL1Loss)

__all__ = ["Module", "ModuleDict", "ModuleList", "Sequential", "Flatten", "Identity", "Linear",
           "Unflatten", "ELU", "GELU", "LeakyReLU", "LogSoftmax", "ReLU", "Sigmoid", "SiLU",
           "Softmax", "Softplus", "Tanh", "Dropout", "Embedding", "EmbeddingBag", "BatchNorm1d",
           "LayerNorm", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "L1Loss",
           "MSELoss", "NLLLoss", "SmoothL1Loss"]

# Recurrent layers and attention (issue 17, parts 2 and 3).
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder,
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
            "TransformerEncoder", "TransformerEncoderLayer"]

# Convolution and pooling layers.
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold  # noqa: E402
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: E402
                      AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d,
                      MaxUnpool1d, MaxUnpool2d, Upsample)
from .normalization import BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d  # noqa: E402
from .dropout import Dropout1d, Dropout2d  # noqa: E402
# (LazyModuleMixin is torch.nn.modules.lazy's, reached through the layer modules only)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyConv1d, LazyConv2d,  # noqa: E402
                   LazyLinear)

__all__ += ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold",
            "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
            "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "MaxUnpool1d", "MaxUnpool2d",
            "Upsample", "BatchNorm2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
            "Dropout1d", "Dropout2d", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyBatchNorm1d",
            "LazyBatchNorm2d"]

# Activations composed of differentiable ops.
from .activation_extra import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: E402
                               Hardtanh, LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmax2d,
                               Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
__all__ += ["CELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
            "LogSigmoid", "Mish", "PReLU", "ReLU6", "RReLU", "Softmax2d", "Softmin", "Softshrink",
            "Softsign", "Tanhshrink", "Threshold"]

# Losses and distances composed of differentiable ops.
from .loss_extra import (CosineEmbeddingLoss, CosineSimilarity, GaussianNLLLoss,  # noqa: E402
                         HingeEmbeddingLoss, KLDivLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
                         MultiMarginLoss, PairwiseDistance, PoissonNLLLoss, SoftMarginLoss,
                         TripletMarginLoss)
__all__ += ["CosineEmbeddingLoss", "CosineSimilarity", "GaussianNLLLoss", "HingeEmbeddingLoss",
            "KLDivLoss", "MarginRankingLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
            "PairwiseDistance", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss"]

# Padding modules over F.pad, pixel / channel shuffles, Bilinear.
from .padding_shuffle import (Bilinear, ChannelShuffle, CircularPad1d,  # noqa: E402
                              CircularPad2d, ConstantPad1d, ConstantPad2d, PixelShuffle,
                              PixelUnshuffle, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d,
                              ReplicationPad2d, ZeroPad1d, ZeroPad2d)
__all__ += ["Bilinear", "ChannelShuffle", "CircularPad1d", "CircularPad2d", "ConstantPad1d",
            "ConstantPad2d", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d",
            "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d"]

# Normalisations and pools small LLM and AlexNet-style scripts use (issue 17).
from .normalization import (BatchNorm3d, CrossMapLRN2d, InstanceNorm3d,  # noqa: E402
                            LocalResponseNorm, RMSNorm)
from .pooling import LPPool1d, LPPool2d  # noqa: E402
__all__ += ["BatchNorm3d", "CrossMapLRN2d", "InstanceNorm3d", "LocalResponseNorm", "RMSNorm",
            "LPPool1d", "LPPool2d"]

# 3-d layers (issue 17): 2-d ops over planes combined along the depth axis.
from .conv import Conv3d, ConvTranspose3d  # noqa: E402
from .pooling import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d,  # noqa: E402
                      MaxUnpool3d)
from .dropout import Dropout3d  # noqa: E402
from .padding_shuffle import (CircularPad3d, ConstantPad3d, ReflectionPad3d,  # noqa: E402
                              ReplicationPad3d, ZeroPad3d)
from .lazy import LazyBatchNorm3d, LazyConv3d  # noqa: E402
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d, LPPool3d  # noqa: E402
__all__ += ["LazyBatchNorm3d", "LazyConv3d", "LPPool3d", "FractionalMaxPool2d",
            "FractionalMaxPool3d"]
__all__ += ["Conv3d", "ConvTranspose3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d",
            "MaxPool3d", "MaxUnpool3d", "Dropout3d", "CircularPad3d", "ConstantPad3d",
            "ReflectionPad3d", "ReplicationPad3d", "ZeroPad3d"]

from .loss_extra import CTCLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss  # noqa
from .dropout import FeatureAlphaDropout  # noqa: E402
from .loss import NLLLoss2d  # noqa: E402
__all__ += ["CTCLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
            "FeatureAlphaDropout", "NLLLoss2d"]

from .dropout import AlphaDropout  # noqa: E402
__all__ += ["AlphaDropout"]

from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .container import Container  # noqa: E402
from .lazy import (LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d,  # noqa: E402
                   LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from .normalization import SyncBatchNorm  # noqa: E402
__all__ += ["AdaptiveLogSoftmaxWithLoss", "Container", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d", "SyncBatchNorm"]

from .upsampling import UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
__all__ += ["UpsamplingBilinear2d", "UpsamplingNearest2d"]

# The fused linear + cross entropy criterion (PyTorch 2.1x) and its chunking options.
from .loss import LinearCrossEntropyLoss  # noqa: E402
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: E402
__all__ += ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]

# Parameter containers (issue 15).
from .param_containers import ParameterDict, ParameterList  # noqa: E402
__all__ += ["ParameterDict", "ParameterList"]

# PyTorch's file layout: torch.nn.modules.<file>.<Class> paths that scripts name (pickles,
# safe_globals lists) resolve here too.  Classes tapegrad defines in another file are added to
# the file PyTorch defines them in; files tapegrad lacks are small re-exporting modules.
from . import (activation, batchnorm, channelshuffle, container, conv, distance,  # noqa: E402
               dropout, flatten, fold, instancenorm, linear, linear_cross_entropy_options,
               loss, padding, pixelshuffle, upsampling)
from . import activation_extra as _activation_extra, lazy as _lazy  # noqa: E402
from . import loss_extra as _loss_extra, padding_shuffle as _padding_shuffle  # noqa: E402
from . import param_containers as _param_containers, transformer as _transformer  # noqa: E402


def _add_to_torch_file(module, source, names) -> None:
    for name in names:
        if not hasattr(module, name):
            setattr(module, name, getattr(source, name))


_add_to_torch_file(activation, _activation_extra, (
    "CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish",
    "PReLU", "RReLU", "ReLU6", "SELU", "Softmax2d", "Softmin", "Softshrink", "Softsign",
    "Tanhshrink", "Threshold"))
_add_to_torch_file(activation, _transformer, ("MultiheadAttention",))
_add_to_torch_file(container, _param_containers, ("ParameterDict", "ParameterList"))
_add_to_torch_file(conv, _lazy, ("LazyModuleMixin", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                                 "LazyConvTranspose2d", "LazyConvTranspose3d"))
_add_to_torch_file(instancenorm, _lazy, ("LazyInstanceNorm1d", "LazyInstanceNorm2d",
                                         "LazyInstanceNorm3d"))
_add_to_torch_file(linear, _padding_shuffle, ("Bilinear",))
_add_to_torch_file(linear, _lazy, ("LazyModuleMixin", "LazyLinear"))
_add_to_torch_file(linear, _transformer, ("NonDynamicallyQuantizableLinear",))
_add_to_torch_file(loss, _loss_extra, (
    "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "KLDivLoss",
    "MarginRankingLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss",
    "SoftMarginLoss", "TripletMarginLoss", "CTCLoss", "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss"))
del _add_to_torch_file
