"""The activations beyond relu / gelu / silu / leaky_relu (python/ferrograd/_activations.py,
src/ops/activation.rs): modules and their reprs, in-place semantics, grad_fn names, errors,
half precision, rrelu's noise and gumbel_softmax. Values and gradients of every function are
checked against numpy and PyTorch by their rows in tests/native/op_db.py."""

import math

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

X = np.array([[-4.0, -3.0, -1.5, -0.5, 0.0], [0.25, 0.5, 1.0, 3.0, 7.0]])

# (name, call with the library, ferrograd's expected grad_fn name)
POINTWISE = [
    ("elu", lambda lib, x: lib.nn.functional.elu(x), "EluBackward0"),
    ("elu_alpha", lambda lib, x: lib.nn.functional.elu(x, alpha=0.3), "EluBackward0"),
    ("selu", lambda lib, x: lib.nn.functional.selu(x), "EluBackward0"),
    ("torch.selu", lambda lib, x: lib.selu(x), "EluBackward0"),
    ("celu", lambda lib, x: lib.nn.functional.celu(x, 2.0), "CeluBackward0"),
    ("torch.celu", lambda lib, x: lib.celu(x), "CeluBackward0"),
    ("softplus", lambda lib, x: lib.nn.functional.softplus(x, beta=2, threshold=5), "SoftplusBackward0"),
    ("hardtanh", lambda lib, x: lib.nn.functional.hardtanh(x, -2.0, 2.5), "HardtanhBackward0"),
    ("relu6", lambda lib, x: lib.nn.functional.relu6(x), "HardtanhBackward0"),
    ("hardswish", lambda lib, x: lib.nn.functional.hardswish(x), "HardswishBackward0"),
    ("hardsigmoid", lambda lib, x: lib.nn.functional.hardsigmoid(x), "HardsigmoidBackward0"),
    ("mish", lambda lib, x: lib.nn.functional.mish(x), "MishBackward0"),
    ("softsign", lambda lib, x: lib.nn.functional.softsign(x), "DivBackward0"),
    ("logsigmoid", lambda lib, x: lib.nn.functional.logsigmoid(x), "LogSigmoidBackward0"),
    ("hardshrink", lambda lib, x: lib.nn.functional.hardshrink(x, 1.0), "HardshrinkBackward0"),
    ("Tensor.hardshrink", lambda lib, x: x.hardshrink(), "HardshrinkBackward0"),
    ("softshrink", lambda lib, x: lib.nn.functional.softshrink(x, 1.0), "SoftshrinkBackward0"),
    ("tanhshrink", lambda lib, x: lib.nn.functional.tanhshrink(x), "SubBackward0"),
    ("threshold", lambda lib, x: lib.nn.functional.threshold(x, 0.5, -7.0), "ThresholdBackward0"),
    ("torch.threshold", lambda lib, x: lib.threshold(x, 0.5, -7.0), "ThresholdBackward0"),
    ("rrelu_eval", lambda lib, x: lib.nn.functional.rrelu(x), "RreluWithNoiseBackward0"),
    ("glu", lambda lib, x: lib.nn.functional.glu(x, 0), "GluBackward0"),
    ("prelu", lambda lib, x: lib.nn.functional.prelu(x, lib.tensor([0.1, -0.2, 0.3, 0.0, 2.0], dtype=x.dtype)),
     "PreluKernelBackward0"),
    ("Tensor.prelu", lambda lib, x: x.prelu(lib.tensor([0.3], dtype=x.dtype)), "PreluKernelBackward0"),
]

# the in-place forms: (name, call on a non-leaf, expected grad_fn name)
INPLACE = [
    ("elu", lambda lib, y: lib.nn.functional.elu(y, inplace=True), "EluBackward1"),
    ("elu_", lambda lib, y: lib.nn.functional.elu_(y, 0.5), "EluBackward1"),
    ("selu", lambda lib, y: lib.nn.functional.selu(y, inplace=True), "EluBackward1"),
    ("torch.selu_", lambda lib, y: lib.selu_(y), "EluBackward1"),
    ("celu", lambda lib, y: lib.nn.functional.celu(y, inplace=True), "CeluBackward1"),
    ("torch.celu_", lambda lib, y: lib.celu_(y, 1.5), "CeluBackward1"),
    ("hardtanh_", lambda lib, y: lib.nn.functional.hardtanh_(y, -1.0, 2.0), "HardtanhBackward0"),
    ("relu6", lambda lib, y: lib.nn.functional.relu6(y, inplace=True), "HardtanhBackward0"),
    ("hardswish", lambda lib, y: lib.nn.functional.hardswish(y, inplace=True), "HardswishBackward0"),
    ("hardsigmoid", lambda lib, y: lib.nn.functional.hardsigmoid(y, inplace=True), "HardsigmoidBackward0"),
    ("mish", lambda lib, y: lib.nn.functional.mish(y, inplace=True), "MishBackward0"),
    ("threshold_", lambda lib, y: lib.nn.functional.threshold_(y, 0.5, 2.0), "ThresholdBackward1"),
    ("torch.threshold_", lambda lib, y: lib.threshold_(y, 0.5, 2.0), "ThresholdBackward1"),
    ("rrelu", lambda lib, y: lib.nn.functional.rrelu(y, inplace=True), "RreluWithNoiseBackward1"),
    ("torch.rrelu_", lambda lib, y: lib.rrelu_(y), "RreluWithNoiseBackward1"),
]


def _x(lib, dtype=None, requires_grad=True):
    return lib.tensor(X, dtype=dtype or lib.float64, requires_grad=requires_grad)


@pytest.mark.parametrize("name,call,node", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_grad_fn_names(name, call, node):
    assert call(fg, _x(fg)).grad_fn.name() == node


@pytest.mark.parametrize("name,call,node", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_grad_fn_names_match_torch(name, call, node):
    torch = pytest.importorskip("torch")
    assert call(torch, _x(torch)).grad_fn.name() == node


@pytest.mark.parametrize("name,call,node", INPLACE, ids=[p[0] for p in INPLACE])
def test_inplace_records_the_op(name, call, node):
    x = _x(fg)
    y = x * 1.0
    out = call(fg, y)
    assert out is y
    assert y.grad_fn.name() == node
    expected = call(fg, _x(fg, requires_grad=False) * 1.0)
    np.testing.assert_allclose(y.detach().numpy(), expected.numpy())
    y.sum().backward()
    x2 = _x(fg)
    name_fn = {"elu_": lambda t: F.elu(t, 0.5), "torch.selu_": F.selu, "torch.celu_": lambda t: F.celu(t, 1.5),
               "hardtanh_": lambda t: F.hardtanh(t, -1.0, 2.0), "threshold_": lambda t: F.threshold(t, 0.5, 2.0),
               "torch.threshold_": lambda t: F.threshold(t, 0.5, 2.0), "torch.rrelu_": F.rrelu}
    out_of_place = name_fn.get(name, lambda t: getattr(F, name)(t))
    out_of_place(x2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())


@pytest.mark.parametrize("name,call,node", INPLACE, ids=[p[0] for p in INPLACE])
def test_inplace_matches_torch(name, call, node):
    torch = pytest.importorskip("torch")
    xt, xf = _x(torch), _x(fg)
    yt, yf = xt * 1.0, xf * 1.0
    call(torch, yt)
    call(fg, yf)
    assert yt.grad_fn.name() == yf.grad_fn.name()
    np.testing.assert_allclose(yf.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    yt.sum().backward()
    yf.sum().backward()
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,call,node", INPLACE, ids=[p[0] for p in INPLACE])
def test_inplace_on_a_leaf_requiring_grad_raises(name, call, node):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        call(fg, _x(fg))


def test_inplace_without_grad_writes_the_input():
    x = fg.tensor([-1.0, 0.5, 8.0])
    assert F.relu6(x, inplace=True) is x
    np.testing.assert_allclose(x.numpy(), [0.0, 0.5, 6.0])
    F.elu_(x)
    np.testing.assert_allclose(x.numpy(), [0.0, 0.5, 6.0])
    F.threshold_(x, 1.0, -3.0)
    np.testing.assert_allclose(x.numpy(), [-3.0, -3.0, 6.0])


# double backward: the fused backward op records a node whose own backward is differentiable
# (PyTorch has no double backward of hardsigmoid: "derivative for aten::hardsigmoid_backward is
# not implemented"; ferrograd's is the zero second derivative)
DOUBLE = [p for p in POINTWISE if p[0] not in ("prelu", "Tensor.prelu", "hardsigmoid")]


@pytest.mark.parametrize("name,call,node", DOUBLE, ids=[p[0] for p in DOUBLE])
def test_create_graph_matches_torch(name, call, node):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xs = rng.uniform(-5, 5, size=(4, 6))
    g = rng.standard_normal((2, 6) if name == "glu" else (4, 6))
    results = []
    for lib in (torch, fg):
        x = lib.tensor(xs, requires_grad=True)
        y = call(lib, x)
        (gx,) = lib.autograd.grad(y, x, lib.tensor(g), create_graph=True)
        (ggx,) = lib.autograd.grad((gx * gx).sum(), x)
        results.append((gx.detach().numpy(), ggx.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["elu", "softplus", "mish", "logsigmoid", "hardswish"])
def test_backward_node_is_recorded_with_create_graph(kind):
    x = fg.tensor([-1.3, 0.4, 2.2], dtype=fg.float64, requires_grad=True)
    (gx,) = fg.autograd.grad(getattr(F, kind)(x).sum(), x, create_graph=True)
    assert gx.grad_fn.name().endswith("BackwardBackward0")
    # third order through the fused backward op
    assert gradgradcheck(lambda t: fg.autograd.grad(getattr(F, kind)(t).sum(), t, create_graph=True)[0], (x,))


def test_prelu_grads_and_gradgradcheck():
    x = fg.tensor(np.random.default_rng(1).uniform(-2, 2, (2, 3, 4)) + 0.05, requires_grad=True)
    w = fg.tensor([0.1, 0.2, -0.3], dtype=fg.float64, requires_grad=True)
    assert gradcheck(F.prelu, (x, w))
    assert gradgradcheck(F.prelu, (x, w))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,call,node", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_half_precision_matches_torch(name, call, node, dtype):
    torch = pytest.importorskip("torch")
    outs = []
    for lib in (torch, fg):
        x = lib.tensor(X, dtype=getattr(lib, dtype), requires_grad=True)
        y = call(lib, x)
        y.sum().backward()
        assert y.dtype == getattr(lib, dtype) and x.grad.dtype == getattr(lib, dtype)
        outs.append((y.detach().float().numpy(), x.grad.float().numpy()))
    tol = 1e-2 if dtype == "float16" else 4e-2
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=tol, atol=tol)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=tol, atol=tol)


INT_ERRORS = [
    (lambda lib, x: lib.nn.functional.elu(x), NotImplementedError, "\"elu_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.selu(x), NotImplementedError, "\"elu_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.softplus(x), NotImplementedError,
     "\"softplus_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.mish(x), NotImplementedError, "\"mish_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.hardswish(x), NotImplementedError,
     "\"hardswish_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.logsigmoid(x), NotImplementedError,
     "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.glu(x), NotImplementedError, "\"glu_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.rrelu(x), NotImplementedError,
     "\"leaky_relu_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.rrelu(x, training=True), NotImplementedError,
     "\"rrelu_with_noise_out_cpu\" not implemented for 'Long'"),
    (lambda lib, x: lib.nn.functional.prelu(x, lib.tensor([0.25])), RuntimeError,
     "prelu: Type promoting not supported. Got Long and Float"),
    (lambda lib, x: lib.nn.functional.glu(x.float()[:3]), RuntimeError,
     "Halving dimension must be even, but dimension 0 is size 3"),
    (lambda lib, x: lib.nn.functional.glu(lib.tensor(1.0)), RuntimeError,
     "glu does not support scalars because halving size must be even"),
    (lambda lib, x: lib.nn.functional.softshrink(x.double(), -0.5), RuntimeError,
     "lambda must be in range [0, 1.79769e+308] for input dtype Double, but found -0.5"),
    (lambda lib, x: lib.nn.functional.celu(x.float(), 0.0), RuntimeError,
     "ZeroDivisionError: alpha cannot be 0 for CELU"),
    (lambda lib, x: lib.nn.functional.hardtanh(x.float(), 2.0, 1.0), ValueError,
     "min_val cannot be greater than max_val"),
    (lambda lib, x: lib.nn.functional.prelu(x.float(), lib.ones(3)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 1."),
    (lambda lib, x: lib.nn.functional.prelu(x.float(), lib.ones(1, 1)), RuntimeError,
     "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"),
    (lambda lib, x: lib.nn.Softmax2d()(x.float()), ValueError,
     "Softmax2d: expected input to be 3D or 4D, got 1D instead"),
    (lambda lib, x: lib.nn.Hardtanh(1.0, 1.0), AssertionError, "max_val (1.0) must be greater than min_val (1.0)"),
]


@pytest.mark.parametrize("call,exc,msg", INT_ERRORS)
def test_errors(call, exc, msg):
    with pytest.raises(exc) as e:
        call(fg, fg.tensor([1, -2, 3, 4]))
    assert msg in str(e.value)


@pytest.mark.parametrize("call,exc,msg", INT_ERRORS)
def test_errors_match_torch(call, exc, msg):
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as e:
        call(torch, torch.tensor([1, -2, 3, 4]))
    assert msg in str(e.value)


def test_integer_hardtanh_relu6_threshold_keep_the_dtype():
    x = fg.tensor([-3, 0, 2, 9])
    for y, expected in [(F.hardtanh(x), [-1, 0, 1, 1]), (F.relu6(x), [0, 0, 2, 6]),
                        (F.threshold(x, 1, 5), [5, 5, 2, 9])]:
        assert y.dtype == fg.int64
        assert y.tolist() == expected


MODULES = [
    (lambda lib: lib.nn.ELU(), "ELU(alpha=1.0)"),
    (lambda lib: lib.nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
    (lambda lib: lib.nn.SELU(), "SELU()"),
    (lambda lib: lib.nn.SELU(True), "SELU(inplace=True)"),
    (lambda lib: lib.nn.CELU(2.0), "CELU(alpha=2.0)"),
    (lambda lib: lib.nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda lib: lib.nn.Softplus(2, 5), "Softplus(beta=2, threshold=5)"),
    (lambda lib: lib.nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (lambda lib: lib.nn.Hardtanh(-2, 3, True), "Hardtanh(min_val=-2, max_val=3, inplace=True)"),
    (lambda lib: lib.nn.ReLU6(), "ReLU6()"),
    (lambda lib: lib.nn.ReLU6(True), "ReLU6(inplace=True)"),
    (lambda lib: lib.nn.PReLU(), "PReLU(num_parameters=1)"),
    (lambda lib: lib.nn.PReLU(4, 0.1), "PReLU(num_parameters=4)"),
    (lambda lib: lib.nn.Hardswish(True), "Hardswish()"),
    (lambda lib: lib.nn.Hardsigmoid(), "Hardsigmoid()"),
    (lambda lib: lib.nn.Mish(True), "Mish(inplace=True)"),
    (lambda lib: lib.nn.Softsign(), "Softsign()"),
    (lambda lib: lib.nn.GLU(), "GLU(dim=-1)"),
    (lambda lib: lib.nn.GLU(1), "GLU(dim=1)"),
    (lambda lib: lib.nn.LogSigmoid(), "LogSigmoid()"),
    (lambda lib: lib.nn.Hardshrink(), "Hardshrink(0.5)"),
    (lambda lib: lib.nn.Softshrink(1), "Softshrink(1)"),
    (lambda lib: lib.nn.Tanhshrink(), "Tanhshrink()"),
    (lambda lib: lib.nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (lambda lib: lib.nn.Threshold(0.1, 20, True), "Threshold(threshold=0.1, value=20, inplace=True)"),
    (lambda lib: lib.nn.RReLU(), "RReLU(lower=0.125, upper=0.3333333333333333)"),
    (lambda lib: lib.nn.RReLU(0.1, 0.3, True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
    (lambda lib: lib.nn.Softmax2d(), "Softmax2d()"),
]


@pytest.mark.parametrize("make,text", MODULES, ids=[m[1] for m in MODULES])
def test_module_repr(make, text):
    assert repr(make(fg)) == text


@pytest.mark.parametrize("make,text", MODULES, ids=[m[1] for m in MODULES])
def test_module_repr_matches_torch(make, text):
    torch = pytest.importorskip("torch")
    assert repr(make(torch)) == text


@pytest.mark.parametrize("make,text", MODULES, ids=[m[1] for m in MODULES])
def test_module_forward_matches_torch(make, text):
    torch = pytest.importorskip("torch")
    xs = np.random.default_rng(3).uniform(-4, 4, (2, 4, 3, 2))
    outs = []
    for lib in (torch, fg):
        m = make(lib).eval()
        x = lib.tensor(xs, dtype=lib.float32, requires_grad=True)
        y = m(x * 1.0)
        y.sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-5, atol=1e-6)


def test_prelu_module_parameter():
    m = nn.PReLU(3, init=0.1)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert m.weight.shape == (3,) and np.allclose(m.weight.detach().numpy(), 0.1)
    x = fg.tensor(np.random.default_rng(2).uniform(-2, 2, (4, 3, 5)), dtype=fg.float32)
    m(x).sum().backward()
    expected = np.where(x.numpy() > 0, 0.0, x.numpy()).sum(axis=(0, 2))
    np.testing.assert_allclose(m.weight.grad.numpy(), expected, rtol=1e-5)
    assert nn.PReLU(dtype=fg.float64).weight.dtype == fg.float64


def test_hardtanh_deprecated_keywords():
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        m = nn.Hardtanh(min_value=-2.0)
    assert m.min_val == -2.0


def test_rrelu_training_noise():
    fg.manual_seed(0)
    x = fg.tensor(np.linspace(-3, 3, 2000), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    y.sum().backward()
    xs, ys, gs = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    slopes = ys[xs < 0] / xs[xs < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    np.testing.assert_allclose(gs[xs < 0], slopes)  # the gradient is the drawn slope
    np.testing.assert_array_equal(ys[xs > 0], xs[xs > 0])
    np.testing.assert_array_equal(gs[xs > 0], 1.0)
    # the module draws in training mode only
    m = nn.RReLU(0.1, 0.3)
    assert not np.allclose(m(x).detach().numpy()[xs < 0] / xs[xs < 0], 0.2)
    np.testing.assert_allclose(m.eval()(x).detach().numpy()[xs < 0] / xs[xs < 0], 0.2)


def test_gumbel_softmax():
    fg.manual_seed(0)
    logits = fg.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, tau=1.0, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)
    # samples follow the softmax of the logits (Gumbel-max)
    freq = h.mean(0)
    assert abs(freq[0] - 0.7) < 0.04 and abs(freq[1] - 0.2) < 0.04
    # straight-through: the gradient is the soft sample's
    (hard * fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64)).sum().backward()
    assert logits.grad is not None and math.isfinite(float(logits.grad.abs().sum()))
    assert F.gumbel_softmax(fg.randn(2, 5, 3), dim=1).shape == (2, 5, 3)


def test_softmax2d_matches_softmax_over_channels():
    x = fg.randn(2, 3, 4, 5)
    np.testing.assert_allclose(nn.Softmax2d()(x).numpy(), F.softmax(x, -3).numpy())
    np.testing.assert_allclose(nn.Softmax2d()(x[0]).numpy(), F.softmax(x[0], 0).numpy())


def test_extreme_values():
    x = fg.tensor([-1000.0, -100.0, 0.0, 100.0, 1000.0, float("inf"), float("-inf"), float("nan")])
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x.numpy())
    for name in ("elu", "selu", "celu", "softplus", "mish", "logsigmoid", "hardswish", "hardsigmoid",
                 "hardtanh", "softshrink", "hardshrink", "relu6"):
        np.testing.assert_allclose(getattr(F, name)(x).numpy(), getattr(torch.nn.functional, name)(xt).numpy(),
                                   rtol=1e-6, atol=1e-37, err_msg=name)  # exp flushes float32 subnormals
