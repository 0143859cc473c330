"""``ferrograd.nn.modules``: the Module base class, containers, layers and losses."""

from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Identity, Linear
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softmin, Tanh
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .activation import MultiheadAttention
from .normalization import GroupNorm, LayerNorm
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .sparse import Embedding
from .padding import *  # noqa: F401,F403
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .loss import *  # noqa: F401,F403

__all__ = [
    "Module",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Identity",
    "Linear",
    "ReLU",
    "LeakyReLU",
    "Tanh",
    "Sigmoid",
    "GELU",
    "SiLU",
    "Softmax",
    "Softmin",
    "LogSoftmax",
    "Dropout",
    "Flatten",
    "Unflatten",
    "MultiheadAttention",
    "LayerNorm",
    "GroupNorm",
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "SyncBatchNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "Embedding",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
]
from . import loss as _loss  # noqa: E402

from . import padding as _padding  # noqa: E402

__all__ += list(getattr(_loss, "__all__", [])) + _padding.__all__
del _loss, _padding
