"""The dropouts of ``ferrograd.nn.functional``: ``dropout``, the channel-wise ``dropout1d``,
``dropout2d``, ``dropout3d``, and the SELU-preserving ``alpha_dropout`` and
``feature_alpha_dropout``."""

import math
import warnings

from ..._factories import rand

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# SELU's negative saturation value: -scale * alpha
_SELU_ALPHA = 1.7580993408473766


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        scale = input.new_zeros(())
    else:
        keep = rand(tuple(input.shape), dtype=input.dtype) >= p
        scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(scale) if inplace else input * scale


def _dropout_impl(input, p, training, inplace, feature, alpha):
    """PyTorch's ``_dropout_impl``: one Bernoulli draw per element, or per channel
    (``feature``: the noise has shape ``(N, C, 1, ...)``); alpha dropout sets dropped values
    to SELU's saturation value and rescales to keep mean and variance."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = input.new_zeros(())
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        noise_shape = tuple(input.shape)
    noise = (rand(noise_shape, dtype=input.dtype) >= p).to(input.dtype)
    if not alpha:
        noise = noise * (1.0 / (1.0 - p))
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    noise = noise * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def _batched_feature_dropout(input, p, training, inplace, is_batched):
    """Channel-wise dropout; an unbatched input is treated as a batch of one."""
    if is_batched:
        return _dropout_impl(input, p, training, inplace, True, False)
    if inplace:
        # the noise of the batch of one, applied to the unbatched input in place
        if p == 0 or not training or input.numel() == 0:
            return input
        out = _dropout_impl(input.unsqueeze(0), p, training, False, True, False)
        return input.copy_(out.squeeze(0))
    return _dropout_impl(input.unsqueeze(0), p, training, False, True, False).squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (``input[n, c]``, 1-d feature maps) with probability ``p``, scaling
    the rest by ``1 / (1 - p)``. ``input`` is ``(N, C, L)`` or unbatched ``(C, L)``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    return _batched_feature_dropout(input, p, training, inplace, inp_dim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (``input[n, c]``, 2-d feature maps) with probability ``p``, scaling
    the rest by ``1 / (1 - p)``. ``input`` is ``(N, C, H, W)``; a 3-d input is taken as
    ``(N, C, L)`` (1-d channel-wise dropout), with PyTorch's warning."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (``input[n, c]``, 3-d feature maps) with probability ``p``, scaling
    the rest by ``1 / (1 - p)``. ``input`` is ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout3d "
            "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _batched_feature_dropout(input, p, training, inplace, inp_dim == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped values become SELU's saturation value and the
    result is scaled and shifted to keep zero mean and unit variance."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels (``input[n, c]``)."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, True)
