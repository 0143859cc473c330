"""Convolution, pooling, normalisation and padding functionals of ``ferrograd.nn.functional``.

Ported from PyTorch's ``torch/nn/functional.py`` and the argument handling of the ATen ops
behind it (``conv2d``'s batchify and ``padding='same'``, ``max_pool1d``'s checks, ...). The
arithmetic runs in the native kernels of ``ferrograd._core``; 1-d pooling goes through the 2-d
kernels on an unsqueezed input like ATen, and ``pad`` is a composition of tensor ops.
"""

import collections.abc
import numbers
import operator
import warnings
from itertools import repeat

from .. import _core, arange
from ._attention import _c10_name, _fmt, _scalar_name

Tensor = _core.Tensor

__all__ = [
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "unfold",
    "fold",
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "batch_norm",
    "instance_norm",
    "group_norm",
    "pad",
]


# ------------------------------------------------------------- argument helpers


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    r"""Reverse the order of ``t`` and repeat each element ``n`` times (conv padding -> ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    if isinstance(out_size, numbers.Integral):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def _is_int(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, Tensor):
        return x.dim() == 0 and not x.is_floating_point() and x.dtype != _core.bool
    try:
        operator.index(x)
    except TypeError:
        return False
    return True


def _int_arg(value, fn, name, pos=None):
    """``value`` as a Python int, with the TypeError of PyTorch's argument parser."""
    if not _is_int(value):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be int, not {type(value).__name__}")
    return operator.index(value)


def _int_list(value, n, fn, name, pos=None):
    """An ``int[n]`` argument as a list: a single int is repeated ``n`` times (``n=None``: no int)."""
    where = f" (position {pos})" if pos is not None else ""
    if _is_int(value) and n is not None:
        return [operator.index(value)] * n
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{name}'{where} must be tuple of ints, not {type(value).__name__}")
    value = list(value)
    if value and not _is_int(value[0]):
        raise TypeError(
            f"{fn}(): argument '{name}'{where} must be tuple of ints, but found element of type "
            f"{type(value[0]).__name__} at pos 0"
        )
    for v in value:
        if not _is_int(v):
            raise TypeError(
                f"{fn}(): argument '{name}' failed to unpack the object at pos {pos} with error "
                f'"type must be tuple of ints,but got {type(v).__name__}"'
            )
    return [operator.index(v) for v in value]


def _pooling_output_shape(size, kernel, pad, stride, dilation, ceil_mode):
    # ATen's pooling_output_shape
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _check_dim_range(input, fn, lo, hi):
    # ATen's checkDimRange(fn, TensorArg(self, "self", 1), lo, hi) (hi exclusive)
    if not lo <= input.dim() < hi:
        raise RuntimeError(
            f"Expected {lo} to {hi - 1} dimensions, but got {input.dim()}-dimensional tensor for "
            f"argument #1 'self' (while checking arguments for {fn})"
        )


def _check1d(fn, name, value):
    if len(value) != 1:
        raise RuntimeError(f"{fn}() argument '{name}' should contain one int (got {len(value)})")


# ---------------------------------------------------------------- convolution

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


# -------------------------------------------------------------------- pooling


def _pool2d_args(fn, kernel_size, stride, padding, dilation=None):
    """ATen's size checks of ``max_pool2d``/``avg_pool2d`` arguments; lists expanded to 2 entries."""
    kernel_size = _int_list(kernel_size, 2, fn, "kernel_size", 2)
    stride = [] if stride is None else _int_list(stride, 2, fn, "stride", 3)
    padding = _int_list(padding, 2, fn, "padding", 4)
    if len(kernel_size) not in (1, 2):
        raise RuntimeError(f"{fn}: kernel_size must either be a single int, or a tuple of two ints")
    if len(stride) not in (0, 1, 2):
        raise RuntimeError(f"{fn}: stride must either be omitted, a single int, or a tuple of two ints")
    if len(padding) not in (1, 2):
        raise RuntimeError(f"{fn}: padding must either be a single int, or a tuple of two ints")
    kernel_size = kernel_size * 2 if len(kernel_size) == 1 else kernel_size
    stride = kernel_size if not stride else (stride * 2 if len(stride) == 1 else stride)
    padding = padding * 2 if len(padding) == 1 else padding
    if dilation is None:
        return kernel_size, stride, padding
    dilation = _int_list(dilation, 2, fn, "dilation", 5)
    if len(dilation) not in (1, 2):
        raise RuntimeError(f"{fn}: dilation must be either a single int, or a tuple of two ints")
    dilation = dilation * 2 if len(dilation) == 1 else dilation
    return kernel_size, stride, padding, dilation


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    r"""2-d max pooling returning ``(output, indices)``; indices are flat positions in each ``H * W`` plane."""
    kernel_size, stride, padding, dilation = _pool2d_args("max_pool2d", kernel_size, stride, padding, dilation)
    return _core.max_pool2d(input, kernel_size, stride, padding, dilation, bool(ceil_mode))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    r"""2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)``; ``stride`` defaults to ``kernel_size``."""
    out, indices = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, indices) if return_indices else out


def _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode):
    # ATen's check_max_pool1d
    shape = tuple(input.shape)
    if not ((input.dim() == 2 and shape[0] != 0 and shape[1] != 0)
            or (input.dim() == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{_fmt(shape)}"
        )
    if len(kernel_size) != 1:
        raise RuntimeError(
            "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size "
            f"{len(kernel_size)}"
        )
    if len(stride) not in (0, 1):
        raise RuntimeError(
            "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size "
            f"{len(stride)}"
        )
    if len(padding) != 1:
        raise RuntimeError(
            "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size "
            f"{len(padding)}"
        )
    if len(dilation) != 1:
        raise RuntimeError(
            "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got size "
            f"{len(dilation)}"
        )
    k, p, d = kernel_size[0], padding[0], dilation[0]
    s = stride[0] if stride else k
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and kernel_size={k}"
        )
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    ow = _pooling_output_shape(shape[-1], k, p, s, d, ceil_mode)
    if ow <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {ow}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{_scalar_name(input.dtype)}'")
    return k, s, p, d


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    r"""1-d max pooling returning ``(output, indices)``."""
    kernel_size = _int_list(kernel_size, 1, "max_pool1d", "kernel_size", 2)
    stride = [] if stride is None else _int_list(stride, 1, "max_pool1d", "stride", 3)
    padding = _int_list(padding, 1, "max_pool1d", "padding", 4)
    dilation = _int_list(dilation, 1, "max_pool1d", "dilation", 5)
    k, s, p, d = _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    out, indices = _core.max_pool2d(input.unsqueeze(-2), [1, k], [1, s], [0, p], [1, d], bool(ceil_mode))
    return out.squeeze(-2), indices.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    r"""1-d max pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to ``kernel_size``."""
    out, indices = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, indices) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    r"""2-d average pooling over ``(N, C, H, W)`` or ``(C, H, W)``; ``stride`` defaults to ``kernel_size``."""
    kernel_size, stride, padding = _pool2d_args("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None:
        divisor_override = _int_arg(divisor_override, "avg_pool2d", "divisor_override")
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    return _core.avg_pool2d(input, kernel_size, stride, padding, bool(ceil_mode), bool(count_include_pad),
                            divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    r"""1-d average pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to ``kernel_size``."""
    kernel_size = _int_list(kernel_size, 1, "avg_pool1d", "kernel_size", 2)
    stride = [] if stride is None else _int_list(stride, 1, "avg_pool1d", "stride", 3)
    padding = _int_list(padding, 1, "avg_pool1d", "padding", 4)
    if not stride:
        stride = kernel_size
    _check_dim_range(input, "avg_pool1d", 2, 4)
    _check1d("avg_pool1d", "kernel_size", kernel_size)
    _check1d("avg_pool1d", "stride", stride)
    _check1d("avg_pool1d", "padding", padding)
    out = _core.avg_pool2d(input.unsqueeze(-2), [1, kernel_size[0]], [1, stride[0]], [0, padding[0]],
                           bool(ceil_mode), bool(count_include_pad), None)
    return out.squeeze(-2)


def adaptive_avg_pool2d(input, output_size):
    r"""2-d adaptive average pooling to ``output_size`` (an int, a pair, ``None`` keeps the input size)."""
    output_size = _list_with_default(output_size, tuple(input.shape))
    output_size = _int_list(output_size, 2, "adaptive_avg_pool2d", "output_size", 2)
    if len(output_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if output_size[0] < 0 or output_size[1] < 0:
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received "
            f"{{{output_size[0]}, {output_size[1]}}}"
        )
    if output_size == [1, 1]:
        # ATen reduces to a mean for a 1x1 output
        return input.mean((-1, -2), keepdim=True)
    return _core.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool1d(input, output_size):
    r"""1-d adaptive average pooling over ``(N, C, L)`` or ``(C, L)``."""
    output_size = _int_list(output_size, 1, "adaptive_avg_pool1d", "output_size", 2)
    _check_dim_range(input, "adaptive_avg_pool1d", 2, 4)
    _check1d("adaptive_avg_pool1d", "output_size", output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2), [1, output_size[0]]).squeeze(-2)


def _adaptive_bins(size, out):
    # bin i covers [floor(i * size / out), ceil((i + 1) * size / out)); padded to the widest bin
    # by repeating its last element (which never wins an argmax over the first occurrence)
    i = arange(out)
    start = (i * size).floor_divide(out)
    end = ((i + 1) * size + out - 1).floor_divide(out)
    width = int((end - start).max().item())
    idx = (start.unsqueeze(1) + arange(width).unsqueeze(0)).minimum((end - 1).unsqueeze(1))
    return start, idx, width


def _adaptive_max_pool2d(input, oh, ow):
    h, w = input.shape[-2], input.shape[-1]
    lead = tuple(input.shape[:-2])
    if oh == 0 or ow == 0:
        return input.new_zeros(lead + (oh, ow)), input.new_zeros(lead + (oh, ow), dtype=_core.int64)
    start_w, idx_w, kw = _adaptive_bins(w, ow)
    start_h, idx_h, kh = _adaptive_bins(h, oh)
    # max over the columns of each bin, then over its rows (max is separable; the first maximum
    # in row-major order is found as the first row holding the first maximum of that row)
    cols = input.index_select(-1, idx_w.flatten()).reshape(lead + (h, ow, kw))
    row_max, arg_w = cols.max(-1)
    col_of = arg_w + start_w
    rows = row_max.index_select(-2, idx_h.flatten()).reshape(lead + (oh, kh, ow))
    out, arg_h = rows.max(-2)
    row_of = arg_h + start_h.unsqueeze(1)
    col = col_of.gather(-2, row_of)
    return out, row_of * w + col


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    r"""2-d adaptive max pooling returning ``(output, indices)``."""
    output_size = _list_with_default(output_size, tuple(input.shape))
    output_size = _int_list(output_size, 2, "adaptive_max_pool2d", "output_size", 2)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {_fmt(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_fmt(input.shape)} with dimension {i} being empty"
            )
    if len(output_size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"adaptive_max_pool2d\" not implemented for '{_scalar_name(input.dtype)}'")
    if min(output_size) < 0:
        shape = list(input.shape[:-2]) + output_size
        bad = min(output_size)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {_fmt(shape)}")
    return _adaptive_max_pool2d(input, output_size[0], output_size[1])


def adaptive_max_pool2d(input, output_size, return_indices=False):
    r"""2-d adaptive max pooling to ``output_size`` (an int, a pair, ``None`` keeps the input size)."""
    out, indices = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    r"""1-d adaptive max pooling returning ``(output, indices)``."""
    output_size = _int_list(output_size, 1, "adaptive_max_pool1d", "output_size", 2)
    _check_dim_range(input, "adaptive_max_pool1d", 2, 4)
    _check1d("adaptive_max_pool1d", "output_size", output_size)
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_fmt(input.shape)} with dimension {i} being empty"
            )
    if not input.is_floating_point():
        raise NotImplementedError(f"\"adaptive_max_pool2d\" not implemented for '{_scalar_name(input.dtype)}'")
    if output_size[0] < 0:
        shape = list(input.shape[:-1]) + [1, output_size[0]]
        raise RuntimeError(f"Trying to create tensor with negative dimension {output_size[0]}: {_fmt(shape)}")
    out, indices = _adaptive_max_pool2d(input.unsqueeze(-2), 1, output_size[0])
    return out.squeeze(-2), indices.squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    r"""1-d adaptive max pooling over ``(N, C, L)`` or ``(C, L)``."""
    out, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


# -------------------------------------------------------------- normalisation


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
    num_groups = _int_arg(num_groups, "group_norm", "num_groups", 2)
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:]))
    return _core.group_norm(input, num_groups, weight, bias, float(eps))


# -------------------------------------------------------------------- padding

_NON_CONSTANT_PAD_HELP = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _constant_pad(input, pad, value):
    # ATen's constant_pad_nd: negative amounts crop, positive ones fill with ``value``
    return _core._constant_pad_nd(input, list(pad), value)


def _index_pad(input, pad, mode):
    if mode != "circular":
        # native: ReflectionPad{1,2,3}DBackward0 / ReplicationPad{1,2,3}DBackward0
        return _core._index_pad(input, list(pad), mode)
    # circular: one index_select per padded dimension
    ndim = input.dim()
    npad = len(pad) // 2
    out = input
    for i in range(ndim - npad, ndim):
        left, right = pad[2 * (ndim - i - 1)], pad[2 * (ndim - i - 1) + 1]
        if left == 0 and right == 0:
            continue
        # like ATen, negative amounts crop first and the wrap is taken from the cropped tensor
        size = input.shape[i]
        out = out.narrow(i, max(-left, 0), size - max(-left, 0) - max(-right, 0))
        size, left, right = out.shape[i], max(left, 0), max(right, 0)
        if size == 0 and left + right > 0:
            raise NotImplementedError("circular padding of a dimension that negative padding made empty")
        idx = arange(-left, size + right)
        if idx.numel() == 0:
            out = out.narrow(i, 0, 0)
            continue
        out = out.index_select(i, idx.remainder(size))
    return out


def _check_pad_sizes(input, pad, mode):
    # the checks of ATen's reflection_pad{1,2,3}d / replication_pad{1,2,3}d / _pad_circular
    ndim = input.dim()
    npad = len(pad) // 2
    shape = tuple(input.shape)
    if mode == "circular":
        for i in range(ndim - npad, ndim):
            left, right = pad[2 * (ndim - i - 1)], pad[2 * (ndim - i - 1) + 1]
            if left > shape[i] or right > shape[i]:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if shape[i] + left + right < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        return
    batch_mode = ndim == npad + 2
    first = 1 if batch_mode else 0
    if any(s == 0 for s in shape[first:]):
        raise RuntimeError(
            f"Expected {npad + 1}D or {npad + 2}D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {_fmt(shape)}"
        )
    if mode == "reflect":
        for j, i in enumerate(range(ndim - 1, ndim - npad - 1, -1)):
            left, right = pad[2 * j], pad[2 * j + 1]
            if left >= shape[i] or right >= shape[i]:
                raise RuntimeError(
                    f"Argument #{4 + 2 * j}: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({left}, {right}) at dimension {i} of input {_fmt(shape)}"
                )
    sizes = shape[ndim - npad :]
    outs = [sizes[k] + pad[2 * (npad - 1 - k)] + pad[2 * (npad - 1 - k) + 1] for k in range(npad)]
    if npad == 1 and outs[0] < 1:
        raise RuntimeError(f"input (W: {sizes[0]}) is too small. Calculated output W: {outs[0]}")
    if npad > 1 and all(o < 1 for o in outs):
        space = " " if mode == "replicate" and npad == 2 else ""
        given = f"H: {sizes[-2]}, W: {sizes[-1]}{space}" if npad == 2 else f"D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}"
        calc = " ".join(f"{n}: {o}" for n, o in zip("DHW"[3 - npad :], outs))
        raise RuntimeError(f"input ({given}) is too small. Calculated output {calc}")
    if any(o < 0 for o in outs):
        out_shape = list(shape[: ndim - npad]) + outs
        bad = next(o for o in out_shape if o < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {_fmt(out_shape)}")


def pad(input, pad, mode="constant", value=None):
    r"""Pad ``input``: ``pad`` lists (left, right) amounts starting from the last dimension.

    ``mode`` is ``'constant'`` (any number of dimensions, negative amounts crop), ``'reflect'``,
    ``'replicate'`` or ``'circular'`` (the last 1, 2 or 3 dimensions of a batched or unbatched input).
    """
    pad = _int_list(pad, None, "pad", "pad", 2)
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    ndim = input.dim()
    if len(pad) > 2 * ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {ndim}"
        )
    if mode == "constant":
        return _constant_pad(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    npad = len(pad) // 2
    if npad not in (1, 2, 3) or ndim not in (npad + 1, npad + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {ndim}D input tensor.\n" + _NON_CONSTANT_PAD_HELP
        )
    _check_pad_sizes(input, pad, mode)
    return _index_pad(input, pad, mode)
