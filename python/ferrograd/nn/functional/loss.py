"""Loss functions of ``ferrograd.nn.functional``.

The pointwise losses, ``nll_loss`` and the binary cross entropies are single native ops with
PyTorch's nodes (``MseLossBackward0``, ``NllLossBackward0``, ...); ``cross_entropy`` is
``log_softmax`` followed by ``nll_loss``, and the rest are compositions, as in PyTorch.
"""

import math
import warnings

from ... import _core
from ..._core import is_grad_enabled
from ..._factories import arange, full, ones_like, tensor, zeros_like
from ..._functions import broadcast_shapes
from ...amp import _to_float32
from ...autograd.grad_mode import no_grad
from ._utils import _fmt, _is_int, _Reduction, _reduction, _type_name
from .distance import pairwise_distance

__all__ = [
    "l1_loss",
    "mse_loss",
    "smooth_l1_loss",
    "huber_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "soft_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "triplet_margin_with_distance_loss",
    "ctc_loss",
]


def _check_no_requires_grad(tensor, name, fn_name):
    if tensor is not None and tensor.requires_grad and is_grad_enabled():
        raise RuntimeError(
            f"The function '{fn_name}' is not differentiable with respect to argument '{name}'. "
            "This input cannot have requires_grad True."
        )


def _check_same_dtype(input, target):
    # PyTorch's binary_cross_entropy does not promote its arguments
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_type_name(target)} but expected {_type_name(input)}")


def _warn_size(input, target):
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _weighted(loss, weight, reduction, mean):
    """PyTorch's manual path for an elementwise ``weight`` (mse_loss, l1_loss, huber_loss)."""
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return mean(loss)
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
    )


def _check_weight_size(weight, input):
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if weight is not None:
        _check_weight_size(weight, input)
        loss = (input - target).abs()
        return _weighted(loss, weight, reduction, lambda x: x.sum() / weight.sum())
    return _l1(input, target, reduction)


def _l1(input, target, reduction):
    reduction = _reduction(reduction)
    loss = (input - target).abs()
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if weight is not None:
        _check_weight_size(weight, input)
        loss = _core._pointwise_loss("mse", input, target, "none")
        return _weighted(loss, weight, reduction, lambda x: x.sum() / weight.sum())
    return _core._pointwise_loss("mse", input, target, _reduction(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta == 0.0:
        # PyTorch computes beta == 0 as l1_loss
        return _l1(input, target, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _core._pointwise_loss("smooth_l1", input, target, reduction, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    if weight is None:
        return _huber(input, target, _reduction(reduction), delta)
    _check_weight_size(weight, input)
    loss = _huber(input, target, "none", delta)
    return _weighted(loss, weight, reduction, lambda x: x.mean())


def _huber(input, target, reduction, delta):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if target.dtype != input.dtype and target.is_floating_point():
        # PyTorch's huber_loss does not promote: the loss has the input's dtype
        target = target.to(input.dtype)
    return _core._pointwise_loss("huber", input, target, reduction, float(delta))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    return _nll_loss_nd(input, target, weight, reduction, ignore_index)


def _nll_loss_nd(input, target, weight, reduction, ignore_index):
    """PyTorch's ``nll_loss_nd``: shape checks, and (N, C, d1, ...) inputs as (N, C, 1, d)."""
    dim = input.dim()
    if dim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {dim})")
    if dim == 1 and target.dim() == 1 and target.size(0) != 1:
        raise ValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {target.size(0)}"
        )
    if dim != 1 and input.size(0) != target.size(0):
        raise ValueError(
            f"Expected input batch_size ({input.size(0)}) to match target batch_size ({target.size(0)})."
        )
    if dim <= 2:
        _check_no_requires_grad(weight, "weight", "nll_loss_forward")
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        n_classes = input.size(-1)
        if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
            raise RuntimeError(
                f"weight tensor should be defined either for all {n_classes} classes or no classes "
                f"but got weight tensor of shape: {list(weight.shape)}"
            )
        _check_weight_dtype(weight, input)
        return _core._nll_loss(input, target, weight, reduction, ignore_index)
    if dim == 4:
        return _nll_loss2d(input, target, weight, reduction, ignore_index)
    n, c = input.size(0), input.size(1)
    out_size = [n] + list(input.shape[2:])
    if list(target.shape[1:]) != list(input.shape[2:]):
        raise RuntimeError(f"Expected target size {out_size}, got {list(target.shape)}")
    input = input.reshape(n, c, 1, -1) if input.numel() > 0 else input.reshape(n, c, 0, 0)
    target = target.reshape(n, 1, -1) if target.numel() > 0 else target.reshape(n, 0, 0)
    ret = _nll_loss2d(input, target, weight, reduction, ignore_index)
    return ret.view(out_size) if reduction == "none" else ret


def _nll_loss2d(input, target, weight, reduction, ignore_index):
    _check_no_requires_grad(weight, "weight", "nll_loss2d_forward")
    if target.dim() != 3:
        raise RuntimeError(
            "only batches of spatial targets supported (3D tensors) but got targets of dimension: "
            f"{target.dim()}"
        )
    if weight is not None and weight.numel() != input.size(1):
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    _check_weight_dtype(weight, input)
    return _core._nll_loss(input, target, weight, reduction, ignore_index)


def _check_weight_dtype(weight, input):
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found {_type_name(weight)}"
        )


def _class_weight_view(weight, input, class_dim):
    shape = [1] * input.dim()
    shape[class_dim] = weight.size(0)
    return weight.view(shape)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    reduction = _reduction(reduction, size_average, reduce)
    input = _to_float32(input)
    class_dim = 0 if input.dim() == 1 else 1
    if input.shape == target.shape:
        # class probabilities
        if not target.is_floating_point():
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, "
                f"got {_type_name(target)}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, class_dim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        return _cross_entropy_smoothed(input, target, weight, reduction, ignore_index,
                                       label_smoothing, class_dim)
    return _nll_loss_nd(input.log_softmax(class_dim), target, weight, reduction, ignore_index)


def _check_smoothing(label_smoothing):
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, class_dim):
    n_classes = input.size(class_dim)
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes "
            f"or no classes but got weight tensor of shape: {list(weight.shape)}"
        )
    logp = input.log_softmax(class_dim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        target = target * (1 - label_smoothing) + (label_smoothing / n_classes)
    prod = logp * target
    if weight is not None:
        prod = prod * _class_weight_view(weight, input, class_dim)
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    if input.numel() == 0:
        return -prod.sum().fill_(float("nan"))
    return -prod.sum() / (input.numel() // n_classes)


def _cross_entropy_smoothed(input, target, weight, reduction, ignore_index, label_smoothing,
                            class_dim):
    n_classes = input.size(class_dim)
    logp = input.log_softmax(class_dim)
    nll = _nll_loss_nd(logp, target, weight, reduction, ignore_index)
    ignore_mask = target == ignore_index
    if weight is not None:
        smooth = -(logp * _class_weight_view(weight, input, class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        if weight is not None:
            kept = target[~ignore_mask].flatten()
            ret = smooth.sum() / weight.gather(0, kept).sum()
        else:
            ret = smooth.sum() / (~ignore_mask).sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}) "
            "is deprecated. "
            "Please ensure they have the same size."
        )
    if weight is not None:
        weight = weight.expand(broadcast_shapes(target.size(), weight.size()))
    _check_no_requires_grad(weight, "weight", "binary_cross_entropy")
    _check_same_dtype(input, target)
    loss = _core._pointwise_loss("bce", input, target, reduction, 1.0, weight)
    # the native kernel checks the input range only
    if not ((target >= 0) & (target <= 1)).all():
        raise RuntimeError("all elements of target should be between 0 and 1")
    return loss


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    if not (target.size() == input.size()):
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})"
        )
    _check_no_requires_grad(weight, "weight", "binary_cross_entropy_with_logits")
    _check_no_requires_grad(pos_weight, "pos_weight", "binary_cross_entropy_with_logits")
    return _core._pointwise_loss("bce_logits", input, target, reduction, 1.0, weight, pos_weight)


def _xlogx(t):
    # xlogy(t, t): 0 where t == 0, nan where t < 0 (the gradient at t == 0 is 0, PyTorch's is nan)
    safe = _core.where(t == 0, t.new_ones(()), t)
    return t * safe.log()


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    input, target = _to_float32(input), _to_float32(target)
    if size_average is not None or reduce is not None:
        reduced_as = _Reduction.legacy_get_string(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support size."
                "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                stacklevel=2,
            )
        reduced_as = "sum" if reduction == "batchmean" else reduction
    reduced_as = _reduction(reduced_as)
    if not input.is_floating_point() or not target.is_floating_point():
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduced_as == "none":
        reduced = loss
    elif reduced_as == "mean":
        reduced = loss.mean()
    else:
        reduced = loss.sum()
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced


# ------------------------------------------------------------------ margin and ranking losses
# Compositions of differentiable ops with ATen's formulas (so the values, gradients and
# double gradients follow), and ATen's argument checks and messages.


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    reduction = _reduction(reduction, size_average, reduce)
    zeros = zeros_like(input)
    margin_clamp = (margin - input).clamp(min=0)
    output_margin = _core.where(target != 1, margin_clamp, zeros)
    output_self = _core.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


_COSINE_EPSILON = 1e-12


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1`` (the cosine along the last dim, squared norms plus 1e-12 as in ATen)."""
    reduction = _reduction(reduction, size_average, reduce)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{_fmt(input1.shape)} and {_fmt(input2.shape)}."
        )
    if targ_dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{_fmt(input1.shape)} and {_fmt(input2.shape)}."
        )
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _COSINE_EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _COSINE_EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = zeros_like(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    output = _core.where(target == 1, pos, zeros) + _core.where(target == -1, neg, zeros)
    return _reduce(output, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))`` (computed as ATen does, without a softplus)."""
    reduction = _reduction(reduction, size_average, reduce)
    _check_no_requires_grad(target, "target", "soft_margin_loss")
    if target.dtype != input.dtype:
        # ATen writes the loss into a tensor of the input's dtype
        target = target.to(input.dtype)
    return _reduce((-input * target).exp().log1p(), reduction)


def _logsigmoid(x):
    """``log(sigmoid(x))`` without overflow: ``x - log1p(exp(x))`` for ``x < 0``,
    ``-log1p(exp(-x))`` otherwise (each branch on its clamped half, so that neither overflows
    and the gradient is ``sigmoid(-x)`` everywhere, 0.5 at 0, as log_sigmoid's)."""
    neg, pos = x.clamp(max=0), x.clamp(min=0)
    return _core.where(x < 0, neg - neg.exp().log1p(), -(-pos).exp().log1p())


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """The binary logistic loss of every class, averaged over the classes (last dim)."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


# ------------------------------------------------------------------ likelihood losses


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``,
    plus the Stirling approximation of ``log(target!)`` where ``target > 1`` if ``full``."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling_term = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling_term.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps))`` (+ ``0.5 * log(2 pi)``
    if ``full``); ``var`` may have one dimension fewer than ``input``, or size 1 in one dimension.
    As in PyTorch, the clamp of ``var`` is done without autograd."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif not isinstance(var, _core.Tensor):
        raise TypeError(
            f"any() received an invalid combination of arguments - got ({type(var < 0).__name__}), "
            "but expected one of:\n"
            " * (Tensor input, *, Tensor out = None)\n"
            " * (Tensor input, tuple of ints dim = None, bool keepdim = False, *, Tensor out = None)\n"
            " * (Tensor input, int dim, bool keepdim = False, *, Tensor out = None)\n"
        )
    elif (var < 0).any():
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(
            y for x, y in zip(input.size(), var.size()) if x != y
        ) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------ multi-class margin losses


def _margin_input_check(input):
    ndims = input.dim()
    if not ((ndims == 2 and input.size(1) != 0) or (ndims == 1 and input.size(0) != 0)
            or ndims == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{_fmt(input.shape)}"
        )
    nframe = 1 if ndims <= 1 else input.size(0)
    dim = 1 if ndims == 0 else input.size(-1)
    return nframe, dim


def _check_long_target(target):
    if str(target.dtype) != "torch.int64":
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target)}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """``sum_{j != y} w[y] * max(0, margin - x[y] + x[j])**p / C`` per sample (``p`` in {1, 2})."""
    reduction = _reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nframe, dim = _margin_input_check(input)
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{nframe}], but got {_fmt(target.shape)}. "
            f"Input has shape {_fmt(input.shape)}."
        )
    if weight is not None:
        if not (weight.dim() <= 1 and weight.numel() == dim):
            raise RuntimeError(
                f"inconsistent weight size, expected {dim} but got {_fmt(weight.shape)}"
            )
        _check_no_requires_grad(weight, "weight", "multi_margin_loss")
    _check_long_target(target)
    _check_weight_dtype(weight, input)
    x = input.reshape(nframe, dim)
    y = target.reshape(nframe, 1)
    if nframe and not ((y >= 0) & (y < dim)).all():
        raise RuntimeError("target out of range")
    # relu: ATen's kernel counts the terms with z > 0 only (no gradient at z == 0)
    h = (margin - x.gather(1, y) + x).relu()
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight.index_select(0, y.reshape(-1)).unsqueeze(1)
    is_target = y == arange(dim).unsqueeze(0)
    loss = h.masked_fill(is_target, 0).sum(1) / dim
    if reduction == "none":
        return loss.reshape(target.shape)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j, k} max(0, 1 - (x[y_j] - x[k])) / C`` per sample, over the target classes ``y_j``
    (the entries of ``target`` before the first -1) and the non-target classes ``k``."""
    reduction = _reduction(reduction, size_average, reduce)
    nframe, dim = _margin_input_check(input)
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        ok = target.dim() == 2 and target.size(0) == nframe and target.size(1) == dim
    if not ok:
        raise RuntimeError(
            f"inconsistent target size: {_fmt(target.shape)} for input of size: {_fmt(input.shape)}"
        )
    if str(target.dtype) != "torch.int64" and target.numel() and not ((target >= -1) & (target < dim)).all():
        raise RuntimeError("argument #2 'target' is out of range")  # ATen checks this first
    _check_long_target(target)
    # native, O(N * C) memory as ATen's kernel: the target range check ("argument #2 'target'
    # is out of range"), the rows' losses and, when needed, the gradient coefficients
    # (MultilabelMarginLossBackward0); the mean of an empty batch is 0
    return _core._multilabel_margin_loss(input, target, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with a custom distance ``d`` (default
    ``pairwise_distance``)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
        )
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _core.minimum(dist_neg, distance_function(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp(min=0), reduction)


# ------------------------------------------------------------------ CTC

_CTC_FROM = "(while checking arguments for ctc_loss_allocate_outputs)"

_CTC_OVERLOADS = (
    " * (Tensor log_probs, Tensor targets, tuple of ints input_lengths, tuple of ints "
    "target_lengths, int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = False)\n"
    " * (Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank = 0, "
    "int reduction = at::Reduction::Mean, bool zero_infinity = False)\n"
)


def _ctc_arg_type(x):
    return "Tensor" if isinstance(x, _core.Tensor) else type(x).__name__


def _ctc_lengths(args):
    """``input_lengths`` and ``target_lengths`` as lists of ints: both tensors (of an integral
    dtype), or both sequences of ints, as the two overloads of ``torch.ctc_loss``."""
    input_lengths, target_lengths = args[2], args[3]
    if isinstance(input_lengths, _core.Tensor) and isinstance(target_lengths, _core.Tensor):
        for name, t in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
            if t.is_floating_point() or t.dtype == _core.bool:
                raise RuntimeError(f"{name} must be integral")
        return input_lengths.reshape(-1).tolist(), target_lengths.reshape(-1).tolist()
    if all(isinstance(x, (tuple, list)) and all(_is_int(v) for v in x)
           for x in (input_lengths, target_lengths)):
        return [int(v) for v in input_lengths], [int(v) for v in target_lengths]
    got = ", ".join(_ctc_arg_type(a) for a in args)
    raise TypeError(
        f"ctc_loss() received an invalid combination of arguments - got ({got}), but expected one "
        "of:\n" + _CTC_OVERLOADS
    )


def _logsumexp_safe(x, dim):
    """``logsumexp`` over ``dim`` that is -inf, with a zero gradient, where all terms are -inf
    (the unreachable CTC states), instead of a nan gradient."""
    m = x.detach().amax(dim, keepdim=True)
    m = m.masked_fill(m == -math.inf, 0)
    s = (x - m).exp().sum(dim, keepdim=True)
    empty = s == 0
    out = s.masked_fill(empty, 1).log() + m
    return out.masked_fill(empty, -math.inf).squeeze(dim)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    r"""Connectionist Temporal Classification loss: ``-log p(target | log_probs)`` summed over
    the alignments by the forward (alpha) recursion in log space.

    ``log_probs`` is ``(T, N, C)`` or unbatched ``(T, C)``; ``targets`` is padded ``(N, S)`` or
    the concatenated targets ``(sum(target_lengths),)``. The recursion is vectorised over the
    batch and the extended label positions (one step per time step); the gradient is autograd's
    through it, i.e. the true gradient with respect to ``log_probs``. PyTorch's own backward
    returns that gradient plus ``exp(log_probs)`` (it assumes ``log_probs`` come from
    ``log_softmax``, whose backward cancels the extra term): the two agree on the gradient of
    the logits before a ``log_softmax``. An infinite loss (no alignment) with
    ``zero_infinity=False`` has PyTorch's nan gradient.
    """
    reduction = _reduction(reduction)
    args = (log_probs, targets, input_lengths, target_lengths, blank, _Reduction.get_enum(reduction),
            zero_infinity)
    in_lens, tg_lens = _ctc_lengths(args)
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise RuntimeError(
            f"Expected 3-dimensional tensor, but got {lp.dim()}-dimensional tensor for argument "
            f"#1 'log_probs' {_CTC_FROM}"
        )
    if not 1 <= targets.dim() <= 2:
        raise RuntimeError(
            f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for argument "
            f"#2 'targets' {_CTC_FROM}"
        )
    max_time, batch, n_labels = lp.shape
    if not 0 <= blank < n_labels:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tg_lens) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    if targets.dim() == 2 and targets.size(0) != batch:
        raise RuntimeError(
            f"Expected tensor to have size {batch} at dimension 0, but got size {targets.size(0)} "
            f"for argument #2 'targets' {_CTC_FROM}"
        )
    for length in tg_lens:
        if length < 0:
            raise RuntimeError(
                f"Expected target_lengths to have value at least 0, but got value {length} {_CTC_FROM}"
            )
    max_len = max(tg_lens, default=0)
    if targets.dim() == 1 and targets.size(0) != sum(tg_lens):
        raise RuntimeError(
            f"Expected tensor to have size {sum(tg_lens)} at dimension 0, but got size "
            f"{targets.size(0)} for argument #2 'targets' {_CTC_FROM}"
        )
    if targets.dim() == 2 and targets.size(1) < max_len:
        raise RuntimeError(
            f"Expected tensor to have size at least {max_len} at dimension 1, but got size "
            f"{targets.size(1)} for argument #2 'targets' {_CTC_FROM}"
        )
    for length in in_lens:
        if length < 0:
            raise RuntimeError(
                f"Expected input_lengths to have value at least 0, but got value {length} {_CTC_FROM}"
            )
        if length > max_time:
            raise RuntimeError(
                f"Expected input_lengths to have value at most {max_time}, but got value {length} "
                f"{_CTC_FROM}"
            )
    nll = _ctc_nll(lp, targets.long(), in_lens, tg_lens, blank, max_len)
    if zero_infinity:
        nll = nll.masked_fill(nll == math.inf, 0)
    elif (nll == math.inf).any():
        nll = nll + _ctc_nan_gradient(lp, nll, in_lens)
    if reduction == "mean":
        return (nll / tensor(tg_lens, dtype=nll.dtype).clamp(min=1)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)


def _ctc_nan_gradient(lp, nll, in_lens):
    """Zeros ``(N,)`` whose gradient is nan at the time steps ``t < input_length`` of the
    sequences with an infinite loss, as PyTorch's backward gives (``sqrt`` at 0 of ``0 * lp``:
    the value 0, the gradient ``inf * 0``)."""
    steps = arange(lp.size(0)).unsqueeze(1) < tensor(in_lens).unsqueeze(0)  # (T, N)
    rows = (steps & (nll == math.inf).unsqueeze(0)).unsqueeze(2)
    return (lp.masked_fill(~rows, 0) * 0).sqrt().sum((0, 2))


def _ctc_nll(lp, targets, in_lens, tg_lens, blank, max_len):
    """The negative log-likelihood of each sequence: ``(N,)``."""
    batch = lp.size(1)
    n_ext = 2 * max_len + 1  # the extended target: blank, l1, blank, l2, ..., blank
    tg_len = tensor(tg_lens, dtype=targets.dtype)
    in_len = tensor(in_lens, dtype=targets.dtype)
    valid = arange(max_len).unsqueeze(0) < tg_len.unsqueeze(1)  # (N, S)
    if max_len == 0:
        labels = targets.new_zeros((batch, 0))
    elif targets.dim() == 1:
        starts = tg_len.cumsum(0) - tg_len
        labels = targets[(starts.unsqueeze(1) + arange(max_len)).masked_fill(~valid, 0)]
    else:
        labels = targets[:, :max_len]
    labels = labels.masked_fill(~valid, blank)
    blanks = full((batch, max_len), blank, dtype=labels.dtype)
    ext = _core.cat([_core.stack([blanks, labels], 2).reshape(batch, 2 * max_len),
                     full((batch, 1), blank, dtype=labels.dtype)], 1)
    # the skip from s - 2 to s: allowed into a label that differs from the previous label
    skip = ext != _core.cat([full((batch, 2), -1, dtype=ext.dtype), ext], 1)[:, :n_ext]
    nll = lp.new_full((batch,), math.inf)
    nll = nll.masked_fill((in_len == 0) & (tg_len == 0), 0)
    if max(in_lens, default=0) == 0:
        return nll
    t_max = max(in_lens)
    lpe = lp[:t_max].gather(2, ext.unsqueeze(0).expand(t_max, batch, n_ext))  # (T, N, S')
    pos = arange(n_ext).unsqueeze(0)
    init = (pos == 0) | ((pos == 1) & (tg_len > 0).unsqueeze(1))
    alpha = lpe[0].masked_fill(~init, -math.inf)
    pad = lp.new_full((batch, 2), -math.inf)
    for t in range(1, t_max):
        shift1 = _core.cat([pad[:, :1], alpha], 1)[:, :n_ext]
        shift2 = _core.cat([pad, alpha], 1)[:, :n_ext].masked_fill(~skip, -math.inf)
        step = _logsumexp_safe(_core.stack([alpha, shift1, shift2]), 0) + lpe[t]
        alpha = _core.where((t < in_len).unsqueeze(1), step, alpha)
    last = (2 * tg_len).unsqueeze(1)
    end_blank = alpha.gather(1, last)
    end_label = alpha.gather(1, (last - 1).clamp(min=0)).masked_fill((tg_len == 0).unsqueeze(1),
                                                                     -math.inf)
    ll = _logsumexp_safe(_core.cat([end_blank, end_label], 1), 1)
    return _core.where(in_len > 0, -ll, nll)
