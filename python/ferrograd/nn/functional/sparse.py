"""Sparse functionals of ``ferrograd.nn.functional``: ``embedding`` and ``one_hot``."""

import numbers

from ... import _core
from ..._core import bool as _bool

__all__ = ["embedding", "one_hot"]


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
        raise NotImplementedError("embedding: max_norm (in-place renormalisation of weight) is not supported yet")
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
