"""Loss functions of ``ferrograd.nn.functional``.

The pointwise losses, ``nll_loss`` and the binary cross entropies are single native ops with
PyTorch's nodes (``MseLossBackward0``, ``NllLossBackward0``, ...); ``cross_entropy`` is
``log_softmax`` followed by ``nll_loss``, and the rest are compositions, as in PyTorch.
"""

import warnings

from ... import _core
from ..._core import is_grad_enabled
from ..._functions import broadcast_shapes
from ...amp import _to_float32
from ._utils import _Reduction, _reduction, _type_name

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
