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


def _gamma_points(rng):
    """Wide ranges for lgamma / digamma: (-30, 30), magnitudes from 1e-300 to 1e300 of both
    signs (negative integers included: poles), the roots and poles, subnormals, +-inf, NaN."""
    mags = 10.0 ** rng.uniform(-300, 300, 2000)
    return np.concatenate([
        rng.uniform(-30, 30, 4000), mags, -10.0 ** rng.uniform(-300, 15, 1000),
        rng.uniform(-8, 8, 500).round(), rng.uniform(0.9, 2.1, 500),
        [0.0, -0.0, 1.0, 2.0, 3.0, 10.0, 13.0, 12.999999, 1e-320, 5e-324, -1e-320, -2.5, -3.5,
         -2.4570247382208006, 1.4616321449683622, 1e17, 1e305, 1e308, np.inf, -np.inf, np.nan]])


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_functions_match_torch_over_wide_ranges(name):
    # the branch-free (vectorised) kernels of src/kernels/math.rs: float64 within a few ulp
    # of PyTorch's values (ulps of max(|value|, 1): both lose relative accuracy near the roots),
    # float32 within one float32 ulp of PyTorch's float64 value (and so nearly correctly
    # rounded: the float64 computation's error is far below float32's)
    torch = pytest.importorskip("torch")
    x = _gamma_points(np.random.default_rng(4))
    ours = getattr(ferrograd, name)(ferrograd.tensor(x, dtype=ferrograd.float64)).numpy()
    theirs = getattr(torch, name)(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite], theirs[~finite])
    with np.errstate(all="ignore"):
        err = np.abs(ours - theirs)[finite] / np.maximum(np.abs(theirs[finite]), 1.0)
    assert err.max() < 8 * np.finfo(np.float64).eps, (err.max(), x[finite][err.argmax()])

    x32 = x[np.abs(x) < 3e38].astype(np.float32)
    ours = getattr(ferrograd, name)(ferrograd.tensor(x32)).numpy().astype(np.float64)
    exact = getattr(torch, name)(torch.tensor(x32.astype(np.float64))).numpy()
    with np.errstate(over="ignore"):  # values beyond float32's range round to +-inf
        rounded = exact.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(rounded))
    finite = np.isfinite(rounded)
    np.testing.assert_array_equal(ours[~finite], rounded[~finite])
    with np.errstate(all="ignore"):
        err = np.abs(ours - exact)[finite] / np.abs(exact[finite])
    err[ours[finite] == exact[finite]] = 0
    assert err.max() <= np.finfo(np.float32).eps, (err.max(), x32[finite][err.argmax()])
