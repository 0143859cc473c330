"""``pad`` of ``ferrograd.nn.functional``: constant, reflect, replicate and circular padding.

Constant, reflection and replication padding run in native kernels; circular padding is a
composition of tensor ops. The argument checks follow ATen's ``*_pad{1,2,3}d``.
"""

from ... import _core
from ..._factories import arange
from ._utils import _fmt, _int_list

__all__ = ["pad"]

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
