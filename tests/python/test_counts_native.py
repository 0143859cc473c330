"""The native search / counting kernels (src/kernels/counts.rs) beyond the op table's rows:
non-contiguous inputs, edge cases, inputs large enough to take the parallel paths (checked
against numpy), the 4M-element multilabel_margin_loss that used to need an N*C*C
intermediate, and comparisons with PyTorch where it is installed."""

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn.functional as F

RNG = np.random.default_rng(11)
BIG = 1 << 20  # above PAR_THRESHOLD (256K elements)


def _t(a, **kw):
    return fg.tensor(np.ascontiguousarray(a), **kw)


# --- searchsorted / bucketize


def test_searchsorted_large_and_strided_match_numpy():
    seq = np.sort(RNG.standard_normal(1000))
    vals = RNG.standard_normal(BIG)
    for side in ("left", "right"):
        got = fg.searchsorted(_t(seq), _t(vals), side=side).numpy()
        np.testing.assert_array_equal(got, np.searchsorted(seq, vals, side=side))
    # non-contiguous boundaries and values: a column of a matrix, a transposed matrix
    seq2 = _t(np.stack([seq, seq], 1))[:, 1]
    vals2 = _t(vals[:4096].reshape(64, 64)).t()
    got = fg.searchsorted(seq2, vals2).numpy()
    np.testing.assert_array_equal(got, np.searchsorted(seq, vals[:4096].reshape(64, 64).T))


def test_searchsorted_rows_sorter_int32_scalar():
    seq = np.sort(RNG.integers(0, 50, (3, 20)), 1)
    vals = RNG.integers(-5, 55, (3, 7))
    got = fg.searchsorted(_t(seq), _t(vals), right=True).numpy()
    want = np.stack([np.searchsorted(s, v, side="right") for s, v in zip(seq, vals)])
    np.testing.assert_array_equal(got, want)
    perm = np.stack([RNG.permutation(20) for _ in range(3)])
    shuffled = np.take_along_axis(seq, perm, 1)
    sorter = np.argsort(shuffled, 1, kind="stable")
    got = fg.searchsorted(_t(shuffled), _t(vals), sorter=_t(sorter)).numpy()
    np.testing.assert_array_equal(got, np.stack([np.searchsorted(s, v) for s, v in zip(seq, vals)]))
    r = fg.searchsorted(_t(seq[0]), _t(vals[0]), out_int32=True)
    assert r.dtype == fg.int32
    np.testing.assert_array_equal(r.numpy(), np.searchsorted(seq[0], vals[0]))
    b = fg.bucketize(_t(vals[0]), _t(seq[0]), out_int32=True, right=True)
    assert b.dtype == fg.int32
    np.testing.assert_array_equal(b.numpy(), np.searchsorted(seq[0], vals[0], side="right"))
    # a Python number is compared in the promoted dtype: 1.5 lies between 1 and 2
    s = fg.searchsorted(fg.tensor([1, 2]), 1.5)
    assert s.dim() == 0 and s.item() == 1
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        fg.searchsorted(_t(seq[0]), _t(vals[0]), sorter=fg.full((20,), 20, dtype=fg.int64))


def test_searchsorted_nan_as_torch():
    torch = pytest.importorskip("torch")
    seq = [1.0, 2.0, 2.0, 3.0, float("nan")]
    vals = [0.0, 2.0, 2.5, 4.0, float("nan"), -float("inf")]
    for right in (False, True):
        got = fg.searchsorted(fg.tensor(seq), fg.tensor(vals), right=right)
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), right=right)
        assert got.tolist() == want.tolist()


# --- bincount / histc


def test_bincount_large_weights_and_dtypes():
    x = RNG.integers(0, 100, BIG)
    np.testing.assert_array_equal(fg.bincount(_t(x)).numpy(), np.bincount(x))
    np.testing.assert_array_equal(fg.bincount(_t(x), minlength=200).numpy(), np.bincount(x, minlength=200))
    w = RNG.standard_normal(BIG)
    got = fg.bincount(_t(x), _t(w))
    assert got.dtype == fg.float64
    np.testing.assert_allclose(got.numpy(), np.bincount(x, w), rtol=1e-10)
    got32 = fg.bincount(_t(x), _t(w.astype(np.float32)))
    assert got32.dtype == fg.float32
    np.testing.assert_allclose(got32.numpy(), np.bincount(x, w), rtol=1e-3)
    assert fg.bincount(_t(x[:10]), _t(x[:10])).dtype == fg.float64  # integer weights
    assert fg.bincount(_t(x[:10]), _t(w[:10]).half()).dtype == fg.float64  # as ATen
    # a non-contiguous input
    np.testing.assert_array_equal(fg.bincount(_t(x)[::3]).numpy(), np.bincount(x[::3]))
    assert fg.bincount(fg.tensor([], dtype=fg.int64), minlength=3).tolist() == [0, 0, 0]
    with pytest.raises(RuntimeError, match="1-d non-negative"):
        fg.bincount(fg.tensor([1, -1, 2]))
    with pytest.raises(RuntimeError, match="1-d non-negative"):
        fg.bincount(fg.tensor([[1, 2]]))


def test_histc_large_edges_and_range():
    # values at bin centres, so numpy's and PyTorch's bin arithmetic agree exactly
    k = RNG.integers(0, 50, BIG)
    x = (k + 0.5) / 50 * 4 - 2  # in [-2, 2]
    got = fg.histc(_t(x), bins=50, min=-2, max=2).numpy()
    np.testing.assert_array_equal(got, np.bincount(k, minlength=50))
    # out-of-range elements are ignored; the maximum falls in the last bin
    assert fg.histc(fg.tensor([0.0, 1.0, 2.0, -1.0, 0.5]), bins=2, min=0, max=1).tolist() == [1.0, 2.0]
    # min = max = 0: the data's range; float32 counts in float32
    h = fg.histc(fg.tensor([1.0, 2.0, 3.0]), bins=4)
    assert h.dtype == fg.float32 and h.tolist() == [1.0, 0.0, 1.0, 1.0]
    # a strided input
    np.testing.assert_array_equal(
        fg.histc(_t(x)[1::2], bins=50, min=-2, max=2).numpy(), np.bincount(k[1::2], minlength=50))
    with pytest.raises(NotImplementedError, match="histogram_cpu"):
        fg.histc(fg.tensor([1, 2]))


def test_histc_as_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(300_000).astype(np.float32)
    for args in ((100, 0, 0), (7, -1, 1), (3, 0.25, 0.5)):
        got = fg.histc(fg.tensor(x), *args).numpy()
        want = torch.histc(torch.tensor(x), *args).numpy()
        np.testing.assert_array_equal(got, want)


# --- nonzero


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_nonzero_large_and_layouts(dtype):
    a = (RNG.random((512, 2048)) < 0.3).astype(dtype)
    t = _t(a)
    np.testing.assert_array_equal(fg.nonzero(t).numpy(), np.argwhere(a))
    for got, want in zip(fg.nonzero(t, as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    # transposed and sliced views
    np.testing.assert_array_equal(fg.nonzero(t.t()).numpy(), np.argwhere(a.T))
    np.testing.assert_array_equal(fg.nonzero(t[:, ::3]).numpy(), np.argwhere(a[:, ::3]))
    for got, want in zip(fg.nonzero(t.t(), as_tuple=True), np.nonzero(a.T)):
        np.testing.assert_array_equal(got.numpy(), want)


def test_nonzero_edge_cases():
    assert tuple(fg.nonzero(fg.tensor(3.0)).shape) == (1, 0)
    assert [c.tolist() for c in fg.nonzero(fg.tensor(3.0), as_tuple=True)] == [[0]]
    assert [c.tolist() for c in fg.nonzero(fg.tensor(0.0), as_tuple=True)] == [[]]
    assert tuple(fg.nonzero(fg.zeros(0, 3)).shape) == (0, 2)
    assert tuple(fg.nonzero(fg.zeros(4, 3)).shape) == (0, 2)
    assert fg.nonzero(fg.tensor([0.0, float("nan"), -0.0])).tolist() == [[1]]
    assert fg.argwhere(fg.tensor([[0, 1], [1, 0]])).tolist() == [[0, 1], [1, 0]]


# --- unique_consecutive


def test_unique_consecutive_large_and_strided():
    x = np.repeat(RNG.integers(0, 4, 50_000), RNG.integers(1, 40, 50_000))
    starts = np.r_[True, x[1:] != x[:-1]]
    values, inverse, counts = fg.unique_consecutive(_t(x), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), x[starts])
    np.testing.assert_array_equal(inverse.numpy(), np.cumsum(starts) - 1)
    np.testing.assert_array_equal(counts.numpy(), np.diff(np.r_[np.flatnonzero(starts), x.size]))
    m = np.array([[1, 1], [2, 1], [2, 2]])
    v, inv = fg.unique_consecutive(_t(m).t(), return_inverse=True)  # flattened row-major: 1 2 2 1 1 2
    assert v.tolist() == [1, 2, 1, 2] and inv.tolist() == [[0, 1, 1], [2, 2, 3]]
    v, c = fg.unique_consecutive(fg.tensor([float("nan"), float("nan"), 1.0]), return_counts=True)
    assert c.tolist() == [1, 1, 1]
    assert fg.unique_consecutive(fg.tensor([], dtype=fg.int64)).tolist() == []


# --- unique / unique_consecutive along a dim


def test_unique_dim_matches_numpy_on_every_dim():
    x = RNG.integers(0, 3, (40, 3, 5))
    for dim in range(3):
        values, inverse, counts = fg.unique(_t(x), dim=dim, return_inverse=True, return_counts=True)
        want, want_inv, want_counts = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(values.numpy(), want)
        np.testing.assert_array_equal(inverse.numpy(), want_inv.reshape(-1))
        np.testing.assert_array_equal(counts.numpy(), want_counts)
    # a transposed input, and runs of equal rows
    v = fg.unique(_t(x[:, 0, :]).t(), dim=1)
    np.testing.assert_array_equal(v.numpy(), np.unique(x[:, 0, :].T, axis=1))
    rows = np.repeat(RNG.integers(0, 2, (30, 2)), RNG.integers(1, 4, 30), axis=0)
    values, counts = fg.unique_consecutive(_t(rows), dim=0, return_counts=True)
    starts = np.r_[True, (rows[1:] != rows[:-1]).any(1)]
    np.testing.assert_array_equal(values.numpy(), rows[starts])
    np.testing.assert_array_equal(counts.numpy(), np.diff(np.r_[np.flatnonzero(starts), len(rows)]))


def _unique_dim_cases(T):
    out = []

    def case(f):
        try:
            r = f()
            r = r if isinstance(r, tuple) else (r,)
            out.append(tuple((v.tolist(), str(v.dtype), tuple(v.shape)) for v in r))
        except Exception as e:  # noqa: BLE001  (the exception is what is compared)
            out.append((type(e).__name__, str(e)))

    x = T.tensor([[1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [0.0, 3.0]])
    for d in (0, 1, -1, -2):
        case(lambda: T.unique(x, dim=d, return_inverse=True, return_counts=True))
        case(lambda: T.unique_consecutive(x, dim=d, return_inverse=True, return_counts=True))
    case(lambda: x.unique(dim=0, return_counts=True))
    case(lambda: T.unique(T.zeros(0, 3), dim=0, return_inverse=True, return_counts=True))
    case(lambda: T.unique(T.zeros(0, 3), dim=1))  # a 0-sized dim that is not the one selected
    case(lambda: T.unique_consecutive(T.zeros(3, 0), dim=0))
    case(lambda: T.unique(T.tensor(3.0), dim=0))
    case(lambda: T.unique(T.ones(2, 2), dim=2))
    case(lambda: T.unique(T.tensor([True, False, True]), dim=0))
    case(lambda: T.unique(T.tensor([[0.0, 1], [-0.0, 1]]), dim=0))
    case(lambda: T.unique(T.tensor([[3, 1], [1, 2], [3, 1]]), sorted=False, dim=0))
    xr = T.tensor([[3.0, 1], [1, 2], [3, 1]], requires_grad=True)
    for f in (T.unique, T.unique_consecutive):
        r = f(xr, dim=0)
        out.append(type(r.grad_fn).__name__)
        case(lambda: r.sum().backward())
    return out


def test_unique_dim_as_torch():
    torch = pytest.importorskip("torch")
    assert _unique_dim_cases(fg) == _unique_dim_cases(torch)


# --- max_unpool


def test_max_unpool_large_matches_numpy_and_backward_gathers():
    n, c, h, w = 4, 16, 64, 64
    x = RNG.standard_normal((n, c, h // 2, w // 2))
    idx = RNG.integers(0, h * w, x.shape)
    out = F.max_unpool2d(_t(x), _t(idx), 2).numpy().reshape(n, c, -1)
    want = np.zeros((n, c, h * w))
    for a in range(n):
        for b in range(c):
            want[a, b, idx[a, b].ravel()] = x[a, b].ravel()  # numpy: the last write wins too
    np.testing.assert_array_equal(out, want)
    xt = _t(x, requires_grad=True)
    y = F.max_unpool2d(xt, _t(idx), 2)
    assert y.grad_fn.name() == "MaxUnpool2DBackward0"
    g = RNG.standard_normal(y.shape)
    y.backward(_t(g))
    np.testing.assert_array_equal(
        xt.grad.numpy(), np.take_along_axis(g.reshape(n, c, -1), idx.reshape(n, c, -1), 2).reshape(x.shape))
    # a non-contiguous input
    xs = _t(np.swapaxes(x, 2, 3)).transpose(2, 3)
    np.testing.assert_array_equal(F.max_unpool2d(xs, _t(idx), 2).numpy().reshape(n, c, -1), want)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 4096 \(output volumes are of size 64x64"):
        bad = idx.copy()
        bad[1, 2, 3, 4] = h * w
        F.max_unpool2d(_t(x), _t(bad), 2)
    z = F.max_unpool3d(_t(x[:, :, None]), _t(idx[:, :, None]), (1, 2, 2), output_size=(1, h, w))
    assert z.grad_fn is None and tuple(z.shape) == (n, c, 1, h, w)


def test_max_unpool_overlapping_as_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 4))
    idx = RNG.integers(0, 3, (2, 3, 4))  # many values at one index: the last write wins
    for lib in (fg, torch):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_unpool1d(xt, lib.tensor(idx), 2)
        y.backward(lib.ones_like(y) * lib.arange(y.shape[-1], dtype=y.dtype))
        if lib is fg:
            got = (y.detach().numpy(), xt.grad.numpy())
        else:
            want = (y.detach().numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# --- pdist


def _pdist_ref(x, p):
    i, j = np.triu_indices(len(x), 1)
    d = np.abs(x[i] - x[j])
    if p == 0:
        return (d != 0).sum(1).astype(x.dtype)
    if p == np.inf:
        return d.max(1)
    return (d ** p).sum(1) ** (1 / p)


@pytest.mark.parametrize("p", [0, 1, 2, np.inf, 1.5, 3.0])
def test_pdist_large_matches_numpy(p):
    x = RNG.standard_normal((40, 9000))  # 780 pairs x 9000: the parallel path
    x[5] = x[7]  # a zero distance
    np.testing.assert_allclose(F.pdist(_t(x), p).numpy(), _pdist_ref(x, p), rtol=1e-10)
    # a transposed input
    np.testing.assert_allclose(F.pdist(_t(x.T).t(), p).numpy(), _pdist_ref(x, p), rtol=1e-10)


@pytest.mark.parametrize("p", [0, 1, 2, np.inf, 1.5, 0.5, 3.0])
def test_pdist_backward_as_torch(p):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((6, 5))
    x[3] = x[1]  # zero distance: zero gradient from that pair
    x[4, 2] = x[0, 2]  # a zero difference
    g = RNG.standard_normal(15)
    grads = []
    for lib in (fg, torch):
        xt = lib.tensor(x, requires_grad=True)
        d = lib.nn.functional.pdist(xt, p)
        assert d.grad_fn.name() == "PdistBackward0"
        d.backward(lib.tensor(g))
        grads.append(xt.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_pdist_native_backward_equals_graph_backward():
    x = RNG.standard_normal((12, 300))
    for p in (1.0, 2.0, 2.5, float("inf")):
        xt = _t(x, requires_grad=True)
        d = F.pdist(xt, p)
        g = _t(RNG.standard_normal(d.shape))
        (native,) = fg.autograd.grad(d, xt, g, retain_graph=True)  # the native kernel
        (graph,) = fg.autograd.grad(d, xt, g, create_graph=True)  # differentiable ops
        np.testing.assert_allclose(native.numpy(), graph.detach().numpy(), rtol=1e-10, atol=1e-12)


# --- multilabel_margin_loss


def _mlm_ref(x, y):
    """Per-row loss from the -1-terminated targets, in O(N * C) numpy."""
    n, c = x.shape
    valid = np.cumsum(y == -1, 1) == 0
    is_target = np.zeros((n, c), bool)
    rows = np.repeat(np.arange(n), c)[valid.ravel()]
    is_target[rows, y[valid]] = True
    loss = np.zeros(n)
    grad = np.zeros((n, c))
    for j in range(c):
        if not valid[:, j].any():
            break
        on = valid[:, j]
        xt = x[np.arange(n), np.where(on, y[:, j], 0)]
        z = 1 - xt[:, None] + x
        hit = (z > 0) & ~is_target & on[:, None]
        loss += np.where(hit, z, 0).sum(1)
        grad += hit
        grad[np.arange(n), np.where(on, y[:, j], 0)] -= np.where(on, hit.sum(1), 0)
    return loss / c, grad / c


def test_multilabel_margin_loss_4m_elements_in_n_c_memory():
    n, c = 4096, 1024  # 4M elements: its N*C*C intermediate was 32 GB in float64
    x = RNG.standard_normal((n, c))
    y = np.full((n, c), -1)
    k = RNG.integers(0, 6, n)  # up to 5 targets per row, some rows with none
    for r in range(n):
        y[r, :k[r]] = RNG.choice(c, k[r], replace=False)
    want, wgrad = _mlm_ref(x, y)
    xt = _t(x, requires_grad=True)
    for red, w in (("none", want), ("sum", want.sum()), ("mean", want.mean())):
        np.testing.assert_allclose(F.multilabel_margin_loss(xt, _t(y), reduction=red).detach().numpy(), w,
                                   rtol=1e-10)
    loss = F.multilabel_margin_loss(xt, _t(y))
    assert loss.grad_fn.name() == "MultilabelMarginLossBackward0"
    loss.backward()
    np.testing.assert_allclose(xt.grad.numpy(), wgrad / n, rtol=1e-10, atol=1e-15)


def test_multilabel_margin_loss_as_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 6))
    y = np.array([[3, 0, -1, 1, 2, 2], [5, 5, 1, -1, 0, 0], [-1, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5],
                  [2, -1, -1, -1, -1, -1]])
    for red in ("none", "mean", "sum"):
        for sl in (slice(None), 0):  # (N, C) and a 1-D input
            outs = []
            for lib in (fg, torch):
                xt = lib.tensor(x[sl], requires_grad=True)
                loss = lib.nn.functional.multilabel_margin_loss(xt, lib.tensor(y[sl]), reduction=red)
                loss.backward(lib.ones_like(loss) * 0.5)
                outs.append((loss.detach().numpy(), xt.grad.numpy()))
            np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
            np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(fg.tensor(x), fg.tensor(np.full((5, 6), 6)))
