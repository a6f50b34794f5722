"""The nn layers."""
from .module import Module
from .container import ModuleDict, ModuleList, Sequential
from .linear import Flatten, Identity, Linear, Unflatten
from .activation import (ELU, GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus,
                         Tanh)
from .dropout import Dropout
from .sparse import Embedding
from .normalization import BatchNorm1d, LayerNorm
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)

__all__ = ["Module", "ModuleDict", "ModuleList", "Sequential", "Flatten", "Identity", "Linear",
           "Unflatten", "ELU", "GELU", "LeakyReLU", "LogSoftmax", "ReLU", "Sigmoid", "SiLU",
           "Softmax", "Softplus", "Tanh", "Dropout", "Embedding", "BatchNorm1d", "LayerNorm",
           "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss",
           "SmoothL1Loss"]

# Recurrent layers and attention (issue 17, parts 2 and 3).
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder,
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
            "TransformerEncoder", "TransformerEncoderLayer"]
