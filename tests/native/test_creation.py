"""Factories: dtypes inferred as PyTorch does, deterministic values equal to PyTorch's."""

import numpy as np
import pytest

import ferrograd as fg

CASES = [
    ("arange(5)", "tensor([0, 1, 2, 3, 4])"),
    ("arange(1, 4, 0.5)", "tensor([1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000])"),
    ("linspace(-1, 1, 7)", "tensor([-1.0000e+00, -6.6667e-01, -3.3333e-01, -2.9802e-08,  3.3333e-01,\n         6.6667e-01,  1.0000e+00])"),
    ("linspace(0, 1, 1)", "tensor([0.])"),
    ("eye(2, 3)", "tensor([[1., 0., 0.],\n        [0., 1., 0.]])"),
    ("full((2,), 3)", "tensor([3, 3])"),
    ("full((2,), 1.5)", "tensor([1.5000, 1.5000])"),
    ("full((2,), True)", "tensor([True, True])"),
    ("zeros(2, dtype=fg.int64)", "tensor([0, 0])"),
    ("ones((2,))", "tensor([1., 1.])"),
    ("tensor([[1, 2], [3, 4]])", "tensor([[1, 2],\n        [3, 4]])"),
    ("tensor([1.5, 2])", "tensor([1.5000, 2.0000])"),
    ("tensor(True)", "tensor(True)"),
    ("tensor(3)", "tensor(3)"),
    ("tensor([])", "tensor([])"),
    ("tensor(np.array([1.0, 2.0]))", "tensor([1., 2.], dtype=torch.float64)"),
    ("tensor([1, 2], dtype=fg.float64)", "tensor([1., 2.], dtype=torch.float64)"),
    ("zeros_like(fg.ones(2, dtype=fg.int64))", "tensor([0, 0])"),
    ("Tensor(2, 1)", "tensor([[0.],\n        [0.]])"),
]


@pytest.mark.parametrize("expr,expected", CASES)
def test_factories(expr, expected):
    assert repr(eval("fg." + expr)) == expected


# torch.Tensor(sizes) leaves its memory uninitialised: nothing to compare
@pytest.mark.parametrize("expr,expected", [c for c in CASES if not c[0].startswith("Tensor(")])
def test_factories_match_torch(expr, expected):
    torch = pytest.importorskip("torch")
    assert repr(eval("torch." + expr.replace("fg.", "torch."))) == expected


@pytest.mark.parametrize("args", [(0, 1, 5), (3, -2, 9), (0.1, 0.7, 13), (-3.3, 7.1, 1001)])
def test_linspace_values_match_torch(args):
    torch = pytest.importorskip("torch")
    assert fg.linspace(*args).tolist() == torch.linspace(*args).tolist()
    assert (fg.linspace(*args, dtype=fg.float64).tolist()
            == torch.linspace(*args, dtype=torch.float64).tolist())


def test_random_factories_are_seeded_and_typed():
    fg.manual_seed(3)
    a = fg.randn(1000)
    fg.manual_seed(3)
    assert fg.randn(1000).tolist() == a.tolist()
    assert abs(a.mean().item()) < 0.15 and abs(a.std().item() - 1) < 0.1
    u = fg.rand(1000, dtype=fg.float64)
    assert u.dtype == fg.float64 and 0 <= u.min().item() and u.max().item() < 1
    r = fg.randint(3, 7, (500,))
    assert r.dtype == fg.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert fg.randn_like(u).dtype == fg.float64
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        fg.tensor([1, 2], requires_grad=True)


def test_conversions():
    t = fg.tensor([[1.5, 2.0]])
    assert t.tolist() == [[1.5, 2.0]] and t[0, 0].item() == 1.5
    assert float(t[0, 1]) == 2.0 and int(t[0, 0]) == 1 and bool(t[0, 0]) and len(t) == 1
    assert t.long().dtype == fg.int64 and t.double().dtype == fg.float64
    assert t.to("cpu") is t and t.float() is t
    assert t.to(fg.float64).dtype == fg.float64 and t.to(fg.ones(1, dtype=fg.int64)).dtype == fg.int64
    assert t.shape == (1, 2) and t.size() == (1, 2) and t.size(1) == 2 and t.dim() == 2
    assert t.numel() == 2 and str(t.device) == "cpu"
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        t.item()
