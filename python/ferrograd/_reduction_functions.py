"""Reductions and scans: ``var_mean``, ``std_mean``, ``aminmax``, ``nansum``, ``nanmean``,
``cumprod``, ``logcumsumexp``, ``cummax`` / ``cummin``, ``median`` / ``nanmedian``, ``mode``,
``kthvalue`` and ``quantile`` / ``nanquantile``.

Each is one function taking ``input`` first; the Tensor methods of the same names
(``_tensor.py``) are these functions. The scans and order statistics check their arguments
here and run as native ops (``_core._cumprod``, ``_cum_extreme``, ``_kthvalue``, ...: kernels
in src/kernels/scan.rs, ops and backwards in src/ops/reduce.rs):

* ``cumprod``'s gradient is exact with zeros in the input;
* ``cummax`` / ``cummin``, ``median(dim)``, ``mode`` and ``kthvalue`` send the gradient to
  the indices they return (as PyTorch's);
* the whole-tensor ``median`` / ``nanmedian`` spread the gradient evenly over the elements
  equal to the result (PyTorch's ``evenly_distribute_backward``).

The rest are composed of differentiable ops.
"""

from . import _core
from ._core import Tensor
from ._factories import tensor
from ._functions import isnan
from ._op_args import _correction, _dim_list
from ._return_types import (
    aminmax_result,
    cummax_result,
    cummin_result,
    kthvalue_result,
    median_result,
    mode_result,
    nanmedian_result,
)
from ._shape_functions import _check_tensor, _scalar_type_name, _wrap_dim


def _no_out(fname, out):
    if out is not None:
        raise NotImplementedError(f"{fname}(out=...) is not supported by ferrograd")


# --- statistics


def _all_dims(input, dim, keepdim):
    """``dim`` for var/mean: all dims when ``None`` and ``keepdim`` (so the result keeps them)."""
    if dim is None and keepdim:
        return list(range(input.dim()))
    return dim


def _moments(fname, input, dim, unbiased, keepdim, correction, take_sqrt):
    _check_tensor(fname, input)
    if isinstance(dim, bool):  # var_mean(input, unbiased)
        dim, unbiased = None, dim
    dim = _all_dims(input, dim, keepdim)
    dims = _dim_list(dim)
    return input._var_mean(dims, _correction(unbiased, correction), keepdim, take_sqrt)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over ``dim`` (all dims by default): a tuple, from one native pass and
    one node (VarMeanBackward0), as PyTorch's."""
    return _moments("var_mean", input, dim, unbiased, keepdim, correction, False)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over ``dim`` (all dims by default): a tuple (one node,
    StdMeanBackward0)."""
    return _moments("std_mean", input, dim, unbiased, keepdim, correction, True)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (all dims by default), a named tuple; ties share the gradient."""
    _check_tensor("aminmax", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            )
        if keepdim:
            dim = list(range(input.dim()))
    elif input.dim() and input.shape[_wrap_dim(dim, input.dim())] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {_wrap_dim(dim, input.dim())} to have non-zero size.")
    dims = _dim_list(dim)
    return aminmax_result(*input._aminmax(dims, keepdim))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum treating NaN as zero (one native pass, NansumBackward0)."""
    _check_tensor("nansum", input)
    return _core._nansum(input, dim, keepdim, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the non-NaN elements (NaN where there are none)."""
    _check_tensor("nanmean", input)
    _no_out("nanmean", out)
    if not input.is_floating_point():
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got "
            f"{_scalar_type_name(input.dtype)}"
        )
    if dtype is not None:
        input = input.to(dtype)
    count = isnan(input).logical_not().sum(dim, keepdim)
    return _core._nansum(input, dim, keepdim) / count


# --- scans


def _scan_input(fname, input, dim):
    """The wrapped dim of ``input`` for a scan."""
    _check_tensor(fname, input)
    return _wrap_dim(dim, input.dim())


def cumprod(input, dim, *, dtype=None, out=None):
    """The cumulative product along ``dim`` (int64 for integer and bool inputs). Its gradient
    is exact with zeros in the input."""
    _no_out("cumprod", out)
    d = _scan_input("cumprod", input, dim)
    if dtype is not None:
        input = input.to(dtype)
    return _core._cumprod(input, d)


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably."""
    _no_out("logcumsumexp", out)
    d = _scan_input("logcumsumexp", input, dim)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_scalar_type_name(input.dtype)}'")
    return _core._logcumsumexp(input, d)


def cummax(input, dim):
    """(values, indices) of the running maximum along ``dim``: the latest index of the
    maximum (NaN counts as the largest)."""
    return cummax_result(*_core._cum_extreme(input, _scan_input("cummax", input, dim), True))


def cummin(input, dim):
    """(values, indices) of the running minimum along ``dim``: the latest index of the
    minimum (NaN counts as the smallest)."""
    return cummin_result(*_core._cum_extreme(input, _scan_input("cummin", input, dim), False))


# --- order statistics


def _reduced_dim(fname, input, dim):
    """The wrapped dim of ``input`` for a reduction that needs at least one element in it."""
    _check_tensor(fname, input)
    d = _wrap_dim(dim, input.dim())
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"{fname}(): Expected reduction dim {d} to have non-zero size.")
    return d


def median(input, dim=None, keepdim=False):
    """The lower median of all elements (NaN if any is NaN), or (values, indices) of the
    lower median along ``dim``."""
    if dim is None:
        _check_tensor("median", input)
        return _core._median_all(input, False)
    return median_result(*_core._median_dim(input, _reduced_dim("median", input, dim), keepdim, False))


def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaN (NaN only where all are NaN)."""
    if dim is None:
        _check_tensor("nanmedian", input)
        return _core._median_all(input, True)
    return nanmedian_result(*_core._median_dim(input, _reduced_dim("nanmedian", input, dim), keepdim, True))


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the ``k``-th smallest element along ``dim``."""
    _check_tensor("kthvalue", input)
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return kthvalue_result(*_core._kthvalue(input, k, d, keepdim))


def mode(input, dim=-1, keepdim=False):
    """(values, indices) of the most frequent value along ``dim``: the smallest of the most
    frequent ones, at its last index."""
    return mode_result(*_core._mode(input, _reduced_dim("mode", input, dim), keepdim))


# --- quantiles

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _floor(x):
    """``floor(x)``, without a gradient (a step function)."""
    return _core.floor_divide(x.detach(), 1)


def _round_half_even(x):
    r = _floor(x)
    frac = x - r
    odd = _core.remainder(r, 2) == 1
    return r + ((frac > 0.5) | ((frac == 0.5) & odd)).to(x.dtype)


def _lerp(a, b, w):
    """PyTorch's lerp: ``a + w (b - a)`` below w = 0.5, ``b - (b - a)(1 - w)`` from it on."""
    return _core.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _quantile(fname, input, q, dim, keepdim, interpolation, ignore_nan):
    _check_tensor(fname, input)
    if not input.is_floating_point():
        raise RuntimeError(f"{fname}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{fname}() q tensor must be same dtype as the input tensor")
        if not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{fname}() q values must be in the range [0, 1]")
        q_vec, q_scalar = q.reshape(-1), q.dim() == 0
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{fname}() q must be in the range [0, 1] but got {q}")
        q_vec, q_scalar = tensor([q], dtype=input.dtype), True
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{fname}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
            f"{interpolation}"
        )
    if input.numel() == 0:
        raise RuntimeError(f"{fname}() input tensor must be non-empty")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _wrap_dim(dim, input.dim())
        x = input.reshape(1) if input.dim() == 0 else input
    # the sorted rows along the last dim (NaN last), and each row's rank of each q (a function
    # of q: PyTorch's quantile is differentiable in q too, through the interpolation weight)
    s = _core._sort(x, d, False, True)[0].movedim(d, -1)
    n = s.shape[-1]
    nans = isnan(s.detach()).sum(-1, keepdim=True)
    if ignore_nan:
        ranks = q_vec * (n - nans - 1)
        ranks = _core.where(ranks < 0, 0.0, ranks)
    else:
        ranks = _core.where(nans > 0, float(n - 1), q_vec * (n - 1))
    ranks = ranks.expand(list(s.shape[:-1]) + [q_vec.shape[0]])
    if interpolation == "lower":
        ranks = _floor(ranks)
    elif interpolation == "higher":
        ranks = -_floor(-ranks)
    elif interpolation == "nearest":
        ranks = _round_half_even(ranks)
    below = _floor(ranks.detach())
    r = s.gather(-1, below.long())
    if interpolation in ("linear", "midpoint"):
        above = s.gather(-1, (-_floor(-ranks.detach())).long())
        weight = ranks - below if interpolation == "linear" else _core._full(list(ranks.shape), 0.5, ranks.dtype)
        r = _lerp(r, above, weight)
    r = r.movedim(-1, 0)  # the q dim first
    if dim is None:
        r = r.reshape([q_vec.shape[0]] + ([1] * input.dim() if keepdim else []))
    elif keepdim:
        r = r.unsqueeze(d + 1) if input.dim() else r.reshape(q_vec.shape[0])
    return r[0] if q_scalar else r


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor, whose dim comes first in the
    result) of all elements or along ``dim``; NaN where a row has NaN."""
    _no_out("quantile", out)
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN (NaN only where all are NaN)."""
    _no_out("nanquantile", out)
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)
