"""Op table for ferrograd's generic op tests (PyTorch's OpInfo idea).

One ``OpInfo`` row per op.  A row says

* ``name``      -- id used in test names;
* ``variants``  -- how to call the op: ``{variant_id: callable(lib, *inputs, **kwargs)}``
                   where ``lib`` is the library module (``ferrograd``, or ``torch`` when
                   comparing against PyTorch).  Build it with :func:`V`, e.g.
                   ``V(fn="add", method="add", op=operator.add)`` exercises ``lib.add(a, b)``,
                   ``a.add(b)`` and ``a + b``;
* ``ref``       -- NumPy reference for the forward: ``ref(*arrays, **kwargs)``;
* ``samples``   -- ``samples(g) -> [Sample, ...]`` where ``g`` is a :class:`Gen`
                   (deterministic ``numpy.random.default_rng`` seeded from the op name);
* ``differentiable`` -- whether gradcheck / gradient tests apply.

A :class:`Sample` holds the positional inputs (NumPy arrays or plain Python
values), the kwargs, optional non-contiguous views and flags.  Float arrays are
turned into tensors of the dtype under test (float64 / float32) and -- for
gradient tests -- ``requires_grad=True``; int64 / bool arrays stay index / mask
tensors; anything else (Python scalars, tuples) is passed through unchanged.

``Sample(..., views={0: "T"})`` passes input 0 as ``base.transpose(0, 1)`` of a
contiguous tensor, ``views={0: "slice"}`` as ``base[..., ::2]``; the array in the
sample is always the *logical* value the op sees.

``gradcheck=False`` marks samples that sit on a point of non-differentiability
(ties in max, abs at 0, clamp at the boundary, ...): they are still used for the
forward tests and for the gradient comparison against PyTorch (which pins down
PyTorch's choice of subgradient), just not for finite differences.

``const=(i, ...)`` marks float inputs that are non-differentiable constants (batch-norm
running statistics): they are built with ``requires_grad=False`` in every test.

``xfail={"test_gradgradcheck": "reason"}`` marks a known ferrograd bug: that test of that
sample is a strict xfail (it must fail until the bug is fixed).

Adding an op = adding one ``OpInfo(...)`` to ``OP_DB``.

The module also holds ``PROMOTION_CASES`` (result dtype for int64/bool/mixed
inputs) and ``ERROR_CASES`` (exception type and message), both verified
against PyTorch 2.x.
"""

import math
import operator
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, List

import numpy as np

# ---------------------------------------------------------------------------
# sample inputs
# ---------------------------------------------------------------------------


class Gen:
    """Deterministic input generator (all floats are float64 arrays)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def f(self, *shape, lo=-2.0, hi=2.0, avoid=(), margin=0.1):
        """Uniform floats in [lo, hi), at least ``margin`` away from every point in ``avoid``."""
        a = np.asarray(self.rng.uniform(lo, hi, size=shape), dtype=np.float64)
        for _ in range(100):
            bad = np.zeros(a.shape, dtype=bool)
            for p in avoid:
                bad |= np.abs(a - p) < margin
            if not bad.any():
                break
            a[bad] = self.rng.uniform(lo, hi, size=int(bad.sum()))
        return a

    def pos(self, *shape, lo=0.5, hi=2.0):
        """Positive floats (domain of log / sqrt / rsqrt / pow base)."""
        return self.f(*shape, lo=lo, hi=hi)

    def nz(self, *shape):
        """Floats in [-2, 2) away from 0 (abs, sign, relu, division...)."""
        return self.f(*shape, avoid=(0.0,), margin=0.2)

    def distinct(self, *shape):
        """Floats that are pairwise >= 0.2 apart (no ties for max/min/sort-like ops)."""
        n = int(np.prod(shape, dtype=np.int64))
        vals = (self.rng.permutation(n) - n / 2) * 0.3 + self.rng.uniform(-0.05, 0.05, size=n)
        return np.asarray(vals, dtype=np.float64).reshape(shape)

    def idx(self, shape, high):
        """int64 indices in [0, high)."""
        return np.asarray(self.rng.integers(0, high, size=shape), dtype=np.int64)

    def mask(self, *shape, p=0.5):
        return np.asarray(self.rng.uniform(size=shape) < p)


@dataclass(frozen=True)
class Arg:
    """Placeholder for "sample input number i" inside an index expression."""

    i: int


class Sample:
    def __init__(self, *inputs, views=None, gradcheck=True, only=None, name=None, ref=None,
                 const=(), xfail=None, **kwargs):
        self.inputs = inputs
        self.kwargs = kwargs
        self.views = dict(views or {})
        self.gradcheck = gradcheck
        self.only = only  # restrict to variants whose id starts with one of these
        self.ref = ref  # per-sample reference override
        self.const = frozenset(const)  # float inputs that never require grad (running stats...)
        self.xfail = dict(xfail or {})  # test function name -> reason (known ferrograd bug)
        self.name = name or self._auto_name()

    def _auto_name(self):
        parts = []
        for i, a in enumerate(self.inputs):
            if isinstance(a, np.ndarray):
                s = "x".join(map(str, a.shape)) or "0d"
                if a.dtype != np.float64:
                    s += ":" + a.dtype.name
                if i in self.views:
                    s += "." + self.views[i]
                parts.append(s)
            else:
                parts.append(repr(a))
        kw = ",".join(f"{k}={_fmt(v)}" for k, v in self.kwargs.items())
        return "(" + ",".join(parts) + ")" + (("|" + kw) if kw else "")

    def applies_to(self, variant):
        """``only`` entries are exact variant ids or families ("fn", "method", "op")."""
        return self.only is None or variant in self.only or variant.split(".")[0] in self.only

    def __repr__(self):
        return f"Sample{self.name}"


def _fmt(v):
    if isinstance(v, slice):
        return f"{'' if v.start is None else v.start}:{'' if v.stop is None else v.stop}" + (
            f":{v.step}" if v.step is not None else "")
    if isinstance(v, tuple):
        return "(" + ",".join(_fmt(x) for x in v) + ")"
    if v is Ellipsis:
        return "..."
    if isinstance(v, Arg):
        return f"#{v.i}"
    return repr(v)


# Non-contiguous views: logical array -> (contiguous base array, lib view fn)
def _base_T(a):
    return np.ascontiguousarray(np.swapaxes(a, 0, 1))


def _base_slice(a):
    base = np.full(a.shape[:-1] + (2 * a.shape[-1],), 0.75, dtype=a.dtype)
    base[..., ::2] = a
    return base


VIEWS = {
    # kind: (make contiguous base from the logical array, view applied to the base tensor)
    "T": (_base_T, lambda t: t.transpose(0, 1)),
    "slice": (_base_slice, lambda t: t[..., ::2]),
}


# ---------------------------------------------------------------------------
# op rows
# ---------------------------------------------------------------------------


def _resolve(lib, path):
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _fn(path):
    def call(lib, *args, **kwargs):
        return _resolve(lib, path)(*args, **kwargs)

    return call


def _method(name):
    def call(lib, self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)

    return call


def V(fn=(), method=(), op=None, **custom):
    """Variants dict: ``fn`` / ``method`` are names (or tuples of names) called as
    ``lib.<fn>(*inputs, **kw)`` / ``inputs[0].<method>(*inputs[1:], **kw)``; ``op`` is a
    Python operator applied to the inputs; ``custom`` maps an id to a callable
    ``(lib, *inputs, **kw)``."""
    out = {}
    for name in (fn,) if isinstance(fn, str) else fn:
        out["fn." + name] = _fn(name)
    for name in (method,) if isinstance(method, str) else method:
        out["method." + name] = _method(name)
    if op is not None:
        out["op"] = lambda lib, *args, **kw: op(*args, **kw)
    out.update(custom)
    return out


@dataclass
class OpInfo:
    name: str
    variants: Dict[str, Callable]
    ref: Callable
    samples: Callable[[Gen], List[Sample]]
    differentiable: bool = True
    tol64: tuple = (1e-7, 1e-10)  # (rtol, atol) forward float64 vs numpy
    tol32: tuple = (1e-4, 1e-5)  # (rtol, atol) forward float32 vs numpy
    torch_tol32: tuple = None  # (rtol, atol) float32 vs PyTorch, if not the generic one
    gradcheck_kwargs: dict = field(default_factory=dict)

    def sample_list(self) -> List[Sample]:
        if not hasattr(self, "_samples"):
            samples = list(self.samples(Gen(zlib.crc32(self.name.encode()))))
            seen = set()
            for s in samples:  # make ids unique
                base, k = s.name, 1
                while s.name in seen:
                    k += 1
                    s.name = f"{base}#{k}"
                seen.add(s.name)
            self._samples = samples
        return self._samples


# ---------------------------------------------------------------------------
# sample families
# ---------------------------------------------------------------------------


def unary_samples(make=None):
    """Elementwise unary: ``make(g, *shape)`` draws values in the op's domain."""
    make = make or (lambda g, *s: g.f(*s))

    def samples(g):
        return [
            Sample(make(g, 3, 4)),
            Sample(make(g)),  # 0-d
            Sample(make(g, 5)),
            Sample(make(g, 2, 3, 4)),
            Sample(make(g, 3, 4), views={0: "T"}),
            Sample(make(g, 3, 4), views={0: "slice"}),
            # empty; not gradcheck-ed: torch.tensor(<empty ndarray>) has strides (0, 0),
            # which gradcheck (PyTorch's too) rejects as overlapping memory
            Sample(make(g, 0, 3), gradcheck=False),
        ]

    return samples


def binary_samples(make_a=None, make_b=None, scalars=(2.5, 3)):
    """Elementwise binary: same shape, broadcasting, 0-d, views, Python scalars."""
    make_a = make_a or (lambda g, *s: g.f(*s))
    make_b = make_b or make_a

    def samples(g):
        out = [
            Sample(make_a(g, 3, 4), make_b(g, 3, 4)),
            Sample(make_a(g, 3, 1), make_b(g, 1, 4)),
            Sample(make_a(g, 2, 3, 4), make_b(g, 4)),
            Sample(make_a(g, 4), make_b(g, 2, 3, 1)),
            Sample(make_a(g), make_b(g, 3, 4)),  # 0-d with 2-d
            Sample(make_a(g, 3, 4), make_b(g)),
            Sample(make_a(g), make_b(g)),
            Sample(make_a(g, 4, 3), make_b(g, 4, 3), views={0: "T"}),
            Sample(make_a(g, 3, 4), make_b(g, 4), views={0: "slice", 1: "slice"}),
        ]
        for s in scalars:  # tensor (op) Python scalar
            out.append(Sample(make_a(g, 3, 4), s))
        return out

    return samples


def reflected_samples(make=None, scalars=(2, 2.5)):
    """``scalar (op) tensor`` with Python int and float scalars."""
    make = make or (lambda g, *s: g.f(*s))

    def samples(g):
        out = []
        for s in scalars:
            out += [Sample(s, make(g, 3, 4)), Sample(s, make(g))]
        out.append(Sample(scalars[-1], make(g, 3, 4), views={1: "T"}))
        return out

    return samples


def reduction_samples(make=None, tuple_dims=True, empty_dims=False, scalar_ok=True):
    make = make or (lambda g, *s: g.f(*s))

    def samples(g):
        out = [
            Sample(make(g, 3, 4)),
            Sample(make(g, 2, 3, 4)),
            Sample(make(g, 3, 4), dim=1),
            Sample(make(g, 3, 4), dim=0, keepdim=True),
            Sample(make(g, 2, 3, 4), dim=-1),
            Sample(make(g, 2, 3, 4), dim=1, keepdim=True),
            Sample(make(g, 3, 4), views={0: "T"}, dim=0),
            Sample(make(g, 3, 4), views={0: "slice"}, dim=-1),
            Sample(make(g, 5)),
        ]
        if scalar_ok:
            out += [Sample(make(g)), Sample(make(g), dim=0), Sample(make(g), dim=-1, keepdim=True)]
        if tuple_dims:
            out += [
                Sample(make(g, 2, 3, 4), dim=(0, 2)),
                Sample(make(g, 2, 3, 4), dim=(-1, 0), keepdim=True),
            ]
        if empty_dims:  # PyTorch: dim=() / [] reduces over *all* dims (NumPy: over none)
            out.append(Sample(make(g, 3, 4), dim=()))
        return out

    return samples


# ---------------------------------------------------------------------------
# NumPy references (torch kwargs -> numpy)
# ---------------------------------------------------------------------------


def _axis(dim, ndim):
    if dim is None or ndim == 0:
        return None
    if isinstance(dim, (tuple, list)):
        return None if len(dim) == 0 else tuple(dim)
    return dim


def _reduce(npf):
    def ref(x, dim=None, keepdim=False):
        return npf(x, axis=_axis(dim, x.ndim), keepdims=keepdim)

    return ref


def _ref_var(npf):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if correction is None:
            correction = 0 if unbiased is False else 1
        with np.errstate(all="ignore"):
            return npf(x, axis=_axis(dim, x.ndim), ddof=correction, keepdims=keepdim)

    return ref


def _ref_logsumexp(x, dim, keepdim=False):
    ax = _axis(dim, x.ndim)
    m = np.max(x, axis=ax, keepdims=True)
    r = m + np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True))
    return r if keepdim else (np.squeeze(r, axis=ax) if x.ndim else r)


def _ref_norm(x, p="fro", dim=None, keepdim=False):
    ax = _axis(dim, x.ndim)
    if p in ("fro", 2, 2.0):
        return np.sqrt(np.sum(x * x, axis=ax, keepdims=keepdim))
    if p in (1, 1.0):
        return np.sum(np.abs(x), axis=ax, keepdims=keepdim)
    if p == math.inf:
        return np.max(np.abs(x), axis=ax, keepdims=keepdim)
    return np.sum(np.abs(x) ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)


def _ref_minmax(npf, argf):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return npf(x)
        ax = _axis(dim, x.ndim)
        return npf(x, axis=ax, keepdims=keepdim), argf(x, axis=ax, keepdims=keepdim)

    return ref


def _ref_arg(argf):
    def ref(x, dim=None, keepdim=False):
        return argf(x, axis=_axis(dim, x.ndim), keepdims=keepdim)

    return ref


def _ref_softmax(x, dim):
    ax = _axis(dim, x.ndim)
    e = np.exp(x - np.max(x, axis=ax, keepdims=True))
    return e / np.sum(e, axis=ax, keepdims=True)


def _ref_log_softmax(x, dim):
    ax = _axis(dim, x.ndim)
    m = np.max(x, axis=ax, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _ref_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _ref_clamp(x, min=None, max=None):
    r = x
    if min is not None:
        r = np.maximum(r, min)
    if max is not None:
        r = np.minimum(r, max)
    return r


def _ref_masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value, dtype=x.dtype), x)


def _ref_flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:])


def _ref_squeeze(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = dim if isinstance(dim, tuple) else (dim,)
    if x.ndim == 0:
        return x
    ax = tuple(d % x.ndim for d in dims if x.shape[d] == 1)
    return np.squeeze(x, axis=ax)


def _ref_expand(x, *sizes):
    lead = len(sizes) - x.ndim
    shape = [s if s != -1 else x.shape[i - lead] for i, s in enumerate(sizes)]
    return np.broadcast_to(x, shape)


def _ref_narrow(x, dim, start, length):
    start = start % x.shape[dim] if start < 0 else start
    return np.take(x, np.arange(start, start + length), axis=dim)


def _ref_split(x, split_size_or_sections, dim=0):
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        sizes = [split_size_or_sections] * (n // split_size_or_sections)
        if n % split_size_or_sections:
            sizes.append(n % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _ref_chunk(x, chunks, dim=0):
    n = x.shape[dim]
    return _ref_split(x, max(1, -(-n // chunks)), dim)


def _ref_gather(x, dim, index):
    sl = tuple(slice(0, s) if d != dim % x.ndim else slice(None) for d, s in enumerate(index.shape))
    return np.take_along_axis(x[sl], index, axis=dim)


def _build_index(idx, inputs):
    if isinstance(idx, Arg):
        return inputs[idx.i]
    if isinstance(idx, tuple):
        return tuple(_build_index(i, inputs) for i in idx)
    return idx


def _getitem(lib, *inputs, idx):
    return inputs[0][_build_index(idx, inputs)]


def _ref_getitem(*inputs, idx):
    return inputs[0][_build_index(idx, inputs)]


# ---------------------------------------------------------------------------
# samples for the non-elementwise ops
# ---------------------------------------------------------------------------


def _where_samples(g):
    return [
        Sample(g.mask(3, 4), g.f(3, 4), g.f(3, 4)),
        Sample(g.mask(3, 1), g.f(1, 4), g.f(3, 4)),
        Sample(g.mask(4), g.f(2, 3, 4), g.f(3, 1)),
        Sample(g.mask(3, 4), g.f(), g.f(3, 4)),
        Sample(g.mask(3, 4), g.f(3, 4), g.f(3, 4), views={1: "T"}),
        Sample(g.mask(3, 4), g.f(3, 4), 0.0),  # scalar other
        Sample(np.array(True), g.f(3, 4), g.f(3, 4)),
    ]


def _masked_fill_samples(g):
    return [
        Sample(g.f(3, 4), g.mask(3, 4), -1.5),
        Sample(g.f(3, 4), g.mask(4), 2.0),  # mask broadcast
        Sample(g.f(2, 3, 4), g.mask(3, 1), 0.0),
        Sample(g.f(), np.array(True), 7.0),
        Sample(g.f(3, 4), g.mask(3, 4), 3.0, views={0: "T"}),
        Sample(g.f(3, 4), g.mask(3, 4), 3, views={0: "slice"}),  # int value into float tensor
    ]


def _clamp_samples(g):
    m = lambda *s: g.f(*s, avoid=(-0.5, 0.7), margin=0.05)  # noqa: E731
    return [
        Sample(m(3, 4), min=-0.5, max=0.7),
        Sample(m(3, 4), min=-0.5),
        Sample(m(3, 4), max=0.7),
        Sample(m(), min=-0.5, max=0.7),
        Sample(m(3, 4), views={0: "T"}, min=-0.5, max=0.7),
        Sample(m(3, 4), g.f(3, 4), g.f(3, 4) + 3.0, only=("fn", "method")),  # tensor bounds
        Sample(m(3, 4), g.f(4) - 1.0, None, only=("fn", "method")),  # tensor min, broadcast
        # PyTorch: gradient flows where min <= x <= max (inclusive); min > max gives max
        Sample(np.array([-1.0, -0.5, 0.0, 0.7, 1.0]), min=-0.5, max=0.7, gradcheck=False),
        Sample(g.f(3, 4), min=1.0, max=-1.0, gradcheck=False),
    ]


def _maxmin_binary_samples(g):
    return binary_samples(scalars=())(g) + [
        # ties: PyTorch splits the gradient half/half
        Sample(np.array([1.0, 2.0, -3.0]), np.array([1.0, 0.5, -3.0]), gradcheck=False),
    ]


def _minmax_reduction_samples(g):
    d = g.distinct
    return [
        Sample(d(3, 4)),
        Sample(d(2, 3, 4)),
        Sample(d()),
        Sample(d(3, 4), dim=1),
        Sample(d(3, 4), dim=-1, keepdim=True),
        Sample(d(2, 3, 4), dim=0),
        Sample(d(3, 4), views={0: "T"}, dim=0),
        Sample(d(3, 4), views={0: "slice"}),
        Sample(d(), dim=0),
        # ties: whole-tensor max/min spread the gradient evenly over the ties,
        # max/min(dim) send it to the returned (first) index
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), gradcheck=False),
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), dim=1, gradcheck=False),
    ]


def _amax_samples(g):
    d = g.distinct
    return [
        Sample(d(3, 4)),
        Sample(d(2, 3, 4), dim=1),
        Sample(d(2, 3, 4), dim=(0, 2)),
        Sample(d(2, 3, 4), dim=(-1, 0), keepdim=True),
        Sample(d(3, 4), dim=-1, keepdim=True),
        Sample(d()),
        Sample(d(), dim=0),
        Sample(d(3, 4), views={0: "T"}, dim=0),
        Sample(d(3, 4), views={0: "slice"}, dim=1),
        # ties: gradient is split evenly among the maximal elements
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), dim=1, gradcheck=False),
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]]), gradcheck=False),
    ]


def _arg_samples(g):
    d = g.distinct
    return [
        Sample(d(3, 4)),
        Sample(d(2, 3, 4)),
        Sample(d(3, 4), dim=1),
        Sample(d(3, 4), dim=0, keepdim=True),
        Sample(d(2, 3, 4), dim=-1),
        Sample(d(), dim=0),
        Sample(d()),
        Sample(d(3, 4), views={0: "T"}, dim=1),
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), dim=1),  # ties -> first index
    ]


def _var_samples(g):
    f = g.f
    return [
        Sample(f(3, 4)),
        Sample(f(3, 4), dim=1),
        Sample(f(2, 3, 4), dim=(0, 2)),
        Sample(f(3, 4), dim=0, keepdim=True),
        Sample(f(3, 4), dim=-1, unbiased=False),
        Sample(f(3, 4), unbiased=False),
        Sample(f(3, 4), dim=1, correction=0),
        Sample(f(2, 3, 4), dim=-1, correction=2, keepdim=True),
        Sample(f(3, 4), views={0: "T"}, dim=0),
        Sample(f(5)),
    ]


def _logsumexp_samples(g):
    f = g.f
    return [
        Sample(f(3, 4), dim=1),
        Sample(f(3, 4), dim=0, keepdim=True),
        Sample(f(2, 3, 4), dim=(0, 2)),
        Sample(f(2, 3, 4), dim=-1),
        Sample(f(), dim=0),
        Sample(f(3, 4), views={0: "T"}, dim=1),
        Sample(f(3, 4) * 300, dim=1, gradcheck=False),  # large values: must not overflow
    ]


def _norm_samples(g):
    nz = g.nz
    return [
        Sample(nz(3, 4)),
        Sample(nz(3, 4), p=2, dim=1),
        Sample(nz(3, 4), p=1),
        Sample(nz(2, 3, 4), p=1, dim=-1, keepdim=True),
        Sample(nz(3, 4), p="fro"),
        Sample(nz(2, 3, 4), p="fro", dim=(1, 2)),
        Sample(nz(2, 3, 4), p=2, dim=(0, 2), keepdim=True),
        Sample(nz(5)),
        Sample(nz()),
        Sample(nz(3, 4), views={0: "T"}, p=2, dim=0),
        Sample(np.zeros((3,)), gradcheck=False),  # PyTorch: gradient of the norm at 0 is 0
    ]


def _prod_samples(g):
    f = g.f
    z1 = f(3, 4)
    z1[1, 2] = 0.0
    z2 = f(3, 4)
    z2[0, 1] = z2[0, 3] = 0.0
    return [
        Sample(f(3, 4)),
        Sample(f(2, 3, 4), dim=1),
        Sample(f(3, 4), dim=-1, keepdim=True),
        Sample(f()),
        Sample(f(), dim=0),
        Sample(f(3, 4), views={0: "T"}, dim=0),
        Sample(z1),  # one zero (prod is a polynomial, so still gradcheck-able)
        Sample(z1, dim=1),
        Sample(z2, dim=1),  # two zeros in a row
        Sample(z2),
    ]


def _softmax_samples(g):
    f = g.f
    return [
        Sample(f(3, 4), dim=1),
        Sample(f(3, 4), dim=0),
        Sample(f(2, 3, 4), dim=-1),
        Sample(f(2, 3, 4), dim=1),
        Sample(f(), dim=0),
        Sample(f(3, 4), views={0: "T"}, dim=1),
        Sample(f(3, 4), views={0: "slice"}, dim=-1),
        Sample(f(3, 4) * 500, dim=1, gradcheck=False),  # large values: must be stable
    ]


def _matmul_samples(g):
    f = g.f
    return [
        Sample(f(3), f(3)),  # 1-D @ 1-D -> 0-d
        Sample(f(2, 3), f(3)),
        Sample(f(3), f(3, 4)),
        Sample(f(2, 3), f(3, 4)),
        Sample(f(2, 2, 3), f(2, 3, 4)),  # batched
        Sample(f(2, 1, 2, 3), f(3, 3, 4)),  # broadcast batch dims
        Sample(f(3), f(2, 3, 4)),
        Sample(f(2, 2, 3), f(3)),
        Sample(f(2, 2, 3), f(3, 4)),
        Sample(f(2, 3), f(3, 4), views={1: "T"}),
        Sample(f(2, 3), f(3, 4), views={0: "T", 1: "slice"}),
    ]


def _shape_samples(g):
    f = g.f
    return [
        Sample(f(2, 3, 4), shape=(6, 4)),
        Sample(f(2, 3, 4), shape=(-1,)),
        Sample(f(3, 4), shape=(2, -1, 3)),
        Sample(f(), shape=(1, 1)),
        Sample(f(1), shape=(), only=("fn.reshape", "method.reshape")),  # x.reshape() is an error
        Sample(f(3, 4), views={0: "T"}, shape=(12,)),
        Sample(f(3, 4), views={0: "slice"}, shape=(2, 6)),
    ]


def _view_samples(g):
    f = g.f
    return [
        Sample(f(2, 3, 4), shape=(6, 4)),
        Sample(f(2, 3, 4), shape=(-1,)),
        Sample(f(3, 4), shape=(2, -1, 3)),
        Sample(f(), shape=(1,)),
        Sample(f(4, 3), views={0: "T"}, shape=(4, 1, 3)),  # only splits/adds size-1 dims
    ]


def _getitem_samples(g):
    f, idx, mask = g.f, g.idx, g.mask
    s = slice
    return [
        Sample(f(3, 4), idx=1),
        Sample(f(3, 4), idx=-1),
        Sample(f(3, 4), idx=(1, 2)),  # -> 0-d
        Sample(f(3, 4), idx=(s(None), s(1, 3))),
        Sample(f(5, 4), idx=s(None, None, 2)),  # step
        Sample(f(5, 6), idx=(s(1, None), s(0, 5, 3))),
        Sample(f(3, 4), idx=s(1, 100)),  # out-of-range slice bounds are clamped
        Sample(f(3, 4), idx=None),
        Sample(f(3, 4), idx=(s(None), None, 1)),
        Sample(f(2, 3, 4), idx=Ellipsis),
        Sample(f(2, 3, 4), idx=(Ellipsis, 1)),
        Sample(f(2, 3, 4), idx=(0, Ellipsis, s(1, None))),
        Sample(f(2, 3, 4), idx=(Ellipsis, None)),
        Sample(f(), idx=None),
        Sample(f(), idx=Ellipsis),
        Sample(f(3, 4), views={0: "T"}, idx=(s(1, None), 0)),
        Sample(f(3, 4), views={0: "slice"}, idx=(Ellipsis, s(None, None, 2))),
        # bool masks
        Sample(f(3, 4), mask(3, 4), idx=Arg(1)),
        Sample(f(3, 4), mask(3), idx=Arg(1)),
        Sample(f(2, 3, 4), mask(3, 4), idx=(1, Arg(1))),
        Sample(f(3, 4), np.zeros((3, 4), dtype=bool), idx=Arg(1)),  # empty selection
        # integer tensors (duplicates -> gradients accumulate)
        Sample(f(3, 4), np.array([2, 0, 2], dtype=np.int64), idx=Arg(1)),
        Sample(f(3, 4), np.array([3, -1, 0], dtype=np.int64), idx=(s(None), Arg(1))),  # negative
        Sample(f(3, 4), idx(2, 3), idx(2, 4), idx=(Arg(1), Arg(2))),
        Sample(f(3, 4), idx((2, 2), 3), idx=Arg(1)),
        Sample(f(2, 3, 4), np.array([1, 1], dtype=np.int64), idx=(Arg(1), s(1, None))),
        Sample(f(2, 3, 4), idx(2, 4), idx=(Ellipsis, Arg(1))),
        Sample(f(2, 3, 4), idx(2, 3), idx(2, 4), idx=(0, Arg(1), Arg(2))),
        # int and tensor index separated by a slice: NumPy puts the advanced dim first,
        # PyTorch applies the int first (x[1][:, t]) -> shape (3, 2), not NumPy's (2, 3)
        Sample(f(2, 3, 4), np.array([0, 2], dtype=np.int64), idx=(1, s(None), Arg(1)),
               ref=lambda x, t, idx: x[1][:, t]),
    ]


# ---------------------------------------------------------------------------
# nn.functional: NumPy references (naive loops over the small sample sizes)
# ---------------------------------------------------------------------------


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _ref_conv(nd):
    """``F.conv{nd}d``: sum over kernel offsets of strided windows times the weight slice."""

    def ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        unbatched = x.ndim == nd + 1
        if unbatched:
            x = x[None]
        s, d, k = _ntuple(stride, nd), _ntuple(dilation, nd), w.shape[2:]
        if padding == "valid":
            pad = [(0, 0)] * nd
        elif padding == "same":  # PyTorch puts the odd element of padding on the right
            pad = [(d[i] * (k[i] - 1) // 2, d[i] * (k[i] - 1) - d[i] * (k[i] - 1) // 2)
                   for i in range(nd)]
        else:
            pad = [(p, p) for p in _ntuple(padding, nd)]
        xp = np.pad(x, [(0, 0), (0, 0)] + pad)
        n, c = x.shape[:2]
        cout = w.shape[0]
        out_sp = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
        xg = xp.reshape(n, groups, c // groups, *xp.shape[2:])
        wg = w.reshape(groups, cout // groups, c // groups, *k)
        out = np.zeros((n, groups, cout // groups, *out_sp))
        for off in np.ndindex(*k):
            win = xg[(Ellipsis,) + tuple(
                slice(off[i] * d[i], off[i] * d[i] + s[i] * (out_sp[i] - 1) + 1, s[i])
                for i in range(nd))]
            out += np.einsum("ngc...,goc->ngo...", win, wg[(Ellipsis,) + off])
        out = out.reshape(n, cout, *out_sp)
        if b is not None:
            out = out + b.reshape((cout,) + (1,) * nd)
        return out[0] if unbatched else out

    return ref


def _ref_conv_transpose(nd):
    """``F.conv_transpose{nd}d``: scatter-add of input times kernel, then crop the padding."""

    def ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        unbatched = x.ndim == nd + 1
        if unbatched:
            x = x[None]
        s, p = _ntuple(stride, nd), _ntuple(padding, nd)
        op, d = _ntuple(output_padding, nd), _ntuple(dilation, nd)
        n, cin = x.shape[:2]
        sp, k, cout_g = x.shape[2:], w.shape[2:], w.shape[1]
        full = [(sp[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nd)]
        out = np.zeros((n, groups, cout_g, *full))
        xg = x.reshape(n, groups, cin // groups, *sp)
        wg = w.reshape(groups, cin // groups, cout_g, *k)
        for off in np.ndindex(*k):
            dst = (Ellipsis,) + tuple(
                slice(off[i] * d[i], off[i] * d[i] + s[i] * (sp[i] - 1) + 1, s[i])
                for i in range(nd))
            out[dst] += np.einsum("ngc...,gco->ngo...", xg, wg[(Ellipsis,) + off])
        out = out[(Ellipsis,) + tuple(slice(p[i], full[i] - p[i]) for i in range(nd))]
        out = out.reshape(n, groups * cout_g, *out.shape[3:])
        if b is not None:
            out = out + b.reshape((-1,) + (1,) * nd)
        return out[0] if unbatched else out

    return ref


def _pool_out(size, k, s, p, d, ceil_mode):
    """Pooling output length (PyTorch's ``pooling_output_shape``)."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # last window must start inside the input
        out -= 1
    return out


def _ref_max_pool(nd):
    def ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
            return_indices=False):
        k = _ntuple(kernel_size, nd)
        s = _ntuple(kernel_size if stride is None else stride, nd)
        p, d = _ntuple(padding, nd), _ntuple(dilation, nd)
        lead, sp = x.shape[:-nd], x.shape[-nd:]
        outs = [_pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
        flat = x.reshape(lead + (-1,))
        vals = np.empty(lead + tuple(outs))
        idx = np.empty(lead + tuple(outs), dtype=np.int64)
        for o in np.ndindex(*outs):
            axes = [[o[i] * s[i] - p[i] + j * d[i] for j in range(k[i])] for i in range(nd)]
            axes = [[a for a in ax if 0 <= a < sp[i]] for i, ax in enumerate(axes)]
            cand = np.ravel_multi_index(np.meshgrid(*axes, indexing="ij"), sp).ravel()
            win = flat[..., cand]
            best = np.argmax(win, axis=-1)
            vals[(Ellipsis,) + o] = np.take_along_axis(win, best[..., None], -1)[..., 0]
            idx[(Ellipsis,) + o] = cand[best]
        return (vals, idx) if return_indices else vals

    return ref


def _ref_avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                    count_include_pad=True, divisor_override=None):
    k = _ntuple(kernel_size, 2)
    s = _ntuple(kernel_size if stride is None else stride, 2)
    p = _ntuple(padding, 2)
    sp = x.shape[-2:]
    outs = [_pool_out(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(2)]
    out = np.empty(x.shape[:-2] + tuple(outs))
    for o in np.ndindex(*outs):
        lo = [o[i] * s[i] - p[i] for i in range(2)]
        hi = [min(lo[i] + k[i], sp[i] + p[i]) for i in range(2)]  # window may cover padding
        pool_size = (hi[0] - lo[0]) * (hi[1] - lo[1])
        lo = [max(v, 0) for v in lo]
        hi = [min(hi[i], sp[i]) for i in range(2)]
        total = x[..., lo[0]:hi[0], lo[1]:hi[1]].sum(axis=(-2, -1))
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = pool_size
        else:
            div = (hi[0] - lo[0]) * (hi[1] - lo[1])
        out[(Ellipsis,) + o] = total / div
    return out


def _ref_adaptive_avg_pool2d(x, output_size):
    sp = x.shape[-2:]
    outs = [sp[i] if o is None else o for i, o in enumerate(_ntuple(output_size, 2))]
    out = np.empty(x.shape[:-2] + tuple(outs))
    for o in np.ndindex(*outs):
        lo = [o[i] * sp[i] // outs[i] for i in range(2)]
        hi = [-(-(o[i] + 1) * sp[i] // outs[i]) for i in range(2)]
        out[(Ellipsis,) + o] = x[..., lo[0]:hi[0], lo[1]:hi[1]].mean(axis=(-2, -1))
    return out


def _normalize(x, axes, eps):
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)  # biased
    return (x - mu) / np.sqrt(var + eps)


def _ref_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = len(_ntuple(normalized_shape, 1))
    y = _normalize(x, tuple(range(x.ndim - n, x.ndim)), eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _channel(v, ndim):
    """Per-channel vector shaped to broadcast against an (N, C, *) input."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _ref_group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, num_groups, -1)
    y = _normalize(xg, (2,), eps).reshape(x.shape)
    if weight is not None:
        y = y * _channel(weight, x.ndim)
    if bias is not None:
        y = y + _channel(bias, x.ndim)
    return y


def _ref_batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5):
    if training:
        y = _normalize(x, (0,) + tuple(range(2, x.ndim)), eps)
    else:
        y = (x - _channel(running_mean, x.ndim)) / np.sqrt(_channel(running_var, x.ndim) + eps)
    if weight is not None:
        y = y * _channel(weight, x.ndim)
    if bias is not None:
        y = y + _channel(bias, x.ndim)
    return y


def _ref_embedding(idx, weight, padding_idx=None):
    return weight[idx]  # padding_idx only changes the gradient


def _ref_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if enable_gqa:  # each key/value head serves a block of consecutive query heads
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    return _ref_softmax(s, -1) @ v


def _ref_one_hot(idx, num_classes=-1):
    n = int(idx.max()) + 1 if num_classes == -1 else num_classes
    return (idx[..., None] == np.arange(n)).astype(np.int64)


def _ref_constant_pad(x, pad, value=None):
    """F.pad's constant mode: (before, after) pairs from the last dim; negative amounts crop."""
    out = x
    for k in range(len(pad) // 2):
        d = x.ndim - 1 - k
        before, after = pad[2 * k], pad[2 * k + 1]
        crop = [slice(None)] * x.ndim
        crop[d] = slice(max(-before, 0), out.shape[d] - max(-after, 0))
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(before, 0), max(after, 0))
        out = np.pad(out[tuple(crop)], widths, constant_values=0 if value is None else value)
    return out


def _ref_cumsum(x, dim):
    return np.cumsum(x, axis=dim) if x.ndim else x.copy()


# ---------------------------------------------------------------------------
# nn.functional: samples
# ---------------------------------------------------------------------------


def _conv2d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 4, 4), f(3, 2, 3, 3), f(3)),
        Sample(f(1, 2, 5, 5), f(2, 2, 3, 3), stride=2),  # no bias
        Sample(f(1, 2, 4, 4), f(2, 2, 3, 3), f(2), padding=1),
        Sample(f(1, 2, 3, 3), f(2, 2, 3, 3), f(2), padding=2),  # padding wider than half the kernel
        Sample(f(1, 2, 5, 6), f(2, 2, 2, 3), f(2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
        Sample(f(1, 4, 4, 4), f(4, 2, 3, 3), f(4), groups=2),
        Sample(f(1, 3, 4, 4), f(6, 1, 2, 2), groups=3),  # depthwise, channel multiplier 2
        Sample(f(1, 2, 5, 5), f(2, 2, 2, 3), f(2), padding="same", dilation=(2, 1)),  # odd total pad
        Sample(f(1, 2, 4, 5), f(3, 2, 3, 3), padding="same"),
        Sample(f(1, 2, 4, 4), f(2, 2, 3, 2), padding="valid"),
        Sample(f(1, 3, 5, 5), f(2, 3, 1, 1), f(2), stride=2),  # 1x1 kernel
        Sample(f(2, 4, 4), f(3, 2, 3, 3), f(3), padding=1),  # unbatched (C, H, W)
        Sample(f(2, 2, 4, 4), f(3, 2, 3, 3), f(3), views={0: "T", 1: "slice"}),
    ]


def _conv1d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 6), f(3, 2, 3), f(3)),
        Sample(f(1, 2, 7), f(2, 2, 3), stride=2, padding=1),
        Sample(f(1, 2, 7), f(2, 2, 2), f(2), dilation=3),
        Sample(f(2, 4, 5), f(2, 2, 3), f(2), groups=2),
        Sample(f(1, 2, 6), f(3, 2, 4), f(3), padding="same", dilation=1),  # odd total pad
        Sample(f(1, 2, 6), f(3, 2, 3), padding="same", dilation=2),
        Sample(f(1, 2, 6), f(2, 2, 4), padding="valid"),
        Sample(f(2, 5), f(3, 2, 3), f(3), padding=2),  # unbatched (C, L)
        Sample(f(2, 2, 6), f(3, 2, 3), views={0: "T", 1: "slice"}),
    ]


def _conv_transpose2d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 3, 3), f(2, 3, 3, 3), f(3)),
        Sample(f(1, 2, 3, 3), f(2, 2, 3, 3), stride=2),  # no bias
        Sample(f(1, 2, 3, 3), f(2, 2, 3, 3), f(2), stride=2, padding=1, output_padding=1),
        Sample(f(1, 4, 3, 3), f(4, 1, 3, 3), f(2), groups=2),
        Sample(f(1, 4, 2, 3), f(4, 2, 2, 2), f(4), stride=2, groups=2, output_padding=(1, 0)),
        Sample(f(1, 2, 3, 2), f(2, 2, 2, 3), f(2), stride=(2, 1), padding=(1, 0),
               output_padding=(1, 0), dilation=2),
        Sample(f(1, 2, 2, 2), f(2, 1, 2, 3), stride=3),  # non-overlapping windows, gaps
        Sample(f(1, 2, 3, 3), f(2, 2, 3, 3), f(2), padding=(1, 2), dilation=(1, 2)),
        Sample(f(2, 3, 3), f(2, 2, 3, 3), f(2), stride=2),  # unbatched (C, H, W)
        Sample(f(2, 2, 3, 3), f(2, 3, 3, 3), f(3), views={0: "T", 1: "slice"}),
    ]


def _conv_transpose1d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 4), f(2, 3, 3), f(3)),
        Sample(f(1, 2, 4), f(2, 2, 3), stride=2, padding=1, output_padding=1),
        Sample(f(1, 4, 3), f(4, 1, 2), f(2), groups=2, dilation=2),
        Sample(f(2, 4), f(2, 3, 3), f(3), stride=3),  # unbatched (C, L)
    ]


def _max_pool2d_samples(g):
    d = g.distinct  # pairwise distinct values: no ties, so the max is differentiable
    return [
        Sample(d(1, 2, 4, 4), 2),
        Sample(d(2, 1, 5, 5), 3, stride=2, padding=1),
        Sample(d(1, 2, 4, 5), (2, 3), stride=(1, 2)),
        Sample(d(1, 1, 5, 5), 2, stride=1, dilation=2),
        Sample(d(1, 2, 5, 5), 2, ceil_mode=True),  # last window hangs over the edge
        Sample(d(1, 1, 5, 5), 2, stride=2, padding=1, ceil_mode=True),  # last window dropped
        Sample(d(1, 1, 6, 5), (3, 2), stride=(2, 3), padding=(1, 1), dilation=(1, 2),
               ceil_mode=True),
        Sample(d(1, 2, 4, 4), 2, return_indices=True),
        Sample(d(1, 1, 5, 5), 3, stride=2, padding=1, dilation=1, ceil_mode=True,
               return_indices=True),
        Sample(d(1, 1, 5, 6), 2, stride=2, dilation=2, return_indices=True),
        Sample(d(2, 4, 4), 2, stride=1),  # unbatched (C, H, W)
        Sample(d(2, 4, 4), 2, return_indices=True),
        Sample(d(2, 2, 4, 4), 2, views={0: "T"}),
        Sample(d(1, 2, 4, 8), 2, views={0: "slice"}),
        # ties: the first maximum in the window (row-major) gets the gradient / index
        Sample(np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 2.0], [2.0, 2.0, 2.0]]]]), 2, stride=1,
               return_indices=True, gradcheck=False),
    ]


def _max_pool1d_samples(g):
    d = g.distinct
    return [
        Sample(d(2, 3, 6), 2),
        Sample(d(1, 2, 7), 3, stride=2, padding=1),
        Sample(d(1, 2, 7), 2, stride=1, dilation=3),
        Sample(d(1, 2, 7), 2, ceil_mode=True),
        Sample(d(1, 2, 6), 2, stride=2, padding=1, ceil_mode=True),  # last window dropped
        Sample(d(2, 2, 7), 3, stride=2, padding=1, return_indices=True),
        Sample(d(2, 7), 3, stride=2, dilation=2, return_indices=True),  # unbatched (C, L)
        Sample(d(2, 2, 6), 2, views={0: "T"}),
        Sample(np.array([[[3.0, 3.0, 1.0, 3.0]]]), 2, stride=1, return_indices=True,
               gradcheck=False),  # ties
    ]


def _avg_pool2d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 4, 4), 2),
        Sample(f(1, 2, 5, 5), 3, stride=2, padding=1),
        Sample(f(1, 2, 5, 5), 3, stride=2, padding=1, count_include_pad=False),
        Sample(f(1, 2, 5, 5), 2, ceil_mode=True),
        Sample(f(1, 1, 5, 5), 2, stride=2, padding=1, ceil_mode=True),
        Sample(f(1, 1, 5, 5), 2, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        Sample(f(1, 2, 5, 5), 3, stride=2, padding=1, ceil_mode=True),  # window past the padding
        Sample(f(1, 2, 5, 6), (2, 3), stride=(1, 2), padding=(1, 1)),
        Sample(f(1, 2, 5, 5), 3, stride=2, padding=1, divisor_override=4),
        Sample(f(1, 1, 5, 5), 2, stride=2, padding=1, ceil_mode=True, count_include_pad=False,
               divisor_override=3),
        Sample(f(2, 4, 4), 2, stride=1),  # unbatched (C, H, W)
        Sample(f(2, 2, 4, 4), 2, views={0: "T"}),
    ]


def _adaptive_avg_pool2d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 5, 7), (1, 1)),
        Sample(f(1, 2, 5, 7), (2, 3)),  # non-divisible: overlapping windows
        Sample(f(1, 2, 5, 7), 3),
        Sample(f(1, 2, 5, 7), (4, 6)),
        Sample(f(1, 2, 4, 6), (2, 3)),  # divisible
        Sample(f(1, 2, 5, 7), (None, 2)),
        Sample(f(1, 2, 3, 4), (3, 4)),  # identity
        Sample(f(1, 2, 3, 4), (5, 6)),  # larger than the input
        Sample(f(2, 5, 7), (2, 3)),  # unbatched (C, H, W)
        Sample(f(2, 2, 4, 6), (3, 4), views={0: "T"}),
    ]


def _layer_norm_samples(g):
    f = g.f
    return [
        Sample(f(3, 4), (4,), f(4), f(4)),
        Sample(f(2, 3, 4), (3, 4), f(3, 4), f(3, 4)),
        Sample(f(2, 3, 4), (4,)),  # no affine
        Sample(f(2, 3, 4), [4], f(4)),  # weight only
        Sample(f(3, 4), (4,), None, f(4)),  # bias only
        # no batch dims: the whole input is one row
        Sample(f(2, 3, 4), (2, 3, 4), f(2, 3, 4), f(2, 3, 4), eps=1e-3),
        Sample(f(5), (5,), f(5), f(5)),
        Sample(f(5), (5,)),
        Sample(f(4, 3), (3,), f(3), f(3), views={0: "T"}),
    ]


def _group_norm_samples(g):
    f = g.f
    return [
        Sample(f(2, 4, 3), 2, f(4), f(4)),
        Sample(f(2, 6, 2, 2), 3, f(6), f(6)),
        Sample(f(2, 4, 3), 1),  # one group, no affine
        Sample(f(3, 4), 2, f(4), f(4)),  # (N, C)
        Sample(f(2, 4, 3), 4, f(4), f(4)),  # one channel per group
        Sample(f(2, 4, 3), 2, f(4), None, eps=1e-3),
        Sample(f(2, 4, 3), 2, f(4), f(4), views={0: "T"}),
    ]


def _batch_norm_samples(g):
    f, pos = g.f, g.pos
    return [
        # training mode, batch statistics, no running stats
        Sample(f(4, 3), None, None, f(3), f(3), training=True),
        Sample(f(3, 2, 4), None, None, f(2), f(2), training=True),
        Sample(f(2, 3, 2, 2), None, None, training=True),  # no affine
        Sample(f(3, 2, 3), None, None, f(2), f(2), training=True, eps=1e-3),
        # training with running stats: they are updated in place, the output uses batch stats
        Sample(f(3, 2, 3), f(2), pos(2), f(2), f(2), const=(1, 2), training=True, momentum=0.3),
        # eval mode: running stats are non-differentiable constants
        Sample(f(4, 3), f(3), pos(3), f(3), f(3), const=(1, 2)),
        Sample(f(2, 3, 2, 2), f(3), pos(3), const=(1, 2), training=False),
        Sample(f(2, 2, 3), f(2), pos(2), f(2), f(2), const=(1, 2), eps=1e-3),
        Sample(f(4, 3), None, None, f(3), f(3), views={0: "T"}, training=True),
    ]


def _embedding_samples(g):
    f, idx = g.f, g.idx
    return [
        Sample(idx((2, 3), 5), f(5, 3)),
        Sample(np.array([1, 4, 1, 0, 1], dtype=np.int64), f(6, 2)),  # duplicates accumulate
        Sample(np.array(2, dtype=np.int64), f(4, 3)),  # 0-d index
        Sample(idx((2, 2), 4), f(3, 4), views={1: "T"}),
        # padding_idx: the row gets no gradient (by definition, so not gradcheck-ed)
        Sample(np.array([[0, 2, 1], [2, 2, 3]], dtype=np.int64), f(4, 3), padding_idx=2,
               gradcheck=False),
        Sample(np.array([0, 3, 1, 3], dtype=np.int64), f(4, 2), padding_idx=-1, gradcheck=False),
        Sample(np.array([0, 1, 0], dtype=np.int64), f(4, 2), padding_idx=3),  # unused padding row
    ]


def _sdpa_samples(g):
    f = g.f
    causal = np.array([[True, False, False, False], [True, True, False, False],
                       [True, True, True, False]])
    mask = g.mask(3, 5)
    mask[:, 0] = True  # every query sees at least one key
    return [
        Sample(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3)),
        Sample(f(2, 1, 3, 4), f(2, 1, 3, 4), f(2, 1, 3, 4), is_causal=True),
        Sample(f(1, 2, 3, 4), f(1, 2, 4, 4), f(1, 2, 4, 2), is_causal=True),  # L < S
        Sample(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3), f(3, 5)),  # additive mask, broadcast
        Sample(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3), f(1, 2, 3, 5)),
        Sample(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3), mask),  # boolean mask
        Sample(f(1, 2, 3, 4), f(1, 2, 4, 4), f(1, 2, 4, 3), causal),  # boolean causal mask
        Sample(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3), scale=0.3),
        Sample(f(2, 3, 4), f(2, 5, 4), f(2, 5, 3)),  # 3-D
        Sample(f(2, 3, 4), f(2, 3, 4), f(2, 3, 2), is_causal=True, scale=0.7),
        Sample(f(2, 3, 4), f(2, 5, 4), f(2, 5, 3), f(2, 3, 5)),
        Sample(f(2, 1, 3, 4), f(2, 1, 5, 4), f(2, 1, 5, 3), views={0: "T", 2: "slice"}),
        Sample(f(1, 4, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 3), enable_gqa=True),  # grouped query
        Sample(f(1, 4, 3, 2), f(1, 1, 3, 2), f(1, 1, 3, 3), is_causal=True, enable_gqa=True),
    ]


def _constant_pad_samples(g):
    f = g.f
    return [
        Sample(f(2, 3, 4), (1, 2)),
        Sample(f(2, 3, 4), (1, -1, 2, 0), value=2.5),
        Sample(f(3, 4), (-1, -1, 1, 1), views={0: "T"}),
        Sample(f(2, 3, 2), (0, 0, 0, 0, 1, 1)),
        Sample(f(4), (-1, -2)),
        Sample(f(2, 3), ()),
    ]


def _one_hot_samples(g):
    return [
        Sample(np.array([0, 3, 1, 1], dtype=np.int64)),  # num_classes = max + 1
        Sample(g.idx((2, 3), 4), num_classes=5),
        Sample(g.idx((2, 3), 3), -1),
        Sample(np.array(2, dtype=np.int64), 3),  # 0-d
        Sample(np.zeros((0,), dtype=np.int64), num_classes=3),  # empty
    ]


def _cumsum_samples(g):
    f = g.f
    return [
        Sample(f(3, 4), 0),
        Sample(f(3, 4), 1),
        Sample(f(2, 3, 4), -2),
        Sample(f(2, 3, 4), dim=2),
        Sample(f(5), 0),
        Sample(f(), 0),
        Sample(f(), dim=-1),
        Sample(f(3, 4), 0, views={0: "T"}),
        Sample(f(3, 4), -1, views={0: "slice"}),
        Sample(f(0, 3), 0, gradcheck=False),  # empty (see unary_samples)
    ]


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

# float32 gradients of the normalizations subtract nearly equal terms; PyTorch's float32
# kernels are off by ~2e-6 from the exact value on the small groups sampled here
_NORM_TORCH_TOL32 = (1e-5, 1e-5)

_pos = lambda g, *s: g.pos(*s)  # noqa: E731
_nz = lambda g, *s: g.nz(*s)  # noqa: E731
_zeros_sample = lambda g: [Sample(np.array([-1.5, 0.0, 0.0, 2.0]), gradcheck=False)]  # noqa: E731


def _with(base, extra):
    return lambda g: base(g) + extra(g)


def _unary(name, ref, make=None, fn=None, method=None, extra=None, **kw):
    fn = name if fn is None else fn
    method = name if method is None else method
    samples = unary_samples(make)
    if extra is not None:
        samples = _with(samples, extra)
    return OpInfo(name, V(fn=fn, method=method), ref, samples, **kw)


def _binary(name, ref, op=None, make_a=None, make_b=None, extra=None, **kw):
    samples = binary_samples(make_a, make_b)
    if extra is not None:
        samples = _with(samples, extra)
    return OpInfo(name, V(fn=name, method=name, op=op), ref, samples, **kw)


def _compare(name, ref, op):
    def samples(g):
        # values drawn from a small grid so that equality actually happens
        grid = lambda *s: np.asarray(np.round(g.f(*s), 0))  # noqa: E731
        return [
            Sample(grid(3, 4), grid(3, 4)),
            Sample(grid(3, 1), grid(1, 4)),
            Sample(grid(), grid(3, 4)),
            Sample(grid(3, 4), grid(3, 4), views={0: "T"}),
            Sample(grid(3, 4), 1.0),
            Sample(grid(3, 4), 0),
        ]

    return OpInfo(name, V(fn=name, method=name, op=op), ref, samples, differentiable=False)


def _logical_unary_samples(g):
    return [
        Sample(g.mask(3, 4)),
        Sample(np.asarray(np.round(g.f(3, 4)))),  # floats: zero is false
        Sample(g.idx((5,), 3)),
        Sample(g.mask(3, 4), views={0: "T"}),
    ]


def _bitwise_unary_samples(g):
    return [
        Sample(g.mask(3, 4)),
        Sample(g.idx((3, 4), 50) - 25),
        Sample(g.idx((3, 4), 9), views={0: "T"}),
    ]


def _logical(name, ref):
    def samples(g):
        return [
            Sample(g.mask(3, 4), g.mask(3, 4)),
            Sample(g.mask(3, 1), g.mask(1, 4)),
            Sample(np.round(g.f(3, 4)), g.mask(3, 4)),  # float and bool
            Sample(g.idx((3, 4), 3), np.round(g.f(4))),
            Sample(g.mask(3, 4), g.mask(3, 4), views={0: "T"}),
        ]

    return OpInfo(name, V(fn=name, method=name), ref, samples, differentiable=False)


def _bitwise(name, ref, op):
    def samples(g):
        ints = lambda *s: g.idx(s, 64) - 32  # noqa: E731
        return [
            Sample(ints(3, 4), ints(3, 4)),
            Sample(ints(3, 1), ints(1, 4)),
            Sample(g.mask(3, 4), g.mask(3, 4)),
            Sample(ints(3, 4), 5),
            Sample(ints(3, 4), ints(3, 4), views={0: "T"}),
        ]

    return OpInfo(name, V(fn=name, method=name, op=op), ref, samples, differentiable=False)


def _quarter_grid(g, *s):
    """Floats k/4 + 0.1 (remainder's jumps by 1 or 2 are at least 0.1 away)."""
    return np.asarray(np.round(g.f(*s) * 4) / 4 + 0.1)


def _twos(g, *s):
    """Divisors of +-1 or +-2."""
    return np.asarray(np.where(g.mask(*s), 1.0, 2.0) * np.where(g.mask(*s), 1.0, -1.0))


OP_DB: List[OpInfo] = [
    # ---- elementwise binary ------------------------------------------------
    _binary("add", lambda a, b, alpha=1: a + alpha * b if alpha != 1 else np.add(a, b),
            operator.add, extra=lambda g: [
                Sample(g.f(3, 4), g.f(3, 4), alpha=2, only=("fn", "method")),
                Sample(g.f(3, 4), g.f(4), alpha=-0.5, only=("fn", "method")),
            ]),
    _binary("sub", lambda a, b, alpha=1: a - alpha * b if alpha != 1 else np.subtract(a, b),
            operator.sub, extra=lambda g: [
        Sample(g.f(3, 4), g.f(3, 4), alpha=2, only=("fn", "method")),
    ]),
    _binary("mul", np.multiply, operator.mul),
    _binary("div", np.divide, operator.truediv, make_b=_nz),
    _binary("floor_divide", np.floor_divide, operator.floordiv, make_b=_nz, differentiable=False),
    # away from the jumps of a - b * floor(a / b), so finite differences see the slopes
    _binary("remainder", np.remainder, operator.mod, make_a=_quarter_grid, make_b=_twos),
    OpInfo("pow", V(fn="pow", method="pow", op=operator.pow), np.power,
           lambda g: binary_samples(_pos, scalars=())(g) + [
               Sample(g.f(3, 4), 2),  # tensor ** int scalar (negative base is fine)
               Sample(g.f(3, 4), 3.0),
               Sample(g.pos(3, 4), 2.5),
               Sample(g.pos(3, 4), -1.5),
               Sample(g.pos(3, 4), 0.5),
               Sample(g.f(3, 4), 0),
               Sample(g.pos(), -1),
               Sample(g.f(3, 4), g.f(1, 4, lo=1, hi=3).round(), gradcheck=False),  # neg base, int exp
           ]),
    # reflected operators with Python scalars: scalar (op) tensor
    OpInfo("radd", V(op=operator.add), np.add, reflected_samples()),
    OpInfo("rsub", V(op=operator.sub), np.subtract, reflected_samples()),
    OpInfo("rmul", V(op=operator.mul), np.multiply, reflected_samples()),
    OpInfo("rdiv", V(op=operator.truediv), np.divide, reflected_samples(_nz)),
    OpInfo("rpow", V(fn="pow", op=operator.pow), np.power, reflected_samples(scalars=(2, 0.5))),
    # ---- elementwise unary -------------------------------------------------
    OpInfo("neg", V(fn="neg", method="neg", op=operator.neg), np.negative, unary_samples()),
    OpInfo("abs", V(fn="abs", method="abs", op=operator.abs), np.abs,
           _with(unary_samples(_nz), _zeros_sample)),  # PyTorch: d|x|/dx = 0 at x = 0
    _unary("sign", np.sign, _nz, extra=_zeros_sample),
    _unary("exp", np.exp),
    _unary("log", np.log, _pos),
    _unary("log1p", np.log1p, lambda g, *s: g.f(*s, lo=-0.5, hi=2.0)),
    _unary("sqrt", np.sqrt, _pos),
    _unary("rsqrt", lambda x: 1 / np.sqrt(x), _pos),
    _unary("erf", np.vectorize(math.erf, otypes=[np.float64])),
    _unary("reciprocal", np.reciprocal, _nz),
    _unary("sin", np.sin),
    _unary("cos", np.cos),
    _unary("tanh", np.tanh, lambda g, *s: g.f(*s, lo=-3, hi=3)),
    _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), lambda g, *s: g.f(*s, lo=-4, hi=4)),
    OpInfo("relu", V(fn=("relu", "nn.functional.relu"), method="relu"), lambda x: np.maximum(x, 0),
           _with(unary_samples(_nz), _zeros_sample)),  # PyTorch: relu'(0) = 0
    OpInfo("nn.functional.gelu", V(fn="nn.functional.gelu"), _ref_gelu,
           lambda g: unary_samples(lambda g, *s: g.f(*s, lo=-3, hi=3))(g) + [
               Sample(g.f(3, 4, lo=-3, hi=3), approximate="none"),
               Sample(g.f(3, 4, lo=-3, hi=3), approximate="tanh"),
               Sample(g.f(2, 3, 4, lo=-3, hi=3), approximate="tanh"),
               Sample(g.f(lo=-3, hi=3), approximate="tanh"),
               Sample(g.f(3, 4, lo=-3, hi=3), views={0: "T"}, approximate="tanh"),
           ]),
    OpInfo("nn.functional.silu", V(fn="nn.functional.silu"), lambda x: x / (1 + np.exp(-x)),
           unary_samples(lambda g, *s: g.f(*s, lo=-4, hi=4))),
    OpInfo("clamp", V(fn="clamp", method="clamp"), _ref_clamp, _clamp_samples),
    OpInfo("clip", V(fn="clip", method="clip"), _ref_clamp, _clamp_samples),
    OpInfo("maximum", V(fn="maximum", method="maximum"), np.maximum, _maxmin_binary_samples),
    OpInfo("minimum", V(fn="minimum", method="minimum"), np.minimum, _maxmin_binary_samples),
    OpInfo("where", {"fn.where": _fn("where"), "method.where": lambda lib, c, x, y: x.where(c, y)},
           np.where, _where_samples),
    OpInfo("masked_fill", V(fn="masked_fill", method="masked_fill"), _ref_masked_fill,
           _masked_fill_samples),
    # ---- comparisons (non-differentiable, bool results) --------------------
    _compare("eq", np.equal, operator.eq),
    _compare("ne", np.not_equal, operator.ne),
    _compare("lt", np.less, operator.lt),
    _compare("le", np.less_equal, operator.le),
    _compare("gt", np.greater, operator.gt),
    _compare("ge", np.greater_equal, operator.ge),
    # ---- logical and bitwise (non-differentiable) ---------------------------
    OpInfo("logical_not", V(fn="logical_not", method="logical_not"), np.logical_not,
           _logical_unary_samples, differentiable=False),
    OpInfo("bitwise_not", V(fn="bitwise_not", method="bitwise_not", op=operator.invert),
           np.invert, _bitwise_unary_samples, differentiable=False),
    _logical("logical_and", np.logical_and),
    _logical("logical_or", np.logical_or),
    _logical("logical_xor", np.logical_xor),
    _bitwise("bitwise_and", np.bitwise_and, operator.and_),
    _bitwise("bitwise_or", np.bitwise_or, operator.or_),
    _bitwise("bitwise_xor", np.bitwise_xor, operator.xor),
    # ---- reductions ----------------------------------------------------------
    OpInfo("sum", V(fn="sum", method="sum"), _reduce(np.sum), reduction_samples(empty_dims=True)),
    OpInfo("mean", V(fn="mean", method="mean"), _reduce(np.mean), reduction_samples(empty_dims=True)),
    OpInfo("prod", V(fn="prod", method="prod"), _reduce(np.prod), _prod_samples),
    OpInfo("amax", V(fn="amax", method="amax"), _reduce(np.max), _amax_samples),
    OpInfo("amin", V(fn="amin", method="amin"), _reduce(np.min), _amax_samples),
    OpInfo("var", V(fn="var", method="var"), _ref_var(np.var), _var_samples),
    OpInfo("std", V(fn="std", method="std"), _ref_var(np.std), _var_samples),
    OpInfo("logsumexp", V(fn="logsumexp", method="logsumexp"), _ref_logsumexp, _logsumexp_samples),
    OpInfo("norm", V(fn="norm", method="norm"), _ref_norm, _norm_samples),
    OpInfo("max", V(fn="max", method="max"), _ref_minmax(np.max, np.argmax),
           _minmax_reduction_samples),
    OpInfo("min", V(fn="min", method="min"), _ref_minmax(np.min, np.argmin),
           _minmax_reduction_samples),
    OpInfo("argmax", V(fn="argmax", method="argmax"), _ref_arg(np.argmax), _arg_samples,
           differentiable=False),
    OpInfo("argmin", V(fn="argmin", method="argmin"), _ref_arg(np.argmin), _arg_samples,
           differentiable=False),
    OpInfo("softmax", V(fn=("softmax", "nn.functional.softmax"), method="softmax"), _ref_softmax,
           _softmax_samples),
    OpInfo("log_softmax", V(fn=("log_softmax", "nn.functional.log_softmax"), method="log_softmax"),
           _ref_log_softmax, _softmax_samples),
    # ---- linear algebra -----------------------------------------------------
    OpInfo("matmul", V(fn="matmul", method="matmul", op=operator.matmul), np.matmul, _matmul_samples),
    OpInfo("mm", V(fn="mm", method="mm"), np.matmul, lambda g: [
        Sample(g.f(2, 3), g.f(3, 4)),
        Sample(g.f(1, 3), g.f(3, 1)),
        Sample(g.f(2, 3), g.f(3, 4), views={0: "T", 1: "T"}),
        Sample(g.f(2, 3), g.f(3, 4), views={1: "slice"}),
    ]),
    OpInfo("bmm", V(fn="bmm", method="bmm"), np.matmul, lambda g: [
        Sample(g.f(2, 2, 3), g.f(2, 3, 4)),
        Sample(g.f(1, 2, 3), g.f(1, 3, 1)),
        Sample(g.f(2, 2, 3), g.f(2, 3, 4), views={1: "T"}),
    ]),
    OpInfo("outer", V(fn="outer", method="outer"), np.outer, lambda g: [
        Sample(g.f(3), g.f(4)),
        Sample(g.f(1), g.f(2)),
        Sample(g.f(6), g.f(4), views={0: "slice"}),
    ]),
    OpInfo("dot", V(fn="dot", method="dot"), np.dot, lambda g: [
        Sample(g.f(5), g.f(5)),
        Sample(g.f(1), g.f(1)),
        Sample(g.f(4), g.f(4), views={0: "slice"}),
    ]),
    # ---- shape / view ops ---------------------------------------------------
    OpInfo("reshape", {**V(fn="reshape", method="reshape"),
                       "method.reshape(*shape)": lambda lib, x, shape: x.reshape(*shape)},
           lambda x, shape: x.reshape(shape), _shape_samples),
    OpInfo("view", {"method.view": lambda lib, x, shape: x.view(shape),
                    "method.view(*shape)": lambda lib, x, shape: x.view(*shape)},
           lambda x, shape: x.reshape(shape), _view_samples),
    OpInfo("flatten", V(fn="flatten", method="flatten"), _ref_flatten, lambda g: [
        Sample(g.f(2, 3, 4)),
        Sample(g.f(2, 3, 4), start_dim=1),
        Sample(g.f(2, 3, 4, 2), start_dim=1, end_dim=2),
        Sample(g.f(2, 3, 4), start_dim=0, end_dim=-2),
        Sample(g.f()),
        Sample(g.f(5)),
        Sample(g.f(3, 4), views={0: "T"}),
    ]),
    OpInfo("transpose", V(fn="transpose", method="transpose"), np.swapaxes, lambda g: [
        Sample(g.f(3, 4), 0, 1),
        Sample(g.f(2, 3, 4), 0, 2),
        Sample(g.f(2, 3, 4), -1, 1),
        Sample(g.f(2, 3, 4), 1, 1),
        Sample(g.f(3, 4), 1, 0, views={0: "T"}),
    ]),
    OpInfo("permute", {**V(fn="permute", method="permute"),
                       "method.permute(*dims)": lambda lib, x, dims: x.permute(*dims)},
           lambda x, dims: np.transpose(x, dims), lambda g: [
               Sample(g.f(2, 3, 4), (2, 0, 1)),
               Sample(g.f(2, 3, 4), (-1, 1, 0)),
               Sample(g.f(3, 4), (1, 0), views={0: "T"}),
               Sample(g.f(), (), only=("fn.permute", "method.permute")),
           ]),
    OpInfo("T", {"attr.T": lambda lib, x: x.T}, lambda x: x.T, lambda g: [
        Sample(g.f(3, 4)),
        Sample(g.f(3, 4), views={0: "T"}),
    ]),
    OpInfo("mT", {"attr.mT": lambda lib, x: x.mT}, lambda x: np.swapaxes(x, -1, -2), lambda g: [
        Sample(g.f(3, 4)),
        Sample(g.f(2, 3, 4)),
        Sample(g.f(3, 4), views={0: "slice"}),
    ]),
    OpInfo("unsqueeze", V(fn="unsqueeze", method="unsqueeze"), np.expand_dims, lambda g: [
        Sample(g.f(3, 4), 0),
        Sample(g.f(3, 4), 1),
        Sample(g.f(3, 4), -1),
        Sample(g.f(3, 4), -3),
        Sample(g.f(), 0),
        Sample(g.f(3, 4), 2, views={0: "T"}),
    ]),
    OpInfo("squeeze", V(fn="squeeze", method="squeeze"), _ref_squeeze, lambda g: [
        Sample(g.f(1, 3, 1, 4)),
        Sample(g.f(1, 3, 1, 4), 0),
        Sample(g.f(1, 3, 1, 4), -2),
        Sample(g.f(1, 3, 1, 4), 1),  # not size 1: no-op
        Sample(g.f(1, 3, 1, 4), (0, 2)),
        Sample(g.f(1, 1)),
        Sample(g.f()),
        Sample(g.f(3, 1), views={0: "T"}),
    ]),
    OpInfo("expand", {"method.expand": lambda lib, x, *sizes: x.expand(*sizes),
                      "method.expand(sizes)": lambda lib, x, *sizes: x.expand(sizes)},
           _ref_expand, lambda g: [
               Sample(g.f(3, 1), 3, 4),
               Sample(g.f(3, 1), 2, 3, 4),  # new leading dim
               Sample(g.f(3, 1), -1, 4),
               Sample(g.f(4), 2, 4),
               Sample(g.f(), 3),
               Sample(g.f(1, 3), 3, -1, views={0: "T"}),  # (1,3) view of a (3,1) base
           ]),
    OpInfo("narrow", V(fn="narrow", method="narrow"), _ref_narrow, lambda g: [
        Sample(g.f(3, 4), 0, 1, 2),
        Sample(g.f(3, 4), 1, 0, 4),
        Sample(g.f(2, 3, 4), -1, 1, 2),
        Sample(g.f(3, 4), 1, -3, 2),  # negative start
        Sample(g.f(3, 4), 0, 1, 2, views={0: "T"}),
    ]),
    OpInfo("cat", {"fn.cat": lambda lib, *ts, **kw: lib.cat(ts, **kw),
                   "fn.cat(list)": lambda lib, *ts, **kw: lib.cat(list(ts), **kw)},
           lambda *arrs, dim=0: np.concatenate(arrs, axis=dim), lambda g: [
               Sample(g.f(2, 3), g.f(4, 3)),
               Sample(g.f(2, 3), g.f(2, 1), g.f(2, 2), dim=1),
               Sample(g.f(2, 3, 4), g.f(2, 3, 2), dim=-1),
               Sample(g.f(3), g.f(2)),
               Sample(g.f(3, 2), g.f(3, 4), dim=1, views={0: "T"}),
               Sample(g.f(2, 3)),
           ]),
    OpInfo("stack", {"fn.stack": lambda lib, *ts, **kw: lib.stack(ts, **kw)},
           lambda *arrs, dim=0: np.stack(arrs, axis=dim), lambda g: [
               Sample(g.f(2, 3), g.f(2, 3)),
               Sample(g.f(2, 3), g.f(2, 3), g.f(2, 3), dim=1),
               Sample(g.f(2, 3), g.f(2, 3), dim=-1),
               Sample(g.f(), g.f()),
               Sample(g.f(2, 3), g.f(2, 3), dim=2, views={0: "T"}),
           ]),
    OpInfo("split", V(fn="split", method="split"), _ref_split, lambda g: [
        Sample(g.f(5, 3), 2),  # uneven: sizes 2, 2, 1
        Sample(g.f(6, 3), 3),
        Sample(g.f(3, 5), 2, dim=1),
        Sample(g.f(5, 3), [1, 4]),
        Sample(g.f(2, 6), [3, 1, 2], dim=-1),
        Sample(g.f(4, 3), 2, views={0: "T"}),
    ]),
    OpInfo("chunk", V(fn="chunk", method="chunk"), _ref_chunk, lambda g: [
        Sample(g.f(5, 3), 3),  # sizes 2, 2, 1
        Sample(g.f(6), 4),  # PyTorch returns only 3 chunks of size 2 here
        Sample(g.f(3, 6), 2, dim=1),
        Sample(g.f(2, 3), 5, dim=-1),  # more chunks than elements
        Sample(g.f(4, 3), 2, views={0: "T"}),
    ]),
    OpInfo("gather", V(fn="gather", method="gather"), _ref_gather, lambda g: [
        Sample(g.f(3, 4), 1, g.idx((3, 2), 4)),
        Sample(g.f(3, 4), 0, g.idx((5, 4), 3)),  # duplicates -> grads accumulate
        Sample(g.f(3, 4), -1, g.idx((2, 3), 4)),  # index smaller than input in dim 0
        Sample(g.f(2, 3, 4), 1, g.idx((2, 2, 4), 3)),
        Sample(g.f(3, 4), 1, g.idx((3, 4), 4), views={0: "T"}),
    ]),
    OpInfo("index_select", V(fn="index_select", method="index_select"),
           lambda x, dim, index: np.take(x, index, axis=dim), lambda g: [
               Sample(g.f(3, 4), 0, np.array([2, 0, 2], dtype=np.int64)),
               Sample(g.f(3, 4), 1, g.idx((5,), 4)),
               Sample(g.f(2, 3, 4), -2, np.array([1], dtype=np.int64)),
               Sample(g.f(3, 4), 1, np.array([0, 3], dtype=np.int64), views={0: "T"}),
               Sample(g.f(5), 0, np.array([], dtype=np.int64)),
           ]),
    OpInfo("getitem", {"op.getitem": _getitem}, _ref_getitem, _getitem_samples),
    OpInfo("cumsum", V(fn="cumsum", method="cumsum"), _ref_cumsum, _cumsum_samples),
    # ---- nn.functional: convolution, pooling, normalization, embedding, attention -------
    OpInfo("nn.functional.conv1d", V(fn="nn.functional.conv1d"), _ref_conv(1), _conv1d_samples),
    OpInfo("nn.functional.conv2d", V(fn="nn.functional.conv2d"), _ref_conv(2), _conv2d_samples),
    OpInfo("nn.functional.conv_transpose1d", V(fn="nn.functional.conv_transpose1d"),
           _ref_conv_transpose(1), _conv_transpose1d_samples),
    OpInfo("nn.functional.conv_transpose2d", V(fn="nn.functional.conv_transpose2d"),
           _ref_conv_transpose(2), _conv_transpose2d_samples),
    OpInfo("nn.functional.max_pool1d", V(fn="nn.functional.max_pool1d"), _ref_max_pool(1),
           _max_pool1d_samples),
    OpInfo("nn.functional.max_pool2d", V(fn="nn.functional.max_pool2d"), _ref_max_pool(2),
           _max_pool2d_samples),
    OpInfo("nn.functional.avg_pool2d", V(fn="nn.functional.avg_pool2d"), _ref_avg_pool2d,
           _avg_pool2d_samples),
    OpInfo("nn.functional.adaptive_avg_pool2d", V(fn="nn.functional.adaptive_avg_pool2d"),
           _ref_adaptive_avg_pool2d, _adaptive_avg_pool2d_samples),
    OpInfo("nn.functional.layer_norm", V(fn="nn.functional.layer_norm"), _ref_layer_norm,
           _layer_norm_samples, torch_tol32=_NORM_TORCH_TOL32),
    OpInfo("nn.functional.group_norm", V(fn="nn.functional.group_norm"), _ref_group_norm,
           _group_norm_samples, torch_tol32=_NORM_TORCH_TOL32),
    OpInfo("nn.functional.batch_norm", V(fn="nn.functional.batch_norm"), _ref_batch_norm,
           _batch_norm_samples, torch_tol32=_NORM_TORCH_TOL32),
    OpInfo("nn.functional.embedding", V(fn="nn.functional.embedding"), _ref_embedding,
           _embedding_samples),
    OpInfo("nn.functional.scaled_dot_product_attention",
           V(fn="nn.functional.scaled_dot_product_attention"), _ref_sdpa, _sdpa_samples),
    OpInfo("nn.functional.one_hot", V(fn="nn.functional.one_hot"), _ref_one_hot,
           _one_hot_samples, differentiable=False),
    OpInfo("nn.functional.pad", V(fn=("nn.functional.pad", "constant_pad_nd")), _ref_constant_pad,
           _constant_pad_samples),
]


def _check_unique_names():
    names = [op.name for op in OP_DB]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate op names in OP_DB: {dup}"


_check_unique_names()


# ---------------------------------------------------------------------------
# dtype promotion cases (inputs other than float64/float32)
# ---------------------------------------------------------------------------


def _t(lib, data, dtype):
    return lib.tensor(data, dtype=getattr(lib, dtype))


def _i(lib):
    return _t(lib, [1, 2, 3], "int64")


def _b(lib):
    return _t(lib, [True, False, True], "bool")


def _f(lib):
    return _t(lib, [0.5, 2.0, -3.0], "float32")


def _d(lib):
    return _t(lib, [0.25, -1.0, 4.0], "float64")


def _d0(lib):
    return _t(lib, 2.0, "float64")


def _f0(lib):
    return _t(lib, 2.0, "float32")


def _i0(lib):
    return _t(lib, 2, "int64")


# (id, callable(lib) -> tensor, expected dtype name or exception class), as PyTorch 2.x.
PROMOTION_CASES = [
    # Python scalars: same category -> tensor dtype wins; higher category -> default dtype
    ("int64*2.5", lambda lib: _i(lib) * 2.5, "float32"),
    ("2.5*int64", lambda lib: 2.5 * _i(lib), "float32"),
    ("int64*2", lambda lib: _i(lib) * 2, "int64"),
    ("int64+int64", lambda lib: _i(lib) + _i(lib), "int64"),
    ("int64-1", lambda lib: _i(lib) - 1, "int64"),
    ("1-int64", lambda lib: 1 - _i(lib), "int64"),
    ("int64/int64", lambda lib: _i(lib) / _i(lib), "float32"),  # true division
    ("int64/2", lambda lib: _i(lib) / 2, "float32"),
    ("2/int64", lambda lib: 2 / _i(lib), "float32"),
    ("float32*2", lambda lib: _f(lib) * 2, "float32"),
    ("float32*2.5", lambda lib: _f(lib) * 2.5, "float32"),
    ("float64*2.5", lambda lib: _d(lib) * 2.5, "float64"),
    ("float32+float64", lambda lib: _f(lib) + _d(lib), "float64"),
    ("float64-float32", lambda lib: _d(lib) - _f(lib), "float64"),
    ("int64*float32", lambda lib: _i(lib) * _f(lib), "float32"),
    ("int64+float64", lambda lib: _i(lib) + _d(lib), "float64"),
    # 0-d tensors only decide the dtype if they are of a higher category
    ("float32+float64_0d", lambda lib: _f(lib) + _d0(lib), "float32"),
    ("int64+float64_0d", lambda lib: _i(lib) + _d0(lib), "float64"),
    ("int64+float32_0d", lambda lib: _i(lib) + _f0(lib), "float32"),
    ("bool+int64_0d", lambda lib: _b(lib) + _i0(lib), "int64"),
    ("float32_0d+float64_0d", lambda lib: _f0(lib) + _d0(lib), "float64"),
    ("int64_0d*float32", lambda lib: _i0(lib) * _f(lib), "float32"),
    # bool
    ("bool+bool", lambda lib: _b(lib) + _b(lib), "bool"),
    ("bool*bool", lambda lib: _b(lib) * _b(lib), "bool"),
    ("bool*2", lambda lib: _b(lib) * 2, "int64"),
    ("bool*2.5", lambda lib: _b(lib) * 2.5, "float32"),
    ("bool+int64", lambda lib: _b(lib) + _i(lib), "int64"),
    ("bool*float64", lambda lib: _b(lib) * _d(lib), "float64"),
    ("int64*True", lambda lib: _i(lib) * True, "int64"),
    ("bool-bool", lambda lib: _b(lib) - _b(lib), RuntimeError),
    ("-bool", lambda lib: -_b(lib), RuntimeError),
    ("int64-bool", lambda lib: _i(lib) - _b(lib), RuntimeError),
    # pow
    ("int64**2", lambda lib: _i(lib) ** 2, "int64"),
    ("int64**0.5", lambda lib: _i(lib) ** 0.5, "float32"),
    ("2**int64", lambda lib: 2 ** _i(lib), "int64"),
    ("2.0**int64", lambda lib: 2.0 ** _i(lib), "float32"),
    ("int64**int64", lambda lib: _i(lib) ** _i(lib), "int64"),
    ("int64**-1", lambda lib: _i(lib) ** -1, RuntimeError),
    ("float32**float64", lambda lib: _f(lib).abs() ** _d(lib), "float64"),
    # unary float ops on integers -> default float dtype; others keep the dtype
    ("exp(int64)", lambda lib: _i(lib).exp(), "float32"),
    ("sqrt(int64)", lambda lib: lib.sqrt(_i(lib)), "float32"),
    ("log(int64)", lambda lib: _i(lib).log(), "float32"),
    ("sigmoid(int64)", lambda lib: _i(lib).sigmoid(), "float32"),
    ("tanh(bool)", lambda lib: _b(lib).tanh(), "float32"),
    ("abs(int64)", lambda lib: _i(lib).abs(), "int64"),
    ("neg(int64)", lambda lib: -_i(lib), "int64"),
    ("sign(int64)", lambda lib: _i(lib).sign(), "int64"),
    ("sign(bool)", lambda lib: _b(lib).sign(), "bool"),
    ("relu(int64)", lambda lib: _i(lib).relu(), "int64"),
    # reductions
    ("sum(int64)", lambda lib: _i(lib).sum(), "int64"),
    ("sum(bool)", lambda lib: _b(lib).sum(), "int64"),
    ("prod(bool)", lambda lib: _b(lib).prod(), "int64"),
    ("sum(float32)", lambda lib: _f(lib).sum(), "float32"),
    ("mean(int64)", lambda lib: _i(lib).mean(), RuntimeError),
    ("amax(int64)", lambda lib: _i(lib).amax(), "int64"),
    ("max(bool)", lambda lib: _b(lib).max(), "bool"),
    ("argmax(int64)", lambda lib: _i(lib).argmax(), "int64"),
    ("argmax(float32,dim)", lambda lib: _f(lib).argmax(dim=0), "int64"),
    ("max(int64,dim).indices", lambda lib: _i(lib).max(dim=0)[1], "int64"),
    ("var(int64)", lambda lib: _i(lib).var(), RuntimeError),
    ("logsumexp(int64)", lambda lib: _i(lib).logsumexp(0), "float32"),
    ("norm(float32)", lambda lib: _f(lib).norm(), "float32"),
    ("norm(int64)", lambda lib: _i(lib).norm(), RuntimeError),
    ("softmax(float32)", lambda lib: _f(lib).softmax(0), "float32"),
    # comparisons -> bool
    ("int64<2", lambda lib: _i(lib) < 2, "bool"),
    ("int64==float32", lambda lib: _i(lib) == _f(lib), "bool"),
    ("float32<float64", lambda lib: _f(lib) < _d(lib), "bool"),
    ("bool==1", lambda lib: _b(lib) == 1, "bool"),
    ("float64>=0.5", lambda lib: _d(lib) >= 0.5, "bool"),
    # maximum / where / clamp / masked_fill
    ("maximum(int64,float32)", lambda lib: lib.maximum(_i(lib), _f(lib)), "float32"),
    ("maximum(int64,float64_0d)", lambda lib: lib.maximum(_i(lib), _d0(lib)), "float64"),
    ("minimum(bool,bool)", lambda lib: lib.minimum(_b(lib), _b(lib)), "bool"),
    ("where(b,int64,float32)", lambda lib: lib.where(_b(lib), _i(lib), _f(lib)), "float32"),
    ("where(b,float32,0.0)", lambda lib: lib.where(_b(lib), _f(lib), 0.0), "float32"),
    ("where(b,float64,0.0)", lambda lib: lib.where(_b(lib), _d(lib), 0.0), "float64"),
    ("where(b,int64,0.5)", lambda lib: lib.where(_b(lib), _i(lib), 0.5), "float32"),
    ("where(b,int64,float64_0d)", lambda lib: lib.where(_b(lib), _i(lib), _d0(lib)), "float64"),
    ("clamp(int64,min=0.5)", lambda lib: _i(lib).clamp(min=0.5), "float32"),
    ("clamp(int64,0,2)", lambda lib: _i(lib).clamp(0, 2), "int64"),
    ("clamp(float32,min=float64_0d)", lambda lib: _f(lib).clamp(min=_d0(lib)), "float32"),
    ("masked_fill(int64,b,2.5)", lambda lib: _i(lib).masked_fill(_b(lib), 2.5), "int64"),  # truncates
    ("masked_fill(float32,b,float64_0d)", lambda lib: _f(lib).masked_fill(_b(lib), _d0(lib)), "float32"),
    # cat / stack promote, matmul family does not
    ("cat(int64,float32)", lambda lib: lib.cat([_i(lib), _f(lib)]), "float32"),
    ("cat(float32,float64)", lambda lib: lib.cat([_f(lib), _d(lib)]), "float64"),
    ("cat(bool,int64)", lambda lib: lib.cat([_b(lib), _i(lib)]), "int64"),
    ("stack(int64,float32)", lambda lib: lib.stack([_i(lib), _f(lib)]), "float32"),
    ("matmul(int64,int64)", lambda lib: _i(lib) @ _i(lib), "int64"),
    ("matmul(int64,float32)", lambda lib: _i(lib) @ _f(lib), RuntimeError),
    ("mm(float32,float64)", lambda lib: lib.mm(_f(lib)[None], _d(lib)[:, None]), RuntimeError),
    ("outer(int64,float32)", lambda lib: lib.outer(_i(lib), _f(lib)), "float32"),
    # indexing keeps the dtype
    ("int64[bool]", lambda lib: _i(lib)[_b(lib)], "int64"),
    ("gather(bool)", lambda lib: _b(lib).gather(0, _i(lib) - 1), "bool"),
    ("index_select(int64)", lambda lib: _i(lib).index_select(0, _i(lib) - 1), "int64"),
    # tensor() inference
    ("tensor(2.5)", lambda lib: lib.tensor(2.5), "float32"),
    ("tensor(2)", lambda lib: lib.tensor(2), "int64"),
    ("tensor(True)", lambda lib: lib.tensor(True), "bool"),
    ("tensor([1,2.0])", lambda lib: lib.tensor([1, 2.0]), "float32"),
    ("tensor(np.float64 array)", lambda lib: lib.tensor(np.array([1.0, 2.0])), "float64"),
    ("tensor(np.int64 array)", lambda lib: lib.tensor(np.array([1, 2], dtype=np.int64)), "int64"),
    ("float32*np.float64(2)", lambda lib: _f(lib) * np.float64(2.0), "float32"),
    # cumsum accumulates integers / bools in int64; nn.functional index outputs are int64
    ("cumsum(int64)", lambda lib: _i(lib).cumsum(0), "int64"),
    ("cumsum(bool)", lambda lib: lib.cumsum(_b(lib), 0), "int64"),
    ("cumsum(int64,dtype=float32)", lambda lib: _i(lib).cumsum(0, dtype=lib.float32), "float32"),
    ("cumsum(float32,dtype=float64)", lambda lib: lib.cumsum(_f(lib), 0, dtype=lib.float64),
     "float64"),
    ("one_hot(int64)", lambda lib: lib.nn.functional.one_hot(_i(lib)), "int64"),
    ("embedding(int64,float64)",
     lambda lib: lib.nn.functional.embedding(_i(lib) - 1, _d(lib).reshape(3, 1)), "float64"),
    ("max_pool1d(float32).indices",
     lambda lib: lib.nn.functional.max_pool1d(_f(lib)[None], 2, 1, return_indices=True)[1],
     "int64"),
]


# ---------------------------------------------------------------------------
# error cases: (id, callable(lib), exception class, exact message substring)
# ---------------------------------------------------------------------------


def _ones(lib, *shape):
    return lib.ones(*shape, dtype=lib.float32)


def _F(lib):
    return lib.nn.functional


ERROR_CASES = [
    ("broadcast", lambda lib: _ones(lib, 2, 3) + _ones(lib, 2, 4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("broadcast_1d", lambda lib: _ones(lib, 3) * _ones(lib, 4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    ("broadcast_3d", lambda lib: _ones(lib, 2, 3, 4) + _ones(lib, 3, 3), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 2"),
    ("where_broadcast", lambda lib: lib.where(lib.ones(3, dtype=lib.bool), _ones(lib, 4), _ones(lib, 3)),
     RuntimeError, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    ("mm", lambda lib: lib.mm(_ones(lib, 2, 3), _ones(lib, 4, 5)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("matmul_2d", lambda lib: _ones(lib, 2, 3) @ _ones(lib, 4, 5), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("matmul_1d_2d", lambda lib: lib.matmul(_ones(lib, 3), _ones(lib, 4, 5)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    ("matmul_2d_1d", lambda lib: _ones(lib, 2, 3) @ _ones(lib, 4), RuntimeError,
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("matmul_1d_1d", lambda lib: _ones(lib, 3) @ _ones(lib, 4), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    ("matmul_batch", lambda lib: _ones(lib, 2, 2, 3) @ _ones(lib, 3, 3, 5), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("bmm", lambda lib: lib.bmm(_ones(lib, 2, 2, 3), _ones(lib, 2, 4, 5)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ("index_int", lambda lib: _ones(lib, 3, 4)[5], IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_int_dim1", lambda lib: _ones(lib, 3, 4)[:, 4], IndexError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("index_negative", lambda lib: _ones(lib, 3, 4)[-4], IndexError,
     "index -4 is out of bounds for dimension 0 with size 3"),
    ("index_tensor", lambda lib: _ones(lib, 3, 4)[lib.tensor([0, 3])], IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("index_too_many", lambda lib: _ones(lib, 3, 4)[0, 0, 0], IndexError,
     "too many indices for tensor of dimension 2"),
    ("index_mask_shape", lambda lib: _ones(lib, 3, 4)[lib.tensor([True, False])], IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ("index_negative_step", lambda lib: _ones(lib, 3)[::-1], ValueError, "step must be greater than zero"),
    ("dim_out_of_range", lambda lib: _ones(lib, 3, 4).sum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("dim_out_of_range_neg", lambda lib: _ones(lib, 3, 4).softmax(-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("unsqueeze_range", lambda lib: _ones(lib, 3, 4).unsqueeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("cat", lambda lib: lib.cat([_ones(lib, 2, 3), _ones(lib, 2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 "
     "in the list."),
    ("stack", lambda lib: lib.stack([_ones(lib, 2, 3), _ones(lib, 3, 2)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1"),
    ("reshape", lambda lib: _ones(lib, 2, 3).reshape(5), RuntimeError,
     "shape '[5]' is invalid for input of size 6"),
    ("view_noncontiguous", lambda lib: _ones(lib, 3, 4).t().view(12), RuntimeError,
     "view size is not compatible with input tensor's size and stride"),
    ("expand", lambda lib: _ones(lib, 3, 2).expand(3, 4), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 1."),
    ("narrow", lambda lib: _ones(lib, 3, 4).narrow(1, 2, 3), RuntimeError,
     "start (2) + length (3) exceeds dimension size (4)."),
    ("permute_dup", lambda lib: _ones(lib, 3, 4).permute(0, 0), RuntimeError,
     "permute(): duplicate dims are not allowed."),
    ("gather_oob", lambda lib: _ones(lib, 3).gather(0, lib.tensor([5])), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_select_oob", lambda lib: _ones(lib, 3).index_select(0, lib.tensor([5])), IndexError,
     "index out of range in self"),
    ("split_sizes", lambda lib: _ones(lib, 3).split([1, 1]), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3"),
    ("mean_int", lambda lib: lib.tensor([1, 2]).mean(), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    ("backward_nonscalar", lambda lib: (lib.ones(3, requires_grad=True) * 2).backward(), RuntimeError,
     "grad can be implicitly created only for scalar outputs"),
    ("backward_no_grad", lambda lib: lib.ones(3).sum().backward(), RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("cumsum_dim", lambda lib: _ones(lib, 3, 4).cumsum(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    # nn.functional
    ("conv2d_channels", lambda lib: _F(lib).conv2d(_ones(lib, 1, 3, 5, 5), _ones(lib, 2, 4, 3, 3)),
     RuntimeError, "Given groups=1, weight of size [2, 4, 3, 3], expected input[1, 3, 5, 5] to "
     "have 4 channels, but got 3 channels instead"),
    ("conv2d_groups",
     lambda lib: _F(lib).conv2d(_ones(lib, 1, 3, 5, 5), _ones(lib, 2, 1, 3, 3), groups=2),
     RuntimeError, "Given groups=2, weight of size [2, 1, 3, 3], expected input[1, 3, 5, 5] to "
     "have 2 channels, but got 3 channels instead"),
    ("conv2d_bias",
     lambda lib: _F(lib).conv2d(_ones(lib, 1, 3, 5, 5), _ones(lib, 2, 3, 3, 3), _ones(lib, 3)),
     RuntimeError, "Given weight of size [2, 3, 3, 3], expected bias to be 1-dimensional with 2 "
     "elements, but got bias of size [3] instead"),
    ("conv2d_input_dim", lambda lib: _F(lib).conv2d(_ones(lib, 3, 5), _ones(lib, 2, 3, 3, 3)),
     RuntimeError, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
     "size: [3, 5]"),
    ("conv2d_kernel_too_big",
     lambda lib: _F(lib).conv2d(_ones(lib, 1, 3, 2, 2), _ones(lib, 2, 3, 3, 3)), RuntimeError,
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't "
     "be greater than actual input size"),
    ("conv2d_same_strided", lambda lib: _F(lib).conv2d(
        _ones(lib, 1, 3, 5, 5), _ones(lib, 2, 3, 3, 3), stride=2, padding="same"),
     RuntimeError, "padding='same' is not supported for strided convolutions"),
    ("conv2d_padding_string", lambda lib: _F(lib).conv2d(
        _ones(lib, 1, 3, 5, 5), _ones(lib, 2, 3, 3, 3), padding="full"),
     RuntimeError, "Invalid padding string: 'full'"),
    ("conv_transpose2d_output_padding", lambda lib: _F(lib).conv_transpose2d(
        _ones(lib, 1, 2, 3, 3), _ones(lib, 2, 2, 3, 3), stride=2, output_padding=2),
     RuntimeError, "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 2 output_padding_width: 2 stride_height: 2 stride_width: 2"),
    ("max_pool2d_padding", lambda lib: _F(lib).max_pool2d(_ones(lib, 1, 1, 5, 5), 2, padding=2),
     RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=2 and dilation=1"),
    ("max_pool2d_output_size", lambda lib: _F(lib).max_pool2d(_ones(lib, 1, 1, 1, 1), 2),
     RuntimeError, "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is "
     "too small"),
    ("avg_pool2d_padding", lambda lib: _F(lib).avg_pool2d(_ones(lib, 1, 1, 5, 5), 2, padding=2),
     RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=2 and dilation=1"),
    ("adaptive_avg_pool2d_output_size",
     lambda lib: _F(lib).adaptive_avg_pool2d(_ones(lib, 1, 2, 3, 3), (1, 2, 3)), RuntimeError,
     "adaptive_avg_pool2d: output_size must be 2"),
    ("layer_norm_shape", lambda lib: _F(lib).layer_norm(_ones(lib, 2, 3), (4,)), RuntimeError,
     "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"),
    ("group_norm_groups", lambda lib: _F(lib).group_norm(_ones(lib, 2, 6, 3), 4), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of shape "
     "[2, 6, 3] and num_groups=4"),
    ("batch_norm_one_value",
     lambda lib: _F(lib).batch_norm(_ones(lib, 1, 3), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"),
    ("embedding_index", lambda lib: _F(lib).embedding(lib.tensor([5]), _ones(lib, 3, 2)),
     IndexError, "index out of range in self"),
    ("embedding_float_index",
     lambda lib: _F(lib).embedding(lib.tensor([1.0]), _ones(lib, 3, 2)), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
     "Int; but got torch.FloatTensor instead (while checking arguments for embedding)"),
    ("embedding_padding_idx",
     lambda lib: _F(lib).embedding(lib.tensor([1]), _ones(lib, 3, 2), padding_idx=3),
     AssertionError, "Padding_idx must be within num_embeddings"),
    ("one_hot_negative", lambda lib: _F(lib).one_hot(lib.tensor([-1, 2])), RuntimeError,
     "Class values must be non-negative."),
    ("one_hot_num_classes", lambda lib: _F(lib).one_hot(lib.tensor([0, 3]), 3), RuntimeError,
     "Class values must be smaller than num_classes."),
    ("one_hot_float", lambda lib: _F(lib).one_hot(lib.tensor([0.0])), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    ("sdpa_shapes", lambda lib: _F(lib).scaled_dot_product_attention(
        _ones(lib, 1, 2, 3, 4), _ones(lib, 1, 2, 5, 3), _ones(lib, 1, 2, 5, 3)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    ("sdpa_dtypes", lambda lib: _F(lib).scaled_dot_product_attention(
        _ones(lib, 1, 2, 2), lib.ones(1, 2, 2, dtype=lib.float64), _ones(lib, 1, 2, 2)),
     RuntimeError, "Expected query, key, and value to have the same dtype, but got query.dtype: "
     "float key.dtype: double and value.dtype: float instead."),
]
