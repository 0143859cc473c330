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
    torch_tol64: tuple = None  # (rtol, atol) float64 vs PyTorch, if not the generic one
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


def _ref_addcmul(x, t1, t2, value=1):
    return x + value * t1 * t2


def _ref_addcdiv(x, t1, t2, value=1):
    return x + value * t1 / t2


def _addc_samples(make_t2):
    """addcmul / addcdiv: broadcasting among the three tensors, 0-d, views, ``value``."""

    def samples(g):
        return [
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4)),
            Sample(g.f(3, 4), g.f(3, 1), make_t2(g, 1, 4), value=0.5),
            Sample(g.f(4), g.f(2, 3, 4), make_t2(g, 3, 1), value=-2),
            Sample(g.f(), g.f(3, 4), make_t2(g), value=1.5),
            Sample(g.f(), g.f(), make_t2(g), value=3),
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4), views={1: "T"}, value=2),
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4), views={0: "slice", 2: "slice"}),
            # an integer tensor1: the float result's dtype, no gradient for it
            Sample(g.f(3, 4), g.idx((3, 4), 5) - 2, make_t2(g, 4), value=0.5),
        ]

    return samples


def _ref_lerp(x, end, weight):
    return x + weight * (end - x)


def _lerp_samples(g):
    # the weight is a number or a tensor; |weight| < 0.5 and >= 0.5 take different formulas
    return [
        Sample(g.f(3, 4), g.f(3, 4), 0.3),
        Sample(g.f(3, 4), g.f(3, 4), 0.75),
        Sample(g.f(3, 4), g.f(3, 4), -0.6),
        Sample(g.f(3, 4), g.f(3, 4), 1.5),
        Sample(g.f(3, 4), g.f(3, 4), g.f(3, 4, lo=-1.0, hi=2.0)),
        Sample(g.f(3, 1), g.f(1, 4), g.f(4, lo=0.0, hi=1.0)),
        Sample(g.f(2, 3, 4), g.f(3, 4), g.f(lo=0.0, hi=1.0)),  # 0-d tensor weight
        Sample(g.f(), g.f(), 0.25),
        Sample(g.f(3, 4), g.f(3, 4), g.f(3, 4), views={0: "T", 2: "slice"}),
    ]


def _addc_inplace_samples(make_t2):
    """addcmul_ / addcdiv_: self at the broadcast shape, tensor1 / tensor2 broadcast, 0-d,
    views; a self without grad takes the op's node; only self needing a gradient."""

    def samples(g):
        return [
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4)),
            Sample(g.f(3, 4), g.f(3, 1), make_t2(g, 1, 4), value=0.5),
            Sample(g.f(2, 3, 4), g.f(4), make_t2(g, 3, 1), value=-2),
            Sample(g.f(), g.f(), make_t2(g), value=3),
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4), views={0: "T", 1: "slice"}, value=1.5),
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 4), const=(0,), value=0.25),
            Sample(g.f(3, 4), g.f(3, 4), make_t2(g, 3, 4), const=(1, 2)),
        ]

    return samples


def _lerp_inplace_samples(g):
    # a weight needing a gradient reads self's old value (written back from a copy); a
    # constant one lets self be written in place while the graph is recorded
    return [
        Sample(g.f(3, 4), g.f(3, 4), 0.3),
        Sample(g.f(3, 4), g.f(4), 0.75),
        Sample(g.f(), g.f(), -0.6),
        Sample(g.f(3, 4), g.f(3, 4), g.f(3, 4, lo=-1.0, hi=2.0)),
        Sample(g.f(3, 4), g.f(3, 1), g.f(4, lo=0.0, hi=1.0), const=(2,)),
        Sample(g.f(2, 3, 4), g.f(3, 4), g.f(lo=0.0, hi=1.0)),  # 0-d tensor weight
        Sample(g.f(3, 4), g.f(3, 4), g.f(3, 4), views={0: "T", 2: "slice"}, const=(2,)),
    ]


def _inplace_on_clone(name):
    """``self.clone().name(*args)``: the in-place form on a contiguous copy, so gradients flow
    back to the input."""
    def call(lib, x, *args, **kw):
        return getattr(x.clone(memory_format=lib.contiguous_format), name)(*args, **kw)

    return {f"method.{name}": call}


def _ref_normalize(x, p=2.0, dim=1, eps=1e-12):
    norm = np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1.0 / p)
    return x / np.maximum(norm, eps)


def _normalize_samples(g):
    return [
        Sample(g.nz(3, 4)),
        Sample(g.nz(3, 4), dim=0),
        Sample(g.nz(2, 3, 4), dim=-1),
        Sample(g.nz(3, 4), p=1.0),
        Sample(g.nz(3, 4), p=3.0, dim=0),
        Sample(g.nz(5), dim=0),
        Sample(g.nz(4, 3), views={0: "T"}),
        # every row's norm is below eps: divided by eps
        Sample(g.f(3, 4, lo=0.01, hi=0.02), eps=1.0),
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


def _ref_avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                    count_include_pad=True, divisor_override=None):
    k = _ntuple(kernel_size, 3)
    s = _ntuple(kernel_size if stride is None else stride, 3)
    p = _ntuple(padding, 3)
    sp = x.shape[-3:]
    outs = [_pool_out(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3)]
    out = np.empty(x.shape[:-3] + tuple(outs))
    for o in np.ndindex(*outs):
        lo = [o[i] * s[i] - p[i] for i in range(3)]
        hi = [min(lo[i] + k[i], sp[i] + p[i]) for i in range(3)]  # window may cover padding
        pool_size = int(np.prod([hi[i] - lo[i] for i in range(3)]))
        lo = [max(v, 0) for v in lo]
        hi = [min(hi[i], sp[i]) for i in range(3)]
        total = x[..., lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].sum(axis=(-3, -2, -1))
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = pool_size
        else:
            div = int(np.prod([hi[i] - lo[i] for i in range(3)]))
        out[(Ellipsis,) + o] = total / div
    return out


def _ref_adaptive_avg_pool3d(x, output_size):
    sp = x.shape[-3:]
    outs = [sp[i] if o is None else o for i, o in enumerate(_ntuple(output_size, 3))]
    out = np.empty(x.shape[:-3] + tuple(outs))
    for o in np.ndindex(*outs):
        lo = [o[i] * sp[i] // outs[i] for i in range(3)]
        hi = [-(-(o[i] + 1) * sp[i] // outs[i]) for i in range(3)]
        out[(Ellipsis,) + o] = x[..., lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].mean(axis=(-3, -2, -1))
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


def _conv3d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 3, 4, 4), f(3, 2, 2, 3, 3), f(3)),
        Sample(f(1, 2, 4, 4, 5), f(2, 2, 3, 2, 3), stride=2, padding=1),  # no bias
        Sample(f(1, 2, 5, 4, 4), f(2, 2, 2, 2, 2), f(2), stride=(2, 1, 1), padding=(1, 0, 1),
               dilation=(2, 1, 2)),
        Sample(f(1, 4, 3, 4, 4), f(4, 2, 2, 3, 3), f(4), groups=2),
        Sample(f(1, 2, 3, 4, 4), f(2, 2, 2, 3, 2), f(2), padding="same"),  # odd total pad
        Sample(f(1, 2, 3, 4, 4), f(2, 2, 2, 2, 3), padding="valid"),
        Sample(f(2, 3, 4, 4), f(3, 2, 3, 3, 3), f(3), padding=1),  # unbatched (C, D, H, W)
        Sample(f(2, 2, 3, 4, 4), f(3, 2, 2, 3, 3), f(3), views={0: "T", 1: "slice"}),
    ]


def _conv_transpose3d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 2, 3, 3), f(2, 3, 2, 3, 3), f(3)),
        Sample(f(1, 2, 2, 3, 2), f(2, 2, 3, 2, 3), stride=2, padding=1, output_padding=1),
        Sample(f(1, 4, 2, 2, 3), f(4, 1, 2, 2, 2), f(2), groups=2, stride=(2, 1, 2),
               output_padding=(1, 0, 0)),
        Sample(f(1, 2, 3, 2, 2), f(2, 2, 2, 2, 3), f(2), stride=(1, 2, 1), padding=(1, 0, 1),
               output_padding=(1, 1, 0), dilation=2),
        Sample(f(2, 2, 3, 3), f(2, 2, 2, 3, 2), f(2), stride=2),  # unbatched (C, D, H, W)
        Sample(f(2, 2, 2, 3, 3), f(2, 3, 2, 3, 3), f(3), views={0: "T", 1: "slice"}),
    ]


def _max_pool3d_samples(g):
    d = g.distinct  # no ties: the max is differentiable
    return [
        Sample(d(1, 2, 4, 4, 4), 2),
        Sample(d(2, 1, 5, 4, 5), 3, stride=2, padding=1),
        Sample(d(1, 2, 4, 5, 4), (2, 3, 2), stride=(1, 2, 1), dilation=(2, 1, 1)),
        Sample(d(1, 1, 5, 5, 4), 2, ceil_mode=True),  # last window hangs over the edge
        Sample(d(1, 1, 5, 4, 5), (3, 2, 2), stride=2, padding=1, ceil_mode=True, return_indices=True),
        Sample(d(1, 2, 4, 4, 4), 2, return_indices=True),
        Sample(d(2, 4, 4, 4), 2, stride=1),  # unbatched (C, D, H, W)
        Sample(d(2, 2, 4, 4, 4), 2, views={0: "T"}),
        # ties: the first maximum of the window (in D, H, W order) wins
        Sample(np.ones((1, 1, 2, 3, 3)), 2, stride=1, return_indices=True, gradcheck=False),
    ]


def _avg_pool3d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 4, 4, 4), 2),
        Sample(f(1, 2, 5, 4, 5), 3, stride=2, padding=1),
        Sample(f(1, 2, 5, 4, 5), 3, stride=2, padding=1, count_include_pad=False),
        Sample(f(1, 1, 5, 5, 4), 2, stride=2, padding=1, ceil_mode=True),
        Sample(f(1, 1, 5, 5, 4), 2, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        Sample(f(1, 2, 4, 5, 5), (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), divisor_override=5),
        Sample(f(2, 4, 4, 4), 2, stride=1),  # unbatched (C, D, H, W)
        Sample(f(2, 2, 4, 4, 4), 2, views={0: "T"}),
    ]


def _adaptive_avg_pool3d_samples(g):
    f = g.f
    return [
        Sample(f(2, 2, 3, 5, 4), (1, 1, 1)),
        Sample(f(1, 2, 5, 4, 7), (2, 3, 3)),  # non-divisible: overlapping windows
        Sample(f(1, 2, 4, 4, 4), 2),
        Sample(f(1, 2, 3, 5, 4), (None, 2, 6)),
        Sample(f(2, 5, 3, 4), (2, 3, 2)),  # unbatched (C, D, H, W)
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
    _binary("fmod", np.fmod, make_a=_quarter_grid, make_b=_twos),
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
    OpInfo("addcmul", V(fn="addcmul", method="addcmul"), _ref_addcmul, _addc_samples(lambda g, *s: g.f(*s))),
    OpInfo("addcdiv", V(fn="addcdiv", method="addcdiv"), _ref_addcdiv, _addc_samples(lambda g, *s: g.nz(*s))),
    OpInfo("lerp", V(fn="lerp", method="lerp"), _ref_lerp, _lerp_samples),
    OpInfo("addcmul_", _inplace_on_clone("addcmul_"), _ref_addcmul, _addc_inplace_samples(lambda g, *s: g.f(*s))),
    OpInfo("addcdiv_", _inplace_on_clone("addcdiv_"), _ref_addcdiv, _addc_inplace_samples(lambda g, *s: g.nz(*s))),
    OpInfo("lerp_", _inplace_on_clone("lerp_"), _ref_lerp, _lerp_inplace_samples),
    OpInfo("nn.functional.normalize", V(fn="nn.functional.normalize"), _ref_normalize, _normalize_samples),
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
    OpInfo("nn.functional.conv3d", V(fn="nn.functional.conv3d"), _ref_conv(3), _conv3d_samples),
    OpInfo("nn.functional.conv_transpose3d", V(fn="nn.functional.conv_transpose3d"),
           _ref_conv_transpose(3), _conv_transpose3d_samples),
    OpInfo("nn.functional.max_pool3d", V(fn="nn.functional.max_pool3d"), _ref_max_pool(3),
           _max_pool3d_samples),
    OpInfo("nn.functional.avg_pool3d", V(fn="nn.functional.avg_pool3d"), _ref_avg_pool3d,
           _avg_pool3d_samples),
    OpInfo("nn.functional.adaptive_avg_pool3d", V(fn="nn.functional.adaptive_avg_pool3d"),
           _ref_adaptive_avg_pool3d, _adaptive_avg_pool3d_samples),
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


# ---------------------------------------------------------------------------
# dims moved, diagonals, products and contractions (movedim ... cdist)
# ---------------------------------------------------------------------------


def _ref_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    nd = x.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    i = np.arange(x.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = x
    # the two new dims are the last two: move them to d1 < d2 (swapped if dim1 > dim2)
    out = np.moveaxis(out, (-2, -1), (d1, d2) if d1 < d2 else (d2, d1))
    return out if d1 < d2 else np.swapaxes(out, d1, d2)


def _ref_cdist(x1, x2, p=2.0, compute_mode=None):
    diff = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return (diff != 0).sum(-1).astype(x1.dtype)
    if p == math.inf:
        return diff.max(-1)
    return (diff ** p).sum(-1) ** (1.0 / p)


def _diagonal_samples(g):
    f = g.f
    return [
        Sample(f(3, 4)),
        Sample(f(3, 4), 1),
        Sample(f(4, 3), -2),
        Sample(f(2, 3, 4), offset=1, dim1=2, dim2=0),
        Sample(f(2, 3, 4), -1, -1, 1),
        Sample(f(3, 4), 0, 1, 0, views={0: "T"}),
        Sample(f(3, 4), offset=5, gradcheck=False),  # empty diagonal
    ]


def _cdist_samples(g):
    f = g.f
    return [
        Sample(f(3, 4), f(5, 4)),
        Sample(f(2, 3, 2), f(2, 4, 2), p=1.0),
        Sample(f(3, 2), f(4, 2), p=3.0),
        Sample(f(3, 2), f(4, 2), p=0.5),
        Sample(f(3, 2), f(4, 2), p=math.inf),
        Sample(f(2, 1, 3, 2), f(4, 4, 2)),  # batch dims broadcast
        Sample(f(30, 3), f(4, 3)),  # more than 25 rows: the matrix-product identity
        Sample(f(3, 3), f(2, 3), compute_mode="use_mm_for_euclid_dist"),
        Sample(f(30, 3), f(4, 3), compute_mode="donot_use_mm_for_euclid_dist"),
        Sample(f(4, 3), f(5, 3), views={0: "T", 1: "slice"}),
        # a zero distance: PyTorch's gradient there is 0 (not gradcheck-able)
        Sample(np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[1.0, 2.0]]), gradcheck=False),
        Sample(np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[1.0, 2.0]]), p=3.0, gradcheck=False),
    ]


def _einsum(lib, *ops, eq):
    return lib.einsum(eq, *ops)


def _einsum_list(lib, *ops, eq):
    return lib.einsum(eq, list(ops))


def _einsum_samples(g):
    f = g.f
    return [
        Sample(f(2, 3), f(3, 4), eq="ij,jk->ik"),
        Sample(f(2, 3), f(3, 4), eq="ij,jk"),  # implicit output
        Sample(f(2, 2, 3), f(2, 3, 4), eq="bij,bjk->bik"),
        Sample(f(3, 2, 4), f(4, 3, 5), eq="ibj,jik->bik"),
        Sample(f(3, 3), eq="ii->i"),
        Sample(f(3, 3), eq="ii"),
        Sample(f(2, 3, 3), eq="bii->b"),
        Sample(f(3, 4), eq="ij->ji"),
        Sample(f(3, 4), eq="ij->"),
        Sample(f(3), f(4), eq="i,j->ij"),
        Sample(f(3, 4), f(3, 4), eq="ij,ij->ij"),
        Sample(f(3, 4), f(3, 4), eq="ij,ij->"),
        Sample(f(2, 3), f(3, 4), f(4, 5), eq="ij,jk,kl->il"),
        Sample(f(2, 3, 4), f(2, 4, 3), f(2, 3), eq="bij,bjk,bk->bi"),
        Sample(f(2, 1, 3, 4), f(5, 4, 2), eq="...ij,...jk->...ik"),
        Sample(f(2, 3, 4), f(4), eq="...j,j->..."),
        Sample(f(2, 3, 4), eq="...ij->...ji"),
        Sample(f(2, 3), f(1, 3), eq="ij,ij->i"),  # a size-1 dim broadcasts
        Sample(f(3, 2), f(2, 3), eq="Ab,ba"),  # upper case subscripts sort first
        Sample(f(), f(3), eq=",i->i"),
        Sample(f(2, 3), f(3, 4), views={0: "T", 1: "slice"}, eq="ij,jk->ki"),
    ]


def _tensordot_samples(g):
    f = g.f
    return [
        Sample(f(2, 3, 4), f(3, 4, 5)),  # dims=2
        Sample(f(2, 3), f(3, 4), 1),
        Sample(f(2, 3), f(4, 5), 0),
        Sample(f(2, 3, 4), f(4, 2, 5), dims=([0, 2], [1, 0])),
        Sample(f(3, 4), f(4, 3), dims=([1], [0])),
        Sample(f(3, 4), f(4, 3), views={0: "T", 1: "slice"}, dims=([0, 1], [1, 0])),
    ]


def _ref_tensordot(a, b, dims=2):
    return np.tensordot(a, b, axes=dims)


OP_DB += [
    OpInfo("movedim", V(fn=("movedim", "moveaxis"), method=("movedim", "moveaxis")),
           lambda x, source, destination: np.moveaxis(x, source, destination), lambda g: [
               Sample(g.f(2, 3, 4), 0, 2),
               Sample(g.f(2, 3, 4), -1, 0),
               Sample(g.f(2, 3, 4), (0, 1), (2, 0)),
               Sample(g.f(2, 3, 4, 2), [3, 0], [1, 2]),
               Sample(g.f(), 0, -1, ref=lambda x, source, destination: x),
               Sample(g.f(3, 4), 0, 1, views={0: "T"}),
           ]),
    OpInfo("swapdims", V(fn=("swapdims", "swapaxes"), method=("swapdims", "swapaxes")), np.swapaxes,
           lambda g: [
               Sample(g.f(2, 3, 4), 0, 2),
               Sample(g.f(2, 3, 4), -1, 1),
               Sample(g.f(3, 4), 0, 1, views={0: "slice"}),
           ]),
    OpInfo("diagonal", V(fn="diagonal", method="diagonal"),
           lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2), _diagonal_samples),
    OpInfo("diag", V(fn="diag", method="diag"), lambda x, diagonal=0: np.diag(x, diagonal), lambda g: [
        Sample(g.f(3)),
        Sample(g.f(3), 1),
        Sample(g.f(2), diagonal=-2),
        Sample(g.f(3, 4)),
        Sample(g.f(3, 4), -1),
        Sample(g.f(3, 4), 2, views={0: "T"}),
    ]),
    OpInfo("diag_embed", V(fn="diag_embed", method="diag_embed"), _ref_diag_embed, lambda g: [
        Sample(g.f(3)),
        Sample(g.f(2, 3)),
        Sample(g.f(2, 3), 1),
        Sample(g.f(2, 3), -1, 0, 2),
        Sample(g.f(2, 3), offset=2, dim1=2, dim2=0),
        Sample(g.f(3, 2), views={0: "T"}, dim1=-1, dim2=0),
    ]),
    OpInfo("trace", V(fn="trace", method="trace"), np.trace, lambda g: [
        Sample(g.f(3, 3)),
        Sample(g.f(2, 4)),
        Sample(g.f(4, 2), views={0: "T"}),
    ]),
    OpInfo("kron", V(fn="kron", method="kron"), np.kron, lambda g: [
        Sample(g.f(2, 3), g.f(3, 2)),
        Sample(g.f(2), g.f(3, 2)),
        Sample(g.f(2, 1, 2), g.f(3)),
        Sample(g.f(), g.f(2, 2)),
        # (no non-contiguous sample: PyTorch's kron backward fails on them)
    ]),
    OpInfo("tensordot", V(fn="tensordot"), _ref_tensordot, _tensordot_samples),
    OpInfo("einsum", {"fn.einsum": _einsum, "fn.einsum(list)": _einsum_list},
           lambda *ops, eq: np.einsum(eq, *ops), _einsum_samples),
    OpInfo("cdist", V(fn="cdist"), _ref_cdist, _cdist_samples),
    OpInfo("cdist_p0", {"fn.cdist": _fn("cdist")}, _ref_cdist, lambda g: [
        Sample(np.round(g.f(3, 2)), np.round(g.f(4, 2)), p=0.0),
    ], differentiable=False),
    OpInfo("triu_indices", V(fn="triu_indices"), lambda r, c, offset=0: np.stack(np.triu_indices(r, offset, c)),
           lambda g: [Sample(3, 4), Sample(4, 3, 1), Sample(3, 3, -1), Sample(0, 3),
                      Sample(4, 6, -5), Sample(3, 4, 10), Sample(5, 2, -1), Sample(2, 0)],
           differentiable=False),
    OpInfo("tril_indices", V(fn="tril_indices"), lambda r, c, offset=0: np.stack(np.tril_indices(r, offset, c)),
           lambda g: [Sample(3, 4), Sample(4, 3, 1), Sample(3, 3, offset=-2), Sample(4, 6, -5),
                      Sample(3, 4, 10), Sample(5, 2, -7), Sample(0, 0)], differentiable=False),
]


# ---------------------------------------------------------------------------
# reductions and scans (var_mean ... quantile)
# ---------------------------------------------------------------------------


def _ref_var_mean(npf):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        ax = _axis(dim, x.ndim)
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        return npf(x, axis=ax, ddof=ddof, keepdims=keepdim), np.mean(x, axis=ax, keepdims=keepdim)

    return ref


def _ref_aminmax(x, dim=None, keepdim=False):
    ax = _axis(dim, x.ndim)
    return np.min(x, axis=ax, keepdims=keepdim), np.max(x, axis=ax, keepdims=keepdim)


def _scan_ref(fn):
    def ref(x, dim, **kw):
        return fn(x, axis=dim) if x.ndim else fn(x.reshape(1), axis=0).reshape(())

    return ref


def _ref_cum_extreme(want_max):
    def ref(x, dim):
        if x.ndim == 0:
            return x.copy(), np.zeros((), dtype=np.int64)
        xm = np.moveaxis(x, dim, -1)
        vals, idx = np.empty_like(xm), np.empty(xm.shape, dtype=np.int64)
        for pos in np.ndindex(*xm.shape[:-1]):
            best = 0
            for i, v in enumerate(xm[pos]):
                b = xm[pos][best]
                if np.isnan(v) or (not np.isnan(b) and (v >= b if want_max else v <= b)):
                    best = i
                vals[pos + (i,)], idx[pos + (i,)] = xm[pos][best], best
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)

    return ref


def _ref_select(pick):
    """(values, indices) of the stable-sorted position ``pick(row)`` of each row along dim."""
    def ref(x, *args, dim=None, keepdim=False):
        if args:  # kthvalue(x, k, dim, keepdim)
            k = args[0]
            dim = args[1] if len(args) > 1 else (-1 if dim is None else dim)
            keepdim = args[2] if len(args) > 2 else keepdim
        else:
            k = None
        x1 = x.reshape(1) if x.ndim == 0 else x
        xm = np.moveaxis(x1, dim, -1)
        order = np.argsort(xm, axis=-1, kind="stable")
        pos = np.array([pick(row, k) for row in xm.reshape(-1, xm.shape[-1])]).reshape(xm.shape[:-1] + (1,))
        idx = np.take_along_axis(order, pos, -1)
        vals = np.take_along_axis(xm, idx, -1)
        vals, idx = np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
        if x.ndim == 0:
            return vals.reshape(()), idx.reshape(())
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        return vals, idx

    return ref


def _median_pos(row, k):
    nans = int(np.isnan(row).sum())
    return len(row) - nans if nans else (len(row) - 1) // 2


def _nanmedian_pos(row, k):
    good = len(row) - int(np.isnan(row).sum())
    return (good - 1) // 2 if good else (len(row) - 1) // 2


def _ref_median(x, dim=None, keepdim=False):
    if dim is None:
        s = np.sort(x.reshape(-1))
        return s[-1] if np.isnan(s[-1]) else s[(s.size - 1) // 2]
    return _ref_select(_median_pos)(x, dim=dim, keepdim=keepdim)


def _ref_nanmedian(x, dim=None, keepdim=False):
    if dim is None:
        s = np.sort(x.reshape(-1))
        good = s.size - int(np.isnan(s).sum())
        return s[(good - 1) // 2] if good else s[0]
    return _ref_select(_nanmedian_pos)(x, dim=dim, keepdim=keepdim)


def _ref_mode(x, dim=-1, keepdim=False):
    x1 = x.reshape(1) if x.ndim == 0 else x
    xm = np.moveaxis(x1, dim, -1)
    vals, idx = np.empty(xm.shape[:-1]), np.empty(xm.shape[:-1], dtype=np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        row = list(xm[pos])
        counts = {v: row.count(v) for v in row}  # NaN: each one its own value
        best = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        vals[pos] = best
        idx[pos] = max(i for i, v in enumerate(row) if v == best or v is best)
    vals, idx = vals.astype(x.dtype), idx
    if x.ndim == 0:
        return vals.reshape(()), idx.reshape(())
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return vals, idx


def _ref_quantile(npf):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        return npf(x, q, axis=dim, keepdims=keepdim, method=interpolation)

    return ref


def _cummax_samples(g):
    d = g.distinct
    return [
        Sample(d(3, 4), 1),
        Sample(d(3, 4), 0),
        Sample(d(2, 3, 4), -1),
        Sample(d(5), 0),
        Sample(d(), 0),
        Sample(d(3, 4), 1, views={0: "T"}),
        # ties: the latest index; NaN wins
        Sample(np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, np.nan, 1.0, np.nan, 2.0]]), 1, gradcheck=False),
    ]


def _median_samples(g):
    d = g.distinct
    return [
        Sample(d(5)),
        Sample(d(3, 4)),
        Sample(d(3, 4), 1),
        Sample(d(3, 5), 0, True),
        Sample(d(2, 3, 4), dim=-1),
        Sample(d(), 0),
        Sample(d(3, 4), views={0: "T"}, dim=0),
        # ties (the gradient of the whole-tensor median is spread over them) and NaN rows
        Sample(np.array([1.0, 2.0, 2.0, 3.0]), gradcheck=False),
        Sample(np.array([[1.0, 4.0, 2.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 1.0, 0.0]]), 1, gradcheck=False),
        Sample(np.array([2.0, np.nan, 1.0]), gradcheck=False),
    ]


def _nanmedian_samples(g):
    d = g.distinct
    return [
        Sample(d(5)),
        Sample(d(3, 4), 1),
        Sample(d(2, 3, 4), dim=0, keepdim=True),
        Sample(np.array([np.nan, 1.0, np.nan, 3.0, 0.0])),
        Sample(np.array([[1.0, 4.0, 2.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 1.5, 0.0], [np.nan] * 5]), 1,
               gradcheck=False),
    ]


def _mode_samples(g):
    # repeated values by design: moving one of them changes the mode (no finite differences)
    return [
        Sample(np.array([[1.0, 2.0, 2.0, 1.0, 3.0], [5.0, 5.0, 1.0, 1.0, 1.0]]), gradcheck=False),
        Sample(np.array([[1.0, 2.0], [2.0, 2.0], [1.0, 0.5]]), 0, gradcheck=False),
        Sample(np.array([3.0, 1.0, 3.0, 1.0, 2.0]), keepdim=True, gradcheck=False),
        Sample(np.array([0.0, np.nan, np.nan, 1.0]), gradcheck=False),
        Sample(np.round(g.f(2, 3, 6)), 1, gradcheck=False),
        Sample(np.round(g.f(4, 3)), 1, views={0: "T"}, gradcheck=False),
        Sample(g.distinct(3, 4), 1),  # all distinct: the smallest of each row
        Sample(g.f(), 0),
    ]


def _kthvalue_samples(g):
    d = g.distinct
    return [
        Sample(d(5), 2),
        Sample(d(3, 4), 4, 1),
        Sample(d(3, 4), 1, 0, True),
        Sample(d(2, 3, 4), 2, dim=1),
        Sample(d(), 1),
        Sample(d(3, 4), 3, views={0: "T"}),
    ]


def _quantile_samples(g):
    d = g.distinct
    q = np.array([0.1, 0.45, 0.8])  # ranks off the integers: differentiable in q
    halves = np.array([0.125, 0.375, 0.625, 0.875])  # ranks 0.5, 1.5, ... of 5 values: ties to even
    return [
        Sample(d(5), 0.3),
        Sample(d(3, 4), 0.6, dim=1),
        Sample(d(3, 4), q, dim=0),
        Sample(d(3, 4), q, dim=1, keepdim=True),
        Sample(d(2, 3, 4), 0.25, dim=-1, keepdim=True),
        Sample(d(3, 4), q),
        Sample(d(3, 4), 0.5, keepdim=True),
        Sample(d(6), np.array([0.12, 0.33, 0.55, 0.71, 0.93]), interpolation="lower"),
        Sample(d(6), np.array([0.12, 0.33, 0.55, 0.71, 0.93]), interpolation="higher"),
        Sample(d(6), np.array([0.12, 0.33, 0.55, 0.71, 0.93]), interpolation="midpoint"),
        Sample(d(6), np.array([0.12, 0.33, 0.55, 0.71, 0.93]), interpolation="nearest"),
        Sample(d(5), halves, interpolation="nearest", gradcheck=False),
        Sample(d(), 0.5),
        Sample(d(3, 4), 0.4, dim=0, views={0: "T"}),
    ]


def _nanquantile_samples(g):
    x = g.distinct(3, 5)
    x[0, 1] = x[2, 0] = x[2, 3] = np.nan
    return _quantile_samples(g) + [
        Sample(x, 0.4, dim=1),
        Sample(x, np.array([0.05, 0.55, 0.95]), dim=1, interpolation="nearest"),
        Sample(np.full((2, 3), np.nan), 0.5, dim=1, gradcheck=False),
    ]


def _cumprod_samples(g):
    f = g.f
    z = f(3, 5)
    z[0, 1] = 0.0
    z[1, 0] = z[1, 3] = 0.0
    z[2, 4] = 0.0
    return [
        Sample(f(3, 4), 1),
        Sample(f(3, 4), 0),
        Sample(f(2, 3, 5), -1),
        Sample(f(), 0),
        Sample(f(9), 0),
        Sample(z, 1),  # zeros: the exact gradient
        Sample(z, 0),
        Sample(f(3, 4), dim=1, views={0: "T"}),
    ]


OP_DB += [
    OpInfo("var_mean", V(fn="var_mean"), _ref_var_mean(np.var), _var_samples),
    OpInfo("std_mean", V(fn="std_mean"), _ref_var_mean(np.std), _var_samples),
    OpInfo("aminmax", V(fn="aminmax", method="aminmax"), _ref_aminmax, lambda g: [
        Sample(g.distinct(3, 4)),
        Sample(g.distinct(3, 4), dim=1),
        Sample(g.distinct(2, 3, 4), dim=0, keepdim=True),
        Sample(g.distinct(3, 4), keepdim=True),
        Sample(g.distinct(), dim=0),
        Sample(g.distinct(3, 4), views={0: "T"}, dim=-1),
        # ties share the gradient
        Sample(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), dim=1, gradcheck=False),
    ]),
    OpInfo("nansum", V(fn="nansum", method="nansum"), _reduce(np.nansum), lambda g: reduction_samples()(g) + [
        Sample(np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 0.5]]), dim=1),
        Sample(np.array([1.0, np.nan, 2.0])),
    ]),
    OpInfo("nanmean", V(fn="nanmean", method="nanmean"), _reduce(np.nanmean), lambda g: reduction_samples()(g) + [
        Sample(np.array([[1.0, np.nan, 2.0], [np.nan, 3.0, 0.5]]), dim=1),
        Sample(np.array([[1.0, np.nan, 2.0], [np.nan, 3.0, 0.5]]), dim=0, keepdim=True),
    ]),
    OpInfo("cumprod", V(fn="cumprod", method="cumprod"), _scan_ref(np.cumprod), _cumprod_samples),
    # torch_tol32: PyTorch's float32 backward of logcumsumexp is ~1.5e-5 off the exact gradient
    OpInfo("logcumsumexp", V(fn="logcumsumexp", method="logcumsumexp"), _scan_ref(np.logaddexp.accumulate),
           torch_tol32=(1e-4, 1e-5), samples=lambda g: [
               Sample(g.f(3, 4), 1),
               Sample(g.f(3, 4), 0),
               Sample(g.f(2, 3, 5), -1),
               Sample(g.f(), 0),
               Sample(g.f(3, 4) * 300, 1, gradcheck=False),  # large values: no overflow
               Sample(np.array([-800.0, 0.0, -900.0, 1.0]), 0),  # tiny terms keep their share
               Sample(g.f(3, 4), 1, views={0: "slice"}),
           ]),
    OpInfo("cummax", V(fn="cummax", method="cummax"), _ref_cum_extreme(True), _cummax_samples),
    OpInfo("cummin", V(fn="cummin", method="cummin"), _ref_cum_extreme(False), _cummax_samples),
    OpInfo("median", V(fn="median", method="median"), _ref_median, _median_samples),
    OpInfo("nanmedian", V(fn="nanmedian", method="nanmedian"), _ref_nanmedian, _nanmedian_samples),
    OpInfo("mode", V(fn="mode", method="mode"), _ref_mode, _mode_samples),
    OpInfo("kthvalue", V(fn="kthvalue", method="kthvalue"),
           _ref_select(lambda row, k: np.argsort(np.argsort(row, kind="stable"), kind="stable")[
               np.argsort(row, kind="stable")[k - 1]]), _kthvalue_samples),
    OpInfo("quantile", V(fn="quantile", method="quantile"), _ref_quantile(np.quantile), _quantile_samples),
    OpInfo("nanquantile", V(fn="nanquantile", method="nanquantile"), _ref_quantile(np.nanquantile),
           _nanquantile_samples),
]


# ---------------------------------------------------------------------------
# sets, counts and bins (unique ... bucketize)
# ---------------------------------------------------------------------------


def _ref_unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002  (torch's names)
    if dim is None:
        vals, inv, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inv = inv.reshape(x.shape)
    else:  # slices along dim, sorted lexicographically
        vals, inv, counts = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
    out = (vals,) + ((inv.astype(np.int64),) if return_inverse else ()) + (
        (counts.astype(np.int64),) if return_counts else ())
    return out if len(out) > 1 else vals


def _ref_unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        flat, shape = x.reshape(-1), x.shape
    else:  # runs of equal slices along dim
        flat = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        shape = (x.shape[dim],)
    differ = (flat[1:] != flat[:-1]).reshape(len(flat) - 1 if len(flat) else 0, -1).any(1)
    starts = np.concatenate([[True], differ]) if flat.size else np.zeros(0, dtype=bool)
    run = np.cumsum(starts) - 1
    firsts = flat[starts] if dim is None else np.take(x, np.flatnonzero(starts), axis=dim)
    out = (firsts,) + ((run.reshape(shape).astype(np.int64),) if return_inverse else ()) + (
        (np.bincount(run, minlength=int(starts.sum())).astype(np.int64),) if return_counts else ())
    return out if len(out) > 1 else out[0]


def _ref_bincount(x, weights=None, minlength=0):
    w = None if weights is None else weights.astype(np.float64)
    r = np.bincount(x, weights=w, minlength=minlength)
    return r if weights is not None else r.astype(np.int64)


def _ref_histc(x, bins=100, min=0, max=0):  # noqa: A002
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x, bins=bins, range=(lo, hi))[0].astype(x.dtype)


def _ref_searchsorted(seq, values, sorter=None, right=False, side=None):
    side = side or ("right" if right else "left")
    values = np.asarray(values)
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(np.int64)
    out = np.empty(values.shape, dtype=np.int64)
    for pos in np.ndindex(*seq.shape[:-1]):
        out[pos] = np.searchsorted(seq[pos], values[pos], side=side)
    return out


def _searchsorted(lib, seq, values, sorter=None, **kw):
    return lib.searchsorted(seq, values, sorter=sorter, **kw)


def _sorted_rows(g, *shape):
    return np.sort(np.round(g.f(*shape) * 4) / 4, axis=-1)  # repeated values on purpose


OP_DB += [
    OpInfo("unique", V(fn="unique", method="unique"), _ref_unique, lambda g: [
        Sample(np.round(g.f(3, 4))),
        Sample(np.round(g.f(3, 4)), return_inverse=True),
        Sample(np.round(g.f(2, 3, 4)), return_inverse=True, return_counts=True),
        Sample(np.round(g.f(5)), sorted=False, return_counts=True),
        Sample(g.idx((4, 3), 3), return_inverse=True, return_counts=True),
        Sample(g.mask(6), return_counts=True),
        Sample(np.array([[3.0, 1.0, np.nan], [1.0, 2.0, np.nan]]), return_inverse=True, return_counts=True),
        Sample(g.f(), return_inverse=True),
        Sample(np.zeros((0,)), return_inverse=True, return_counts=True),
        Sample(np.round(g.f(3, 4)), views={0: "T"}, return_inverse=True),
        Sample(g.idx((6, 2), 2), dim=0, return_inverse=True, return_counts=True),  # slices along a dim
        Sample(g.idx((2, 5, 3), 2), dim=-2, return_counts=True),
        Sample(g.idx((4, 3), 2), views={0: "T"}, dim=1, return_inverse=True),
    ], differentiable=False),
    OpInfo("unique_consecutive", V(fn="unique_consecutive", method="unique_consecutive"),
           _ref_unique_consecutive, lambda g: [
               Sample(np.array([1, 1, 2, 2, 3, 1, 1])),
               Sample(np.array([1, 1, 2, 2, 3, 1, 1]), return_inverse=True, return_counts=True),
               Sample(np.round(g.f(3, 4)), return_inverse=True),
               Sample(np.array([np.nan, np.nan, 1.0, 1.0]), return_counts=True),
               Sample(np.round(g.f(4, 3)), views={0: "T"}, return_counts=True),
               Sample(np.array([[1, 1], [1, 1], [2, 1], [1, 1]]), dim=0, return_inverse=True, return_counts=True),
               Sample(g.idx((2, 6, 2), 2), dim=1, return_counts=True),
           ], differentiable=False),
    OpInfo("bincount", V(fn="bincount", method="bincount"), _ref_bincount, lambda g: [
        Sample(g.idx((10,), 5)),
        Sample(g.idx((10,), 5), minlength=8),
        Sample(g.idx((6,), 4), g.f(6)),
        Sample(np.zeros((0,), dtype=np.int64), minlength=3),
    ], differentiable=False),
    OpInfo("histc", V(fn="histc", method="histc"), _ref_histc, lambda g: [
        Sample(g.f(50)),
        Sample(g.f(5, 8), bins=7),
        Sample(g.f(40), bins=5, min=-1.0, max=1.0),  # elements outside are ignored
        Sample(np.array([1.0, 2.0, 1.0, 4.0, 2.5]), bins=4, min=0, max=3),  # max falls in the last bin
        Sample(np.array([1.0, 1.0]), bins=4),  # one value: the range [v - 1, v + 1]
        Sample(g.f(4, 6), views={0: "T"}, bins=6),
    ], differentiable=False),
    # a third input is the (keyword-only) sorter
    OpInfo("searchsorted", {"fn.searchsorted": _searchsorted}, _ref_searchsorted, lambda g: [
        Sample(_sorted_rows(g, 8), g.f(3, 4)),
        Sample(_sorted_rows(g, 8), np.round(g.f(10) * 4) / 4, right=True),  # values equal to elements
        Sample(_sorted_rows(g, 8), np.round(g.f(10) * 4) / 4, side="right"),
        Sample(_sorted_rows(g, 8), np.round(g.f(10) * 4) / 4, side="left"),
        Sample(_sorted_rows(g, 3, 5), g.f(3, 4)),  # one row per batch
        Sample(_sorted_rows(g, 2, 3, 7), g.f(2, 3, 2), right=True),
        Sample(np.array([5.0, 1.0, 3.0]), np.array([2.0, 4.0, 0.0, 6.0]), np.array([1, 2, 0])),
        Sample(np.array([[5.0, 1.0, 3.0], [0.0, 2.0, -1.0]]), g.f(2, 3), np.array([[1, 2, 0], [2, 0, 1]]),
               right=True),
        Sample(_sorted_rows(g, 6), 0.3),  # a number: a 0-d result
        Sample(np.arange(5, dtype=np.int64) * 2, g.f(4) * 4),  # int64 sequence, float values
        Sample(np.zeros((0,)), g.f(3)),
    ], differentiable=False),
    OpInfo("bucketize", V(fn="bucketize"), lambda x, b, right=False: _ref_searchsorted(b, x, right=right),
           lambda g: [
               Sample(g.f(3, 4), _sorted_rows(g, 6)),
               Sample(np.round(g.f(10) * 4) / 4, _sorted_rows(g, 6), right=True),
               Sample(0.5, _sorted_rows(g, 6)),
           ], differentiable=False),
]


# ---------------------------------------------------------------------------
# indexing (masked_select ... argwhere)
# ---------------------------------------------------------------------------


def _ref_masked_select(x, mask):
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def _ref_take_along_dim(x, idx, dim=None):
    if dim is None:
        return x.reshape(-1)[idx.reshape(-1)]
    shape = np.broadcast_shapes(tuple(1 if k == dim % x.ndim else s for k, s in enumerate(x.shape)),
                                tuple(1 if k == dim % x.ndim else s for k, s in enumerate(idx.shape)))
    xb = np.broadcast_to(x, tuple(x.shape[k] if k == dim % x.ndim else s for k, s in enumerate(shape)))
    ib = np.broadcast_to(idx, tuple(idx.shape[k] if k == dim % x.ndim else s for k, s in enumerate(shape)))
    return np.take_along_axis(xb, ib, dim)


def _ref_index_fill(x, dim, index, value):
    out = x.copy()
    if x.ndim == 0:
        return np.asarray(value, dtype=x.dtype) if index.size else out
    sl = [slice(None)] * x.ndim
    sl[dim] = index.reshape(-1)
    out[tuple(sl)] = value
    return out


def _ref_masked_scatter(x, mask, source):
    xb, mb = np.broadcast_arrays(x, mask)
    out = xb.copy()
    out[mb] = source.reshape(-1)[:int(mb.sum())]
    return out


def _ref_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    seen = np.zeros(x.shape, dtype=bool)
    acc = {}
    for pos in np.ndindex(*index.shape):
        t = list(pos)
        t[dim] = index[pos]
        acc.setdefault(tuple(t), []).append(src[pos])
    for t, vals in acc.items():
        vals = ([x[t]] if include_self else []) + vals
        out[t] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
        seen[t] = True
    return out


def _ref_index_put(x, indices, values, accumulate=False):
    out = x.copy()
    idx = tuple(indices)
    if accumulate:
        np.add.at(out, idx, np.broadcast_to(values, out[idx].shape))
    else:
        out[idx] = values
    return out


def _index_put(lib, x, *rest, accumulate=False, n=1):
    """``x.index_put(indices, values)`` with the ``n`` index tensors and the values as the
    inputs after ``x``."""
    return lib.index_put(x, tuple(rest[:n]), rest[n], accumulate)


def _index_put_method(lib, x, *rest, accumulate=False, n=1):
    return x.index_put(tuple(rest[:n]), rest[n], accumulate=accumulate)


def _ref_index_put_flat(x, *rest, accumulate=False, n=1):
    return _ref_index_put(x, rest[:n], rest[n], accumulate)


def _disjoint(g, a_shape, b_shape):
    """Two arrays of pairwise distinct values (no ties between or within them)."""
    na, nb = int(np.prod(a_shape)), int(np.prod(b_shape))
    v = g.distinct(na + nb)
    return v[:na].reshape(a_shape), v[na:].reshape(b_shape)


def _scatter_reduce_samples(g):
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            x, s = _disjoint(g, (3, 4), (2, 4))
            out.append(Sample(x, 0, g.idx((2, 4), 3), s, reduce, include_self=include_self))
            x, s = _disjoint(g, (2, 5), (2, 3))
            out.append(Sample(x, 1, np.array([[0, 0, 4], [2, 2, 2]]), s, reduce, include_self=include_self))
        x, s = _disjoint(g, (4,), (5,))
        out.append(Sample(x, 0, np.array([1, 3, 1, 1, 0]), s, reduce, views={0: "slice"}))
    # prod with zeros: one zero per position (exact gradient), and two (PyTorch refuses the
    # double backward there, so no gradcheck)
    x = g.f(4)
    x[2] = 0.0
    s = g.f(4)
    s[0] = 0.0
    out.append(Sample(x, 0, np.array([0, 0, 1, 2]), s, "prod"))
    out.append(Sample(x, 0, np.array([0, 0, 1, 2]), s, "prod", include_self=False))
    s2 = s.copy()
    s2[1] = 0.0
    out.append(Sample(g.f(4), 0, np.array([0, 0, 1, 2]), s2, "prod", gradcheck=False))
    # ties in amax / amin share the gradient
    out.append(Sample(np.array([1.0, 5.0, 2.0]), 0, np.array([0, 0, 1]), np.array([3.0, 3.0, 5.0]), "amax",
                      gradcheck=False))
    return out


OP_DB += [
    OpInfo("masked_select", V(fn="masked_select", method="masked_select"), _ref_masked_select, lambda g: [
        Sample(g.f(3, 4), g.mask(3, 4)),
        Sample(g.f(3, 4), g.mask(4)),  # mask broadcasts
        Sample(g.f(4), g.mask(3, 1)),  # input broadcasts
        Sample(g.f(), np.array(True)),
        Sample(g.f(3, 4), np.zeros((3, 4), dtype=bool)),
        Sample(g.f(3, 4), g.mask(3, 4), views={0: "T"}),
    ]),
    OpInfo("take", V(fn="take", method="take"), lambda x, idx: x.reshape(-1)[idx], lambda g: [
        Sample(g.f(3, 4), g.idx((5,), 12)),
        Sample(g.f(3, 4), np.array([[0, 11], [-1, 5]])),  # negative, 2-D index
        Sample(g.f(2, 3), np.array([1, 1, 4])),  # repeated: gradients add up
        Sample(g.f(3, 4), np.array(7)),
        Sample(g.f(3, 4), g.idx((4,), 12), views={0: "T"}),
    ]),
    OpInfo("take_along_dim", V(fn="take_along_dim", method="take_along_dim"), _ref_take_along_dim, lambda g: [
        Sample(g.f(3, 4), g.idx((3, 2), 4), 1),
        Sample(g.f(3, 4), g.idx((5,), 12)),  # no dim: the flattened tensors
        Sample(g.f(3, 4), g.idx((1, 4), 3), dim=0),  # indices broadcast
        Sample(g.f(3, 1), g.idx((3, 5), 1), dim=1),
        Sample(g.f(1, 4), g.idx((3, 2), 4), dim=-1),  # input broadcasts
        Sample(g.f(2, 3, 4), g.idx((2, 3, 2), 4), -1),
        Sample(g.f(3, 4), g.idx((2, 4), 3), 0, views={0: "T"}),
    ]),
    OpInfo("index_fill", V(fn="index_fill", method="index_fill"), _ref_index_fill, lambda g: [
        Sample(g.f(3, 4), 1, np.array([0, 2]), -1.5),
        Sample(g.f(3, 4), 0, np.array([2, -3]), 2),
        Sample(g.f(2, 3, 4), -1, np.array([1]), 0.5),
        Sample(g.f(3, 4), 1, np.array(3), g.f()),  # a 0-d tensor value gets a gradient too
        Sample(g.f(), 0, np.array([0]), 3.0),
        Sample(g.f(3, 4), 0, np.array([1, 1]), g.f(), views={0: "T"}),
    ]),
    OpInfo("masked_scatter", V(fn="masked_scatter", method="masked_scatter"), _ref_masked_scatter, lambda g: [
        Sample(g.f(3, 4), g.mask(3, 4), g.f(12)),
        Sample(g.f(3, 4), g.mask(4), g.f(3, 5)),  # mask broadcasts; more source than needed
        Sample(g.f(4), g.mask(2, 4), g.f(8)),  # input broadcasts
        Sample(g.f(3, 4), np.zeros((3, 4), dtype=bool), g.f(2)),
        Sample(g.f(3, 4), g.mask(3, 4), g.f(12), views={0: "T", 2: "slice"}),
    ]),
    OpInfo("scatter_reduce", V(fn="scatter_reduce", method="scatter_reduce"), _ref_scatter_reduce,
           _scatter_reduce_samples),
    OpInfo("index_put", {"fn.index_put": _index_put, "method.index_put": _index_put_method},
           _ref_index_put_flat, lambda g: [
               Sample(g.f(3, 4), np.array([0, 2]), g.f(2, 4)),
               Sample(g.f(3, 4), np.array([0, 2, 0, 1]), g.f(4), accumulate=True),  # repeats add up
               Sample(g.f(3, 4), np.array([0, 2, 2]), np.array([1, 3, 0]), g.f(3), n=2),
               Sample(g.f(3, 4), np.array([0, 2, 0]), np.array([1, 3, 1]), g.f(), n=2, accumulate=True),
               Sample(g.f(2, 3, 4), np.array([[1], [0]]), np.array([0, 2]), g.f(4), n=2),  # broadcast
               Sample(g.f(3, 4), np.array([1, 0]), g.f(4), views={0: "T"}, accumulate=True),
           ]),
    OpInfo("scatter(reduce)", {
        "method.scatter": lambda lib, x, idx, src, reduce: x.scatter(0, idx, src, reduce=reduce),
        "fn.scatter": lambda lib, x, idx, src, reduce: lib.scatter(x, 0, idx, src, reduce=reduce)},
        lambda x, idx, src, reduce: _ref_scatter_reduce(x, 0, idx, np.broadcast_to(src, idx.shape),
                                                        "sum" if reduce == "add" else "prod"),
        lambda g: [
            Sample(g.f(3, 4), g.idx((2, 4), 3), g.f(2, 4), "add"),
            Sample(g.f(3, 4), g.idx((2, 4), 3), g.f(2, 4), "multiply"),
            Sample(g.f(5), np.array([0, 0, 3]), 2.5, "add"),
            Sample(g.f(5), np.array([0, 0, 3]), 2, "multiply"),
        ], differentiable=False),
    OpInfo("nonzero", V(fn=("nonzero", "argwhere"), method=("nonzero", "argwhere")),
           lambda x: np.argwhere(x) if x.ndim else np.zeros((int(x != 0), 0), dtype=np.int64), lambda g: [
               Sample(np.round(g.f(3, 4))),
               Sample(g.mask(2, 3, 4)),
               Sample(g.idx((6,), 3)),
               Sample(np.array(2.0)),
               Sample(np.array([np.nan, 0.0, -0.0, 1.0])),
               Sample(np.zeros((0, 3))),
               Sample(np.round(g.f(3, 4)), views={0: "T"}),
           ], differentiable=False),
    OpInfo("nonzero(as_tuple)", {"fn.nonzero": lambda lib, x: lib.nonzero(x, as_tuple=True),
                                 "method.nonzero": lambda lib, x: x.nonzero(as_tuple=True)},
           lambda x: np.nonzero(x) if x.ndim else (np.zeros(int(x != 0), dtype=np.int64),), lambda g: [
               Sample(np.round(g.f(3, 4))),
               Sample(g.mask(2, 3, 4)),
               Sample(np.array(2.0)),
               Sample(np.array(0.0)),
               Sample(np.zeros((0, 3))),
           ], differentiable=False),
]


# ---------------------------------------------------------------------------
# distances and vision functions (nn/functional/distance.py, vision.py)
# ---------------------------------------------------------------------------


def _ref_cosine_similarity(x1, x2, dim=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)
    n1 = np.maximum(np.sqrt((x1 * x1).sum(axis=dim, keepdims=True)), eps)
    n2 = np.maximum(np.sqrt((x2 * x2).sum(axis=dim, keepdims=True)), eps)
    return ((x1 / n1) * (x2 / n2)).sum(axis=dim)


def _ref_vector_norm(d, p, axis, keepdims=False):
    a = np.abs(d)
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdims).astype(d.dtype)
    return (a ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)


def _ref_pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _ref_vector_norm(np.asarray(x1 - x2 + eps), p, -1, keepdim)


def _ref_triplet_margin_loss(a, pos, neg, margin=1.0, p=2, eps=1e-6, swap=False, reduction="mean"):
    d_pos = _ref_pairwise_distance(a, pos, p, eps)
    d_neg = _ref_pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = np.minimum(d_neg, _ref_pairwise_distance(pos, neg, p, eps))
    loss = np.maximum(margin + d_pos - d_neg, 0.0)
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def _ref_pixel_shuffle(x, r):
    *b, c, h, w = x.shape
    y = x.reshape(*b, c // (r * r), r, r, h, w)
    n = len(b)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*b, c // (r * r), h * r, w * r)


def _ref_pixel_unshuffle(x, r):
    *b, c, h, w = x.shape
    y = x.reshape(*b, c, h // r, r, w // r, r)
    n = len(b)
    y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*b, c * r * r, h // r, w // r)


def _cosine_similarity_samples(g):
    return [
        Sample(g.f(3, 4), g.f(3, 4)),
        Sample(g.f(3, 4), g.f(3, 4), dim=0),
        Sample(g.f(2, 3, 4), g.f(3, 4), dim=-1),  # broadcast
        Sample(g.f(2, 3, 1), g.f(3, 4), dim=1),  # broadcast both ways
        Sample(g.f(5), g.f(5), dim=0),
        Sample(g.f(3, 4), g.f(3, 4), views={0: "T"}, dim=1),
        # a vector with a norm below eps: divided by eps. Not gradcheck-ed: as in ATen, the
        # gradient flows through the unclamped norm (compared with PyTorch's)
        Sample(g.f(2, 3, lo=0.001, hi=0.002), g.f(2, 3), eps=0.1, gradcheck=False),
    ]


def _pairwise_distance_samples(g):
    return [
        Sample(g.f(3, 4), g.f(3, 4)),
        Sample(g.f(3, 4), g.f(4), keepdim=True),  # broadcast
        Sample(g.f(4), g.f(2, 4)),
        Sample(g.f(5), g.f(5), p=1.0),
        Sample(g.f(3, 4), g.f(3, 4), p=3.0, eps=0.0),
        Sample(g.f(2, 3, 4), g.f(2, 3, 4), p=math.inf),
        Sample(g.f(3, 4), g.f(3, 4), views={0: "T"}, p=0.5),
    ]


def _triplet_margin_loss_samples(g):
    # the negative far from the anchor in some rows, near in others: both sides of the hinge,
    # away from its kink
    a = g.f(4, 5)
    pos = a + g.f(4, 5, lo=-0.3, hi=0.3)
    neg = a + np.array([[4.0], [0.0], [3.0], [0.0]]) + g.f(4, 5, lo=-0.3, hi=0.3)
    return [
        Sample(a, pos, neg),
        Sample(a, pos, neg, margin=0.5, reduction="sum"),
        Sample(a, pos, neg, p=1, reduction="none"),
        Sample(a, pos, neg, swap=True, eps=0.0),
        Sample(a[0], pos[0], neg[0], margin=2.0),  # 1-d inputs
    ]


def _pixel_shuffle_samples(g):
    return [
        Sample(g.f(1, 8, 2, 3), 2),
        Sample(g.f(2, 9, 2, 2), 3),
        Sample(g.f(4, 2, 3), 2),  # unbatched
        Sample(g.f(2, 1, 4, 2, 3), 2),  # two batch dims
        Sample(g.f(2, 3, 2, 2), 1),
        Sample(g.f(1, 8, 2, 3), 2, views={0: "T"}),
    ]


def _pixel_unshuffle_samples(g):
    return [
        Sample(g.f(1, 2, 4, 6), 2),
        Sample(g.f(2, 1, 3, 6), 3),
        Sample(g.f(2, 4, 2), 2),  # unbatched
        Sample(g.f(2, 1, 1, 2, 4), 2),
        Sample(g.f(1, 2, 4, 4), 2, views={0: "T"}),
    ]


def _interp_matrix(mode, n_in, n_out, scale, align_corners):
    """(n_out, n_in) weights of one spatial dim, from PyTorch's documented coordinate rules:
    nearest: floor(i * s); nearest-exact: floor((i + .5) * s); linear / cubic: source
    ``s * i`` (align_corners) or ``s * (i + .5) - .5``; s the input/output ratio (1/scale_factor
    when one is given; (n_in - 1)/(n_out - 1) with align_corners)."""
    m = np.zeros((n_out, n_in))
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale else n_in / n_out
    for i in range(n_out):
        if mode in ("nearest", "nearest-exact"):
            m[i, min(int(math.floor((i + (0.5 if mode == "nearest-exact" else 0.0)) * s)), n_in - 1)] = 1
            continue
        if n_in == n_out and mode != "bicubic":
            m[i, i] = 1
            continue
        src = s * i if align_corners else s * (i + 0.5) - 0.5
        if mode != "bicubic":
            src = max(src, 0.0)
        i0 = min(int(math.floor(src)), n_in - 1)
        t = min(max(src - i0, 0.0), 1.0)
        if mode != "bicubic":
            m[i, i0] += 1 - t
            m[i, min(i0 + 1, n_in - 1)] += t
            continue
        a = -0.75
        for k in range(4):
            x = abs(t - (k - 1))  # distance from tap i0 - 1 + k
            w = ((a + 2) * x - (a + 3)) * x * x + 1 if x <= 1 else ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
            m[i, min(max(i0 - 1 + k, 0), n_in - 1)] += w
    return m


def _aa_matrix(mode, n_in, n_out, scale, align_corners):
    """Antialiased resampling as a matrix, output by output (PIL's rule, which ATen follows):
    the inputs within the support of the output's centre, the filter stretched when shrinking,
    weights normalised."""
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale else n_in / n_out
    half = 1.0 if mode == "bilinear" else 2.0
    support, inv = (half * s, 1.0 / s) if s >= 1 else (half, 1.0)

    def filt(v):
        v = abs(v)
        if mode == "bilinear":
            return max(0.0, 1 - v)
        a = -0.5
        return ((a + 2) * v - (a + 3)) * v * v + 1 if v < 1 else ((((v - 5) * v + 8) * v - 4) * a if v < 2 else 0.0)

    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = s * (i + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        for j in range(lo, hi):
            m[i, j] = filt((j - centre + 0.5) * inv)
        if m[i].sum() != 0:
            m[i] /= m[i].sum()
    return m


def _ref_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                     recompute_scale_factor=None, antialias=False):
    dim = x.ndim - 2
    ins = x.shape[2:]
    if mode == "area":
        return _ref_adaptive_avg_pool2d(x, size)
    scales = _ntuple(scale_factor, dim) if scale_factor is not None else (None,) * dim
    if size is not None:
        outs = _ntuple(size, dim)
    else:
        outs = tuple(int(math.floor(n * s)) for n, s in zip(ins, scales))
        if recompute_scale_factor:
            scales = (None,) * dim
    for d in range(dim):
        if antialias:
            m = _aa_matrix(mode, ins[d], outs[d], scales[d], align_corners)
        else:
            m = _interp_matrix(mode, ins[d], outs[d], scales[d], align_corners)
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, d + 2, 0), axes=1), 0, d + 2)
    return x


def _interpolate_samples(g):
    f = g.f
    return [
        Sample(f(1, 2, 3, 4), size=(6, 8)),  # nearest, x2: the shift path
        Sample(f(1, 2, 5, 7), size=(7, 3)),  # nearest, up and down
        Sample(f(2, 1, 4, 4), scale_factor=0.5),
        Sample(f(1, 2, 4, 5), scale_factor=1.5, mode="nearest-exact"),
        Sample(f(2, 3, 5), scale_factor=2, mode="nearest"),  # 1-d
        Sample(f(1, 1, 2, 3, 4), size=(3, 3, 5)),  # 3-d nearest
        Sample(f(2, 3, 5), scale_factor=2, mode="linear"),
        Sample(f(2, 3, 5), size=3, mode="linear", align_corners=True),
        Sample(f(1, 2, 4, 5), size=(7, 3), mode="bilinear"),
        # antialias: shrinking averages over a stretched filter (output sizes above 1 wide:
        # PyTorch 2.13's forward disagrees with its own backward for a 1-wide output)
        Sample(f(1, 2, 9, 7), size=(4, 3), mode="bilinear", antialias=True),
        Sample(f(2, 1, 8, 8), scale_factor=0.3, mode="bilinear", antialias=True, align_corners=True),
        Sample(f(1, 2, 9, 7), size=(4, 5), mode="bicubic", antialias=True),
        Sample(f(1, 1, 5, 6), size=(9, 4), mode="bicubic", antialias=True, align_corners=True),
        Sample(f(1, 2, 4, 5), scale_factor=(2.0, 1.5), mode="bilinear", align_corners=True),
        Sample(f(1, 2, 4, 5), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        Sample(f(1, 2, 4, 5), size=(4, 9), mode="bilinear"),  # one dim unchanged
        Sample(f(1, 1, 4, 5), scale_factor=2, mode="bicubic"),
        Sample(f(1, 2, 5, 4), size=(3, 7), mode="bicubic", align_corners=True),
        Sample(f(1, 1, 2, 3, 4), scale_factor=2, mode="trilinear"),
        Sample(f(1, 1, 3, 2, 2), size=(2, 3, 3), mode="trilinear", align_corners=True),
        Sample(f(1, 2, 6, 8), size=(3, 4), mode="area"),
        Sample(f(4, 2, 3, 5), size=(5, 6), mode="bilinear", views={0: "T"}),
    ]


def _ref_affine_grid(theta, size, align_corners=False):
    spatial = size[2:]

    def lin(n):
        if n <= 1:
            return np.zeros(1)
        r = np.linspace(-1.0, 1.0, n)
        return r if align_corners else r * (n - 1) / n

    axes = np.meshgrid(*[lin(n) for n in spatial], indexing="ij")  # (d,) h, w order
    base = np.stack([*axes[::-1], np.ones(tuple(spatial))], axis=-1)  # x, y[, z], 1
    return np.einsum("...k,nik->n...i", base, theta)


def _affine_grid_samples(g):
    return [
        Sample(g.f(2, 2, 3), (2, 3, 4, 5), align_corners=False),
        Sample(g.f(2, 2, 3), (2, 1, 4, 5), align_corners=True),
        Sample(g.f(1, 2, 3), (1, 1, 1, 3), align_corners=False),  # a unit-size dim
        Sample(g.f(2, 3, 4), (2, 1, 2, 3, 4), align_corners=False),  # 3-d
        Sample(g.f(1, 3, 4), (1, 2, 3, 2, 2), align_corners=True),
        Sample(g.f(2, 2, 3), (2, 1, 3, 4), views={0: "T"}, align_corners=False),
    ]


def _ref_unnormalize(coord, size, align_corners):
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _ref_pad(coord, size, padding_mode, align_corners):
    if padding_mode == "reflection":
        lo, hi = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if lo == hi:
            coord = 0.0
        else:
            low, span = lo / 2, (hi - lo) / 2
            d = abs(coord - low)
            extra, flips = math.fmod(d, span), math.floor(d / span)
            coord = extra + low if flips % 2 == 0 else span - extra + low
    if padding_mode in ("border", "reflection"):
        coord = min(max(coord, 0.0), size - 1.0)
    return coord


def _ref_grid_source(coord, size, padding_mode, align_corners):
    return _ref_pad(_ref_unnormalize(coord, size, align_corners), size, padding_mode, align_corners)


def _ref_cubic(t):
    a = -0.75
    def far(v): return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    def near(v): return ((a + 2) * v - (a + 3)) * v * v + 1
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _ref_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Point by point: bilinear / trilinear, nearest, bicubic (4x4 taps, each padded)."""
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    nd = len(spatial)
    out_spatial = grid.shape[1:-1]
    out = np.zeros((n, c) + out_spatial)

    def at(b, idx):
        inside = all(0 <= i < s for i, s in zip(idx, spatial))
        return x[(b, slice(None)) + tuple(idx)] if inside else np.zeros(c)

    for b, *pos in np.ndindex(n, *out_spatial):
        g = grid[(b, *pos)]  # x, y[, z]
        if mode == "bicubic":
            iy, ix = (_ref_unnormalize(g[1], spatial[0], align_corners),
                      _ref_unnormalize(g[0], spatial[1], align_corners))
            y0, x0 = math.floor(iy), math.floor(ix)
            wy, wx = _ref_cubic(iy - y0), _ref_cubic(ix - x0)
            total = np.zeros(c)
            for i in range(4):
                yy = int(_ref_pad(y0 + i - 1, spatial[0], padding_mode, align_corners))
                row = sum(wx[j] * at(b, (yy, int(_ref_pad(x0 + j - 1, spatial[1], padding_mode,
                                                             align_corners))))
                          for j in range(4))
                total = total + wy[i] * row
            out[(b, slice(None), *pos)] = total
            continue
        src = [_ref_grid_source(g[nd - 1 - k], spatial[k], padding_mode, align_corners) for k in range(nd)]
        if mode == "nearest":
            out[(b, slice(None), *pos)] = at(b, [int(np.rint(v)) for v in src])
            continue
        low = [math.floor(v) for v in src]
        total = np.zeros(c)
        for corner in np.ndindex(*(2,) * nd):
            weight = np.prod([v - lo if d else 1 - (v - lo) for v, lo, d in zip(src, low, corner)])
            total = total + weight * at(b, [lo + d for lo, d in zip(low, corner)])
        out[(b, slice(None), *pos)] = total
    return out


def _grid_sample_samples(g):
    def grid(*shape):
        return g.f(*shape, lo=-1.4, hi=1.4)

    out = []
    for mode in ("bilinear", "nearest"):
        for padding_mode in ("zeros", "border", "reflection"):
            for align_corners in (False, True):
                out.append(Sample(g.f(2, 3, 4, 5), grid(2, 3, 4, 2), mode=mode, padding_mode=padding_mode,
                                  align_corners=align_corners))
    out += [
        Sample(g.f(1, 2, 1, 3), grid(1, 2, 2, 2), padding_mode="reflection", align_corners=True),  # H = 1
        Sample(g.f(2, 3, 4, 5), grid(2, 3, 4, 2), views={0: "T"}, align_corners=False),
    ]
    for padding_mode in ("zeros", "border", "reflection"):
        for align_corners in (False, True):
            out.append(Sample(g.f(2, 2, 3, 4), grid(2, 2, 3, 2), mode="bicubic", padding_mode=padding_mode,
                              align_corners=align_corners))
    for mode in ("bilinear", "nearest"):  # volumetric: (N, C, D, H, W) at (N, Do, Ho, Wo, 3)
        for padding_mode in ("zeros", "border", "reflection"):
            out.append(Sample(g.f(1, 2, 3, 2, 4), grid(1, 2, 2, 3, 3), mode=mode, padding_mode=padding_mode,
                              align_corners=padding_mode == "border"))
    return out


OP_DB += [
    OpInfo("nn.functional.cosine_similarity", V(fn="nn.functional.cosine_similarity"),
           _ref_cosine_similarity, _cosine_similarity_samples),
    OpInfo("nn.functional.pairwise_distance", V(fn="nn.functional.pairwise_distance"),
           _ref_pairwise_distance, _pairwise_distance_samples),
    OpInfo("nn.functional.triplet_margin_loss", V(fn="nn.functional.triplet_margin_loss"),
           _ref_triplet_margin_loss, _triplet_margin_loss_samples),
    OpInfo("nn.functional.pixel_shuffle", V(fn="nn.functional.pixel_shuffle"), _ref_pixel_shuffle,
           _pixel_shuffle_samples),
    OpInfo("nn.functional.pixel_unshuffle", V(fn="nn.functional.pixel_unshuffle"), _ref_pixel_unshuffle,
           _pixel_unshuffle_samples),
    OpInfo("nn.functional.interpolate", V(fn="nn.functional.interpolate"), _ref_interpolate,
           _interpolate_samples),
    OpInfo("nn.functional.affine_grid", V(fn="nn.functional.affine_grid"), _ref_affine_grid,
           _affine_grid_samples),
    # float32: the grid's gradient sums 16 bicubic taps whose float32 rounding order differs
    OpInfo("nn.functional.grid_sample", V(fn="nn.functional.grid_sample"), _ref_grid_sample,
           _grid_sample_samples, torch_tol32=(1e-4, 1e-5)),
]


# ---- nn.functional: LP pooling, max unpooling, adaptive max 3-d, LRN, pdist, bilinear,
# channel shuffle (compositions of differentiable ops)


def _ref_lp_pool(nd):
    def ref(x, norm_type, kernel_size, stride=None, ceil_mode=False):
        # PyTorch's definition: the window average of x ** p times the window size, ** (1 / p)
        k = _ntuple(kernel_size, nd)
        if nd == 1:
            step = k[0] if stride is None else _ntuple(stride, 1)[0]
            avg = _ref_avg_pool2d(x[..., None, :] ** norm_type, (1, k[0]), (1, step), 0, ceil_mode)[..., 0, :]
        elif nd == 2:
            avg = _ref_avg_pool2d(x ** norm_type, k, stride, 0, ceil_mode)
        else:
            avg = _ref_avg_pool3d(x ** norm_type, k, stride, 0, ceil_mode)
        return (avg * int(np.prod(k))) ** (1.0 / norm_type)

    return ref


def _ref_adaptive_max_pool3d(x, output_size, return_indices=False):
    sp = x.shape[-3:]
    outs = [sp[i] if o is None else o for i, o in enumerate(_ntuple(output_size, 3))]
    vals = np.empty(x.shape[:-3] + tuple(outs))
    idx = np.empty(x.shape[:-3] + tuple(outs), dtype=np.int64)
    flat = x.reshape(x.shape[:-3] + (-1,))
    for o in np.ndindex(*outs):
        axes = [np.arange(o[i] * sp[i] // outs[i], -(-(o[i] + 1) * sp[i] // outs[i])) for i in range(3)]
        cand = np.ravel_multi_index(np.meshgrid(*axes, indexing="ij"), sp).ravel()
        best = np.argmax(flat[..., cand], axis=-1)
        idx[(Ellipsis,) + o] = cand[best]
        vals[(Ellipsis,) + o] = np.take_along_axis(flat[..., cand], best[..., None], -1)[..., 0]
    return (vals, idx) if return_indices else vals


def _ref_max_unpool(nd):
    def ref(x, indices, kernel_size, stride=None, padding=0, output_size=None):
        k = _ntuple(kernel_size, nd)
        s = _ntuple(stride if stride is not None else kernel_size, nd)
        p = _ntuple(padding, nd)
        if output_size is None:
            output_size = [(x.shape[-nd + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)]
        output_size = list(output_size)[-nd:]
        lead = x.shape[:-nd]
        out = np.zeros(lead + (int(np.prod(output_size)),))
        np.put_along_axis(out, indices.reshape(lead + (-1,)), x.reshape(lead + (-1,)), -1)
        return out.reshape(lead + tuple(output_size))

    return ref


def _ref_local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, i:i + x.shape[1]] for i in range(size))
    return x / (k + alpha / size * window) ** beta


def _ref_pdist(x, p=2):
    i, j = np.triu_indices(x.shape[0], 1)
    return _ref_vector_norm(np.asarray(x[i] - x[j]), p, -1, False)


def _ref_bilinear(x1, x2, w, b=None):
    out = np.einsum("...i,oij,...j->...o", x1, w, x2)
    return out if b is None else out + b


def _ref_channel_shuffle(x, groups):
    n, c = x.shape[:2]
    return x.reshape((n, groups, c // groups) + x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def _unpool_indices(g, shape, nd, plane):
    """Distinct flat indices into planes of ``plane`` elements for each leading position."""
    lead, count = shape[:-nd], int(np.prod(shape[-nd:]))
    rows = [g.rng.choice(plane, size=count, replace=False) for _ in range(int(np.prod(lead)))]
    return np.asarray(rows, dtype=np.int64).reshape(shape)


OP_DB += [
    OpInfo("nn.functional.lp_pool1d", V(fn="nn.functional.lp_pool1d"), _ref_lp_pool(1), lambda g: [
        Sample(g.pos(2, 3, 7), 2, 3),
        Sample(g.pos(2, 3, 7), 1.5, 3, 2, ceil_mode=True),
        Sample(g.pos(3, 8), 3, 2),  # unbatched (C, L)
    ]),
    OpInfo("nn.functional.lp_pool2d", V(fn="nn.functional.lp_pool2d"), _ref_lp_pool(2), lambda g: [
        Sample(g.pos(2, 3, 5, 6), 2, (2, 3)),
        Sample(g.pos(1, 2, 5, 5), 3, 2, stride=(1, 2), ceil_mode=True),
        Sample(g.pos(2, 4, 4), 1.5, 2, views={0: "T"}),
    ]),
    OpInfo("nn.functional.lp_pool3d", V(fn="nn.functional.lp_pool3d"), _ref_lp_pool(3), lambda g: [
        Sample(g.pos(1, 2, 4, 4, 4), 2, 2),
        Sample(g.pos(1, 2, 5, 4, 5), 1.5, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
    ]),
    OpInfo("nn.functional.adaptive_max_pool3d", V(fn="nn.functional.adaptive_max_pool3d"),
           _ref_adaptive_max_pool3d, lambda g: [
               Sample(g.distinct(1, 2, 4, 5, 6), (2, 3, 4)),
               Sample(g.distinct(2, 5, 3, 4), (3, None, 3), return_indices=True),
               Sample(g.distinct(1, 2, 3, 3, 3), 1),
           ]),
    OpInfo("nn.functional.max_unpool1d", V(fn="nn.functional.max_unpool1d"), _ref_max_unpool(1),
           lambda g: [
               Sample(g.f(2, 3, 4), _unpool_indices(g, (2, 3, 4), 1, 8), 2),
               Sample(g.f(3, 4), _unpool_indices(g, (3, 4), 1, 9), 2, output_size=[9]),
           ]),
    OpInfo("nn.functional.max_unpool2d", V(fn="nn.functional.max_unpool2d"), _ref_max_unpool(2),
           lambda g: [
               Sample(g.f(2, 3, 2, 3), _unpool_indices(g, (2, 3, 2, 3), 2, 24), 2),
               Sample(g.f(1, 2, 3, 3), _unpool_indices(g, (1, 2, 3, 3), 2, 25), 3, stride=2, padding=1),
               Sample(g.f(2, 2, 2), _unpool_indices(g, (2, 2, 2), 2, 25), 2, output_size=(5, 5)),
           ]),
    OpInfo("nn.functional.max_unpool3d", V(fn="nn.functional.max_unpool3d"), _ref_max_unpool(3),
           lambda g: [
               Sample(g.f(1, 2, 2, 2, 2), _unpool_indices(g, (1, 2, 2, 2, 2), 3, 64), 2),
           ]),
    OpInfo("nn.functional.local_response_norm", V(fn="nn.functional.local_response_norm"),
           _ref_local_response_norm, lambda g: [
               Sample(g.f(2, 5, 4), 3),
               Sample(g.f(2, 6, 3, 4), 2, alpha=0.1, beta=0.5, k=2.0),
               Sample(g.f(1, 6, 2, 3, 2), 4, alpha=0.2),
           ]),
    OpInfo("nn.functional.pdist", V(fn="nn.functional.pdist"), _ref_pdist, lambda g: [
        Sample(g.f(5, 3)),
        Sample(g.f(4, 3), p=1),
        Sample(g.f(5, 2), p=3.5),
        Sample(g.f(4, 3), views={0: "T"}),
    ]),
    OpInfo("nn.functional.bilinear", V(fn="nn.functional.bilinear"), _ref_bilinear, lambda g: [
        Sample(g.f(4, 3), g.f(4, 5), g.f(2, 3, 5), g.f(2)),
        Sample(g.f(2, 3, 3), g.f(2, 3, 4), g.f(3, 3, 4)),
        Sample(g.f(3), g.f(4), g.f(2, 3, 4), g.f(2)),  # unbatched
    ]),
    OpInfo("nn.functional.channel_shuffle", V(fn="nn.functional.channel_shuffle"), _ref_channel_shuffle,
           lambda g: [
               Sample(g.f(2, 6, 3), 3),
               Sample(g.f(1, 4, 2, 3), 2),
               Sample(g.f(6, 4, 2), 2, views={0: "T"}),
           ]),
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
    ("conv3d_channels", lambda lib: _F(lib).conv3d(_ones(lib, 1, 3, 4, 4, 4), _ones(lib, 2, 4, 3, 3, 3)),
     RuntimeError, "Given groups=1, weight of size [2, 4, 3, 3, 3], expected input[1, 3, 4, 4, 4] to "
     "have 4 channels, but got 3 channels instead"),
    ("conv3d_kernel_too_big",
     lambda lib: _F(lib).conv3d(_ones(lib, 1, 3, 2, 4, 4), _ones(lib, 2, 3, 3, 3, 3)), RuntimeError,
     "Calculated padded input size per channel: (2 x 4 x 4). Kernel size: (3 x 3 x 3). Kernel size "
     "can't be greater than actual input size"),
    ("conv_transpose3d_output_padding", lambda lib: _F(lib).conv_transpose3d(
        _ones(lib, 1, 2, 3, 3, 3), _ones(lib, 2, 2, 3, 3, 3), stride=2, output_padding=2),
     RuntimeError, "output padding must be smaller than either stride or dilation, but got "
     "output_padding_depth: 2 output_padding_height: 2 output_padding_width: 2 stride_depth: 2"),
    ("max_pool3d_padding", lambda lib: _F(lib).max_pool3d(_ones(lib, 1, 1, 5, 5, 5), 2, padding=2),
     RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=2 and dilation=1"),
    ("avg_pool3d_kernel_too_big", lambda lib: _F(lib).avg_pool3d(_ones(lib, 1, 1, 2, 5, 5), 3),
     RuntimeError, "input image (T: 2 H: 5 W: 5) smaller than kernel size (kT: 3 kH: 3 kW: 3)"),
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

# dims moved, diagonals, products and contractions
ERROR_CASES += [
    ("movedim_lengths", lambda lib: _ones(lib, 2, 3).movedim((0, 1), (0,)), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number "
     "of dims as destination ([0] dims)"),
    ("movedim_repeated", lambda lib: lib.movedim(_ones(lib, 2, 3), (0, 0), (0, 1)), RuntimeError,
     "movedim: repeated dim in `source` ([0, 0])"),
    ("movedim_range", lambda lib: lib.movedim(_ones(lib, 2, 3), 0, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("diagonal_same_dims", lambda lib: _ones(lib, 2, 3).diagonal(0, -1, 1), RuntimeError,
     "diagonal dimensions cannot be identical -1, 1"),
    ("diag_3d", lambda lib: lib.diag(_ones(lib, 2, 2, 2)), RuntimeError,
     "diag(): Supports 1D or 2D tensors. Got 3D"),
    ("trace_1d", lambda lib: lib.trace(_ones(lib, 3)), RuntimeError,
     "trace: expected a matrix, but got tensor with dim 1"),
    ("triu_indices_row", lambda lib: lib.triu_indices(-1, 3), RuntimeError, "row must be non-negative, got-1"),
    ("tril_indices_dtype", lambda lib: lib.tril_indices(3, 3, dtype=lib.float64), NotImplementedError,
     "\"tril_indices\" not implemented for 'Double'"),
    ("tensordot_sizes", lambda lib: lib.tensordot(_ones(lib, 2, 3), _ones(lib, 3, 4), 2), RuntimeError,
     "contracted dimensions need to match, but first has size 2 in dim -2 and second has size 3 in dim 0"),
    ("tensordot_lists", lambda lib: lib.tensordot(_ones(lib, 2, 3), _ones(lib, 3, 4), ([1, 0], [0])),
     RuntimeError, "both dimension lists should have same length"),
    ("einsum_ndim", lambda lib: lib.einsum("ijk->", _ones(lib, 2, 3)), RuntimeError,
     "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) "
     "for operand 0 and no ellipsis was given"),
    ("einsum_operands", lambda lib: lib.einsum("ij,jk->ik", _ones(lib, 2, 3)), RuntimeError,
     "einsum(): fewer operands were provided than specified in the equation"),
    ("einsum_output", lambda lib: lib.einsum("ij->ik", _ones(lib, 2, 3)), RuntimeError,
     "einsum(): output subscript k does not appear in the equation for any input operand"),
    ("einsum_broadcast", lambda lib: lib.einsum("ij,jk->ik", _ones(lib, 2, 3), _ones(lib, 4, 4)),
     RuntimeError, "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously "
     "seen size 3"),
    ("einsum_subscript", lambda lib: lib.einsum("i1->", _ones(lib, 2, 3)), RuntimeError,
     "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"),
    ("einsum_repeated", lambda lib: lib.einsum("ii->i", _ones(lib, 2, 3)), RuntimeError,
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("cdist_columns", lambda lib: lib.cdist(_ones(lib, 2, 3), _ones(lib, 3, 4)), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    ("cdist_1d", lambda lib: lib.cdist(_ones(lib, 3), _ones(lib, 3, 3)), RuntimeError,
     "cdist only supports at least 2D tensors, X1 got: 1D"),
    ("cdist_p", lambda lib: lib.cdist(_ones(lib, 2, 3), _ones(lib, 2, 3), p=-1), RuntimeError,
     "cdist only supports non-negative p values"),
]

# reductions and scans
ERROR_CASES += [
    ("aminmax_empty", lambda lib: lib.aminmax(_ones(lib, 0, 3)), RuntimeError,
     "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."),
    ("aminmax_empty_dim", lambda lib: lib.aminmax(_ones(lib, 0, 3), dim=0), IndexError,
     "aminmax: Expected reduction dim 0 to have non-zero size."),
    ("nanmean_int", lambda lib: lib.nanmean(lib.tensor([1, 2])), RuntimeError,
     "nanmean(): expected input to have floating point or complex dtype but got Long"),
    ("cumprod_dim", lambda lib: _ones(lib, 3, 4).cumprod(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("logcumsumexp_int", lambda lib: lib.logcumsumexp(lib.tensor([1, 2]), 0), NotImplementedError,
     "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
    ("median_empty_dim", lambda lib: lib.median(_ones(lib, 0, 2), 0), IndexError,
     "median(): Expected reduction dim 0 to have non-zero size."),
    ("kthvalue_k", lambda lib: lib.kthvalue(_ones(lib, 3), 4), RuntimeError,
     "kthvalue(): selected number k out of range for dimension 0"),
    ("quantile_q", lambda lib: lib.quantile(_ones(lib, 3), 1.5), RuntimeError,
     "quantile() q must be in the range [0, 1] but got 1.5"),
    ("quantile_q_2d", lambda lib: lib.quantile(_ones(lib, 3), _ones(lib, 1, 1)), RuntimeError,
     "quantile() q must be a scalar or 1D tensor"),
    ("quantile_q_dtype", lambda lib: lib.quantile(_ones(lib, 3), lib.tensor([0.5], dtype=lib.float64)),
     RuntimeError, "quantile() q tensor must be same dtype as the input tensor"),
    ("quantile_int", lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5), RuntimeError,
     "quantile() input tensor must be either float or double dtype"),
    ("quantile_interpolation", lambda lib: lib.quantile(_ones(lib, 3), 0.5, interpolation="cubic"),
     RuntimeError, "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
     "cubic"),
    ("quantile_empty", lambda lib: lib.quantile(_ones(lib, 0), 0.5), RuntimeError,
     "quantile() input tensor must be non-empty"),
]

# sets, counts and bins
ERROR_CASES += [
    ("bincount_negative", lambda lib: lib.bincount(lib.tensor([0, -1])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    ("bincount_2d", lambda lib: lib.bincount(lib.tensor([[0, 1]])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    ("bincount_float", lambda lib: lib.bincount(_ones(lib, 2)), NotImplementedError,
     "\"bincount_cpu\" not implemented for 'Float'"),
    ("bincount_weights", lambda lib: lib.bincount(lib.tensor([0, 1]), weights=_ones(lib, 3)), RuntimeError,
     "weights should be 1-d and have the same length as input"),
    ("bincount_minlength", lambda lib: lib.bincount(lib.tensor([0, 1]), minlength=-1), RuntimeError,
     "minlength should be >= 0"),
    ("histc_bins", lambda lib: lib.histc(_ones(lib, 2), bins=0), RuntimeError,
     "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
    ("histc_range", lambda lib: lib.histc(_ones(lib, 2), bins=4, min=3, max=1), RuntimeError,
     "torch.histc: max must be larger than min"),
    ("histc_int", lambda lib: lib.histc(lib.tensor([1, 2])), NotImplementedError,
     "\"histogram_cpu\" not implemented for 'Long'"),
    ("histc_inf", lambda lib: lib.histc(lib.tensor([1.0, float("inf")])), RuntimeError,
     "torch.histc: range of [1, inf] is not finite"),
    ("searchsorted_side", lambda lib: lib.searchsorted(_ones(lib, 3), _ones(lib, 2), side="left", right=True),
     RuntimeError, "torch.searchsorted(): side and right can't be set to opposites, got side of left while "
     "right was True"),
    ("searchsorted_side_name", lambda lib: lib.searchsorted(_ones(lib, 3), _ones(lib, 2), side="up"),
     RuntimeError, "torch.searchsorted(): side can only be 'left' or 'right' but got up"),
    ("searchsorted_shapes", lambda lib: lib.searchsorted(_ones(lib, 2, 3), _ones(lib, 1, 3)), RuntimeError,
     "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
     "tensor and input value tensor must match, but we got boundaries tensor [2, 3] and input value tensor "
     "[1, 3]"),
    ("searchsorted_0d", lambda lib: lib.searchsorted(lib.tensor(1.0), _ones(lib, 2)), RuntimeError,
     "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"),
    ("searchsorted_sorter", lambda lib: lib.searchsorted(_ones(lib, 3), _ones(lib, 2),
                                                         sorter=lib.tensor([1, 5, 0])),
     RuntimeError, "torch.searchsorted(): sorter index out of range"),
    ("bucketize_2d", lambda lib: lib.bucketize(_ones(lib, 3), _ones(lib, 2, 2)), RuntimeError,
     "boundaries tensor must be 1 dimension, but got dim(2)"),
]

# indexing
ERROR_CASES += [
    ("masked_select_mask", lambda lib: lib.masked_select(_ones(lib, 3), lib.tensor([1, 0, 1])), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    ("take_range", lambda lib: lib.take(_ones(lib, 2, 3), lib.tensor([6])), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements."),
    ("take_dtype", lambda lib: lib.take(_ones(lib, 2, 3), _ones(lib, 1)), RuntimeError,
     "take(): Expected a long tensor for index, but got Float"),
    ("take_along_dim_ndim", lambda lib: lib.take_along_dim(_ones(lib, 2, 3), lib.tensor([0, 1]), dim=1),
     RuntimeError, "torch.take_along_dim(): input and indices should have the same number of dimensions, but "
     "got 2 dimensions for input, and 1 dimensions for indices"),
    ("index_fill_range", lambda lib: _ones(lib, 2, 3).index_fill(1, lib.tensor([3]), -1), IndexError,
     "index 3 is out of bounds for dimension 1 with size 3"),
    ("index_fill_2d_index", lambda lib: _ones(lib, 2, 3).index_fill(1, lib.tensor([[0]]), -1), RuntimeError,
     "Index has to be a vector/scalar"),
    ("index_fill_value", lambda lib: _ones(lib, 2, 3).index_fill(1, lib.tensor([0]), _ones(lib, 1)),
     RuntimeError, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    ("masked_scatter_source", lambda lib: _ones(lib, 2, 3).masked_scatter(lib.ones(3, dtype=lib.bool),
                                                                          _ones(lib, 2)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    ("masked_scatter_mask", lambda lib: _ones(lib, 3).masked_scatter(lib.tensor([1, 0, 1]), _ones(lib, 3)),
     RuntimeError, "masked_scatter_ only supports boolean masks, but got mask with dtype Long"),
    ("scatter_reduce_name", lambda lib: _ones(lib, 3).scatter_reduce(0, lib.tensor([0]), _ones(lib, 1), "avg"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got avg"),
    ("scatter_reduce_dtype", lambda lib: _ones(lib, 3).scatter_reduce(0, lib.tensor([0]), lib.tensor([1]), "sum"),
     RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_reduce_range", lambda lib: _ones(lib, 3).scatter_reduce(0, lib.tensor([3]), _ones(lib, 1), "sum"),
     RuntimeError, "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_reduce_arg", lambda lib: _ones(lib, 3).scatter(0, lib.tensor([0]), _ones(lib, 1), reduce="max"),
     RuntimeError, "reduce argument must be either add or multiply."),
    ("index_put_dtype", lambda lib: _ones(lib, 2, 3).index_put((lib.tensor([0, 1]),), lib.tensor(7)),
     RuntimeError, "Index put requires the source and destination dtypes match, got Float for the destination "
     "and Long for the source."),
    ("index_put_range", lambda lib: _ones(lib, 2, 3).index_put((lib.tensor([0, 5]),), lib.tensor(7.0)),
     IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ("index_put_shape", lambda lib: _ones(lib, 2, 3).index_put((lib.tensor([0, 1]),), _ones(lib, 2)),
     RuntimeError, "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape "
     "[2, 3]"),
]


# ---- rounding ops, sgn, shifts, and the in-place forms of the unary ops (issue 13) --------------


def _off_grid(g, *s):
    """Floats at least 0.1 away from every integer and half-integer (where rounding jumps)."""
    return np.asarray(np.floor(g.f(*s, lo=-4, hi=4)) + g.f(*s, lo=0.1, hi=0.4))


_ties_sample = lambda g: [  # noqa: E731  (halves round to even; -0.0 keeps its sign)
    Sample(np.array([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 1e300, -np.inf, np.nan]), gradcheck=False),
]


def _round_samples(g):
    return unary_samples(_off_grid)(g) + _ties_sample(g) + [
        Sample(_off_grid(g, 3, 4) * 7, decimals=1),
        Sample(_off_grid(g, 3, 4) * 7, decimals=2),
        Sample(_off_grid(g, 3, 4) * 70, decimals=-1),
        Sample(_off_grid(g, 5), decimals=0),
    ]


def _ref_round(x, decimals=0):
    return np.round(x, decimals)


def _shift_samples(g):
    ints = lambda *s: g.idx(s, 2001) - 1000  # noqa: E731
    amounts = lambda *s: g.idx(s, 72) - 3  # noqa: E731  (negative and >= 64 shifts too)
    return [
        Sample(ints(3, 4), amounts(3, 4)),
        Sample(ints(3, 1), amounts(1, 4)),
        Sample(np.array([1, -8, 5, 2**62, -1, -(2**63)]), np.array([2, 1, 64, 1, 70, 63])),
        Sample(ints(3, 4), 3),
        Sample(7, amounts(5), only=("fn", "op")),
        Sample(ints(3, 4), amounts(3, 4), views={0: "T"}),
    ]


def _ref_lshift(a, b):
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    shifted = np.left_shift(a.astype(np.uint64), np.clip(b, 0, 63).astype(np.uint64)).astype(np.int64)
    return np.where((b >= 0) & (b < 64), shifted, 0)


def _ref_rshift(a, b):
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return np.where((b >= 0) & (b < 63), np.right_shift(a, np.clip(b, 0, 62)), np.right_shift(a, 63))


OP_DB += [
    # PyTorch's sgn gradient is a ZeroTensor numpy cannot read: its zero gradient is tested in
    # tests/python/test_unary_inplace.py instead
    _unary("sgn", np.sign, _nz, extra=_zeros_sample, differentiable=False),
    _unary("floor", np.floor, _off_grid, extra=_ties_sample),
    _unary("ceil", np.ceil, _off_grid, extra=_ties_sample),
    OpInfo("round", V(fn="round", method="round"), _ref_round, _round_samples),
    _unary("trunc", np.trunc, _off_grid, extra=_ties_sample),
    _unary("fix", np.trunc, _off_grid, extra=_ties_sample),
    _unary("frac", lambda x: x - np.trunc(x), _off_grid),
    OpInfo("bitwise_left_shift", V(fn="bitwise_left_shift", method="bitwise_left_shift", op=operator.lshift),
           _ref_lshift, _shift_samples, differentiable=False),
    OpInfo("bitwise_right_shift", V(fn="bitwise_right_shift", method="bitwise_right_shift", op=operator.rshift),
           _ref_rshift, _shift_samples, differentiable=False),
]


def _inplace_row(name, function):
    """The in-place form of unary op ``name`` on a copy of its input (so that gradients flow
    back to the input through the copy), as ``x.name_()`` and, where PyTorch has it,
    ``torch.name_(x)``: the out-of-place row's reference and samples."""
    base = next(r for r in OP_DB if r.name == name)
    def copy(lib, x):
        return x.clone(memory_format=lib.contiguous_format)

    variants = {f"method.{name}_": lambda lib, x, **kw: getattr(copy(lib, x), name + "_")(**kw)}
    if function:
        variants[f"fn.{name}_"] = lambda lib, x, **kw: getattr(lib, name + "_")(copy(lib, x), **kw)
    ref = base.ref
    if name == "logical_not":  # written back in the input's dtype
        ref = lambda x: np.logical_not(x).astype(x.dtype)  # noqa: E731
    return OpInfo(name + "_", variants, ref, base.samples, differentiable=base.differentiable,
                  tol64=base.tol64, tol32=base.tol32, torch_tol32=base.torch_tol32)


# every op of for_each_unary_op! (src/ops/unary.rs); False: no torch.<name>_ function
_UNARY_INPLACE = {
    "exp": True, "log": True, "log1p": True, "sqrt": True, "rsqrt": True, "sin": True, "cos": True,
    "tanh": True, "sigmoid": True, "relu": True, "abs": True, "sign": False, "sgn": False, "neg": True,
    "erf": True, "reciprocal": True, "floor": True, "ceil": True, "round": True, "trunc": True,
    "fix": True, "frac": True, "logical_not": False, "bitwise_not": False,
}
OP_DB += [_inplace_row(name, function) for name, function in _UNARY_INPLACE.items()]

PROMOTION_CASES += [
    # rounding an integer tensor gives it back; round(decimals=) and frac are float-only
    ("floor(int64)", lambda lib: lib.floor(_i(lib)), "int64"),
    ("ceil(int64)", lambda lib: lib.ceil(_i(lib)), "int64"),
    ("round(int64)", lambda lib: lib.round(_i(lib)), "int64"),
    ("trunc(int64)", lambda lib: lib.trunc(_i(lib)), "int64"),
    ("fix(int64)", lambda lib: lib.fix(_i(lib)), "int64"),
    ("sgn(bool)", lambda lib: lib.sgn(_b(lib)), "bool"),
    ("sgn(int64)", lambda lib: lib.sgn(_i(lib)), "int64"),
    ("floor_(int64)", lambda lib: _i(lib).floor_(), "int64"),
    ("bool>>int64", lambda lib: _b(lib) >> _i(lib), "int64"),
    ("int64<<bool", lambda lib: _i(lib) << _b(lib), "int64"),
    ("2<<int64", lambda lib: 2 << _i(lib), "int64"),
    ("int64//int64", lambda lib: _i(lib) // _i(lib), "int64"),
    ("div_floor(int64,int64)", lambda lib: lib.div(_i(lib), _i(lib), rounding_mode="floor"), "int64"),
    ("div_trunc(int64,2)", lambda lib: lib.div(_i(lib), 2, rounding_mode="trunc"), "int64"),
    ("div_trunc(int64,2.5)", lambda lib: lib.div(_i(lib), 2.5, rounding_mode="trunc"), "float32"),
    ("div_trunc(bool,int64)", lambda lib: lib.div(_b(lib), _i(lib), rounding_mode="trunc"), "int64"),
    ("div_floor_(int64)", lambda lib: _i(lib).div_(2, rounding_mode="floor"), "int64"),
    ("floor_divide_(int64)", lambda lib: _i(lib).floor_divide_(2), "int64"),
    ("remainder_(float64)", lambda lib: _d(lib).remainder_(2), "float64"),
    ("fmod_(float64)", lambda lib: _d(lib).fmod_(2), "float64"),
    ("fmod(int64,2.5)", lambda lib: lib.fmod(_i(lib), 2.5), "float32"),
]

ERROR_CASES += [
    ("floor_bool", lambda lib: lib.floor(_b(lib)), NotImplementedError,
     "\"floor_vml_cpu\" not implemented for 'Bool'"),
    ("round_bool", lambda lib: lib.round(_b(lib)), NotImplementedError,
     "\"round_vml_cpu\" not implemented for 'Bool'"),
    ("trunc_bool", lambda lib: _b(lib).trunc(), NotImplementedError,
     "\"trunc_vml_cpu\" not implemented for 'Bool'"),
    ("frac_int", lambda lib: lib.frac(_i(lib)), NotImplementedError,
     "\"frac_cpu\" not implemented for 'Long'"),
    ("round_decimals_int", lambda lib: lib.round(_i(lib), decimals=1), NotImplementedError,
     "\"round_cpu\" not implemented for 'Long'"),
    ("round_decimals0_int", lambda lib: lib.round(_i(lib), decimals=0), NotImplementedError,
     "\"round_vml_cpu\" not implemented for 'Long'"),
    ("exp_int_inplace", lambda lib: _i(lib).exp_(), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("exp_leaf_inplace", lambda lib: lib.ones(2, requires_grad=True).exp_(), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("relu_leaf_fn", lambda lib: lib.relu_(lib.ones(2, requires_grad=True)), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("neg_bool_inplace", lambda lib: _b(lib).neg_(), RuntimeError,
     "Negation, the `-` operator, on a bool tensor is not supported."),
    ("lshift_float", lambda lib: _ones(lib, 2) << 1, NotImplementedError,
     "\"lshift_cpu\" not implemented for 'Float'"),
    ("lshift_float_amount", lambda lib: _i(lib) << 1.5, NotImplementedError,
     "\"lshift_cpu\" not implemented for 'Float'"),
    ("rshift_float", lambda lib: lib.bitwise_right_shift(_i(lib), _ones(lib, 3)), NotImplementedError,
     "\"rshift_cpu\" not implemented for 'Float'"),
    ("lshift_bool", lambda lib: _b(lib) << _b(lib), NotImplementedError,
     "\"lshift_cpu\" not implemented for 'Bool'"),
    ("rlshift_float", lambda lib: 2.5 << _i(lib), NotImplementedError,
     "\"lshift_cpu\" not implemented for 'Float'"),
    ("lshift_inplace_float", lambda lib: _i(lib).bitwise_left_shift_(1.5), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("floor_divide_bool", lambda lib: _b(lib) // _b(lib), NotImplementedError,
     "\"div_floor_cpu\" not implemented for 'Bool'"),
    ("div_trunc_bool", lambda lib: lib.div(_b(lib), _b(lib), rounding_mode="trunc"), NotImplementedError,
     "\"div_trunc_cpu\" not implemented for 'Bool'"),
    ("remainder_bool", lambda lib: _b(lib) % _b(lib), NotImplementedError,
     "\"remainder_cpu\" not implemented for 'Bool'"),
    ("fmod_bool", lambda lib: lib.fmod(_b(lib), _b(lib)), NotImplementedError,
     "\"fmod_cpu\" not implemented for 'Bool'"),
    ("fmod_int_zero", lambda lib: lib.fmod(_i(lib), lib.tensor([1, 0, 1])), RuntimeError, "ZeroDivisionError"),
    ("div_trunc_zero", lambda lib: lib.div(_i(lib), lib.tensor([1, 0, 1]), rounding_mode="trunc"),
     RuntimeError, "ZeroDivisionError"),
    ("div_floor_inplace_cast", lambda lib: _i(lib).div_(2.5, rounding_mode="floor"), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("div_rounding_mode", lambda lib: lib.div(_i(lib), 2, rounding_mode="round"), RuntimeError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"),
    ("floor_divide_backward", lambda lib: (lib.ones(2, requires_grad=True) // 2).sum().backward(),
     RuntimeError, "derivative for aten::floor_divide is not implemented"),
]


# ---------------------------------------------------------------------------
# margin, likelihood, multi-label and CTC losses; embedding_bag
# ---------------------------------------------------------------------------


def _reduce_ref(loss, reduction):
    return {"none": loss, "sum": np.sum(loss), "mean": np.mean(loss)}[reduction]


def _ref_margin_ranking_loss(x1, x2, y, margin=0.0, reduction="mean"):
    return _reduce_ref(np.maximum(0.0, -y * (x1 - x2) + margin), reduction)


def _ref_hinge_embedding_loss(x, y, margin=1.0, reduction="mean"):
    loss = np.where(y != 1, np.maximum(0.0, margin - x), 0.0) + np.where(y != -1, x, 0.0)
    return _reduce_ref(loss, reduction)


def _ref_cosine_embedding_loss(x1, x2, y, margin=0.0, reduction="mean"):
    d = y.ndim
    cos = (x1 * x2).sum(d) / np.sqrt(((x1 * x1).sum(d) + 1e-12) * ((x2 * x2).sum(d) + 1e-12))
    loss = np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(0.0, cos - margin), 0.0)
    return _reduce_ref(loss, reduction)


def _ref_soft_margin_loss(x, y, reduction="mean"):
    return _reduce_ref(np.log1p(np.exp(-x * y)), reduction)


def _ref_multilabel_soft_margin_loss(x, y, weight=None, reduction="mean"):
    loss = y * np.logaddexp(0.0, -x) + (1 - y) * np.logaddexp(0.0, x)
    if weight is not None:
        loss = loss * weight
    return _reduce_ref(loss.mean(-1), reduction)


def _ref_poisson_nll_loss(x, t, log_input=True, full=False, eps=1e-8, reduction="mean"):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        with np.errstate(all="ignore"):
            stirling = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
        loss = loss + np.where(t > 1, stirling, 0.0)
    return _reduce_ref(loss, reduction)


def _ref_gaussian_nll_loss(x, t, var, full=False, eps=1e-6, reduction="mean"):
    var = np.asarray(var, dtype=np.float64)
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var) + (0.5 * np.log(2 * np.pi) if full else 0.0)
    return _reduce_ref(loss, reduction)


def _ref_multi_margin_loss(x, y, p=1, margin=1.0, weight=None, reduction="mean"):
    x2 = np.atleast_2d(x)
    y1 = np.reshape(y, -1)
    n, c = x2.shape
    z = np.maximum(0.0, margin - x2[np.arange(n), y1][:, None] + x2) ** p
    if weight is not None:
        z = z * weight[y1][:, None]
    z[np.arange(n), y1] = 0.0
    loss = z.sum(1) / c
    return loss.reshape(np.shape(y)) if reduction == "none" else _reduce_ref(loss, reduction)


def _ref_multilabel_margin_loss(x, y, reduction="mean"):
    x2, y2 = np.atleast_2d(x), np.atleast_2d(y)
    out = []
    for xi, yi in zip(x2, y2):
        targets = list(yi[: list(yi).index(-1)] if -1 in list(yi) else yi)
        others = [k for k in range(len(xi)) if k not in targets]
        out.append(sum(max(0.0, 1 - xi[j] + xi[k]) for j in targets for k in others) / len(xi))
    loss = np.array(out)
    if reduction == "none":
        return loss if np.ndim(x) == 2 else loss[0]
    return _reduce_ref(loss, reduction)


def _ref_triplet_margin_with_distance_loss(a, pos, neg, margin=1.0, swap=False, reduction="mean"):
    return _ref_triplet_margin_loss(a, pos, neg, margin=margin, swap=swap, reduction=reduction)


def _ref_log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _ref_ctc_nll(lp, target, blank):
    """-log p(target) of one sequence by the alpha recursion (``lp``: (T, C))."""
    ext = [blank]
    for k in target:
        ext += [int(k), blank]
    alpha = np.full(len(ext), -np.inf)
    alpha[0] = lp[0, blank]
    if len(target):
        alpha[1] = lp[0, ext[1]]
    for t in range(1, lp.shape[0]):
        prev = alpha.copy()
        for s in range(len(ext)):
            terms = [prev[s]] + ([prev[s - 1]] if s > 0 else [])
            if s > 1 and ext[s] != ext[s - 2]:
                terms.append(prev[s - 2])
            alpha[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
    return -np.logaddexp.reduce(alpha[-2:] if len(target) else alpha[-1:])


def _ref_ctc_loss(x, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    lp = _ref_log_softmax(x)
    batched = lp.ndim == 3
    lp = lp if batched else lp[:, None]
    il, tl = np.reshape(input_lengths, -1), np.reshape(target_lengths, -1)
    starts = np.concatenate([[0], np.cumsum(tl)])
    out = []
    for n in range(lp.shape[1]):
        tg = targets[n][: tl[n]] if np.ndim(targets) == 2 else targets[starts[n]: starts[n + 1]]
        nll = _ref_ctc_nll(lp[: il[n], n], tg, blank) if il[n] > 0 else (0.0 if tl[n] == 0 else np.inf)
        out.append(0.0 if zero_infinity and nll == np.inf else nll)
    loss = np.array(out)
    if reduction == "mean":
        return (loss / np.maximum(tl, 1)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss[0]


def _ref_embedding_bag(indices, weight, offsets=None, psw=None, mode="mean", padding_idx=None,
                       include_last_offset=False):
    if indices.ndim == 2:
        bags = list(indices)
        psws = list(psw) if psw is not None else [None] * len(bags)
    else:
        starts = list(offsets[:-1] if include_last_offset else offsets)
        ends = starts[1:] + [len(indices)]
        bags = [indices[a:b] for a, b in zip(starts, ends)]
        psws = [psw[a:b] for a, b in zip(starts, ends)] if psw is not None else [None] * len(bags)
    if padding_idx is not None:
        padding_idx %= weight.shape[0]
    out = []
    for bag, w in zip(bags, psws):
        keep = [i for i, k in enumerate(bag) if k != padding_idx]
        rows = weight[np.asarray(bag)[keep]] if keep else np.zeros((0, weight.shape[1]))
        if w is not None:
            rows = rows * np.asarray(w)[keep][:, None]
        if not keep:
            out.append(np.zeros(weight.shape[1]))
        else:
            out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.array(out).reshape(len(bags), weight.shape[1])


def _pm1(g, *shape):
    return np.where(g.rng.uniform(size=shape) < 0.5, -1.0, 1.0)


def _margin_ranking_samples(g):
    # y * (x2 - x1) + margin away from 0 for the margins used
    y = _pm1(g, 6)
    x1 = g.f(6)
    x2 = x1 + g.f(6, avoid=(-0.1, 0.0, 0.1), margin=0.05)
    y2 = _pm1(g, 3, 4)
    a = g.f(3, 4)
    b = a + g.f(3, 4, avoid=(-0.5, 0.5), margin=0.1)
    return [
        Sample(x1, x2, y),
        Sample(x1, x2, y, margin=0.1, reduction="sum"),
        Sample(a, b, y2, margin=0.5, reduction="none", const=(2,)),
        Sample(a, b, y2, margin=0.5, views={0: "T"}),
    ]


def _hinge_embedding_samples(g):
    x = g.f(3, 4, avoid=(1.0, 0.5), margin=0.1)
    y = _pm1(g, 3, 4)
    return [
        Sample(x, y, const=(1,)),
        Sample(x, y, margin=0.5, reduction="sum", const=(1,)),
        Sample(x, y[0], reduction="none", const=(1,)),  # broadcast target
        Sample(x[0], y[0], const=(1,)),
    ]


def _cosine_embedding_samples(g):
    x1, x2 = g.f(5, 4), g.f(5, 4)
    cos = (x1 * x2).sum(1) / np.linalg.norm(x1, axis=1) / np.linalg.norm(x2, axis=1)
    x2[np.abs(cos - 0.2) < 0.05] *= -1  # away from the hinge at margin 0.2
    y = np.array([1, -1, -1, 1, -1])
    return [
        Sample(x1, x2, y),
        Sample(x1, x2, y.astype(np.float64), margin=0.2, reduction="none", const=(2,)),
        Sample(x1[1], x2[1], np.array(1), reduction="sum"),
    ]


def _soft_margin_samples(g):
    x, y = g.f(3, 4), _pm1(g, 3, 4)
    return [
        Sample(x, y, const=(1,)),
        Sample(x, y, reduction="none", const=(1,)),
        Sample(x, y[1], reduction="sum", const=(1,)),
    ]


def _multilabel_soft_margin_samples(g):
    x, y, w = g.f(3, 4), g.f(3, 4, lo=0.0, hi=1.0), g.pos(4)
    return [
        Sample(x, y),
        Sample(x, y, w, reduction="none", const=(2,)),
        Sample(x[0], (y[0] > 0.5).astype(np.float64), reduction="sum", const=(1,)),
    ]


def _poisson_nll_samples(g):
    x, pos = g.f(3, 4), g.pos(3, 4)
    t = g.f(3, 4, lo=0.2, hi=4.0, avoid=(1.0,), margin=0.1)
    return [
        Sample(x, t),
        Sample(x, t, full=True, reduction="sum"),
        Sample(pos, t, log_input=False, reduction="none"),
        Sample(pos, t, log_input=False, full=True, eps=0.1),
    ]


def _gaussian_nll_samples(g):
    x, t = g.f(3, 4), g.f(3, 4)
    return [
        Sample(x, t, g.pos(3, 4)),
        Sample(x, t, g.pos(3, 4), full=True, reduction="sum"),
        Sample(x, t, g.pos(3), reduction="none"),  # one dimension short
        Sample(x, t, g.pos(3, 1)),  # broadcast in one dimension
        Sample(x, t, 0.7, full=True),  # a float variance
    ]


def _multi_margin_samples(g):
    y = np.array([0, 3, 1, 3, 2])
    x = g.f(5, 4)
    for _ in range(100):  # margin - x[y] + x[j] away from 0
        xy = x[np.arange(5), y][:, None]
        if min(np.abs(m - xy + x).min() for m in (1.0, 0.5)) > 0.05:
            break
        x = g.f(5, 4)
    return [
        Sample(x, y),
        Sample(x, y, 2, 0.5, reduction="sum"),
        Sample(x, y, 1, 1.0, g.pos(4), reduction="none", const=(4,)),
        Sample(x[1], y[1:2], reduction="none"),
    ]


def _multilabel_margin_samples(g):
    y = np.array([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [1, 1, 4, -1, 0], [-1, 2, 0, 0, 0]])
    x = g.distinct(4, 5) * 0.3 + 0.02  # pairwise differences away from 1
    return [
        Sample(x, y),
        Sample(x, y, reduction="none"),
        Sample(x[2], y[2], reduction="sum"),
    ]


def _triplet_margin_with_distance_samples(g):
    return [Sample(*s.inputs, **{k: v for k, v in s.kwargs.items() if k in ("margin", "swap", "reduction")})
            for s in _triplet_margin_loss_samples(g) if "p" not in s.kwargs and "eps" not in s.kwargs]


def _ctc_samples(g):
    tg = np.array([[1, 2, 2], [3, 0, 0], [4, 1, 3]])
    flat = np.array([1, 2, 2, 3, 4, 1])
    il, tl = np.array([6, 5, 6]), np.array([3, 1, 2])
    return [
        Sample(g.f(6, 3, 5), tg, il, tl),
        Sample(g.f(6, 3, 5), flat, il, tl, reduction="sum"),
        Sample(g.f(6, 3, 5), tg, (6, 4, 5), (3, 0, 2), reduction="none"),
        Sample(g.f(6, 3, 5), tg, np.array([3, 5, 6]), tl, zero_infinity=True),  # one infeasible
        Sample(g.f(6, 5), tg[0], np.array(6), np.array(3), blank=0),  # unbatched
        Sample(g.f(6, 3, 5), tg, il, np.array([3, 0, 2]), blank=4),
    ]


def _embedding_bag_samples(g):
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 0, 6, 6])
    offsets = np.array([0, 2, 2, 5, 9])
    out = []
    for mode in ("sum", "mean", "max"):
        out += [
            Sample(idx, g.f(7, 3), offsets, mode=mode),
            Sample(idx, g.f(7, 3), offsets, mode=mode, padding_idx=4),
            Sample(idx.reshape(2, 5), g.f(7, 3), None, mode=mode, padding_idx=-1),
            Sample(idx, g.f(7, 3), np.array([0, 2, 2, 5, 9, 10]), mode=mode, include_last_offset=True),
        ]
    out += [
        Sample(idx, g.f(7, 3), offsets, g.pos(10), mode="sum"),
        Sample(idx.reshape(5, 2), g.f(7, 3), None, g.pos(5, 2), mode="sum", padding_idx=2),
        Sample(idx, g.f(7, 3), offsets, views={1: "T"}, mode="max"),
    ]
    return out


OP_DB += [
    OpInfo("nn.functional.margin_ranking_loss", V(fn="nn.functional.margin_ranking_loss"),
           _ref_margin_ranking_loss, _margin_ranking_samples),
    OpInfo("nn.functional.hinge_embedding_loss", V(fn="nn.functional.hinge_embedding_loss"),
           _ref_hinge_embedding_loss, _hinge_embedding_samples),
    OpInfo("nn.functional.cosine_embedding_loss", V(fn="nn.functional.cosine_embedding_loss"),
           _ref_cosine_embedding_loss, _cosine_embedding_samples),
    OpInfo("nn.functional.soft_margin_loss", V(fn="nn.functional.soft_margin_loss"), _ref_soft_margin_loss,
           _soft_margin_samples),
    OpInfo("nn.functional.multilabel_soft_margin_loss", V(fn="nn.functional.multilabel_soft_margin_loss"),
           _ref_multilabel_soft_margin_loss, _multilabel_soft_margin_samples),
    OpInfo("nn.functional.poisson_nll_loss", V(fn="nn.functional.poisson_nll_loss"), _ref_poisson_nll_loss,
           _poisson_nll_samples),
    OpInfo("nn.functional.gaussian_nll_loss", V(fn="nn.functional.gaussian_nll_loss"), _ref_gaussian_nll_loss,
           _gaussian_nll_samples),
    OpInfo("nn.functional.multi_margin_loss", V(fn="nn.functional.multi_margin_loss"), _ref_multi_margin_loss,
           _multi_margin_samples),
    OpInfo("nn.functional.multilabel_margin_loss", V(fn="nn.functional.multilabel_margin_loss"),
           _ref_multilabel_margin_loss, _multilabel_margin_samples),
    OpInfo("nn.functional.triplet_margin_with_distance_loss",
           V(fn="nn.functional.triplet_margin_with_distance_loss"), _ref_triplet_margin_with_distance_loss,
           _triplet_margin_with_distance_samples),
    # through log_softmax: PyTorch's ctc backward is the gradient of the logits (it adds
    # exp(log_probs) to the gradient of log_probs, which log_softmax's backward cancels)
    OpInfo("nn.functional.ctc_loss",
           V(log_softmax=lambda lib, x, *args, **kw: lib.nn.functional.ctc_loss(x.log_softmax(-1), *args, **kw)),
           _ref_ctc_loss, _ctc_samples),
    OpInfo("nn.functional.embedding_bag",
           {"fn.nn.functional.embedding_bag": lambda lib, i, w, o=None, psw=None, **kw:
            lib.nn.functional.embedding_bag(i, w, o, per_sample_weights=psw, **kw)},
           _ref_embedding_bag, _embedding_bag_samples),
]


# ---- math: trig, hyperbolic, logs/exponentials, special functions (src/ops/math.rs) ----------


def _digamma_ref(x):
    """psi(x) in float64 (no scipy): the recurrence up to 20, then the asymptotic series."""
    def one(v):
        if v <= 0 and v == math.floor(v):
            return math.nan
        if v < 0:  # reflection
            return one(1 - v) - math.pi / math.tan(math.pi * v)
        acc = 0.0
        while v < 20:
            acc -= 1 / v
            v += 1
        z = 1 / (v * v)
        return acc + math.log(v) - 0.5 / v - z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z / 240)))
    return np.vectorize(one, otypes=[np.float64])(x)


def _polygamma_ref(n, x):
    """psi^(n)(x), n >= 1: the recurrence up to 30, then the asymptotic series."""
    def one(v):
        acc = 0.0
        while v < 30:
            acc += (-1) ** (n + 1) * math.factorial(n) / v ** (n + 1)
            v += 1
        bern = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66]
        s = math.factorial(n - 1) / v ** n + math.factorial(n) / (2 * v ** (n + 1))
        for k, b in enumerate(bern, start=1):
            s += b * math.factorial(2 * k + n - 1) / (math.factorial(2 * k) * v ** (2 * k + n))
        return acc + (-1) ** (n + 1) * s
    return np.vectorize(one, otypes=[np.float64])(x)


def _erfinv_ref(y):
    """erfinv by Newton's method on math.erf from a bisection start."""
    def one(v):
        if abs(v) >= 1:
            return math.copysign(math.inf, v) if abs(v) == 1 else math.nan
        lo, hi = -6.0, 6.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        r = (lo + hi) / 2
        for _ in range(3):
            r -= (math.erf(r) - v) / (2 / math.sqrt(math.pi) * math.exp(-r * r))
        return r
    return np.vectorize(one, otypes=[np.float64])(y)


_unit = lambda g, *s: g.f(*s, lo=-0.9, hi=0.9)  # noqa: E731  (asin, acos, atanh, erfinv)
_above_one = lambda g, *s: g.f(*s, lo=1.2, hi=3.0)  # noqa: E731  (acosh)
_gamma_domain = lambda g, *s: g.f(*s, lo=0.3, hi=4.0)  # noqa: E731  (lgamma, digamma, polygamma)

OP_DB += [
    _unary("tan", np.tan, lambda g, *s: g.f(*s, lo=-1.2, hi=1.2)),
    _unary("atan", np.arctan, lambda g, *s: g.f(*s, lo=-4, hi=4)),
    _unary("asin", np.arcsin, _unit),
    _unary("acos", np.arccos, _unit),
    _unary("sinh", np.sinh),
    _unary("cosh", np.cosh),
    _unary("asinh", np.arcsinh, lambda g, *s: g.f(*s, lo=-4, hi=4)),
    _unary("acosh", np.arccosh, _above_one),
    _unary("atanh", np.arctanh, _unit),
    _unary("log2", np.log2, _pos),
    _unary("log10", np.log10, _pos),
    _unary("exp2", np.exp2),
    _unary("expm1", np.expm1),
    _unary("erfc", np.vectorize(math.erfc, otypes=[np.float64])),
    _unary("erfinv", _erfinv_ref, _unit),
    _unary("lgamma", np.vectorize(math.lgamma, otypes=[np.float64]), _gamma_domain),
    _unary("digamma", _digamma_ref, _gamma_domain),
    OpInfo("polygamma", {"fn.polygamma": lambda lib, x, n=1: lib.polygamma(n, x),
                         "method.polygamma": lambda lib, x, n=1: x.polygamma(n)},
           lambda x, n=1: _polygamma_ref(n, x),
           lambda g: [Sample(g.f(3, 4, lo=0.3, hi=4.0), n=n) for n in (1, 2, 3)]
           + [Sample(g.f(5, lo=0.3, hi=4.0), views={0: "slice"}, n=1)]),
    OpInfo("mvlgamma", V(fn="mvlgamma", method="mvlgamma"),
           lambda x, p: sum(np.vectorize(math.lgamma)(x - i / 2) for i in range(p))
           + p * (p - 1) / 4 * math.log(math.pi),
           lambda g: [Sample(g.f(3, 4, lo=2.0, hi=4.0), p=p) for p in (1, 3)]),
    _unary("arctan", np.arctan, lambda g, *s: g.f(*s, lo=-4, hi=4)),
    _unary("sinc", np.sinc, extra=_zeros_sample),
    OpInfo("logit", V(fn="logit", method="logit"),
           lambda x, eps=None: np.log(np.clip(x, eps, 1 - eps) / (1 - np.clip(x, eps, 1 - eps))) if eps is not None
           else np.log(x / (1 - x)),
           lambda g: [Sample(g.f(3, 4, lo=0.05, hi=0.95)), Sample(g.f(5, lo=0.05, hi=0.95), views={0: "slice"}),
                      Sample(g.f(3, 4, lo=0.05, hi=0.95, avoid=(0.2, 0.8)), eps=0.2)]),
    OpInfo("atan2", V(fn="atan2", method="atan2"), np.arctan2,
           binary_samples(make_b=lambda g, *s: g.nz(*s), scalars=())),
    OpInfo("arctan2", V(fn="arctan2", method="arctan2"), np.arctan2,
           binary_samples(make_b=lambda g, *s: g.nz(*s), scalars=())),
    OpInfo("hypot", V(fn="hypot", method="hypot"), np.hypot,
           binary_samples(make_a=lambda g, *s: g.nz(*s), scalars=())),
    OpInfo("xlogy", V(fn="xlogy", method="xlogy"),
           lambda x, y: np.where(x == 0, 0.0, x * np.log(y)),
           lambda g: binary_samples(make_b=lambda g, *s: g.pos(*s), scalars=(2.5,))(g)
           + [Sample(np.array([0.0, 1.5, 0.0]), np.array([0.5, 2.0, 3.0]))]),
]
_UNARY_INPLACE.update({
    "tan": True, "atan": True, "asin": True, "acos": True, "sinh": True, "cosh": True, "asinh": True,
    "acosh": True, "atanh": True, "log2": True, "log10": True, "exp2": True, "expm1": True, "erfc": True,
    "sinc": True, "erfinv": False, "lgamma": False, "digamma": False,
})
OP_DB += [_inplace_row(name, function) for name, function in _UNARY_INPLACE.items()
          if name not in {r.name[:-1] for r in OP_DB if r.name.endswith("_")}]
for _row in OP_DB:
    if _row.name in ("asinh_", "acosh_", "atanh_"):
        # PyTorch 2.13 raises "the derivative for 'inplace version of asinh' is not implemented"
        # (ferrograd's in-place forms are differentiable: the out-of-place rows check the formula)
        _row.differentiable = False
# ---- torch.special: Bessel functions, erfcx / log_ndtr, incomplete gamma, zeta, polynomials
# (src/ops/special.rs). The NumPy references are independent of PyTorch's algorithms: power
# series, trapezoid rules on the integral representations (spectrally accurate here), and
# numpy.polynomial.


def _special_i(nu, x, scaled=False):
    """I_nu(x) (nu = 0, 1) by its power series; exp(-|x|) I_nu(x) when ``scaled``."""
    def one(v):
        term = (v / 2) ** nu / math.factorial(nu)
        total, k = term, 0
        while abs(term) > 1e-18 * abs(total) or k < 3:
            k += 1
            term *= (v / 2) ** 2 / (k * (k + nu))
            total += term
        return total * math.exp(-abs(v)) if scaled else total
    return np.vectorize(one, otypes=[np.float64])(x)


def _gauss(a, b, n):
    """Gauss-Legendre nodes and weights on [a, b]."""
    t, w = np.polynomial.legendre.leggauss(n)
    return (b - a) / 2 * t + (a + b) / 2, (b - a) / 2 * w


def _special_k(nu, x, scaled=False):
    """K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt (Gauss-Legendre on [0, 12]), times
    exp(x) if scaled."""
    t, w = _gauss(0.0, 12.0, 400)
    def one(v):
        if v <= 0:
            return math.inf if v == 0 else math.nan
        return float(np.sum(w * np.exp(-v * (np.cosh(t) - (1 if scaled else 0))) * np.cosh(nu * t)))
    return np.vectorize(one, otypes=[np.float64])(x)


def _special_j(nu, x):
    """J_nu(x) = 1/pi int_0^pi cos(nu t - x sin t) dt (Gauss-Legendre)."""
    t, w = _gauss(0.0, math.pi, 200)
    return np.vectorize(lambda v: float(np.sum(w * np.cos(nu * t - v * np.sin(t))) / math.pi),
                        otypes=[np.float64])(x)


def _special_y(nu, x):
    """Y_nu(x) = 1/pi int_0^pi sin(x sin t - nu t) dt
    - 1/pi int_0^inf (e^(nu t) + (-1)^nu e^(-nu t)) e^(-x sinh t) dt (Gauss-Legendre)."""
    t, w = _gauss(0.0, math.pi, 200)
    u, wu = _gauss(0.0, 14.0, 800)
    def one(v):
        if v <= 0:
            return -math.inf if v == 0 else math.nan
        a = np.sum(w * np.sin(v * np.sin(t) - nu * t))
        b = np.sum(wu * (np.exp(nu * u) + (-1) ** nu * np.exp(-nu * u)) * np.exp(-v * np.sinh(u)))
        return float((a - b) / math.pi)
    return np.vectorize(one, otypes=[np.float64])(x)


def _airy_ai(x):
    """Ai(x) = c1 f(x) - c2 g(x), f and g its Maclaurin series in x^3."""
    def one(v):
        f, g, m, n, k = 1.0, v, 1.0, v, 1.0
        for _ in range(200):
            m *= v ** 3 / ((k + 1) * (k + 2))
            n *= v ** 3 / ((k + 2) * (k + 3))
            k += 3
            f, g = f + m, g + n
        return 0.355028053887817239260 * f - 0.258819403792806798405 * g
    return np.vectorize(one, otypes=[np.float64])(x)


def _gammainc(a, x, upper=False):
    """P(a, x) by its series x^a e^-x / Gamma(a + 1) sum_k x^k / ((a+1)...(a+k)); Q = 1 - P."""
    def one(av, xv):
        term = total = 1.0
        k = 0
        while term > 1e-17 * total:
            k += 1
            term *= xv / (av + k)
            total += term
        p = math.exp(av * math.log(xv) - xv - math.lgamma(av + 1)) * total
        return 1 - p if upper else p
    return np.vectorize(one, otypes=[np.float64])(a, x)


def _hurwitz_zeta(s, q):
    """sum_{k<N} (k + q)^-s plus the Euler-Maclaurin tail at N = 40."""
    def one(sv, qv):
        n = 40
        w = qv + n
        head = sum((k + qv) ** -sv for k in range(n))
        tail = w ** (1 - sv) / (sv - 1) + 0.5 * w ** -sv + sv * w ** (-sv - 1) / 12 \
            - sv * (sv + 1) * (sv + 2) * w ** (-sv - 3) / 720
        return head + tail
    return np.vectorize(one, otypes=[np.float64])(s, q)


def _degree(n):
    return np.asarray(n).astype(np.int64)


def _chebyshev(kind, shifted=False):
    """T/U/V/W_n(x) by the three-term recurrence from their first two terms."""
    first = {"t": lambda x: x, "u": lambda x: 2 * x, "v": lambda x: 2 * x - 1, "w": lambda x: 2 * x + 1}[kind]

    def ref(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, dtype=np.float64), _degree(n))
        y = 2 * x - 1 if shifted else x
        p, q = np.ones_like(y), first(y)
        out = np.where(n == 0, 1.0, q)
        for k in range(2, int(n.max(initial=0)) + 1):
            p, q = q, 2 * y * q - p
            out = np.where(n == k, q, out)
        return np.where(n < 0, 0.0, out)
    return ref


def _numpy_poly(val):
    """The basis polynomial of degree n at x by numpy.polynomial's ``val`` (hermval, ...)."""
    def ref(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, dtype=np.float64), _degree(n))
        out = np.zeros(x.shape)
        for idx in np.ndindex(x.shape):
            c = np.zeros(max(n[idx], 0) + 1)
            c[-1] = 1.0
            out[idx] = val(x[idx], c) if n[idx] >= 0 else 0.0
        return out
    return ref


def _special_unary(name, ref, make, differentiable=False, extra=None, **kw):
    samples = unary_samples(make)
    if extra is not None:
        samples = _with(samples, extra)
    return OpInfo(name, V(fn="special." + name), ref, samples, differentiable=differentiable, **kw)


def _constant_first(make_a, make_b, scalar_first=()):
    """Binary samples whose first operand is a non-differentiable constant (igamma's a,
    zeta's x); ``scalar_first``: Python numbers in its place."""
    def samples(g):
        out = [
            Sample(make_a(g, 3, 4), make_b(g, 3, 4), const=(0,)),
            Sample(make_a(g, 3, 1), make_b(g, 1, 4), const=(0,)),
            Sample(make_a(g, 2, 3, 4), make_b(g, 4), const=(0,)),
            Sample(make_a(g), make_b(g, 3, 4), const=(0,)),
            Sample(make_a(g, 3, 4), make_b(g), const=(0,)),
            Sample(make_a(g, 4, 3), make_b(g, 4, 3), views={0: "T", 1: "T"}, const=(0,)),
            Sample(make_a(g, 3, 4), make_b(g, 4), views={0: "slice", 1: "slice"}, const=(0,)),
        ]
        out += [Sample(s, make_b(g, 3, 4)) for s in scalar_first]
        return out
    return samples


def _polynomial_samples(lo, hi):
    def samples(g):
        x = lambda *s: g.f(*s, lo=lo, hi=hi)  # noqa: E731
        degrees = lambda *s: np.asarray(g.rng.integers(0, 12, size=s))  # noqa: E731
        return [
            Sample(x(3, 4), 3),
            Sample(x(3, 4), 0),
            Sample(x(3, 4), -2),
            Sample(x(5), 9),
            Sample(x(5), 25),
            Sample(x(3, 4), degrees(3, 4)),  # int64 degrees
            Sample(x(3, 4), degrees(4).astype(np.float64)),  # float degrees (cast, truncated)
            Sample(x(4, 3), degrees(4, 3), views={0: "T"}),
            Sample(x(3, 4), 2.7),
            Sample(0.5, degrees(3, 4).astype(np.float64)),
            Sample(x(), degrees(2, 3)),
            Sample(x(0, 3), 4),
        ]
    return samples


_besselk_domain = lambda g, *s: g.f(*s, lo=0.2, hi=6.0)  # noqa: E731
_bessel_domain = lambda g, *s: g.f(*s, lo=-12.0, hi=12.0)  # noqa: E731
_bessely_domain = lambda g, *s: g.f(*s, lo=0.3, hi=12.0)  # noqa: E731
_i_domain = lambda g, *s: g.f(*s, lo=-12.0, hi=12.0, avoid=(0.0,), margin=0.05)  # noqa: E731

OP_DB += [
    OpInfo("i0", V(fn=("i0", "special.i0"), method="i0"), lambda x: _special_i(0, x),
           unary_samples(_i_domain)),
    _special_unary("i0e", lambda x: _special_i(0, x, scaled=True), _i_domain, differentiable=True),
    _special_unary("i1", lambda x: _special_i(1, x), _i_domain, differentiable=True,
                   extra=lambda g: [Sample(np.array([0.0, 1e-30, -2.0]))]),
    _special_unary("i1e", lambda x: _special_i(1, x, scaled=True), _i_domain, differentiable=True,
                   extra=lambda g: [Sample(np.array([0.0, 1e-30, -2.0]))]),
    _special_unary("erfcx", lambda x: np.exp(x * x) * np.vectorize(math.erfc, otypes=[np.float64])(x),
                   lambda g, *s: g.f(*s, lo=-4.0, hi=8.0), differentiable=True),
    _special_unary("log_ndtr", lambda x: np.log(0.5 * np.vectorize(math.erfc, otypes=[np.float64])(-x / math.sqrt(2))),
                   lambda g, *s: g.f(*s, lo=-8.0, hi=5.0), differentiable=True),
    _special_unary("modified_bessel_i0", lambda x: _special_i(0, x), _bessel_domain),
    _special_unary("modified_bessel_i1", lambda x: _special_i(1, x), _bessel_domain),
    _special_unary("modified_bessel_k0", lambda x: _special_k(0, x), _besselk_domain),
    _special_unary("modified_bessel_k1", lambda x: _special_k(1, x), _besselk_domain),
    _special_unary("scaled_modified_bessel_k0", lambda x: _special_k(0, x, scaled=True), _besselk_domain),
    _special_unary("scaled_modified_bessel_k1", lambda x: _special_k(1, x, scaled=True), _besselk_domain),
    # PyTorch's J, Y and Ai drop Cephes' leading denominator coefficients: up to 8e-7 (J, Y) and
    # 3e-6 (Ai below -2.09) off the true values, which ferrograd's are within 1e-14 of
    _special_unary("bessel_j0", lambda x: _special_j(0, x), _bessel_domain, torch_tol64=(1e-6, 1e-6)),
    _special_unary("bessel_j1", lambda x: _special_j(1, x), _bessel_domain, torch_tol64=(1e-6, 1e-6)),
    _special_unary("bessel_y0", lambda x: _special_y(0, x), _bessely_domain, torch_tol64=(1e-6, 1e-6)),
    _special_unary("bessel_y1", lambda x: _special_y(1, x), _bessely_domain, torch_tol64=(1e-6, 1e-6)),
    _special_unary("airy_ai", _airy_ai, lambda g, *s: g.f(*s, lo=-6.0, hi=6.0), torch_tol64=(1e-5, 4e-6)),
    _special_unary("spherical_bessel_j0", lambda x: np.sinc(x / math.pi),
                   lambda g, *s: g.f(*s, lo=-10.0, hi=10.0)),
    OpInfo("igamma", V(fn=("igamma", "special.gammainc"), method="igamma"), _gammainc,
           _constant_first(lambda g, *s: g.f(*s, lo=0.3, hi=5.0), lambda g, *s: g.f(*s, lo=0.2, hi=8.0))),
    OpInfo("igammac", V(fn=("igammac", "special.gammaincc"), method="igammac"),
           lambda a, x: _gammainc(a, x, upper=True),
           _constant_first(lambda g, *s: g.f(*s, lo=0.3, hi=5.0), lambda g, *s: g.f(*s, lo=0.2, hi=8.0)),
           tol64=(1e-7, 1e-9)),
    OpInfo("zeta", V(fn="special.zeta"), _hurwitz_zeta,
           _constant_first(lambda g, *s: g.f(*s, lo=1.5, hi=6.0), lambda g, *s: g.f(*s, lo=0.3, hi=4.0),
                           scalar_first=(2, 3.5))),
]
for _name, _kind, _shifted, _lo, _hi in [
        ("chebyshev_polynomial_t", "t", False, -1.5, 1.5), ("chebyshev_polynomial_u", "u", False, -1.5, 1.5),
        ("chebyshev_polynomial_v", "v", False, -1.5, 1.5), ("chebyshev_polynomial_w", "w", False, -1.5, 1.5),
        ("shifted_chebyshev_polynomial_t", "t", True, -0.3, 1.3),
        ("shifted_chebyshev_polynomial_u", "u", True, -0.3, 1.3),
        ("shifted_chebyshev_polynomial_v", "v", True, -0.3, 1.3),
        ("shifted_chebyshev_polynomial_w", "w", True, -0.3, 1.3)]:
    OP_DB.append(OpInfo(_name, V(fn="special." + _name), _chebyshev(_kind, _shifted),
                        _polynomial_samples(_lo, _hi), differentiable=False, tol64=(1e-7, 1e-8)))
OP_DB += [
    OpInfo("hermite_polynomial_h", V(fn="special.hermite_polynomial_h"), _numpy_poly(np.polynomial.hermite.hermval),
           _polynomial_samples(-2.0, 2.0), differentiable=False, tol64=(1e-7, 1e-6)),
    OpInfo("hermite_polynomial_he", V(fn="special.hermite_polynomial_he"),
           _numpy_poly(np.polynomial.hermite_e.hermeval), _polynomial_samples(-2.0, 2.0), differentiable=False,
           tol64=(1e-7, 1e-6)),
    OpInfo("laguerre_polynomial_l", V(fn="special.laguerre_polynomial_l"),
           _numpy_poly(np.polynomial.laguerre.lagval), _polynomial_samples(-1.0, 4.0), differentiable=False,
           tol64=(1e-7, 1e-8)),
    OpInfo("legendre_polynomial_p", V(fn="special.legendre_polynomial_p"),
           _numpy_poly(np.polynomial.legendre.legval), _polynomial_samples(-1.2, 1.2), differentiable=False,
           tol64=(1e-7, 1e-8)),
]
_UNARY_INPLACE["i0"] = True
OP_DB.append(_inplace_row("i0", True))
ERROR_CASES += [
    ("igamma_int", lambda lib: lib.igamma(_i(lib), _i(lib)), NotImplementedError,
     "\"igamma_cpu\" not implemented for 'Long'"),
    ("igammac_bool", lambda lib: lib.igammac(_b(lib), _b(lib)), NotImplementedError,
     "\"igammac_cpu\" not implemented for 'Bool'"),
    ("gammainc_number", lambda lib: lib.special.gammainc(_f(lib), 2.0), TypeError,
     "special_gammainc(): argument 'other' (position 2) must be Tensor, not float"),
    ("zeta_half", lambda lib: lib.special.zeta(_f(lib).half(), 2.0), NotImplementedError,
     "\"zeta_cpu\" not implemented for 'Half'"),
    ("bessel_j0_half", lambda lib: lib.special.bessel_j0(_f(lib).half()), NotImplementedError,
     "\"bessel_j0_cpu\" not implemented for 'Half'"),
    ("erfcx_bfloat16", lambda lib: lib.special.erfcx(_f(lib).bfloat16()), NotImplementedError,
     "\"erfcx_cpu\" not implemented for 'BFloat16'"),
    ("chebyshev_half", lambda lib: lib.special.chebyshev_polynomial_t(_f(lib).half(), 2), NotImplementedError,
     "\"chebyshev_polynomial_t_cpu\" not implemented for 'Half'"),
    ("bessel_j0_number", lambda lib: lib.special.bessel_j0(1.0), TypeError,
     "special_bessel_j0(): argument 'input' (position 1) must be Tensor, not float"),
    ("i0_number", lambda lib: lib.i0(1.0), TypeError,
     "i0(): argument 'input' (position 1) must be Tensor, not float"),
    ("i0__int", lambda lib: _i(lib).i0_(), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
]
PROMOTION_CASES += [
    ("i0(int64)", lambda lib: lib.i0(_i(lib)), "float32"),
    ("special.i1e(bool)", lambda lib: lib.special.i1e(_b(lib)), "float32"),
    ("i0(float16)", lambda lib: lib.i0(_f(lib).half()), "float16"),
    ("gammainc(float32,float64)", lambda lib: lib.special.gammainc(_f(lib), _f(lib).double()), "float64"),
    ("gammainc(int64,float32)", lambda lib: lib.special.gammainc(_i(lib), _f(lib)), "float32"),
    ("gammainc(float16)", lambda lib: lib.special.gammainc(_f(lib).half(), lib.ones(3, dtype=lib.float16)),
     "float16"),
    ("zeta(int64,int64)", lambda lib: lib.special.zeta(_i(lib), _i(lib)), "float32"),
    ("zeta(float32,0d float64)", lambda lib: lib.special.zeta(_f(lib), lib.tensor(2.0, dtype=lib.float64)),
     "float32"),
    ("chebyshev(int64,int)", lambda lib: lib.special.chebyshev_polynomial_t(_i(lib), 3), "float32"),
    ("legendre(float32,float64 n)", lambda lib: lib.special.legendre_polynomial_p(_f(lib), _f(lib).double()),
     "float64"),
    ("hermite(bool,2.5)", lambda lib: lib.special.hermite_polynomial_h(_b(lib), 2.5), "float32"),
]


# torch.linalg. Samples are well-conditioned (a random matrix plus a multiple of the identity);
# symmetric / positive-definite inputs are built inside the variant from an unconstrained
# matrix (A + A^T, A A^T + nI), as PyTorch's OpInfos wrap them, so gradcheck perturbs freely;
# the outputs of svd / eigh are their gauge-invariant functions (A rebuilt from the factors,
# the values, the factors' absolute values).
# ---------------------------------------------------------------------------


def _wellcond(g, *shape):
    n = shape[-1]
    return g.f(*shape) + 3.0 * np.eye(n)


def _spd(lib, a):
    return a @ a.mT + a.shape[-1] * lib.eye(a.shape[-1], dtype=a.dtype)


def _np_spd(a):
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def _np_sym(a):
    return a + np.swapaxes(a, -1, -2)


def _is_vector_rhs(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


def _ref_solve(a, b, left=True):
    vec = _is_vector_rhs(a, b)
    if not left:
        a = np.swapaxes(a, -1, -2)
        if not vec:
            b = np.swapaxes(b, -1, -2)
    bm = b[..., None] if vec else b
    x = np.linalg.solve(a, bm)
    if vec:
        return x[..., 0]
    return x if left else np.swapaxes(x, -1, -2)


def _ref_slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def _svd_usv(lib, a):
    r = lib.linalg.svd(a, full_matrices=False)
    return (r.U * r.S.unsqueeze(-2)) @ r.Vh, r.S, r.U.abs(), r.Vh.abs()


def _ref_svd_usv(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return a, s, np.abs(u), np.abs(vh)


def _svd_full(lib, a):
    r = lib.linalg.svd(a)
    k = r.S.shape[-1]
    return (r.U[..., :k] * r.S.unsqueeze(-2)) @ r.Vh[..., :k, :], r.S


def _eigh(lib, a, UPLO="L"):
    w, v = lib.linalg.eigh(a + a.mT, UPLO)
    return w, v.abs()


def _ref_eigh(a, UPLO="L"):
    w, v = np.linalg.eigh(_np_sym(a))
    return w, np.abs(v)


def _lstsq(lib, a, b):
    r = lib.linalg.lstsq(a, b)
    return r.solution, r.rank


def _ref_lstsq(a, b):
    vec = _is_vector_rhs(a, b)
    bm = b[..., None] if vec else b
    a_b, b_b = a, bm
    batch = np.broadcast_shapes(a_b.shape[:-2], b_b.shape[:-2])
    a_b = np.broadcast_to(a_b, batch + a_b.shape[-2:])
    b_b = np.broadcast_to(b_b, batch + b_b.shape[-2:])
    x = np.linalg.pinv(a_b) @ b_b
    rank = np.linalg.matrix_rank(a).astype(np.int64)  # A's batch shape, as PyTorch's
    return (x[..., 0] if vec else x), np.asarray(rank)


def _ref_matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002  (torch's name)
    return np.linalg.norm(a, ord=ord, axis=dim, keepdims=keepdim)


def _ref_vector_norm(x, ord=2, dim=None, keepdim=False):  # noqa: A002  (torch's name)
    if dim is None:
        r = np.linalg.norm(x.reshape(-1), ord=ord)
        return np.full((1,) * x.ndim, r) if keepdim else r
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) == 1:
        return np.linalg.norm(x, ord=ord, axis=dims[0], keepdims=keepdim)
    s = np.sum(np.abs(x) ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
    return s


_LINALG_TOL32 = (1e-4, 1e-5)

OP_DB += [
    OpInfo("linalg_inv", {**V(fn=("linalg.inv", "inverse"), method="inverse"),
                          "fn.linalg.inv_ex": lambda lib, a: lib.linalg.inv_ex(a).inverse},
           np.linalg.inv, lambda g: [
               Sample(_wellcond(g, 3, 3)),
               Sample(_wellcond(g, 2, 4, 4)),
               Sample(_wellcond(g, 1, 1)),
               Sample(_wellcond(g, 3, 3), views={0: "T"}),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_solve", V(fn="linalg.solve"), _ref_solve, lambda g: [
        Sample(_wellcond(g, 3, 3), g.f(3, 2)),
        Sample(_wellcond(g, 3, 3), g.f(3)),
        Sample(_wellcond(g, 2, 3, 3), g.f(3, 4)),
        Sample(_wellcond(g, 3, 3), g.f(2, 3, 1)),
        Sample(_wellcond(g, 2, 3, 3), g.f(2, 3)),
        Sample(_wellcond(g, 3, 3), g.f(2, 3), left=False),
        Sample(_wellcond(g, 3, 3), g.f(3, 2), views={0: "T"}),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_det", V(fn=("linalg.det", "det"), method="det"), np.linalg.det, lambda g: [
        Sample(_wellcond(g, 3, 3)),
        Sample(_wellcond(g, 2, 4, 4)),
        Sample(g.f(1, 1, avoid=(0.0,))),
        Sample(g.f(3, 3), views={0: "T"}),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_slogdet", {**V(fn="linalg.slogdet", method="slogdet"),
                              "fn.slogdet": lambda lib, a: tuple(lib.slogdet(a))},
           _ref_slogdet, lambda g: [
               Sample(_wellcond(g, 3, 3)),
               Sample(-_wellcond(g, 3, 3)),
               Sample(_wellcond(g, 2, 4, 4)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("logdet", {"fn.logdet": lambda lib, a: lib.logdet(_spd(lib, a)),
                      "method.logdet": lambda lib, a: _spd(lib, a).logdet()},
           lambda a: np.linalg.slogdet(_np_spd(a))[1], lambda g: [
               Sample(g.f(3, 3)),
               Sample(g.f(2, 4, 4)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_cholesky", {
        "fn.linalg.cholesky": lambda lib, a, **kw: lib.linalg.cholesky(_spd(lib, a), **kw),
        "fn.linalg.cholesky_ex": lambda lib, a, **kw: lib.linalg.cholesky_ex(_spd(lib, a), **kw).L,
    }, lambda a, upper=False: (lambda low: np.swapaxes(low, -1, -2) if upper else low)(np.linalg.cholesky(_np_spd(a))),
        lambda g: [
            Sample(g.f(3, 3)),
            Sample(g.f(2, 4, 4)),
            Sample(g.f(3, 3), upper=True),
            Sample(g.f(1, 1)),
        ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_qr", V(fn="linalg.qr"), lambda a, mode="reduced": np.linalg.qr(a, mode=mode), lambda g: [
        Sample(g.f(4, 3) + np.eye(4, 3) * 3),
        Sample(g.f(3, 5) + np.eye(3, 5) * 3),
        Sample(_wellcond(g, 3, 3), mode="complete"),
        Sample(g.f(3, 4) + np.eye(3, 4) * 3, mode="complete"),
        Sample(g.f(2, 4, 3) + np.eye(4, 3) * 3),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_svd", {"fn.linalg.svd": _svd_usv}, _ref_svd_usv, lambda g: [
        Sample(g.f(4, 3)),
        Sample(g.f(3, 5)),
        Sample(g.f(2, 3, 3)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_svd_full", {"fn.linalg.svd": _svd_full},
           lambda a: (a, np.linalg.svd(a, compute_uv=False)), lambda g: [
               Sample(g.f(4, 3)),
               Sample(g.f(2, 3, 5)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_svdvals", V(fn="linalg.svdvals"), lambda a: np.linalg.svd(a, compute_uv=False), lambda g: [
        Sample(g.f(4, 3)),
        Sample(g.f(2, 3, 5)),
        Sample(g.f(3, 3), views={0: "T"}),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_eigh", {"fn.linalg.eigh": _eigh}, _ref_eigh, lambda g: [
        Sample(g.f(3, 3)),
        Sample(g.f(2, 4, 4)),
        Sample(g.f(3, 3), UPLO="U"),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_eigvalsh", {"fn.linalg.eigvalsh": lambda lib, a, **kw: lib.linalg.eigvalsh(a + a.mT, **kw)},
           lambda a, UPLO="L": np.linalg.eigvalsh(_np_sym(a)), lambda g: [
               Sample(g.f(3, 3)),
               Sample(g.f(2, 4, 4), UPLO="U"),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_pinv", {**V(fn=("linalg.pinv", "pinverse"), method="pinverse")},
           np.linalg.pinv, lambda g: [
               Sample(g.f(4, 3)),
               Sample(g.f(3, 5)),
               Sample(g.f(2, 3, 3)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_pinv_hermitian",
           {"fn.linalg.pinv": lambda lib, a: lib.linalg.pinv(a + a.mT, hermitian=True)},
           lambda a: np.linalg.pinv(_np_sym(a)), lambda g: [
               Sample(_wellcond(g, 3, 3)),
               Sample(_wellcond(g, 2, 4, 4)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_lstsq", {"fn.linalg.lstsq": _lstsq}, _ref_lstsq, lambda g: [
        Sample(g.f(5, 3), g.f(5, 2)),
        Sample(g.f(5, 3), g.f(5)),
        Sample(g.f(2, 5, 3), g.f(2, 5, 2)),
        Sample(_wellcond(g, 1, 3, 3), g.f(2, 3, 2)),
        Sample(g.f(3, 5), g.f(3, 2)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_vector_norm", V(fn="linalg.vector_norm"), _ref_vector_norm, lambda g: [
        Sample(g.nz(3, 4)),
        Sample(g.nz(3, 4), 1),
        Sample(g.distinct(3, 4), math.inf),
        Sample(g.distinct(3, 4), -math.inf, 1),
        Sample(g.nz(3, 4), 3.0, (0, 1), True),
        Sample(g.nz(2, 3, 4), 2, -1),
        Sample(g.nz(3, 4), 0.5, 0, keepdim=True),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_matrix_norm", V(fn="linalg.matrix_norm"), _ref_matrix_norm, lambda g: [
        Sample(g.f(3, 4)),
        Sample(g.f(3, 4), "nuc"),
        Sample(g.f(2, 3, 4), 2),
        Sample(g.f(2, 3, 4), -2),
        Sample(g.distinct(3, 4), 1),
        Sample(g.distinct(3, 4), -1, keepdim=True),
        Sample(g.distinct(2, 3, 4), math.inf, (0, 2)),
        Sample(g.distinct(3, 4), -math.inf),
        Sample(g.f(2, 3, 4), "nuc", (0, 2), True),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_norm", V(fn="linalg.norm"),
           lambda a, ord=None, dim=None, keepdim=False: np.linalg.norm(  # noqa: A006
               a, ord=ord, axis=dim, keepdims=keepdim),
           lambda g: [
               Sample(g.f(3, 4)),
               Sample(g.f(3, 4), "fro"),
               Sample(g.f(3, 4), 2),
               Sample(g.nz(5), 1),
               Sample(g.f(2, 3, 4), None, (1, 2)),
               Sample(g.nz(2, 3, 4), 3, 1),
           ], torch_tol32=_LINALG_TOL32),
]
# torch.linalg beyond the decompositions above: triangular / Cholesky / LU solves, LU itself,
# matrix functions and the vector products. Triangular factors given to cholesky_solve /
# cholesky_inverse come from linalg.cholesky of an unconstrained matrix (their untouched
# triangle would otherwise break the finite differences); LU pivots are compared as int64.


def _np_getrf(a):
    """LAPACK's getf2 on one float64 matrix: (packed LU, 1-based pivots)."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape
    piv = []
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(p + 1)
        a[[j, p]] = a[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, np.array(piv, dtype=np.int64)


def _np_batched(fn, a, nout):
    """``fn`` over the matrices of a batch, its ``nout`` outputs stacked."""
    flat = a.reshape((-1,) + a.shape[-2:])
    outs = [fn(x) for x in flat]
    return tuple(np.stack([o[i] for o in outs]).reshape(a.shape[:-2] + outs[0][i].shape) for i in range(nout))


def _np_unpack(lu, piv):
    m, n = lu.shape
    k = min(m, n)
    L = np.tril(lu, -1)[:, :k] + np.eye(m, k)
    U = np.triu(lu)[:k, :]
    order = list(range(m))
    for i, p in enumerate(piv):
        order[i], order[p - 1] = order[p - 1], order[i]
    P = np.zeros((m, m))
    P[order, range(m)] = 1.0
    return P, L, U


def _ref_lu_factor(a):
    return _np_batched(_np_getrf, a, 2)


def _ref_lu(a):
    return _np_batched(lambda x: _np_unpack(*_np_getrf(x)), a, 3)


def _lu_factor(lib, a):
    r = lib.linalg.lu_factor(a)
    return r.LU, r.pivots.long()


def _lu_factor_ex(lib, a):
    r = lib.linalg.lu_factor_ex(a)
    return r.LU, r.pivots.long()


def _lu_solve(lib, a, b, **kw):
    return lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, **kw)


def _ref_lu_solve(a, b, left=True, adjoint=False):
    a = np.swapaxes(a, -1, -2) if adjoint else a
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _ref_solve_triangular(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.eye(a.shape[-1]) * np.diagonal(t, 0, -2, -1)[..., None] + np.eye(a.shape[-1])
    return _ref_lu_solve(t, b, left=left)


def _triangular_solve(lib, b, a, **kw):
    return tuple(lib.triangular_solve(b, a, **kw))


def _ref_triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.eye(a.shape[-1]) * np.diagonal(t, 0, -2, -1)[..., None] + np.eye(a.shape[-1])
    x = np.linalg.solve(np.swapaxes(t, -1, -2) if transpose else t, b)
    return x, np.broadcast_to(a, x.shape[:-2] + a.shape[-2:])


def _chol_factor(lib, a, upper):
    return lib.linalg.cholesky(_spd(lib, a), upper=upper)


def _np_expm(a):
    """exp(A) in float64: Taylor series of A / 2^s (norm below 1/2), squared s times."""
    def one(x):
        s = max(0, int(np.ceil(np.log2(max(np.linalg.norm(x, 1), 1e-300) / 0.5))))
        y = x / 2.0 ** s
        r, term = np.eye(x.shape[0]), np.eye(x.shape[0])
        for k in range(1, 30):
            term = term @ y / k
            r = r + term
        for _ in range(s):
            r = r @ r
        return (r,)
    return _np_batched(one, a, 1)[0]


def _np_householder(a, tau):
    def one(x, t):
        m, n = x.shape
        v = np.tril(x, -1) + np.eye(m, n)
        q = np.eye(m)
        for i in range(t.shape[0]):
            q = q - t[i] * (q @ v[:, i:i + 1]) @ v[:, i:i + 1].T
        return q[:, :n]
    flat_a = a.reshape((-1,) + a.shape[-2:])
    flat_t = tau.reshape((-1, tau.shape[-1]))
    return np.stack([one(x, t) for x, t in zip(flat_a, flat_t)]).reshape(a.shape)


def _ref_matrix_rank(a, atol=None, rtol=None, hermitian=False):
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(np.float64).eps * max(a.shape[-2:])
    tol = np.maximum(0.0 if atol is None else atol, rtol * s.max(-1))
    return (s > tol[..., None]).sum(-1).astype(np.int64)


def _ref_vander(x, N=None):
    n = x.shape[-1] if N is None else N
    return x[..., None] ** np.arange(n)


def _lowrank(g, m, n, r):
    return g.f(m, r) @ g.f(r, n)


OP_DB += [
    OpInfo("linalg_solve_triangular", V(fn="linalg.solve_triangular"), _ref_solve_triangular, lambda g: [
        Sample(_wellcond(g, 3, 3), g.f(3, 2), upper=True),
        Sample(_wellcond(g, 3, 3), g.f(3, 2), upper=False),
        Sample(_wellcond(g, 3, 3), g.f(2, 3), upper=True, left=False),
        Sample(_wellcond(g, 3, 3), g.f(3, 4), upper=False, unitriangular=True),
        Sample(_wellcond(g, 2, 3, 3), g.f(3, 2), upper=True),
        Sample(_wellcond(g, 3, 3), g.f(2, 3, 1), upper=False, left=True),
        Sample(_wellcond(g, 3, 3), g.f(3, 2), views={0: "T"}, upper=True),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("triangular_solve", {"fn.triangular_solve": _triangular_solve,
                                "method.triangular_solve": lambda lib, b, a, **kw: tuple(b.triangular_solve(a, **kw))},
           _ref_triangular_solve, lambda g: [
               Sample(g.f(3, 2), _wellcond(g, 3, 3)),
               Sample(g.f(3, 2), _wellcond(g, 3, 3), upper=False, transpose=True),
               Sample(g.f(2, 3, 2), _wellcond(g, 3, 3), unitriangular=True),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("cholesky_solve", {
        "fn.cholesky_solve": lambda lib, b, a, upper=False: lib.cholesky_solve(b, _chol_factor(lib, a, upper), upper),
        "method.cholesky_solve": lambda lib, b, a, upper=False: b.cholesky_solve(_chol_factor(lib, a, upper), upper),
    }, lambda b, a, upper=False: np.linalg.solve(_np_spd(a), b), lambda g: [
        Sample(g.f(3, 2), g.f(3, 3)),
        Sample(g.f(3, 2), g.f(3, 3), upper=True),
        Sample(g.f(2, 4, 1), g.f(2, 4, 4)),
        Sample(g.f(2, 3, 2), g.f(3, 3)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("cholesky_inverse", {
        "fn.cholesky_inverse": lambda lib, a, upper=False: lib.cholesky_inverse(_chol_factor(lib, a, upper), upper),
        "method.cholesky_inverse": lambda lib, a, upper=False: _chol_factor(lib, a, upper).cholesky_inverse(upper),
    }, lambda a, upper=False: np.linalg.inv(_np_spd(a)), lambda g: [
        Sample(g.f(3, 3)),
        Sample(g.f(3, 3), upper=True),
        Sample(g.f(2, 4, 4)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_lu_factor", {"fn.linalg.lu_factor": _lu_factor, "fn.linalg.lu_factor_ex": _lu_factor_ex},
           _ref_lu_factor, lambda g: [
               Sample(g.f(3, 3)),
               Sample(g.f(2, 4, 4)),
               Sample(g.f(5, 3)),
               Sample(g.f(3, 5)),
               Sample(g.f(4, 4), views={0: "T"}),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_lu", V(fn="linalg.lu"), _ref_lu, lambda g: [
        Sample(g.f(3, 3)),
        Sample(g.f(2, 4, 4)),
        Sample(g.f(5, 3)),
        Sample(g.f(3, 5)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("lu_unpack", {"fn.lu_unpack": lambda lib, a: tuple(lib.lu_unpack(*lib.linalg.lu_factor(a)))},
           _ref_lu, lambda g: [
               Sample(g.f(4, 4)),
               Sample(g.f(2, 5, 3)),
               Sample(g.f(3, 5)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_lu_solve", {"fn.linalg.lu_solve": _lu_solve}, _ref_lu_solve, lambda g: [
        Sample(_wellcond(g, 3, 3), g.f(3, 2)),
        Sample(_wellcond(g, 3, 3), g.f(3, 2), adjoint=True),
        Sample(_wellcond(g, 3, 3), g.f(2, 3), left=False),
        Sample(_wellcond(g, 3, 3), g.f(2, 3), left=False, adjoint=True),
        Sample(_wellcond(g, 2, 4, 4), g.f(4, 1)),
        Sample(_wellcond(g, 3, 3), g.f(2, 3, 2)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_matrix_exp", {**V(fn=("linalg.matrix_exp", "matrix_exp"), method="matrix_exp")},
           _np_expm, lambda g: [
               Sample(g.f(3, 3)),
               Sample(g.f(3, 3) * 0.005),
               Sample(g.f(3, 3) * 0.1),
               Sample(g.f(3, 3) * 4.0),
               Sample(g.f(2, 4, 4)),
               Sample(g.f(1, 1)),
           ], torch_tol32=(2e-4, 1e-5)),
    OpInfo("linalg_matrix_power", V(fn=("linalg.matrix_power", "matrix_power"), method="matrix_power"),
           np.linalg.matrix_power, lambda g: [
               Sample(g.f(3, 3), 0),
               Sample(g.f(3, 3), 1),
               Sample(g.f(3, 3), 2),
               Sample(g.f(3, 3), 5),
               Sample(_wellcond(g, 3, 3), -1),
               Sample(_wellcond(g, 2, 3, 3), -3),
               Sample(g.f(2, 4, 4), 3),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_multi_dot", {"fn.linalg.multi_dot": lambda lib, *ts: lib.linalg.multi_dot(list(ts))},
           lambda *ts: np.linalg.multi_dot(ts), lambda g: [
               Sample(g.f(2, 3), g.f(3, 4)),
               Sample(g.f(3), g.f(3, 4), g.f(4, 2)),
               Sample(g.f(5, 2), g.f(2, 6), g.f(6, 3), g.f(3)),
               Sample(g.f(4), g.f(4, 1), g.f(1, 5), g.f(5, 2), g.f(2)),
               Sample(g.f(10, 2), g.f(2, 8), g.f(8, 1), g.f(1, 7)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_cross", {**V(fn="linalg.cross"),
                            "fn.cross": lambda lib, a, b, dim=-1: lib.cross(a, b, dim=dim),
                            "method.cross": lambda lib, a, b, dim=-1: a.cross(b, dim)},
           lambda a, b, dim=-1: np.cross(a, b, axis=dim), lambda g: [
               Sample(g.f(4, 3), g.f(4, 3)),
               Sample(g.f(1, 3), g.f(4, 3)),
               Sample(g.f(3, 4), g.f(3, 4), dim=0),
               Sample(g.f(2, 3, 2), g.f(2, 3, 1), dim=1),
               Sample(g.f(3), g.f(3)),
           ]),
    OpInfo("linalg_vecdot", V(fn="linalg.vecdot"), lambda x, y, dim=-1: (x * y).sum(dim), lambda g: [
        Sample(g.f(3, 4), g.f(3, 4)),
        Sample(g.f(2, 1, 4), g.f(3, 4)),
        Sample(g.f(3, 4), g.f(3, 4), dim=0),
        Sample(g.f(5), g.f(5)),
    ]),
    OpInfo("linalg_cond", V(fn="linalg.cond"), lambda a, p=None: np.linalg.cond(a, p), lambda g: [
        Sample(_wellcond(g, 3, 3)),
        Sample(g.f(4, 3)),
        Sample(_wellcond(g, 3, 3), -2),
        Sample(_wellcond(g, 2, 3, 3), 2),
    ], torch_tol32=(1e-3, 1e-5)),
    # cond in the norms through inv: PyTorch 2.13's own backward fails there ("modified by an
    # inplace operation", its masked_fill_ of inv_ex's output), so the gradient is not compared
    # with it: tests/python/test_linalg.py gradchecks it
    OpInfo("linalg_cond_inv_norms", V(fn="linalg.cond"), lambda a, p=None: np.linalg.cond(a, p), lambda g: [
        Sample(_wellcond(g, 2, 3, 3), "fro"),
        Sample(_wellcond(g, 3, 3), "nuc"),
        Sample(_wellcond(g, 3, 3), 1),
        Sample(_wellcond(g, 3, 3), -math.inf),
    ], differentiable=False, torch_tol32=(1e-3, 1e-5)),
    OpInfo("linalg_matrix_rank", V(fn="linalg.matrix_rank"), _ref_matrix_rank, lambda g: [
        Sample(g.f(4, 3)),
        Sample(_lowrank(g, 4, 4, 2), rtol=1e-5),
        Sample(np.stack([_lowrank(g, 3, 5, 1), g.f(3, 5)]), rtol=1e-5),
        Sample((lambda x: x @ x.T)(g.f(4, 2)), hermitian=True, rtol=1e-5),
        Sample(np.diag([1.0, 1e-3, 1e-9]), atol=1e-2),
        Sample(np.diag([1.0, 1e-3, 1e-9]), rtol=1e-6),
    ], differentiable=False),
    OpInfo("linalg_tensorinv", V(fn="linalg.tensorinv"), lambda a, ind=2: np.linalg.tensorinv(a, ind), lambda g: [
        Sample(_wellcond(g, 4, 4).reshape(4, 2, 2), ind=1),
        Sample(_wellcond(g, 6, 6).reshape(2, 3, 6)),
    ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_tensorsolve", V(fn="linalg.tensorsolve"),
           lambda a, b, dims=None: np.linalg.tensorsolve(a, b, dims), lambda g: [
               Sample(_wellcond(g, 6, 6).reshape(2, 3, 6), g.f(2, 3)),
               Sample(_wellcond(g, 6, 6).reshape(6, 2, 3), g.f(6), dims=(1,)),
           ], torch_tol32=_LINALG_TOL32),
    OpInfo("linalg_diagonal", V(fn="linalg.diagonal"),
           lambda a, offset=0, dim1=-2, dim2=-1: np.diagonal(a, offset, dim1, dim2).copy(), lambda g: [
               Sample(g.f(3, 4)),
               Sample(g.f(2, 3, 4), offset=1),
               Sample(g.f(2, 3, 4), offset=-1, dim1=0, dim2=2),
           ]),
    OpInfo("linalg_vander", V(fn="linalg.vander"), _ref_vander, lambda g: [
        Sample(g.f(4)),
        Sample(g.f(2, 3), N=5),
        Sample(g.f(3), N=2),
    ]),
    OpInfo("linalg_householder_product", V(fn="linalg.householder_product"), _np_householder, lambda g: [
        Sample(g.f(4, 3), g.f(3)),
        Sample(g.f(3, 3), g.f(2)),
        Sample(g.f(2, 5, 2), g.f(2, 2)),
    ], torch_tol32=_LINALG_TOL32),
]
# activations of nn.functional (src/ops/activation.rs, python/ferrograd/_activations.py)
# ---------------------------------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _ref_elu(x, alpha=1.0, inplace=False):
    return np.where(x > 0, x, alpha * np.expm1(x))


def _ref_selu(x, inplace=False):
    return _SELU_SCALE * _ref_elu(x, _SELU_ALPHA)


def _ref_celu(x, alpha=1.0, inplace=False):
    return np.where(x > 0, x, alpha * np.expm1(x / alpha))


def _ref_softplus(x, beta=1, threshold=20):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _ref_hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    return np.clip(x, min_val, max_val)


def _ref_mish(x, inplace=False):
    return x * np.tanh(np.log1p(np.exp(x)))


def _ref_hardshrink(x, lambd=0.5):
    return np.where(np.abs(x) <= lambd, 0.0, x)


def _ref_softshrink(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0))


def _ref_threshold(x, threshold, value, inplace=False):
    return np.where(x <= threshold, value, x)


def _ref_prelu(x, w):
    if x.ndim == 0:
        w = w.reshape(())
    elif x.ndim > 1:
        w = w.reshape([1, w.size] + [1] * (x.ndim - 2))
    return np.where(x > 0, x, w * x)


def _ref_glu(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


def _ref_rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return np.where(x > 0, x, x * (lower + upper) / 2)


def _act_samples(make, *extra, kinks=()):
    """Elementwise activation samples: ``unary_samples(make)``, ``extra(g)`` (hyper-parameters),
    and, without gradcheck (the gradient there is a convention: PyTorch's), the kinks."""

    def samples(g):
        out = unary_samples(make)(g)
        for e in extra:
            out += e(g)
        if kinks:
            out.append(Sample(np.array(sorted(kinks) + [-1.5, 2.5]), gradcheck=False))
        return out

    return samples


def _away(*points, lo=-3.0, hi=3.0):
    return lambda g, *s: g.f(*s, lo=lo, hi=hi, avoid=points, margin=0.1)


def _act_row(name, ref, samples, aliases=(), **kw):
    return OpInfo("nn.functional." + name, V(fn=("nn.functional." + name,) + tuple(aliases)), ref, samples, **kw)


_ACT_ROWS = [
    _act_row("elu", _ref_elu, _act_samples(
        _away(0.0), lambda g: [Sample(g.f(3, 4, avoid=(0.0,)), alpha=0.5), Sample(g.f(3, 4, avoid=(0.0,)), 2.0)],
        kinks=(0.0,))),
    _act_row("selu", _ref_selu, _act_samples(_away(0.0), kinks=(0.0,)), aliases=("selu",)),
    _act_row("celu", _ref_celu, _act_samples(
        _away(0.0), lambda g: [Sample(g.f(3, 4, avoid=(0.0,)), alpha=2.0), Sample(g.f(3, 4, avoid=(0.0,)), 0.5)],
        kinks=(0.0,)), aliases=("celu",)),
    _act_row("softplus", _ref_softplus, _act_samples(
        lambda g, *s: g.f(*s, lo=-4, hi=4),
        lambda g: [Sample(g.f(3, 4, lo=-4, hi=4, avoid=(0.5,)), beta=2, threshold=1),
                   Sample(g.f(3, 4, lo=-4, hi=4, avoid=(-1.0,)), beta=-0.5, threshold=0.5),
                   Sample(g.f(3, 4, lo=15, hi=25, avoid=(20.0,)))],
        kinks=(0.5, 20.0, 30.0))),
    _act_row("hardtanh", _ref_hardtanh, _act_samples(
        _away(-1.0, 1.0),
        lambda g: [Sample(g.f(3, 4, avoid=(-0.5, 1.5)), min_val=-0.5, max_val=1.5),
                   Sample(g.f(3, 4, avoid=(0.0, 2.0)), 0.0, 2.0)],
        kinks=(-1.0, 1.0))),
    _act_row("relu6", lambda x, inplace=False: np.clip(x, 0, 6), _act_samples(
        _away(0.0, 6.0, lo=-2.0, hi=8.0), kinks=(0.0, 6.0))),
    _act_row("hardswish", lambda x, inplace=False: x * np.clip(x + 3, 0, 6) / 6, _act_samples(
        _away(-3.0, 3.0, lo=-5.0, hi=5.0), kinks=(-3.0, 3.0))),
    _act_row("hardsigmoid", lambda x, inplace=False: np.clip(x + 3, 0, 6) / 6, _act_samples(
        _away(-3.0, 3.0, lo=-5.0, hi=5.0), kinks=(-3.0, 3.0))),
    _act_row("mish", _ref_mish, _act_samples(lambda g, *s: g.f(*s, lo=-5, hi=5))),
    _act_row("softsign", lambda x: x / (1 + np.abs(x)), _act_samples(_away(0.0), kinks=(0.0,))),
    _act_row("logsigmoid", lambda x: -np.logaddexp(0, -x), _act_samples(
        lambda g, *s: g.f(*s, lo=-6, hi=6),
        lambda g: [Sample(np.array([-40.0, -30.0, 30.0, 40.0]))])),
    _act_row("hardshrink", _ref_hardshrink, _act_samples(
        _away(-0.5, 0.5), lambda g: [Sample(g.f(3, 4, avoid=(-1.0, 1.0)), lambd=1.0)], kinks=(-0.5, 0.5)),
        aliases=("hardshrink",)),
    _act_row("softshrink", _ref_softshrink, _act_samples(
        _away(-0.5, 0.5), lambda g: [Sample(g.f(3, 4, avoid=(-1.0, 1.0)), lambd=1.0),
                                     Sample(g.f(3, 4, avoid=(0.0,)), lambd=0.0)],
        kinks=(-0.5, 0.5))),
    _act_row("tanhshrink", lambda x: x - np.tanh(x), _act_samples(None)),
    _act_row("threshold", _ref_threshold, lambda g: [
        Sample(g.f(3, 4, avoid=(0.3,)), 0.3, -2.0),
        Sample(g.f(), 0.3, -2.0),
        Sample(g.f(2, 3, 4, avoid=(0.0,)), 0.0, 0.0),
        Sample(g.f(4, 3, avoid=(0.5,)), 0.5, 1.0, views={0: "T"}),
        Sample(g.f(3, 4, avoid=(-1.0,)), threshold=-1.0, value=5.0),
        Sample(np.array([-1.0, 0.25, 0.25, 2.0]), 0.25, -2.0, gradcheck=False),  # exact in float32
    ], aliases=("threshold",)),
    _act_row("rrelu", _ref_rrelu, _act_samples(
        _away(0.0), lambda g: [Sample(g.f(3, 4, avoid=(0.0,)), lower=0.1, upper=0.5)], kinks=(0.0,)),
        aliases=("rrelu",)),
    _act_row("prelu", _ref_prelu, lambda g: [
        Sample(g.nz(2, 3, 4), g.f(3, lo=0.0, hi=0.5)),
        Sample(g.nz(3, 4), g.f(4, lo=0.0, hi=0.5)),
        Sample(g.nz(2, 3, 2, 2), g.f(1, lo=0.0, hi=0.5)),
        Sample(g.nz(5), g.f(1, lo=0.0, hi=0.5)),
        Sample(g.nz(), g.f(1, lo=0.0, hi=0.5)),
        Sample(g.nz(4, 3), g.f(3, lo=0.0, hi=0.5), views={0: "T"}),
        Sample(np.array([[-1.0, 0.0], [0.0, 2.0]]), np.array([0.25, -0.5]), gradcheck=False),
    ], aliases=("prelu",)),
    _act_row("glu", _ref_glu, lambda g: [
        Sample(g.f(3, 4)),
        Sample(g.f(4, 3), dim=0),
        Sample(g.f(2, 4, 3), dim=1),
        Sample(g.f(2, 3, 6), -1),
        Sample(g.f(4, 6), views={0: "T"}),
        Sample(g.f(6)),
    ]),
]
OP_DB += _ACT_ROWS


def _act_inplace_row(name, **kw):
    """``F.<name>(x, inplace=True)`` on a copy of the input (gradients flow back through the
    copy), with the out-of-place row's reference and samples."""
    base = next(r for r in OP_DB if r.name == "nn.functional." + name)

    def call(lib, x, *args, **kwargs):
        y = x.clone(memory_format=lib.contiguous_format)
        return getattr(lib.nn.functional, name)(y, *args, inplace=True, **kwargs)

    return OpInfo(f"nn.functional.{name}(inplace)", {f"fn.nn.functional.{name}(inplace)": call}, base.ref,
                  base.samples, tol64=base.tol64, tol32=base.tol32, torch_tol32=base.torch_tol32)


OP_DB += [_act_inplace_row(n) for n in ("elu", "selu", "celu", "hardtanh", "relu6", "hardswish", "hardsigmoid",
                                        "mish", "threshold", "rrelu")]


# --- stacking, splitting, rotating, *_scatter (python/ferrograd/_layout_functions.py)


def _seq(name):
    """Variant calling ``lib.<name>`` with the inputs as one sequence."""
    return lambda lib, *ts, **kw: getattr(lib, name)(ts, **kw)


def _ref_broadcast_to(x, size):
    lead = len(size) - x.ndim
    return np.broadcast_to(x, tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)))


def _ref_cartesian_prod(*arrs):
    if len(arrs) == 1:
        return arrs[0]
    return np.stack([g.ravel() for g in np.meshgrid(*arrs, indexing="ij")], 1)


def _ref_combinations(x, r=2, with_replacement=False):
    import itertools

    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return np.array(list(pick(x, r)), dtype=x.dtype).reshape(-1, r)


def _ref_block_diag(*arrs):
    blocks = [a.reshape(1, -1) if a.ndim < 2 else a for a in arrs]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _ref_unsafe_split(x, split_size, dim=0):
    return tuple(np.split(x, np.arange(split_size, x.shape[dim], split_size), axis=dim))


def _ref_split_with_sizes(x, split_sizes, dim=0):
    return tuple(np.split(x, np.cumsum(split_sizes)[:-1], axis=dim))


def _ref_select_scatter(x, src, dim, index):
    out = x.copy()
    np.moveaxis(out, dim, 0)[index] = src
    return out


def _ref_slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    np.moveaxis(out, dim, 0)[start:end:step] = np.moveaxis(src, dim, 0)
    return out


def _ref_diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    out = x.copy()
    pos = np.arange(src.shape[-1])
    np.moveaxis(out, (dim1, dim2), (0, 1))[pos + max(-offset, 0), pos + max(offset, 0)] = np.moveaxis(src, -1, 0)
    return out


def _ref_index_copy(x, dim, index, source):
    out = x.copy()
    np.moveaxis(out, dim, 0)[index.reshape(-1)] = np.moveaxis(source, dim, 0)
    return out


def _ref_index_reduce(x, dim, index, source, reduce, include_self=True):
    idx = np.broadcast_to(index.reshape([-1 if i == dim else 1 for i in range(x.ndim)]), source.shape)
    return _ref_scatter_reduce(x, dim, idx, source, reduce, include_self)


def _ref_put(x, index, source, accumulate=False):
    return _ref_index_put(x.reshape(-1), [index.reshape(-1)], source.reshape(-1), accumulate).reshape(x.shape)


def _ref_unfold(x, dimension, size, step):
    if x.ndim == 0:
        return x.reshape(1)
    d = dimension % x.ndim
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return np.moveaxis(np.moveaxis(windows, d, 0)[::step], 0, d)


def _ref_fill_diagonal(x, value, wrap=False):
    out = x.copy()
    np.fill_diagonal(out, value, wrap=wrap)
    return out


def _ref_sum_to_size(x, *size):
    lead = x.ndim - len(size)
    out = x.sum(axis=tuple(range(lead)))
    return out.sum(axis=tuple(i for i, s in enumerate(size) if s == 1), keepdims=True)


def _ref_slice_copy(x, dim=0, start=None, end=None, step=1):
    return np.moveaxis(np.moveaxis(x, dim, 0)[start:end:step], 0, dim)


def _ref_squeeze(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else dim
    return np.squeeze(x, axis=tuple(d for d in dims if x.shape[d] == 1))


def _ref_repeat_interleave(x, repeats, dim=None, output_size=None):
    return np.repeat(x, repeats, axis=dim)


def _ref_diff(x, n=1, dim=-1, prepend=None, append=None):
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(x, n, axis=dim, **kw)


def _layout_samples_2d(g):
    return [Sample(g.f(3, 4)), Sample(g.f(2, 3, 4)), Sample(g.f(4, 3), views={0: "T"})]


OP_DB += [
    OpInfo("broadcast_to", V(fn="broadcast_to", method="broadcast_to"), _ref_broadcast_to, lambda g: [
        Sample(g.f(3, 1), (3, 4)),
        Sample(g.f(4), (2, 3, 4)),
        Sample(g.f(), (2, 2)),
        Sample(g.f(1, 3), (2, -1, 3)),
        Sample(g.f(1, 3), (2, 3), views={0: "T"}),
    ]),
    OpInfo("meshgrid", {"fn.meshgrid": _fn("meshgrid"), "fn.meshgrid(list)": _seq("meshgrid")},
           lambda *arrs, indexing: tuple(np.meshgrid(*arrs, indexing=indexing)), lambda g: [
               Sample(g.f(3), g.f(2), indexing="ij"),
               Sample(g.f(3), g.f(2), indexing="xy"),
               Sample(g.f(3), g.f(), g.f(4), indexing="xy"),
               Sample(g.f(2), g.f(3), g.f(4), indexing="ij"),
               Sample(g.f(3), views={0: "slice"}, indexing="ij"),
           ]),
    OpInfo("cartesian_prod", V(fn="cartesian_prod"), _ref_cartesian_prod, lambda g: [
        Sample(g.f(3), g.f(2)),
        Sample(g.f(2), g.f(3), g.f(2)),
        Sample(g.f(4)),
        Sample(g.f(3), g.f(2), views={0: "slice"}),
    ]),
    OpInfo("combinations", V(fn="combinations"), _ref_combinations, lambda g: [
        Sample(g.f(4)),
        Sample(g.f(4), r=3),
        Sample(g.f(3), r=2, with_replacement=True),
        Sample(g.f(3), r=1),
        Sample(g.f(2), r=3),  # more than there are: no rows
        Sample(g.f(4), r=2, views={0: "slice"}),
    ]),
    OpInfo("hstack", {"fn.hstack": _seq("hstack")}, lambda *arrs: np.hstack(arrs), lambda g: [
        Sample(g.f(3), g.f(2)),
        Sample(g.f(2, 3), g.f(2, 1)),
        Sample(g.f(), g.f()),
        Sample(g.f(2, 3, 2), g.f(2, 1, 2)),
        Sample(g.f(2, 3), g.f(2, 2), views={0: "T"}),
    ]),
    OpInfo("vstack", {"fn.vstack": _seq("vstack"), "fn.row_stack": _seq("row_stack")},
           lambda *arrs: np.vstack(arrs), lambda g: [
               Sample(g.f(3), g.f(3)),
               Sample(g.f(2, 3), g.f(3)),
               Sample(g.f(), g.f()),
               Sample(g.f(2, 3), g.f(1, 3), views={0: "T"}),
           ]),
    OpInfo("dstack", {"fn.dstack": _seq("dstack")}, lambda *arrs: np.dstack(arrs), lambda g: [
        Sample(g.f(3), g.f(3)),
        Sample(g.f(2, 3), g.f(2, 3)),
        Sample(g.f(2, 3, 2), g.f(2, 3)),
        Sample(g.f(), g.f()),
        Sample(g.f(2, 3), g.f(2, 3), views={0: "T"}),
    ]),
    OpInfo("column_stack", {"fn.column_stack": _seq("column_stack")}, lambda *arrs: np.column_stack(arrs),
           lambda g: [
               Sample(g.f(3), g.f(3)),
               Sample(g.f(3), g.f(3, 2)),
               Sample(g.f(), g.f()),
               Sample(g.f(3, 2), g.f(3), views={0: "T"}),
           ]),
    OpInfo("atleast_1d", V(fn="atleast_1d"), np.atleast_1d, lambda g: [
        Sample(g.f()), Sample(g.f(3)), Sample(g.f(), g.f(2, 3)), Sample(g.f(3, 2), views={0: "T"}),
    ]),
    OpInfo("atleast_2d", V(fn="atleast_2d"), np.atleast_2d, lambda g: [
        Sample(g.f()), Sample(g.f(3)), Sample(g.f(3), g.f(2, 3, 2)), Sample(g.f(3, 2), views={0: "T"}),
    ]),
    OpInfo("atleast_3d", V(fn="atleast_3d"), np.atleast_3d, lambda g: [
        Sample(g.f()), Sample(g.f(3)), Sample(g.f(2, 3)), Sample(g.f(3), g.f(2, 3, 2)),
        Sample(g.f(3, 2), views={0: "T"}),
    ]),
    OpInfo("block_diag", V(fn="block_diag"), _ref_block_diag, lambda g: [
        Sample(g.f(2, 3), g.f(1, 2)),
        Sample(g.f(), g.f(3), g.f(2, 2)),
        Sample(g.f(0, 2), g.f(2, 1)),
        Sample(g.f(3, 2), g.f(2), views={0: "T"}),
    ]),
    OpInfo("tensor_split", V(fn="tensor_split", method="tensor_split"),
           lambda x, s, dim=0: tuple(np.array_split(x, s, axis=dim)), lambda g: [
               Sample(g.f(7, 2), 3),
               Sample(g.f(2, 5), 2, dim=1),
               Sample(g.f(6, 2), [1, 4]),
               Sample(g.f(2, 6), [4, 1, -1, 9], dim=-1),  # out of order, negative, past the end
               Sample(g.f(5, 2), np.array(2)),  # a 0-d tensor: sections
               Sample(g.f(5, 2), np.array([1, 3])),  # a 1-d tensor: indices
               Sample(g.f(4, 3), 2, views={0: "T"}),
           ]),
    OpInfo("hsplit", V(fn="hsplit", method="hsplit"), lambda x, s: tuple(np.hsplit(x, s)), lambda g: [
        Sample(g.f(2, 6), 3), Sample(g.f(6), 2), Sample(g.f(2, 5), [1, 3]), Sample(g.f(3, 4), 2, views={0: "T"}),
    ]),
    OpInfo("vsplit", V(fn="vsplit", method="vsplit"), lambda x, s: tuple(np.vsplit(x, s)), lambda g: [
        Sample(g.f(6, 2), 3), Sample(g.f(5, 2), [1, 3]), Sample(g.f(4, 3), 2, views={0: "T"}),
    ]),
    OpInfo("dsplit", V(fn="dsplit", method="dsplit"), lambda x, s: tuple(np.dsplit(x, s)), lambda g: [
        Sample(g.f(2, 1, 4), 2), Sample(g.f(1, 2, 5), [2]), Sample(g.f(3, 2, 4), 2, views={0: "T"}),
    ]),
    OpInfo("split_with_sizes", V(fn=("split_with_sizes", "unsafe_split_with_sizes"),
                                 method=("split_with_sizes", "unsafe_split_with_sizes")),
           _ref_split_with_sizes, lambda g: [
               Sample(g.f(5, 2), [2, 3]),
               Sample(g.f(2, 6), [3, 0, 3], dim=-1),
               Sample(g.f(4, 3), [1, 2], dim=1, views={0: "T"}),
           ]),
    OpInfo("unsafe_chunk", V(fn="unsafe_chunk", method="unsafe_chunk"), _ref_chunk, lambda g: [
        Sample(g.f(5, 3), 3), Sample(g.f(3, 6), 2, dim=1), Sample(g.f(4, 3), 2, views={0: "T"}),
    ]),
    OpInfo("unsafe_split", V(fn="unsafe_split", method="unsafe_split"), _ref_unsafe_split, lambda g: [
        Sample(g.f(5, 3), 2), Sample(g.f(3, 6), 4, dim=1), Sample(g.f(4, 3), 2, views={0: "T"}),
    ]),
    OpInfo("ravel", V(fn="ravel", method="ravel"), np.ravel, lambda g: [
        Sample(g.f(3, 4)), Sample(g.f()), Sample(g.f(2, 3, 4)), Sample(g.f(4, 3), views={0: "T"}),
    ]),
    OpInfo("rot90", V(fn="rot90", method="rot90"),
           lambda x, k=1, dims=(0, 1): np.rot90(x, k, axes=tuple(dims)), lambda g: [
               Sample(g.f(3, 4)),
               Sample(g.f(3, 4), 2),
               Sample(g.f(3, 4), 3),
               Sample(g.f(3, 4), -1),
               Sample(g.f(3, 4), 4),
               Sample(g.f(2, 3, 4), 1, [2, 0]),
               Sample(g.f(2, 3, 4), 5, (-1, -2)),
               Sample(g.f(4, 3), 1, views={0: "T"}),
           ]),
    OpInfo("fliplr", V(fn="fliplr", method="fliplr"), np.fliplr, _layout_samples_2d),
    OpInfo("flipud", V(fn="flipud", method="flipud"), np.flipud,
           lambda g: _layout_samples_2d(g) + [Sample(g.f(5))]),
    OpInfo("repeat_interleave", V(fn="repeat_interleave", method="repeat_interleave"), _ref_repeat_interleave,
           lambda g: [
               Sample(g.f(2, 3), 2),
               Sample(g.f(2, 3), 3, dim=1),
               Sample(g.f(2, 3), 2, dim=-2, output_size=4),
               Sample(g.f(2, 3), 0, dim=1),
               Sample(g.f(), 3),
               Sample(g.f(2, 3), np.array([1, 0, 2]), dim=1),
               Sample(g.f(3, 2), np.array([2, 1, 3]), dim=0, output_size=6),
               Sample(g.f(2, 2), np.array([1, 0, 2, 1])),  # dim=None: of the flattened input
               Sample(g.f(2, 3), np.array([2]), dim=1),  # a one-element tensor works like an int
               Sample(g.f(3, 2), np.array([2, 1, 3]), dim=0, views={0: "T"}),
           ]),
    OpInfo("diff", V(fn="diff", method="diff"), _ref_diff, lambda g: [
        Sample(g.f(5)),
        Sample(g.f(3, 4), dim=0),
        Sample(g.f(3, 4), n=2),
        Sample(g.f(3, 4), n=0),
        Sample(g.f(3, 4), n=5),  # n >= size: empty
        Sample(g.f(2, 3), 1, 1, g.f(2, 2), g.f(2, 1)),  # prepend and append
        Sample(g.f(2, 3), 2, 0, None, g.f(1, 3)),
        Sample(g.f(4, 3), n=2, views={0: "T"}),
    ]),
    OpInfo("diagflat", V(fn="diagflat", method="diagflat"), lambda x, offset=0: np.diagflat(x, offset), lambda g: [
        Sample(g.f(3)), Sample(g.f(2, 2), 1), Sample(g.f(), -2), Sample(g.f(3, 2), -1, views={0: "T"}),
    ]),
    OpInfo("select_scatter", V(fn="select_scatter", method="select_scatter"), _ref_select_scatter, lambda g: [
        Sample(g.f(3, 4), g.f(4), 0, 1),
        Sample(g.f(3, 4), g.f(3), 1, -1),
        Sample(g.f(2, 3, 4), g.f(2, 4), -2, 0),
        Sample(g.f(4), g.f(), 0, 2),
        Sample(g.f(3, 4), g.f(4), 0, 2, views={0: "T"}),
    ]),
    OpInfo("slice_scatter", V(fn="slice_scatter", method="slice_scatter"), _ref_slice_scatter, lambda g: [
        Sample(g.f(5, 3), g.f(2, 3), 0, 1, 3),
        Sample(g.f(3, 5), g.f(3, 2), 1, 0, None, 3),
        Sample(g.f(3, 5), g.f(3, 2), -1, -4, 4, 2),
        Sample(g.f(6), g.f(6)),
        Sample(g.f(3, 4), g.f(3, 0), 1, 3, 1),
        Sample(g.f(5, 3), g.f(5, 2), 1, 1, None, 1, views={0: "T"}),
    ]),
    OpInfo("diagonal_scatter", V(fn="diagonal_scatter", method="diagonal_scatter"), _ref_diagonal_scatter,
           lambda g: [
               Sample(g.f(3, 3), g.f(3)),
               Sample(g.f(3, 4), g.f(3), 1),
               Sample(g.f(3, 4), g.f(2), -1),
               Sample(g.f(2, 3, 4), g.f(3, 2), 0, 0, 2),
               Sample(g.f(2, 3, 4), g.f(2, 2), 1, -1, 1),
               Sample(g.f(4, 3), g.f(2), 1, views={0: "T"}),
           ]),
    OpInfo("index_copy", V(fn="index_copy", method="index_copy"), _ref_index_copy, lambda g: [
        Sample(g.f(3, 4), 1, np.array([2, 0]), g.f(3, 2)),
        Sample(g.f(3, 4), 0, np.array([1]), g.f(1, 4)),
        Sample(g.f(2, 3, 4), -1, np.array([3, 0, 1]), g.f(2, 3, 3)),
        Sample(g.f(5), 0, np.array(3), g.f(1)),
        Sample(g.f(4, 3), 0, np.array([1, 2]), g.f(2, 3), views={0: "T"}),
    ]),
    OpInfo("index_copy_", {"method.index_copy_": lambda lib, x, *a: x.clone().index_copy_(*a)},
           _ref_index_copy, lambda g: [
               Sample(g.f(3, 4), 1, np.array([2, 0]), g.f(3, 2)),
               Sample(g.f(4, 3), 0, np.array([1, 2]), g.f(2, 3), views={0: "T"}),
           ]),
    OpInfo("index_reduce", V(fn="index_reduce", method="index_reduce"), _ref_index_reduce, lambda g: [
        Sample(g.distinct(3, 4), 1, np.array([2, 0, 2]), g.distinct(3, 3), "prod"),
        Sample(g.distinct(3, 4), 0, np.array([1, 1]), g.distinct(2, 4), "mean"),
        Sample(g.distinct(3, 4), 0, np.array([1, 1, 2]), g.distinct(3, 4), "mean", include_self=False),
        Sample(g.distinct(3, 4), 1, np.array([0, 3, 0]), g.distinct(3, 3), "amax"),
        Sample(g.distinct(3, 4), 1, np.array([0, 3, 0]), g.distinct(3, 3), "amin", include_self=False),
        Sample(g.distinct(4, 3), 0, np.array([1, 2]), g.distinct(2, 3), "prod", views={0: "T"}),
    ]),
    OpInfo("index_reduce_", {"method.index_reduce_": lambda lib, x, *a, **kw: x.clone().index_reduce_(*a, **kw)},
           _ref_index_reduce, lambda g: [
               Sample(g.distinct(3, 4), 1, np.array([2, 0, 2]), g.distinct(3, 3), "amax"),
               Sample(g.distinct(4, 3), 0, np.array([1, 2]), g.distinct(2, 3), "mean", views={0: "T"}),
           ]),
    OpInfo("put", V(fn="put", method="put"), _ref_put, lambda g: [
        Sample(g.f(3, 4), np.array([0, 5, -1]), g.f(3)),
        Sample(g.f(3, 4), np.array([[1, 1], [7, 1]]), g.f(4), accumulate=True),
        Sample(g.f(5), np.array([4]), g.f(1, 1)),
        Sample(g.f(4, 3), np.array([2, 7]), g.f(2), views={0: "T"}),
    ]),
    OpInfo("put_", {"method.put_": lambda lib, x, *a, **kw: x.clone().put_(*a, **kw)}, _ref_put, lambda g: [
        Sample(g.f(3, 4), np.array([0, 5, -1]), g.f(3)),
        Sample(g.f(4, 3), np.array([2, 2]), g.f(2), views={0: "T"}, accumulate=True),
    ]),
    OpInfo("unfold", {"method.unfold": _method("unfold"), "fn.unfold_copy": _fn("unfold_copy")}, _ref_unfold,
           lambda g: [
               Sample(g.f(3, 5), 1, 2, 1),
               Sample(g.f(5, 3), 0, 3, 2),
               Sample(g.f(2, 3, 4), -1, 2, 2),
               Sample(g.f(2, 3, 4), 1, 3, 1),
               Sample(g.f(3, 4), 1, 0, 1),  # empty windows
               Sample(g.f(), 0, 1, 1),
               Sample(g.f(4, 3), 0, 2, 1, views={0: "T"}),
           ]),
    OpInfo("fill_diagonal_",
           {"method.fill_diagonal_": lambda lib, x, *a, **kw: x.clone().fill_diagonal_(*a, **kw)}, _ref_fill_diagonal,
           lambda g: [
               Sample(g.f(3, 4), 2.5),
               Sample(g.f(5, 2), -1.0, wrap=True),
               Sample(g.f(5, 2), -1.0),
               Sample(g.f(3, 3, 3), 0.5),
               Sample(g.f(4, 3), 1.5, views={0: "T"}),
           ]),
    OpInfo("sum_to_size", {"method.sum_to_size": _method("sum_to_size"),
                           "method.sum_to_size(seq)": lambda lib, x, *size: x.sum_to_size(size)},
           _ref_sum_to_size, lambda g: [
               Sample(g.f(3, 4), 4),
               Sample(g.f(3, 4), 3, 1),
               Sample(g.f(2, 3, 4), 1, 4),
               Sample(g.f(3, 4), 3, 4),
               Sample(g.f(4, 3), 1, 1, views={0: "T"}),
           ]),
    OpInfo("fill", V(fn="fill"), lambda x, value: np.full_like(x, value), lambda g: [
        Sample(g.f(3, 4), 2.5),
        Sample(g.f(3, 4), g.f()),  # a 0-d tensor value gets the gradient
        Sample(g.f(4, 3), g.f(), views={0: "T"}),
    ]),
    OpInfo("vander", V(fn="vander"), lambda x, N=None, increasing=False: np.vander(x, N, increasing),
           lambda g: [
        Sample(g.f(3)),
        Sample(g.f(4), 2),
        Sample(g.f(3), 5, True),
        # (N = 0 and N = 1 do not depend on x: tests/python/test_layout_functions.py)
        Sample(np.array([1.5, 0.0, -2.0]), 4),
        Sample(g.f(4), 3, views={0: "slice"}),
        # PyTorch's backward of vander fails ("modified by an inplace operation"): the gradients are
        # checked in tests/python/test_layout_functions.py (gradcheck, gradgradcheck)
    ], differentiable=False),
    OpInfo("narrow_copy", V(fn="narrow_copy", method="narrow_copy"),
           lambda x, dim, start, length: np.moveaxis(np.moveaxis(x, dim, 0)[start % x.shape[dim]:][:length], 0, dim),
           lambda g: [
               # (a negative start: in tests/python/test_layout_functions.py; PyTorch's backward fails on it)
               Sample(g.f(3, 4), 1, 1, 2), Sample(g.f(3, 4), 0, 1, 2), Sample(g.f(4, 3), 0, 1, 2, views={0: "T"}),
           ]),
    OpInfo("alias_copy", V(fn="alias_copy"), lambda x: x, lambda g: [
        Sample(g.f(3, 4)), Sample(g.f(4, 3), views={0: "T"}),
    ]),
    OpInfo("detach_copy", V(fn="detach_copy"), lambda x: x, lambda g: [
        Sample(g.f(3, 4)), Sample(g.f(4, 3), views={0: "T"}),
    ], differentiable=False),
    OpInfo("diagonal_copy", V(fn="diagonal_copy"),
           lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2), lambda g: [
               Sample(g.f(3, 4)), Sample(g.f(2, 3, 4), 1, 2, 0), Sample(g.f(4, 3), -1, views={0: "T"}),
           ]),
    OpInfo("expand_copy", V(fn="expand_copy"), _ref_broadcast_to, lambda g: [
        Sample(g.f(3, 1), (3, 4)), Sample(g.f(1, 3), (2, 3, -1), views={0: "T"}),
    ]),
    OpInfo("permute_copy", V(fn="permute_copy"), lambda x, dims: np.transpose(x, dims), lambda g: [
        Sample(g.f(2, 3, 4), (2, 0, 1)), Sample(g.f(4, 3), (1, 0), views={0: "T"}),
    ]),
    OpInfo("select_copy", V(fn="select_copy"), lambda x, dim, index: np.take(x, index, axis=dim), lambda g: [
        Sample(g.f(3, 4), 1, -1), Sample(g.f(4, 3), 0, 2, views={0: "T"}),
    ]),
    OpInfo("slice_copy", V(fn="slice_copy"), _ref_slice_copy, lambda g: [
        Sample(g.f(3, 6), 1, 1, None, 2), Sample(g.f(5, 3)), Sample(g.f(5, 3), 0, -3, 10, 1, views={0: "T"}),
    ]),
    OpInfo("split_copy", V(fn="split_copy"), _ref_split, lambda g: [
        Sample(g.f(5, 3), 2), Sample(g.f(4, 3), 2, 1, views={0: "T"}),
    ]),
    OpInfo("split_with_sizes_copy", V(fn="split_with_sizes_copy"), _ref_split_with_sizes, lambda g: [
        Sample(g.f(5, 3), [2, 3]), Sample(g.f(4, 3), [1, 2], 1, views={0: "T"}),
    ]),
    OpInfo("squeeze_copy", V(fn="squeeze_copy"), _ref_squeeze, lambda g: [
        Sample(g.f(1, 3, 1)), Sample(g.f(1, 3, 1), 0), Sample(g.f(1, 3, 1), (0, 2)),
        Sample(g.f(1, 3), views={0: "T"}),
    ]),
    OpInfo("t_copy", V(fn="t_copy"), np.transpose, lambda g: [
        Sample(g.f(3, 4)), Sample(g.f(3)), Sample(g.f(4, 3), views={0: "T"}),
    ]),
    OpInfo("transpose_copy", V(fn="transpose_copy"), lambda x, d0, d1: np.swapaxes(x, d0, d1), lambda g: [
        Sample(g.f(2, 3, 4), 0, 2), Sample(g.f(4, 3), 0, 1, views={0: "T"}),
    ]),
    OpInfo("unbind_copy", V(fn="unbind_copy"), lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)), lambda g: [
        Sample(g.f(3, 4)), Sample(g.f(4, 3), 1, views={0: "T"}),
    ]),
    OpInfo("unsqueeze_copy", V(fn="unsqueeze_copy"), lambda x, dim: np.expand_dims(x, dim), lambda g: [
        Sample(g.f(3, 4), 1), Sample(g.f(4, 3), -1, views={0: "T"}),
    ]),
    OpInfo("view_copy", V(fn="view_copy"), lambda x, size: x.reshape(size), lambda g: [
        Sample(g.f(3, 4), (2, 6)), Sample(g.f(3, 4), (-1,)),
    ]),
]

# --- elementwise functions beyond the core table (python/ferrograd/_pointwise_functions.py)

_PW_INF = np.inf


def _pw_special_pairs():
    """Ties, signed zeros, infinities and NaN as (input, other) columns: the gradients there are
    compared with PyTorch's (not gradcheck-ed)."""
    a = np.array([0.0, 1.5, -0.0, 0.0, _PW_INF, _PW_INF, -_PW_INF, -_PW_INF, _PW_INF, 2.0, np.nan, 1.0, np.nan, -3.0])
    b = np.array([0.0, 1.5, 0.0, -0.0, _PW_INF, 1.0, -_PW_INF, 1.0, -_PW_INF, -_PW_INF, 1.0, np.nan, np.nan, -3.0])
    return [Sample(a, b, gradcheck=False), Sample(b, a, gradcheck=False)]


def _pw_binary(name, ref, make_a=None, make_b=None, scalars=(), special=True, **kw):
    base = binary_samples(make_a, make_b, scalars=scalars)
    samples = _with(base, lambda g: _pw_special_pairs()) if special else base
    return OpInfo(name, V(fn=name, method=name), ref, samples, **kw)


def _pw_away(*points):
    return lambda g, *s: g.f(*s, avoid=points, margin=0.2)


def _pw_nan_to_num_samples(g):
    x = np.array([np.nan, _PW_INF, -_PW_INF, 1.5, -0.0, -2.0])
    return unary_samples()(g) + [
        Sample(x, nan=0.5, posinf=3.0, neginf=-4.0, gradcheck=False),
        Sample(x, 1.0, 1e30, -1e30, gradcheck=False),
        Sample(np.array([np.nan, 1.5, -2.0]), gradcheck=False),
        Sample(g.f(4, 3), views={0: "T"}, nan=2.0),
    ]


def _pw_shifted(g, *s):
    """Pairwise distinct values, 0.1 away from those of ``g.distinct``: no ties."""
    return np.asarray(g.distinct(*s) + 0.1)


def _pw_int_exponents(g, *s):
    """Integer exponents >= 0: for negative ones PyTorch's gradient of ``input`` is 0 (it computes
    ``2**other`` in the integer dtype); ferrograd's is the true one (tested in
    tests/python/test_pointwise_functions.py)."""
    return g.idx(s, 4)


OP_DB += [
    _pw_binary("logaddexp", np.logaddexp),
    _pw_binary("logaddexp2", np.logaddexp2),
    # ties are on the special samples (no gradcheck there: fmax is not differentiable at ties)
    _pw_binary("fmax", np.fmax, make_a=lambda g, *s: g.distinct(*s), make_b=_pw_shifted),
    _pw_binary("fmin", np.fmin, make_a=lambda g, *s: g.distinct(*s), make_b=_pw_shifted),
    _pw_binary("copysign", np.copysign, make_a=_pw_away(0.0), make_b=_pw_away(0.0), scalars=(2.5, -0.0, -3)),
    _pw_binary("nextafter", np.nextafter, make_b=lambda g, *s: g.f(*s, lo=3.0, hi=5.0), special=False,
               tol64=(1e-12, 1e-300)),
    # (towards an infinity the float32 and float64 results differ: in tests/python/test_pointwise_functions.py)
    OpInfo("nextafter(special)", V(fn="nextafter", method="nextafter"), np.nextafter, lambda g: [
        Sample(np.array([0.0, 1.5, -0.0, 0.0, np.nan, 1.0, np.nan, 2.0]),
               np.array([0.0, 1.5, 0.0, -0.0, 1.0, np.nan, np.nan, -3.0]), gradcheck=False)], tol64=(1e-12, 1e-300)),
    OpInfo("ldexp", V(fn="ldexp", method="ldexp"), lambda x, e: x * np.exp2(e), lambda g: [
        Sample(g.f(3, 4), _pw_int_exponents(g, 3, 4)),
        Sample(g.f(3, 1), _pw_int_exponents(g, 1, 4)),
        Sample(g.f(4, 3), _pw_int_exponents(g, 4, 3), views={0: "T"}),
        Sample(g.f(3, 4), g.f(4)),
        Sample(g.f(2, 3, 4), g.f(3, 1), views={0: "slice"}),
    ]),
    OpInfo("nan_to_num", V(fn="nan_to_num", method="nan_to_num"),
           lambda x, nan=0.0, posinf=None, neginf=None: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
           _pw_nan_to_num_samples),
    _unary("deg2rad", np.deg2rad),
    _unary("rad2deg", np.rad2deg),
    OpInfo("frexp.mantissa", {"fn.frexp": lambda lib, x: lib.frexp(x).mantissa,
                              "method.frexp": lambda lib, x: x.frexp()[0]},
           lambda x: np.frexp(x)[0], _with(unary_samples(_pw_away(0.0)), lambda g: [
               Sample(np.array([0.0, -0.0, 8.0, 0.3, -5.0, 1e-30, _PW_INF, np.nan]), gradcheck=False)])),
    OpInfo("clamp_min", V(fn="clamp_min", method="clamp_min"), np.maximum, lambda g: [
        Sample(g.f(3, 4, avoid=(0.5,)), 0.5),
        Sample(g.f(4, 3, avoid=(-0.5,)), -0.5, views={0: "T"}),
        Sample(g.distinct(3, 4), _pw_shifted(g, 3, 4)),
        Sample(g.distinct(3, 1), _pw_shifted(g, 1, 4)),
        Sample(np.array([1.0, 2.0, -1.0]), np.array([1.0, 0.0, 3.0]), gradcheck=False),  # a tie
    ]),
    OpInfo("clamp_max", V(fn="clamp_max", method="clamp_max"), np.minimum, lambda g: [
        Sample(g.f(3, 4, avoid=(0.5,)), 0.5),
        Sample(g.f(4, 3, avoid=(-0.5,)), -0.5, views={0: "T"}),
        Sample(g.distinct(3, 4), _pw_shifted(g, 3, 4)),
        Sample(g.distinct(3, 1), _pw_shifted(g, 1, 4)),
        Sample(np.array([1.0, 2.0, -1.0]), np.array([1.0, 0.0, 3.0]), gradcheck=False),
    ]),
    OpInfo("rsub", V(fn="rsub"), lambda a, b, alpha=1: b - alpha * a, lambda g: [
        Sample(g.f(3, 4), g.f(3, 4)),
        Sample(g.f(4, 3), g.f(1, 3), views={0: "T"}),
        Sample(g.f(3, 4), 2.5),
        Sample(g.f(3, 4), g.f(4), alpha=2),
        Sample(g.f(3, 4), 2, alpha=0.5),
    ]),
    OpInfo("positive", V(fn="positive", method="positive"), lambda x: x, unary_samples()),
    _unary("absolute", np.abs, _nz, extra=lambda g: [Sample(np.array([0.0, -0.0, 1.0, -2.0]), gradcheck=False)]),
]

# --- products and statistics (python/ferrograd/_product_functions.py)


def _pf_addmv(i, m, v, beta=1, alpha=1):
    return beta * i + alpha * (m @ v)


def _pf_addr(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * np.outer(a, b)


def _pf_baddbmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b)


def _pf_addbmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b).sum(0)


def _pf_dist(x, y, p=2):
    d = np.abs(x - y).reshape(-1)
    if p == 0:
        return np.array(float((d != 0).sum()))
    if p == np.inf:
        return d.max()
    return (d ** p).sum() ** (1.0 / p)


def _pf_cov(x, fweights=None, aweights=None, correction=1):
    return np.asarray(np.cov(x, ddof=correction, fweights=fweights, aweights=aweights))


def _pf_cov_call(method):
    """``cov(x, fweights=..., aweights=...)`` with the weights as sample inputs (so they are
    tensors: aweights differentiable, fweights int64)."""

    def call(lib, x, fweights=None, aweights=None, **kw):
        fn = x.cov if method else lib.cov
        return fn(fweights=fweights, aweights=aweights, **kw) if method else fn(x, fweights=fweights,
                                                                                 aweights=aweights, **kw)

    return call


def _pf_trapezoid(y, x=None, dx=None, dim=-1):
    if x is None:
        return np.trapezoid(y, dx=1.0 if dx is None else dx, axis=dim)
    if 1 < x.ndim < y.ndim:  # PyTorch lines the trailing dims up
        x = x.reshape((1,) * (y.ndim - x.ndim) + x.shape)
    return np.trapezoid(y, x, axis=dim)


def _pf_cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    n = y.shape[dim]
    mid = np.take(y, range(1, n), axis=dim) + np.take(y, range(n - 1), axis=dim)
    if x is None:
        step = 1.0 if dx is None else dx
    else:
        shape = [1] * y.ndim
        shape[dim] = n
        xs = x.reshape(shape) if x.ndim == 1 else x
        step = np.diff(xs, axis=dim)
    return np.cumsum(mid * step / 2.0, axis=dim)


def _pf_renorm(x, p, dim, maxnorm):
    axes = tuple(d for d in range(x.ndim) if d != dim % x.ndim)
    norm = (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)
    return x * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def _pf_histogram(x, bins=100, range=None, weight=None, density=False):  # noqa: A002
    hist, edges = np.histogram(x, bins, range=range, weights=weight, density=density)
    return hist.astype(np.float64), edges


def _pf_nuclear_norm(x, dim=(-2, -1), keepdim=False):
    return np.linalg.norm(x, "nuc", axis=tuple(dim), keepdims=keepdim)


def _pf_frobenius_norm(x, dim, keepdim=False):
    return np.sqrt((x * x).sum(axis=tuple(dim), keepdims=keepdim))


def _pf_chain_matmul(lib, *ms):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.chain_matmul(*ms)


def _pf_deprecated(name):
    def call(lib, *args, **kwargs):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(lib, name)(*args, **kwargs)

    return call


OP_DB += [
    OpInfo("addmv", V(fn="addmv", method="addmv"), _pf_addmv, lambda g: [
        Sample(g.f(3), g.f(3, 4), g.f(4)),
        Sample(g.f(3), g.f(3, 4), g.f(4), beta=0.5, alpha=2.0),
        Sample(g.f(1), g.f(3, 4), g.f(4), beta=-1.5),
        Sample(g.f(), g.f(2, 3), g.f(3), alpha=0.5),
        Sample(g.f(3), g.f(3, 4), g.f(4), beta=0),
        Sample(g.f(3), g.f(3, 4), g.f(4), views={1: "T"}),
    ]),
    OpInfo("addr", V(fn="addr", method="addr"), _pf_addr, lambda g: [
        Sample(g.f(3, 4), g.f(3), g.f(4)),
        Sample(g.f(3, 4), g.f(3), g.f(4), beta=2.0, alpha=-0.5),
        Sample(g.f(4), g.f(3), g.f(4), beta=0.5),
        Sample(g.f(), g.f(2), g.f(3)),
        Sample(g.f(3, 4), g.f(3), g.f(4), views={0: "T"}, beta=0),
    ]),
    OpInfo("baddbmm", V(fn="baddbmm", method="baddbmm"), _pf_baddbmm, lambda g: [
        Sample(g.f(2, 3, 4), g.f(2, 3, 5), g.f(2, 5, 4)),
        Sample(g.f(2, 3, 4), g.f(2, 3, 5), g.f(2, 5, 4), beta=0.5, alpha=2.0),
        Sample(g.f(4), g.f(2, 3, 2), g.f(2, 2, 4), beta=0),
        Sample(g.f(2, 3, 4), g.f(2, 3, 5), g.f(2, 5, 4), views={0: "T"}, alpha=-1.0),
    ]),
    OpInfo("addbmm", V(fn="addbmm", method="addbmm"), _pf_addbmm, lambda g: [
        Sample(g.f(3, 4), g.f(2, 3, 5), g.f(2, 5, 4)),
        Sample(g.f(3, 4), g.f(2, 3, 5), g.f(2, 5, 4), beta=0.5, alpha=2.0),
        Sample(g.f(1, 4), g.f(3, 2, 2), g.f(3, 2, 4), beta=0),
        Sample(g.f(3, 4), g.f(2, 3, 5), g.f(2, 5, 4), views={0: "T"}, beta=-1.0),
    ]),
    OpInfo("inner", V(fn="inner", method="inner"), np.inner, lambda g: [
        Sample(g.f(3), g.f(3)),
        Sample(g.f(2, 3), g.f(4, 3)),
        Sample(g.f(2, 2, 3), g.f(3)),
        Sample(g.f(), g.f(2, 3)),
        Sample(g.f(2, 3), g.f()),
        Sample(g.f(2, 3), g.f(4, 3), views={0: "T", 1: "T"}),
    ]),
    OpInfo("ger", V(fn="ger", method="ger"), np.outer, lambda g: [
        Sample(g.f(3), g.f(4)),
        Sample(g.f(1), g.f(2)),
        Sample(g.f(3), g.f(4), views={0: "slice"}),
    ]),
    OpInfo("vdot", V(fn="vdot", method="vdot"), np.vdot, lambda g: [
        Sample(g.f(3), g.f(3)),
        Sample(g.f(5), g.f(5), views={0: "slice", 1: "slice"}),
    ]),
    OpInfo("chain_matmul", {"fn.chain_matmul": _pf_chain_matmul}, lambda *ms: np.linalg.multi_dot(ms), lambda g: [
        Sample(g.f(2, 3), g.f(3, 4)),
        Sample(g.f(2, 3), g.f(3, 4), g.f(4, 2)),
        Sample(g.f(2, 3), g.f(3, 4), g.f(4, 1), g.f(1, 2), views={0: "T"}),
    ]),
    OpInfo("dist", V(fn="dist", method="dist"), _pf_dist, lambda g: [
        Sample(g.f(3, 4), g.f(3, 4)),
        Sample(g.f(3, 4), g.f(4), 1),
        Sample(g.f(2, 3), g.f(2, 1), 3),
        Sample(g.f(3, 4), g.f(3, 4), 1.5),
        Sample(g.f(), g.f(3), p=2.5),
        Sample(g.f(3, 4), g.f(3, 4), views={0: "T"}),
        Sample(g.distinct(3, 4), g.f(3, 4, lo=-0.05, hi=0.05), float("inf")),
    ]),
    OpInfo("cov", {"fn.cov": _pf_cov_call(False), "method.cov": _pf_cov_call(True)}, _pf_cov, lambda g: [
        Sample(g.f(3, 5)),
        Sample(g.f(5)),
        Sample(g.f(3, 5), correction=0),
        Sample(g.f(2, 6), correction=2),
        Sample(g.f(3, 5), np.array([1, 2, 0, 3, 1])),
        Sample(g.f(3, 5), None, g.f(5, lo=0.2, hi=1.0)),
        Sample(g.f(3, 5), np.array([2, 1, 1, 3, 1]), g.f(5, lo=0.2, hi=1.0), correction=2),
        Sample(g.f(3, 5), views={0: "T"}),
    ]),
    OpInfo("corrcoef", V(fn="corrcoef", method="corrcoef"), np.corrcoef, lambda g: [
        Sample(g.f(3, 5)),
        Sample(g.f(2, 6)),
        Sample(g.f(3, 5), views={0: "T"}),
    ]),
    OpInfo("trapezoid", V(fn=("trapezoid", "trapz")), _pf_trapezoid, lambda g: [
        Sample(g.f(3, 5)),
        Sample(g.f(5)),
        Sample(g.f(3, 5), dim=0),
        Sample(g.f(3, 5), dx=0.5),
        Sample(g.f(2, 3, 4), dx=2, dim=1),
        Sample(g.f(3, 5), np.sort(g.f(5))),
        Sample(g.f(3, 5), g.f(3, 5)),
        Sample(g.f(2, 3, 5), g.f(3, 5), dim=1),
        Sample(g.f(3, 4), np.sort(g.f(3)), dim=0),
        Sample(g.f(3, 1)),
        Sample(g.f(5, 3), views={0: "T"}),
        Sample(g.f(5, 3), g.f(5, 3), views={0: "T", 1: "T"}),
    ]),
    OpInfo("cumulative_trapezoid", V(fn="cumulative_trapezoid"), _pf_cumulative_trapezoid, lambda g: [
        Sample(g.f(3, 5)),
        Sample(g.f(5)),
        Sample(g.f(3, 5), dim=0),
        Sample(g.f(3, 5), dx=0.5),
        Sample(g.f(3, 5), np.sort(g.f(5))),
        Sample(g.f(3, 5), g.f(3, 5)),
        Sample(g.f(5, 3), views={0: "T"}),
    ]),
    OpInfo("msort", V(fn="msort", method="msort"), lambda x: np.sort(x, axis=0), lambda g: [
        Sample(g.distinct(4, 3)),
        Sample(g.distinct(5)),
        Sample(g.distinct(3, 2, 2)),
        Sample(g.distinct(3, 4), views={0: "T"}),
    ]),
    OpInfo("renorm", V(fn="renorm", method="renorm"), _pf_renorm, lambda g: [
        Sample(g.f(3, 4), 2, 0, 1.0),
        Sample(g.f(3, 4), 1, 1, 1.5),
        Sample(g.f(2, 3, 2), 3, -1, 0.8),
        Sample(g.f(3, 4) * 0.1, 2, 0, 5.0),
        Sample(g.f(4, 3), 2, 1, 1.0, views={0: "T"}),
    ]),
    OpInfo("histogram", V(fn="histogram", method="histogram"), _pf_histogram, lambda g: [
        Sample(g.f(20), 5),
        Sample(g.f(4, 5), 4, range=(-1.0, 1.0)),
        Sample(g.f(20), 4, density=True),
        Sample(g.f(4, 5), np.array([-1.0, 0.0, 0.5, 2.0])),
        Sample(np.array([0.0, 1.0, 2.0, 3.0, 3.5, -0.1]), 3, range=(0.0, 3.0)),
        Sample(g.f(5, 4), 3, views={0: "T"}),
    ], differentiable=False),
    OpInfo("nuclear_norm", {"fn.nuclear_norm": _pf_deprecated("nuclear_norm")}, _pf_nuclear_norm, lambda g: [
        Sample(g.f(3, 4)),
        Sample(g.f(3, 2, 4), (0, 2)),
        Sample(g.f(3, 4), (1, 0), True),
        Sample(g.f(4, 3), views={0: "T"}),
    ]),
    OpInfo("frobenius_norm", {"fn.frobenius_norm": _pf_deprecated("frobenius_norm")}, _pf_frobenius_norm,
           lambda g: [
               Sample(g.f(3, 4), (0, 1)),
               Sample(g.f(2, 3, 4), (2, 0), True),
               Sample(g.f(2, 3, 4), (1,)),
               Sample(g.f(4, 3), (0, 1), views={0: "T"}),
           ]),
]
