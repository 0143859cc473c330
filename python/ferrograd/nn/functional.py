"""``ferrograd.nn.functional``: activations and softmax over the core's fused kernels."""

from .. import _core

Tensor = _core.Tensor


def relu(input, inplace=False):
    if inplace:
        return input.copy_(input.relu())
    return input.relu()


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


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return input.log_softmax(dim, dtype=dtype)
