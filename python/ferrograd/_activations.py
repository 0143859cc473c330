"""The activations beyond relu / gelu / silu / leaky_relu: ``torch.nn.functional``'s elu, selu,
celu, softplus, hardtanh, relu6, hardswish, hardsigmoid, mish, softsign, logsigmoid, hardshrink,
softshrink, tanhshrink, threshold, prelu, glu, rrelu and gumbel_softmax (and the ``torch.*`` /
``Tensor.*`` names PyTorch gives some of them). The pointwise ones are one fused native op each
(``_core._activation``: forward and backward in one pass, see src/ops/activation.rs).
"""

import warnings

from . import _core
from ._factories import empty_like, zeros_like

__all__ = [
    "elu", "elu_", "selu", "selu_", "celu", "celu_", "softplus", "hardtanh", "hardtanh_", "relu6",
    "hardswish", "hardsigmoid", "mish", "softsign", "logsigmoid", "hardshrink", "softshrink",
    "tanhshrink", "threshold", "threshold_", "prelu", "glu", "rrelu", "rrelu_", "gumbel_softmax",
]


# SELU's constants (Klambauer et al., 2017), as PyTorch's
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _act(input, inplace, kind, *params):
    """The fused activation ``kind`` of ``input`` (``_core._activation``), or in place."""
    if inplace:
        return _core._activation_(input, kind, *params)
    return _core._activation(input, kind, *params)


def elu(input, alpha=1.0, inplace=False):
    return _act(input, inplace, "elu", alpha, 1.0, 1.0)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    return _act(input, inplace, "elu", _SELU_ALPHA, _SELU_SCALE, 1.0)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _act(input, inplace, "celu", alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def softplus(input, beta=1, threshold=20):
    return _act(input, False, "softplus", beta, threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act(input, inplace, "hardtanh", min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return _act(input, inplace, "hardtanh", 0.0, 6.0)


def hardswish(input, inplace=False):
    return _act(input, inplace, "hardswish")


def hardsigmoid(input, inplace=False):
    return _act(input, inplace, "hardsigmoid")


def mish(input, inplace=False):
    return _act(input, inplace, "mish")


def softsign(input):
    return input / (input.abs() + 1)


def logsigmoid(input):
    return _act(input, False, "logsigmoid")


def hardshrink(input, lambd=0.5):
    return _act(input, False, "hardshrink", lambd)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        name = _KERNEL_DTYPE.get(str(input.dtype), str(input.dtype))
        top = _FLOAT_MAX.get(name, "3.40282e+38")
        raise RuntimeError(f"lambda must be in range [0, {top}] for input dtype {name}, but found {lambd:g}")
    return _act(input, False, "softshrink", lambd)


def tanhshrink(input):
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    return _act(input, inplace, "threshold", threshold, value)


def threshold_(input, threshold, value):
    return _act(input, True, "threshold", threshold, value)


def prelu(input, weight):
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != n:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. "
                f"Found parameter numbers = {n} and channel size = {channels}."
            )
    if input.dim() == 0:
        weight = weight.reshape(())
    elif input.dim() > 1:
        shape = [1] * input.dim()
        shape[1] = n
        weight = weight.reshape(shape)
    return _core._prelu_kernel(input, weight)


def glu(input, dim=-1):
    return _core._glu(input, dim)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if training and upper - lower > 1e-6:
        if not input.is_floating_point():
            name = _KERNEL_DTYPE.get(str(input.dtype), str(input.dtype))
            raise NotImplementedError(f"\"rrelu_with_noise_out_cpu\" not implemented for '{name}'")
        slopes = empty_like(input).uniform_(lower, upper)
        noise = _core.where(input.detach() > 0, 1.0, slopes)
        return _core._rrelu_with_noise(input, noise, inplace)
    return _act(input, inplace, "rrelu", (lower + upper) / 2)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


# PyTorch's dtype names in kernel messages, and the largest value of each float dtype as its
# messages print it
_KERNEL_DTYPE = {
    "torch.float32": "Float", "torch.float64": "Double", "torch.float16": "Half", "torch.bfloat16": "BFloat16",
    "torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short", "torch.int8": "Char",
    "torch.uint8": "Byte", "torch.bool": "Bool",
}
_FLOAT_MAX = {"Float": "3.40282e+38", "Double": "1.79769e+308", "Half": "65504", "BFloat16": "3.38953e+38"}


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()  # ~Gumbel(0,1)
    gumbels = (logits + gumbels) / tau  # ~Gumbel(logits,tau)
    y_soft = gumbels.softmax(dim)
    if hard:
        # straight through
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = zeros_like(logits).scatter(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft
