"""``ferrograd.nn.functional``: activations, softmax, linear and dropout."""

import warnings

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


def linear(input, weight, bias=None):
    """``y = x A^T + b`` (one fused addmm for a batch of vectors)."""
    return _core.linear(input, weight, bias)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _core._leaky_relu(input, negative_slope)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def relu_(input):
    return relu(input, inplace=True)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        scale = input.new_zeros(())
    else:
        from .. import rand

        keep = rand(tuple(input.shape), dtype=input.dtype) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(scale) if inplace else input * scale


from ._losses import *  # noqa: F401,F403,E402
from ._attention import *  # noqa: F401,F403,E402
from ._conv import *  # noqa: F401,F403,E402
