"""Distances of ``ferrograd.nn.functional``: ``cosine_similarity``, ``pairwise_distance`` and
``triplet_margin_loss``, composed of differentiable ops as
PyTorch's ATen implementations are (same formulas, so the same values and gradients); ``pdist``
is a native op (PdistBackward0)."""

from ... import _core
from ...autograd.grad_mode import no_grad
from ._utils import _Reduction, _reduction

__all__ = ["cosine_similarity", "pairwise_distance", "triplet_margin_loss", "pdist"]


def _broadcast_shape(a, b):
    """The broadcast shape of two shapes, with the binary ops' message when there is none."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                f"dimension {i}"
            )
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` of the broadcast shape
    (PyTorch 2.x: each input is divided by its clamped norm first)."""
    for t in (x1, x2):
        if t.is_floating_point():
            break
    else:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is Long")
    if not x1.is_floating_point():
        x1 = x1.to(x2.dtype)
    if not x2.is_floating_point():
        x2 = x2.to(x1.dtype)
    shape = _broadcast_shape(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    # the norms are clamped in place without autograd, as in ATen: the gradient flows through
    # the unclamped norm
    n1 = x1.norm(2, dim, keepdim=True).clone()
    n2 = x2.norm(2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim of the broadcast shape."""
    innermost = max(x1.dim(), x2.dim()) - 1
    return (x1 - x2 + eps).norm(p, innermost, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the pairwise distance ``d``; ``swap`` uses
    ``min(d(a, n), d(p, n))`` for the negative distance."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    reduction = _reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = anchor.dim(), positive.dim(), negative.dim()
    if len(set(dims)) != 1:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs"
        )
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = dist_neg.minimum(pairwise_distance(positive, negative, p, eps))
    loss = (margin + dist_pos - dist_neg).clamp(min=0)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def pdist(input, p=2):
    r"""The ``p``-norm distances between the rows of an ``(N, M)`` input: the upper triangle of
    ``cdist(input, input)`` row by row, ``N * (N - 1) / 2`` values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    # native, pairs split across threads; PdistBackward0 as ATen's _pdist_backward
    return _core._pdist(input, float(p))
