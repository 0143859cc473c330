"""tril/triu, flip, roll, repeat/tile, sort/argsort, topk and scatter.

Always-run tests compare values with NumPy (np.tril, np.flip, np.roll, np.tile, stable
argsort, put_along_axis), gradients with their closed forms, and run gradcheck/gradgradcheck
in float64. Parity tests (skipped without PyTorch) compare values, dtypes, returned indices,
grad_fn names, gradients, return types and exceptions (type and text) with PyTorch.

Error texts listed here are PyTorch 2.13's; the parity tests check that PyTorch still gives
them, the always-run tests that ferrograd does. Cases that ferrograd's native ops get wrong are
strict xfails naming the bug.
"""

import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
from ferrograd.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _ints(*shape, high=4):
    """Small integers as floats: many ties."""
    return RNG.integers(0, high, size=shape).astype(np.float32)


def _distinct(*shape):
    """Float64 values without ties (sort/topk gradients are then well defined)."""
    return RNG.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) / 7 - 1


def _np(t):
    return t.detach().numpy()


def _t(a, grad=False):
    return ferrograd.tensor(a, requires_grad=grad)


def _assert_same_array(actual, expected):
    """Same dtype, shape and values (NaN equal NaN, -0.0 distinct from 0.0)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)
    if actual.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


# ============================================================ comparison with PyTorch


def _message(e):
    """An exception's text without PyTorch's "didn't match because" overload details
    (ferrograd lists the overloads only)."""
    return "\n".join(line for line in str(e).split("\n") if "didn't match because" not in line)


def _compare(t, f, where="result"):
    """Asserts that ferrograd's ``f`` matches PyTorch's ``t`` (tensors, return types, errors)."""
    if isinstance(t, BaseException):
        assert isinstance(f, BaseException), f"{where}: PyTorch raised {t!r}, ferrograd gave {f!r}"
        assert type(f).__name__ == type(t).__name__, (where, t, f)
        assert str(f) == _message(t), (where, str(f), _message(t))
        return
    assert not isinstance(f, BaseException), f"{where}: ferrograd raised {f!r}, PyTorch gave {t!r}"
    if isinstance(t, tuple):
        assert isinstance(f, tuple) and type(f).__name__ == type(t).__name__, (where, type(f), type(t))
        assert len(f) == len(t)
        for name in ("values", "indices"):
            _compare(getattr(t, name), getattr(f, name), f"{where}.{name}")
        return
    if hasattr(t, "dtype"):
        assert str(f.dtype) == str(t.dtype), (where, f.dtype, t.dtype)
        assert tuple(f.shape) == tuple(t.shape), (where, f.shape, t.shape)
        _assert_same_array(_np(f), t.detach().numpy())
        assert f.requires_grad == t.requires_grad, where
        t_fn, f_fn = t.grad_fn, f.grad_fn
        assert (f_fn and f_fn.name()) == (t_fn and t_fn.name()), (where, f_fn, t_fn)
        return
    assert f == t, (where, f, t)


def _float_output(out):
    if isinstance(out, tuple):
        out = out.values
    return out if out.requires_grad else None


def _same(torch, fn, *arrays, grad=False):
    """``fn(module, *tensors)`` with PyTorch and ferrograd: same result or same exception;
    with ``grad``, floating inputs require grad and the gradients (or the errors of the
    backward) are compared too."""
    results = []
    for m in (torch, ferrograd):
        xs = [m.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        try:
            out = fn(m, *xs)
        except Exception as e:  # noqa: BLE001 (compared below)
            out = e
        results.append((out, xs))
    (t_out, t_xs), (f_out, f_xs) = results
    _compare(t_out, f_out)
    if not grad or isinstance(t_out, BaseException) or _float_output(t_out) is None:
        return t_out, f_out
    y = _float_output(t_out)
    g = RNG.standard_normal(tuple(y.shape))
    errors = []
    for m, out in ((torch, t_out), (ferrograd, f_out)):
        y = _float_output(out)
        try:
            y.backward(m.tensor(g, dtype=y.dtype))
            errors.append(None)
        except Exception as e:  # noqa: BLE001 (compared below)
            errors.append(e)
    if errors[0] is not None or errors[1] is not None:
        _compare(errors[0] or "no error", errors[1] or "no error", "backward")
        return t_out, f_out
    for i, (tx, fx) in enumerate(zip(t_xs, f_xs)):
        if tx.grad is None:
            assert fx.grad is None, f"input {i}"
        else:
            np.testing.assert_allclose(_np(fx.grad), tx.grad.numpy(), rtol=1e-6, atol=1e-6)
    return t_out, f_out


# ============================================================ tril / triu

TRI_SHAPES = [(3, 4), (4, 3), (2, 3, 4), (1, 1), (0, 3), (3, 0), (2, 0, 2), (2, 2, 1, 5)]
DIAGONALS = [0, 1, -1, 2, -2, 3, -3, 5, -5, 100, -100]


@pytest.mark.parametrize("shape", TRI_SHAPES, ids=str)
@pytest.mark.parametrize("upper", [False, True], ids=["tril", "triu"])
def test_tri_numpy(shape, upper):
    a = _randn(*shape)
    ref = np.triu if upper else np.tril
    for d in DIAGONALS:
        x = _t(a)
        out = x.triu(d) if upper else x.tril(d)
        _assert_same_array(_np(out), ref(a, d))
        fn = ferrograd.triu if upper else ferrograd.tril
        _assert_same_array(_np(fn(x, diagonal=d)), ref(a, d))
    _assert_same_array(_np(_t(a).triu() if upper else _t(a).tril()), ref(a))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_tri_dtypes_numpy(dtype):
    a = (RNG.standard_normal((4, 5)) * 3).astype(dtype)
    for d in (-1, 0, 2):
        _assert_same_array(_np(_t(a).tril(d)), np.tril(a, d))
        _assert_same_array(_np(_t(a).triu(d)), np.triu(a, d))


def test_tri_non_contiguous_numpy():
    a = _randn(5, 6)
    x = _t(a)
    _assert_same_array(_np(x.t().tril(1)), np.tril(a.T, 1))
    _assert_same_array(_np(x[:, ::2].triu(-1)), np.triu(a[:, ::2], -1))
    _assert_same_array(_np(x[1:, 1:4].tril()), np.tril(a[1:, 1:4]))


def test_tri_grad_closed_form():
    a = _randn(3, 4, dtype=np.float64)
    g = _randn(3, 4, dtype=np.float64)
    for d in (-1, 0, 2):
        x = _t(a, True)
        y = x.tril(d)
        assert y.grad_fn.name() == "TrilBackward0"
        y.backward(_t(g))
        np.testing.assert_array_equal(_np(x.grad), np.tril(g, d))
        x = _t(a, True)
        x.triu(d).backward(_t(g))
        np.testing.assert_array_equal(_np(x.grad), np.triu(g, d))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 3)], ids=str)
def test_tri_parity(torch, shape):
    a = _randn(*shape)
    for d in DIAGONALS:
        _same(torch, lambda m, x: x.tril(d), a, grad=True)
        _same(torch, lambda m, x: x.triu(d), a, grad=True)
        _same(torch, lambda m, x: m.tril(x, diagonal=d), a)
        _same(torch, lambda m, x: m.triu(x, d), a)
    _same(torch, lambda m, x: m.tril(x, diagonal=-1), a, grad=True)
    _same(torch, lambda m, x: x.transpose(-1, -2).triu(1), a, grad=True)
    _same(torch, lambda m, x: x[..., ::2].tril(-1), a, grad=True)
    for dtype in (np.float64, np.int64, np.bool_):
        _same(torch, lambda m, x: x.triu(1), (a * 3).astype(dtype))


# ============================================================ flip

FLIP_DIMS = [(0,), (1,), (-1,), (0, 1), (1, 0), (-2, -1), (0, 2), (0, 1, 2), ()]


def test_flip_numpy():
    a = _randn(2, 3, 4)
    for dims in FLIP_DIMS:
        ref = np.flip(a, dims) if dims else a
        _assert_same_array(_np(_t(a).flip(dims)), ref)
        _assert_same_array(_np(ferrograd.flip(_t(a), dims)), ref)
        if dims:
            _assert_same_array(_np(_t(a).flip(*dims)), ref)
    _assert_same_array(_np(_t(a).flip(dims=[1])), np.flip(a, 1))
    _assert_same_array(_np(_t(a).transpose(0, 2).flip(0)), np.flip(a.transpose(2, 1, 0), 0))
    _assert_same_array(_np(_t(a)[:, ::2, 1:].flip(1, 2)), np.flip(a[:, ::2, 1:], (1, 2)))
    for dtype in (np.int64, np.bool_, np.float64):
        b = (a * 3).astype(dtype)
        _assert_same_array(_np(_t(b).flip(0, -1)), np.flip(b, (0, -1)))
    e = np.zeros((0, 3), np.float32)
    _assert_same_array(_np(_t(e).flip(0, 1)), e)
    _assert_same_array(_np(_t(np.arange(5)).flip(0)), np.arange(5)[::-1])


def test_flip_grad_closed_form():
    a, g = _randn(3, 4, dtype=np.float64), _randn(3, 4, dtype=np.float64)
    x = _t(a, True)
    y = x.flip(0, -1)
    assert y.grad_fn.name() == "FlipBackward0"
    y.backward(_t(g))
    np.testing.assert_array_equal(_np(x.grad), np.flip(g, (0, 1)))


def test_flip_parity(torch):
    a = _randn(2, 3, 4)
    for dims in FLIP_DIMS:
        _same(torch, lambda m, x: x.flip(dims), a, grad=True)
        _same(torch, lambda m, x: m.flip(x, dims), a)
        _same(torch, lambda m, x: m.flip(x, dims=list(dims)), a)
    _same(torch, lambda m, x: x.flip(0, 2), a, grad=True)
    _same(torch, lambda m, x: x.flip(1), a, grad=True)
    _same(torch, lambda m, x: x.flip(dims=(1,)), a)
    _same(torch, lambda m, x: x.flip(m.Size([0, 1])), a)
    _same(torch, lambda m, x: x.flip(np.int64(1)), a)
    _same(torch, lambda m, x: x.flip(m.tensor(1)), a)
    _same(torch, lambda m, x: x.flip((0, True)), a)
    _same(torch, lambda m, x: x.permute(2, 0, 1).flip(0, 1), a, grad=True)
    _same(torch, lambda m, x: x[:, 1:, ::3].flip(-1), a, grad=True)
    _same(torch, lambda m, x: x.flip(0), np.zeros((0, 2), np.float32))
    _same(torch, lambda m, x: x.flip(0), np.arange(4))
    _same(torch, lambda m, x: x.flip(1), np.array([[True, False, False]]))


# ============================================================ roll

ROLLS = [
    (1, 0), (-1, 0), (2, 1), (7, 1), (-9, -1), ((1, 2), (0, 1)), ((-1, 5), (2, 0)),
    ((1, 1, 1), (0, 1, 2)), (0, 0), (3, None), (-4, None), (25, None), ((4,), None),
]


def _np_roll(a, shifts, dims):
    if dims is None:
        shift = shifts[0] if isinstance(shifts, tuple) else shifts
        return np.roll(a.reshape(-1), shift).reshape(a.shape)
    return np.roll(a, shifts, dims)


@pytest.mark.parametrize("shifts,dims", ROLLS, ids=str)
def test_roll_numpy(shifts, dims):
    a = _randn(2, 3, 4)
    ref = _np_roll(a, shifts, dims)
    x = _t(a)
    out = x.roll(shifts) if dims is None else x.roll(shifts, dims)
    _assert_same_array(_np(out), ref)
    _assert_same_array(_np(ferrograd.roll(x, shifts=shifts, dims=dims)), ref)
    if dims is not None:
        b = np.ascontiguousarray(a.transpose(2, 0, 1))
        _assert_same_array(_np(x.permute(2, 0, 1).roll(shifts, dims)), _np_roll(b, shifts, dims))


def test_roll_dtypes_and_empty_numpy():
    for dtype in (np.int64, np.bool_, np.float64):
        a = (RNG.standard_normal((3, 4)) * 3).astype(dtype)
        _assert_same_array(_np(_t(a).roll((1, -1), (0, 1))), np.roll(a, (1, -1), (0, 1)))
        _assert_same_array(_np(_t(a).roll(5)), np.roll(a.reshape(-1), 5).reshape(3, 4))
    e = np.zeros((0, 3), np.float32)
    _assert_same_array(_np(_t(e).roll(2, 1)), e)
    _assert_same_array(_np(_t(e).roll(2)), e)
    _assert_same_array(_np(_t(np.arange(5)).roll(-2)), np.roll(np.arange(5), -2))


def test_roll_grad_closed_form():
    a, g = _randn(3, 4, dtype=np.float64), _randn(3, 4, dtype=np.float64)
    for shifts, dims in [((1, -2), (0, 1)), (5, None)]:
        x = _t(a, True)
        y = x.roll(shifts, dims)
        assert y.grad_fn.name() == "RollBackward0"
        y.backward(_t(g))
        back = tuple(-s for s in shifts) if isinstance(shifts, tuple) else -shifts
        np.testing.assert_array_equal(_np(x.grad), _np_roll(g, back, dims))


@pytest.mark.parametrize("shifts,dims", ROLLS, ids=str)
def test_roll_parity(torch, shifts, dims):
    a = _randn(2, 3, 4)
    _same(torch, lambda m, x: x.roll(shifts, dims), a, grad=True)
    _same(torch, lambda m, x: m.roll(x, shifts=shifts, dims=dims), a)
    _same(torch, lambda m, x: x.transpose(0, 2).roll(shifts, dims), a, grad=True)


def test_roll_forms_parity(torch):
    a = _randn(3, 4)
    _same(torch, lambda m, x: m.roll(x, shifts=(1, 2), dims=(0, 1)), a, grad=True)
    _same(torch, lambda m, x: m.roll(x, (1, 2), (0, 1)), a)
    _same(torch, lambda m, x: x.roll(shifts=1), a)
    _same(torch, lambda m, x: x.roll(1, dims=None), a)
    _same(torch, lambda m, x: x.roll(1, ()), a)
    _same(torch, lambda m, x: x.roll([1], [0]), a)
    _same(torch, lambda m, x: x.roll(m.tensor(1)), a)
    _same(torch, lambda m, x: x[:, ::2].roll(1, 1), a, grad=True)
    _same(torch, lambda m, x: x.roll(2, 1), np.zeros((0, 3), np.float32))
    _same(torch, lambda m, x: x.roll(-1), np.arange(6).reshape(2, 3))
    _same(torch, lambda m, x: x.roll(1, 0), np.array([True, False, False]))


# ============================================================ repeat / tile

REPEATS = [
    ((3, 2), (2, 3)), ((3, 2), (1, 1)), ((3, 2), (2, 1, 3)), ((3, 2), (0, 2)), ((3, 2), (1, 2, 0, 1)),
    ((4,), (3,)), ((4,), (2, 2)), ((), ()), ((), (3,)), ((), (2, 3)), ((0, 2), (3, 1)),
    ((2, 1, 3), (1, 4, 1)),
]


@pytest.mark.parametrize("shape,sizes", REPEATS, ids=str)
def test_repeat_numpy(shape, sizes):
    a = np.asarray(_randn(*shape))
    ref = np.tile(a, sizes) if sizes else a
    _assert_same_array(_np(_t(a).repeat(sizes)), ref)
    _assert_same_array(_np(_t(a).repeat(*sizes) if sizes else _t(a).repeat(())), ref)
    _assert_same_array(_np(_t(a).repeat(repeats=list(sizes))), ref)
    _assert_same_array(_np(_t(a).tile(sizes)), ref)
    _assert_same_array(_np(ferrograd.tile(_t(a), dims=sizes)), ref)


TILE_FEWER = [((3, 2), (2,)), ((2, 3, 4), (2, 1)), ((2, 3), ()), ((2, 3), (0,))]


@pytest.mark.parametrize("shape,dims", TILE_FEWER, ids=str)
def test_tile_fewer_dims_numpy(shape, dims):
    a = _randn(*shape)
    _assert_same_array(_np(_t(a).tile(dims)), np.tile(a, dims))
    _assert_same_array(_np(ferrograd.tile(_t(a), dims)), np.tile(a, dims))


def test_repeat_dtypes_non_contiguous_numpy():
    for dtype in (np.int64, np.bool_, np.float64):
        a = (RNG.standard_normal((2, 3)) * 3).astype(dtype)
        _assert_same_array(_np(_t(a).repeat(2, 1, 2)), np.tile(a, (2, 1, 2)))
        _assert_same_array(_np(_t(a).tile(3)), np.tile(a, 3))
    a = _randn(3, 4)
    _assert_same_array(_np(_t(a).t().repeat(2, 2)), np.tile(a.T, (2, 2)))
    _assert_same_array(_np(_t(a)[::2, 1:].repeat(3, 1)), np.tile(a[::2, 1:], (3, 1)))


def test_repeat_grad_closed_form():
    a = _randn(2, 3, dtype=np.float64)
    g = _randn(4, 2, 9, dtype=np.float64)
    x = _t(a, True)
    y = x.repeat(4, 1, 3)
    assert y.grad_fn.name() == "RepeatBackward0"
    y.backward(_t(g))
    np.testing.assert_allclose(_np(x.grad), g.reshape(4, 1, 2, 3, 3).sum(axis=(0, 1, 3)), rtol=1e-12)
    x = _t(a, True)
    y = x.tile(2)
    assert y.grad_fn.name() == "RepeatBackward0"
    y.backward(_t(np.ones((2, 6))))
    np.testing.assert_array_equal(_np(x.grad), np.full((2, 3), 2.0))


@pytest.mark.parametrize("sizes", [(0, 2), (2, 0), (0, 1, 1)], ids=str)
def test_repeat_zero_size_grad(sizes):
    x = _t(np.ones((3, 2)), True)
    x.repeat(*sizes).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.zeros((3, 2)))


def test_sum_of_empty_to_non_empty():
    # the reduction behind test_repeat_zero_size_grad, not one of this file's ops
    _assert_same_array(_np(ferrograd.zeros(3, 0).sum(1)), np.zeros(3, np.float32))


@pytest.mark.parametrize("shape,sizes", REPEATS, ids=str)
def test_repeat_parity(torch, shape, sizes):
    a = np.asarray(_randn(*shape))
    grad = 0 not in sizes  # see test_repeat_zero_size_grad
    _same(torch, lambda m, x: x.repeat(sizes), a, grad=grad)
    _same(torch, lambda m, x: x.tile(sizes), a, grad=grad)
    _same(torch, lambda m, x: m.tile(x, sizes), a)
    if sizes:
        _same(torch, lambda m, x: x.repeat(*sizes), a)
        _same(torch, lambda m, x: x.tile(*sizes), a)


def test_repeat_tile_forms_parity(torch):
    a = _randn(2, 3)
    _same(torch, lambda m, x: x.repeat(repeats=(2, 1)), a)
    _same(torch, lambda m, x: x.tile(dims=(2,)), a)
    _same(torch, lambda m, x: m.tile(input=x, dims=(2, 1, 1)), a)
    _same(torch, lambda m, x: x.repeat(m.Size([2, 2])), a)
    _same(torch, lambda m, x: x.repeat(m.tensor(2), 2), a)
    _same(torch, lambda m, x: x.repeat([m.tensor(2), 2]), a)
    _same(torch, lambda m, x: x.tile(2), a, grad=True)
    _same(torch, lambda m, x: x.t().repeat(2, 1, 2), a, grad=True)
    _same(torch, lambda m, x: x.repeat(2, 2), np.arange(6).reshape(2, 3))
    _same(torch, lambda m, x: x.tile(3), np.array([True, False]))


# ============================================================ sort / argsort


def _np_sort(a, dim, descending):
    """Stable sort along ``dim`` (equal elements keep their order, descending too), NaN last
    ascending and first descending, as PyTorch sorts."""
    f = a.astype(np.float64)
    nan = np.isnan(f)
    f = np.where(nan, 0.0, f)
    idx = np.lexsort((-f, ~nan) if descending else (f, nan), axis=dim)
    return np.take_along_axis(a, idx, dim), idx.astype(np.int64)


SORT_SHAPES = [
    ((7,), 0), ((4, 6), 1), ((4, 6), 0), ((4, 6), -1), ((3, 4, 5), 1), ((3, 4, 5), -3),
    ((0,), 0), ((3, 0), 1), ((3, 0), 0),
]


def _sort_inputs(*shape):
    """float32 with ties, float32 without, int64 and bool."""
    return (_ints(*shape), _randn(*shape), (_ints(*shape) - 1).astype(np.int64),
            _ints(*shape, high=2).astype(np.bool_))


@pytest.mark.parametrize("shape,dim", SORT_SHAPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_numpy(shape, dim, descending):
    for a in _sort_inputs(*shape):
        values, indices = _np_sort(a, dim, descending)
        r = _t(a).sort(dim, descending)
        _assert_same_array(_np(r.values), values)
        _assert_same_array(_np(r.indices), indices)
        r = ferrograd.sort(_t(a), dim=dim, descending=descending, stable=True)
        _assert_same_array(_np(r[0]), values)
        _assert_same_array(_np(r[1]), indices)
        _assert_same_array(_np(_t(a).argsort(dim, descending)), indices)
        out = ferrograd.argsort(_t(a), dim=dim, descending=descending, stable=True)
        _assert_same_array(_np(out), indices)


def test_sort_nan_inf_zero_hand_computed():
    nan, inf = float("nan"), float("inf")
    x = _t(np.array([3.0, nan, -inf, 1.0, nan, inf, -0.0, 0.0, 1.0]))
    r = x.sort()
    _assert_same_array(_np(r.values), np.array([-inf, -0.0, 0.0, 1.0, 1.0, 3.0, inf, nan, nan]))
    _assert_same_array(_np(r.indices), np.array([2, 6, 7, 3, 8, 0, 5, 1, 4]))
    r = x.sort(descending=True)
    _assert_same_array(_np(r.values), np.array([nan, nan, inf, 3.0, 1.0, 1.0, -0.0, 0.0, -inf]))
    _assert_same_array(_np(r.indices), np.array([1, 4, 5, 0, 3, 8, 6, 7, 2]))
    for descending in (False, True):
        v, i = _np_sort(_np(x), 0, descending)
        _assert_same_array(_np(x.sort(descending=descending).indices), i)


def test_sort_zero_dim_and_non_contiguous_numpy():
    r = _t(np.float32(2.5)).sort()
    _assert_same_array(_np(r.values), np.float32(2.5))
    _assert_same_array(_np(r.indices), np.int64(0))
    _assert_same_array(_np(_t(np.float32(2.5)).sort(-1, True).indices), np.int64(0))
    a = _ints(5, 6)
    views = [(lambda x: x.t(), a.T), (lambda x: x[::2, 1:], a[::2, 1:]), (lambda x: x.flip(1), a[:, ::-1])]
    for view, ref in views:
        for dim in (0, 1):
            values, indices = _np_sort(np.ascontiguousarray(ref), dim, False)
            r = view(_t(a)).sort(dim)
            _assert_same_array(_np(r.values), values)
            _assert_same_array(_np(r.indices), indices)


def test_sort_large_stable_numpy():
    a = _ints(3, 3000, high=5)
    for descending in (False, True):
        values, indices = _np_sort(a, 1, descending)
        r = _t(a).sort(dim=1, descending=descending, stable=True)
        _assert_same_array(_np(r.values), values)
        _assert_same_array(_np(r.indices), indices)


def test_sort_grad_closed_form():
    a = _distinct(3, 5)
    g = _randn(3, 5, dtype=np.float64)
    for dim, descending in [(1, False), (0, True), (-1, True)]:
        x = _t(a, True)
        r = x.sort(dim, descending)
        assert r.values.grad_fn.name() == "SortBackward0"
        assert r.indices.grad_fn is None and not r.indices.requires_grad
        r.values.backward(_t(g))
        expected = np.zeros_like(a)
        np.put_along_axis(expected, _np(r.indices), g, dim)
        np.testing.assert_array_equal(_np(x.grad), expected)
    x = _t(a, True)
    assert not x.argsort().requires_grad and x.argsort().dtype == ferrograd.int64


def test_sort_parity(torch):
    for a in _sort_inputs(4, 6) + (_randn(4, 6).astype(np.float64),):
        for dim in (0, 1, -1, -2):
            for descending in (False, True):
                _same(torch, lambda m, x: x.sort(stable=True, dim=dim, descending=descending), a)
                _same(torch, lambda m, x: m.sort(x, dim=dim, descending=descending, stable=True), a)
                _same(torch, lambda m, x: x.argsort(stable=True, dim=dim, descending=descending), a)
                _same(torch, lambda m, x: m.argsort(x, dim, descending, stable=True), a)
    a = _randn(4, 6)  # no ties: the unstable sort is then unique
    _same(torch, lambda m, x: m.sort(x, dim=0, descending=True), a, grad=True)
    _same(torch, lambda m, x: x.sort(0, True), a)
    _same(torch, lambda m, x: x.sort(), a)
    _same(torch, lambda m, x: x.argsort(1), a)
    _same(torch, lambda m, x: m.argsort(x, 0, True), a)
    _same(torch, lambda m, x: x.sort(descending=True, stable=None), a)
    _same(torch, lambda m, x: x.sort(dim=m.tensor(0)), a)
    _same(torch, lambda m, x: m.sort(x, out=None), a)
    _same(torch, lambda m, x: x.t().sort(stable=True, dim=1), _ints(4, 6))
    _same(torch, lambda m, x: x[::2, 1::2].sort(stable=True, dim=0, descending=True), _ints(5, 6))
    _same(torch, lambda m, x: x.t().sort(1), _randn(4, 6), grad=True)
    _same(torch, lambda m, x: x[::2, 1::2].sort(0, True), _randn(5, 6), grad=True)


@pytest.mark.parametrize("stable", [True, False, None])
def test_sort_stable_grad_fn_name(stable):
    x = _t(_randn(3, 4), True)
    assert x.sort(stable=stable).values.grad_fn.name() == "SortBackward1"
    assert ferrograd.sort(x, dim=0, stable=stable).values.grad_fn.name() == "SortBackward1"


def test_sort_stable_grad_fn_name_parity(torch):
    x = torch.randn(3, 4, requires_grad=True)
    for stable in (True, False, None):
        assert x.sort(stable=stable).values.grad_fn.name() == "SortBackward1"
    assert x.sort().values.grad_fn.name() == "SortBackward0"
    assert _t(_randn(3, 4), True).sort().values.grad_fn.name() == "SortBackward0"


def test_sort_special_values_parity(torch):
    nan, inf = float("nan"), float("inf")
    a = np.array([[3.0, nan, -inf, 1.0, nan, inf, -0.0, 0.0, 1.0, nan],
                  [0.0, -0.0, 0.0, 2.0, 2.0, -1.0, nan, 5.0, -inf, inf]])
    for dtype in (np.float32, np.float64):
        for descending in (False, True):
            for stable in (True, False):
                # up to 16 elements PyTorch's CPU sort is stable even with stable=False
                fn = lambda m, x: x.sort(dim=1, descending=descending, stable=stable)  # noqa: E731
                _same(torch, fn, a.astype(dtype))
            _same(torch, lambda m, x: x.sort(0, descending), a.astype(dtype)[:, :3])
    big = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0, -1, 2**53 + 1, 2**53])
    _same(torch, lambda m, x: x.sort(), big)
    _same(torch, lambda m, x: x.sort(descending=True), big)
    _same(torch, lambda m, x: x.sort(), np.array(1.5, np.float32))
    _same(torch, lambda m, x: x.sort(0, True), np.array(1.5, np.float32), grad=True)
    _same(torch, lambda m, x: x.argsort(), np.array(7))
    _same(torch, lambda m, x: x.sort(0), np.zeros((0, 3), np.float32), grad=True)
    _same(torch, lambda m, x: x.sort(1), np.zeros((0, 3), np.float32))


def test_sort_unstable_parity(torch):
    """With ``stable=False`` PyTorch's order of equal elements is unspecified (and not stable
    on long rows): values must match, indices must point to them and be a permutation."""
    a = _ints(3, 300, high=5)
    for descending in (False, True):
        t_r = torch.tensor(a).sort(dim=1, descending=descending)
        f_r = _t(a).sort(dim=1, descending=descending)
        _assert_same_array(_np(f_r.values), t_r.values.numpy())
        idx = _np(f_r.indices)
        np.testing.assert_array_equal(np.sort(idx, axis=1), np.tile(np.arange(300), (3, 1)))
        np.testing.assert_array_equal(np.take_along_axis(a, idx, 1), t_r.values.numpy())


# ============================================================ topk

TOPK = [
    ((7,), 3, 0), ((7,), 7, 0), ((7,), 0, 0), ((4, 6), 2, 1), ((4, 6), 4, 0), ((4, 6), 1, -1),
    ((3, 4, 5), 2, 1), ((3, 4, 5), 3, -3), ((3, 0), 0, 1), ((0, 3), 2, 1),
]


@pytest.mark.parametrize("shape,k,dim", TOPK, ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_numpy(shape, k, dim, largest):
    a = _distinct(*shape)
    key = -a if largest else a
    idx = np.take(np.argsort(key, axis=dim), np.arange(k), axis=dim)
    r = _t(a).topk(k, dim, largest)
    _assert_same_array(_np(r.values), np.take_along_axis(a, idx, dim))
    _assert_same_array(_np(r.indices), idx.astype(np.int64))
    r = ferrograd.topk(_t(a), k=k, dim=dim, largest=largest, sorted=True)
    _assert_same_array(_np(r[0]), np.take_along_axis(a, idx, dim))
    r = _t(np.rint(a * 7).astype(np.int64)).topk(k, dim, largest)
    _assert_same_array(_np(r.indices), idx.astype(np.int64))


def test_topk_nan_and_ties_hand_computed():
    nan = float("nan")
    x = _t(np.array([3.0, nan, 1.0, nan, 2.0]))
    r = x.topk(3)
    _assert_same_array(_np(r.values), np.array([nan, nan, 3.0]))
    assert sorted(_np(r.indices)[:2]) == [1, 3] and _np(r.indices)[2] == 0
    r = x.topk(2, largest=False)
    _assert_same_array(_np(r.values), np.array([1.0, 2.0]))
    _assert_same_array(_np(r.indices), np.array([2, 4]))
    # ties: the values are determined, the indices only up to the order of equal values
    a = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    r = _t(a).topk(3)
    _assert_same_array(_np(r.values), np.ones(3))
    assert set(_np(r.indices)) <= {0, 1, 2, 5} and len(set(_np(r.indices))) == 3


def test_topk_grad_closed_form():
    a = _distinct(3, 5)
    g = _randn(3, 2, dtype=np.float64)
    x = _t(a, True)
    r = x.topk(2, dim=1, largest=False)
    assert r.values.grad_fn.name() == "TopkBackward0"
    assert r.indices.grad_fn is None and not r.indices.requires_grad
    r.values.backward(_t(g))
    expected = np.zeros_like(a)
    np.put_along_axis(expected, _np(r.indices), g, 1)
    np.testing.assert_array_equal(_np(x.grad), expected)


@pytest.mark.parametrize("shape,k,dim", TOPK, ids=str)
def test_topk_parity(torch, shape, k, dim):
    a = _distinct(*shape)
    for largest in (True, False):
        _same(torch, lambda m, x: x.topk(k, dim, largest), a, grad=True)
        _same(torch, lambda m, x: m.topk(x, k=k, dim=dim, largest=largest, sorted=True), a)
    _same(torch, lambda m, x: x.topk(k, dim), np.rint(a * 7).astype(np.int64))
    _same(torch, lambda m, x: x.topk(k, dim), a.astype(np.float32))


def test_topk_forms_parity(torch):
    a = _distinct(4, 5)
    _same(torch, lambda m, x: m.topk(x, k=2, dim=0, largest=False, sorted=True), a, grad=True)
    _same(torch, lambda m, x: m.topk(x, 2, 0, False, True), a)
    _same(torch, lambda m, x: x.topk(2), a)
    _same(torch, lambda m, x: x.topk(k=m.tensor(2)), a)
    _same(torch, lambda m, x: x.topk(m.tensor([3]), largest=False), a)
    _same(torch, lambda m, x: m.topk(x, 1, out=None), a)
    _same(torch, lambda m, x: x.t().topk(3, dim=0), a, grad=True)
    _same(torch, lambda m, x: x[:, ::2].topk(2, 0, False), a, grad=True)
    _same(torch, lambda m, x: x.topk(1), np.array(1.5), grad=True)
    _same(torch, lambda m, x: x.topk(1, 0, False), np.array(4))
    nan = float("nan")
    _same(torch, lambda m, x: x.topk(4), np.array([3.0, nan, 1.0, -float("inf"), nan, 2.0]))
    _same(torch, lambda m, x: x.topk(3, largest=False), np.array([3.0, nan, 1.0, -float("inf"), nan, 2.0]))


def test_topk_unsorted_and_ties_parity(torch):
    """``sorted=False`` leaves the order unspecified and so does a tie: the same values (as
    sets per row) and indices that point at them."""
    a = _distinct(4, 9)
    t_r = torch.tensor(a).topk(4, dim=1, sorted=False)
    f_r = _t(a).topk(4, dim=1, sorted=False)
    np.testing.assert_array_equal(np.sort(_np(f_r.values), 1), np.sort(t_r.values.numpy(), 1))
    np.testing.assert_array_equal(np.take_along_axis(a, _np(f_r.indices), 1), _np(f_r.values))
    a = _ints(5, 40, high=3)
    for largest in (True, False):
        t_r = torch.tensor(a).topk(7, dim=1, largest=largest)
        f_r = _t(a).topk(7, dim=1, largest=largest)
        _assert_same_array(_np(f_r.values), t_r.values.numpy())
        idx = _np(f_r.indices)
        np.testing.assert_array_equal(np.take_along_axis(a, idx, 1), _np(f_r.values))
        assert all(len(set(row)) == 7 for row in idx)


# ============================================================ scatter


def _np_scatter(a, dim, index, src):
    """``a`` with ``a[..., index[i], ...] = src[i]`` along ``dim`` for the index's extent."""
    out = a.copy()
    block = tuple(slice(None) if d == dim % a.ndim else slice(0, n) for d, n in enumerate(index.shape))
    if np.ndim(src) == 0:
        src = np.broadcast_to(src, index.shape)
    else:
        src = src[tuple(slice(0, n) for n in index.shape)]
    np.put_along_axis(out[block], index, src, dim)
    return out


def _unique_index(shape, size, dim):
    """An index of ``shape`` whose entries along ``dim`` are distinct, in ``[0, size)``."""
    keys = RNG.random(shape[:dim] + (size,) + shape[dim + 1 :])
    idx = np.argsort(keys, axis=dim)
    return np.take(idx, np.arange(shape[dim]), axis=dim).astype(np.int64)


SCATTERS = [
    ((5,), (3,), 0), ((4, 5), (2, 5), 0), ((4, 5), (4, 3), 1), ((4, 5), (3, 2), -1),
    ((3, 4, 5), (2, 4, 3), 0), ((3, 4, 5), (3, 2, 5), -2), ((4, 5), (0, 5), 0),
]


@pytest.mark.parametrize("shape,ishape,dim", SCATTERS, ids=str)
def test_scatter_numpy(shape, ishape, dim):
    a = _randn(*shape)
    d = dim % len(shape)
    index = _unique_index(ishape, shape[d], d)
    src = _randn(*[n + 1 for n in ishape])
    _assert_same_array(_np(_t(a).scatter(dim, _t(index), _t(src))), _np_scatter(a, d, index, src))
    out = ferrograd.scatter(_t(a), dim, _t(index), src=_t(src))
    _assert_same_array(_np(out), _np_scatter(a, d, index, src))
    _assert_same_array(_np(_t(a).scatter(dim, _t(index), 2.5)), _np_scatter(a, d, index, np.float32(2.5)))
    _assert_same_array(_np(_t(a).scatter(dim, _t(index), value=-1)), _np_scatter(a, d, index, np.float32(-1)))
    out = ferrograd.scatter(_t(a), dim=dim, index=_t(index), value=3)
    _assert_same_array(_np(out), _np_scatter(a, d, index, np.float32(3)))
    # the input is left alone
    _assert_same_array(_np(_t(a)), a)


def test_scatter_dtypes_non_contiguous_numpy():
    a = (RNG.standard_normal((4, 5)) * 5).astype(np.int64)
    index = _unique_index((2, 5), 4, 0)
    src = (RNG.standard_normal((2, 5)) * 5).astype(np.int64)
    _assert_same_array(_np(_t(a).scatter(0, _t(index), _t(src))), _np_scatter(a, 0, index, src))
    _assert_same_array(_np(_t(a).scatter(0, _t(index), 7)), _np_scatter(a, 0, index, np.int64(7)))
    _assert_same_array(_np(_t(a).scatter(0, _t(index), 7.9)), _np_scatter(a, 0, index, np.int64(7)))
    b = a > 0
    _assert_same_array(_np(_t(b).scatter(0, _t(index), True)), _np_scatter(b, 0, index, np.bool_(True)))
    _assert_same_array(_np(_t(b).scatter(0, _t(index), _t(src > 2))), _np_scatter(b, 0, index, src > 2))
    f = _randn(5, 4)
    x = _t(f).t()  # (4, 5), not contiguous
    idx_t = _t(np.ascontiguousarray(index.T)).t()
    src_t = _t(np.ascontiguousarray(src.T.astype(np.float32))).t()
    _assert_same_array(_np(x.scatter(0, idx_t, src_t)), _np_scatter(f.T, 0, index, src.astype(np.float32)))


def test_scatter_duplicate_index_equal_values():
    a = np.zeros((2, 4), np.float32)
    index = np.array([[1, 1, 3], [0, 0, 0]])
    out = _t(a).scatter(1, _t(index), 5.0)
    _assert_same_array(_np(out), np.array([[0, 5, 0, 5], [5, 0, 0, 0]], np.float32))


def test_scatter_out_of_range_leaves_input():
    x = _t(np.zeros(3, np.float32))
    with pytest.raises(RuntimeError, match=r"^index 3 is out of bounds for dimension 0 with size 3$"):
        x.scatter(0, _t(np.array([1, 3])), _t(np.array([4.0, 5.0], np.float32)))
    _assert_same_array(_np(x), np.zeros(3, np.float32))


def test_scatter_grad_closed_form():
    a = _randn(4, 5, dtype=np.float64)
    index = _unique_index((2, 5), 4, 0)
    src = _randn(2, 5, dtype=np.float64)
    g = _randn(4, 5, dtype=np.float64)
    x, s = _t(a, True), _t(src, True)
    y = x.scatter(0, _t(index), s)
    assert y.grad_fn.name() == "ScatterBackward0"
    y.backward(_t(g))
    np.testing.assert_array_equal(_np(x.grad), _np_scatter(g, 0, index, np.float64(0)))
    np.testing.assert_array_equal(_np(s.grad), np.take_along_axis(g, index, 0))
    # a src larger than the index: PyTorch's backward refuses the gathered gradient too
    s = _t(_randn(3, 5, dtype=np.float64), True)
    y = _t(a, True).scatter(0, _t(index), s)
    with pytest.raises(RuntimeError) as info:
        y.backward(_t(g))
    assert str(info.value) == ("Function ScatterBackward0 returned an invalid gradient at index 1 - "
                               "got [2, 5] but expected shape compatible with [3, 5]")
    x = _t(a, True)
    y = x.scatter(1, _t(_unique_index((4, 2), 5, 1)), 1.5)
    assert y.grad_fn.name() == "ScatterBackward1"


@pytest.mark.parametrize("shape,ishape,dim", SCATTERS, ids=str)
def test_scatter_parity(torch, shape, ishape, dim):
    a = _randn(*shape)
    d = dim % len(shape)
    index = _unique_index(ishape, shape[d], d)
    src = _randn(*[n + 1 for n in ishape])
    _same(torch, lambda m, x, i, s: x.scatter(dim, i, s), a, index, src, grad=True)
    _same(torch, lambda m, x, i: x.scatter(dim, i, 2.5), a, index, grad=True)
    _same(torch, lambda m, x, i, s: m.scatter(x, dim, i, src=s), a, index, src)
    _same(torch, lambda m, x, i: m.scatter(x, dim=dim, index=i, value=-3), a, index)


def test_scatter_forms_parity(torch):
    a = _randn(3, 4)
    index = _unique_index((2, 4), 3, 0)
    src = _randn(2, 4)
    _same(torch, lambda m, x, i, s: x.scatter(0, i, src=s), a, index, src, grad=True)
    _same(torch, lambda m, x, i: x.scatter(dim=0, index=i, value=7), a, index, grad=True)
    _same(torch, lambda m, x, i: x.scatter(0, i, True), a, index)
    _same(torch, lambda m, x, i: x.scatter(0, i, np.float64(2.5)), a, index)
    _same(torch, lambda m, x, i: x.scatter(m.tensor(0), i, 1.0), a, index)
    _same(torch, lambda m, x, i, s: x.t().scatter(1, i, s), a, index, src, grad=True)
    _same(torch, lambda m, x, i, s: x.scatter(0, i.t().t(), s[:, ::1]), a, index, src, grad=True)
    _same(torch, lambda m, x, i: x.scatter(0, i, 7.9), (a * 5).astype(np.int64), index)
    _same(torch, lambda m, x, i: x.scatter(0, i, 0.5), a > 0, index)
    a64, src64 = a.astype(np.float64), src.astype(np.float64)
    _same(torch, lambda m, x, i, s: x.scatter(0, i, s), a64, index, src64, grad=True)
    _same(torch, lambda m, x, i: x.scatter(0, i, 1.0), a, np.array([[3, 0]]))
    _same(torch, lambda m, x, i: x.scatter(1, i, 1.0), a, np.array([[1, 4]]))


# ============================================================ gradcheck / gradgradcheck

GRAD_OPS = {
    "tril": (lambda x: x.tril(-1), (4, 5)),
    "triu": (lambda x: x.triu(1), (2, 4, 3)),
    "tril_t": (lambda x: x.t().tril(), (4, 5)),
    "flip": (lambda x: x.flip(0, -1), (3, 4)),
    "flip_slice": (lambda x: x[:, ::2].flip(1), (3, 6)),
    "roll": (lambda x: x.roll((1, -2), (0, 1)), (3, 4)),
    "roll_flat": (lambda x: x.roll(5), (3, 4)),
    "repeat": (lambda x: x.repeat(2, 1, 3), (2, 3)),
    "tile": (lambda x: x.tile(2), (2, 3)),
    "sort": (lambda x: x.sort(0, descending=True).values, (4, 3)),
    "sort_t": (lambda x: x.t().sort(-1).values, (4, 3)),
    "topk": (lambda x: x.topk(2, dim=1).values, (3, 5)),
    "topk_smallest": (lambda x: x.topk(3, dim=0, largest=False).values, (4, 3)),
    "scatter_value": (lambda x: x.scatter(1, ferrograd.tensor([[0, 2], [1, 3], [3, 0]]), 2.5), (3, 4)),
}


@pytest.mark.parametrize("name", list(GRAD_OPS))
def test_gradcheck(name):
    fn, shape = GRAD_OPS[name]
    x = _t(_distinct(*shape), True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_gradcheck_scatter_src():
    index = ferrograd.tensor([[0, 2, 1, 3], [2, 0, 3, 1]])
    x = _t(_distinct(4, 4), True)
    s = _t(_distinct(2, 4), True)
    fn = lambda x, s: x.scatter(0, index, s)  # noqa: E731
    assert gradcheck(fn, (x, s))
    assert gradgradcheck(fn, (x, s))


# ============================================================ return types


def test_return_types():
    x = _t(np.array([[3.0, 1.0, 2.0]]))
    results = [(x.sort(), "sort"), (x.topk(2), "topk"), (ferrograd.sort(x), "sort"), (ferrograd.topk(x, 1), "topk")]
    for r, name in results:
        assert type(r).__name__ == name and isinstance(r, tuple) and len(r) == 2
        values, indices = r
        assert values is r.values and indices is r.indices and r[0] is r.values
        assert repr(r) == f"torch.return_types.{name}(\nvalues={r.values!r},\nindices={r.indices!r})"
        assert str(r) == repr(r)
    assert _np(x.sort().indices).tolist() == [[1, 2, 0]]


def test_return_types_parity(torch):
    a = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], np.float32)
    for fn in (lambda m, x: x.sort(), lambda m, x: m.sort(x, dim=0, descending=True), lambda m, x: x.topk(2),
               lambda m, x: m.topk(x, k=1, dim=0, largest=False, sorted=True)):
        t_r, f_r = _same(torch, fn, a)
        assert repr(f_r) == repr(t_r)
        assert str(f_r) == str(t_r)
        x = ferrograd.tensor(a, requires_grad=True)
        t_x = torch.tensor(a, requires_grad=True)
        assert repr(fn(ferrograd, x)) == repr(fn(torch, t_x))


# ============================================================ argument errors (PyTorch 2.13's texts)

_SORT_METHOD = (
    " * (*, bool stable, int dim = -1, bool descending = False)\n"
    " * (int dim = -1, bool descending = False)\n"
)
_SORT_FUNCTION = (
    " * (Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of Tensors out = None)\n"
    " * (Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None)\n"
)
_ARGSORT_FUNCTION = (
    " * (Tensor input, *, bool stable, int dim = -1, bool descending = False, Tensor out = None)\n"
    " * (Tensor input, int dim = -1, bool descending = False)\n"
)
_SCATTER_METHOD = (
    " * (int dim, Tensor index, Tensor src)\n * (int dim, Tensor index, Tensor src, *, str reduce)\n"
    " * (int dim, Tensor index, Number value)\n * (int dim, Tensor index, Number value, *, str reduce)\n"
)
_SCATTER_FUNCTION = (
    " * (Tensor input, int dim, Tensor index, Tensor src, *, Tensor out = None)\n"
    " * (Tensor input, int dim, Tensor index, Tensor src, *, str reduce, Tensor out = None)\n"
    " * (Tensor input, int dim, Tensor index, Number value, *, Tensor out = None)\n"
    " * (Tensor input, int dim, Tensor index, Number value, *, str reduce, Tensor out = None)\n"
)


def _x(m):
    return m.tensor([[1.0, 2.0], [3.0, 4.0]])


def _i(m):
    return m.tensor([[1, 0]])


ERRORS = [
    # tril / triu
    (lambda m: _x(m).tril(0.5), TypeError, "tril(): argument 'diagonal' (position 1) must be int, not float"),
    (lambda m: _x(m).tril(True), TypeError, "tril(): argument 'diagonal' (position 1) must be int, not bool"),
    (lambda m: _x(m).tril(None), TypeError,
     "tril(): argument 'diagonal' (position 1) must be int, not NoneType"),
    (lambda m: _x(m).tril(diagonal=1.5), TypeError, "tril(): argument 'diagonal' must be int, not float"),
    (lambda m: m.triu(_x(m), 1.5), TypeError,
     "triu(): argument 'diagonal' (position 2) must be int, not float"),
    (lambda m: _x(m).tril(0, 1), TypeError, "tril() takes from 0 to 1 positional arguments but 2 were given"),
    (lambda m: _x(m).tril(foo=2), TypeError, "tril() got an unexpected keyword argument 'foo'"),
    (lambda m: m.tril(), TypeError, 'tril() missing 1 required positional arguments: "input"'),
    (lambda m: m.tril(3), TypeError, "tril(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda m: m.tensor([1.0, 2.0]).tril(), RuntimeError,
     "tril: input tensor must have at least 2 dimensions"),
    (lambda m: m.tensor(1.0).triu(), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    # flip
    (lambda m: _x(m).flip(), TypeError, 'flip() missing 1 required positional arguments: "dims"'),
    (lambda m: _x(m).flip(foo=2), TypeError, 'flip() missing 1 required positional arguments: "dims"'),
    (lambda m: m.flip(_x(m)), TypeError, 'flip() missing 1 required positional arguments: "dims"'),
    (lambda m: m.flip(_x(m), 1), TypeError,
     "flip(): argument 'dims' (position 2) must be tuple of ints, not int"),
    (lambda m: m.flip(_x(m), 0.5), TypeError,
     "flip(): argument 'dims' (position 2) must be tuple of ints, not float"),
    (lambda m: m.flip(_x(m), (0,), 1), TypeError, "flip() takes 2 positional arguments but 3 were given"),
    (lambda m: m.flip(_x(m), (0,), dims=(0,)), TypeError, "flip() got multiple values for argument 'dims'"),
    (lambda m: m.flip(_x(m), dims=(0,), foo=1), TypeError, "flip() got an unexpected keyword argument 'foo'"),
    (lambda m: m.flip(3, (0,)), TypeError, "flip(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda m: _x(m).flip(dims=0), TypeError, "flip(): argument 'dims' must be tuple of ints, not int"),
    (lambda m: _x(m).flip(1.0), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, not float"),
    (lambda m: _x(m).flip(True), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, not bool"),
    (lambda m: _x(m).flip(range(2)), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, not range"),
    (lambda m: _x(m).flip(m.tensor([0, 1])), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, not Tensor"),
    (lambda m: _x(m).flip(0.5, 1), TypeError, "flip() takes 1 positional argument but 2 were given"),
    (lambda m: _x(m).flip((0,), 1), TypeError, "flip() takes 1 positional argument but 2 were given"),
    (lambda m: _x(m).flip(0, dims=1), TypeError, "flip() got multiple values for argument 'dims'"),
    (lambda m: _x(m).flip([True]), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, but found element of type bool at pos 0"),
    (lambda m: _x(m).flip((0.5,)), TypeError,
     "flip(): argument 'dims' (position 1) must be tuple of ints, but found element of type float at pos 0"),
    (lambda m: _x(m).flip((0, 0.5)), TypeError,
     'flip(): argument \'dims\' failed to unpack the object at pos 2 with error "type must be tuple of '
     'ints,but got float"'),
    (lambda m: _x(m).flip(dims=(0, 0.5)), TypeError,
     'flip(): argument \'dims\' failed to unpack the object at pos 2 with error "type must be tuple of '
     'ints,but got float"'),
    (lambda m: _x(m).flip(0, m.tensor(1.0)), TypeError,
     'flip(): argument \'dims\' failed to unpack the object at pos 2 with error "type must be tuple of '
     'ints,but got Tensor"'),
    (lambda m: _x(m).flip(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: _x(m).flip(0, -3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda m: m.tensor(1.0).flip(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    # roll
    (lambda m: _x(m).roll(), TypeError, 'roll() missing 1 required positional arguments: "shifts"'),
    (lambda m: _x(m).roll(foo=1), TypeError, 'roll() missing 1 required positional arguments: "shifts"'),
    (lambda m: _x(m).roll(1, foo=1), TypeError, "roll() got an unexpected keyword argument 'foo'"),
    (lambda m: _x(m).roll(1, 0, 1), TypeError,
     "roll() takes from 1 to 2 positional arguments but 3 were given"),
    (lambda m: m.roll(_x(m), 1, 0, 1), TypeError,
     "roll() takes from 2 to 3 positional arguments but 4 were given"),
    (lambda m: m.roll(_x(m)), TypeError, 'roll() missing 1 required positional arguments: "shifts"'),
    (lambda m: _x(m).roll(1.5), TypeError,
     "roll(): argument 'shifts' (position 1) must be tuple of ints, not float"),
    (lambda m: _x(m).roll(True), TypeError,
     "roll(): argument 'shifts' (position 1) must be tuple of ints, not bool"),
    (lambda m: _x(m).roll(shifts=1.5), TypeError,
     "roll(): argument 'shifts' must be tuple of ints, not float"),
    (lambda m: _x(m).roll(1, 0.5), TypeError,
     "roll(): argument 'dims' (position 2) must be tuple of ints, not float"),
    (lambda m: _x(m).roll(1, dims=0.5), TypeError,
     "roll(): argument 'dims' must be tuple of ints, not float"),
    (lambda m: m.roll(_x(m), 0.5), TypeError,
     "roll(): argument 'shifts' (position 2) must be tuple of ints, not float"),
    (lambda m: m.roll(_x(m), 1, 0.5), TypeError,
     "roll(): argument 'dims' (position 3) must be tuple of ints, not float"),
    (lambda m: _x(m).roll((1, 0.5), (0, 1)), TypeError,
     'roll(): argument \'shifts\' failed to unpack the object at pos 2 with error "type must be tuple of '
     'ints,but got float"'),
    (lambda m: _x(m).roll((1,), (True,)), TypeError,
     "roll(): argument 'dims' (position 2) must be tuple of ints, but found element of type bool at pos 0"),
    (lambda m: _x(m).roll(1, (0, 0)), RuntimeError, "shifts and dimensions must align. shifts: 1, dims:2"),
    (lambda m: _x(m).roll((1, 2), (0,)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda m: _x(m).roll(1, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    # repeat / tile
    (lambda m: _x(m).repeat(), TypeError, 'repeat() missing 1 required positional arguments: "repeats"'),
    (lambda m: m.tensor(3.0).repeat(), TypeError,
     'repeat() missing 1 required positional arguments: "repeats"'),
    (lambda m: _x(m).repeat(foo=2), TypeError, 'repeat() missing 1 required positional arguments: "repeats"'),
    (lambda m: _x(m).repeat(1.5), TypeError,
     "repeat(): argument 'repeats' (position 1) must be tuple of ints, not float"),
    (lambda m: _x(m).repeat(repeats=2), TypeError,
     "repeat(): argument 'repeats' must be tuple of ints, not int"),
    (lambda m: _x(m).repeat(repeats=0.5), TypeError,
     "repeat(): argument 'repeats' must be tuple of ints, not float"),
    (lambda m: _x(m).repeat([2, 2.0]), TypeError,
     'repeat(): argument \'repeats\' failed to unpack the object at pos 2 with error "type must be tuple '
     'of ints,but got float"'),
    (lambda m: _x(m).repeat(2, 0.5), TypeError,
     'repeat(): argument \'repeats\' failed to unpack the object at pos 2 with error "type must be tuple '
     'of ints,but got float"'),
    (lambda m: _x(m).repeat(0.5, 2), TypeError, "repeat() takes 1 positional argument but 2 were given"),
    (lambda m: _x(m).repeat(True, 2), TypeError, "repeat() takes 1 positional argument but 2 were given"),
    (lambda m: _x(m).repeat((2, 1), 1), TypeError, "repeat() takes 1 positional argument but 2 were given"),
    (lambda m: _x(m).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda m: _x(m).repeat(()), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda m: _x(m).tile(), TypeError, 'tile() missing 1 required positional arguments: "dims"'),
    (lambda m: _x(m).tile(1.5), TypeError,
     "tile(): argument 'dims' (position 1) must be tuple of ints, not float"),
    (lambda m: _x(m).tile(dims=2), TypeError, "tile(): argument 'dims' must be tuple of ints, not int"),
    (lambda m: _x(m).tile(2, 0.5), TypeError,
     'tile(): argument \'dims\' failed to unpack the object at pos 2 with error "type must be tuple of '
     'ints,but got float"'),
    (lambda m: m.tile(_x(m), 2), TypeError,
     "tile(): argument 'dims' (position 2) must be tuple of ints, not int"),
    (lambda m: m.tile(_x(m), 2, 1), TypeError, "tile() takes 2 positional arguments but 3 were given"),
    (lambda m: m.tile(_x(m), (0.5,)), TypeError,
     "tile(): argument 'dims' (position 2) must be tuple of ints, but found element of type float at pos 0"),
    # sort / argsort
    (lambda m: _x(m).sort(0.5), TypeError,
     "sort() received an invalid combination of arguments - got (float), but expected one "
     "of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(None), TypeError,
     "sort() received an invalid combination of arguments - got (NoneType), but expected "
     "one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(True), TypeError,
     "sort() received an invalid combination of arguments - got (bool), but expected one "
     "of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(0, 1), TypeError,
     "sort() received an invalid combination of arguments - got (int, int), but expected "
     "one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(dim=0.5), TypeError,
     "sort() received an invalid combination of arguments - got (dim=float, ), but expected "
     "one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(dim=0.5, descending=True), TypeError,
     "sort() received an invalid combination of arguments - got (descending=bool, "
     "dim=float, ), but expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(0, descending=1), TypeError,
     "sort() received an invalid combination of arguments - got (int, descending=int), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(descending=None), TypeError,
     "sort() received an invalid combination of arguments - got (descending=NoneType, ), "
     "but expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(stable=1), TypeError,
     "sort() received an invalid combination of arguments - got (stable=int, ), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(stable=True, foo=1), TypeError,
     "sort() received an invalid combination of arguments - got (foo=int, stable=bool, ), "
     "but expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(0, True, True), TypeError,
     "sort() takes from 1 to 0 positional arguments but 3 were given"),
    (lambda m: _x(m).sort(0, stable=True), TypeError,
     "sort() received an invalid combination of arguments - got (int, stable=bool), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).sort(1, descending=True, stable=True), TypeError,
     "sort() takes from 1 to 0 positional arguments but 1 were given"),
    (lambda m: _x(m).sort(0, True, stable=None), TypeError,
     "sort() takes from 1 to 0 positional arguments but 2 were given"),
    (lambda m: _x(m).sort(0, np.bool_(True)), TypeError,
     "sort() received an invalid combination of arguments - got (int, numpy.bool), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).argsort(1, stable=True), TypeError,
     "argsort() received an invalid combination of arguments - got (int, stable=bool), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: m.sort(_x(m), 1, stable=True), TypeError,
     "sort() received an invalid combination of arguments - got (Tensor, int, stable=bool), but "
     "expected one of:\n"
     + _SORT_FUNCTION),
    (lambda m: _x(m).argsort(0.5), TypeError,
     "argsort() received an invalid combination of arguments - got (float), but expected "
     "one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).argsort(stable=None), TypeError,
     "argsort() received an invalid combination of arguments - got (stable=NoneType, ), but "
     "expected one of:\n" + _SORT_METHOD),
    (lambda m: _x(m).argsort(0, True, True), TypeError,
     "argsort() takes from 1 to 0 positional arguments but 3 were given"),
    (lambda m: m.sort(_x(m), 0.5), TypeError,
     "sort() received an invalid combination of arguments - got (Tensor, float), but expected one of:\n"
     + _SORT_FUNCTION),
    (lambda m: m.sort(_x(m), 0, True, True), TypeError,
     "sort() received an invalid combination of arguments - got (Tensor, int, bool, bool), but "
     "expected one of:\n"
     + _SORT_FUNCTION),
    (lambda m: m.argsort(_x(m), 0.5), TypeError,
     "argsort() received an invalid combination of arguments - got (Tensor, float), but expected one of:\n"
     + _ARGSORT_FUNCTION),
    (lambda m: m.argsort(_x(m), 0, True, True), TypeError,
     "argsort() takes from 2 to 1 positional arguments but 4 were given"),
    (lambda m: m.argsort(_x(m), 0, True, stable=True), TypeError,
     "argsort() takes from 2 to 1 positional arguments but 3 were given"),
    (lambda m: m.sort(3), TypeError, "sort(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda m: _x(m).sort(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: _x(m).argsort(-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda m: m.tensor(1.0).sort(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    # topk
    (lambda m: _x(m).topk(), TypeError, 'topk() missing 1 required positional arguments: "k"'),
    (lambda m: _x(m).topk(1.5), TypeError, "topk(): argument 'k' (position 1) must be int, not float"),
    (lambda m: _x(m).topk(True), TypeError, "topk(): argument 'k' (position 1) must be int, not bool"),
    (lambda m: _x(m).topk(m.tensor(1.0)), TypeError,
     "topk(): argument 'k' (position 1) must be int, not Tensor"),
    (lambda m: _x(m).topk(k=1.5), TypeError, "topk(): argument 'k' must be int, not float"),
    (lambda m: _x(m).topk(1, 0.5), TypeError, "topk(): argument 'dim' (position 2) must be int, not float"),
    (lambda m: _x(m).topk(1, None), TypeError,
     "topk(): argument 'dim' (position 2) must be int, not NoneType"),
    (lambda m: _x(m).topk(1, dim=0.5), TypeError, "topk(): argument 'dim' must be int, not float"),
    (lambda m: _x(m).topk(1, 0, 1), TypeError,
     "topk(): argument 'largest' (position 3) must be bool, not int"),
    (lambda m: _x(m).topk(1, sorted=None), TypeError, "topk(): argument 'sorted' must be bool, not NoneType"),
    (lambda m: _x(m).topk(1, largest=m.tensor(True)), TypeError,
     "topk(): argument 'largest' must be bool, not Tensor"),
    (lambda m: _x(m).topk(1, largest=np.bool_(False)), TypeError,
     "topk(): argument 'largest' must be bool, not numpy.bool"),
    (lambda m: _x(m).topk(1, 0, np.bool_(False)), TypeError,
     "topk(): argument 'largest' (position 3) must be bool, not numpy.bool"),
    (lambda m: _x(m).topk(np.float64(1)), TypeError,
     "topk(): argument 'k' (position 1) must be int, not numpy.float64"),
    (lambda m: _x(m).topk(1, 0, True, True, 1), TypeError,
     "topk() takes from 1 to 4 positional arguments but 5 were given"),
    (lambda m: _x(m).topk(1, out=1), TypeError, "topk() got an unexpected keyword argument 'out'"),
    (lambda m: m.topk(_x(m), 0.5), TypeError, "topk(): argument 'k' (position 2) must be int, not float"),
    (lambda m: m.topk(_x(m), 1, 0, True, 1), TypeError,
     "topk(): argument 'sorted' (position 5) must be bool, not int"),
    (lambda m: m.topk(_x(m), 1, 0, True, True, 1), TypeError,
     "topk() takes from 2 to 5 positional arguments but 6 were given"),
    (lambda m: _x(m).topk(3), RuntimeError, "selected index k out of range"),
    (lambda m: _x(m).topk(-1), RuntimeError, "selected index k out of range"),
    (lambda m: m.tensor(1.0).topk(2), RuntimeError, "selected index k out of range"),
    (lambda m: _x(m).topk(1, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    # scatter
    (lambda m: _x(m).scatter(0, _i(m)), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor), but "
     "expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), "a"), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, str), "
     "but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), None), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, "
     "NoneType), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0.5, _i(m), 5.0), TypeError,
     "scatter() received an invalid combination of arguments - got (float, Tensor, "
     "float), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(None, _i(m), 5.0), TypeError,
     "scatter() received an invalid combination of arguments - got (NoneType, Tensor, "
     "float), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, [[1, 0]], 7.0), TypeError,
     "scatter() received an invalid combination of arguments - got (int, list, float), "
     "but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), src=7.0), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, "
     "src=float), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), value=m.tensor([[9.0, 8.0]])), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, "
     "value=Tensor), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), value=None), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, "
     "value=NoneType), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), m.tensor([[5.0, 6.0]]), value=3), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, Tensor, "
     "value=int), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), 5.0, "add"), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, float, "
     "str), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), 2.0, reduce=None), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, float, "
     "reduce=NoneType), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: _x(m).scatter(0, _i(m), 2.0, foo=None), TypeError,
     "scatter() received an invalid combination of arguments - got (int, Tensor, float, "
     "foo=NoneType), but expected one of:\n" + _SCATTER_METHOD),
    (lambda m: m.scatter(_x(m), 0.5, _i(m), 1.0), TypeError,
     "scatter() received an invalid combination of arguments - got (Tensor, float, "
     "Tensor, float), but expected one of:\n" + _SCATTER_FUNCTION),
    (lambda m: m.scatter(_x(m), 0, _i(m)), TypeError,
     "scatter() received an invalid combination of arguments - got (Tensor, int, "
     "Tensor), but expected one of:\n" + _SCATTER_FUNCTION),
    (lambda m: _x(m).scatter(0, _i(m), 5.0, reduce="foo"), RuntimeError,
     "reduce argument must be either add or multiply."),
    (lambda m: _x(m).scatter(2, _i(m), 5.0), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda m: _x(m).scatter(0, m.tensor([[2, 0]]), 5.0), RuntimeError,
     "index 2 is out of bounds for dimension 0 with size 2"),
    (lambda m: _x(m).scatter(0, m.tensor([1, 0]), 5.0), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
]


def _ids(cases):
    return [f"{i}" for i in range(len(cases))]


@pytest.mark.parametrize("case", ERRORS, ids=_ids(ERRORS))
def test_errors(case):
    fn, exc, message = case
    with pytest.raises(exc) as info:
        fn(ferrograd)
    assert type(info.value) is exc
    assert str(info.value) == message


@pytest.mark.parametrize("case", ERRORS, ids=_ids(ERRORS))
def test_errors_are_pytorchs(torch, case):
    fn, exc, message = case
    with pytest.raises(exc) as info:
        fn(torch)
    assert type(info.value) is exc
    assert _message(info.value) == message


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_matches_torch(reduce):
    # scatter(reduce=...) adds or multiplies the values in (tests/native/op_db.py has the rows)
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's deprecation of reduce= with a Tensor src
        for fn in (lambda m: _x(m).scatter(0, _i(m), 2.0, reduce=reduce),
                   lambda m: m.scatter(_x(m), 0, _i(m), _x(m), reduce=reduce)):
            np.testing.assert_array_equal(fn(ferrograd).numpy(), fn(torch).numpy())


# ============================================================ known bugs of the native ops
# Each case: (fn, expected) with expected an exception (type, PyTorch's text) or PyTorch's
# result as (list, dtype name). The parity test checks the expectation against PyTorch.


def _bug(id, fn, expected, reason):
    # once bugs of the native ops, fixed; kept as regression cases (reason: what was wrong)
    return pytest.param(fn, expected, id=id)


_SCATTER_OVERFLOW = (RuntimeError, "value cannot be converted to type int64_t without overflow")

NATIVE_BUGS = [
    _bug("flip-0d", lambda m: m.tensor(1.0).flip(0), ([1.0], "float32"),
         "flip of a 0-d tensor panics (index out of bounds)"),
    _bug("flip-0d-neg", lambda m: m.tensor(1.0).flip(-1), ([1.0], "float32"),
         "flip of a 0-d tensor panics (index out of bounds)"),
    _bug("flip-duplicate-dims", lambda m: m.tensor([1.0, 2.0]).flip(0, 0),
         (RuntimeError, "dim 0 appears multiple times in the list of dims"),
         "flip with repeated dims: wrong error text"),
    _bug("flip-triplicate-dims", lambda m: m.tensor([[1.0, 2.0]]).flip(0, 0, 0),
         (RuntimeError, "dim 0 appears multiple times in the list of dims"),
         "flip with repeated dims: wrong error text"),
    _bug("roll-0d-dims", lambda m: m.tensor(1.0).roll(1, 0),
         (IndexError, "Dimension specified as 0 but tensor has no dimensions"),
         "roll of a 0-d tensor with dims panics"),
    _bug("roll-shifts-no-dims", lambda m: m.tensor([1.0, 2.0, 3.0]).roll((1, 2)),
         (RuntimeError, "shifts and dimensions must align. shifts: 2, dims:0"),
         "roll with several shifts and no dims: wrong error text"),
    _bug("roll-empty-shifts", lambda m: m.tensor([1.0, 2.0]).roll((), ()),
         (RuntimeError, "`shifts` required"),
         "roll with empty shifts: wrong error text"),
    _bug("roll-repeated-dim", lambda m: m.tensor([[1.0, 2.0, 3.0]]).roll((1, 1), (1, 1)),
         ([[2.0, 3.0, 1.0]], "float32"),
         "roll with a repeated dim applies only its last shift (PyTorch applies both)"),
    _bug("repeat-negative", lambda m: m.tensor([1.0, 2.0]).repeat(-1, 2),
         (RuntimeError, "Trying to create tensor with negative dimension -1: [-1, 4]"),
         "repeat with a negative size: the error lists the sizes cast to u64, not the output shape"),
    _bug("repeat-negative-2", lambda m: m.tensor([1.0, 2.0]).repeat(2, -1),
         (RuntimeError, "Trying to create tensor with negative dimension -2: [2, -2]"),
         "repeat with a negative size: the error lists the sizes cast to u64, not the output shape"),
    _bug("tile-negative", lambda m: m.tensor([1.0, 2.0]).tile(-1),
         (RuntimeError, "Trying to create tensor with negative dimension -2: [-2]"),
         "tile with a negative size: wrong error text"),
    _bug("topk-0d-k0", lambda m: m.tensor(3.0).topk(0), ([3.0], "float32"),
         "topk(0) of a 0-d tensor fails (reshape error)"),
    _bug("topk-bool", lambda m: m.tensor([True, False, True]).topk(2),
         (RuntimeError, "topk does not support bool dtypes on CPU"),
         "topk accepts bool tensors"),
    _bug("scatter-negative-index", lambda m: m.zeros(3).scatter(0, m.tensor([-1]), 1.0),
         (RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
         "scatter wraps negative indices instead of raising"),
    _bug("scatter-index-larger-than-self", lambda m: m.zeros(2, 3).scatter(0, m.tensor([[1, 0, 1, 0]]), 2.0),
         (RuntimeError, "Expected index [1, 4] to be no larger than self [2, 3] apart from dimension 0"),
         "scatter accepts an index larger than self outside dim (and writes wrapped positions)"),
    _bug("scatter-index-larger-than-src", lambda m: m.zeros(3).scatter(0, m.tensor([1, 2]), m.tensor([5.0])),
         (RuntimeError, "Expected index [2] to be no larger than self [3] apart from dimension 0 "
                        "and to be no larger size than src [1]"),
         "scatter with an index larger than src panics"),
    _bug("scatter-src-dtype", lambda m: m.zeros(3).scatter(0, m.tensor([1]), m.tensor([5])),
         (RuntimeError, "scatter(): Expected self.dtype to be equal to src.dtype"),
         "scatter casts a src of another dtype instead of raising"),
    _bug("scatter-float-index", lambda m: m.zeros(3).scatter(0, m.tensor([1.0]), m.tensor([5.0])),
         (RuntimeError, "scatter(): Expected dtype int32/int64 for index"),
         "scatter with a float index: wrong error text"),
    _bug("scatter-0d", lambda m: m.tensor(1.0).scatter(0, m.tensor(0), 5.0), ([5.0], "float32"),
         "scatter into a 0-d tensor panics"),
    _bug("scatter-0d-src", lambda m: m.tensor(1.0).scatter(0, m.tensor(0), m.tensor(5.0)), ([5.0], "float32"),
         "scatter into a 0-d tensor panics"),
    _bug("scatter-0d-index", lambda m: m.zeros(3).scatter(0, m.tensor(1), m.tensor(5.0)),
         ([0.0, 5.0, 0.0], "float32"),
         "scatter refuses a 0-d index into a 1-d tensor"),
    _bug("scatter-empty-index", lambda m: m.zeros(2, 3).scatter(1, m.zeros(0, dtype=m.int64), 1.0),
         ([[0.0] * 3] * 2, "float32"),
         "scatter refuses an empty 1-d index (PyTorch: no-op)"),
    _bug("scatter-0d-src-2d-index", lambda m: _x(m).scatter(0, _i(m), m.tensor(9.0)),
         (RuntimeError, "Index tensor must have the same number of dimensions as src tensor"),
         "scatter broadcasts a 0-d src instead of raising"),
    _bug("scatter-int-value-precision", lambda m: m.tensor([[1]]).scatter(0, m.tensor([[0]]), 2**62 + 1),
         ([[2**62 + 1]], "int64"),
         "_core._scatter takes the value as f64: int64 values above 2**53 are rounded"),
    _bug("scatter-int-value-overflow", lambda m: m.tensor([[1]]).scatter(0, m.tensor([[0]]), 2**63),
         _SCATTER_OVERFLOW, "_core._scatter saturates an out-of-range value instead of raising"),
    _bug("scatter-int-value-inf", lambda m: m.tensor([[1]]).scatter(0, m.tensor([[0]]), float("inf")),
         _SCATTER_OVERFLOW, "_core._scatter saturates inf into an int64 tensor instead of raising"),
]


def _check_expected(m, fn, expected):
    if isinstance(expected[0], type):
        exc, message = expected
        with pytest.raises(exc) as info:
            fn(m)
        assert type(info.value) is exc
        assert str(info.value) == message
    else:
        values, dtype = expected
        out = fn(m)
        if isinstance(out, tuple):
            out = out.values
        assert str(out.dtype) == f"torch.{dtype}"
        assert np.asarray(out.tolist()).reshape(-1).tolist() == np.asarray(values).reshape(-1).tolist()
        assert np.asarray(out.tolist()).size == np.asarray(values).size


@pytest.mark.parametrize("fn,expected", NATIVE_BUGS)
def test_native_bugs(fn, expected):
    _check_expected(ferrograd, fn, expected)


@pytest.mark.parametrize("fn,expected", [pytest.param(*p.values, id=p.id) for p in NATIVE_BUGS])
def test_native_bugs_are_pytorchs(torch, fn, expected):
    _check_expected(torch, fn, expected)


# ----------------------------------------------------------------------------- unflatten

_UNFLATTEN_CASES = [
    ((2, 6), 1, (2, -1)),
    ((2, 6), -1, [3, 2]),
    ((2, 6), 0, (1, 2)),
    ((4, 3, 5), 1, (3, 1)),
]
_UNFLATTEN_ERRORS = [(1, (4, -1)), (1, (-1, -1)), (1, ()), (2, (2, 3))]


@pytest.mark.parametrize("shape,dim,sizes", _UNFLATTEN_CASES)
def test_unflatten_closed_form(shape, dim, sizes):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = ferrograd.tensor(x, requires_grad=True)
    out = t.unflatten(dim, sizes)
    d = dim % len(shape)
    sizes = list(sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[d] // -int(np.prod(sizes))
    expected = x.reshape(shape[:d] + tuple(sizes) + shape[d + 1:])
    np.testing.assert_array_equal(out.detach().numpy(), expected)
    assert out._base is t or out.data_ptr() == t.data_ptr()
    assert ferrograd.unflatten(t, dim, sizes).shape == expected.shape
    assert ferrograd.nn.Unflatten(dim, tuple(sizes))(t).shape == expected.shape
    assert gradcheck(lambda a: a.unflatten(dim, sizes), (t,))
    # a non-contiguous input splits into a view as well
    tt = t.transpose(0, -1)
    np.testing.assert_array_equal(
        tt.unflatten(0, (shape[-1], 1)).detach().numpy(), np.swapaxes(x, 0, -1)[:, None]
    )


@pytest.mark.parametrize("dim,sizes", _UNFLATTEN_ERRORS)
def test_unflatten_errors_match_torch(torch, dim, sizes):
    results = []
    for m in (ferrograd, torch):
        with pytest.raises((RuntimeError, IndexError)) as info:
            m.zeros(2, 6).unflatten(dim, sizes)
        results.append((type(info.value), str(info.value).splitlines()[0]))
    if "unexpected error" in results[1][1]:  # torch wraps the inference error of sizes (-1, -1)
        assert results[0] == (RuntimeError, "only one dimension can be inferred")
    else:
        assert results[0] == results[1]
