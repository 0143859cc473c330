"""Sets, counts and bins: ``unique``, ``unique_consecutive``, ``bincount``, ``histc``,
``searchsorted`` and ``bucketize``. ``unique`` is composed of sorting, comparisons,
``cumsum`` and ``scatter_add``; the others, and ``unique(dim=)`` (a sort of the slices as
rows), are native kernels (src/kernels/counts.rs) behind these argument checks.

None of them is differentiable in PyTorch. Where PyTorch still records a node whose backward
raises (``unique``, ``bincount`` with weights), so does ferrograd (``_no_derivative``).
"""

from . import _core
from ._core import Tensor, int64
from ._nondifferentiable import _no_derivative
from ._shape_functions import _check_tensor, _scalar_type_name, _wrap_dim

_unique_node = _no_derivative("Unique2Backward0", NotImplementedError,
                              "the derivative for '_unique2' is not implemented.")
_unique_consecutive_node = _no_derivative("UniqueConsecutiveBackward0", NotImplementedError,
                                          "the derivative for 'unique_consecutive' is not implemented.")
_unique_dim_node = _no_derivative("UniqueDimBackward0", NotImplementedError,
                                  "the derivative for 'unique_dim' is not implemented.")
_bincount_node = _no_derivative("NotImplemented", RuntimeError, "derivative for aten::bincount is not implemented")


def _full(shape, value, dtype):
    return _core._full(list(shape), value, dtype)


def _runs(flat):
    """For a 1-D tensor: a bool mask of the positions starting a run of equal values (NaN
    equals nothing), and each position's run number."""
    n = flat.numel()
    starts = _core.cat([_full([min(n, 1)], True, _core.bool), flat[1:] != flat[:-1]])
    return starts, starts.long().cumsum(0) - 1


def _set_result(values, inverse, counts, return_inverse, return_counts):
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out if len(out) > 1 else values


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002  (torch's names)
    """The distinct elements of ``input``, sorted (also with ``sorted=False``); with
    ``return_inverse`` each element's position among them (in ``input``'s shape), with
    ``return_counts`` how often each occurs. NaNs are all distinct."""
    _check_tensor("unique", input)
    if dim is not None:
        return _unique_slices(input, dim, return_inverse, return_counts, consecutive=False)
    flat = input.detach().reshape(-1)
    s, order = _core._sort(flat, 0, False, True)
    starts, run = _runs(s)
    values = s[starts]
    inverse = _full([flat.numel()], 0, int64).scatter(0, order, run).reshape(input.shape)
    counts = _full([values.numel()], 0, int64).scatter_add(0, run, _full(run.shape, 1, int64))
    return _set_result(_unique_node(values, input), inverse, counts, return_inverse, return_counts)


def _unique_slices(input, dim, return_inverse, return_counts, consecutive):
    """``unique`` / ``unique_consecutive`` with ``dim``: the distinct slices ``input.select(dim, i)``
    (sorted lexicographically, or the first of each run of equal ones), each slice's position
    among them and their counts."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = _wrap_dim(dim, input.dim())
    shape = list(input.shape)
    if any(n == 0 for d, n in enumerate(shape) if d != dim):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    x = input.detach()
    rows = x.movedim(dim, 0).reshape(shape[dim], x.numel() // max(shape[dim], 1))
    firsts, inverse, counts = _core._unique_dim(rows, consecutive)
    node = _unique_consecutive_node if consecutive else _unique_dim_node
    values = node(x.index_select(dim, firsts), input)
    return _set_result(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` without the repeats of consecutive equal elements (flattened); with
    ``return_inverse`` each element's position among them, with ``return_counts`` the lengths
    of the runs."""
    _check_tensor("unique_consecutive", input)
    if dim is not None:
        return _unique_slices(input, dim, return_inverse, return_counts, consecutive=True)
    values, inverse, counts = _core._unique_consecutive(input.detach(), bool(return_inverse), bool(return_counts))
    values = _unique_consecutive_node(values, input)
    return _set_result(values, inverse, counts, return_inverse, return_counts)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D int64 ``input`` (at least
    ``minlength`` of them), or the sums of ``weights`` at each value (float64 for integer
    and bool weights)."""
    _check_tensor("bincount", input)
    if input.dtype != int64:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_scalar_type_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # native: the negative-value check, the bins and the (per-thread) counting in one go
    counts = _core._bincount(input.detach(), None if weights is None else weights.detach(), minlength)
    return counts if weights is None else _bincount_node(counts, weights)


def _fmt(v):
    """A number as PyTorch's messages print it (C++ stream formatting)."""
    return f"{v:g}"


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002  (torch's argument names)
    """The histogram of ``input`` with ``bins`` equal bins over [``min``, ``max``] (the data's
    range when they are equal); elements outside are ignored, ``max`` falls in the last bin."""
    _check_tensor("histc", input)
    if out is not None:
        raise NotImplementedError("histc(out=...) is not supported by ferrograd")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_scalar_type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input.detach().reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if any(v != v or abs(v) == float("inf") for v in (lo, hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    # native: the edges in the input's dtype, PyTorch's truncated linear bin position
    # (x - min) * bins / (max - min) in that dtype, per-thread counts
    return _core._histc(x, bins, lo, hi)


def _side(right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
            )
        return side == "right"
    return bool(right)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """The indices at which the values ``input`` (a tensor or a number) would be inserted into
    the rows of ``sorted_sequence`` (sorted along its last dim, or by ``sorter``) to keep them
    sorted: before equal elements, or after them with ``right=True`` / ``side="right"``."""
    _check_tensor("searchsorted", sorted_sequence, "sorted_sequence")
    if out is not None:
        raise NotImplementedError("searchsorted(out=...) is not supported by ferrograd")
    return _search(sorted_sequence, input, _side(right, side), sorter, out_int32)


def _search(seq, input, right, sorter, out_int32):
    """``searchsorted`` after its callers' own checks: the shape and sorter checks, both sides
    in their promoted dtype (as PyTorch compares them), then the native binary searches."""
    dtype = _core.result_type(seq, input)
    if isinstance(input, Tensor):
        values = input if input.dtype == dtype else input.to(dtype)
    else:
        values = _core._full([], input, dtype)
    if seq.dim() == 0:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    if seq.dim() > 1 and (values.dim() != seq.dim() or values.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    if sorter is not None:
        if sorter.dtype != int64:
            raise RuntimeError(
                f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                f"{_scalar_type_name(sorter.dtype)}"
            )
        if sorter.shape != seq.shape:
            raise RuntimeError(
                f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                f"{list(seq.shape)}and got sorter tensor {list(sorter.shape)}"
            )
        # its range is checked natively
    if seq.dtype != dtype:
        seq = seq.to(dtype)
    return _core._searchsorted(seq, values, right, sorter, bool(out_int32))


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value of ``input`` (a tensor or a number) among the 1-D sorted
    ``boundaries``: ``searchsorted(boundaries, input, right=right)``."""
    _check_tensor("bucketize", boundaries, "boundaries", 2)
    if out is not None:
        raise NotImplementedError("bucketize(out=...) is not supported by ferrograd")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return _search(boundaries, input, bool(right), None, out_int32)
