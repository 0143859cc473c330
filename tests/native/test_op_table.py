"""Generic op tests driven by the op table in ``op_db.py`` (PyTorch's OpInfo idea).

For every row x variant x sample:

1. forward in float64 matches the NumPy reference;
2. forward in float32 matches the NumPy reference within float32 tolerance;
3. ``ferrograd.autograd.gradcheck`` passes in float64 (differentiable ops);
4. gradients have the shape and dtype of the inputs (differentiable ops);
5. if PyTorch is installed: values, dtypes and gradients equal PyTorch's.

Plus the dtype-promotion table and error cases from ``op_db``.
"""

import re

import numpy as np
import pytest

import ferrograd
from ferrograd.autograd import gradcheck, gradgradcheck
from op_db import ERROR_CASES, OP_DB, PROMOTION_CASES, VIEWS

lib = ferrograd

# ---------------------------------------------------------------------------
# parametrization
# ---------------------------------------------------------------------------


def _cases(pred=lambda op, s: True):
    out = []
    for op in OP_DB:
        for variant in op.variants:
            for s in op.sample_list():
                if s.applies_to(variant) and pred(op, s):
                    out.append(pytest.param(op, variant, s, id=f"{op.name}-{variant}-{s.name}"))
    return out


ALL_CASES = _cases()
GRAD_CASES = _cases(lambda op, s: op.differentiable)
GRADCHECK_CASES = _cases(lambda op, s: op.differentiable and s.gradcheck)


@pytest.fixture(autouse=True)
def _known_bug(request):
    """A sample's ``xfail={test_name: reason}`` (known bug) makes that test a strict xfail."""
    callspec = getattr(request.node, "callspec", None)
    sample = callspec.params.get("sample") if callspec else None
    reason = getattr(sample, "xfail", {}).get(request.node.originalname)
    if reason:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _dtype(mod, name):
    return getattr(mod, name)


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _is_float_array(a):
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _build(mod, sample, dtype, requires_grad):
    """Tensors for ``sample`` in library ``mod``.

    Returns ``(leaves, apply)``: ``leaves`` are the contiguous tensors (or raw
    non-array inputs) in input order; ``apply(*leaves)`` turns them into the op's
    positional inputs (applying the requested non-contiguous views).
    """
    leaves = []
    for i, a in enumerate(sample.inputs):
        if isinstance(a, np.ndarray):
            view = sample.views.get(i)
            base = VIEWS[view][0](a) if view else a
            if a.dtype.kind == "f":
                t = mod.tensor(base, dtype=_dtype(mod, dtype),
                               requires_grad=requires_grad and i not in sample.const)
            elif a.dtype.kind == "b":
                t = mod.tensor(base, dtype=mod.bool)
            else:
                t = mod.tensor(base.astype(np.int64), dtype=mod.int64)
            leaves.append(t)
        else:
            leaves.append(a)

    def apply(*args):
        return [
            VIEWS[sample.views[i]][1](t) if i in sample.views else t for i, t in enumerate(args)
        ]

    return leaves, apply


def _call(mod, op, variant, sample, args):
    return op.variants[variant](mod, *args, **sample.kwargs)


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _np(t):
    return np.array(t.detach().numpy(), copy=True)


def _ref_inputs(sample, dtype):
    """NumPy inputs for the reference: floats rounded to the tested dtype, then float64."""
    return [
        a.astype(dtype).astype(np.float64) if _is_float_array(a) else a for a in sample.inputs
    ]


def _reference(op, sample, dtype):
    ref = sample.ref or op.ref
    with np.errstate(all="ignore"):
        out = ref(*_ref_inputs(sample, dtype), **sample.kwargs)
    return [np.asarray(o) for o in _as_list(out)]


def _expected_dtype(arr, float_dtype):
    kind = arr.dtype.kind
    if kind == "f":
        return float_dtype
    if kind == "b":
        return "bool"
    return "int64"


def _assert_values(actual, expected, rtol, atol, what):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "biu" and actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol,
            equal_nan=True, err_msg=what,
        )


def _check_forward(op, variant, sample, dtype, tol):
    leaves, apply = _build(lib, sample, dtype, requires_grad=False)
    outs = _as_list(_call(lib, op, variant, sample, apply(*leaves)))
    refs = _reference(op, sample, dtype)
    assert len(outs) == len(refs), f"{len(outs)} outputs, reference has {len(refs)}"
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert isinstance(o, lib.Tensor), f"output {k} is {type(o)}, not a Tensor"
        exp_dtype = _expected_dtype(r, dtype)
        assert _dtype_name(o.dtype) == exp_dtype, f"output {k}: dtype {o.dtype}, expected {exp_dtype}"
        assert tuple(o.shape) == r.shape, f"output {k}: shape {tuple(o.shape)} != {r.shape}"
        _assert_values(_np(o), r, *tol, what=f"output {k}")


def _grad_weights(outs, seed=0):
    """Fixed random upstream gradients for the float outputs (NumPy, float64)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=tuple(o.shape)) if o.is_floating_point() else None
            for o in outs]


def _grads(mod, op, variant, sample, dtype):
    """Forward + autograd.grad wrt the float leaves. Returns (outputs, grads) as NumPy."""
    leaves, apply = _build(mod, sample, dtype, requires_grad=True)
    outs = _as_list(_call(mod, op, variant, sample, apply(*leaves)))
    weights = _grad_weights(outs)
    diff = [(o, w) for o, w in zip(outs, weights) if w is not None and o.requires_grad]
    grad_leaves = [t for t in leaves if isinstance(t, mod.Tensor) and t.requires_grad]
    grads = mod.autograd.grad(
        [o for o, _ in diff],
        grad_leaves,
        [mod.tensor(w, dtype=o.dtype) for o, w in diff],
        allow_unused=True,
    )
    return ([_np(o) for o in outs], [o.dtype for o in outs],
            [None if g is None else _np(g) for g in grads], [g.dtype if g is not None else None for g in grads])


# ---------------------------------------------------------------------------
# (1), (2) forward vs NumPy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op,variant,sample", ALL_CASES)
def test_forward_float64(op, variant, sample):
    _check_forward(op, variant, sample, "float64", op.tol64)


@pytest.mark.parametrize("op,variant,sample", ALL_CASES)
def test_forward_float32(op, variant, sample):
    _check_forward(op, variant, sample, "float32", op.tol32)


# ---------------------------------------------------------------------------
# (3) gradcheck
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op,variant,sample", GRADCHECK_CASES)
def test_gradcheck(op, variant, sample):
    leaves, apply = _build(lib, sample, "float64", requires_grad=True)

    def func(*args):
        return _call(lib, op, variant, sample, apply(*args))

    assert gradcheck(func, tuple(leaves), **op.gradcheck_kwargs)


# Second order: every backward formula is written in differentiable ops, so the gradient of
# the gradient is checked too (one variant per op keeps the run short).
GRADGRAD_CASES = [c for c in GRADCHECK_CASES if c.values[1] == next(iter(c.values[0].variants))]


@pytest.mark.parametrize("op,variant,sample", GRADGRAD_CASES)
def test_gradgradcheck(op, variant, sample):
    leaves, apply = _build(lib, sample, "float64", requires_grad=True)

    def func(*args):
        return _call(lib, op, variant, sample, apply(*args))

    assert gradgradcheck(func, tuple(leaves), **op.gradcheck_kwargs)


@pytest.mark.parametrize("op,variant,sample", GRADCHECK_CASES)
def test_forward_ad(op, variant, sample):
    """Forward-mode AD: the outputs' tangents are J t. Checked against reverse mode (which
    gradcheck checks) by the identity <w, J t> = <J^T w, t> for random tangents t and weights w."""
    fw = lib.autograd.forward_ad
    leaves, apply = _build(lib, sample, "float64", requires_grad=False)
    rng = np.random.default_rng(1)
    tangents = [
        rng.uniform(-1, 1, size=tuple(t.shape))
        if isinstance(t, lib.Tensor) and t.is_floating_point() and i not in sample.const else None
        for i, t in enumerate(leaves)
    ]
    with fw.dual_level():
        duals = [t if u is None else fw.make_dual(t, lib.tensor(u)) for t, u in zip(leaves, tangents)]
        outs = _as_list(_call(lib, op, variant, sample, apply(*duals)))
        out_tangents = [fw.unpack_dual(o).tangent if isinstance(o, lib.Tensor) else None
                        for o in outs]
    # reverse mode on the same inputs
    rleaves, rapply = _build(lib, sample, "float64", requires_grad=True)
    routs = _as_list(_call(lib, op, variant, sample, rapply(*rleaves)))
    weights = _grad_weights(routs)
    diff = [(o, w) for o, w in zip(routs, weights) if w is not None and o.requires_grad]
    grad_leaves = [t for t in rleaves if isinstance(t, lib.Tensor) and t.requires_grad]
    grads = lib.autograd.grad([o for o, _ in diff], grad_leaves,
                              [lib.tensor(w) for _, w in diff], allow_unused=True)
    grads = [None if g is None else _np(g) for g in grads]
    # every output reverse mode differentiates has a tangent (the others may not)
    missing = [k for k, (o, t) in enumerate(zip(routs, out_tangents))
               if isinstance(o, lib.Tensor) and o.requires_grad and t is None]
    assert not missing, f"float outputs {missing} have no tangent"
    jt = [(w, _np(t)) for w, t in zip(weights, out_tangents) if w is not None and t is not None]
    lhs = sum(float(np.sum(w * t)) for w, t in jt)
    used = [u for u in tangents if u is not None]
    assert len(grads) == len(used)
    rhs = sum(float(np.sum(g * u)) for g, u in zip(grads, used) if g is not None)
    scale = sum(float(np.sum(np.abs(w * t))) for w, t in jt) + 1e-12
    assert abs(lhs - rhs) <= 1e-7 * scale + 1e-10, f"<w, J t> = {lhs}, <J^T w, t> = {rhs}"


# ---------------------------------------------------------------------------
# (4) gradient shapes / dtypes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op,variant,sample", GRAD_CASES)
def test_grad_shapes(op, variant, sample):
    leaves, apply = _build(lib, sample, "float64", requires_grad=True)
    inputs = apply(*leaves)
    outs = _as_list(_call(lib, op, variant, sample, inputs))
    weights = _grad_weights(outs)
    diff = [(o, w) for o, w in zip(outs, weights) if w is not None and o.requires_grad]
    assert diff, "a differentiable op returned no output requiring grad"

    # autograd.grad wrt the op's actual inputs (possibly non-contiguous views)
    float_inputs = [t for t in inputs if isinstance(t, lib.Tensor) and t.requires_grad]
    grads = lib.autograd.grad(
        [o for o, _ in diff], float_inputs,
        [lib.tensor(w, dtype=o.dtype) for o, w in diff],
        retain_graph=True, allow_unused=True,
    )
    for t, g in zip(float_inputs, grads):
        if g is not None:
            assert tuple(g.shape) == tuple(t.shape)
            assert g.dtype == t.dtype

    # .backward() populates .grad of the leaves with the leaves' shape
    loss = None
    for o, w in diff:
        term = (o * lib.tensor(w, dtype=o.dtype)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    float_leaves = [t for t in leaves if isinstance(t, lib.Tensor) and t.requires_grad]
    assert any(t.grad is not None for t in float_leaves)
    for t in float_leaves:
        if t.grad is not None:
            assert tuple(t.grad.shape) == tuple(t.shape)
            assert t.grad.dtype == t.dtype


# ---------------------------------------------------------------------------
# (5) against PyTorch
# ---------------------------------------------------------------------------

TORCH_TOL = {"float64": (1e-9, 1e-12), "float32": (1e-5, 1e-6)}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op,variant,sample", ALL_CASES)
def test_matches_torch(op, variant, sample, dtype):
    torch = pytest.importorskip("torch")
    own = op.torch_tol32 if dtype == "float32" else op.torch_tol64
    rtol, atol = own or TORCH_TOL[dtype]
    if not op.differentiable:
        outs = {}
        for name, mod in (("ferrograd", lib), ("torch", torch)):
            leaves, apply = _build(mod, sample, dtype, requires_grad=False)
            outs[name] = _as_list(_call(mod, op, variant, sample, apply(*leaves)))
        assert len(outs["ferrograd"]) == len(outs["torch"])
        for k, (a, b) in enumerate(zip(outs["ferrograd"], outs["torch"])):
            assert _dtype_name(a.dtype) == _dtype_name(b.dtype), f"output {k} dtype"
            _assert_values(_np(a), _np(b), rtol, atol, f"output {k}")
        return

    f_out, f_odt, f_grads, f_gdt = _grads(lib, op, variant, sample, dtype)
    t_out, t_odt, t_grads, t_gdt = _grads(torch, op, variant, sample, dtype)
    assert len(f_out) == len(t_out)
    for k, (a, b) in enumerate(zip(f_out, t_out)):
        assert _dtype_name(f_odt[k]) == _dtype_name(t_odt[k]), f"output {k} dtype"
        _assert_values(a, b, rtol, atol, f"output {k}")
    for k, (a, b) in enumerate(zip(f_grads, t_grads)):
        assert (a is None) == (b is None), f"grad {k}: ferrograd {a is not None}, torch {b is not None}"
        if a is not None:
            assert _dtype_name(f_gdt[k]) == _dtype_name(t_gdt[k]), f"grad {k} dtype"
            _assert_values(a, b, rtol, atol, f"grad of input {k}")


# ---------------------------------------------------------------------------
# dtype promotion
# ---------------------------------------------------------------------------

PROMO = [pytest.param(fn, exp, id=name) for name, fn, exp in PROMOTION_CASES]


@pytest.mark.parametrize("fn,expected", PROMO)
def test_promotion(fn, expected):
    if isinstance(expected, type):
        with pytest.raises(expected):
            fn(lib)
    else:
        assert _dtype_name(fn(lib).dtype) == expected


@pytest.mark.parametrize("fn,expected", PROMO)
def test_promotion_matches_torch(fn, expected):
    torch = pytest.importorskip("torch")
    if isinstance(expected, type):
        with pytest.raises(expected):
            fn(torch)
        return
    t = fn(torch)
    assert _dtype_name(t.dtype) == expected
    f = fn(lib)
    assert _dtype_name(f.dtype) == expected
    _assert_values(_np(f), _np(t), 1e-6, 1e-7, "value")


# ---------------------------------------------------------------------------
# error cases
# ---------------------------------------------------------------------------

ERRORS = [pytest.param(fn, exc, msg, id=name) for name, fn, exc, msg in ERROR_CASES]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn(lib)


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors_match_torch(fn, exc, msg):
    torch = pytest.importorskip("torch")
    with pytest.raises(exc, match=re.escape(msg)):
        fn(torch)


# ---------------------------------------------------------------------------
# a few things the table does not express
# ---------------------------------------------------------------------------


def test_max_dim_returns_named_tuple():
    x = lib.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    r = x.max(dim=1)
    assert isinstance(r, tuple)
    values, indices = r
    assert r.values.tolist() == values.tolist() == [5.0, 7.0]
    assert r.indices.tolist() == indices.tolist() == [1, 0]
    r = lib.min(x, 0, keepdim=True)
    assert r.values.tolist() == [[1.0, 0.0, 2.0]]
    assert r.indices.tolist() == [[0, 1, 0]]


def test_split_grad_flows_to_base():
    x = lib.tensor(np.arange(6.0), requires_grad=True)
    a, b = x.split([2, 4])
    (a.sum() * 2 + (b * b).sum()).backward()
    np.testing.assert_allclose(_np(x.grad), [2, 2, 4, 6, 8, 10])


def test_gradcheck_rejects_wrong_gradient():
    class BadExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y * 1.1

    x = lib.tensor([0.1, 0.2], dtype=lib.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        gradcheck(BadExp.apply, (x,))
    assert gradcheck(BadExp.apply, (x,), raise_exception=False) is False
