"""The native scans and order statistics (cumprod, logcumsumexp, cummax / cummin, kthvalue,
median / nanmedian, mode) on what the op table's rows do not cover: non-contiguous inputs
along each dim, ties, NaN, integer dtypes and rows large enough for the parallel path;
against numpy references, and against PyTorch where it is installed."""

import numpy as np
import pytest

import ferrograd as fg

# --- numpy references (ties in index order, NaN after every number)


def _rows(x, dim):
    """``x`` with ``dim`` last, flattened to rows, and a function putting row results back."""
    xm = np.moveaxis(x, dim, -1)
    return xm.reshape(-1, xm.shape[-1]), xm.shape


def _ref_scan(x, dim, step):
    rows, shape = _rows(x, dim)
    vals = np.empty(rows.shape, dtype=x.dtype if step != "cumprod" or x.dtype.kind == "f" else np.int64)
    idx = np.empty(rows.shape, dtype=np.int64)
    for r, row in enumerate(rows):
        best, acc = 0, None
        for i, v in enumerate(row):
            if step in ("max", "min"):
                b = row[best]
                better = v >= b if step == "max" else v <= b
                if np.isnan(v) or (not np.isnan(b) and better):
                    best = i
                vals[r, i], idx[r, i] = row[best], best
            else:
                acc = v if acc is None else acc * v
                vals[r, i] = acc
    back = np.moveaxis(vals.reshape(shape), -1, dim), np.moveaxis(idx.reshape(shape), -1, dim)
    return back if step in ("max", "min") else back[0]


def _ref_pick(x, dim, pos):
    """(values, indices) of the stable-sorted position ``pos(row)`` of each row."""
    rows, shape = _rows(x, dim)
    vals = np.empty(rows.shape[0], dtype=x.dtype)
    idx = np.empty(rows.shape[0], dtype=np.int64)
    for r, row in enumerate(rows):
        order = np.argsort(row, kind="stable")
        idx[r] = order[pos(row)]
        vals[r] = row[idx[r]]
    return vals.reshape(shape[:-1]), idx.reshape(shape[:-1])


def _nans(row):
    return int(np.isnan(row).sum()) if row.dtype.kind == "f" else 0


def _median_pos(row):
    n, k = len(row), _nans(row)
    return n - k if k else (n - 1) // 2


def _nanmedian_pos(row):
    good = len(row) - _nans(row)
    return (good - 1) // 2 if good else (len(row) - 1) // 2


def _ref_mode(x, dim):
    rows, shape = _rows(x, dim)
    vals = np.empty(rows.shape[0], dtype=x.dtype)
    idx = np.empty(rows.shape[0], dtype=np.int64)
    for r, row in enumerate(rows):
        values, counts = np.unique(row[~np.isnan(row)] if row.dtype.kind == "f" else row, return_counts=True)
        if len(values) == 0:  # only NaN
            vals[r], idx[r] = row[0], 0
            continue
        best = values[np.argmax(counts)]  # the first of the most frequent: the smallest
        vals[r], idx[r] = best, np.nonzero(row == best)[0][-1]
    return vals.reshape(shape[:-1]), idx.reshape(shape[:-1])


def _views(base):
    """(name, numpy array, ferrograd tensor) of a contiguous, a transposed and a sliced view."""
    t = fg.tensor(base)
    yield "contig", base, t
    yield "T", base.T, t.T
    yield "slice", base[:, ::2], t[:, ::2]


def _check(got, want, exact=True):
    got = got.numpy()
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _tied(rng, shape):
    """Float values with many ties and some NaN."""
    x = rng.integers(0, 5, size=shape).astype(np.float64)
    x[rng.random(shape) < 0.1] = np.nan
    return x


# --- scans


@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin_views_ties_and_nan(dim):
    base = _tied(np.random.default_rng(0), (7, 12))
    for _, a, t in _views(base):
        for fn, step in ((fg.cummax, "max"), (fg.cummin, "min")):
            v, i = fn(t, dim)
            rv, ri = _ref_scan(a, dim, step)
            _check(v, rv)
            _check(i, ri)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_views_and_integer_dtypes(dim):
    rng = np.random.default_rng(1)
    base = rng.uniform(-1.5, 1.5, (6, 10))
    base[2, 3] = base[4, 0] = 0.0
    for _, a, t in _views(base):
        _check(fg.cumprod(t, dim), np.cumprod(a, axis=dim), exact=False)
    ints = rng.integers(-3, 4, (5, 8)).astype(np.int32)
    r = fg.cumprod(fg.tensor(ints), dim)
    assert r.dtype == fg.int64
    _check(r, np.cumprod(ints.astype(np.int64), axis=dim))
    bools = rng.random((5, 8)) < 0.8
    _check(fg.cumprod(fg.tensor(bools), dim), np.cumprod(bools.astype(np.int64), axis=dim))


def test_cumprod_of_int64_wraps_and_dtype_argument():
    x = fg.tensor([2**62, 4, 3])
    assert fg.cumprod(x, 0).tolist() == [2**62, 0, 0]
    r = fg.cumprod(fg.tensor([1, 2, 3]), 0, dtype=fg.float64)
    assert r.dtype == fg.float64 and r.tolist() == [1.0, 2.0, 6.0]


@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_views(dim):
    base = np.random.default_rng(2).normal(size=(6, 10)) * 30
    for _, a, t in _views(base):
        _check(fg.logcumsumexp(t, dim), np.logaddexp.accumulate(a, axis=dim), exact=False)


def test_cummax_of_integers_and_bools():
    x = np.array([[3, 1, 3, 5, 5, 2], [0, 0, -1, 7, 7, 7]], dtype=np.int16)
    v, i = fg.cummax(fg.tensor(x), 1)
    rv, ri = _ref_scan(x.astype(np.float64), 1, "max")
    assert v.dtype == fg.int16
    _check(v, rv.astype(np.int16))
    _check(i, ri)
    v, i = fg.cummin(fg.tensor([True, False, True, False]), 0)
    assert v.tolist() == [True, False, False, False] and i.tolist() == [0, 1, 1, 3]


def test_scans_of_large_rows_take_the_parallel_path():
    # 600K elements: above every parallel threshold, along both dims
    rng = np.random.default_rng(3)
    x = _tied(rng, (600, 1000))
    for dim in (0, 1):
        v, i = fg.cummax(fg.tensor(x), dim)
        rv, ri = _ref_scan(x[:40] if dim == 1 else x[:, :40], dim, "max")
        sl = (slice(0, 40), slice(None)) if dim == 1 else (slice(None), slice(0, 40))
        _check(v[sl], rv)
        _check(i[sl], ri)
    y = rng.uniform(0.9, 1.1, (600, 1000))
    for dim in (0, 1):
        _check(fg.cumprod(fg.tensor(y), dim), np.cumprod(y, axis=dim), exact=False)
        _check(fg.logcumsumexp(fg.tensor(y), dim), np.logaddexp.accumulate(y, axis=dim), exact=False)


def test_scans_of_empty_and_0d_inputs():
    e = fg.ones(3, 0)
    assert fg.cumprod(e, 1).shape == (3, 0)
    v, i = fg.cummax(e, 1)
    assert v.shape == (3, 0) and i.dtype == fg.int64
    x = fg.tensor(2.5, requires_grad=True)
    v, i = fg.cummin(x, 0)
    assert v.item() == 2.5 and i.item() == 0 and i.shape == ()
    assert fg.logcumsumexp(x, -1).item() == 2.5
    y = fg.cumprod(x, 0)
    y.backward()
    assert x.grad.item() == 1.0


def test_cumprod_gradient_is_exact_with_zeros_along_each_dim():
    x = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [1.5, -2.0, 0.0, 4.0, 1.0]])
    g = np.arange(1.0, 11.0).reshape(2, 5)

    def ref(xr, gr):  # d/dx_k of sum_j g_j prod(x[..=j])
        n = len(xr)
        return [sum(gr[j] * np.prod([xr[i] for i in range(j + 1) if i != k]) for j in range(k, n))
                for k in range(n)]

    for dim in (0, 1):
        t = fg.tensor(x, requires_grad=True)
        fg.cumprod(t, dim).backward(fg.tensor(g))
        want = np.array([ref(x[r], g[r]) for r in range(2)]) if dim == 1 else \
            np.array([ref(x[:, c], g[:, c]) for c in range(5)]).T
        np.testing.assert_allclose(t.grad.numpy(), want)


def test_scan_grad_fn_names():
    x = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert fg.cumprod(x, 1).grad_fn.name() == "CumprodBackward0"
    assert fg.logcumsumexp(x, 1).grad_fn.name() == "LogcumsumexpBackward0"
    assert fg.cummax(x, 0).values.grad_fn.name() == "CummaxBackward0"
    assert fg.cummin(x, 0).values.grad_fn.name() == "CumminBackward0"


# --- order statistics


@pytest.mark.parametrize("dim", [0, 1])
def test_selections_views_ties_and_nan(dim):
    base = _tied(np.random.default_rng(4), (9, 14))
    for _, a, t in _views(base):
        n = a.shape[dim]
        for k in (1, n // 2, n):
            v, i = fg.kthvalue(t, k, dim)
            rv, ri = _ref_pick(a, dim, lambda row, k=k: k - 1)
            _check(v, rv)
            _check(i, ri)
        for fn, pos in ((fg.median, _median_pos), (fg.nanmedian, _nanmedian_pos)):
            v, i = fn(t, dim)
            rv, ri = _ref_pick(a, dim, pos)
            _check(v, rv)
            _check(i, ri)
        v, i = fg.mode(t, dim)
        rv, ri = _ref_mode(a, dim)
        _check(v, rv)
        _check(i, ri)


def test_selections_of_integer_dtypes_and_keepdim():
    x = np.random.default_rng(5).integers(-4, 4, (5, 7)).astype(np.int32)
    t = fg.tensor(x)
    v, i = fg.median(t, 1, keepdim=True)
    rv, ri = _ref_pick(x, 1, _median_pos)
    assert v.dtype == fg.int32 and v.shape == (5, 1)
    _check(v, rv[:, None])
    _check(i, ri[:, None])
    v, i = fg.kthvalue(t, 3, 0)
    rv, ri = _ref_pick(x, 0, lambda row: 2)
    _check(v, rv)
    _check(i, ri)
    v, i = fg.mode(t, 1)
    rv, ri = _ref_mode(x, 1)
    _check(v, rv)
    _check(i, ri)
    assert fg.median(fg.tensor([[True, False, True]]), 1).values.tolist() == [True]


def test_median_of_all_elements_with_nan_and_non_contiguous():
    x = np.array([[3.0, np.nan, 1.0], [2.0, 5.0, np.nan]])
    assert np.isnan(fg.median(fg.tensor(x)).item())
    assert fg.nanmedian(fg.tensor(x)).item() == 2.0
    y = np.array([[3.0, 1.0, 4.0], [2.0, 7.0, 0.5]])
    assert fg.median(fg.tensor(y).T).item() == 2.0 and fg.median(fg.tensor(y)[:, ::2]).item() == 2.0
    assert np.isnan(fg.nanmedian(fg.tensor([np.nan, np.nan])).item())
    big = np.random.default_rng(6).normal(size=(300, 301))
    assert fg.median(fg.tensor(big).T).item() == np.sort(big.ravel())[(big.size - 1) // 2]


def test_median_of_all_spreads_the_gradient_over_ties_and_nans():
    x = fg.tensor([1.0, 2.0, 2.0, 3.0], requires_grad=True)
    fg.median(x).backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]
    x = fg.tensor([1.0, float("nan"), 2.0, float("nan")], requires_grad=True)
    m = fg.median(x)
    assert m.grad_fn.name() == "MedianBackward0"
    m.backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.0, 0.5]
    x = fg.tensor([1.0, float("nan"), 2.0, 2.0, 5.0], requires_grad=True)
    m = fg.nanmedian(x)
    assert m.grad_fn.name() == "NanmedianBackward0"
    m.backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.5, 0.5, 0.0]


def test_selection_gradients_go_to_the_indices():
    x = fg.tensor([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 5.0, 4.0]], requires_grad=True)
    for fn, name in ((lambda: fg.kthvalue(x, 2, 1), "KthvalueBackward0"),
                     (lambda: fg.median(x, 1), "MedianBackward1"),
                     (lambda: fg.nanmedian(x, 1), "NanmedianBackward1"),
                     (lambda: fg.mode(x, 1), "ModeBackward0")):
        x.grad = None
        v, i = fn()
        assert v.grad_fn.name() == name
        v.sum().backward()
        want = np.zeros((2, 4))
        want[[0, 1], i.numpy()] = 1.0
        np.testing.assert_array_equal(x.grad.numpy(), want)


def test_selections_of_large_inputs_take_the_parallel_path():
    rng = np.random.default_rng(7)
    x = _tied(rng, (400, 300))  # 120K elements, above the costly-kernel threshold
    for dim in (0, 1):
        for fn, pos in ((lambda t, d: fg.kthvalue(t, 17, d), lambda row: 16),
                        (fg.median, _median_pos), (fg.nanmedian, _nanmedian_pos)):
            v, i = fn(fg.tensor(x), dim)
            rv, ri = _ref_pick(x, dim, pos)
            _check(v, rv)
            _check(i, ri)
        v, i = fg.mode(fg.tensor(x), dim)
        rv, ri = _ref_mode(x, dim)
        _check(v, rv)
        _check(i, ri)
    one = rng.normal(size=200_001)  # one long row
    v, i = fg.kthvalue(fg.tensor(one), 777)
    assert i.item() == np.argsort(one, kind="stable")[776] and v.item() == np.sort(one)[776]


def test_selection_errors():
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size."):
        fg.mode(fg.ones(2, 0), 1)
    with pytest.raises(IndexError, match=r"nanmedian\(\): Expected reduction dim 0 to have non-zero size."):
        fg.nanmedian(fg.ones(0, 2), 0)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range for dimension 1"):
        fg.kthvalue(fg.ones(2, 3), 0, 1)
    assert np.isnan(fg.median(fg.ones(0)).item())


# --- against PyTorch


def _pair(torch, shape, ties, seed):
    rng = np.random.default_rng(seed)
    x = _tied(rng, shape) if ties else rng.normal(size=shape)
    return x, fg.tensor(x), torch.tensor(x)


@pytest.mark.parametrize("view", ["contig", "T", "slice"])
def test_scans_match_torch(view):
    torch = pytest.importorskip("torch")
    x, f, t = _pair(torch, (8, 12), True, 8)
    if view == "T":
        f, t = f.T, t.T
    elif view == "slice":
        f, t = f[:, ::2], t[:, ::2]
    for dim in (0, 1):
        for name in ("cummax", "cummin"):
            fv, fi = getattr(fg, name)(f, dim)
            tv, ti = getattr(torch, name)(t, dim)
            np.testing.assert_array_equal(fv.numpy(), tv.numpy())
            np.testing.assert_array_equal(fi.numpy(), ti.numpy())
        y = np.nan_to_num(x[: f.shape[0], : f.shape[1]]) if view == "contig" else None
        if y is not None:
            np.testing.assert_allclose(fg.cumprod(fg.tensor(y), dim).numpy(),
                                       torch.cumprod(torch.tensor(y), dim).numpy(), rtol=1e-12)
        np.testing.assert_allclose(fg.logcumsumexp(f, dim).numpy(), torch.logcumsumexp(t, dim).numpy(),
                                   rtol=1e-12)


def test_scan_gradients_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).normal(size=(5, 7))
    x[1, 2] = x[3, 0] = x[3, 5] = 0.0
    g = np.random.default_rng(10).normal(size=(5, 7))
    for name in ("cumprod", "logcumsumexp", "cummax", "cummin"):
        for dim in (0, 1):
            f = fg.tensor(x, requires_grad=True)
            t = torch.tensor(x, requires_grad=True)
            fo, to = getattr(fg, name)(f, dim), getattr(torch, name)(t, dim)
            fo = fo[0] if isinstance(fo, tuple) else fo
            to = to[0] if isinstance(to, tuple) else to
            fo.backward(fg.tensor(g))
            to.backward(torch.tensor(g))
            np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_selections_match_torch_values_and_unique_indices():
    torch = pytest.importorskip("torch")
    # distinct values: indices are determined, so they must agree with PyTorch's
    x, f, t = _pair(torch, (9, 13), False, 11)
    x[2, 4] = x[5, 0] = x[5, 7] = np.nan
    f, t = fg.tensor(x), torch.tensor(x)
    fm, tm = fg.tensor(np.nan_to_num(x)).T, torch.tensor(np.nan_to_num(x)).T
    for dim in (0, 1):
        for fr, tr in ((fg.kthvalue(f, 3, dim), torch.kthvalue(t, 3, dim)),
                       (fg.median(f, dim), torch.median(t, dim)),
                       (fg.nanmedian(f, dim), torch.nanmedian(t, dim)),
                       (fg.mode(fm, dim), torch.mode(tm, dim))):
            np.testing.assert_array_equal(fr.values.numpy(), tr.values.numpy())
            np.testing.assert_array_equal(fr.indices.numpy(), tr.indices.numpy())
    np.testing.assert_array_equal(fg.median(f).numpy(), torch.median(t).numpy())
    np.testing.assert_array_equal(fg.nanmedian(f).numpy(), torch.nanmedian(t).numpy())
    # ties: the values agree, and the index points at an element of that value
    x, f, t = _pair(torch, (9, 13), True, 12)
    for dim in (0, 1):
        for fr, tr in ((fg.kthvalue(f, 5, dim), torch.kthvalue(t, 5, dim)),
                       (fg.median(f, dim), torch.median(t, dim)),
                       (fg.nanmedian(f, dim), torch.nanmedian(t, dim))):
            np.testing.assert_array_equal(fr.values.numpy(), tr.values.numpy())
            picked = np.take_along_axis(x, np.expand_dims(fr.indices.numpy(), dim), dim).squeeze(dim)
            np.testing.assert_array_equal(picked, tr.values.numpy())
