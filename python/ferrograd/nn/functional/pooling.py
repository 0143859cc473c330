"""Pooling functionals of ``ferrograd.nn.functional``: max, average, adaptive and power-average
pooling, and max unpooling.

The argument checks follow ATen's; the arithmetic runs in the 2-d native kernels, and 1-d
pooling goes through them on an unsqueezed input like ATen. 3-d pooling is the 2-d kernel over
every depth plane followed by a (kD, 1) 2-d pooling of the (D, H * W) planes (so its gradients
come from the 2-d kernels'). Adaptive max pooling, LP pooling and max
unpooling are compositions of tensor ops.
"""

from ... import _core
from ...autograd.forward_ad import _has_tangent
from ._utils import _fmt, _int_arg, _int_list, _list_with_default, _pair, _scalar_name, _single, _triple
from .activation import relu

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
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "adaptive_avg_pool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
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


def _max_pool1d_args(input, kernel_size, stride, padding, dilation, ceil_mode):
    """The checked ``(kernel, stride, padding, dilation)`` of a 1-d max pooling."""
    kernel_size = _int_list(kernel_size, 1, "max_pool1d", "kernel_size", 2)
    stride = [] if stride is None else _int_list(stride, 1, "max_pool1d", "stride", 3)
    padding = _int_list(padding, 1, "max_pool1d", "padding", 4)
    dilation = _int_list(dilation, 1, "max_pool1d", "dilation", 5)
    return _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    r"""1-d max pooling returning ``(output, indices)``."""
    k, s, p, d = _max_pool1d_args(input, kernel_size, stride, padding, dilation, ceil_mode)
    out, indices = _core.max_pool2d(input.unsqueeze(-2), [1, k], [1, s], [0, p], [1, d], bool(ceil_mode))
    return out.squeeze(-2), indices.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    r"""1-d max pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to ``kernel_size``."""
    wants_graph = (_core.is_grad_enabled() and input.requires_grad) or _has_tangent(input)
    if return_indices or wants_graph or not input.is_floating_point():
        out, indices = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
        return (out, indices) if return_indices else out
    # values only, as PyTorch's max_pool1d without indices or grad
    k, s, p, d = _max_pool1d_args(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _core._max_pool1d_values(input, k, s, p, d, bool(ceil_mode))


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


def _adaptive_max_pool2d(input, oh, ow):
    if oh == 0 or ow == 0:
        lead = tuple(input.shape[:-2])
        return input.new_zeros(lead + (oh, ow)), input.new_zeros(lead + (oh, ow), dtype=_core.int64)
    return _core.adaptive_max_pool(input, [oh, ow])


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


# ---------------------------------------------------------------------------------------------
# 3-d pooling: the 2-d kernels over each depth plane, then a max / sum over the depth window
# ---------------------------------------------------------------------------------------------


def _triple_arg(fn, name, value, pos, message):
    value = _int_list(value, 3, fn, name, pos)
    if len(value) not in (1, 3):
        raise RuntimeError(message)
    return value * 3 if len(value) == 1 else value


def _pool3d_output_shape(size, kernel, pad, stride, dilation, ceil_mode):
    # ATen's pooling_output_shape with its padding checks
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > ((kernel - 1) * dilation + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={kernel} and "
            f"dilation={dilation}"
        )
    return _pooling_output_shape(size, kernel, pad, stride, dilation, ceil_mode)


def _pool3d_shape_check(input, kernel, stride, padding, dilation, out, fn, check_input_size=False):
    # ATen's pool3d_shape_check
    (kt, kh, kw), (dt, dh, dw), (pt, ph, pw) = kernel, stride, padding
    if not (kt > 0 and kh > 0 and kw > 0):
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} kW: {kw}")
    if not (dt > 0 and dh > 0 and dw > 0):
        raise RuntimeError(f"stride should be greater than zero, but got dT: {dt} dH: {dh} dW: {dw}")
    if min(dilation) <= 0:
        raise RuntimeError(
            "dilation should be greater than zero, but got "
            f"dilationT: {dilation[0]} dilationH: {dilation[1]} dilationW: {dilation[2]}"
        )
    shape = tuple(input.shape)
    for i in range(input.dim()):
        if not (input.dim() == 5 and i == 0) and shape[i] <= 0:
            raise RuntimeError(
                f"{fn}: Expected input's non-batch dimensions to have positive length, but input has a shape of "
                f"{_fmt(shape)} and non-batch dimension {shape[i]} has length zero!"
            )
    it, ih, iw = shape[-3:]
    if check_input_size and not (it >= kt and ih >= kh and iw >= kw):
        raise RuntimeError(
            f"input image (T: {it} H: {ih} W: {iw}) smaller than kernel size (kT: {kt} kH: {kh} kW: {kw})"
        )
    if not (kt // 2 >= pt and kw // 2 >= pw and kh // 2 >= ph):
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}"
        )
    if min(out) < 1:
        c = shape[-4]
        raise RuntimeError(
            f"Given input size: ({c}x{it}x{ih}x{iw}). Calculated output size: ({c}x{out[0]}x{out[1]}x{out[2]}). "
            "Output size is too small"
        )


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    r"""3-d max pooling returning ``(output, indices)``; indices are flat positions in each ``D * H * W`` volume."""
    fn = "max_pool3d"
    kernel = _triple_arg(fn, "kernel_size", kernel_size, 2,
                         "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _triple_arg(
        fn, "stride", stride, 3, "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
    padding = _triple_arg(fn, "padding", padding, 4,
                          "max_pool3d: padding must either be a single int, or a tuple of three ints")
    dilation = _triple_arg(fn, "dilation", dilation, 5,
                           "max_pool3d: dilation must be either a single int, or a tuple of three ints")
    if input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    out = [_pool3d_output_shape(input.shape[i - 3], kernel[i], padding[i], stride[i], dilation[i], ceil_mode)
           for i in range(3)]
    _pool3d_shape_check(input, kernel, stride, padding, dilation, out,
                        "max_pool3d_with_indices_out_cpu_template()")
    if not input.is_floating_point():
        raise NotImplementedError(
            f"max_pool3d for {_scalar_name(input.dtype)} tensors is not supported by ferrograd yet"
        )
    lead = tuple(input.shape[:-3])
    d, h, w = input.shape[-3:]
    # the maxima over (H, W) of every depth plane (with their flat indices in the plane) ...
    planes, idx2 = _core.max_pool2d(input.reshape(-1, h, w), kernel[1:], stride[1:], padding[1:], dilation[1:],
                                    bool(ceil_mode))
    oh, ow = planes.shape[-2:]
    # then over the depth windows: a (kD, 1) pooling of the (D, oH * oW) planes
    values, flat = _core.max_pool2d(planes.reshape(-1, d, oh * ow), [kernel[0], 1], [stride[0], 1],
                                    [padding[0], 0], [dilation[0], 1], bool(ceil_mode))
    shape = lead + (out[0], oh, ow)
    # the flat index in the volume: the winning depth, and the 2-d index in that depth's plane
    depth = flat.floor_divide(oh * ow).reshape(shape)
    idx2 = idx2.reshape(lead + (d, oh, ow))
    return values.reshape(shape), depth * (h * w) + idx2.gather(-3, depth)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    r"""3-d max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``stride`` defaults to ``kernel_size``."""
    out, indices = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, indices) if return_indices else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    r"""3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``stride`` defaults to ``kernel_size``."""
    fn = "avg_pool3d"
    kernel = _triple_arg(fn, "kernel_size", kernel_size, 2,
                         "avg_pool3d: kernel_size must be a single int, or a tuple of three ints")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _triple_arg(
        fn, "stride", stride, 3, "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints")
    padding = _triple_arg(fn, "padding", padding, 4,
                          "avg_pool3d: padding must be a single int, or a tuple of three ints")
    if divisor_override is not None:
        divisor_override = _int_arg(divisor_override, fn, "divisor_override")
    if input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = [_pool3d_output_shape(input.shape[i - 3], kernel[i], padding[i], stride[i], 1, ceil_mode)
           for i in range(3)]
    _pool3d_shape_check(input, kernel, stride, padding, [1, 1, 1], out, "avg_pool3d()", check_input_size=True)
    if not input.is_floating_point():
        raise NotImplementedError(
            f"avg_pool3d for {_scalar_name(input.dtype)} tensors is not supported by ferrograd yet"
        )
    lead = tuple(input.shape[:-3])
    d, h, w = input.shape[-3:]
    # the divisor is a product over the dims: the (H, W) window averages of every depth plane,
    # then the averages of these over the depth windows, each with the same divisor rule (window
    # sums, then divided by divisor_override, when given)
    override = divisor_override is not None
    planes = _core.avg_pool2d(input.reshape(-1, h, w), kernel[1:], stride[1:], padding[1:], bool(ceil_mode),
                              bool(count_include_pad), 1 if override else None)
    oh, ow = planes.shape[-2:]
    out = _core.avg_pool2d(planes.reshape(-1, d, oh * ow), [kernel[0], 1], [stride[0], 1], [padding[0], 0],
                           bool(ceil_mode), bool(count_include_pad), divisor_override)
    return out.reshape(lead + (out.shape[-2], oh, ow))


def _adaptive3d_output_size(input, output_size, fn):
    output_size = _list_with_default(output_size, tuple(input.shape))
    return _int_list(output_size, 3, fn, "output_size", 2)


def adaptive_avg_pool3d(input, output_size):
    r"""3-d adaptive average pooling to ``output_size`` (an int, a triple, ``None`` keeps the input size)."""
    output_size = _adaptive3d_output_size(input, output_size, "adaptive_avg_pool3d")
    if len(output_size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if min(output_size) < 0:
        raise RuntimeError(
            "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but received "
            f"{{{output_size[0]}, {output_size[1]},{output_size[2]}}}"
        )
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {_fmt(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input "
                f"has sizes {_fmt(input.shape)} with dimension {i} being empty"
            )
    if not input.is_floating_point():
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for '{_scalar_name(input.dtype)}'")
    if output_size == [1, 1, 1]:
        return input.mean((-1, -2, -3), keepdim=True)
    lead = tuple(input.shape[:-3])
    d, h, w = input.shape[-3:]
    od, oh, ow = output_size
    # averages are separable: over (H, W) per depth plane, then over depth (as the width of a
    # 2-d pooling whose height stays)
    planes = _core.adaptive_avg_pool2d(input.reshape(-1, h, w), [oh, ow]).reshape(-1, d, oh * ow)
    out = _core.adaptive_avg_pool2d(planes.transpose(-1, -2), [oh * ow, od])
    return out.transpose(-1, -2).reshape(lead + (od, oh, ow))


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    r"""3-d adaptive max pooling returning ``(output, indices)``."""
    output_size = _adaptive3d_output_size(input, output_size, "adaptive_max_pool3d")
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {_fmt(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input "
                f"has sizes {_fmt(input.shape)} with dimension {i} being empty"
            )
    if len(output_size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"adaptive_max_pool3d_cpu\" not implemented for '{_scalar_name(input.dtype)}'")
    if min(output_size) < 0:
        shape = list(input.shape[:-3]) + output_size
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(output_size)}: {_fmt(shape)}")
    if 0 in output_size:
        shape = tuple(input.shape[:-3]) + tuple(output_size)
        return input.new_zeros(shape), input.new_zeros(shape, dtype=_core.int64)
    return _core.adaptive_max_pool(input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    r"""3-d adaptive max pooling to ``output_size`` (an int, a triple, ``None`` keeps that input size)."""
    out, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


# ---------------------------------------------------------------------------------------------
# power-average pooling and max unpooling (ported from PyTorch's torch/nn/functional.py)
# ---------------------------------------------------------------------------------------------


def _lp_finish(out, window, norm_type):
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    r"""1-d power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kernel_size, norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    r"""2-d power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""
    kw, kh = _pair(kernel_size)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool2d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kw * kh, norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    r"""3-d power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``."""
    kd, kw, kh = _triple(kernel_size)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool3d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kd * kw * kh, norm_type)


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    input_size = input.size()
    default_size = [(input_size[-len(kernel_size) + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
                    for d in range(len(kernel_size))]
    if output_size is None:
        ret = default_size
    else:
        if len(output_size) == len(kernel_size) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(kernel_size):
            raise ValueError(
                "output_size should be a sequence containing "
                f"{len(kernel_size)} or {len(kernel_size) + 2} elements, but it has a length of '{len(output_size)}'"
            )
        for d in range(len(kernel_size)):
            min_size = default_size[d] - stride[d]
            max_size = default_size[d] + stride[d]
            if not (min_size < output_size[d] < max_size):
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and {max_size})'
                )
        ret = output_size
    for d in range(len(kernel_size)):
        if ret[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                f"output_size[{d}]={ret[d]}"
            )
    return list(ret)


def _max_unpool(input, indices, output_size, nd, fn):
    # ATen's max_unpooling{2,3}d: each value written at its flat index in its output plane / volume
    if indices.dtype != _core.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar_name(indices.dtype)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Input to {fn} should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor with {input.dim()} "
            "dimensions."
        )
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({_fmt(input.shape)}) but got "
            f"indices tensor with shape: {_fmt(indices.shape)}"
        )
    for i in range(1, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                f"{fn}_forward_out_cpu(): Expected input to have non-zero size for non-batch dimensions, but got "
                f"{_fmt(input.shape)} with dimension {i} being empty."
            )
    # native: the index range check ("Found an invalid max index"), the writes plane by plane
    # (the last write wins), MaxUnpool2DBackward0 / MaxUnpool3DBackward0 gathering the gradient
    return _core._max_unpool(input, indices, [int(s) for s in output_size])


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool1d``: the values go back to their ``indices``, zeros elsewhere."""
    kernel_size = _single(kernel_size)
    stride = _single(stride) if stride is not None else kernel_size
    padding = _single(padding)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size) + [1]
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), output_size, 2, "max_unpooling2d").squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool2d``: the values go back to their ``indices``, zeros elsewhere."""
    kernel_size = _pair(kernel_size)
    stride = _pair(stride) if stride is not None else kernel_size
    padding = _pair(padding)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, output_size, 2, "max_unpooling2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    r"""Partial inverse of ``max_pool3d``: the values go back to their ``indices``, zeros elsewhere."""
    kernel_size = _triple(kernel_size)
    stride = _triple(stride) if stride is not None else kernel_size
    padding = _triple(padding)
    output_size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    if input.dim() in (4, 5) and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {_fmt(stride)}")
    return _max_unpool(input, indices, output_size, 3, "max_unpooling3d")
