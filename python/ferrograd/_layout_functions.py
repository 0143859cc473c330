"""Stacking, splitting, rotating and regridding: ``broadcast_to``, ``meshgrid``, the ``*stack``
and ``*split`` families, ``rot90``, ``repeat_interleave``, ``diff``, the ``*_scatter`` functions and
the creation functions that build on them.

Each torch function takes ``input`` first; ``TensorMethods`` holds the Tensor methods of the same
names (``_tensor.install`` puts them on ``Tensor``).

Everything differentiable is composed of differentiable ops (``cat``, ``narrow``, ``expand``,
``index_select``, ``index_put``, ``scatter_reduce``, ``flip``, ...), so backward, double backward
and forward-mode AD follow from them. Index tensors (``repeat_interleave``'s, ``combinations``'s)
are computed with NumPy: they carry no gradient.

Differences from PyTorch: ``as_strided`` / ``as_strided_scatter`` are not provided (the core has
no view of arbitrary strides; ``Tensor.unfold`` is a native view).
"""

import builtins
import itertools
import math
import operator
import warnings

import numpy as np

from . import _core, _dtype
from ._core import Tensor, cat, int64, stack
from ._factories import _check_requires_grad, from_numpy, tensor
from ._functions import clone
from ._index_functions import index_put, scatter_reduce
from ._memory_format import contiguous_format
from ._op_args import _index, _int_list, _invalid_combination, _no_out, _type_name
from ._shape_functions import _check_tensor, _scalar_type_name, _wrap_dim, diagonal
from ._tensor import _copy_in

__all__: list[str] = [
    # broadcasting and grids
    "broadcast_to", "meshgrid", "cartesian_prod", "combinations",
    # stacking
    "hstack", "vstack", "dstack", "column_stack", "row_stack", "atleast_1d", "atleast_2d", "atleast_3d",
    "block_diag",
    # splitting
    "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes",
    # reshaping, rotating, repeating
    "ravel", "rot90", "fliplr", "flipud", "repeat_interleave", "diff", "diagflat",
    # scattering and writing
    "select_scatter", "slice_scatter", "diagonal_scatter", "index_copy", "index_reduce", "put", "fill", "fill_",
    "unravel_index",
    # copies of views
    "alias_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy", "select_copy", "slice_copy",
    "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
    "unfold_copy", "unsqueeze_copy", "view_copy", "narrow_copy",
    # creation
    "logspace", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "vander",
    "scalar_tensor", "asarray", "range", "empty_strided",
]


def _arange(n):
    """``0 .. n-1`` as an int64 tensor."""
    return _core._arange(0.0, float(n), 1.0, int64)


def _long(a):
    """An int64 tensor holding the NumPy array ``a``."""
    return tensor(np.asarray(a, dtype=np.int64))


def _tensors(fname, tensors, name="tensors"):
    """The ``tuple of Tensors`` argument (a list or tuple of tensors), with PyTorch's TypeError."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{fname}(): argument '{name}' (position 1) must be tuple of Tensors, not {_type_name(tensors)}"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{fname}(): argument '{name}' (position 1) must be tuple of Tensors, but found element of type "
                f"{_type_name(t)} at pos {i}"
            )
    return list(tensors)


def _varargs_tensors(fname, tensors):
    """``f(a, b)`` or ``f([a, b])``: the tensors as a list."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return _tensors(fname, tensors)


def _slice_bounds(start, end, n):
    """``[start, end)`` of ``at::slice`` on a dim of size ``n``: negatives count from the end, then
    both are clamped into ``[0, n]`` with ``end >= start``."""
    start = 0 if start is None else start
    end = n if end is None else end
    if start < 0:
        start += n
    if end < 0:
        end += n
    start = min(max(start, 0), n)
    end = min(max(end, start), n)
    return start, end


def _front_order(ndim, dims):
    """The permutation moving ``dims`` (in order) to the front, the other dims after them."""
    return list(dims) + [d for d in builtins.range(ndim) if d not in dims]


def _put_at(input, dims, indices, values, accumulate=False):
    """``index_put`` of ``indices`` into the dims ``dims`` of ``input`` (moved to the front for
    it); ``values`` is laid out as ``input`` with those dims moved to the front."""
    order = _front_order(input.dim(), dims)
    out = index_put(input.permute(order), indices, values.to(input.dtype), accumulate)
    return out.permute([order.index(d) for d in builtins.range(input.dim())])


def _put_along(input, dim, index, values, accumulate=False):
    """``input`` with the slices at ``index`` (1-D) along ``dim`` replaced by (``accumulate``:
    increased by) the slices of ``values`` (shaped like ``input`` but along ``dim``)."""
    return _put_at(input, [dim], [index], values.permute(_front_order(values.dim(), [dim])), accumulate)


# --- broadcasting and grids


def broadcast_to(input, size):
    """``input`` expanded to ``size`` (``-1`` keeps a dim): a view."""
    _check_tensor("broadcast_to", input)
    return input.expand(_int_list("broadcast_to", "size", size, 2, True))


_MESHGRID_WARNING = "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0-D / 1-D tensors: output ``i`` holds ``tensors[i]`` along dim ``i``
    (``indexing="ij"``, the default, with a warning when not given) or with the first two dims
    swapped (``"xy"``). Views of the inputs."""
    ts = _varargs_tensors("meshgrid", tensors)
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in ts:
        if t.dim() > 1:
            sizes = ",".join(str(s) for s in t.shape)
            raise RuntimeError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                f"[ torch.{_scalar_type_name(t.dtype)}Tensor{{{sizes}}} ]"
            )
        if t.dtype != ts[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    grids = [t.reshape([-1 if k == i else 1 for k in builtins.range(len(ts))]).expand(shape) for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _check_vector(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors: one row per combination, the last tensor varying
    fastest (a single tensor is returned as it is)."""
    ts = _varargs_tensors("cartesian_prod", tensors)
    for t in ts:
        _check_vector(t)
    if len(ts) == 1:
        return ts[0]
    return stack([g.reshape(-1) for g in meshgrid(ts, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of the 1-D ``input`` (with repeats where
    ``with_replacement``), as rows in lexicographic order of positions."""
    _check_tensor("combinations", input)
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _core._full([0], 0, input.dtype)
    n = input.shape[0]
    grid = np.indices((n,) * r).reshape(r, -1)  # every r-tuple of positions, row-major
    keep = np.ones(grid.shape[1], dtype=bool)
    before = operator.le if with_replacement else operator.lt
    for a, b in itertools.pairwise(grid):
        keep &= before(a, b)
    picked = grid[:, keep]
    return stack([input[_long(p)] for p in picked], 1)


# --- stacking


def _atleast(fname, tensors, nd):
    """``atleast_{nd}d``: one tensor gives a tensor; several (or a sequence) a tuple."""
    def grow(t):
        if t.dim() >= nd:
            return t
        if t.dim() == 0:
            return t.reshape([1] * nd)
        if t.dim() == 1:  # (n,) -> (1, n) or (1, n, 1)
            return t.unsqueeze(0) if nd == 2 else t.unsqueeze(0).unsqueeze(-1)
        return t.unsqueeze(-1)  # (m, n) -> (m, n, 1)

    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return grow(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for t in tensors:
        if not isinstance(t, Tensor):
            raise _invalid_combination(fname, tuple(tensors), {}, ["Tensor input", "tuple of Tensors tensors"])
    return tuple(grow(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor as at least 1-D (a 0-D one as shape (1,)); views."""
    return _atleast("atleast_1d", tensors, 1)


def atleast_2d(*tensors):
    """Each tensor as at least 2-D: (n,) -> (1, n); views."""
    return _atleast("atleast_2d", tensors, 2)


def atleast_3d(*tensors):
    """Each tensor as at least 3-D: (n,) -> (1, n, 1), (m, n) -> (m, n, 1); views."""
    return _atleast("atleast_3d", tensors, 3)


def _nonempty(fname, tensors):
    ts = _tensors(fname, tensors)
    if not ts:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return ts


def hstack(tensors, *, out=None):
    """Concatenation along dim 1 (along dim 0 for 1-D tensors)."""
    _no_out("hstack", {"out": out})
    ts = atleast_1d(_nonempty("hstack", tensors))
    return cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors, *, out=None):
    """Concatenation of the tensors made at least 2-D along dim 0."""
    _no_out("vstack", {"out": out})
    return cat(atleast_2d(_nonempty("vstack", tensors)), 0)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenation of the tensors made at least 3-D along dim 2."""
    _no_out("dstack", {"out": out})
    return cat(atleast_3d(_nonempty("dstack", tensors)), 2)


def column_stack(tensors, *, out=None):
    """Concatenation along dim 1, 0-D and 1-D tensors taken as columns."""
    _no_out("column_stack", {"out": out})
    ts = _nonempty("column_stack", tensors)
    return cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts], 1)


def block_diag(*tensors):
    """The block-diagonal matrix of the tensors (0-D and 1-D ones taken as 1-row matrices), in
    their promoted dtype."""
    ts = _tensors("block_diag", list(tensors))
    for i, t in enumerate(ts):
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.dim()} dimensions"
            )
    if not ts:
        return _core._full([1, 0], 0, _dtype._default_dtype)
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = _dtype.promote_types(dtype, t.dtype)
    blocks = [t.reshape(1, -1) if t.dim() < 2 else t for t in ts]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:  # each block padded with zeros to the full width, then stacked row-wise
        w = b.shape[1]
        rows.append(_core._constant_pad_nd(b.to(dtype), [left, width - left - w], 0))
        left += w
    return cat(rows, 0)


# --- splitting


def _split_dim(fname, input, dim):
    _check_tensor(fname, input)
    if input.dim() == 0:
        raise RuntimeError(f"{fname} expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    return _wrap_dim(dim, input.dim())


def _split_at(input, dim, indices):
    """The pieces of ``input`` between the ``indices`` along ``dim`` (``at::slice`` bounds)."""
    n, out, start = input.shape[dim], [], 0
    for end in [*indices, n]:
        s, e = _slice_bounds(start, end, n)
        out.append(input.narrow(dim, s, e - s))
        start = end
    return tuple(out)


def _split_sections(input, dim, sections):
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size, extra = divmod(input.shape[dim], sections)
    sizes = [size + 1] * extra + [size] * (sections - extra)
    return _split_at(input, dim, list(itertools.accumulate(sizes))[:-1])


_TENSOR_SPLIT_OVERLOADS = ["Tensor input, tuple of ints indices, int dim = 0",
                           "Tensor input, Tensor tensor_indices_or_sections, int dim = 0",
                           "Tensor input, int sections, int dim = 0"]


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """``input`` split along ``dim`` into ``sections`` pieces of sizes differing by at most one
    (the first ones larger), or at the positions ``indices``; a 0-D int64 tensor is a number of
    sections, a 1-D one the indices. Views."""
    arg = next((v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections) if v is not None),
               None)
    if isinstance(arg, Tensor):
        d = _split_dim("tensor_split", input, dim)
        if arg.dtype != int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{_scalar_type_name(arg.dtype)}"
            )
        if arg.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
                f"tensor, but got a tensor with {arg.dim()} dims"
            )
        if arg.dim() == 0:
            return _split_sections(input, d, int(arg.item()))
        return _split_at(input, d, arg.tolist())
    if _index(arg) is not None:
        return _split_sections(input, _split_dim("tensor_split", input, dim), _index(arg))
    if isinstance(arg, (list, tuple)) and all(_index(i) is not None for i in arg):
        return _split_at(input, _split_dim("tensor_split", input, dim), [_index(i) for i in arg])
    args = (input,) + tuple(v for v in (indices_or_sections,) if v is not None)
    kw = {k: v for k, v in (("sections", sections), ("indices", indices),
                            ("tensor_indices_or_sections", tensor_indices_or_sections)) if v is not None}
    raise _invalid_combination("tensor_split", args, kw, _TENSOR_SPLIT_OVERLOADS)


def _directional_split(fname, input, indices_or_sections, dim, min_dims):
    _check_tensor(fname, input)
    if input.dim() < min_dims:
        what = "1 dimension" if min_dims == 1 else f"{min_dims} dimension"
        raise RuntimeError(
            f"torch.{fname} requires a tensor with at least {what}, but got a tensor with {input.dim()} dimensions!"
        )
    size = _index(indices_or_sections)
    if size is not None and not isinstance(indices_or_sections, Tensor):
        if size == 0 or input.shape[dim] % size:
            raise RuntimeError(
                f"torch.{fname} attempted to split along dimension {dim}, but the size of the dimension "
                f"{input.shape[dim]} is not divisible by the split_size {size}!"
            )
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 of a 1-D tensor); sections must divide the size."""
    dim = 0 if isinstance(input, Tensor) and input.dim() == 1 else 1
    return _directional_split("hsplit", input, indices_or_sections, dim, 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of an at least 2-D tensor; sections must divide the size."""
    return _directional_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of an at least 3-D tensor; sections must divide the size."""
    return _directional_split("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    """``input`` split along ``dim`` into pieces of the sizes ``split_sizes`` (summing to the
    dim's size). Views."""
    _check_tensor("split_with_sizes", input)
    return input.split(_int_list("split_with_sizes", "split_sizes", split_sizes, 2, False), dim)


def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` (ferrograd does not track views' versions differently for the unsafe forms)."""
    _check_tensor("unsafe_chunk", input)
    return input.chunk(chunks, dim)


def unsafe_split(input, split_size, dim=0):
    """``split`` with an int ``split_size``."""
    _check_tensor("unsafe_split", input)
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes``."""
    return split_with_sizes(input, split_sizes, dim)


# --- reshaping, rotating, repeating


def ravel(input):
    """``input`` flattened to 1-D (a view where possible)."""
    _check_tensor("ravel", input)
    return input.reshape(-1)


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by ``k`` quarter turns in the plane ``dims``, from the first dim towards
    the second."""
    _check_tensor("rot90", input)
    dims = _int_list("rot90", "dims", dims, 3, False)
    n = input.dim()
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = _wrap_dim(dims[0], n), _wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return _core._flip(input, [d1]).transpose(d0, d1)
    if k == 2:
        return _core._flip(input, [d0, d1])
    if k == 3:
        return _core._flip(input, [d0]).transpose(d0, d1)
    return clone(input, memory_format=contiguous_format)


def fliplr(input):
    """``input`` with dim 1 reversed (left/right)."""
    _check_tensor("fliplr", input)
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _core._flip(input, [1])


def flipud(input):
    """``input`` with dim 0 reversed (up/down)."""
    _check_tensor("flipud", input)
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _core._flip(input, [0])


def _repeat_index(repeats, output_size=None):
    """``repeat_interleave(repeats)``: ``i`` repeated ``repeats[i]`` times, for a 1-D integer
    ``repeats``."""
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (int64, _core.int32):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{_scalar_type_name(repeats.dtype)}'")
    counts = repeats.detach().numpy().astype(np.int64)
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != int(counts.sum()):
        raise RuntimeError("allocated size does not match required size")
    return _long(np.repeat(np.arange(counts.size), counts))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (slice along ``dim``; of the flattened ``input`` without ``dim``) repeated
    ``repeats`` times (an int, or a 1-D tensor of counts, one per slice).
    ``repeat_interleave(repeats)`` alone gives the indices ``i`` repeated ``repeats[i]`` times."""
    _check_tensor("repeat_interleave", input)
    if repeats is None:
        return _repeat_index(input, output_size)
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = _wrap_dim(dim, input.dim())
        if input.dim() == 0:  # PyTorch's errors (from the ops it runs on the 0-d input)
            if isinstance(repeats, Tensor):
                raise IndexError("Dimension specified as 0 but tensor has no dimensions")
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    n = input.shape[d]
    if isinstance(repeats, Tensor) and repeats.dim() <= 1 and repeats.numel() == 1:
        if repeats.dtype not in (int64, _core.int32):
            raise NotImplementedError(
                f"\"repeat_interleave_cpu\" not implemented for '{_scalar_type_name(repeats.dtype)}'"
            )
        repeats = int(repeats.item())
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
    if isinstance(repeats, Tensor):
        if repeats.dim() == 1 and repeats.shape[0] != n:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = {repeats.shape[0]} "
                f"and input.size({d}) = {n}"
            )
        return input.index_select(d, _repeat_index(repeats, output_size))
    r = _int_list("repeat_interleave", "repeats", repeats, 2, True)[0]
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    if output_size is not None and output_size != n * r:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {n * r} but got {output_size}")
    shape = list(input.shape)
    x = input.unsqueeze(d + 1).expand(shape[:d + 1] + [r] + shape[d + 1:])
    return x.reshape(shape[:d] + [n * r] + shape[d + 1:])


def _check_diff_operand(input, other, name, dim):
    if other is None:
        return
    if not isinstance(other, Tensor):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {_type_name(other)}")
    if other.dim() != input.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i, (a, b) in enumerate(zip(input.shape, other.shape)):
        if i != dim and a != b:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input except along the "
                f"differencing dimension; input.size({i}) = {a}, but got tensor.size({i}) = {b}"
            )


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``!=`` of neighbours for bool tensors),
    after concatenating ``prepend`` / ``append`` on that dim."""
    _check_tensor("diff", input)
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.dim())
    _check_diff_operand(input, prepend, "prepend", d)
    _check_diff_operand(input, append, "append", d)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in builtins.range(min(n, x.shape[d])):
        m = x.shape[d] - 1
        hi, lo = x.narrow(d, 1, m), x.narrow(d, 0, m)
        x = hi != lo if x.dtype == _core.bool else hi - lo
    return x


def diagflat(input, offset=0):
    """The square matrix with the flattened ``input`` on diagonal ``offset``."""
    _check_tensor("diagflat", input)
    return _core._diag_embed(input.reshape(-1), offset, 0, 1)


# --- scattering and writing


def _check_src_shape(src, slice_shape):
    if list(src.shape) != list(slice_shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, slice size = "
            f"{list(slice_shape)}"
        )


def _assign_copy(input, index, src):
    """A copy of ``input`` with ``copy[index] = src``: one copy and one strided write (the
    assignment's node, CopySlices, gives ``src`` its gradient)."""
    out = clone(input)
    out[index] = src
    return out


def select_scatter(input, src, dim, index):
    """``input`` with the slice ``input.select(dim, index)`` replaced by ``src``."""
    _check_tensor("select_scatter", input)
    _check_tensor("select_scatter", src, "src", 2)
    if input.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}"
        )
    _check_src_shape(src, [s for k, s in enumerate(input.shape) if k != d])
    return _assign_copy(input, (slice(None),) * d + (index,), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with the slice ``start:end:step`` of dim ``dim`` replaced by ``src``."""
    _check_tensor("slice_scatter", input)
    _check_tensor("slice_scatter", src, "src", 2)
    if input.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.dim())
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = input.shape[d]
    s, e = _slice_bounds(start, end, n)
    count = -(-(e - s) // step)
    _check_src_shape(src, [count if k == d else size for k, size in enumerate(input.shape)])
    return _assign_copy(input, (slice(None),) * d + (slice(s, e, step),), src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with its ``diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    _check_tensor("diagonal_scatter", input)
    _check_tensor("diagonal_scatter", src, "src", 2)
    _check_src_shape(src, diagonal(input, offset, dim1, dim2).shape)
    d1, d2 = _wrap_dim(dim1, input.dim()), _wrap_dim(dim2, input.dim())
    length = src.shape[-1]
    if length == 0:
        return clone(input)
    pos = _arange(length)
    rows, cols = pos + max(-offset, 0), pos + max(offset, 0)
    return _put_at(input, [d1, d2], [rows, cols], src.permute(_front_order(src.dim(), [src.dim() - 1])))


def _check_index_copy(input, dim, index, source):
    d = _wrap_dim(dim, input.dim())
    if index.dim() >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    k = index.numel()
    if source.dim() == 0 and k != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {k})")
    if source.dim() != input.dim() and source.dim() != 0 and input.dim() != 0:
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source "
            f"dimensionality ({source.dim()}), destination dimensionality ({input.dim()})"
        )
    if index.dtype != int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_scalar_type_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{_scalar_type_name(input.dtype)} and (source) {_scalar_type_name(source.dtype)}"
        )
    dst_slice = [s for i, s in enumerate(input.shape) if i != d]
    src_slice = [s for i, s in enumerate(source.shape) if i != d]
    if dst_slice != src_slice:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: "
            f"{' '.join(map(str, dst_slice))} at dimension {d} and source slice shape: "
            f"{' '.join(map(str, src_slice))} at dimension 0."
        )
    if source.dim() and k != source.shape[d]:
        raise IndexError(
            f"index_copy_(): Number of indices ({k}) should be equal to source.size(dim) ({source.shape[d]})"
        )
    n = input.shape[d] if input.dim() else 1
    if k:
        for bad in (int(index.min()), int(index.max())):
            if not 0 <= bad < n:
                raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {n}")
    return d


def index_copy(input, dim, index, source):
    """``input`` with its slices at ``index`` along ``dim`` replaced by the slices of ``source``
    (in order)."""
    _check_tensor("index_copy", input)
    _check_tensor("index_copy", index, "index", 3)
    _check_tensor("index_copy", source, "source", 4)
    d = _check_index_copy(input, dim, index, source)
    if input.dim() == 0:
        return _put_along(input.reshape(1), 0, index.reshape(-1), source.reshape(1)).reshape(())
    if source.dim() == 0:
        source = source.reshape(1)
    return _put_along(input, d, index.reshape(-1), source)


_INDEX_REDUCES = ("prod", "mean", "amax", "amin")
_index_reduce_warned = False  # PyTorch's TORCH_WARN_ONCE


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """``input`` with the slices of ``source`` reduced (``"prod"``, ``"mean"``, ``"amax"``,
    ``"amin"``) into its slices at ``index`` along ``dim``, with the values already there
    (``include_self``) or without them: ``scatter_reduce`` with ``index`` spread over
    ``source``'s shape."""
    global _index_reduce_warned
    _check_tensor("index_reduce", input)
    _no_out("index_reduce", {"out": out})
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if not _index_reduce_warned:
        _index_reduce_warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    d = _wrap_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError(
            f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
            f"{_scalar_type_name(index.dtype)} and size: {list(index.shape)}"
        )
    if index.dtype not in (int64, _core.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_scalar_type_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_scalar_type_name(input.dtype)}) and source "
                           f"({_scalar_type_name(source.dtype)}) must have the same scalar type")
    x, src = (input.reshape(1), source.reshape(1)) if input.dim() == 0 else (input, source)
    k = index.numel()
    if src.dim() != x.dim() or any(a != b for i, (a, b) in enumerate(zip(x.shape, src.shape)) if i != d):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
            f"{list(input.shape)} source.shape = {list(source.shape)}"
        )
    if k != src.shape[d]:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({k}) should be equal to source.size(dim): ({src.shape[d]}), for "
            f"dim: {d}"
        )
    if k and (int(index.min()) < 0 or int(index.max()) >= x.shape[d]):
        raise IndexError("index out of range in self")
    idx = index.to(int64).reshape([-1 if i == d else 1 for i in builtins.range(x.dim())]).expand(src.shape)
    return scatter_reduce(x, d, idx, src, reduce, include_self=include_self).reshape(input.shape)


def put(input, index, source, accumulate=False):
    """``input`` (taken as flat) with the elements at ``index`` replaced by (``accumulate``:
    increased by) the elements of ``source``."""
    _check_tensor("put", input)
    _check_tensor("put", index, "index", 2)
    _check_tensor("put", source, "source", 3)
    if index.numel() != source.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got source.numel() = "
            f"{source.numel()}, index.numel() = {index.numel()}"
        )
    if index.dtype != int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_scalar_type_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(
            f"put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{_scalar_type_name(input.dtype)} and source.dtype = {_scalar_type_name(source.dtype)}"
        )
    if index.numel() == 0:
        return clone(input)
    n = input.numel()
    if n == 0:
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    for bad in (int(index.min()), int(index.max())):
        if not -n <= bad < n:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    flat = index_put(input.reshape(-1), [index.reshape(-1) % n], source.reshape(-1), accumulate)
    return flat.reshape(input.shape)


def _fill_value(fname, value):
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(
            f"{fname} only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions."
        )
    return value


def fill(input, value):
    """A tensor like ``input`` filled with ``value`` (a number, or a 0-D tensor that then gets the
    gradient); ``input`` gets a zero gradient."""
    _check_tensor("fill", input)
    value = _fill_value("fill_", value)
    return input.masked_fill(_core._full([], True, _core.bool), value)  # a 0-d mask, broadcast


def fill_(input, value):
    """``input.fill_(value)``."""
    _check_tensor("fill_", input)
    return input.fill_(value)


def unravel_index(indices, shape):
    """The coordinates in an array of shape ``shape`` of the flat ``indices`` (negatives wrap
    around), as a tuple of int64 tensors shaped like ``indices``."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a Tensor, but got {_type_name(indices)}")
    if indices.is_floating_point() or indices.dtype == _core.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if _index(shape) is not None and not isinstance(shape, Tensor):
        shape = [_index(shape)]
    elif not isinstance(shape, (list, tuple)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for s in shape:
        if _index(s) is None or isinstance(s, Tensor):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(s)}")
    shape = [int(s) for s in shape]
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    if not shape:
        return ()
    coefs = list(itertools.accumulate(reversed(shape[1:] + [1]), operator.mul))[::-1]
    coords = indices.to(int64).unsqueeze(-1).floor_divide(_long(coefs)) % _long(shape)
    return tuple(coords.unbind(-1))


# --- fill_diagonal_, sum_to_size


def _diagonal_positions(shape, wrap):
    """The flat positions of the main diagonal of a tensor of ``shape`` (``fill_diagonal_``)."""
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = shape[0], shape[1]
    if len(shape) > 2 and any(s != height for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    strides = list(itertools.accumulate(reversed(shape[1:] + [1]), operator.mul))
    step = sum(strides)
    count = min(height, width)
    if wrap and len(shape) == 2 and height > width + 1:
        count = -(-math.prod(shape) // step)
    return _arange(count) * step


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal (all indices equal) in place; with ``wrap``, the diagonal of a tall
    matrix restarts every ``width + 1`` rows."""
    # the diagonal's positions as one index tensor per dim: one native indexed write (CopySlices
    # under autograd, as PyTorch records)
    self[unravel_index(_diagonal_positions(list(self.shape), wrap), list(self.shape))] = fill_value
    return self


def sum_to_size(self, *size):
    """``self`` summed down to ``size`` (which must broadcast to ``self.shape``)."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    target = _int_list("sum_to_size", "size", size[0] if len(size) == 1 else list(size), 1, True)
    shape = list(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t != s and t != 1 for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"size {{{target}}} is not expandable to size {{{shape}}}.")
    out = self.sum(list(builtins.range(lead))) if lead else self
    dims = [i for i, (t, s) in enumerate(zip(target, out.shape)) if t == 1 and s != 1]
    return out.sum(dims, keepdim=True) if dims else out


# --- copies of views


def _copy(t):
    return clone(t, memory_format=contiguous_format)


def _copy_fn(fname, view):
    """The ``*_copy`` function of ``view``: the view, then a contiguous copy."""
    def fn(input, *args, out=None, **kwargs):
        _check_tensor(fname, input)
        _no_out(fname, {"out": out})
        result = view(input, *args, **kwargs)
        return tuple(_copy(t) for t in result) if isinstance(result, (tuple, list)) else _copy(result)

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"A contiguous copy of the result of ``{fname[:-5]}``."
    return fn


def _expand(input, size, *, implicit=False):
    return input.expand(_int_list("expand_copy", "size", size, 2, True))


def _slice(input, dim=0, start=None, end=None, step=1):
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input.dim())
    s, e = _slice_bounds(start, end, input.shape[d])
    return input[(slice(None),) * d + (slice(s, e, step),)]


def _view(input, size):
    if isinstance(size, _core.dtype):
        return input.view(size)
    if not isinstance(size, (list, tuple)):
        raise _invalid_combination("view_copy", (input, size), {}, [
            "Tensor input, torch.dtype dtype, *, Tensor out = None",
            "Tensor input, tuple of ints size, *, Tensor out = None"])
    return input.view(list(size))


def _narrow(input, dim, start, length):
    return input.narrow(dim, int(start), length)


alias_copy = _copy_fn("alias_copy", lambda input: input)
detach_copy = _copy_fn("detach_copy", Tensor.detach)
diagonal_copy = _copy_fn("diagonal_copy", diagonal)
expand_copy = _copy_fn("expand_copy", _expand)
permute_copy = _copy_fn("permute_copy", lambda input, dims: input.permute(list(dims)))
select_copy = _copy_fn("select_copy", Tensor.select)
slice_copy = _copy_fn("slice_copy", _slice)
split_copy = _copy_fn("split_copy", lambda input, split_size, dim=0: input.split(split_size, dim))
split_with_sizes_copy = _copy_fn("split_with_sizes_copy", split_with_sizes)
squeeze_copy = _copy_fn("squeeze_copy", Tensor.squeeze)
t_copy = _copy_fn("t_copy", Tensor.t)
transpose_copy = _copy_fn("transpose_copy", Tensor.transpose)
unbind_copy = _copy_fn("unbind_copy", lambda input, dim=0: input.unbind(dim))
unfold_copy = _copy_fn("unfold_copy", Tensor.unfold)
unsqueeze_copy = _copy_fn("unsqueeze_copy", Tensor.unsqueeze)
view_copy = _copy_fn("view_copy", _view)
narrow_copy = _copy_fn("narrow_copy", _narrow)


# --- creation


def _number(v):
    """A 0-D tensor's value; numbers as they are."""
    return v.item() if isinstance(v, Tensor) else v


def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False,
             out=None):
    """``steps`` values ``base ** e`` for ``e`` evenly spaced from ``start`` to ``end``."""
    _no_out("logspace", {"out": out})
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or _dtype._default_dtype
    exponents = _core._linspace(float(_number(start)), float(_number(end)), int(steps), _core.float64)
    t = (float(base) ** exponents).to(dtype)
    return _check_requires_grad(t, requires_grad)


_C_TYPE_NAMES = {"Long": "long int", "Int": "int", "Short": "short int", "Char": "signed char",
                 "Byte": "unsigned char", "Bool": "bool"}


def _window(fname, window_length, periodic, dtype, requires_grad, formula):
    """A window of ``window_length`` points (``formula(k, N)`` for ``k`` in ``0 .. N-1``; with
    ``periodic``, the first ``window_length`` points of one of ``N = window_length + 1``)."""
    if _index(window_length) is None or isinstance(window_length, Tensor):
        raise TypeError(f"{fname}(): argument 'window_length' (position 1) must be int, not "
                        f"{_type_name(window_length)}")
    if not isinstance(periodic, bool):
        raise TypeError(f"{fname}(): argument 'periodic' (position 2) must be bool, not {_type_name(periodic)}")
    dtype = dtype or _dtype._default_dtype
    if not dtype.is_floating_point:
        raise RuntimeError(
            f"{fname} expects floating point dtypes, got: TensorOptions(dtype="
            f"{_C_TYPE_NAMES[_scalar_type_name(dtype)]}, device=cpu, layout=Strided (default), requires_grad=false "
            "(default), pinned_memory=false, memory_format=(nullopt))"
        )
    n = int(window_length)
    if n < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        return _check_requires_grad(_core._full([n], 1, dtype), requires_grad)
    big = n + 1 if periodic else n
    values = formula(np.arange(big, dtype=np.float64), big)[:n]
    return _check_requires_grad(tensor(values, dtype=dtype), requires_grad)


def _cosine_sum(*coefs):
    """``sum_j (-1)^j coefs[j] cos(2 pi j k / (N - 1))``."""
    def formula(k, big):
        x = 2 * np.pi * k / (big - 1)
        return sum((-1) ** j * a * np.cos(j * x) for j, a in enumerate(coefs))

    return formula


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   _cosine_sum(float(alpha), float(beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The triangular Bartlett window ``1 - |2k / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, big: 1 - np.abs(2 * k / (big - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)``, ``a = (N - 1) / 2``."""
    def formula(k, big):
        a = (big - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((k - a) / a) ** 2, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, formula)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N-1), ..., x ** 0`` (ascending
    with ``increasing``), in at least int64."""
    _check_tensor("vander", x)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _dtype.promote_types(x.dtype, int64)
    columns = [_core._full([x.shape[0], min(n, 1)], 1, dtype)]
    if n > 1:
        columns.append(x.to(dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    out = cat(columns, 1)
    return out if increasing else _core._flip(out, [1])


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """A 0-D tensor holding the number ``s``, of the default float dtype unless ``dtype``."""
    if isinstance(s, Tensor) and s.dim() == 0:
        s = s.item()
    if not isinstance(s, (int, float, np.integer, np.floating, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {_type_name(s)}")
    t = _core._full([], s.item() if isinstance(s, np.generic) else s, dtype or _dtype._default_dtype)
    return _check_requires_grad(t, requires_grad)


_asarray_grad_warned = False  # PyTorch's TORCH_WARN_ONCE


def _alias_error(have, want):
    return ValueError(f"can't alias tensor with dtype '{_scalar_type_name(have)}' into dtype "
                      f"'{_scalar_type_name(want)}'.")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor: a tensor or a NumPy array shares its memory unless ``copy`` is true or
    ``dtype`` differs (``copy=False`` then raises); other objects (lists, numbers) are copied."""
    global _asarray_grad_warned
    if isinstance(obj, Tensor):
        t = obj
        if dtype is not None and dtype != t.dtype:
            if copy is False:
                raise _alias_error(t.dtype, dtype)
            t = t.to(dtype)
        elif copy:
            t = clone(t)
    elif isinstance(obj, np.ndarray) and not copy and dtype in (None, _dtype._NP_TO_DTYPE.get(obj.dtype.name)):
        t = from_numpy(obj)
    else:
        if isinstance(obj, np.ndarray) and copy is False:
            raise _alias_error(_dtype._NP_TO_DTYPE[obj.dtype.name], dtype)
        try:
            t = tensor(obj, dtype=dtype)
        except TypeError:
            raise TypeError(f"new(): invalid data type '{_type_name(obj)}'") from None
    if requires_grad is None:
        if t.requires_grad and isinstance(obj, Tensor) and not _asarray_grad_warned:
            _asarray_grad_warned = True
            warnings.warn(
                "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of False. Pass "
                "requires_grad=False explicitly to get the old behavior and silence this warning.",
                UserWarning, stacklevel=2,
            )
        return t
    if not requires_grad:
        return t.detach() if t.requires_grad else t
    return t if t.requires_grad else _check_requires_grad(t, True)


_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).")


def range(start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False,  # noqa: A001
          out=None):
    """The deprecated inclusive range ``start, start + step, ..., <= end`` (with a warning), of the
    default float dtype unless ``dtype``."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    _no_out("range", {"out": out})
    start, end, step = (float(_number(v)) for v in (start, end, step))
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if step > 0 and end < start or step < 0 and end > start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    size = int((end - start) / step + 1)
    values = _arange(size).to(_core.float64) * step + start
    return _check_requires_grad(values.to(dtype or _dtype._default_dtype), requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of ``size`` with the strides ``stride`` (over zeroed memory)."""
    size = _int_list("empty_strided", "size", size, 1, False)
    stride = _int_list("empty_strided", "stride", stride, 2, False)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides ({len(stride)})"
        )
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {size}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={size} and strides={stride}")
    dtype = dtype or _dtype._default_dtype
    np_dtype = _dtype._DTYPE_TO_NP.get(dtype)
    if np_dtype is None or 0 in size:
        return _check_requires_grad(_core._full(size, 0, dtype), requires_grad)
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride))
    buffer = np.zeros(span, dtype=np_dtype)
    itemsize = buffer.itemsize
    view = np.lib.stride_tricks.as_strided(buffer, shape=size, strides=[s * itemsize for s in stride])
    return _check_requires_grad(from_numpy(view), requires_grad)


class TensorMethods:
    """The Tensor methods of this module's functions."""

    broadcast_to = broadcast_to
    tensor_split = tensor_split
    hsplit = hsplit
    vsplit = vsplit
    dsplit = dsplit
    split_with_sizes = split_with_sizes
    unsafe_chunk = unsafe_chunk
    unsafe_split = unsafe_split
    unsafe_split_with_sizes = unsafe_split_with_sizes
    ravel = ravel
    rot90 = rot90
    fliplr = fliplr
    flipud = flipud
    repeat_interleave = repeat_interleave
    diff = diff
    diagflat = diagflat
    select_scatter = select_scatter
    slice_scatter = slice_scatter
    diagonal_scatter = diagonal_scatter
    index_copy = index_copy
    index_reduce = index_reduce
    put = put
    fill_diagonal_ = fill_diagonal_
    sum_to_size = sum_to_size
    narrow_copy = narrow_copy

    def index_copy_(self, dim, index, source):
        return _copy_in(self, index_copy, dim, index, source)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        return _copy_in(self, index_reduce, dim, index, source, reduce, include_self=include_self)

    def put_(self, index, source, accumulate=False):
        return _copy_in(self, put, index, source, accumulate)
