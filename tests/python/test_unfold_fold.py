"""F.unfold (Im2ColBackward0) and F.fold (Col2ImBackward0): values, gradients and errors."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest

import ferrograd
import ferrograd.nn.functional as F
from ferrograd.autograd import gradcheck, gradgradcheck

CASES = [
    # (input shape, kernel, dilation, padding, stride)
    ((2, 3, 5, 6), 2, 1, 0, 1),
    ((2, 3, 5, 6), (2, 3), 1, 1, 2),
    ((1, 2, 7, 7), 3, 2, 1, 1),
    ((3, 4, 5), (3, 2), (1, 2), (0, 1), (2, 1)),  # unbatched
]


def _np_unfold(x, k, d, p, s):
    """The reference im2col: (N, C, H, W) -> (N, C*kh*kw, L), by loops."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ch * k[0] + i) * k[1] + j
                for y in range(oh):
                    for z in range(ow):
                        out[:, row, y * ow + z] = xp[:, ch, y * s[0] + i * d[0], z * s[1] + j * d[1]]
    return out


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("shape,k,d,p,s", CASES)
def test_unfold_matches_numpy_and_fold_is_its_adjoint(shape, k, d, p, s):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    batched = x[None] if len(shape) == 3 else x
    ref = _np_unfold(batched, _pair(k), _pair(d), _pair(p), _pair(s))
    ref = ref[0] if len(shape) == 3 else ref
    out = F.unfold(ferrograd.tensor(x), k, d, p, s)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)
    # <unfold(x), y> == <x, fold(y)>
    y = rng.standard_normal(ref.shape)
    back = F.fold(ferrograd.tensor(y), shape[-2:], k, d, p, s)
    assert tuple(back.shape) == shape
    np.testing.assert_allclose((ref * y).sum(), (x * back.numpy()).sum(), rtol=1e-10)


@pytest.mark.parametrize("shape,k,d,p,s", CASES[:3])
def test_unfold_fold_gradcheck(shape, k, d, p, s):
    x = ferrograd.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda t: F.unfold(t, k, d, p, s), (x,))
    assert gradgradcheck(lambda t: F.unfold(t, k, d, p, s), (x,))
    cols = F.unfold(x.detach(), k, d, p, s).requires_grad_()
    assert gradcheck(lambda t: F.fold(t, shape[-2:], k, d, p, s), (cols,))
    assert F.unfold(x, k, d, p, s).grad_fn.name() == "Im2ColBackward0"
    assert F.fold(cols, shape[-2:], k, d, p, s).grad_fn.name() == "Col2ImBackward0"


def test_non_overlapping_fold_of_unfold_is_identity():
    x = ferrograd.randn(2, 3, 4, 6, dtype=ferrograd.float64)
    again = F.fold(F.unfold(x, 2, stride=2), (4, 6), 2, stride=2)
    np.testing.assert_array_equal(again.numpy(), x.numpy())


@pytest.mark.parametrize("shape,k,d,p,s", CASES)
def test_matches_torch(shape, k, d, p, s):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal(shape)
    tx, fx = torch.tensor(x, requires_grad=True), ferrograd.tensor(x, requires_grad=True)
    to, fo = torch.nn.functional.unfold(tx, k, d, p, s), F.unfold(fx, k, d, p, s)
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    g = np.random.default_rng(3).standard_normal(tuple(to.shape))
    to.backward(torch.tensor(g))
    fo.backward(ferrograd.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    tf = torch.nn.functional.fold(to.detach(), shape[-2:], k, d, p, s)
    ff = F.fold(fo.detach(), shape[-2:], k, d, p, s)
    np.testing.assert_allclose(ff.numpy(), tf.numpy(), rtol=1e-12)


ERRORS = [
    "F.unfold(lib.zeros(2, 3, 5, 6), 7)",
    "F.fold(lib.zeros(2, 12, 19), (5, 6), 2)",
    "F.fold(lib.zeros(2, 13, 20), (5, 6), 2)",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    torch = pytest.importorskip("torch")

    def run(lib, F_):
        try:
            eval(expr, {"F": F_, "lib": lib})
        except Exception as e:  # noqa: BLE001 - the type and text are compared
            return type(e).__name__, str(e)
        return None

    expected = run(torch, torch.nn.functional)
    assert expected is not None
    assert run(ferrograd, F) == expected
