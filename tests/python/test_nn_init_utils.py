"""ferrograd.nn.init and ferrograd.nn.utils (gradient clipping, parameter/vector conversion).

The random streams differ from PyTorch's, so initialisers are checked by their bounds and
sample statistics; the deterministic parts (gains, fans, errors, clipping) against PyTorch
and closed forms.
"""

import math
import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
from ferrograd.nn import init
from ferrograd.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------- gains and fans


def test_calculate_gain_matches_torch():
    torch = _torch()
    cases = [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
             ("leaky_relu", 0.2), ("leaky_relu", 1), ("selu",), ("conv_transpose3d",)]
    for args in cases:
        assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    for args in [("leaky_relu", True), ("leaky_relu", "x"), ("softmax",)]:
        with pytest.raises(ValueError) as te:
            torch.nn.init.calculate_gain(*args)
        with pytest.raises(ValueError) as fe:
            init.calculate_gain(*args)
        assert str(fe.value) == str(te.value)


def test_calculate_gain_closed_form():
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(2.0 / 6)
    with pytest.raises(ValueError, match="Unsupported nonlinearity softmax"):
        init.calculate_gain("softmax")


def test_fan_in_fan_out():
    assert init._calculate_fan_in_and_fan_out(ferrograd.empty(3, 5)) == (5, 3)
    assert init._calculate_fan_in_and_fan_out(ferrograd.empty(4, 2, 3, 5)) == (30, 60)
    with pytest.raises(ValueError) as e:
        init._calculate_fan_in_and_fan_out(ferrograd.empty(3))
    assert str(e.value) == "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(ferrograd.empty(3, 4), mode="fan_avg")


def test_fan_errors_match_torch():
    torch = _torch()
    for shape in [(3, 5), (4, 2, 3), (2, 3, 4, 5)]:
        assert init._calculate_fan_in_and_fan_out(ferrograd.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for call in [
        lambda lib: lib.nn.init.xavier_uniform_(lib.empty(3)),
        lambda lib: lib.nn.init.kaiming_normal_(lib.empty(3, 3), mode="bad"),
        lambda lib: lib.nn.init.eye_(lib.empty(2, 2, 2)),
    ]:
        with pytest.raises(ValueError) as te:
            call(torch)
        with pytest.raises(ValueError) as fe:
            call(ferrograd)
        assert str(fe.value) == str(te.value)


# ---------------------------------------------------------------- fills


def test_constant_ones_zeros_eye():
    t = ferrograd.empty(3, 4)
    assert init.constant_(t, 2.5) is t
    np.testing.assert_array_equal(t.numpy(), np.full((3, 4), 2.5, np.float32))
    assert init.ones_(t) is t and np.all(t.numpy() == 1.0)
    assert init.zeros_(t) is t and np.all(t.numpy() == 0.0)
    assert init.eye_(t) is t
    np.testing.assert_array_equal(t.numpy(), np.eye(3, 4, dtype=np.float32))


def test_init_on_parameters_runs_without_grad():
    p = nn.Parameter(ferrograd.empty(20, 30))
    for fn in [
        lambda: init.uniform_(p, -1, 1),
        lambda: init.normal_(p),
        lambda: init.constant_(p, 1.0),
        lambda: init.ones_(p),
        lambda: init.zeros_(p),
        lambda: init.eye_(p),
        lambda: init.xavier_uniform_(p),
        lambda: init.xavier_normal_(p),
        lambda: init.kaiming_uniform_(p),
        lambda: init.kaiming_normal_(p),
        lambda: init.trunc_normal_(p),
    ]:
        assert fn() is p
        assert p.requires_grad and p.is_leaf and p.grad_fn is None


# ---------------------------------------------------------------- random initialisers


def _uniform_checks(a, lo, hi):
    assert a.min() >= lo and a.max() <= hi
    width = hi - lo
    assert a.min() < lo + 0.01 * width and a.max() > hi - 0.01 * width
    assert abs(a.mean() - (lo + hi) / 2) < 0.02 * width
    assert abs(a.std() - width / math.sqrt(12)) < 0.02 * width


def _normal_checks(a, mean, std):
    assert abs(a.mean() - mean) < 0.02 * std + 1e-12
    assert abs(a.std() - std) < 0.02 * std
    # about 68% within one standard deviation
    assert abs((np.abs(a - mean) < std).mean() - 0.6827) < 0.01


def test_uniform_and_normal_statistics():
    t = ferrograd.empty(200, 300)
    _uniform_checks(init.uniform_(t).numpy(), 0.0, 1.0)
    _uniform_checks(init.uniform_(t, -3.0, 5.0).numpy(), -3.0, 5.0)
    _normal_checks(init.normal_(t).numpy(), 0.0, 1.0)
    _normal_checks(init.normal_(t, 2.0, 0.5).numpy(), 2.0, 0.5)
    d = ferrograd.empty(100, 100, dtype=ferrograd.float64)
    _normal_checks(init.normal_(d, -1.0, 3.0).numpy(), -1.0, 3.0)
    assert d.dtype == ferrograd.float64


def test_xavier_statistics():
    t = ferrograd.empty(300, 200)
    gain = 2.0
    bound = gain * math.sqrt(6.0 / 500)
    _uniform_checks(init.xavier_uniform_(t, gain=gain).numpy(), -bound, bound)
    _normal_checks(init.xavier_normal_(t).numpy(), 0.0, math.sqrt(2.0 / 500))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0), ("relu", 0), ("leaky_relu", math.sqrt(5)), ("tanh", 0)])
def test_kaiming_statistics(mode, nonlinearity, a):
    t = ferrograd.empty(250, 400)
    fan = 400 if mode == "fan_in" else 250
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    _uniform_checks(init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity).numpy(), -bound, bound)
    _normal_checks(init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity).numpy(), 0.0, std)


def test_kaiming_zero_element_warns():
    t = ferrograd.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(t) is t
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_normal_(t) is t


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, 1.0, 3.0), (1.0, 0.5, -1.0, 0.0)])
def test_trunc_normal_statistics(mean, std, a, b):
    t = ferrograd.empty(200, 200, dtype=ferrograd.float64)
    out = init.trunc_normal_(t, mean, std, a, b).numpy()
    assert out.min() >= a and out.max() <= b
    # moments of the truncated normal
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    exp_mean = mean + std * (pdf(alpha) - pdf(beta)) / z
    exp_var = std**2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    assert abs(out.mean() - exp_mean) < 0.01 * std
    assert abs(out.std() - math.sqrt(exp_var)) < 0.01 * std


def test_trunc_normal_far_mean_warns():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\] in nn.init.trunc_normal_"):
        init.trunc_normal_(ferrograd.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


def test_unsupported_initialisers_raise():
    for fn in (lambda: init.orthogonal_(ferrograd.empty(3, 3)), lambda: init.sparse_(ferrograd.empty(3, 3), 0.1),
               lambda: init.dirac_(ferrograd.empty(3, 3, 3))):
        with pytest.raises(NotImplementedError, match="nn.init"):
            fn()


def test_deprecated_aliases_warn():
    t = ferrograd.empty(2, 2)
    with pytest.warns(FutureWarning, match="`nn.init.constant` is now deprecated in favor of `nn.init.constant_`."):
        init.constant(t, 3.0)
    assert np.all(t.numpy() == 3.0)


# ---------------------------------------------------------------- clip_grad_norm_


def _params_with_grads(grads, dtype=np.float32):
    params = []
    for g in grads:
        fdtype = ferrograd.float32 if dtype == np.float32 else ferrograd.float64
        p = nn.Parameter(ferrograd.zeros(*np.shape(g), dtype=fdtype))
        p.grad = ferrograd.tensor(np.asarray(g, dtype=dtype))
        params.append(p)
    return params


GRADS = [np.arange(6.0).reshape(2, 3) - 2.5, np.array([3.0, -4.0]), np.array([[0.5]])]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_closed_form(norm_type, max_norm):
    params = _params_with_grads(GRADS)
    flat = np.concatenate([g.ravel() for g in GRADS])
    expected = np.abs(flat).max() if norm_type == math.inf else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert isinstance(total, ferrograd.Tensor) and total.dim() == 0
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    coef = min(max_norm / (expected + 1e-6), 1.0)
    for p, g in zip(params, GRADS):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5)


def test_clip_grad_norm_matches_torch():
    torch = _torch()
    for norm_type in [2.0, 1.0, math.inf, "inf"]:
        for max_norm in [0.3, 100.0]:
            tps = []
            for g in GRADS:
                p = torch.nn.Parameter(torch.zeros(np.shape(g)))
                p.grad = torch.tensor(g, dtype=torch.float32)
                tps.append(p)
            fps = _params_with_grads(GRADS)
            tt = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
            ft = clip_grad_norm_(fps, max_norm, norm_type=norm_type)
            np.testing.assert_allclose(ft.item(), tt.item(), rtol=1e-6)
            assert ft.dtype == ferrograd.float32
            for fp, tp in zip(fps, tps):
                np.testing.assert_allclose(fp.grad.numpy(), tp.grad.numpy(), rtol=1e-6)


def test_clip_grad_norm_inputs():
    # a single tensor, a generator, parameters without grads, an empty list
    p = _params_with_grads([np.array([3.0, 4.0])])[0]
    np.testing.assert_allclose(clip_grad_norm_(p, 1.0).item(), 5.0)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)
    q = nn.Parameter(ferrograd.ones(2))
    assert q.grad is None
    ps = _params_with_grads([np.array([6.0, 8.0])])
    np.testing.assert_allclose(clip_grad_norm_((x for x in ps + [q]), 5.0).item(), 10.0)
    np.testing.assert_allclose(ps[0].grad.numpy(), [3.0, 4.0], rtol=1e-5)
    assert q.grad is None
    assert clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        clip_grad_norm_((x for x in []), 1.0)
    # does not build a graph
    m = nn.Linear(3, 2)
    m(ferrograd.ones(4, 3)).sum().backward()
    total = clip_grad_norm_(m.parameters(), 1.0)
    assert not total.requires_grad and m.weight.grad.grad_fn is None
    np.testing.assert_allclose(total.item(), math.sqrt(8 * 16.0), rtol=1e-6)
    np.testing.assert_allclose(
        math.sqrt((m.weight.grad.numpy() ** 2).sum() + (m.bias.grad.numpy() ** 2).sum()), 1.0, rtol=1e-5
    )


def test_clip_grad_norm_nonfinite():
    ps = _params_with_grads([np.array([1.0, np.inf])])
    with pytest.raises(RuntimeError) as e:
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert str(e.value) == (
        "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be "
        "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
        "`error_if_nonfinite=False`"
    )
    ps = _params_with_grads([np.array([1.0, np.nan])])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    ps = _params_with_grads([np.array([1.0, np.inf])])
    assert math.isinf(clip_grad_norm_(ps, 1.0).item())


def test_clip_grad_norm_nonfinite_text_matches_torch():
    torch = _torch()
    tp = torch.nn.Parameter(torch.zeros(2))
    tp.grad = torch.tensor([1.0, float("inf")])
    with pytest.raises(RuntimeError) as te:
        torch.nn.utils.clip_grad_norm_([tp], 1.0, norm_type=3, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as fe:
        clip_grad_norm_(_params_with_grads([np.array([1.0, np.inf])]), 1.0, norm_type=3, error_if_nonfinite=True)
    assert str(fe.value) == str(te.value)


def test_clip_grad_norm_float64():
    ps = _params_with_grads([np.array([3.0, 4.0])], dtype=np.float64)
    total = clip_grad_norm_(ps, 2.5)
    assert total.dtype == ferrograd.float64
    np.testing.assert_allclose(ps[0].grad.numpy(), [1.5, 2.0], rtol=1e-6)


# ---------------------------------------------------------------- clip_grad_value_


def test_clip_grad_value():
    ps = _params_with_grads(GRADS)
    assert clip_grad_value_(ps, 1.0) is None
    for p, g in zip(ps, GRADS):
        np.testing.assert_allclose(p.grad.numpy(), np.clip(g, -1.0, 1.0))
    p = _params_with_grads([np.array([-5.0, 0.2, 7.0])])[0]
    clip_grad_value_(p, 0.5)
    np.testing.assert_allclose(p.grad.numpy(), [-0.5, 0.2, 0.5], rtol=1e-6)
    clip_grad_value_([nn.Parameter(ferrograd.ones(1))], 1.0)  # no grad: nothing to do


# ---------------------------------------------------------------- parameters <-> vector


def test_parameters_to_vector_and_back():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = parameters_to_vector(m.parameters())
    expected = np.concatenate([_np(p).ravel() for p in m.parameters()])
    np.testing.assert_array_equal(_np(vec), expected)
    assert tuple(vec.shape) == (6 + 2 + 2 + 1,)
    assert vec.requires_grad  # differentiable, like torch

    objs = list(m.parameters())
    new = ferrograd.arange(11.0)
    assert vector_to_parameters(new, m.parameters()) is None
    assert all(a is b for a, b in zip(m.parameters(), objs))
    np.testing.assert_array_equal(_np(m[0].weight), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_np(m[0].bias), [6.0, 7.0])
    np.testing.assert_array_equal(_np(m[1].weight), [[8.0, 9.0]])
    np.testing.assert_array_equal(_np(m[1].bias), [10.0])
    assert all(p.requires_grad and p.is_leaf for p in m.parameters())

    with pytest.raises(TypeError) as e:
        vector_to_parameters([1.0], m.parameters())
    assert str(e.value) == "expected torch.Tensor, but got: list"


def test_convert_parameters_match_torch():
    torch = _torch()
    tm = torch.nn.Linear(3, 2)
    fm = nn.Linear(3, 2)
    fm.load_state_dict({k: ferrograd.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    np.testing.assert_array_equal(
        _np(parameters_to_vector(fm.parameters())),
        torch.nn.utils.parameters_to_vector(tm.parameters()).detach().numpy(),
    )
    for bad in ([1.0], 3, np.ones(2)):
        with pytest.raises(TypeError) as te:
            torch.nn.utils.vector_to_parameters(bad, tm.parameters())
        with pytest.raises(TypeError) as fe:
            vector_to_parameters(bad, fm.parameters())
        assert str(fe.value) == str(te.value)


def test_utils_namespace():
    import ferrograd.nn.utils as U

    for name in ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
                 "vector_to_parameters", "get_total_norm", "clip_grads_with_norm_"]:
        assert callable(getattr(U, name))
    ps = _params_with_grads([np.array([3.0, 4.0])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = U.get_total_norm([p.grad for p in ps])
    np.testing.assert_allclose(total.item(), 5.0)
    U.clip_grads_with_norm_(ps, 1.0, total)
    np.testing.assert_allclose(ps[0].grad.numpy(), [0.6, 0.8], rtol=1e-5)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        U.clip_grad_norm(ps, 1.0)


def test_generator_and_manual_seed_reproduce():
    def draw(fn):
        g = ferrograd.Generator().manual_seed(7)
        return fn(ferrograd.empty(30, 40), generator=g).numpy().copy()

    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_,
               init.kaiming_normal_, init.trunc_normal_):
        a, b = draw(fn), draw(fn)
        np.testing.assert_array_equal(a, b)
        g = ferrograd.Generator().manual_seed(8)
        assert not np.array_equal(a, fn(ferrograd.empty(30, 40), generator=g).numpy())
    ferrograd.manual_seed(0)
    w1 = _np(nn.Linear(5, 4).weight).copy()
    ferrograd.manual_seed(0)
    np.testing.assert_array_equal(_np(nn.Linear(5, 4).weight), w1)
