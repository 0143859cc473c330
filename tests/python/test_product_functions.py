"""The names of ``python/ferrograd/_product_functions.py`` that the op table does not cover:
the ``torch.*`` forms of ``nn.functional`` (ATen's positional signatures, ``reduction`` as an
int), the legacy linear-algebra names, the global switches, the Tensor properties and the
per-element ``apply_`` / ``map_`` / ``map2_``; and the error types and messages of the products
and statistics. Parity tests (skipped without PyTorch) call torch and ferrograd with the same
inputs."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import re
import warnings

import numpy as np
import pytest

import ferrograd
import ferrograd.nn.functional as F
from ferrograd import _product_functions

RNG = np.random.default_rng(11)


def _f(*shape):
    return RNG.standard_normal(shape)


def _pos(*shape):
    return RNG.uniform(0.1, 1.0, shape)


def _to(lib, v):
    if isinstance(v, np.ndarray):
        return lib.tensor(v)
    if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
        return [lib.tensor(a) for a in v]
    return v


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    return x if isinstance(x, np.ndarray) else np.asarray(x.detach().numpy())


def _assert_close(a, b, rtol=1e-6, atol=1e-8):
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_close(x, y, rtol, atol)
        return
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# --- torch.* forms of nn.functional: (name, inputs, extra positional args, the F call)

IDX = np.array([[0, 2], [1, 4]])
ALIASES = [
    ("adaptive_avg_pool1d", [_f(2, 3, 7)], [3], lambda x, o: F.adaptive_avg_pool1d(x, o)),
    ("adaptive_max_pool1d", [_f(2, 3, 7)], [3], lambda x, o: F.adaptive_max_pool1d(x, o, return_indices=True)),
    ("avg_pool1d", [_f(2, 3, 8)], [3, 2, 1, True, False], lambda x, *a: F.avg_pool1d(x, *a)),
    ("avg_pool1d", [_f(2, 3, 8)], [3], lambda x, k: F.avg_pool1d(x, k)),
    ("max_pool1d", [_f(2, 3, 7)], [3, 1, 1, 2, True], lambda x, *a: F.max_pool1d(x, *a)),
    ("max_pool1d", [_f(2, 3, 7)], [2], lambda x, k: F.max_pool1d(x, k)),
    ("max_pool1d_with_indices", [_f(2, 3, 7)], [2], lambda x, k: F.max_pool1d(x, k, return_indices=True)),
    ("max_pool2d", [_f(2, 3, 6, 6)], [(2, 3), (1, 2)], lambda x, *a: F.max_pool2d(x, *a)),
    ("max_pool3d", [_f(1, 2, 4, 4, 4)], [2], lambda x, k: F.max_pool3d(x, k)),
    ("batch_norm", [_f(4, 3, 5), _f(3), _f(3), _f(3), _pos(3)], [False, 0.1, 1e-5, True],
     lambda x, w, b, m, v, *a: F.batch_norm(x, m, v, w, b, *a[:3])),
    ("instance_norm", [_f(2, 3, 5), _f(3), _f(3)], [None, None, True, 0.1, 1e-5, False],
     lambda x, w, b, m, v, *a: F.instance_norm(x, m, v, w, b, *a[:3])),
    ("group_norm", [_f(2, 6, 5)], [3, None, None, 1e-4, True],
     lambda x, g, w, b, eps, c: F.group_norm(x, g, w, b, eps)),
    ("layer_norm", [_f(2, 6, 5), [5], _f(5), _f(5)], [1e-4, True],
     lambda x, s, w, b, eps, c: F.layer_norm(x, s, w, b, eps)),
    ("bilinear", [_f(4, 3), _f(4, 2), _f(5, 3, 2), _f(5)], [], F.bilinear),
    ("binary_cross_entropy_with_logits", [_f(4, 3), _pos(4, 3), _pos(3), _pos(3)], [1],
     lambda x, t, w, pw, r: F.binary_cross_entropy_with_logits(x, t, w, reduction="mean", pos_weight=pw)),
    ("channel_shuffle", [_f(2, 4, 3)], [2], F.channel_shuffle),
    ("native_channel_shuffle", [_f(2, 4, 3)], [2], F.native_channel_shuffle),
    ("pixel_shuffle", [_f(2, 8, 3, 3)], [2], F.pixel_shuffle),
    ("pixel_unshuffle", [_f(2, 2, 4, 4)], [2], F.pixel_unshuffle),
    ("conv1d", [_f(2, 4, 9), _f(6, 4, 3), _f(6)], [2, 1, 1, 1], F.conv1d),
    ("conv1d", [_f(2, 4, 9), _f(6, 4, 3)], [None, 1, "same"], F.conv1d),
    ("conv2d", [_f(2, 4, 7, 7), _f(6, 2, 3, 3), _f(6)], [1, 1, 2, 2], F.conv2d),
    ("conv3d", [_f(1, 2, 4, 4, 4), _f(3, 2, 2, 2, 2)], [], F.conv3d),
    ("conv_transpose1d", [_f(2, 4, 5), _f(4, 3, 3), _f(3)], [2, 1, 1, 1, 1], F.conv_transpose1d),
    ("conv_transpose2d", [_f(2, 4, 3, 3), _f(4, 3, 2, 2)], [None, 2, 0, 1, 2, 1], F.conv_transpose2d),
    ("conv_transpose3d", [_f(1, 2, 3, 3, 3), _f(2, 3, 2, 2, 2)], [], F.conv_transpose3d),
    ("convolution", [_f(2, 4, 7, 7), _f(6, 2, 3, 3), _f(6)], [[2, 2], [1, 1], [1, 1], False, [0, 0], 2],
     lambda x, w, b, s, p, d, t, op, g: F.conv2d(x, w, b, s, p, d, g)),
    ("convolution", [_f(2, 4, 3, 3), _f(4, 3, 2, 2)], [None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1],
     lambda x, w, b, s, p, d, t, op, g: F.conv_transpose2d(x, w, b, s, p, op, g, d)),
    ("cosine_embedding_loss", [_f(4, 3), _f(4, 3), np.array([1.0, -1.0, 1.0, -1.0])], [0.2, 2],
     lambda a, b, t, m, r: F.cosine_embedding_loss(a, b, t, m, reduction="sum")),
    ("cosine_similarity", [_f(4, 3), _f(4, 3)], [0, 1e-6], F.cosine_similarity),
    ("pairwise_distance", [_f(4, 3), _f(4, 3)], [1.5, 1e-6, True], F.pairwise_distance),
    ("hinge_embedding_loss", [_f(4, 3), np.sign(_f(4, 3))], [0.5, 1],
     lambda a, t, m, r: F.hinge_embedding_loss(a, t, m, reduction="mean")),
    ("hinge_embedding_loss", [_f(4, 3), np.sign(_f(4, 3))], [],
     lambda a, t: F.hinge_embedding_loss(a, t, reduction="none")),
    ("kl_div", [_f(4, 3), _pos(4, 3)], [1], lambda a, t, r: F.kl_div(a, t, reduction="none").mean()),
    ("kl_div", [_f(4, 3), _f(4, 3)], [2], lambda a, t, r: F.kl_div(a, t, reduction="sum")),
    ("margin_ranking_loss", [_f(4), _f(4), np.sign(_f(4))], [0.1, 2],
     lambda a, b, t, m, r: F.margin_ranking_loss(a, b, t, m, reduction="sum")),
    ("poisson_nll_loss", [_pos(4, 3), _pos(4, 3) * 3], [False, True, 1e-8, 1],
     lambda a, t, li, full, eps, r: F.poisson_nll_loss(a, t, li, full, eps=eps, reduction="mean")),
    ("triplet_margin_loss", [_f(4, 3), _f(4, 3), _f(4, 3)], [1.0, 2, 1e-6, True, 1],
     lambda a, p, n, m, pp, eps, sw, r: F.triplet_margin_loss(a, p, n, m, pp, eps, sw, reduction="mean")),
    ("embedding", [_f(5, 3), IDX], [], lambda w, i: F.embedding(i, w)),
    ("embedding", [_f(5, 3), IDX], [2], lambda w, i, p: F.embedding(i, w, p)),
    ("ctc_loss", [np.log(_pos(6, 2, 4) / 4), np.array([[1, 2], [3, 1]])], [[6, 5], [2, 2], 0, 1, False],
     lambda x, t, il, tl, b, r, z: F.ctc_loss(x, t, il, tl, b, "mean", z)),
]
ALIAS_IDS = [f"{a[0]}-{i}" for i, a in enumerate(ALIASES)]


@pytest.mark.parametrize("name,inputs,args,ref", ALIASES, ids=ALIAS_IDS)
def test_alias_matches_nn_functional(name, inputs, args, ref):
    tensors = [_to(ferrograd, a) for a in inputs]
    out = getattr(ferrograd, name)(*tensors, *args)
    expected = ref(*[_to(ferrograd, a) for a in inputs], *args)
    _assert_close(out, expected)


@pytest.mark.parametrize("name,inputs,args,ref", ALIASES, ids=ALIAS_IDS)
def test_alias_matches_torch(name, inputs, args, ref):
    torch = pytest.importorskip("torch")
    out = getattr(ferrograd, name)(*[_to(ferrograd, a) for a in inputs], *args)
    expected = getattr(torch, name)(*[_to(torch, a) for a in inputs], *args)
    _assert_close(out, expected, 1e-6, 1e-7)


def test_loss_reduction_default_is_none_as_torch():
    """PyTorch's binding passes 0 (none) when ``reduction`` is left out."""
    a, t = _f(4, 3), np.sign(_f(4, 3))
    out = ferrograd.hinge_embedding_loss(ferrograd.tensor(a), ferrograd.tensor(t))
    assert tuple(out.shape) == (4, 3)
    torch = pytest.importorskip("torch")
    _assert_close(out, torch.hinge_embedding_loss(torch.tensor(a), torch.tensor(t)))


def test_batch_norm_updates_running_stats_as_torch():
    x, m, v = _f(4, 3, 5), _f(3), _pos(3)
    res = {}
    for lib in (ferrograd, pytest.importorskip("torch")):
        rm, rv = lib.tensor(m), lib.tensor(v)
        out = lib.batch_norm(lib.tensor(x), None, None, rm, rv, True, 0.3, 1e-5, False)
        res[lib.__name__] = [out, rm, rv]
    _assert_close(res["ferrograd"], res["torch"])


def test_rms_norm():
    x, w = _f(2, 6, 5), _f(6, 5)
    out = ferrograd.rms_norm(ferrograd.tensor(x), [6, 5], ferrograd.tensor(w))
    ref = x / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + np.finfo(np.float64).eps) * w
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12)
    torch = pytest.importorskip("torch")
    for args in [([6, 5], w), ((5,), None, 0.1)]:
        a = [_to(torch, v) for v in args]
        b = [_to(ferrograd, v) for v in args]
        _assert_close(ferrograd.rms_norm(ferrograd.tensor(x), *b), torch.rms_norm(torch.tensor(x), *a))
    x32 = _f(3, 4).astype(np.float32) * 1e-4
    _assert_close(ferrograd.rms_norm(ferrograd.tensor(x32), (4,)), torch.rms_norm(torch.tensor(x32), (4,)), 1e-5)


def test_rms_norm_gradient_flows():
    x = ferrograd.tensor(_f(3, 4), requires_grad=True)
    w = ferrograd.tensor(_f(4), requires_grad=True)
    assert ferrograd.autograd.gradcheck(lambda a, b: ferrograd.rms_norm(a, (4,), b, 1e-3), (x, w))


# --- legacy linear algebra


def _legacy(lib, name, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(lib, name)(*args, **kwargs)


def _spd(n):
    a = _f(n, n)
    return a @ a.T + n * np.eye(n)


LEGACY = [
    ("cholesky", [_spd(3)], {}),
    ("cholesky", [_spd(3)], {"upper": True}),
    ("qr", [_f(4, 3)], {}),
    ("qr", [_f(4, 3)], {"some": False}),
    ("svd", [_f(2, 4, 3)], {"compute_uv": False}),
    ("lu", [_f(3, 3)], {}),
    ("lu", [_f(2, 3, 3)], {"get_infos": True}),
    ("orgqr", [_f(4, 3), _f(3)], {}),
    ("ormqr", [_f(4, 3), _f(3), _f(4, 2)], {}),
    ("ormqr", [_f(4, 2), _f(2), _f(3, 4)], {"left": False, "transpose": True}),
]


@pytest.mark.parametrize("name,inputs,kwargs", LEGACY, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LEGACY)])
def test_legacy_linalg_matches_torch(name, inputs, kwargs):
    torch = pytest.importorskip("torch")
    out = _legacy(ferrograd, name, *[_to(ferrograd, a) for a in inputs], **kwargs)
    expected = _legacy(torch, name, *[_to(torch, a) for a in inputs], **kwargs)
    if hasattr(expected, "_fields"):
        assert type(out).__name__ == type(expected).__name__ and out._fields == expected._fields
    _assert_close(out, expected, 1e-6, 1e-7)


def test_svd_is_u_s_v():
    a = _f(4, 3)
    U, S, V = _legacy(ferrograd, "svd", ferrograd.tensor(a))
    np.testing.assert_allclose(_np(U) @ np.diag(_np(S)) @ _np(V).T, a, atol=1e-12)
    assert tuple(V.shape) == (3, 3) and tuple(U.shape) == (4, 3)
    U, S, V = _legacy(ferrograd, "svd", ferrograd.tensor(a), some=False)
    assert tuple(U.shape) == (4, 4)


def test_lu_solve_solves():
    a, b = _f(3, 3) + 3 * np.eye(3), _f(3, 2)
    LU, piv = ferrograd.linalg.lu_factor(ferrograd.tensor(a))
    x = _legacy(ferrograd, "lu_solve", ferrograd.tensor(b), LU, piv)
    np.testing.assert_allclose(a @ _np(x), b, atol=1e-12)


@pytest.mark.parametrize("name,args", [("matrix_rank", 1), ("solve", 2), ("lstsq", 2), ("eig", 1), ("symeig", 1)])
def test_removed_linalg_names_raise(name, args):
    a = ferrograd.eye(2)
    with pytest.raises(RuntimeError, match="This function was deprecated since version 1.9 and is now removed"):
        getattr(ferrograd, name)(*[a] * args)
    if hasattr(ferrograd.Tensor, name):
        with pytest.raises(RuntimeError, match=re.escape(_product_functions._REMOVED[name][:60])):
            getattr(a, name)(*[a] * (args - 1))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as info:
        getattr(torch, name)(*[torch.eye(2)] * args)
    assert str(info.value) == _product_functions._REMOVED[name]


def test_geqrf_not_supported():
    with pytest.raises(NotImplementedError, match="geqrf"):
        ferrograd.geqrf(ferrograd.eye(2))


def test_deprecation_warnings_once_unless_warn_always():
    _product_functions._warned.discard("qr")
    a = ferrograd.eye(2)
    with pytest.warns(UserWarning, match=r"torch\.qr is deprecated in favor of torch\.linalg\.qr"):
        ferrograd.qr(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferrograd.qr(a)  # once per process, as TORCH_WARN_ONCE
    ferrograd.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match="torch.qr is deprecated"):
            ferrograd.qr(a)
    finally:
        ferrograd.set_warn_always(False)


def test_chain_matmul_warns_and_multiplies():
    _product_functions._warned.discard("chain_matmul")
    a, b, c = _f(2, 3), _f(3, 4), _f(4, 2)
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        out = ferrograd.chain_matmul(*[ferrograd.tensor(m) for m in (a, b, c)])
    np.testing.assert_allclose(_np(out), a @ b @ c, rtol=1e-12)
    one = ferrograd.tensor(a)
    res = ferrograd.chain_matmul(one)
    assert res is not one and np.array_equal(_np(res), a)


# --- products and statistics beyond the op table


def test_addmv_beta_zero_ignores_nan_and_gives_zero_grad():
    x = ferrograd.tensor([float("nan")] * 3, requires_grad=True)
    out = ferrograd.addmv(x, ferrograd.ones(3, 4), ferrograd.ones(4), beta=0)
    assert _np(out).tolist() == [4.0, 4.0, 4.0]
    out.sum().backward()
    assert _np(x.grad).tolist() == [0.0, 0.0, 0.0]


def test_in_place_products():
    i, m, v = _f(3), _f(3, 4), _f(4)
    t = ferrograd.tensor(i)
    assert t.addmv_(ferrograd.tensor(m), ferrograd.tensor(v), beta=2, alpha=0.5) is t
    np.testing.assert_allclose(_np(t), 2 * i + 0.5 * m @ v, rtol=1e-12)
    t = ferrograd.tensor(_f(3, 4))
    ref = _np(t) * 0.5 + np.outer(i, v)
    t.addr_(ferrograd.tensor(i), ferrograd.tensor(v), beta=0.5)
    np.testing.assert_allclose(_np(t), ref, rtol=1e-12)
    a, b1, b2 = _f(2, 3, 4), _f(2, 3, 5), _f(2, 5, 4)
    t = ferrograd.tensor(a)
    t.baddbmm_(ferrograd.tensor(b1), ferrograd.tensor(b2))
    np.testing.assert_allclose(_np(t), a + b1 @ b2, rtol=1e-12)
    t = ferrograd.tensor(a[0])
    t.addbmm_(ferrograd.tensor(b1), ferrograd.tensor(b2), alpha=2)
    np.testing.assert_allclose(_np(t), a[0] + 2 * (b1 @ b2).sum(0), rtol=1e-12)
    x = _f(3, 4) * 3
    t = ferrograd.tensor(x)
    t.renorm_(2, 0, 1.0)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(_np(t), x * np.where(norms > 1, 1 / (norms + 1e-7), 1), rtol=1e-12)


def test_in_place_product_records_graph():
    base = ferrograd.tensor(_f(3), requires_grad=True)
    m = ferrograd.tensor(_f(3, 4), requires_grad=True)
    v = ferrograd.tensor(_f(4))
    out = base.clone().addmv_(m, v, beta=2.0)
    out.sum().backward()
    np.testing.assert_allclose(_np(base.grad), [2.0] * 3)
    np.testing.assert_allclose(_np(m.grad), np.tile(_np(v), (3, 1)), rtol=1e-12)


def test_integer_products_truncate_scalars_as_torch():
    i = ferrograd.ones(3, dtype=ferrograd.long)
    m = ferrograd.ones(3, 4, dtype=ferrograd.long)
    v = ferrograd.ones(4, dtype=ferrograd.long)
    out = ferrograd.addmv(i, m, v, beta=1.5, alpha=2.7)
    assert out.dtype == ferrograd.long and _np(out).tolist() == [9, 9, 9]


def test_addr_bool():
    b, c = ferrograd.tensor([True, False]), ferrograd.tensor([True, True, False])
    i = ferrograd.tensor([[False, False, True]] * 2)
    assert _np(ferrograd.addr(i, b, c)).tolist() == [[True, True, True], [False, False, True]]
    assert _np(ferrograd.addr(i, b, c, beta=0)).tolist() == [[True, True, False], [False, False, False]]


def test_cov_warns_on_non_positive_degrees_of_freedom():
    with pytest.warns(UserWarning, match="cov\\(\\): degrees of freedom is <= 0"):
        out = ferrograd.cov(ferrograd.ones(2, 1))
    assert np.isnan(_np(out)).all()


def test_histogram_named_tuple_and_grad():
    x = ferrograd.tensor([0.0, 1.0, 1.0, 3.0], requires_grad=True)
    h = ferrograd.histogram(x, 3)
    assert type(h).__name__ == "histogram" and h._fields == ("hist", "bin_edges")
    assert _np(h.hist).tolist() == [1.0, 2.0, 1.0]
    assert _np(h.bin_edges).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert h.hist.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        h.hist.sum().backward()
    w = ferrograd.tensor([1.0, 0.5, 0.25, 2.0])
    assert _np(x.detach().histogram(2, weight=w).hist).tolist() == [1.75, 2.0]


def test_histogram_empty_and_constant_input_edges():
    assert _np(ferrograd.histogram(ferrograd.ones(0), 2).bin_edges).tolist() == [0.0, 0.5, 1.0]
    assert _np(ferrograd.histogram(ferrograd.ones(3), 2).bin_edges).tolist() == [0.5, 1.0, 1.5]


def test_histogram_matches_torch_float32_edges():
    torch = pytest.importorskip("torch")
    x = _f(200).astype(np.float32)
    for bins, kw in [(13, {}), (7, {"range": (-1.3, 0.7)}), (5, {"density": True})]:
        a = ferrograd.histogram(ferrograd.tensor(x), bins, **kw)
        b = torch.histogram(torch.tensor(x), bins, **kw)
        _assert_close(list(a), list(b), 1e-6, 1e-7)


# --- errors: (id, call, exception type, message); the same call raises the same in PyTorch


def _z(lib, *shape, dtype=None):
    return lib.zeros(*shape, dtype=getattr(lib, dtype) if dtype else None)


ERRORS = [
    ("addmv_size", lambda L: L.addmv(_z(L, 3), _z(L, 3, 4), _z(L, 5)), RuntimeError,
     "size mismatch, got input (3), mat (3x4), vec (5)"),
    ("addmv_input_size", lambda L: L.addmv(_z(L, 2), _z(L, 3, 4), _z(L, 4)), RuntimeError,
     "size mismatch, got input (2), mat (3x4), vec (4)"),
    ("addmv_dims", lambda L: L.addmv(_z(L, 3), _z(L, 3), _z(L, 3)), RuntimeError,
     "vector + matrix @ vector expected, got 1, 1, 1"),
    ("addmv_dtype", lambda L: L.addmv(_z(L, 3), _z(L, 3, 4, dtype="float64"), _z(L, 4)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    ("addmv_input_type", lambda L: L.addmv([1.0], _z(L, 3, 4), _z(L, 4)), TypeError,
     "addmv(): argument 'input' (position 1) must be Tensor, not list"),
    ("addr_vec1", lambda L: L.addr(_z(L, 3, 4), _z(L, 3, 1), _z(L, 4)), RuntimeError,
     "addr: Expected 1-D argument vec1, but got 2-D"),
    ("addr_vec2", lambda L: L.addr(_z(L, 3, 4), _z(L, 3), _z(L, 4, 1)), RuntimeError,
     "addr: Expected 1-D argument vec2, but got 2-D"),
    ("addr_input", lambda L: L.addr(_z(L, 3, 5), _z(L, 3), _z(L, 4)), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (5) at non-singleton dimension 1.  "
     "Target sizes: [3, 4].  Tensor sizes: [3, 5]"),
    ("addr_int_beta", lambda L: L.addr(_z(L, 2, 2, dtype="long"), _z(L, 2, dtype="long"), _z(L, 2, dtype="long"),
                                       beta=1.5), RuntimeError,
     "For integral input tensors, argument beta must not be a floating point number."),
    ("baddbmm_batches", lambda L: L.baddbmm(_z(L, 2, 3, 4), _z(L, 2, 3, 5), _z(L, 3, 5, 4)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [3, 5]."),
    ("baddbmm_input", lambda L: L.baddbmm(_z(L, 2, 3, 5), _z(L, 2, 3, 5), _z(L, 2, 5, 4)), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (5) at non-singleton dimension 2.  "
     "Target sizes: [2, 3, 4].  Tensor sizes: [2, 3, 5]"),
    ("baddbmm_dtype", lambda L: L.baddbmm(_z(L, 2, 3, 4), _z(L, 2, 3, 5, dtype="float64"), _z(L, 2, 5, 4)),
     RuntimeError, "Input dtypes must be the same, got: input float, batch1: double, batch2: float"),
    ("addbmm_batches", lambda L: L.addbmm(_z(L, 3, 4), _z(L, 2, 3, 5), _z(L, 3, 5, 4)), RuntimeError,
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    ("addbmm_inner", lambda L: L.addbmm(_z(L, 3, 4), _z(L, 2, 3, 5), _z(L, 2, 6, 4)), RuntimeError,
     "Incompatible matrix sizes for bmm (3x5 and 6x4)"),
    ("addbmm_dtype", lambda L: L.addbmm(_z(L, 3, 4, dtype="float64"), _z(L, 2, 3, 5), _z(L, 2, 5, 4)), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    ("inner_last", lambda L: L.inner(_z(L, 2, 3), _z(L, 2, 4)), RuntimeError,
     "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [2, 4]"),
    ("inner_dtype", lambda L: L.inner(_z(L, 3), _z(L, 3, dtype="float64")), RuntimeError,
     "both inputs should have same dtype"),
    ("vdot_dims", lambda L: L.vdot(_z(L, 2, 3), _z(L, 3)), RuntimeError,
     "1D tensors expected, but got 2D and 1D tensors"),
    ("vdot_size", lambda L: L.vdot(_z(L, 2), _z(L, 3)), RuntimeError,
     "inconsistent tensor size, expected tensor [2] and src [3] to have the same number of elements, but got 2 and 3 "
     "elements respectively"),
    ("vdot_dtype", lambda L: L.vdot(_z(L, 3), _z(L, 3, dtype="float64")), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("ger_dims", lambda L: L.ger(_z(L, 2, 3), _z(L, 3)), RuntimeError,
     "outer: Expected 1-D argument self, but got 2-D"),
    ("chain_empty", lambda L: L.chain_matmul(), RuntimeError, "chain_matmul(): Expected one or more matrices"),
    ("chain_1d", lambda L: L.chain_matmul(_z(L, 2, 3), _z(L, 3)), RuntimeError,
     "Tensor dimension is 1, expected 2 instead."),
    ("dist_int", lambda L: L.dist(_z(L, 2, dtype="long"), _z(L, 2, dtype="long")), RuntimeError,
     "norm(): input dtype should be either floating point or complex. Got Long instead."),
    ("dist_broadcast", lambda L: L.dist(_z(L, 2, 3), _z(L, 4)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("cov_3d", lambda L: L.cov(_z(L, 2, 2, 2)), RuntimeError,
     "cov(): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
    ("cov_bool", lambda L: L.cov(_z(L, 2, 2, dtype="bool")), RuntimeError,
     "cov(): bool dtype is not supported for input"),
    ("cov_fweights_float", lambda L: L.cov(_z(L, 2, 3), fweights=_z(L, 3)), RuntimeError,
     "cov(): expected fweights to have integral dtype but got fweights with Float dtype"),
    ("cov_fweights_2d", lambda L: L.cov(_z(L, 2, 3), fweights=_z(L, 3, 1, dtype="long")), RuntimeError,
     "cov(): expected fweights to have one or fewer dimensions but got fweights with 2 dimensions"),
    ("cov_fweights_numel", lambda L: L.cov(_z(L, 2, 3), fweights=_z(L, 4, dtype="long")), RuntimeError,
     "cov(): expected fweights to have the same numel as there are observations in the input but got 4 != 3"),
    ("cov_fweights_negative", lambda L: L.cov(_z(L, 2, 3), fweights=-L.ones(3, dtype=L.long)), RuntimeError,
     "cov(): fweights cannot be negative"),
    ("cov_aweights_int", lambda L: L.cov(_z(L, 2, 3), aweights=_z(L, 3, dtype="long")), RuntimeError,
     "cov(): expected aweights to have floating point dtype but got aweights with Long dtype"),
    ("cov_aweights_negative", lambda L: L.cov(_z(L, 2, 3), aweights=-L.ones(3)), RuntimeError,
     "cov(): aweights cannot be negative"),
    ("cov_weights_zero", lambda L: L.cov(_z(L, 2, 3), aweights=_z(L, 3)), RuntimeError,
     "cov(): weights sum to zero, can't be normalized"),
    ("corrcoef_3d", lambda L: L.corrcoef(_z(L, 2, 2, 2)), RuntimeError,
     "corrcoef(): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
    ("trapezoid_x", lambda L: L.trapezoid(_z(L, 3), _z(L, 4)), RuntimeError,
     "trapezoid: There must be one `x` value for each sample point"),
    ("trapezoid_bool", lambda L: L.trapezoid(_z(L, 3, dtype="bool")), RuntimeError,
     "trapezoid: received a bool input for `y`, but bool is not supported"),
    ("trapezoid_dx_bool", lambda L: L.trapezoid(_z(L, 3), dx=True), RuntimeError,
     "trapezoid: Currently, we only support dx as a real number."),
    ("trapezoid_0d", lambda L: L.trapezoid(L.tensor(1.0)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    ("cumulative_trapezoid_x", lambda L: L.cumulative_trapezoid(_z(L, 3), _z(L, 4)), RuntimeError,
     "cumulative_trapezoid: There must be one `x` value for each sample point"),
    ("cumulative_trapezoid_0d", lambda L: L.cumulative_trapezoid(L.tensor(1.0)), IndexError,
     "slice() cannot be applied to a 0-dim tensor."),
    ("renorm_p", lambda L: L.renorm(_z(L, 2, 3), 0, 0, 1), RuntimeError, "renorm: non-positive-norm not supported"),
    ("renorm_maxnorm", lambda L: L.renorm(_z(L, 2, 3), 2, 0, -1), RuntimeError,
     "renorm: expected maxnorm to be >= 0 but got -1"),
    ("renorm_1d", lambda L: L.renorm(_z(L, 3), 2, 0, 1), RuntimeError,
     "renorm: input needs at least 2 dimensions, got 1 dimensions"),
    ("renorm_dim", lambda L: L.renorm(_z(L, 2, 3), 2, 2, 1), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("histogram_int", lambda L: L.histogram(L.arange(5), 4), NotImplementedError,
     "\"histogramdd\" not implemented for 'Long'"),
    ("histogram_bins_dtype", lambda L: L.histogram(_z(L, 5), L.tensor([0.0, 1.0], dtype=L.float64)), RuntimeError,
     "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype float and "
     "bins for dimension 0 with dtype double"),
    ("histogram_bins_zero", lambda L: L.histogram(_z(L, 5), 0), RuntimeError,
     "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
    ("histogram_range", lambda L: L.histogram(_z(L, 5), 3, range=(3.0, 1.0)), RuntimeError,
     "torch.histogramdd: min should not exceed max, but got min 3 max 1 for dimension 0"),
    ("histogram_range_inf", lambda L: L.histogram(_z(L, 5), 3, range=(0.0, float("inf"))), RuntimeError,
     "torch.histogramdd: dimension 0's range [0, inf] is not finite"),
    ("histogram_weight_shape", lambda L: L.histogram(_z(L, 5), 3, weight=L.ones(4)), RuntimeError,
     "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its "
     "innermost dimension, but got input with shape [5, 1] and weight with shape [4]"),
    ("histogram_bins_2d", lambda L: L.histogram(_z(L, 5), L.zeros(1, 2)), RuntimeError,
     "torch.histogramdd: bins tensor should have one dimension, but got 2 dimensions in the bins tensor for "
     "dimension 0"),
    ("frobenius_3_dims", lambda L: _legacy(L, "frobenius_norm", L.ones(2, 2, 2), (0, 1, 2)), RuntimeError,
     "Expected at most 2 dimensions, but got 3 dimensions instead."),
    ("nuclear_one_dim", lambda L: _legacy(L, "nuclear_norm", L.eye(3), 0), RuntimeError,
     "linalg.matrix_norm: dims must be different. Got (0, 0)"),
    ("rms_norm_shape", lambda L: L.rms_norm(_z(L, 2, 3), [4]), RuntimeError,
     "Given normalized_shape=[4], expected input with shape [*4], but got input of size[2, 3]"),
    ("rms_norm_shape2", lambda L: L.rms_norm(_z(L, 2, 3), [2, 4]), RuntimeError,
     "Given normalized_shape=[2, 4], expected input with shape [*2, 4], but got input of size[2, 3]"),
    ("loss_reduction_type", lambda L: L.hinge_embedding_loss(_z(L, 2), _z(L, 2), 1.0, "mean"), TypeError,
     "hinge_embedding_loss(): argument 'reduction' (position 4) must be int, not str"),
    ("deterministic_type", lambda L: L.use_deterministic_algorithms(1), TypeError,
     "_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not int"),
    ("deterministic_warn_only_type", lambda L: L.use_deterministic_algorithms(True, warn_only=1), TypeError,
     "_set_deterministic_algorithms(): argument 'warn_only' must be bool, not int"),
    ("matmul_precision_type", lambda L: L.set_float32_matmul_precision(3), RuntimeError,
     "set_float32_matmul_precision expects a str, but got int"),
    ("flush_denormal_type", lambda L: L.set_flush_denormal(1), RuntimeError,
     "flush_denormal expects a bool, but got int"),
    ("rng_state_type", lambda L: L.set_rng_state([1]), TypeError, "expected a torch.ByteTensor, but got list"),
    ("is_nonzero_many", lambda L: L.is_nonzero(L.ones(2)), RuntimeError,
     "Boolean value of Tensor with more than one value is ambiguous"),
    ("is_nonzero_empty", lambda L: L.is_nonzero(L.ones(0)), RuntimeError,
     "Boolean value of Tensor with no values is ambiguous"),
    ("is_nonzero_type", lambda L: L.is_nonzero(3), TypeError,
     "is_nonzero(): argument 'input' (position 1) must be Tensor, not int"),
    ("is_same_size_type", lambda L: L.is_same_size(L.ones(1), 3), TypeError,
     "is_same_size(): argument 'other' (position 2) must be Tensor, not int"),
    ("H_1d", lambda L: L.ones(3).H, RuntimeError,
     "tensor.H is only supported on matrices (2-D tensors). Got 1-D tensor."),
    ("H_3d", lambda L: L.ones(2, 2, 2).H, RuntimeError,
     "tensor.H is only supported on matrices (2-D tensors). Got 3-D tensor. For batches of matrices, consider using "
     "tensor.mH"),
    ("mH_1d", lambda L: L.ones(3).mH, RuntimeError,
     "tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor."),
    ("adjoint_1d", lambda L: L.ones(3).adjoint(), RuntimeError,
     "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor."),
    ("new_float", lambda L: L.ones(2).new(3.5), TypeError, "new(): data must be a sequence (got float)"),
    ("record_stream", lambda L: L.ones(2).record_stream(None), RuntimeError, "unknown parameter type"),
    ("apply_grad", lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v), RuntimeError,
     "Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead."),
    ("apply_str", lambda L: L.ones(2).apply_(lambda v: "x"), TypeError, "must be real number, not str"),
    ("map_grad", lambda L: L.ones(3).map_(L.ones(3, requires_grad=True), lambda a, b: a), RuntimeError,
     "Can't call map_() on Variable that requires grad. Use var.detach().map_() instead."),
    ("map_dtype", lambda L: L.ones(3).map_(L.ones(3, dtype=L.float64), lambda a, b: a), TypeError,
     "map_: expected torch.FloatTensor for 'other' (got torch.DoubleTensor)"),
    ("map2_grad", lambda L: L.ones(3, requires_grad=True).map2_(L.ones(3), L.ones(3), lambda a, b, c: a), RuntimeError,
     "Can't call map2_() on Variable that requires grad. Use var.detach().map2_() instead."),
    ("map2_dtype", lambda L: L.ones(3).map2_(L.ones(3), L.ones(3, dtype=L.float64), lambda a, b, c: a), TypeError,
     "map2_: expected torch.FloatTensor for argument 'y' (got torch.DoubleTensor)"),
]
ERROR_PARAMS = [pytest.param(fn, exc, msg, id=name) for name, fn, exc, msg in ERRORS]


@pytest.mark.parametrize("fn,exc,msg", ERROR_PARAMS)
def test_errors(fn, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=re.escape(msg)):
            fn(ferrograd)


@pytest.mark.parametrize("fn,exc,msg", ERROR_PARAMS)
def test_errors_match_torch(fn, exc, msg):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=re.escape(msg)):
            fn(torch)


def test_deprecated_beta_overload_not_supported():
    with pytest.raises(NotImplementedError, match=r"addmv\(beta, input"):
        ferrograd.addmv(0.5, ferrograd.zeros(3), ferrograd.zeros(3, 4), ferrograd.zeros(4))
    with pytest.raises(NotImplementedError, match=r"baddbmm\(beta, input"):
        ferrograd.baddbmm(0.5, ferrograd.zeros(1, 2, 2), 2.0, ferrograd.zeros(1, 2, 2), ferrograd.zeros(1, 2, 2))


# --- global switches


def test_deterministic_algorithms_switches():
    assert ferrograd.are_deterministic_algorithms_enabled() is False
    try:
        ferrograd.use_deterministic_algorithms(True, warn_only=True)
        assert ferrograd.are_deterministic_algorithms_enabled() is True
        assert ferrograd.is_deterministic_algorithms_warn_only_enabled() is True
        assert ferrograd.get_deterministic_debug_mode() == 1
        ferrograd.set_deterministic_debug_mode("error")
        assert ferrograd.get_deterministic_debug_mode() == 2
        assert ferrograd.is_deterministic_algorithms_warn_only_enabled() is False
    finally:
        ferrograd.use_deterministic_algorithms(False)
    assert ferrograd.get_deterministic_debug_mode() == 0
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        ferrograd.set_deterministic_debug_mode("sometimes")


def test_float32_matmul_precision():
    assert ferrograd.get_float32_matmul_precision() == "highest"
    try:
        ferrograd.set_float32_matmul_precision("medium")
        assert ferrograd.get_float32_matmul_precision() == "medium"
        with pytest.warns(UserWarning, match="bad is not one of 'highest', 'high', or 'medium'"):
            ferrograd.set_float32_matmul_precision("bad")
        assert ferrograd.get_float32_matmul_precision() == "medium"
    finally:
        ferrograd.set_float32_matmul_precision("highest")


def test_rng_state_round_trip():
    state = ferrograd.get_rng_state()
    a = ferrograd.rand(5)
    b = ferrograd.randn(3)
    ferrograd.set_rng_state(state)
    assert np.array_equal(_np(ferrograd.rand(5)), _np(a))
    assert np.array_equal(_np(ferrograd.randn(3)), _np(b))


def test_default_device_cpu_only():
    ferrograd.set_default_device("cpu")
    ferrograd.set_default_device(None)
    assert ferrograd.get_default_device() == ferrograd.device("cpu")
    assert str(ferrograd.get_default_device()) == "cpu"
    with pytest.raises(RuntimeError, match="CPU only"):
        ferrograd.set_default_device("cuda")


def test_flags_and_predicates():
    assert ferrograd.set_flush_denormal(True) is False  # not switchable here (PyTorch: False when unsupported)
    assert ferrograd.is_warn_always_enabled() is False
    ferrograd.set_warn_always(True)
    assert ferrograd.is_warn_always_enabled() is True
    ferrograd.set_warn_always(False)
    t = ferrograd.tensor
    values = ([0.0], 1, [float("nan")], True, [0])
    assert [ferrograd.is_nonzero(t(v)) for v in values] == [False, True, True, True, False]
    assert ferrograd.is_same_size(ferrograd.ones(2, 3), ferrograd.ones(2, 3))
    assert not ferrograd.ones(2, 3).is_same_size(ferrograd.ones(3, 2))
    signed = [ferrograd.is_signed(ferrograd.ones(1, dtype=d)) for d in
              (ferrograd.uint8, ferrograd.bool, ferrograd.int8, ferrograd.int64, ferrograd.float32)]
    assert signed == [False, False, True, True, True]
    assert ferrograd.ones(1).is_signed() is True
    assert ferrograd.is_inference(ferrograd.ones(1)) is False and ferrograd.ones(1).is_inference() is False
    assert ferrograd.is_storage(ferrograd.ones(1)) is False


def test_typename():
    assert ferrograd.typename(ferrograd.ones(1)) == "torch.FloatTensor"
    assert ferrograd.typename(ferrograd.ones(1, dtype=ferrograd.long)) == "torch.LongTensor"
    assert ferrograd.typename(3) == "int"
    assert ferrograd.typename(int) == "int"
    assert ferrograd.typename(ferrograd.nn.Linear(1, 1)) == "ferrograd.nn.modules.linear.Linear"


# --- Tensor properties


def test_tensor_memory_properties():
    x = ferrograd.ones(2, 3)
    assert x.nbytes == 24 and x[:, :2].nbytes == 16 and ferrograd.ones(3, dtype=ferrograd.int8).nbytes == 3
    assert x.ndimension() == 2 and ferrograd.tensor(1.0).ndimension() == 0
    assert x.get_device() == -1
    assert x.is_pinned() is False and x.is_shared() is False
    assert x.share_memory_() is x
    with pytest.raises(NotImplementedError, match="untyped_storage"):
        x.untyped_storage()
    with pytest.raises(NotImplementedError, match="storage"):
        x.storage()


def test_adjoints():
    a = np.arange(12.0).reshape(2, 2, 3)
    x = ferrograd.tensor(a)
    assert np.array_equal(_np(x.mH), a.swapaxes(-1, -2))
    assert np.array_equal(_np(x.adjoint()), a.swapaxes(-1, -2))
    assert np.array_equal(_np(x[0].H), a[0].T)
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert float(ferrograd.tensor(2.0).H) == 2.0
    y = ferrograd.tensor(a[0], requires_grad=True)
    y.mH.sum().backward()
    assert np.array_equal(_np(y.grad), np.ones((2, 3)))


def test_new():
    x = ferrograd.ones(2, dtype=ferrograd.float64)
    assert tuple(x.new().shape) == (0,) and x.new().dtype == ferrograd.float64
    assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype == ferrograd.float64
    assert _np(x.new([1, 2])).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype == ferrograd.float64
    assert _np(x.new((1, 2))).tolist() == [1.0, 2.0]
    assert tuple(x.new(ferrograd.Size([2, 1])).shape) == (2, 1)
    src = ferrograd.arange(3.0, dtype=ferrograd.float64)
    assert np.array_equal(_np(x.new(src)), [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="expected torch.DoubleTensor"):
        x.new(ferrograd.ones(2))


def test_apply_and_map_in_place():
    base = ferrograd.arange(6.0).view(2, 3)
    view = base.t()
    assert view.apply_(lambda v: v * 10) is view
    assert _np(base).tolist() == [[0.0, 10.0, 20.0], [30.0, 40.0, 50.0]]
    ints = ferrograd.arange(4).apply_(lambda v: v * 2.7)
    assert ints.dtype == ferrograd.long and _np(ints).tolist() == [0, 2, 5, 8]
    assert _np(ferrograd.tensor([True, False]).apply_(lambda v: not v)).tolist() == [False, True]
    m = ferrograd.ones(2, 3).map_(ferrograd.arange(3.0), lambda a, b: a + b)
    assert _np(m).tolist() == [[1.0, 2.0, 3.0]] * 2
    m2 = ferrograd.ones(2, 3).map2_(ferrograd.arange(3.0), ferrograd.tensor([[5.0], [7.0]]), lambda a, b, c: a + b * c)
    assert _np(m2).tolist() == [[1.0, 6.0, 11.0], [1.0, 8.0, 15.0]]


def test_apply_matches_torch():
    torch = pytest.importorskip("torch")
    vals = _f(3, 4)
    for lib in (ferrograd, torch):
        t = lib.tensor(vals).t()
        t.apply_(lambda v: v * v - 1)
    a = ferrograd.tensor(vals).t().apply_(lambda v: v * v - 1)
    b = torch.tensor(vals).t().apply_(lambda v: v * v - 1)
    _assert_close(a, b)


def test_pin_memory_is_a_no_op_on_cpu():
    # PyTorch's CPU-only build raises here; the issue asks scripts that pin batches
    # (``x.pin_memory().to(device, non_blocking=True)``) to run unchanged on CPU
    x = ferrograd.arange(3.0)
    assert x.pin_memory() is x
    assert x.pin_memory().to("cpu", non_blocking=True).tolist() == [0.0, 1.0, 2.0]
    assert not x.is_pinned()
