"""``torch.special``: the special functions under PyTorch's ``special`` names.

The Bessel functions, orthogonal polynomials, ``zeta``, ``gammainc``/``gammaincc``, ``erfcx``
and ``log_ndtr`` are not implemented yet: using one raises ``NotImplementedError`` naming it.
"""

import math

from . import _core
from ._factories import full
from ._functions import _not_a_tensor
from ._math_functions import _float, _wrapped_dtype, logit, mvlgamma, polygamma, sinc, xlogy
from .autograd.function import Function
from .nn.functional import log_softmax as _log_softmax, softmax as _softmax

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p",
    "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi",
    "round", "sinc", "softmax", "xlog1py", "xlogy",
]

_NOT_YET = {
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "erfcx",
    "gammainc", "gammaincc", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log_ndtr", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "spherical_bessel_j0", "zeta",
}

digamma = psi = _core.digamma
erf = _core.erf
erfc = _core.erfc
erfinv = _core.erfinv
exp2 = _core.exp2
expit = _core.sigmoid
expm1 = _core.expm1
gammaln = _core.lgamma
log1p = _core.log1p
round = _core.round  # noqa: A001
multigammaln = mvlgamma


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


class _Entr(Function):
    """``-x log x`` for x > 0, 0 at 0, -inf for x < 0; gradient ``-(1 + log x)`` everywhere
    (inf at 0, NaN below), as PyTorch's EntrBackward0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        value = _core.where(x > 0, x, 1.0)  # no log of x <= 0 in the branch where() drops
        return _core.where(x < 0, -math.inf, _core.where(x > 0, -value * value.log(), 0.0))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -(x.log() + 1)


def entr(input):
    """``-x log x`` for x > 0, 0 at 0, -inf for x < 0."""
    if not isinstance(input, _core.Tensor):
        raise _not_a_tensor("entr", input)
    return _Entr.apply(_float(input))


def ndtr(input):
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2``."""
    return _core.erfc(_float(input) * -math.sqrt(0.5)) * 0.5


def ndtri(input):
    """The inverse of ``ndtr``: ``sqrt 2 * erfinv(2p - 1)``."""
    return _core.erfinv(_float(input) * 2 - 1) * math.sqrt(2.0)


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (as ``xlogy``, with log1p)."""
    if not isinstance(input, _core.Tensor) and not isinstance(other, _core.Tensor):
        raise _not_a_tensor("xlog1py", input)
    x = input if isinstance(input, _core.Tensor) else full((), input, dtype=_wrapped_dtype(other))
    y = other if isinstance(other, _core.Tensor) else full((), other, dtype=_wrapped_dtype(input))
    x, y = _float(x), _float(y)
    return x * _core.where((x == 0) & ((y <= -1) | y.isinf()), 0.0, y.log1p()) + 0.0


def __getattr__(name):
    if name in _NOT_YET:
        raise NotImplementedError(f"torch.special.{name} is not implemented in ferrograd yet")
    raise AttributeError(f"module 'ferrograd.special' has no attribute '{name}'")

