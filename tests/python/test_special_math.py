"""torch.special and the math aliases (arccos, arctan2, ...) beyond the op table's rows: values
and gradients against PyTorch where it is installed, gradcheck in float64 always."""

import numpy as np
import pytest

import ferrograd
from ferrograd.autograd import gradcheck, gradgradcheck

X = np.array([0.0, 0.3, 2.0, -1.0, 0.7])
Y = np.array([0.5, 1e-9, 3.0, 2.0, -0.5])
SPECIAL_UNARY = ["digamma", "psi", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1",
                 "gammaln", "log1p", "ndtr", "ndtri", "sinc", "logit", "round"]


def _inputs(lib, name):
    x = {"erfinv": np.array([-0.9, 0.0, 0.3, 0.8]), "ndtri": np.array([0.1, 0.5, 0.7, 0.99]),
         "logit": np.array([0.1, 0.5, 0.7, 0.99])}.get(name, X)
    return lib.tensor(x, dtype=lib.float64, requires_grad=name != "round")


@pytest.mark.parametrize("name", SPECIAL_UNARY)
def test_special_unary_matches_torch(name):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (ferrograd, torch):
        x = _inputs(lib, name)
        out = getattr(lib.special, name)(x)
        grad = None
        if x.requires_grad:
            (out * lib.arange(1, out.numel() + 1, dtype=lib.float64)).sum().backward()
            grad = x.grad.numpy()
        results.append((out.detach().numpy(), grad))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10, atol=1e-12)
    if results[1][1] is not None:
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_special_binary_matches_torch(name):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (ferrograd, torch):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(np.abs(Y), dtype=lib.float64, requires_grad=True)
        out = getattr(lib.special, name)(x, y)
        out.sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy(), y.grad.numpy(),
                        getattr(lib.special, name)(x.detach(), 2.5).numpy(),
                        getattr(lib.special, name)(2, y.detach()).numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["entr", "ndtr", "ndtri", "sinc", "logit", "digamma", "erfinv"])
def test_special_gradcheck(name):
    x = _inputs(ferrograd, name)
    if name in ("entr", "sinc", "digamma"):  # away from the kinks and poles
        x = ferrograd.tensor([0.3, 2.0, 0.7, -0.4], dtype=ferrograd.float64, requires_grad=True)
        x = x.abs().detach().requires_grad_() if name == "entr" else x
    f = getattr(ferrograd.special, name)
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))


def test_xlog1py_gradcheck():
    x = ferrograd.tensor([0.5, -1.0, 2.0], dtype=ferrograd.float64, requires_grad=True)
    y = ferrograd.tensor([0.5, 1e-3, 3.0], dtype=ferrograd.float64, requires_grad=True)
    assert gradcheck(ferrograd.special.xlog1py, (x, y)) and gradgradcheck(ferrograd.special.xlog1py, (x, y))


def test_special_has_no_other_names():
    with pytest.raises(AttributeError):
        _ = ferrograd.special.no_such_function


@pytest.mark.parametrize("alias,name", [("arccos", "acos"), ("arccosh", "acosh"), ("arcsin", "asin"),
                                        ("arcsinh", "asinh"), ("arctan", "atan"), ("arctanh", "atanh")])
def test_arc_aliases(alias, name):
    x = ferrograd.tensor([0.2, 0.5]) if name != "acosh" else ferrograd.tensor([1.5, 2.0])
    assert getattr(ferrograd, alias)(x).tolist() == getattr(ferrograd, name)(x).tolist()
    assert getattr(x, alias)().tolist() == getattr(x, name)().tolist()
    y = x.clone()
    getattr(y, alias + "_")()
    assert y.tolist() == getattr(x, name)().tolist()


def test_math_ops_reject_what_torch_rejects():
    with pytest.raises(TypeError, match=r"atan2\(\): argument 'other'"):
        ferrograd.atan2(ferrograd.ones(2), 2.0)
    with pytest.raises(NotImplementedError, match="\"hypot_cpu\" not implemented for 'Long'"):
        ferrograd.hypot(ferrograd.arange(3), ferrograd.arange(3))
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n."):
        ferrograd.polygamma(-1, ferrograd.ones(2))
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        ferrograd.mvlgamma(ferrograd.ones(2), 0)
    # integers compute in the default float dtype
    assert ferrograd.atan2(ferrograd.arange(3), ferrograd.arange(3)).dtype == ferrograd.float32
    assert ferrograd.arange(3).lgamma().dtype == ferrograd.float32
