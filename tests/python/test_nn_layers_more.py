"""3-d convolution and pooling, LP pooling, max unpooling, local response norm, pdist, bilinear,
channel shuffle, Fold/Unfold and the lazy modules of ferrograd.nn.

Always-run tests check gradients with ferrograd's gradcheck / gradgradcheck in float64, output
shapes, module behaviour and (for the 3-d ops) values against naive NumPy loops. Parity tests
(skipped without PyTorch) compare values and gradients in float64 and float32, error types and
messages, and module reprs with PyTorch.
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
from ferrograd.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(20261126)


def _torch():
    return pytest.importorskip("torch")


def _randn(*shape):
    return RNG.standard_normal(shape)


def _distinct(*shape):
    """Pairwise distinct values (no ties in max pooling)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) + RNG.uniform(0.1, 0.4, shape)) / n


def _pos(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def _np(t):
    return t.detach().numpy()


# ============================================================ cases
# (functional name, input arrays, kwargs); every array input is differentiable

CONV3D = [
    (lambda: (_randn(2, 4, 5, 6, 7), _randn(3, 4, 3, 2, 3), _randn(3)), {}),
    (lambda: (_randn(2, 4, 5, 6, 7), _randn(4, 2, 3, 2, 3), _randn(4)),
     dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)),
    (lambda: (_randn(4, 5, 6, 7), _randn(3, 4, 2, 2, 3)), dict(padding="same")),
    (lambda: (_randn(1, 4, 5, 6, 7), _randn(3, 4, 2, 2, 3)), dict(padding="valid", stride=2)),
    (lambda: (_randn(1, 6, 5, 6, 7), _randn(6, 1, 3, 3, 3)), dict(padding=2, groups=6)),
    (lambda: (_randn(2, 3, 4, 5, 5), _randn(2, 3, 1, 1, 1), _randn(2)), dict(stride=(1, 2, 3))),
]

CONV_TRANSPOSE3D = [
    (lambda: (_randn(2, 4, 3, 4, 3), _randn(4, 3, 3, 2, 3), _randn(3)), {}),
    (lambda: (_randn(2, 4, 3, 4, 3), _randn(4, 2, 3, 2, 3), _randn(4)),
     dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)),
    (lambda: (_randn(4, 3, 4, 3), _randn(4, 2, 2, 3, 2)), dict(stride=2, padding=1, output_padding=(1, 1, 0))),
    (lambda: (_randn(1, 2, 3, 3, 3), _randn(2, 2, 2, 2, 2)), dict(output_padding=1, dilation=2)),
    (lambda: (_randn(1, 3, 2, 2, 2), _randn(3, 1, 3, 3, 3), _randn(3)), dict(stride=3, padding=2, groups=3)),
]

MAX_POOL3D = [
    (lambda: (_distinct(2, 3, 5, 6, 7),), dict(kernel_size=2)),
    (lambda: (_distinct(2, 3, 5, 6, 7),), dict(kernel_size=3, stride=2, padding=1, return_indices=True)),
    (lambda: (_distinct(2, 2, 5, 6, 7),), dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0),
                                               dilation=(2, 1, 2), ceil_mode=True, return_indices=True)),
    (lambda: (_distinct(3, 5, 6, 7),), dict(kernel_size=2, ceil_mode=True, return_indices=True)),
    (lambda: (_distinct(1, 2, 6, 5, 5),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
]

AVG_POOL3D = [
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=2)),
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=3, stride=2, padding=1)),
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                            count_include_pad=False)),
    (lambda: (_randn(2, 3, 5, 6, 7),), dict(kernel_size=(2, 3, 3), stride=(2, 1, 2), padding=(1, 1, 0),
                                            ceil_mode=True, divisor_override=5)),
    (lambda: (_randn(3, 5, 6, 7),), dict(kernel_size=2, ceil_mode=True)),
]

ADAPTIVE3D = [
    ("adaptive_avg_pool3d", lambda: (_randn(2, 3, 5, 6, 7),), dict(output_size=(2, 3, 4))),
    ("adaptive_avg_pool3d", lambda: (_randn(3, 5, 6, 7),), dict(output_size=(7, 3, None))),
    ("adaptive_avg_pool3d", lambda: (_randn(2, 3, 4, 5, 6),), dict(output_size=1)),
    ("adaptive_max_pool3d", lambda: (_distinct(2, 3, 5, 6, 7),), dict(output_size=(2, 3, 4), return_indices=True)),
    ("adaptive_max_pool3d", lambda: (_distinct(3, 5, 6, 7),), dict(output_size=(3, None, 8), return_indices=True)),
    ("adaptive_max_pool3d", lambda: (_distinct(2, 3, 4, 6, 8),), dict(output_size=(2, 3, 4), return_indices=True)),
    ("adaptive_max_pool2d", lambda: (_distinct(2, 3, 6, 8),), dict(output_size=(3, 4), return_indices=True)),
]

OTHER = [
    ("lp_pool1d", lambda: (_pos(2, 3, 7),), dict(norm_type=2, kernel_size=3)),
    ("lp_pool1d", lambda: (_pos(2, 3, 7),), dict(norm_type=1.5, kernel_size=3, stride=2, ceil_mode=True)),
    ("lp_pool2d", lambda: (_pos(2, 3, 7, 6),), dict(norm_type=2, kernel_size=(3, 2))),
    ("lp_pool2d", lambda: (_pos(2, 3, 7, 6),), dict(norm_type=3, kernel_size=2, stride=(1, 2), ceil_mode=True)),
    ("lp_pool2d", lambda: (_distinct(2, 3, 7, 6),), dict(norm_type=float("inf"), kernel_size=2)),
    ("lp_pool3d", lambda: (_pos(2, 3, 5, 7, 6),), dict(norm_type=2, kernel_size=2)),
    ("lp_pool3d", lambda: (_pos(2, 3, 5, 7, 6),), dict(norm_type=1.5, kernel_size=(2, 3, 2), stride=(1, 2, 1),
                                                     ceil_mode=True)),
    ("local_response_norm", lambda: (_randn(2, 6, 5),), dict(size=3)),
    ("local_response_norm", lambda: (_randn(2, 6, 5, 4),), dict(size=2, alpha=0.1, beta=0.5, k=2.0)),
    ("local_response_norm", lambda: (_randn(2, 6, 3, 4, 2),), dict(size=4)),
    ("pdist", lambda: (_randn(5, 3),), {}),
    ("pdist", lambda: (_randn(5, 3),), dict(p=1)),
    ("pdist", lambda: (_randn(6, 4),), dict(p=3.5)),
    ("pdist", lambda: (_randn(5, 3),), dict(p=float("inf"))),
    ("bilinear", lambda: (_randn(4, 5), _randn(4, 6), _randn(3, 5, 6), _randn(3)), {}),
    ("bilinear", lambda: (_randn(2, 4, 5), _randn(2, 4, 6), _randn(3, 5, 6)), {}),
    ("bilinear", lambda: (_randn(5), _randn(6), _randn(3, 5, 6), _randn(3)), {}),
    ("channel_shuffle", lambda: (_randn(2, 6, 3, 2),), dict(groups=3)),
    ("channel_shuffle", lambda: (_randn(2, 6, 3),), dict(groups=2)),
]


def _param(name, cases):
    return [pytest.param(name, make, kw, id=f"{name}-{i}") for i, (make, kw) in enumerate(cases)]


ALL = (_param("conv3d", CONV3D) + _param("conv_transpose3d", CONV_TRANSPOSE3D)
       + _param("max_pool3d", MAX_POOL3D) + _param("avg_pool3d", AVG_POOL3D)
       + [pytest.param(n, m, kw, id=f"{n}-{i}") for i, (n, m, kw) in enumerate(ADAPTIVE3D + OTHER)])


def _first(out):
    return out[0] if isinstance(out, tuple) else out


# ============================================================ always run


@pytest.mark.parametrize("name, make, kwargs", ALL)
def test_gradcheck_float64(name, make, kwargs):
    arrays = make()
    inputs = tuple(ferrograd.tensor(a, requires_grad=True) for a in arrays)
    fn = getattr(F, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # padding='same' with an even kernel
        assert gradcheck(lambda *xs: _first(fn(*xs, **kwargs)), inputs)
        assert gradgradcheck(lambda *xs: _first(fn(*xs, **kwargs)), inputs)


def _conv3d_np(x, w, b, stride, padding, dilation, groups):
    """Direct 3-d convolution: a sum over kernel offsets of strided windows (NumPy)."""
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    o, k = w.shape[0], w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    xg = xp.reshape(n, groups, c // groups, *xp.shape[2:])
    wg = w.reshape(groups, o // groups, c // groups, *k)
    out = np.zeros((n, groups, o // groups, *out_sp))
    for off in np.ndindex(*k):
        win = xg[(Ellipsis,) + tuple(slice(off[i] * dilation[i], off[i] * dilation[i] + stride[i] * (out_sp[i] - 1) + 1,
                                           stride[i]) for i in range(3))]
        out += np.einsum("ngc...,goc->ngo...", win, wg[(Ellipsis,) + off])
    out = out.reshape(n, o, *out_sp)
    return out if b is None else out + b.reshape(-1, 1, 1, 1)


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    ((1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
    ((2, 1, 2), (1, 0, 1), (2, 1, 1), 2),
    ((1, 3, 1), (2, 1, 0), (1, 1, 2), 4),
])
def test_conv3d_matches_direct_sum(stride, padding, dilation, groups):
    x, w, b = _randn(2, 4, 6, 7, 5), _randn(4, 4 // groups, 3, 2, 2), _randn(4)
    out = F.conv3d(ferrograd.tensor(x), ferrograd.tensor(w), ferrograd.tensor(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(_np(out), _conv3d_np(x, w, b, stride, padding, dilation, groups), rtol=1e-10,
                               atol=1e-10)


def test_conv_transpose3d_is_the_adjoint_of_conv3d():
    # <conv3d(x, w), y> == <x, conv_transpose3d(y, w)> for the same stride/padding/dilation/groups
    kw = dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
    x, w = ferrograd.tensor(_randn(2, 4, 7, 6, 7)), ferrograd.tensor(_randn(6, 2, 3, 2, 3))
    y = F.conv3d(x, w, **kw)
    z = ferrograd.tensor(_randn(*y.shape))
    back = F.conv_transpose3d(z, w, **kw)
    assert tuple(back.shape) == tuple(x.shape)
    assert math.isclose(float((y * z).sum()), float((x * back).sum()), rel_tol=1e-10)


def test_max_pool3d_indices_point_at_the_maxima():
    x = ferrograd.tensor(_distinct(2, 3, 6, 5, 7))
    out, idx = F.max_pool3d(x, 3, stride=2, padding=1, return_indices=True)
    assert tuple(out.shape) == (2, 3, 3, 3, 4) and idx.dtype == ferrograd.int64
    np.testing.assert_array_equal(_np(x.flatten(2).gather(2, idx.flatten(2))), _np(out.flatten(2)))
    # and max_unpool3d puts them back (an element that is the maximum of two overlapping windows
    # appears twice in the indices, once in the output); the values are positive
    back = F.max_unpool3d(out, idx, 3, stride=2, padding=1, output_size=x.shape[-3:])
    kept = _np(back) != 0
    np.testing.assert_array_equal(_np(back)[kept], _np(x)[kept])
    assert kept.sum() == sum(len(np.unique(plane)) for plane in _np(idx).reshape(6, -1))


def test_max_pool3d_ties_take_the_first_maximum():
    x = ferrograd.ones(1, 1, 2, 3, 3, requires_grad=True)
    out, idx = F.max_pool3d(x, 2, stride=1, return_indices=True)
    np.testing.assert_array_equal(_np(idx).ravel(), [0, 1, 3, 4])
    out.sum().backward()
    expected = np.zeros(18)
    expected[[0, 1, 3, 4]] = 1
    np.testing.assert_array_equal(_np(x.grad).ravel(), expected)


def test_avg_pool3d_matches_window_means():
    x = _randn(1, 2, 5, 4, 6)
    out = _np(F.avg_pool3d(ferrograd.tensor(x), 3, stride=2, padding=1, count_include_pad=False))
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)], constant_values=np.nan)
    for o in np.ndindex(*out.shape[2:]):
        win = xp[:, :, 2 * o[0]:2 * o[0] + 3, 2 * o[1]:2 * o[1] + 3, 2 * o[2]:2 * o[2] + 3]
        np.testing.assert_allclose(out[(Ellipsis,) + o], np.nanmean(win, axis=(2, 3, 4)), rtol=1e-12)


def test_adaptive_pool3d_shapes():
    x = ferrograd.randn(2, 3, 5, 6, 7)
    assert tuple(F.adaptive_avg_pool3d(x, (2, None, 3)).shape) == (2, 3, 2, 6, 3)
    out, idx = F.adaptive_max_pool3d(x, 4, return_indices=True)
    assert tuple(out.shape) == tuple(idx.shape) == (2, 3, 4, 4, 4)
    np.testing.assert_array_equal(_np(x.flatten(2).gather(2, idx.flatten(2))), _np(out.flatten(2)))


def test_pdist_is_the_upper_triangle_of_cdist():
    x = ferrograd.tensor(_randn(6, 4))
    d = _np(ferrograd.cdist(x, x))
    np.testing.assert_allclose(_np(F.pdist(x)), d[np.triu_indices(6, 1)], rtol=1e-10)
    assert tuple(F.pdist(ferrograd.randn(1, 3)).shape) == (0,)


def test_channel_shuffle_order():
    x = ferrograd.arange(1, 17, dtype=ferrograd.float32).view(1, 4, 2, 2)
    out = nn.ChannelShuffle(2)(x)
    np.testing.assert_array_equal(_np(out)[0, :, 0, 0], [1, 9, 5, 13])


def test_fold_unfold_modules_round_trip():
    x = ferrograd.randn(2, 3, 6, 5)
    unfold, fold = nn.Unfold((2, 3), padding=1, stride=(2, 1)), nn.Fold((6, 5), (2, 3), padding=1, stride=(2, 1))
    cols = unfold(x)
    assert tuple(cols.shape) == (2, 18, 4 * 5)
    ones = fold(unfold(ferrograd.ones(2, 3, 6, 5)))
    np.testing.assert_allclose(_np(fold(cols)), _np(x * ones), rtol=1e-6, atol=1e-6)


def test_bilinear_module_init_and_shape():
    m = nn.Bilinear(20, 30, 7)
    bound = 1 / math.sqrt(20)
    assert tuple(m.weight.shape) == (7, 20, 30) and tuple(m.bias.shape) == (7,)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.abs().max()) > bound / 2  # drawn from the whole range
    assert tuple(m(ferrograd.randn(4, 20), ferrograd.randn(4, 30)).shape) == (4, 7)
    assert nn.Bilinear(2, 3, 4, bias=False).bias is None
    with pytest.raises(ValueError, match=r"in1_features must be > 0, but got \(in1_features=0\)"):
        nn.Bilinear(0, 3, 4)


def test_lazy_linear_materializes_and_becomes_linear():
    m = nn.LazyLinear(4)
    assert isinstance(m.weight, nn.UninitializedParameter)
    assert repr(m.weight) == "<UninitializedParameter>"
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        _ = m.weight.shape
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"] and isinstance(sd["weight"], nn.UninitializedParameter)
    y = m(ferrograd.randn(2, 3))
    assert type(m) is nn.Linear and repr(m) == "Linear(in_features=3, out_features=4, bias=True)"
    assert type(m.weight) is nn.Parameter and tuple(m.weight.shape) == (4, 3) and tuple(y.shape) == (2, 4)
    assert float(m.weight.abs().max()) <= 1 / math.sqrt(3)
    y.sum().backward()
    assert tuple(m.weight.grad.shape) == (4, 3) and tuple(m.bias.grad.shape) == (4,)
    # loading an initialized state dict materializes a lazy module
    m2 = nn.LazyLinear(4)
    m2.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(_np(m2.weight), _np(m.weight))
    assert type(m2) is nn.LazyLinear and tuple(m2(ferrograd.randn(5, 3)).shape) == (5, 4)
    assert type(m2) is nn.Linear
    assert nn.LazyLinear(3, bias=False)(ferrograd.randn(2, 5)).shape == (2, 3)


@pytest.mark.parametrize("cls, x, becomes, weight", [
    ("LazyConv1d", (2, 3, 8), "Conv1d", (6, 3, 3)),
    ("LazyConv2d", (3, 8, 8), "Conv2d", (6, 3, 3, 3)),
    ("LazyConv3d", (2, 3, 5, 5, 5), "Conv3d", (6, 3, 3, 3, 3)),
    ("LazyConvTranspose1d", (2, 3, 4), "ConvTranspose1d", (3, 6, 3)),
    ("LazyConvTranspose2d", (2, 3, 4, 4), "ConvTranspose2d", (3, 6, 3, 3)),
    ("LazyConvTranspose3d", (3, 4, 4, 4), "ConvTranspose3d", (3, 6, 3, 3, 3)),
])
def test_lazy_conv_modules(cls, x, becomes, weight):
    m = getattr(nn, cls)(6, 3)
    assert m.in_channels == 0 and m.has_uninitialized_params()
    m(ferrograd.randn(*x))
    assert type(m) is getattr(nn, becomes) and tuple(m.weight.shape) == weight and m.in_channels == 3
    assert tuple(m.bias.shape) == (6,)


def test_lazy_modules_in_a_sequential_then_an_optimizer():
    net = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
    assert tuple(net(ferrograd.randn(1, 3, 6, 6)).shape) == (1, 2)
    opt = ferrograd.optim.SGD(net.parameters(), lr=0.1)
    loss = net(ferrograd.randn(2, 3, 6, 6)).pow(2).sum()
    loss.backward()
    opt.step()
    assert [tuple(p.shape) for p in net.parameters()] == [(4, 3, 3, 3), (4,), (2, 64), (2,)]


def test_conv3d_module_padding_modes_and_transpose_output_size():
    for mode in ("zeros", "reflect", "replicate", "circular"):
        m = nn.Conv3d(2, 3, 3, padding=1, padding_mode=mode)
        assert tuple(m(ferrograd.randn(1, 2, 4, 5, 6)).shape) == (1, 3, 4, 5, 6)
    t = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1)
    x = ferrograd.randn(1, 2, 3, 4, 5)
    assert tuple(t(x).shape) == (1, 3, 5, 7, 9)
    assert tuple(t(x, output_size=(6, 8, 10)).shape) == (1, 3, 6, 8, 10)
    with pytest.raises(ValueError, match="requested an output size of"):
        t(x, output_size=(7, 8, 10))


def test_new_modules_forward_shapes():
    x = ferrograd.randn(2, 4, 6, 6, 6)
    assert tuple(nn.MaxPool3d(2)(x).shape) == (2, 4, 3, 3, 3)
    assert tuple(nn.AvgPool3d(3, stride=2, padding=1)(x).shape) == (2, 4, 3, 3, 3)
    assert tuple(nn.AdaptiveAvgPool3d((1, 2, 3))(x).shape) == (2, 4, 1, 2, 3)
    assert tuple(nn.AdaptiveMaxPool3d(2)(x).shape) == (2, 4, 2, 2, 2)
    assert tuple(nn.LPPool3d(2, 2)(x.abs()).shape) == (2, 4, 3, 3, 3)
    assert tuple(nn.LPPool2d(2, 2)(x[:, :, 0].abs()).shape) == (2, 4, 3, 3)
    assert tuple(nn.LPPool1d(2, 3)(x[:, :, 0, 0].abs()).shape) == (2, 4, 2)
    assert tuple(nn.LocalResponseNorm(2)(x).shape) == tuple(x.shape)
    pooled, idx = nn.MaxPool2d(2, return_indices=True)(x[:, :, 0])
    assert tuple(nn.MaxUnpool2d(2)(pooled, idx).shape) == (2, 4, 6, 6)
    pooled, idx = nn.MaxPool1d(2, return_indices=True)(x[:, :, 0, 0])
    assert tuple(nn.MaxUnpool1d(2)(pooled, idx, output_size=[7]).shape) == (2, 4, 7)


# ============================================================ parity with PyTorch


def _run(lib, name, arrays, kwargs, dtype, grad_seed):
    F_ = lib.nn.functional
    inputs = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
    out = getattr(F_, name)(*inputs, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(outs[0].shape))
    outs[0].backward(lib.tensor(g, dtype=getattr(lib, dtype)))
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t in inputs]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, make, kwargs", ALL)
def test_matches_torch(name, make, kwargs, dtype):
    torch = _torch()
    arrays = make()
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=2e-4, atol=2e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = _run(ferrograd, name, arrays, kwargs, dtype, 7)
        theirs = _run(torch, name, arrays, kwargs, dtype, 7)
    for a, b in zip(ours[0], theirs[0]):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, **tol)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, **tol)


def test_native_channel_shuffle_matches_torch():
    # PyTorch has no derivative for native_channel_shuffle; ferrograd's is channel_shuffle's
    torch = _torch()
    x = _randn(2, 6, 2, 3)
    np.testing.assert_array_equal(_np(F.native_channel_shuffle(ferrograd.tensor(x), 3)),
                                  torch.nn.functional.native_channel_shuffle(torch.tensor(x), 3).numpy())
    with pytest.raises(ValueError, match=r"padding_mode must be one of .*, but got padding_mode='foo'"):
        nn.Conv3d(2, 2, 3, padding_mode="foo")


def _ones(lib, *shape, dtype=None):
    return lib.ones(*shape, dtype=dtype or lib.float32)


ERRORS = {
    "conv3d_channels": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 2, 3, 3, 3)),
    "conv3d_bias": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 4, 3, 3, 3),
                                                        _ones(lib, 4)),
    "conv3d_groups": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 2, 3, 3, 3),
                                                          groups=2),
    "conv3d_kernel": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 4, 6, 3, 3)),
    "conv3d_stride0": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 4, 3, 3, 3),
                                                           stride=0),
    "conv3d_negpad": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 4, 3, 3, 3),
                                                          padding=-1),
    "conv3d_dilation0": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5), _ones(lib, 3, 4, 3, 3, 3),
                                                             dilation=0),
    "conv3d_stride_len": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5),
                                                              _ones(lib, 3, 4, 3, 3, 3), stride=(1, 2)),
    "conv3d_dim": lambda lib: lib.nn.functional.conv3d(_ones(lib, 4, 5, 5), _ones(lib, 3, 4, 3, 3, 3)),
    "conv3d_dtype": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5),
                                                         _ones(lib, 3, 4, 3, 3, 3, dtype=lib.float64)),
    "conv3d_same_strided": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5),
                                                                _ones(lib, 3, 4, 3, 3, 3), padding="same", stride=2),
    "conv3d_padding_string": lambda lib: lib.nn.functional.conv3d(_ones(lib, 1, 4, 5, 5, 5),
                                                                  _ones(lib, 3, 4, 3, 3, 3), padding="foo"),
    "conv_transpose3d_output_padding": lambda lib: lib.nn.functional.conv_transpose3d(
        _ones(lib, 1, 4, 5, 5, 5), _ones(lib, 4, 2, 3, 3, 3), output_padding=2, stride=2),
    "conv_transpose3d_channels": lambda lib: lib.nn.functional.conv_transpose3d(_ones(lib, 1, 4, 5, 5, 5),
                                                                                _ones(lib, 3, 2, 3, 3, 3)),
    "conv_transpose3d_too_small": lambda lib: lib.nn.functional.conv_transpose3d(
        _ones(lib, 1, 4, 5, 5, 5), _ones(lib, 4, 2, 3, 3, 3), padding=4),
    "conv_transpose3d_bias": lambda lib: lib.nn.functional.conv_transpose3d(
        _ones(lib, 1, 4, 5, 5, 5), _ones(lib, 4, 2, 3, 3, 3), _ones(lib, 3)),
    "conv_transpose3d_dim": lambda lib: lib.nn.functional.conv_transpose3d(_ones(lib, 5, 5),
                                                                           _ones(lib, 4, 2, 3, 3, 3)),
    "max_pool3d_pad": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, padding=2),
    "max_pool3d_negpad": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, padding=-1),
    "max_pool3d_kernel0": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 0),
    "max_pool3d_dilation0": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, dilation=0),
    "max_pool3d_too_big": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 6),
    "max_pool3d_kernel_len": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), (2, 2)),
    "max_pool3d_stride_len": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, stride=(2, 2)),
    "max_pool3d_padding_len": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2,
                                                                       padding=(1, 1)),
    "max_pool3d_dilation_len": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2,
                                                                        dilation=(1, 1)),
    "max_pool3d_dim": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 5, 5), 2),
    "max_pool3d_empty": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 0, 4, 4, 4), 2),
    "max_pool3d_half_kernel": lambda lib: lib.nn.functional.max_pool3d(_ones(lib, 1, 4, 5, 5, 5), 3,
                                                                       padding=(1, 2, 1), dilation=(1, 2, 1)),
    "avg_pool3d_pad": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, padding=2),
    "avg_pool3d_too_big": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 6),
    "avg_pool3d_kernel_len": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), (2, 2)),
    "avg_pool3d_stride_len": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2, stride=(2, 2)),
    "avg_pool3d_padding_len": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2,
                                                                       padding=(1, 1)),
    "avg_pool3d_divisor0": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2,
                                                                    divisor_override=0),
    "avg_pool3d_divisor_float": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 2,
                                                                         divisor_override=2.5),
    "avg_pool3d_stride0": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), 3, stride=(1, 0, 1)),
    "avg_pool3d_dim": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 5, 5), 2),
    "avg_pool3d_empty": lambda lib: lib.nn.functional.avg_pool3d(_ones(lib, 1, 0, 4, 4, 4), 2),
    "adaptive_avg_pool3d_len": lambda lib: lib.nn.functional.adaptive_avg_pool3d(_ones(lib, 1, 4, 5, 5, 5), (2, 2)),
    "adaptive_avg_pool3d_dim": lambda lib: lib.nn.functional.adaptive_avg_pool3d(_ones(lib, 5, 5), 2),
    "adaptive_avg_pool3d_negative": lambda lib: lib.nn.functional.adaptive_avg_pool3d(_ones(lib, 1, 4, 5, 5, 5),
                                                                                      (-1, 2, 2)),
    "adaptive_avg_pool3d_empty": lambda lib: lib.nn.functional.adaptive_avg_pool3d(_ones(lib, 1, 2, 0, 3, 3), 2),
    "adaptive_max_pool3d_len": lambda lib: lib.nn.functional.adaptive_max_pool3d(_ones(lib, 1, 4, 5, 5, 5), (2, 2)),
    "adaptive_max_pool3d_dim": lambda lib: lib.nn.functional.adaptive_max_pool3d(_ones(lib, 5, 5), 2),
    "adaptive_max_pool3d_negative": lambda lib: lib.nn.functional.adaptive_max_pool3d(_ones(lib, 1, 4, 5, 5, 5),
                                                                                      (-1, 2, 2)),
    "adaptive_max_pool3d_empty": lambda lib: lib.nn.functional.adaptive_max_pool3d(_ones(lib, 1, 2, 0, 3, 3), 2),
    "max_unpool2d_index": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 30]]]]), 2),
    "max_unpool2d_negative_index": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[[0, 1], [2, -1]]]]), 2),
    "max_unpool2d_index_dtype": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[[0.0, 1], [2, 3]]]]), 2),
    "max_unpool2d_index_shape": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[0, 1, 2, 3]]]), 2),
    "max_unpool2d_dim": lambda lib: lib.nn.functional.max_unpool2d(_ones(lib, 2, 2), lib.tensor([[0, 1], [2, 3]]), 2),
    "max_unpool2d_output_size": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]), 2, output_size=(9, 9)),
    "max_unpool2d_output_size_len": lambda lib: lib.nn.functional.max_unpool2d(
        _ones(lib, 1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]), 2, output_size=(1, 2, 3)),
    "max_unpool1d_index": lambda lib: lib.nn.functional.max_unpool1d(_ones(lib, 1, 1, 2), lib.tensor([[[0, 9]]]), 2),
    "max_unpool3d_index": lambda lib: lib.nn.functional.max_unpool3d(
        _ones(lib, 1, 1, 2, 2, 2), lib.full((1, 1, 2, 2, 2), 70), 2),
    "max_unpool3d_dim": lambda lib: lib.nn.functional.max_unpool3d(_ones(lib, 2, 2, 2), lib.full((2, 2, 2), 3), 2),
    "max_unpool3d_index_shape": lambda lib: lib.nn.functional.max_unpool3d(
        _ones(lib, 1, 1, 2, 2, 2), lib.full((1, 1, 2, 2, 1), 3), 2),
    "pdist_dim": lambda lib: lib.nn.functional.pdist(_ones(lib, 3, 4, 2)),
    "pdist_p": lambda lib: lib.nn.functional.pdist(_ones(lib, 3, 4), -1),
    "pdist_dtype": lambda lib: lib.nn.functional.pdist(lib.ones(3, 4, dtype=lib.int64)),
    "bilinear_batch": lambda lib: lib.nn.functional.bilinear(_ones(lib, 3, 5), _ones(lib, 4, 6), _ones(lib, 7, 5, 6)),
    "bilinear_dims": lambda lib: lib.nn.functional.bilinear(_ones(lib, 3, 5), _ones(lib, 6), _ones(lib, 7, 5, 6)),
    "bilinear_in1": lambda lib: lib.nn.functional.bilinear(_ones(lib, 3, 5), _ones(lib, 3, 6), _ones(lib, 7, 4, 6)),
    "bilinear_in2": lambda lib: lib.nn.functional.bilinear(_ones(lib, 3, 5), _ones(lib, 3, 6), _ones(lib, 7, 5, 4)),
    "bilinear_bias": lambda lib: lib.nn.functional.bilinear(_ones(lib, 3, 5), _ones(lib, 3, 6), _ones(lib, 7, 5, 6),
                                                            _ones(lib, 6)),
    "channel_shuffle_groups": lambda lib: lib.nn.functional.channel_shuffle(_ones(lib, 1, 4, 2, 2), 0),
    "channel_shuffle_divisible": lambda lib: lib.nn.functional.channel_shuffle(_ones(lib, 1, 5, 2, 2), 2),
    "channel_shuffle_dim": lambda lib: lib.nn.functional.channel_shuffle(_ones(lib, 4, 2), 2),
    "local_response_norm_dim": lambda lib: lib.nn.functional.local_response_norm(_ones(lib, 1, 4), 2),
    "conv3d_module_same_strided": lambda lib: lib.nn.Conv3d(2, 2, 3, padding="same", stride=2),
    "conv3d_module_groups": lambda lib: lib.nn.Conv3d(3, 2, 3, groups=2),
    "conv_transpose3d_module_padding_mode": lambda lib: lib.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    torch = _torch()
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](ferrograd)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


REPRS = [
    "Conv3d(4, 8, 3)",
    "Conv3d(4, 8, (3, 2, 1), stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode='reflect')",
    "Conv3d(4, 8, 3, padding='same')",
    "ConvTranspose3d(4, 8, 3, stride=2, output_padding=1)",
    "ConvTranspose3d(4, 8, (1, 2, 3), groups=4, dilation=(1, 1, 2), bias=False)",
    "MaxPool3d(2)",
    "MaxPool3d((2, 1, 2), stride=1, padding=1, dilation=2, return_indices=True, ceil_mode=True)",
    "AvgPool3d(2)",
    "AvgPool3d((2, 3, 3), stride=1, ceil_mode=True, divisor_override=2)",
    "AdaptiveAvgPool3d((2, None, 3))",
    "AdaptiveMaxPool3d(2)",
    "LPPool1d(2, 3)",
    "LPPool2d(2, 3, stride=2)",
    "LPPool3d(1.5, (2, 2, 2), ceil_mode=True)",
    "MaxUnpool1d(2)",
    "MaxUnpool2d(2, stride=1, padding=1)",
    "MaxUnpool3d((2, 2, 1))",
    "LocalResponseNorm(3)",
    "LocalResponseNorm(2, 0.1, 0.5, 2)",
    "Bilinear(3, 4, 5)",
    "Bilinear(3, 4, 5, bias=False)",
    "Fold((4, 5), 2)",
    "Fold(4, (2, 3), dilation=2, padding=1, stride=2)",
    "Unfold(2, padding=1)",
    "ChannelShuffle(3)",
    "LazyLinear(5)",
    "LazyConv1d(5, 3)",
    "LazyConv2d(5, 3, stride=2, bias=False)",
    "LazyConv3d(5, 3, padding=1)",
    "LazyConvTranspose1d(5, 3)",
    "LazyConvTranspose2d(5, 3, output_padding=0)",
    "LazyConvTranspose3d(5, 2, stride=2)",
    "Identity()",
    "Flatten()",
    "Unflatten(1, (2, 3))",
]


@pytest.mark.parametrize("expr", REPRS)
def test_reprs_match_torch(expr):
    torch = _torch()
    assert repr(eval("nn." + expr, {"nn": nn})) == repr(eval("nn." + expr, {"nn": torch.nn}))


def test_modules_match_torch_with_the_same_weights():
    torch = _torch()
    x = _randn(2, 4, 5, 6, 5)
    for make in (lambda lib: lib.nn.Conv3d(4, 6, 3, padding=1, padding_mode="circular", groups=2),
                 lambda lib: lib.nn.Conv3d(4, 6, (2, 3, 2), padding="same", padding_mode="reflect"),
                 lambda lib: lib.nn.Conv3d(4, 6, 3, stride=2, padding=1, padding_mode="replicate", bias=False),
                 lambda lib: lib.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            theirs, ours = make(torch).double(), make(ferrograd).double()
            ours.load_state_dict({k: ferrograd.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
            np.testing.assert_allclose(_np(ours(ferrograd.tensor(x))), theirs(torch.tensor(x)).detach().numpy(),
                                       rtol=1e-10, atol=1e-10)
    t = torch.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1).double()
    m = ferrograd.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1).double()
    m.load_state_dict({k: ferrograd.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    np.testing.assert_allclose(_np(m(ferrograd.tensor(x), output_size=[10, 12, 10])),
                               t(torch.tensor(x), output_size=[10, 12, 10]).detach().numpy(), rtol=1e-10, atol=1e-10)


def test_max_unpool_matches_torch():
    torch = _torch()
    for nd, shape, kw in ((1, (2, 3, 9), dict(kernel_size=2)),
                          (2, (2, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
                          (3, (2, 2, 4, 6, 5), dict(kernel_size=2))):
        x = _randn(*shape)
        pool = getattr(torch.nn.functional, f"max_pool{nd}d")
        out, idx = pool(torch.tensor(x), return_indices=True, **kw)
        size = list(shape[-nd:])
        theirs_in = out.clone().requires_grad_(True)
        theirs = getattr(torch.nn.functional, f"max_unpool{nd}d")(theirs_in, idx, output_size=size, **kw)
        ours_in = ferrograd.tensor(out.numpy(), requires_grad=True)
        ours = getattr(F, f"max_unpool{nd}d")(ours_in, ferrograd.tensor(idx.numpy()), output_size=size, **kw)
        np.testing.assert_array_equal(_np(ours), theirs.detach().numpy())
        g = _randn(*shape)
        theirs.backward(torch.tensor(g))
        ours.backward(ferrograd.tensor(g))
        np.testing.assert_allclose(_np(ours_in.grad), theirs_in.grad.numpy(), rtol=1e-12)
