"""``torch.special``: the special functions under PyTorch's ``special`` names.

The elementwise kernels are the core's (src/kernels/special.rs, src/kernels/math.rs), after
PyTorch's algorithms (Cephes' expansions, SciPy's incomplete gamma). Differentiable as in
PyTorch: ``i0``/``i0e``/``i1``/``i1e``, ``erfcx``, ``log_ndtr``, ``gammainc``/``gammaincc``
(in ``other`` only) and ``zeta`` (in ``other`` only); the Bessel and Airy functions and the
orthogonal polynomials have no derivative, so their results record no graph.
"""

import math

from . import _core
from ._factories import full
from ._functions import _not_a_tensor
from ._math_functions import _float, _wrapped_dtype, logit, mvlgamma, polygamma, sinc, xlogy
from .autograd.function import Function
from .nn.functional import log_softmax as _log_softmax, softmax as _softmax

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
    "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e",
    "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy",
    "zeta",
]

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

# the modified Bessel functions, erfcx, log_ndtr (differentiable)
i0 = _core.special_i0
i0e = _core.special_i0e
i1 = _core.special_i1
i1e = _core.special_i1e
erfcx = _core.special_erfcx
log_ndtr = _core.special_log_ndtr
# no derivative in PyTorch
airy_ai = _core.special_airy_ai
bessel_j0 = _core.special_bessel_j0
bessel_j1 = _core.special_bessel_j1
bessel_y0 = _core.special_bessel_y0
bessel_y1 = _core.special_bessel_y1
modified_bessel_i0 = _core.special_modified_bessel_i0
modified_bessel_i1 = _core.special_modified_bessel_i1
modified_bessel_k0 = _core.special_modified_bessel_k0
modified_bessel_k1 = _core.special_modified_bessel_k1
scaled_modified_bessel_k0 = _core.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _core.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _core.special_spherical_bessel_j0
# (x, n): either may be a number; n is cast to the result's float dtype, then truncated
chebyshev_polynomial_t = _core.special_chebyshev_polynomial_t
chebyshev_polynomial_u = _core.special_chebyshev_polynomial_u
chebyshev_polynomial_v = _core.special_chebyshev_polynomial_v
chebyshev_polynomial_w = _core.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _core.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _core.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _core.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _core.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _core.special_hermite_polynomial_h
hermite_polynomial_he = _core.special_hermite_polynomial_he
laguerre_polynomial_l = _core.special_laguerre_polynomial_l
legendre_polynomial_p = _core.special_legendre_polynomial_p
# (input, other): either may be a number; differentiable in other
zeta = _core.special_zeta


def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


class _Entr(Function):
    """``-x log x`` for x > 0, 0 at 0, -inf for x < 0; gradient ``-(1 + log x)`` everywhere
    (inf at 0, NaN below), as PyTorch's EntrBackward0."""
    _jvp_by_backward = True  # forward-mode AD differentiates backward

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


def _two_tensors(name, input, other):
    for position, (arg, value) in enumerate((("input", input), ("other", other)), start=1):
        if not isinstance(value, _core.Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(input, other) (``torch.igamma``)."""
    _two_tensors("special_gammainc", input, other)
    return _core.igamma(input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(input, other) (``torch.igammac``)."""
    _two_tensors("special_gammaincc", input, other)
    return _core.igammac(input, other)

