"""Layers, activations, dropout, flatten and containers of ferrograd.nn (and their functionals)."""

import math
import os
import warnings
from collections import OrderedDict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _copy_weights(fg_model, torch_model):
    fg_model.load_state_dict(
        OrderedDict((k, ferrograd.tensor(v.detach().numpy())) for k, v in torch_model.state_dict().items())
    )


def _parity(build, x_np, atol=1e-6, grad_of=lambda out: out.sum()):
    """Same module built with torch and ferrograd, same weights: same outputs and gradients."""
    torch = _torch()
    tm, fm = build(torch), build(ferrograd)
    _copy_weights(fm, tm)
    tx = torch.tensor(x_np, requires_grad=True)
    fx = ferrograd.tensor(x_np, requires_grad=True)
    tout, fout = tm(tx), fm(fx)
    np.testing.assert_allclose(_np(fout), tout.detach().numpy(), atol=atol, rtol=1e-5)
    w = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(x_np.dtype)
    (tout * torch.tensor(w)).sum().backward()
    (fout * ferrograd.tensor(w)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), atol=atol, rtol=1e-5)
    tparams = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), atol=atol, rtol=1e-5)
    return tm, fm


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5)).astype(np.float32)
X3 = RNG.standard_normal((2, 3, 5)).astype(np.float32)


# ---------------------------------------------------------------- Linear


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x", [X, X3], ids=["2d", "3d"])
def test_linear_parity(bias, x):
    _parity(lambda lib: lib.nn.Linear(5, 3, bias=bias), x)


def test_mlp_parity():
    def build(lib):
        tnn = lib.nn
        return tnn.Sequential(tnn.Linear(5, 8), tnn.ReLU(), tnn.Linear(8, 8), tnn.GELU(), tnn.Linear(8, 2),
                              tnn.LogSoftmax(dim=1))

    _parity(build, X, atol=1e-5)


def test_linear_closed_form():
    m = nn.Linear(5, 3)
    out = m(ferrograd.tensor(X))
    expected = X @ _np(m.weight).T + _np(m.bias)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), np.tile(X.sum(0), (3, 1)), rtol=1e-5)
    np.testing.assert_allclose(m.bias.grad.numpy(), np.full(3, 4.0, np.float32))
    nb = nn.Linear(5, 3, bias=False)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    np.testing.assert_allclose(_np(nb(ferrograd.tensor(X))), X @ _np(nb.weight).T, rtol=1e-5, atol=1e-6)


def test_linear_attributes_and_init():
    m = nn.Linear(50, 40)
    assert (m.in_features, m.out_features) == (50, 40)
    assert tuple(m.weight.shape) == (40, 50) and tuple(m.bias.shape) == (40,)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    bound = 1 / math.sqrt(50)
    w, b = _np(m.weight).copy(), _np(m.bias).copy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-bound, bound): std = bound / sqrt(3), and the range is filled
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert abs(w.mean()) < 0.1 * bound
    assert np.abs(w).max() > 0.9 * bound
    assert not np.array_equal(w, _np(nn.Linear(50, 40).weight))
    md = nn.Linear(2, 3, dtype=ferrograd.float64)
    assert md.weight.dtype == ferrograd.float64 and md.bias.dtype == ferrograd.float64
    # reset_parameters redraws in place
    wobj = m.weight
    m.reset_parameters()
    assert m.weight is wobj and not np.array_equal(_np(m.weight), w)


def test_linear_gradcheck():
    m = nn.Linear(4, 3).double()
    x = ferrograd.randn(2, 4, dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, m.weight, m.bias))
    assert gradcheck(lambda x, w: F.linear(x, w), (x, m.weight))
    x3 = ferrograd.randn(2, 2, 4, dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(lambda x: m(x), (x3,))


def test_linear_repr_matches_torch():
    torch = _torch()
    for args in [(3, 4), (1, 2)]:
        for bias in (True, False):
            assert repr(nn.Linear(*args, bias=bias)) == repr(torch.nn.Linear(*args, bias=bias))
    assert repr(nn.Identity(3, k=2)) == repr(torch.nn.Identity(3, k=2))


def test_identity():
    x = ferrograd.ones(2)
    assert nn.Identity(1, 2, a=3)(x) is x


# ---------------------------------------------------------------- activations


ACTIVATIONS = [
    lambda lib: lib.nn.ReLU(),
    lambda lib: lib.nn.LeakyReLU(),
    lambda lib: lib.nn.LeakyReLU(0.2),
    lambda lib: lib.nn.Tanh(),
    lambda lib: lib.nn.Sigmoid(),
    lambda lib: lib.nn.GELU(),
    lambda lib: lib.nn.GELU(approximate="tanh"),
    lambda lib: lib.nn.SiLU(),
    lambda lib: lib.nn.Softmax(dim=1),
    lambda lib: lib.nn.Softmax(dim=-1),
    lambda lib: lib.nn.LogSoftmax(dim=0),
    lambda lib: lib.nn.Softmin(dim=1),
    lambda lib: lib.nn.Flatten(),
    lambda lib: lib.nn.Flatten(0),
    lambda lib: lib.nn.Identity(),
]


@pytest.mark.parametrize("build", ACTIVATIONS)
@pytest.mark.parametrize("x", [X, X3], ids=["2d", "3d"])
def test_activation_parity(build, x):
    _parity(build, x, atol=1e-5)


@pytest.mark.parametrize("build", ACTIVATIONS[:12])
def test_activation_gradcheck(build):
    m = build(ferrograd)
    x = ferrograd.tensor(RNG.standard_normal((3, 4)) + 0.05, requires_grad=True)  # away from kinks
    assert gradcheck(lambda x: m(x), (x,))


def test_activation_closed_form():
    a = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]], dtype=np.float64)
    x = ferrograd.tensor(a)
    np.testing.assert_allclose(_np(nn.ReLU()(x)), np.maximum(a, 0))
    np.testing.assert_allclose(_np(nn.LeakyReLU()(x)), np.where(a > 0, a, 0.01 * a))
    np.testing.assert_allclose(_np(nn.LeakyReLU(0.3)(x)), np.where(a > 0, a, 0.3 * a))
    np.testing.assert_allclose(_np(nn.Tanh()(x)), np.tanh(a))
    np.testing.assert_allclose(_np(nn.Sigmoid()(x)), 1 / (1 + np.exp(-a)))
    np.testing.assert_allclose(_np(nn.SiLU()(x)), a / (1 + np.exp(-a)))
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(_np(nn.GELU()(x)), 0.5 * a * (1 + erf(a / math.sqrt(2))), rtol=1e-12)
    tanh_gelu = 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))
    np.testing.assert_allclose(_np(nn.GELU("tanh")(x)), tanh_gelu, rtol=1e-12)
    e = np.exp(a - a.max())
    np.testing.assert_allclose(_np(nn.Softmax(dim=1)(x)), e / e.sum(), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.LogSoftmax(dim=1)(x)), np.log(e / e.sum()), rtol=1e-12)
    # leaky_relu's slope at negative inputs
    xg = ferrograd.tensor(a, requires_grad=True)
    F.leaky_relu(xg, 0.2).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), np.where(a > 0, 1.0, 0.2))


def test_inplace_activations():
    a = np.array([-1.0, 2.0], dtype=np.float32)
    for module, expected in [
        (nn.ReLU(inplace=True), [0.0, 2.0]),
        (nn.LeakyReLU(0.5, inplace=True), [-0.5, 2.0]),
    ]:
        x = ferrograd.tensor(a)
        out = module(x)
        np.testing.assert_allclose(x.numpy(), expected)
        np.testing.assert_allclose(out.numpy(), expected)
    x = ferrograd.tensor(a)
    F.leaky_relu_(x, 0.1)
    np.testing.assert_allclose(x.numpy(), [-0.1, 2.0], rtol=1e-6)
    x = ferrograd.tensor(a)
    nn.SiLU(inplace=True)(x)
    np.testing.assert_allclose(x.numpy(), a / (1 + np.exp(-a)), rtol=1e-6)


def test_activation_reprs_match_torch():
    torch = _torch()
    builds = [
        lambda lib: lib.nn.ReLU(),
        lambda lib: lib.nn.ReLU(inplace=True),
        lambda lib: lib.nn.LeakyReLU(),
        lambda lib: lib.nn.LeakyReLU(0.2, inplace=True),
        lambda lib: lib.nn.Tanh(),
        lambda lib: lib.nn.Sigmoid(),
        lambda lib: lib.nn.GELU(),
        lambda lib: lib.nn.GELU(approximate="tanh"),
        lambda lib: lib.nn.SiLU(),
        lambda lib: lib.nn.SiLU(inplace=True),
        lambda lib: lib.nn.Softmax(),
        lambda lib: lib.nn.Softmax(dim=1),
        lambda lib: lib.nn.LogSoftmax(dim=-1),
        lambda lib: lib.nn.Softmin(dim=0),
        lambda lib: lib.nn.Dropout(),
        lambda lib: lib.nn.Dropout(0.2, inplace=True),
        lambda lib: lib.nn.Dropout(p=1),
        lambda lib: lib.nn.Flatten(),
        lambda lib: lib.nn.Flatten(0, 2),
        lambda lib: lib.nn.Unflatten(1, (2, 3)),
    ]
    for b in builds:
        assert repr(b(ferrograd)) == repr(b(torch))


def test_softmax_implicit_dim_matches_torch():
    torch = _torch()
    for shape in [(4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        a = RNG.standard_normal(shape).astype(np.float32)
        for cls in ("Softmax", "LogSoftmax", "Softmin"):
            with warnings.catch_warnings(record=True) as tw:
                warnings.simplefilter("always")
                expected = getattr(torch.nn, cls)()(torch.tensor(a)).numpy()
            with warnings.catch_warnings(record=True) as fw:
                warnings.simplefilter("always")
                got = _np(getattr(nn, cls)()(ferrograd.tensor(a)))
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            assert [str(w.message) for w in fw] == [str(w.message) for w in tw]
            assert fw[0].category is UserWarning
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
            F.softmax(ferrograd.tensor(a))


def test_softmax_implicit_dim_closed_form():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    with pytest.warns(UserWarning, match="Change the call to include dim=X as an argument."):
        out = _np(nn.Softmax()(ferrograd.tensor(a)))
    np.testing.assert_allclose(out.sum(1), [1.0, 1.0])  # dim 1 for 2-d input
    b = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    with pytest.warns(UserWarning):
        out = _np(nn.LogSoftmax()(ferrograd.tensor(b)))
    np.testing.assert_allclose(np.exp(out).sum(0), np.ones((3, 4)))  # dim 0 for 3-d input


# ---------------------------------------------------------------- dropout


def test_dropout_train_statistics():
    x = ferrograd.ones(200, 500)
    m = nn.Dropout(0.3)
    out = _np(m(x))
    zero_frac = (out == 0).mean()
    assert abs(zero_frac - 0.3) < 0.01
    np.testing.assert_allclose(out[out != 0], 1 / 0.7, rtol=1e-6)
    assert abs(out.mean() - 1.0) < 0.02
    # a new mask each call
    assert not np.array_equal(out, _np(m(x)))


def test_dropout_gradient_uses_mask():
    x = ferrograd.ones(50, 40, requires_grad=True)
    out = F.dropout(x, p=0.5, training=True)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _np(out))  # d(x*mask*2)/dx = mask*2 with x = 1


def test_dropout_eval_and_edge_probabilities():
    x = ferrograd.randn(10, 10)
    m = nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    m.train()
    assert m.training and not np.array_equal(_np(m(x)), _np(x))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(_np(F.dropout(x, 1.0)), np.zeros((10, 10), np.float32))
    np.testing.assert_array_equal(_np(nn.Dropout(p=1)(x)), np.zeros((10, 10), np.float32))
    xd = ferrograd.ones(1000, dtype=ferrograd.float64)
    assert F.dropout(xd, 0.5).dtype == ferrograd.float64


def test_dropout_invalid_p_matches_torch():
    torch = _torch()
    for p in (1.5, -0.1):
        with pytest.raises(ValueError) as te:
            torch.nn.Dropout(p)
        with pytest.raises(ValueError) as fe:
            nn.Dropout(p)
        assert str(fe.value) == str(te.value)
        with pytest.raises(ValueError) as te:
            torch.nn.functional.dropout(torch.ones(1), p)
        with pytest.raises(ValueError) as fe:
            F.dropout(ferrograd.ones(1), p)
        assert str(fe.value) == str(te.value)


def test_dropout_invalid_p_closed_form():
    with pytest.raises(ValueError) as e:
        nn.Dropout(1.5)
    assert str(e.value) == "dropout probability has to be between 0 and 1, but got 1.5"


def test_dropout_inplace():
    x = ferrograd.ones(100, 100)
    out = nn.Dropout(0.5, inplace=True)(x)
    a = x.numpy()
    assert set(np.unique(a)) == {0.0, 2.0}
    np.testing.assert_array_equal(out.numpy(), a)


def test_dropout_in_sequential_follows_train_eval():
    net = nn.Sequential(nn.Linear(20, 20), nn.Dropout(0.5))
    x = ferrograd.randn(8, 20)
    net.eval()
    a, b = _np(net(x)), _np(net(x))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, _np(net[0](x)))
    net.train()
    assert (_np(net(x)) == 0).mean() > 0.3


# ---------------------------------------------------------------- flatten


def test_flatten_shapes():
    x = ferrograd.randn(2, 3, 4, 5)
    a = _np(x)
    cases = [((), (2, 60)), ((0,), (120,)), ((1, 2), (2, 12, 5)), ((0, -2), (24, 5)), ((2, 3), (2, 3, 20)),
             ((-1, -1), (2, 3, 4, 5))]
    for args, shape in cases:
        out = nn.Flatten(*args)(x)
        assert tuple(out.shape) == shape
        np.testing.assert_array_equal(_np(out), a.reshape(shape))
    assert tuple(F.linear(nn.Flatten()(x), ferrograd.ones(1, 60)).shape) == (2, 1)


def test_unflatten():
    x = ferrograd.arange(24.0).reshape(2, 12)
    np.testing.assert_array_equal(_np(nn.Unflatten(1, (3, 4))(x)), np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(_np(nn.Unflatten(-1, (2, -1))(x)), np.arange(24.0).reshape(2, 2, 6))
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[5, 3\] don't multiply up to the "
                                           r"size of dim 1 \(12\) in the input tensor"):
        nn.Unflatten(1, (5, 3))(x)
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 3)


def test_unflatten_matches_torch():
    torch = _torch()
    a = np.arange(24.0, dtype=np.float32).reshape(2, 12)
    for dim, sizes in [(1, (3, 4)), (1, (-1, 6)), (0, (1, 2)), (-1, (2, 2, 3))]:
        expected = torch.nn.Unflatten(dim, sizes)(torch.tensor(a)).numpy()
        np.testing.assert_array_equal(_np(nn.Unflatten(dim, sizes)(ferrograd.tensor(a))), expected)
    for dim, sizes in [(1, (5, 3)), (1, (-1, 5))]:
        with pytest.raises(RuntimeError) as te:
            torch.nn.Unflatten(dim, sizes)(torch.tensor(a))
        with pytest.raises(RuntimeError) as fe:
            nn.Unflatten(dim, sizes)(ferrograd.tensor(a))
        assert str(fe.value) == str(te.value)


# ---------------------------------------------------------------- containers


def test_sequential_indexing_and_mutation():
    a, b, c, d = nn.Linear(1, 1), nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and list(s) == [a, b, c]
    assert s[0] is a and s[-1] is c and s[-3] is a
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        s[-4]
    sl = s[1:]
    assert type(sl) is nn.Sequential and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
    assert list(s[::-1]) == [c, b, a]
    s[1] = d
    assert s[1] is d
    s.append(b)
    assert list(s) == [a, d, c, b] and list(s._modules) == ["0", "1", "2", "3"]
    s.insert(1, c)
    assert list(s) == [a, c, d, c, b]
    s.insert(-1, a)
    assert list(s) == [a, c, d, c, a, b]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, a)
    del s[0]
    assert list(s) == [c, d, c, a, b] and list(s._modules) == ["0", "1", "2", "3", "4"]
    del s[1:3]
    assert list(s) == [c, a, b]
    assert s.pop(1) is a and list(s) == [c, b]
    s.extend([d, a])
    assert list(s) == [c, b, d, a]
    t = s + nn.Sequential(b)
    assert type(t) is nn.Sequential and list(t) == [c, b, d, a, b]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + [b]
    s += nn.Sequential(c)
    assert list(s) == [c, b, d, a, c]
    assert list(nn.Sequential(a, b) * 2) == [a, b, a, b]


def test_sequential_ordereddict_and_forward():
    s = nn.Sequential(OrderedDict([("lin", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(s._modules) == ["lin", "act"] and s.lin is s[0]
    x = ferrograd.randn(3, 2)
    np.testing.assert_allclose(_np(s(x)), np.maximum(_np(s.lin(x)), 0))
    assert [n for n, _ in s.named_parameters()] == ["lin.weight", "lin.bias"]
    assert list(s[0:1]._modules) == ["lin"]
    assert nn.Sequential()(x) is x


def test_module_list():
    a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Tanh()
    ml = nn.ModuleList([a, b])
    assert len(ml) == 2 and ml[0] is a and ml[-1] is b and list(ml) == [a, b]
    ml.append(c)
    assert list(ml) == [a, b, c]
    ml.extend([a])
    assert list(ml) == [a, b, c, a]
    ml.insert(1, c)
    assert list(ml) == [a, c, b, c, a]
    ml += [b]
    assert list(ml) == [a, c, b, c, a, b]
    sl = ml[1:3]
    assert type(sl) is nn.ModuleList and list(sl) == [c, b]
    ml[0] = b
    assert ml[0] is b
    del ml[0]
    assert list(ml) == [c, b, c, a, b] and list(ml._modules) == ["0", "1", "2", "3", "4"]
    assert ml.pop(-1) is b
    both = ml + nn.ModuleList([a])
    assert type(both) is nn.ModuleList and len(both) == 5
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ml[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    # parameters of list members are registered (each shared module counted once)
    assert [n for n, _ in ml.named_parameters()] == ["3.weight", "3.bias"]


def test_module_dict():
    a, b = nn.Linear(1, 1), nn.ReLU()
    md = nn.ModuleDict({"x": a, "y": b})
    assert len(md) == 2 and md["x"] is a and "y" in md and "z" not in md
    assert list(md) == ["x", "y"] and list(md.keys()) == ["x", "y"]
    assert list(md.values()) == [a, b] and list(md.items()) == [("x", a), ("y", b)]
    md["z"] = nn.Tanh()
    assert list(md) == ["x", "y", "z"]
    del md["y"]
    assert list(md) == ["x", "z"]
    assert md.pop("z").__class__ is nn.Tanh and list(md) == ["x"]
    md.update([("k", b)])
    assert md["k"] is b
    md.update(nn.ModuleDict({"m": b}))
    assert list(md) == ["x", "k", "m"]
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("a",)])
    assert [n for n, _ in md.named_parameters()] == ["x.weight", "x.bias"]
    md.clear()
    assert len(md) == 0


def test_container_reprs_match_torch():
    torch = _torch()

    def build(lib):
        tnn = lib.nn
        lin = tnn.Linear(2, 2)
        return [
            tnn.Sequential(),
            tnn.ModuleList(),
            tnn.ModuleDict(),
            tnn.Sequential(tnn.Linear(2, 3), tnn.ReLU()),
            tnn.ModuleList([tnn.ReLU(), tnn.ReLU(), tnn.ReLU(), tnn.Tanh(), tnn.ReLU(), tnn.ReLU()]),
            tnn.ModuleList([lin, lin, tnn.Sequential(tnn.ReLU(), tnn.ReLU()), tnn.Sequential(tnn.ReLU(), tnn.ReLU())]),
            tnn.ModuleDict({"b": tnn.Linear(1, 2), "a": tnn.ModuleList([tnn.ReLU()])}),
            tnn.Sequential(OrderedDict([
                ("enc", tnn.Sequential(tnn.Linear(2, 2), tnn.GELU())),
                ("drop", tnn.Dropout()),
            ])),
        ]

    for f, t in zip(build(ferrograd), build(torch)):
        assert repr(f) == repr(t)


def test_module_list_repr_closed_form():
    ml = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.Linear(1, 2), nn.Linear(1, 2)])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-1): 2 x ReLU()\n"
        "  (2): Tanh()\n"
        "  (3-4): 2 x Linear(in_features=1, out_features=2, bias=True)\n"
        ")"
    )


def test_parameter_list_and_dict():
    pl = nn.ParameterList([ferrograd.ones(2), nn.Parameter(ferrograd.zeros(3))])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(ferrograd.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"b": ferrograd.ones(1), "a": ferrograd.ones(2)})
    assert list(pd) == ["a", "b"] and isinstance(pd["a"], nn.Parameter)
    m = nn.Module()
    m.pl, m.pd = pl, pd
    assert [n for n, _ in m.named_parameters()] == ["pl.0", "pl.1", "pl.2", "pd.a", "pd.b"]


def test_parameter_containers_repr_match_torch():
    torch = _torch()

    def build(lib):
        tnn = lib.nn
        return [
            tnn.ParameterList([tnn.Parameter(lib.ones(2, 3)), tnn.Parameter(lib.ones(1))]),
            tnn.ParameterDict({"w": tnn.Parameter(lib.ones(2))}),
        ]

    for f, t in zip(build(ferrograd), build(torch)):
        assert repr(f) == repr(t)
