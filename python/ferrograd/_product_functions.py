"""Products and statistics beyond the core op table: ``addmv``, ``addr``, ``baddbmm``,
``addbmm``, ``inner``, ``vdot``, ``chain_matmul``, ``dist``, ``pdist``, ``cov``, ``corrcoef``,
``trapezoid``, ``histogram``, ``renorm``, the legacy linear-algebra names (``qr``, ``svd``,
``lu``, ...), the ``torch.*`` forms of ``nn.functional`` functions (PyTorch's ATen signatures:
positional ``cudnn_enabled`` flags, ``reduction`` as an int), the global switches scripts set
(``use_deterministic_algorithms``, ``set_float32_matmul_precision``, ``get_rng_state``, ...) and
some Tensor properties (``nbytes``, ``mH``, ``new``, ``apply_``, ...).

Everything is composed of ferrograd's differentiable ops (``mm``, ``bmm``, ``matmul``, ``sum``,
``cumsum``, ``torch.linalg``, ``nn.functional``), so the gradients follow.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).
"""

import numbers
import warnings

from . import _core, linalg
from ._core import Tensor, default_generator
from ._device import device as _device
from ._factories import empty, linspace, tensor, zeros
from ._nondifferentiable import _no_derivative
from ._op_args import _bool
from ._reduction_functions import _no_out
from ._return_types import _return_type
from ._set_functions import bincount, searchsorted
from ._shape_functions import _check_tensor, _scalar_type_name, _wrap_dim
from ._size import Size
from ._tensor import _copy_in
from .autograd.grad_mode import no_grad
from .nn import functional as F
from .nn.functional._utils import _c10_name, _fmt, _int_arg
from .nn.modules.module import _typename

__all__: list[str] = [
    # products
    "addmv", "addr", "baddbmm", "addbmm", "inner", "ger", "vdot", "chain_matmul",
    # distances and statistics
    "dist", "pdist", "cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "msort", "renorm",
    "histogram", "nuclear_norm", "frobenius_norm",
    # legacy linear algebra
    "cholesky", "qr", "svd", "lu", "lu_solve", "orgqr", "ormqr", "geqrf", "matrix_rank", "solve", "lstsq", "eig",
    "symeig",
    # torch.* forms of nn.functional
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool3d", "batch_norm", "bilinear", "binary_cross_entropy_with_logits", "channel_shuffle",
    "native_channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "convolution", "cosine_embedding_loss", "cosine_similarity", "ctc_loss",
    "embedding", "group_norm", "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm",
    "margin_ranking_loss", "pairwise_distance", "poisson_nll_loss", "rms_norm", "triplet_margin_loss",
    # global switches
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "get_rng_state", "set_rng_state",
    "set_default_device", "get_default_device", "set_flush_denormal", "is_warn_always_enabled", "set_warn_always",
    # predicates
    "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_storage", "typename",
]

qr_result = _return_type("qr", ("Q", "R"))
svd_result = _return_type("svd", ("U", "S", "V"))
lu_with_info_result = _return_type("_lu_with_info", ("LU", "pivots", "info"))
histogram_result = _return_type("histogram", ("hist", "bin_edges"))


_warned: set[str] = set()

_DEPRECATED = {  # the TORCH_WARN_ONCE texts of the deprecated names
    "chain_matmul": (
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
        "multiple parameters."
    ),
    "nuclear_norm": (
        "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed "
        "in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead"
    ),
    "frobenius_norm": (
        "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
        "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead"
    ),
    "cholesky": (
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
        "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
        "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
        "This transform will produce equivalent results for all valid (symmetric positive definite) "
        "inputs."
    ),
    "qr": (
        "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
        "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = "
        "torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else "
        "'complete')"
    ),
    "lu": (
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
        "be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be "
        "replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = "
        "torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
        "torch.linalg.lu_factor_ex(A, compute_pivots)"
    ),
    "lu_solve": (
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
        "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
        "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)"
    ),
}


def _warn_once(key):
    """PyTorch's ``TORCH_WARN_ONCE`` of the deprecated ``key``: once per process, unless
    ``set_warn_always(True)``."""
    if key not in _warned or _switches["warn_always"]:
        _warned.add(key)
        warnings.warn(_DEPRECATED[key], UserWarning, stacklevel=3)


def _deprecated_overload(fname, input, extra):
    """The deprecated ``fname(beta, input, [alpha,] ...)`` overloads (a number first, four or
    five positional arguments)."""
    if isinstance(input, numbers.Number) or extra:
        raise NotImplementedError(f"{fname}(beta, input, [alpha,] ...) (the deprecated overload) is not supported "
                                  f"by ferrograd; use {fname}(input, ..., beta=beta, alpha=alpha)")
    _check_tensor(fname, input)


def _scaled_sum(input, prod, beta, alpha, shape):
    """``beta * input + alpha * prod`` with ``input`` broadcast to ``shape`` (PyTorch's expand
    check); ``beta == 0`` ignores ``input`` (its NaN and inf included). Integer tensors take
    the scalars truncated to ints, as PyTorch's kernels do."""
    input = input.expand(shape)
    if not prod.is_floating_point():
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        if input.requires_grad:  # a zero gradient for input, as PyTorch's (not input * 0: NaN)
            return prod + _core.where(tensor(False), input, 0)
        return prod
    return prod + (input if beta == 1 else input * beta)


# --- products


def addmv(input, mat, vec, *deprecated, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    _deprecated_overload("addmv", input, deprecated)
    _no_out("addmv", out)
    if mat.dim() != 2 or vec.dim() != 1 or input.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {max(input.dim(), 1)}, {mat.dim()}, {vec.dim()}")
    n = mat.shape[0]
    size = input.shape[0] if input.dim() == 1 and input.shape[0] != 1 else n
    if mat.shape[1] != vec.shape[0] or size != n:
        raise RuntimeError(f"size mismatch, got input ({size}), mat ({n}x{mat.shape[1]}), vec ({vec.shape[0]})")
    if not input.dtype == mat.dtype == vec.dtype:
        names = ", ".join(_scalar_type_name(t.dtype) for t in (input, mat))
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names}, and "
                           f"{_scalar_type_name(vec.dtype)}")
    return _scaled_sum(input, mat.mv(vec), beta, alpha, (n,))


def addr(input, vec1, vec2, *deprecated, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _deprecated_overload("addr", input, deprecated)
    _no_out("addr", out)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    shape = (vec1.shape[0], vec2.shape[0])
    if input.dtype == vec1.dtype == vec2.dtype == _core.bool:  # logical and / or
        prod = vec1.unsqueeze(1).logical_and(vec2.unsqueeze(0)) if alpha else zeros(shape, dtype=_core.bool)
        return prod.logical_or(input.expand(shape)) if beta else prod
    if _core.bool in (input.dtype, vec1.dtype, vec2.dtype):
        raise NotImplementedError("addr of bool and non-bool tensors together is not supported by ferrograd")
    if not input.is_floating_point():
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    return _scaled_sum(input, vec1.outer(vec2), beta, alpha, shape)


def _check_batches(batch1, batch2):
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")


def baddbmm(input, batch1, batch2, *deprecated, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    _deprecated_overload("baddbmm", input, deprecated)
    _no_out("baddbmm", out)
    _check_batches(batch1, batch2)
    if not input.dtype == batch1.dtype == batch2.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_c10_name(input.dtype)}, batch1: "
                           f"{_c10_name(batch1.dtype)}, batch2: {_c10_name(batch2.dtype)}")
    prod = batch1.bmm(batch2)
    return _scaled_sum(input, prod, beta, alpha, tuple(prod.shape))


def addbmm(input, batch1, batch2, *deprecated, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _deprecated_overload("addbmm", input, deprecated)
    _no_out("addbmm", out)
    _check_batches(batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    for a, b in ((batch1, batch2), (input, batch2), (input, batch1)):
        if a.dtype != b.dtype:
            first = "mat1" if a is batch1 else "self"
            raise RuntimeError(f"{first} and mat2 must have the same dtype, but got {_scalar_type_name(a.dtype)} "
                               f"and {_scalar_type_name(b.dtype)}")
    prod = batch1.bmm(batch2).sum(0)
    return _scaled_sum(input, prod, beta, alpha, tuple(prod.shape))


def inner(input, other, *, out=None):
    """The sums of products over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``."""
    _check_tensor("inner", input)
    _check_tensor("inner", other, "other", 2)
    _no_out("inner", out)
    if input.dtype != other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    n = input.shape[-1]
    if other.shape[-1] != n:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{_fmt(input.shape)} and {_fmt(other.shape)}")
    if other.dim() == 1:
        return input.matmul(other)
    prod = input.matmul(other.reshape(-1, n).t())
    return prod.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def ger(input, vec2, *, out=None):
    """``outer`` under its old name."""
    _check_tensor("ger", input)
    _no_out("ger", out)
    return input.outer(vec2)


def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors (no conjugation: ferrograd has no complex dtypes)."""
    _check_tensor("vdot", input)
    _check_tensor("vdot", other, "other", 2)
    _no_out("vdot", out)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.dtype != other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_scalar_type_name(input.dtype)} and {_scalar_type_name(other.dtype)}")
    if input.shape[0] != other.shape[0]:
        n, m = input.shape[0], other.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    return input.dot(other)


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices (deprecated for ``linalg.multi_dot``)."""
    _warn_once("chain_matmul")
    _no_out("chain_matmul", out)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return linalg.multi_dot(list(matrices))


# --- distances and statistics


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast)."""
    _check_tensor("dist", input)
    _check_tensor("dist", other, "other", 2)
    for t in (input, other):
        if not t.is_floating_point():
            raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                               f"{_scalar_type_name(t.dtype)} instead.")
    return linalg.vector_norm(input - other, p)


def pdist(input, p=2):
    """``nn.functional.pdist``."""
    _check_tensor("pdist", input)
    return F.pdist(input, p)


def _check_weights(name, w, n, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.dim()} "
                           "dimensions")
    if integral == w.is_floating_point() or w.dtype == _core.bool:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_scalar_type_name(w.dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if n and bool(w.min() < 0):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _cov(fname, input, correction=1, fweights=None, aweights=None):
    _check_tensor(fname, input)
    if input.dim() > 2:
        raise RuntimeError(f"{fname}(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype == _core.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = n
        avg = x.sum(1) / n
    else:
        w_sum = w.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=3)
        norm_factor = norm_factor * 0
    xc = x - avg.unsqueeze(1)
    c = xc.mm((xc if w is None else xc * w).t())
    return (c / norm_factor).squeeze()


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in its
    columns), with frequency (``fweights``) and observation (``aweights``) weights."""
    return _cov("cov", input, correction, fweights, aweights)


def corrcoef(input):
    """Pearson's correlation coefficients of the rows of ``input``, clipped to [-1, 1]."""
    c = _cov("corrcoef", input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1)


def _trapezoid_dx(fname, y, x, dim):
    """The spacings ``x[1:] - x[:-1]`` along ``dim``, shaped to broadcast against ``y``'s."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.reshape(shape)
    elif x.dim() < y.dim():
        x = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    return x.narrow(dim, 1, x.shape[dim] - 1) - x.narrow(dim, 0, x.shape[dim] - 1)


def _trapezoid_args(fname, y, x, dx, dim):
    _check_tensor(fname, y, "y")
    if y.dtype == _core.bool or (x is not None and x.dtype == _core.bool):
        raise RuntimeError(f"{fname}: received a bool input for `y`, but bool is not supported")
    if x is not None and dx is not None:
        raise TypeError(f"{fname}() received an invalid combination of arguments - got both x and dx")
    if dx is not None and (isinstance(dx, bool) or not isinstance(dx, numbers.Real)):
        raise RuntimeError(f"{fname}: Currently, we only support dx as a real number.")
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, y.dim())


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: sample points ``x`` (a tensor) or a constant spacing
    ``dx`` (default 1)."""
    dim = _trapezoid_args("trapezoid", y, x, dx, dim)
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim) * 0.0
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is not None:
        return ((left + right) * _trapezoid_dx("trapezoid", y, x, dim)).sum(dim) / 2.0
    step = 1 if dx is None else dx
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * step


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` under its old name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along ``dim`` (one value fewer than ``y`` has)."""
    _check_tensor("cumulative_trapezoid", y, "y")
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    n = y.shape[dim]
    left, right = y.narrow(dim, 0, max(n - 1, 0)), y.narrow(dim, min(1, n), max(n - 1, 0))
    if x is not None:
        return ((left + right) * _trapezoid_dx("cumulative_trapezoid", y, x, dim)).cumsum(dim) / 2.0
    step = 1 if dx is None else dx
    return ((left + right) * (step / 2.0)).cumsum(dim)


def msort(input, *, out=None):
    """``input`` sorted along dim 0."""
    _check_tensor("msort", input)
    _no_out("msort", out)
    return input.sort(0).values


def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled down to
    norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``); the other slices unchanged."""
    _check_tensor("renorm", input)
    _no_out("renorm", out)
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    dim = _wrap_dim(dim, input.dim())
    norm = linalg.vector_norm(input, p, [d for d in range(input.dim()) if d != dim], keepdim=True)
    return input * _core.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


_histogram_node = _no_derivative("NotImplemented", RuntimeError, "derivative for aten::histogram is not implemented")


def _histogram_edges(input, bins, range):  # noqa: A002  (torch's argument name)
    if isinstance(bins, Tensor):
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {bins.dim()} "
                               "dimensions in the bins tensor for dimension 0")
        if bins.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_c10_name(input.dtype)} and bins for dimension 0 with dtype "
                               f"{_c10_name(bins.dtype)}")
        if bins.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins.numel() - 1} for dimension 0")
        return bins.detach().clone()
    bins = _int_arg(bins, "histogram", "bins", 2)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None:
        lo, hi = (float(v) for v in range)
    elif input.numel():
        lo, hi = float(input.min()), float(input.max())
    else:
        lo, hi = 0.0, 1.0
    if any(v != v or abs(v) == float("inf") for v in (lo, hi)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                           "dimension 0")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return linspace(lo, hi, bins + 1, dtype=input.dtype)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """``(hist, bin_edges)``: the (weighted) counts of ``input``'s elements in the bins given by
    the edges ``bins`` (a tensor) or by ``bins`` equal bins over ``range`` (the data's range by
    default); a bin holds its left edge, the last one also its right edge; values outside are
    ignored. ``density`` normalises the histogram to integrate to 1."""
    _check_tensor("histogram", input)
    _no_out("histogram", out)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_scalar_type_name(input.dtype)}'")
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range is not supported with a tensor of bins")
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{_fmt(tuple(input.reshape(-1, 1).shape))} and weight with shape {_fmt(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({_c10_name(input.dtype)}), and "
                               f"weight({_c10_name(weight.dtype)})")
    edges = _histogram_edges(input, bins, range)
    nbins = edges.shape[0] - 1
    x = input.detach().reshape(-1)
    index = searchsorted(edges, x, right=True) - 1
    index = _core.where(x == edges[-1], nbins - 1, index)  # the last bin holds its right edge
    inside = (index >= 0) & (index < nbins) & (x <= edges[-1])
    w = None if weight is None else weight.detach().reshape(-1)[inside]
    hist = bincount(index[inside], w, nbins).to(input.dtype)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(_histogram_node(hist, input, weight, bins), edges)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The nuclear norm of the matrices over ``dim`` (deprecated for ``linalg.matrix_norm``)."""
    _check_tensor("nuclear_norm", input)
    _no_out("nuclear_norm", out)
    _warn_once("nuclear_norm")
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if isinstance(dim, int):  # one int stands for both dims (ATen's int[2])
        dim = (dim, dim)
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm over ``dim`` (at most 2 dims; deprecated for ``linalg.vector_norm``)."""
    _check_tensor("frobenius_norm", input)
    _no_out("frobenius_norm", out)
    _warn_once("frobenius_norm")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    if not input.is_floating_point():
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_scalar_type_name(input.dtype)} instead.")
    return linalg.vector_norm(input, 2, dims or None, keepdim)


# --- legacy linear algebra: torch.linalg under the old names and argument orders


def cholesky(input, upper=False, *, out=None):
    _check_tensor("cholesky", input)
    _no_out("cholesky", out)
    _warn_once("cholesky")
    return linalg.cholesky(input, upper=upper)


def qr(input, some=True, *, out=None):
    _check_tensor("qr", input)
    _no_out("qr", out)
    _warn_once("qr")
    return qr_result(*linalg.qr(input, "reduced" if some else "complete"))


def svd(input, some=True, compute_uv=True, *, out=None):
    """``(U, S, V)`` with ``input = U diag(S) V^T`` (V, not V^T); ``compute_uv=False`` gives
    zero-filled U (m x m) and V (n x n)."""
    _check_tensor("svd", input)
    _no_out("svd", out)
    if compute_uv:
        U, S, Vh = linalg.svd(input, full_matrices=not some)
        return svd_result(U, S, Vh.mT)
    S = linalg.svdvals(input)
    batch, (m, n) = tuple(input.shape[:-2]), tuple(input.shape[-2:])
    return svd_result(zeros(batch + (m, m), dtype=input.dtype), S, zeros(batch + (n, n), dtype=input.dtype))


def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` of ``linalg.lu_factor`` (with ``get_infos``: ``(LU, pivots, info)``,
    without the error on singular matrices)."""
    _check_tensor("lu", A, "A")
    _no_out("lu", out)
    _warn_once("lu")
    LU, pivots, info = linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)


def lu_solve(input, LU_data, LU_pivots, *, out=None):  # noqa: N803  (torch's argument names)
    _check_tensor("lu_solve", input)
    _no_out("lu_solve", out)
    _warn_once("lu_solve")
    return linalg.lu_solve(LU_data, LU_pivots, input)


def orgqr(input, input2):
    """``linalg.householder_product``."""
    return linalg.householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """``Q @ input3`` (or ``input3 @ Q``, with ``Q^T`` if ``transpose``) for the full m x m
    ``Q`` of the Householder reflectors in ``input`` and ``input2`` (tau)."""
    _check_tensor("ormqr", input)
    _no_out("ormqr", out)
    m, k = input.shape[-2], input.shape[-1]
    if m > k:  # reflectors with tau = 0 are identities: pad Q's generator to m x m
        pad = zeros(tuple(input.shape[:-1]) + (m - k,), dtype=input.dtype)
        input = _core.cat([input, pad], -1)
    q = linalg.householder_product(input, input2)
    if transpose:
        q = q.mT
    return q.matmul(input3) if left else input3.matmul(q)


def geqrf(input, *, out=None):
    raise NotImplementedError("geqrf (LAPACK's packed QR) is not supported by ferrograd; use torch.linalg.qr")


_REMOVED = {
    "matrix_rank": "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
    "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
    "`torch.linalg.matrix_rank()` to 'hermitian'.",
    "solve": "This function was deprecated since version 1.9 and is now removed. `torch.solve` is deprecated in favor "
    "of `torch.linalg.solve`. `torch.linalg.solve` has its arguments reversed and does not return the LU "
    "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
    "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)",
    "lstsq": "This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in favor "
    "of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
    "in the returned tuple (although it returns other information about the problem).\n\nTo get the QR decomposition "
    "consider using `torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution "
    "in the last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the "
    "field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A)"
    ".solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "eig": "This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns complex "
    "tensors of dtype `cfloat` or `cdouble` rather than real tensors mimicking complex tensors.\n\nL, _ = "
    "torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, "
    "eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)",
    "symeig": "This function was deprecated since version 1.9 and is now removed. The default behavior has changed "
    "from using the upper triangular portion of the matrix by default to using the lower triangular portion.\n\nL, _ "
    "= torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else "
    "'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, "
    "UPLO='U' if upper else 'L')",
}


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(_REMOVED["matrix_rank"])


def solve(input, A, *, out=None):  # noqa: N803  (torch's argument name)
    raise RuntimeError(_REMOVED["solve"])


def lstsq(input, A, *, out=None):  # noqa: N803
    raise RuntimeError(_REMOVED["lstsq"])


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(_REMOVED["eig"])


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(_REMOVED["symeig"])


# --- torch.* forms of nn.functional (ATen's signatures: reduction as an int, cudnn flags)


def _reduction(fname, reduction, pos):
    """An ATen loss's int ``reduction`` as F's string: 1 mean, 2 sum, anything else none. (The
    default is 0, none: PyTorch's Python binding of these ATen functions cannot parse their
    declared default ``at::Reduction::Mean`` and passes 0.)"""
    reduction = _int_arg(reduction, fname, "reduction", pos)
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _stride(stride):
    """ATen's pooling ``stride=()`` (the kernel size) as F's ``None``."""
    return None if isinstance(stride, (tuple, list)) and not stride else stride


def adaptive_avg_pool1d(input, output_size):
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """ATen's ``batch_norm`` (no Python-level checks: a batch of one trains as PyTorch's does)."""
    _check_tensor("batch_norm", input)
    return _core.batch_norm(input, weight, bias, running_mean, running_var, bool(training), float(momentum),
                            float(eps))


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    red = _reduction("binary_cross_entropy_with_logits", reduction, 5)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=red, pos_weight=pos_weight)


def channel_shuffle(input, groups):
    return F.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    return F.native_channel_shuffle(input, groups)


def pixel_shuffle(input, upscale_factor):
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return F.pixel_unshuffle(input, downscale_factor)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


_CONV = {1: (F.conv1d, F.conv_transpose1d), 2: (F.conv2d, F.conv_transpose2d), 3: (F.conv3d, F.conv_transpose3d)}


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution (or transposed convolution) of as many spatial dims as ``weight`` has."""
    _check_tensor("convolution", input)
    n = weight.dim() - 2
    if n not in _CONV:
        raise NotImplementedError(f"convolution with a {weight.dim()}-d weight is not supported by ferrograd")
    conv, conv_t = _CONV[n]
    if transposed:
        return conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return conv(input, weight, bias, stride, padding, dilation, groups)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    red = _reduction("cosine_embedding_loss", reduction, 5)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return F.cosine_similarity(x1, x2, dim, eps)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    red = _reduction("ctc_loss", reduction, 6)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, red, zero_infinity)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """ATen's ``embedding(weight, indices, ...)``: a negative ``padding_idx`` means none."""
    _check_tensor("embedding", weight, "weight")
    padding_idx = _int_arg(padding_idx, "embedding", "padding_idx", 3)
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    red = _reduction("hinge_embedding_loss", reduction, 4)
    return F.hinge_embedding_loss(input, target, margin, reduction=red)


def kl_div(input, target, reduction=0, *, log_target=False):
    """ATen's ``kl_div``: ``reduction`` 1 is the plain mean over all elements (no warning)."""
    red = _reduction("kl_div", reduction, 3)
    loss = F.kl_div(input, target, reduction="none" if red == "mean" else red, log_target=log_target)
    return loss.mean() if red == "mean" else loss


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    red = _reduction("margin_ranking_loss", reduction, 5)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=red)


def pairwise_distance(x1, x2, p=2, eps=1e-6, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    red = _reduction("poisson_nll_loss", reduction, 6)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0):
    red = _reduction("triplet_margin_loss", reduction, 8)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


# --- global switches (ferrograd's kernels are deterministic and compute matmuls in full precision)

_switches = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "warn_always": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded only: ferrograd's CPU kernels are deterministic."""
    _bool("_set_deterministic_algorithms", "mode", mode, 1)
    _bool("_set_deterministic_algorithms", "warn_only", warn_only, None)
    _switches["deterministic"], _switches["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _switches["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _switches["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2: ``use_deterministic_algorithms`` off, on
    with ``warn_only``, or on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _switches["deterministic"]:
        return 0
    return 1 if _switches["warn_only"] else 2


def set_float32_matmul_precision(precision):
    """Recorded only: ferrograd's float32 matmuls are always computed in float32 ("highest")."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _switches["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _switches["matmul_precision"]


def get_rng_state():
    """The default generator's state: ferrograd's generator keeps it in an int64 tensor of 5
    words (PyTorch's Mersenne twister, in a uint8 tensor of 5056 bytes)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores a state that ``get_rng_state`` returned."""
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
    default_generator.set_state(new_state)


def set_default_device(device):
    """Only the CPU (or None) is accepted: ferrograd runs on the CPU only."""
    if device is not None:
        _device(device)


def get_default_device():
    return _device("cpu")


def set_flush_denormal(mode):
    """False: ferrograd cannot switch its kernels to flush denormals (PyTorch's answer on CPUs
    without the switch)."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def is_warn_always_enabled():
    return _switches["warn_always"]


def set_warn_always(b):
    """Recorded only (PyTorch's warnings raised from C++ once per process)."""
    _switches["warn_always"] = bool(b)


# --- predicates


def is_nonzero(input):
    """Whether the single value of ``input`` is non-zero."""
    _check_tensor("is_nonzero", input)
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other):
    _check_tensor("is_same_size", input)
    _check_tensor("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    _check_tensor("is_signed", input)
    return input.dtype.is_signed


def is_inference(input):
    """False: ferrograd's ``inference_mode`` makes ordinary tensors (it is ``no_grad``)."""
    _check_tensor("is_inference", input)
    return False


def is_storage(obj):
    """False: ferrograd has no storage objects."""
    return False


def typename(obj, /):
    """``obj.type()`` for a tensor, else the qualified name of ``obj`` (or of its type)."""
    return _typename(obj)


# --- per-element Python callables (apply_, map_, map2_)


def _check_no_grad(fname, *tensors):
    if any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Can't call {fname}() on Variable that requires grad. Use var.detach().{fname}() instead.")


def _check_same_type(fname, self, name, other, argument):
    if other.dtype != self.dtype:
        what = f"argument '{name}'" if argument else f"'{name}'"
        raise TypeError(f"{fname}: expected {self.type()} for {what} (got {other.type()})")


def _converter(dtype):
    """The Python value of a callable's result as a ``dtype`` element (PyTorch's conversion:
    a real number, truncated for integer dtypes)."""
    kind = bool if dtype == _core.bool else (float if dtype.is_floating_point else int)

    def convert(v):
        if not isinstance(v, numbers.Real):
            raise TypeError(f"must be real number, not {type(v).__name__}")
        return kind(v)

    return convert


def _map_into(self, fn, *others):
    """``self`` set in place to ``fn(self[i], *(o[i] for o in others))`` elementwise (the others
    broadcast to ``self``'s shape)."""
    shape = tuple(self.shape)
    columns = [t.expand(shape).reshape(-1).tolist() for t in (self, *others)]
    convert = _converter(self.dtype)
    values = [convert(fn(*args)) for args in zip(*columns)]
    with no_grad():
        self.copy_(tensor(values, dtype=self.dtype).reshape(shape))
    return self


# --- Tensor methods


def _adjoint_check(self, what):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.{what} is only supported on matrices or batches of matrices. Got {self.dim()}-D "
                           "tensor.")


class TensorMethods:
    """The Tensor methods of this module's functions."""

    addmv = addmv
    addr = addr
    baddbmm = baddbmm
    addbmm = addbmm

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        return _copy_in(self, addmv, mat, vec, beta=beta, alpha=alpha)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        return _copy_in(self, addr, vec1, vec2, beta=beta, alpha=alpha)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return _copy_in(self, baddbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return _copy_in(self, addbmm, batch1, batch2, beta=beta, alpha=alpha)

    inner = inner
    ger = ger
    vdot = vdot
    dist = dist
    msort = msort
    renorm = renorm

    def renorm_(self, p, dim, maxnorm):
        return _copy_in(self, renorm, p, dim, maxnorm)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return cov(self, correction=correction, fweights=fweights, aweights=aweights)

    corrcoef = corrcoef
    histogram = histogram
    cholesky = cholesky
    qr = qr
    svd = svd
    lu = lu
    lu_solve = lu_solve
    orgqr = orgqr
    ormqr = ormqr
    geqrf = geqrf
    solve = solve
    lstsq = lstsq
    eig = eig
    symeig = symeig

    # --- predicates and properties

    is_nonzero = is_nonzero
    is_same_size = is_same_size
    is_signed = is_signed
    is_inference = is_inference

    def is_pinned(self, device=None):
        return False

    def is_shared(self):
        return False

    def share_memory_(self):
        """A no-op returning ``self`` (ferrograd has no shared-memory storages)."""
        return self

    def pin_memory(self, device=None):
        """``self``: pinning is a no-op on a CPU-only library (PyTorch's CPU build raises; scripts
        that pin their batches run unchanged here)."""
        return self

    def record_stream(self, stream):
        raise RuntimeError("unknown parameter type")

    def untyped_storage(self):
        raise NotImplementedError("Tensor.untyped_storage() is not supported by ferrograd (tensors have no storage "
                                  "objects)")

    def storage(self):
        raise NotImplementedError("Tensor.storage() is not supported by ferrograd (tensors have no storage objects)")

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def ndimension(self):
        return self.dim()

    def get_device(self):
        return -1

    @property
    def H(self):  # noqa: N802  (torch's name)
        if self.dim() == 0:
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
            return self.view_as(self)
        if self.dim() != 2:
            extra = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                               + extra)
        return self.t()

    @property
    def mH(self):  # noqa: N802
        _adjoint_check(self, "mH")
        return self.transpose(-2, -1)

    def adjoint(self):
        _adjoint_check(self, "adjoint()")
        return self.transpose(-2, -1)

    def new(self, *args, device=None):
        """The legacy constructor: ``new()`` (empty), ``new(*sizes)`` / ``new(torch.Size)``
        (uninitialized), ``new(sequence)`` (data) or ``new(tensor)``, in ``self``'s dtype."""
        if device is not None:
            _device(device)
        if not args:
            return empty(0, dtype=self.dtype)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != self.dtype:
                raise TypeError(f"expected {self.type()} (got {args[0].type()})")
            return args[0].detach()
        if len(args) == 1 and isinstance(args[0], Size):
            return empty(*args[0], dtype=self.dtype)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return empty(*args, dtype=self.dtype)
        if len(args) == 1:
            if not isinstance(args[0], (list, tuple)) and not hasattr(args[0], "__array__"):
                raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
            return tensor(args[0], dtype=self.dtype)
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({got})")

    def apply_(self, callable):  # noqa: A002  (torch's argument name)
        """``self`` with ``callable`` applied to each element, in place (a Python call per
        element)."""
        _check_no_grad("apply_", self)
        return _map_into(self, callable)

    def map_(self, tensor, callable):  # noqa: A002
        """``self[i] = callable(self[i], tensor[i])`` in place (``tensor`` broadcast to ``self``)."""
        _check_no_grad("map_", self, tensor)
        _check_same_type("map_", self, "other", tensor, False)
        return _map_into(self, callable, tensor)

    def map2_(self, x, y, callable):  # noqa: A002
        """``self[i] = callable(self[i], x[i], y[i])`` in place."""
        _check_no_grad("map2_", self, x, y)
        _check_same_type("map2_", self, "x", x, True)
        _check_same_type("map2_", self, "y", y, True)
        return _map_into(self, callable, x, y)

