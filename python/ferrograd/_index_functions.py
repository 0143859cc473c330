"""Indexing torch functions: ``masked_select``, ``take``, ``take_along_dim``, ``index_fill``,
``masked_scatter``, ``scatter_reduce``, ``index_put``, ``nonzero`` and ``argwhere``.

Each is one function taking ``input`` first; the Tensor methods of the same names
(``_tensor.py``) are these functions, and the in-place methods (``index_fill_``, ...) copy the
out-of-place result into the tensor. The gradients follow from the ops they are composed of
(advanced indexing, ``gather``), or are native ops (``index_put``, ``index_fill``,
``masked_scatter``, ``masked_select``), except ``scatter_reduce``, whose forward is native and
whose backward is PyTorch's formula (``_ScatterReduce``).
"""

from . import _core
from ._core import Tensor, int64
from ._nondifferentiable import _no_derivative
from ._shape_functions import _check_tensor, _scalar_type_name, _wrap_dim
from .autograd.function import Function


def _full(shape, value, dtype):
    return _core._full(list(shape), value, dtype)


def _broadcast_shape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return out


# --- selecting


def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` (a bool tensor; both broadcast) is true, as a
    1-D tensor."""
    _check_tensor("masked_select", input)
    _check_tensor("masked_select", mask, "mask", 2)
    if mask.dtype != _core.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    _broadcast_shape(input.shape, mask.shape)  # PyTorch's error for shapes that do not broadcast
    return _core._masked_select(input, mask)


def take(input, index):
    """The elements of the flattened ``input`` at ``index`` (any shape; negative counts from
    the end), in ``index``'s shape."""
    _check_tensor("take", input)
    _check_tensor("take", index, "index", 2)
    return _core._take(input, index)


def take_along_dim(input, indices, dim=None):
    """``gather`` along ``dim`` with ``input`` and ``indices`` broadcast over the other dims;
    without ``dim``, of the flattened tensors."""
    _check_tensor("take_along_dim", input)
    _check_tensor("take_along_dim", indices, "indices", 2)
    if indices.dtype != int64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {_scalar_type_name(indices.dtype)}"
        )
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input.dim() != indices.dim():
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{input.dim()} dimensions for input, and {indices.dim()} dimensions for indices"
        )
    d = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return input.reshape(1).gather(0, indices.reshape(1)).reshape(())
    shape = _broadcast_shape([1 if k == d else s for k, s in enumerate(input.shape)],
                             [1 if k == d else s for k, s in enumerate(indices.shape)])
    x = input.expand([input.shape[d] if k == d else s for k, s in enumerate(shape)])
    i = indices.expand([indices.shape[d] if k == d else s for k, s in enumerate(shape)])
    return x.gather(d, i)


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the non-zero elements of ``input``, row-major: an (N, ndim) int64 tensor,
    or with ``as_tuple`` one 1-D tensor per dim."""
    _check_tensor("nonzero", input)
    if out is not None:
        raise NotImplementedError("nonzero(out=...) is not supported by ferrograd")
    if input.dim() == 0:
        flat = _core._nonzero(input.detach().reshape(1), True)[0]
        return (flat,) if as_tuple else _full([flat.numel(), 0], 0, int64)
    # native: a parallel count pass, then each block writes its coordinates at its offset
    found = _core._nonzero(input.detach(), as_tuple)
    return tuple(found) if as_tuple else found[0]


def argwhere(input):
    """``nonzero(input)``: the (N, ndim) indices of the non-zero elements."""
    _check_tensor("argwhere", input)
    return nonzero(input)


# --- writing


def index_fill(input, dim, index, value):
    """``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number or a 0-d
    tensor, which then gets the gradient of the filled elements)."""
    _check_tensor("index_fill", input)
    _check_tensor("index_fill", index, "index", 3)
    return _core._index_fill(input, dim, index, value, False)


def masked_scatter(input, mask, source):
    """``input`` (broadcast with ``mask``) with its elements where ``mask`` is true replaced,
    in order, by the first elements of ``source``."""
    _check_tensor("masked_scatter", input)
    _check_tensor("masked_scatter", mask, "mask", 2)
    _check_tensor("masked_scatter", source, "source", 3)
    return _core._masked_scatter(input, mask, source, False)


def _index_list(indices):
    """The index tensors of ``index_put`` as int64 tensors, a bool mask as its nonzero
    columns (one per dim it covers)."""
    out = []
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        if t.dtype == _core.bool:
            out += list(nonzero(t, as_tuple=True))
        elif t.dtype == int64:
            out.append(t)
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return out


def index_put(input, indices, values, accumulate=False):
    """``input`` with ``input[indices] = values`` (``+=`` with ``accumulate``, which sums
    repeated indices), out of place."""
    _check_tensor("index_put", input)
    idx = _index_list(indices)
    if len(idx) > input.dim():
        raise IndexError(f"too many indices for tensor of dimension {input.dim()}")
    if values.dtype != input.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{_scalar_type_name(input.dtype)} for the destination and {_scalar_type_name(values.dtype)} for the "
            f"source."
        )
    return _core._index_put(input, idx, values, accumulate)


# --- scatter with reductions


_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_ALIASES = {"max": "amax", "min": "amin"}

_double_backward_error = _no_derivative(
    "DelayedError", RuntimeError,
    "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same "
    "position in self",
)


class _ScatterReduce(Function):
    """``scatter_reduce``: the native forward, PyTorch's ``scatter_reduce_backward``."""

    _node_name = "ScatterReduceBackward0"
    _jvp_by_backward = True  # forward-mode AD differentiates backward

    @staticmethod
    def forward(ctx, input, dim, index, src, reduce, include_self):
        ctx.save_for_backward(input, index, src)
        ctx.args = (dim, reduce, include_self)
        return _core._scatter_reduce(input, dim, index, src, _ALIASES.get(reduce, reduce), include_self)

    @staticmethod
    def backward(ctx, grad):
        input, index, src = ctx.saved_tensors
        dim, reduce, include_self = ctx.args
        if reduce in _ALIASES:  # PyTorch's forward takes them, its backward does not
            raise RuntimeError(
                f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}."
            )
        dtype = input.dtype
        if reduce == "sum":
            grad_self, grad_src = grad, grad.gather(dim, index)
        elif reduce == "prod":
            result = scatter_reduce(input, dim, index, src, reduce, include_self=include_self)
            masked_self = input.masked_fill(input == 0, 1)
            masked_self_result = scatter_reduce(masked_self, dim, index, src, reduce, include_self=include_self)
            grad_self = grad * masked_self_result / masked_self
            src_zero = src == 0
            src_num_zeros = _full(input.shape, 0, dtype).scatter_add(dim, index, src_zero.to(dtype)).gather(dim, index)
            src_single_zero = src_zero & (src_num_zeros == 1)
            masked_src = src.masked_fill(src_single_zero, 1)
            masked_src_result = scatter_reduce(input, dim, index, masked_src, reduce, include_self=include_self)
            grad_src = _core.where(src_single_zero, (grad * masked_src_result).gather(dim, index),
                                   (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
            if _core.is_grad_enabled() and bool((src_num_zeros > 1).any()):
                grad_src = _double_backward_error(grad_src.detach(), grad_src)
        elif reduce == "mean":
            n = _full(grad.shape, 1 if include_self else 0, dtype).scatter_add(dim, index, _full(src.shape, 1, dtype))
            n = n.masked_fill(n == 0, 1)
            grad_self = grad / n
            grad_src = grad.gather(dim, index) / n.gather(dim, index)
        else:  # amax, amin: the gradient shared evenly by the elements equal to the result
            result = _core._scatter_reduce(input.detach(), dim, index, src.detach(), reduce, include_self)
            value = result.gather(dim, index)
            self_is_result = (input == result).to(dtype)
            src_is_result = (src == value).to(dtype)
            grad_distributed = grad / self_is_result.scatter_add(dim, index, src_is_result)
            grad_self = self_is_result * grad_distributed
            grad_src = src_is_result * grad_distributed.gather(dim, index)
        if not include_self:
            grad_self = grad_self.scatter(dim, index, 0)
        return grad_self, None, None, grad_src, None, None


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """``input`` with the elements of ``src`` reduced into the positions ``index`` names along
    ``dim``: ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``, together with the
    values already there (``include_self``) or without them."""
    _check_tensor("scatter_reduce", input)
    if out is not None:
        raise NotImplementedError("scatter_reduce(out=...) is not supported by ferrograd")
    if reduce not in _REDUCES and reduce not in _ALIASES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    return _ScatterReduce.apply(input, dim, index, src, reduce, include_self)

