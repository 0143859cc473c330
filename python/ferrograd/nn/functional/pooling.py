"""Pooling functionals of ``ferrograd.nn.functional``: max, average and adaptive pooling.

The argument checks follow ATen's; the arithmetic runs in the 2-d native kernels, and 1-d
pooling goes through them on an unsqueezed input like ATen. Adaptive max pooling is a
composition of tensor ops.
"""

from ... import _core
from ..._factories import arange
from ._utils import _fmt, _int_arg, _int_list, _list_with_default, _scalar_name

__all__ = [
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
]


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
