"""In-place forms of the unary ops (generated from the core's op table), the rounding ops and the
shifts: PyTorch's in-place rules (result, version counter, grad_fn, leaf check, function forms).
The op table (tests/native/op_db.py) runs their values and gradients against NumPy and PyTorch."""

import math

import pytest

import ferrograd as T
from ferrograd import _core

UNARY = _core._ops()["unary"]
# PyTorch has torch.<op>_ for every unary op but these
NO_FUNCTION = {"sign", "sgn", "logical_not", "bitwise_not", "erfinv", "lgamma", "digamma"}


@pytest.mark.parametrize("name", UNARY)
def test_every_unary_op_has_its_in_place_forms(name):
    assert callable(getattr(T.Tensor, name + "_"))
    assert hasattr(T, name + "_") == (name not in NO_FUNCTION)


def test_in_place_forms_against_torch():
    torch = pytest.importorskip("torch")
    for name in UNARY:
        assert hasattr(torch.Tensor, name + "_"), name
        assert hasattr(torch, name + "_") == (name not in NO_FUNCTION), name


@pytest.mark.parametrize("name", ["exp", "sigmoid", "relu", "sqrt", "floor", "neg", "abs", "tanh"])
def test_in_place_result_version_and_grad_fn(name):
    x = T.tensor([0.5, 1.5, 2.0], requires_grad=True)
    y = x * 1
    expected = getattr(y.detach(), name)().tolist()
    node = getattr(y, name)().grad_fn.name()
    v = y._version
    assert getattr(y, name + "_")() is y
    assert y.tolist() == expected and y._version == v + 1
    assert y.grad_fn.name() == node
    y.sum().backward()
    assert x.grad is not None
    # the function form returns its input
    z = T.tensor([0.25, 4.0])
    if hasattr(T, name + "_"):
        assert getattr(T, name + "_")(z) is z


def test_in_place_gradient_is_the_ops():
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    y = x * 1
    y.sigmoid_()
    y.sum().backward()
    s = [1 / (1 + math.exp(-v)) for v in (0.5, -1.0, 2.0)]
    assert x.grad.tolist() == pytest.approx([v * (1 - v) for v in s])
    x.grad = None
    y = x * 1
    y.sin_()  # saves its input: the next in-place op may overwrite the output
    y.relu_()
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([math.cos(0.5), 0.0, math.cos(2.0)])


def test_in_place_op_saving_its_output_is_checked_as_pytorchs():
    # relu_, sigmoid_, tanh_, exp_ save the tensor they overwrite (in one pass, as PyTorch):
    # writing it again before backward is PyTorch's version error, naming the op
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    for first, name in [("relu_", "Relu"), ("sigmoid_", "Sigmoid"), ("tanh_", "Tanh"), ("exp_", "Exp")]:
        y = x * 1
        getattr(y, first)()
        assert y.grad_fn.name() == name + "Backward0" and y._version == 1
        y.exp_()
        with pytest.raises(RuntimeError, match=f"which is output 0 of {name}, is at version 2; expected version 1"):
            y.sum().backward()


def test_in_place_rules():
    leaf = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.exp_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        T.sigmoid_(leaf)
    with T.no_grad():
        leaf.mul_(0).exp_()
    assert leaf.tolist() == [1.0, 1.0] and leaf.grad_fn is None
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        T.tensor([1, 2]).sqrt_()
    i = T.tensor([-3, 4])
    assert i.abs_().tolist() == [3, 4] and i.neg_().tolist() == [-3, -4] and i.dtype == T.int64
    assert T.tensor([1.5, 0.0]).logical_not_().tolist() == [0.0, 1.0]
    assert T.tensor([True, False]).bitwise_not_().tolist() == [False, True]
    with pytest.raises(TypeError, match=r"exp_\(\): argument 'input' \(position 1\) must be Tensor"):
        T.exp_([1.0])


def test_rounding_ops():
    f = T.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.7, -1.7])
    assert T.round(f).tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 2.0, -2.0]
    assert T.floor(f).tolist() == [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 1.0, -2.0]
    assert T.ceil(f).tolist() == [-2.0, -1.0, -0.0, 1.0, 2.0, 3.0, 2.0, -1.0]
    assert T.trunc(f).tolist() == T.fix(f).tolist() == [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 1.0, -1.0]
    assert T.frac(T.tensor([2.5, -2.5, -0.0])).tolist() == [0.5, -0.5, 0.0]
    d = T.tensor([1234.5678, 0.125, 2.675], dtype=T.float64)
    assert T.round(d, decimals=2).tolist() == [1234.57, 0.12, 2.68]
    assert d.round(decimals=-1).tolist() == [1230.0, 0.0, 0.0]
    i = T.tensor([-3, 0, 5])
    for op in (T.floor, T.ceil, T.round, T.trunc, T.fix):
        r = op(i)
        assert r.dtype == T.int64 and r.tolist() == [-3, 0, 5]
    assert T.sgn(i).tolist() == [-1, 0, 1] and T.sgn(T.tensor([True, False])).dtype == T.bool
    y = d.clone().round_(decimals=1)
    assert y.tolist() == [1234.6, 0.1, 2.7]


def test_rounding_gradients_are_zero_and_frac_passes_through():
    x = T.tensor([1.5, -2.3], requires_grad=True)
    names = []
    for op in (T.floor, T.ceil, T.round, T.trunc, T.fix, T.sgn, T.sign,
               lambda t: T.round(t, decimals=1)):
        y = op(x)
        names.append(y.grad_fn.name())
        (g,) = T.autograd.grad((y * T.tensor([math.inf, 1.0])).sum(), [x])
        assert g.tolist() == [0.0, 0.0]  # zeros, not 0 * inf
    assert names == ["FloorBackward0", "CeilBackward0", "RoundBackward0", "TruncBackward0", "TruncBackward0",
                     "SgnBackward0", "SignBackward0", "RoundBackward1"]
    y = T.frac(x)
    assert y.grad_fn.name() == "FracBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_shifts():
    a = T.tensor([1, -8, 5, 2**62, -1])
    b = T.tensor([2, 1, 64, 1, 70])
    assert (a << b).tolist() == [4, -16, 0, -(2**63), 0]
    assert (a >> b).tolist() == [0, -4, 0, 2**61, -1]
    assert T.bitwise_left_shift(1, T.tensor([3])).tolist() == [8] and (256 >> T.tensor([3])).tolist() == [32]
    assert (T.tensor([True]) >> T.tensor([2])).dtype == T.int64
    x = T.tensor([1, 2])
    x <<= 2
    assert x.tolist() == [4, 8]
    x >>= 1
    assert x.tolist() == [2, 4]
    assert x.bitwise_left_shift_(1) is x and x.tolist() == [4, 8]
    assert x.bitwise_right_shift_(T.tensor([1, 2])).tolist() == [2, 2]
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        T.tensor([1.5]) << 1
    with pytest.raises(NotImplementedError, match="\"rshift_cpu\" not implemented for 'Bool'"):
        T.tensor([True]) >> T.tensor([False])


def test_against_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        out = []
        x = lib.tensor([0.5, -1.5, 2.5, -0.0], dtype=lib.float64, requires_grad=True)
        # (not sgn: PyTorch's gradient there is a ZeroTensor, which has no values to list)
        for name in ("exp", "sigmoid", "relu", "abs", "floor", "round", "frac", "sign", "neg", "tanh"):
            y = x * 1
            v0 = y._version
            r = getattr(y, name + "_")()
            out.append((r is y, y._version - v0, y.grad_fn.name(), [round(v, 12) for v in y.tolist()]))
            (g,) = lib.autograd.grad(y.sum(), [x])
            out.append([round(v, 12) for v in g.tolist()])
        d = lib.tensor([1234.5678, 0.125, 2.675, -0.45], dtype=lib.float64)
        out.append([lib.round(d, decimals=k).tolist() for k in (-2, 0, 1, 2)])
        a = lib.tensor([1, -8, 5, 2**62, -1, 7])
        b = lib.tensor([2, 1, 64, 1, 70, -1])
        out += [(a << b).tolist(), (a >> b).tolist(), (3 << b).tolist(), (a >> 2).tolist()]
        return out

    assert run(T) == run(torch)
