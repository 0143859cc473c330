"""Speed of every op in the op table (tests/native/op_db.py) against PyTorch, op by op.

    python3 benches/op_matrix.py                  # full run (5 rounds per cell)
    python3 benches/op_matrix.py --quick          # 3 rounds
    python3 benches/op_matrix.py --ops add,conv --sizes 16,64K --no-bwd

Every row of ``OP_DB`` is timed (a new row shows up by itself) with its first variant
(``--variants all``: every variant), at three sizes -- 16, 64K and 4M elements in the main
input -- and three layouts:

* ``contig``  -- every input contiguous;
* ``bcast``   -- one operand broadcast: the last tensor input has shape (1, ..., 1, N)
                 (ops with a single tensor input, or with no broadcasting, show ``-``);
* ``strided`` -- the main input is a non-contiguous leaf: ``base.transpose(0, 1)`` of a
                 contiguous tensor, or ``base[..., ::2]`` (``base.mT`` for the second matmul
                 operand, as in ``x @ w.t()``).

and in two modes: ``fwd`` (inputs without grad) and ``f+b`` (forward, then ``backward`` with a
fixed random gradient for every differentiable output, then the leaves' ``.grad`` reset).

Inputs come from the row's samples: the first sample that fits is scaled to the size (float
values are redrawn from the sample's own values, so each op stays in its domain).  Elementwise-
like rows (all tensor inputs of one shape) are scaled generically; rows whose inputs have
different shapes (matmul, conv, norms, index ops, ...) have a builder in ``BUILDERS``.  A row
that cannot be scaled or run at some size is printed as ``n/a`` and listed at the end with the
reason; ``-`` marks a layout or mode that does not apply.

The two libraries run in the same process, alternating over interleaved rounds; each cell is
the median over rounds of the paired ratio torch time / ferrograd time (above 1 means ferrograd
is faster).  Before timing, the outputs (and, for f+b, the input gradients) of the two
libraries are compared with a loose tolerance; a cell whose results disagree is marked ``!``.
The run ends with the geometric mean, the cells below 1.0x and the 16-element cells below 2x.
"""

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy or torch is imported

import argparse
import gc
import json
import math
import statistics
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "native"))

# ferrograd is loaded before torch, as in compare_torch.py
# isort: off
from op_db import OP_DB, VIEWS  # noqa: E402

import ferrograd  # noqa: E402
import torch  # noqa: E402
# isort: on

LIBS = {"torch": torch, "ferrograd": ferrograd}
LAYOUTS = ("contig", "bcast", "strided")
MODES = ("fwd", "f+b")
DEFAULT_SIZES = "16,64K,4M"


def _swap_view(d0, d1):
    """(contiguous base from the logical array, view of the base tensor) for transpose(d0, d1)."""
    return (lambda a: np.ascontiguousarray(np.swapaxes(a, d0, d1)), lambda t: t.transpose(d0, d1))


# op_db's views, plus the last-two-dims transpose (the weight in ``x @ w.t()``) and
# attention heads split off a projection (batch, seq, heads, dim) -> (batch, heads, seq, dim)
ALL_VIEWS = {**VIEWS, "mT": _swap_view(-1, -2), "heads": _swap_view(1, 2)}


class NotApplicable(Exception):
    """This layout / mode does not apply to the op (printed as "-")."""


# ---------------------------------------------------------------------------
# shapes and values at a size
# ---------------------------------------------------------------------------


def scale_shape(shape, n):
    """``shape`` resized to ``n`` elements: size-1 dims are kept, the others balanced
    (inner dims get the larger share); exact when ``n`` is a power of two."""
    free = [i for i, s in enumerate(shape) if s != 1]
    if not free:
        raise ValueError(f"no dimension to scale in {tuple(shape)}")
    out = list(shape)
    if n & (n - 1) == 0:
        e = n.bit_length() - 1
        for k, i in enumerate(free):
            out[i] = 2 ** (e // len(free) + (k >= len(free) - e % len(free)))
    else:
        rest = n
        for k, i in enumerate(free):
            out[i] = rest if k == len(free) - 1 else max(1, round(rest ** (1 / (len(free) - k))))
            rest = max(1, rest // out[i])
    return tuple(out)


def two_d(n):
    return scale_shape((2, 2), n)


def _batch_and_channels(n):
    return (16, 16) if n >= 2 ** 20 else (8, 8) if n >= 2 ** 12 else (1, 1)


def channels_first(n, spatial_dims):
    """(batch, channels, *spatial) with about ``n`` elements."""
    b, c = _batch_and_channels(n)
    return (b, c) + scale_shape((2,) * spatial_dims, max(1, n // (b * c)))


def batched(n):
    """(batch, rows, cols) with about ``n`` elements, for bmm-like ops."""
    b = _batch_and_channels(n)[0]
    return (b,) + two_d(max(1, n // b))


def attention_shape(n):
    """(batch, heads, seq, head_dim): seq 256 and head_dim 64 from 64K elements up."""
    if n < 2 ** 16:
        return (1, 1) + two_d(n)
    bh = n // (256 * 64)
    heads = min(8, bh)
    return (bh // heads, heads, 256, 64)


class Values:
    """Deterministic input values."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def like(self, a, shape):
        """An array of ``shape`` drawn from the values of the sample array ``a``: keeps the
        op's domain (positive for log, away from 0 for div, a grid for comparisons...)."""
        a = np.asarray(a)
        flat = a.ravel()
        if a.dtype == bool:
            return self.rng.uniform(size=shape) < min(max(flat.mean(), 0.1), 0.9)
        out = self.rng.choice(flat, size=shape)
        if a.dtype.kind == "f":
            if not np.all(flat == np.round(flat)):  # jitter, except for grid values
                out = out * self.rng.uniform(0.95, 1.05, size=shape)
            out = out.astype(np.float32)
        return out

    def idx(self, shape, high):
        return self.rng.integers(0, high, size=shape, dtype=np.int64)

    def distinct(self, k, high):
        """``k`` distinct indices below ``high``, in random order."""
        return self.rng.permutation(high)[:k].astype(np.int64)

    def f(self, shape):
        return self.rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


# ---------------------------------------------------------------------------
# cases: an op's inputs at a size and layout
# ---------------------------------------------------------------------------


@dataclass
class Case:
    inputs: list  # logical values: arrays (made tensors) or Python values (passed as is)
    kwargs: dict
    views: dict = field(default_factory=dict)  # input index -> ALL_VIEWS kind
    const: frozenset = frozenset()  # float inputs that never require grad


def _arrays(sample):
    return [i for i, a in enumerate(sample.inputs) if isinstance(a, np.ndarray)]


def _auto_view(shape):
    return "T" if len(shape) >= 2 and shape[0] > 1 and shape[1] > 1 else "slice"


def resized(s, vals, layout, shapes, args=None, strided=None, bcast=None, **kwargs):
    """A Case from sample ``s``: array inputs at ``shapes`` ({index: shape, or an array used
    as is}), non-array inputs replaced by ``args`` ({index: value}), kwargs updated.

    layout "bcast" replaces the shape of input ``bcast[0]`` by ``bcast[1]``; layout "strided"
    passes input ``strided`` (an index, or (index, view kind), or a list of those) as a
    non-contiguous view."""
    inputs = list(s.inputs)
    for i, value in (args or {}).items():
        inputs[i] = value
    if layout == "bcast":
        if bcast is None:
            raise NotApplicable("no broadcasting operand")
        shapes = {**shapes, bcast[0]: bcast[1]}
    for i, shape in shapes.items():
        inputs[i] = shape if isinstance(shape, np.ndarray) else vals.like(s.inputs[i], shape)
    views = {}
    if layout == "strided":
        if strided is None:
            raise NotApplicable("no tensor input")
        for item in strided if isinstance(strided, list) else [strided]:
            i, kind = item if isinstance(item, tuple) else (item, None)
            views[i] = kind or _auto_view(inputs[i].shape)
    return Case(inputs, {**s.kwargs, **kwargs}, views, s.const)


def generic_sample(op, variant):
    """First sample whose tensor inputs all have one (non-empty, scalable) shape."""
    for s in op.sample_list():
        idx = _arrays(s)
        if not s.applies_to(variant) or not idx:
            continue
        shape = s.inputs[idx[0]].shape
        if all(s.inputs[i].shape == shape for i in idx) and any(d > 1 for d in shape) \
                and 0 not in shape:
            return s
    return None


def generic(op, s, n, layout, vals):
    """Elementwise-like rows: every tensor input gets the scaled shape of the first one; the
    last one is the broadcast operand, the first float one the strided input."""
    idx = _arrays(s)
    shape = scale_shape(s.inputs[idx[0]].shape, n)
    floats = [i for i in idx if s.inputs[i].dtype.kind == "f"]
    bcast = None
    if len(idx) > 1 and len(shape) > 1:
        bcast = (idx[-1], (1,) * (len(shape) - 1) + shape[-1:])
    return resized(s, vals, layout, {i: shape for i in idx}, bcast=bcast,
                   strided=floats[0] if floats else idx[0])


def generic_then(fix):
    """The generic builder, then ``fix(case, main_shape)`` adjusts size-dependent arguments."""

    def build(op, s, n, layout, vals):
        case = generic(op, s, n, layout, vals)
        fix(case, case.inputs[_arrays(s)[0]].shape)
        return case

    return build


def _narrow_fix(case, shape):
    case.inputs[1:4] = [0, shape[0] // 4, max(1, shape[0] // 2)]  # dim, start, length


def _split_fix(case, shape):
    case.inputs[1] = max(1, shape[0] // 4)  # four pieces


def _reshape_fix(case, shape):
    case.kwargs["shape"] = (-1, shape[-1])


def _matmul(op, s, n, layout, vals):
    b, m, k = batched(n)
    bcast = (1, (k, m)) if op.name == "matmul" else None  # bmm does not broadcast
    return resized(s, vals, layout, {0: (b, m, k), 1: (b, k, m)}, strided=(1, "mT"), bcast=bcast)


def _mm(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: (c, r)}, strided=(1, "T"))


def _outer(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r,), 1: (c,)}, strided=(0, "slice"))


def _square_of_vector(op, s, n, layout, vals):
    """diag / diag_embed / vander of a vector: ``isqrt(n)`` elements in, a square of about ``n`` out."""
    return resized(s, vals, layout, {0: (max(1, math.isqrt(n)),)}, strided=(0, "slice"))


def _pdist(op, s, n, layout, vals):
    """At most 64 rows of n / 64 features: its pairwise differences hold 64 * n elements."""
    r = max(2, min(64, n // 2))
    return resized(s, vals, layout, {0: (r, max(1, n // r))}, strided=0)


def _dot(op, s, n, layout, vals):
    return resized(s, vals, layout, {0: (n,), 1: (n,)}, strided=(0, "slice"))


def _expand(op, s, n, layout, vals):
    r, c = two_d(n)  # the output has n elements
    return resized(s, vals, layout, {0: (r, 1)}, args={1: r, 2: c}, strided=0)


def _cat(op, s, n, layout, vals):
    shape = two_d(n)
    return resized(s, vals, layout, {0: shape, 1: shape}, strided=0)


def _gather(op, s, n, layout, vals):
    r, c = two_d(n)
    index = vals.idx((r, max(1, c // 2)), c)
    return resized(s, vals, layout, {0: (r, c), 2: index}, args={1: 1}, strided=0)


def _index_select(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 2: vals.idx((max(1, r // 2),), r)},
                   args={1: 0}, strided=0)


def _embedding(op, s, n, layout, vals):
    r, c = two_d(n)  # an (r, c) table, r lookups
    return resized(s, vals, layout, {0: vals.idx((r,), r), 1: (r, c)}, strided=(1, "T"))


def _pair_with_targets(op, s, n, layout, vals):
    """two (r, c) inputs compared row by row, one target per row"""
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: (r, c), 2: vals.like(s.inputs[2], (r,))},
                   strided=[0, 1])


def _kron(op, s, n, layout, vals):
    """(r, c) kron (4, 4): the output has 16 times the input's elements, so the input gets
    n / 16."""
    r, c = two_d(max(1, n // 16))
    return resized(s, vals, layout, {0: (r, c), 1: (4, 4)}, strided=0)


def _tensordot(op, s, n, layout, vals):
    """(a, k, k) x (k, k, b) contracted over two dims (the first sample's dims=2)."""
    a, k = two_d(n)
    k = max(1, math.isqrt(k))
    return resized(s, vals, layout, {0: (a, k, k), 1: (k, k, a)}, strided=(1, "T"))


def _cdist(op, s, n, layout, vals):
    """x1 (r, 64) against x2 (r, 64): r^2 distances of 64 features."""
    r = max(1, n // 64)
    r = max(1, min(r, 1024))
    return resized(s, vals, layout, {0: (r, min(64, n)), 1: (r, min(64, n))}, strided=(0, "slice"))


def _take(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: vals.idx((max(1, n // 2),), r * c)}, strided=0)


def _take_along_dim(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: vals.idx((r, max(1, c // 2)), c)}, strided=0)


def _index_fill(op, s, n, layout, vals):
    r, c = two_d(n)  # a quarter of the columns filled
    return resized(s, vals, layout, {0: (r, c), 2: vals.idx((max(1, c // 4),), c)}, strided=0)


def _masked_scatter(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: vals.like(s.inputs[1], (r, c)), 2: (r * c,)},
                   strided=0)


def _index_put(op, s, n, layout, vals):
    r, c = two_d(n)  # half of the rows replaced, each once (PyTorch leaves repeats unspecified)
    k = max(1, r // 2)
    return resized(s, vals, layout, {0: (r, c), 1: vals.distinct(k, r), 2: (k, c)}, strided=0)


def _tri_indices(op, s, n, layout, vals):
    """the indices of a triangle of an (r, r) matrix with about n elements; no tensor input"""
    if layout != "contig":
        raise NotApplicable("no tensor input")
    r = max(1, math.isqrt(n))
    return resized(s, vals, layout, {}, args={0: r, 1: r})


def _one_hot(op, s, n, layout, vals):
    r, c = two_d(n)  # the output has n elements
    k = min(8, c)
    return resized(s, vals, layout, {0: vals.idx((r, max(1, c // k)), k)}, strided=0,
                   num_classes=k)


def _grid_sample(op, s, n, layout, vals):
    shape = channels_first(n, s.inputs[0].ndim - 2)
    # as many sampling points as input positions, drawn from the sample grid's range
    grid = (shape[0], *shape[2:], len(shape) - 2)
    return resized(s, vals, layout, {0: shape, 1: grid}, strided=0)


def _conv(op, s, n, layout, vals):
    nd = s.inputs[0].ndim - 2
    shape = channels_first(n, nd)
    c = shape[1]
    if "transpose" in op.name:
        cout, weight = c, (c, c)
    else:
        cout, weight = 2 * c, (2 * c, c)
    shapes = {0: shape, 1: weight + (3,) * nd}
    if len(s.inputs) > 2 and isinstance(s.inputs[2], np.ndarray):
        shapes[2] = (cout,)
    return resized(s, vals, layout, shapes, strided=0)


def _norm(op, s, n, layout, vals):
    """layer_norm normalizes the last dim; group/batch norm have per-channel parameters."""
    args = {}
    if op.name.endswith("layer_norm"):
        shape = two_d(n)
        features = shape[-1]
        args[1] = (features,)
    else:
        shape = channels_first(n, max(1, s.inputs[0].ndim - 2))
        features = shape[1]
        if op.name.endswith("group_norm"):
            args[1] = 2 if features % 2 == 0 else 1
    shapes = {i: (features,) for i in _arrays(s)[1:] if s.inputs[i].ndim == 1}
    shapes[0] = shape
    return resized(s, vals, layout, shapes, args=args, strided=0)


def _sdpa(op, s, n, layout, vals):
    """strided: q, k and v are heads split off a (batch, seq, heads, head_dim) projection."""
    shape = attention_shape(n)
    return resized(s, vals, layout, {0: shape, 1: shape, 2: shape},
                   strided=[(i, "heads") for i in range(3)])


def _bilinear(op, s, n, layout, vals):
    """(rows, k) inputs and a (16, k, k) weight, k at most 64."""
    k = min(64, two_d(n)[1])
    r = max(1, n // k)
    shapes = {0: (r, k), 1: (r, k), 2: (16, k, k)}
    if len(s.inputs) > 3 and isinstance(s.inputs[3], np.ndarray):
        shapes[3] = (16,)
    return resized(s, vals, layout, shapes, strided=0)


def _max_unpool(op, s, n, layout, vals):
    """Kernel 2 (stride 2): each value goes back to a position of its own window."""
    nd = s.inputs[0].ndim - 2
    shape = channels_first(n, nd)
    grid = np.meshgrid(*[2 * np.arange(d) + vals.idx((d,), 2) for d in shape[2:]], indexing="ij")
    flat = np.ravel_multi_index(grid, [2 * d for d in shape[2:]])
    indices = np.broadcast_to(flat, shape).astype(np.int64).copy()
    return resized(s, vals, layout, {0: shape, 1: indices}, args={2: 2}, strided=0)


def _channel_shuffle(op, s, n, layout, vals):
    shape = channels_first(n, 1)
    return resized(s, vals, layout, {0: shape}, args={1: 2 if shape[1] % 2 == 0 else 1}, strided=0)


def linalg_shape(n):
    """(batch, k, k) for the torch.linalg rows: one 4x4 matrix at 16 elements, a batch of 8x8
    matrices up to 4K (64 of them), then one k x k matrix (16K: 128x128, 64K: 256x256), at most
    512x512."""
    if n <= 16:
        return (1, 4, 4)
    if n <= 4096:
        return (n // 64, 8, 8)
    k = min(512, math.isqrt(n))
    return (1, k, k)


def _linalg(op, s, n, layout, vals):
    """A well-conditioned square A (its values plus 3 sqrt(k) I) and, for solve / lstsq, a
    right-hand side B of A's shape; strided: A transposed."""
    b, k, _ = linalg_shape(n)
    shape = (b, k, k) if b > 1 else (k, k)
    shapes = {0: vals.like(s.inputs[0], shape) + 3 * math.sqrt(k) * np.eye(k)}
    if len(_arrays(s)) > 1:
        shapes[1] = shape
    return resized(s, vals, layout, shapes, strided=(0, "mT"))


def _prelu(op, s, n, layout, vals):
    """an (N, C, H, W) input, one weight per channel"""
    shape = channels_first(n, 2)
    return resized(s, vals, layout, {0: shape, 1: (shape[1],)}, strided=0)


def _addmv(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r,), 1: (r, c), 2: (c,)}, strided=(1, "T"), bcast=(0, (1,)))


def _addr(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: (r,), 2: (c,)}, strided=(0, "T"), bcast=(0, (c,)))


def _baddbmm(op, s, n, layout, vals):
    """input + batch1 @ batch2 (baddbmm: per batch; addbmm: summed over the batches)"""
    b, m, k = batched(n)
    shapes = {0: (b, m, m) if op.name == "baddbmm" else (m, m), 1: (b, m, k), 2: (b, k, m)}
    return resized(s, vals, layout, shapes, strided=(2, "mT"), bcast=(0, (m,)))


def _pair_of_vectors(op, s, n, layout, vals):
    """meshgrid / cartesian_prod of two vectors whose grid has about n points"""
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r,), 1: (c,)}, strided=(0, "slice"))


def _combinations(op, s, n, layout, vals):
    """the pairs of an isqrt(2n)-element vector: about n pairs"""
    return resized(s, vals, layout, {0: (max(2, math.isqrt(2 * n)),)}, strided=(0, "slice"))


def _block_diag(op, s, n, layout, vals):
    """two square blocks whose block-diagonal matrix has about n elements"""
    r = max(1, math.isqrt(n) // 2)
    return resized(s, vals, layout, {0: (r, r), 1: (r, r)}, strided=(0, "T"))


def _broadcast_to(op, s, n, layout, vals):
    r, c = two_d(n)  # the output has n elements
    return resized(s, vals, layout, {0: (r, 1)}, args={1: (r, c)}, strided=0)


def _halves(op, s, n, layout, vals):
    """two vectors of n / 2 elements (hstack)"""
    return resized(s, vals, layout, {0: (n // 2,), 1: (n // 2,)}, strided=(0, "slice"))


def _two_pieces_fix(case, shape):
    """split into two pieces: 2 sections (hsplit / vsplit), or sizes summing to the dim"""
    case.inputs[1] = 2 if isinstance(case.inputs[1], int) else [shape[0] // 2, shape[0] - shape[0] // 2]


def _view_fix(case, shape):
    case.inputs[1] = (-1, shape[-1])


def _select_scatter(op, s, n, layout, vals):
    r, c = two_d(n)
    return resized(s, vals, layout, {0: (r, c), 1: (c,)}, strided=0)


def _diagonal_scatter(op, s, n, layout, vals):
    r = max(1, math.isqrt(n))
    return resized(s, vals, layout, {0: (r, r), 1: (r,)}, strided=0)


def _index_copy(op, s, n, layout, vals):
    """half of the columns replaced (index_copy: each once; index_reduce: any)"""
    r, c = two_d(n)
    k = max(1, c // 2)
    index = vals.distinct(k, c) if op.name.startswith("index_copy") else vals.idx((k,), c)
    return resized(s, vals, layout, {0: (r, c), 2: index, 3: (r, k)}, strided=0)


def _put(op, s, n, layout, vals):
    """a quarter of the elements replaced, each once"""
    r, c = two_d(n)
    k = max(1, n // 4)
    return resized(s, vals, layout, {0: (r, c), 1: vals.distinct(k, n), 2: (k,)}, strided=0)


# rows whose inputs do not all share one shape, or whose arguments depend on the size;
# every other row goes through `generic`
BUILDERS = {
    "matmul": _matmul,
    "bmm": _matmul,
    "mm": _mm,
    "outer": _outer,
    "ger": _outer,
    "chain_matmul": _mm,
    "addmv": _addmv,
    "addr": _addr,
    "baddbmm": _baddbmm,
    "addbmm": _baddbmm,
    "diag": _square_of_vector,
    "diag_embed": _square_of_vector,
    "linalg_vander": _square_of_vector,
    "vander": _square_of_vector,
    "diagflat": _square_of_vector,
    "meshgrid": _pair_of_vectors,
    "cartesian_prod": _pair_of_vectors,
    "combinations": _combinations,
    "block_diag": _block_diag,
    "nn.functional.pdist": _pdist,
    "dot": _dot,
    "expand": _expand,
    "broadcast_to": _broadcast_to,
    "expand_copy": _broadcast_to,
    "hstack": _halves,
    "hsplit": generic_then(_two_pieces_fix),
    "vsplit": generic_then(_two_pieces_fix),
    "split_with_sizes": generic_then(_two_pieces_fix),
    "split_with_sizes_copy": generic_then(_two_pieces_fix),
    "view_copy": generic_then(_view_fix),
    "select_scatter": _select_scatter,
    "diagonal_scatter": _diagonal_scatter,
    "index_copy": _index_copy,
    "index_copy_": _index_copy,
    "index_reduce": _index_copy,
    "index_reduce_": _index_copy,
    "put": _put,
    "put_": _put,
    "cat": _cat,
    "gather": _gather,
    "index_select": _index_select,
    "narrow": generic_then(_narrow_fix),
    "split": generic_then(_split_fix),
    "reshape": generic_then(_reshape_fix),
    "view": generic_then(_reshape_fix),
    "nn.functional.grid_sample": _grid_sample,
    "nn.functional.conv1d": _conv,
    "nn.functional.conv2d": _conv,
    "nn.functional.conv_transpose1d": _conv,
    "nn.functional.conv_transpose2d": _conv,
    "nn.functional.conv3d": _conv,
    "nn.functional.conv_transpose3d": _conv,
    "nn.functional.bilinear": _bilinear,
    "nn.functional.max_unpool1d": _max_unpool,
    "nn.functional.max_unpool2d": _max_unpool,
    "nn.functional.max_unpool3d": _max_unpool,
    "nn.functional.channel_shuffle": _channel_shuffle,
    "nn.functional.prelu": _prelu,
    "nn.functional.layer_norm": _norm,
    "nn.functional.group_norm": _norm,
    "nn.functional.batch_norm": _norm,
    "nn.functional.embedding": _embedding,
    "nn.functional.scaled_dot_product_attention": _sdpa,
    "nn.functional.one_hot": _one_hot,
    "nn.functional.cosine_embedding_loss": _pair_with_targets,
    "kron": _kron,
    "tensordot": _tensordot,
    "cdist": _cdist,
    "take": _take,
    "take_along_dim": _take_along_dim,
    "index_fill": _index_fill,
    "masked_scatter": _masked_scatter,
    "index_put": _index_put,
    "tril_indices": _tri_indices,
    "triu_indices": _tri_indices,
    **{name: _linalg for name in (
        "linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "logdet", "linalg_cholesky",
        "linalg_qr", "linalg_svd", "linalg_svd_full", "linalg_svdvals", "linalg_eigh",
        "linalg_eigvalsh", "linalg_pinv", "linalg_pinv_hermitian", "linalg_lstsq")},
}


def first_sample(op, variant):
    for s in op.sample_list():
        if s.applies_to(variant) and not any(a.size == 0 for a in s.inputs
                                             if isinstance(a, np.ndarray)):
            return s
    return None


def build_case(op, variant, n, layout, vals):
    builder = BUILDERS.get(op.name)
    s = first_sample(op, variant) if builder else generic_sample(op, variant)
    if s is None:
        raise ValueError("no sample to scale (tensor inputs of different shapes: "
                         "add a builder to BUILDERS)")
    return (builder or generic)(op, s, n, layout, vals)


# ---------------------------------------------------------------------------
# running a case in one library
# ---------------------------------------------------------------------------


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _to_numpy(t):
    return np.array(t.detach().numpy(), copy=True)


def make_inputs(lib, case, requires_grad):
    """(positional inputs, leaves that require grad); views are applied to the contiguous
    base and detached, so the leaf itself is non-contiguous."""
    args, leaves = [], []
    for i, a in enumerate(case.inputs):
        if not isinstance(a, np.ndarray):
            args.append(a)
            continue
        view = case.views.get(i)
        base = ALL_VIEWS[view][0](a) if view else a
        dtype = {"f": lib.float32, "b": lib.bool}.get(a.dtype.kind, lib.int64)
        t = lib.tensor(base, dtype=dtype)
        if view:
            t = ALL_VIEWS[view][1](t).detach()
        if requires_grad and a.dtype.kind == "f" and i not in case.const:
            t.requires_grad_()
            leaves.append(t)
        args.append(t)
    return args, leaves


def prepare(lib, op, variant, case, mode, vals, grad_arrays=None):
    """Runs the op once (checking it works) and returns (step, outputs, grads, grad_arrays):
    ``step()`` is the timed call; outputs / grads are NumPy copies for the comparison.
    ``grad_arrays`` (the fixed output gradients) are drawn on the first library's outputs
    and reused for the second."""
    fn = op.variants[variant]
    kwargs = case.kwargs
    args, leaves = make_inputs(lib, case, requires_grad=(mode == "f+b"))
    outs = _as_list(fn(lib, *args, **kwargs))
    out_np = [_to_numpy(o) if isinstance(o, lib.Tensor) else np.asarray(o) for o in outs]
    if mode == "fwd":
        return (lambda: fn(lib, *args, **kwargs)), out_np, [], None
    pos = [i for i, o in enumerate(outs) if isinstance(o, lib.Tensor) and o.requires_grad]
    if not pos:
        raise NotApplicable("no differentiable output")
    if grad_arrays is None:
        grad_arrays = [vals.f(tuple(outs[i].shape)) for i in pos]
    grads = [lib.tensor(g, dtype=outs[i].dtype) for g, i in zip(grad_arrays, pos)]

    def backward(outs):
        if len(pos) == 1:
            outs[pos[0]].backward(grads[0])
        else:
            lib.autograd.backward([outs[i] for i in pos], grads)
        for t in leaves:
            t.grad = None

    def step():
        backward(_as_list(fn(lib, *args, **kwargs)))

    lib.autograd.backward([outs[i] for i in pos], grads)
    grad_np = [_to_numpy(t.grad) if t.grad is not None else None for t in leaves]
    for t in leaves:
        t.grad = None
    return step, out_np, grad_np, grad_arrays


def mismatch(ours, theirs, what):
    """None if the two lists of arrays agree loosely, else a short description."""
    if len(ours) != len(theirs):
        return f"{what}: {len(ours)} vs {len(theirs)} arrays"
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a is None or b is None:
            if a is not b:
                return f"{what}[{k}]: missing"
            continue
        if a.shape != b.shape:
            return f"{what}[{k}]: shape {a.shape} vs {b.shape}"
        if b.dtype.kind != "f":
            if not np.array_equal(a, b):
                return f"{what}[{k}]: {np.mean(a != b):.1%} differ"
            continue
        finite = np.abs(b[np.isfinite(b)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        if not np.allclose(a, b, rtol=2e-3, atol=2e-3 * scale, equal_nan=True):
            err = np.nanmax(np.abs(a.astype(np.float64) - b)) if a.size else 0.0
            return f"{what}[{k}]: max abs err {err:.3g} (scale {scale:.3g})"
    return None


def timed(step, number):
    start = time.perf_counter()
    for _ in range(number):
        step()
    return (time.perf_counter() - start) / number


def calibrate(step, target):
    """Calls per measurement so that a measurement takes about ``target`` seconds (from the
    fastest of a few batches: one descheduled call must not set the count)."""
    per_call = timed(step, 1)
    if per_call >= 4 * target:
        return 1
    per_call = min(per_call, timed(step, 1), timed(step, 1))
    number = 1
    while per_call * number < target / 4 and number < 4096:
        number *= 8
        per_call = min(per_call, timed(step, number))
    return max(1, round(target / per_call))


def error_text(exc):
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= 110 else text[:107] + "..."


def run_cell(op, variant, case, layout, mode, vals, cfg):
    """One cell: {"status": "ok" | "skip" | "na", ...}."""
    steps, results = {}, {}
    grad_arrays = None
    for name in ("torch", "ferrograd"):  # torch first: its failures say the case is invalid
        try:
            step, out_np, grad_np, grad_arrays = prepare(LIBS[name], op, variant, case, mode,
                                                         vals, grad_arrays)
        except NotApplicable as exc:
            return {"status": "skip", "reason": str(exc)}
        except Exception as exc:
            if name == "torch" and layout != "contig":  # the op does not take this layout
                return {"status": "skip", "reason": f"torch: {error_text(exc)}"}
            return {"status": "na", "reason": f"{name}: {error_text(exc)}"}
        steps[name], results[name] = step, (out_np, grad_np)
    cell = {"status": "ok", "mismatch": (
        mismatch(results["ferrograd"][0], results["torch"][0], "output")
        or mismatch(results["ferrograd"][1], results["torch"][1], "grad"))}
    del results
    gc.disable()
    try:
        numbers = {name: calibrate(step, cfg.target) for name, step in steps.items()}
        times = {name: [] for name in steps}
        ratios = []
        for r in range(cfg.rounds):
            for name in (("ferrograd", "torch") if r % 2 == 0 else ("torch", "ferrograd")):
                time.sleep(0.001)  # let the other library's worker threads go idle
                times[name].append(timed(steps[name], numbers[name]))
            ratios.append(times["torch"][-1] / times["ferrograd"][-1])
    except Exception as exc:
        return {"status": "na", "reason": f"while timing: {error_text(exc)}"}
    finally:
        gc.enable()
    cell.update(ratio=statistics.median(ratios), ratios=ratios,
                ferrograd_s=statistics.median(times["ferrograd"]),
                torch_s=statistics.median(times["torch"]), calls=numbers)
    return cell


# ---------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------


def parse_size(text):
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024 ** 2}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * mult)


def size_label(n):
    for unit, mult in (("M", 1024 ** 2), ("K", 1024)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def short(name):
    return name.replace("nn.functional.", "F.")


def fmt_cell(cell):
    if cell is None:
        return ""
    if cell["status"] == "skip":
        return "-"
    if cell["status"] == "na":
        return "n/a"
    r = cell["ratio"]
    digits = 3 if r < 0.1 else 2 if r < 10 else 1 if r < 100 else 0
    text = f"{r:.{digits}f}"
    return text + ("!" if cell["mismatch"] else "")


CELL_W = 7
LABEL_W = 34


def print_header(modes):
    group = len(modes) * CELL_W
    print(f"{'op / variant':{LABEL_W}} {'size':>4} |" + "|".join(
        f"{layout:^{group}}" for layout in LAYOUTS))
    print(f"{'':{LABEL_W}} {'':>4} |" + "|".join(
        "".join(f"{m:>{CELL_W - 1}} " for m in modes) for _ in LAYOUTS))
    print("-" * (LABEL_W + 6 + len(LAYOUTS) * (group + 1)))


def print_row(label, n, cells, modes):
    print(f"{label:{LABEL_W}} {size_label(n):>4} |" + "|".join(
        "".join(f"{fmt_cell(cells.get((layout, m))):>{CELL_W - 1}} " for m in modes)
        for layout in LAYOUTS), flush=True)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def cell_name(rec):
    where = f"{size_label(rec['size'])} {rec['layout']} {rec['mode']}"
    return f"{short(rec['op'])} [{short(rec['variant'])}] {where}"


def print_cells(title, recs):
    print(f"\n{title} ({len(recs)}):")
    for rec in sorted(recs, key=lambda r: r["ratio"]):
        print(f"  {rec['ratio']:7.3f}x  {cell_name(rec)}")


def summarize(records, sizes, modes, elapsed):
    ok = [r for r in records if r["status"] == "ok"]
    skipped = sum(r["status"] == "skip" for r in records)
    print(f"\n{len(ok)} cells measured ({skipped} not applicable) in {elapsed / 60:.1f} min; "
          f"geometric mean torch/ferrograd = {geomean([r['ratio'] for r in ok]):.2f}x")
    for mode in modes:
        parts = []
        for n in sizes:
            sel = [r["ratio"] for r in ok if r["mode"] == mode and r["size"] == n]
            parts.append(f"{size_label(n)} {geomean(sel):.2f}x ({len(sel)})")
        print(f"  {mode:4}: " + ", ".join(parts))
    print_cells("cells below 1.0x", [r for r in ok if r["ratio"] < 1.0])
    if 16 in sizes:
        print_cells("16-element cells below 2x (target for the overhead regime)",
                    [r for r in ok if r["size"] == 16 and r["ratio"] < 2.0])
    bad = [r for r in ok if r["mismatch"]]
    if bad:
        print(f"\nresults differing from torch, marked ! ({len(bad)}):")
        for r in bad:
            print(f"  {cell_name(r)}: {r['mismatch']}")
    na = [r for r in records if r["status"] == "na"]
    print(f"\nnot measured, n/a ({len(na)}):")
    for r in na:
        print(f"  {cell_name(r)}: {r['reason']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 5")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of each library (2, the machine's cores, for the figures; "
                             "1 gives steadier ratios while another process is busy)")
    parser.add_argument("--ops", help="comma-separated substrings of op names (=name: that name exactly)")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help=f"comma-separated element counts, K/M suffixes ({DEFAULT_SIZES})")
    parser.add_argument("--no-bwd", action="store_true", help="forward only")
    parser.add_argument("--variants", choices=("first", "all"), default="first",
                        help="time each row's first variant (default) or all of them")
    parser.add_argument("--json", default=str(Path(__file__).with_name("op_matrix.json")),
                        help="where to write the cells (default benches/op_matrix.json)")
    cfg = parser.parse_args()
    cfg.rounds = 3 if cfg.quick else 5
    cfg.target = 2e-3  # seconds per measurement (one call if a call takes longer)
    sizes = [parse_size(s) for s in cfg.sizes.split(",")]
    modes = MODES[:1] if cfg.no_bwd else MODES
    wanted = [w.strip() for w in cfg.ops.split(",")] if cfg.ops else None
    ops = [op for op in OP_DB if wanted is None or any(
        op.name == w[1:] if w.startswith("=") else w in op.name for w in wanted)]

    torch.set_num_threads(cfg.threads)
    if hasattr(ferrograd, "set_num_threads"):
        ferrograd.set_num_threads(cfg.threads)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), ferrograd "
          f"{getattr(ferrograd, '__version__', '?')}, float32, {len(ops)} ops, "
          f"{cfg.rounds} rounds{', quick' if cfg.quick else ''}; "
          f"cells: torch time / ferrograd time (>1: ferrograd faster)")
    print_header(modes)

    records = []
    start = time.perf_counter()
    for op in ops:
        variants = list(op.variants) if cfg.variants == "all" else list(op.variants)[:1]
        for variant in variants:
            for k, n in enumerate(sizes):
                vals = Values(zlib.crc32(f"{op.name}/{n}".encode()))
                gc.collect()
                cells = {}
                for layout in LAYOUTS:
                    try:
                        case, error = build_case(op, variant, n, layout, vals), None
                    except NotApplicable as exc:
                        case, error = None, {"status": "skip", "reason": str(exc)}
                    except Exception as exc:
                        case, error = None, {"status": "na",
                                             "reason": f"no input at this size: {error_text(exc)}"}
                    for mode in modes:
                        if error is not None:
                            cell = dict(error)
                        elif mode == "f+b" and not op.differentiable:
                            cell = {"status": "skip", "reason": "not differentiable"}
                        else:
                            cell = run_cell(op, variant, case, layout, mode, vals, cfg)
                        cells[(layout, mode)] = cell
                        records.append({"op": op.name, "variant": variant, "size": n,
                                        "layout": layout, "mode": mode, **cell})
                    case = None
                if k == 0:
                    label = short(op.name) + (f" [{short(variant)}]" if len(sizes) == 1 else "")
                else:
                    label = "  " + short(variant) if k == 1 else ""
                print_row(label[:LABEL_W], n, cells, modes)
    elapsed = time.perf_counter() - start
    summarize(records, sizes, modes, elapsed)
    with open(cfg.json, "w") as f:
        json.dump({"torch": torch.__version__, "quick": cfg.quick, "rounds": cfg.rounds,
                   "sizes": sizes, "seconds": elapsed, "cells": records}, f, indent=1)
    print(f"\nwrote {cfg.json}")


if __name__ == "__main__":
    main()
