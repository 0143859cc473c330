"""A short soak (benches/soak.py is the long one): training loops leave no graph behind.

Counted with the number of live graph nodes (``_core._live_nodes()``) and with weakrefs,
never with timings or RSS.  Ordinary graphs must be freed by reference counting alone (the
loops run with the cycle collector off); graphs held in a reference cycle through Python
objects (a Function's ``ctx.out = y``, a hook that captures its own leaf) must be freed by
``gc.collect()``, as in PyTorch.
"""

import contextlib
import gc
import os
import weakref

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

import ferrograd
from ferrograd import _core, nn


@pytest.fixture(params=["ferrograd", "torch"])
def lib(request):
    return ferrograd if request.param == "ferrograd" else pytest.importorskip("torch")


@contextlib.contextmanager
def no_cycle_collector():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def settled_nodes():
    gc.collect()
    return _core._live_nodes()


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(16, 32), lib.nn.ReLU(), lib.nn.Linear(32, 4))


def run_steps(lib, model, steps, step, base):
    """Runs ``step`` with the collector off; the live nodes above ``base`` after each step."""
    counts = []
    with no_cycle_collector():
        for _ in range(steps):
            step(lib, model)
            counts.append(_core._live_nodes() - base)
    return counts


def training_step(lib, model):
    x, y = lib.randn(8, 16), lib.randint(0, 4, (8,))
    loss = lib.nn.functional.cross_entropy(model(x), y)
    model.zero_grad()
    loss.backward()
    with lib.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad


def create_graph_step(lib, model):
    params = list(model.parameters())
    x, y = lib.randn(8, 16), lib.randint(0, 4, (8,))
    loss = lib.nn.functional.cross_entropy(model(x), y)
    grads = lib.autograd.grad(loss, params, create_graph=True)
    loss = loss + sum(g.pow(2).sum() for g in grads)
    model.zero_grad()
    loss.backward()
    with lib.no_grad():
        for p in params:
            p -= 0.01 * p.grad


def forward_only_step(lib, model):
    loss = model(lib.randn(8, 16)).pow(2).mean()  # a graph dropped without backward
    del loss


@pytest.mark.parametrize("step", [training_step, create_graph_step, forward_only_step])
def test_loops_leave_no_graph(step):
    ferrograd.manual_seed(0)
    base = settled_nodes()
    model = mlp(ferrograd)
    n_params = len(list(model.parameters()))
    counts = run_steps(ferrograd, model, 150, step, base)
    # at most an AccumulateGrad per parameter, and flat: no graph survives its step
    assert max(counts) <= n_params, counts[-5:]
    assert counts[-1] == counts[9], (counts[9], counts[-1])
    wref = weakref.ref(model)
    del model
    assert settled_nodes() == base
    assert wref() is None


class CtxScale(ferrograd.autograd.Function):
    """Keeps its tensors as ctx attributes, not with save_for_backward: y -> node -> ctx -> y."""

    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.inp = x
        ctx.out = y
        return y

    @staticmethod
    def backward(ctx, g):
        assert ctx.out.shape == g.shape
        return g * 2


def ctx_function(lib):
    if lib is ferrograd:
        return CtxScale

    class TorchCtxScale(lib.autograd.Function):
        forward = staticmethod(CtxScale.forward)
        backward = staticmethod(CtxScale.backward)

    return TorchCtxScale


def test_function_keeping_ctx_attributes_is_freed_by_the_collector(lib):
    fn = ctx_function(lib)
    refs = []
    for backward in (True, False):
        x = lib.randn(3, requires_grad=True)
        y = fn.apply(x)
        if backward:
            y.sum().backward()
        refs += [weakref.ref(x), weakref.ref(y)]
        del x, y
    gc.collect()
    assert [r() is None for r in refs] == [True] * 4  # as in PyTorch


def test_training_with_ctx_attributes_leaves_no_graph():
    ferrograd.manual_seed(0)
    base = settled_nodes()
    lin1, lin2 = nn.Linear(16, 32), nn.Linear(32, 4)
    params = [*lin1.parameters(), *lin2.parameters()]
    for _ in range(100):
        x, y = ferrograd.randn(8, 16), ferrograd.randint(0, 4, (8,))
        loss = nn.functional.cross_entropy(lin2(CtxScale.apply(lin1(x))), y)
        for p in params:
            p.grad = None
        loss.backward()
    del loss  # (the last step's graph)
    assert settled_nodes() - base <= len(params)
    del lin1, lin2, params
    assert settled_nodes() == base


def test_hook_capturing_its_own_leaf_is_freed(lib):
    base = settled_nodes()
    model = mlp(lib)
    for p in model.parameters():
        p.register_hook(lambda g, p=p: g)  # p -> hook -> p
    model(lib.randn(2, 16)).sum().backward()
    refs = [weakref.ref(model)] + [weakref.ref(p) for p in model.parameters()]
    del model, p
    gc.collect()
    assert [r() is None for r in refs] == [True] * len(refs)  # as in PyTorch
    assert settled_nodes() == base
