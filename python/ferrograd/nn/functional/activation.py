"""Activation functions and softmax of ``ferrograd.nn.functional``."""

import warnings

from ... import _core
from ..._activations import (
    celu,
    celu_,
    elu,
    elu_,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    logsigmoid,
    mish,
    prelu,
    relu6,
    rrelu,
    rrelu_,
    selu,
    selu_,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)

__all__ = [
    "relu",
    "relu_",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "leaky_relu",
    "leaky_relu_",
    "softmax",
    "log_softmax",
    "softmin",
    "elu",
    "elu_",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "softplus",
    "hardtanh",
    "hardtanh_",
    "relu6",
    "hardswish",
    "hardsigmoid",
    "mish",
    "softsign",
    "logsigmoid",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "threshold",
    "threshold_",
    "prelu",
    "glu",
    "rrelu",
    "rrelu_",
    "gumbel_softmax",
]


def relu(input, inplace=False):
    if inplace:
        return input.copy_(input.relu())
    return input.relu()


def relu_(input):
    return relu(input, inplace=True)


def gelu(input, approximate="none"):
    return input._gelu(approximate)


def silu(input, inplace=False):
    if inplace:
        return input.copy_(input._silu())
    return input._silu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _core._leaky_relu(input, negative_slope)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return input.log_softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return (-input).softmax(dim, dtype=dtype)

