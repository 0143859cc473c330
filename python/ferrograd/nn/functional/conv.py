"""Convolution functionals of ``ferrograd.nn.functional``: ``conv*``, ``conv_transpose*``, ``unfold``, ``fold``.

Ported from PyTorch's ``torch/nn/functional.py`` and the argument handling of the ATen ops
behind it (``conv2d``'s batchify and ``padding='same'``); the arithmetic runs in the native
kernels of ``ferrograd._core``.
"""

import warnings

from ... import _core
from ._utils import _c10_name, _fmt, _int_arg, _int_list, _pair
from .padding import _constant_pad

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "unfold",
    "fold",
]

_warned_same_padding = False


def _batchify(input, num_spatial_dims, fn):
    dim_no_batch = num_spatial_dims + 1
    is_batched = input.dim() == dim_no_batch + 1
    if input.dim() != dim_no_batch and not is_batched:
        raise RuntimeError(
            f"Expected {dim_no_batch}D (unbatched) or {dim_no_batch + 1}D (batched) input to {fn}, "
            f"but got input of size: {_fmt(input.shape)}"
        )
    return (input if is_batched else input.unsqueeze(0)), is_batched


_LEGACY_TYPE = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "int64": "torch.LongTensor",
                "bool": "torch.BoolTensor"}


def _legacy_type(t):
    return _LEGACY_TYPE.get(str(t.dtype).replace("torch.", ""), str(t.dtype))


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    # the argument handling of ATen's _convolution: the number of spatial dimensions comes from
    # the weight and single values broadcast to it
    dim = weight.dim() - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    params = []
    for name, value in (("stride", stride), ("padding", padding), ("dilation", dilation),
                        ("output_padding", output_padding)):
        if len(value) == 1:
            value = value * dim
        elif len(value) != dim:
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {dim} values to match the "
                f"convolution dimensions, but got {name}={_fmt(value)}"
            )
        params.append(list(value))
    stride, padding, dilation, output_padding = params
    for name, t in (("weight", weight), ("bias", bias)):
        # ATen's check on its float32 (mkldnn) path; other dtypes fail in the kernel
        if t is not None and t.dtype != input.dtype and input.dtype == _core.float32:
            raise RuntimeError(
                f"Input type ({_legacy_type(input)}) and {name} type ({_legacy_type(t)}) should be the same or "
                f"input should be a MKLDNN tensor and {name} is a dense tensor"
            )
    if input.dim() != weight.dim():
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
        if any(p < 0 for p in output_padding):
            raise RuntimeError("negative output_padding is not supported")
        if any(s <= 0 for s in stride):
            raise RuntimeError("non-positive stride is not supported")
        if any(d <= 0 for d in dilation):
            raise RuntimeError("non-positive dilation is not supported")
        raise RuntimeError(
            f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight {_fmt(weight.shape)}, "
            f"but got {input.dim()}-dimensional input of size {_fmt(input.shape)} instead"
        )
    return _core.conv(input, weight, bias, stride, padding, dilation, groups, transposed, output_padding)


def _convolution_same(input, weight, bias, stride, dilation, groups):
    # ATen's _convolution_mode with padding='same': symmetric padding when possible,
    # otherwise the extra row/column goes on the right after an explicit zero pad.
    k = weight.dim()
    if k <= 2:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = k - 2
    if k != input.dim():
        raise RuntimeError(
            f"Expected {k}-dimensional input for {k}-dimensional weight{_fmt(weight.shape)}, but got "
            f"{input.dim()}-dimensional input of size {_fmt(input.shape)} instead"
        )
    if len(stride) not in (1, dim):
        raise RuntimeError(f"stride cannot broadcast to {dim} dimensions")
    if len(dilation) not in (1, dim):
        raise RuntimeError(f"dilation cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    padding_l, padding_r = [], []
    for i in range(dim):
        d = dilation[0] if len(dilation) == 1 else dilation[i]
        total = d * (weight.shape[i + 2] - 1)
        padding_l.append(total // 2)
        padding_r.append(total - total // 2)
    if padding_l == padding_r:
        return _convolution(input, weight, bias, stride, padding_l, dilation, False, [0], groups)
    global _warned_same_padding
    if not _warned_same_padding:
        _warned_same_padding = True
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may require a zero-padded "
            "copy of the input be created",
            UserWarning,
            stacklevel=4,
        )
    pad_nd = [0] * (2 * dim)
    for i in range(dim):
        delta = padding_r[i] - padding_l[i]
        pad_idx = 2 * (dim - 1 - i)
        if delta > 0:
            pad_nd[pad_idx + 1] = delta
        else:
            pad_nd[pad_idx] = delta
            padding_l[i] = padding_r[i]
    return _convolution(_constant_pad(input, pad_nd, 0.0), weight, bias, stride, padding_l, dilation, False, [0],
                        groups)


def _conv(input, weight, bias, stride, padding, dilation, groups, n, fn):
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(
            f"Input type ({_c10_name(input.dtype)}) and bias type ({_c10_name(bias.dtype)}) should be the same"
        )
    stride = _int_list(stride, n, fn, "stride", 4)
    dilation = _int_list(dilation, n, fn, "dilation", 6)
    groups = _int_arg(groups, fn, "groups", 7)
    batched, is_batched = _batchify(input, n, fn)
    if isinstance(padding, str):
        if padding == "valid":
            out = _convolution(batched, weight, bias, stride, [0], dilation, False, [0], groups)
        elif padding == "same":
            out = _convolution_same(batched, weight, bias, stride, dilation, groups)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _int_list(padding, n, fn, "padding", 5)
        out = _convolution(batched, weight, bias, stride, padding, dilation, False, [0], groups)
    return out if is_batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    r"""1-d convolution over an input of shape ``(N, C_in, L)`` or ``(C_in, L)``.

    ``padding`` is an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    r"""2-d convolution over an input of shape ``(N, C_in, H, W)`` or ``(C_in, H, W)``.

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n, fn):
    stride = _int_list(stride, n, fn, "stride", 4)
    padding = _int_list(padding, n, fn, "padding", 5)
    output_padding = _int_list(output_padding, n, fn, "output_padding", 6)
    groups = _int_arg(groups, fn, "groups", 7)
    dilation = _int_list(dilation, n, fn, "dilation", 8)
    batched, is_batched = _batchify(input, n, fn)
    out = _convolution(batched, weight, bias, stride, padding, dilation, True, output_padding, groups)
    return out if is_batched else out.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    r"""1-d transposed convolution ("deconvolution"); ``weight`` is ``(C_in, C_out / groups, kL)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    r"""2-d transposed convolution ("deconvolution"); ``weight`` is ``(C_in, C_out / groups, kH, kW)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    r"""Extract sliding local blocks (im2col): ``(N, C, H, W) -> (N, C * prod(kernel_size), L)``."""
    return _core.im2col(input, list(_pair(kernel_size)), list(_pair(dilation)), list(_pair(padding)),
                        list(_pair(stride)))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    r"""Combine sliding local blocks into a tensor, summing overlaps (col2im); inverse layout of ``unfold``."""
    return _core.col2im(input, list(_pair(output_size)), list(_pair(kernel_size)), list(_pair(dilation)),
                        list(_pair(padding)), list(_pair(stride)))
