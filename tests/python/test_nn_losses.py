"""Loss functions of ferrograd.nn.functional and the loss modules of ferrograd.nn.

Parity with PyTorch (values, gradients, grad_fn names, warnings) runs when torch is installed;
gradchecks, double-backward checks and closed-form numpy values always run.  Misuse tests
hard-code PyTorch's exception types and texts and, with torch present, also check torch itself.
"""

import math
import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import grad, gradcheck


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


REDUCTIONS = ["none", "mean", "sum"]
R = np.random.RandomState(0)


# ------------------------------------------------------------------ data


def _diffs(shape, kinks=(1.0,), rng=R):
    """Random differences kept at least 0.05 away from 0 and from +-each kink."""
    d = rng.uniform(-3.0, 3.0, size=shape)
    bad = np.abs(d) < 0.05
    for k in kinks:
        bad |= np.abs(np.abs(d) - k) < 0.05
    d[bad] += 0.2
    return d


X34 = R.randn(3, 4)
T34 = X34 + _diffs((3, 4), kinks=(0.5, 1.0, 2.0))
W34 = R.uniform(0.2, 2.0, (3, 4))
P34 = R.uniform(0.02, 0.98, (3, 4))  # probabilities (BCE input)
Q34 = R.uniform(0.0, 1.0, (3, 4))  # soft labels
H34 = R.randint(0, 2, (3, 4)).astype(np.float64)  # hard labels
W4 = R.uniform(0.2, 2.0, (4,))
W31 = R.uniform(0.2, 2.0, (3, 1))
PW4 = R.uniform(0.5, 3.0, (4,))
Z34 = R.randn(3, 4) * 2  # logits

# classification: N=5, C=4
LOGITS = R.randn(5, 4)
Y5 = np.array([0, 3, 1, 3, 2])
Y5_IGN = np.array([0, -100, 1, 3, -100])
Y5_IGN2 = np.array([0, 2, 1, 2, 3])  # ignore_index=2
Y5_ALL_IGN = np.full(5, -100)
CW4 = R.uniform(0.2, 2.0, (4,))
PROBS54 = np.exp(R.randn(5, 4))
PROBS54 /= PROBS54.sum(1, keepdims=True)
X4 = R.randn(4)
Y0 = np.array(2)
PROBS4 = PROBS54[0].copy()
X3D = R.randn(2, 4, 3)
Y3D = R.randint(0, 4, (2, 3))
Y3D[0, 1] = -100
X4D = R.randn(2, 4, 3, 2)
Y4D = R.randint(0, 4, (2, 3, 2))
Y4D[1, 2, 0] = -100
X5D = R.randn(2, 4, 2, 1, 2)
Y5D = R.randint(0, 4, (2, 2, 1, 2))
PROBS4D = np.exp(R.randn(2, 4, 3, 2))
PROBS4D /= PROBS4D.sum(1, keepdims=True)

# KL divergence
KL_IN = np.log(PROBS54[::-1].copy())
KL_T = PROBS54.copy()
KL_T0 = PROBS54.copy()
KL_T0[0, 1] = 0.0
KL_T0[3, 2] = 0.0
KL_LOGT = R.randn(5, 4)


# ------------------------------------------------------------------ parity harness


def _functional(name, tensor_kwargs=(), **kwargs):
    """fn(lib, input, target, *tensors) calling lib.nn.functional.<name>."""

    def fn(lib, input, target, *tensors):
        kw = dict(kwargs, **dict(zip(tensor_kwargs, tensors)))
        return getattr(lib.nn.functional, name)(input, target, **kw)

    fn.label = name
    return fn


def _module(name, tensor_kwargs=(), **kwargs):
    """fn(lib, input, target, *tensors) building lib.nn.<name>(...) and calling it."""

    def fn(lib, input, target, *tensors):
        kw = dict(kwargs, **dict(zip(tensor_kwargs, tensors)))
        return getattr(lib.nn, name)(**kw)(input, target)

    fn.label = name
    return fn


def _grad_fn_name(lib, out):
    if out.grad_fn is None:
        return None
    if lib is ferrograd:
        return type(out.grad_fn).__name__
    return out.grad_fn.name()


def _run(lib, fn, arrays, grads, dtype):
    tensors = []
    for a, g in zip(arrays, grads):
        if np.issubdtype(a.dtype, np.floating):
            tensors.append(lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=g))
        else:
            tensors.append(lib.tensor(a))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(lib, *tensors)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    result = {
        "value": _np(out),
        "dtype": str(out.dtype),
        "grad_fn": _grad_fn_name(lib, out),
        "warnings": messages,
        "grads": [],
    }
    if any(grads):
        g = np.random.RandomState(7).uniform(0.5, 1.5, size=tuple(out.shape))
        out.backward(lib.tensor(g, dtype=out.dtype))
        result["grads"] = [_np(t.grad) if want else None for t, want in zip(tensors, grads)]
    return result


TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-6, atol=1e-6)}


def _check_parity(fn, arrays, grads, dtype):
    torch = _torch()
    expected = _run(torch, fn, arrays, grads, dtype)
    got = _run(ferrograd, fn, arrays, grads, dtype)
    assert got["dtype"] == expected["dtype"]
    assert got["value"].shape == expected["value"].shape
    np.testing.assert_allclose(got["value"], expected["value"], **TOL[dtype])
    assert got["warnings"] == expected["warnings"]
    assert got["grad_fn"] == expected["grad_fn"]
    for i, (g, e) in enumerate(zip(got["grads"], expected["grads"])):
        if e is None:
            continue
        assert g.shape == e.shape, f"grad of argument {i}"
        np.testing.assert_allclose(g, e, err_msg=f"grad of argument {i}", **TOL[dtype])


def _case(fn, arrays, grads, id, marks=()):
    return pytest.param(fn, arrays, grads, id=id, marks=marks)


# Known deviation: PyTorch's C++ cross_entropy with probability targets divides by a C++
# scalar (DivBackward1); ferrograd has no scalar-division node (every division is DivBackward0).
_DIV1 = pytest.mark.xfail(
    strict=True, reason="no DivBackward1 (division by a Scalar) node in the ferrograd core"
)


def _regression_cases(make):
    cases = []
    both = (True, True)
    for r in REDUCTIONS:
        cases.append(_case(make("l1_loss", reduction=r), [X34, T34], both, f"l1-{r}"))
        cases.append(_case(make("mse_loss", reduction=r), [X34, T34], both, f"mse-{r}"))
        for beta in (1.0, 0.5, 0.0, 2.0):
            cases.append(_case(make("smooth_l1_loss", reduction=r, beta=beta), [X34, T34], both,
                               f"smooth_l1-beta{beta}-{r}"))
        for delta in (1.0, 0.5, 2.0):
            cases.append(_case(make("huber_loss", reduction=r, delta=delta), [X34, T34], both,
                               f"huber-delta{delta}-{r}"))
        # broadcasting targets (with the size warning)
        cases.append(_case(make("mse_loss", reduction=r), [X34, T34[0]], both, f"mse-bcast-{r}"))
        cases.append(_case(make("l1_loss", reduction=r), [X34, T34[:, :1]], both, f"l1-bcast-{r}"))
        cases.append(_case(make("smooth_l1_loss", reduction=r, beta=0.5), [X34[:1], T34], both,
                           f"smooth_l1-bcast-input-{r}"))
        cases.append(_case(make("huber_loss", reduction=r, delta=0.5), [X34, T34[1]], both,
                           f"huber-bcast-{r}"))
    return cases


def _weighted_regression_cases():
    cases = []
    for name in ("l1_loss", "mse_loss", "huber_loss"):
        for r in REDUCTIONS:
            fn = _functional(name, ("weight",), reduction=r)
            cases.append(_case(fn, [X34, T34, W34], (True, True, False), f"{name}-weight-{r}"))
        fn = _functional(name, ("weight",), reduction="mean")
        cases.append(_case(fn, [X34, T34[0], W34], (True, True, False), f"{name}-weight-bcast"))
    fn = _functional("huber_loss", ("weight",), reduction="sum", delta=0.3)
    cases.append(_case(fn, [X34, T34, W34], (True, True, False), "huber-weight-delta0.3"))
    return cases


def _classification_cases(make):
    """nll_loss / cross_entropy (class indices) with every option; make(name, tensor_kwargs, **kw)."""
    cases = []
    for name in ("nll_loss", "cross_entropy"):
        for r in REDUCTIONS:
            g1, g2 = (True, False), (True, False, False)
            cases += [
                _case(make(name, reduction=r), [LOGITS, Y5], g1, f"{name}-{r}"),
                _case(make(name, ("weight",), reduction=r), [LOGITS, Y5, CW4], g2, f"{name}-weight-{r}"),
                _case(make(name, reduction=r), [LOGITS, Y5_IGN], g1, f"{name}-ignore-{r}"),
                _case(make(name, ("weight",), reduction=r, ignore_index=2), [LOGITS, Y5_IGN2, CW4], g2,
                      f"{name}-weight-ignore2-{r}"),
                _case(make(name, reduction=r), [LOGITS, Y5_ALL_IGN], g1, f"{name}-all-ignored-{r}"),
                _case(make(name, ("weight",), reduction=r), [LOGITS, Y5_ALL_IGN, CW4], g2,
                      f"{name}-weight-all-ignored-{r}"),
                _case(make(name, reduction=r), [X4, Y0], g1, f"{name}-1d-input-{r}"),
                _case(make(name, ("weight",), reduction=r), [X4, Y0, CW4], g2, f"{name}-1d-input-weight-{r}"),
                _case(make(name, ("weight",), reduction=r), [X3D, Y3D, CW4], g2, f"{name}-3d-{r}"),
                _case(make(name, ("weight",), reduction=r), [X4D, Y4D, CW4], g2, f"{name}-4d-{r}"),
                _case(make(name, reduction=r), [X5D, Y5D], g1, f"{name}-5d-{r}"),
            ]
    for r in REDUCTIONS:
        for ls in (0.1, 0.6, 1.0):
            cases += [
                _case(make("cross_entropy", reduction=r, label_smoothing=ls), [LOGITS, Y5], (True, False),
                      f"ce-smooth{ls}-{r}"),
                _case(make("cross_entropy", ("weight",), reduction=r, label_smoothing=ls), [LOGITS, Y5, CW4],
                      (True, False, False), f"ce-smooth{ls}-weight-{r}"),
                _case(make("cross_entropy", reduction=r, label_smoothing=ls), [LOGITS, Y5_IGN], (True, False),
                      f"ce-smooth{ls}-ignore-{r}"),
                _case(make("cross_entropy", ("weight",), reduction=r, label_smoothing=ls, ignore_index=2),
                      [LOGITS, Y5_IGN2, CW4], (True, False, False), f"ce-smooth{ls}-weight-ignore2-{r}"),
            ]
        cases += [
            _case(make("cross_entropy", ("weight",), reduction=r, label_smoothing=0.2), [X4D, Y4D, CW4],
                  (True, False, False), f"ce-smooth-4d-{r}"),
            _case(make("cross_entropy", reduction=r, label_smoothing=0.3), [X4, Y0], (True, False),
                  f"ce-smooth-1d-input-{r}"),
            _case(make("cross_entropy", reduction=r, label_smoothing=0.3), [LOGITS, Y5_ALL_IGN], (True, False),
                  f"ce-smooth-all-ignored-{r}"),
        ]
        # class probabilities (gradients w.r.t. the target as well)
        div1 = [_DIV1] if r == "mean" else []
        cases += [
            _case(make("cross_entropy", reduction=r), [LOGITS, PROBS54], (True, True), f"ce-probs-{r}", div1),
            _case(make("cross_entropy", reduction=r, label_smoothing=0.25), [LOGITS, PROBS54], (True, True),
                  f"ce-probs-smooth-{r}", div1),
            _case(make("cross_entropy", ("weight",), reduction=r), [LOGITS, PROBS54, CW4], (True, True, False),
                  f"ce-probs-weight-{r}", div1),
            _case(make("cross_entropy", ("weight",), reduction=r, label_smoothing=0.4), [LOGITS, PROBS54, CW4],
                  (True, True, False), f"ce-probs-smooth-weight-{r}", div1),
            _case(make("cross_entropy", ("weight",), reduction=r), [X4D, PROBS4D, CW4], (True, True, False),
                  f"ce-probs-4d-{r}", div1),
            _case(make("cross_entropy", ("weight",), reduction=r), [X4, PROBS4, CW4], (True, True, False),
                  f"ce-probs-1d-{r}", div1),
            # a negative ignore_index is allowed with probabilities
            _case(make("cross_entropy", reduction=r, ignore_index=-1), [LOGITS, PROBS54], (True, True),
                  f"ce-probs-ignore-neg-{r}", div1),
        ]
    return cases


def _binary_cases(make):
    cases = []
    for r in REDUCTIONS:
        cases += [
            _case(make("binary_cross_entropy", reduction=r), [P34, Q34], (True, True), f"bce-soft-{r}"),
            _case(make("binary_cross_entropy", reduction=r), [P34, H34], (True, True), f"bce-hard-{r}"),
            _case(make("binary_cross_entropy", ("weight",), reduction=r), [P34, Q34, W34], (True, True, False),
                  f"bce-weight-{r}"),
            _case(make("binary_cross_entropy", ("weight",), reduction=r), [P34, Q34, W4], (True, True, False),
                  f"bce-weight-bcast-{r}"),
            _case(make("binary_cross_entropy", ("weight",), reduction=r), [P34, Q34, W31], (True, True, False),
                  f"bce-weight-col-{r}"),
            _case(make("binary_cross_entropy_with_logits", reduction=r), [Z34, Q34], (True, True),
                  f"bce_logits-{r}"),
            _case(make("binary_cross_entropy_with_logits", ("weight",), reduction=r), [Z34, H34, W34],
                  (True, True, False), f"bce_logits-weight-{r}"),
            _case(make("binary_cross_entropy_with_logits", ("weight",), reduction=r), [Z34, Q34, W4],
                  (True, True, False), f"bce_logits-weight-bcast-{r}"),
            _case(make("binary_cross_entropy_with_logits", ("pos_weight",), reduction=r), [Z34, Q34, PW4],
                  (True, True, False), f"bce_logits-pos_weight-{r}"),
            _case(make("binary_cross_entropy_with_logits", ("weight", "pos_weight"), reduction=r),
                  [Z34, Q34, W31, PW4], (True, True, False, False), f"bce_logits-both-{r}"),
            _case(make("binary_cross_entropy_with_logits", ("pos_weight",), reduction=r), [Z34, Q34, W34],
                  (True, True, False), f"bce_logits-pos_weight-full-{r}"),
        ]
    return cases


def _kl_cases(make):
    cases = []
    for r in REDUCTIONS + ["batchmean"]:
        cases += [
            _case(make("kl_div", reduction=r), [KL_IN, KL_T], (True, True), f"kl-{r}"),
            _case(make("kl_div", reduction=r), [KL_IN, KL_T0], (True, False), f"kl-zero-target-{r}"),
            _case(make("kl_div", reduction=r, log_target=True), [KL_IN, KL_LOGT], (True, True),
                  f"kl-log_target-{r}"),
            _case(make("kl_div", reduction=r), [KL_IN, KL_T[0]], (True, True), f"kl-bcast-{r}"),
        ]
    return cases


def _functional_cases():
    return (
        _regression_cases(_functional)
        + _weighted_regression_cases()
        + _classification_cases(_functional)
        + _binary_cases(_functional)
        + _kl_cases(_functional)
    )


_MODULE_NAMES = {
    "l1_loss": "L1Loss",
    "mse_loss": "MSELoss",
    "smooth_l1_loss": "SmoothL1Loss",
    "huber_loss": "HuberLoss",
    "nll_loss": "NLLLoss",
    "cross_entropy": "CrossEntropyLoss",
    "binary_cross_entropy": "BCELoss",
    "binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
    "kl_div": "KLDivLoss",
}


def _as_module(name, tensor_kwargs=(), **kwargs):
    return _module(_MODULE_NAMES[name], tensor_kwargs, **kwargs)


def _module_cases():
    return (
        _regression_cases(_as_module)
        + _classification_cases(_as_module)
        + _binary_cases(_as_module)
        + _kl_cases(_as_module)
    )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn,arrays,grads", _functional_cases())
def test_functional_parity(fn, arrays, grads, dtype):
    _check_parity(fn, arrays, grads, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn,arrays,grads", _module_cases())
def test_module_parity(fn, arrays, grads, dtype):
    _check_parity(fn, arrays, grads, dtype)


def _mixed_dtype_cases():
    cases = []
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "kl_div"):
        for a, b in (("float32", "float64"), ("float64", "float32")):
            marks = ()
            if name == "binary_cross_entropy_with_logits" and a == "float64":
                # PyTorch's kernel computes (1 - target).mul_(input): the loss takes the target's dtype
                marks = pytest.mark.xfail(strict=True, reason="float32 loss for a float64 input not reproduced")
            cases.append(pytest.param(name, a, b, id=f"{name}-{a}-{b}", marks=marks))
    return cases


@pytest.mark.parametrize("name,a,b", _mixed_dtype_cases())
def test_mixed_float_dtypes_parity(name, a, b):
    # a float32 input with a float64 target and the reverse: promotion (or PyTorch's error) as in PyTorch
    torch = _torch()
    x, t = (P34, Q34) if "binary" in name else (X34, np.abs(T34))
    outs = []
    for lib in (torch, ferrograd):
        xi = lib.tensor(x, dtype=getattr(lib, a), requires_grad=True)
        ti = lib.tensor(t, dtype=getattr(lib, b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = getattr(lib.nn.functional, name)(xi, ti, reduction="sum")
            except RuntimeError as e:
                outs.append(("error", str(e), None))
                continue
        try:
            out.backward()
            grad_dtype = str(xi.grad.dtype)
        except RuntimeError:
            # PyTorch's huber_loss backward refuses mixed dtypes; ferrograd's computes it
            grad_dtype = None
        outs.append((str(out.dtype), out.detach().item(), grad_dtype))
    assert outs[1][0] == outs[0][0]
    if outs[0][0] == "error":
        assert outs[1][1] == outs[0][1]
        return
    assert outs[1][1] == pytest.approx(outs[0][1], rel=1e-6)
    if outs[0][2] is not None:
        assert outs[1][2] == outs[0][2]
    else:
        assert name == "huber_loss" and outs[1][2] == f"torch.{a}"


def _empty_cases():
    e4, e0 = np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    cases = []
    for r in REDUCTIONS:
        cases += [
            _case(_functional("cross_entropy", reduction=r), [e4, e0], (True, False), f"ce-{r}"),
            _case(_functional("cross_entropy", reduction=r, label_smoothing=0.2), [e4, e0], (True, False),
                  f"ce-smooth-{r}"),
            _case(_functional("cross_entropy", reduction=r), [e4, e4], (True, True), f"ce-probs-{r}"),
            _case(_functional("nll_loss", reduction=r), [np.zeros((0, 4, 3)), np.zeros((0, 3), dtype=np.int64)],
                  (True, False), f"nll-3d-{r}"),
            _case(_functional("mse_loss", reduction=r), [e4, e4], (True, True), f"mse-{r}"),
            _case(_functional("l1_loss", reduction=r), [e4, e4], (True, True), f"l1-{r}"),
            _case(_functional("binary_cross_entropy", reduction=r), [e4, e4], (True, True), f"bce-{r}"),
            _case(_functional("binary_cross_entropy_with_logits", reduction=r), [e4, e4], (True, True),
                  f"bce_logits-{r}"),
        ]
    cases.append(_case(_functional("kl_div", reduction="batchmean"), [e4, e4], (True, True), "kl-batchmean"))
    return cases


@pytest.mark.parametrize("fn,arrays,grads", _empty_cases())
def test_empty_batch_parity(fn, arrays, grads):
    # mean over nothing is nan, sum is 0, 'none' is empty
    _check_parity(fn, arrays, grads, "float64")


def test_bce_extreme_probabilities_parity():
    # log is clamped at -100: input exactly 0 or 1 gives finite losses
    torch = _torch()
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    t = np.array([0.0, 1.0, 1.0, 0.0, 0.3])
    for r in REDUCTIONS:
        exp = torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(t), reduction=r)
        got = F.binary_cross_entropy(ferrograd.tensor(x), ferrograd.tensor(t), reduction=r)
        np.testing.assert_allclose(_np(got), exp.numpy(), rtol=1e-12)


def test_bce_logits_extreme_logits_parity():
    torch = _torch()
    z = np.array([-800.0, 800.0, -40.0, 40.0, 0.0])
    t = np.array([1.0, 0.0, 0.3, 0.7, 1.0])
    pw = np.array([2.0, 3.0, 0.5, 1.0, 1.5])
    exp = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(z), torch.tensor(t), pos_weight=torch.tensor(pw), reduction="none")
    got = F.binary_cross_entropy_with_logits(
        ferrograd.tensor(z), ferrograd.tensor(t), pos_weight=ferrograd.tensor(pw), reduction="none")
    np.testing.assert_allclose(_np(got), exp.numpy(), rtol=1e-12)


def test_kl_div_negative_target_parity():
    torch = _torch()
    x, t = np.array([0.5, 0.5, 0.1]), np.array([-1.0, 1.0, 0.0])
    exp = torch.nn.functional.kl_div(torch.tensor(x), torch.tensor(t), reduction="none")
    got = F.kl_div(ferrograd.tensor(x), ferrograd.tensor(t), reduction="none")
    np.testing.assert_allclose(_np(got), exp.numpy(), equal_nan=True)


def test_elementwise_mean_parity():
    torch = _torch()
    for name in ("mse_loss", "l1_loss", "kl_div", "binary_cross_entropy"):
        res = []
        for lib in (torch, ferrograd):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = getattr(lib.nn.functional, name)(
                    lib.tensor(P34), lib.tensor(Q34), reduction="elementwise_mean")
            res.append((float(out), [str(w.message) for w in caught]))
        assert res[1][0] == pytest.approx(res[0][0], rel=1e-12)
        assert res[1][1] == res[0][1]


# ------------------------------------------------------------------ closed forms (always run)


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _t(a, requires_grad=False):
    return ferrograd.tensor(a, requires_grad=requires_grad)


def test_cross_entropy_closed_form():
    logp = _log_softmax(LOGITS, 1)
    nll = -logp[np.arange(5), Y5]
    x = _t(LOGITS, True)
    out = F.cross_entropy(x, _t(Y5))
    assert float(out) == pytest.approx(nll.mean(), rel=1e-12)
    out.backward()
    onehot = np.eye(4)[Y5]
    np.testing.assert_allclose(x.grad.numpy(), (np.exp(logp) - onehot) / 5, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(_np(F.cross_entropy(_t(LOGITS), _t(Y5), reduction="none")), nll, rtol=1e-12)
    assert float(F.cross_entropy(_t(LOGITS), _t(Y5), reduction="sum")) == pytest.approx(nll.sum(), rel=1e-12)
    assert float(nn.CrossEntropyLoss()(_t(LOGITS), _t(Y5))) == pytest.approx(nll.mean(), rel=1e-12)


def test_cross_entropy_weight_ignore_closed_form():
    logp = _log_softmax(LOGITS, 1)
    keep = Y5_IGN2 != 2
    y = Y5_IGN2[keep]
    w = CW4[y]
    nll = -logp[keep][np.arange(len(y)), y]
    out = F.cross_entropy(_t(LOGITS), _t(Y5_IGN2), weight=_t(CW4), ignore_index=2)
    assert float(out) == pytest.approx((w * nll).sum() / w.sum(), rel=1e-12)
    none = _np(F.cross_entropy(_t(LOGITS), _t(Y5_IGN2), weight=_t(CW4), ignore_index=2, reduction="none"))
    np.testing.assert_allclose(none[keep], w * nll, rtol=1e-12)
    assert (none[~keep] == 0).all()
    # every target ignored: mean is 0/0 = nan, sum is 0
    assert math.isnan(float(F.cross_entropy(_t(LOGITS), _t(Y5_ALL_IGN))))
    assert float(F.cross_entropy(_t(LOGITS), _t(Y5_ALL_IGN), reduction="sum")) == 0.0


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("use_weight", [False, True])
def test_cross_entropy_label_smoothing_closed_form(reduction, use_weight):
    eps, C = 0.3, 4
    logp = _log_softmax(LOGITS, 1)
    y = Y5_IGN
    keep = y != -100
    w = CW4 if use_weight else np.ones(C)
    wy = np.where(keep, w[np.where(keep, y, 0)], 0.0)
    nll = np.where(keep, -logp[np.arange(5), np.where(keep, y, 0)], 0.0) * wy
    smooth = np.where(keep, -(logp * w).sum(1), 0.0)
    if reduction == "none":
        expected = (1 - eps) * nll + eps / C * smooth
    elif reduction == "sum":
        expected = (1 - eps) * nll.sum() + eps / C * smooth.sum()
    else:
        expected = ((1 - eps) * nll.sum() + eps / C * smooth.sum()) / wy.sum()
    weight = _t(CW4) if use_weight else None
    out = F.cross_entropy(_t(LOGITS), _t(y), weight=weight, reduction=reduction, label_smoothing=eps)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-12)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_probabilities_closed_form(smoothing):
    logp = _log_softmax(X4D, 1)
    target = PROBS4D * (1 - smoothing) + smoothing / 4
    w = CW4.reshape(1, 4, 1, 1)
    per = -(logp * target * w).sum(1)
    x, p = _t(X4D, True), _t(PROBS4D, True)
    out = F.cross_entropy(x, p, weight=_t(CW4), label_smoothing=smoothing)
    assert float(out) == pytest.approx(per.sum() / 12, rel=1e-12)
    out.backward()
    # d/dp = -(1 - smoothing) * w * log_softmax / (N * d1 * d2)
    np.testing.assert_allclose(p.grad.numpy(), -(1 - smoothing) * w * logp / 12, rtol=1e-10)
    np.testing.assert_allclose(
        _np(F.cross_entropy(_t(X4D), _t(PROBS4D), weight=_t(CW4), label_smoothing=smoothing, reduction="none")),
        per, rtol=1e-12)


def test_nll_loss_nd_closed_form():
    for x, y in ((X3D, Y3D), (X4D, Y4D), (X5D, Y5D)):
        xm = np.moveaxis(x, 1, -1).reshape(-1, 4)
        ym = y.reshape(-1)
        keep = ym != -100
        w = CW4[ym[keep]]
        picked = -xm[keep][np.arange(keep.sum()), ym[keep]]
        out = F.nll_loss(_t(x), _t(y), weight=_t(CW4))
        assert float(out) == pytest.approx((w * picked).sum() / w.sum(), rel=1e-12)
        none = _np(F.nll_loss(_t(x), _t(y), weight=_t(CW4), reduction="none"))
        assert none.shape == y.shape
        np.testing.assert_allclose(none.reshape(-1)[keep], w * picked, rtol=1e-12)
    # a non-contiguous (N, C, d) input gives the same losses
    permuted = ferrograd.tensor(np.ascontiguousarray(X3D.transpose(2, 1, 0))).permute(2, 1, 0)
    assert not permuted.is_contiguous()
    np.testing.assert_array_equal(_np(F.nll_loss(permuted, _t(Y3D), reduction="none")),
                                  _np(F.nll_loss(_t(X3D), _t(Y3D), reduction="none")))
    # 1-D input with a 0-d target
    out = F.nll_loss(_t(X4), _t(Y0), reduction="none")
    assert out.shape == ()
    assert float(out) == -X4[2]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_closed_form(reduction):
    loss = -W34 * (Q34 * np.log(P34) + (1 - Q34) * np.log(1 - P34))
    expected = {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]
    x = _t(P34, True)
    out = F.binary_cross_entropy(x, _t(Q34), weight=_t(W34), reduction=reduction)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-12)
    if reduction == "sum":
        out.backward()
        np.testing.assert_allclose(x.grad.numpy(), W34 * (P34 - Q34) / (P34 * (1 - P34)), rtol=1e-10)
    # log is clamped at -100
    ex = F.binary_cross_entropy(_t([0.0, 1.0, 0.0]), _t([1.0, 0.0, 0.0]), reduction="none")
    np.testing.assert_allclose(_np(ex), [100.0, 100.0, 0.0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_closed_form(reduction):
    sig = 1 / (1 + np.exp(-Z34))
    loss = -W31 * (PW4 * Q34 * np.log(sig) + (1 - Q34) * np.log(1 - sig))
    expected = {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]
    x = _t(Z34, True)
    out = F.binary_cross_entropy_with_logits(x, _t(Q34), weight=_t(W31), pos_weight=_t(PW4), reduction=reduction)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10)
    if reduction == "sum":
        out.backward()
        # d/dx = w * ((pw * t + 1 - t) * sigmoid(x) - pw * t)
        np.testing.assert_allclose(x.grad.numpy(), W31 * ((PW4 * Q34 + 1 - Q34) * sig - PW4 * Q34), rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_closed_forms(reduction):
    red = {"none": lambda a: a, "mean": np.mean, "sum": np.sum}[reduction]
    d = X34 - T34
    a = np.abs(d)
    x, t = _t(X34), _t(T34)
    np.testing.assert_allclose(_np(F.l1_loss(x, t, reduction=reduction)), red(a), rtol=1e-12)
    np.testing.assert_allclose(_np(F.mse_loss(x, t, reduction=reduction)), red(d * d), rtol=1e-12)
    for delta in (0.5, 1.0, 2.0):
        huber = np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
        np.testing.assert_allclose(_np(F.huber_loss(x, t, reduction=reduction, delta=delta)), red(huber),
                                   rtol=1e-12)
        sl1 = np.where(a < delta, 0.5 * d * d / delta, a - 0.5 * delta)
        np.testing.assert_allclose(_np(F.smooth_l1_loss(x, t, reduction=reduction, beta=delta)), red(sl1),
                                   rtol=1e-12)
    np.testing.assert_allclose(_np(F.smooth_l1_loss(x, t, reduction=reduction, beta=0.0)), red(a), rtol=1e-12)
    # elementwise weights: mean divides by the weight sum for l1/mse, by the count for huber
    wsum = {"none": lambda v: v, "mean": lambda v: v.sum() / W34.sum(), "sum": np.sum}[reduction]
    np.testing.assert_allclose(_np(F.mse_loss(x, t, reduction=reduction, weight=_t(W34))), wsum(W34 * d * d),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(F.l1_loss(x, t, reduction=reduction, weight=_t(W34))), wsum(W34 * a),
                               rtol=1e-12)
    huber = np.where(a < 1.0, 0.5 * d * d, a - 0.5)
    np.testing.assert_allclose(_np(F.huber_loss(x, t, reduction=reduction, weight=_t(W34))), red(W34 * huber),
                               rtol=1e-12)


def test_regression_closed_form_gradients():
    d = X34 - T34
    for fn, expected in (
        (lambda x, t: F.mse_loss(x, t), 2 * d / 12),
        (lambda x, t: F.l1_loss(x, t, reduction="sum"), np.sign(d)),
        (lambda x, t: F.huber_loss(x, t, reduction="sum", delta=0.5), np.clip(d, -0.5, 0.5)),
        (lambda x, t: F.smooth_l1_loss(x, t, reduction="sum", beta=2.0), np.clip(d, -2.0, 2.0) / 2.0),
    ):
        x, t = _t(X34, True), _t(T34, True)
        fn(x, t).backward()
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
        np.testing.assert_allclose(t.grad.numpy(), -expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div_closed_form(reduction):
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.where(KL_T0 > 0, KL_T0 * (np.log(KL_T0) - KL_IN), 0.0)
    expected = {"none": loss, "mean": loss.mean(), "sum": loss.sum(), "batchmean": loss.sum() / 5}[reduction]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.kl_div(_t(KL_IN), _t(KL_T0), reduction=reduction)
        out_log = F.kl_div(_t(KL_IN), _t(KL_LOGT), reduction=reduction, log_target=True)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-12)
    loss_log = np.exp(KL_LOGT) * (KL_LOGT - KL_IN)
    expected_log = {"none": loss_log, "mean": loss_log.mean(), "sum": loss_log.sum(),
                    "batchmean": loss_log.sum() / 5}[reduction]
    np.testing.assert_allclose(_np(out_log), expected_log, rtol=1e-12)


def test_kl_div_negative_target_is_nan():
    out = F.kl_div(_t([0.5, 0.5, 0.1]), _t([-1.0, 1.0, 0.0]), reduction="none")
    v = _np(out)
    assert math.isnan(v[0])
    np.testing.assert_allclose(v[1:], [-0.5, 0.0])


def test_kl_div_mean_warning_and_batchmean_0d():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(_t(KL_IN), _t(KL_T))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = F.kl_div(ferrograd.tensor(0.5, dtype=ferrograd.float64),
                       ferrograd.tensor(0.25, dtype=ferrograd.float64), reduction="batchmean")
    assert float(out) == pytest.approx(0.25 * (math.log(0.25) - 0.5), rel=1e-12)


def test_broadcast_warning_text():
    msg = ("Using a target size (torch.Size([4])) that is different to the input size (torch.Size([3, 4])). "
           "This will likely lead to incorrect results due to broadcasting. "
           "Please ensure they have the same size.")
    for fn in (F.l1_loss, F.mse_loss, F.smooth_l1_loss, F.huber_loss):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(_t(X34), _t(T34[0]), reduction="none")
        assert [str(w.message) for w in caught] == [msg]
        assert caught[0].category is UserWarning
        assert out.shape == (3, 4)
    # same size: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(_t(X34), _t(T34))


def test_broadcast_target_gradient_is_reduced():
    x, t = _t(X34, True), _t(T34[0], True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.mse_loss(x, t, reduction="sum").backward()
    d = X34 - T34[0]
    np.testing.assert_allclose(x.grad.numpy(), 2 * d, rtol=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), -2 * d.sum(0), rtol=1e-12)


# ------------------------------------------------------------------ gradcheck (always run)


def _gc(a):
    return ferrograd.tensor(a, dtype=ferrograd.float64, requires_grad=True)


def _c(a):
    return ferrograd.tensor(a)


_GX = R.randn(3, 4)
_GT = _GX + _diffs((3, 4), kinks=(0.5, 1.0))


def _gradcheck_cases():
    """(id, fn, inputs): fn of the differentiable inputs only."""
    cases = []
    for r in REDUCTIONS:
        cases += [
            (f"l1-{r}", lambda x, t, r=r: F.l1_loss(x, t, reduction=r), [_GX, _GT]),
            (f"mse-{r}", lambda x, t, r=r: F.mse_loss(x, t, reduction=r), [_GX, _GT]),
            (f"l1-weight-{r}", lambda x, t, r=r: F.l1_loss(x, t, reduction=r, weight=_c(W34)), [_GX, _GT]),
            (f"mse-weight-{r}", lambda x, t, r=r: F.mse_loss(x, t, reduction=r, weight=_c(W34)), [_GX, _GT]),
            (f"huber-weight-{r}", lambda x, t, r=r: F.huber_loss(x, t, reduction=r, weight=_c(W34)), [_GX, _GT]),
            (f"nll-{r}", lambda x, r=r: F.nll_loss(x, _c(Y5_IGN), weight=_c(CW4), reduction=r), [LOGITS]),
            (f"nll-1d-{r}", lambda x, r=r: F.nll_loss(x, _c(Y0), reduction=r), [X4]),
            (f"nll-3d-{r}", lambda x, r=r: F.nll_loss(x, _c(Y3D), weight=_c(CW4), reduction=r), [X3D]),
            (f"nll-4d-{r}", lambda x, r=r: F.nll_loss(x, _c(Y4D), weight=_c(CW4), reduction=r), [X4D]),
            (f"ce-{r}", lambda x, r=r: F.cross_entropy(x, _c(Y5_IGN2), weight=_c(CW4), ignore_index=2,
                                                       reduction=r), [LOGITS]),
            (f"ce-smooth-{r}", lambda x, r=r: F.cross_entropy(x, _c(Y5_IGN), weight=_c(CW4), reduction=r,
                                                              label_smoothing=0.3), [LOGITS]),
            (f"ce-smooth-4d-{r}", lambda x, r=r: F.cross_entropy(x, _c(Y4D), reduction=r, label_smoothing=0.3),
             [X4D]),
            (f"ce-probs-{r}", lambda x, p, r=r: F.cross_entropy(x, p, weight=_c(CW4), reduction=r,
                                                                label_smoothing=0.1), [LOGITS, PROBS54]),
            (f"ce-probs-4d-{r}", lambda x, p, r=r: F.cross_entropy(x, p, reduction=r), [X4D, PROBS4D]),
            (f"bce-{r}", lambda x, t, r=r: F.binary_cross_entropy(x, t, weight=_c(W4), reduction=r), [P34, Q34]),
            (f"bce_logits-{r}", lambda x, t, r=r: F.binary_cross_entropy_with_logits(
                x, t, weight=_c(W31), pos_weight=_c(PW4), reduction=r), [Z34, Q34]),
            (f"kl-{r}", lambda x, t, r=r: F.kl_div(x, t, reduction=r), [KL_IN, KL_T]),
            (f"kl-log_target-{r}", lambda x, t, r=r: F.kl_div(x, t, reduction=r, log_target=True),
             [KL_IN, KL_LOGT]),
        ]
        for beta in (1.0, 0.5, 0.0):
            cases.append((f"smooth_l1-beta{beta}-{r}",
                          lambda x, t, r=r, b=beta: F.smooth_l1_loss(x, t, reduction=r, beta=b), [_GX, _GT]))
        for delta in (1.0, 0.5):
            cases.append((f"huber-delta{delta}-{r}",
                          lambda x, t, r=r, d=delta: F.huber_loss(x, t, reduction=r, delta=d), [_GX, _GT]))
    cases.append(("kl-batchmean", lambda x, t: F.kl_div(x, t, reduction="batchmean"), [KL_IN, KL_T]))
    cases.append(("mse-bcast", lambda x, t: F.mse_loss(x, t), [_GX, _GT[0]]))
    return [pytest.param(fn, inputs, id=i) for i, fn, inputs in cases]


def _quiet(fn):
    def wrapped(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)

    return wrapped


@pytest.mark.parametrize("fn,inputs", _gradcheck_cases())
def test_gradcheck(fn, inputs):
    assert gradcheck(_quiet(fn), tuple(_gc(a) for a in inputs))


@pytest.mark.parametrize("fn,inputs", _gradcheck_cases())
def test_double_backward(fn, inputs):
    """gradgradcheck: gradcheck of the first derivative (built with create_graph=True)."""
    gradgradcheck = getattr(ferrograd.autograd, "gradgradcheck", None)
    tensors = tuple(_gc(a) for a in inputs)
    fn = _quiet(fn)
    if gradgradcheck is not None:
        assert gradgradcheck(fn, tensors)
        return

    def first_derivative(*xs):
        out = fn(*xs)
        v = ferrograd.tensor(np.random.RandomState(3).uniform(0.5, 1.5, tuple(out.shape)))
        return grad((out * v).sum(), xs, create_graph=True)

    assert gradcheck(first_derivative, tensors)


# ------------------------------------------------------------------ misuse


_X = np.random.RandomState(1).randn(3, 4)


def _misuse_cases():
    def f(lib):
        return lib.nn.functional

    def t(lib, a, **kw):
        return lib.tensor(a, **kw)

    quarters = np.full((3, 4), 0.25)
    cases = [
        ("nll-float-target", lambda L: f(L).nll_loss(t(L, _X), t(L, [0.0, 1.0, 2.0])),
         RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
        ("ce-float-target", lambda L: f(L).cross_entropy(t(L, _X, dtype=L.float32), t(L, [0.0, 1.0, 2.0])),
         RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
        ("ce-bool-target", lambda L: f(L).cross_entropy(t(L, _X), t(L, [True, False, True])),
         RuntimeError, "expected target dtype to be Long or Byte, but got Bool"),
        ("ce-int-probs", lambda L: f(L).cross_entropy(t(L, _X), t(L, np.ones((3, 4), dtype=np.int64))),
         RuntimeError, "Expected floating point type for target with class probabilities, got Long"),
        ("ce-batch", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 1])),
         ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
        ("nll-batch", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 1])),
         ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
        ("nll-4d-batch", lambda L: f(L).nll_loss(t(L, X4D), t(L, Y4D[:1])),
         ValueError, "Expected input batch_size (2) to match target batch_size (1)."),
        ("nll-0d-input", lambda L: f(L).nll_loss(t(L, 1.0), t(L, 0)),
         ValueError, "Expected 1 or more dimensions (got 0)"),
        ("nll-1d-input-long-target", lambda L: f(L).nll_loss(t(L, X4), t(L, [0, 1])),
         ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
        ("nll-oob", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 5, 1])), IndexError, "Target 5 is out of bounds."),
        ("nll-oob-neg", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, -1, 1])), IndexError,
         "Target -1 is out of bounds."),
        ("ce-oob", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 5, 1])), IndexError,
         "Target 5 is out of bounds."),
        ("ce-oob-smooth", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 5, 1]), label_smoothing=0.1),
         IndexError, "Target 5 is out of bounds."),
        ("ce-oob-4d", lambda L: f(L).cross_entropy(t(L, X4D), t(L, np.full((2, 3, 2), 4))),
         IndexError, "Target 4 is out of bounds."),
        ("nll-weight-size", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 1, 1]), weight=t(L, [1.0, 2.0])),
         RuntimeError,
         "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of "
         "shape: [2]"),
        ("nll-weight-2d", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 1, 1]), weight=t(L, np.ones((2, 2)))),
         RuntimeError,
         "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of "
         "shape: [2, 2]"),
        ("ce-weight-size", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 1, 1]), weight=t(L, [1.0, 2.0])),
         RuntimeError,
         "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of "
         "shape: [2]"),
        ("ce-4d-weight-size", lambda L: f(L).cross_entropy(t(L, X4D), t(L, Y4D), weight=t(L, [1.0, 2.0])),
         RuntimeError, "weight tensor should be defined either for all or no classes"),
        ("nll-3d-weight-size", lambda L: f(L).nll_loss(t(L, X3D), t(L, Y3D), weight=t(L, [1.0, 2.0])),
         RuntimeError, "weight tensor should be defined either for all or no classes"),
        ("nll-4d-weight-dtype", lambda L: f(L).nll_loss(t(L, X4D), t(L, Y4D), weight=t(L, CW4, dtype=L.float32)),
         RuntimeError, "expected scalar type Double but found Float"),
        ("bce-dtype", lambda L: f(L).binary_cross_entropy(t(L, P34), t(L, Q34, dtype=L.float32)),
         RuntimeError, "Found dtype Float but expected Double"),
        ("l1-weight-bad-reduction", lambda L: f(L).l1_loss(t(L, X34), t(L, T34), weight=t(L, W34), reduction="bad"),
         ValueError, "Invalid reduction mode: bad. Expected one of 'none', 'mean', 'sum'."),
        ("huber-weight-elementwise_mean",
         lambda L: f(L).huber_loss(t(L, X34), t(L, T34), weight=t(L, W34), reduction="elementwise_mean"),
         ValueError, "Invalid reduction mode: elementwise_mean. Expected one of 'none', 'mean', 'sum'."),
        ("ce-smooth-weight-size", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 1, 1]), weight=t(L, [1.0, 2.0]),
                                                              label_smoothing=0.1),
         RuntimeError,
         "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of "
         "shape: [2]"),
        ("ce-probs-weight-size", lambda L: f(L).cross_entropy(t(L, _X), t(L, quarters), weight=t(L, [1.0, 2.0])),
         RuntimeError,
         "cross_entropy: weight tensor should be defined either for all 4 classes or no classes but got "
         "weight tensor of shape: [2]"),
        ("nll-weight-dtype", lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 1, 1]),
                                                     weight=t(L, [1.0, 2.0, 3.0, 4.0], dtype=L.float32)),
         RuntimeError, "expected scalar type Double but found Float"),
        ("nll-3d-target-size", lambda L: f(L).nll_loss(t(L, X3D), t(L, np.zeros((2, 5), dtype=np.int64))),
         RuntimeError, "Expected target size [2, 3], got [2, 5]"),
        ("nll-5d-target-size", lambda L: f(L).nll_loss(t(L, X5D), t(L, np.zeros((2, 2, 1, 3), dtype=np.int64))),
         RuntimeError, "Expected target size [2, 2, 1, 2], got [2, 2, 1, 3]"),
        ("nll-4d-target-dim", lambda L: f(L).nll_loss(t(L, X4D), t(L, np.zeros((2, 3), dtype=np.int64))),
         RuntimeError, "only batches of spatial targets supported (3D tensors) but got targets of dimension: 2"),
        ("nll-4d-target-size", lambda L: f(L).nll_loss(t(L, X4D), t(L, np.zeros((2, 3, 3), dtype=np.int64))),
         RuntimeError, "size mismatch (got input: [2, 4, 3, 2] , target: [2, 3, 3]"),
        ("nll-2d-target-dim", lambda L: f(L).nll_loss(t(L, _X), t(L, np.zeros((3, 4), dtype=np.int64))),
         RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
        ("ce-probs-shape", lambda L: f(L).cross_entropy(t(L, _X), t(L, np.ones((3, 5)))),
         RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
        ("nll-weight-requires-grad",
         lambda L: f(L).nll_loss(t(L, _X), t(L, [0, 1, 1]), weight=t(L, [1.0, 2.0, 3.0, 4.0], requires_grad=True)),
         RuntimeError, "The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. "
                       "This input cannot have requires_grad True."),
        ("ce-4d-weight-requires-grad",
         lambda L: f(L).cross_entropy(t(L, X4D), t(L, Y4D), weight=t(L, [1.0, 2.0, 3.0, 4.0], requires_grad=True)),
         RuntimeError, "The function 'nll_loss2d_forward' is not differentiable with respect to argument 'weight'. "
                       "This input cannot have requires_grad True."),
        ("bce-weight-requires-grad",
         lambda L: f(L).binary_cross_entropy(t(L, P34), t(L, Q34), weight=t(L, W4, requires_grad=True)),
         RuntimeError, "The function 'binary_cross_entropy' is not differentiable with respect to argument "
                       "'weight'. This input cannot have requires_grad True."),
        ("bce_logits-weight-requires-grad",
         lambda L: f(L).binary_cross_entropy_with_logits(t(L, Z34), t(L, Q34), weight=t(L, W4, requires_grad=True)),
         RuntimeError, "The function 'binary_cross_entropy_with_logits' is not differentiable with respect to "
                       "argument 'weight'. This input cannot have requires_grad True."),
        ("bce_logits-pos_weight-requires-grad",
         lambda L: f(L).binary_cross_entropy_with_logits(t(L, Z34), t(L, Q34),
                                                         pos_weight=t(L, PW4, requires_grad=True)),
         RuntimeError, "The function 'binary_cross_entropy_with_logits' is not differentiable with respect to "
                       "argument 'pos_weight'. This input cannot have requires_grad True."),
        ("bce-input-above-1", lambda L: f(L).binary_cross_entropy(t(L, [0.5, 1.5]), t(L, [0.0, 1.0])),
         RuntimeError, "all elements of input should be between 0 and 1"),
        ("bce-input-negative", lambda L: f(L).binary_cross_entropy(t(L, [-0.5, 0.5]), t(L, [0.0, 1.0])),
         RuntimeError, "all elements of input should be between 0 and 1"),
        ("bce-input-nan", lambda L: f(L).binary_cross_entropy(t(L, [math.nan, 0.5]), t(L, [0.0, 1.0])),
         RuntimeError, "all elements of input should be between 0 and 1"),
        ("bce-target-outside", lambda L: f(L).binary_cross_entropy(t(L, [0.2, 0.5]), t(L, [2.0, -1.0])),
         RuntimeError, "all elements of target should be between 0 and 1"),
        ("bce-size", lambda L: f(L).binary_cross_entropy(t(L, [0.5, 0.5]), t(L, [[0.0, 1.0]])),
         ValueError, "Using a target size (torch.Size([1, 2])) that is different to the input size "
                     "(torch.Size([2])) is deprecated. Please ensure they have the same size."),
        ("bce_logits-size", lambda L: f(L).binary_cross_entropy_with_logits(t(L, [0.5, 0.5]), t(L, [[0.0, 1.0]])),
         ValueError, "Target size (torch.Size([1, 2])) must be the same as input size (torch.Size([2]))"),
        ("bce_logits-pos_weight-size",
         lambda L: f(L).binary_cross_entropy_with_logits(t(L, [0.5, 0.5]), t(L, [0.0, 1.0]),
                                                         pos_weight=t(L, [1.0, 2.0, 3.0])),
         RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
        ("ce-smoothing-above-1", lambda L: f(L).cross_entropy(t(L, _X), t(L, [0, 1, 1]), label_smoothing=1.5),
         RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        ("ce-probs-smoothing-above-1",
         lambda L: f(L).cross_entropy(t(L, _X), t(L, quarters), label_smoothing=1.5),
         RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        ("ce-probs-ignore_index", lambda L: f(L).cross_entropy(t(L, _X), t(L, quarters), ignore_index=1),
         RuntimeError, "ignore_index is not supported for floating point target"),
        ("ce-probs-ignore_index-0", lambda L: f(L).cross_entropy(t(L, _X), t(L, quarters), ignore_index=0),
         RuntimeError, "ignore_index is not supported for floating point target"),
        ("smooth_l1-negative-beta", lambda L: f(L).smooth_l1_loss(t(L, _X), t(L, _X), beta=-1.0),
         RuntimeError, "smooth_l1_loss does not support negative values for beta."),
        ("huber-zero-delta", lambda L: f(L).huber_loss(t(L, _X), t(L, _X), delta=0.0),
         RuntimeError, "huber_loss does not support non-positive values for delta."),
        ("huber-negative-delta", lambda L: f(L).huber_loss(t(L, _X), t(L, _X), delta=-1.0),
         RuntimeError, "huber_loss does not support non-positive values for delta."),
        ("HuberLoss-delta-type", lambda L: L.nn.HuberLoss(delta="1"),
         TypeError, "delta must be a float or int, got: <class 'str'>"),
        ("mse-weight-size", lambda L: f(L).mse_loss(t(L, _X), t(L, _X), weight=t(L, [1.0, 2.0])),
         ValueError, "Weights and input must have the same size."),
        ("l1-weight-size", lambda L: f(L).l1_loss(t(L, _X), t(L, _X), weight=t(L, [1.0, 2.0])),
         ValueError, "Weights and input must have the same size."),
        ("huber-weight-size", lambda L: f(L).huber_loss(t(L, _X), t(L, _X), weight=t(L, [1.0, 2.0])),
         ValueError, "Weights and input must have the same size."),
        ("mse-shape", lambda L: f(L).mse_loss(t(L, [1.0, 2.0]), t(L, [1.0, 3.0, 4.0])),
         RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
        ("l1-shape", lambda L: f(L).l1_loss(t(L, [1.0, 2.0]), t(L, [1.0, 3.0, 4.0])),
         RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
        ("kl-integral", lambda L: f(L).kl_div(t(L, [1, 2]), t(L, [1, 3]), reduction="sum"),
         RuntimeError, "kl_div: Integral inputs not supported."),
        ("module-bad-reduction", lambda L: L.nn.MSELoss(reduction="bad")(t(L, [0.5]), t(L, [0.1])),
         ValueError, "bad is not a valid value for reduction"),
        ("ce-module-bad-reduction", lambda L: L.nn.CrossEntropyLoss(reduction="bad")(t(L, _X), t(L, [0, 1, 1])),
         ValueError, "bad is not a valid value for reduction"),
        ("kl-bad-reduction", lambda L: f(L).kl_div(t(L, _X), t(L, _X), reduction="batchsum"),
         ValueError, "batchsum is not a valid value for reduction"),
    ]
    x2, t2 = [0.5, 0.5], [0.0, 1.0]
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits", "kl_div"):
        cases.append((f"{name}-bad-reduction",
                      lambda L, name=name: getattr(f(L), name)(t(L, x2), t(L, t2), reduction="bad"),
                      ValueError, "bad is not a valid value for reduction"))
    for name in ("nll_loss", "cross_entropy"):
        cases.append((f"{name}-bad-reduction",
                      lambda L, name=name: getattr(f(L), name)(t(L, _X), t(L, [0, 1, 1]), reduction="bad"),
                      ValueError, "bad is not a valid value for reduction"))
    cases.append(("ce-probs-bad-reduction",
                  lambda L: f(L).cross_entropy(t(L, _X), t(L, quarters), reduction="bad"),
                  ValueError, "bad is not a valid value for reduction"))
    return [pytest.param(fn, exc, msg, id=i) for i, fn, exc, msg in cases]


@pytest.mark.parametrize("fn,exc,msg", _misuse_cases())
def test_misuse(fn, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            fn(ferrograd)
    assert str(info.value) == msg


@pytest.mark.parametrize("fn,exc,msg", _misuse_cases())
def test_misuse_texts_are_torch_texts(fn, exc, msg):
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            fn(torch)
    assert str(info.value) == msg


def test_weight_requires_grad_allowed_without_grad_mode():
    w = ferrograd.tensor(CW4, requires_grad=True)
    with ferrograd.no_grad():
        out = F.nll_loss(_t(LOGITS), _t(Y5), weight=w)
    assert out.grad_fn is None


# ------------------------------------------------------------------ legacy arguments


_LEGACY = [
    (dict(size_average=False), "sum"),
    (dict(reduce=False), "none"),
    (dict(size_average=True), "mean"),
    (dict(size_average=False, reduce=False), "none"),
    (dict(size_average=True, reduce=True), "mean"),
]


def _legacy_msg(reduction):
    return f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead."


@pytest.mark.parametrize("kwargs,reduction", _LEGACY)
@pytest.mark.parametrize(
    "name,args",
    [
        ("l1_loss", (X34, T34)),
        ("mse_loss", (X34, T34)),
        ("smooth_l1_loss", (X34, T34)),
        ("nll_loss", (LOGITS, Y5)),
        ("cross_entropy", (LOGITS, Y5)),
        ("binary_cross_entropy", (P34, Q34)),
        ("binary_cross_entropy_with_logits", (Z34, Q34)),
        ("kl_div", (KL_IN, KL_T)),
    ],
)
def test_legacy_arguments_functional(name, args, kwargs, reduction):
    fn = getattr(F, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*map(_t, args), **kwargs)
    assert [str(w.message) for w in caught] == [_legacy_msg(reduction)]
    assert caught[0].category is UserWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(*map(_t, args), reduction=reduction)
    np.testing.assert_array_equal(_np(out), _np(expected))


@pytest.mark.parametrize("kwargs,reduction", _LEGACY)
@pytest.mark.parametrize(
    "name", ["L1Loss", "MSELoss", "SmoothL1Loss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
             "BCEWithLogitsLoss", "KLDivLoss"]
)
def test_legacy_arguments_module(name, kwargs, reduction):
    with pytest.warns(UserWarning) as caught:
        m = getattr(nn, name)(**kwargs)
    assert [str(w.message) for w in caught] == [_legacy_msg(reduction)]
    assert m.reduction == reduction


def test_legacy_arguments_parity():
    torch = _torch()
    for kwargs, _ in _LEGACY:
        res = []
        for lib in (torch, ferrograd):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = lib.nn.functional.cross_entropy(lib.tensor(LOGITS), lib.tensor(Y5), **kwargs)
                m = lib.nn.NLLLoss(**kwargs)
            res.append((_np(out).tolist(), m.reduction, [str(w.message) for w in caught]))
        np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
        assert res[1][1:] == res[0][1:]


# ------------------------------------------------------------------ modules: repr, attributes, buffers


def _module_specs():
    """(name, kwargs builder(lib) -> kwargs)."""
    return [
        ("L1Loss", lambda L: {}),
        ("MSELoss", lambda L: dict(reduction="sum")),
        ("SmoothL1Loss", lambda L: dict(beta=0.5)),
        ("HuberLoss", lambda L: dict(delta=2.0, reduction="none")),
        ("NLLLoss", lambda L: {}),
        ("NLLLoss", lambda L: dict(weight=L.tensor(CW4), ignore_index=2)),
        ("CrossEntropyLoss", lambda L: {}),
        ("CrossEntropyLoss", lambda L: dict(weight=L.tensor(CW4), label_smoothing=0.1, ignore_index=1)),
        ("BCELoss", lambda L: {}),
        ("BCELoss", lambda L: dict(weight=L.tensor(W4))),
        ("BCEWithLogitsLoss", lambda L: {}),
        ("BCEWithLogitsLoss", lambda L: dict(weight=L.tensor(W4), pos_weight=L.tensor(PW4))),
        ("BCEWithLogitsLoss", lambda L: dict(pos_weight=L.tensor(PW4))),
        ("KLDivLoss", lambda L: dict(reduction="batchmean", log_target=True)),
    ]


_ATTRS = ("reduction", "ignore_index", "label_smoothing", "beta", "delta", "log_target")


def _describe(lib, name, kwargs):
    m = getattr(lib.nn, name)(**kwargs(lib))
    return {
        "repr": repr(m),
        "attrs": {a: getattr(m, a) for a in _ATTRS if hasattr(m, a)},
        "buffers": [(k, _np(v).tolist()) for k, v in m.named_buffers()],
        "state_dict": [(k, _np(v).tolist()) for k, v in m.state_dict().items()],
        "parameters": [k for k, _ in m.named_parameters()],
        "weight_is_none": getattr(m, "weight", "absent") is None,
        "pos_weight_is_none": getattr(m, "pos_weight", "absent") is None,
    }


@pytest.mark.parametrize("name,kwargs", _module_specs())
def test_module_description_parity(name, kwargs):
    torch = _torch()
    assert _describe(ferrograd, name, kwargs) == _describe(torch, name, kwargs)


def test_module_repr_and_buffers():
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.BCEWithLogitsLoss(pos_weight=_t(PW4))) == "BCEWithLogitsLoss()"
    m = nn.CrossEntropyLoss(weight=_t(CW4), ignore_index=3, label_smoothing=0.2)
    assert (m.reduction, m.ignore_index, m.label_smoothing) == ("mean", 3, 0.2)
    assert [k for k, _ in m.named_buffers()] == ["weight"]
    np.testing.assert_array_equal(_np(m.state_dict()["weight"]), CW4)
    assert list(m.parameters()) == []
    m = nn.BCEWithLogitsLoss(weight=_t(W4), pos_weight=_t(PW4))
    assert list(m.state_dict()) == ["weight", "pos_weight"]
    assert nn.NLLLoss().weight is None
    assert list(nn.NLLLoss().state_dict()) == []
    assert list(nn.BCEWithLogitsLoss(pos_weight=_t(PW4)).state_dict()) == ["pos_weight"]
    assert nn.HuberLoss().delta == 1.0 and nn.SmoothL1Loss().beta == 1.0
    assert nn.KLDivLoss().log_target is False


def test_module_buffers_follow_dtype_conversion_and_load():
    m = nn.CrossEntropyLoss(weight=_t(CW4))
    m.float()
    assert m.weight.dtype == ferrograd.float32
    x = ferrograd.tensor(LOGITS, dtype=ferrograd.float32, requires_grad=True)
    out = m(x, _t(Y5))
    assert out.dtype == ferrograd.float32
    logp = _log_softmax(LOGITS, 1)
    w = CW4[Y5]
    assert float(out) == pytest.approx((-w * logp[np.arange(5), Y5]).sum() / w.sum(), rel=1e-5)
    m2 = nn.CrossEntropyLoss(weight=_t(np.ones(4)))
    m2.load_state_dict(nn.CrossEntropyLoss(weight=_t(CW4)).state_dict())
    np.testing.assert_array_equal(_np(m2.weight), CW4)


def test_module_forward_matches_functional():
    x, y = _t(LOGITS), _t(Y5_IGN2)
    m = nn.CrossEntropyLoss(weight=_t(CW4), ignore_index=2, label_smoothing=0.3, reduction="sum")
    expected = F.cross_entropy(x, y, weight=_t(CW4), ignore_index=2, label_smoothing=0.3, reduction="sum")
    assert float(m(x, y)) == float(expected)
    m = nn.BCEWithLogitsLoss(weight=_t(W4), pos_weight=_t(PW4), reduction="none")
    expected = F.binary_cross_entropy_with_logits(_t(Z34), _t(Q34), weight=_t(W4), pos_weight=_t(PW4),
                                                  reduction="none")
    np.testing.assert_array_equal(_np(m(_t(Z34), _t(Q34))), _np(expected))
    # attributes are read at call time, like PyTorch
    m = nn.MSELoss()
    m.reduction = "none"
    assert m(_t(X34), _t(T34)).shape == (3, 4)
