"""Adaptive max pooling (1-d, 2-d, 3-d): one native kernel with PyTorch's bins
[floor(i n / o), ceil((i + 1) n / o)) and its CPU rule (a larger value or any NaN replaces the
bin's maximum so far, in raster order). Always-run tests compare with a bin-by-bin NumPy
reference and gradcheck in float64; parity tests (skipped without PyTorch) compare values,
indices, gradients and grad_fn names with PyTorch."""

import itertools
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(77)
POOL = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}


def _bins(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def _reference(x, out):
    """Values and flat indices of adaptive max pooling over x's last len(out) dims."""
    k = len(out)
    size = x.shape[-k:]
    planes = x.reshape((-1,) + size)
    vals = np.empty((planes.shape[0],) + tuple(out), x.dtype)
    idx = np.empty(vals.shape, np.int64)
    for p in range(planes.shape[0]):
        for cell in itertools.product(*(range(o) for o in out)):
            ranges = [range(*_bins(n, o)[c]) for n, o, c in zip(size, out, cell)]
            best, at = -np.inf, np.ravel_multi_index([r[0] for r in ranges], size)
            for pos in itertools.product(*ranges):
                v = planes[p][pos]
                if v > best or np.isnan(v):
                    best, at = v, np.ravel_multi_index(pos, size)
            vals[(p,) + cell] = best
            idx[(p,) + cell] = at
    lead = x.shape[:-k]
    return vals.reshape(lead + tuple(out)), idx.reshape(lead + tuple(out))


CASES = [
    ((2, 3, 10), (4,)),
    ((3, 7), (3,)),
    ((3, 10), (12,)),  # more bins than positions: overlapping bins
    ((2, 3, 9, 8), (3, 5)),
    ((2, 3, 8, 8), (4, 2)),  # equal bins
    ((3, 5, 7), (2, 3)),
    ((2, 2, 5, 6, 7), (2, 3, 4)),
    ((2, 4, 4, 6), (4, 4, 3)),
    ((1, 3, 4, 5), (1, 1, 1)),
]


@pytest.mark.parametrize("shape,out", CASES)
def test_values_and_indices_match_the_bin_by_bin_reference(shape, out):
    x = RNG.standard_normal(shape).astype(np.float32)
    x[..., 0] = x[..., -1]  # ties between bins' ends
    y, i = POOL[len(out)](ferrograd.tensor(x), out, return_indices=True)
    ry, ri = _reference(x, out)
    np.testing.assert_array_equal(y.numpy(), ry)
    np.testing.assert_array_equal(i.numpy(), ri)
    assert i.dtype == ferrograd.int64


def test_ties_keep_the_first_and_nan_the_last():
    x = np.array([[[1.0, 3.0, 3.0, np.nan, 2.0, np.nan, 0.0, 3.0]]], np.float32)
    y, i = F.adaptive_max_pool1d(ferrograd.tensor(x), 2, return_indices=True)
    assert np.isnan(y.numpy()).all()
    assert i.tolist() == [[[3, 5]]]
    y, i = F.adaptive_max_pool1d(ferrograd.tensor(x[..., :3]), 1, return_indices=True)
    assert i.tolist() == [[[1]]] and y.tolist() == [[[3.0]]]


@pytest.mark.parametrize("shape,out", [((2, 5), (3,)), ((1, 2, 5, 4), (2, 3)), ((1, 3, 4, 3, 5), (2, 2, 3))])
def test_gradcheck(shape, out):
    x = ferrograd.tensor(RNG.standard_normal(shape), dtype=ferrograd.float64, requires_grad=True)
    f = POOL[len(out)]
    assert gradcheck(lambda a: f(a, out), (x,))
    assert gradgradcheck(lambda a: f(a, out), (x,))


def test_gradient_lands_on_each_bins_maximum():
    x = ferrograd.tensor(RNG.standard_normal((2, 3, 6, 7)), requires_grad=True)
    y, i = F.adaptive_max_pool2d(x, (4, 3), return_indices=True)
    g = RNG.standard_normal(y.shape)
    y.backward(ferrograd.tensor(g, dtype=y.dtype))
    expect = np.zeros((6, 42))
    for p, (gp, ip) in enumerate(zip(g.reshape(6, -1), i.numpy().reshape(6, -1))):
        np.add.at(expect[p], ip, gp)
    np.testing.assert_allclose(x.grad.numpy(), expect.reshape(x.shape), rtol=1e-6)


def test_half_precision_computes_in_float32():
    x = RNG.standard_normal((2, 9, 8)).astype(np.float32)
    for dt in (ferrograd.float16, ferrograd.bfloat16):
        y, i = F.adaptive_max_pool2d(ferrograd.tensor(x).to(dt), (3, 5), return_indices=True)
        assert y.dtype == dt
        ry, ri = _reference(ferrograd.tensor(x).to(dt).float().numpy(), (3, 5))
        np.testing.assert_array_equal(y.float().numpy(), ry)
        np.testing.assert_array_equal(i.numpy(), ri)


@pytest.mark.parametrize("shape,out", CASES)
def test_matches_pytorch(shape, out):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    k = len(out)
    tf = getattr(torch.nn.functional, f"adaptive_max_pool{k}d")
    tx = torch.tensor(x, requires_grad=True)
    fx = ferrograd.tensor(x, requires_grad=True)
    ty, ti = tf(tx, out, return_indices=True)
    fy, fi = POOL[k](fx, out, return_indices=True)
    np.testing.assert_array_equal(fy.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    assert type(fy.grad_fn).__name__ == type(ty.grad_fn).__name__
    g = RNG.standard_normal(ty.shape)
    ty.backward(torch.tensor(g))
    fy.backward(ferrograd.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
