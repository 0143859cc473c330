"""Names that public PyTorch training scripts use: memory formats, ``Tensor.is_sparse``,
addcmul / addcdiv / lerp (errors and in-place forms; the ops themselves are OpInfo rows in
tests/native/op_db.py), channel-wise dropout, ``torch.testing.assert_close``,
``torch.compile``, ``torch.autograd.Variable``, ``torch.inference_mode``,
``torch.serialization`` safe globals and ``NonDynamicallyQuantizableLinear``.

The comparison tests take PyTorch as the spec and skip without it; the others always run.
"""

import io
import pickle
import re
import warnings

import numpy as np
import pytest

import ferrograd
import ferrograd.nn.functional as F
from ferrograd import nn


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


# ------------------------------------------------------------------ memory formats


def test_memory_format_objects():
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        mf = getattr(ferrograd, name)
        assert isinstance(mf, ferrograd.memory_format)
        assert repr(mf) == str(mf) == "torch." + name
        assert pickle.loads(pickle.dumps(mf)) is mf
    assert ferrograd.channels_last != ferrograd.contiguous_format
    with pytest.raises(TypeError, match="^cannot create 'torch.memory_format' instances$"):
        ferrograd.memory_format()


def test_memory_format_reprs_match_torch(torch):
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        assert repr(getattr(ferrograd, name)) == repr(getattr(torch, name))
    assert _error(lambda: ferrograd.memory_format()) == _error(lambda: torch.memory_format())


def test_channels_last_strides_and_values():
    x = ferrograd.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    y = x.contiguous(memory_format=ferrograd.channels_last)
    assert y.stride() == (60, 1, 15, 3)
    assert y.equal(x)
    assert not y.is_contiguous()
    assert y.is_contiguous(memory_format=ferrograd.channels_last)
    assert y.contiguous(memory_format=ferrograd.channels_last) is y
    assert y.contiguous().stride() == (60, 20, 5, 1)
    z = ferrograd.ones(2, 3, 4, 5, 6).contiguous(memory_format=ferrograd.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)


def test_channels_last_is_differentiable():
    x = ferrograd.arange(24.0).reshape(1, 2, 3, 4).requires_grad_()
    w = ferrograd.arange(24.0).reshape(1, 2, 3, 4)
    (x.contiguous(memory_format=ferrograd.channels_last) * w).sum().backward()
    assert x.grad.equal(w)


@pytest.mark.parametrize("shape,perm", [((2, 3, 4, 5), None), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3, 4), (1, 0)),
                                        ((1, 3, 1, 2), (0, 2, 3, 1)), ((2, 3, 4), (2, 0, 1)), ((2, 1, 4, 5), None)])
def test_memory_format_strides_match_torch(torch, shape, perm):
    def make(lib):
        t = lib.arange(float(np.prod(shape))).reshape(shape)
        if perm is not None:
            t = t.permute(*perm).contiguous().permute(*np.argsort(perm).tolist())
        return t

    t, f = make(torch), make(ferrograd)
    assert f.stride() == t.stride()
    for mf in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        tmf, fmf = getattr(torch, mf), getattr(ferrograd, mf)
        assert f.is_contiguous(memory_format=fmf) == t.is_contiguous(memory_format=tmf), mf
        tc, fc = _error(lambda: t.clone(memory_format=tmf)), _error(lambda: f.clone(memory_format=fmf))
        assert fc == tc
        if tc is None:
            assert f.clone(memory_format=fmf).stride() == t.clone(memory_format=tmf).stride(), mf
            assert f.clone(memory_format=fmf).equal(f)
        tc, fc = _error(lambda: t.contiguous(memory_format=tmf)), _error(lambda: f.contiguous(memory_format=fmf))
        assert fc == tc
        if tc is None:
            assert f.contiguous(memory_format=fmf).stride() == t.contiguous(memory_format=tmf).stride(), mf
            tr, fr = t.to(memory_format=tmf), f.to(memory_format=fmf)
            assert fr.stride() == tr.stride(), mf
            assert (fr is f) == (tr is t), mf
    assert f.clone().stride() == t.clone().stride()  # preserve_format by default
    assert ferrograd.clone(f).stride() == torch.clone(t).stride()


def test_memory_format_argument_errors_match_torch(torch):
    def cases(lib):
        x = lib.ones(2, 3)
        return [
            lambda: x.contiguous(memory_format=None),
            lambda: x.contiguous(memory_format=3),
            lambda: x.clone(memory_format=1),
            lambda: x.is_contiguous(memory_format=None),
            lambda: x.t().contiguous(memory_format=lib.preserve_format),
            lambda: x.contiguous(memory_format=lib.channels_last),
            lambda: lib.ones(2, 3, 4, 5).contiguous(memory_format=lib.channels_last_3d),
            lambda: x.to(memory_format=lib.channels_last),
        ]

    for t_case, f_case in zip(cases(torch), cases(ferrograd)):
        expected = _error(t_case)
        assert expected is not None
        assert _error(f_case) == expected
    x = ferrograd.ones(2, 3)
    assert x.clone(memory_format=None).equal(x)


def test_to_with_memory_format_and_dtype():
    x = ferrograd.ones(2, 3, 4, 5)
    y = x.to(ferrograd.float64, memory_format=ferrograd.channels_last)
    assert y.dtype == ferrograd.float64 and y.stride() == (60, 1, 15, 3)
    assert x.to(memory_format=ferrograd.contiguous_format) is x
    assert x.to(memory_format=ferrograd.contiguous_format, copy=True) is not x


def test_is_sparse():
    assert ferrograd.ones(2).is_sparse is False
    assert nn.Parameter(ferrograd.ones(2)).is_sparse is False


# ------------------------------------------------------------------ addcmul, addcdiv, lerp


def test_addcmul_addcdiv_lerp_values():
    x, a, b = ferrograd.tensor([1.0, 2.0]), ferrograd.tensor([3.0, 4.0]), ferrograd.tensor([2.0, 8.0])
    assert ferrograd.addcmul(x, a, b, value=0.5).tolist() == [4.0, 18.0]
    assert x.addcmul(a, b).tolist() == [7.0, 34.0]
    assert ferrograd.addcdiv(x, a, b, value=2).tolist() == [4.0, 3.0]
    assert ferrograd.lerp(x, a, 0.5).tolist() == [2.0, 3.0]
    assert x.lerp(a, ferrograd.tensor([0.0, 1.0])).tolist() == [1.0, 4.0]
    # integers: value is truncated, as PyTorch casts it to the tensors' integer type
    i = ferrograd.tensor([1, 3])
    assert ferrograd.addcmul(i, i, i, value=2.5).tolist() == [3, 21]
    assert ferrograd.addcmul(i, i, i, value=-1.5).tolist() == [0, -6]
    assert ferrograd.addcmul(i, i, i).dtype == ferrograd.int64


def test_inplace_addcmul_addcdiv_lerp():
    x = ferrograd.tensor([1.0, 2.0])
    v = x._version
    assert x.addcmul_(ferrograd.tensor([3.0, 4.0]), ferrograd.tensor([2.0, 8.0]), value=0.5) is x
    assert x.tolist() == [4.0, 18.0] and x._version == v + 1
    assert x.addcdiv_(ferrograd.tensor([4.0, 2.0]), ferrograd.tensor([2.0, 1.0])) is x
    assert x.tolist() == [6.0, 20.0]
    assert x.lerp_(ferrograd.tensor([0.0, 0.0]), 0.5) is x
    assert x.tolist() == [3.0, 10.0]
    # in place on a tensor of the graph: recorded by autograd
    w = ferrograd.tensor([1.0, 2.0], requires_grad=True)
    e = ferrograd.tensor([5.0, 6.0], requires_grad=True)
    y = w * 1.0
    y.lerp_(e, 0.25)
    y.addcmul_(w, w)
    y.sum().backward()
    assert w.grad.tolist() == [0.75 + 2.0, 0.75 + 4.0]
    assert e.grad.tolist() == [0.25, 0.25]


def test_addcmul_family_matches_torch(torch):
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 4)), rng.normal(size=(4,)), rng.normal(size=(3, 1)) + 3
    for dtype in ("float32", "float64"):
        for name, kw in (("addcmul_", {"value": 0.3}), ("addcdiv_", {"value": -2}), ("lerp_", {})):
            res = []
            for lib in (torch, ferrograd):
                x = lib.tensor(a, dtype=getattr(lib, dtype))
                args = (lib.tensor(b, dtype=getattr(lib, dtype)), lib.tensor(c, dtype=getattr(lib, dtype)))
                if name == "lerp_":
                    args = (args[0], 0.7)
                getattr(x, name)(*args, **kw)
                res.append(x.numpy())
            np.testing.assert_allclose(res[1], res[0], rtol=1e-6, atol=1e-6)


def test_addcmul_family_errors_match_torch(torch):
    def cases(lib):
        i, f = lib.tensor([1, 2]), lib.tensor([1.0, 2.0])
        d = f.double()
        return [
            lambda: lib.addcdiv(i, i, i),
            lambda: lib.addcdiv(f, i, i),
            lambda: f.addcdiv(i, lib.tensor([True, False])),
            lambda: f.clone().addcdiv_(i, i),
            lambda: lib.addcmul(f, 2, f),
            lambda: lib.addcmul(1.0, f, f),
            lambda: lib.addcmul(f, f, f, value="a"),
            lambda: lib.addcmul(f, f, f, 1),
            lambda: lib.addcmul(lib.tensor([True]), lib.tensor([True]), lib.tensor([True])),
            lambda: f.clone().addcmul_(f.reshape(2, 1), f),
            lambda: f.clone().addcmul_(f, 3),
            lambda: lib.lerp(f, d, 0.5),
            lambda: lib.lerp(f, f, d),
            lambda: lib.lerp(f, f, i),
            lambda: lib.lerp(i, i, 0.5),
            lambda: lib.lerp(i, i, lib.tensor([1, 2])),
            lambda: f.clone().lerp_(f.reshape(2, 1), 0.3),
        ]

    for k, (t_case, f_case) in enumerate(zip(cases(torch), cases(ferrograd))):
        expected = _error(t_case)
        assert expected is not None, k
        assert _error(f_case) == expected, k


def test_lerp_zero_dim_weight_of_another_dtype_matches_torch(torch):
    # a 0-d weight acts as a number: any floating dtype, result in input's dtype
    res = []
    for lib in (torch, ferrograd):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor(0.3, dtype=lib.float64, requires_grad=True)
        out = lib.lerp(x, x * 3, w)
        out.sum().backward()
        res.append((str(out.dtype), out.tolist(), str(w.grad.dtype), w.grad.item()))
    assert res[1][0] == res[0][0] and res[1][2] == res[0][2]
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-6)
    np.testing.assert_allclose(res[1][3], res[0][3], rtol=1e-6)


# ------------------------------------------------------------------ dropout1d / 2d / 3d


@pytest.mark.parametrize("fn,shape,batched", [
    (F.dropout1d, (4, 6, 5), True), (F.dropout1d, (40, 5), False),
    (F.dropout2d, (4, 6, 3, 3), True), (F.dropout2d, (4, 6, 5), True),
    (F.dropout3d, (4, 6, 2, 2, 2), True), (F.dropout3d, (40, 2, 2, 2), False),
])
def test_channelwise_dropout_zeroes_whole_channels(fn, shape, batched):
    ferrograd.manual_seed(0)
    x = ferrograd.rand(*shape) + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(x, 0.4, True)
    n_channels = int(np.prod(shape[:2] if batched else shape[:1]))
    channels = (y / x).numpy().reshape(n_channels, -1)
    for row in channels:  # each channel is all dropped or all kept and scaled
        assert np.allclose(row, 0.0) or np.allclose(row, 1 / 0.6)
    kept = np.mean([not np.allclose(row, 0.0) for row in channels])
    assert 0 < kept < 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # identity in eval mode (the input itself when batched, a view of it when not, as in PyTorch)
        assert fn(x, 0.4, False).equal(x) and (fn(x, 0.4, False) is x) == batched
        assert fn(x, 0.0, True).equal(x)
        assert fn(x, 1.0, True).equal(ferrograd.zeros(*shape))


def test_channelwise_dropout_gradient_is_the_mask():
    ferrograd.manual_seed(1)
    x = ferrograd.ones(3, 5, 4, requires_grad=True)
    y = F.dropout1d(x, 0.5, True)
    y.sum().backward()
    assert x.grad.equal(y.detach())


def test_channelwise_dropout_inplace():
    ferrograd.manual_seed(2)
    x = ferrograd.ones(5, 4)
    y = F.dropout1d(x, 0.5, True, inplace=True)
    assert y is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}
    for row in x.numpy():
        assert len(set(row)) == 1
    z = ferrograd.ones(2, 3, 4, 4)
    assert F.dropout2d(z, 0.5, True, inplace=True) is z


def test_dropout_modules_eval_and_repr():
    for cls, shape in ((nn.Dropout1d, (2, 3, 4)), (nn.Dropout2d, (2, 3, 4, 4)), (nn.Dropout3d, (2, 3, 2, 2, 2)),
                       (nn.AlphaDropout, (2, 3)), (nn.FeatureAlphaDropout, (2, 3, 4))):
        x = ferrograd.randn(*shape)
        m = cls(0.3)
        assert repr(m) == f"{cls.__name__}(p=0.3, inplace=False)"
        assert not m(x).equal(x)
        m.eval()
        assert m(x) is x
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            cls(1.5)


def test_alpha_dropouts_keep_mean_and_variance():
    ferrograd.manual_seed(3)
    x = ferrograd.randn(400, 50, 2)
    for fn in (F.alpha_dropout, F.feature_alpha_dropout):
        y = fn(x, 0.3, True)
        assert abs(y.mean().item()) < 0.05
        assert abs(y.std().item() - 1.0) < 0.05
    # a dropped channel is SELU's saturation value, rescaled: alpha * a * (p - 1); a kept one
    # is a * x + alpha * a * p
    p, alpha = 0.5, 1.7580993408473766
    a = 1.0 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    y = F.feature_alpha_dropout(x, p, True).numpy().reshape(400 * 50, 2)
    xs = x.numpy().reshape(400 * 50, 2)
    dropped = np.all(np.isclose(y, alpha * a * (p - 1), atol=1e-6), axis=1)
    kept = np.all(np.isclose(y, a * xs + alpha * a * p, atol=1e-5), axis=1)
    assert (dropped | kept).all() and dropped.any() and kept.any()
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default
    assert F.feature_alpha_dropout(x, 0.3) is x


def test_dropout_shape_checks_and_warnings_match_torch(torch):
    def cases(lib):
        F_ = lib.nn.functional
        return [
            lambda: F_.dropout1d(lib.ones(2, 3, 4, 5)),
            lambda: F_.dropout1d(lib.ones(3)),
            lambda: F_.dropout2d(lib.ones(2, 3, 4)),
            lambda: F_.dropout2d(lib.ones(2, 3)),
            lambda: F_.dropout2d(lib.ones(3)),
            lambda: F_.dropout2d(lib.ones(2, 3, 4, 5, 6)),
            lambda: F_.dropout3d(lib.ones(2, 3, 4)),
            lambda: F_.dropout3d(lib.ones(2, 3, 4, 5, 6, 7)),
            lambda: F_.dropout2d(lib.ones(2, 3, 4, 4), p=-0.1),
            lambda: F_.feature_alpha_dropout(lib.ones(3), 0.5, True),
            lambda: F_.alpha_dropout(lib.ones(3), 1.5),
        ]

    for k, (t_case, f_case) in enumerate(zip(cases(torch), cases(ferrograd))):
        results = []
        for case in (t_case, f_case):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                error = _error(case)
            results.append((error, [(x.category.__name__, str(x.message)) for x in w]))
        assert results[1] == results[0], k


def test_dropout_modules_repr_match_torch(torch):
    for name in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        assert repr(getattr(nn, name)(0.2, inplace=True)) == repr(getattr(torch.nn, name)(0.2, inplace=True))


# ------------------------------------------------------------------ torch.testing.assert_close


def _assert_close_cases(lib):
    t = lib.tensor
    return [
        lambda: lib.testing.assert_close(t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.1])),
        lambda: lib.testing.assert_close(t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]])),
        lambda: lib.testing.assert_close(t(1.0), t(2.0)),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64)),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0, 3.0])),
        lambda: lib.testing.assert_close(t([1, 2]), t([1, 3])),
        lambda: lib.testing.assert_close(1.0, 1.1),
        lambda: lib.testing.assert_close(1, 2),
        lambda: lib.testing.assert_close([1.0, 2.0], [1.0, 2.5]),
        lambda: lib.testing.assert_close([1.0, 2.0], [1.0, 2.0, 3.0]),
        lambda: lib.testing.assert_close({"a": t(1.0)}, {"a": t(1.5)}),
        lambda: lib.testing.assert_close({"a": t(1.0)}, {"b": t(1.0)}),
        lambda: lib.testing.assert_close(t([float("nan")]), t([float("nan")])),
        lambda: lib.testing.assert_close(t([float("nan")]), t([float("nan")]), equal_nan=True),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0], dtype=lib.float64), check_dtype=False),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.1], dtype=lib.float64), check_dtype=False),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0]), rtol=1e-3),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0]), atol=1e-3),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.1]), msg="custom"),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.1]), msg=lambda m: "X" + m),
        lambda: lib.testing.assert_close(t([True]), t([False])),
        lambda: lib.testing.assert_close(t([1.0, 2.0]).requires_grad_(), t([1.0, 2.0])),
        lambda: lib.testing.assert_close(t([1.0, 2.0, 3.0, 4.0]).reshape(2, 2).t(), t([[1.0, 3.0], [2.0, 4.0]]),
                                         check_stride=True),
        lambda: lib.testing.assert_close(t([1.0, float("inf")]), t([1.0, float("inf")])),
        lambda: lib.testing.assert_close(t([1.0, float("inf")]), t([1.0, -float("inf")])),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.00001])),
        lambda: lib.testing.assert_close(t([1.0, 2.0], dtype=lib.float64), t([1.0, 2.00001], dtype=lib.float64)),
        lambda: lib.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 3.0])),
        lambda: lib.testing.assert_close(t([[0.0, 0.0], [0.0, 1.0]]), lib.zeros(2, 2)),
        lambda: lib.testing.assert_close("a", "a"),
        lambda: lib.testing.assert_close(None, None),
        lambda: lib.testing.assert_close(None, 1),
        lambda: lib.testing.assert_close(True, False),
        lambda: lib.testing.assert_close((1, 2), [1, 2]),
        lambda: lib.testing.assert_close(1, 1.0, check_dtype=True),
        lambda: lib.testing.assert_close(lib.nn.Parameter(lib.ones(2)), lib.ones(2)),
        lambda: lib.testing.assert_close(lib.nn.Parameter(lib.ones(2)), lib.ones(2), allow_subclasses=False),
        lambda: lib.testing.assert_close(t([1.0, 2.0]), [1.0, 2.0]),
        lambda: lib.testing.assert_close(1.0, t(1.0)),
    ]


def _normalized(result):
    if result is None:
        return None
    kind, msg = result
    # class names differ by library (<class 'torch.Tensor'> / <class 'ferrograd.Tensor'>)
    return kind, re.sub(r"<class '[^']*'>", "<class>", msg)


@pytest.mark.parametrize("case", range(len(_assert_close_cases(ferrograd))))
def test_assert_close_matches_torch(torch, case):
    expected = _error(_assert_close_cases(torch)[case])
    assert _normalized(_error(_assert_close_cases(ferrograd)[case])) == _normalized(expected)


def test_assert_close_without_torch():
    T = ferrograd.testing
    T.assert_close(ferrograd.tensor([1.0, 2.0]), ferrograd.tensor([1.0, 2.0 + 1e-6]))
    with pytest.raises(AssertionError, match=r"^Tensor-likes are not close!\n\nMismatched elements: 1 / 2 \(50.0%\)"):
        T.assert_close(ferrograd.tensor([1.0, 2.0]), ferrograd.tensor([1.0, 2.1]))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        T.assert_close(ferrograd.tensor([1, 2]), ferrograd.tensor([1, 3]))
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match"):
        T.assert_close(ferrograd.tensor([1.0]), ferrograd.tensor([1.0], dtype=ferrograd.float64))
    T.assert_close([ferrograd.tensor(1.0), 2], [ferrograd.tensor(1.0), 2])
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted"):
        T.assert_close(1.0, 1.0, rtol=0.1)
    with pytest.warns(FutureWarning, match="assert_allclose"):
        T.assert_allclose(ferrograd.tensor([1.0, 2.0]), [1.0, 2.0])


# ------------------------------------------------------------------ compile, Variable, inference_mode


def test_compile_is_an_identity_that_warns_once(monkeypatch):
    monkeypatch.setattr(ferrograd._functions, "_compile_warned", False)
    model = nn.Linear(2, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert ferrograd.compile(model) is model

        @ferrograd.compile
        def f(x):
            return x * 2

        @ferrograd.compile(mode="max-autotune", fullgraph=True)
        def g(x):
            return x + 1

        assert f(ferrograd.tensor(2.0)).item() == 4.0
        assert g(ferrograd.tensor(2.0)).item() == 3.0
    assert [str(x.message) for x in w] == ["torch.compile is not supported by ferrograd: the model runs uncompiled"]


def test_variable_returns_a_tensor():
    from ferrograd.autograd import Variable

    t = ferrograd.ones(3)
    v = Variable(t, requires_grad=True)
    assert type(v) is ferrograd.Tensor
    assert v.requires_grad and v.is_leaf and v is not t
    with ferrograd.no_grad():
        v[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 1.0]  # shares t's memory
    assert isinstance(t, Variable) and not isinstance(3, Variable)
    w = ferrograd.ones(2, requires_grad=True) * 2
    assert Variable(w).grad_fn is None and not Variable(w).requires_grad
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got list$"):
        Variable([1, 2])
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)
    assert Variable._execution_engine is not None


def test_variable_matches_torch(torch):
    for lib in (torch, ferrograd):
        v = lib.autograd.Variable(lib.tensor([1.0, 2.0]), requires_grad=True)
        (v * v).sum().backward()
        assert v.grad.tolist() == [2.0, 4.0]
        assert type(v) is lib.Tensor
    assert _error(lambda: ferrograd.autograd.Variable([1])) == _error(lambda: torch.autograd.Variable([1]))


def test_inference_mode_as_context_manager_and_decorator():
    x = ferrograd.ones(2, requires_grad=True)
    with ferrograd.inference_mode():
        assert not (x * 2).requires_grad
    with ferrograd.inference_mode(False):
        assert (x * 2).requires_grad

    @ferrograd.inference_mode()
    def f(x):
        return x * 2

    @ferrograd.inference_mode
    def g(x):
        return x * 2

    assert not f(x).requires_grad
    assert not g(x).requires_grad
    assert (x * 2).requires_grad


# ------------------------------------------------------------------ serialization: safe globals


class _Config:
    pass


def _restore_safe_globals(lib):
    return lib.serialization.get_safe_globals()


def test_safe_globals():
    S = ferrograd.serialization
    saved = S.get_safe_globals()
    try:
        S.clear_safe_globals()
        assert S.get_safe_globals() == []
        S.add_safe_globals([_Config, (np.dtype, "numpy.dtype")])
        assert set(S.get_safe_globals()) == {_Config, (np.dtype, "numpy.dtype")}
        with S.safe_globals([dict]):
            assert dict in S.get_safe_globals()
            buf = io.BytesIO()
            ferrograd.save({"w": ferrograd.ones(2)}, buf)
            buf.seek(0)
            assert ferrograd.load(buf, weights_only=True)["w"].tolist() == [1.0, 1.0]
        assert dict not in S.get_safe_globals()
        assert _Config in S.get_safe_globals()
        S.clear_safe_globals()
        assert S.get_safe_globals() == []
    finally:
        S.clear_safe_globals()
        S.add_safe_globals(saved)


def test_safe_globals_match_torch(torch):
    results = []
    for lib in (torch, ferrograd):
        S = lib.serialization
        saved = S.get_safe_globals()
        try:
            S.clear_safe_globals()
            S.add_safe_globals([_Config])
            with S.safe_globals([_Config, dict]):
                inside = sorted(map(repr, S.get_safe_globals()))
            # leaving the block removes its globals, also those added before it
            results.append((inside, S.get_safe_globals()))
        finally:
            S.clear_safe_globals()
            S.add_safe_globals(saved)
    assert results[0] == results[1]


# ------------------------------------------------------------------ NonDynamicallyQuantizableLinear


def test_non_dynamically_quantizable_linear():
    from ferrograd.nn.modules.linear import NonDynamicallyQuantizableLinear

    m = NonDynamicallyQuantizableLinear(3, 4, bias=False)
    assert isinstance(m, nn.Linear) and m.bias is None
    assert repr(m) == "NonDynamicallyQuantizableLinear(in_features=3, out_features=4, bias=False)"
    mha = nn.MultiheadAttention(4, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear


def test_non_dynamically_quantizable_linear_matches_torch(torch):
    fm, tm = nn.MultiheadAttention(4, 2), torch.nn.MultiheadAttention(4, 2)
    assert type(fm.out_proj).__name__ == type(tm.out_proj).__name__
    assert type(fm.out_proj).__module__.replace("ferrograd", "torch") == type(tm.out_proj).__module__
    assert repr(fm) == repr(tm)
