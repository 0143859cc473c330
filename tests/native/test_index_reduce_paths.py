"""gather, masked_select, nansum and dot (issue 11): the row kernels and their threaded and
strided paths against PyTorch, at sizes that take those paths (above the 256K-element split),
and the nodes PyTorch records for them (NansumBackward0, MaskedSelectBackward0)."""

import numpy as np
import pytest

import ferrograd as T

try:
    import torch
except ImportError:  # comparisons against PyTorch skip; the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(7)
BIG = (512, 1024)  # 512K elements: above the threaded split of every kernel here


def _both(a, requires_grad=False, view=None):
    """The same array as a ferrograd and a torch leaf, optionally seen through ``view``."""
    out = []
    for lib in (T, torch):
        t = lib.tensor(a, requires_grad=requires_grad)
        out.append((t, view(t) if view else t))
    return out


def _close(f, t, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


VIEWS = {
    "contig": (lambda a: a, None),
    # the transposed input: base (cols, rows) seen as (rows, cols)
    "T": (lambda a: np.ascontiguousarray(a.T), lambda t: t.transpose(0, 1)),
}


@needs_torch
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("dim", [0, 1])
def test_gather_large_forward_and_backward(view, dim):
    r, c = BIG
    to_base, see = VIEWS[view]
    x = RNG.standard_normal((r, c)).astype(np.float32)
    ishape = (r // 2, c) if dim == 0 else (r, c // 2)
    idx = RNG.integers(0, x.shape[dim], ishape)
    (fx, fv), (tx, tv) = _both(to_base(x), True, see)
    fo, to = T.gather(fv, dim, T.tensor(idx)), torch.gather(tv, dim, torch.tensor(idx))
    np.testing.assert_array_equal(fo.detach().numpy(), to.detach().numpy())
    g = RNG.standard_normal(ishape).astype(np.float32)
    fo.backward(T.tensor(g))
    to.backward(torch.tensor(g))
    _close(fx.grad, tx.grad)


def test_gather_rejects_negative_indices_as_pytorch():
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 4"):
        T.gather(T.arange(4.0), 0, T.tensor([-1]))


@needs_torch
def test_gather_gradient_is_differentiable_again():
    x = RNG.standard_normal((3, 5))
    idx = RNG.integers(0, 5, (3, 4))
    for lib in (T, torch):
        xt = lib.tensor(x, requires_grad=True)
        g = lib.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
        (gx,) = lib.autograd.grad(lib.gather(xt, 1, lib.tensor(idx)), xt, g, create_graph=True)
        assert type(gx.grad_fn).__name__ == "ScatterAddBackward0"
    assert T.autograd.gradgradcheck(lambda x: T.gather(x, 1, T.tensor(idx)), (T.tensor(x, requires_grad=True),))


@needs_torch
@pytest.mark.parametrize("case", ["contig", "bcast", "T", "bcast input"])
def test_masked_select_large_forward_and_backward(case):
    r, c = BIG
    x = RNG.standard_normal((r, c)).astype(np.float32)
    mask = RNG.uniform(size=(1, c) if case == "bcast" else (r, c)) < 0.4
    to_base, see = VIEWS["T" if case == "T" else "contig"]
    if case == "bcast input":
        x = x[:1]
    (fx, fv), (tx, tv) = _both(to_base(x), True, see)
    fo, to = T.masked_select(fv, T.tensor(mask)), torch.masked_select(tv, torch.tensor(mask))
    np.testing.assert_array_equal(fo.detach().numpy(), to.detach().numpy())
    assert type(fo.grad_fn).__name__ == "MaskedSelectBackward0"
    g = RNG.standard_normal(to.shape).astype(np.float32)
    fo.backward(T.tensor(g))
    to.backward(torch.tensor(g))
    _close(fx.grad, tx.grad)


def test_masked_select_node_and_dtypes():
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = T.masked_select(x, x > 1.5)
    assert type(y.grad_fn).__name__ == "MaskedSelectBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    assert y.tolist() == [2.0, 3.0, 4.0]
    b = T.tensor([True, False, True])
    assert T.masked_select(b, b).tolist() == [True, True]  # mask and input one storage
    assert T.masked_select(T.arange(6).reshape(2, 3), T.tensor([True, False, True])).tolist() == [0, 2, 3, 5]
    assert T.masked_select(T.tensor(5.0), T.tensor(True)).shape == (1,)
    xs = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert T.autograd.gradgradcheck(lambda x: T.masked_select(x, T.tensor([True, False, True])), (xs,))


@needs_torch
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_nansum_large(view, dim):
    r, c = BIG
    to_base, see = VIEWS[view]
    x = RNG.standard_normal((r, c)).astype(np.float32)
    x[RNG.uniform(size=x.shape) < 0.1] = np.nan
    (fx, fv), (tx, tv) = _both(to_base(x), True, see)
    fo, to = T.nansum(fv, dim), torch.nansum(tv, dim)
    _close(fo, to, rtol=1e-4, atol=1e-3)
    assert type(fo.grad_fn).__name__ == type(to.grad_fn).__name__ == "NansumBackward0"
    g = RNG.standard_normal(to.shape).astype(np.float32)
    fo.backward(T.tensor(g))
    to.backward(torch.tensor(g))
    _close(fx.grad, tx.grad)


def test_nansum_node_and_gradients():
    x = T.tensor([[1.0, float("nan")], [2.0, 3.0]], dtype=T.float64, requires_grad=True)
    for dim, keepdim in [(None, False), (1, False), (0, True)]:
        y = T.nansum(x, dim, keepdim) if dim is not None else T.nansum(x)
        assert type(y.grad_fn).__name__ == "NansumBackward0"
    (g,) = T.autograd.grad(x.nansum(), x)
    assert g.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert T.nansum(T.tensor([1, 2, 3])).dtype == T.int64
    assert T.nansum(x, dtype=T.float32).dtype == T.float32
    xs = T.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert T.autograd.gradgradcheck(lambda x: T.nansum(x, 1), (xs,))


@needs_torch
@pytest.mark.parametrize("n", [1000, 300_000])
@pytest.mark.parametrize("layout", ["contig", "strided", "both strided", "expanded"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_layouts(n, layout, dtype):
    a = RNG.uniform(-1, 1, 2 * n).astype(dtype)
    b = RNG.uniform(-1, 1, 2 * n).astype(dtype)
    outs = []
    for lib in (T, torch):
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        x = {"contig": ta[:n], "strided": ta[::2], "both strided": ta[::2], "expanded": ta[:1].expand(n)}[layout]
        y = tb[1::2] if layout == "both strided" else tb[:n]
        out = lib.dot(x, y)
        out.backward()
        outs.append((out, ta.grad, tb.grad))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for f, t in zip(outs[0], outs[1]):
        _close(f, t, rtol=tol, atol=tol * np.sqrt(n))
