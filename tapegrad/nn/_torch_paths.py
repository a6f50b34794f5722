"""Where PyTorch defines each public nn layer class (torch/nn/modules/<file>.py), which is what
`print(type(layer))` shows: <class 'torch.nn.modules.batchnorm.BatchNorm2d'>.  tapegrad's files
group the layers differently (its BatchNorm2d lives in normalization.py), so the printed path
comes from this table, read from torch 2.13, not from our module (tapegrad/_torch_names.py's
name_layer_classes).  A layer not listed keeps printing its own path."""

# PyTorch's file (under torch.nn.modules) -> the layer classes it defines
TORCH_FILES = {
    "activation": "CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU "
        "LogSigmoid LogSoftmax Mish MultiheadAttention PReLU RReLU ReLU ReLU6 "
        "SELU SiLU Sigmoid Softmax Softmax2d Softmin Softplus Softshrink "
        "Softsign Tanh Tanhshrink Threshold",
    "adaptive": "AdaptiveLogSoftmaxWithLoss",
    "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d "
        "LazyBatchNorm3d SyncBatchNorm",
    "channelshuffle": "ChannelShuffle",
    "container": "Container ModuleDict ModuleList ParameterDict ParameterList Sequential",
    "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
        "LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d "
        "LazyConvTranspose3d",
    "distance": "CosineSimilarity PairwiseDistance",
    "dropout": "AlphaDropout Dropout Dropout1d Dropout2d Dropout3d FeatureAlphaDropout",
    "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d "
        "LazyInstanceNorm2d LazyInstanceNorm3d",
    "linear": "Bilinear Identity LazyLinear Linear",
    "loss": "BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss CrossEntropyLoss "
        "GaussianNLLLoss HingeEmbeddingLoss HuberLoss KLDivLoss L1Loss "
        "LinearCrossEntropyLoss MSELoss MarginRankingLoss MultiLabelMarginLoss "
        "MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss NLLLoss2d PoissonNLLLoss "
        "SmoothL1Loss SoftMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss",
    "normalization": "CrossMapLRN2d GroupNorm LayerNorm LocalResponseNorm RMSNorm",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d "
        "ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d "
        "ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d "
        "ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "pooling": "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
        "AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d "
        "FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d "
        "MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d",
    "rnn": "GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase",
    "sparse": "Embedding EmbeddingBag",
    "transformer": "Transformer TransformerDecoder TransformerDecoderLayer "
        "TransformerEncoder TransformerEncoderLayer",
    "upsampling": "Upsample UpsamplingBilinear2d UpsamplingNearest2d",
}

PATH_OF = {name: f"torch.nn.modules.{file}.{name}"
           for file, names in TORCH_FILES.items() for name in names.split()}
