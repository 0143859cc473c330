"""Normalisation functionals of ``ferrograd.nn.functional``.

``batch_norm``, ``instance_norm``, ``group_norm``, ``layer_norm`` and ``rms_norm``, with PyTorch's argument
checks in front of the native kernels.
"""

import math
import numbers

from ... import _core
from ..._dtype import finfo
from ._utils import _fmt, _int_arg
from .padding import pad as _pad
from .pooling import avg_pool2d, avg_pool3d

__all__ = ["batch_norm", "instance_norm", "group_norm", "layer_norm", "rms_norm", "normalize", "local_response_norm"]


def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    r"""Batch normalisation over dim 1 of ``(N, C, *)``.

    In training the batch statistics normalise the input and ``running_mean``/``running_var``
    (if given) are updated in place with ``momentum`` (unbiased variance).
    """
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return _core.batch_norm(input, weight, bias, running_mean, running_var, bool(training), float(momentum),
                            float(eps))


def _repeat_if_defined(t, n):
    return None if t is None else t.unsqueeze(0).expand(n, t.shape[0]).reshape(-1).contiguous()


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    r"""Instance normalisation: each ``(sample, channel)`` plane normalised on its own statistics."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    # ATen's instance_norm: a batch norm of the (1, N * C, *) view
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    shape = tuple(input.shape)
    b, c = shape[0], shape[1]
    rm = _repeat_if_defined(running_mean, b)
    rv = _repeat_if_defined(running_var, b)
    out = _core.batch_norm(input.contiguous().view((1, b * c) + shape[2:]), _repeat_if_defined(weight, b),
                           _repeat_if_defined(bias, b), rm, rv, bool(use_input_stats), float(momentum),
                           float(eps))
    if running_mean is not None:
        running_mean.copy_(rm.view(b, c).mean(0))
    if running_var is not None:
        running_var.copy_(rv.view(b, c).mean(0))
    return out.view(shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    r"""Group normalisation: the channels are split into ``num_groups`` groups normalised separately."""
    if type(num_groups) is not int:
        num_groups = _int_arg(num_groups, "group_norm", "num_groups", 2)
    shape = input.shape
    if len(shape) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {len(shape)}")
    # PyTorch's _verify_batch_size on [N * C // G, G, *spatial] (num_groups=0: ZeroDivisionError)
    if shape[0] * shape[1] // num_groups * math.prod(shape[2:]) == 1:
        _verify_batch_size([shape[0] * shape[1] // num_groups, num_groups] + list(shape[2:]))
    return _core.group_norm(input, num_groups, weight, bias, float(eps))


def _normalized_shape(normalized_shape):
    """``normalized_shape`` as a tuple of ints, with PyTorch's TypeError for anything else."""
    if isinstance(normalized_shape, numbers.Integral) or not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, "
            f"not {type(normalized_shape).__name__}"
        )
    for i, s in enumerate(normalized_shape):
        # PyTorch's parser: the first element decides the form (a bool there is refused), the
        # others are unpacked as ints (a bool passes)
        if i == 0 and (isinstance(s, bool) or not isinstance(s, numbers.Integral)):
            raise TypeError(
                "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, "
                f"but found element of type {type(s).__name__} at pos {i}"
            )
        if not isinstance(s, numbers.Integral):
            raise TypeError(
                f"layer_norm(): argument 'normalized_shape' failed to unpack the object at pos {i + 1} with "
                f'error "type must be tuple of ints,but got {type(s).__name__}"'
            )
    return tuple(int(s) for s in normalized_shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    r"""Layer normalisation over the last ``len(normalized_shape)`` dimensions.

    The shapes and dtypes of ``input``, ``weight`` and ``bias`` are checked by the native op (with
    PyTorch's messages); plain tuples or lists of ints skip the per-element type checks here.
    """
    if type(normalized_shape) not in (tuple, list) or any(type(s) is not int for s in normalized_shape):
        normalized_shape = _normalized_shape(normalized_shape)
    if not normalized_shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
            f"element, but got normalized_shape = {_fmt(tuple(normalized_shape))}"
        )
    return _core.layer_norm(input, list(normalized_shape), weight, bias, float(eps))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``input / sqrt(mean(input^2) + eps)`` over the trailing ``normalized_shape`` dims, times
    ``weight``; ``eps`` defaults to the dtype's machine epsilon."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != tuple(shape) or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={_fmt(shape)}, expected input with shape [*{_fmt(shape)[1:]}, "
                           f"but got input of size{_fmt(input.shape)}")
    if eps is None:
        eps = finfo(input.dtype).eps
    dims = list(range(input.dim() - k, input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


# ------------------------------------------------------------------- embedding


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    r"""``input / max(||input||_p, eps)``, the norm taken along ``dim``; with ``out``, the
    result is written into it (as ``torch.div(..., out=out)``)."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    return out.copy_(input / denom)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    r"""Local response normalization across channels: ``x / (k + alpha / size * sum of x ** 2 over
    the ``size`` neighbouring channels) ** beta`` (PyTorch's composition of ``avg_pool``)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(
            "Expected 3D or higher dimensionality                          "
            f"input (got {dim} dimensions)"
        )
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = _pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = _pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
