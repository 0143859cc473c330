"""Vision functions of ``ferrograd.nn.functional``: ``pixel_shuffle`` / ``pixel_unshuffle``
(reshapes and a permute), ``interpolate`` (and the deprecated ``upsample*``), ``affine_grid``
and ``grid_sample``.

``interpolate`` resamples one spatial dim at a time: the source indices and weights of each
output position are computed with numpy exactly as ATen's upsample kernels compute them (in
float32 for float32 inputs, as ATen's ``opmath``) and cached; the native ``_resample`` then sums
each output's taps times their weights in one pass per dim, its backward the adjoint scatter
(and the adjoint's backward the resampling again, so every order of derivative works).
"""

import functools
import math
import numbers
import warnings

import numpy as np

from ... import _core
from ..._core import Tensor, bfloat16, float16, float64
from ..._factories import tensor
from ._utils import _int_arg, _scalar_name
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = [
    "pixel_shuffle",
    "pixel_unshuffle",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "affine_grid",
    "grid_sample",
    "channel_shuffle",
    "native_channel_shuffle",
]


def _check_pixel_shuffle(input, factor, fn, name):
    if input.dim() < 3:
        raise RuntimeError(
            f"{fn} expects input to have at least 3 dimensions, but got input with {input.dim()} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """``(*, C r^2, H, W)`` -> ``(*, C, H r, W r)``."""
    r = _int_arg(upscale_factor, "pixel_shuffle", "upscale_factor", 2)
    _check_pixel_shuffle(input, r, "pixel_shuffle", "upscale_factor")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H r, W r)`` -> ``(*, C r^2, H, W)``."""
    r = _int_arg(downscale_factor, "pixel_unshuffle", "downscale_factor", 2)
    _check_pixel_shuffle(input, r, "pixel_unshuffle", "downscale_factor")
    *batch, c, h, w = input.shape
    for side, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {side} to be divisible by downscale_factor, but "
                f"input.size({dim})={size} is not divisible by {r}"
            )
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


# --- interpolate

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
# the mode each input rank takes, for the "needs 3D input" errors
_LINEAR_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}
_RANK_OK = {
    "nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
    "linear": (3,), "bilinear": (4,), "trilinear": (5,), "bicubic": (4,),
}


def _is_integer(x):
    return isinstance(x, numbers.Integral) or (
        isinstance(x, Tensor) and not x.is_floating_point() and x.dim() == 0)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resamples the spatial dims of ``(N, C, d1, ..., dK)`` ``input`` to ``size`` or by
    ``scale_factor``: modes nearest, nearest-exact, linear (K=1), bilinear / bicubic (K=2),
    trilinear (K=3) and area (K=1, 2)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}"
                )
            output_size = [int(x) for x in size]
        else:
            if not _is_integer(size):
                raise TypeError(f"interpolate(): size must be an int or a tuple of ints, not {type(size).__name__}")
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")

    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        # the output size from the scale factors; the kernels then use the sizes' ratio
        output_size = [math.floor(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None

    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
            "a 4-D tensor as input"
        )
    if mode == "lanczos":
        raise NotImplementedError("interpolate(mode='lanczos') is not supported by ferrograd")

    if input.dim() in (3, 4, 5) and mode in _LINEAR_RANK and input.dim() != _LINEAR_RANK[mode]:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_RANK[mode]}D input")
    if input.dim() not in _RANK_OK.get(mode, ()):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: {_MODES} (got {mode})"
        )
    if mode == "area":
        if dim == 3:
            raise NotImplementedError(
                "interpolate(mode='area') of 5-D inputs (adaptive_avg_pool3d) is not supported by ferrograd")
        return (adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d)(input, output_size)
    return _upsample(input, output_size, scale_factors, mode, align_corners, antialias)


def _kernel_name(mode, dim):
    if mode in ("nearest", "nearest-exact"):
        return "upsample_nearest2d_channels_last" if dim == 2 else "compute_indices_weights_nearest"
    if mode == "bilinear":
        return "upsample_bilinear2d_channels_last"
    return "compute_indices_weights_cubic" if mode == "bicubic" else "compute_indices_weights_linear"


def _upsample(input, output_size, scale_factors, mode, align_corners, antialias=False):
    shape = tuple(input.shape)
    dim = len(shape) - 2
    in_sizes = shape[2:]
    if output_size is None:
        # C++'s int64_t(double): truncation
        output_size = [int(n * s) for n, s in zip(in_sizes, scale_factors)]
    if min(in_sizes) <= 0 or min(output_size) <= 0:
        names = "DHW"[3 - dim:]
        fmt_in = ", ".join(f"{k}: {v}" for k, v in zip(names, in_sizes))
        fmt_out = ", ".join(f"{k}: {v}" for k, v in zip(names, output_size))
        sep = " and output" if dim == 1 else " output"
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({fmt_in}){sep} ({fmt_out})")
    if shape[1] == 0:
        raise RuntimeError(
            f"Non-empty {dim + 2}D data tensor expected but got a tensor with sizes {list(shape)}")
    dtype = input.dtype
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{_kernel_name(mode, dim)}" not implemented for \'{_scalar_name(dtype)}\'')
    scales = tuple(scale_factors) if scale_factors is not None else (None,) * dim
    plan, resized = _passes(mode, in_sizes, tuple(output_size), scales, align_corners,
                            dtype is float64, antialias)
    if antialias and resized and dtype in (float16, bfloat16):
        raise NotImplementedError(
            f'"compute_index_ranges_weights" not implemented for \'{_scalar_name(dtype)}\'')
    return _core._resample(input, plan)


@functools.lru_cache(maxsize=512)
def _passes(mode, in_sizes, output_size, scales, align_corners, double, antialias):
    """The native plan of ``interpolate``'s passes (one dim after the other, each output a
    weighted sum of its taps) and whether any dim is resampled. Cached: a model resamples the
    same sizes at every step."""
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear",
            "bilinear": "Bilinear", "trilinear": "Trilinear", "bicubic": "Bicubic"}[mode]
    name = f"Upsample{kind}{len(in_sizes)}D{'Aa' if antialias else ''}Backward0"
    opmath = np.float64 if double else np.float32
    passes = []
    # The order of the passes only changes rounding. Shrinking dims go first, outermost first
    # (an outer pass reads only the rows it keeps; in backward, the last adjoint writes only
    # those rows), then growing dims, innermost first (the gathers along W run on the smaller
    # tensor, the rows of the outer passes are vector loops). Antialiasing runs W then H, as
    # ATen's separable kernel.
    dims = range(len(in_sizes))
    if antialias:
        order = reversed(dims)
    else:
        order = [d for d in dims if output_size[d] < in_sizes[d]]
        order += [d for d in reversed(dims) if output_size[d] >= in_sizes[d]]
    for d in order:
        taps = _plan(mode, in_sizes[d], output_size[d], scales[d], align_corners, opmath, antialias)
        if taps is not None:
            passes.append((d + 2, in_sizes[d], *taps))
    resized = bool(passes)
    if not resized:
        # the same size: a copy, still a node of its own as in PyTorch
        passes.append((len(in_sizes) + 1, in_sizes[-1], tensor(np.arange(in_sizes[-1])[None]), None))
    return _core._ResamplePlan(passes, name), resized


def _plan(mode, in_size, out_size, scale, align_corners, opmath, antialias):
    """The taps of one dim as (index, weight) tensors of shape (taps, out_size) (weight None:
    all ones), or None when the dim is left as it is."""
    if antialias:
        if in_size == out_size and scale is None:
            return None
        taps = _aa_taps(mode, in_size, out_size, scale, align_corners, opmath)
    else:
        taps = _taps(mode, in_size, out_size, scale, align_corners, opmath)
    index = np.stack([idx for idx, _ in taps]).astype(np.int64)
    if taps[0][1] is None:
        if len(taps) == 1 and np.array_equal(index[0], np.arange(in_size)):
            return None
        return tensor(index), None
    return tensor(index), tensor(np.stack([w for _, w in taps]).astype(np.float64))


def _aa_filter(mode, x):
    """ATen's antialiasing filters: the triangle (bilinear) and Keys' cubic with a = -0.5."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, 1 - x, 0)
    a = -0.5
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0))


def _aa_taps(mode, in_size, out_size, scale, align_corners, opmath):
    """The taps of antialiased resampling (ATen's _compute_weights_aa): output i averages the
    inputs within ``support`` of its centre, the filter stretched by the scale when shrinking,
    the weights normalised to sum to 1."""
    s = _compute_scale(in_size, out_size, align_corners, scale, opmath)
    half = opmath(1 if mode == "bilinear" else 2)  # interp_size / 2
    support = half * s if s >= 1 else half
    max_size = int(math.ceil(support)) * 2 + 1
    invscale = opmath(1) / s if s >= 1 else opmath(1)
    center = s * (np.arange(out_size).astype(opmath) + opmath(0.5))
    xmin = np.maximum(np.trunc(center - support + opmath(0.5)).astype(np.int64), 0)
    xsize = np.minimum(np.trunc(center + support + opmath(0.5)).astype(np.int64), in_size) - xmin
    xsize = np.clip(xsize, 0, max_size)
    j = np.arange(max_size)[:, None]
    w = _aa_filter(mode, ((j + xmin).astype(opmath) - center + opmath(0.5)) * invscale).astype(opmath)
    w = np.where(j < xsize, w, opmath(0))
    total = w.sum(axis=0, dtype=opmath)
    w = np.where(total != 0, w / np.where(total != 0, total, opmath(1)), w).astype(opmath)
    return [(np.minimum(xmin + k, in_size - 1), w[k]) for k in range(max_size)]


def _compute_scale(in_size, out_size, align_corners, scale, opmath):
    """ATen's area_pixel_compute_scale: input positions per output position."""
    if align_corners:
        return opmath(in_size - 1) / opmath(out_size - 1) if out_size > 1 else opmath(0)
    if scale is not None and scale > 0:
        return opmath(1.0 / scale)
    return opmath(in_size) / opmath(out_size)


def _taps(mode, in_size, out_size, scale, align_corners, opmath):
    """[(source indices, weights or None), ...] of one dim: output i is
    sum_k weights_k[i] * input[indices_k[i]]."""
    dst = np.arange(out_size)
    if mode in ("nearest", "nearest-exact"):
        if out_size == in_size:
            return [(dst, None)]
        if out_size == 2 * in_size and mode == "nearest":
            return [(dst >> 1, None)]
        s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(in_size) / np.float32(out_size)
        offset = np.float32(0.5) if mode == "nearest-exact" else np.float32(0.0)
        src = np.floor((dst.astype(np.float32) + offset) * s).astype(np.int64)
        return [(np.minimum(src, in_size - 1), None)]
    cubic = mode == "bicubic"
    if out_size == in_size and not cubic:
        return [(dst, None)]
    s = _compute_scale(in_size, out_size, align_corners, scale, opmath)
    d = dst.astype(opmath)
    if align_corners:
        real = s * d
    else:
        real = s * (d + opmath(0.5)) - opmath(0.5)
        if not cubic:
            real = np.maximum(real, opmath(0))
    idx = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    lam = np.clip(real - idx.astype(opmath), opmath(0), opmath(1)).astype(opmath)
    if not cubic:
        nxt = np.where(idx < in_size - 1, idx + 1, idx)
        return [(idx, opmath(1) - lam), (nxt, lam)]
    a = opmath(-0.75)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(lam + 1), near(lam), near(1 - lam), far(2 - lam)]
    return [(np.clip(idx - 1 + k, 0, in_size - 1), w.astype(opmath)) for k, w in enumerate(weights)]


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated: ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode="bilinear", align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- affine_grid, grid_sample

_ALIGN_CORNERS_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
    "Please specify align_corners=True if the old behavior is desired. See the documentation of "
    "grid_sample for details."
)


def _linspace_from_neg_one(n, align_corners, np_dtype):
    """ATen's: n points spanning [-1, 1] (the pixel centres), or the pixel corners scaled in."""
    if n <= 1:
        return np.zeros(max(n, 1), dtype=np_dtype)
    r = np.linspace(-1, 1, n).astype(np_dtype)
    return r if align_corners else r * np_dtype(n - 1) / np_dtype(n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta``
    (``N x 2 x 3`` / ``N x 3 x 4``) applied to the normalised output coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.shape}.")
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.shape}.")
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    if theta.shape[0] != n:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {theta.shape[-1]}] "
            f"but got: [{theta.shape[0]}, {theta.shape[-1]}].")
    np_dtype = np.float64 if str(theta.dtype) == "torch.float64" else np.float32
    # base[..., :] = (x, y[, z], 1) over the output positions, x varying fastest
    axes = [_linspace_from_neg_one(s, align_corners, np_dtype) for s in reversed(spatial_size)]
    mesh = np.meshgrid(*reversed(axes), indexing="ij")[::-1]  # x, y[, z], each of spatial_size
    base = np.stack([*mesh, np.ones(tuple(spatial_size), dtype=np_dtype)], axis=-1)
    base = tensor(base.reshape(1, -1, len(spatial_size) + 1), dtype=theta.dtype)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape(n, *spatial_size, len(spatial_size))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` (N, C, H, W) sampled at the normalised positions ``grid`` (N, Ho, Wo, 2), or
    ``input`` (N, C, D, H, W) at ``grid`` (N, Do, Ho, Wo, 3): bilinear (trilinear for 5-D),
    nearest or bicubic (4-D only), with zeros / border / reflection padding."""
    if align_corners is None:
        # after the checks of mode and padding_mode (made natively), as PyTorch warns
        if mode in ("bilinear", "nearest", "bicubic") and padding_mode in ("zeros", "border", "reflection"):
            warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    return _core._grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def channel_shuffle(input, groups):
    r"""Rearranges the ``C`` channels of an ``(N, C, *)`` input as ``(N, C / g, g, *)``: channel
    ``i * (C / g) + j`` goes to position ``j * g + i``."""
    if input.dim() <= 2:
        raise RuntimeError(
            "channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"[{', '.join(str(int(s)) for s in input.shape)}]"
        )
    groups = _int_arg(groups, "channel_shuffle", "groups", 2)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    shape = tuple(input.shape)
    return input.reshape(shape[:1] + (groups, c // groups) + shape[2:]).transpose(1, 2).reshape(shape)


def native_channel_shuffle(input, groups):
    r"""``channel_shuffle`` (PyTorch's native kernel of the same rearrangement)."""
    return channel_shuffle(input, groups)
