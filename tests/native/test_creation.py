"""Factories: dtypes inferred as PyTorch does, deterministic values equal to PyTorch's."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ferrograd as fg

CASES = [
    ("arange(5)", "tensor([0, 1, 2, 3, 4])"),
    ("arange(1, 4, 0.5)", "tensor([1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000])"),
    ("linspace(-1, 1, 7)", "tensor([-1.0000e+00, -6.6667e-01, -3.3333e-01, -2.9802e-08,  3.3333e-01,\n"
                           "         6.6667e-01,  1.0000e+00])"),
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
    torch = pytest.importorskip("torch")  # noqa: F841 - used by the eval below
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


# --- from_numpy / as_tensor of a read-only array: PyTorch's one-time UserWarning ---------------

NOT_WRITABLE = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
    "This means writing to this tensor will result in undefined behavior. You may want to copy the "
    "array to protect its data or make it writable before converting it to a tensor. This type of "
    "warning will be suppressed for the rest of this program."
)


def read_only(a):
    a.flags.writeable = False
    return a


@pytest.fixture
def fresh_warning(monkeypatch):
    """As in a new process: the read-only warning has not been given yet."""
    monkeypatch.setattr(fg._factories, "_not_writable_warned", False)


def test_from_numpy_read_only_warns_once(fresh_warning):
    a = read_only(np.arange(3.0))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = fg.from_numpy(a)
        fg.from_numpy(a)
        fg.as_tensor(read_only(np.zeros(2)))
    assert [(x.category, str(x.message)) for x in w] == [(UserWarning, NOT_WRITABLE)]
    assert w[0].filename == __file__  # at the caller, as PyTorch's
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert np.shares_memory(t.numpy(), a)  # still no copy


@pytest.mark.parametrize(
    "make",
    [
        lambda a: fg.as_tensor(a),
        lambda a: fg.as_tensor(a, dtype=fg.float32),  # copies, and warns all the same
        lambda a: fg.from_numpy(a[::2]),
        lambda a: fg.from_numpy(np.broadcast_to(np.zeros(3), (2, 3))),  # read-only view
        lambda a: fg.from_numpy(a[:0]),
    ],
)
def test_read_only_array_warns(make, fresh_warning):
    with pytest.warns(UserWarning, match="^The given NumPy array is not writable"):
        make(read_only(np.arange(4.0)))


@pytest.mark.parametrize(
    "make",
    [
        lambda a: fg.tensor(a),  # a copy: nothing to warn about
        lambda a: fg.from_numpy(a.copy()),
        lambda a: fg.as_tensor(a.tolist()),
    ],
)
def test_copies_and_writable_arrays_do_not_warn(make, fresh_warning):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(read_only(np.arange(4.0)))
    assert not fg._factories._not_writable_warned


def test_read_only_warning_comes_first_and_is_spent_when_raised(fresh_warning):
    bad = read_only(np.arange(3.0)[::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="not writable"):
            fg.from_numpy(bad)  # the warning, before the negative-stride error
        with pytest.raises(ValueError, match="negative"):
            fg.from_numpy(bad)  # once given (even as an error), never again
        fg.from_numpy(read_only(np.zeros(2)))


_WARNING_SCRIPT = """
import sys, warnings
import numpy as np
lib = __import__(sys.argv[1])
def ro(a):
    a.flags.writeable = False
    return a
calls = {
    "tensor": lambda: lib.tensor(ro(np.zeros(3))),
    "from_numpy": lambda: lib.from_numpy(ro(np.zeros(3))),
    "as_tensor": lambda: lib.as_tensor(ro(np.zeros(3))),
    "as_tensor_f32": lambda: lib.as_tensor(ro(np.zeros(3)), dtype=lib.float32),
    "neg_stride": lambda: lib.from_numpy(ro(np.zeros(3)[::-1])),
}
for name in sys.argv[2].split(","):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            calls[name]()
            err = None
        except Exception as e:
            err = type(e).__name__
    msgs = [(x.category.__name__, str(x.message).split(" (Triggered internally")[0]) for x in w]
    print(repr((name, err, msgs)))
"""


@pytest.mark.parametrize(
    "calls", ["tensor,from_numpy,from_numpy,as_tensor", "as_tensor_f32,from_numpy", "neg_stride,as_tensor"]
)
def test_read_only_warnings_match_torch(calls):
    pytest.importorskip("torch")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}

    def run(lib):  # a new process each: the warning is once per process
        argv = [sys.executable, "-c", _WARNING_SCRIPT, lib, calls]
        return subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout

    theirs = run("torch")
    assert NOT_WRITABLE in theirs
    assert run("ferrograd") == theirs
