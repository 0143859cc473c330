"""``ferrograd.nn.modules``: the Module base class, containers, layers and losses."""

from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Identity, Linear
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softmin, Tanh
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .activation import MultiheadAttention
from .normalization import LayerNorm
from .sparse import Embedding
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

__all__ += list(getattr(_loss, "__all__", []))
del _loss
