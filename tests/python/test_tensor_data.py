"""`t.data = other` (PyTorch's set_data): the Python tensor takes `other`'s storage, shape and
dtype and keeps its identity and autograd state."""

import gc

import pytest

import ferrograd as T
import ferrograd.nn as nn


def test_parameter_keeps_its_identity_and_autograd_state():
    p = nn.Parameter(T.ones(2))
    ref = p
    new = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64)
    p.data = new
    assert p is ref and type(p) is nn.Parameter
    assert p.dtype == T.float64 and p.shape == (2, 2) and p.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert p.requires_grad and p.is_leaf and p.grad_fn is None and p._version == 0
    # it shares the new tensor's storage, as in PyTorch
    new[0, 0] = 10.0
    assert p[0, 0].item() == 10.0 and not new.requires_grad
    (p * 2).sum().backward()
    assert p.grad.dtype == T.float64 and p.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_plain_tensor_and_requires_grad_rules():
    x = T.zeros(2)
    x.data = T.ones(3, 2, requires_grad=True)
    assert x.shape == (3, 2) and not x.requires_grad and x.tolist() == [[1.0, 1.0]] * 3
    p = T.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be floating point"):
        p.data = T.tensor([1, 2])
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        p.data = 3
    i = T.tensor([1, 2])
    i.data = T.tensor([True])
    assert i.dtype == T.bool and i.tolist() == [True]


def test_sgd_by_hand_through_data():
    w = T.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        w.data = w.data - 0.1 * w.grad
        w.grad.zero_()
    assert w.tolist() == pytest.approx([0.512, 1.024]) and w.requires_grad and w.is_leaf


def test_hooks_grad_and_graphs_recorded_before():
    w = T.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g.tolist()))
    y = w * 3  # recorded before the assignment: accumulates into the same .grad
    w.data = T.tensor([5.0, 6.0])
    z = w * w  # recorded after: sees the new values
    (y.sum() + z.sum()).backward()
    assert sorted(seen) == [[3.0, 3.0], [10.0, 12.0]]
    assert w.grad.tolist() == [13.0, 15.0]


def test_assigning_data_from_a_hook_during_backward():
    # an optimizer step in a post-accumulate-grad hook, done through .data
    w = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([0.5], requires_grad=True)

    def step(p):
        p.data = p.data - 0.5 * p.grad
        p.grad = None

    for p in (w, b):
        p.register_post_accumulate_grad_hook(step)
    for _ in range(2):
        ((w * w).sum() + (b * 3).sum()).backward()
    assert w.tolist() == [0.0, 0.0] and b.tolist() == [-2.5] and w.grad is None


def test_assigning_a_grads_data_replaces_the_grad():
    p = nn.Parameter(T.ones(2))
    (p * 3).sum().backward()
    g = p.grad
    g.data = T.zeros(2, dtype=T.float64)
    assert p.grad is g and p.grad.dtype == T.float64
    del g
    gc.collect()
    assert p.grad.tolist() == [0.0, 0.0] and p.grad.dtype == T.float64


def test_retained_grad_survives_the_assignment():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.data = T.tensor([7.0, 8.0])
    (y * 1).sum().backward()
    assert y.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [2.0, 2.0]


def test_module_conversion_and_optimizer_see_the_same_parameters():
    m = nn.Linear(3, 2)
    params = list(m.parameters())
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    m.double()
    now = list(m.parameters())
    assert len(now) == len(params) and all(a is b for a, b in zip(now, params))
    out = m(T.ones(1, 3, dtype=T.float64)).sum()
    out.backward()
    opt.step()
    assert all(p.dtype == T.float64 for p in m.parameters())


def test_against_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        out = []
        p = lib.nn.Parameter(lib.ones(2))
        ref = p
        p.data = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)
        out.append((p is ref, str(p.dtype).split(".")[-1], list(p.shape), p.requires_grad, p.is_leaf,
                    p._version))
        (p * 2).sum().backward()
        out.append(p.grad.tolist())
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        y = w * 3
        w.data = lib.tensor([5.0, 6.0])
        (y.sum() + (w * w).sum()).backward()
        out.append(w.grad.tolist())
        x = lib.zeros(2)
        x.data = lib.ones(3, 2, requires_grad=True)
        out.append((x.requires_grad, list(x.shape)))
        g = p.grad
        g.data = lib.zeros(2, dtype=lib.float32)
        out.append((p.grad.tolist(), str(p.grad.dtype).split(".")[-1]))
        m = lib.nn.Linear(3, 2)
        wt = m.weight
        m.double()
        out.append((m.weight is wt, str(wt.dtype).split(".")[-1]))
        return out

    assert run(T) == run(torch)
