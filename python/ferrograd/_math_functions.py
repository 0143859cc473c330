"""Math functions with arguments the core's op tables do not carry (``polygamma(n, x)``,
``mvlgamma(x, p)``, ``logit(x, eps)``), the composites PyTorch users call (``sinc``,
``xlogy``), and the ``arc*`` aliases. The elementwise kernels themselves (tan, atan, asinh,
log2, erfc, lgamma, digamma, atan2, hypot, ...) are the core's (src/ops/math.rs).

The composites are written with differentiable ops, so their gradients (and gradients of
gradients) come from autograd; the graph shows those ops rather than PyTorch's single node.
"""

import math

from . import _core
from ._core import Tensor
from ._dtype import can_cast, get_default_dtype
from ._factories import arange, full
from ._functions import _not_a_tensor
from ._shape_functions import _scalar_type_name

__all__ = [
    "arccos", "arccos_", "arccosh", "arccosh_", "arcsin", "arcsin_", "arcsinh", "arcsinh_",
    "arctan", "arctan2", "arctan_", "arctanh", "arctanh_", "logit", "logit_", "mvlgamma",
    "polygamma", "sinc", "sinc_", "xlogy", "xlogy_",
]


def _float(input):
    """``input`` as a floating tensor (integers and bools in the default dtype)."""
    return input if input.is_floating_point() else input.to(get_default_dtype())


def _wrapped_dtype(tensor):
    """The dtype a Python number computes in beside ``tensor`` (PyTorch's wrapped number)."""
    return tensor.dtype if tensor.is_floating_point() else get_default_dtype()


def polygamma(n, input):
    """The ``n``-th derivative of the digamma function (``n = 0``: digamma)."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("polygamma", input)
    return _core._polygamma(n, input)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension ``p``:
    ``p(p-1)/4 log(pi) + sum_i lgamma(input - i/2)``, i = 0 .. p-1."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(input)
    halves = arange(p, dtype=x.dtype) * 0.5
    return (x.unsqueeze(-1) - halves).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def sinc(input):
    """``sin(pi x) / (pi x)``, 1 at 0 (with gradient 0 there); the method is the core's."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("sinc", input)
    return _core.sinc(input)  # one pass, SincBackward0 (integers in the default dtype)


def logit(input, eps=None):
    """``log(x / (1 - x))``, with ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    if not isinstance(input, Tensor):
        raise _not_a_tensor("logit", input)
    return _core.logit(_float(input), None if eps is None else float(eps))


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be
    a number."""
    # one native pass (XlogyBackward0); integer operands are computed in the default dtype
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _core.xlogy(input, other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise _not_a_tensor("xlogy", input)
    x = input if isinstance(input, Tensor) else full((), input, dtype=_wrapped_dtype(other))
    y = other if isinstance(other, Tensor) else full((), other, dtype=_wrapped_dtype(input))
    return _core.xlogy(x, y)


def _write_result(self, result):
    """``self.copy_(result)`` for an in-place op computed out of place, with PyTorch's refusal
    of a result that cannot be cast to ``self``'s dtype (a float result into integers)."""
    if not can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"result type {_scalar_type_name(result.dtype)} can't be cast to the "
                           f"desired output type {_scalar_type_name(self.dtype)}")
    return self.copy_(result)


def _inplace(name, fn):
    def method(self, *args, **kwargs):
        return _write_result(self, fn(self, *args, **kwargs))

    method.__name__ = name
    return method


logit_ = _inplace("logit_", logit)
sinc_ = _core.sinc_

_native_xlogy_ = Tensor.xlogy_  # the core's (ferrograd._tensor installs xlogy_ below over it)


def xlogy_(input, other):
    """``input = xlogy(input, other)`` in one pass (XlogyBackward0); ``other`` may be a number."""
    y = other if isinstance(other, Tensor) else full((), other, dtype=_wrapped_dtype(input))
    return _native_xlogy_(input, y)

arccos, arccos_ = _core.acos, _core.acos_
arccosh, arccosh_ = _core.acosh, _core.acosh_
arcsin, arcsin_ = _core.asin, _core.asin_
arcsinh, arcsinh_ = _core.asinh, _core.asinh_
arctan, arctan_ = _core.atan, _core.atan_
arctanh, arctanh_ = _core.atanh, _core.atanh_
arctan2 = _core.atan2
