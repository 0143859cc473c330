"""The kernel engine (issue 11): what it must keep true besides speed.

* elementwise outputs take PyTorch's layout (TensorIterator's dim order), reductions return
  contiguous results, and AccumulateGrad keeps or copies gradients as PyTorch does;
* the vectorised math stays within its stated error;
* fused kernels (activation and softmax backward, clamp, LSTM / GRU cells) agree with the
  composite formulas and stay differentiable (gradcheck and gradgradcheck in float64);
* transposed, broadcast and sliced operands give the values of their contiguous copies.
"""

import math

import numpy as np
import pytest

import ferrograd as T

try:
    import torch
except ImportError:  # comparisons against PyTorch skip; the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(11)

A = RNG.standard_normal((3, 4)).astype(np.float32)
C = RNG.standard_normal((4, 1)).astype(np.float32)
D = RNG.standard_normal((4, 3)).astype(np.float32)
B3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)

LAYOUT_CASES = {
    "transposed unary": lambda L, x, c, d, y: x.t().exp(),
    "transposed times scalar": lambda L, x, c, d, y: x.t() * 2,
    "two transposed": lambda L, x, c, d, y: x.t() + x.t(),
    "transposed first": lambda L, x, c, d, y: x.t() + d,
    "contiguous first": lambda L, x, c, d, y: d + x.t(),
    "broadcast column": lambda L, x, c, d, y: x.t() * c,
    "broadcast first": lambda L, x, c, d, y: c * x.t(),
    "sliced": lambda L, x, c, d, y: x[:, ::2].exp(),
    "permuted": lambda L, x, c, d, y: y.permute(2, 0, 1).sin(),
    "permuted pair": lambda L, x, c, d, y: y.permute(1, 2, 0) * y.permute(1, 2, 0),
    "where": lambda L, x, c, d, y: L.where(x.t() > 0, x.t(), 0.0),
    "clamp": lambda L, x, c, d, y: x.t().clamp(0, 1),
    "cast": lambda L, x, c, d, y: x.t().double(),
    "comparison": lambda L, x, c, d, y: x.t() > 0,
    "gelu": lambda L, x, c, d, y: L.nn.functional.gelu(x.t()),
    "masked_fill is contiguous": lambda L, x, c, d, y: x.t().masked_fill(x.t() > 0, 0),
    "reduction is contiguous": lambda L, x, c, d, y: y.permute(2, 0, 1).sum(1),
    "keepdim reduction": lambda L, x, c, d, y: y.transpose(0, 2).amax(0, keepdim=True),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_output_layout_and_values_match_pytorch(case):
    f = LAYOUT_CASES[case]
    ours = f(T, T.tensor(A), T.tensor(C), T.tensor(D), T.tensor(B3))
    theirs = f(torch, torch.tensor(A), torch.tensor(C), torch.tensor(D), torch.tensor(B3))
    assert tuple(ours.shape) == tuple(theirs.shape)
    # strides of size-1 dims are free in PyTorch too
    def stride(t):
        return [s for s, n in zip(t.stride(), t.shape) if n != 1]

    assert stride(ours) == stride(theirs)
    assert ours.is_contiguous() == theirs.is_contiguous()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


GRAD_CASES = {
    "view of the output gradient is kept":
        (lambda L: L.tensor(A, requires_grad=True), lambda x: x.unsqueeze(0), (1, 3, 4)),
    "transposed gradient of a contiguous leaf is copied":
        (lambda L: L.tensor(A, requires_grad=True), lambda x: x.t(), (4, 3)),
    "transposed leaf keeps its layout": (lambda L: L.tensor(A).t().detach().requires_grad_(), lambda x: x.t(), (3, 4)),
    "kernel output is kept": (lambda L: L.tensor(A, requires_grad=True), lambda x: x.exp(), (3, 4)),
    "the given gradient itself is copied": (lambda L: L.tensor(A, requires_grad=True), lambda x: x, (3, 4)),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_accumulate_grad_keeps_or_copies_like_pytorch(case):
    make, op, gshape = GRAD_CASES[case]
    g = RNG.standard_normal(gshape).astype(np.float32)
    seen, grads = [], []
    for L in (T, torch):
        x = make(L)
        G = L.tensor(g)
        op(x).backward(G)
        seen.append((x.grad.stride(), x.grad.data_ptr() == G.data_ptr()))
        op(x).backward(G)  # accumulates in place, into what .grad holds
        grads.append((np.array(x.grad.tolist()), np.array(G.tolist())))
    assert seen[0] == seen[1]
    for ours, theirs in zip(grads[0], grads[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def ulps32(got, want):
    """Error in units of the last place of the float32 result."""
    want32 = np.abs(want.astype(np.float32)).astype(np.float64)
    ulp = np.maximum(want32, np.finfo(np.float32).tiny) * np.finfo(np.float32).eps
    return np.abs(got.astype(np.float64) - want) / ulp


@pytest.mark.parametrize(
    "name, ref, lo, hi, bound",
    [
        ("exp", np.exp, -80.0, 80.0, 4),
        ("log", np.log, 1e-30, 1e30, 2),
        ("log1p", np.log1p, -0.999, 100.0, 3),
        ("erf", np.vectorize(math.erf), -5.0, 5.0, 4),
        ("sin", np.sin, -3.0, 3.0, 2),
        ("cos", np.cos, -1.4, 1.4, 2),
        ("tanh", np.tanh, -9.0, 9.0, 3),
        ("sigmoid", lambda v: 1.0 / (1.0 + np.exp(-v)), -30.0, 30.0, 4),
        # src/kernels/math.rs (Cephes' single-precision polynomials, vectorised)
        ("tan", np.tan, -1.5, 1.5, 4),
        ("atan", np.arctan, -1e4, 1e4, 2),
        ("atan", np.arctan, -3.0, 3.0, 2),
        ("asin", np.arcsin, -1.0, 1.0, 3),
        ("acos", np.arccos, -1.0, 1.0, 2),
        ("sinh", np.sinh, -89.0, 89.0, 4),
        ("sinh", np.sinh, -1.5, 1.5, 3),
        ("cosh", np.cosh, -89.0, 89.0, 4),
        ("asinh", np.arcsinh, -1e5, 1e5, 3),
        ("asinh", np.arcsinh, -2.0, 2.0, 3),
        ("acosh", np.arccosh, 1.0, 1e5, 3),
        ("acosh", np.arccosh, 1.0, 3.0, 3),
        ("atanh", np.arctanh, -0.999, 0.999, 3),
        ("log2", np.log2, 1e-30, 1e30, 2),
        ("log10", np.log10, 1e-30, 1e30, 2),
        ("exp2", np.exp2, -126.0, 127.0, 2),
        ("expm1", np.expm1, -20.0, 20.0, 4),
        # erfcx as a fitted polynomial times exp(-x^2) with x^2 split exactly, in float32
        # (src/kernels/math.rs, erfc_f32: 2.0 ulp on every float32 in [-10.2, 10.2])
        ("erfc", np.vectorize(math.erfc), -4.0, 9.0, 2),
        ("erfc", np.vectorize(math.erfc), -10.0, 10.2, 2),
        ("erfc", np.vectorize(math.erfc), -0.01, 0.01, 2),
        # Giles' single-precision erfinv; the reference is ferrograd's float64 erfinv (two Newton
        # steps on erf), checked against math.erf below
        ("erfinv", lambda v: T.tensor(v).erfinv().numpy(), -0.999999, 0.999999, 3),
    ],
)
def test_float32_vector_math_is_within_its_bound(name, ref, lo, hi, bound):
    x = np.linspace(lo, hi, 100_003).astype(np.float32)
    got = getattr(T.tensor(x), name)().numpy()
    want = ref(x.astype(np.float64))
    assert ulps32(got, want).max() <= bound


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_float32_trig_is_one_function_in_every_layout(name):
    # contiguous runs reduce in float32 when a vector's lanes are all within 128, strided
    # ones select per element (src/kernels/simd.rs, reduce_pio2_f32): the same bits either way
    rng = np.random.default_rng(5)
    x = rng.uniform(-130, 130, (64, 257)).astype(np.float32)
    x[::7, ::3] *= np.float32(1e4)
    x[5, :4] = [np.inf, -np.inf, np.nan, 128.0]
    base = T.tensor(x)
    contiguous = getattr(base, name)().numpy()
    strided = getattr(T.tensor(np.repeat(x, 2, axis=1))[:, ::2], name)().numpy()
    assert np.array_equal(contiguous.view(np.uint32)[~np.isnan(contiguous)],
                          strided.view(np.uint32)[~np.isnan(contiguous)])
    assert np.array_equal(np.isnan(contiguous), np.isnan(strided))
    with np.errstate(invalid="ignore"):
        want = getattr(np, name)(x.astype(np.float64))
    finite = np.isfinite(x) & (np.abs(x) < 1e5)
    assert ulps32(contiguous[finite], want[finite]).max() <= 4


def test_float32_pow_is_within_half_an_ulp_and_follows_c99():
    # src/kernels/math.rs pow_f32: 2^(b log2 |a|) in float64, C99's special cases as selects
    rng = np.random.default_rng(3)
    a = (10.0 ** rng.uniform(-6, 6, 100_000)).astype(np.float32)
    b = rng.uniform(-12, 12, 100_000).astype(np.float32)
    want = np.power(a.astype(np.float64), b.astype(np.float64))
    got = T.pow(T.tensor(a), T.tensor(b)).numpy()
    ok = (np.abs(want) < 3e38) & (np.abs(want) > 1e-37)
    assert ulps32(got[ok], want[ok]).max() <= 0.501
    # negative bases to integer powers, and C99's special values (numpy's float64 power follows
    # C99; its float32 power is less accurate than this kernel)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf,
                         np.nan, 1e-40, -1e-40, 1e30, -1e30, 2.5, -2.5, 16777217.0], np.float32)
    sa, sb = (v.ravel() for v in np.meshgrid(specials, specials))
    with np.errstate(all="ignore"):
        want = np.power(sa.astype(np.float64), sb.astype(np.float64)).astype(np.float32)
    got = T.pow(T.tensor(sa), T.tensor(sb)).numpy()
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("e", [2.0, 3.0, -2.0, -1.0, 0.5, -0.5, 1.0, 0.0, 1.7])
def test_pow_by_a_constant_takes_pytorchs_special_forms(e):
    # 2, 3, -2 as products, 0.5 / -0.5 / -1 as sqrt / 1 / sqrt / reciprocal (PyTorch's kernels)
    x = np.concatenate([np.linspace(-30, 30, 1001), [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    forms = {2.0: lambda v: v * v, 3.0: lambda v: v * v * v, -2.0: lambda v: 1 / (v * v),
             -1.0: lambda v: 1 / v, 0.5: np.sqrt, -0.5: lambda v: 1 / np.sqrt(v),
             1.0: lambda v: v, 0.0: lambda v: np.ones_like(v)}
    with np.errstate(all="ignore"):
        want = forms.get(e, lambda v: np.power(v.astype(np.float64), float(np.float32(e))).astype(np.float32))(x)
    for got in (T.tensor(x).pow(e).numpy(), T.tensor(x).pow_(e).numpy(), (T.tensor(x) ** e).numpy()):
        if e in forms:
            assert np.array_equal(got, want, equal_nan=True)
        else:
            assert np.allclose(got, want, rtol=1.2e-7, atol=0, equal_nan=True)


@pytest.mark.parametrize("name, ref", [("fmod", np.fmod), ("remainder", np.remainder),
                                       ("floor_divide", np.floor_divide)])
def test_float32_fmod_ops_are_exact_for_every_quotient(name, ref):
    # quotients below 2^27 take a vectorised exact form (src/ops/binary.rs, `Small`), other
    # tensors C's fmod: both must give numpy's bits (numpy computes these in float32 with fmod)
    rng = np.random.default_rng(7)
    # |a| <= 1e6 and |b| >= 0.01: every quotient below 1e8 < 2^27, the vectorised form
    b = (rng.choice([-1, 1], 20_000) * 10.0 ** rng.uniform(-2, 2, 20_000)).astype(np.float32)
    small = np.concatenate([rng.uniform(-1e6, 1e6, 19_000), rng.uniform(-1, 1, 1000)]).astype(np.float32)
    mixed = small.copy()
    mixed[::97] *= np.float32(1e12)  # quotients far beyond 2^27: C's fmod for this tensor
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, -3.0, 1e-30], np.float32)
    sa, sb = (v.ravel() for v in np.meshgrid(specials, specials))
    for a, d in [(small, b), (mixed, b), (np.tile(sa, 20), np.tile(sb, 20))]:
        with np.errstate(all="ignore"):
            want = ref(a, d)
        x = T.tensor(a)
        getattr(x, name + "_")(T.tensor(d))
        for got in (getattr(T, name)(T.tensor(a), T.tensor(d)).numpy(), x.numpy()):
            assert np.array_equal(got, want, equal_nan=True)
            if name != "remainder":  # numpy's remainder gives a zero the divisor's sign, PyTorch's fmod's
                assert np.array_equal(np.signbit(got), np.signbit(want))


def ulps64(got, want):
    ulp = np.maximum(np.abs(want), np.finfo(np.float64).tiny) * np.finfo(np.float64).eps
    return np.abs(got - want) / ulp


@pytest.mark.parametrize(
    "name, ref, lo, hi",
    [
        ("exp", np.exp, -700.0, 700.0),
        ("expm1", np.expm1, -40.0, 40.0),
        ("exp2", np.exp2, -1000.0, 1000.0),
        ("log", np.log, 1e-300, 1e300),
        ("log1p", np.log1p, -0.999, 1e10),
        ("log2", np.log2, 1e-300, 1e300),
        ("log10", np.log10, 1e-300, 1e300),
        ("tanh", np.tanh, -20.0, 20.0),
        ("sigmoid", lambda v: 1.0 / (1.0 + np.exp(-v)), -30.0, 30.0),
        ("erf", np.vectorize(math.erf), -6.0, 6.0),
        ("erfc", np.vectorize(math.erfc), -5.0, 26.0),
        ("atan", np.arctan, -1e6, 1e6),
        ("asin", np.arcsin, -1.0, 1.0),
        ("acos", np.arccos, -1.0, 1.0),
        ("sinh", np.sinh, -700.0, 700.0),
        ("cosh", np.cosh, -700.0, 700.0),
        ("asinh", np.arcsinh, -1e8, 1e8),
        ("acosh", np.arccosh, 1.0, 1e8),
        ("atanh", np.arctanh, -0.999999, 0.999999),
    ],
)
def test_float64_vector_math_is_within_4_ulp(name, ref, lo, hi):
    # vmath64's branch-free functions (1-2 ulp against mpmath); the references (numpy's libm,
    # math.erf) have errors of their own up to ~2 ulp
    x = np.concatenate([np.linspace(lo, hi, 50_001), np.linspace(lo / 1e3, hi / 1e3, 50_001)])
    x = x[(x >= lo) & (x <= hi)]
    got = getattr(T.tensor(x), name)().numpy()
    want = ref(x)
    ok = np.isfinite(want)
    assert ulps64(got[ok], want[ok]).max() <= 4
    np.testing.assert_array_equal(got[~ok], want[~ok])


def test_float64_erfinv_inverts_erf():
    x = np.linspace(-0.999999, 0.999999, 20_001)
    y = T.tensor(x).erfinv().numpy()
    assert np.abs(np.vectorize(math.erf)(y) - x).max() <= 4 * np.finfo(np.float64).eps


def test_special_values_of_the_math_kernels():
    inf, nan = math.inf, math.nan
    # atan2 at signed zeros and infinities, float32 (vectorised) and float64, as numpy
    ys = np.array([0.0, -0.0, 0.0, -0.0, inf, -inf, inf, -inf, 1.0, -1.0, nan, 1.0])
    xs = np.array([0.0, 0.0, -0.0, -0.0, inf, inf, -inf, -inf, 0.0, -0.0, 1.0, nan])
    for dt in (np.float32, np.float64):
        got = T.atan2(T.tensor(ys.astype(dt)), T.tensor(xs.astype(dt))).numpy()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.arctan2(ys, xs)))
        np.testing.assert_allclose(got, np.arctan2(ys, xs).astype(dt), rtol=1e-6)
        hyp = T.hypot(T.tensor(np.array([inf, 3.0], dtype=dt)), T.tensor(np.array([nan, 4.0], dtype=dt)))
        assert hyp.tolist() == [inf, 5.0]
    f = lambda name, vals: getattr(T.tensor(np.array(vals, dtype=np.float32)), name)().tolist()  # noqa: E731
    assert f("exp2", [-200.0, 200.0, 0.0, 3.0, -inf, inf]) == [0.0, inf, 1.0, 8.0, 0.0, inf]
    assert all(math.isnan(v) for v in f("asin", [1.5, -2.0, nan])) and f("asin", [1.0]) == [np.float32(math.pi / 2)]
    assert math.isnan(f("acosh", [0.5])[0]) and f("acosh", [1.0]) == [0.0]
    assert f("atanh", [1.0, -1.0]) == [inf, -inf]
    assert f("sinh", [inf, -inf, 0.0]) == [inf, -inf, 0.0] and f("cosh", [-inf]) == [inf]
    assert f("atan", [inf, -inf]) == [np.float32(math.pi / 2), -np.float32(math.pi / 2)]
    assert f("log2", [0.0, 8.0]) == [-inf, 3.0] and f("log10", [1000.0])[0] == np.float32(3.0)
    assert f("erfinv", [1.0, -1.0, 0.0]) == [inf, -inf, 0.0] and math.isnan(f("erfinv", [1.5])[0])
    assert f("lgamma", [1.0, 2.0])[0] == 0.0 and f("digamma", [0.0]) == [-inf]
    assert math.isnan(f("digamma", [-2.0])[0])


def test_sin_and_cos_of_large_arguments_stay_accurate():
    x = np.linspace(-1e4, 1e4, 50_001).astype(np.float32)
    for name in ("sin", "cos"):
        got = getattr(T.tensor(x), name)().numpy().astype(np.float64)
        assert np.abs(got - getattr(np, name)(x.astype(np.float64))).max() <= 2 * np.finfo(np.float32).eps


def test_special_values_of_the_vector_math():
    inf, nan = math.inf, math.nan
    logs = T.tensor([0.0, -1.0, inf, nan]).log().tolist()
    assert logs[0] == -inf and math.isnan(logs[1]) and logs[2] == inf and math.isnan(logs[3])
    tiny = T.tensor([1e-30]).tolist()[0]  # 1e-30 in float32
    assert T.tensor([-1.0, tiny]).log1p().tolist() == [-inf, tiny]
    assert T.tensor([10.0, -10.0]).erf().tolist() == [1.0, -1.0]
    assert all(math.isnan(v) for v in T.tensor([inf, -inf, nan]).sin().tolist())


FUSED = ["silu", "sigmoid", "tanh", "erf", "sin", "cos", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "exp"]


@pytest.mark.parametrize(
    "name, approximate", [("gelu", "none"), ("gelu", "tanh")] + [(n, None) for n in FUSED]
)
def test_fused_backward_is_differentiable(name, approximate):
    x = T.tensor(RNG.uniform(0.3, 2.0, (3, 4)), dtype=T.float64, requires_grad=True)
    if name == "gelu":
        def f(v):
            return T.nn.functional.gelu(v, approximate=approximate)
    elif name == "silu":
        f = T.nn.functional.silu
    else:
        def f(v):
            return getattr(v, name)()
    assert T.autograd.gradcheck(f, (x,))
    assert T.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_in_every_layout_is_differentiable(dim, log):
    f = (lambda v: T.log_softmax(v, dim)) if log else (lambda v: T.softmax(v, dim))
    x = T.tensor(RNG.standard_normal((3, 4, 5)), dtype=T.float64, requires_grad=True)
    assert T.autograd.gradcheck(f, (x,))
    assert T.autograd.gradgradcheck(f, (x,))
    xt = T.tensor(RNG.standard_normal((5, 4)), dtype=T.float64).t().detach().requires_grad_()
    f2 = (lambda v: T.log_softmax(v, min(dim, 1))) if log else (lambda v: T.softmax(v, min(dim, 1)))
    assert T.autograd.gradcheck(f2, (xt,))


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_of_infinities_and_nan_matches_pytorch(dim):
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    a[0, 0, :] = -math.inf
    a[1, :, 0] = math.inf
    a[2, 1, 1] = math.nan
    for name in ("softmax", "log_softmax"):
        ours = getattr(T, name)(T.tensor(a), dim).numpy()
        theirs = getattr(torch, name)(torch.tensor(a), dim).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_clamp_is_one_pass_with_pytorch_rules():
    x = T.tensor([-2.0, 0.5, math.nan, 3.0])
    assert x.clamp(2, 1).tolist()[:2] == [1.0, 1.0]  # lo > hi: every value is hi
    assert math.isnan(x.clamp(-1, 1).tolist()[2])
    v = T.tensor([-2.0, 0.5, 1.0, 3.0], dtype=T.float64, requires_grad=True)
    v.clamp(-1, 1).sum().backward()
    assert v.grad.tolist() == [0.0, 1.0, 1.0, 0.0]
    w = T.tensor([-0.5, 0.5, 2.0], dtype=T.float64, requires_grad=True)
    assert T.autograd.gradgradcheck(lambda t: t.clamp(-1, 1) * t, (w,))


def test_fused_recurrent_cells_pass_gradcheck():
    g = T.randn(3, 8, dtype=T.float64, requires_grad=True)
    c = T.randn(3, 2, dtype=T.float64, requires_grad=True)
    def lstm(a, b):
        return T._core._lstm_cell(a, b)

    assert T.autograd.gradcheck(lstm, (g, c))
    assert T.autograd.gradgradcheck(lstm, (g, c))
    gi, gh = (T.randn(3, 6, dtype=T.float64, requires_grad=True) for _ in range(2))
    h = T.randn(3, 2, dtype=T.float64, requires_grad=True)
    def gru(a, b, s):
        return T._core._gru_cell(a, b, s)

    assert T.autograd.gradcheck(gru, (gi, gh, h))
    assert T.autograd.gradgradcheck(gru, (gi, gh, h))


def test_fused_lstm_cell_matches_its_formula():
    g = RNG.standard_normal((4, 12))
    c = RNG.standard_normal((4, 3))
    h, cy = T._core._lstm_cell(T.tensor(g), T.tensor(c))
    def sig(v):
        return 1 / (1 + np.exp(-v))

    i, f, gg, o = sig(g[:, :3]), sig(g[:, 3:6]), np.tanh(g[:, 6:9]), sig(g[:, 9:])
    want_c = f * c + i * gg
    np.testing.assert_allclose(cy.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), o * np.tanh(want_c), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"gates of shape \[4, 12\] do not match a cell state of shape \[4, 4\]"):
        T._core._lstm_cell(T.tensor(g), T.tensor(RNG.standard_normal((4, 4))))


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.t(),
        lambda t: t[:, ::2],
        lambda t: t[::2].t(),
        lambda t: t.unsqueeze(1).expand(-1, 3, -1)[:, 1],
    ],
)
@pytest.mark.parametrize("op", ["sum", "amax", "amin", "prod", "mean", "logsumexp", "max", "argmax"])
def test_reductions_read_any_layout(view, op):
    base = T.tensor(RNG.uniform(0.5, 1.5, (40, 36)), dtype=T.float64)
    x = view(base)
    ref = x.contiguous()
    for dim in (0, 1):
        got, want = getattr(x, op)(dim), getattr(ref, op)(dim)
        if op == "max":
            got, want = got[0], want[0]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        assert got.is_contiguous()
    if op not in ("logsumexp", "max", "argmax"):
        np.testing.assert_allclose(getattr(x, op)().item(), getattr(ref, op)().item(), rtol=1e-12)


@pytest.mark.parametrize(
    "shape_a, shape_b", [((64, 1), (1, 50)), ((64, 50), (50,)), ((), (64, 50)), ((64, 50), (64, 1))]
)
def test_broadcast_and_transposed_binary_values(shape_a, shape_b):
    a = RNG.standard_normal(shape_a)
    b = RNG.standard_normal(shape_b)
    for op in ("add", "mul", "div", "maximum", "pow"):
        got = getattr(T, op)(T.tensor(a), T.tensor(b)).numpy()
        with np.errstate(invalid="ignore"):  # negative bases to fractional powers: NaN, as ours
            ufunc = {"add": np.add, "mul": np.multiply, "div": np.divide, "maximum": np.maximum, "pow": np.power}
            want = ufunc[op](a, b)
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    if len(shape_a) == 2 and len(shape_b) == 2 and shape_a == shape_b[::-1]:
        return
    big = RNG.standard_normal((70, 90))
    t = T.tensor(big).t()
    # atol: 3x + exp(x) cancels near x = -0.26, where one ulp of exp(x) is a large relative error
    np.testing.assert_allclose((t * 3 + t.exp()).numpy(), big.T * 3 + np.exp(big.T), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(t.contiguous().numpy(), big.T)


# ---- in-place forms: one pass over the tensor's own elements (no graph to record) ----

BIG = RNG.standard_normal((70, 90))  # past the vector-loop and chunk sizes


def _views(base):
    """The layouts an in-place op writes through: contiguous, transposed, sliced with a step,
    a column block (rows with gaps between them)."""
    return {
        "contiguous": lambda t: t,
        "transposed": lambda t: t.t(),
        "step": lambda t: t[:, ::3],
        "block": lambda t: t[5:40, 10:70],
    }


@pytest.mark.parametrize("view", sorted(_views(BIG)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exp", "expm1", "sin", "tanh", "sigmoid", "abs", "neg", "relu",
                                  "floor", "round", "erfinv", "atan", "sqrt", "frac"])
def test_unary_inplace_equals_out_of_place_in_every_layout(view, dtype, name):
    base = (np.clip(BIG, -0.99, 0.99) if name == "erfinv" else np.abs(BIG) if name == "sqrt" else BIG)
    whole = T.tensor(base.astype(dtype))
    part = _views(BIG)[view](whole)
    want = getattr(part, name)().numpy()
    rest = whole.numpy().copy()
    version = part._version
    assert getattr(part, name + "_")() is part
    np.testing.assert_array_equal(part.numpy(), want)
    assert part._version == version + 1
    # the elements outside the view are untouched
    mask = np.ones(base.shape, bool)
    {"contiguous": mask, "transposed": mask.T, "step": mask[:, ::3], "block": mask[5:40, 10:70]}[view][...] = False
    np.testing.assert_array_equal(whole.numpy()[mask], rest[mask])


# int64 true division writes float (an error in place) and int64 pow_ overflows: floats only
BINARY_INPLACE = [(op, dt) for op in ("add_", "sub_", "mul_", "div_", "remainder_", "pow_")
                  for dt in (np.float32, np.float64, np.int64) if dt != np.int64 or op not in ("div_", "pow_")]


@pytest.mark.parametrize("view", sorted(_views(BIG)))
@pytest.mark.parametrize("other", ["scalar", "same", "row", "column", "transposed", "step"])
@pytest.mark.parametrize("op, dtype", BINARY_INPLACE)
def test_binary_inplace_equals_out_of_place(view, other, op, dtype):
    whole = T.tensor((BIG * 10).astype(dtype)) if dtype == np.int64 else T.tensor(BIG.astype(dtype))
    x = _views(BIG)[view](whole)
    r, c = x.shape
    m = max(r, c)
    src = RNG.standard_normal((m + 3, m * 3 + 1)) + 3.0
    src = (np.abs(src) * 10 + 1).astype(dtype) if dtype == np.int64 else src.astype(dtype)
    srcs = {
        "scalar": 3 if dtype == np.int64 else 1.5,
        "same": T.tensor(src[:r, :c].copy()),
        "row": T.tensor(src[:1, :c].copy()),
        "column": T.tensor(src[:r, :1].copy()),
        "transposed": T.tensor(src[:c, :r].copy()).t(),
        "step": T.tensor(src)[:r, : 3 * c : 3],
    }
    y = srcs[other]
    fn = op[:-1]
    want = getattr(x, fn)(y).numpy()
    getattr(x, op)(y)
    np.testing.assert_array_equal(x.numpy(), want)


def test_inplace_with_itself_and_overlapping_targets():
    x = T.tensor(BIG.astype(np.float32))
    want = (x + x).numpy()
    x.add_(x)
    np.testing.assert_array_equal(x.numpy(), want)
    z = T.tensor(BIG[:, :70].astype(np.float32)).contiguous()
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        z.mul_(z.t())
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        z[1:].add_(z[:-1])
    e = T.zeros(3).expand(2, 3)
    message = "more than one element of the written-to tensor refers to a single memory location"
    with pytest.raises(RuntimeError, match=message):
        e.exp_()
    with pytest.raises(RuntimeError, match=message):
        e.add_(1)


def test_inplace_keeps_autograd_rules():
    leaf = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.exp_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.add_(1)
    y = leaf * 2
    y.sin_()
    y.mul_(T.full((3,), 2.0))
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2 * 2 * np.cos(2.0) * np.ones(3), rtol=1e-6)
    # exp_ saves the tensor it overwrote: a later in-place write is PyTorch's version error
    y = leaf * 2
    y.exp_()
    y.mul_(T.full((3,), 2.0))
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 2"):
        y.sum().backward()
    with T.no_grad():
        leaf.mul_(3).exp_()
    np.testing.assert_allclose(leaf.detach().numpy(), np.exp(3.0) * np.ones(3), rtol=1e-6)
