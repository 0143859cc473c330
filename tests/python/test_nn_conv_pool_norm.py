"""Convolution, pooling, normalisation and padding of ferrograd.nn (functionals and modules).

Always-run tests compare with naive NumPy implementations (convolution as a sum over kernel
offsets, pooling window by window, normalisation from its formula) and check gradients with
gradcheck in float64. Parity tests (skipped without PyTorch) compare values, gradients, grad_fn
names, running statistics, reprs and error messages with PyTorch, and train a small CNN on the
sklearn digits from the same initial weights.
"""

import math
import os
import re
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn as nn
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(1234)


def _torch():
    return pytest.importorskip("torch")


def _randn(*shape):
    return RNG.standard_normal(shape)


def _np(t):
    return t.detach().numpy()


def _t(a, grad=False):
    return ferrograd.tensor(a, requires_grad=grad)


# ============================================================ NumPy references


def _out_size(size, k, s, p, d, ceil_mode=False):
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _conv2d_np(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = _out_size(h, kh, sh, ph, dh), _out_size(wd, kw, sw, pw, dw)
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs, ws = xp[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def _conv_transpose2d_np(x, w, b=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1,
                         dilation=(1, 1)):
    n, c, h, wd = x.shape
    cin, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    cg = c // groups
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    for g in range(groups):
        xs, ws = x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                full[:, g * og : (g + 1) * og, i * dh : i * dh + sh * (h - 1) + 1 : sh,
                     j * dw : j * dw + sw * (wd - 1) + 1 : sw] += np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = full[:, :, ph : ph + oh, pw : pw + ow]
    if b is not None:
        out = out + b[None, :, None, None]
    return out


def _max_pool2d_np(x, k, s, p, d=(1, 1), ceil_mode=False):
    """Values and flat indices; the first maximum in window order wins and NaN wins, like PyTorch."""
    n, c, h, w = x.shape
    oh, ow = _out_size(h, k[0], s[0], p[0], d[0], ceil_mode), _out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    out = np.full((n, c, oh, ow), -np.inf)
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for a in range(oh):
        for bb in range(ow):
            for i in range(k[0]):
                for j in range(k[1]):
                    r, q = a * s[0] - p[0] + i * d[0], bb * s[1] - p[1] + j * d[1]
                    if 0 <= r < h and 0 <= q < w:
                        v = x[:, :, r, q]
                        better = (v > out[:, :, a, bb]) | np.isnan(v)
                        out[:, :, a, bb] = np.where(better, v, out[:, :, a, bb])
                        idx[:, :, a, bb] = np.where(better, r * w + q, idx[:, :, a, bb])
    return out, idx


def _avg_pool2d_np(x, k, s, p, ceil_mode=False, count_include_pad=True, divisor_override=None):
    n, c, h, w = x.shape
    oh, ow = _out_size(h, k[0], s[0], p[0], 1, ceil_mode), _out_size(w, k[1], s[1], p[1], 1, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for a in range(oh):
        for bb in range(ow):
            h0, w0 = a * s[0] - p[0], bb * s[1] - p[1]
            h1, w1 = min(h0 + k[0], h + p[0]), min(w0 + k[1], w + p[1])
            pool_size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
            if divisor_override is not None:
                div = divisor_override
            elif count_include_pad:
                div = pool_size
            else:
                div = (h1 - h0) * (w1 - w0)
            out[:, :, a, bb] = total / div
    return out


def _adaptive_pool2d_np(x, oh, ow, reduce):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for a in range(oh):
        for bb in range(ow):
            h0, h1 = (a * h) // oh, -(-((a + 1) * h) // oh)
            w0, w1 = (bb * w) // ow, -(-((bb + 1) * w) // ow)
            out[..., a, bb] = reduce(x[..., h0:h1, w0:w1], axis=(-2, -1))
    return out


def _normalize_np(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


# ============================================================ always run: values


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 2), 2), ((3, 2), (2, 0), (2, 1), 1),
     ((1, 1), (1, 1), (1, 1), 4)],
)
def test_conv2d_matches_naive_numpy(stride, padding, dilation, groups):
    x, w, b = _randn(2, 4, 9, 8), _randn(6 if groups != 4 else 8, 4 // groups, 3, 2), None
    b = _randn(w.shape[0])
    out = F.conv2d(_t(x), _t(w), _t(b), stride, padding, dilation, groups)
    np.testing.assert_allclose(_np(out), _conv2d_np(x, w, b, stride, padding, dilation, groups), rtol=1e-10,
                               atol=1e-10)
    # unbatched input, int arguments, no bias
    out = F.conv2d(_t(x[0]), _t(w), None, stride[0], padding[0], dilation[0], groups)
    expected = _conv2d_np(x[:1], w, None, (stride[0],) * 2, (padding[0],) * 2, (dilation[0],) * 2, groups)[0]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)


def test_conv1d_matches_naive_numpy():
    x, w, b = _randn(2, 4, 11), _randn(6, 2, 3), _randn(6)
    out = F.conv1d(_t(x), _t(w), _t(b), stride=2, padding=1, dilation=2, groups=2)
    expected = _conv2d_np(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    # unbatched, padding='same' with an odd kernel
    w2 = _randn(3, 4, 3)
    out = F.conv1d(_t(x[1]), _t(w2), padding="same")
    expected = _conv2d_np(x[1:, :, None], w2[:, :, None], None, (1, 1), (0, 1))[0, :, 0]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)


def test_conv2d_padding_same_and_valid():
    x = _randn(1, 2, 7, 6)
    # odd kernel: symmetric padding
    w = _randn(3, 2, 3, 5)
    np.testing.assert_allclose(_np(F.conv2d(_t(x), _t(w), padding="same")), _conv2d_np(x, w, padding=(1, 2)),
                               atol=1e-10)
    # even kernel: the extra zero goes on the right/bottom, like PyTorch
    w = _randn(3, 2, 2, 4)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the zero-padded-copy warning (tested below)
        out = F.conv2d(_t(x), _t(w), padding="same")
    assert out.shape == (1, 3, 7, 6)
    np.testing.assert_allclose(_np(out), _conv2d_np(xp, w), atol=1e-10)
    np.testing.assert_allclose(_np(F.conv2d(_t(x), _t(w), padding="valid")), _conv2d_np(x, w), atol=1e-10)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(_t(x), _t(w), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string: 'full'"):
        F.conv2d(_t(x), _t(w), padding="full")


def _conv2d_grads_np(x, w, g, stride, padding, dilation, groups):
    """(dx, dw) of sum(conv2d(x, w) * g), by the same patch sums as `_conv2d_np`."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dxp, dwt = np.zeros_like(xp), np.zeros_like(w)
    og = o // groups
    for gi in range(groups):
        cs, os_ = slice(gi * cg, (gi + 1) * cg), slice(gi * og, (gi + 1) * og)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                dwt[os_, :, i, j] = np.einsum("nchw,nohw->oc", xp[:, cs, rows, cols], g[:, os_])
                dxp[:, cs, rows, cols] += np.einsum("nohw,oc->nchw", g[:, os_], w[os_, :, i, j])
    return dxp[:, :, ph : ph + h, pw : pw + wd], dwt


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "n,groups,stride,padding,dilation",
    [(7, 1, (1, 1), (1, 1), (1, 1)), (9, 2, (2, 1), (0, 2), (1, 2)), (1, 1, (1, 1), (0, 0), (1, 1)),
     (5, 1, (1, 1), (2, 2), (2, 2)), (3, 1, (1, 1), (2, 0), (1, 1))],
)
def test_conv2d_batched_gemm_matches_naive_numpy(dtype, n, groups, stride, padding, dilation):
    # enough work to split the batch over threads and put several samples in one gemm, in
    # forward, input grad and weight grad
    x, w, b = _randn(n, 8 * groups, 13, 11), _randn(8 * groups, 8, 3, 3), _randn(8 * groups)
    fx, fw, fb = (ferrograd.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b))
    out = F.conv2d(fx, fw, fb, stride, padding, dilation, groups)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_np(out), _conv2d_np(x, w, b, stride, padding, dilation, groups), **tol)
    g = _randn(*out.shape)
    out.backward(ferrograd.tensor(g.astype(dtype)))
    dx, dw = _conv2d_grads_np(x, w, g, stride, padding, dilation, groups)
    np.testing.assert_allclose(fx.grad.numpy(), dx, **tol)
    np.testing.assert_allclose(fw.grad.numpy(), dw, **tol)
    np.testing.assert_allclose(fb.grad.numpy(), g.sum(axis=(0, 2, 3)), **tol)


def test_conv_transpose2d_matches_naive_numpy():
    x, w, b = _randn(2, 4, 5, 4), _randn(4, 3, 3, 2), _randn(6)
    out = F.conv_transpose2d(_t(x), _t(w), _t(b), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                             dilation=(1, 2))
    expected = _conv_transpose2d_np(x, w, b, (2, 3), (1, 0), (1, 2), 2, (1, 2))
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    # conv_transpose2d is the adjoint of conv2d: <conv(x), y> == <x, conv_t(y)>
    x, w, y = _randn(1, 3, 7, 7), _randn(5, 3, 3, 3), _randn(1, 5, 4, 4)
    lhs = (_conv2d_np(x, w, stride=(2, 2), padding=(1, 1)) * y).sum()
    rhs = (x * _np(F.conv_transpose2d(_t(y), _t(w), stride=2, padding=1))).sum()
    assert abs(lhs - rhs) < 1e-9


def test_conv_transpose1d_matches_naive_numpy():
    x, w = _randn(2, 2, 5), _randn(2, 3, 3)
    out = F.conv_transpose1d(_t(x), _t(w), stride=2, padding=1, output_padding=1)
    expected = _conv_transpose2d_np(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (0, 1))[:, :, 0]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "k,s,p,d,ceil_mode",
    [((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 2), (2, 1), (1, 0), (1, 2), True),
     ((3, 3), (3, 3), (1, 1), (1, 1), True), ((2, 3), (1, 2), (1, 1), (2, 1), False)],
)
def test_max_pool2d_matches_naive_numpy(k, s, p, d, ceil_mode):
    x = _randn(2, 3, 9, 8)
    out, idx = F.max_pool2d(_t(x), k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    ref, ref_idx = _max_pool2d_np(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(_np(out), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    assert idx.dtype == ferrograd.int64
    # the gradient goes to the arg max of each window (summed where windows share it)
    xg = _t(x, True)
    F.max_pool2d(xg, k, s, p, d, ceil_mode).sum().backward()
    expected = np.zeros(x.size)
    np.add.at(expected.reshape(6, -1), (np.arange(6)[:, None], ref_idx.reshape(6, -1)), 1.0)
    np.testing.assert_array_equal(xg.grad.numpy(), expected.reshape(x.shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k,w", [(2, 37), (2, 28), (2, 14), (3, 29)])
def test_max_pool_windows_inside_with_ties_and_nan(dtype, k, w):
    # the unpadded fast paths (2x2 stride 2 in lanes of 8, 4 and 1; k x k stride k): values with
    # many ties and a few NaN, against the naive rule (first maximum wins, NaN wins)
    rng = np.random.default_rng(k * 100 + w)
    x = rng.integers(0, 3, size=(2, 3, 12, w)).astype(dtype)
    x[rng.random(x.shape) < 0.03] = np.nan
    out, idx = F.max_pool2d(_t(x), k, return_indices=True)
    ref, ref_idx = _max_pool2d_np(x.astype(np.float64), (k, k), (k, k), (0, 0))
    np.testing.assert_array_equal(_np(out), ref.astype(dtype))
    np.testing.assert_array_equal(idx.numpy(), ref_idx)


def test_max_pool_ties_take_the_first_maximum():
    x = np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 1.0, 3.0]]]])
    out, idx = F.max_pool2d(_t(x), 2, return_indices=True)
    np.testing.assert_array_equal(_np(out), [[[[3.0, 3.0]]]])
    np.testing.assert_array_equal(idx.numpy(), [[[[1, 2]]]])
    out, idx = F.max_pool1d(_t(x[0, 0]), 2, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), [[1, 2], [0, 3]])


def test_max_pool1d_and_stride_default():
    x = _randn(2, 3, 10)
    out, idx = F.max_pool1d(_t(x), 3, padding=1, return_indices=True)
    ref, ref_idx = _max_pool2d_np(x[:, :, None], (1, 3), (1, 3), (0, 1))
    np.testing.assert_array_equal(_np(out), ref[:, :, 0])
    np.testing.assert_array_equal(idx.numpy(), ref_idx[:, :, 0])
    out = F.max_pool1d(_t(x[0]), 2, 1, 0, 2, True)
    ref = _max_pool2d_np(x[:1, :, None], (1, 2), (1, 1), (0, 0), (1, 2), True)[0]
    np.testing.assert_array_equal(_np(out), ref[0, :, 0])


@pytest.mark.parametrize(
    "k,s,p,ceil_mode,count_include_pad,divisor",
    [((2, 2), (2, 2), (0, 0), False, True, None), ((3, 3), (2, 2), (1, 1), True, True, None),
     ((3, 3), (2, 2), (1, 1), True, False, None), ((3, 2), (2, 1), (1, 1), False, True, 5),
     ((4, 3), (3, 2), (2, 1), True, False, None)],
)
def test_avg_pool2d_matches_naive_numpy(k, s, p, ceil_mode, count_include_pad, divisor):
    x = _randn(2, 3, 9, 8)
    out = F.avg_pool2d(_t(x), k, s, p, ceil_mode, count_include_pad, divisor)
    np.testing.assert_allclose(_np(out), _avg_pool2d_np(x, k, s, p, ceil_mode, count_include_pad, divisor),
                               rtol=1e-12, atol=1e-12)


def test_avg_pool1d_matches_naive_numpy():
    x = _randn(2, 3, 10)
    out = F.avg_pool1d(_t(x), 4, 3, 2, ceil_mode=True, count_include_pad=False)
    ref = _avg_pool2d_np(x[:, :, None], (1, 4), (1, 3), (0, 2), True, False)[:, :, 0]
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12)


@pytest.mark.parametrize("size,osize", [((9, 7), (4, 3)), ((8, 8), (8, 8)), ((5, 7), (7, 2)), ((6, 6), (1, 1))])
def test_adaptive_pool2d_matches_naive_numpy(size, osize):
    x = _randn(2, 3, *size)
    np.testing.assert_allclose(_np(F.adaptive_avg_pool2d(_t(x), osize)), _adaptive_pool2d_np(x, *osize, np.mean),
                               rtol=1e-12, atol=1e-12)
    out, idx = F.adaptive_max_pool2d(_t(x), osize, return_indices=True)
    np.testing.assert_array_equal(_np(out), _adaptive_pool2d_np(x, *osize, np.max))
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2),
                                  _np(out).reshape(2, 3, -1))
    # 3-d input and None (keep that size)
    out = F.adaptive_avg_pool2d(_t(x[0]), (None, osize[1]))
    np.testing.assert_allclose(_np(out), _adaptive_pool2d_np(x[0], size[0], osize[1], np.mean), rtol=1e-12)


def test_adaptive_pool1d_matches_naive_numpy():
    x = _randn(2, 3, 10)
    np.testing.assert_allclose(_np(F.adaptive_avg_pool1d(_t(x), 4)),
                               _adaptive_pool2d_np(x[:, :, None], 1, 4, np.mean)[:, :, 0], rtol=1e-12)
    np.testing.assert_array_equal(_np(F.adaptive_max_pool1d(_t(x[0]), 3)),
                                  _adaptive_pool2d_np(x[:1, :, None], 1, 3, np.max)[0, :, 0])


def test_batch_norm_training_and_eval_closed_form():
    x, w, b = _randn(4, 3, 5, 2), _randn(3), _randn(3)
    rm, rv = _randn(3), np.abs(_randn(3)) + 0.5
    frm, frv = _t(rm.copy()), _t(rv.copy())
    out = F.batch_norm(_t(x), frm, frv, _t(w), _t(b), training=True, momentum=0.3, eps=1e-3)
    expected = _normalize_np(x, (0, 2, 3), 1e-3) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    # running statistics: exponential average of the mean and the unbiased variance
    np.testing.assert_allclose(_np(frm), 0.7 * rm + 0.3 * x.mean(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(_np(frv), 0.7 * rv + 0.3 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-12)
    # eval: the running statistics normalise
    out = F.batch_norm(_t(x), _t(rm), _t(rv), _t(w), _t(b), training=False, eps=1e-3)
    expected = (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-3) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    # 2-d input, no affine, no running stats
    x2 = _randn(6, 4)
    np.testing.assert_allclose(_np(F.batch_norm(_t(x2), None, None, training=True)), _normalize_np(x2, (0,), 1e-5),
                               rtol=1e-10, atol=1e-10)


def test_batch_norm_functional_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size"):
        F.batch_norm(_t(_randn(1, 3)), None, None, training=True)
    with pytest.raises(ValueError, match="batch_norm eps must be positive during training, but got 0"):
        F.batch_norm(_t(_randn(2, 3)), None, None, training=True, eps=0)
    with pytest.raises(ValueError, match="batch_norm eps must be non-negative, but got -1"):
        F.batch_norm(_t(_randn(2, 3)), _t(np.zeros(3)), _t(np.ones(3)), eps=-1)


@pytest.mark.parametrize("kind", ["layer", "group", "batch"])
def test_norm_mixed_dtype_errors(kind):
    # PyTorch's rule: the first given parameter's dtype differing from the input's is "mixed",
    # which needs float32 parameters and a reduced-float input; otherwise one dtype throughout
    f32, f64 = ferrograd.float32, ferrograd.float64

    def run(x_dtype, w_dtype, b_dtype):
        x = ferrograd.randn(4, 6, dtype=x_dtype)
        w, b = ferrograd.randn(6, dtype=w_dtype), ferrograd.randn(6, dtype=b_dtype)
        if kind == "layer":
            return F.layer_norm(x, (6,), w, b)
        if kind == "group":
            return F.group_norm(x, 2, w, b)
        return F.batch_norm(x, None, None, w, b, training=True)

    with pytest.raises(RuntimeError, match=r"^mixed dtype \(CPU\): all inputs must share same datatype\.$"):
        run(f64, f32, f32)
    for dtypes in [(f32, f64, f64), (f32, f64, f32), (f64, f32, f64)]:
        with pytest.raises(RuntimeError, match=r"^mixed dtype \(CPU\): expect parameter to have scalar type of Float$"):
            run(*dtypes)
    with pytest.raises(RuntimeError, match=r"^expected scalar type Double but found Float$"):
        run(f64, f64, f32)
    with pytest.raises(RuntimeError, match=r"^expected scalar type Float but found Double$"):
        run(f32, f32, f64)


def test_batch_norm_running_stats_dtype_errors():
    # the running statistics come after weight and bias in PyTorch's mixed-dtype rule
    f64 = ferrograd.float64
    zeros32, ones32 = ferrograd.zeros(6), ferrograd.ones(6)
    zeros64, ones64 = ferrograd.zeros(6, dtype=f64), ferrograd.ones(6, dtype=f64)
    for training in [True, False]:
        x = ferrograd.randn(4, 6, dtype=f64)
        with pytest.raises(RuntimeError, match=r"^mixed dtype \(CPU\): all inputs must share same datatype\.$"):
            F.batch_norm(x, zeros32, ones32, None, None, training=training)
        with pytest.raises(RuntimeError, match=r"^expected scalar type Double but found Float$"):
            F.batch_norm(x, zeros32, ones32, ones64, None, training=training)
        with pytest.raises(RuntimeError, match=r"^expected scalar type Float but found Double$"):
            F.batch_norm(x.float(), zeros64, ones64, ones32, None, training=training)


def test_layer_norm_normalized_shape_errors():
    x = ferrograd.randn(4, 16)
    with pytest.raises(TypeError, match=r"must be tuple of ints, not int"):
        F.layer_norm(x, 16)
    with pytest.raises(TypeError, match=r"but found element of type float at pos 0"):
        F.layer_norm(x, (16.0,))
    with pytest.raises(TypeError, match=r"but found element of type bool at pos 0"):
        F.layer_norm(ferrograd.randn(4, 1, 1), [True, 1])
    with pytest.raises(TypeError, match=r"failed to unpack the object at pos 2 .*but got float"):
        F.layer_norm(ferrograd.randn(4, 1, 1), [1, 1.0])
    assert F.layer_norm(ferrograd.randn(4, 1, 1), [1, True]).shape == (4, 1, 1)  # as PyTorch
    with pytest.raises(RuntimeError, match=r"Expected normalized_shape to be at least 1-dimensional"):
        F.layer_norm(x, [])
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(x, (16,), ferrograd.randn(15))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 8\], but got input of size\[4, 16\]"):
        F.layer_norm(x, (8,))
    # numpy integers and torch.Size are tuples of ints too
    assert F.layer_norm(x, (np.int64(16),)).shape == (4, 16)
    assert F.layer_norm(x, x.shape[1:]).shape == (4, 16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm_large_closed_form(dtype):
    # 15 (sample, group) rows of 3600: enough for the kernel to split the rows over threads, with
    # a part starting mid-sample (the affine entry of a row depends on its index)
    x, w, b, g = _randn(5, 12, 30, 30) * 2 + 1, _randn(12), _randn(12), _randn(5, 12, 30, 30)
    fx, fw, fb = (ferrograd.tensor(a.astype(dtype), requires_grad=True) for a in (x, w, b))
    out = F.group_norm(fx, 3, fw, fb, eps=1e-4)
    rows = x.reshape(5, 3, -1)
    rstd = 1 / np.sqrt(rows.var(-1, keepdims=True) + 1e-4)
    xh = ((rows - rows.mean(-1, keepdims=True)) * rstd).reshape(x.shape)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_np(out), xh * w[:, None, None] + b[:, None, None], **tol)
    out.backward(ferrograd.tensor(g.astype(dtype)))
    dxh = (g * w[:, None, None]).reshape(5, 3, -1)
    xr = xh.reshape(5, 3, -1)
    dx = (dxh - dxh.mean(-1, keepdims=True) - xr * (dxh * xr).mean(-1, keepdims=True)) * rstd
    np.testing.assert_allclose(fx.grad.numpy(), dx.reshape(x.shape), **tol)
    np.testing.assert_allclose(fw.grad.numpy(), (g * xh).sum(axis=(0, 2, 3)), **tol)
    np.testing.assert_allclose(fb.grad.numpy(), g.sum(axis=(0, 2, 3)), **tol)


@pytest.mark.parametrize("offset", [0.0, 300.0])
def test_layer_norm_float32_rows_of_every_length(offset):
    # the float32 row statistics run in vectors of 16, blocks of 1024 and a masked tail: lengths
    # around each boundary, against float64 statistics (an offset far from 0 tests the variance)
    rng = np.random.default_rng(7)
    for n in [1, 2, 15, 16, 17, 63, 64, 65, 80, 255, 1023, 1024, 1025, 2100]:
        x = (rng.standard_normal((3, n)) * 2 + offset).astype(np.float32)
        xd = x.astype(np.float64)
        mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
        expected = (xd - mean) / np.sqrt(var + 1e-5)
        got = F.layer_norm(ferrograd.tensor(x), (n,)).numpy()
        # x - mean in float32 near 300 is exact only to the mean's rounding (300 * 2**-24)
        atol = 1e-6 + offset * 2**-23
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=atol, err_msg=f"n={n}")


def test_group_norm_and_instance_norm_closed_form():
    x, w, b = _randn(2, 6, 4, 3), _randn(6), _randn(6)
    out = F.group_norm(_t(x), 3, _t(w), _t(b), eps=1e-4)
    expected = _normalize_np(x.reshape(2, 3, -1), (2,), 1e-4).reshape(x.shape) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    out = F.instance_norm(_t(x), weight=_t(w), bias=_t(b))
    expected = _normalize_np(x, (2, 3), 1e-5) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-10)
    # instance norm with running stats: the per-sample statistics averaged over the batch
    rm, rv = _t(np.zeros(6)), _t(np.ones(6))
    F.instance_norm(_t(x), rm, rv, momentum=0.5)
    np.testing.assert_allclose(_np(rm), 0.5 * x.mean(axis=(2, 3)).mean(0), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), 0.5 + 0.5 * x.var(axis=(2, 3), ddof=1).mean(0), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(_t(_randn(4)), 1)


def test_layer_norm_native_closed_form():
    x, w, b = _randn(3, 4, 5), _randn(5), _randn(5)
    out = F.layer_norm(_t(x), (5,), _t(w), _t(b), 1e-3)
    np.testing.assert_allclose(_np(out), _normalize_np(x, (2,), 1e-3) * w + b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_matches_numpy(mode, np_mode):
    x = _randn(2, 3, 5, 6)
    out = F.pad(_t(x), (2, 1, 3, 0), mode=mode)
    np.testing.assert_array_equal(_np(out), np.pad(x, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=np_mode))
    out = F.pad(_t(x[0]), (1, 4), mode=mode)
    np.testing.assert_array_equal(_np(out), np.pad(x[0], ((0, 0), (0, 0), (1, 4)), mode=np_mode))


def test_pad_constant_value_and_negative_amounts():
    x = _randn(2, 3, 4)
    out = F.pad(_t(x), (1, -1, -1, 2, 1, 0), value=2.5)
    expected = np.pad(x[:, 1:, :-1], ((1, 0), (0, 2), (1, 0)), constant_values=2.5)
    np.testing.assert_array_equal(_np(out), expected)
    np.testing.assert_array_equal(_np(F.pad(_t(x), (-1, -2))), x[:, :, 1:2])
    np.testing.assert_array_equal(_np(F.pad(_t(x), (-1, 1), mode="reflect")), np.pad(x, ((0, 0),) * 2 + ((0, 1),),
                                                                                         "reflect")[:, :, 1:])
    assert F.pad(_t(x), []).shape == x.shape
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(_t(x), (1,))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(_t(x), (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(_t(x), (1, 1), mode="reflect", value=1.0)
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(_t(x), (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once."):
        F.pad(_t(x), (5, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(_t(x[None]), (1, 1), mode="replicate")


def test_constant_pad_is_one_native_node():
    # PyTorch records ConstantPadNdBackward0, whose gradient is the same op with the amounts
    # negated (so a double backward records it again)
    x = _t(_randn(2, 3), True)
    y = F.pad(x, (1, -1, 2, 0), value=3.0)
    assert type(y.grad_fn).__name__ == "ConstantPadNdBackward0"
    assert ferrograd.constant_pad_nd(x, (1, 1)).shape == (2, 5)
    (g,) = ferrograd.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 2 * np.pad(_np(x)[:, :-1], ((0, 0), (0, 1))), rtol=1e-12)
    assert type(g.grad_fn).__name__ in ("ConstantPadNdBackward0", "MulBackward0")
    assert gradgradcheck(lambda a: F.pad(a, (2, -1, 1, 1), value=0.5), (x,))
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative."):
        F.pad(x, (-2, -2))
    # integer and bool tensors take the value converted, as in PyTorch
    assert F.pad(ferrograd.tensor([1, 2]), (1, 1), value=2.7).tolist() == [2, 1, 2, 2]
    assert F.pad(ferrograd.tensor([True]), (1, 1), value=1).tolist() == [True, True, True]


@pytest.mark.parametrize("mode,prefix", [("reflect", "ReflectionPad"), ("replicate", "ReplicationPad")])
@pytest.mark.parametrize(
    "shape,pad", [((2, 5), (1, 2)), ((1, 2, 5, 4), (1, 2, 2, -1)), ((1, 1, 3, 4, 3), (1, 1, 0, 2, 1, 1))]
)
def test_reflection_and_replication_pad_are_native_nodes(mode, prefix, shape, pad):
    # one node named as PyTorch names it, whose gradient (the adjoint, summing the copies) is
    # differentiable again as ...BackwardBackward0
    x = _t(_randn(*shape), True)
    y = F.pad(x, pad, mode=mode)
    n = len(pad) // 2
    assert type(y.grad_fn).__name__ == f"{prefix}{n}DBackward0"
    (g,) = ferrograd.autograd.grad((y * y).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ in (f"{prefix}{n}DBackwardBackward0", "MulBackward0")
    assert gradcheck(lambda a: F.pad(a, pad, mode=mode), (x,))
    assert gradgradcheck(lambda a: F.pad(a, pad, mode=mode), (x,))


def test_int_and_tuple_arguments_are_normalised():
    from ferrograd.nn.functional._utils import _pair, _single

    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2) and _single(4) == (4,)
    x = _t(_randn(1, 2, 6, 6))
    with pytest.raises(TypeError, match=r"max_pool2d\(\): argument 'kernel_size' \(position 2\) must be tuple of "
                                        r"ints, not float"):
        F.max_pool2d(x, 2.0)
    with pytest.raises(RuntimeError, match="max_pool2d: kernel_size must either be a single int, or a tuple of two"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="avg_pool2d: stride must either be omitted, a single int, or a tuple"):
        F.avg_pool2d(x, 2, (1, 1, 1))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match=r"max_pool1d\(\) padding should be at most half of kernel size, but got "
                                           r"padding=2 and kernel_size=2"):
        F.max_pool1d(x[0], 2, 2, 2)
    with pytest.raises(RuntimeError, match=r"avg_pool1d\(\) argument 'kernel_size' should contain one int \(got 2\)"):
        F.avg_pool1d(x[0], (2, 2))
    with pytest.raises(RuntimeError, match="expected stride to be a single integer value or a list of 2 values to "
                                           r"match the convolution dimensions, but got stride=\[1, 1, 1\]"):
        F.conv2d(x, _t(_randn(3, 2, 3, 3)), stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[6, 6\]"):
        F.conv2d(x[0, 0], _t(_randn(3, 2, 3, 3)))
    # a 1-tuple broadcasts to every spatial dimension
    assert F.conv2d(x, _t(_randn(3, 2, 3, 3)), stride=(2,), padding=[1]).shape == (1, 3, 3, 3)


# ============================================================ always run: gradcheck


def test_gradcheck_conv():
    x, w, b = _t(_randn(2, 4, 5, 4), True), _t(_randn(4, 2, 3, 2), True), _t(_randn(4), True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, (2, 1), (1, 0), (1, 2), 2), (x, w, b))
    x1, w1 = _t(_randn(2, 3, 7), True), _t(_randn(2, 3, 3), True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=2, dilation=2), (x1, w1))
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding="same"), (x1, _t(_randn(2, 3, 4), True)))
    wt, bt = _t(_randn(4, 3, 3, 2), True), _t(_randn(6), True)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, (2, 1), (1, 0), (1, 0), 2, (1, 2)), (x, wt, bt))


def test_gradcheck_pooling():
    x = _t(_randn(2, 2, 6, 5), True)
    assert gradcheck(lambda x: F.max_pool2d(x, (3, 2), (2, 1), 1, (1, 2), ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, (2, 3), 1, (1, 1), divisor_override=4), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool2d(x, (4, 3)), (x,))
    x1 = _t(_randn(2, 7), True)
    assert gradcheck(lambda x: F.max_pool1d(x, 3, 2, 1), (x1,))
    assert gradcheck(lambda x: F.avg_pool1d(x, 3, 2, 1), (x1,))


def test_gradcheck_norms():
    x = _t(_randn(3, 4, 3, 2), True)
    w, b = _t(_randn(4), True), _t(_randn(4), True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), (x, w, b))
    rm, rv = _t(_randn(4)), _t(np.abs(_randn(4)) + 0.5)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, False), (x, w, b))
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert gradcheck(lambda x: F.instance_norm(x), (x,))
    lw, lb = _t(_randn(3, 2), True), _t(_randn(3, 2), True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (3, 2), w, b), (x, lw, lb))


def test_gradcheck_pad():
    x = _t(_randn(2, 3, 4), True)
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert gradcheck(lambda x: F.pad(x, (2, -1, 1, 2), mode=mode), (x,))


# ============================================================ always run: modules


def test_conv_modules_parameters_and_init():
    m = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    assert m.weight.shape == (6, 2, 3, 2) and m.bias.shape == (6,)
    assert m.kernel_size == (3, 2) and m.stride == (2, 2) and m.padding == (1, 1) and m.dilation == (1, 1)
    bound = 1 / math.sqrt(2 * 3 * 2)  # kaiming_uniform(a=sqrt(5)) and the bias share 1/sqrt(fan_in)
    assert np.abs(_np(m.weight)).max() <= bound and np.abs(_np(m.bias)).max() <= bound
    assert np.abs(_np(m.weight)).max() > 0.5 * bound
    t = nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False)
    assert t.weight.shape == (4, 3, 3, 3) and t.bias is None
    assert nn.Conv1d(2, 3, 4).weight.shape == (3, 2, 4)
    assert nn.ConvTranspose1d(2, 3, 4, dtype=ferrograd.float64).weight.dtype == ferrograd.float64
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv1d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")


def test_conv_module_padding_modes_match_explicit_pad():
    x = _randn(2, 2, 5, 6)
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap"), ("zeros", "constant")):
        m = nn.Conv2d(2, 3, (3, 5), padding=(1, 2), padding_mode=mode, dtype=ferrograd.float64)
        expected = _conv2d_np(np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode), _np(m.weight), _np(m.bias))
        np.testing.assert_allclose(_np(m(_t(x))), expected, rtol=1e-10, atol=1e-10)
    m = nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular", dtype=ferrograd.float64)
    x1 = _randn(2, 2, 7)
    expected = _conv2d_np(np.pad(x1, ((0, 0), (0, 0), (1, 2)), mode="wrap")[:, :, None], _np(m.weight)[:, :, None],
                          _np(m.bias))[:, :, 0]
    np.testing.assert_allclose(_np(m(_t(x1))), expected, rtol=1e-10, atol=1e-10)


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=ferrograd.float64)
    x = _t(_randn(1, 2, 4, 4))
    assert m(x).shape == (1, 3, 7, 7)
    assert m(x, output_size=[8, 8]).shape == (1, 3, 8, 8)
    assert m(x, output_size=(1, 3, 8, 7)).shape == (1, 3, 8, 7)
    assert m(x[0], output_size=[3, 8, 8]).shape == (3, 8, 8)
    with pytest.raises(ValueError, match=r"requested an output size of \[9, 9\], but valid sizes range from "
                                         r"\[7, 7\] to \[8, 8\]"):
        m(x, output_size=[9, 9])
    with pytest.raises(ValueError, match=r"ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements "
                                         r"\(got 3\)"):
        m(x, output_size=[1, 8, 8])
    m1 = nn.ConvTranspose1d(2, 3, 3, stride=3)
    assert m1(_t(np.zeros((1, 2, 4), dtype=np.float32)), output_size=[12]).shape == (1, 3, 12)


def test_batchnorm_module_running_stats_closed_form():
    bn = nn.BatchNorm2d(3, momentum=None, dtype=ferrograd.float64)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype == ferrograd.int64 and int(bn.num_batches_tracked) == 0
    batches = [_randn(4, 3, 2, 2) for _ in range(3)]
    for x in batches:
        out = bn(_t(x))
        np.testing.assert_allclose(_np(out), _normalize_np(x, (0, 2, 3), 1e-5), rtol=1e-10, atol=1e-10)
    assert int(bn.num_batches_tracked) == 3
    # momentum=None: a cumulative average of the batch statistics
    np.testing.assert_allclose(_np(bn.running_mean), np.mean([x.mean(axis=(0, 2, 3)) for x in batches], 0),
                               rtol=1e-10)
    # (the first step averages with the initial running_var of 1 at factor 1: it is replaced)
    np.testing.assert_allclose(_np(bn.running_var), np.mean([x.var(axis=(0, 2, 3), ddof=1) for x in batches], 0),
                               rtol=1e-10)
    bn.eval()
    x = _randn(2, 3, 2, 2)
    expected = (x - _np(bn.running_mean)[:, None, None]) / np.sqrt(_np(bn.running_var)[:, None, None] + 1e-5)
    np.testing.assert_allclose(_np(bn(_t(x))), expected, rtol=1e-10, atol=1e-10)
    assert int(bn.num_batches_tracked) == 3


def test_batchnorm_module_options():
    bn = nn.BatchNorm1d(3, affine=False, track_running_stats=False, dtype=ferrograd.float64)
    assert bn.weight is None and bn.running_mean is None and list(bn.state_dict()) == []
    x = _randn(5, 3, 4)
    np.testing.assert_allclose(_np(bn.eval()(_t(x))), _normalize_np(x, (0, 2), 1e-5), rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(_t(_randn(2, 3, 2, 2)))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(_t(_randn(2, 3, 2)))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(_t(_randn(1, 3)))
    bn = nn.BatchNorm1d(3, bias=False)
    assert list(bn.state_dict()) == ["weight", "running_mean", "running_var", "num_batches_tracked"]
    # a state_dict saved before num_batches_tracked existed (version 1) still loads
    sd = nn.BatchNorm1d(3).state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    nn.BatchNorm1d(3).load_state_dict(sd)
    bn = nn.BatchNorm2d(3)
    bn.running_mean.fill_(2.0)
    bn.num_batches_tracked.fill_(4)
    bn.reset_running_stats()
    assert _np(bn.running_mean).tolist() == [0, 0, 0] and int(bn.num_batches_tracked) == 0


def test_group_norm_and_instance_norm_modules():
    gn = nn.GroupNorm(2, 4)
    np.testing.assert_array_equal(_np(gn.weight), np.ones(4))
    np.testing.assert_array_equal(_np(gn.bias), np.zeros(4))
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups \(2\)"):
        nn.GroupNorm(2, 3)
    x = _randn(2, 4, 3).astype(np.float32)
    np.testing.assert_allclose(_np(gn(_t(x))), _normalize_np(x.reshape(2, 2, -1).astype(np.float64), (2,),
                                                             1e-5).reshape(x.shape), rtol=1e-4, atol=1e-5)
    inn = nn.InstanceNorm1d(4, affine=True)
    np.testing.assert_allclose(_np(inn(_t(x))), _normalize_np(x.astype(np.float64), (2,), 1e-5), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(_np(inn(_t(x[0]))), _normalize_np(x[0].astype(np.float64), (1,), 1e-5), rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(4\), but got: 3."):
        inn(_t(x[:, :3]))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(5)(_t(x))


def test_pooling_modules():
    x = _randn(2, 3, 7, 6)
    m = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)
    assert m.stride == 2
    out, idx = m(_t(x))
    ref, ref_idx = _max_pool2d_np(x, (3, 3), (2, 2), (1, 1), ceil_mode=True)
    np.testing.assert_array_equal(_np(out), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    np.testing.assert_allclose(_np(nn.AvgPool2d((3, 2), count_include_pad=False, padding=1)(_t(x))),
                               _avg_pool2d_np(x, (3, 2), (3, 2), (1, 1), False, False), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.AdaptiveAvgPool2d((None, 4))(_t(x))), _adaptive_pool2d_np(x, 7, 4, np.mean),
                               rtol=1e-12)
    np.testing.assert_array_equal(_np(nn.AdaptiveMaxPool2d(3)(_t(x))), _adaptive_pool2d_np(x, 3, 3, np.max))
    x1 = _randn(2, 3, 8)
    assert nn.AvgPool1d(3).stride == (3,)
    np.testing.assert_array_equal(_np(nn.MaxPool1d(2)(_t(x1))), x1.reshape(2, 3, 4, 2).max(-1))
    np.testing.assert_allclose(_np(nn.AvgPool1d(2)(_t(x1))), x1.reshape(2, 3, 4, 2).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.AdaptiveAvgPool1d(4)(_t(x1))), x1.reshape(2, 3, 4, 2).mean(-1), rtol=1e-12)
    np.testing.assert_array_equal(_np(nn.AdaptiveMaxPool1d(2)(_t(x1))), x1.reshape(2, 3, 2, 4).max(-1))


# ============================================================ parity with PyTorch


def _pair_tensors(torch, *arrays, grad=True):
    return ([ferrograd.tensor(a, requires_grad=grad) for a in arrays],
            [torch.tensor(a, requires_grad=grad) for a in arrays])


def _assert_same(torch, ours, theirs, ins, tins, rtol=1e-10, atol=1e-10, grad_fn=True):
    """Same values, grad_fn name and input gradients for one random upstream gradient."""
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=rtol, atol=atol)
    if grad_fn:
        assert ours[0].grad_fn.name() == theirs[0].grad_fn.name()
    g = _randn(*tuple(theirs[0].shape))
    ours[0].backward(ferrograd.tensor(g))
    theirs[0].backward(torch.tensor(g))
    for a, b in zip(ins, tins):
        if b.grad is None:
            assert a.grad is None
        else:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


CONV2D_CASES = [
    # x shape, w shape, bias, kwargs
    ((2, 4, 9, 8), (6, 2, 3, 2), True, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    ((1, 3, 7, 7), (4, 3, 3, 3), False, dict(stride=2, padding=1)),
    ((3, 7, 7), (4, 3, 3, 3), True, dict(padding="same")),
    ((2, 3, 7, 6), (4, 3, 2, 4), True, dict(padding="same", dilation=(1, 2))),
    ((2, 3, 6, 6), (2, 3, 4, 3), False, dict(padding="valid", stride=(1, 2))),
    ((2, 4, 5, 5), (8, 1, 3, 3), True, dict(groups=4, padding=2, dilation=2)),
    ((2, 3, 5, 5), (4, 3, 5, 5), True, dict()),
    ((1, 2, 6, 5), (3, 2, 1, 1), True, dict(stride=3)),
]


@pytest.mark.parametrize("xs,ws,bias,kw", CONV2D_CASES)
def test_conv2d_parity(xs, ws, bias, kw):
    torch = _torch()
    arrays = [_randn(*xs), _randn(*ws)] + ([_randn(ws[0])] if bias else [])
    ins, tins = _pair_tensors(torch, *arrays)
    b, tb = (ins[2], tins[2]) if bias else (None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_same(torch, F.conv2d(ins[0], ins[1], b, **kw), torch.nn.functional.conv2d(tins[0], tins[1], tb, **kw),
                     ins, tins)


CONV1D_CASES = [
    ((2, 4, 9), (6, 2, 3), True, dict(stride=2, padding=1, dilation=2, groups=2)),
    ((3, 8), (5, 3, 4), True, dict(padding="same")),
    ((2, 3, 8), (5, 3, 3), False, dict(padding=(2,), stride=(3,))),
]


@pytest.mark.parametrize("xs,ws,bias,kw", CONV1D_CASES)
def test_conv1d_parity(xs, ws, bias, kw):
    torch = _torch()
    arrays = [_randn(*xs), _randn(*ws)] + ([_randn(ws[0])] if bias else [])
    ins, tins = _pair_tensors(torch, *arrays)
    b, tb = (ins[2], tins[2]) if bias else (None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_same(torch, F.conv1d(ins[0], ins[1], b, **kw), torch.nn.functional.conv1d(tins[0], tins[1], tb, **kw),
                     ins, tins)


CONVT_CASES = [
    ((2, 4, 5, 4), (4, 3, 3, 2), True, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                                            dilation=(1, 2))),
    ((3, 4, 4), (3, 2, 3, 3), False, dict(stride=2, padding=1, output_padding=1)),
    ((1, 2, 3, 3), (2, 2, 1, 1), True, dict(stride=3)),
    ((2, 2, 3, 4), (2, 3, 4, 4), True, dict(stride=1, padding=2, dilation=2)),
]


@pytest.mark.parametrize("xs,ws,bias,kw", CONVT_CASES)
def test_conv_transpose2d_parity(xs, ws, bias, kw):
    torch = _torch()
    arrays = [_randn(*xs), _randn(*ws)] + ([_randn(ws[1] * kw.get("groups", 1))] if bias else [])
    ins, tins = _pair_tensors(torch, *arrays)
    b, tb = (ins[2], tins[2]) if bias else (None, None)
    _assert_same(torch, F.conv_transpose2d(ins[0], ins[1], b, **kw),
                 torch.nn.functional.conv_transpose2d(tins[0], tins[1], tb, **kw), ins, tins)


def test_conv_transpose1d_parity():
    torch = _torch()
    ins, tins = _pair_tensors(torch, _randn(2, 4, 7), _randn(4, 3, 3), _randn(6))
    kw = dict(stride=3, padding=1, output_padding=2, groups=2)
    _assert_same(torch, F.conv_transpose1d(*ins, **kw), torch.nn.functional.conv_transpose1d(*tins, **kw), ins, tins)


POOL2D_CASES = [
    ((2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((3, 9, 8), dict(kernel_size=(2, 3), stride=(1, 2), padding=1, dilation=2)),
    ((2, 2, 8, 8), dict(kernel_size=2)),
    ((2, 2, 7, 5), dict(kernel_size=(3, 1), stride=(2, 1), padding=(1, 0), ceil_mode=True)),
    ((1, 2, 6, 7), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
]


@pytest.mark.parametrize("xs,kw", POOL2D_CASES)
def test_max_pool2d_parity(xs, kw):
    torch = _torch()
    for return_indices in (False, True):
        ins, tins = _pair_tensors(torch, _randn(*xs))
        _assert_same(torch, F.max_pool2d(ins[0], **kw, return_indices=return_indices),
                     torch.nn.functional.max_pool2d(tins[0], **kw, return_indices=return_indices), ins, tins, 0, 0)


@pytest.mark.parametrize("xs,kw", POOL2D_CASES)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_parity(xs, kw, count_include_pad):
    torch = _torch()
    kw = {k: v for k, v in kw.items() if k != "dilation"}
    for divisor in (None, 3):
        ins, tins = _pair_tensors(torch, _randn(*xs))
        args = dict(kw, count_include_pad=count_include_pad, divisor_override=divisor)
        _assert_same(torch, F.avg_pool2d(ins[0], **args), torch.nn.functional.avg_pool2d(tins[0], **args), ins, tins)


@pytest.mark.parametrize("xs,kw", [((2, 3, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                                   ((3, 8), dict(kernel_size=2)),
                                   ((2, 2, 10), dict(kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,)))])
def test_pool1d_parity(xs, kw):
    torch = _torch()
    TF = torch.nn.functional
    ins, tins = _pair_tensors(torch, _randn(*xs))
    _assert_same(torch, F.max_pool1d(ins[0], **kw, return_indices=True),
                 TF.max_pool1d(tins[0], **kw, return_indices=True), ins, tins, 0, 0)
    kw = {k: v for k, v in kw.items() if k != "dilation"}
    ins, tins = _pair_tensors(torch, _randn(*xs))
    _assert_same(torch, F.avg_pool1d(ins[0], **kw, count_include_pad=False),
                 TF.avg_pool1d(tins[0], **kw, count_include_pad=False), ins, tins)


@pytest.mark.parametrize("xs,osize", [((2, 3, 9, 7), (4, 3)), ((3, 9, 7), 5), ((2, 3, 6, 6), 1),
                                      ((2, 1, 5, 7), (None, 3)), ((1, 2, 4, 4), (6, 7))])
def test_adaptive_pool2d_parity(xs, osize):
    torch = _torch()
    TF = torch.nn.functional
    ins, tins = _pair_tensors(torch, _randn(*xs))
    _assert_same(torch, F.adaptive_avg_pool2d(ins[0], osize), TF.adaptive_avg_pool2d(tins[0], osize), ins, tins)
    ins, tins = _pair_tensors(torch, _randn(*xs))
    ours, theirs = F.adaptive_max_pool2d(ins[0], osize, True), TF.adaptive_max_pool2d(tins[0], osize, True)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(_np(a), b.detach().numpy())
    ours[0].sum().backward()
    theirs[0].sum().backward()
    np.testing.assert_array_equal(ins[0].grad.numpy(), tins[0].grad.numpy())


@pytest.mark.parametrize("xs,osize", [((2, 3, 9), 4), ((3, 7), 7), ((2, 2, 5), 1)])
def test_adaptive_pool1d_parity(xs, osize):
    torch = _torch()
    TF = torch.nn.functional
    ins, tins = _pair_tensors(torch, _randn(*xs))
    _assert_same(torch, F.adaptive_avg_pool1d(ins[0], osize), TF.adaptive_avg_pool1d(tins[0], osize), ins, tins)
    a, b = F.adaptive_max_pool1d(ins[0], osize, True), TF.adaptive_max_pool1d(tins[0], osize, True)
    np.testing.assert_array_equal(_np(a[0]), b[0].detach().numpy())
    np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())


@pytest.mark.parametrize("xs", [(4, 3), (4, 3, 5), (3, 2, 4, 3), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_parity(xs, training):
    torch = _torch()
    c = xs[1]
    ins, tins = _pair_tensors(torch, _randn(*xs), _randn(c), _randn(c))
    stats = [_randn(c), np.abs(_randn(c)) + 0.5]
    rm, rv = (ferrograd.tensor(s.copy()) for s in stats)
    trm, trv = (torch.tensor(s.copy()) for s in stats)
    _assert_same(torch, F.batch_norm(ins[0], rm, rv, ins[1], ins[2], training, 0.2, 1e-3),
                 torch.nn.functional.batch_norm(tins[0], trm, trv, tins[1], tins[2], training, 0.2, 1e-3), ins, tins)
    np.testing.assert_allclose(_np(rm), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), trv.numpy(), rtol=1e-12)


@pytest.mark.parametrize("xs,groups", [((2, 6, 4, 3), 3), ((3, 4, 5), 1), ((2, 4), 4), ((2, 6, 2, 2, 2), 2)])
def test_group_norm_parity(xs, groups):
    torch = _torch()
    c = xs[1]
    ins, tins = _pair_tensors(torch, _randn(*xs), _randn(c), _randn(c))
    _assert_same(torch, F.group_norm(ins[0], groups, ins[1], ins[2], 1e-4),
                 torch.nn.functional.group_norm(tins[0], groups, tins[1], tins[2], 1e-4), ins, tins)
    ins, tins = _pair_tensors(torch, _randn(*xs))
    _assert_same(torch, F.group_norm(ins[0], groups), torch.nn.functional.group_norm(tins[0], groups), ins, tins)


def test_layer_norm_parity():
    torch = _torch()
    ins, tins = _pair_tensors(torch, _randn(3, 4, 5), _randn(4, 5), _randn(4, 5))
    _assert_same(torch, F.layer_norm(ins[0], (4, 5), ins[1], ins[2], 1e-4),
                 torch.nn.functional.layer_norm(tins[0], (4, 5), tins[1], tins[2], 1e-4), ins, tins)
    ins, tins = _pair_tensors(torch, _randn(3, 4, 5))
    _assert_same(torch, F.layer_norm(ins[0], [5]), torch.nn.functional.layer_norm(tins[0], [5]), ins, tins)


def test_instance_norm_parity():
    torch = _torch()
    ins, tins = _pair_tensors(torch, _randn(2, 3, 4, 5), _randn(3), _randn(3))
    rm, rv = ferrograd.zeros(3, dtype=ferrograd.float64), ferrograd.ones(3, dtype=ferrograd.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    _assert_same(torch, F.instance_norm(ins[0], rm, rv, ins[1], ins[2], momentum=0.3),
                 torch.nn.functional.instance_norm(tins[0], trm, trv, tins[1], tins[2], momentum=0.3), ins, tins)
    np.testing.assert_allclose(_np(rm), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), trv.numpy(), rtol=1e-12)
    ins, tins = _pair_tensors(torch, _randn(2, 3, 4))
    _assert_same(torch, F.instance_norm(ins[0], rm, rv, use_input_stats=False),
                 torch.nn.functional.instance_norm(tins[0], trm, trv, use_input_stats=False), ins, tins)


def _wraps_past_cropped_size(shape, pad):
    for j in range(len(pad) // 2):
        left, right = pad[2 * j], pad[2 * j + 1]
        cropped = shape[-1 - j] - max(-left, 0) - max(-right, 0)
        if left > cropped or right > cropped:
            return True
    return False


def test_pad_parity_many_configurations():
    torch = _torch()
    TF = torch.nn.functional
    rng = np.random.default_rng(7)
    checked = 0
    for shape in [(3, 5), (2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5)]:
        for mode in ("constant", "reflect", "replicate", "circular"):
            for _ in range(12):
                npad = int(rng.integers(1, 4))
                pad = [int(v) for v in rng.integers(-2, 4, size=2 * npad)]
                a = rng.standard_normal(shape)
                try:
                    expected = TF.pad(torch.tensor(a), pad, mode=mode)
                except Exception as e:  # noqa: BLE001 - the same exception is expected from us
                    with pytest.raises(type(e)):
                        F.pad(ferrograd.tensor(a), pad, mode=mode)
                    continue
                if mode == "circular" and _wraps_past_cropped_size(shape, pad):
                    continue  # PyTorch copies overlapping memory there: not a defined result
                x = ferrograd.tensor(a, requires_grad=True)
                out = F.pad(x, pad, mode=mode, value=None if mode != "constant" else 1.5)
                if mode == "constant":
                    expected = TF.pad(torch.tensor(a), pad, value=1.5)
                np.testing.assert_array_equal(_np(out), expected.numpy())
                ta = torch.tensor(a, requires_grad=True)
                g = rng.standard_normal(tuple(expected.shape))
                out.backward(ferrograd.tensor(g))
                value = None if mode != "constant" else 1.5
                (TF.pad(ta, pad, mode=mode, value=value) * torch.tensor(g)).sum().backward()
                if expected.numel() == 0:
                    # PyTorch's reflection_pad3d backward leaves an empty output's grad uninitialised
                    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
                else:
                    np.testing.assert_allclose(x.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
                checked += 1
    assert checked > 60


# --------------------------------------------------------------- errors

# (expression, native problem that makes it differ today or None); x: (2, 3, 8, 8), x1: (2, 3, 8)
ERROR_CASES = [
    ("F.conv2d(x, w, stride=(1, 1, 1))", None),
    ("F.conv2d(x, w, stride=0)", None),
    ("F.conv2d(x, w, padding=-1)", None),
    ("F.conv2d(x, w, dilation=0)", None),
    ("F.conv2d(x, w, groups=0)", None),
    ("F.conv2d(x, w, groups=2)", None),
    ("F.conv2d(x, lib.zeros(4, 2, 3, 3))", None),
    ("F.conv2d(x, lib.zeros(4, 3, 9, 9))", None),
    ("F.conv2d(x[None], w)", None),
    ("F.conv2d(x[0, 0], w)", None),
    ("F.conv2d(x, w[0])", None),
    ("F.conv2d(x, w, lib.zeros(3))", None),
    ("F.conv2d(x, w, lib.zeros(4, dtype=lib.float64))", None),
    ("F.conv2d(x, w.double())", None),
    ("F.conv2d(x.double(), w)", None),
    ("F.conv2d(x, w, padding='foo')", None),
    ("F.conv2d(x, w, padding='same', stride=2)", None),
    ("F.conv2d(x, w[0], padding='same')", None),
    ("F.conv2d(x, lib.zeros(5, 1, 3, 3), groups=3)", None),
    ("F.conv2d(x, w, lib.zeros(4, 1))", None),
    ("F.conv2d(x, w, padding=(1, 1, 1))", None),
    ("F.conv1d(x1, w)", None),
    ("F.conv1d(x, w[:, :, 0])", None),
    ("F.conv1d(x1, w[:, :, 0], stride=(1, 1))", None),
    ("F.conv_transpose2d(x, w)", None),
    ("F.conv_transpose2d(x, lib.zeros(3, 4, 3, 3), output_padding=1)", None),
    ("F.conv_transpose2d(x, lib.zeros(3, 4, 3, 3), lib.zeros(3))", None),
    ("F.conv2d(x, w[:0])", None),
    ("F.max_pool2d(x, (2, 2, 2))", None),
    ("F.max_pool2d(x, 2, (2, 2, 2))", None),
    ("F.max_pool2d(x, 2, 2, (0, 0, 0))", None),
    ("F.max_pool2d(x, 2, 2, 0, (1, 1, 1))", None),
    ("F.max_pool2d(x, 0)", None),
    ("F.max_pool2d(x, 2, 0)", None),
    ("F.max_pool2d(x, 2, 2, 2)", None),
    ("F.max_pool2d(x, 2, 2, 0, 0)", None),
    ("F.max_pool2d(x, 9)", None),
    ("F.max_pool2d(x, 2, 2, -1)", None),
    ("F.max_pool2d(x[0, 0], 2)", None),
    ("F.max_pool2d(x[:, :, :0], 2)", None),
    ("F.max_pool1d(x, 2)", None),
    ("F.max_pool1d(x1, (2, 2))", None),
    ("F.max_pool1d(x1, 2, (1, 1))", None),
    ("F.max_pool1d(x1, 0)", None),
    ("F.max_pool1d(x1, 2, 1, -1)", None),
    ("F.max_pool1d(x1, 2, 1, 0, 0)", None),
    ("F.max_pool1d(x1[:, :0], 1)", None),
    ("F.max_pool1d(x1, 9)", None),
    ("F.max_pool1d(x1.long(), 2)", None),
    ("F.avg_pool2d(x, (2, 2, 2))", None),
    ("F.avg_pool2d(x, 2, 2, 2)", None),
    ("F.avg_pool2d(x, 9)", None),
    ("F.avg_pool2d(x, 2, divisor_override=0)", None),
    ("F.avg_pool2d(x, 2, 2, -1)", None),
    ("F.avg_pool1d(x1, (2, 2))", None),
    ("F.avg_pool1d(x, 2)", None),
    ("F.avg_pool1d(x1, 2, 2, 2)", None),
    ("F.avg_pool1d(x1, 9)", None),
    ("F.adaptive_avg_pool2d(x, (2, 2, 2))", None),
    ("F.adaptive_avg_pool2d(x, -1)", None),
    ("F.adaptive_avg_pool2d(x[0, 0], 2)", None),
    ("F.adaptive_avg_pool2d(x[:, :, :0], 2)", None),
    ("F.adaptive_avg_pool2d(x[0, 0], (None, 3))", None),
    ("F.adaptive_avg_pool1d(x, 2)", None),
    ("F.adaptive_avg_pool1d(x1, (2, 2))", None),
    ("F.adaptive_max_pool2d(x[0, 0], 2)", None),
    ("F.adaptive_max_pool2d(x[:, :, :0], 2)", None),
    ("F.adaptive_max_pool2d(x, (2, 2, 2))", None),
    ("F.adaptive_max_pool2d(x.long(), 2)", None),
    ("F.adaptive_max_pool1d(x, 2)", None),
    ("F.adaptive_max_pool1d(x1[0, :, :0], 2)", None),
    ("F.batch_norm(x, None, None)", None),
    ("F.batch_norm(x, lib.zeros(3), lib.ones(3), lib.ones(4))", None),
    ("F.batch_norm(x, lib.zeros(4), lib.ones(3))", None),
    ("F.batch_norm(x, lib.zeros(4), lib.ones(3), training=True)", None),
    ("F.batch_norm(x.long(), None, None, training=True)", None),
    ("F.batch_norm(x, lib.zeros(3).double(), lib.ones(3).double())", None),
    ("F.group_norm(x, 2)", None),
    ("F.group_norm(x, 3, lib.ones(4))", None),
    ("F.group_norm(lib.zeros(1, 3), 3)", None),
    ("F.instance_norm(lib.zeros(2, 3, 1))", None),
    ("F.instance_norm(x, use_input_stats=False)", None),
    ("F.pad(x, 2)", None),
    ("F.pad(x, (1.0, 1))", None),
    ("F.pad(x1, (9, 1), mode='reflect')", None),
    ("F.pad(x, (1, 1, 9, 1), mode='reflect')", None),
    ("F.pad(x1[:, :, :0], (1, 1), mode='replicate')", None),
    ("F.pad(x1, (-5, -4), mode='replicate')", None),
    ("F.pad(x1, (-5, -4), mode='circular')", None),
    ("F.pad(x1, (-4, -4), mode='reflect')", None),
    ("F.pad(x1, (1, 1, 1, 1, 1, 1, 1, 1))", None),
    ("F.pad(x1, (-5, -5))", None),
    ("F.pad(x1[0, 0], (1, 1), mode='reflect')", None),
]


def _run_error_case(lib, F_, expr):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    w = lib.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    try:
        eval(expr, {"F": F_, "x": x, "w": w, "x1": x[:, :, 0], "lib": lib})
    except Exception as e:  # noqa: BLE001 - exception type and text are what is compared
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize(
    "expr",
    [pytest.param(e, marks=pytest.mark.xfail(strict=True, reason="native: " + why)) if why else e
     for e, why in ERROR_CASES],
)
def test_error_parity(expr):
    torch = _torch()
    expected = _run_error_case(torch, torch.nn.functional, expr)
    assert expected is not None, "PyTorch accepts " + expr
    assert _run_error_case(ferrograd, F, expr) == expected


def test_padding_same_warns_once_like_pytorch():
    import ferrograd.nn.functional.conv as conv_impl

    conv_impl._warned_same_padding = False
    x, w = _t(_randn(1, 1, 5)), _t(_randn(1, 1, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.conv1d(x, w, padding="same")
        F.conv1d(x, w, padding="same")
    messages = [str(c.message) for c in caught]
    assert messages == ["Using padding='same' with even kernel lengths and odd dilation may require a zero-padded "
                        "copy of the input be created"]


# --------------------------------------------------------------- modules


def _copy_params(src_torch, dst):
    for (name, p), (tname, tp) in zip(dst.named_parameters(), src_torch.named_parameters()):
        assert name == tname
        with ferrograd.no_grad():
            p.copy_(ferrograd.tensor(tp.detach().numpy()))


MODULE_CASES = [
    ("Conv2d(4, 6, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), groups=2)", (2, 4, 9, 8)),
    ("Conv2d(3, 4, 3, padding='same', padding_mode='reflect')", (2, 3, 7, 6)),
    ("Conv2d(3, 4, (2, 4), padding='same', padding_mode='circular', bias=False)", (3, 7, 6)),
    ("Conv2d(3, 4, 3, padding=(2, 1), padding_mode='replicate')", (2, 3, 5, 6)),
    ("Conv2d(3, 4, 3, padding='valid')", (2, 3, 5, 6)),
    ("Conv1d(4, 6, 3, stride=2, padding=2, padding_mode='circular', groups=2)", (2, 4, 9)),
    ("Conv1d(3, 2, 4, padding='same')", (3, 8)),
    ("ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))", (2, 4, 5, 4)),
    ("ConvTranspose1d(3, 2, 3, stride=3, output_padding=1, bias=False)", (2, 3, 5)),
    ("MaxPool2d(3, 2, 1, ceil_mode=True)", (2, 3, 9, 8)),
    ("MaxPool2d((2, 3), dilation=(2, 1), return_indices=True)", (3, 9, 8)),
    ("MaxPool1d(3, 2, 1, return_indices=True)", (2, 3, 9)),
    ("AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)", (2, 3, 9, 8)),
    ("AvgPool2d((2, 3), divisor_override=2)", (3, 9, 8)),
    ("AvgPool1d(3, 2, 1)", (2, 3, 9)),
    ("AdaptiveAvgPool2d((4, None))", (2, 3, 9, 8)),
    ("AdaptiveAvgPool1d(4)", (2, 3, 9)),
    ("AdaptiveMaxPool2d((3, 5), return_indices=True)", (2, 3, 9, 8)),
    ("AdaptiveMaxPool1d(4)", (2, 3, 9)),
    ("BatchNorm1d(3)", (4, 3)),
    ("BatchNorm1d(3, momentum=None, affine=False)", (4, 3, 5)),
    ("BatchNorm2d(3, eps=1e-3, momentum=0.3, bias=False)", (4, 3, 2, 3)),
    ("BatchNorm2d(3, track_running_stats=False)", (4, 3, 2, 3)),
    ("BatchNorm3d(2)", (2, 2, 2, 3, 2)),
    ("GroupNorm(2, 4)", (2, 4, 3, 3)),
    ("GroupNorm(1, 3, affine=False)", (2, 3, 5)),
    ("InstanceNorm1d(3, affine=True, track_running_stats=True)", (2, 3, 5)),
    ("InstanceNorm2d(3)", (3, 4, 5)),
]


@pytest.mark.parametrize("spec,xs", MODULE_CASES)
def test_module_parity(spec, xs):
    torch = _torch()
    tm = eval("torch.nn." + spec, {"torch": torch}).double()
    m = eval("nn." + spec, {"nn": nn}).double()
    assert repr(m) == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    _copy_params(tm, m)
    # training for a few steps (running statistics), then eval
    for _step in range(3):
        a = _randn(*xs)
        x, tx = ferrograd.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # adaptive_max_pool2d is a composite (MaxBackward0, not AdaptiveMaxPool2DBackward0)
            _assert_same(torch, m(x), tm(tx), [x] + list(m.parameters()), [tx] + list(tm.parameters()),
                         grad_fn=not spec.startswith("AdaptiveMaxPool2d"))
    for (name, b), (tname, tb) in zip(m.state_dict().items(), tm.state_dict().items()):
        assert name == tname
        np.testing.assert_allclose(_np(b), tb.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    m.eval()
    tm.eval()
    a = _randn(*xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = m(ferrograd.tensor(a)), tm(torch.tensor(a))
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(_np(o), t.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_module_reprs_parity():
    torch = _torch()
    specs = [
        "Conv2d(3, 4, 3)", "Conv2d(3, 4, (3, 5), 2, 1, 2, 1, False, 'reflect')", "Conv1d(2, 4, 3, padding='same')",
        "ConvTranspose2d(3, 4, 3, 2, 1, 1)", "Conv2d(4, 4, 3, groups=2, padding='valid')",
        "ConvTranspose1d(2, 4, 3, dilation=2)", "MaxPool2d(2)", "MaxPool2d((2, 3), 1, 1, 2, True, True)",
        "AvgPool2d(2)", "AvgPool2d(3, 2, 1, True, False, 3)", "AdaptiveAvgPool2d((None, 3))", "AdaptiveMaxPool2d(3)",
        "MaxPool1d(2)", "AvgPool1d(3)", "AdaptiveAvgPool1d(2)", "AdaptiveMaxPool1d(2)", "BatchNorm2d(3)",
        "BatchNorm1d(3, momentum=None, affine=False)", "GroupNorm(3, 6)", "GroupNorm(2, 4, affine=False)",
        "InstanceNorm2d(3)", "InstanceNorm1d(4, affine=True, track_running_stats=True)",
    ]
    for spec in specs:
        assert repr(eval("nn." + spec, {"nn": nn})) == repr(eval("torch.nn." + spec, {"torch": torch})), spec
    ours = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                                 torch.nn.MaxPool2d(2))
    assert repr(ours) == repr(theirs)


MODULE_ERROR_CASES = [
    ("BatchNorm1d(3)", (2, 3, 2, 2)),
    ("BatchNorm2d(3)", (2, 3, 2)),
    ("BatchNorm2d(4)", (2, 3, 2, 2)),
    ("InstanceNorm2d(3, affine=True)", (2, 4, 3, 3)),
    ("InstanceNorm2d(3)", (1, 2, 3, 3, 3)),
    ("Conv2d(3, 4, 3)", (2, 4, 5, 5)),
    ("Conv1d(3, 4, 3, padding_mode='reflect', padding=4)", (2, 3, 4)),
    ("ConvTranspose2d(3, 4, 3)", (2, 3)),
    ("GroupNorm(2, 4)", (2, 6, 3)),
]


@pytest.mark.parametrize("spec,xs", MODULE_ERROR_CASES)
def test_module_forward_errors_parity(spec, xs):
    torch = _torch()
    a = np.zeros(xs, dtype=np.float32)
    with pytest.raises(Exception) as theirs:
        eval("torch.nn." + spec, {"torch": torch})(torch.tensor(a))
    with pytest.raises(type(theirs.value)) as ours:
        eval("nn." + spec, {"nn": nn})(ferrograd.tensor(a))
    assert str(ours.value) == str(theirs.value)


def _sorted_sets(message):
    # the messages print a Python set, whose order is arbitrary
    return re.sub(r"\{([^}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def test_module_constructor_errors_parity():
    torch = _torch()
    for spec in ("Conv2d(3, 4, 3, groups=2)", "Conv2d(4, 3, 3, groups=2)", "Conv2d(4, 4, 3, padding='full')",
                 "Conv2d(4, 4, 3, padding_mode='mirror')", "Conv1d(4, 4, 3, 2, 'same')",
                 "ConvTranspose1d(4, 4, 3, padding_mode='circular')", "GroupNorm(2, 3)"):
        with pytest.raises(ValueError) as theirs:
            eval("torch.nn." + spec, {"torch": torch})
        with pytest.raises(ValueError) as ours:
            eval("nn." + spec, {"nn": nn})
        assert _sorted_sets(str(ours.value)) == _sorted_sets(str(theirs.value)), spec


def test_conv_transpose_output_size_parity():
    torch = _torch()
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=(2, 3), padding=1).double()
    m = nn.ConvTranspose2d(2, 3, 3, stride=(2, 3), padding=1).double()
    _copy_params(tm, m)
    a = _randn(1, 2, 4, 4)
    for size in ([7, 10], [8, 12], (1, 3, 8, 11)):
        np.testing.assert_allclose(_np(m(ferrograd.tensor(a), size)), tm(torch.tensor(a), size).detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
    for size in ([9, 10], [7]):
        with pytest.raises(ValueError) as theirs:
            tm(torch.tensor(a), size)
        with pytest.raises(ValueError) as ours:
            m(ferrograd.tensor(a), size)
        assert str(ours.value) == str(theirs.value)


def test_small_cnn_on_digits_matches_pytorch():
    torch = _torch()
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.images[:256] / 16.0).astype(np.float32)[:, None]
    y = digits.target[:256].astype(np.int64)

    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Conv2d(1, 8, 3, padding=1), lib.nn.BatchNorm2d(8), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
            lib.nn.Conv2d(8, 16, 3, padding=1), lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d(2),
            lib.nn.Flatten(), lib.nn.Linear(64, 10),
        )

    torch.manual_seed(0)
    tm, m = build(torch), build(ferrograd)
    _copy_params(tm, m)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    opt = ferrograd.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    losses, tlosses = [], []
    for step in range(5):
        xb, yb = x[step * 48 : (step + 1) * 48], y[step * 48 : (step + 1) * 48]
        opt.zero_grad()
        loss = F.cross_entropy(m(ferrograd.tensor(xb)), ferrograd.tensor(yb))
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(torch.tensor(xb)), torch.tensor(yb))
        tloss.backward()
        topt.step()
        losses.append(loss.item())
        tlosses.append(tloss.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-4)
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(_np(m[1].running_mean), tm[1].running_mean.numpy(), rtol=1e-4, atol=1e-6)


def test_unfold_fold():
    x = _randn(2, 3, 5, 4)
    cols = F.unfold(_t(x), (2, 3), dilation=1, padding=(1, 0), stride=(2, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))
    blocks = [xp[:, :, i : i + 2, j : j + 3].reshape(2, -1) for i in range(0, 6, 2) for j in range(0, 2)]
    np.testing.assert_allclose(_np(cols), np.stack(blocks, -1), rtol=1e-12)
    # fold sums the blocks back: fold(unfold(ones)) counts how many blocks cover each pixel
    counts = F.fold(F.unfold(_t(np.ones((1, 1, 5, 4))), 2), (5, 4), 2)
    expected = np.outer([1, 2, 2, 2, 1], [1, 2, 2, 1])
    np.testing.assert_array_equal(_np(counts)[0, 0], expected)


# ------------------------------------------------------------------------ padding modules

_PAD_MODULES = [
    ("ZeroPad1d", (2,), (2, 3, 5)),
    ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
    ("ZeroPad3d", (1,), (1, 2, 3, 3, 3)),
    ("ConstantPad1d", ((1, 2), 3.5), (2, 5)),
    ("ConstantPad2d", (1, -1.0), (2, 3, 4)),
    ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 2.0), (1, 2, 2, 3)),
    ("ReflectionPad1d", (2,), (2, 3, 5)),
    ("ReflectionPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 3, 3)),
    ("ReplicationPad1d", ((3, 1),), (2, 5)),
    ("ReplicationPad2d", (2,), (2, 3, 4)),
    ("ReplicationPad3d", ((1, 0, 0, 1, 2, 0),), (1, 2, 2, 3, 3)),
    ("CircularPad1d", (2,), (2, 3, 5)),
    ("CircularPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
    ("CircularPad3d", (1,), (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("name,args,shape", _PAD_MODULES)
def test_padding_modules_are_f_pad(name, args, shape):
    m = getattr(nn, name)(*args)
    mode = {"Zero": "constant", "Cons": "constant", "Refl": "reflect", "Repl": "replicate",
            "Circ": "circular"}[name[:4]]
    value = args[1] if name.startswith("Constant") else None
    x = _randn(*shape)
    expected = F.pad(_t(x), m.padding, mode, value)
    np.testing.assert_array_equal(_np(m(_t(x))), _np(expected))
    n = int(name[-2])
    assert len(m.padding) == 2 * n and list(m.state_dict()) == []
    xg = _t(x, True)
    assert gradcheck(m, (xg,))


@pytest.mark.parametrize("name,args,shape", _PAD_MODULES)
def test_padding_modules_parity(name, args, shape):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    assert ours.padding == theirs.padding
    x, g = _randn(*shape), None
    fx, tx = _t(x, True), torch.tensor(x, requires_grad=True)
    fo, to = ours(fx), theirs(tx)
    np.testing.assert_array_equal(_np(fo), to.detach().numpy())
    g = _randn(*to.shape)
    fo.backward(ferrograd.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    if not name.startswith("Circular"):
        assert type(fo.grad_fn).__name__ == type(to.grad_fn).__name__
    bad = _randn(*shape[-1:])
    for mod, lib in ((ours, ferrograd), (theirs, torch)):
        try:
            mod(lib.tensor(bad))
            err = None
        except Exception as e:  # noqa: BLE001 - compared below
            err = (type(e).__name__, str(e).splitlines()[0])
        if mod is ours:
            ours_err = err
    assert ours_err == err


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [
    (2, None, 0, 1, False), (3, None, 0, 1, True), (4, None, 1, 1, False), (3, 2, 1, 1, False),
    (2, 1, 0, 3, False), (5, 3, 2, 2, True), (1, 1, 0, 1, False), (7, None, 3, 1, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool1d_values_path_equals_the_indices_path(kernel, stride, padding, dilation, ceil_mode, dtype):
    """Without indices or grad, max_pool1d takes a values-only kernel (PyTorch's too): it must
    give what the indexed pooling gives, NaN and infinities included, at every geometry."""
    rng = np.random.default_rng(kernel * 10 + padding)
    x = rng.standard_normal((3, 4, 37))
    x[0, 0, 5] = np.nan
    x[1, 2, [0, 36]] = np.inf
    x[2, 1, 10:14] = -np.inf
    x[2, 3, :] = np.nan
    t = ferrograd.tensor(x, dtype=getattr(ferrograd, dtype))
    args = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    values = F.max_pool1d(t, **args)
    indexed, _ = F.max_pool1d(t, return_indices=True, **args)
    np.testing.assert_array_equal(values.numpy(), indexed.numpy())
    np.testing.assert_array_equal(F.max_pool1d(t[0], **args).numpy(), indexed[0].numpy())  # (C, L)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_unfold_fold_half_precision_match_torch(real_torch, dtype):
    """unfold/fold of float16 and bfloat16 (computed in float32, rounded once): values, dtype
    and the gradient as PyTorch's; integer inputs raise PyTorch's errors."""
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    results = []
    for lib in (ferrograd, real_torch):
        t = lib.tensor(x, dtype=getattr(lib, dtype)).requires_grad_()
        u = F.unfold(t, 2, padding=1) if lib is ferrograd else lib.nn.functional.unfold(t, 2, padding=1)
        fold = F.fold if lib is ferrograd else lib.nn.functional.fold
        f = fold(u, (4, 5), 2, padding=1)
        f.float().sum().backward()
        results.append([str(u.dtype), str(f.dtype)] + [a.detach().float().numpy() for a in (u, f, t.grad)])
    ours, theirs = results
    assert ours[:2] == theirs[:2]
    for a, b in zip(ours[2:], theirs[2:]):
        np.testing.assert_array_equal(a, b)
    for lib, unfold, fold in ((ferrograd, F.unfold, F.fold),
                              (real_torch, real_torch.nn.functional.unfold, real_torch.nn.functional.fold)):
        with pytest.raises(NotImplementedError, match="\"im2col_out_cpu\" not implemented for 'Int'"):
            unfold(lib.zeros(1, 1, 4, 4, dtype=lib.int32), 2)
        with pytest.raises(NotImplementedError, match="\"col2im_out_cpu\" not implemented for 'Long'"):
            fold(lib.zeros(1, 4, 4, dtype=lib.long), (3, 3), 2)
