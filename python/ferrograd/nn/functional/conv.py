"""Convolution functionals of ``ferrograd.nn.functional``: ``conv*``, ``conv_transpose*``, ``unfold``, ``fold``.

Ported from PyTorch's ``torch/nn/functional.py`` and the argument handling of the ATen ops
behind it (``conv2d``'s batchify and ``padding='same'``); the arithmetic runs in the native
kernels of ``ferrograd._core``. 3-d (transposed) convolution is one 2-d (transposed) convolution
with the kernel's depth taps in the channels and the depth positions in the batch.
"""

import warnings

from ... import _core
from ..._factories import arange
from ._utils import _c10_name, _fmt, _int_arg, _int_list, _pair, _scalar_name
from .padding import _constant_pad

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv3d",
    "conv_transpose3d",
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
        if t is not None and t.dtype != input.dtype and input.dtype == _core.float32 and dim != 3:
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
    if dim == 3:
        if transposed:
            return _conv_transpose3d_impl(input, weight, bias, stride, padding, dilation, groups, output_padding)
        return _conv3d_impl(input, weight, bias, stride, padding, dilation, groups)
    return _core.conv(input, weight, bias, stride, padding, dilation, groups, transposed, output_padding)


def _check_conv3d_shapes(input, weight, bias, stride, padding, dilation, groups, transposed, output_padding):
    # ATen's check_shape_forward for 3-d, then the checks of its slow 3-d kernels
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    ws, xs = tuple(weight.shape), tuple(input.shape)
    if ws[0] < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of "
            f"size {_fmt(ws)} instead"
        )
    if ws[0] % groups != 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of "
            f"size [{_fmt(ws)}] instead"
        )
    kind = "transposed=1" if transposed else f"groups={groups}"
    expected_in = ws[0] if transposed else ws[1] * groups
    if xs[1] != expected_in:
        raise RuntimeError(
            f"Given {kind}, weight of size {_fmt(ws)}, expected input{_fmt(xs)} to have {expected_in} channels, "
            f"but got {xs[1]} channels instead"
        )
    out_channels = ws[1] * groups if transposed else ws[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(
            f"Given {'transposed=1, ' if transposed else ''}weight of size {_fmt(ws)}, expected bias to be "
            f"1-dimensional with {out_channels} elements, but got bias of size {_fmt(bias.shape)} instead"
        )
    for t in (weight, bias):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_scalar_name(input.dtype)} but found {_scalar_name(t.dtype)}")
    if not input.is_floating_point():
        raise NotImplementedError(
            f"{'conv_transpose3d' if transposed else 'conv3d'} for {_scalar_name(input.dtype)} tensors is not "
            "supported by ferrograd yet"
        )
    if any(d == 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {_fmt(dilation)}")
    if transposed:
        if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
            raise RuntimeError(
                "output padding must be smaller than either stride or dilation, but got "
                f"output_padding_depth: {output_padding[0]} output_padding_height: {output_padding[1]} "
                f"output_padding_width: {output_padding[2]} stride_depth: {stride[0]} stride_height: {stride[1]} "
                f"stride_width: {stride[2]} dilation_depth: {dilation[0]} dilation_height: {dilation[1]} "
                f"dilation_width: {dilation[2]}"
            )
        out = [(xs[i + 2] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ws[i + 2] - 1) + output_padding[i] + 1
               for i in range(3)]
        if min(out) < 1:
            raise RuntimeError(
                f"Given input size per channel: ({' x '.join(map(str, xs[2:]))}). Calculated output size per "
                f"channel: ({' x '.join(map(str, out))}). Output size is too small"
            )
        return out
    padded = [xs[i + 2] + 2 * padding[i] for i in range(3)]
    kernel = [dilation[i] * (ws[i + 2] - 1) + 1 for i in range(3)]
    if any(p < k for p, k in zip(padded, kernel)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual input size"
        )
    return [(padded[i] - kernel[i]) // stride[i] + 1 for i in range(3)]


def _conv3d_impl(input, weight, bias, stride, padding, dilation, groups):
    # A 3-d convolution as one 2-d convolution: the kD depth-strided slices of the input go side
    # by side into the channels (per group), the depth positions of the output into the batch.
    d_out = _check_conv3d_shapes(input, weight, bias, stride, padding, dilation, groups, False, [0, 0, 0])[0]
    n, c, _, h, w = input.shape
    o, cg, kd = weight.shape[:3]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    x = input.permute(0, 2, 1, 3, 4)  # (N, D, C, H, W)
    if pd:
        x = _constant_pad(x, [0, 0, 0, 0, 0, 0, pd, pd], 0.0)
    x = x.reshape(n, x.shape[1], groups, cg, h, w)
    span = sd * (d_out - 1) + 1
    cols = [x[:, k * dd:k * dd + span:sd] for k in range(kd)]  # each (N, D_out, g, C/g, H, W)
    x = (cols[0] if kd == 1 else _core.stack(cols, 3)).reshape(n * d_out, kd * c, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, weight.shape[3], weight.shape[4])
    out = _core.conv(x, w2, bias, stride[1:], padding[1:], dilation[1:], groups, False, [0, 0])
    return out.reshape(n, d_out, o, out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4).contiguous()


def _conv_transpose3d_impl(input, weight, bias, stride, padding, dilation, groups, output_padding):
    # A 3-d transposed convolution as one 2-d transposed convolution over the depth positions in
    # the batch, whose output channels hold the kD depth taps (per group); each tap is then added
    # at depth d * stride + k * dilation, and the depth padding cropped.
    d_out = _check_conv3d_shapes(input, weight, bias, stride, padding, dilation, groups, True, output_padding)[0]
    n, cin, d, h, w = input.shape
    og, kd = weight.shape[1], weight.shape[2]
    sd, pd, dd = stride[0], padding[0], dilation[0]
    x = input.permute(0, 2, 1, 3, 4).reshape(n * d, cin, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(cin, kd * og, weight.shape[3], weight.shape[4])
    y = _core.conv(x, w2, None, stride[1:], padding[1:], dilation[1:], groups, True, output_padding[1:])
    ho, wo = y.shape[2], y.shape[3]
    y = y.reshape(n, d, groups, kd, og, ho, wo)
    if groups > 1:
        y = y.permute(0, 1, 3, 2, 4, 5, 6)
    y = y.reshape(n, d * kd, groups * og, ho, wo)
    full = (d - 1) * sd + dd * (kd - 1) + 1 + output_padding[0]
    pos = (arange(d).unsqueeze(1) * sd + arange(kd).unsqueeze(0) * dd).flatten()
    out = y.new_zeros((n, full, groups * og, ho, wo)).index_add(1, pos, y)
    if pd:
        out = out.narrow(1, pd, d_out)
    out = out.permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1, 1)
    return out.contiguous()


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    r"""3-d convolution over an input of shape ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``.

    ``padding`` is an int, a triple, ``'valid'`` or ``'same'`` (stride 1 only). Computed as one
    2-d convolution over the kernel's depth taps.
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    r"""3-d transposed convolution; ``weight`` is ``(C_in, C_out / groups, kD, kH, kW)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


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
