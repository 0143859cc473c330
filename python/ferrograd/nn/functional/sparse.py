"""Sparse functionals of ``ferrograd.nn.functional``: ``embedding``, ``embedding_bag`` and
``one_hot``."""

import numbers
import warnings

from ... import _core
from ..._core import bool as _bool
from ..._factories import arange
from ..._set_functions import searchsorted
from ...autograd.grad_mode import no_grad

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _check_indices(input, fn_name):
    if str(input.dtype) != "torch.int64":
        type_name = "CPUBoolType" if input.dtype == _bool else input.type()
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {type_name} instead (while checking arguments for {fn_name})"
        )


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    r"""Look up rows of ``weight`` by the indices in ``input``: output shape ``(*input.shape, D)``.

    Rows selected at ``padding_idx`` do not contribute to the gradient of ``weight``.
    """
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse:
        raise NotImplementedError("embedding: sparse=True (sparse gradients) is not supported")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(input, "embedding")
    return _core._embedding(weight, input, padding_idx if padding_idx >= 0 else None,
                            bool(scale_grad_by_freq))


def one_hot(tensor, num_classes=-1):
    r"""One-hot encoding of an int64 tensor: output ``(*tensor.shape, num_classes)``, int64."""
    if not isinstance(num_classes, numbers.Integral) or isinstance(num_classes, bool):
        raise TypeError(
            f"one_hot(): argument 'num_classes' (position 2) must be int, not {type(num_classes).__name__}"
        )
    return _core._one_hot(tensor, num_classes)


def _no_grad_embedding_renorm_(weight, input, max_norm, norm_type):
    """``torch.embedding_renorm_`` without autograd: the rows of ``weight`` that ``input``
    selects and whose ``norm_type``-norm exceeds ``max_norm`` are scaled in place by
    ``max_norm / (norm + 1e-7)``."""
    with no_grad():
        used = input.reshape(-1).long().bincount(minlength=weight.size(0)) > 0
        rows = used.nonzero().reshape(-1)
        selected = weight[rows]
        norms = selected.norm(norm_type, 1, keepdim=True)
        scale = _core.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = selected * scale


def _check_bag_indices(t, name):
    if str(t.dtype) not in ("torch.int64", "torch.int32"):
        type_name = "CPUBoolType" if t.dtype == _bool else t.type()
        raise RuntimeError(
            f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
            f"Long, Int; but got {type_name} instead (while checking arguments for embedding_bag)"
        )


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    r"""Sums, means or maxes of bags of embeddings, without materialising the per-index rows
    of the bags: ``input`` 1-D with ``offsets`` (the start of each bag), or 2-D (one bag per row).

    Indices equal to ``padding_idx`` are left out of their bag (an empty bag gives zeros);
    ``per_sample_weights`` (mode ``"sum"``) scale each row. The bags are reduced with one
    ``index_add`` (sum, mean) or ``scatter_reduce`` (max) over the bag number of each index.
    """
    if weight.dtype == _core.int64 and input.is_floating_point():
        warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. "
            "Usage `embedding_bag(weight, input, ...)` is deprecated, "
            "and should now be `embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                f"fixed length sequences. However, found offsets of type {type(offsets)}"
            )
        offsets = arange(0, input.numel(), input.size(1), dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. "
            "per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub."
        )
    if sparse:
        raise NotImplementedError("embedding_bag: sparse=True (sparse gradients) is not supported")
    return _embedding_bag(input, weight, offsets, scale_grad_by_freq, mode, per_sample_weights,
                          include_last_offset, padding_idx)


def _embedding_bag(input, weight, offsets, scale_grad_by_freq, mode, per_sample_weights,
                   include_last_offset, padding_idx):
    """ATen's checks, then the bag reduction."""
    _check_bag_indices(input, "indices")
    _check_bag_indices(offsets, "indices")
    num_weights = weight.size(0)
    if padding_idx is not None:
        if not -num_weights <= padding_idx < num_weights:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{num_weights} through "
                f"{num_weights - 1}, but got {padding_idx}"
            )
        padding_idx %= num_weights
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
            f"#1 'per_sample_weights'; but type {weight.type()} does not equal "
            f"{per_sample_weights.type()} (while checking arguments for embedding_bag)"
        )
    input, offsets = input.long(), offsets.long()
    n_indices = input.numel()
    if offsets.numel() > 0:
        first, last = int(offsets[0]), int(offsets[-1])
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                f"from position 0. However, got {first}\n[ torch.LongTensor{{}} ]"
            )
        if last > n_indices:
            raise RuntimeError(
                f"offsets[-1] can not be greater than input's length {n_indices} but got "
                f"offsets[-1] of {last}"
            )
    bad = ((input < 0) | (input >= num_weights)).nonzero().reshape(-1)
    if bad.numel() > 0:
        raise RuntimeError(
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
            f"{int(input[int(bad[0])])}"
        )
    n_bags = max(offsets.numel() - 1, 0) if include_last_offset else offsets.numel()
    starts = offsets[:n_bags]
    # the bag of each index: the last bag starting at or before it (empty bags are skipped)
    position = arange(n_indices)
    bag = searchsorted(starts, position, right=True) - 1
    # (with include_last_offset, the last offset is dropped: ATen's generic kernels end the last
    # bag at the end of the input, whatever offsets[-1] says)
    keep = bag >= 0  # False for every index if there is no bag
    if padding_idx is not None:
        keep = keep & (input != padding_idx)
    index, bag = input[keep], bag[keep]
    rows = _core._embedding(weight, index, None, bool(scale_grad_by_freq))  # (K, D)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1)[keep].unsqueeze(1)
    out = weight.new_zeros((n_bags, weight.size(1)))
    if mode == "max":
        return out.scatter_reduce(0, bag.unsqueeze(1).expand(rows.shape), rows, "amax",
                                  include_self=False)
    out = out.index_add(0, bag, rows)
    if mode == "mean":
        counts = bag.bincount(minlength=n_bags).clamp(min=1)
        out = out / counts.unsqueeze(1).to(out.dtype)
    return out
