"""The engine's final callbacks (``Variable._execution_engine.queue_callback``), as PyTorch's:
run once backward has finished every node, before it returns; DistributedDataParallel relies
on them."""

import pytest

import ferrograd as T

try:
    import torch
except ImportError:
    torch = None


def run(lib, use_grad):
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    engine = lib.autograd.Variable._execution_engine

    def later():
        log.append(("later", None if x.grad is None else x.grad.tolist()))

    def hook(g):
        log.append("hook")
        engine.queue_callback(lambda: (log.append("first"), engine.queue_callback(later)))
        return g

    y = x * 3
    y.register_hook(hook)
    if use_grad:
        (g,) = lib.autograd.grad(y.sum(), x)
        log.append(("grad", g.tolist()))
    else:
        y.sum().backward()
        log.append("returned")
    return log


@pytest.mark.parametrize("use_grad", [False, True])
def test_callbacks_run_after_every_node_and_before_returning(use_grad):
    log = run(T, use_grad)
    if use_grad:
        assert log == ["hook", "first", ("later", None), ("grad", [3.0, 3.0])]
    else:
        assert log == ["hook", "first", ("later", [3.0, 3.0]), "returned"]
    if torch is not None:
        assert log == run(torch, use_grad)


def test_queueing_outside_backward_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="^Final callbacks can only be installed during backward pass.$"):
        T.autograd.Variable._execution_engine.queue_callback(lambda: None)


def test_an_exception_in_a_callback_comes_out_of_backward():
    x = T.tensor([1.0], requires_grad=True)
    engine = T.autograd.Variable._execution_engine

    def boom():
        raise ValueError("from the callback")

    y = x * 2
    y.register_hook(lambda g: engine.queue_callback(boom))
    with pytest.raises(ValueError, match="from the callback"):
        y.sum().backward()
    # the engine is usable again, with no callback left over
    (x * 2).sum().backward()
    assert x.grad.tolist() == [4.0]
