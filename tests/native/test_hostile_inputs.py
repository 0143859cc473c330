"""Hostile-input robustness fuzz: no op may kill the interpreter.

Every case calls one ferrograd op with hostile arguments -- huge paddings / strides /
output sizes, huge or overflowing shapes, huge index values, huge stride-0 (expanded)
operands -- in a child process whose address space is capped with ``RLIMIT_AS``.  The
case passes if the call returns or raises a Python exception (any type: PyTorch itself
raises RuntimeError / IndexError / ValueError / ... here, or returns a result); it fails
if the child dies by a signal (SIGSEGV, SIGABRT from Rust's "memory allocation of N
bytes failed", SIGKILL, ...) or hangs past ``CASE_TIMEOUT``.  A small tensor result is
read back through NumPy (so a result view that points outside its storage crashes here,
not later in user code).

Cases come from two sources:

* the op table (``op_db.OP_DB``), iterated programmatically -- every row, every sample
  (one variant per sample, cycling through the row's variants), mutated by
  - ``expand_dim[i]``  : input ``i`` built as an expanded (stride-0) tensor whose first
                          size-1 dim is 2**40 long;
  - ``expand_lead[i]`` : input ``i`` expanded along a new leading dim of 2**40;
  - ``expand_ovf``     : the first array input expanded to ``(2**32, 2**32, *shape)``
                          (element count overflows int64 -- PyTorch refuses to build it);
  - ``int[slot]=v``    : one integer argument (positional, keyword, tuple element or
                          slice bound) replaced by a huge value (2**40, 2**63-1, -2**40,
                          plus one seeded draw from a pool of other nasty values);
  - ``idxval[i]=v``    : the values of int64 index input ``i`` replaced by a huge value;
* hand-written cases for the functional APIs (convolutions, padding, pooling,
  unfold/fold, indexing and reductions of huge expanded tensors, factories, reshape,
  repeat, cat, ...), written as code strings over ``T`` (the library) and ``F``
  (``T.nn.functional``) so the same case can be run against PyTorch.

Speed: one *supervisor* process per worker imports the library once and forks a child
(the child sets ``RLIMIT_AS`` and runs cases one after another, reporting each as a JSON
line).  When the child dies, the supervisor knows the case that was running, records it
and forks a new child that resumes at the next case.

Knobs (environment): ``HOSTILE_AS_LIMIT_GB`` (address-space cap, default 4),
``HOSTILE_CASE_TIMEOUT`` (seconds, default 6), ``HOSTILE_WORKERS`` (default 2),
``HOSTILE_REPORT=path.json`` (dump every outcome: exception types, crash stderr).

Standalone report (not used by pytest)::

    python tests/test_hostile_inputs.py               # ferrograd: outcomes, signals by code path
    python tests/test_hostile_inputs.py --torch       # ... and differences from PyTorch
    python tests/test_hostile_inputs.py -k conv2d --json out.json
"""

import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from op_db import OP_DB  # noqa: E402

SEED = 0x5EED
BIG = 2 ** 40
I64MAX = 2 ** 63 - 1
I64MIN = -(2 ** 63)
AS_LIMIT = int(os.environ.get("HOSTILE_AS_LIMIT_GB", "4")) << 30  # bytes of address space
CASE_TIMEOUT = float(os.environ.get("HOSTILE_CASE_TIMEOUT", "6"))  # seconds per case
N_WORKERS = int(os.environ.get("HOSTILE_WORKERS", "2"))
HUGE_INTS = (BIG, I64MAX, -BIG)
EXTRA_INTS = (16000, 2 ** 31, 2 ** 31 - 1, 2 ** 32 + 1, 2 ** 62, I64MIN, 2 ** 20)


# ---------------------------------------------------------------------------
# cases: id -> callable(lib) -> result
# ---------------------------------------------------------------------------


def _tensor(lib, a):
    if a.dtype.kind == "f":
        return lib.tensor(a, dtype=lib.float32)
    if a.dtype.kind == "b":
        return lib.tensor(a, dtype=lib.bool)
    return lib.tensor(a.astype(np.int64), dtype=lib.int64)


def _expand_dim_sizes(shape, big=BIG):
    """Sizes that expand the first size-1 dim of ``shape`` to ``big`` (None: no such dim)."""
    for d, n in enumerate(shape):
        if n == 1:
            return tuple(big if k == d else m for k, m in enumerate(shape))
    return None


def _int_slots(value, path):
    """(path, int) for every int in a (nested) argument: ints, tuple/list elements, slice bounds."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [(path, value)]
    if isinstance(value, (tuple, list)):
        out = []
        for k, v in enumerate(value):
            out += _int_slots(v, path + (k,))
        return out
    if isinstance(value, slice):
        out = []
        for k, v in enumerate((value.start, value.stop, value.step)):
            if isinstance(v, int) and not isinstance(v, bool):
                out.append((path + (k,), v))
        return out
    return []


def _replace(value, path, new):
    if not path:
        return new
    k, rest = path[0], path[1:]
    if isinstance(value, slice):
        parts = [value.start, value.stop, value.step]
        parts[k] = _replace(parts[k], rest, new)
        return slice(*parts)
    items = list(value)
    items[k] = _replace(items[k], rest, new)
    return type(value)(items)


def _path_str(path):
    return "".join(f"[{p}]" for p in path)


def _op_case(op, variant, inputs, kwargs, mut):
    """``mut``: ("expand", i, sizes) | ("int", where, path, value) | ("idxval", i, value) | None."""

    def run(lib):
        ins, kw = list(inputs), dict(kwargs)
        if mut and mut[0] == "int":
            _, where, path, value = mut
            if where == "args":
                ins = list(_replace(tuple(ins), path, value))
            else:
                kw = _replace_kw(kw, path, value)
        if mut and mut[0] == "idxval":
            _, i, value = mut
            ins[i] = np.full(ins[i].shape, value, dtype=object)
        args = []
        for i, a in enumerate(ins):
            if isinstance(a, np.ndarray) and a.dtype == object:  # huge index values
                t = lib.tensor(a.tolist(), dtype=lib.int64)
            elif isinstance(a, np.ndarray):
                t = _tensor(lib, a)
            else:
                t = a
            if mut and mut[0] == "expand" and mut[1] == i:
                t = t.expand(*mut[2])
            args.append(t)
        return op.variants[variant](lib, *args, **kw)

    return run


def _replace_kw(kw, path, value):
    key, rest = path[0], path[1:]
    kw = dict(kw)
    kw[key] = _replace(kw[key], rest, value)
    return kw


def _op_table_cases(rng):
    cases = []
    for op in OP_DB:
        for j, s in enumerate(op.sample_list()):
            variants = [v for v in op.variants if s.applies_to(v)]
            if not variants:
                continue
            variant = variants[j % len(variants)]
            base = f"{op.name}|{variant}|{s.name}"
            inputs, kwargs = s.inputs, s.kwargs

            def add(tag, mut):
                cases.append((f"{base}|{tag}", _op_case(op, variant, inputs, kwargs, mut)))

            first_array = None
            for i, a in enumerate(inputs):
                if not isinstance(a, np.ndarray):
                    continue
                first_array = i if first_array is None else first_array
                sizes = _expand_dim_sizes(a.shape)
                if sizes is not None:
                    add(f"expand_dim[{i}]", ("expand", i, sizes))
                add(f"expand_lead[{i}]", ("expand", i, (BIG,) + a.shape))
                if a.dtype.kind in "iu":
                    for v in (BIG, -BIG, I64MAX):
                        add(f"idxval[{i}]={v}", ("idxval", i, v))
            if first_array is not None:
                add("expand_ovf", ("expand", first_array, (2 ** 32, 2 ** 32) + inputs[first_array].shape))
            slots = [("args",) + sl for sl in _int_slots(tuple(inputs), ())]
            for key, v in kwargs.items():
                slots += [("kw",) + sl for sl in _int_slots(v, (key,))]
            for where, path, _old in slots:
                for v in HUGE_INTS + (rng.choice(EXTRA_INTS),):
                    add(f"int{'' if where == 'args' else ':kw'}{_path_str(path)}={v}",
                        ("int", where, path, v))
    return cases


# ---- hand-written cases (code over T = library, F = T.nn.functional) -------------------

_X4 = "T.zeros(1, 1, 3, 3)"
_W4 = "T.zeros(1, 1, 2, 2)"
_X3 = "T.zeros(1, 1, 5)"
_W3 = "T.zeros(1, 1, 2)"
_P = (BIG, 16000, 2 ** 62, I64MAX, -BIG)


def _hand_codes():
    c = []
    # convolutions
    for p in _P:
        for kw in ("padding", "stride", "dilation"):
            c += [f"F.conv2d({_X4}, {_W4}, {kw}={p})", f"F.conv1d({_X3}, {_W3}, {kw}={p})",
                  f"F.conv_transpose2d({_X4}, {_W4}, {kw}={p})",
                  f"F.conv_transpose1d({_X3}, {_W3}, {kw}={p})"]
        c += [f"F.conv2d({_X4}, {_W4}, padding=(0, {p}))",
              f"F.conv2d({_X4}, {_W4}, stride=(1, {p}), padding=1)",
              f"F.conv_transpose2d({_X4}, {_W4}, stride=2, output_padding={p})",
              f"F.conv_transpose1d({_X3}, {_W3}, stride=2, output_padding={p})",
              f"F.conv_transpose2d({_X4}, {_W4}, stride={p}, output_padding=1)"]
    for g in (BIG, I64MAX, -1):
        c.append(f"F.conv2d({_X4}, {_W4}, groups={g})")
    c += [
        f"F.conv2d(T.zeros(1, 1, 1, 1).expand({BIG}, 1, 3, 3), {_W4})",
        f"F.conv2d(T.zeros(1, 1, 1, 1).expand(1, 1, 2**20, 2**20), {_W4})",
        f"F.conv2d({_X4}, T.zeros(1, 1, 1, 1).expand({BIG}, 1, 2, 2))",
        f"F.conv2d({_X4}, T.zeros(1, 1, 1, 1).expand(1, 1, {BIG}, {BIG}), padding={BIG})",
        f"F.conv2d({_X4}, T.zeros(1, 1, 1, 1).expand(1, 1, {BIG}, 1), padding=({BIG}, 0))",
        f"F.conv1d(T.zeros(1, 1, 1).expand(1, 1, {BIG}), {_W3})",
        f"F.conv1d({_X3}, T.zeros(1, 1, 1).expand(1, 1, {BIG}), padding={BIG})",
        f"F.conv_transpose2d(T.zeros(1, 1, 1, 1).expand(1, 1, 2**20, 2**20), {_W4})",
        f"F.conv_transpose1d(T.zeros(1, 1, 1).expand(1, 1, {BIG}), {_W3})",
        f"F.conv_transpose1d({_X3}, T.zeros(1, 1, 1).expand(1, 1, {BIG}))",
        f"F.conv_transpose2d({_X4}, T.zeros(1, 1, 1, 1).expand(1, {BIG}, 2, 2))",
    ]
    # padding
    for mode in ("constant", "reflect", "replicate", "circular"):
        for p in _P:
            for pads in [(p, p), (0, p), (p, 0, 0, 0), (p, p, p, p), (-1, p)]:
                c.append(f"F.pad({_X4}, {pads}, mode={mode!r})")
            c.append(f"F.pad({_X3}, ({p}, {p}), mode={mode!r})")
        c.append(f"F.pad(T.zeros(1, 1, 1, 1).expand(1, 1, {BIG}, 1), (1, 1), mode={mode!r})")
        c.append(f"F.pad(T.zeros(1, 1, 1, 1).expand(1, 1, 2**20, 2**20), (1, 1, 1, 1), mode={mode!r})")
    for p in _P:
        c += [f"T.constant_pad_nd({_X4}, ({p}, {p}))", f"F.pad(T.zeros(3), ({p}, {p}), value=1.0)"]
    # adaptive pooling
    sizes2 = [BIG, (BIG, 1), (1, BIG), (2 ** 20, 2 ** 20), 2 ** 62, (I64MAX, 1), 2 ** 31,
              (2 ** 32, 2 ** 32), (-1, 2), (None, BIG)]
    for f in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        for s in sizes2:
            c.append(f"F.{f}({_X4}, {s!r})")
        c.append(f"F.{f}(T.zeros(1, 1, 1, 1).expand(1, 1, {BIG}, 1), 1)")
    c.append(f"F.adaptive_max_pool2d({_X4}, {BIG}, return_indices=True)")
    for f in ("adaptive_avg_pool1d", "adaptive_max_pool1d"):
        for s in (BIG, 2 ** 62, I64MAX, 2 ** 31, (BIG,), -1):
            c.append(f"F.{f}({_X3}, {s!r})")
        c.append(f"F.{f}(T.zeros(1, 1, 1).expand({BIG}, 1, 4), 2)")
    c.append(f"F.adaptive_max_pool1d({_X3}, {BIG}, return_indices=True)")
    # unfold / fold
    for p in (BIG, 2 ** 62, I64MAX, 16000):
        c += [f"F.unfold({_X4}, kernel_size={p})", f"F.unfold({_X4}, 2, padding={p})",
              f"F.unfold({_X4}, 2, dilation={p})", f"F.unfold({_X4}, 2, stride={p})",
              f"F.unfold({_X4}, ({p}, 1), padding=({p}, 0))",
              f"F.fold(T.zeros(1, 1, 1), output_size={p}, kernel_size={p})",
              f"F.fold(T.zeros(1, 1, 1), output_size=(1, {p}), kernel_size=(1, {p}))",
              f"F.fold(T.zeros(1, 4, 1), output_size=({p}, {p}), kernel_size=2)",
              f"F.fold(T.zeros(1, 4, 1), output_size=2, kernel_size=2, padding={p})",
              f"F.fold(T.zeros(1, 4, 1), output_size=2, kernel_size=2, stride={p})",
              f"F.fold(T.zeros(1, 4, 1), output_size=2, kernel_size=2, dilation={p})"]
    c += [f"F.unfold({_X4}, (2**20, 2**20), padding=2**20)",
          "F.unfold(T.zeros(1, 1, 1, 1).expand(1, 1, 2**20, 2**20), 2)",
          f"F.unfold(T.zeros(1, 1, 1, 1).expand({BIG}, 1, 2, 2), 1)",
          f"F.fold(T.zeros(1, 1, 1).expand(1, 1, {BIG}), output_size=(1, {BIG}), kernel_size=1)",
          f"F.fold(T.zeros(1, 1, 1).expand({BIG}, 1, 1), output_size=1, kernel_size=1)"]
    # max / avg pooling
    for f, x in (("max_pool2d", _X4), ("avg_pool2d", _X4), ("max_pool1d", _X3), ("avg_pool1d", _X3)):
        for p in (BIG, 2 ** 62, I64MAX):
            c += [f"F.{f}({x}, {p})", f"F.{f}({x}, 2, stride={p})", f"F.{f}({x}, 2, padding={p})",
                  f"F.{f}({x}, {p}, padding={p // 2})", f"F.{f}({x}, 2, stride={p}, ceil_mode=True)",
                  f"F.{f}({x}, {p}, stride=1, ceil_mode=True)"]
            if f.startswith("max"):
                c += [f"F.{f}({x}, 2, dilation={p})", f"F.{f}({x}, 2, padding={p}, return_indices=True)"]
        one = "(1, 1, 1, 1)" if f.endswith("2d") else "(1, 1, 1)"
        big = f"(1, 1, {BIG}, 1)" if f.endswith("2d") else f"(1, 1, {BIG})"
        c.append(f"F.{f}(T.zeros{one}.expand{big}, 1)")
        c.append(f"F.{f}(T.zeros{one}.expand{big}, 2, stride=2)")
    c += [f"F.avg_pool2d({_X4}, 2, divisor_override={BIG})",
          f"F.avg_pool2d({_X4}, 2, divisor_override={I64MAX})",
          f"F.max_pool2d_with_indices({_X4}, {BIG})"]
    # huge expanded (stride-0) operands: indexing, gathers, embedding, tolist, int ops, ...
    for n in (BIG, 2 ** 31):
        e, ei = f"T.zeros(1).expand({n})", f"T.zeros(1, dtype=T.int64).expand({n})"
        eb = f"T.ones(1, dtype=T.bool).expand({n})"
        c += [f"{e}[T.tensor([0])]", f"{e}[T.tensor([0, -1])]", f"{e}[T.tensor([[0]])]",
              f"{e}[0]", f"{e}[-1]", f"{e}[1:3]", f"{e}[::2**20]",
              f"{e}[..., T.tensor([1])]", f"{e}.index_select(0, T.tensor([0]))",
              f"T.index_select({e}, 0, T.tensor([3]))", f"T.gather({e}, 0, T.tensor([0]))",
              f"{e}.gather(0, T.tensor([5, 6]))", f"{e}.narrow(0, 5, 3)", f"{e}.select(0, 7)",
              f"F.embedding(T.tensor([0]), T.zeros(1, 1).expand({n}, 4))",
              f"F.embedding(T.tensor([0]), T.zeros(1, 1).expand(4, {n}))",
              f"F.embedding(T.zeros(1, dtype=T.int64).expand({n}), T.zeros(2, 3))",
              f"{e}.scatter(0, T.tensor([0]), 1.0)",
              f"{e}.scatter_add(0, T.tensor([0]), T.ones(1))",
              f"{e}.index_add(0, T.tensor([0]), T.ones(1))",
              f"T.scatter(T.zeros(4), 0, T.zeros(1, dtype=T.int64).expand({n}), T.ones(1).expand({n}))",
              f"T.zeros(4).gather(0, T.zeros(1, dtype=T.int64).expand({n}))",
              f"T.zeros(4)[T.zeros(1, dtype=T.int64).expand({n})]",
              f"T.zeros(4).index_select(0, T.zeros(1, dtype=T.int64).expand({n}))",
              f"T.zeros(4).index_add(0, T.zeros(1, dtype=T.int64).expand({n}), T.ones(1).expand({n}))",
              f"F.one_hot({ei})", f"F.one_hot({ei}, 3)",
              f"{e}.tolist()", f"{ei}.tolist()", f"{e}.numpy().shape",
              f"{ei} // 2", f"{ei} % 3", f"{ei} ** 2", f"2 ** {ei}", f"{ei} // {ei}",
              f"T.floor_divide({ei}, 2)", f"T.remainder({ei}, 2)", f"{ei}.pow(2)", f"-{ei}",
              f"{ei}.float()", f"{e}.to(T.float64)", f"{e} + 1", f"{e} * {e}", f"{e}.clone()",
              f"{e}.contiguous()", f"{e}.clamp(0, 1)", f"{e}.masked_fill({eb}, 1.0)",
              f"T.where({eb}, {e}, 0.0)", f"T.outer({e}, T.zeros(2))", f"{e}.flip(0)",
              f"{e}.roll(1)", f"{e}.sort()", f"{e}.argsort()", f"{e}.topk(1)", f"{e}.cumsum(0)",
              f"{e}.softmax(0)", f"{e}.log_softmax(0)", f"{e}.unbind(0)", f"{e}.split(1)",
              f"{e}.chunk(2)", f"T.cat([{e}, {e}])", f"T.stack([{e}, {e}])",
              f"T.cat([T.zeros(1), {e}])", f"{e}.repeat(2)", f"{e}.reshape(-1)", f"{e}.view(-1)",
              f"{e}.reshape(2, -1)", f"{e}.view(2, -1)", f"{e}.flatten()",
              f"{e}.unflatten(0, (2, -1))", f"{e}.unsqueeze(0).expand(2, {n}).reshape(-1)",
              f"{e}.unsqueeze(1).expand({n}, 2).reshape(-1)",
              f"T.zeros_like({e})", f"T.ones_like({e})", f"T.empty_like({e})",
              f"T.full_like({e}, 1.0)", f"T.rand_like({e})", f"T.randn_like({e})",
              f"T.randint_like({e}, 3)", f"{e}.new_zeros({n})",
              f"F.linear(T.zeros(1, 1).expand({n}, 4), T.zeros(3, 4))",
              f"F.layer_norm(T.zeros(1, 1).expand({n}, 4), (4,))",
              f"F.relu(T.zeros(1, 1).expand({n}, 4))"]
    # reductions over an expanded tensor: 2**31 elements can not be materialized under the
    # address-space cap (8 GiB of float32) but can be reduced in seconds through the stride
    e = "T.zeros(1).expand(2**31)"
    for red in ("sum()", "mean()", "amax()", "amin()", "max()", "min()", "argmax()", "argmin()",
                "prod()", "var()", "std()", "norm()", "logsumexp(0)", "sum(0)", "max(0)"):
        c.append(f"{e}.{red}")
    c += ["T.zeros(1, 1).expand(2**16, 2**15).sum(1)", "T.zeros(1, 1).expand(2**16, 2**15).amax(0)",
          "T.zeros(1, 1).expand(2**16, 2**15).mean(0)", "T.zeros(1, 1).expand(2**16, 2**15).var(1)"]
    # the 2-D (2**20, 2**20) expanded tensor
    e2 = "T.zeros(1).expand(2**20, 2**20)"
    c += [f"{e2}[T.tensor([0])]", f"{e2}[:, T.tensor([0])]", f"{e2}[T.tensor([0]), T.tensor([0])]",
          f"{e2}[0, T.tensor([0])]", f"{e2}[T.tensor([True] * 3 + [False] * (2**20 - 3))]",
          # an all-True expanded mask: 2**20 to count, 2**40 to gather (a 1-D mask over a
          # 2**40-long tensor is left out: counting it takes PyTorch minutes as well)
          f"{e2}[T.ones(1, dtype=T.bool).expand(2**20)]",
          f"{e2}.index_select(0, T.tensor([0]))", f"{e2}.index_select(1, T.tensor([0]))",
          f"{e2}.gather(1, T.zeros(2, 1, dtype=T.int64))", f"{e2}[0]", f"{e2}.tolist()",
          f"{e2}.reshape(-1)", f"{e2}.view(-1)", f"{e2}.flatten()", f"{e2}.t().reshape(-1)",
          f"{e2}.contiguous()", f"T.cat([{e2}, {e2}], 1)", f"{e2} @ {e2}",
          f"T.zeros(1).expand({BIG}).reshape(2**20, 2**20)",
          f"T.zeros(1).expand({BIG}).view(2**20, 2**20)",
          "F.scaled_dot_product_attention(T.zeros(1, 1, 1, 4).expand(1, 1, 2**20, 4), "
          "T.zeros(1, 1, 1, 4).expand(1, 1, 2**20, 4), T.zeros(1, 1, 1, 4).expand(1, 1, 2**20, 4))",
          f"F.cross_entropy(T.zeros(1, 1).expand({BIG}, 3), T.zeros(1, dtype=T.int64).expand({BIG}))",
          f"F.mse_loss(T.zeros(1).expand({BIG}), T.zeros(1).expand({BIG}))"]
    # shapes whose element count overflows int64 (PyTorch: "numel: integer multiplication overflow")
    for o in (f"T.zeros(1).expand({BIG}, {BIG})", "T.zeros(1).expand(2**32, 2**32)",
              "T.zeros(1).expand(2**31, 2**31, 4)", "T.zeros(1).expand(2**62, 4)",
              f"T.zeros(1).expand({I64MAX}, 2)"):
        c += [o, f"{o}.numel()", f"{o}.sum()", f"{o} + 1", f"{o}[T.tensor([0])]", f"{o}[0]",
              f"{o}.contiguous()", f"{o}.reshape(-1)", f"{o}.flatten()", f"{o}.clone()",
              f"{o}.tolist()", f"{o}.mean()", f"{o}.T", f"{o}.unsqueeze(0)"]
    c += [f"T.zeros(1).expand({I64MAX})", f"T.zeros(1).expand({I64MAX}) + 1",
          "T.zeros(1).expand(2**64)", f"T.zeros(3, 1).expand(3, {I64MAX})",
          "T.zeros(1).expand(-2)", f"T.zeros(1).expand({I64MIN})"]
    # factories with huge / overflowing sizes
    shapes = [f"{BIG}", "2**62", f"{I64MAX}", f"({BIG}, {BIG})", "(2**32, 2**32)", "(2**31, 2**31, 4)",
              "(2**62, 4)", f"({I64MAX}, 2)", "2**64", f"({BIG}, 0)", "(2**62, 2**62, 0)", "-1",
              f"({I64MIN},)"]
    for s in shapes:
        c += [f"T.zeros({s})", f"T.ones({s})", f"T.empty({s})", f"T.full({s}, 1.0)",
              f"T.randn({s})", f"T.rand({s})",
              f"T.randint(0, 5, {s if s.startswith('(') else '(' + s + ',)'})",
              f"T.zeros({s}, dtype=T.int64)", f"T.zeros({s}, dtype=T.bool)",
              f"T.zeros(1).new_zeros({s})", f"T.zeros(1).new_ones({s})", f"T.zeros(1).new_empty({s})",
              f"T.zeros(1).new_full({s}, 2.0)"]
    c += [f"T.arange({BIG})", f"T.arange({I64MAX})", f"T.arange(0, {I64MAX}, 1)",
          f"T.arange({I64MIN}, {I64MAX})", "T.arange(0, 1, 1e-15)", f"T.arange(0.0, {BIG})",
          f"T.arange(0, {BIG}, dtype=T.int64)", f"T.linspace(0, 1, {BIG})", f"T.linspace(0, 1, {I64MAX})",
          f"T.eye({BIG})", "T.eye(2**20)", "T.eye(2**32, 2**32)", f"T.eye(1, {BIG})",
          f"T.randperm({BIG})", "T.randperm(2**31)", f"T.randint(0, {I64MAX}, (3,))",
          f"T.randint({I64MIN}, {I64MAX}, (3,))", "T.tensor([2**63])", "T.tensor([2**64])",
          "T.tensor(2**100)", f"T.tensor([{I64MIN}]) // -1", f"T.tensor([{I64MIN}]) % -1",
          f"T.tensor([{I64MIN}]).abs()", f"-T.tensor([{I64MIN}])", "T.tensor([7]) // 0",
          "T.tensor([7]) % 0", "T.tensor([2]) ** 100", f"T.tensor([2]) ** {I64MAX}"]
    # reshape / view with huge sizes
    c += [f"T.zeros(1).reshape({BIG})", f"T.zeros(4).reshape({BIG}, -1)", f"T.zeros(0).reshape({BIG}, -1)",
          f"T.zeros(0).reshape({BIG}, 0)", "T.zeros(0).reshape(2**62, 2**62, 0)",
          f"T.zeros(0).view({BIG}, 0)", f"T.zeros(4).view({I64MAX}, -1)",
          "T.zeros(4).reshape(2**32, 2**32)", "T.zeros(4).reshape(2**31, 2**31, 4)",
          "T.zeros(4).reshape(2**62, 4)", f"T.zeros(1).expand({BIG}).reshape({BIG}, {BIG})",
          "T.zeros(4).unflatten(0, (2**62, -1))", "T.zeros(4).unflatten(0, (2**32, 2**32))"]
    # repeat / tile
    c += [f"T.zeros(1).repeat({BIG})", f"T.zeros(2, 2).repeat({BIG}, {BIG})",
          "T.zeros(1).repeat(2**31, 2**31, 4)", "T.zeros(1).repeat(2**62, 4)",
          f"T.zeros(2).repeat({I64MAX})", "T.zeros(1).repeat(-1)", f"T.zeros(0).repeat({BIG})",
          f"T.zeros(0).repeat({BIG}, {BIG})", f"T.tile(T.zeros(1), ({BIG},))",
          "T.zeros(3).tile((2**62, 4))", f"T.zeros(1).expand({BIG}).repeat(2)",
          f"T.zeros(1).expand({BIG}).tile((2,))"]
    # cat / stack with expanded and overflowing totals
    c += ["T.cat([T.zeros(1).expand(2**62), T.zeros(1).expand(2**62)])",
          f"T.cat([T.zeros(1).expand({I64MAX}), T.zeros(1)])",
          "T.stack([T.zeros(1).expand(2**62)] * 4)",
          f"T.cat([T.zeros(1, 1).expand(2, {BIG}), T.zeros(1, 1).expand(2, {BIG})], 1)"]
    # huge index values / dims on small tensors
    x = "T.zeros(3)"
    for v in (BIG, -BIG, I64MAX, I64MIN):
        c += [f"{x}[{v}]", f"{x}[T.tensor([{v}])]", f"{x}[{v}:]", f"{x}[:{v}]", f"{x}[::{abs(v)}]",
              f"{x}.narrow(0, {v}, 1)", f"{x}.narrow(0, 0, {v})", f"{x}.select(0, {v})",
              f"{x}.index_select(0, T.tensor([{v}]))", f"T.gather({x}, 0, T.tensor([{v}]))",
              f"{x}.scatter(0, T.tensor([{v}]), 1.0)", f"{x}.scatter_add(0, T.tensor([{v}]), T.ones(1))",
              f"{x}.index_add(0, T.tensor([{v}]), T.ones(1))",
              f"F.embedding(T.tensor([{v}]), T.zeros(3, 2))",
              f"F.embedding(T.tensor([0]), T.zeros(3, 2), padding_idx={v})",
              f"F.one_hot(T.tensor([{v}]))", f"F.one_hot(T.tensor([0]), {v})",
              f"{x}.roll({v})", f"{x}.topk({v})", f"{x}.split({v})", f"{x}.chunk({v})",
              f"{x}.transpose(0, {v})", f"{x}.sum({v})", f"{x}.cumsum({v})", f"{x}.flip({v})",
              f"{x}.squeeze({v})", f"{x}.unsqueeze({v})", f"{x}.expand({v})",
              f"T.tril(T.zeros(3, 3), {v})", f"T.triu(T.zeros(3, 3), {v})",
              f"T.zeros(2, 3)[T.tensor([0]), T.tensor([{v}])]",
              f"F.nll_loss(T.zeros(2, 3), T.tensor([0, {v}]))",
              f"F.cross_entropy(T.zeros(2, 3), T.tensor([0, {v}]))",
              f"F.cross_entropy(T.zeros(2, 3), T.tensor([0, 1]), ignore_index={v})",
              f"T.zeros(2, 3).max({v})", f"T.zeros(2, 3).softmax({v})"]
    # views whose bounds check overflows (start + length wraps): reading them must not crash
    for dt in ("T.float32", "T.int64", "T.bool"):
        v = f"T.zeros(3, 4, dtype={dt}).narrow(0, 1, {I64MAX})"
        c += [v, f"{v}.shape", f"{v}.numpy().shape", f"{v}.numpy()[2**40]", f"{v}.numpy()[-1]",
              f"{v}[-1]", f"{v}[-1].tolist()", f"{v}[2**40].tolist()", f"{v}[2**40, 0].item()",
              f"{v}.sum()", f"{v}.contiguous()", f"{v}.clone()", f"{v}[2**40] + 1",
              f"{v}.reshape(-1)", f"{v}.tolist()"]
        w = f"T.zeros(3, dtype={dt}).narrow(0, 2, {I64MAX - 1})"
        c += [w, f"{w}.numpy()[2**40]", f"{w}[2**40].item()", f"{w}.max()"]
        c += [f"T.zeros(1, dtype={dt}).expand(2**62, 4).numpy().shape",
              f"T.zeros(1, dtype={dt}).expand({I64MAX}, 2).reshape(-1).numpy()[2**40]",
              f"T.zeros(1, dtype={dt}).expand({I64MAX}, 2).reshape(-1)[2**40].item()"]
    c += ["T.tensor([2**63]).tolist()", "T.tensor([-2**63 - 1]).tolist()", "T.tensor([[2**63]] * 2)",
          "T.full((2,), 2**63, dtype=T.int64).tolist()", "T.tensor([1.0]) * 2**63",
          "T.tensor([1]) * 2**63", "T.tensor([1]) + 2**64", "T.zeros(2, dtype=T.int64).fill_(2**63)"]
    c += [f"{x}.split([2**62, -2**62 + 3])", f"{x}.split([{I64MAX}, {I64MIN + 4}])",
          f"{x}[{I64MIN}:{I64MAX}:{I64MAX}]", "T.zeros(3)[::-1]"]
    return c


def _hand_case(code):
    def run(lib):
        ns = {"T": lib, "F": lib.nn.functional, "np": np}
        return eval(code, ns)  # noqa: S307 -- test-authored code strings

    return run


def build_cases():
    """Ordered list of (case_id, callable(lib))."""
    rng = random.Random(SEED)
    cases = _op_table_cases(rng)
    cases += [(f"hand|{code}", _hand_case(code)) for code in _hand_codes()]
    seen, out = {}, []
    for cid, fn in cases:  # ids unique
        k = seen.get(cid, 0)
        seen[cid] = k + 1
        out.append((cid if k == 0 else f"{cid}#{k + 1}", fn))
    return out


# ---------------------------------------------------------------------------
# child side: supervisor + forked workers
# ---------------------------------------------------------------------------


def _describe(r, depth=0):
    shape = getattr(r, "shape", None)
    if shape is not None and hasattr(r, "dtype"):
        return f"{type(r).__name__}{tuple(shape)}:{str(r.dtype).rsplit('.', 1)[-1]}"
    if isinstance(r, (tuple, list)):
        if depth or len(r) > 4:
            return f"{type(r).__name__}[len={len(r)}]"
        return f"{type(r).__name__}(" + ", ".join(_describe(x, depth + 1) for x in r) + ")"
    s = repr(r)
    return f"{type(r).__name__}:{s[:60]}"


def _touch(r, depth=0):
    """Read every element of a small tensor result (through NumPy, i.e. the raw data pointer):
    a result view that points outside its storage must not pass as a normal result."""
    shape = getattr(r, "shape", None)
    if shape is not None and hasattr(r, "detach"):
        n = 1
        for d in shape:
            n *= int(d)
        if 0 <= n <= 1 << 16:
            a = r.detach().numpy()
            np.array(a, copy=True)
    elif isinstance(r, (tuple, list)) and depth == 0 and len(r) <= 4:
        for x in r:
            _touch(x, 1)


def _run_one(lib, fn):
    try:
        r = fn(lib)
        try:
            desc = _describe(r)
        except BaseException as e:  # describing must not turn an ok into an error
            desc = f"{type(r).__name__} (describe failed: {type(e).__name__})"
        res = {"kind": "ok", "result": desc}
        try:
            _touch(r)
        except BaseException as e:  # noqa: BLE001 -- recorded, still a normal result
            res["touch_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        del r
        return res
    except BaseException as e:  # noqa: BLE001 -- any exception type is acceptable
        try:
            msg = str(e)
        except BaseException:
            msg = "<str failed>"
        return {"kind": "exception", "type": type(e).__name__, "msg": msg[:400]}


def _worker(lib, fns, start, wfd, errfd, nullfd):
    """Forked child: cap the address space, run fns[start:], one JSON line per event."""
    try:
        os.dup2(errfd, 2)
        os.dup2(nullfd, 1)
        resource = __import__("resource")
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps from aborts
        for k in range(start, len(fns)):
            os.write(2, f"\n@@hostile case {k}@@\n".encode())
            os.write(wfd, (json.dumps({"start": k}) + "\n").encode())
            t0 = time.perf_counter()
            res = _run_one(lib, fns[k])
            res["secs"] = round(time.perf_counter() - t0, 3)
            res["done"] = k
            os.write(wfd, (json.dumps(res) + "\n").encode())
    finally:
        os._exit(0)


def _stderr_of(text, k):
    marker = f"@@hostile case {k}@@\n"
    i = text.rfind(marker)
    return text[i + len(marker):] if i >= 0 else text


STALE_EXIT = 3


def _lib_file(lib):
    core = getattr(lib, "_core", None) or getattr(lib, "_C", None)
    return getattr(core, "__file__", None)


def _stamp(path):
    try:
        st = os.stat(path)
        return (st.st_ino, st.st_size, st.st_mtime_ns)
    except (OSError, TypeError):
        return None


def _stop(pid):
    """Stop a hung worker: SIGABRT first (faulthandler dumps the Python stack), then SIGKILL."""
    os.kill(pid, signal.SIGABRT)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def supervise(lib_name, ids, timeout, emit):
    """Run the cases ``ids`` (in order) in forked workers; ``emit(result_dict)`` for each."""
    if lib_name == "torch":
        import torch as lib

        torch_threads = int(os.environ.get("HOSTILE_TORCH_THREADS", "1"))
        lib.set_num_threads(torch_threads)
    else:
        import ferrograd as lib
    lib_file = _lib_file(lib)
    lib_stamp = _stamp(lib_file)
    emit({"lib_file": lib_file, "stamp": lib_stamp})
    table = dict(build_cases())
    fns = [table[i] for i in ids]
    nullfd = os.open(os.devnull, os.O_WRONLY)
    k = 0
    while k < len(ids):
        rfd, wfd = os.pipe()
        err = tempfile.TemporaryFile()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(rfd)
            _worker(lib, fns, k, wfd, err.fileno(), nullfd)
        os.close(wfd)
        running, started_at, buf, timed_out = None, time.monotonic(), b"", False
        while True:
            wait = timeout - (time.monotonic() - started_at) if running is not None else timeout
            ready, _, _ = select.select([rfd], [], [], max(wait, 0.0))
            if not ready:
                timed_out = True
                _stop(pid)
                break
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                msg = json.loads(line)
                if "start" in msg:
                    running, started_at = msg["start"], time.monotonic()
                else:
                    j = msg.pop("done")
                    msg["id"] = ids[j]
                    emit(msg)
                    running, started_at = None, time.monotonic()
                    k = j + 1
        os.close(rfd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # already reaped by _stop
            status = signal.SIGABRT
        if running is None and k < len(ids) and not timed_out:
            running = k  # died before announcing a case: blame the next one (no infinite loop)
        if running is not None and _stamp(lib_file) != lib_stamp:
            # the extension module was rebuilt in place under us: this crash (and any later
            # one) is not the case's fault -- let the parent restart a fresh supervisor
            emit({"restart_from": running})
            sys.exit(STALE_EXIT)
        if running is not None:
            err.seek(0)
            text = err.read().decode("utf-8", "replace")
            res = {"id": ids[running], "stderr": _stderr_of(text, running)[-20000:]}
            if timed_out:
                res.update(kind="timeout", detail=f"no result after {timeout:.0f} s (killed)")
            elif os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                res.update(kind="signal", signal=signal.Signals(sig).name)
            else:
                res.update(kind="exit", code=os.WEXITSTATUS(status))
            emit(res)
            k = running + 1
        err.close()


def run_cases(ids, lib_name="ferrograd", workers=N_WORKERS, timeout=CASE_TIMEOUT, progress=None):
    """Run case ids in ``workers`` supervisor processes; returns {id: result}."""
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("RUST_BACKTRACE", "1")  # innermost project frame -> grouping by code path
    env["PYTHONFAULTHANDLER"] = "1"
    shards = [ids[w::workers] for w in range(workers)]
    results, lock, errors = {}, threading.Lock(), []

    def drive(shard, restarts=5):
        while shard:
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--supervise",
                                  lib_name, "--timeout", str(timeout)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=HERE)
            p.stdin.write(json.dumps(shard).encode())
            p.stdin.close()
            errs, lib = [], {}
            t = threading.Thread(target=lambda: errs.append(p.stderr.read()), daemon=True)
            t.start()
            for line in p.stdout:
                if not line.startswith(b"{"):
                    continue
                r = json.loads(line)
                if "lib_file" in r:
                    lib = r
                    continue
                if "restart_from" in r:
                    continue
                with lock:
                    results[r["id"]] = r
                    if progress:
                        progress(len(results), r)
            p.wait()
            t.join()
            with lock:
                shard = [i for i in shard if i not in results]
            rebuilt = bool(lib.get("stamp")) and _stamp(lib["lib_file"]) != tuple(lib["stamp"])
            if (p.returncode == STALE_EXIT or (p.returncode != 0 and rebuilt)) and restarts > 0:
                restarts -= 1
                time.sleep(2.0)  # let the rebuild finish writing the extension module
                continue
            if p.returncode != 0 or shard:
                errors.append(f"supervisor failed ({p.returncode}), {len(shard)} cases not run: "
                              f"{errs[0][-3000:].decode('utf-8', 'replace')}")
            return

    threads = [threading.Thread(target=drive, args=(s,)) for s in shards]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("\n".join(errors))
    return results


# ---------------------------------------------------------------------------
# classification helpers (used by the test messages and the report)
# ---------------------------------------------------------------------------

_FRAME = re.compile(r"^\s*\d+: (.*)\n\s+at (\S+?):(\d+)(?::\d+)?$", re.M)


def project_frames(stderr):
    """(function, "src/...rs:line") frames of the Rust backtrace that are in this project."""
    out = []
    for fn, path, line in _FRAME.findall(stderr or ""):
        m = re.search(r"(?:^|/)(src/.*\.rs)$", path)
        if m and "/rustc/" not in path and "/.cargo/" not in path:
            out.append((fn.strip(), f"{m.group(1)}:{line}"))
    return out


def headline(stderr):
    """The abort / panic message of a crashed child."""
    lines = [ln for ln in (stderr or "").splitlines() if ln.strip()]
    keep = [ln for ln in lines if re.search(r"memory allocation of|panicked at|Fatal Python error|"
                                            r"Segmentation fault|Aborted|overflow|error", ln)]
    return (keep or lines or ["<no stderr>"])[0][:300]


def python_stack(stderr):
    """The faulthandler dump ("Current thread ... File ...") of a crashed child, harness frames cut."""
    m = re.search(r"^(?:Current thread|Thread) 0x[0-9a-f]+ .*?(?=\n\n|\Z)", stderr or "", re.M | re.S)
    if not m:
        return ""
    return "\n".join(ln for ln in m.group(0).splitlines()[1:] if HERE + os.sep not in ln)


def crash_summary(r):
    stderr = r.get("stderr") or ""
    if r["kind"] == "timeout":
        head = f"hang: {r.get('detail')}"
    else:
        sig = r.get("signal") or f"exit code {r.get('code')}"
        head = f"child died by {sig}: {headline(stderr)}"
    lines = [head]
    frames = project_frames(stderr)
    if frames:
        lines.append("Rust frames in this project (innermost first):")
        lines += [f"    {loc}  {fn[:110]}" for fn, loc in frames[:10]]
    stack = python_stack(stderr)
    if stack:
        lines.append("Python stack (innermost first):")
        lines.append(stack)
    if not frames and not stack:
        lines.append("stderr tail:\n" + stderr[-1500:])
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # standalone use
    pytest = None

if pytest is not None and __name__ != "__main__":
    CASE_IDS = [cid for cid, _ in build_cases()]

    @pytest.fixture(scope="module")
    def outcomes(request):
        selected = [item.callspec.params["case_id"] for item in request.session.items
                    if getattr(item, "originalname", None) == "test_no_signal"
                    and item.module.__name__ == __name__]
        results = run_cases(selected or CASE_IDS)
        if os.environ.get("HOSTILE_REPORT"):  # full results (exception types, stderr) as JSON
            with open(os.environ["HOSTILE_REPORT"], "w") as f:
                json.dump(results, f, indent=1)
        return results

    @pytest.mark.parametrize("case_id", CASE_IDS, ids=CASE_IDS)
    def test_no_signal(outcomes, case_id):
        r = outcomes.get(case_id)
        if r is None:
            pytest.fail(f"no result recorded for {case_id}", pytrace=False)
        if r["kind"] not in ("ok", "exception"):  # an exception of any type is fine
            pytest.fail(f"{case_id}\n{crash_summary(r)}", pytrace=False)

    def test_outcome_summary(outcomes):
        """Not a check: records what the hostile calls did (see it with ``-rP``)."""
        from collections import Counter

        kinds = Counter(r["kind"] for r in outcomes.values())
        types = Counter(r["type"] for r in outcomes.values() if r["kind"] == "exception")
        touched = sum(1 for r in outcomes.values() if r.get("touch_error"))
        print(f"{len(outcomes)} cases: {dict(kinds)}")
        print(f"exception types: {dict(types.most_common())}")
        print(f"normal results whose data could not be read back: {touched}")

    def test_case_ids_cover_every_op():
        covered = {cid.split("|", 1)[0] for cid in CASE_IDS}
        missing = [op.name for op in OP_DB if op.name not in covered]
        assert not missing, f"ops without hostile cases: {missing}"


# ---------------------------------------------------------------------------
# standalone report
# ---------------------------------------------------------------------------


def _group_key(r):
    if r["kind"] == "timeout":
        return "timeout (hang / runaway loop, no signal)"
    frames = project_frames(r.get("stderr"))
    if frames:
        return f"{frames[0][0]} @ {frames[0][1]}"
    py = re.findall(r'^\s+File "(.*?)", line (\d+) in (\S+)', r.get("stderr") or "", re.M)
    where = f"{os.path.basename(py[0][0])}:{py[0][1]} {py[0][2]}" if py else "?"
    return f"{r.get('signal') or r['kind']} without Rust frames, top Python frame {where}"


def _entry_frame(r):
    frames = [f for f in project_frames(r.get("stderr")) if f[1].startswith("src/py/")]
    return f"{frames[-1][0]} @ {frames[-1][1]}" if frames else "?"


def _report(results, ids, torch_results=None, out=sys.stdout):
    from collections import Counter, defaultdict

    kinds = Counter(r["kind"] for r in results.values())
    print(f"cases run: {len(results)} / {len(ids)}   outcomes: {dict(kinds)}", file=out)
    exc = Counter(r["type"] for r in results.values() if r["kind"] == "exception")
    print(f"exception types: {dict(exc.most_common())}", file=out)
    internal = [i for i in ids if i in results and results[i]["kind"] == "exception"
                and "internal error" in results[i]["msg"]]
    bad = [i for i in ids if i in results and results[i]["kind"] not in ("ok", "exception")]
    groups = defaultdict(list)
    for i in bad:
        groups[_group_key(results[i])].append(i)
    print(f"\n=== {len(bad)} cases died (signal / exit / timeout), {len(groups)} code paths ===",
          file=out)
    for key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        r0 = results[members[0]]
        print(f"\n--- [{len(members)}] {key}", file=out)
        print(f"    {headline(r0.get('stderr'))}", file=out)
        frames = project_frames(r0.get("stderr"))
        for fn, loc in frames[:8]:
            print(f"      {loc}  {fn[:100]}", file=out)
        for i in members:
            r = results[i]
            if r["kind"] == "timeout":
                stack = python_stack(r.get("stderr")).splitlines()
                note = "hung in " + (stack[0].strip() if stack else "?")
            else:
                note = headline(r.get("stderr"))
            print(f"    {r['kind']}:{r.get('signal') or r.get('code') or ''}  {i}   [{note[:110]}]",
                  file=out)
    if internal:
        print(f"\n=== {len(internal)} cases raised 'ferrograd internal error' (caught panics) ===",
              file=out)
        for i in internal:
            print(f"    {i}: {results[i]['msg'][:160]}", file=out)
    if torch_results is not None:
        print("\n=== differences from PyTorch ===", file=out)
        cats = defaultdict(list)
        for i in ids:
            f, t = results.get(i), torch_results.get(i)
            if not f or not t:
                continue
            fk, tk = f["kind"], t["kind"]
            if fk not in ("ok", "exception"):
                fk = "crash"
            if tk == "ok" and fk == "exception":
                cats["torch returns, ferrograd raises"].append(
                    (i, t["result"], f"{f['type']}: {f['msg'][:120]}"))
            elif tk == "exception" and fk == "ok":
                cats["torch raises, ferrograd returns"].append(
                    (i, f"{t['type']}: {t['msg'][:120]}", f["result"]))
            elif tk == "ok" and fk == "ok" and t["result"] != f["result"]:
                cats["both return, results differ"].append((i, t["result"], f["result"]))
            elif tk == "ok" and fk == "crash":
                cats["torch returns, ferrograd crashes"].append((i, t["result"], f["kind"]))
            elif tk not in ("ok", "exception"):
                cats[f"torch {tk}"].append((i, t.get("signal") or t.get("detail", ""),
                                            f.get("result") or f.get("type") or fk))
            elif tk == "exception" and fk == "exception" and t["type"] != f["type"]:
                cats["exception types differ"].append((i, t["type"], f["type"]))
        for cat, rows in cats.items():
            print(f"\n--- {cat}: {len(rows)}", file=out)
            if cat == "exception types differ":
                pairs = Counter((a, b) for _, a, b in rows)
                for (a, b), n in pairs.most_common():
                    print(f"    torch {a} vs ferrograd {b}: {n}", file=out)
                continue
            for i, a, b in rows:
                print(f"    {i}\n        torch: {a}\n        ferrograd: {b}", file=out)


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--supervise", metavar="LIB")
    ap.add_argument("--timeout", type=float, default=CASE_TIMEOUT)
    ap.add_argument("--torch", action="store_true", help="also run every case against PyTorch")
    ap.add_argument("--torch-timeout", type=float, default=10.0)
    ap.add_argument("-k", default=None, help="only case ids containing this substring")
    ap.add_argument("--json", default=None, help="write all results to this file")
    ap.add_argument("--workers", type=int, default=N_WORKERS)
    a = ap.parse_args(argv)
    if a.supervise:
        ids = json.loads(sys.stdin.read())

        def emit(r):
            sys.stdout.write(json.dumps(r) + "\n")
            sys.stdout.flush()

        supervise(a.supervise, ids, a.timeout, emit)
        return 0
    ids = [cid for cid, _ in build_cases() if a.k is None or a.k in cid]
    t0 = time.time()

    def progress(n, r):
        if n % 500 == 0:
            print(f"  ... {n}/{len(ids)} ({time.time() - t0:.0f} s)", file=sys.stderr)

    results = run_cases(ids, "ferrograd", a.workers, a.timeout, progress)
    print(f"ferrograd: {len(ids)} cases in {time.time() - t0:.1f} s", file=sys.stderr)
    torch_results = None
    if a.torch:
        t0 = time.time()
        torch_results = run_cases(ids, "torch", a.workers, a.torch_timeout, progress)
        print(f"torch: {len(ids)} cases in {time.time() - t0:.1f} s", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ferrograd": results, "torch": torch_results}, f, indent=1)
    _report(results, ids, torch_results)
    return 1 if any(r["kind"] not in ("ok", "exception") for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
