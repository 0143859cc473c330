"""clone() in a memory format and copy_() under autograd: new tensors recorded as PyTorch
records them (CloneBackward0, CopyBackwards), never views of a contiguous copy, so in-place
ops on the result work and the graph prints as PyTorch's.

The comparison tests take PyTorch as the spec and skip without it; the others always run.
"""

import numpy as np
import pytest

import ferrograd


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _graph(t):
    """grad_fn name and next_functions' names."""
    return t.grad_fn.name(), [f[0].name() if f[0] is not None else None for f in t.grad_fn.next_functions]


def _clone_cases(lib):
    x = lib.tensor(np.arange(120.0).reshape(2, 3, 4, 5), requires_grad=True)
    return [
        ("transposed, preserve", x, lambda t: t.transpose(1, 2).clone()),
        ("permuted, preserve", x, lambda t: t.permute(3, 1, 0, 2).clone()),
        ("channels_last", x, lambda t: t.contiguous(memory_format=lib.channels_last)),
        ("clone(channels_last)", x, lambda t: t.clone(memory_format=lib.channels_last)),
        ("channels_last_3d", lib.tensor(np.arange(240.0).reshape(2, 3, 2, 4, 5), requires_grad=True),
         lambda t: t.contiguous(memory_format=lib.channels_last_3d)),
    ]


@pytest.mark.parametrize("case", range(5))
def test_clone_in_a_memory_format_is_a_new_tensor(case):
    name, x, make = _clone_cases(ferrograd)[case]
    y = make(x)
    assert y.grad_fn.name() == "CloneBackward0", name
    assert y._base is None, name
    y.mul_(3)  # an in-place op on a view of a copy raised NotImplementedError
    assert y.grad_fn.name() == "MulBackward0"
    (y * ferrograd.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    # d/dx of sum(3 * make(x) * w) is 3 * w carried back through the view make applied
    w = ferrograd.arange(y.numel(), dtype=y.dtype).reshape(y.shape)
    expected = ferrograd.autograd.grad((make(x) * w).sum(), x)[0] * 3
    assert ferrograd.equal(x.grad, expected), name


@pytest.mark.parametrize("case", range(5))
def test_clone_strides_and_graph_match_torch(torch, case):
    name, x, make = _clone_cases(ferrograd)[case]
    _, tx, tmake = _clone_cases(torch)[case]
    y, ty = make(x), tmake(tx)
    assert y.stride() == ty.stride(), name
    assert _graph(y) == _graph(ty), name
    assert np.array_equal(y.detach().numpy(), ty.detach().numpy())


def test_clone_in_order_rejects_a_bad_order():
    x = ferrograd.ones(2, 3)
    for order in ([0], [0, 0], [0, 2], [1, 0, 2]):
        with pytest.raises(RuntimeError, match="is not a memory order of a 2-d tensor"):
            x._clone_in_order(order)


def _copy_cases(lib):
    return [
        ("same shape", lambda: lib.ones(3, 4)),
        ("broadcast row", lambda: lib.arange(4.0)),
        ("expanded", lambda: lib.eye(4)[:3].expand(3, 4)),
        ("src with grad", lambda: lib.arange(12.0).reshape(3, 4).requires_grad_()),
        ("src broadcast with grad", lambda: lib.arange(4.0).requires_grad_()),
        ("src float64 with grad", lambda: lib.arange(4.0, dtype=lib.float64).requires_grad_()),
    ]


@pytest.mark.parametrize("case", range(6))
def test_copy_under_autograd_is_copy_backwards(case):
    name, make_src = _copy_cases(ferrograd)[case]
    x = ferrograd.arange(12.0).reshape(3, 4).requires_grad_()
    src = make_src()
    y = x * 2
    y.copy_(src)
    assert y.grad_fn.name() == "torch::autograd::CopyBackwards", name
    assert type(y.grad_fn).__name__ == "CopyBackwards"
    assert np.array_equal(y.detach().numpy(), np.broadcast_to(src.detach().numpy(), (3, 4)))
    (y * ferrograd.arange(12.0).reshape(3, 4)).sum().backward()
    assert ferrograd.equal(x.grad, ferrograd.zeros(3, 4)), name  # overwritten: no gradient
    if src.requires_grad:
        w = np.arange(12.0, dtype=np.float32).reshape(3, 4)
        expected = w.sum(0) if src.dim() == 1 else w
        assert src.grad.dtype == src.dtype and src.grad.shape == src.shape
        assert np.array_equal(src.grad.numpy(), expected.astype(src.grad.numpy().dtype)), name


@pytest.mark.parametrize("case", range(6))
def test_copy_graph_and_grads_match_torch(torch, case):
    results = []
    for lib in (ferrograd, torch):
        _, make_src = _copy_cases(lib)[case]
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        src = make_src()
        y = x.clone()
        y.copy_(src)
        graph = _graph(y)
        (y * y).sum().backward()
        results.append((graph, x.grad.numpy(), None if src.grad is None else src.grad.numpy()))
    (g1, xg1, sg1), (g2, xg2, sg2) = results
    assert g1 == g2
    assert np.array_equal(xg1, xg2)
    assert (sg1 is None) == (sg2 is None)
    if sg1 is not None:
        assert sg1.dtype == sg2.dtype and np.allclose(sg1, sg2)


def test_copy_is_twice_differentiable():
    src = ferrograd.tensor([1.0, 2.0, 3.0], dtype=ferrograd.float64, requires_grad=True)
    x = ferrograd.zeros(2, 3, dtype=ferrograd.float64, requires_grad=True)
    y = x.clone()
    y.copy_(src * src)
    (g,) = ferrograd.autograd.grad(y.sum(), src, create_graph=True)
    assert np.allclose(g.detach().numpy(), 2 * 2 * src.detach().numpy())
    (gg,) = ferrograd.autograd.grad(g.sum(), src)
    assert np.allclose(gg.numpy(), [4.0, 4.0, 4.0])


@pytest.mark.parametrize("n", [0, 1])
def test_matrix_power_low_powers_of_a_transposed_matrix(n):
    a = ferrograd.randn(4, 4, dtype=ferrograd.float64, requires_grad=True)
    y = ferrograd.linalg.matrix_power(a.t(), n)
    assert y.is_contiguous()  # PyTorch's contiguous clone
    assert y.grad_fn.name() == ("torch::autograd::CopyBackwards" if n == 0 else "CloneBackward0")
    y.sum().backward()
    assert ferrograd.equal(a.grad, ferrograd.full((4, 4), float(n), dtype=ferrograd.float64))


# ---- sinc and xlogy: single native ops with PyTorch's nodes (were composites) ----


def test_sinc_node_values_and_derivatives_at_zero():
    x = ferrograd.tensor([0.0, 0.5, -1.0, 3.3], dtype=ferrograd.float64, requires_grad=True)
    y = ferrograd.sinc(x)
    assert y.grad_fn.name() == "SincBackward0"
    p = np.pi * np.array([0.5, -1.0, 3.3])
    assert np.allclose(y.detach().numpy(), [1.0, *(np.sin(p) / p)], rtol=1e-15, atol=1e-16)
    (g,) = ferrograd.autograd.grad(y.sum(), x, create_graph=True)
    assert g[0].item() == 0.0 and not np.signbit(g[0].item())
    (gg,) = ferrograd.autograd.grad(g.sum(), x)
    assert abs(gg[0].item() + np.pi ** 2 / 3) < 1e-12  # sinc''(0) = -pi^2 / 3, not NaN


def test_sinc_in_place_is_native():
    x = ferrograd.tensor([0.25, 1.0], requires_grad=True).clone()
    x.sinc_()
    assert x.grad_fn.name() == "SincBackward0"
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ferrograd.tensor([1, 2]).sinc_()


def test_xlogy_in_place_of_integers_raises_and_takes_numbers():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ferrograd.tensor([1, 2]).xlogy_(ferrograd.tensor([2, 3]))
    y = ferrograd.tensor([1.0, 2.0], requires_grad=True).clone()
    y.xlogy_(3.0)
    assert y.grad_fn.name() == "XlogyBackward0"
    assert np.allclose(y.detach().numpy(), [np.log(3.0), 2 * np.log(3.0)])


def test_xlogy_edge_values_and_grads_match_torch(torch):
    inf, nan = float("inf"), float("nan")
    xs = [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, -1.0, 3.0]
    ys = [0.0, -1.0, inf, nan, 0.0, inf, 2.0, 2.0, -1.0]
    out = []
    for lib in (ferrograd, torch):
        x = lib.tensor(xs, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(ys, dtype=lib.float64, requires_grad=True)
        z = lib.xlogy(x, y)
        z.sum().backward()
        out.append((z.grad_fn.name(), z.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    assert out[0][0] == out[1][0]
    for a, b in zip(out[0][1:], out[1][1:]):
        np.testing.assert_array_equal(a, b)


_INPLACE_OF_FLOAT_RESULT = [("logit_", ()), ("polygamma_", (1,)), ("sinc_", ()), ("xlogy_", (2.0,))]


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("op, args", _INPLACE_OF_FLOAT_RESULT + [("mvlgamma_", (1,))])
def test_in_place_float_results_into_integers_raise(op, args, dtype):
    x = ferrograd.tensor([1, 2], dtype=getattr(ferrograd, dtype))
    # these wrote a float result into the integers silently (truncated) before
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        getattr(x, op)(*args)
    assert x.tolist() == [1, 2]


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("op, args", _INPLACE_OF_FLOAT_RESULT + [("mvlgamma_", (1,))])
def test_in_place_float_results_into_integers_errors_match_torch(torch, op, args, dtype):
    texts = []
    for lib in (ferrograd, torch):
        x = lib.tensor([1, 2], dtype=getattr(lib, dtype))
        with pytest.raises(RuntimeError) as info:
            getattr(x, op)(*args)
        texts.append(str(info.value))
    assert texts[0] == texts[1]
