"""Wrong answers found by running other projects' PyTorch tests on ferrograd (issue 13), each
checked against the values PyTorch gives (and against PyTorch itself where installed)."""

import math

import pytest

import ferrograd as T

inf, nan = math.inf, math.nan


def test_isclose_never_calls_opposite_infinities_close():
    a = T.tensor([inf, inf, -inf, nan, 1.0, inf])
    b = T.tensor([-inf, inf, -inf, nan, 1.0 + 1e-9, 1e30])
    assert T.isclose(a, b).tolist() == [False, True, True, False, True, False]
    assert T.isclose(a, b, equal_nan=True).tolist() == [False, True, True, True, True, False]
    assert not T.allclose(T.tensor([inf]), T.tensor([-inf]))


def test_pow_gradient_at_zero_to_the_zero_is_zero():
    x = T.tensor([0.0, 0.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    e = T.tensor([0.0, 2.0, 0.0, 2.0], dtype=T.float64, requires_grad=True)
    (x ** e).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 6.0]
    assert e.grad.tolist() == pytest.approx([0.0, 0.0, math.log(2.0), 9 * math.log(3.0)])
    # the fix keeps the gradient differentiable
    x2 = T.tensor([0.5, 2.0], dtype=T.float64, requires_grad=True)
    e2 = T.tensor([0.0, 3.0], dtype=T.float64, requires_grad=True)
    assert T.autograd.gradgradcheck(lambda a, b: a ** b, (x2, e2))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_integer_division_with_rounding_mode_stays_integer(mode):
    a = T.tensor([7, -7, 6, -6, 0, 7, -7, 2**62 + 1])
    b = T.tensor([2, 2, 3, 3, 5, -2, -2, 2])
    q = T.div(a, b, rounding_mode=mode)
    assert q.dtype == T.int64
    want = {
        "trunc": [3, -3, 2, -2, 0, -3, 3, 2**61],
        "floor": [3, -4, 2, -2, 0, -4, 3, 2**61],
    }[mode]
    assert q.tolist() == want
    assert a.div(-2, rounding_mode=mode).dtype == T.int64
    assert a.div(2.0, rounding_mode=mode).dtype == T.float32


def test_against_torch():
    torch = pytest.importorskip("torch")
    vals = [inf, -inf, nan, 0.0, 1.0, -2.5, 1e-9]
    for lib_a, lib_b in [(T, torch)]:
        a = [(x, y) for x in vals for y in vals]
        xa, ya = lib_a.tensor([p[0] for p in a]), lib_a.tensor([p[1] for p in a])
        xb, yb = lib_b.tensor([p[0] for p in a]), lib_b.tensor([p[1] for p in a])
        assert lib_a.isclose(xa, ya).tolist() == lib_b.isclose(xb, yb).tolist()
    ints = list(range(-9, 10))
    pairs = [(i, j) for i in ints for j in ints if j != 0]
    for mode in ("trunc", "floor"):
        got = T.div(T.tensor([p[0] for p in pairs]), T.tensor([p[1] for p in pairs]),
                    rounding_mode=mode)
        ref = torch.div(torch.tensor([p[0] for p in pairs]), torch.tensor([p[1] for p in pairs]),
                        rounding_mode=mode)
        assert got.tolist() == ref.tolist() and str(ref.dtype) == "torch.int64"
    for lib in (T, torch):
        x = lib.tensor([0.0, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
        e = lib.tensor([0.0, 2.0, 0.0], dtype=lib.float64, requires_grad=True)
        (x ** e).sum().backward()
        if lib is T:
            ours = (x.grad.tolist(), e.grad.tolist())
        else:
            assert ours == (x.grad.tolist(), e.grad.tolist())


def _twice(lib):
    """A Function returning one tensor twice; its backward weighs the two gradients apart."""

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 5 + g2 * 2

    return Twice


def test_function_returning_one_tensor_twice():
    # the tensor is output 1 (its last position), as in PyTorch: output 0 gets zeros
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a, b = _twice(T).apply(x)
    assert a is b
    (a.sum() + 3 * b.sum()).backward()
    assert x.grad.tolist() == [8.0, 8.0]


@pytest.mark.parametrize("inplace", ["mul", "add_self", "chain"])
def test_retained_grad_follows_in_place_ops(inplace):
    # .grad of a tensor that retains its grad is the gradient of its final value
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    if inplace == "mul":
        y.mul_(3)
    elif inplace == "add_self":
        y.add_(y)
    else:
        y.mul_(3)
        y.add_(1)
    (y * y).sum().backward()
    final = y.detach()
    assert y.grad.tolist() == (2 * final).tolist()
    assert y.grad_fn is not None and y.retains_grad


def test_sequence_inside_an_index_tuple():
    x = T.arange(24.0).reshape(2, 3, 4)
    b = T.tensor([0, 2])
    assert x[(0,), b, ...].tolist() == x[[0], b, ...].tolist()
    assert list(x[(0,), b, ...].shape) == [2, 4]
    assert list(x[0, (1, 2)].shape) == [2, 4]
    assert x[range(1, 2)].tolist() == x[[1]].tolist()
    assert list(x[:, range(0, 3, 2)].shape) == [2, 2, 4]


def test_autograd_rules_against_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = _twice(lib).apply(x)
        (a.sum() + 3 * b.sum()).backward()
        out = [x.grad.tolist()]
        for op in ("mul", "add_self"):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.retain_grad()
            y.mul_(3) if op == "mul" else y.add_(y)
            (y * y).sum().backward()
            out += [y.grad.tolist(), x.grad.tolist()]
        t = lib.arange(24.0).reshape(2, 3, 4)
        out.append(t[(0,), lib.tensor([0, 2]), ...].tolist())
        return out

    assert run(T) == run(torch)
