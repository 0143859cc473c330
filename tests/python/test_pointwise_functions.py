"""The elementwise functions of python/ferrograd/_pointwise_functions.py beyond what the op table
(tests/native/op_db.py) checks: integer and bool dtypes, predicates, the in-place forms, the
in-place shape ops and the errors. Expected values are written out (or NumPy's); where PyTorch is
installed, the same calls are compared with it."""

import math

import numpy as np
import pytest

import ferrograd as fg
from ferrograd.autograd import gradcheck, gradgradcheck

inf, nan = math.inf, math.nan


def _np(t):
    return np.array(t.detach().numpy(), copy=True)


def _outcome(mod, fn):
    """``fn(mod)`` as comparable data: (dtype name, shape, values) per tensor, or the error."""
    try:
        r = fn(mod)
    except Exception as e:  # noqa: BLE001  (the error is the outcome compared)
        return ("error", type(e).__name__, str(e).split("\n")[0])
    if isinstance(r, tuple):
        return tuple(_outcome(mod, lambda m, x=x: x) for x in r)
    if isinstance(r, mod.Tensor):
        return (str(r.dtype).rsplit(".", 1)[-1], tuple(r.shape), np.array(r.detach().numpy(), copy=True))
    return r


def _assert_same(a, b):
    if isinstance(a, tuple) and len(a) == 3 and isinstance(a[2], np.ndarray):
        assert isinstance(b, tuple) and len(b) == 3 and isinstance(b[2], np.ndarray), (a, b)
        assert a[:2] == b[:2], (a, b)
        x, y = a[2], b[2]
        if x.dtype.kind == "f":
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=0, equal_nan=True)
            assert np.array_equal(np.signbit(x[x == 0]), np.signbit(y[y == 0])), (x, y)  # signed zeros
        else:
            np.testing.assert_array_equal(x, y)
    elif isinstance(a, tuple) and a and isinstance(a[0], tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b, (a, b)


def _values(dtype):
    floats = [1.0, -0.0, 0.0, nan, inf, -inf, 2.5, -3.0]
    return {"float32": floats, "float64": floats, "int64": [1, 0, 3, 4, -6, 8, 2, -4], "bool": [True, False] * 4}[dtype]


def _others(dtype):
    floats = [2.0, 0.0, -0.0, 1.0, inf, inf, nan, -3.0]
    return {"float32": floats, "float64": floats, "int64": [3, 0, -9, 2, 4, 8, 3, 0],
            "bool": [True, True, False, False] * 2}[dtype]


def _o(m, dtype):
    return m.tensor(_others(dtype), dtype=getattr(m, dtype))


def _t(m, dtype, values=None):
    return m.tensor(_values(dtype) if values is None else values, dtype=getattr(m, dtype))


DTYPES = ["float32", "float64", "int64", "bool"]
BINARY = ["logaddexp", "logaddexp2", "fmax", "fmin", "copysign", "nextafter", "ldexp", "float_power", "heaviside",
          "gcd", "lcm"]


def _binary_calls():
    calls = []
    for name in BINARY:
        for a in DTYPES:
            for b in DTYPES:
                calls.append((f"{name}-{a}-{b}",
                              lambda m, n=name, a=a, b=b: getattr(m, n)(_t(m, a), _o(m, b))))
                calls.append((f"{name}-method-{a}-{b}",
                              lambda m, n=name, a=a, b=b: getattr(_t(m, a), n)(_o(m, b))))
        for s in (2, 2.5, -0.0, True):
            calls.append((f"{name}-number-{s}", lambda m, n=name, s=s: getattr(m, n)(_t(m, "float32"), s)))
            calls.append((f"{name}-int-number-{s}", lambda m, n=name, s=s: getattr(m, n)(_t(m, "int64"), s)))
            calls.append((f"{name}-number-first-{s}", lambda m, n=name, s=s: getattr(m, n)(s, _t(m, "float32"))))
        calls.append((f"{name}-0d-float64",
                      lambda m, n=name: getattr(m, n)(_t(m, "float32"), m.tensor(2.0, dtype=m.float64))))
        calls.append((f"{name}-broadcast",
                      lambda m, n=name: getattr(m, n)(m.tensor([[1.0], [2.0]]), m.tensor([1.0, 3.0, -2.0]))))
    return calls


UNARY = ["nan_to_num", "signbit", "deg2rad", "rad2deg", "frexp", "isneginf", "isposinf", "isreal", "real", "conj",
         "conj_physical", "resolve_conj", "resolve_neg", "positive", "absolute", "is_conj", "is_neg", "imag"]


def _unary_calls():
    calls = []
    for name in UNARY:
        for a in DTYPES:
            calls.append((f"{name}-{a}", lambda m, n=name, a=a: getattr(m, n)(_t(m, a))))
            if name in ("real", "imag"):  # properties of Tensor
                calls.append((f"{name}-attr-{a}", lambda m, n=name, a=a: getattr(_t(m, a), n)))
            else:
                calls.append((f"{name}-method-{a}", lambda m, n=name, a=a: getattr(_t(m, a), n)()))
    for a in DTYPES:
        for kw in (dict(nan=1.5), dict(posinf=1e300), dict(neginf=-2, posinf=3, nan=True)):
            calls.append((f"nan_to_num-{a}-{kw}", lambda m, a=a, kw=kw: m.nan_to_num(_t(m, a), **kw)))
            calls.append((f"nan_to_num_-{a}-{kw}", lambda m, a=a, kw=kw: _t(m, a).nan_to_num_(**kw)))
        for name in ("nan_to_num_", "deg2rad_", "rad2deg_", "absolute_", "square_", "conj_physical_"):
            calls.append((f"{name}-{a}", lambda m, n=name, a=a: getattr(_t(m, a), n)()))
        for v in (1, 1.5, -0.5):
            calls.append((f"clamp_min-{a}-{v}", lambda m, a=a, v=v: m.clamp_min(_t(m, a), v)))
            calls.append((f"clamp_max-{a}-{v}", lambda m, a=a, v=v: _t(m, a).clamp_max(v)))
            calls.append((f"clamp_min_-{a}-{v}", lambda m, a=a, v=v: _t(m, a).clamp_min_(v)))
            calls.append((f"clamp_max_-{a}-{v}", lambda m, a=a, v=v: m.clamp_max_(_t(m, a), v)))
            calls.append((f"clamp_-{a}-{v}", lambda m, a=a, v=v: m.clamp_(_t(m, a), -v, v + 1)))
            calls.append((f"rsub-{a}-{v}", lambda m, a=a, v=v: m.rsub(_t(m, a), v)))
        for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
            calls.append((f"{name}-{a}", lambda m, n=name, a=a: getattr(m, n)(_t(m, a), _o(m, "float32"))))
            calls.append((f"{name}-method-{a}", lambda m, n=name, a=a: getattr(_t(m, a), n)(2)))
    return calls


IN_PLACE = ["eq_", "ne_", "ge_", "gt_", "le_", "lt_", "greater_", "greater_equal_", "less_", "less_equal_",
            "not_equal_", "logical_and_", "logical_or_", "logical_xor_", "bitwise_and_", "bitwise_or_",
            "bitwise_xor_", "multiply_", "true_divide_", "copysign_", "heaviside_", "gcd_", "lcm_", "ldexp_",
            "nextafter_", "float_power_"]


def _in_place_calls():
    calls = []
    for name in IN_PLACE:
        for a in DTYPES:
            for b in ("float32", "int64", "bool"):
                other = lambda m, b=b: _o(m, b)  # noqa: E731
                calls.append((f"{name}-{a}-{b}", lambda m, n=name, a=a, o=other: getattr(_t(m, a), n)(o(m))))
                calls.append((f"{name}-{a}-{b}-broadcast",
                              lambda m, n=name, a=a, o=other: getattr(_t(m, a).reshape(2, 4), n)(o(m)[:4])))
                if name not in ("multiply_", "true_divide_"):  # (the core's mul_ / div_ check dtypes first)
                    calls.append((f"{name}-{a}-{b}-shape",
                                  lambda m, n=name, a=a, o=other: getattr(_t(m, a)[:1], n)(o(m))))
            for s in (2, 2.5, True):
                if name in ("eq_", "lt_", "bitwise_and_", "multiply_", "true_divide_", "copysign_", "float_power_"):
                    calls.append((f"{name}-{a}-number-{s}", lambda m, n=name, a=a, s=s: getattr(_t(m, a), n)(s)))
    return calls


def _misc_calls():
    return [
        ("isin-2d", lambda m: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([[4]]))),
        ("isin-float-int", lambda m: m.isin(m.tensor([1.0, 2.5, 3.0]), m.tensor([3, 1]))),
        ("isin-int-float", lambda m: m.isin(m.tensor([1, 2, 3]), m.tensor([3.0, 1.5]), invert=True)),
        ("isin-nan", lambda m: m.isin(m.tensor([nan, 1.0, -0.0]), m.tensor([nan, 1.0, 0.0]))),
        ("isin-number-second", lambda m: m.isin(m.tensor([1, 2, 3]), 3)),
        ("isin-number-first", lambda m: m.isin(3, m.tensor([1, 2, 3]))),
        ("isin-number-first-invert", lambda m: m.isin(2.5, m.tensor([1.0, 2.0]), invert=True)),
        ("isin-empty", lambda m: m.isin(m.tensor([1, 2]), m.tensor([], dtype=m.int64))),
        ("isin-bool", lambda m: m.isin(m.tensor([True]), m.tensor([1]))),
        ("isin-numbers", lambda m: m.isin(3, 4)),
        ("frexp-float32", lambda m: m.frexp(m.tensor([8.0, 0.3, -5.0, 1e-45, 3e38, 2.0**-149, -0.0, 1 - 2.0**-24]))),
        ("frexp-float64", lambda m: m.frexp(m.tensor([8.0, 0.3, -5.0, 5e-324, 1.7e308, -0.0, 1 - 2.0**-53],
                                                    dtype=m.float64))),
        ("frexp-transposed", lambda m: m.frexp(m.tensor([[8.0, 0.3], [-5.0, 3.0]]).t())),
        ("gcd", lambda m: m.gcd(m.tensor([0, -4, 6, -(2**63), 0, 12, 7, 1071]),
                                m.tensor([0, 6, -4, 2, -(2**63), 18, 0, 462]))),
        ("lcm", lambda m: m.lcm(m.tensor([0, -4, 6, 3, 12, 2**40]), m.tensor([5, 6, -4, 7, 18, 3]))),
        ("gcd-uint8-int8", lambda m: m.gcd(m.tensor([5, 10], dtype=m.uint8), m.tensor([-2, 4], dtype=m.int8))),
        ("gcd-int32", lambda m: m.gcd(m.tensor([4, 9], dtype=m.int32), m.tensor([6, 3], dtype=m.int32))),
        ("gcd-fibonacci", lambda m: m.gcd(m.tensor([7540113804746346429]), m.tensor([4660046610375530309]))),
        ("gcd-broadcast", lambda m: m.gcd(m.tensor([[4], [9]]), m.tensor([6, 3, 12]))),
        ("heaviside", lambda m: m.heaviside(m.tensor([-1.0, 0.0, 2.0, nan, -0.0]), m.tensor([0.5]))),
        ("heaviside-number", lambda m: m.heaviside(m.tensor([1.0]), 0.5)),
        ("heaviside-method-number", lambda m: m.tensor([1.0]).heaviside(0.5)),
        ("fmax-method-number", lambda m: m.tensor([1.0]).fmax(0.5)),
        ("copysign-number-first", lambda m: m.copysign(1.0, m.tensor([1.0]))),
        ("copysign-negative-nan", lambda m: m.copysign(m.tensor([1.0, 2.0]), m.tensor([inf, -inf]) - inf)),
        ("signbit-negative-nan", lambda m: m.signbit(m.tensor([inf]) - inf)),
        ("signbit-nan", lambda m: m.signbit(-(m.tensor([inf]) - inf))),
        ("signbit-bfloat16", lambda m: m.signbit(m.tensor([-0.0, 1.0, -2.0], dtype=m.bfloat16))),
        ("signbit-float16", lambda m: m.signbit(m.tensor([-0.0, 1.0, -2.0], dtype=m.float16))),
        ("nextafter-infinities",
         lambda m: m.nextafter(m.tensor([inf, -inf, 3e38, 1.0]), m.tensor([0.0, 0.0, inf, -inf]))),
        ("nextafter-float64", lambda m: m.nextafter(m.tensor([0.0, 1.0], dtype=m.float64), m.tensor([-1.0, 2.0],
                                                                                                    dtype=m.float64))),
        ("float_power-numbers", lambda m: m.float_power(2, 3)),
        ("float_power-0d", lambda m: m.float_power(m.tensor(2), 3)),
        ("rsub-tensor", lambda m: m.rsub(m.tensor([1, 2]), m.tensor([5, 5]), alpha=2)),
        ("rsub-number-alpha", lambda m: m.rsub(m.tensor([1.0, 2.0]), 2.5, 2)),
        ("rsub-number-first", lambda m: m.rsub(2, m.tensor([1.0]))),
        ("rsub-bools", lambda m: m.rsub(m.tensor([True]), m.tensor([True]))),
        ("clamp_min-tensor", lambda m: m.clamp_min(m.tensor([1.0, 2.0, 3.0]), m.tensor([2.0, 1.0, 5.0]))),
        ("clamp_max_-tensor", lambda m: m.tensor([1.0, 2.0, 3.0]).clamp_max_(m.tensor([2.0, 1.0, 5.0]))),
        ("clamp_min-int-tensor", lambda m: m.clamp_min(m.tensor([1, 2, 3]), m.tensor([2.0, 1.5, 5.0]))),
        ("clamp_min_-int-int", lambda m: m.tensor([1, 2, 3]).clamp_min_(2)),
        ("clip_", lambda m: m.clip_(m.tensor([1.0, -3.0, 5.0]), min=0)),
        ("cumsum_", lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]).cumsum_(1)),
        ("cumsum_-dtype", lambda m: m.tensor([1, 2]).cumsum_(0, dtype=m.float32)),
        ("cumsum_-same-dtype", lambda m: m.tensor([1, 2]).cumsum_(0, dtype=m.int64)),
        ("tril_", lambda m: m.ones(3, 3).tril_(-1)),
        ("triu_", lambda m: m.ones(3, 3).triu_(diagonal=1)),
        ("addmm_", lambda m: m.ones(2, 2).addmm_(m.ones(2, 3), m.ones(3, 2), beta=2, alpha=0.5)),
        ("index_add_", lambda m: m.zeros(3).index_add_(0, m.tensor([0, 0, 2]), m.tensor([1.0, 2.0, 3.0]))),
        ("index_add_-alpha",
         lambda m: m.zeros(3).index_add_(0, m.tensor([0, 0, 2]), m.tensor([1.0, 2.0, 3.0]), alpha=2)),
        ("scatter_", lambda m: m.zeros(3).scatter_(0, m.tensor([2]), m.tensor([5.0]))),
        ("scatter_-value", lambda m: m.zeros(3).scatter_(0, m.tensor([2]), 5.0)),
        ("scatter_-reduce", lambda m: m.ones(3).scatter_(0, m.tensor([2]), 5.0, reduce="add")),
        ("scatter_add_", lambda m: m.ones(3).scatter_add_(0, m.tensor([2, 2]), m.tensor([5.0, 1.0]))),
        ("subtract_", lambda m: m.tensor([1.0, 2.0]).subtract_(m.tensor([1.0, 1.0]), alpha=3)),
        ("square_", lambda m: m.square_(m.tensor([1.0, -3.0]))),
        ("square_-bool", lambda m: m.tensor([True]).square_()),
        ("negative_", lambda m: m.negative_(m.tensor([1.0, -3.0]))),
        ("fill_", lambda m: m.fill_(m.tensor([1.0, -3.0]), 2)),
        ("fill_-tensor", lambda m: m.fill_(m.tensor([1.0, -3.0]), m.tensor(4.0))),
        ("fill_-number", lambda m: m.fill_(3, 2)),
        ("zero_", lambda m: m.zero_(m.tensor([1.0, -3.0]))),
        ("detach_", lambda m: m.detach_(m.tensor([1.0, -3.0]))),
        ("index_put_", lambda m: m.index_put_(m.tensor([1.0, -3.0, 5.0]), (m.tensor([1]),), m.tensor(9.0))),
        ("dropout-eval", lambda m: m.dropout(m.tensor([1.0, 2.0]), 0.5, False)),
        ("dropout-p1", lambda m: m.dropout(m.tensor([1.0, 2.0]), 1.0, True)),
        ("dropout_-p1", lambda m: m.dropout_(m.tensor([1.0, 2.0]), 1.0, True)),
        ("alpha_dropout-p0", lambda m: m.alpha_dropout(m.tensor([1.0, 2.0]), 0.0, True)),
        ("alpha_dropout_-p1", lambda m: m.alpha_dropout_(m.ones(2, 2), 1.0, True)),
        ("feature_dropout-p", lambda m: m.feature_dropout(m.tensor([1.0, 2.0]), 1.5, True)),
        ("feature_dropout-1d", lambda m: m.feature_dropout(m.tensor([1.0, 2.0]), 0.5, True)),
        ("feature_dropout_-p1", lambda m: m.feature_dropout_(m.ones(2, 2), 1.0, True)),
        ("feature_alpha_dropout-p1", lambda m: m.feature_alpha_dropout(m.ones(2, 2), 1.0, True)),
        ("feature_alpha_dropout_-p1", lambda m: m.feature_alpha_dropout_(m.ones(2, 2), 1.0, True)),
        ("embedding_renorm_", lambda m: m.embedding_renorm_(m.ones(3, 2), m.tensor([0, 2]), 1.0, 2.0)),
        ("embedding_renorm_-leaf",
         lambda m: m.embedding_renorm_(m.ones(3, 2, requires_grad=True), m.tensor([0]), 1.0, 2.0)),
        ("t_-1d", lambda m: m.arange(6.0).t_()),
        ("t_-2d", lambda m: m.arange(6.0).reshape(2, 3).t_()),
        ("t_-3d", lambda m: m.arange(6.0).reshape(2, 1, 3).t_()),
    ] + [
        (f"{name}{args}", lambda m, n=name, a=args: getattr(m.arange(6.0).reshape(2, 1, 3), n)(*a))
        for name, args in [("squeeze_", ()), ("squeeze_", (1,)), ("squeeze_", ((1, 2),)), ("unsqueeze_", (0,)),
                           ("unsqueeze_", (-1,)), ("transpose_", (0, 2)), ("swapaxes_", (0, 1)),
                           ("swapdims_", (2, 0)), ("squeeze_", (5,)), ("unsqueeze_", (9,))]
    ]


CALLS = _binary_calls() + _unary_calls() + _in_place_calls() + _misc_calls()


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in CALLS])
def test_matches_torch(fn):
    torch = pytest.importorskip("torch")
    _assert_same(_outcome(fg, fn), _outcome(torch, fn))


# --- without PyTorch: expected values


def test_logaddexp_values():
    a = fg.tensor([0.0, inf, -inf, 1000.0, -1000.0, inf, nan], dtype=fg.float64)
    b = fg.tensor([0.0, inf, -inf, 1000.0, 1.0, -inf, 1.0], dtype=fg.float64)
    np.testing.assert_array_equal(_np(fg.logaddexp(a, b)), [math.log(2), inf, -inf, 1000 + math.log(2), 1.0, inf, nan])
    np.testing.assert_allclose(_np(fg.logaddexp2(a, b))[[0, 3]], [1.0, 1001.0])
    with pytest.raises(NotImplementedError, match="\"logaddexp_cpu\" not implemented for 'Long'"):
        fg.logaddexp(fg.tensor([1]), fg.tensor([2]))
    with pytest.raises(TypeError, match=r"logaddexp\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        fg.logaddexp(a, 1.0)


def test_logaddexp_gradients_at_ties_and_infinities():
    a = fg.tensor([1.0, inf, -inf, 2.0], dtype=fg.float64, requires_grad=True)
    b = fg.tensor([1.0, 1.0, 1.0, inf], dtype=fg.float64, requires_grad=True)
    ga, gb = fg.autograd.grad(fg.logaddexp(a, b).sum(), [a, b])
    np.testing.assert_array_equal(_np(ga), [0.5, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(_np(gb), [0.5, 0.0, 1.0, 1.0])
    # both the same infinity: NaN, as PyTorch's 1 / (1 + exp(inf - inf))
    c = fg.tensor([inf], requires_grad=True)
    assert math.isnan(fg.autograd.grad(fg.logaddexp(c, c.detach()).sum(), c)[0].item())


def test_fmax_fmin_nan_and_ties():
    a = fg.tensor([1.0, nan, nan, 2.0, 3.0], requires_grad=True)
    b = fg.tensor([nan, 1.0, nan, 2.0, 1.0], requires_grad=True)
    out = fg.fmax(a, b)
    np.testing.assert_array_equal(_np(out), [1.0, 1.0, nan, 2.0, 3.0])
    ga, gb = fg.autograd.grad(out.sum(), [a, b])
    np.testing.assert_array_equal(_np(ga), [1, 0, 1, 1, 1])  # ties and two NaNs: input's
    np.testing.assert_array_equal(_np(gb), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(_np(fg.fmin(a, b)), [1.0, 1.0, nan, 2.0, 1.0])
    assert fg.fmax(fg.tensor([1, 5]), fg.tensor([3, 2])).tolist() == [3, 5]


def test_nan_to_num_values_and_gradient():
    x = fg.tensor([nan, inf, -inf, 1.5], dtype=fg.float64, requires_grad=True)
    out = fg.nan_to_num(x)
    assert out.tolist() == [0.0, np.finfo(np.float64).max, np.finfo(np.float64).min, 1.5]
    assert fg.nan_to_num(x.float(), posinf=1e300).tolist()[1] == inf  # float32 overflows as PyTorch
    assert fg.autograd.grad(out.sum(), x)[0].tolist() == [0.0, 0.0, 0.0, 1.0]
    i = fg.tensor([1, 2])
    assert fg.nan_to_num(i, nan=2.5).tolist() == [1, 2] and i.nan_to_num_() is i


def test_copysign_values_and_gradient():
    x = fg.tensor([1.0, -2.0, 0.0, -0.0, 3.0], requires_grad=True)
    y = fg.tensor([-0.0, 0.0, -1.0, 1.0, nan], requires_grad=True)
    out = fg.copysign(x, y)
    np.testing.assert_array_equal(np.signbit(_np(out)), [True, False, True, False, False])
    assert out.grad_fn.name() == "CopysignBackward0"
    gx, gy = fg.autograd.grad(out.sum(), [x, y])
    assert gx.tolist() == [-1.0, -1.0, 0.0, 0.0, 1.0] and gy.tolist() == [0.0] * 5
    assert fg.copysign(fg.tensor([1, 2]), -1).tolist() == [-1.0, -2.0]
    assert fg.copysign(x, -0.0).grad_fn.name() == "CopysignBackward1"


def test_signbit_and_predicates():
    x = fg.tensor([-0.0, 0.0, -1.0, inf, -inf, nan])
    assert fg.signbit(x).tolist() == [True, False, True, False, True, False]
    assert fg.signbit(-x[-1:]).tolist() == [True]  # a negative NaN
    assert fg.isposinf(x).tolist() == [False, False, False, True, False, False]
    assert fg.isneginf(x).tolist() == [False, False, False, False, True, False]
    assert fg.isreal(x).tolist() == [True] * 6
    assert fg.signbit(fg.tensor([-3, 0, 2])).tolist() == [True, False, False]


def test_gcd_lcm_values():
    a, b = fg.tensor([0, -4, 6, 12, 1071, 7]), fg.tensor([0, 6, -4, 18, 462, 0])
    assert fg.gcd(a, b).tolist() == [math.gcd(int(p), int(q)) for p, q in zip(a.tolist(), b.tolist())]
    assert fg.lcm(a, b).tolist() == [0, 12, 12, 36, 23562, 0]
    x = fg.tensor([4, 9])
    assert x.gcd_(fg.tensor([6, 6])) is x and x.tolist() == [2, 3]
    with pytest.raises(NotImplementedError, match="\"gcd_cpu\" not implemented for 'Float'"):
        fg.gcd(fg.tensor([1.0]), fg.tensor([2]))


def test_heaviside_is_not_differentiable():
    x = fg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    out = fg.heaviside(x, fg.tensor([0.5]))
    assert out.tolist() == [0.0, 0.5, 1.0] and out.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        out.sum().backward()


def test_frexp():
    x = fg.tensor([8.0, 0.3, -5.0, 0.0, inf, 1e-45], requires_grad=True)
    r = fg.frexp(x)
    m, e = np.frexp(np.array([8.0, 0.3, -5.0, 0.0, inf, 1e-45], dtype=np.float32))
    np.testing.assert_array_equal(_np(r.mantissa), m)
    assert r.exponent.dtype == fg.int32 and r.exponent.tolist() == e.tolist()
    g = fg.autograd.grad(r.mantissa.sum(), x)[0]
    np.testing.assert_allclose(_np(g), np.exp2(-e.astype(np.float64)).astype(np.float32))
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        fg.frexp(fg.tensor([1]))


def test_nextafter_values_and_gradient():
    x = fg.tensor([1.0, 0.0, inf, 2.0], dtype=fg.float64, requires_grad=True)
    y = fg.tensor([2.0, -1.0, 0.0, 2.0], dtype=fg.float64, requires_grad=True)
    out = fg.nextafter(x, y)
    np.testing.assert_array_equal(_np(out), np.nextafter([1.0, 0.0, inf, 2.0], [2.0, -1.0, 0.0, 2.0]))
    gx, gy = fg.autograd.grad(out.sum(), [x, y])
    assert gx.tolist() == [1.0, 1.0, 1.0, 0.0] and gy.tolist() == [0.0] * 4


def test_float_power_computes_in_float64():
    x = fg.tensor([1.5, 2.0], requires_grad=True)
    out = fg.float_power(x, 2)
    assert out.dtype == fg.float64 and out.tolist() == [2.25, 4.0]
    (g,) = fg.autograd.grad(out.sum(), x)
    assert g.dtype == fg.float32 and g.tolist() == [3.0, 4.0]
    assert fg.float_power(2, fg.tensor([3])).tolist() == [8.0]
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result requires dtype Double"):
        fg.tensor([1.0]).float_power_(2)
    d = fg.tensor([3.0], dtype=fg.float64)
    assert d.float_power_(2) is d and d.tolist() == [9.0]
    a = fg.tensor([1.5, 2.5], dtype=fg.float64, requires_grad=True)
    b = fg.tensor([0.5, 2.0], dtype=fg.float64, requires_grad=True)
    assert gradcheck(fg.float_power, (a, b)) and gradgradcheck(fg.float_power, (a, b))


def test_ldexp_gradient_with_negative_integer_exponents():
    # the true derivative 2**other; PyTorch 2.13 computes 2**other in the integer dtype (0 here)
    x = fg.tensor([3.0, 3.0], requires_grad=True)
    out = fg.ldexp(x, fg.tensor([-1, 2]))
    assert out.tolist() == [1.5, 12.0]
    assert fg.autograd.grad(out.sum(), x)[0].tolist() == [0.5, 4.0]
    with pytest.raises(RuntimeError, match="ldexp can't be cast to the desired output type Long"):
        fg.tensor([1]).ldexp_(fg.tensor([1]))


def test_isin():
    x = fg.tensor([[1, 2], [3, 4]])
    assert fg.isin(x, fg.tensor([4, 1, 1])).tolist() == [[True, False], [False, True]]
    assert fg.isin(x, fg.tensor([4, 1]), invert=True).tolist() == [[False, True], [True, False]]
    assert fg.isin(x, 3).tolist() == [[False, False], [True, False]]
    assert fg.isin(3, x).item() is True
    assert fg.isin(fg.tensor([nan, 1.0]), fg.tensor([nan, 1.0])).tolist() == [False, True]
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        fg.isin(fg.tensor([True]), fg.tensor([1]))


def test_complex_functions_on_real_tensors():
    x = fg.tensor([1.0, -2.0], requires_grad=True)
    for f in (fg.real, fg.conj, fg.conj_physical, fg.resolve_conj, fg.resolve_neg, fg.positive):
        assert f(x) is x
    assert x.real is x and x.conj() is x and x.positive() is x
    assert not fg.is_conj(x) and not x.is_neg()
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag  # noqa: B018
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported"):
        fg.positive(fg.tensor([True]))


def test_aliases():
    a, b = fg.tensor([1.0, 2.0, 3.0]), fg.tensor([2.0, 2.0, 2.0])
    assert fg.greater(a, b).tolist() == [False, False, True] and fg.less(a, b).tolist() == [True, False, False]
    assert fg.greater_equal(a, b).tolist() == a.greater_equal(b).tolist() == [False, True, True]
    assert fg.less_equal(a, 2).tolist() == a.less_equal(2).tolist() == [True, True, False]
    assert fg.not_equal(a, b).tolist() == a.not_equal(b).tolist() == [True, False, True]
    assert fg.absolute(fg.tensor([-1, 2])).tolist() == [1, 2]
    assert fg.rsub(a, 10).tolist() == [9.0, 8.0, 7.0] and fg.rsub(a, b, alpha=2).tolist() == [0.0, -2.0, -4.0]
    assert fg.clamp_min(a, 2.5).tolist() == [2.5, 2.5, 3.0] and a.clamp_max(1.5).tolist() == [1.0, 1.5, 1.5]


def test_in_place_comparisons_and_bitwise():
    x = fg.tensor([1.0, 2.0, 3.0])
    assert x.eq_(2) is x and x.tolist() == [0.0, 1.0, 0.0]
    i = fg.tensor([1, 2, 3])
    assert i.lt_(2.5).tolist() == [1, 1, 0] and i.dtype == fg.int64
    assert fg.tensor([6, 5]).bitwise_and_(3).tolist() == [2, 1]
    assert fg.tensor([True, False]).logical_or_(fg.tensor([False, False])).tolist() == [True, False]
    with pytest.raises(RuntimeError, match=r"output with shape \[1\] doesn't match the broadcast shape \[3\]"):
        fg.ones(1).ge_(fg.ones(3))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        fg.tensor([1]).bitwise_or_(2.5)


def test_in_place_forms_record_gradients():
    w = fg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = w * 1
    assert y.cumsum_(1) is y
    y.sum().backward()
    assert w.grad.tolist() == [[2.0, 1.0], [2.0, 1.0]]
    w.grad = None
    y = w * 1
    y.tril_().sum().backward()
    assert w.grad.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    x = fg.tensor([1.0, -2.0], requires_grad=True)
    y = x * 1
    y.clamp_min_(0.0).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0]
    x.grad = None
    y = x * 1
    y.eq_(1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.copysign_(-1.0)


def test_cumsum_in_place_dtype_error():
    with pytest.raises(RuntimeError, match="input tensor dtype long int and output tensor dtype float should match"):
        fg.tensor([1, 2]).cumsum_(0, dtype=fg.float32)


def test_in_place_shape_ops_change_the_tensor():
    x = fg.arange(6.0).reshape(2, 1, 3)
    v = x.view(6)
    assert x.squeeze_(1) is x and tuple(x.shape) == (2, 3)
    x.t_()
    assert tuple(x.shape) == (3, 2) and x.stride() == (1, 3)
    x.fill_(1.0)  # still the same memory
    assert v.tolist() == [1.0] * 6
    x.unsqueeze_(0).transpose_(0, 2)
    assert tuple(x.shape) == (2, 3, 1)
    x.swapdims_(0, 1).swapaxes_(1, 2)
    assert tuple(x.shape) == (3, 1, 2)


def test_in_place_shape_ops_record_their_nodes():
    a = fg.arange(6.0).reshape(2, 1, 3).requires_grad_()
    y = a * 2
    y.squeeze_(1)
    assert y.grad_fn.name() == "SqueezeBackward4" and y._version == 1
    y.t_()
    assert y.grad_fn.name() == "TBackward1"
    (y * fg.arange(6.0).reshape(3, 2)).sum().backward()
    assert a.grad.tolist() == [[[0.0, 4.0, 8.0]], [[2.0, 6.0, 10.0]]]
    y = (a * 2).squeeze_(1).t_()
    (g,) = fg.autograd.grad((y**2).sum(), a, create_graph=True)
    assert g.tolist() == (8 * a).tolist()
    assert fg.autograd.grad(g.sum(), a)[0].tolist() == [[[8.0] * 3]] * 2
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.squeeze_()
    with pytest.raises(NotImplementedError, match="transpose_"):
        (a * 1)[0].transpose_(0, 1)
    with fg.no_grad():
        assert tuple(a.squeeze_().shape) == (2, 3)


def test_dropout_functions():
    fg.manual_seed(0)
    x = fg.ones(1000)
    out = fg.dropout(x, 0.25, True)
    kept = _np(out) != 0
    assert 600 < kept.sum() < 900 and np.allclose(_np(out)[kept], 1 / 0.75)
    assert fg.dropout(x, 0.25, False) is x
    y = fg.ones(4, 50, 20)
    assert fg.feature_dropout_(y, 0.5, True) is y
    channels = _np(y).reshape(200, 20)
    assert (channels == channels[:, :1]).all() and 0 < (channels[:, 0] == 0).sum() < 200  # whole channels
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        fg.alpha_dropout(x, 1.5, True)


def test_embedding_renorm_():
    w = fg.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    assert fg.embedding_renorm_(w, fg.tensor([0, 1]), 1.0, 2.0) is w
    np.testing.assert_allclose(_np(w), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)


def test_torch_level_in_place_functions():
    x = fg.tensor([1.0, -3.0, 5.0])
    assert fg.clamp_(x, -1, 2) is x and x.tolist() == [1.0, -1.0, 2.0]
    assert fg.square_(x).tolist() == [1.0, 1.0, 4.0]
    assert fg.negative_(x).tolist() == [-1.0, -1.0, -4.0]
    assert fg.fill_(x, 2).tolist() == [2.0] * 3 and fg.zero_(x).tolist() == [0.0] * 3
    assert fg.index_put_(x, (fg.tensor([1]),), fg.tensor(9.0)).tolist() == [0.0, 9.0, 0.0]
    i = fg.tensor([1, 5])
    assert fg.clamp_max_(i, 3) is i and i.tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type long int"):
        fg.clamp_min_(i, 1.5)
    with pytest.raises(TypeError, match="fill_\\(\\) received an invalid combination of arguments"):
        fg.fill_(3, 2)
